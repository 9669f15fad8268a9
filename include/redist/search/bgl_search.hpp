// redist/search/bgl_search.hpp -- the run-time search: Boost.Graph's Dijkstra over the
// implicit weak-type graph (successors generated on demand, vertices numbered on first
// sight), stopped as soon as the target is settled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/graph/dijkstra_shortest_paths_no_color_map.hpp>
#include <boost/graph/graph_traits.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <boost/property_map/property_map.hpp>

#include "redist/search/tight_paths.hpp"
#include "redist/search/weak_graph.hpp"

namespace redist {
namespace detail {

struct shape_hash {
  std::size_t operator()(const shape& s) const noexcept {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ static_cast<std::uint64_t>(s.rank) ^ (s.sums << 17);
    for (int d = 0; d < s.rank; ++d) {
      h ^= s.parts[d] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      h *= 0xbf58476d1ce4e5b9ULL;
    }
    // splitmix64's finalizer: parts are mostly powers of two, so without it the low bits
    // that pick a slot would cluster.
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
};

/// The implicit weak graph as a Boost.Graph IncidenceGraph.
class weak_graph {
 public:
  struct edge {
    std::size_t src = 0, dst = 0;
    weak_edge e{};
    path_cost w{};        ///< the edge's weight
    path_cost reduced{};  ///< the weight Dijkstra sees (weak_problem::reduced)
  };

  explicit weak_graph(const weak_problem& p) : p_(&p) {}

  std::size_t intern(const shape& s) const {
    const std::uint64_t h = shape_hash{}(s) | 1;  // 0 marks an empty slot
    const std::size_t i = slot(s, h);
    if (slots_[i].hash != 0) return slots_[i].id;
    const std::size_t id = nodes_.size();
    slots_[i] = {h, id};
    nodes_.push_back(s);
    potential_.push_back(p_->heuristic(s));
    if (2 * nodes_.size() > slots_.size()) grow();
    return id;
  }
  [[nodiscard]] std::uint64_t potential(std::size_t v) const { return potential_[v]; }
  [[nodiscard]] const shape& node(std::size_t v) const { return nodes_[v]; }
  /// Id of a shape seen so far, or SIZE_MAX.
  [[nodiscard]] std::size_t find(const shape& s) const {
    const std::uint64_t h = shape_hash{}(s) | 1;
    const slot_t& x = slots_[slot(s, h)];
    return x.hash == 0 ? SIZE_MAX : x.id;
  }
  [[nodiscard]] std::size_t size() const { return nodes_.size(); }

  /// Successors of v; the buffer lives until the next call (Dijkstra walks one at a time).
  const std::vector<edge>& successors(std::size_t v) const {
    buf_.clear();
    const shape s = nodes_[v];
    const std::uint64_t h = potential_[v];
    for_each_successor(*p_, s, [&](const weak_edge& e, const shape& next, const path_cost& w) {
      const std::size_t u = intern(next);
      buf_.push_back(edge{v, u, e, w, p_->reduced(h, potential_[u], w)});
    });
    return buf_;
  }

 private:
  // Node ids by shape: open addressing with linear probing over a power-of-two table at
  // most half full, each slot holding the shape's hash, so that a lookup (one per edge
  // Dijkstra examines) usually touches one cache line; std::unordered_map spent half of
  // the search's time chasing its nodes.
  struct slot_t {
    std::uint64_t hash = 0;  ///< 0: empty
    std::size_t id = 0;
  };
  /// The slot holding `s`, or the empty slot where it belongs.
  [[nodiscard]] std::size_t slot(const shape& s, std::uint64_t h) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = static_cast<std::size_t>(h) & mask;; i = (i + 1) & mask)
      if (slots_[i].hash == 0 || (slots_[i].hash == h && nodes_[slots_[i].id] == s)) return i;
  }
  void grow() const {
    std::vector<slot_t> old(slots_.size() * 2);
    old.swap(slots_);
    for (const slot_t& x : old)
      if (x.hash != 0) slots_[slot(nodes_[x.id], x.hash)] = x;
  }

  const weak_problem* p_;
  mutable std::vector<shape> nodes_;
  mutable std::vector<std::uint64_t> potential_;
  mutable std::vector<slot_t> slots_ = std::vector<slot_t>(1024);
  mutable std::vector<edge> buf_;
};

}  // namespace detail
}  // namespace redist

