# cmake -DMODE=package|subdirectory|fetchcontent -DCONSUMER=... -DBINARY_DIR=... -DCXX=...
#       -DGENERATOR=... -DREDIST_SOURCE_DIR=... -DREDIST_PREFIX=... -DEXPECTED=... -P consume.cmake
#
# One package smoke test: configures the consumer project (consumer/) from scratch in
# BINARY_DIR with the compiler CXX, builds it and runs it; passes if the consumer prints
# its exact line (every element of the redistribution in place).
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)

file(REMOVE_RECURSE ${BINARY_DIR})
run(${CMAKE_COMMAND} -S ${CONSUMER} -B ${BINARY_DIR} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
    -DREDIST_CONSUME=${MODE} -DREDIST_SOURCE_DIR=${REDIST_SOURCE_DIR} -DREDIST_PREFIX=${REDIST_PREFIX}
    -DCMAKE_PREFIX_PATH=${REDIST_PREFIX} -DREDIST_EXPECTED=${EXPECTED})
run(${CMAKE_COMMAND} --build ${BINARY_DIR})
run(${BINARY_DIR}/consumer)
if(NOT out STREQUAL "consumer: [8, 2{x}8] -> [2{x}8, 8] in 1 step(s), 64 of 64 elements in place\n")
  message(FATAL_ERROR "the consumer (${MODE}) printed:\n${out}")
endif()
message(STATUS "${MODE}: ${out}")
