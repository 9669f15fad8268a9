// redist/core/time_model.hpp -- the time cost model (an extension beside Fig. 11): the
// predicted seconds of one step on a backend, alpha-beta per kind of step.
//
// For a step of kind k whose rank exchanges data with `peers` other ranks and receives
// `bytes` bytes from them (the most any rank does), on a backend with profile P:
//
//   t = P[k].latency + P[k].per_peer * peers + P[k].per_byte * bytes
//
//   allgather, alltoall,     peers = n - 1 (group of n), bytes = what a member receives
//   allreduce, reducescatter        (core/cost.hpp received_elements times the element size)
//   allpermute               peers = 1, bytes = the tile (0 if every rank keeps its own)
//   dynslice                 peers = 0, bytes = the new tile (a local copy)
//   exchange                 peers = the most ranks one rank sends to or receives from,
//                            bytes = the most one rank receives (redist/exchange.hpp)
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
  [[nodiscard]] constexpr double seconds(op o, std::uint64_t peers, std::uint64_t bytes) const {
    const op_time& t = (*this)[o];
    return t.latency + t.per_peer * static_cast<double>(peers) + t.per_byte * static_cast<double>(bytes);
  }
};

/// The built-in profile: the MPI backend (Open MPI, shared memory) on one 2-core node with 8
/// ranks, the median of three runs of `mpirun -np 8 redist calibrate --backend mpi` on the
/// development machine (docs/reference.md "Time model"), rounded. Collectives pay a latency
/// per step and per peer; an all-to-all moves its bytes about 3x slower than an exchange's
/// subarray pieces (MPI_Alltoall with derived datatypes against MPI_Alltoallw).
inline constexpr time_profile builtin_profile = [] {
  time_profile p;
  p.set_name("built-in");
  p.devices = 8;
  p[op::allgather] = {66e-6, 10e-6, 0.59e-9};
  p[op::alltoall] = {17e-6, 22e-6, 1.84e-9};
  p[op::dynslice] = {0.1e-6, 0, 0.025e-9};
  p[op::allpermute] = {60e-6, 0, 0.45e-9};
  p[op::allreduce] = {56e-6, 26e-6, 0.92e-9};
  p[op::reducescatter] = {15e-6, 20e-6, 2.07e-9};
  p[op::exchange] = {45e-6, 16e-6, 0.58e-9};
  return p;
}();

}  // namespace redist
