// redist/lower/reshard.hpp -- many arrays at once (a model's whole state: weights from a
// trainer's layout to an inference engine's, a checkpoint, optimizer state) in one joint
// plan, within a per-rank byte budget (docs/reference.md "Many arrays at once").
//
// Every array has its own plan as one redistribution would (lower/between.hpp
// plan_between: the exchange, a collective program, ...). The joint plan moves most arrays
// together:
//   joint   the array's exchange pieces (redist/exchange.hpp plan_exchange: the sender rule,
//           by node where the profile's ranks span nodes, reshard_plan::node_ranks; every
//           rank receives exactly the lower bound) join one exchange of every such
//           array: the pieces going from one rank to another in the same round travel as
//           one message, so a round pays one latency and one message per pair of ranks,
//           whatever the number of arrays. Pieces a rank keeps are copied from its source
//           tile to its target tile (`local`), with no buffer between.
//   own     the array's own program, run alone: arrays with pending sums (an exchange does
//           not add), and arrays whose own plan is predicted faster than what they add to
//           the joint exchange (a collective inside the same ranks may beat the exchange
//           on the busiest link). Under a budget only programs whose buffers fit in it on
//           any backend (detail::own_held_bound, runtime/executor.hpp's memory formula), and
//           programs with pending sums, chunk by chunk where they would hold more than the
//           budget (below).
// Casts (reshard_array::target_dtype). An array whose target holds another floating-point
// type than its source (an f32 trainer's weights to a bf16 engine) is joint: its pieces travel
// in the narrower of the two types (runtime/reshard_executor.hpp converts them where they are
// packed when narrowing, where they are unpacked when widening, and as they are copied where a
// rank keeps them), so its bytes on the way, its lower bound and the budget count that type.
// An array that casts pending values (reduces its source's, or creates its target's: bf16
// gradients reduce-scattered into f32 shards, as PyTorch FSDP's MixedPrecision(reduce_dtype=
// f32) does) takes its own program, run in the type that holds both exactly
// (reshard_array::program_type, element_type_holding: f32 for bf16 gradients); its source is
// converted into a tile of that type before the program and its target out of one after
// (staged; each a pass, priced as one), or, where its collectives fuse, as they are packed
// into the flat buffers and copied out of them (no pass of their own). Casting between other
// types, and casting values without pending ones and without the joint exchange, are
// refused, naming the array.
// Rounds and the budget. A rank's transient bytes in a round are the messages it packs to
// send plus the messages it receives; with a budget of B bytes every round keeps them at
// most B on every rank. Pieces larger than B are cut into chunks of whole rows (indices of
// dimension 0); the chunks are placed first-fit, largest first (ties in one of two orders,
// below), into the first round where both the sender and the receiver have room. A row of
// a piece larger than B is refused. A round takes as long as its busiest
// rank's larger side, sends or receives, so a rank that fills B with one side idles the
// other: placed so, a rank that both sends and receives (a trainer rank that is an engine
// rank too) moves them one after the other. The rounds are also placed with every rank's
// sends within B/2 and its receives within B/2 (`halves`: pieces cut at B/2, so both sides
// move in one round), and the schedule predicted faster is taken (on the weight-sync states
// of examples/gpt_state.hpp within 1/8 of the largest array, 1.36-1.63x the time of no
// budget placed together, 1.10x in halves).
// Without a budget there is one round.
// The pieces ranks keep (reshard_plan::local) need no buffer: a rank copies them from its
// source tiles to its target tiles while a round's messages fly (runtime/reshard_executor.hpp),
// and the pass over them counts in that round's time. Without a budget, or with one round,
// every rank copies all of them in the first round. Rounds fill every rank's budget from the
// first round on, so a rank that keeps much (a trainer rank that is an engine rank, which
// receives that much less) would write its kept bytes on top of a full first round, and
// have nothing left to receive in the last rounds. Under a budget over two rounds or more the kept pieces
// are therefore cut into chunks of whole rows as the pieces between ranks are, and placed,
// largest first (ties in array, piece and chunk order), each in the round where it adds
// least to the most bytes one rank writes (ties: where its rank writes least, then the
// earliest): into the rounds its rank receives little in. On the weight-sync states within
// 1/8 of the largest array this takes the budget's predicted cost from 1.10x to 1.01-1.03x
// the time without a budget.
// Two orders. Arrays of one layout and wire type (a model's layers) have the same chunks
// between the same ranks. Chunks of one size are placed array by array (each array's in
// piece and chunk order, arrays in order), or chunk by chunk, each chunk for every array
// of its layout at once (as many as fit in the first round with room, the rest in the next
// such rounds; layouts in the order of their first arrays). Chunk by chunk puts a pair of
// ranks' pieces of every layer in fewer rounds: fewer messages, and one placement per
// chunk instead of one per array and chunk; array by array spreads each rank's bytes more
// evenly over the rounds. Each schedule is placed chunk by chunk, and also array by array
// where the layouts are shared and the joint arrays have at most 2^20 pieces between ranks
// (detail::both_orders_pieces); the faster by prediction is taken, chunk by chunk on a
// tie. On the GPT-style states at 8-64 ranks within 1/2-1/32 of the largest array
// (72 plans) the predicted time drops by up to 35% on 28 and rises on none; from FSDP
// W/8 x TP 8 to replicas of TP 8 within 1-16 MiB, where only chunk by chunk runs, 512
// ranks send 1.4-6.8x fewer messages in up to 8% more rounds, predicted 0.6-23% faster, and
// rank 0's plan within 4 MiB takes 2.2-2.7x less time at 512-2048 ranks.
// Own programs under a budget (reshard_plan::chunks). An array with pending sums moves by its
// own program (with one call per array, reshard_options::joint false, every array does),
// whose executor holds scratch and pack buffers (runtime/executor.hpp, memory
// formula; detail::own_held_bound bounds them for any backend). Where that bound passes the
// budget, the program runs chunk by chunk: the tiles are cut along dimensions whose blocks
// at both ends are whole units (the least common multiple of the two block counts divides
// the extent), a chunk taking the same rows of every unit, so that the chunks of every tile
// are the tiles of one smaller array and one program (the plan of that array) moves each
// chunk, one call after another. A chunk that is not one run of a caller's tile, or that
// casts, is staged in a buffer of its size. The cut is the one of fewest chunks whose bound
// with its staging fits (detail::chunk_own: one dimension where one fits, else one row of
// the longest dimensions and the largest rows of the next); the chunks share one agreement
// (the joint plan's; with one call per array, the first chunk's: the same program on the
// same shapes). An
// array whose single rows (of every dimension that may be cut) still hold more than the
// budget is refused by the executor, before anything moves, naming it. Arrays that fuse
// their calls are not chunked: their buffers already stay within the budget.
// Pipelined rounds (reshard_options::pipeline). Rounds may run two at a time: round k+1's
// receives posted and its messages packed and sent before round k is waited for
// (runtime/reshard_executor.hpp), so that packing hides behind the transfers. Two rounds
// then hold buffers at once, so they are placed as above within B/2 each (or in halves of
// B/2): any two consecutive rounds stay within B. More rounds pay more latencies; automatic
// pipelines where that is predicted faster.
//
// Large worlds (reshard_options::of_rank). Every rank of an MPI or NCCL job plans the same
// plan; of its pieces it needs only those it sends, receives or keeps. The planner schedules
// and prices every piece by its sender, receiver and size alone (detail::flow: no box), and
// keeps the boxes of the pieces the plan holds: all of them, or a rank's. A rank's plan is
// the whole plan with the other ranks' pieces left out: the same routes, rounds (each with
// the whole round's counts), bytes per rank and predictions (tests/lower/test_reshard.cpp).
// Arrays laid out as an earlier one (a model's layers) take its own plan (where their
// program types agree) and a copy of the pieces the plan keeps; the planner holds each
// layout's pieces between ranks once (detail::layout_flows): without a budget each is priced
// for every joint array laid out so at once (detail::flow_weights), under one each (layout,
// wire type) is cut into chunks once, and first fit places every array's chunks in the order
// above ("Rounds and the budget").
//
// Time. A round is priced as one exchange step (core/time_model.hpp): the most peers one
// rank sends to or receives from, the most bytes one rank receives or sends (its transfer
// t_k), and the pass over the bytes it writes (c_k; with the pieces it keeps in that round,
// "The pieces ranks keep" above); an own program by its own prediction (one of no steps
// copies the tile: a pass over it). On ranks of several nodes (the profile's node_ranks and
// node_per_byte) t_k also counts the most bytes one node's link
// carries in the round (lower/node_links.hpp), and own programs count their links: without
// a budget, an array whose target replicates on another node takes its own two-phase plan
// (each byte over the link once) where the joint exchange would send a copy to every
// replica. Pipelined rounds hide up to P.overlap * t_k of round k+1's pass behind round k's
// transfer:
//   sum_k (t_k + c_k) - P.overlap * sum_{k < n-1} min(t_k, c_{k+1}).
// Every call starts with one agreement (runtime/backend.hpp agree: an all-reduce of three
// 64-bit words over the world, before anything moves; detail::call_seconds; with NCCL a
// stream synchronization too). A joint plan is one call: its agreement covers the joint
// exchange, the fused collectives and every own program (runtime/reshard_executor.hpp), so
// the own programs pay none of their own. `seconds` is that agreement, the joint exchange's
// rounds, then every fused collective and every other own program; with one call per array
// (joint false) every own program with its call; `separate_seconds` is one call per array,
// one after another (each array's own plan and call; within a budget, chunked as that plan
// chunks it: the seconds of joint false), for comparison.
// Fused collectives (reshard_plan::fused). Own programs of even all-reduces, reduce-scatters
// and all-gathers over every rank (detail::fusible: the gradients of FSDP, `[{tp}K, D]
// sum{fsdp}` -> `[{tp}K, {fsdp}D]`, of DDP, and of HSDP, a reduce-scatter over the shards then
// an all-reduce or all-gather over the replicas) whose steps are the same calls (kind,
// reduction, groups) run as one call per step over flat buffers, as FSDP's and DDP's buckets
// do (detail::schedule_fused, runtime/reshard_executor.hpp): every rank packs its source tiles
// as the first step sends them (a reduce-scatter's block m holds chunk m of every array),
// each step runs once from one buffer into the other, the arrangement changes between steps
// where the next sends another (after an all-gather, before a reduce-scatter), and the result
// is copied into the target tiles. Such a call is priced (detail::fused_seconds) as each
// step over the sums of the arrays' tiles and the passes of its copies. An array joins
// where what it adds to the call of every candidate of its calls is predicted below its own
// program (and a set where it is predicted faster than its arrays' own programs). A call's
// predicted seconds stay within reshard_options::fuse_set_calls agreements' time (16, in
// detail::call_seconds, the unit of one call's fixed cost): past that, one more array saves
// under 1/16 of the call's time by the model while the buffers grow out of the caches, which
// the model does not see (8 MPI ranks of 2 cores: calls so bounded, about 1 MiB of buffers
// per rank, ran 1.12-1.34x faster than sets of up to 32 MiB where those outgrew 2 MiB, within
// 0.92-1.02x elsewhere; docs/benchmarks.md).
// Bounded by time, the sets follow the profile: under one whose bytes are cheaper beside its
// calls, calls fill larger buffers. The buffers hold at most the budget, or fuse_bytes without
// one, and each array's part of them (both, per rank) at most fuse_array_bytes (no cap by
// default). A set that would pass a bound is split in array order; a set of one array (an
// array above a bound alone) is its own program. Joint arrays need no fusing: their pieces go
// in the joint exchange, one message per pair of ranks whatever the number of arrays.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "redist/core/element_type.hpp"
#include "redist/core/error.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/between.hpp"
#include "redist/lower/node_links.hpp"

