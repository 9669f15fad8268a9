// redist/lower/fuse.hpp -- fused collectives (program.hpp; docs/reference.md "Fused
// collectives"): two adjacent allgathers on different dimensions, or two adjacent alltoalls
// on four different dimensions, become one collective over the union of their groups, where
// the time model predicts the one faster than the two (one latency instead of two, the
// per-peer term of the larger group; the executor moves a fused step in pieces, one
// collective each, and on small tiles in two: core/time_model.hpp fused_step_seconds). The peers emit such steps: Shardy gathers several
// dimensions in one all-gather, XLA moves several dimensions in one all-to-all.
//
// Fusing a then b (b's digits more significant): the fused group of rank r lists, for every
// member q of b's group of r in order, the members of a's group of q in order. Data: after a
// then b, r holds at digits (kb, ka) the tile of a's group of b's group member kb, member
// ka: exactly the fused allgather. For alltoalls, r's chunk along a's split dimension is
// chosen by r's position in a's group, and b's members must share it (true when groups
// follow mesh axes); then r receives from the member at (kb, ka) its chunk at r's digits and
// places it at (kb, ka): exactly the fused alltoall. The groups must fuse into one partition
// that every member sees alike; otherwise the steps stay as they are.
//
// Fusing changes neither what any rank holds after the pair nor what it receives (an
// allgather over n members receives n - 1 tiles either way); it removes one latency and the
// intermediate tile, and Fig. 11 charges the fused step once. Only the time objective fuses:
// the paper's programs (objective::bytes) keep one dimension per collective.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "redist/core/cost.hpp"
#include "redist/core/time_model.hpp"
#include "redist/program.hpp"

