// The MPI test programs as one executable, backends_mpi_test, compiled as one unit with
// mpi_test.cpp, mpi_between_test.cpp and mpi_reshard_test.cpp (tests/backends/CMakeLists.txt):
// the library's headers are compiled once for the three, not once each. Run under
//   mpirun --oversubscribe -np W backends_mpi_test exchange|between|reshard [counts]
// The first argument names the program; the rest are its own (see its source).
#include "support/subprograms.hpp"

namespace mpi_exchange_test {
int run(int argc, char** argv);  // mpi_test.cpp: the backend on random programs, single copy, errors
}
namespace mpi_between_test {
int run(int argc, char** argv);  // mpi_between_test.cpp: redistributions between meshes on device sets
}
namespace mpi_reshard_test {
int run(int argc, char** argv);  // mpi_reshard_test.cpp: many arrays at once through message rounds
}

int main(int argc, char** argv) {
  constexpr redist::testing::subprogram programs[] = {
      {"exchange", &mpi_exchange_test::run}, {"between", &mpi_between_test::run}, {"reshard", &mpi_reshard_test::run}};
  return redist::testing::run_subprogram(argc, argv, programs,
                                         "usage: backends_mpi_test exchange|between|reshard [counts] (under mpirun)");
}