namespace redist {

/// One array of a reshard: its name, element type and where it lives before and after: a
/// type on a placed mesh, or a box layout (redist/box.hpp) listing one entry per world rank.
/// With target_dtype, the target holds another floating-point type than the source (a cast
/// on the way, the header comment).
struct reshard_array {
  std::string name;
  element_type dtype = element_type::f32;
  array_layout source, target;
  std::optional<element_type> target_dtype = std::nullopt;
  /// The source's element bytes.
  [[nodiscard]] std::uint64_t element_bytes() const { return element_type_bytes(dtype); }
  /// The target's element type and bytes.
  [[nodiscard]] element_type target_type() const { return target_dtype.value_or(dtype); }
  [[nodiscard]] std::uint64_t target_element_bytes() const { return element_type_bytes(target_type()); }
  [[nodiscard]] bool casts() const { return target_type() != dtype; }
  /// The type its elements travel in: the narrower of the two (the source's at equal sizes).
  [[nodiscard]] element_type wire_type() const {
    return target_element_bytes() < element_bytes() ? target_type() : dtype;
  }
  [[nodiscard]] std::uint64_t wire_bytes() const { return element_type_bytes(wire_type()); }
  /// The type its own program runs in: its dtype, or where it casts pending values the type
  /// that holds both exactly (the header comment).
  [[nodiscard]] element_type program_type() const {
    return casts_pending() ? element_type_holding(dtype, target_type()) : dtype;
  }
  /// The whole array's bytes at the source.
  [[nodiscard]] std::uint64_t bytes() const {
    std::uint64_t n = element_bytes();
    for (std::uint64_t g : layout_shape(source)) n *= g;
    return n;
  }
  /// Pending values at the source (the target): a typed end with sum axes.
  [[nodiscard]] bool source_pending() const { return layout_type(source) && layout_type(source)->nsum > 0; }
  [[nodiscard]] bool target_pending() const { return layout_type(target) && layout_type(target)->nsum > 0; }
  /// Casts pending values: its own program runs in program_type() (the header comment).
  [[nodiscard]] bool casts_pending() const { return casts() && (source_pending() || target_pending()); }
};

/// Many arrays moved together in a world of `world` ranks (0: the smallest world that holds
/// every mesh).
struct reshard_problem {
  std::uint64_t world = 0;
  std::vector<reshard_array> arrays;
};

/// Whether the joint exchange runs two rounds at a time (the header comment).
enum class reshard_pipeline : std::uint8_t {
  automatic,  ///< under a budget, where predicted faster (time_profile::overlap > 0)
  off,        ///< one round at a time
  on,         ///< under a budget, two rounds at a time (rounds of half the budget), unless a
              ///< row of a piece is more than half the budget
};

/// The order in which a budget's rounds take chunks of one size (the header comment, "Two orders").
enum class reshard_order : std::uint8_t {
  automatic,  ///< chunk by chunk, and array by array too where cheap to plan: the faster by prediction
  by_chunk,   ///< each chunk for every array of its layout at once
  by_array,   ///< array by array
};

struct reshard_options {
  /// Most bytes one rank holds for the joint exchange at a time (send plus receive buffers
  /// of a round, of two consecutive rounds where pipelined); 0: no limit (one round).
  std::uint64_t budget_bytes = 0;
  /// Every array's own plan: the profile and objective (element_bytes: each array's own).
  synth_options synth{};
  /// false: every array by its own plan, no joint exchange (one call per array).
  bool joint = true;
  reshard_pipeline pipeline = reshard_pipeline::automatic;
  /// Fused collectives (the header comment): the most bytes of send and receive buffers per
  /// rank one array may add to a call (0: nothing fused; by default no cap), and one call may
  /// hold without a budget (under a budget, the budget).
  std::uint64_t fuse_array_bytes = UINT64_MAX;
  std::uint64_t fuse_bytes = std::uint64_t{32} << 20;
  /// The most a fused call's predicted seconds may be, in agreements' time
  /// (detail::call_seconds; the header comment): past that, one more array saves less than
  /// 1/16 of the call's time by the model while the buffers outgrow the caches (0: no limit).
  double fuse_set_calls = 16;
  /// A rank's plan (the header comment, "Large worlds"): keep only the pieces rank of_rank
  /// sends, receives or keeps; everything else is the whole plan's.
  std::optional<rank_t> of_rank = std::nullopt;
  /// How chunks of one size are placed under a budget (the header comment, "Two orders").
  reshard_order order = reshard_order::automatic;
};

/// How one array moves.
enum class reshard_route : std::uint8_t { joint, own };

constexpr std::string_view reshard_route_name(reshard_route r) { return r == reshard_route::joint ? "joint" : "own"; }

/// One piece: rank `to` receives box `b` (global indices of array `array`) from rank `from`.
struct reshard_piece {
  std::uint32_t array = 0;
  rank_t from = 0, to = 0;
  box b;
  bool operator<(const reshard_piece& o) const {
    if (from != o.from) return from < o.from;
    if (to != o.to) return to < o.to;
    if (array != o.array) return array < o.array;
    return b < o.b;
  }
};

/// The messages of one round: pieces ordered by (from, to, array, box), so that the pieces
/// from one rank to another are one message, back to back in that order, on both sides. In
/// a rank's plan (reshard_plan::of_rank) the pieces are those the rank sends or receives; the
/// counts are always the whole round's.
struct reshard_round {
  std::vector<reshard_piece> pieces;
  std::uint64_t count = 0;     ///< pieces over every rank
  std::uint64_t messages = 0;  ///< pairs of ranks with pieces
  std::uint64_t bytes = 0;     ///< on the way, over every rank
};

/// Own programs that share their collective calls, one call per step (the header comment).
struct reshard_fused {
  std::vector<std::uint32_t> arrays;  ///< ascending, at least two
  std::uint64_t bytes = 0;            ///< per rank: the send and receive buffers
  double seconds = 0;                 ///< predicted (within the joint plan's agreement)
};

/// An own program run chunk by chunk within the budget (the header comment, "Own programs
/// under a budget"). A cut dimension k is cut into units[k] units of equal length (the least
/// common multiple of its blocks at both ends, so that every block at either end is whole
/// units); a chunk holds rows[k] indices of every unit of every cut dimension and every
/// index of the others, chunk j the j-th in row-major order over the cut dimensions (the
/// last fastest). Each chunk runs `sub`'s program: the plan of the array whose cut
/// dimensions hold units[k] * rows[k] indices, whose every tile is a chunk of a tile.
struct reshard_chunks {
  std::array<std::uint64_t, max_dims> units{};  ///< per dimension; 0: not cut
  std::array<std::uint64_t, max_dims> rows{};   ///< per cut dimension: a chunk's indices in each unit
  std::uint64_t count = 1;                      ///< chunks, one call each; 1: the array at once
  plan_choice sub;                              ///< the program of one chunk (its plan_between)
  std::uint64_t held_bytes = 0;                 ///< per rank, at most: sub's buffers and the chunks staged
};

/// The joint plan.
struct reshard_plan {
  std::uint64_t world = 0;
  std::uint64_t node_ranks = 0;  ///< the joint exchange's senders by node (redist/exchange.hpp); 0: one node
  std::uint64_t budget_bytes = 0;
  std::vector<reshard_array> arrays;
  std::vector<reshard_route> route;    ///< per array
  std::vector<plan_choice> own;        ///< per array: its own plan (plan_between), the program run when route is own
  std::vector<reshard_chunks> chunks;  ///< per array (or empty: none): an own program run chunk by chunk
  std::optional<rank_t> of_rank;       ///< a rank's plan: local and rounds hold only the pieces that rank
                                       ///< sends, receives or keeps (reshard_options::of_rank)
  std::vector<reshard_piece> local;    ///< pieces of joint arrays a rank copies from its own source tile,
                                       ///< round by round (local_of), each round's in piece order
  std::vector<std::size_t> local_at;   ///< round k's local pieces: [local_at[k], local_at[k + 1]) (one
                                       ///< round's worth, all of them, where there are no rounds)
  std::uint64_t local_count = 0;       ///< such pieces over every rank
  std::vector<reshard_round> rounds;   ///< pieces between ranks, round by round
  std::vector<reshard_fused> fused;    ///< own programs that share their calls, set by set
  std::vector<std::uint64_t> received_bytes;     ///< per world rank: what the joint exchange brings it
  std::vector<std::uint64_t> lower_bound_bytes;  ///< per world rank: its joint arrays' target boxes minus what it held
  std::vector<std::uint64_t> transient_bytes;    ///< per world rank: the largest send + receive buffers of a round
                                                 ///< (of two consecutive rounds where pipelined)
  bool pipelined = false;       ///< rounds run two at a time (the header comment)
  bool halves = false;          ///< every rank's sends and its receives each within half the budget
                                ///< (of a round's share of it), not together
  bool joint = true;            ///< false: one call per array (reshard_options::joint), no collective fused
  double seconds = 0;           ///< predicted: the rounds, then the fused calls and the other own programs
  double joint_seconds = 0;     ///< predicted: the rounds alone
  double unpipelined_seconds = 0;  ///< predicted: the rounds one at a time, within the whole budget
  double separate_seconds = 0;  ///< predicted: one call per array, in sequence
  std::string reason;           ///< one line: what was chosen and why

