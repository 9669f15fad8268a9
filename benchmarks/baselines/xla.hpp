// benchmarks/baselines/xla.hpp -- a re-implementation of the order in which the XLA SPMD
// partitioner's resharding tries its patterns, for comparison only (DESIGN.md section 6).
// Two generations share the code below: `xla` (xla_version::current, this header's
// xla_program) models today's XLA; `xla-2022` (xla_version::y2022, baselines/xla_2022.hpp)
// models the XLA the paper measured.
//
// Sources read (openxla/xla):
//   xla/service/spmd/spmd_partitioner.cc at commit b1a638ae76a1225e125e9fc4b9b6fa0d051aa498:
//       PartitionedHlo::ReshardNoCache, ReshardWithAllToAll, TryMultipleSourceTargetDims,
//       GetAllToAllSharding, TryComplexReshardHandling (PatternMatchMergeOrSplitSharding,
//       SplitReshapeHelper / MergeReshapeHelper, PatternMatchPartiallyReplicateDim),
//       ReshardFromPartialReplicateWithDynamicSlice, ReshardToPartialReplicateWithAllGather,
//       ReshardPartialReplicateWithAllToAll, Replicate / ReplicatePartial,
//       SpmdPartitioner::AllGatherShards(Internal), CommunicationCostInBytes
//   xla/service/spmd/spmd_partitioner_util.cc at commit 03a317cc89d41bdf5236a9e6eca6b3c87f144006:
//       GetReshardAllToAllSourceTargetDims, CanReshardWithCollectivePermute
//   xla/service/spmd/spmd_partitioner_test.cc at commit 9d67cd3c12480847de5b12990838b1e6e63bd0a6
//       (MultipleSourceTargetDimsInOneAllToAll1-3, TiledToTiledEven/Uneven read there; the
//       ComplexReshardSplit*, ReshardToASingleAllToAll, ReshardCrash and
//       ReshardNoFullRematCompatible expectations as tests/peers/cases.json translates them):
//       the check, in tests/baselines/xla_baseline_test.cpp.
//
// XLA describes a sharding by its tile assignment: the number of shards of every
// dimension ("shard counts", our weak shape) plus, if some devices hold the same tile, a
// last "replicated" dimension (ReplicateOnLastTileDim); a sharding with one tile is
// Replicate(). ReshardNoCache(target) tries, in this order:
//   (1) CanReshardWithCollectivePermute: same shard counts (and replication), another
//       device order: one collective-permute.                     -> rule collective_permute
//   (2) GetReshardAllToAllSourceTargetDims: same number of tiles, both or neither
//       partially replicated, and the counts of the dimensions that differ are a
//       permutation of each other; pairs are found smallest source count first and need
//       divisible counts. ReshardWithAllToAll (try_multiple_source_target_dims = true):
//       TryMultipleSourceTargetDims sorts the pairs by target dimension and takes every
//       pair whose dimensions no earlier pair used (and whose extents the counts divide);
//       two or more such pairs are ONE all-to-all (a group of the product of their factors,
//       MultipleSourceTargetDimsInOneAllToAll*), the others follow one all-to-all each;
//       with fewer, the first pair is one all-to-all and the rest recurse. Then a
//       collective-permute if the device order still differs.   -> rule all_to_all
//   (3) source partially replicated, target not replicated:
//       ReshardFromPartialReplicateWithDynamicSlice when every target count is a multiple
//       of the source count: a local dynamic-slice, then a collective-permute unless the
//       target is a sub-tiling of the source;                     -> rule dynslice_from_partial
//       else ReshardPartialReplicateWithAllToAll (a shifted pattern: source counts
//       [1, c1..c(n-1)] + r replicas to target [c1..c(n-1), r] with matching device
//       order): all-to-alls to [c1..c(n-1), 1] + r, then Reshard to the target.
//                                                                 -> rule partial_replicate_all_to_all
//   (4) target partially replicated, source not replicated:
//       ReshardToPartialReplicateWithAllGather when every source count is a multiple of
//       the target count: a collective-permute to a compatible device order if needed,
//       then all-gathers (AllGatherShards with per_dim_ag = true: one all-gather per
//       shrinking dimension, last dimension first);               -> rule allgather_to_partial
//       else ReshardPartialReplicateWithAllToAll (the mirrored shifted pattern).
//   (5) source not replicated, target not replicated: TryComplexReshardHandling (below);
//       failing that, the equal-dimension grouping: the dimensions whose count is the same
//       non-1 value in both are grouped away, the rest is resharded inside every group
//       (ReshardNoCache with full replication allowed: at worst an all-gather of the group's
//       part, never of the whole array), then a collective-permute if needed;
//                                                                 -> rule group_equal_dims
//       failing that (no such dimension), "Involuntary full rematerialization": Replicate()
//       (one all-gather per partitioned dimension, last dimension first), then a
//       dynamic-slice to the target.                              -> rule full_rematerialization
//       To a replicated target the same all-gathers are simply the plan: rule replicate.
//   A replicated source is dynamic-sliced to the target.          -> rule slice_from_replicated
// TryComplexReshardHandling, each part followed by ReshardNoCache(target) with full
// replication forbidden (so it fails rather than rematerialize):
//   PatternMatchMergeOrSplitSharding: a dimension i whose counts X, X*Y differ by a
//       factor (and, preferably, a dimension j with counts Y <-> 1 that compensates),
//       split into (min count, rest): both shardings become rank+1 and agree on the major
//       half, the split problem is resharded (recursively, typically one all-to-all
//       between the minor half and j), then merged back. It fails (no fall-through)
//       when the split problem cannot be resharded.               -> rule complex_merge_split
//       (ComplexReshardSplit*, ReshardToASingleAllToAll: one all-to-all where the 2022
//       XLA rematerialized the array.)
//   PatternMatchPartiallyReplicateDim: partially replicated target with r replicas, a
//       source dimension i with count c_i != 1 and c_i * (source replicas) == r: replicate
//       dimension i (all-gather), then reshard.                   -> rule complex_replicate_dim
//   partially replicated source with r replicas, tiled target: move the replication onto
//       the first dimension whose source count is 1, whose target count differs and is a
//       multiple of r (a dynamic-slice), then reshard.            -> rule complex_unreplicate
// The 2022 generation (baselines/xla_2022.hpp) is (1)-(4) with one all-to-all per pair,
// then Replicate() + dynamic-slice: no TryComplexReshardHandling, no grouping, no
// multi-dimension all-to-all.
//
// How the re-implementation emits XLA's plan. Every pattern is written as a path of weak
// collectives (weak_edge: alltoall / dynslice / allgather on one dimension each, in the
// order XLA issues them) and lowered with lower_path (lower/lower.hpp), so the baseline's
// programs have the same format, the same cost model and the same checker as ours.
// One XLA all-to-all over several dimension pairs (TryMultipleSourceTargetDims) is one
// weak alltoall per pair in the path (xla_plan::fused marks them) and ONE step in the
// program: the lowered steps of the group are replaced by a single `exchange` step with the
// boxes they end with. Every rank then receives exactly what XLA's all-to-all sends it,
// (G-1)/G of its tile for a group of G (XLA's own CommunicationCostInBytes), in one
// collective, as XLA does. The cost model differs in one way: Fig. 11 charges an
// alltoall step its whole tile (rounding (G-1)/G up to 1) and the checker charges an
// exchange what it receives, so such a step costs tile/G less than one alltoall step
// would: the comparison favours XLA by that much, never us. (xla_plan_program lowers a
// plan this way; lower_path on xla_plan::path alone would charge the all-to-all per pair.)
// The time model prices the exchange step as an exchange (per peer), not as an all-to-all.
// What this model does not reproduce exactly (each difference can only make the baseline
// cheaper or equal, never costlier, than real XLA, except the split-problem and CHECK-fail
// cases noted last):
//   - Device order. lower_path chooses every rank's dynamic-slice chunk itself and emits
//     one collective-permute at most, placed before the trailing all-gathers, exactly when
//     the ranks would otherwise not end with their target tiles. XLA emits a permute after
//     every pattern whose fixed device order differs from the (intermediate) target; where
//     a chain of patterns (complex handling, grouping, partial-replicate all-to-all) would
//     need two permutes, or one that our chunk choice avoids, the baseline pays one or none.
//   - ReshardPartialReplicateWithAllToAll checks the device order of its two shardings;
//     this is checked exactly for the outermost call (the user's types, with JAX's order
//     of replicas: ascending rank) and assumed to hold inside recursive calls.
//   - XLA pads uneven shards; the weak collectives need divisible extents. On even types a
//     pattern that would need padding throws redist_error (it never happens on workloads
//     whose dimensions are multiples of both types' counts). Uneven types go through
//     xla_padded_program (below), which runs XLA's patterns on the padded array (the
//     divisibility tests of TryMultipleSourceTargetDims and PatternMatchMergeOrSplitSharding
//     see the unpadded extents, as XLA's do).
//   - Step counts: XLA slices several dimensions in one dynamic-slice; here it is one
//     dynslice step per dimension (cost 0 each, so costs are unaffected).
//   - ReplicatePartial's special cases for dimensions of extent at most count/2 (XLA uses
//     a dynamic-update-slice and an all-reduce there) are not modeled: tiny arrays only.
//   - A split problem (PatternMatchMergeOrSplitSharding) whose plan touches the major half
//     of the split dimension has no weak form on the merged dimension; the model then
//     treats the pattern as not matching and goes on (xla_plan::approximate is set). This
//     can make the baseline costlier than XLA; the tests count how often it happens.
//   - TryMultipleSourceTargetDims fuses every pair whose dimensions no earlier pair (in
//     target-dimension order) used, without checking that a pair does not depend on one
//     done after it: for a chain like (2,1), (3,2), (5,3) it fuses (2,1) and (5,3), and
//     GetAllToAllSharding's CHECK (the counts divide) or ReshardWithCollectivePermute's
//     CHECK fails -- XLA aborts. The model does the pairs one all-to-all each in
//     GetReshardAllToAllSourceTargetDims's order there, as the 2022 XLA did, and sets
//     xla_plan::check_fail; it happens on a few random problems (1 of the 1600 problems of
//     the paper's and the mixed workloads; the model's all-to-alls cost more than one).
//   - Partial sums (sum{...}) are not modeled: such problems are rejected.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/core/rules.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/lower.hpp"
#include "redist/program.hpp"
#include "redist/search/weak_graph.hpp"

