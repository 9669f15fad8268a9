// tools/mpi_session.hpp -- MPI for the subcommands with --backend mpi (`redist run`,
// `redist calibrate`).
#pragma once

#if defined(REDIST_WITH_MPI)

#include <mpi.h>

#include <cstdlib>

namespace redist::tools {

/// Initialize MPI for the command (unless the caller did) and finalize it at exit, after
/// main has printed any error: MPI_Finalize synchronizes the ranks, so no rank exits (and
/// makes mpirun abort the job) before rank 0 has reported.
inline void ensure_mpi() {
  int init = 0;
  MPI_Initialized(&init);
  if (init) return;
  MPI_Init(nullptr, nullptr);
  std::atexit([] {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
  });
}

}  // namespace redist::tools

#endif  // REDIST_WITH_MPI