  [[nodiscard]] std::size_t count(reshard_route r) const {
    return static_cast<std::size_t>(std::count(route.begin(), route.end(), r));
  }
  /// The local pieces ranks copy while round k's messages fly (the header comment, "The
  /// pieces ranks keep"); round 0's are all of them where there are no rounds.
  [[nodiscard]] std::span<const reshard_piece> local_of(std::size_t k) const {
    if (k + 1 >= local_at.size()) return {};
    return std::span<const reshard_piece>(local).subspan(local_at[k], local_at[k + 1] - local_at[k]);
  }
  /// Messages of round k (pairs of ranks with pieces, over every rank).
  [[nodiscard]] std::uint64_t messages(std::size_t k) const { return rounds[k].messages; }
  /// A piece's bytes on the way (in its array's wire type).
  [[nodiscard]] std::uint64_t piece_bytes(const reshard_piece& p) const { return p.b.size() * arrays[p.array].wire_bytes(); }
  /// Whether array a's own program runs chunk by chunk.
  [[nodiscard]] bool chunked(std::size_t a) const { return a < chunks.size() && chunks[a].count > 1; }
  /// The arrays whose own programs run chunk by chunk.
  [[nodiscard]] std::size_t chunked_count() const {
    std::size_t n = 0;
    for (std::size_t a = 0; a < chunks.size(); ++a) n += chunked(a) ? 1 : 0;
    return n;
  }
  /// The program array a's own route runs (once per chunk where chunked).
  [[nodiscard]] const program& own_program(std::size_t a) const {
    return chunked(a) ? chunks[a].sub.chosen_program() : own[a].chosen_program();
  }
};

namespace detail {

/// Predicted seconds of one call's agreement over a world of W ranks: an all-reduce of
/// three 64-bit words (runtime/backend.hpp agree), priced as any all-reduce step.
constexpr double call_seconds(const time_profile& P, std::uint64_t W) {
  return step_seconds(P, op::allreduce, W, 3, 3, 8);
}

/// A chunk of chunks k in a tile of layout l (a type on a placed mesh: its padded tiles):
/// per dimension its extent in the chunk (`extent`), and on a cut dimension the runs of a
/// chunk's rows in the tile (`runs`, one per unit the tile holds) and the unit's length.
struct chunk_shape {
  int rank = 0;
  std::array<std::uint64_t, max_dims> tile{}, extent{}, runs{}, unit{};
  [[nodiscard]] std::uint64_t elements() const {
    std::uint64_t n = 1;
    for (int q = 0; q < rank; ++q) n *= extent[static_cast<std::size_t>(q)];
    return n;
  }
  /// Whether every chunk is one run of the tile: one cut dimension, one unit of it in the
  /// tile, and no index before it but 0.
  [[nodiscard]] bool one_run(const reshard_chunks& k) const {
    int cut = 0;
    std::uint64_t before = 1;
    for (int q = 0; q < rank; ++q) {
      const auto i = static_cast<std::size_t>(q);
      if (k.units[i] == 0) {
        if (cut == 0) before *= tile[i];
        continue;
      }
      if (++cut > 1 || runs[i] > 1 || before > 1) return false;
    }
    return true;
  }
};

inline chunk_shape chunk_shape_of(const reshard_chunks& k, const placed_layout& l) {
  chunk_shape c;
  c.rank = l.type.rank;
  for (int q = 0; q < c.rank; ++q) {
    const auto i = static_cast<std::size_t>(q);
    const dim& d = l.type.dims[q];
    c.tile[i] = tile(l.pm.mesh, d);
    c.extent[i] = c.tile[i];
    if (k.units[i] == 0) continue;
    c.runs[i] = k.units[i] / parts(l.pm.mesh, d);
    c.unit[i] = d.global / k.units[i];
    c.extent[i] = c.runs[i] * k.rows[i];
  }
  return c;
}

/// Which sides of array a's own program, run in chunks k (k.count 1: at once), are staged in
/// buffers of T (runtime/reshard_executor.hpp): {source, target}, each where its type is not
/// the program's (casting pending values) or its chunks are not runs of the caller's tiles.
inline std::array<bool, 2> staged_sides(const reshard_array& a, const reshard_chunks& k) {
  const element_type t = a.program_type();
  std::array<bool, 2> staged{a.dtype != t, a.target_type() != t};
  if (k.count > 1) {
    staged[0] = staged[0] || !chunk_shape_of(k, std::get<placed_layout>(a.source)).one_run(k);
    staged[1] = staged[1] || !chunk_shape_of(k, std::get<placed_layout>(a.target)).one_run(k);
  }
  return staged;
}

/// The most bytes any rank holds in staged buffers for array a's own program (typed layouts
/// at both ends) run in chunks k (k.count 1: at once; staged_sides): a chunk, in the
/// program's type, of each staged side it has a tile of.
inline std::uint64_t staged_bytes(const reshard_array& a, const reshard_chunks& k, std::uint64_t W) {
  const auto [stage_in, stage_out] = staged_sides(a, k);
  if (!stage_in && !stage_out) return 0;
  const std::uint64_t in = chunk_shape_of(k, std::get<placed_layout>(a.source)).elements(),
                      out = chunk_shape_of(k, std::get<placed_layout>(a.target)).elements();
  const std::vector<std::uint64_t> s = layout_tile_elements(a.source, W), d = layout_tile_elements(a.target, W);
  std::uint64_t most = 0;
  for (std::uint64_t r = 0; r < W; ++r)
    most = std::max(most, (stage_in && s[r] > 0 ? in : 0) + (stage_out && d[r] > 0 ? out : 0));
  return most * element_type_bytes(a.program_type());
}

/// Predicted seconds of staging array a's tiles for its own program, run in chunks k (the
/// default: at once; staged_sides): one pass over what the busiest rank writes, a staged
/// source in the program's type, a staged target in its own (casting pending values, the
/// header comment; or chunks that are not runs of the tiles).
inline double staging_seconds(const time_profile& P, const reshard_array& a, std::uint64_t W, const reshard_chunks& k = {}) {
  const auto [staged_in, staged_out] = staged_sides(a, k);
  if (!staged_in && !staged_out) return 0;
  const std::uint64_t in = staged_in ? element_type_bytes(a.program_type()) : 0,
                      out = staged_out ? a.target_element_bytes() : 0;
  const std::vector<std::uint64_t> s = layout_tile_elements(a.source, W), d = layout_tile_elements(a.target, W);
  std::uint64_t most = 0;
  for (std::uint64_t r = 0; r < W; ++r) most = std::max(most, s[r] * in + d[r] * out);
  return P.pass_per_byte * static_cast<double>(most);
}

/// Predicted seconds of array a's own program in plan rp with its staging, and with `call`
/// its call's agreement (one call per array; within a joint plan's call, none); in chunks k
/// (count 1: at once), each chunk's program and a pass over the tiles whose chunks are staged
/// (chunk_shape::one_run), the chunks sharing the call. A program of no steps copies the
/// tile (runtime/executor.hpp): one pass over the busiest rank's.
inline double own_seconds(const reshard_plan& rp, const time_profile& P, std::size_t a, bool call,
                          const reshard_chunks& k) {
  const plan_choice& c = k.count > 1 ? k.sub : rp.own[a];
  double copy = 0;
  if (c.chosen_program().steps.empty()) {
    std::uint64_t most = 0;
    for (const std::uint64_t n : layout_tile_elements(rp.arrays[a].target, rp.world)) most = std::max(most, n);
    copy = P.pass_per_byte * static_cast<double>(most * element_type_bytes(rp.arrays[a].program_type()));
  }
  return (call ? call_seconds(P, rp.world) : 0) + static_cast<double>(k.count) * c.candidates[c.chosen].seconds +
         copy + staging_seconds(P, rp.arrays[a], rp.world, k);
}

/// The same, in the chunks the plan runs it in (none: at once).
inline double own_seconds(const reshard_plan& rp, const time_profile& P, std::size_t a, bool call) {
  return own_seconds(rp, P, a, call, rp.chunked(a) ? rp.chunks[a] : reshard_chunks{});
}

/// At most the bytes per rank an executor (runtime/executor.hpp) holds for program p of
/// e-byte elements, on any backend: its memory formula with the scratch of either choice
/// of homes where the program crosses between meshes, and every step that may pack taken
/// as packed: an exchange (or any step of a program with an uneven type, which may run as
/// one) its whole tiles before and after, an all-gather, all-to-all or reduce-scatter whose
/// blocks are not contiguous (a dimension before the one it splits or concatenates is cut
/// in the tiles) within the pack budget (core/time_model.hpp pack_budget_bytes, at least
/// one element per member).
inline std::uint64_t own_held_bound(const program& p, std::uint64_t e) {
  const std::size_t S = p.steps.size();
  if (S == 0) return 0;
  std::vector<std::uint64_t> t(S + 1);
  t[0] = local_size(p.m, p.source);
  for (std::size_t i = 0; i < S; ++i) t[i + 1] = p.steps[i].local_after;
  std::uint64_t scratch = 0;
  for (const bool crossing : {false, true}) {
    const std::vector<tile_home> home = tile_homes(p.steps, [&](std::size_t i) { return !crossing && t[i] <= t[S]; });
    std::uint64_t a = 0, b = 0;
    for (std::size_t i = 1; i < S; ++i) {
      if (home[i] == tile_home::scratch_a) a = std::max(a, t[i]);
      if (home[i] == tile_home::scratch_b) b = std::max(b, t[i]);
    }
    scratch = std::max(scratch, a + b);
  }
  // Whether dimension d's blocks are contiguous in the tiles of state i (0: the source).
  auto contiguous = [&](std::size_t i, int d) {
    for (int k = 0; k < d; ++k) {
      const std::uint64_t n = p.source.dims[k].global,
                          cut = i == 0 ? parts(p.m, p.source.dims[k]) : p.steps[i - 1].after.parts[k];
      if ((n + cut - 1) / cut > 1) return false;
    }
    return d >= 0;
  };
  const bool uneven = p.uneven();
  auto packs_sends_at = [&](std::size_t s) {
    const step& st = p.steps[s];
    return (st.kind == op::alltoall || st.kind == op::reducescatter) && (uneven || st.fused() || !contiguous(s, st.split_dim));
  };
  auto packs_receives_at = [&](std::size_t s) {
    const step& st = p.steps[s];
    return (st.kind == op::alltoall || st.kind == op::allgather) &&
           (uneven || st.fused() || !contiguous(s + 1, st.concat_dim));
  };
  // A fused all-gather in a program that packs no sends may take the whole larger end tile.
  bool whole = false, sent = false;
  for (std::size_t s = 0; s < S; ++s) {
    whole = whole || (p.steps[s].fused() && p.steps[s].kind == op::allgather);
    sent = sent || packs_sends_at(s) || p.steps[s].kind == op::exchange;
  }
  const std::uint64_t C = pack_budget_bytes(std::max(t[0], t[S]), e, whole && !sent) / std::max<std::uint64_t>(e, 1);
  std::uint64_t sends = 0, receives = 0;
  for (std::size_t s = 0; s < S; ++s) {
    const step& st = p.steps[s];
    const std::uint64_t cap = std::max(C, st.parts), before = t[s], after = t[s + 1];
    const bool packs_sends = packs_sends_at(s), packs_receives = packs_receives_at(s);
    if (uneven || st.kind == op::exchange) {
      sends = std::max({sends, before, packs_sends ? cap : 0});
      receives = std::max({receives, after, packs_receives ? cap : 0});
      continue;
    }
    if (packs_sends || (packs_receives && st.kind == op::alltoall)) sends = std::max(sends, std::min(cap, before));
    if (packs_receives || (packs_sends && st.kind == op::alltoall)) receives = std::max(receives, std::min(cap, after));
  }
  return (scratch + sends + receives) * e;
}

/// The chunks array a's own program (plan `whole`) runs in within `budget` bytes per rank
/// (the header comment, "Own programs under a budget"): none where its bound fits. The
/// dimensions that may be cut are those whose blocks at both ends divide their extent into
/// units of at least two indices. First one dimension: of those, the one that fits in the
/// fewest chunks (ties: the first), a chunk's rows dividing the unit's; then, where none
/// fits, several: one row of the dimension of the longest units (ties: the first), then the
/// same search on the next, and so on. None where even one row of every such dimension does
/// not fit (the executor then refuses the plan, naming the array). A side whose chunks are
/// not runs of the caller's tiles, or that casts, is staged (chunk_shape::one_run).
inline reshard_chunks chunk_own(const reshard_array& a, const plan_choice& whole, std::uint64_t budget,
                                std::uint64_t W, const synth_options& so) {
  const auto* from = std::get_if<placed_layout>(&a.source);
  const auto* to = std::get_if<placed_layout>(&a.target);
  const std::uint64_t e = element_type_bytes(a.program_type());
  const std::uint64_t all = own_held_bound(whole.chosen_program(), e);
  if (!from || !to || all + staged_bytes(a, {}, W) <= budget) return {};
  struct cut {
    int k;
    std::uint64_t units, unit;
  };
  std::vector<cut> dims;
  for (int k = 0; k < from->type.rank; ++k) {
    const std::uint64_t n = from->type.dims[k].global,
                        L = std::lcm(parts(from->pm.mesh, from->type.dims[k]), parts(to->pm.mesh, to->type.dims[k]));
    if (n % L == 0 && n / L >= 2) dims.push_back({k, L, n / L});
  }
  std::stable_sort(dims.begin(), dims.end(), [](const cut& x, const cut& y) { return x.unit > y.unit; });
  // Chunks k planned, with their bound; whether they fit.
  auto fits = [&](reshard_chunks& k) {
    placed_layout x = *from, y = *to;
    k.count = 1;
    for (int q = 0; q < x.type.rank; ++q) {
      const auto i = static_cast<std::size_t>(q);
      if (k.units[i] == 0) continue;
      k.count *= x.type.dims[q].global / k.units[i] / k.rows[i];
      x.type.dims[q].global = y.type.dims[q].global = k.units[i] * k.rows[i];
    }
    k.sub = plan_between(x, y, W, {so, false});
    k.held_bytes = own_held_bound(k.sub.chosen_program(), e) + staged_bytes(a, k, W);
    return k.held_bytes <= budget;
  };
  // The largest rows of dimension c, the others as in `base`, that fit in fewer than
  // `fewer` chunks (0: any number).
  auto search = [&](const reshard_chunks& base, const cut& c, std::uint64_t fewer) -> std::optional<reshard_chunks> {
    double share = 1;  // of the array in a chunk of base
    for (const cut& o : dims)
      if (base.units[static_cast<std::size_t>(o.k)] != 0)
        share *= static_cast<double>(base.rows[static_cast<std::size_t>(o.k)]) / static_cast<double>(o.unit);
    for (std::uint64_t rows = c.unit / 2; rows >= 1; --rows) {
      if (c.unit % rows != 0) continue;
      if (fewer > 0 && static_cast<double>(c.unit / rows) / share >= static_cast<double>(fewer) - 0.5) return std::nullopt;
      // Each term of the bound grows at most in proportion to the tiles: skip what cannot fit.
      const double part = share * static_cast<double>(rows) / static_cast<double>(c.unit);
      if (rows > 1 && static_cast<double>(all) * part > static_cast<double>(budget)) continue;
      reshard_chunks k = base;
      k.units[static_cast<std::size_t>(c.k)] = c.units;
      k.rows[static_cast<std::size_t>(c.k)] = rows;
      if (fits(k)) return k;
    }
    return std::nullopt;
  };
  std::optional<reshard_chunks> best;
  for (const cut& c : dims)
    if (auto k = search({}, c, best ? best->count : 0)) best = std::move(k);
  if (best) return *best;
  reshard_chunks base;  // one row of the dimensions before the one searched
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0)
      if (auto k = search(base, dims[i], 0)) return *k;
    base.units[static_cast<std::size_t>(dims[i].k)] = dims[i].units;
    base.rows[static_cast<std::size_t>(dims[i].k)] = 1;
  }
  return {};
}

/// Whether own program p may share its collective calls with others (the header comment):
/// all-reduces, reduce-scatters and all-gathers, each over groups of all W ranks, of even
/// tiles, on one mesh on ranks 0..W-1 in order.
inline bool fusible(const program& p, std::uint64_t W) {
  if (p.steps.empty() || p.placed() || p.world_size() != W) return false;
  for (const step& s : p.steps) {
    if (s.fused() || s.members.size() != W || uneven_dim(p.m, s.type_after) >= 0) return false;
    if (!(s.kind == op::allreduce || (s.kind == op::reducescatter && s.split_dim >= 0) ||
          (s.kind == op::allgather && s.concat_dim >= 0)))
      return false;
  }
  return uneven_dim(p.m, p.source) < 0 && uneven_dim(p.m, p.target) < 0;
}

