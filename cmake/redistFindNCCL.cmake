# redistFindNCCL.cmake -- where NCCL is, for the NCCL backend (backends/nccl.hpp).
#
# Include after find_package(CUDAToolkit). Sets the cache variables REDIST_NCCL_INCLUDE_DIR
# (the folder of nccl.h) and REDIST_NCCL_LIBRARY (libnccl), or leaves them *-NOTFOUND.
# Looks next to the CUDA toolkit, then under $ENV{NCCL_HOME}, then in the system paths.
# Used by redist's own build and by the installed redistConfig.cmake, so that a consumer
# finds NCCL on its machine instead of the paths of the machine that built redist.
find_path(REDIST_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include)
find_library(REDIST_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME PATH_SUFFIXES lib lib64)
