// redist/backends/mpi_exchange.hpp -- the three ways the MPI backend moves an exchange
// (backends/mpi.hpp), named as `redist calibrate`, the time profile's "mpi" object
// (profile_json.hpp) and `--exchange` name them. Needs no MPI: a profile names them on any
// machine.
//
// - single-copy: MPI_Alltoallw of subarray datatypes, with the pieces of at least
//   mpi_options::single_copy_min_bytes between ranks of one node moved in one copy by
//   cross-memory attach (mpi_options::exchange_single_copy; the default);
// - alltoallw: MPI_Alltoallw of subarray datatypes only (MPI moves the pieces in place);
// - packed: the executor packs the pieces in rank order, one MPI_Alltoallv, then unpacks.
// Which is fastest depends on the node and on MPI (docs/benchmarks.md "Single-copy
// exchanges on MPI": Open MPI's non-contiguous receive runs at memory speed only while
// both ranks are on a core): `redist calibrate --backend mpi` times the three and records
// the fastest.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace redist {

enum class mpi_exchange { single_copy, alltoallw, packed };

inline constexpr std::array<mpi_exchange, 3> all_mpi_exchanges = {mpi_exchange::single_copy, mpi_exchange::alltoallw,
                                                                  mpi_exchange::packed};

/// "single-copy", "alltoallw" or "packed".
constexpr std::string_view mpi_exchange_name(mpi_exchange m) {
  switch (m) {
    case mpi_exchange::single_copy: return "single-copy";
    case mpi_exchange::alltoallw: return "alltoallw";
    case mpi_exchange::packed: return "packed";
  }
  return "?";
}

/// The mode of a name (mpi_exchange_name's), or none.
constexpr std::optional<mpi_exchange> mpi_exchange_from_name(std::string_view s) {
  for (mpi_exchange m : all_mpi_exchanges)
    if (mpi_exchange_name(m) == s) return m;
  return std::nullopt;
}

/// "single-copy, alltoallw, packed": for error messages.
inline std::string mpi_exchange_names() {
  std::string s;
  for (mpi_exchange m : all_mpi_exchanges) s += (s.empty() ? "" : ", ") + std::string(mpi_exchange_name(m));
  return s;
}

}  // namespace redist
