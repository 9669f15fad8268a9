// The NCCL backend's GPU tests on the CPU stand-in for CUDA and NCCL (nccl_emulator.cpp), as
// one executable, backends_nccl_emulated_test, compiled as one unit with nccl_gpu_test.cpp
// and nccl_mpi_test.cpp (tests/backends/CMakeLists.txt; REDIST_NCCL_EMULATED_TESTS leaves
// out their own main): the library's headers are compiled once for the two. Run as
//   backends_nccl_emulated_test gpu [Catch2 arguments]
//   mpirun --oversubscribe -np W backends_nccl_emulated_test mpi [problems]
// On a GPU machine the two sources build as their own programs against CUDA and NCCL.
#include <cstdio>
#include <string_view>

namespace nccl_gpu_test {
int run(int argc, char** argv);  // nccl_gpu_test.cpp: one rank on one GPU (Catch2)
}
namespace nccl_mpi_test {
int run(int argc, char** argv);  // nccl_mpi_test.cpp: one rank per GPU, bootstrapped over MPI
}

int main(int argc, char** argv) {
  const std::string_view what = argc > 1 ? argv[1] : "";
  // The program's own arguments follow its name: it sees argv[0], then them.
  if (argc > 1) argv[1] = argv[0];
  if (what == "gpu") return nccl_gpu_test::run(argc - 1, argv + 1);
  if (what == "mpi") return nccl_mpi_test::run(argc - 1, argv + 1);
  std::fprintf(stderr, "usage: backends_nccl_emulated_test gpu|mpi [arguments]\n");
  return 2;
}
