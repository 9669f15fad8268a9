// redist/search/tight_paths.hpp -- enumerate the shortest paths of a finished search.
//
// Weak plans of equal (cost, height, steps) can lower to programs of different cost:
// one may end with exactly the target's device assignment, another may need the final
// allpermute (paper Sec. 7.3). Both searches therefore hand the lowering every shortest
// path they can cheaply enumerate: a depth-first walk from the source along "tight"
// edges (dist(next) == dist(cur) + w), bounded in paths and expansions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "redist/search/weak_graph.hpp"

namespace redist {

/// What a search knows of a node: its distance (on reduced weights; infinity if never
/// reached), its potential and its number in the search (SIZE_MAX if never reached).
struct node_info {
  path_cost dist = path_cost::infinity();
  std::uint64_t potential = 0;
  std::size_t id = SIZE_MAX;
};

namespace detail {
/// The depth-first walk of tight_paths. Returns true when the walk below `cur` was complete
/// and found no path: such a node is marked in `dead` (by its id) and not walked again when
/// another tight path reaches it, so that the walk costs the tight edges once each rather
/// than once per path into them.
template <class Lookup>
constexpr bool tight_dfs(const weak_problem& p, const shape& cur, const node_info& at, const path_cost& goal,
                         Lookup& lookup, std::vector<weak_step>& path, std::vector<std::vector<weak_step>>& out,
                         std::size_t max_paths, std::size_t& budget, std::vector<std::uint8_t>& dead) {
  if (cur == p.target) {
    if (at.dist == goal) out.push_back(path);
    return !(at.dist == goal);
  }
  bool none = true;
  for_each_successor(p, cur, [&](const weak_edge& e, const shape& next, const path_cost& w) {
    if (out.size() >= max_paths || budget == 0) {
      none = false;  // not walked to the end
      return;
    }
    --budget;
    node_info n = lookup(next);
    if (n.dist == path_cost::infinity()) return;
    if (n.id < dead.size() && dead[n.id]) return;
    const path_cost dn = at.dist + p.reduced(at.potential, n.potential, w);
    if (goal < dn || !(n.dist == dn)) return;
    if (dn == goal && !(next == p.target)) return;
    path.push_back(weak_step{e, next, w});
    const bool empty = tight_dfs(p, next, node_info{dn, n.potential, n.id}, goal, lookup, path, out, max_paths, budget, dead);
    path.pop_back();
    if (!empty) {
      none = false;
    } else if (n.id != SIZE_MAX) {
      if (n.id >= dead.size()) dead.resize(n.id + 1, 0);
      dead[n.id] = 1;
    }
  });
  return none;
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
  std::vector<std::uint8_t> dead;
  std::size_t budget = max_expansions;
  detail::tight_dfs(p, p.source, lookup(p.source), goal, lookup, path, out, max_paths, budget, dead);
  return out;
}

namespace detail {
/// near_paths' default key of a prefix: its weights' keys summed.
struct sum_key {
  constexpr std::uint64_t operator()(const std::vector<weak_step>&, std::uint64_t sum) const { return sum; }
};

template <class F, class K>
constexpr void near_dfs(const weak_problem& p, const shape& cur, std::uint64_t g, const std::uint64_t& budget,
                        std::size_t min_len, std::size_t max_len, std::vector<weak_step>& path, F& on_path, K& key_of,
                        std::size_t& paths, std::size_t& expansions) {
  if (cur == p.target) {
    if (path.size() < min_len) return;
    --paths;
    if (!on_path(path, g)) paths = 0;
    return;
  }
  if (path.size() >= max_len) return;
  const weak_edge last = path.empty() ? weak_edge{} : path.back().edge;
  for_each_successor(p, cur, [&](const weak_edge& e, const shape& next, const path_cost& w) {
    if (paths == 0 || expansions == 0) return;
    --expansions;
    // One order for commuting dynslices: ascending dimensions, one per dimension.
    if (!path.empty() && last.kind == op::dynslice && e.kind == op::dynslice && e.to <= last.to) return;
    const std::uint64_t k = p.key(w), sum = g > UINT64_MAX - k ? UINT64_MAX : g + k;
    if constexpr (std::is_same_v<K, sum_key>) {  // pruned before the step is pushed
      if (sum > budget || sum + p.key_potential(next) > budget) return;
      path.push_back(weak_step{e, next, w});
      near_dfs(p, next, sum, budget, min_len, max_len, path, on_path, key_of, paths, expansions);
    } else {
      path.push_back(weak_step{e, next, w});
      const std::uint64_t gn = key_of(path, sum);
      if (gn <= budget && gn + p.key_potential(next) <= budget)
        near_dfs(p, next, gn, budget, min_len, max_len, path, on_path, key_of, paths, expansions);
    }
    path.pop_back();
  });
}
}  // namespace detail

/// Call on_path(path, key) for weak paths from p.source to p.target whose key (the
/// objective's first component: picoseconds or Fig. 11 cost, weak_problem::key) is at most
/// `budget`, of `min_len` to `max_len` steps (not only shortest ones), depth first in the
/// successor order and pruned with the potential (weak_problem::key_potential); at most `max_paths` paths and
/// `max_expansions` edges examined. on_path returns false to stop; it may lower `budget`
/// (read by reference) to prune the rest of the walk. Returns the expansions left.
/// `key_of(path, sum)` gives the key of a prefix whose weights' keys add up to `sum`
/// (default: the sum); the lowering passes the predicted time with the fusions it will make
/// (detail::path_rank), so that steps that fuse into one are walked at their fused price.
template <class F, class K = detail::sum_key>
constexpr std::size_t near_paths(const weak_problem& p, const std::uint64_t& budget, std::size_t min_len,
                                 std::size_t max_len, std::size_t max_paths, std::size_t max_expansions, F on_path,
                                 K key_of = {}) {
  std::vector<weak_step> path;
  std::size_t paths = max_paths, expansions = max_expansions;
  if (paths > 0) detail::near_dfs(p, p.source, 0, budget, min_len, max_len, path, on_path, key_of, paths, expansions);
  return expansions;
}

/// How many tied paths the lowering lowers at most: each lowering attempt costs O(devices).
constexpr std::size_t tie_limit(std::uint64_t devices) {
  std::uint64_t n = devices ? 4096 / devices : 32;
  return n < 2 ? 2 : n > 32 ? 32 : static_cast<std::size_t>(n);
}

/// How many tied paths the searches enumerate for the lowering to rank before it lowers the
/// best tie_limit of them: ranking a path costs O(its steps), and ties of equal weight in the
/// weak graph differ in what the lowering fuses. At least 16, where tie_limit is small (more
/// than 256 devices).
constexpr std::size_t tie_enumeration_limit(std::uint64_t devices) {
  const std::size_t n = tie_limit(devices);
  return n < 16 ? 16 : n;
}

}  // namespace redist
