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

/// What a search knows of a node: its distance (on reduced weights; infinity if never
/// reached) and its potential.
struct node_info {
  path_cost dist = path_cost::infinity();
  std::uint64_t potential = 0;
};

namespace detail {
template <class Lookup>
constexpr void tight_dfs(const weak_problem& p, const shape& cur, const node_info& at, const path_cost& goal,
                         Lookup& lookup, std::vector<weak_step>& path, std::vector<std::vector<weak_step>>& out,
                         std::size_t max_paths, std::size_t& budget) {
  if (cur == p.target) {
    if (at.dist == goal) out.push_back(path);
    return;
  }
  for_each_successor(p, cur, [&](const weak_edge& e, const shape& next, const path_cost& w) {
    if (out.size() >= max_paths || budget == 0) return;
    --budget;
    node_info n = lookup(next);
    if (n.dist == path_cost::infinity()) return;
    const path_cost dn = at.dist + weak_problem::reduced(at.potential, n.potential, w);
    if (goal < dn || !(n.dist == dn)) return;
    if (dn == goal && !(next == p.target)) return;
    path.push_back(weak_step{e, next, w});
    tight_dfs(p, next, node_info{dn, n.potential}, goal, lookup, path, out, max_paths, budget);
    path.pop_back();
  });
}
}  // namespace detail

/// Shortest paths from p.source to p.target, given what a search computed on reduced
/// weights (weak_problem::reduced): `lookup(shape)` returns the node's node_info, and
/// `goal` is the target's distance. At most `max_paths` paths, at most `max_expansions`
/// edges examined.
template <class Lookup>
constexpr std::vector<std::vector<weak_step>> tight_paths(const weak_problem& p, const path_cost& goal, Lookup lookup,
                                                          std::size_t max_paths, std::size_t max_expansions) {
  std::vector<std::vector<weak_step>> out;
  std::vector<weak_step> path;
  std::size_t budget = max_expansions;
  detail::tight_dfs(p, p.source, lookup(p.source), goal, lookup, path, out, max_paths, budget);
  return out;
}

/// How many tied paths to hand to the lowering: each lowering attempt costs O(devices).
constexpr std::size_t tie_limit(std::uint64_t devices) {
  std::uint64_t n = devices ? 4096 / devices : 32;
  return n < 2 ? 2 : n > 32 ? 32 : static_cast<std::size_t>(n);
}

}  // namespace redist