namespace redist::baselines {

/// Which XLA the model reproduces.
enum class xla_version : std::uint8_t {
  current,  ///< today's openxla/xla (the `xla` baseline)
  y2022,    ///< the XLA the paper measured (the `xla-2022` baseline, baselines/xla_2022.hpp)
};

/// The patterns of XLA's ReshardNoCache, as this baseline names them (see above).
enum class xla_rule : std::uint8_t {
  identity,                      ///< same sharding: nothing to do
  collective_permute,            ///< (1)
  all_to_all,                    ///< (2)
  dynslice_from_partial,         ///< (3) ReshardFromPartialReplicateWithDynamicSlice
  allgather_to_partial,          ///< (4) ReshardToPartialReplicateWithAllGather
  partial_replicate_all_to_all,  ///< (3)/(4) ReshardPartialReplicateWithAllToAll
  complex_merge_split,           ///< TryComplexReshardHandling: PatternMatchMergeOrSplitSharding
  complex_replicate_dim,         ///< TryComplexReshardHandling: PatternMatchPartiallyReplicateDim
  complex_unreplicate,           ///< TryComplexReshardHandling: partial -> tiled
  group_equal_dims,              ///< (5) reshard inside the groups of equal dimensions
  full_rematerialization,        ///< (5) Replicate() then dynamic-slice
  replicate,                     ///< to a replicated target: all-gather everything
  slice_from_replicated,         ///< from a replicated source: dynamic-slice
};

constexpr std::string_view xla_rule_name(xla_rule r) {
  switch (r) {
    case xla_rule::identity: return "identity";
    case xla_rule::collective_permute: return "collective_permute";
    case xla_rule::all_to_all: return "all_to_all";
    case xla_rule::dynslice_from_partial: return "dynslice_from_partial";
    case xla_rule::allgather_to_partial: return "allgather_to_partial";
    case xla_rule::partial_replicate_all_to_all: return "partial_replicate_all_to_all";
    case xla_rule::complex_merge_split: return "complex_merge_split";
    case xla_rule::complex_replicate_dim: return "complex_replicate_dim";
    case xla_rule::complex_unreplicate: return "complex_unreplicate";
    case xla_rule::group_equal_dims: return "group_equal_dims";
    case xla_rule::full_rematerialization: return "full_rematerialization";
    case xla_rule::replicate: return "replicate";
    case xla_rule::slice_from_replicated: return "slice_from_replicated";
  }
  return "?";
}

/// XLA's plan for one problem: the weak path it takes and the rules it went through.
struct xla_plan {
  std::vector<weak_step> path;
  /// Per path step: 0, or the id of the multi-dimension all-to-all it belongs to (steps
  /// with the same non-zero id are one XLA all-to-all, TryMultipleSourceTargetDims).
  std::vector<std::uint32_t> fused;
  std::vector<xla_rule> trace;  ///< every rule applied, outermost first (recursion flattened)
  xla_rule top = xla_rule::identity;  ///< the rule the outermost ReshardNoCache applied
  bool approximate = false;  ///< a split problem could not be expressed (see the header comment)
  /// XLA's TryMultipleSourceTargetDims would CHECK-fail here (see the header comment); the
  /// model did the all-to-alls one pair at a time instead.
  bool check_fail = false;
  [[nodiscard]] bool contains(xla_rule r) const { return std::find(trace.begin(), trace.end(), r) != trace.end(); }
  /// Number of collectives XLA issues on this path, permutes aside (a fused group counts once).
  [[nodiscard]] std::size_t collectives() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < path.size(); ++i)
      if (path[i].edge.kind != op::dynslice && (fused[i] == 0 || i == 0 || fused[i - 1] != fused[i])) ++n;
    return n;
  }
};

