// redist/search/constexpr_search.hpp -- the compile-time search: Dijkstra over the same
// implicit weak graph (weak_graph.hpp), written for constant evaluation (transient
// std::vector storage, a binary heap, linear-probing node lookup).
#pragma once

#include <cstdint>
#include <vector>

#include "redist/search/tight_paths.hpp"
#include "redist/search/weak_graph.hpp"

namespace redist {

/// Shortest path from p.source to p.target (Dijkstra on the reduced weights, as the
/// run-time search); usable in constant expressions.
constexpr weak_plan search_constexpr(const weak_problem& p) {
  struct node {
    shape s{};
    std::uint64_t h = 0;  // potential
    path_cost dist = path_cost::infinity();
    std::size_t pred = 0;
    weak_step via{};
    bool done = false;
  };
  std::vector<node> nodes;
  std::vector<std::size_t> table(1024, SIZE_MAX);  // open addressing over node ids
  auto hash = [](const shape& s) {
    std::uint64_t h = 1469598103934665603ULL ^ s.sums;
    for (int d = 0; d < s.rank; ++d) h = (h ^ s.parts[d]) * 1099511628211ULL;
    return h;
  };
  auto intern = [&](const shape& s) -> std::size_t {
    if (nodes.size() * 2 >= table.size()) {  // grow and rehash
      std::vector<std::size_t> t2(table.size() * 2, SIZE_MAX);
      for (std::size_t id = 0; id < nodes.size(); ++id) {
        std::size_t h = hash(nodes[id].s) & (t2.size() - 1);
        while (t2[h] != SIZE_MAX) h = (h + 1) & (t2.size() - 1);
        t2[h] = id;
      }
      table = t2;
    }
    std::size_t h = hash(s) & (table.size() - 1);
    while (table[h] != SIZE_MAX) {
      if (nodes[table[h]].s == s) return table[h];
      h = (h + 1) & (table.size() - 1);
    }
    table[h] = nodes.size();
    nodes.push_back(node{s, p.heuristic(s)});
    return nodes.size() - 1;
  };
  // Binary min-heap of (dist, id); stale entries are skipped.
  struct entry { path_cost d; std::size_t id; };
  std::vector<entry> heap;
  auto less = [](const entry& a, const entry& b) { return a.d < b.d || (!(b.d < a.d) && a.id < b.id); };
  auto push = [&](entry e) {
    heap.push_back(e);
    for (std::size_t i = heap.size() - 1; i > 0;) {
      std::size_t up = (i - 1) / 2;
      if (!less(heap[i], heap[up])) break;
      entry t = heap[i]; heap[i] = heap[up]; heap[up] = t;
      i = up;
    }
  };
  auto pop = [&]() {
    entry top = heap[0];
    heap[0] = heap.back();
    heap.pop_back();
    for (std::size_t i = 0;;) {
      std::size_t l = 2 * i + 1, r = l + 1, m = i;
      if (l < heap.size() && less(heap[l], heap[m])) m = l;
      if (r < heap.size() && less(heap[r], heap[m])) m = r;
      if (m == i) break;
      entry t = heap[i]; heap[i] = heap[m]; heap[m] = t;
      i = m;
    }
    return top;
  };

  weak_plan plan;
  const std::size_t s = intern(p.source);
  const std::size_t t = intern(p.target);
  nodes[s].dist = path_cost{0, p.ctx.local_size(p.source), 0};
  push(entry{nodes[s].dist, s});
  while (!heap.empty()) {
    entry e = pop();
    if (nodes[e.id].done || nodes[e.id].dist < e.d) continue;
    nodes[e.id].done = true;
    ++plan.nodes_visited;
    if (e.id == t) break;
    const shape cur = nodes[e.id].s;
    const path_cost base = nodes[e.id].dist;
    const std::uint64_t hcur = nodes[e.id].h;
    for_each_successor(p, cur, [&](const weak_edge& edge, const shape& next, const path_cost& w) {
      std::size_t v = intern(next);
      path_cost nd = base + p.reduced(hcur, nodes[v].h, w);
      if (nd < nodes[v].dist) {
        nodes[v].dist = nd;
        nodes[v].pred = e.id;
        nodes[v].via = weak_step{edge, next, w};
        push(entry{nd, v});
      }
    });
  }
  if (!nodes[t].done) return plan;
  plan.found = true;
  plan.total = nodes[t].dist;
  plan.total = p.unreduced(plan.total);
  const path_cost goal = nodes[t].dist;
  for (std::size_t v = t; v != s; v = nodes[v].pred) plan.steps.push_back(nodes[v].via);
  for (std::size_t i = 0, j = plan.steps.size(); i + 1 < j; ++i, --j) {
    weak_step tmp = plan.steps[i]; plan.steps[i] = plan.steps[j - 1]; plan.steps[j - 1] = tmp;
  }
  plan.ties = tight_paths(
      p, goal,
      [&](const shape& x) {
        std::size_t h = hash(x) & (table.size() - 1);
        while (table[h] != SIZE_MAX) {
          if (nodes[table[h]].s == x) return node_info{nodes[table[h]].dist, nodes[table[h]].h, table[h]};
          h = (h + 1) & (table.size() - 1);
        }
        return node_info{};
      },
      tie_enumeration_limit(p.ctx.devices), 20000);
  return plan;
}

}  // namespace redist
