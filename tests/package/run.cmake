# run(<command> [args...]): execute_process that stops the script with the command, its
# exit status and its output when it fails; sets `out` (its stdout) in the caller.
# Included by the package smoke-test scripts (install.cmake, consume.cmake).
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "'${cmd}' failed (${rc}):\n${out}${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()