namespace xla_detail {

using counts = std::vector<std::uint64_t>;

/// One weak collective in the current (possibly split or grouped) dimension space.
struct xop {
  op kind = op::dynslice;
  int from = -1, to = -1;  ///< alltoall: from -> to; allgather: from; dynslice: to
  std::uint64_t factor = 1;
  std::uint32_t fuse = 0;
};

/// The array XLA reshards at one level of recursion: its base shape and device group.
struct space {
  counts n;                  ///< global extent of every dimension
  std::uint64_t devices = 1;  ///< devices of the (sub)group
};

class planner {
 public:
  planner(const device_mesh& m, const dist_type& a, const dist_type& b, const weak_problem& p, xla_version v,
          const std::uint64_t* base)
      : m_(m), a_(a), b_(b), p_(p), v_(v) {
    top_.devices = p.ctx.devices;
    for (int d = 0; d < a.rank; ++d) top_.n.push_back(base ? base[d] : a.dims[d].global);
  }

  xla_plan run() const {
    if (p_.source.sums != 1 || p_.target.sums != 1)
      throw redist_error(errc::rule, "xla baseline: partial sums (sum{...}) are not modeled");
    attempt at;
    at.cur = to_counts(p_.source);
    if (!reshard(top_, at, to_counts(p_.target), true, true, 0))
      throw redist_error(errc::rule, "xla baseline: internal error: ReshardNoCache found no plan");
    xla_plan out;
    shape cur = p_.source;
    for (const xop& o : at.ops) {
      weak_step st;
      st.edge = {o.kind, static_cast<std::int8_t>(o.from), static_cast<std::int8_t>(o.to), o.factor};
      if (!p_.apply(cur, st.edge, st.after))
        throw redist_error(errc::rule, std::string("xla baseline: XLA would pad here (") + std::string(op_name(o.kind)) +
                                           " on dimension " + std::to_string(o.kind == op::allgather ? o.from : o.to) +
                                           " by " + std::to_string(o.factor) + " is not divisible)");
      st.weight = p_.weight(st.edge, p_.ctx.local_size(cur), p_.ctx.local_size(st.after));
      cur = st.after;
      out.path.push_back(st);
      out.fused.push_back(o.fuse);
    }
    if (!(cur == p_.target)) throw redist_error(errc::rule, "xla baseline: internal error: the plan misses the target");
    out.trace = std::move(at.trace);
    out.top = out.trace.empty() ? xla_rule::identity : out.trace.front();
    out.approximate = at.approximate;
    out.check_fail = at.check_fail;
    return out;
  }

 private:
  static constexpr int max_depth = 16;  // recursion guard (XLA relies on termination)

  struct attempt {
    counts cur;
    std::vector<xop> ops;
    std::vector<xla_rule> trace;
    std::uint32_t next_fuse = 0;
    bool approximate = false;
    bool check_fail = false;
  };

  /// `at` followed by pattern r, which ran `inner` as a nested ReshardNoCache: the trace,
  /// the fusion counter and the flags (inner's ops are the caller's to map and emit).
  static attempt nested(const attempt& at, xla_rule r, const attempt& inner) {
    attempt next = at;
    next.trace.push_back(r);
    next.trace.insert(next.trace.end(), inner.trace.begin(), inner.trace.end());
    next.next_fuse = inner.next_fuse;
    next.approximate = next.approximate || inner.approximate;
    next.check_fail = next.check_fail || inner.check_fail;
    return next;
  }