namespace redist {

/// The larger of a program's first and last tile, in elements: what bounds the pieces the
/// executor moves a packed step in (core/time_model.hpp pack_piece_elements).
constexpr std::uint64_t end_tile_elements(const program& p) {
  const std::uint64_t first = local_size(p.m, p.source);
  return p.steps.empty() ? first : std::max(first, p.steps.back().local_after);
}

namespace detail {

/// Whether the dimensions of a (earlier) and b fuse: an allgather's concat dimensions all
/// differ; an alltoall's concat and split dimensions all differ.
constexpr bool fusable_dims(const step& a, const step& b) {
  if (a.kind != b.kind || (a.kind != op::allgather && a.kind != op::alltoall)) return false;
  step_grid used = a.concat_dims();
  const step_grid as = a.split_dims(), bc = b.concat_dims(), bs = b.split_dims();
  for (int q = 0; q < as.n; ++q) used.push(as.dim[q], as.parts[q]);
  for (int q = 0; q < bc.n; ++q)
    if (used.has(bc.dim[q])) return false;
  for (int q = 0; q < bs.n; ++q)
    if (used.has(bs.dim[q]) || bc.has(bs.dim[q])) return false;
  return true;
}

/// Predicted picoseconds of the fused step (in pieces, core/time_model.hpp
/// fused_step_seconds) and of the two steps it replaces (the search's unit), for steps of
/// kind k: a over n_a members from `before` to `mid` elements, b over n_b members from `mid`
/// to `after`, in a program whose larger end tile holds `in_out` elements.
struct fuse_times {
  std::uint64_t fused = 0, apart = 0;
  [[nodiscard]] constexpr bool faster() const { return fused < apart; }
};
constexpr fuse_times fuse_prediction(const time_profile& P, op k, std::uint64_t na, std::uint64_t nb,
                                     std::uint64_t before, std::uint64_t mid, std::uint64_t after,
                                     std::uint64_t element_bytes, std::uint64_t in_out) {
  fuse_times t;
  t.fused = picoseconds(fused_step_seconds(P, k, na * nb, before, after, element_bytes, in_out));
  const std::uint64_t x = picoseconds(step_seconds(P, k, na, before, mid, element_bytes)),
                      y = picoseconds(step_seconds(P, k, nb, mid, after, element_bytes));
  t.apart = x > UINT64_MAX - y ? UINT64_MAX : x + y;
  return t;
}

/// Whether the executor's pieces of a fused step of kind k over n members stay within their
/// budget (core/time_model.hpp pack_budget_bytes): a piece holds at least one element of
/// each of the n blocks, so n elements must fit in it. Where they do not (an all-to-all of
/// a tile shorter than 2n elements), its send and receive pieces together may reach twice
/// the tile: within the executor's 2x max(in, out) only when the fused step is the whole
/// program (`alone`); beside another step's buffer (a permute's tile) they would exceed it.
constexpr bool pieces_fit(op k, std::uint64_t n, std::uint64_t element_bytes, std::uint64_t in_out, bool alone) {
  const std::uint64_t e = element_bytes > 0 ? element_bytes : 1;
  return alone || n <= pack_budget_bytes(in_out, e, k != op::alltoall) / e;
}

/// The members of the fused step of a then b over D ranks, or empty if they do not fuse.
constexpr std::vector<rank_t> fused_members(const step& a, const step& b, std::uint64_t D) {
  const std::uint64_t na = a.parts, nb = b.parts;
  if (na == 0 || nb == 0 || a.members.size() != D || b.members.size() != D) return {};
  std::vector<std::uint64_t> ga(D, 0), pa(D, 0), gb(D, 0), pb(D, 0);  // group and position
  for (std::uint64_t i = 0; i < D; ++i) {
    ga[a.members[i]] = i / na;
    pa[a.members[i]] = i % na;
    gb[b.members[i]] = i / nb;
    pb[b.members[i]] = i % nb;
  }
  const bool alltoall = a.kind == op::alltoall;
  std::vector<rank_t> out;
  out.reserve(D);
  std::vector<char> done(D, 0);
  for (std::uint64_t r = 0; r < D; ++r) {
    if (done[r]) continue;
    const std::size_t at = out.size();
    const auto bg = b.group(gb[r]);
    for (std::uint64_t kb = 0; kb < nb; ++kb) {
      const auto ag = a.group(ga[bg[kb]]);
      for (std::uint64_t ka = 0; ka < na; ++ka) {
        if (done[ag[ka]]) return {};
        done[ag[ka]] = 1;
        out.push_back(ag[ka]);
      }
    }
    // Every member x, at (kb, ka), sees the same list: x is member kb of its b group, whose
    // member kb' lies in the a group listed at kb' (and, for alltoalls, at x's position).
    for (std::uint64_t i = 0; i < nb * na; ++i) {
      const rank_t x = out[at + i];
      if (pb[x] != i / na) return {};
      const auto xg = b.group(gb[x]);
      for (std::uint64_t kb = 0; kb < nb; ++kb)
        if (ga[xg[kb]] != ga[out[at + kb * na]] || (alltoall && pa[xg[kb]] != pa[x])) return {};
    }
  }
  return out;
}

/// The grid of b's pairs, then a's.
constexpr step_grid joined(const step_grid& b, const step_grid& a) {
  step_grid g = b;
  for (int q = 0; q < a.n; ++q) g.push(a.dim[q], a.parts[q]);
  return g;
}

}  // namespace detail

/// Fuse adjacent collectives of an even program where the time model under profile P
/// predicts the fused step faster and its pieces fit their budget (detail::pieces_fit;
/// greedily, first to last; a fused step fuses on with the next). path_rank (lower.hpp)
/// ranks a path as if every faster fusion were made: a bound the lowering never beats.
/// Recomputes the program's Fig. 11 cost and height.
constexpr void fuse_collectives(program& prog, const time_profile& P, std::uint64_t element_bytes) {
  if (prog.steps.size() < 2 || prog.uneven()) return;
  const std::uint64_t D = prog.m.devices, in_out = end_tile_elements(prog);
  std::vector<step> out;
  std::uint64_t local = local_size(prog.m, prog.source), before_last = local;
  for (step& s : prog.steps) {
    if (!out.empty() && detail::fusable_dims(out.back(), s)) {
      step& a = out.back();
      if (detail::pieces_fit(s.kind, a.parts * s.parts, element_bytes, in_out, prog.steps.size() == 2) &&
          detail::fuse_prediction(P, s.kind, a.parts, s.parts, before_last, a.local_after, s.local_after,
                                  element_bytes, in_out)
              .faster()) {
        std::vector<rank_t> members = detail::fused_members(a, s, D);
        if (!members.empty()) {
          step f = s;
          f.members = std::move(members);
          f.parts = a.parts * s.parts;
          f.concat_grid = detail::joined(s.concat_dims(), a.concat_dims());
          if (s.kind == op::alltoall) f.split_grid = detail::joined(s.split_dims(), a.split_dims());
          f.concat_dim = f.split_dim = -1;
          f.cost = cost_elements(s.kind, before_last, s.local_after);
          local = s.local_after;
          a = std::move(f);
          continue;
        }
      }
    }
    before_last = local;
    local = s.local_after;
    out.push_back(std::move(s));
  }
  prog.steps = std::move(out);
  prog.cost_elements = 0;
  prog.peak_local_elements = local_size(prog.m, prog.source);
  for (const step& s : prog.steps) {
    prog.cost_elements += s.cost;
    prog.peak_local_elements = std::max(prog.peak_local_elements, s.local_after);
  }
}

}  // namespace redist
