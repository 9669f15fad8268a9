// redist/lower/partial.hpp -- creating pending values: the local `partial` step (core/cost.hpp
// op::partial, core/rules.hpp rule_partial) that ends a plan whose target has pending axes
// the source does not have (DTensor's Replicate() -> Partial(), Shardy's unreduced axes).
//
// A plan from a to b reaches before_partial(a, b) (core/rules.hpp) -- b without those axes, so
// replicated along them -- by collectives (or an exchange), then one partial step over groups
// of the ranks that differ only along them: the first member of a group (all its coordinates
// along the new axes 0, the lowest rank) keeps its tile, the others take the reduction's
// identity (sum 0, prod 1); under max, min and avg every member keeps its tile. Nothing moves
// between ranks, and the reduction over every group gives back the replicated value, exactly,
// for every element type (DTensor divides by the group size instead, which is exact neither
// for integers nor for most floating-point values).
//
// Padded (Shardy's sharded_to_unreduced): where a new pending axis partitions a dimension of
// the source, the plan may instead reach before_padded_partial(a, b), which keeps it there as
// a minor-most axis, and a padded partial step (concat_dim set) makes it pending: every member
// of a group places its tile at its block of the larger tile, as an allgather would, and
// writes the reduction's identity around it (sum 0, prod 1, max the least value, min the
// greatest; not avg). The planners lower both routes and keep the better program
// (search_program in lower/synthesize.hpp, plan_for in static/plan.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/rules.hpp"
#include "redist/program.hpp"

namespace redist {

namespace detail {
/// The ranks 0..D-1 in groups of those that differ only along the sub-axes xs[0..n): member
/// k of a group at mixed-radix offset k over xs (xs[0] varying fastest), or with rank_order
/// in rank order; the groups in the order of their first members (all coordinates along xs
/// 0), flattened.
constexpr std::vector<rank_t> groups_along(const device_mesh& m, const std::uint8_t* xs, int n, bool rank_order) {
  std::vector<std::uint64_t> offsets{0};  // rank offsets of a group's members from its first
  std::uint64_t mask = 0;
  for (int q = 0; q < n; ++q) {
    const auto& x = m.sub[xs[q]];
    mask |= std::uint64_t{1} << xs[q];
    const std::size_t k = offsets.size();
    for (std::uint64_t c = 1; c < x.size; ++c)
      for (std::size_t i = 0; i < k; ++i) offsets.push_back(offsets[i] + c * x.stride);
  }
  if (rank_order) std::sort(offsets.begin(), offsets.end());
  std::vector<rank_t> members;
  members.reserve(m.devices);
  for (std::uint64_t r = 0; r < m.devices; ++r) {
    bool first = true;
    for (int x = 0; x < m.nsub && first; ++x) first = !((mask >> x) & 1) || m.coord(x, r) == 0;
    if (first)
      for (std::uint64_t o : offsets) members.push_back(static_cast<rank_t>(r + o));
  }
  return members;
}
}  // namespace detail

/// The partial step from `from` (before_partial(a, b)) to b over mesh m, ranks 0..D-1: its
/// groups are the ranks that differ only along the new axes, each in rank order (the first
/// member keeps its tile), the groups in the order of their first members.
constexpr step partial_step(const device_mesh& m, const dist_type& from, const dist_type& b) {
  const std::uint64_t mask = new_pending_mask(from, b);
  std::uint8_t xs[max_subaxes]{};
  int n = 0;
  step s;
  s.kind = op::partial;
  for (int x = 0; x < m.nsub; ++x)
    if ((mask >> x) & 1) {
      xs[n++] = static_cast<std::uint8_t>(x);
      s.parts *= m.sub[x].size;
    }
  s.members = detail::groups_along(m, xs, n, true);
  s.reduce = b.reduce;
  s.after = shape_of(m, b);
  s.local_after = local_size(m, b);
  s.cost = 0;
  s.type_after = b;
  s.type_exact = true;
  return s;
}

/// The padded partial step that makes the `count` minor-most axes of dimension d of `from`
/// pending by the reduction r (core/rules.hpp rule_partial_padded), ranks 0..D-1: its groups
/// are the ranks that differ only along those axes, member k the rank whose block along d is
/// the k-th of the group's (an allgather's order: the minor-most axis varies fastest), the
/// groups in the order of their first members.
constexpr step padded_partial_step(const device_mesh& m, const dist_type& from, int d, int count, reduction r) {
  const result<dist_type> t = rule_partial_padded(m, from, d, count, r);
  step s;
  s.kind = op::partial;
  s.concat_dim = d;
  s.members = detail::groups_along(m, from.dims[d].axes, count, false);
  for (int q = 0; q < count; ++q) s.parts *= m.sub[from.dims[d].axes[q]].size;
  s.reduce = r;
  s.type_after = t.value;
  s.after = shape_of(m, t.value);
  s.local_after = local_size(m, t.value);
  s.cost = 0;
  s.type_exact = true;
  return s;
}

/// End program p (ranks 0..D-1, from its source to before_partial(a, b) or
/// before_padded_partial(a, b)) with the partial steps that create b's new pending axes:
/// one padded step per dimension whose minor-most axes are new pending axes of b, then the
/// step for those that replicate; p is unchanged when b has none. The memory bound becomes
/// at least b's local size (eq. 4 bounds by the real target, whose tile a padded step
/// writes; a program to the type before it, such as an exchange, knows only that type).
constexpr void append_partial(program& p, const dist_type& b) {
  const std::uint64_t mask = new_pending_mask(p.target, b);
  if (mask == 0) return;
  p.memory_bound_elements = std::max(p.memory_bound_elements, local_size(p.m, b));
  for (int d = 0; d < p.target.rank; ++d) {
    int count = 0;
    while (count < p.target.dims[d].n && ((mask >> p.target.dims[d].axes[count]) & 1)) ++count;
    if (count == 0) continue;
    step s = padded_partial_step(p.m, p.target, d, count, b.reduce);
    p.target = s.type_after;
    p.peak_local_elements = std::max(p.peak_local_elements, s.local_after);
    p.steps.push_back(std::move(s));
  }
  if (new_pending_mask(p.target, b) != 0) p.steps.push_back(partial_step(p.m, p.target, b));
  p.target = b;
}

/// The type a plan reaches before its partial steps (problem option pad_pending).
constexpr dist_type partial_reach(const device_mesh& m, const dist_type& a, const dist_type& b, bool padded) {
  return padded ? before_padded_partial(m, a, b) : before_partial(a, b);
}

}  // namespace redist