  [[nodiscard]] counts to_counts(const shape& s) const { return counts(s.parts, s.parts + s.rank); }
  static std::uint64_t tiles(const counts& c) {
    std::uint64_t t = 1;
    for (std::uint64_t x : c) t *= x;
    return t;
  }
  static bool replicated(const counts& c) { return tiles(c) == 1; }  // IsTileMaximal / IsReplicated
  static bool partial(const space& sp, const counts& c) {            // ReplicateOnLastTileDim
    const std::uint64_t t = tiles(c);
    return t > 1 && t < sp.devices;
  }
  static std::uint64_t replicas(const space& sp, const counts& c) { return sp.devices / tiles(c); }
  static std::uint64_t ceil_div(std::uint64_t x, std::uint64_t y) { return (x + y - 1) / y; }
  /// Every count of `a` divides the count of `b` in the same dimension.
  static bool divides_all(const counts& a, const counts& b) {
    for (std::size_t d = 0; d < a.size(); ++d)
      if (b[d] % a[d] != 0) return false;
    return true;
  }

  static void emit(attempt& at, op kind, int from, int to, std::uint64_t f, std::uint32_t fuse = 0) {
    at.ops.push_back({kind, from, to, f, fuse});
    if (kind == op::alltoall) {
      at.cur[static_cast<std::size_t>(from)] /= f;
      at.cur[static_cast<std::size_t>(to)] *= f;
    } else if (kind == op::allgather) {
      at.cur[static_cast<std::size_t>(from)] /= f;
    } else {
      at.cur[static_cast<std::size_t>(to)] *= f;
    }
  }

  /// GetReshardAllToAllSourceTargetDims: the (source dim, target dim) pairs to swap.
  static std::optional<std::vector<std::pair<int, int>>> alltoall_pairs(const space& sp, const counts& src,
                                                                       const counts& tgt) {
    if (replicated(src) || replicated(tgt) || partial(sp, src) != partial(sp, tgt) || tiles(src) != tiles(tgt))
      return std::nullopt;
    std::map<std::uint64_t, std::vector<int>> src_dims, tgt_dims;  // shard count -> dimensions
    for (std::size_t i = 0; i < src.size(); ++i) {
      if (src[i] == tgt[i]) continue;
      src_dims[src[i]].push_back(static_cast<int>(i));
      tgt_dims[tgt[i]].push_back(static_cast<int>(i));
    }
    if (src_dims.empty() || src_dims.size() != tgt_dims.size()) return std::nullopt;
    for (const auto& [size, dims] : src_dims) {
      auto it = tgt_dims.find(size);
      if (it == tgt_dims.end() || it->second.size() != dims.size()) return std::nullopt;
    }
    auto remove_entry = [](std::uint64_t size, int dim, std::map<std::uint64_t, std::vector<int>>& m) {
      auto& v = m[size];
      v.erase(std::remove(v.begin(), v.end(), dim), v.end());
      if (v.empty()) m.erase(size);
    };
    std::vector<std::pair<int, int>> result;
    while (!src_dims.empty()) {
      const std::uint64_t source_size = src_dims.begin()->first;
      const int i = src_dims.begin()->second.back();
      const std::uint64_t target_i_size = tgt[static_cast<std::size_t>(i)];
      if (target_i_size == source_size) {
        remove_entry(source_size, i, src_dims);
        remove_entry(source_size, i, tgt_dims);
        continue;
      }
      auto found = src_dims.find(target_i_size);
      if (found == src_dims.end() || found->second.empty()) return std::nullopt;  // (undefined in XLA; unreachable)
      const std::vector<int>& js = found->second;
      auto j_it = js.begin();
      int j = *j_it;
      if (source_size == 1) {
        while (tgt[static_cast<std::size_t>(j)] == 1) {
          if (++j_it == js.end()) break;
          j = *j_it;
        }
      } else if (target_i_size % source_size == 0) {
        while (tgt[static_cast<std::size_t>(j)] != source_size) {
          if (++j_it == js.end()) break;
          j = *j_it;
        }
      } else {
        return std::nullopt;
      }
      result.emplace_back(j, i);
      remove_entry(target_i_size, i, tgt_dims);
      src_dims.begin()->second.back() = j;
      remove_entry(target_i_size, j, src_dims);
    }
    return result;
  }

  /// One all-to-all for the pair (j, i) (GetAllToAllSharding swaps the two counts); false
  /// where GetAllToAllSharding's CHECK (the counts divide) fails.
  static bool single_alltoall(attempt& at, int j, int i, std::uint32_t fuse) {
    const std::uint64_t sj = at.cur[static_cast<std::size_t>(j)], si = at.cur[static_cast<std::size_t>(i)];
    if (si == 0 || sj % si != 0 || sj == si) return false;
    emit(at, op::alltoall, j, i, sj / si, fuse);
    return true;
  }

