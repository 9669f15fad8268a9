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
//   allgather, alltoall,     peers = ceil(log2 n), the rounds in which a member of a group of
//   allreduce, reducescatter        n reaches the other n - 1 (recursive doubling, Bruck: what
//                                   MPI libraries run for small messages), bytes = what a
//                                   member receives (core/cost.hpp received_elements times the
//                                   element size)
//   allpermute               peers = 1, bytes = the tile (0 if every rank keeps its own)
//   dynslice                 peers = 0, bytes = the new tile (a local copy)
//   partial                  no terms of its own: the pass over its tile alone
//   exchange                 peers = the most ranks one rank sends to or receives from,
//                            bytes = the most one rank receives (redist/exchange.hpp)
//   tile = the tile after the step (0 for an allpermute that moves nothing: no time at all)
//   fused allgather/alltoall, and one clipped to padded tiles (uneven types): the same, plus
//   latency and per-round terms for every further piece the executor moves it in
//   (pieced_step_seconds)
//
// Why rounds, not n - 1: a collective over 8 split into one over 2 and one over 4 moves the
// same bytes in 1 + 2 = 3 rounds, as many as the single one, and measures the same (MPI, 8
// ranks: one all-gather 18.0-24.4 us, the two 18.5-20.5 us). Priced per peer, the split paid
// 4 peers against 7 and a search that minimizes time took it, one collective more than XLA,
// Shardy and DTensor emit; priced per round it pays one more latency and one more pass and
// loses. Profiles priced per peer (format redist-time-profile/1) are refused; recalibrate.
//
// Ranks on several nodes (node_ranks, node_per_byte; 0: one node, no term): a step also pays
// for what crosses the busiest node's network link,
//
//   t += P.node_per_byte * (the most bytes one node sends to, or receives from, other nodes)
//
// counted from the step's ranks (lower/node_links.hpp): an exchange's pieces; an all-gather,
// reduce-scatter or all-reduce as a ring that visits each node's members together (each node
// a group spans sends and receives what one member receives); every pair of an all-to-all
// group; the tiles a permute moves to another node. The per-rank terms above stay what a
// rank copies or receives; the link term is what the network adds, so a plan that sends each
// byte over the link once (the two-phase plan between meshes, lower/between.hpp) wins where
// the link is slow. Predicted times (synthesize's choice, the candidates between meshes,
// relabelling, the joint plan's rounds) count it; the search's step weights do not.
//
// A program's predicted time is the sum over its steps. Profiles come from measurement
// (`redist calibrate --backend host|mpi`, runtime/calibrate.hpp; JSON in
// redist/profile_json.hpp) or are the built-in one below. It is the search's objective by
// default (search/weak_graph.hpp, objective::time: every edge weighs step_seconds in whole
// picoseconds, so that both searches add exactly and agree); objective::bytes keeps the
// paper's Fig. 11 cost. synthesize (lower/synthesize.hpp) then chooses between the search's
// collective program and the exchange by the same model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "redist/core/cost.hpp"

namespace redist {

/// alpha-beta terms of one kind of step, in seconds.
struct op_time {
  double latency = 0;   ///< per step
  double per_peer = 0;  ///< per round of a collective (ceil(log2 n)), per peer of an exchange
  double per_byte = 0;  ///< per byte a rank receives (dynslice: copies)
  constexpr bool operator==(const op_time&) const = default;
};

inline constexpr int op_count = 8;  // every op; a partial step's terms stay 0 (core/cost.hpp all_ops)

/// A backend's profile: the terms of every kind of step.
struct time_profile {
  char name[32]{};             ///< where it comes from ("host", "mpi", "built-in"), NUL-terminated
  std::uint64_t devices = 0;   ///< ranks it was measured on (0: not measured)
  op_time ops[op_count]{};
  double pass_per_byte = 0;    ///< per byte of the tile a step writes (one pass over memory)
  /// The share of a message round's transfer time during which a rank copies at full speed
  /// (0 to 1): what packing the next round while this one flies can hide (lower/reshard.hpp,
  /// pipelined rounds). 0 where the transfers take the cores the copies need (shared-memory
  /// MPI on an oversubscribed node, the built-in profile); towards 1 where a network or
  /// copy engines move the bytes. Calibration measures it on message backends.
  double overlap = 0;
  /// World ranks per node, consecutive (ranks r and s share a node iff r / node_ranks ==
  /// s / node_ranks), and seconds per byte one node's link to the others carries in each
  /// direction. 0 (either): every rank on one node, no link term. Set by hand or in the
  /// profile's "nodes" (calibration runs on one node).
  std::uint64_t node_ranks = 0;
  double node_per_byte = 0;