/// Whether two fusible programs run as the same calls: step by step the same kind,
/// reduction and groups.
inline bool same_call(const program& x, const program& y) {
  if (x.steps.size() != y.steps.size()) return false;
  for (std::size_t k = 0; k < x.steps.size(); ++k) {
    const step &s = x.steps[k], &t = y.steps[k];
    if (s.kind != t.kind || s.reduce != t.reduce || s.parts != t.parts || s.members != t.members) return false;
  }
  return true;
}

/// Whether a fusible program reduces (then its elements need their arithmetic type).
inline bool fused_reduces(const program& p) {
  return std::any_of(p.steps.begin(), p.steps.end(), [](const step& s) { return s.kind != op::allgather; });
}

/// Why array a of plan rp cannot share the calls of array `first`'s own program (none where
/// it can; a == first: whether it can share calls at all). The planner forms its sets by
/// this rule and the executor checks a plan's sets by it.
enum class fuse_refusal : std::uint8_t {
  none,
  joint,        ///< the array moves in the joint exchange
  not_fusible,  ///< its own program is not even all-reduces, reduce-scatters and all-gathers over
                ///< every rank
  other_call,   ///< another program type (reshard_array::program_type), or other steps than `first`'s
};
inline fuse_refusal fuse_refused(const reshard_plan& rp, std::size_t a, std::size_t first) {
  if (rp.route[a] != reshard_route::own) return fuse_refusal::joint;
  const program& p = rp.own[a].chosen_program();
  if (!fusible(p, rp.world)) return fuse_refusal::not_fusible;
  if (rp.arrays[a].program_type() != rp.arrays[first].program_type() || !same_call(p, rp.own[first].chosen_program()))
    return fuse_refusal::other_call;
  return fuse_refusal::none;
}

/// How the arrays of a fused call lie in a flat buffer at state k of their programs (state
/// 0: the source tiles, state k: the tiles after step k - 1):
///   tiles    every array's tile back to back, in the set's order;
///   chunks   for a reduce-scatter at step k over groups of n: n blocks, block m holding
///            chunk m (along the step's split dimension) of every array's tile;
///   members  after an all-gather at step k - 1 over groups of n: n blocks, block m holding
///            member m's tile before the step of every array, that is chunk m of the tile
///            along the step's concatenation dimension.
enum class fused_arrangement : std::uint8_t { tiles, chunks, members };

/// One action of a fused call: a pass of copies at state `state` from one arrangement to
/// another (`from` buffer -1: the caller's source tiles; `to` buffer -1: its target tiles),
/// or (`call`) step `state` of the programs from buffer `from` to buffer `to`, which leaves
/// state `state` + 1.
struct fused_action {
  bool call = false;
  std::size_t state = 0;
  int from = -1, to = -1;
  fused_arrangement in = fused_arrangement::tiles, out = fused_arrangement::tiles;
  [[nodiscard]] std::size_t written_state() const { return call ? state + 1 : state; }
};

/// The actions of one call over fusible programs of steps `steps` (same_call): the source
/// tiles packed as the first step sends them, each step from one buffer to the other, a
/// repack between steps where the arrangement a step leaves is not the one the next sends
/// (after an all-gather, before a reduce-scatter), and the result unpacked into the target
/// tiles.
inline std::vector<fused_action> schedule_fused(const std::vector<step>& steps) {
  std::vector<fused_action> v;
  int cur = -1;
  fused_arrangement at = fused_arrangement::tiles;
  auto add = [&](bool call, std::size_t k, int to, fused_arrangement out) {
    v.push_back({call, k, cur, to, at, out});
    cur = to;
    at = out;
  };
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const fused_arrangement sends = steps[k].kind == op::reducescatter ? fused_arrangement::chunks : fused_arrangement::tiles;
    if (at != sends && at != fused_arrangement::tiles) add(false, k, cur == 0 ? 1 : 0, fused_arrangement::tiles);
    if (at != sends || cur < 0) add(false, k, cur == 0 ? 1 : 0, sends);
    add(true, k, cur == 0 ? 1 : 0, steps[k].kind == op::allgather ? fused_arrangement::members : fused_arrangement::tiles);
  }
  add(false, steps.size(), -1, fused_arrangement::tiles);
  return v;
}

/// Elements of the tiles of programs `progs` at every state (0: the source tiles, k: after
/// step k - 1), summed over the programs.
inline std::vector<std::uint64_t> fused_state_elements(std::span<const program* const> progs) {
  std::vector<std::uint64_t> n(progs.front()->steps.size() + 1, 0);
  for (const program* p : progs)
    for (std::size_t k = 0; k < n.size(); ++k) n[k] += k == 0 ? p->source_local() : p->steps[k - 1].local_after;
  return n;
}

/// Elements per rank of the two flat buffers of a call whose tiles sum to `sums` per state:
/// each the most any action writes into it.
inline std::array<std::uint64_t, 2> fused_buffers(const std::vector<fused_action>& actions,
                                                  const std::vector<std::uint64_t>& sums) {
  std::array<std::uint64_t, 2> b{};
  for (const fused_action& x : actions)
    if (x.to >= 0) {
      std::uint64_t& n = b[static_cast<std::size_t>(x.to)];
      n = std::max(n, sums[x.written_state()]);
    }
  return b;
}

/// Bytes per rank of the flat buffers of one call over fusible programs `progs` (same_call)
/// of e-byte elements: for one reduce-scatter over groups of n, n + 1 blocks of every
/// program's target tile; for one all-reduce, two.
inline std::uint64_t fused_bytes(std::span<const program* const> progs, std::uint64_t e) {
  const std::array<std::uint64_t, 2> b = fused_buffers(schedule_fused(progs.front()->steps), fused_state_elements(progs));
  return (b[0] + b[1]) * e;
}

/// Predicted seconds of one call of steps `steps` (actions schedule_fused(steps)) over tiles
/// that sum to `sums` per state (the header comment): each step over the sums, and the
/// passes of the copies (packing, repacking between steps, unpacking); within the joint
/// plan's call, no agreement of its own.
inline double fused_seconds(const time_profile& P, const std::vector<step>& steps,
                            const std::vector<fused_action>& actions, const std::vector<std::uint64_t>& sums,
                            std::uint64_t e) {
  double t = 0;
  for (std::size_t k = 0; k < steps.size(); ++k)
    t += step_seconds(P, steps[k].kind, steps[k].parts, sums[k], sums[k + 1], e);
  std::uint64_t written = 0;
  for (const fused_action& x : actions)
    if (!x.call) written += sums[x.state];
  return t + P.pass_per_byte * static_cast<double>(written) * static_cast<double>(e);
}

/// The fused collectives of plan rp's own programs (the header comment), by the options'
/// caps, in array order.
inline std::vector<reshard_fused> plan_fused(const reshard_plan& rp, const time_profile& P, const reshard_options& o) {
  std::vector<reshard_fused> sets;
  const std::size_t A = rp.arrays.size();
  const std::uint64_t W = rp.world;
  const std::uint64_t cap = rp.budget_bytes > 0 ? rp.budget_bytes : o.fuse_bytes;
  if (!rp.joint || o.fuse_array_bytes == 0) return sets;
  const double call = call_seconds(P, W);
  std::vector<char> seen(A, 0);
  for (std::size_t a = 0; a < A; ++a) {
    if (seen[a] || fuse_refused(rp, a, a) != fuse_refusal::none) continue;
    // Every candidate of this call, with its tiles per state.
    const std::uint64_t e = element_type_bytes(rp.arrays[a].program_type());
    const std::vector<step>& steps = rp.own[a].chosen_program().steps;
    const std::vector<fused_action> actions = schedule_fused(steps);
    std::vector<std::size_t> same;
    std::vector<std::vector<std::uint64_t>> mine;
    std::vector<std::uint64_t> sums(steps.size() + 1, 0);
    for (std::size_t c = a; c < A; ++c)
      if (!seen[c] && fuse_refused(rp, c, a) == fuse_refusal::none) {
        seen[c] = 1;
        const program* one[] = {&rp.own[c].chosen_program()};
        same.push_back(c);
        mine.push_back(fused_state_elements(one));
        for (std::size_t q = 0; q < sums.size(); ++q) sums[q] += mine.back()[q];
      }
    if (same.size() < 2) continue;
    auto own = [&](std::size_t c) { return own_seconds(rp, P, c, false); };
    auto bytes = [&](const std::vector<std::uint64_t>& n) {
      const std::array<std::uint64_t, 2> b = fused_buffers(actions, n);
      return (b[0] + b[1]) * e;
    };
    // Which join: what each adds to the call of all (the call of all less the call of all
    // but it) against its own program, within fuse_array_bytes.
    const double with = fused_seconds(P, steps, actions, sums, e);
    std::vector<std::size_t> join;
    for (std::size_t k = 0; k < same.size(); ++k) {
      if (bytes(mine[k]) > o.fuse_array_bytes) continue;
      std::vector<std::uint64_t> rest = sums;
      for (std::size_t q = 0; q < rest.size(); ++q) rest[q] -= mine[k][q];
      if (with - fused_seconds(P, steps, actions, rest, e) < own(same[k])) join.push_back(k);
    }
    // Sets in array order, each within the caps and predicted faster than its arrays' own programs.
    reshard_fused set;
    std::vector<std::uint64_t> in(sums.size(), 0);  // the set's tiles per state
    double separate = 0;
    auto flush = [&] {
      if (set.arrays.size() >= 2) {
        set.seconds = fused_seconds(P, steps, actions, in, e);
        set.bytes = bytes(in);
        if (set.seconds < separate) sets.push_back(set);
      }
      set = {};
      in.assign(in.size(), 0);
      separate = 0;
    };
    const double most = o.fuse_set_calls > 0 ? o.fuse_set_calls * call : HUGE_VAL;
    auto over = [&](const std::vector<std::uint64_t>& n) {
      return bytes(n) > cap || fused_seconds(P, steps, actions, n, e) > most;
    };
    for (std::size_t k : join) {
      std::vector<std::uint64_t> n = in;  // the set's tiles with candidate k
      for (std::size_t q = 0; q < n.size(); ++q) n[q] += mine[k][q];
      if (over(n)) {
        flush();
        if (over(mine[k])) continue;  // alone above a cap: its own program
        n = mine[k];
      }
      in = std::move(n);
      separate += own(same[k]);
      set.arrays.push_back(static_cast<std::uint32_t>(same[k]));
    }
    flush();
  }
  return sets;
}

/// Per-rank tallies of a set of pieces between ranks (one round), and per node where the
/// profile's ranks span several (core/time_model.hpp, the link term). Pieces come with the
/// number of their pair of ranks (add, remove: `pairs` pairs numbered as number_pairs does,
/// pieces counted per pair), or as bytes whose pairs the caller counts (add_bytes, add_pair).
struct round_tally {
  std::vector<std::uint64_t> sent, received, written;
  std::vector<std::uint64_t> peers_out, peers_in;  ///< ranks each sends to, receives from
  std::vector<std::uint64_t> pieces;               ///< per pair of ranks
  std::optional<node_tally> nodes;                 ///< bytes over each node's link
  round_tally(std::uint64_t W, const time_profile& P, std::size_t pairs = 0)
      : sent(W, 0), received(W, 0), written(W, 0), peers_out(W, 0), peers_in(W, 0), pieces(pairs, 0) {
    if (P.spans_nodes(W)) nodes.emplace(W, P.node_ranks);
  }
  /// `n` pieces from `from` to `to` (their pair: `pair`) of `bytes` in all.
  void add(rank_t from, rank_t to, std::uint32_t pair, std::uint64_t bytes, std::uint64_t n = 1) {
    add_bytes(from, to, bytes);
    if (from != to && (pieces[pair] += n) == n) add_pair(from, to);
  }
  /// `bytes` more from `from` to `to`, without counting pieces.
  void add_bytes(rank_t from, rank_t to, std::uint64_t bytes) {
    written[to] += bytes;
    if (from == to) return;
    sent[from] += bytes;
    received[to] += bytes;
    if (nodes) nodes->add(from, to, bytes);
  }
  /// A pair of ranks with pieces in this round, counted by the caller (their bytes added by
  /// add_bytes): one more peer for each.
  void add_pair(rank_t from, rank_t to) {
    ++peers_out[from];
    ++peers_in[to];
  }
  /// Take back pieces add() counted.
  void remove(rank_t from, rank_t to, std::uint32_t pair, std::uint64_t bytes, std::uint64_t n = 1) {
    written[to] -= bytes;
    if (from == to) return;
    sent[from] -= bytes;
    received[to] -= bytes;
    if (nodes) nodes->remove(from, to, bytes);
    if ((pieces[pair] -= n) == 0) {
      --peers_out[from];
      --peers_in[to];
    }
  }
  /// Predicted seconds of these pieces as one exchange step, as {the transfer, the pass
  /// over the bytes written} (nothing: no time).
  [[nodiscard]] std::pair<double, double> parts(const time_profile& P) const {
    std::uint64_t bytes = 0, tile = 0;
    for (std::size_t r = 0; r < sent.size(); ++r) {
      bytes = std::max({bytes, sent[r], received[r]});
      tile = std::max(tile, written[r]);
    }
    const double pass = P.pass_per_byte * static_cast<double>(tile);
    if (bytes == 0) return {0.0, pass};  // local copies only, or nothing
    std::uint64_t peers = 0;
    for (std::size_t r = 0; r < sent.size(); ++r) peers = std::max({peers, peers_out[r], peers_in[r]});
    const double link = nodes ? P.node_per_byte * static_cast<double>(nodes->most()) : 0.0;
    return {P.seconds(op::exchange, peers, bytes, 0) + link, pass};
  }
  [[nodiscard]] double seconds(const time_profile& P) const {
    const auto [transfer, pass] = parts(P);
    return transfer + pass;
  }
};