  /// ReshardWithAllToAll(target, pairs, try_multiple_source_target_dims) as XLA runs it;
  /// false where XLA CHECK-fails (TryMultipleSourceTargetDims fuses a pair that depends on
  /// a later one: its counts do not divide, or the pairs miss the target).
  bool xla_all_to_alls(const space& sp, attempt& at, const counts& tgt, std::vector<std::pair<int, int>> pairs,
                       bool try_multiple) const {
    if (pairs.empty()) return at.cur == tgt;  // then ReshardWithCollectivePermute(target)
    if (v_ == xla_version::current && try_multiple) {  // TryMultipleSourceTargetDims
      std::vector<std::pair<int, int>> sorted = pairs, eligible, ineligible;
      std::stable_sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
      std::vector<int> seen;
      auto was_seen = [&](int d) { return std::find(seen.begin(), seen.end(), d) != seen.end(); };
      for (const auto& [s, t] : sorted) {
        const bool divisible = sp.n[static_cast<std::size_t>(s)] % at.cur[static_cast<std::size_t>(s)] == 0 &&
                               sp.n[static_cast<std::size_t>(t)] % tgt[static_cast<std::size_t>(t)] == 0;
        if (!was_seen(s) && !was_seen(t) && divisible) {
          eligible.emplace_back(s, t);
          seen.push_back(s);
          seen.push_back(t);
        } else {
          ineligible.emplace_back(s, t);
        }
      }
      if (eligible.size() >= 2) {
        const std::uint32_t id = ++at.next_fuse;
        for (const auto& [s, t] : eligible)
          if (!single_alltoall(at, s, t, id)) return false;
        return xla_all_to_alls(sp, at, tgt, ineligible, false);
      }
      return xla_all_to_alls(sp, at, tgt, pairs, false);
    }
    if (!single_alltoall(at, pairs[0].first, pairs[0].second, 0)) return false;
    pairs.erase(pairs.begin());
    return xla_all_to_alls(sp, at, tgt, std::move(pairs), true);
  }

  /// ReshardWithAllToAll. Where XLA would CHECK-fail, the model does the pairs one by one in
  /// GetReshardAllToAllSourceTargetDims's order (which reaches the target) and records it.
  void reshard_with_all_to_all(const space& sp, attempt& at, const counts& tgt,
                               const std::vector<std::pair<int, int>>& pairs, bool try_multiple) const {
    attempt trial = at;
    if (xla_all_to_alls(sp, trial, tgt, pairs, try_multiple)) {
      at = std::move(trial);
      return;
    }
    at.check_fail = true;
    for (const auto& [j, i] : pairs)
      if (!single_alltoall(at, j, i, 0))
        throw redist_error(errc::rule, "xla baseline: internal error: the all-to-all pairs do not divide");
    if (at.cur != tgt) throw redist_error(errc::rule, "xla baseline: internal error: the all-to-all pairs miss the target");
  }

  /// XLA's flat tile-assignment position of every rank for the user's type `t`: the
  /// row-major index over (shard index of every dimension, replica index), replicas of a
  /// tile ordered by ascending rank (JAX puts the unused mesh axes last, in mesh order).
  [[nodiscard]] std::vector<std::uint64_t> tile_positions(const dist_type& t) const {
    const std::uint64_t D = m_.devices;
    std::vector<std::uint64_t> tile_of(D, 0), pos(D, 0);
    for (std::uint64_t r = 0; r < D; ++r) {
      std::uint64_t f = 0;
      for (int d = 0; d < t.rank; ++d) f = f * parts(m_, t.dims[d]) + block_index(m_, t.dims[d], r);
      tile_of[r] = f;
    }
    const std::uint64_t reps = D / [&] {
      std::uint64_t n = 1;
      for (int d = 0; d < t.rank; ++d) n *= parts(m_, t.dims[d]);
      return n;
    }();
    std::map<std::uint64_t, std::uint64_t> seen;  // tile -> replicas met so far (ranks ascend)
    for (std::uint64_t r = 0; r < D; ++r) pos[r] = tile_of[r] * reps + seen[tile_of[r]]++;
    return pos;
  }

  [[nodiscard]] bool device_order_differs() const {
    for (std::uint64_t r = 0; r < m_.devices; ++r)
      for (int d = 0; d < a_.rank; ++d)
        if (block_index(m_, a_.dims[d], r) != block_index(m_, b_.dims[d], r)) return true;
    return false;
  }

  /// ReshardPartialReplicateWithAllToAll.
  bool partial_replicate_all_to_all(const space& sp, attempt& at, const counts& tgt, bool exact, int depth) const {
    const counts cur = at.cur;
    const bool source_partial = partial(sp, cur);
    const counts& P = source_partial ? cur : tgt;
    const counts& T = source_partial ? tgt : cur;
    if (!partial(sp, P) || partial(sp, T) || replicated(T)) return false;
    const int n = static_cast<int>(T.size());
    const std::uint64_t r = replicas(sp, P);
    if (P[0] != 1) return false;
    int to_replicate_dim = -1;
    for (int i = n - 1; i >= 0; --i) {
      const auto u = static_cast<std::size_t>(i);
      if (T[u] > 1 && to_replicate_dim == -1) {
        if (T[u] != r) return false;
        to_replicate_dim = i;
      }
      const std::uint64_t pnext = i + 1 < n ? P[u + 1] : r;
      if (T[u] != pnext) return false;
    }
    if (to_replicate_dim == -1) return false;
    if (exact && sp.devices == m_.devices &&
        tile_positions(source_partial ? a_ : b_) != tile_positions(source_partial ? b_ : a_))
      return false;
    counts tmp = T;
    tmp[static_cast<std::size_t>(to_replicate_dim)] = 1;
    attempt next = at;
    next.trace.push_back(xla_rule::partial_replicate_all_to_all);
    if (source_partial) {
      auto pairs = alltoall_pairs(sp, cur, tmp);
      if (!pairs) return false;
      reshard_with_all_to_all(sp, next, tmp, *pairs, true);
      if (!reshard(sp, next, tgt, true, false, depth + 1)) return false;
    } else {
      if (!reshard(sp, next, tmp, true, false, depth + 1)) return false;
      auto pairs = alltoall_pairs(sp, next.cur, tgt);
      if (!pairs) return false;
      reshard_with_all_to_all(sp, next, tgt, *pairs, true);
    }
    at = std::move(next);
    return true;
  }

