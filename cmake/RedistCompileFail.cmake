# redist_add_compile_fail_test(<name> <source> <regex>)
# Registers two tests: <name> compiles <source> with -DREDIST_FAIL and passes if the
# compiler fails with a diagnostic matching <regex>; <name>_twin compiles it without
# REDIST_FAIL and passes if that succeeds (so the failure is the intended one).
function(redist_add_compile_fail_test name source regex)
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/${source})
  set(common -DCXX=${CMAKE_CXX_COMPILER} -DSOURCE=${src} -DINCLUDE=${PROJECT_SOURCE_DIR}/include)
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} ${common} -DFAIL=ON "-DREGEX=${regex}" -P ${PROJECT_SOURCE_DIR}/cmake/compile_check.cmake)
  add_test(NAME ${name}_twin
           COMMAND ${CMAKE_COMMAND} ${common} -DFAIL=OFF -P ${PROJECT_SOURCE_DIR}/cmake/compile_check.cmake)
endfunction()
