# redistFindScaLAPACK.cmake -- the optional ScaLAPACK peer of the MPI benchmark
# (benchmarks/baselines/scalapack.hpp) and of its test (tests/baselines). Included from
# benchmarks/ and tests/baselines/; defines, once, the INTERFACE target redist_scalapack
# (redist::mpi + the ScaLAPACK library + REDIST_WITH_SCALAPACK=1) when MPI (redist::mpi)
# and a ScaLAPACK library are found. Never required: without them nothing is defined.
#
# Found with find_library, not with the packages' own files: Debian 12's CMake config
# (/usr/lib/cmake/scalapack-2.2.1.openmpi, find_package(scalapack CONFIG)) names
# /usr/lib/libscalapack-openmpi.so.2.2.1, which does not exist (the library is in
# /usr/lib/<multiarch>), and stops the configure with a fatal error; its pkg-config file
# needs mpi.pc, lapack.pc and blas.pc. The library links BLAS, LAPACK and MPI itself.
# The library's name follows the MPI implementation (Debian: libscalapack-openmpi,
# libscalapack-mpich), then plain libscalapack; set REDIST_SCALAPACK_LIBRARY to choose one,
# or to OFF to build without it.
get_property(_redist_scalapack_searched GLOBAL PROPERTY REDIST_SCALAPACK_SEARCHED)
if(_redist_scalapack_searched OR NOT TARGET redist::mpi)
  return()
endif()
set_property(GLOBAL PROPERTY REDIST_SCALAPACK_SEARCHED TRUE)

set(_redist_scalapack_names scalapack)
execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _redist_scalapack_mpiexec ERROR_QUIET)
if(_redist_scalapack_mpiexec MATCHES "Open MPI|OpenRTE")
  set(_redist_scalapack_names scalapack-openmpi scalapack)
elseif(_redist_scalapack_mpiexec MATCHES "HYDRA|MPICH")
  set(_redist_scalapack_names scalapack-mpich scalapack)
endif()
find_library(REDIST_SCALAPACK_LIBRARY NAMES ${_redist_scalapack_names}
             DOC "ScaLAPACK library for the MPI benchmark's p?gemr2d peer (optional)")
if(REDIST_SCALAPACK_LIBRARY)
  add_library(redist_scalapack INTERFACE)
  target_link_libraries(redist_scalapack INTERFACE redist::mpi ${REDIST_SCALAPACK_LIBRARY})
  target_compile_definitions(redist_scalapack INTERFACE REDIST_WITH_SCALAPACK=1)
  message(STATUS "redist: ScaLAPACK found for the MPI benchmark (${REDIST_SCALAPACK_LIBRARY})")
else()
  message(STATUS "redist: ScaLAPACK not found; the MPI benchmark runs without its p?gemr2d peer")
endif()