  /// PatternMatchMergeOrSplitSharding: the dimension to split and the size of its major half.
  static std::optional<std::pair<int, std::uint64_t>> merge_or_split(const space& sp, const counts& src,
                                                                   const counts& tgt) {
    if (replicated(src) || replicated(tgt)) return std::nullopt;
    if (partial(sp, src) != partial(sp, tgt)) return std::nullopt;
    if (partial(sp, src) && replicas(sp, src) != replicas(sp, tgt)) return std::nullopt;
    std::vector<int> diff1, diff2;
    for (std::size_t i = 0; i < src.size(); ++i) {
      const std::uint64_t si = src[i], ti = tgt[i];
      if (si == ti) continue;
      const auto [lo, hi] = std::minmax(si, ti);
      if (lo == 1) {
        diff1.push_back(static_cast<int>(i));
        continue;
      }
      if (hi % lo != 0) continue;
      if (ceil_div(sp.n[i], lo) * lo % hi != 0) continue;
      diff2.push_back(static_cast<int>(i));
    }
    for (int i : diff2)
      for (int j : diff1) {
        const auto ui = static_cast<std::size_t>(i), uj = static_cast<std::size_t>(j);
        if (src[ui] * src[uj] != tgt[ui] * tgt[uj]) continue;
        return std::make_pair(i, std::min(src[ui], tgt[ui]));
      }
    for (int i : diff2) {
      const auto ui = static_cast<std::size_t>(i);
      if (src[ui] > tgt[ui]) return std::make_pair(i, tgt[ui]);
    }
    return std::nullopt;
  }

  /// The split problem's result, mapped back to the merged dimensions: false if it cannot
  /// be resharded (XLA's TryComplexReshardHandling fails) or has no weak form (approximate).
  bool complex_merge_split(const space& sp, attempt& at, const counts& tgt, int i, std::uint64_t major, int depth,
                           bool& inexpressible) const {
    const auto ui = static_cast<std::size_t>(i);
    const counts& cur = at.cur;
    // SplitReshapeHelper: dimension i of local extent l becomes (1 of `major`, l of l * rest).
    const std::uint64_t l = ceil_div(sp.n[ui], cur[ui]), rest = cur[ui] / major;
    space sub = sp;
    sub.n[ui] = sp.n[ui] / (l * rest);
    sub.n.insert(sub.n.begin() + i + 1, l * rest);
    auto split = [&](const counts& c) {
      counts s = c;
      s[ui] = major;
      s.insert(s.begin() + i + 1, c[ui] / major);
      return s;
    };
    attempt inner;
    inner.cur = split(cur);
    inner.next_fuse = at.next_fuse;
    if (!reshard(sub, inner, split(tgt), false, false, depth + 1)) return false;
    attempt next = nested(at, xla_rule::complex_merge_split, inner);
    for (const xop& o : inner.ops) {
      xop mapped = o;
      for (int* d : {&mapped.from, &mapped.to}) {
        if (*d < 0 || *d < i) continue;
        if (*d == i) {  // the major half: no weak collective on the merged dimension says it
          inexpressible = true;
          return false;
        }
        *d -= 1;
      }
      emit(next, mapped.kind, mapped.from, mapped.to, mapped.factor, mapped.fuse);
    }
    if (next.cur != tgt) return false;
    at = std::move(next);
    return true;
  }

  /// TryComplexReshardHandling (current XLA only).
  bool try_complex(const space& sp, attempt& at, const counts& tgt, int depth) const {
    const counts cur = at.cur;
    const bool src_partial = partial(sp, cur), tgt_partial = partial(sp, tgt);
    if (auto ms = merge_or_split(sp, cur, tgt)) {
      bool inexpressible = false;
      if (complex_merge_split(sp, at, tgt, ms->first, ms->second, depth, inexpressible)) return true;
      if (!inexpressible) return false;  // XLA gives up on the complex handling here
      at.approximate = true;             // XLA succeeds where the model cannot follow: go on
    }
    if (tgt_partial) {  // PatternMatchPartiallyReplicateDim
      const std::uint64_t rt = replicas(sp, tgt), rs = src_partial ? replicas(sp, cur) : 1;
      for (std::size_t i = 0; i < cur.size(); ++i) {
        if (cur[i] == 1 || cur[i] * rs != rt) continue;
        counts inter = cur;
        inter[i] = 1;
        attempt next = at;
        next.trace.push_back(xla_rule::complex_replicate_dim);
        if (!reshard(sp, next, inter, true, false, depth + 1)) return false;
        if (!reshard(sp, next, tgt, false, false, depth + 1)) return false;
        at = std::move(next);
        return true;
      }
    }
    if (src_partial && !tgt_partial) {
      const std::uint64_t r = replicas(sp, cur);
      for (std::size_t i = 0; i < cur.size(); ++i) {
        if (tgt[i] == cur[i] || cur[i] != 1 || tgt[i] % r != 0) continue;
        counts inter = cur;
        inter[i] = r;
        attempt next = at;
        next.trace.push_back(xla_rule::complex_unreplicate);
        if (!reshard(sp, next, inter, true, false, depth + 1)) return false;
        if (!reshard(sp, next, tgt, false, false, depth + 1)) return false;
        at = std::move(next);
        return true;
      }
    }
    return false;
  }

  /// The equal-dimension grouping of ReshardNoCache (current XLA only).
  bool group_equal_dims(const space& sp, attempt& at, const counts& tgt, int depth) const {
    const counts cur = at.cur;
    space sub = sp;
    counts icur = cur, itgt = tgt;
    bool any = false;
    for (std::size_t d = 0; d < cur.size(); ++d) {
      if (cur[d] == 1 || cur[d] != tgt[d]) continue;
      any = true;
      sub.n[d] = ceil_div(sp.n[d], cur[d]);
      sub.devices /= cur[d];
      icur[d] = itgt[d] = 1;
    }
    if (!any) return false;
    attempt inner;
    inner.cur = icur;
    inner.next_fuse = at.next_fuse;
    if (!reshard(sub, inner, itgt, true, false, depth + 1)) return false;
    attempt next = nested(at, xla_rule::group_equal_dims, inner);
    for (const xop& o : inner.ops) emit(next, o.kind, o.from, o.to, o.factor, o.fuse);
    if (next.cur != tgt) return false;
    at = std::move(next);
    return true;  // then ReshardNoCache(target): a collective-permute at most
  }

