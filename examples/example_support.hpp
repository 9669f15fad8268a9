// examples/example_support.hpp -- what the examples share: choosing a backend from the
// command line (the in-process host mesh by default, MPI under mpirun), a local matmul
// on row-major tiles, and printing the collectives a program uses.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include "redist/backends/host.hpp"
#include "redist/format.hpp"
#include "redist/program.hpp"
#if REDIST_WITH_MPI
#include <mpi.h>

#include "redist/backends/mpi.hpp"
#endif

namespace example {

/// c[n x m] = a[n x k] @ b[k x m], row-major.
template <class T>
void matmul(const T* a, const T* b, T* c, std::uint64_t n, std::uint64_t k, std::uint64_t m) {
  for (std::uint64_t i = 0; i < n; ++i) {
    T* row = c + i * m;
    for (std::uint64_t j = 0; j < m; ++j) row[j] = T{};
    for (std::uint64_t q = 0; q < k; ++q) {
      const T x = a[i * k + q];
      const T* brow = b + q * m;
      for (std::uint64_t j = 0; j < m; ++j) row[j] += x * brow[j];
    }
  }
}

/// `--backend host|mpi` (default host) from the command line.
inline std::string backend_name(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string_view(argv[i]) == "--backend") return argv[i + 1];
  return "host";
}
/// `--flag value` as a number, or `fallback`.
inline std::uint64_t option(int argc, char** argv, std::string_view flag, std::uint64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string_view(argv[i]) == flag) return std::strtoull(argv[i + 1], nullptr, 10);
  return fallback;
}

/// Run f(backend, printing) with the chosen backend for a mesh of `devices` devices;
/// only one process prints. Returns the exit code; errors are one line on stderr.
template <class F>
int with_backend(int argc, char** argv, std::uint64_t devices, F&& f) {
  const std::string name = backend_name(argc, argv);
  try {
    if (name == "host") {
      redist::host_backend comm(devices);
      return f(comm, true);
    }
#if REDIST_WITH_MPI
    if (name == "mpi") {
      MPI_Init(&argc, &argv);
      int code = 1;
      try {
        redist::mpi_backend comm(MPI_COMM_WORLD);
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        code = f(comm, rank == 0);
        int worst = 0;
        MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        code = worst;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      MPI_Finalize();
      return code;
    }
#endif
    std::fprintf(stderr, "error: unknown backend '%s' (host%s)\n", name.c_str(), REDIST_WITH_MPI ? ", mpi" : "");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

/// One line per collective: its op, group size and bytes per device.
inline void print_collectives(const redist::program& p) {
  for (const auto& s : p.steps)
    fmt::print("    {:<13} groups of {:>3}  {:>10} bytes per device\n", redist::op_name(s.kind), s.parts,
               s.cost * p.element_bytes);
  if (p.steps.empty()) fmt::print("    (no communication)\n");
}

}  // namespace example
