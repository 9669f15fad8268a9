// redist/lower/partial.hpp -- creating pending values: the local `partial` step (core/cost.hpp
// op::partial, core/rules.hpp rule_partial) that ends a plan whose target has pending axes
// the source does not have (DTensor's Replicate() -> Partial(), Shardy's unreduced axes).
//
// A plan from a to b reaches before_partial(a, b) (core/rules.hpp) -- b without those axes, so replicated
// along them -- by collectives (or an exchange), then one partial step over groups of the
// ranks that differ only along them: the first member of a group (all its coordinates
// along the new axes 0, the lowest rank) keeps its tile, the others take the reduction's
// identity (sum 0, prod 1); under max, min and avg every member keeps its tile. Nothing
// moves between ranks, and the reduction over every group gives back the replicated value,
// exactly, for every element type (DTensor divides by the group size instead, which is
// exact neither for integers nor for most floating-point values).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/rules.hpp"
#include "redist/program.hpp"

namespace redist {

/// The partial step from `from` (before_partial(a, b)) to b over mesh m, ranks 0..D-1: its
/// groups are the ranks that differ only along the new axes, each in rank order (the first
/// member keeps its tile), the groups in the order of their first members.
constexpr step partial_step(const device_mesh& m, const dist_type& from, const dist_type& b) {
  const std::uint64_t mask = new_pending_mask(from, b);
  std::vector<std::uint64_t> offsets{0};  // rank offsets of a group's members from its first
  for (int x = 0; x < m.nsub; ++x) {
    if (!((mask >> x) & 1)) continue;
    const std::size_t k = offsets.size();
    for (std::uint64_t c = 1; c < m.sub[x].size; ++c)
      for (std::size_t i = 0; i < k; ++i) offsets.push_back(offsets[i] + c * m.sub[x].stride);
  }
  std::sort(offsets.begin(), offsets.end());
  step s;
  s.kind = op::partial;
  s.parts = offsets.size();
  s.reduce = b.reduce;
  s.members.reserve(m.devices);
  for (std::uint64_t r = 0; r < m.devices; ++r) {
    bool first = true;  // every coordinate along the new axes is 0
    for (int x = 0; x < m.nsub && first; ++x) first = !((mask >> x) & 1) || m.coord(x, r) == 0;
    if (first)
      for (std::uint64_t o : offsets) s.members.push_back(static_cast<rank_t>(r + o));
  }
  s.after = shape_of(m, b);
  s.local_after = local_size(m, b);
  s.cost = 0;
  s.type_after = b;
  s.type_exact = true;
  return s;
}

/// End program p (from a to before_partial(a, b), ranks 0..D-1) with the partial step that
/// creates b's new pending axes; p is unchanged when b has none.
constexpr void append_partial(program& p, const dist_type& b) {
  if (new_pending_mask(p.target, b) == 0) return;
  p.steps.push_back(partial_step(p.m, p.target, b));
  p.target = b;
}

}  // namespace redist