namespace boost {
template <>
struct graph_traits<redist::detail::weak_graph> {
  using vertex_descriptor = std::size_t;
  using edge_descriptor = redist::detail::weak_graph::edge;
  using directed_category = directed_tag;
  using edge_parallel_category = allow_parallel_edge_tag;
  using traversal_category = incidence_graph_tag;
  using out_edge_iterator = std::vector<redist::detail::weak_graph::edge>::const_iterator;
  using degree_size_type = std::size_t;
  static vertex_descriptor null_vertex() { return static_cast<std::size_t>(-1); }
};
}  // namespace boost

namespace redist::detail {
inline std::pair<std::vector<weak_graph::edge>::const_iterator, std::vector<weak_graph::edge>::const_iterator>
out_edges(std::size_t v, const weak_graph& g) {
  const auto& s = g.successors(v);
  return {s.begin(), s.end()};
}
inline std::size_t out_degree(std::size_t v, const weak_graph& g) { return g.successors(v).size(); }
inline std::size_t source(const weak_graph::edge& e, const weak_graph&) { return e.src; }
inline std::size_t target(const weak_graph::edge& e, const weak_graph&) { return e.dst; }

/// A vector-backed property map that grows on demand and reads `fill` for unseen keys.
template <class T>
struct growing_map {
  using key_type = std::size_t;
  using value_type = T;
  using reference = T;
  using category = boost::read_write_property_map_tag;
  std::vector<T>* v;
  T fill;
  friend T get(const growing_map& m, std::size_t k) { return k < m.v->size() ? (*m.v)[k] : m.fill; }
  friend void put(const growing_map& m, std::size_t k, const T& x) {
    if (k >= m.v->size()) m.v->resize(k + 1, m.fill);
    (*m.v)[k] = x;
  }
};

struct found_target {};

struct weak_visitor : boost::default_dijkstra_visitor {
  std::size_t goal;
  std::vector<weak_graph::edge>* pred;
  std::uint64_t* settled;
  void examine_vertex(std::size_t v, const weak_graph&) const {
    ++*settled;
    if (v == goal) throw found_target{};
  }
  void edge_relaxed(const weak_graph::edge& e, const weak_graph&) const {
    if (e.dst >= pred->size()) pred->resize(e.dst + 1);
    (*pred)[e.dst] = e;
  }
};
}  // namespace redist::detail

namespace redist {

/// Shortest path from p.source to p.target in the weak graph: Boost.Graph's Dijkstra on
/// the reduced weights (weak_problem::reduced), i.e. A* with a consistent potential.
inline weak_plan search_bgl(const weak_problem& p) {
  using namespace detail;
  weak_plan plan;
  weak_graph g(p);
  const std::size_t s = g.intern(p.source);
  const std::size_t t = g.intern(p.target);
  std::vector<path_cost> dist;
  std::vector<weak_graph::edge> pred;
  growing_map<path_cost> dmap{&dist, path_cost::infinity()};
  put(dmap, s, path_cost{0, p.ctx.local_size(p.source), 0});
  auto wmap = boost::make_function_property_map<weak_graph::edge>([](const weak_graph::edge& e) { return e.reduced; });
  weak_visitor vis;
  vis.goal = t;
  vis.pred = &pred;
  vis.settled = &plan.nodes_visited;
  try {
    boost::dijkstra_shortest_paths_no_color_map_no_init(
        g, s, boost::dummy_property_map(), dmap, wmap, boost::typed_identity_property_map<std::size_t>(),
        std::less<path_cost>(), [](const path_cost& a, const path_cost& b) { return a + b; },
        path_cost::infinity(), path_cost{0, 0, 0}, vis);
  } catch (const found_target&) {
  }
  if (get(dmap, t) == path_cost::infinity()) return plan;
  plan.found = true;
  plan.total = get(dmap, t);
  plan.total = p.unreduced(plan.total);
  for (std::size_t v = t; v != s; v = pred[v].src) plan.steps.push_back(weak_step{pred[v].e, g.node(v), pred[v].w});
  for (std::size_t i = 0, j = plan.steps.size(); i + 1 < j; ++i, --j) std::swap(plan.steps[i], plan.steps[j - 1]);
  plan.ties = tight_paths(
      p, get(dmap, t),
      [&](const shape& x) {
        std::size_t v = g.find(x);
        return v == SIZE_MAX ? node_info{} : node_info{get(dmap, v), g.potential(v), v};
      },
      tie_enumeration_limit(p.ctx.devices), 20000);
  return plan;
}

}  // namespace redist