/// Sort pieces by reshard_piece::operator< (from, to, array, box), moving each piece once:
/// small keys are sorted, then the pieces permuted in place, cycle by cycle (a plan of a
/// large world holds millions of pieces of about 200 bytes).
inline void sort_pieces(std::vector<reshard_piece>& v) {
  struct key {
    rank_t from, to;
    std::uint32_t array;
    std::size_t at;
  };
  std::vector<key> k(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) k[i] = {v[i].from, v[i].to, v[i].array, i};
  std::sort(k.begin(), k.end(), [&](const key& x, const key& y) {
    if (x.from != y.from) return x.from < y.from;
    if (x.to != y.to) return x.to < y.to;
    if (x.array != y.array) return x.array < y.array;
    return v[x.at].b < v[y.at].b;
  });
  // Position i takes the piece at k[i].at: follow each cycle once.
  std::vector<char> done(v.size(), 0);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (done[i]) continue;
    const reshard_piece first = v[i];
    std::size_t j = i;
    for (;;) {
      done[j] = 1;
      const std::size_t from = k[j].at;
      if (from == i) {
        v[j] = first;
        break;
      }
      v[j] = v[from];
      j = from;
    }
  }
}

/// A piece placed in a round before its box is written: its sender, receiver and array, and
/// `ref`, which says which piece of the array it is (schedule_rounds: a flow, or a chunk of
/// one under a budget). 16 bytes where a piece is about 200.
struct placed_piece {
  rank_t from = 0, to = 0;
  std::uint32_t array = 0, ref = 0;
};

/// The pieces `placed` of one round in the plan's order (sort_pieces: sender, receiver, array,
/// box), each written once, in order, without slack, by piece_of(q) -> reshard_piece:
/// bucketed by sender, then each sender's sorted by receiver, array and the first row of the
/// piece along dimension 0 (first_row(q); an array's exchange has one piece from one rank to
/// another, so only its chunks tie before that). Frees `placed`.
template <class PieceOf, class FirstRow>
std::vector<reshard_piece> placed_pieces(std::vector<placed_piece>& placed, std::uint64_t W, PieceOf&& piece_of,
                                         FirstRow&& first_row) {
  std::vector<std::size_t> at(W + 1, 0);
  for (const placed_piece& q : placed) ++at[q.from + 1];
  for (std::uint64_t r = 0; r < W; ++r) at[r + 1] += at[r];
  std::vector<placed_piece> by(placed.size());
  {
    std::vector<std::size_t> next(at.begin(), at.end() - 1);
    for (const placed_piece& q : placed) by[next[q.from]++] = q;
  }
  std::vector<placed_piece>().swap(placed);
  for (std::uint64_t r = 0; r < W; ++r)
    std::sort(by.begin() + static_cast<std::ptrdiff_t>(at[r]), by.begin() + static_cast<std::ptrdiff_t>(at[r + 1]),
              [&](const placed_piece& x, const placed_piece& y) {
                if (x.to != y.to) return x.to < y.to;
                if (x.array != y.array) return x.array < y.array;
                return first_row(x) < first_row(y);
              });
  std::vector<reshard_piece> v;
  v.reserve(by.size());
  for (const placed_piece& q : by) v.push_back(piece_of(q));
  return v;
}

/// One piece of a joint array's exchange as the planner schedules it, without its box (a
/// plan of a large world visits millions of pieces; a rank's plan keeps the boxes of its own
/// alone): its array, sender and receiver, elements, the rows it spans along dimension 0
/// (1 for a 0-d array), and where the plan lists its piece (`piece`: an index into the
/// plan's pieces between ranks, or into the array's pieces ranks keep for a flow within a
/// rank; `none` for another rank's piece in a rank's plan).
struct flow {
  static constexpr std::uint32_t none = UINT32_MAX;
  std::uint32_t array = 0;
  rank_t from = 0, to = 0;
  std::uint32_t piece = none;
  std::uint64_t elements = 0, rows = 1;
};

/// The box of a piece between ranks: the plan's, or found again by the exchange's sender
/// rule (an array's exchange has at most one piece from one rank to another: a rank holds one
/// box before it), for naming it in an error.
inline box flow_box(const reshard_plan& rp, std::span<const reshard_piece> between, const flow& f) {
  if (f.piece != flow::none) return between[f.piece].b;
  const reshard_array& a = rp.arrays[f.array];
  box b;
  exchange_plan x;
  walk_exchange(
      layout_boxes(a.source, rp.world), layout_boxes(a.target, rp.world), x,
      [&](rank_t from, rank_t to, const box& after, const box& held) {
        if (from == f.from && to == f.to) b = intersect(after, held);
      },
      rp.node_ranks);
  return b;
}

/// Flows of arrays laid out alike weighted by the arrays they stand for, by their `array`
/// (the first array of a layout): `copies` pieces of `elements * wire` bytes in all (the sum
/// of those arrays' wire bytes, their number), so that a round's tally visits each layout's
/// pieces once, not once per layer.
struct flow_weights {
  std::vector<std::uint64_t> wire, copies;  // per array
  [[nodiscard]] std::uint64_t bytes(const flow& f) const { return f.elements * wire[f.array]; }
};

/// The pairs of ranks that flows run between, numbered densely: `of[t]` is flow t's pair
/// (flow::none for a flow within a rank), `ranks[p]` pair p's sender and receiver. Flows are
/// bucketed by sender, then each sender's receivers numbered once: linear, no hashing.
struct flow_pairs {
  std::vector<std::uint32_t> of;
  std::vector<std::pair<rank_t, rank_t>> ranks;
};

inline flow_pairs number_pairs(std::span<const flow> flows, std::uint64_t W) {
  flow_pairs p;
  p.of.assign(flows.size(), flow::none);
  std::vector<std::size_t> at(W + 1, 0);  // each sender's flows in `by`: [at[r], at[r + 1])
  for (const flow& f : flows) ++at[f.from + 1];
  for (std::uint64_t r = 0; r < W; ++r) at[r + 1] += at[r];
  std::vector<std::uint32_t> by(flows.size());
  {
    std::vector<std::size_t> next(at.begin(), at.end() - 1);
    for (std::size_t t = 0; t < flows.size(); ++t) by[next[flows[t].from]++] = static_cast<std::uint32_t>(t);
  }
  std::vector<std::uint32_t> id(W, flow::none);  // per receiver, its pair with `sender`
  std::vector<rank_t> sender(W, 0);
  for (std::uint64_t r = 0; r < W; ++r)
    for (std::size_t q = at[r]; q < at[r + 1]; ++q) {
      const flow& f = flows[by[q]];
      if (f.to == f.from) continue;
      if (id[f.to] == flow::none || sender[f.to] != f.from) {
        id[f.to] = static_cast<std::uint32_t>(p.ranks.size());
        sender[f.to] = f.from;
        p.ranks.emplace_back(f.from, f.to);
      }
      p.of[by[q]] = id[f.to];
    }
  return p;
}

/// The pieces between ranks of the joint arrays, as schedule_rounds takes them. Arrays laid
/// out as an earlier one (a model's layers) have its pieces between the same ranks, so each
/// layout's pieces are held once, as its first array's flows (`flows`, layout by layout:
/// array j's in [at[j], at[j + 1]), empty unless j is the first of a layout that a joint
/// array has), each flow's `piece` its place among the plan's pieces of that array, which
/// are held once too. A joint array `i` carries the flows of `layout[i]` in its wire type
/// (`wire[i]` bytes per element), and its pieces are the `between_n[i]` ones of its layout
/// from `between_at[i]` on, in the same order, with its own index.
struct layout_flows {
  std::vector<flow> flows;
  std::vector<std::size_t> at;          // per array, A + 1
  std::vector<std::uint32_t> arrays;    // the joint arrays, ascending
  std::vector<std::size_t> layout;      // per array
  std::vector<std::uint64_t> wire;      // per array
  std::vector<std::size_t> between_at, between_n;  // per array (joint ones)
  flow_pairs pairs;                     // the flows' pairs of ranks (number_pairs)
  // The pieces ranks keep as flows (from == to) of the layouts joint arrays have, layout j's
  // [keeps_at[j], keeps_at[j + 1]), `piece` their place among the array's pieces in rp.local
  // (none: not held); local_at: per joint array, its first piece in rp.local.
  std::vector<flow> keeps;
  std::vector<std::size_t> keeps_at, local_at;
};

/// The rounds of the joint arrays' pieces between ranks (`lf`, the plan's pieces `between`)
/// within `cap` bytes per rank per round (with `halves`, its sends within cap / 2 and its
/// receives within cap / 2; the header comment; 0: one round, which then takes the plan's
/// pieces whole), their transient bytes per rank and their predicted seconds, with the
/// pieces ranks keep (`local_written`: their bytes per rank) priced in the first round, or
/// under a budget over two rounds or more spread over the rounds (spread_local). Every
/// round's counts are the whole round's; its pieces are the plan's, cut as their pieces
/// are. The one round without a budget visits each layout's flows once, each standing for
/// the piece of every joint array laid out so (their bytes, their number); under a budget
/// each array's pieces are cut into chunks (the same for arrays of one layout and wire type)
/// and placed largest first, ties array by array (`by_array`) or chunk by chunk for every
/// array of a layout at once (the header comment, "Two orders").
struct round_schedule {
  std::vector<reshard_round> rounds;
  std::vector<std::uint64_t> transient;
  double seconds = 0;
  bool pipelined = false;
  bool halves = false;
  // Where the pieces ranks keep are spread over the rounds (`spread`, the header comment,
  // "The pieces ranks keep"): their chunks the plan holds, round by round, and their number
  // over every rank. Otherwise rp.local, all in the first round.
  bool spread = false;
  std::vector<std::vector<reshard_piece>> local;
  std::uint64_t local_count = 0;
};

/// The most pieces between ranks (joint arrays, before chunks) for which the rounds are
/// placed in both orders (the header comment, "Two orders"): array by array places one
/// chunk of one array at a time, about 0.03 s per schedule at this size on the development
/// machine, and beyond it chunk by chunk is mostly the faster (fewer messages).
inline constexpr std::uint64_t both_orders_pieces = std::uint64_t{1} << 20;

/// Flow f of an array of `wire`-byte elements in chunks of whole rows (indices of dimension
/// 0) of at most `cap` bytes, one row each where a row is more: emit(first_row, rows, bytes)
/// for each, in order; the flow whole where it fits, or where it has one row.
template <class Emit>
void cut_rows(const flow& f, std::uint64_t wire, std::uint64_t cap, Emit&& emit) {
  const std::uint64_t bytes = f.elements * wire;
  if (bytes <= cap || f.rows <= 1) {
    emit(std::uint64_t{0}, f.rows, bytes);
    return;
  }
  const std::uint64_t step = std::max<std::uint64_t>(1, cap / (bytes / f.rows));
  for (std::uint64_t first = 0; first < f.rows; first += step) {
    const std::uint64_t rows = std::min(f.rows - first, step);
    emit(first, rows, f.elements / f.rows * rows * wire);
  }
}

