// redist/search/tight_paths.hpp -- enumerate the shortest paths of a finished search.
//
// Weak plans of equal (cost, height, steps) can lower to programs of different cost:
// one may end with exactly the target's device assignment, another may need the final
// allpermute (paper Sec. 7.3). Both searches therefore hand the lowering every shortest
// path they can cheaply enumerate: a depth-first walk from the source along "tight"
// edges (dist(next) == dist(cur) + w), bounded in paths and expansions.
#pragma once

#include <cstddef>
#include <vector>

#include "redist/search/weak_graph.hpp"

namespace redist {

namespace detail {
template <class DistOf>
constexpr void tight_dfs(const weak_problem& p, const shape& cur, const path_cost& dcur, const path_cost& goal,
                         DistOf& dist_of, std::vector<weak_step>& path, std::vector<std::vector<weak_step>>& out,
                         std::size_t max_paths, std::size_t& budget) {
  if (cur == p.target) {
    if (dcur == goal) out.push_back(path);
    return;
  }
  for_each_successor(p, cur, [&](const weak_edge& e, const shape& next, const path_cost& w) {
    if (out.size() >= max_paths || budget == 0) return;
    --budget;
    const path_cost dn = dcur + w;
    if (goal < dn || !(dist_of(next) == dn)) return;
    if (dn == goal && !(next == p.target)) return;
    path.push_back(weak_step{e, next, w});
    tight_dfs(p, next, dn, goal, dist_of, path, out, max_paths, budget);
    path.pop_back();
  });
}
}  // namespace detail

/// Shortest paths from p.source to p.target, given the distances a search computed
/// (`dist_of(shape)` returns the settled or tentative distance, infinity if unseen).
/// At most `max_paths` paths, at most `max_expansions` edges examined.
template <class DistOf>
constexpr std::vector<std::vector<weak_step>> tight_paths(const weak_problem& p, const path_cost& goal, DistOf dist_of,
                                                          std::size_t max_paths, std::size_t max_expansions) {
  std::vector<std::vector<weak_step>> out;
  std::vector<weak_step> path;
  std::size_t budget = max_expansions;
  detail::tight_dfs(p, p.source, path_cost{0, p.ctx.local_size(p.source), 0}, goal, dist_of, path, out, max_paths,
                    budget);
  return out;
}

/// How many tied paths to hand to the lowering: each lowering attempt costs O(devices).
constexpr std::size_t tie_limit(std::uint64_t devices) {
  std::uint64_t n = devices ? 4096 / devices : 32;
  return n < 2 ? 2 : n > 32 ? 32 : static_cast<std::size_t>(n);
}

}  // namespace redist
