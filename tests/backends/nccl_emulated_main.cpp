// The NCCL backend's GPU tests on the CPU stand-in for CUDA and NCCL (nccl_emulator.cpp), as
// one executable, backends_nccl_emulated_test, compiled as one unit with nccl_gpu_test.cpp
// and nccl_mpi_test.cpp (tests/backends/CMakeLists.txt; REDIST_NCCL_EMULATED_TESTS leaves
// out their own main): the library's headers are compiled once for the two. Run as
//   backends_nccl_emulated_test gpu [Catch2 arguments]
//   mpirun --oversubscribe -np W backends_nccl_emulated_test mpi [problems]
// On a GPU machine the two sources build as their own programs against CUDA and NCCL.
#include "support/subprograms.hpp"

namespace nccl_gpu_test {
int run(int argc, char** argv);  // nccl_gpu_test.cpp: one rank on one GPU (Catch2)
}
namespace nccl_mpi_test {
int run(int argc, char** argv);  // nccl_mpi_test.cpp: one rank per GPU, bootstrapped over MPI
}

int main(int argc, char** argv) {
  constexpr redist::testing::subprogram programs[] = {{"gpu", &nccl_gpu_test::run}, {"mpi", &nccl_mpi_test::run}};
  return redist::testing::run_subprogram(argc, argv, programs, "usage: backends_nccl_emulated_test gpu|mpi [arguments]");
}