/// Piece pc of flow f (the whole flow) cut to its rows [first, first + rows) of dimension 0.
inline reshard_piece piece_rows(reshard_piece pc, const flow& f, std::uint64_t first, std::uint64_t rows) {
  if (pc.b.rank > 0 && rows != f.rows) {
    pc.b.lo[0] += first;
    pc.b.hi[0] = pc.b.lo[0] + rows;
  }
  return pc;
}

/// Spreads the pieces ranks keep over the rounds of s (two or more), whose pieces between
/// ranks write tally[k].written: cut into chunks of whole rows of at most `cap` bytes and
/// placed as the header comment says ("The pieces ranks keep"), each chunk's bytes added to
/// its round's written.
inline void spread_local(const reshard_plan& rp, const layout_flows& lf, std::uint64_t cap,
                        std::vector<round_tally>& tally, round_schedule& s) {
  struct chunk {
    std::uint32_t array;
    std::size_t flow;  // in lf.keeps
    std::uint64_t first_row, rows, bytes;
  };
  std::vector<chunk> cs;
  for (const std::uint32_t i : lf.arrays) {
    const std::size_t j = lf.layout[i];
    for (std::size_t t = lf.keeps_at[j]; t < lf.keeps_at[j + 1]; ++t)
      cut_rows(lf.keeps[t], lf.wire[i], cap, [&](std::uint64_t first, std::uint64_t rows, std::uint64_t bytes) {
        cs.push_back({i, t, first, rows, bytes});
      });
  }
  std::stable_sort(cs.begin(), cs.end(), [](const chunk& x, const chunk& y) { return x.bytes > y.bytes; });
  const std::size_t n = s.rounds.size();
  std::vector<std::uint64_t> most(n, 0);  // per round: the most bytes one rank writes
  for (std::size_t k = 0; k < n; ++k) most[k] = *std::max_element(tally[k].written.begin(), tally[k].written.end());
  s.spread = true;
  s.local.assign(n, {});
  s.local_count = cs.size();
  for (const chunk& c : cs) {
    const rank_t r = lf.keeps[c.flow].to;
    std::size_t best = 0;
    std::uint64_t added = UINT64_MAX, writes = UINT64_MAX;
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t w = tally[k].written[r], a = std::max(most[k], w + c.bytes) - most[k];
      if (a < added || (a == added && w < writes)) {
        best = k;
        added = a;
        writes = w;
      }
    }
    tally[best].written[r] += c.bytes;
    most[best] += added;
    const flow& f = lf.keeps[c.flow];
    if (f.piece == flow::none) continue;
    s.local[best].push_back(piece_rows(rp.local[lf.local_at[c.array] + f.piece], f, c.first_row, c.rows));
  }
  for (std::vector<reshard_piece>& v : s.local) sort_pieces(v);
}

inline round_schedule schedule_rounds(const reshard_plan& rp, const layout_flows& lf, std::span<const reshard_piece> between,
                                      std::span<const std::uint64_t> local_written, std::uint64_t cap, std::uint64_t W,
                                      const time_profile& P, bool pipelined, bool halves, bool by_array) {
  round_schedule s;
  s.pipelined = pipelined;
  s.halves = halves;
  // Per round, per rank: what it sends and receives; with `halves`, what it sends, then at
  // W + rank what it receives, each within half of cap.
  const std::uint64_t in = halves ? W : 0;
  if (halves) cap /= 2;
  std::vector<std::vector<std::uint64_t>> use;
  std::vector<round_tally> tally;  // per round
  // A round's pairs of ranks (its messages, each rank's peers) are counted after every piece
  // is placed: each round lists its pairs (`fresh`), a pair again only when a piece placed in
  // another round came between (`last`: 1 + the round that took the pair last; the chunks of
  // a flow, of every array laid out so, mostly land in one round), and each list is
  // deduplicated at the end. A pair table per round, looked up piece by piece, took a third
  // of the time of a large world's plan and half its memory.
  const flow_pairs& pairs = lf.pairs;
  std::vector<std::uint32_t> last(pairs.ranks.size(), 0);
  std::vector<std::vector<std::uint32_t>> fresh;  // per round
  std::vector<std::vector<placed_piece>> placed;  // per round: the plan's pieces, boxes written at the end
  auto place = [&](std::size_t k, std::size_t t, std::uint64_t bytes, std::uint64_t pieces) {
    const flow& f = lf.flows[t];
    if (k == use.size()) {
      use.emplace_back(W + in, 0);
      tally.emplace_back(W, P);
      fresh.emplace_back();
      placed.emplace_back();
      s.rounds.emplace_back();
    }
    use[k][f.from] += bytes;
    use[k][in + f.to] += bytes;
    tally[k].add_bytes(f.from, f.to, bytes);
    if (const std::uint32_t p = pairs.of[t]; p != flow::none && last[p] != k + 1) {
      last[p] = static_cast<std::uint32_t>(k + 1);
      fresh[k].push_back(p);
    }
    s.rounds[k].bytes += bytes;
    s.rounds[k].count += pieces;
  };
  const std::size_t A = lf.layout.size();
  if (cap == 0) {  // one round of every piece, each layout's weighted by its joint arrays
    flow_weights w{std::vector<std::uint64_t>(A, 0), std::vector<std::uint64_t>(A, 0)};
    for (const std::uint32_t i : lf.arrays) {
      w.wire[lf.layout[i]] += lf.wire[i];
      ++w.copies[lf.layout[i]];
    }
    for (std::size_t t = 0; t < lf.flows.size(); ++t) place(0, t, w.bytes(lf.flows[t]), w.copies[lf.flows[t].array]);
    if (!s.rounds.empty()) {  // every piece of the plan, whole: `ref` its place in between
      for (const std::uint32_t i : lf.arrays)
        for (std::size_t k = lf.between_at[i]; k < lf.between_at[i] + lf.between_n[i]; ++k)
          placed[0].push_back({between[k].from, between[k].to, i, static_cast<std::uint32_t>(k)});
      s.rounds[0].pieces = placed_pieces(
          placed[0], W,
          [&](const placed_piece& q) {
            reshard_piece pc = between[q.ref];
            pc.array = q.array;
            return pc;
          },
          [](const placed_piece&) { return 0; });
    }
  } else {
    // The chunks of whole rows of each (layout, wire type), in flow order.
    struct chunk {
      std::size_t flow;  // in lf.flows
      std::uint64_t first_row, rows, bytes;
    };
    std::vector<std::vector<chunk>> groups;
    std::vector<std::vector<std::uint32_t>> members;  // each group's arrays, ascending
    std::map<std::pair<std::size_t, std::uint64_t>, std::size_t> group_of;
    for (const std::uint32_t i : lf.arrays) {
      const std::size_t j = lf.layout[i];
      const auto [at, fresh] = group_of.try_emplace({j, lf.wire[i]}, groups.size());
      if (!fresh) {
        members[at->second].push_back(i);
        continue;
      }
      members.push_back({i});
      std::vector<chunk>& g = groups.emplace_back();
      for (std::size_t t = lf.at[j]; t < lf.at[j + 1]; ++t) {
        const flow& f = lf.flows[t];
        if (const std::uint64_t bytes = f.elements * lf.wire[i], row = bytes > cap ? bytes / f.rows : 0;
            row > cap) {  // the first such of the first array so laid out
          flow named = f;
          named.array = i;
          if (f.piece != flow::none) named.piece = static_cast<std::uint32_t>(lf.between_at[i] + f.piece);
          throw redist_error(errc::bad_size, "array '" + rp.arrays[i].name + "': one row of the piece " +
                                                 box_text(flow_box(rp, between, named)) + " from rank " +
                                                 std::to_string(f.from) + " to rank " + std::to_string(f.to) + " is " +
                                                 std::to_string(row) + " bytes, more than the budget of " +
                                                 std::to_string(cap) + " bytes per rank");
        }
        cut_rows(f, lf.wire[i], cap, [&](std::uint64_t first, std::uint64_t rows, std::uint64_t bytes) {
          g.push_back({t, first, rows, bytes});
        });
      }
    }
    // Each group's chunks largest first (ties in flow and chunk order), and the sizes each has;
    // `base[g]`: the number of chunks before group g.
    std::vector<std::pair<std::uint64_t, std::size_t>> sized;  // (bytes, group)
    std::vector<std::uint64_t> base;
    for (std::size_t g = 0, n = 0; g < groups.size(); n += groups[g++].size()) {
      base.push_back(n);
      if (n + groups[g].size() >= flow::none) throw redist_error(errc::capacity, "more than 2^32 chunks between ranks");
      std::stable_sort(groups[g].begin(), groups[g].end(), [](const chunk& x, const chunk& y) { return x.bytes > y.bytes; });
      for (std::size_t c = 0; c < groups[g].size(); ++c)
        if (c == 0 || groups[g][c].bytes != groups[g][c - 1].bytes) sized.push_back({groups[g][c].bytes, g});
    }
    std::sort(sized.begin(), sized.end(), [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first > y.first : x.second < y.second;
    });
    // First fit, largest first, the chunks of one size in one of two orders (the header
    // comment, "Two orders"): array by array (by_array), or group by group (in the order of
    // their first arrays), each chunk for every array of its group at once: as many as fit in
    // the first round with room on both its ranks, the rest in the next such rounds. While the
    // size holds, a round without room for it on a rank stays so (a rank's use only grows):
    // `room[r]` is the first round that may have room on rank r, so the search for a chunk
    // starts at the later of its ranks' and each round is passed over once per rank and size.
    std::vector<std::size_t> next(groups.size(), 0);         // each group's first chunk not placed
    std::vector<std::pair<std::uint32_t, std::size_t>> who;  // (array, group) with chunks of the size
    std::vector<std::size_t> room(W + in, 0);
    for (std::size_t lo = 0, hi = 0; lo < sized.size(); lo = hi) {
      const std::uint64_t b = sized[lo].first;
      std::fill(room.begin(), room.end(), std::size_t{0});
      auto first_room = [&](std::uint64_t r) {
        while (room[r] < use.size() && use[room[r]][r] > cap - b) ++room[r];
        return room[r];
      };
      // Chunk c of group g for each of `arrays`, in order: as many as fit in each round from
      // the first with room on both its ranks.
      auto place_chunk = [&](std::size_t g, std::size_t c, std::span<const std::uint32_t> arrays) {
        const chunk& ch = groups[g][c];
        const flow& f = lf.flows[ch.flow];
        for (std::size_t k = std::max(first_room(f.from), first_room(in + f.to)); !arrays.empty();) {
          while (k < use.size() && (use[k][f.from] > cap - b || use[k][in + f.to] > cap - b)) ++k;
          std::uint64_t fit = std::min<std::uint64_t>(arrays.size(), cap / b);
          if (k < use.size()) fit = std::min({fit, (cap - use[k][f.from]) / b, (cap - use[k][in + f.to]) / b});
          place(k, ch.flow, fit * b, fit);
          if (f.piece != flow::none)
            for (const std::uint32_t i : arrays.first(fit))
              placed[k].push_back({f.from, f.to, i, static_cast<std::uint32_t>(base[g] + c)});
          arrays = arrays.subspan(fit);
        }
      };
      who.clear();
      for (hi = lo; hi < sized.size() && sized[hi].first == b; ++hi) {
        const std::size_t g = sized[hi].second;
        if (by_array)
          for (const std::uint32_t i : members[g]) who.push_back({i, g});
        else
          who.push_back({members[g][0], g});
      }
      std::sort(who.begin(), who.end());
      for (const auto& [i, g] : who)
        for (std::size_t c = next[g]; c < groups[g].size() && groups[g][c].bytes == b; ++c)
          place_chunk(g, c, by_array ? std::span<const std::uint32_t>(&i, 1) : std::span<const std::uint32_t>(members[g]));
      for (std::size_t q = lo; q < hi; ++q) {
        const std::size_t g = sized[q].second;
        while (next[g] < groups[g].size() && groups[g][next[g]].bytes == b) ++next[g];
      }
    }
    // The plan's chunks, round by round: `ref` base[g] + c is chunk c of group g, its piece
    // cut to the chunk's rows along dimension 0.
    auto chunk_of = [&](const placed_piece& q) -> const chunk& {
      const std::size_t g = static_cast<std::size_t>(std::upper_bound(base.begin(), base.end(), q.ref) - base.begin()) - 1;
      return groups[g][q.ref - base[g]];
    };
    for (std::size_t k = 0; k < s.rounds.size(); ++k)
      s.rounds[k].pieces = placed_pieces(
          placed[k], W,
          [&](const placed_piece& q) {
            const chunk& ch = chunk_of(q);
            const flow& f = lf.flows[ch.flow];
            reshard_piece pc = piece_rows(between[lf.between_at[q.array] + f.piece], f, ch.first_row, ch.rows);
            pc.array = q.array;
            return pc;
          },
          [&](const placed_piece& q) { return chunk_of(q).first_row; });
  }
  const std::size_t n = s.rounds.size();
  std::fill(last.begin(), last.end(), 0u);  // now: 1 + the round each pair was counted in last
  for (std::size_t k = 0; k < n; ++k) {
    for (const std::uint32_t p : fresh[k])
      if (last[p] != k + 1) {
        last[p] = static_cast<std::uint32_t>(k + 1);
        tally[k].add_pair(pairs.ranks[p].first, pairs.ranks[p].second);
        ++s.rounds[k].messages;
      }
    std::vector<std::uint32_t>().swap(fresh[k]);
  }
  if (n == 0 && rp.local_count > 0) tally.emplace_back(W, P);  // the pieces ranks keep, alone
  if (cap > 0 && n >= 2 && !lf.keeps.empty()) spread_local(rp, lf, cap, tally, s);
  s.transient.assign(W, 0);
  std::vector<double> transfer, pass;
  for (std::size_t k = 0; k < tally.size(); ++k) {
    round_tally& t = tally[k];
    if (k == 0 && !s.spread)
      for (std::uint64_t r = 0; r < W; ++r) t.written[r] += local_written[r];
    if (k < n) {
      auto held = [&](std::size_t q, std::uint64_t r) { return use[q][r] + (in ? use[q][in + r] : 0); };
      for (std::uint64_t r = 0; r < W; ++r)
        s.transient[r] = std::max(s.transient[r], held(k, r) + (pipelined && k + 1 < n ? held(k + 1, r) : 0));
    }
    const auto [tk, ck] = t.parts(P);
    transfer.push_back(tk);
    pass.push_back(ck);
    s.seconds += tk + ck;
  }
  if (pipelined)
    for (std::size_t k = 0; k + 1 < transfer.size(); ++k) s.seconds -= P.overlap * std::min(transfer[k], pass[k + 1]);
  return s;
}

}  // namespace detail