  /// ReshardNoCache from at.cur to tgt in `sp`. `exact`: at.cur and tgt are the user's types.
  bool reshard(const space& sp, attempt& at, const counts& tgt, bool allow_full_replication, bool exact,
               int depth) const {
    if (depth > max_depth) return false;
    const counts cur = at.cur;
    if (cur == tgt) {  // equal sharding, or (1) when the device order differs
      if (exact) at.trace.push_back(device_order_differs() ? xla_rule::collective_permute : xla_rule::identity);
      return true;
    }
    if (auto pairs = alltoall_pairs(sp, cur, tgt)) {  // (2)
      at.trace.push_back(xla_rule::all_to_all);
      reshard_with_all_to_all(sp, at, tgt, *pairs, true);
      return true;
    }
    if (!replicated(tgt) && partial(sp, cur)) {  // (3)
      if (divides_all(cur, tgt)) {
        at.trace.push_back(xla_rule::dynslice_from_partial);
        for (std::size_t d = 0; d < cur.size(); ++d)
          if (tgt[d] > cur[d]) emit(at, op::dynslice, -1, static_cast<int>(d), tgt[d] / cur[d]);
        return true;
      }
      if (partial_replicate_all_to_all(sp, at, tgt, exact, depth)) return true;
    }
    if (!replicated(cur) && partial(sp, tgt)) {  // (4)
      if (divides_all(tgt, cur)) {
        at.trace.push_back(xla_rule::allgather_to_partial);
        for (std::size_t d = cur.size(); d-- > 0;)
          if (cur[d] > tgt[d]) emit(at, op::allgather, static_cast<int>(d), -1, cur[d] / tgt[d]);
        return true;
      }
      if (partial_replicate_all_to_all(sp, at, tgt, exact, depth)) return true;
    }
    if (!replicated(cur)) {  // (5)
      if (!replicated(tgt)) {
        if (v_ == xla_version::current) {
          if (try_complex(sp, at, tgt, depth)) return true;
          if (group_equal_dims(sp, at, tgt, depth)) return true;
        }
        if (!allow_full_replication) return false;
        at.trace.push_back(xla_rule::full_rematerialization);
      } else {
        at.trace.push_back(xla_rule::replicate);
      }
      for (std::size_t d = cur.size(); d-- > 0;)
        if (at.cur[d] > 1) emit(at, op::allgather, static_cast<int>(d), -1, at.cur[d]);
    } else {
      at.trace.push_back(xla_rule::slice_from_replicated);
    }
    for (std::size_t d = 0; d < tgt.size(); ++d)
      if (tgt[d] > 1) emit(at, op::dynslice, -1, static_cast<int>(d), tgt[d]);
    return true;
  }

  const device_mesh& m_;
  const dist_type& a_;
  const dist_type& b_;
  const weak_problem& p_;
  xla_version v_;
  space top_;
};

/// Replace every fused group of lowered alltoall steps (xla_plan::fused) by one exchange
/// step with the boxes the group ends with: one collective, (G-1)/G of the tile received.
inline void fuse_all_to_alls(program& prog, const xla_plan& plan) {
  // Path step q is program step q before the trailing all-gathers (lower_path inserts its
  // one permute after them), and a fused group is all-to-alls, so it lies there.
  std::size_t q = plan.fused.size();
  while (q > 0) {
    const std::size_t last = q - 1;
    const std::uint32_t id = plan.fused[last];
    std::size_t first = last;
    while (id != 0 && first > 0 && plan.fused[first - 1] == id) --first;
    q = first;
    if (id == 0 || first == last) continue;
    if (last >= prog.steps.size() || prog.steps[first].kind != op::alltoall || prog.steps[last].kind != op::alltoall)
      throw redist_error(errc::rule, "xla baseline: internal error: a fused all-to-all is not where the path put it");
    const box_trace before = trace_boxes(prog, first), after = trace_boxes(prog, last + 1);
    if (!before.error.empty() || !after.error.empty())
      throw redist_error(errc::rule, "xla baseline: internal error: " + before.error + after.error);
    const exchange_plan x = plan_exchange(before.boxes, after.boxes, plan_detail::sizes);
    if (!x.error.empty()) throw redist_error(errc::rule, "xla baseline: fused all-to-all: " + x.error);
    step s;
    s.kind = op::exchange;
    s.boxes = flatten_boxes(after.boxes);
    s.after = prog.steps[last].after;
    s.local_after = prog.steps[last].local_after;
    s.cost = x.max_received;
    s.type_after = prog.steps[last].type_after;
    s.type_exact = prog.steps[last].type_exact;
    const auto f = static_cast<std::ptrdiff_t>(first), l = static_cast<std::ptrdiff_t>(last);
    prog.steps.erase(prog.steps.begin() + f + 1, prog.steps.begin() + l + 1);
    prog.steps[first] = std::move(s);
  }
  prog.cost_elements = 0;
  for (const step& s : prog.steps) prog.cost_elements += s.cost;
}

/// The lowered program of an XLA plan, with its multi-dimension all-to-alls fused.
inline program lower_xla(const device_mesh& m, const dist_type& a, const dist_type& b, const weak_problem& p,
                         const xla_plan& plan, std::uint64_t element_bytes) {
  program prog = lower_path(m, a, b, p, plan.path, element_bytes).get();
  fuse_all_to_alls(prog, plan);
  return prog;
}

}  // namespace xla_detail