  /// Whether the link term applies in a world of `world` ranks (more than one node).
  [[nodiscard]] constexpr bool spans_nodes(std::uint64_t world) const {
    return node_ranks > 0 && node_per_byte > 0 && world > node_ranks;
  }

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

  constexpr bool operator==(const time_profile&) const = default;

  constexpr op_time& operator[](op o) { return ops[static_cast<int>(o)]; }
  constexpr const op_time& operator[](op o) const { return ops[static_cast<int>(o)]; }

  /// Predicted seconds of one step (the formula above).
  [[nodiscard]] constexpr double seconds(op o, std::uint64_t peers, std::uint64_t bytes, std::uint64_t tile) const {
    const op_time& t = (*this)[o];
    return t.latency + t.per_peer * static_cast<double>(peers) + t.per_byte * static_cast<double>(bytes) +
           pass_per_byte * static_cast<double>(tile);
  }
};

/// The rounds in which a member of a collective over n reaches the others: ceil(log2 n)
/// (recursive doubling, Bruck; 0 for n <= 1), the count its per-peer term multiplies.
constexpr std::uint64_t collective_rounds(std::uint64_t n) {
  std::uint64_t r = 0;
  for (std::uint64_t reach = 1; reach < n; reach = reach > UINT64_MAX / 2 ? UINT64_MAX : 2 * reach) ++r;
  return r;
}

/// Predicted seconds of one collective step (the formula above): kind o over groups of n
/// members that hold `before` elements of `element_bytes` bytes before the step and `after`
/// after it. An allpermute is priced as moving its whole tile (callers price one that moves
/// nothing as 0), an exchange by its pieces (redist/exchange.hpp; not here). Computed in
/// floating point, so that sizes near 2^64 do not wrap.
constexpr double step_seconds(const time_profile& P, op o, std::uint64_t n, std::uint64_t before, std::uint64_t after,
                              std::uint64_t element_bytes) {
  const double e = static_cast<double>(element_bytes), tile = static_cast<double>(after) * e;
  const op_time& t = P[o];
  // core/cost.hpp received_elements, in floating point.
  const double peers = o == op::dynslice || o == op::partial ? 0
                       : o == op::allpermute                  ? 1
                                                              : static_cast<double>(collective_rounds(n));
  const double others = n > 0 ? static_cast<double>(n - 1) : 0;
  double bytes = 0;
  switch (o) {
    case op::dynslice: bytes = tile; break;
    case op::partial: break;
    case op::allpermute: bytes = static_cast<double>(before) * e; break;
    case op::allgather: bytes = others * static_cast<double>(before) * e; break;
    case op::allreduce: bytes = n > 0 ? 2 * others * static_cast<double>(before / n) * e : 0; break;
    case op::reducescatter: bytes = others * static_cast<double>(after) * e; break;  // padded chunks (uneven)
    default: bytes = n > 0 ? others * static_cast<double>(before / n) * e : 0; break;  // alltoall
  }
  return t.latency + t.per_peer * peers + t.per_byte * bytes + P.pass_per_byte * tile;
}

/// The executor's default bound on the pieces of a packed step, in bytes
/// (runtime/executor.hpp executor_options::pack_chunk_bytes).
inline constexpr std::uint64_t default_pack_chunk_bytes = std::uint64_t{1} << 20;

/// The bytes one packed step may pack at a time (runtime/executor.hpp, its memory formula),
/// in a program whose larger end tile holds `in_out` elements of `element_bytes` bytes:
/// C = min(chunk_bytes, in_out * e / 2), so that a step's send and receive buffers together
/// stay within the end tile. A fused allgather packs no sends: in a program where no step
/// packs sends (`whole`), its receives may take the whole end tile, min(chunk_bytes,
/// in_out * e). Every rank computes the same (the pieces are collectives).
constexpr std::uint64_t pack_budget_bytes(std::uint64_t in_out, std::uint64_t element_bytes, bool whole = false,
                                          std::uint64_t chunk_bytes = default_pack_chunk_bytes) {
  const std::uint64_t e = element_bytes > 0 ? element_bytes : 1;
  const std::uint64_t tile = in_out > UINT64_MAX / e ? UINT64_MAX : in_out * e;
  const std::uint64_t bytes = whole ? tile : tile / 2;
  return chunk_bytes < bytes ? chunk_bytes : bytes;
}

/// Elements of every block per piece of a packed step over groups of n whose blocks hold
/// `block` elements, within `budget` bytes for the n pieces (pack_budget_bytes): at least
/// one, at most the block.
constexpr std::uint64_t pack_piece_elements(std::uint64_t n, std::uint64_t block, std::uint64_t budget,
                                            std::uint64_t element_bytes) {
  const std::uint64_t e = element_bytes > 0 ? element_bytes : 1;
  const std::uint64_t per = n == 0 ? budget / e : budget / (n * e);
  const std::uint64_t piece = per > 1 ? per : 1;
  return block < piece ? block : piece;
}

/// Predicted seconds of an allgather or alltoall the executor packs in pieces
/// (runtime/executor.hpp): kind o over groups of n members holding `before` elements, whose
/// blocks hold `block` elements (an allgather's tile, an alltoall's chunk), in a program
/// whose larger end tile holds `in_out` elements: step_seconds, plus the latency and
/// per-round terms once more for every further piece of pack_piece_elements within
/// pack_budget_bytes(in_out, element_bytes, whole), one backend collective each.
constexpr double pieced_step_seconds(const time_profile& P, op o, std::uint64_t n, std::uint64_t before,
                                     std::uint64_t after, std::uint64_t element_bytes, std::uint64_t in_out,
                                     std::uint64_t block, bool whole) {
  const std::uint64_t budget = pack_budget_bytes(in_out, element_bytes, whole);
  const std::uint64_t piece = pack_piece_elements(n, block, budget, element_bytes);
  const std::uint64_t pieces = block == 0 ? 1 : (block + piece - 1) / piece;
  const op_time& t = P[o];
  const double rounds = static_cast<double>(collective_rounds(n));
  return step_seconds(P, o, n, before, after, element_bytes) +
         static_cast<double>(pieces - 1) * (t.latency + t.per_peer * rounds);
}

/// Predicted seconds of one fused allgather or alltoall (program.hpp: several dimensions in
/// one collective) of kind o over groups of n members holding `before` elements, in a
/// program whose larger end tile holds `in_out` elements: pieced_step_seconds. The executor
/// packs a fused step on every backend (runtime/executor.hpp run_fused): it moves the
/// blocks (the tile of an allgather, the n chunks of an alltoall) in pieces, one backend
/// collective each, where a one-dimension step on the host and MPI backends is one
/// collective in place. Priced as on those backends, where an even program without a fused
/// alltoall packs no sends (an allgather's pieces may fill the end tile; an alltoall's, half).
constexpr double fused_step_seconds(const time_profile& P, op o, std::uint64_t n, std::uint64_t before,
                                    std::uint64_t after, std::uint64_t element_bytes, std::uint64_t in_out) {
  const bool gather = o != op::alltoall;
  const std::uint64_t block = gather ? before : (n > 0 ? before / n : before);
  return pieced_step_seconds(P, o, n, before, after, element_bytes, in_out, block, gather);
}

/// Seconds as whole picoseconds, the unit the search adds (integers add exactly, in any
/// order, so the run-time and compile-time searches find the same optimum); saturating.
constexpr std::uint64_t picoseconds(double s) {
  if (!(s > 0)) return 0;
  const double ps = s * 1e12 + 0.5;
  return ps >= 1.8e19 ? UINT64_MAX : static_cast<std::uint64_t>(ps);
}

/// The built-in profile: the MPI backend (Open MPI, shared memory) on one 2-core node with 8
/// ranks, from seven runs of `mpirun -np 8 redist calibrate --backend mpi` (sizes 4 KiB, 64
/// KiB, 1 MiB and 8 MiB per rank, the default) on the development machine (docs/reference.md
/// "Time model"), rounded: per kind, the line through the medians of its predicted latency at
/// groups of 2 and of 8 (one and three rounds; the fit alone trades the latency against the
/// per-round term from run to run), the median per-byte term and the median pass. Every step
/// writes its tile at about 5.5 GB/s per rank (8 ranks on 2 cores): a dynslice is nothing but
/// that pass. A collective costs 10-20 us per round, an all-to-all or an exchange 12-17 us of
/// it fixed: one collective of 8 costs about what one of 2 and one of 4 cost together, and
/// the search splits none for time alone. The all-reduce is at most the reduce-scatter plus
/// the all-gather that implement it (calibrate.hpp), so a small sum is one all-reduce.
inline constexpr time_profile builtin_profile = [] {
  time_profile p;
  p.set_name("built-in");
  p.devices = 8;
  p[op::allgather] = {1.3e-6, 10.5e-6, 0.38e-9};
  p[op::alltoall] = {12e-6, 7.8e-6, 0.92e-9};
  p[op::dynslice] = {0, 0, 0};
  p[op::allpermute] = {19e-6, 0, 0.23e-9};
  p[op::allreduce] = {1.3e-6, 21.4e-6, 0.69e-9};
  p[op::reducescatter] = {0, 11.6e-6, 1.01e-9};
  p[op::exchange] = {17e-6, 5.7e-6, 0.34e-9};
  p.pass_per_byte = 0.18e-9;
  return p;
}();

}  // namespace redist
