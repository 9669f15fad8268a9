# redist_add_compile_fail_test(<name> <source> <regex>)
# Registers two tests: <name> compiles <source> with -DREDIST_FAIL and passes if the
# compiler fails with a diagnostic matching <regex>; <name>_twin compiles it without
# REDIST_FAIL and passes if that succeeds (so the failure is the intended one).
function(redist_add_compile_fail_test name source regex)
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/${source})
  # The library's interface options (the constexpr budgets), as the targets get them.
  set(flags "")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set(flags -fconstexpr-steps=268435456)
  elseif(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(flags -fconstexpr-ops-limit=4294967296)
  endif()
  set(common -DCXX=${CMAKE_CXX_COMPILER} -DSOURCE=${src} -DINCLUDE=${PROJECT_SOURCE_DIR}/include "-DFLAGS=${flags}")
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} ${common} -DFAIL=ON "-DREGEX=${regex}" -P ${PROJECT_SOURCE_DIR}/cmake/compile_check.cmake)
  add_test(NAME ${name}_twin
           COMMAND ${CMAKE_COMMAND} ${common} -DFAIL=OFF -P ${PROJECT_SOURCE_DIR}/cmake/compile_check.cmake)
endfunction()
