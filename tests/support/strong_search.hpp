// tests/support/strong_search.hpp -- an exhaustive reference search over *syntactic*
// types with the strong typing rules of Fig. 8 (for the near-optimality test, Theorem
// 6.7), written independently of search/ and lower/.
//
// Nodes are all well-formed types (every ordering of prime sub-axes over the dimensions)
// of one global shape whose local size is within a bound. Edges are the strong rules of
// core/rules.hpp in their multi-axis forms:
//   allgather of the k minor-most axes of a dimension,
//   dynslice of any ordered sequence of unused sub-axes into a dimension,
//   alltoall of the k minor-most axes of a dimension to another dimension,
//   allpermute to every other type of the same local shape (T-Permute),
// and, for partial sums (an extension), allreduce of any nonempty set of pending-sum axes
// and reducescatter of any ordered sequence of them onto a dimension; weighted by Fig. 11
// (core/cost.hpp). Plain Dijkstra on cost. Meant for small meshes (up to ~4 prime
// sub-axes); the node count grows like (dims + sub-axes)^sub-axes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/rules.hpp"

namespace redist::testing {

/// A canonical key of a syntactic type (its dimensions' sub-axis lists).
inline std::string type_key(const dist_type& t) {
  std::string k;
  for (int d = 0; d < t.rank; ++d) {
    k += static_cast<char>('0' + t.dims[d].n);
    for (int i = 0; i < t.dims[d].n; ++i) k += static_cast<char>('A' + t.dims[d].axes[i]);
    k += '|';
  }
  for (int i = 0; i < t.nsum; ++i) k += static_cast<char>('a' + t.sum[i]);
  return k;
}

/// Every well-formed type with the global shape of `global` (its partitioning ignored)
/// and local size at most `bound`: each prime sub-axis either unused or placed at any
/// position of any dimension's list, or, if its bit is set in `may_sum`, a pending sum.
inline std::vector<dist_type> enumerate_types(const device_mesh& m, const dist_type& global,
                                              std::uint64_t bound = UINT64_MAX, std::uint64_t may_sum = 0) {
  dist_type t = global;
  for (int d = 0; d < t.rank; ++d) t.dims[d].n = 0;
  t.nsum = 0;
  std::vector<dist_type> out;
  std::function<void(int)> place = [&](int k) {
    if (k == m.nsub) {
      if (check(m, t).ok() && local_size(m, t) <= bound) out.push_back(t);
      return;
    }
    place(k + 1);                             // unused
    if (may_sum & (std::uint64_t{1} << k)) {  // a pending sum (ids ascending: k is the largest so far)
      t.sum[t.nsum++] = static_cast<std::uint8_t>(k);
      place(k + 1);
      --t.nsum;
    }
    for (int d = 0; d < t.rank; ++d) {
      dim& dm = t.dims[d];
      if (dm.global % (parts(m, dm) * m.sub[k].size) != 0) continue;
      for (int pos = 0; pos <= dm.n; ++pos) {
        for (int q = dm.n; q > pos; --q) dm.axes[q] = dm.axes[q - 1];
        dm.axes[pos] = static_cast<std::uint8_t>(k);
        ++dm.n;
        place(k + 1);
        --dm.n;
        for (int q = pos; q < dm.n; ++q) dm.axes[q] = dm.axes[q + 1];
      }
    }
  };
  place(0);
  return out;
}

/// Bit k set iff sub-axis k is a pending-sum axis of t.
inline std::uint64_t sum_mask(const dist_type& t) {
  std::uint64_t u = 0;
  for (int i = 0; i < t.nsum; ++i) u |= std::uint64_t{1} << t.sum[i];
  return u;
}

struct strong_step {
  op kind = op::dynslice;
  dist_type after{};
  std::uint64_t cost = 0;
};

struct strong_result {
  bool found = false;
  std::uint64_t cost = 0;         ///< minimal cost (Fig. 11), elements per device
  std::vector<strong_step> path;  ///< one optimal sequence
  std::size_t nodes = 0;          ///< types in the graph
  std::size_t permutes = 0;       ///< allpermute steps on the returned path
};

/// Minimal-cost strong sequence from `a` to `b` whose every type has local size at most
/// `bound` (default: max(localsize(a), localsize(b)), eq. 4).
inline strong_result strong_search(const device_mesh& m, const dist_type& a, const dist_type& b,
                                   std::uint64_t bound = 0) {
  strong_result res;
  if (bound == 0) bound = std::max(local_size(m, a), local_size(m, b));
  // With partial sums, any sub-axes may be pending sums (an allpermute may trade them), as
  // long as their number of partials divides the source's.
  std::vector<dist_type> types;
  for (const dist_type& t : enumerate_types(m, a, bound, a.nsum ? (std::uint64_t{1} << m.nsub) - 1 : 0))
    if (sum_parts(m, a) % sum_parts(m, t) == 0) types.push_back(t);
  res.nodes = types.size();
  std::map<std::string, std::size_t> id;
  for (std::size_t v = 0; v < types.size(); ++v) id.emplace(type_key(types[v]), v);
  // Types of one local shape and number of partials (T-Permute's premise).
  auto local_type = [&](const dist_type& t) {
    std::vector<std::uint64_t> lt;
    for (int d = 0; d < t.rank; ++d) lt.push_back(tile(m, t.dims[d]));
    lt.push_back(sum_parts(m, t));
    return lt;
  };
  std::map<std::vector<std::uint64_t>, std::vector<std::size_t>> by_local;
  for (std::size_t v = 0; v < types.size(); ++v) by_local[local_type(types[v])].push_back(v);
  const auto src = id.find(type_key(a)), dst = id.find(type_key(b));
  if (src == id.end() || dst == id.end()) return res;

  const std::uint64_t inf = UINT64_MAX;
  std::vector<std::uint64_t> dist(types.size(), inf);
  std::vector<std::size_t> pred(types.size(), SIZE_MAX);
  std::vector<op> via(types.size(), op::dynslice);
  using item = std::pair<std::uint64_t, std::size_t>;
  std::priority_queue<item, std::vector<item>, std::greater<>> heap;
  dist[src->second] = 0;
  heap.push({0, src->second});
  while (!heap.empty()) {
    const std::uint64_t du = heap.top().first;  // (no structured bindings: clang 14 cannot capture them)
    const std::size_t u = heap.top().second;
    heap.pop();
    if (du != dist[u]) continue;
    if (u == dst->second) break;
    const dist_type& t = types[u];
    const std::uint64_t local = local_size(m, t);
    auto relax = [&](op kind, const result<dist_type>& r) {
      if (!r.ok()) return;
      auto it = id.find(type_key(r.value));
      if (it == id.end()) return;  // beyond the bound
      const std::uint64_t c = du + cost_elements(kind, local, local_size(m, r.value));
      if (c < dist[it->second]) {
        dist[it->second] = c;
        pred[it->second] = u;
        via[it->second] = kind;
        heap.push({c, it->second});
      }
    };
    const std::uint64_t used = used_mask(t);
    std::vector<std::uint8_t> unused, sums(t.sum, t.sum + t.nsum);
    for (int k = 0; k < m.nsub; ++k)
      if (!(used & (std::uint64_t{1} << k))) unused.push_back(static_cast<std::uint8_t>(k));
    // allreduce: every nonempty subset of the pending sums.
    for (std::uint32_t mask = 1; mask < (1u << sums.size()); ++mask) {
      std::vector<std::uint8_t> xs;
      for (std::size_t q = 0; q < sums.size(); ++q)
        if (mask & (1u << q)) xs.push_back(sums[q]);
      relax(op::allreduce, rule_allreduce(m, t, xs.data(), static_cast<int>(xs.size())));
    }
    for (int i = 0; i < t.rank; ++i) {
      for (int c = 1; c <= t.dims[i].n; ++c) {
        relax(op::allgather, rule_allgather(m, t, i, c));
        for (int j = 0; j < t.rank; ++j)
          if (j != i) relax(op::alltoall, rule_alltoall(m, t, i, j, c));
      }
      // dynslice: every ordered sequence of distinct unused sub-axes; reducescatter:
      // every ordered sequence of distinct pending-sum axes.
      for (const op kind : {op::dynslice, op::reducescatter}) {
        const std::vector<std::uint8_t>& pool = kind == op::dynslice ? unused : sums;
        std::vector<std::uint8_t> seq;
        std::vector<bool> taken(pool.size(), false);
        std::function<void()> grow = [&] {
          for (std::size_t q = 0; q < pool.size(); ++q) {
            if (taken[q]) continue;
            taken[q] = true;
            seq.push_back(pool[q]);
            const int n = static_cast<int>(seq.size());
            relax(kind, kind == op::dynslice ? rule_dynslice(m, t, i, seq.data(), n)
                                             : rule_reducescatter(m, t, i, seq.data(), n));
            grow();
            seq.pop_back();
            taken[q] = false;
          }
        };
        grow();
      }
    }
    for (std::size_t v : by_local[local_type(t)]) {
      if (v == u) continue;
      const std::uint64_t c = du + cost_elements(op::allpermute, local, local);
      if (c < dist[v]) {
        dist[v] = c;
        pred[v] = u;
        via[v] = op::allpermute;
        heap.push({c, v});
      }
    }
  }
  if (dist[dst->second] == inf) return res;
  res.found = true;
  res.cost = dist[dst->second];
  for (std::size_t v = dst->second; v != src->second; v = pred[v]) {
    res.path.insert(res.path.begin(), strong_step{via[v], types[v], 0});
    res.permutes += via[v] == op::allpermute;
  }
  std::uint64_t local = local_size(m, a);
  for (auto& s : res.path) {
    s.cost = cost_elements(s.kind, local, local_size(m, s.after));
    local = local_size(m, s.after);
  }
  return res;
}

}  // namespace redist::testing
