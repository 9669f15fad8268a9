// benchmarks/baselines/xla_2022.hpp -- the `xla-2022` baseline: the XLA SPMD partitioner's
// resharding as the paper measured it, kept for the paper's figures (DESIGN.md section 6).
// Use the `xla` baseline (baselines/xla.hpp) for any claim about XLA today.
//
// What the paper compared against. Seed 000 (Sec. 8, RQ2) ran its programs against XLA's
// SPMD partitioner at tensorflow/tensorflow 8c6d9ae2b497ac99ec0b5a4a9a537d4f66e5e678
// (tensorflow/compiler/xla/service/spmd/spmd_partitioner.cc), describing it as hand-crafted
// heuristics "that attempt, e.g., to synthesize alltoall sequences or to detect cases directly
// implementable via allpermute) with a fallback to allgather and dynslice". Its Fig. 13 agrees:
// P1 (a partially replicated source to a tiled target) is an all-gather and a dynamic-slice,
// P4 (to a partially replicated target) is a permute and an all-gather. That commit is not
// in the stored sources; the model follows PartitionedHlo::ReshardNoCache of a stored copy of
// the same period (tensorflow/tensorflow 00cc108593130db39e06b1d644aabba086a20ed9, the
// absl::optional era; an older stored copy reads the same), which has the order of patterns
// the paper's Fig. 13 needs:
//   (1) same shard counts, another device order: one collective-permute;
//   (2) GetReshardAllToAllSourceTargetDims: one all-to-all per pair of dimensions, in
//       sequence ("an axis moves between dimensions"), then a permute if needed;
//   (3) partially replicated source: dynamic-slice (then a permute), or the shifted
//       partial-replicate all-to-all pattern;
//   (4) partially replicated target: a permute if needed, then all-gathers;
//   (5) otherwise all-gather to replicated, then dynamic-slice (DESIGN's "all-gather to
//       replicated then dynamic-slice").
// It has no TryComplexReshardHandling, no grouping of equal dimensions and no
// multi-dimension all-to-all: those are the patterns today's XLA added, and where the two
// differ (ComplexReshardSplit*, ReshardToASingleAllToAll, MultipleSourceTargetDimsInOneAllToAll*
// of spmd_partitioner_test.cc) xla-2022 all-gathers and slices, or issues one all-to-all per
// pair, where today's XLA issues one all-to-all. The code is baselines/xla.hpp's planner run
// with xla_version::y2022; its modelling notes (device order, padding, step counts) apply.
// One more difference from the 2022 code: AllGatherShards there gathered on a new leading
// dimension (one all-gather per dimension with per_dim_ag, as here; the paper's P4 mentions a
// single all-gather) — the bytes per all-gather are the same.
#pragma once

#include <cstdint>

#include "baselines/xla.hpp"

namespace redist::baselines {

/// The weak path of the 2022 XLA from `a` to `b` (p = make_weak_problem(m, a, b)).
inline xla_plan xla_2022_path(const device_mesh& m, const dist_type& a, const dist_type& b, const weak_problem& p) {
  return xla_path(m, a, b, p, xla_version::y2022);
}

/// The xla-2022 baseline's program from `a` to `b` (same conventions as xla_program).
inline program xla_2022_program(const device_mesh& m, const dist_type& a, const dist_type& b,
                                std::uint64_t element_bytes = 4) {
  return xla_version_program(m, a, b, xla_version::y2022, element_bytes);
}

/// The 2022 XLA on types the mesh need not divide (see xla_padded in baselines/xla.hpp).
inline xla_padded xla_2022_padded_program(const device_mesh& m, const dist_type& a, const dist_type& b,
                                          std::uint64_t element_bytes = 4) {
  return xla_version_padded_program(m, a, b, xla_version::y2022, element_bytes);
}

}  // namespace redist::baselines
