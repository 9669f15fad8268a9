# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DPREFIX=... [-DTOOL=redist_cli] [-DNCCL_LIBRARY=...] -P install.cmake
#
# The fixture of the package smoke tests: installs redist's build BUILD_DIR into a staging
# prefix, checks what was installed, then moves it to PREFIX (the installed package must
# not depend on where it lies) and runs the installed `redist` tool when there is one.
# TOOL, when given, is built first (a no-op after a full build): install needs it.
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)

set(staging ${PREFIX}-staging)
file(REMOVE_RECURSE ${staging} ${PREFIX})
if(TOOL)
  run(${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TOOL})
endif()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${staging})

set(expected include/redist/redist.hpp include/redist/static/plan.hpp share/cmake/redist/redistConfig.cmake
             share/cmake/redist/redistConfigVersion.cmake share/cmake/redist/redistTargets.cmake
             share/cmake/redist/redistFindNCCL.cmake)
if(TOOL)
  list(APPEND expected bin/redist)
endif()
foreach(f ${expected})
  if(NOT EXISTS ${staging}/${f})
    message(FATAL_ERROR "the install has no ${f}")
  endif()
endforeach()

# Relocatable: no path of this machine's source, build or NCCL in the package files.
file(GLOB package_files ${staging}/share/cmake/redist/*.cmake)
foreach(f ${package_files})
  file(READ ${f} text)
  foreach(path ${SOURCE_DIR} ${BUILD_DIR} ${staging} ${NCCL_LIBRARY})
    string(FIND "${text}" "${path}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${f} records the path ${path}: the package is not relocatable")
    endif()
  endforeach()
endforeach()

file(RENAME ${staging} ${PREFIX})
if(TOOL)
  run(${PREFIX}/bin/redist plan --mesh "{x: 4}" --from "[8, 2{x}8]" --to "[2{x}8, 8]")
  if(NOT out MATCHES "1  alltoall +1 +0 +4 +1 +64 +16  \\[2{x}8, 8\\]")
    message(FATAL_ERROR "the installed redist plan printed:\n${out}")
  endif()
endif()
message(STATUS "installed ${BUILD_DIR} into ${PREFIX}")