/// XLA's weak path from `a` to `b` (p = make_weak_problem(m, a, b)), with the rules it
/// went through, for the XLA of generation `v`. `base` (optional, one extent per
/// dimension) is the array XLA sees when `a` and `b` are its padded types (see
/// xla_padded_program). Throws redist_error for partial sums or a pattern XLA would pad.
inline xla_plan xla_path(const device_mesh& m, const dist_type& a, const dist_type& b, const weak_problem& p,
                         xla_version v = xla_version::current, const std::uint64_t* base = nullptr) {
  return xla_detail::planner(m, a, b, p, v, base).run();
}

/// The program of an XLA plan (xla_path or xla_2022_path with the same `p`): the path
/// lowered with lower_path, each multi-dimension all-to-all fused into one exchange step.
/// Lowering plan.path with lower_path alone would charge such an all-to-all once per pair.
inline program xla_plan_program(const device_mesh& m, const dist_type& a, const dist_type& b, const weak_problem& p,
                                const xla_plan& plan, std::uint64_t element_bytes = 4) {
  if (element_bytes == 0) throw redist_error(errc::bad_size, "element size must be at least 1 byte");
  return xla_detail::lower_xla(m, a, b, p, plan, element_bytes);
}

/// The program of XLA generation `v` from `a` to `b` (xla_program, xla_2022_program).
inline program xla_version_program(const device_mesh& m, const dist_type& a, const dist_type& b, xla_version v,
                                   std::uint64_t element_bytes = 4) {
  if (element_bytes == 0) throw redist_error(errc::bad_size, "element size must be at least 1 byte");
  weak_problem p = make_weak_problem(m, a, b).get();
  return xla_detail::lower_xla(m, a, b, p, xla_path(m, a, b, p, v), element_bytes);
}

/// The xla baseline's program (today's XLA) from `a` to `b`. Like the naive baseline, its
/// memory_bound_elements is the paper's bound (eq. 4), which its peak may exceed. A
/// multi-dimension all-to-all is one exchange step (see the header comment).
/// Throws redist_error on ill-formed types, differing global shapes or partial sums.
inline program xla_program(const device_mesh& m, const dist_type& a, const dist_type& b, std::uint64_t element_bytes = 4) {
  return xla_version_program(m, a, b, xla_version::current, element_bytes);
}

/// XLA's plan for types whose dimensions the mesh need not divide (DESIGN section 2).
/// XLA keeps every shard padded to ceil(n / k) and its patterns move whole padded shards
/// (ReshardWithAllToAll pads the base shape to RoundUpTo(n, k) before its all-to-all; an
/// all-gather concatenates padded shards and slices the padding off afterwards). The
/// patterns it picks depend on the shard counts (and, for the multi-dimension all-to-all
/// and the merge/split pattern, on which extents the counts divide, taken from the
/// unpadded array). The model: pad every dimension d to the least multiple P_d >= n_d of
/// every shard count d takes along XLA's path, and run XLA's plan for the padded types.
/// Its padding crosses the wire as XLA's does; `padding_as_xla` says whether every tile of
/// the path is XLA's ceil(n_d / k) (P_d / k == ceil(n_d / k) for every count k > 1 of d),
/// so that the model moves exactly XLA's bytes. Where it is false the model's tiles differ
/// from XLA's (n = 7 with counts 2 and 3 along the path: P = 12, tiles of 6 and 4 where
/// XLA's are 4 and 3), and so do its bytes: it may pad more, and where XLA's tiles do not
/// nest it slices locally where XLA exchanges halos (PadFromPartialReplicateShape). The
/// benchmarks time XLA only where it is true.
struct xla_padded {
  dist_type source, target;  ///< the padded types `prog` runs between
  xla_plan plan;
  program prog;
  bool padding_as_xla = true;
};

/// xla_padded_program for XLA generation `v`.
inline xla_padded xla_version_padded_program(const device_mesh& m, const dist_type& a, const dist_type& b,
                                             xla_version v, std::uint64_t element_bytes = 4) {
  if (element_bytes == 0) throw redist_error(errc::bad_size, "element size must be at least 1 byte");
  if (auto e = check_same_global(a, b); !e.ok()) throw redist_error(e);
  std::uint64_t L[max_dims]{}, base[max_dims]{};
  for (int d = 0; d < a.rank; ++d) {
    L[d] = std::lcm(parts(m, a.dims[d]), parts(m, b.dims[d]));
    base[d] = a.dims[d].global;
  }
  for (int round = 0; round < 8; ++round) {
    xla_padded out{a, b, {}, {}, true};
    for (int d = 0; d < a.rank; ++d) {
      const std::uint64_t n = a.dims[d].global, padded = (n + L[d] - 1) / L[d] * L[d];
      out.source.dims[d].global = out.target.dims[d].global = padded;
    }
    const weak_problem p = make_weak_problem(m, out.source, out.target).get();
    out.plan = xla_path(m, out.source, out.target, p, v, base);
    // Every shard count of every dimension along the path.
    bool grew = false;
    auto visit = [&](const shape& s) {
      for (int d = 0; d < s.rank; ++d) {
        const std::uint64_t k = s.parts[d], n = a.dims[d].global, padded = out.source.dims[d].global;
        if (k > 1 && padded / k != (n + k - 1) / k) out.padding_as_xla = false;
        if (L[d] % k != 0) {
          L[d] = std::lcm(L[d], k);
          grew = true;
        }
      }
    };
    visit(p.source);
    for (const weak_step& st : out.plan.path) visit(st.after);
    if (grew) continue;  // a count the first padding did not divide: pad again (the path depends on counts only)
    out.prog = xla_detail::lower_xla(m, out.source, out.target, p, out.plan, element_bytes);
    return out;
  }
  throw redist_error(errc::rule, "xla baseline: internal error: the padding did not settle");
}

/// Today's XLA on types the mesh need not divide (see xla_padded).
inline xla_padded xla_padded_program(const device_mesh& m, const dist_type& a, const dist_type& b,
                                     std::uint64_t element_bytes = 4) {
  return xla_version_padded_program(m, a, b, xla_version::current, element_bytes);
}

}  // namespace redist::baselines