/// The world problem pr runs in: its own, or the smallest that holds every mesh. Throws
/// redist_error naming an array whose meshes need more ranks than the problem's world.
inline std::uint64_t reshard_world(const reshard_problem& pr) {
  std::uint64_t W = pr.world;
  for (const reshard_array& a : pr.arrays) {
    const std::uint64_t need = std::max(layout_world(a.source), layout_world(a.target));
    if (pr.world != 0 && need > pr.world)
      throw redist_error(errc::bad_size, "array '" + a.name + "': its meshes need a world of " + std::to_string(need) +
                                             " ranks, the reshard has " + std::to_string(pr.world));
    W = std::max(W, need);
  }
  return W;
}

/// The joint plan of problem `pr` (the header comment). Throws redist_error naming the array
/// for an array that has no plan, and for bad input: no arrays, two arrays of one name,
/// meshes that do not fit the world, a budget below one row of a piece.
inline reshard_plan plan_reshard(const reshard_problem& pr, const reshard_options& o = {}) {
  const time_profile& P = o.synth.time_model ? *o.synth.time_model : builtin_profile;
  reshard_plan rp;
  rp.arrays = pr.arrays;
  rp.budget_bytes = o.budget_bytes;
  const std::size_t A = pr.arrays.size();
  if (A == 0) throw redist_error(errc::bad_size, "the reshard has no arrays");
  if (A > UINT32_MAX) throw redist_error(errc::capacity, "more than 2^32 arrays");
  {
    std::set<std::string> names;
    for (const reshard_array& a : pr.arrays) {
      if (a.name.empty()) throw redist_error(errc::syntax, "an array has an empty name");
      if (!names.insert(a.name).second) throw redist_error(errc::syntax, "two arrays are named '" + a.name + "'");
    }
  }
  const std::uint64_t W = reshard_world(pr);
  rp.world = W;
  rp.node_ranks = P.spans_nodes(W) ? P.node_ranks : 0;
  rp.of_rank = o.of_rank;
  if (o.of_rank && *o.of_rank >= W)
    throw redist_error(errc::bad_size, "a plan of rank " + std::to_string(*o.of_rank) + " in a world of " +
                                           std::to_string(W) + " ranks");
  auto blame = [](const reshard_array& a, const redist_error& e) {
    return redist_error(e.code(), "array '" + a.name + "': " + e.what());
  };
  // Arrays laid out as an earlier one (the layers of a model): like[i], the first such, whose
  // own plan (where their program types agree) and exchange pieces are theirs too.
  std::vector<std::size_t> like(A);
  {
    std::vector<std::size_t> firsts;  // the first array of each distinct pair of layouts
    for (std::size_t i = 0; i < A; ++i) {
      const reshard_array& a = pr.arrays[i];
      const auto j = std::find_if(firsts.begin(), firsts.end(), [&](std::size_t f) {
        return pr.arrays[f].source == a.source && pr.arrays[f].target == a.target;
      });
      like[i] = j == firsts.end() ? i : *j;
      if (like[i] == i) firsts.push_back(i);
    }
  }
  std::map<std::pair<std::size_t, element_type>, std::size_t> planned;  // (like, program type) -> the array planned
  // Every array's own plan.
  rp.own.resize(A);
  rp.route.assign(A, reshard_route::joint);
  std::vector<char> forced(A, 0);
  const double call = detail::call_seconds(P, W);
  for (std::size_t i = 0; i < A; ++i) {
    const reshard_array& a = pr.arrays[i];
    if (a.casts()) {
      const std::string cast = std::string(element_type_name(a.dtype)) + " to " +
                               std::string(element_type_name(a.target_type()));
      if (!element_type_casts(a.dtype, a.target_type()))
        throw redist_error(errc::rule, "array '" + a.name + "': cannot cast " + cast +
                                           " (casts are between the floating-point types f64, f32, bf16, f16)");
      if (!a.casts_pending() && !o.joint)  // the joint exchange converts as it copies (runtime/cast.hpp)
        throw redist_error(errc::rule, "array '" + a.name + "' casts " + cast +
                                           ", which only the joint exchange does (one call per array was asked)");
    }
    synth_options so = o.synth;
    so.element_bytes = element_type_bytes(a.program_type());
    if (const auto [at, fresh] = planned.try_emplace({like[i], a.program_type()}, i); !fresh) {
      rp.own[i] = rp.own[at->second];
    } else {
      try {
        rp.own[i] = plan_between(a.source, a.target, W, {so, false});
      } catch (const redist_error& e) {
        throw blame(a, e);
      }
    }
    if (a.source_pending() || a.target_pending()) {  // reducing the source's, or creating the target's (lower/partial.hpp)
      rp.route[i] = reshard_route::own;
      forced[i] = 1;
    }
  }
  // Own programs over the budget, chunk by chunk (the header comment; the same chunks for
  // arrays laid out alike, of the same types), each planned once where asked: for an own
  // route, and for pricing one call per array within the budget.
  rp.chunks.assign(A, {});
  std::vector<std::optional<reshard_chunks>> cut(A);
  std::map<std::tuple<std::size_t, element_type, element_type>, std::size_t> cuts;
  auto chunks_of = [&](std::size_t i) -> const reshard_chunks& {
    if (cut[i]) return *cut[i];
    const reshard_array& a = pr.arrays[i];
    const auto [at, fresh] = cuts.try_emplace({like[i], a.dtype, a.target_type()}, i);
    if (!fresh) return *(cut[i] = cut[at->second]);
    synth_options so = o.synth;
    so.element_bytes = element_type_bytes(a.program_type());
    try {
      return *(cut[i] = detail::chunk_own(a, rp.own[i], o.budget_bytes, W, so));
    } catch (const redist_error& e) {
      throw blame(a, e);
    }
  };
  auto chunk = [&](std::size_t i) { rp.chunks[i] = chunks_of(i); };
  // One call per array, one after another: within the budget, each chunked as that plan
  // chunks it (joint false).
  for (std::size_t i = 0; i < A; ++i)
    rp.separate_seconds +=
        detail::own_seconds(rp, P, i, true, o.budget_bytes > 0 ? chunks_of(i) : reshard_chunks{});
  if (!o.joint) {  // every array by its own plan, one call each
    rp.joint = false;
    rp.route.assign(A, reshard_route::own);
    rp.local_at.assign(2, 0);
    rp.received_bytes.assign(W, 0);
    rp.lower_bound_bytes.assign(W, 0);
    rp.transient_bytes.assign(W, 0);
    for (std::size_t i = 0; i < A; ++i) {
      if (o.budget_bytes > 0) chunk(i);
      rp.seconds += detail::own_seconds(rp, P, i, true);
    }
    const std::size_t chunked = rp.chunked_count();
    rp.reason = std::to_string(A) + " arrays, one call each" +
                (chunked > 0 ? " (" + std::to_string(chunked) + " chunk by chunk within the budget)" : "") +
                ": predicted " + detail::seconds_text(rp.seconds);
    return rp;
  }
  // The pieces (the exchange's sender rule) of every joint array that is the first of its
  // layouts as flows, which the arrays laid out as it share (flows_of); the pieces the plan
  // lists (of a rank's plan: those the rank sends, receives or keeps), array by array; and
  // every array's lower bound from the boxes alone: a rank's target box minus what it held.
  auto listed = [&](rank_t from, rank_t to) { return detail::keeps_piece(plan_detail::pieces, o.of_rank, from, to); };
  std::vector<detail::flow> flows;
  std::vector<std::size_t> flow_at(A + 1, 0);  // the flows of array i = like[i]: [flow_at[i], flow_at[i + 1])
  auto flows_of = [&](std::size_t i) {
    const std::size_t j = like[i];
    return std::span<const detail::flow>(flows.data() + flow_at[j], flow_at[j + 1] - flow_at[j]);
  };
  std::vector<reshard_piece> between;            // the plan's pieces between ranks of the first array of
                                                 // each layout, array by array, in flow order
  std::vector<std::size_t> between_at(A + 1, 0);  // array i's pieces in between, as flow_at (none unless like[i] == i)
  std::vector<std::size_t> local_at(A + 1, 0);  // array i's pieces in rp.local, as flow_at
  std::vector<std::vector<std::uint64_t>> bound(A);  // elements
  {  // their number first, so that the plan holds them without slack (millions in a large world)
    std::vector<std::size_t> n(A, 0);  // per array: the plan's pieces between ranks
    std::size_t all = 0, every = 0, mine = 0;
    for (std::size_t i = 0; i < A; ++i) {
      if (forced[i]) continue;
      if (like[i] == i) {
        exchange_plan x;
        detail::walk_exchange(
            layout_boxes(pr.arrays[i].source, W), layout_boxes(pr.arrays[i].target, W), x,
            [&](rank_t from, rank_t to, const box&, const box&) {
              ++all;
              n[i] += from != to && listed(from, to);
            },
            rp.node_ranks);
      }
      every += n[like[i]];
      mine += n[i];
    }
    if (every >= detail::flow::none) throw redist_error(errc::capacity, "more than 2^32 pieces between ranks");
    flows.reserve(all);
    between.reserve(mine);
  }
  for (std::size_t i = 0; i < A; ++i) {
    flow_at[i] = flows.size();
    between_at[i] = between.size();
    local_at[i] = rp.local.size();
    if (forced[i]) continue;
    const reshard_array& a = pr.arrays[i];
    const auto array = static_cast<std::uint32_t>(i);
    if (const std::size_t j = like[i]; j != i) {  // the pieces of array j, laid out as it is
      for (std::size_t k = local_at[j]; k < local_at[j + 1]; ++k) {
        reshard_piece pc = rp.local[k];
        pc.array = array;
        rp.local.push_back(pc);
      }
      bound[i] = bound[j];
      continue;
    }
    const std::vector<box> before = layout_boxes(a.source, W), after = layout_boxes(a.target, W);
    exchange_plan x;
    detail::walk_exchange(before, after, x, [&](rank_t from, rank_t to, const box& b, const box& held) {
      detail::flow f{array, from, to, detail::flow::none, 0, 1};
      box pc = intersect(b, held);
      f.elements = pc.size();
      if (pc.rank > 0) f.rows = pc.extent(0);
      if (listed(from, to)) {
        if (from == to) {
          f.piece = static_cast<std::uint32_t>(rp.local.size() - local_at[i]);
          rp.local.push_back({array, from, to, pc});
        } else {
          f.piece = static_cast<std::uint32_t>(between.size());
          between.push_back({array, from, to, pc});
        }
      }
      flows.push_back(f);
    }, rp.node_ranks);
    if (!x.error.empty())
      throw redist_error(x.too_large ? errc::capacity : errc::runtime, "array '" + a.name + "': exchange: " + x.error);
    for (std::uint64_t r = 0; r < W; ++r) bound[i].push_back(after[r].size() - intersect(after[r], before[r]).size());
  }
  flow_at[A] = flows.size();
  between_at[A] = between.size();
  local_at[A] = rp.local.size();
  // The flows of the arrays in `in` weighted for the one round without a budget (flow_weights).
  auto shared_weights = [&](auto&& in) {
    detail::flow_weights w{std::vector<std::uint64_t>(A, 0), std::vector<std::uint64_t>(A, 0)};
    for (std::size_t i = 0; i < A; ++i)
      if (in(i)) {
        w.wire[like[i]] += pr.arrays[i].wire_bytes();
        ++w.copies[like[i]];
      }
    return w;
  };
  // Own programs where one is predicted faster than what the array adds to one joint round.
  detail::flow_pairs fp = detail::number_pairs(flows, W);
  {
    detail::round_tally all(W, P, fp.ranks.size());
    {
      const detail::flow_weights w = shared_weights([&](std::size_t i) { return !forced[i]; });
      for (std::size_t t = 0; t < flows.size(); ++t) {
        const detail::flow& f = flows[t];
        all.add(f.from, f.to, fp.of[t], w.bytes(f), w.copies[f.array]);
      }
    }
    std::map<std::pair<std::size_t, element_type>, double> adds;  // (like, type) -> what such an array adds
    for (std::size_t i = 0; i < A; ++i) {
      const plan_candidate& c = rp.own[i].candidates[rp.own[i].chosen];
      const std::span<const detail::flow> mine = flows_of(i);
      // A program of no steps copies the tile, as the joint exchange does among its pieces
      // (its candidate's seconds count no copy): such an array stays joint.
      if (forced[i] || c.name == "exchange" || c.prog.steps.empty() || mine.empty() || pr.arrays[i].casts()) continue;
      // Under a budget, only a program whose buffers fit in it on any backend.
      if (o.budget_bytes > 0 && detail::own_held_bound(c.prog, pr.arrays[i].element_bytes()) > o.budget_bytes) continue;
      // What the array adds to the round of every joint array, each against the same round
      // (so that one array's choice does not depend on which others a budget lets choose);
      // the same for arrays of the same pieces and type.
      const auto [at, fresh] = adds.try_emplace({like[i], pr.arrays[i].dtype}, 0.0);
      if (fresh) {
        const std::uint64_t wire = pr.arrays[i].wire_bytes();
        const double with = all.seconds(P);
        const std::size_t first = flow_at[like[i]];
        for (std::size_t t = first; t < first + mine.size(); ++t)
          all.remove(flows[t].from, flows[t].to, fp.of[t], flows[t].elements * wire);
        at->second = with - all.seconds(P);
        for (std::size_t t = first; t < first + mine.size(); ++t)
          all.add(flows[t].from, flows[t].to, fp.of[t], flows[t].elements * wire);
      }
      if (c.seconds < at->second) rp.route[i] = reshard_route::own;
    }
  }
  // The pieces ranks keep, and the pieces between ranks, of the arrays that stay joint.
  auto joint = [&](std::size_t i) { return rp.route[i] == reshard_route::joint; };
  auto own_piece = [&](const reshard_piece& pc) { return !joint(pc.array); };
  std::erase_if(rp.local, own_piece);
  rp.received_bytes.assign(W, 0);
  std::vector<std::uint64_t> local_written(W, 0);
  const detail::flow_weights shared = shared_weights(joint);
  std::erase_if(between, [&](const reshard_piece& pc) { return shared.copies[pc.array] == 0; });  // layouts no joint array has
  for (const detail::flow& f : flows) {
    const std::uint64_t b = shared.bytes(f);
    if (f.from == f.to) {
      local_written[f.to] += b;
      rp.local_count += shared.copies[f.array];
    } else {
      rp.received_bytes[f.to] += b;
    }
  }
  // The pieces between ranks of the layouts that joint arrays have (compacted in place),
  // each listed one's place among its array's pieces in `between`, and where each joint array's start.
  detail::layout_flows lf;
  lf.at.assign(A + 1, 0);
  lf.layout = like;
  lf.between_at.assign(A, 0);
  lf.between_n.assign(A, 0);
  lf.keeps_at.assign(A + 1, 0);
  lf.local_at.assign(A, 0);
  for (std::size_t k = rp.local.size(); k-- > 0;) lf.local_at[rp.local[k].array] = k;
  for (const reshard_array& a : pr.arrays) lf.wire.push_back(a.wire_bytes());
  {
    std::size_t n = 0;
    for (std::size_t j = 0; j < A; ++j) {
      lf.at[j] = n;
      lf.keeps_at[j] = lf.keeps.size();
      if (like[j] != j || shared.copies[j] == 0) continue;
      for (std::size_t k = flow_at[j]; k < flow_at[j + 1]; ++k) {
        detail::flow f = flows[k];
        if (f.from == f.to) {
          lf.keeps.push_back(f);
          continue;
        }
        if (f.piece != detail::flow::none) f.piece -= static_cast<std::uint32_t>(between_at[j]);
        fp.of[n] = fp.of[k];
        flows[n++] = f;
      }
    }
    lf.at[A] = n;
    lf.keeps_at[A] = lf.keeps.size();
    flows.resize(n);
    lf.flows = std::move(flows);
    fp.of.resize(n);
    lf.pairs = std::move(fp);
    std::vector<std::size_t> start(A, 0);  // each layout's pieces in `between`, compacted as the flows
    for (std::size_t j = 0, next = 0; j < A; ++j)
      if (like[j] == j && shared.copies[j] > 0) {
        start[j] = next;
        next += between_at[j + 1] - between_at[j];
      }
    for (std::size_t i = 0; i < A; ++i)
      if (joint(i)) {
        lf.arrays.push_back(static_cast<std::uint32_t>(i));
        lf.between_at[i] = start[like[i]];
        lf.between_n[i] = between_at[like[i] + 1] - between_at[like[i]];
      }
  }
  // The rounds within the whole budget, one at a time, and where they may be pipelined,
  // within half of it, two at a time; the faster by prediction (the header comment). Each
  // in both orders where the arrays of a layout have chunks to share and their pieces
  // between ranks are few enough (the header comment, "Two orders").
  bool both_orders = false;
  {
    std::set<std::pair<std::size_t, std::uint64_t>> groups;
    std::uint64_t pieces = 0;
    for (const std::uint32_t i : lf.arrays) {
      groups.emplace(like[i], lf.wire[i]);
      pieces += lf.at[like[i] + 1] - lf.at[like[i]];
    }
    both_orders = o.order == reshard_order::automatic && groups.size() < lf.arrays.size() &&
                  pieces <= detail::both_orders_pieces;
  }
  auto schedule = [&](std::uint64_t cap, bool pipelined, bool halves) {
    detail::round_schedule s =
        detail::schedule_rounds(rp, lf, between, local_written, cap, W, P, pipelined, halves, o.order == reshard_order::by_array);
    if (both_orders && cap > 0) {
      detail::round_schedule a = detail::schedule_rounds(rp, lf, between, local_written, cap, W, P, pipelined, halves, true);
      if (a.seconds < s.seconds) s = std::move(a);
    }
    return s;
  };
  detail::round_schedule best = schedule(o.budget_bytes, false, false);
  // Each also with every rank's sends and receives within half of it each (the header
  // comment), where a row of every piece fits in that half.
  auto halved = [&](std::uint64_t cap, bool pipelined, detail::round_schedule& faster) {
    if (cap < 2) return;
    try {
      detail::round_schedule h = schedule(cap, pipelined, true);
      if (h.seconds < faster.seconds) faster = std::move(h);
    } catch (const redist_error& e) {  // a row of a piece over half of cap
      if (e.code() != errc::bad_size) throw;
    }
  };
  if (o.budget_bytes > 0) halved(o.budget_bytes, false, best);
  const double one_seconds = best.seconds;
  const bool may_pipeline = o.budget_bytes / 2 > 0 && best.rounds.size() > 1 &&
                            (o.pipeline == reshard_pipeline::on || (o.pipeline == reshard_pipeline::automatic && P.overlap > 0));
  std::string unpipelined;  // why the rounds could not be pipelined
  if (may_pipeline) {
    try {
      detail::round_schedule two = schedule(o.budget_bytes / 2, true, false);
      halved(o.budget_bytes / 2, true, two);
      if (o.pipeline == reshard_pipeline::on || two.seconds < one_seconds) best = std::move(two);
    } catch (const redist_error& e) {  // a row of a piece over half the budget
      if (e.code() != errc::bad_size) throw;
      unpipelined = "; not pipelined: a row of a piece is more than half the budget";
    }
  }
  rp.rounds = std::move(best.rounds);
  rp.local_at.assign(std::max<std::size_t>(rp.rounds.size(), 1) + 1, rp.local.size());
  rp.local_at[0] = 0;
  if (!best.spread) {
    detail::sort_pieces(rp.local);
  } else {
    rp.local.clear();
    for (std::size_t k = 0; k < best.local.size(); ++k) {
      rp.local.insert(rp.local.end(), best.local[k].begin(), best.local[k].end());
      rp.local_at[k + 1] = rp.local.size();
    }
    rp.local_count = best.local_count;
  }
  rp.transient_bytes = std::move(best.transient);
  rp.pipelined = best.pipelined;
  rp.halves = best.halves;
  rp.joint_seconds = best.seconds;
  rp.unpipelined_seconds = one_seconds;
  rp.lower_bound_bytes.assign(W, 0);
  for (std::size_t i = 0; i < A; ++i)
    if (rp.route[i] == reshard_route::joint)
      for (std::uint64_t r = 0; r < W; ++r) rp.lower_bound_bytes[r] += bound[i][r] * pr.arrays[i].wire_bytes();
  rp.seconds = call + (rp.count(reshard_route::joint) > 0 ? rp.joint_seconds : 0);  // one call: one agreement
  rp.fused = detail::plan_fused(rp, P, o);
  std::vector<char> in_call(A, 0);
  std::size_t fused_arrays = 0;
  for (const reshard_fused& f : rp.fused) {
    rp.seconds += f.seconds;
    fused_arrays += f.arrays.size();
    for (std::uint32_t a : f.arrays) in_call[a] = 1;
  }
  // Own programs of pending values over the budget, chunk by chunk (the others fit it).
  if (o.budget_bytes > 0)
    for (std::size_t i = 0; i < A; ++i)
      if (forced[i] && !in_call[i]) chunk(i);
  std::string owned;
  std::size_t named = 0;
  for (std::size_t i = 0; i < A; ++i)
    if (rp.route[i] == reshard_route::own) {
      if (!in_call[i]) rp.seconds += detail::own_seconds(rp, P, i, false);
      if (named++ < 4) owned += (owned.empty() ? "" : ", ") + pr.arrays[i].name;
      else if (named == 5) owned += ", ...";
    }
  std::uint64_t msgs = 0;
  for (std::size_t k = 0; k < rp.rounds.size(); ++k) msgs += rp.messages(k);
  rp.reason = std::to_string(rp.count(reshard_route::joint)) + " arrays in " + std::to_string(rp.rounds.size()) +
              (rp.pipelined ? " pipelined" : "") + (rp.rounds.size() == 1 ? " round" : " rounds") + " of " +
              std::to_string(msgs) + " messages" + (rp.halves ? " (sends and receives in halves of the budget)" : "") +
              ", predicted " + detail::seconds_text(rp.joint_seconds);
  if (rp.pipelined) rp.reason += " (one at a time: " + detail::seconds_text(rp.unpipelined_seconds) + ")";
  rp.reason += unpipelined;
  if (!owned.empty())
    rp.reason += "; " + std::to_string(rp.count(reshard_route::own)) + " by their own plans (" + owned + ")";
  if (!rp.fused.empty())
    rp.reason += ", " + std::to_string(fused_arrays) + " of them in " + std::to_string(rp.fused.size()) +
                 (rp.fused.size() == 1 ? " fused collective" : " fused collectives");
  if (const std::size_t chunked = rp.chunked_count(); chunked > 0)
    rp.reason += ", " + std::to_string(chunked) + " of them chunk by chunk within the budget";
  rp.reason += "; in all " + detail::seconds_text(rp.seconds) + " against " + detail::seconds_text(rp.separate_seconds) +
               " for one call per array";
  return rp;
}

}  // namespace redist
