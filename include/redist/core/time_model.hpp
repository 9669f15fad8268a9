// redist/core/time_model.hpp -- the time cost model (an extension beside Fig. 11): the
// predicted seconds of one step on a backend, alpha-beta per kind of step.
//
// For a step of kind k whose rank exchanges data with `peers` other ranks, receives
// `bytes` bytes from them (the most any rank does) and writes a tile of `tile` bytes, on a
// backend with profile P:
//
//   t = P[k].latency + P[k].per_peer * peers + P[k].per_byte * bytes + P.pass_per_byte * tile
//
// The last term is one pass over local memory: every step that moves or copies data writes
// its whole tile once (what it receives and what it keeps), so a program of k steps pays k
// passes where one exchange pays one. It is the backend's, not the kind's: calibration times
// it as the executor's copy of a tile.
//
//   allgather, alltoall,     peers = n - 1 (group of n), bytes = what a member receives
//   allreduce, reducescatter        (core/cost.hpp received_elements times the element size)
//   allpermute               peers = 1, bytes = the tile (0 if every rank keeps its own)
//   dynslice                 peers = 0, bytes = the new tile (a local copy)
//   exchange                 peers = the most ranks one rank sends to or receives from,
//                            bytes = the most one rank receives (redist/exchange.hpp)
//   tile = the tile after the step (0 for an allpermute that moves nothing: no time at all)
//
// A program's predicted time is the sum over its steps. Profiles come from measurement
// (`redist calibrate --backend host|mpi`, runtime/calibrate.hpp; JSON in
// redist/profile_json.hpp) or are the built-in one below. Fig. 11 stays the search's cost;
// synthesize (lower/synthesize.hpp) uses this model only to choose among the programs the
// search and the exchange offer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "redist/core/cost.hpp"

namespace redist {

/// alpha-beta terms of one kind of step, in seconds.
struct op_time {
  double latency = 0;   ///< per step
  double per_peer = 0;  ///< per other rank a rank sends to or receives from
  double per_byte = 0;  ///< per byte a rank receives (dynslice: copies)
  constexpr bool operator==(const op_time&) const = default;
};

inline constexpr int op_count = 7;

/// A backend's profile: the terms of every kind of step.
struct time_profile {
  char name[32]{};             ///< where it comes from ("host", "mpi", "built-in"), NUL-terminated
  std::uint64_t devices = 0;   ///< ranks it was measured on (0: not measured)
  op_time ops[op_count]{};
  double pass_per_byte = 0;    ///< per byte of the tile a step writes (one pass over memory)

  constexpr void set_name(std::string_view s) {
    std::size_t i = 0;
    for (; i < s.size() && i + 1 < sizeof name; ++i) name[i] = s[i];
    for (; i < sizeof name; ++i) name[i] = 0;
  }
  [[nodiscard]] constexpr std::string_view name_view() const {
    std::size_t n = 0;
    while (n < sizeof name && name[n] != 0) ++n;
    return {name, n};
  }

  constexpr op_time& operator[](op o) { return ops[static_cast<int>(o)]; }
  constexpr const op_time& operator[](op o) const { return ops[static_cast<int>(o)]; }

  /// Predicted seconds of one step (the formula above).
  [[nodiscard]] constexpr double seconds(op o, std::uint64_t peers, std::uint64_t bytes, std::uint64_t tile) const {
    const op_time& t = (*this)[o];
    return t.latency + t.per_peer * static_cast<double>(peers) + t.per_byte * static_cast<double>(bytes) +
           pass_per_byte * static_cast<double>(tile);
  }
};

/// The built-in profile: the MPI backend (Open MPI, shared memory) on one 2-core node with 8
/// ranks, the median of three runs of `mpirun -np 8 redist calibrate --backend mpi` (sizes 64
/// KiB, 1 MiB and 8 MiB per rank) on the development machine (docs/reference.md "Time model"),
/// rounded. Every step writes its tile at about 3.3 GB/s per rank (8 ranks on 2 cores): a
/// dynslice is nothing but that pass. Collectives pay a latency per step and per peer; an
/// all-to-all moves its bytes about 3x slower than an exchange's subarray pieces
/// (MPI_Alltoall with derived datatypes against MPI_Alltoallw).
inline constexpr time_profile builtin_profile = [] {
  time_profile p;
  p.set_name("built-in");
  p.devices = 8;
  p[op::allgather] = {31e-6, 28e-6, 0.20e-9};
  p[op::alltoall] = {0, 116e-6, 0.94e-9};
  p[op::dynslice] = {0, 0, 0};
  p[op::allpermute] = {76e-6, 0, 0.17e-9};
  p[op::allreduce] = {47e-6, 62e-6, 0.71e-9};
  p[op::reducescatter] = {19e-6, 31e-6, 1.04e-9};
  p[op::exchange] = {39e-6, 44e-6, 0.33e-9};
  p.pass_per_byte = 0.30e-9;
  return p;
}();

}  // namespace redist
