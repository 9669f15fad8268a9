// redist/search/weak_graph.hpp -- the weak-type graph of paper Sec. 7.2, shared by the
// run-time (Boost.Graph) and the compile-time (constexpr) searches.
//
// Nodes are weak types (shapes: tiles per dimension) whose local size is within the
// memory bound. Edges are the multi-axis weak collectives of core/rules.hpp, one per
// factor: an edge moving a factor F is one collective over all the prime sub-axes of F,
// so a shortest path only holds maximally merged allgathers and alltoalls. Dynslice on
// replicated axes is an edge like any other, so over-partitioning (Fig. 12) is found.
// Successors are generated on demand (the graph is implicit).
//
// Path weights are compared lexicographically on (time, cost, height, steps): the least
// predicted time (objective::time, the default: core/time_model.hpp step_seconds under a
// profile, in whole picoseconds; 0 on every edge under objective::bytes), then the least
// data moved (Fig. 11), then the lowest peak, then the fewest collectives. Every component
// is isotone under extension, so Dijkstra finds the optimum of all; both searches
// therefore agree on time, cost and height.
#pragma once

#include <cstdint>
#include <vector>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/rules.hpp"
#include "redist/core/time_model.hpp"

namespace redist {

namespace detail {
constexpr std::uint64_t gcd(std::uint64_t a, std::uint64_t b) {
  while (b) { std::uint64_t t = a % b; a = b; b = t; }
  return a;
}
}  // namespace detail

/// What the search minimizes first.
enum class objective : std::uint8_t {
  time,   ///< predicted time under a profile (core/time_model.hpp), then Fig. 11 bytes
  bytes,  ///< the paper's Fig. 11 bytes (the fewest-bytes program of the paper's figures)
};

constexpr std::string_view objective_name(objective o) { return o == objective::bytes ? "bytes" : "time"; }

/// Options of the search.
struct search_options {
  /// Intermediates may hold up to this factor times max(localsize(source),
  /// localsize(target)) elements. 1 is the paper's bound (eq. 4).
  double memory_budget = 1.0;
  objective goal = objective::time;
  /// The profile the time objective predicts with (the built-in one by default).
  time_profile profile = builtin_profile;
  /// Bytes per element (the time objective prices bytes).
  std::uint64_t element_bytes = 4;
  /// Pending axes the target creates from dimensions the source partitions are created by
  /// padding (core/rules.hpp before_padded_partial), not from replicated data: the graph's
  /// target keeps them partitioning. The planners try both (lower/partial.hpp).
  bool pad_pending = false;
};

/// A memory budget must be a factor of at least 1 (NaN is none).
constexpr error check_budget(double memory_budget) {
  if (memory_budget >= 1.0) return {};
  return error::make(errc::bad_size, "the memory budget factor must be at least 1");
}

/// A weight in the weak graph, and the length of a path.
struct path_cost {
  std::uint64_t cost = 0;    ///< elements per device (Fig. 11)
  std::uint64_t height = 0;  ///< largest local size on the path
  std::uint32_t steps = 0;   ///< collectives on the path
  std::uint64_t time = 0;    ///< predicted picoseconds (objective::time; 0 under objective::bytes)

  static constexpr path_cost infinity() { return {UINT64_MAX, UINT64_MAX, UINT32_MAX, UINT64_MAX}; }
  constexpr bool operator==(const path_cost&) const = default;
  friend constexpr bool operator<(const path_cost& a, const path_cost& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.cost != b.cost) return a.cost < b.cost;
    if (a.height != b.height) return a.height < b.height;
    return a.steps < b.steps;
  }
  /// Extend a path by an edge (saturating).
  friend constexpr path_cost operator+(const path_cost& a, const path_cost& w) {
    path_cost r;
    r.cost = a.cost > UINT64_MAX - w.cost ? UINT64_MAX : a.cost + w.cost;
    r.height = a.height > w.height ? a.height : w.height;
    r.steps = a.steps > UINT32_MAX - w.steps ? UINT32_MAX : a.steps + w.steps;
    r.time = a.time > UINT64_MAX - w.time ? UINT64_MAX : a.time + w.time;
    return r;
  }
};

/// One weak collective: `from` loses a factor of its partitioning (allgather,
/// alltoall), `to` gains one (alltoall, dynslice, reducescatter). For allreduce and
/// reducescatter, `from` is the rank of the array: the pending sums act as one more
/// dimension whose "block" is the index of the partial a device holds.
struct weak_edge {
  op kind = op::dynslice;
  std::int8_t from = -1;
  std::int8_t to = -1;
  std::uint64_t factor = 1;
  constexpr bool operator==(const weak_edge&) const = default;
};

/// A weak redistribution problem: the graph's context, its endpoints and its bound.
struct weak_problem {
  weak_context ctx{};
  shape source{};
  shape target{};
  std::uint64_t bound = 0;               ///< largest local size a node may have
  std::uint64_t min_local = 0;           ///< floor(global size / devices)
  std::uint64_t target_local = 0;        ///< local size of the target
  std::uint64_t primes[max_primes]{};    ///< distinct prime sub-axis sizes of the mesh
  int nprimes = 0;
  objective goal = objective::time;      ///< what the weights put first
  time_profile profile{};                ///< the time objective's profile
  std::uint64_t element_bytes = 4;
  bool pad_pending = false;              ///< the target is before_padded_partial (search_options)
  std::uint64_t collective_floor_ps = 0; ///< time_potential: a collective's least latency and peer term
  std::uint64_t pass_floor_ps = 0;       ///< time_potential: an edge's least pass over its tile
  std::uint64_t pass_target_ps = 0;      ///< time_potential: the pass over the target's tile
  std::uint64_t time_per_element_ps = 0; ///< time_potential: picoseconds at least, per element received

  /// Apply an edge; false if its rule does not hold.
  constexpr bool apply(const shape& s, const weak_edge& e, shape& out) const {
    switch (e.kind) {
      case op::allgather: return weak_allgather(ctx, s, e.from, e.factor, out);
      case op::alltoall: return weak_alltoall(ctx, s, e.from, e.to, e.factor, out);
      case op::dynslice: return weak_dynslice(ctx, s, e.to, e.factor, out);
      case op::allreduce: return weak_allreduce(ctx, s, e.factor, out);
      case op::reducescatter: return weak_reducescatter(ctx, s, e.to, e.factor, out);
      default: return false;
    }
  }
  /// The lower bounds potential() and time_potential() are built from, at node `s`:
  ///  - data: a device must receive its target tile minus what its current tile can share
  ///    with it, target_local - prod_d min(tile_d, target tile_d) elements. One edge raises
  ///    that overlap by at most what a device receives in it (the tiles as boxes from the
  ///    origin: an allgather or an all-to-all adds at most its tile minus what it keeps, a
  ///    dynslice or a reduce-scatter only shrinks the tile, an all-reduce keeps it), and by
  ///    at most its Fig. 11 cost, which charges at least what a device receives.
  ///  - steps: collectives still needed. A dimension with a factor the target lacks needs one
  ///    that removes factors from it (an allgather or an all-to-all out of it, one dimension
  ///    each), pending sums one that reduces them, and dynslices only add factors; every step
  ///    lowers the count by at most one. Each of them costs at least floor(global / devices)
  ///    in Fig. 11 elements and receives at least half that (an all-to-all of 2 members).
  ///  - adds: dimensions where the target has a factor the tile lacks. Every edge adds
  ///    factors to one dimension at most (a dynslice, an all-to-all or a reduce-scatter into
  ///    it) and removing factors never supplies one, so every edge lowers the count by at
  ///    most one: at least max(steps, adds) edges remain, each writing a tile.
  struct bounds {
    std::uint64_t data = 0;
    std::uint64_t steps = 0;
    std::uint64_t adds = 0;
  };
  [[nodiscard]] constexpr bounds lower_bounds(const shape& s) const {
    bounds b;
    std::uint64_t overlap = 1;
    b.steps += target.sums % s.sums != 0;  // pending sums to reduce
    for (int d = 0; d < ctx.rank; ++d) {
      const std::uint64_t have = s.parts[d], want = target.parts[d];
      b.steps += want % have != 0;
      b.adds += want / detail::gcd(have, want) > 1;
      const std::uint64_t c = ctx.tile(s, d), t = ctx.tile(target, d);
      overlap *= c < t ? c : t;
    }
    b.data = target_local - overlap;
    return b;
  }
  /// A lower bound on the Fig. 11 cost of any path from `s` to the target: the larger of
  /// the two consistent potentials of lower_bounds (h(u) <= w(u, v) + h(v) on every edge),
  /// so it is one too. On problems with uneven types the search runs without one (0): an
  /// all-to-all there may change the padded local size, which the data term does not bound.
  [[nodiscard]] constexpr std::uint64_t potential(const shape& s) const {
    if (ctx.uneven) return 0;
    const bounds b = lower_bounds(s);
    const std::uint64_t dims = b.steps * min_local;
    return b.data > dims ? b.data : dims;
  }
  /// A lower bound on the picoseconds of any path from `s` to the target (objective::time),
  /// consistent like potential() (none on uneven problems), the sum of three bounds on
  /// disjoint parts of every edge's weight (core/time_model.hpp):
  ///  - latency and peers: the collectives still to run (lower_bounds' steps, at least one
  ///    while the data term is positive), each at least collective_floor_ps (the least
  ///    latency plus one peer of the kinds the graph has);
  ///  - the pass over memory: at least max(steps, adds) more edges, each writing a tile of
  ///    at least min_local elements (pass_floor_ps; a dynslice too), the last of them the
  ///    target's tile (pass_target_ps);
  ///  - bytes: still to receive at least the larger of lower_bounds' data and half a
  ///    floor(global / devices) tile per collective, at the least per-byte rate
  ///    (time_per_element_ps, whole picoseconds rounded down, so that a difference of two
  ///    potentials is exact).
  /// Both floors are 1 ps below the terms, for the weights' rounding to whole picoseconds.
  [[nodiscard]] constexpr std::uint64_t time_potential(const shape& s) const {
    if (ctx.uneven) return 0;
    const bounds b = lower_bounds(s);
    if (b.steps == 0 && b.data == 0 && b.adds == 0) return 0;
    const std::uint64_t steps = b.steps == 0 && b.data > 0 ? 1 : b.steps;
    const std::uint64_t edges = steps > b.adds ? steps : b.adds;
    const std::uint64_t dims = b.steps * (min_local / 2), data = b.data > dims ? b.data : dims;
    constexpr std::uint64_t most = UINT64_MAX;  // the sums and products saturate (core/dtype.hpp)
    const std::uint64_t pass = edges == 0 ? 0 : clip_add(pass_target_ps, clip_mul(edges - 1, pass_floor_ps, most), most);
    return clip_add(clip_add(clip_mul(steps, collective_floor_ps, most), pass, most),
                    clip_mul(data, time_per_element_ps, most), most);
  }
  /// The potential the searches reduce the objective's component by: potential() for
  /// bytes, time_potential() for time.
  [[nodiscard]] constexpr std::uint64_t heuristic(const shape& s) const {
    return goal == objective::time ? time_potential(s) : potential(s);
  }
  /// The weight Dijkstra sees: the objective's component (time or cost) reduced by the
  /// heuristic, w + h(next) - h(cur) (never negative since the heuristic is consistent),
  /// the rest unchanged. Dijkstra on reduced weights is A*: it settles only nodes that can
  /// still lie on a path as good as the best one, and finds the same optimum.
  [[nodiscard]] constexpr path_cost reduced(std::uint64_t h_cur, std::uint64_t h_next, path_cost w) const {
    std::uint64_t& k = goal == objective::time ? w.time : w.cost;
    // A profile with no fixed terms at all leaves the time potential no slack for the
    // weights' rounding to the nearest picosecond: never below 0 then.
    k = h_next >= h_cur ? k + (h_next - h_cur) : k >= h_cur - h_next ? k - (h_cur - h_next) : 0;
    return w;
  }
  /// A path's total from its reduced total (the target's heuristic is 0).
  [[nodiscard]] constexpr path_cost unreduced(path_cost total) const {
    std::uint64_t& k = goal == objective::time ? total.time : total.cost;
    k += heuristic(source);
    return total;
  }
  /// Weight of an edge from a node of local size `local` to one of local size `after`: its
  /// Fig. 11 cost, the new height, one step, and under objective::time its predicted
  /// picoseconds (core/time_model.hpp step_seconds, groups of e.factor members).
  [[nodiscard]] constexpr path_cost weight(const weak_edge& e, std::uint64_t local, std::uint64_t after) const {
    path_cost w{cost_elements(e.kind, local, after), after, 1, 0};
    if (goal == objective::time) w.time = picoseconds(step_seconds(profile, e.kind, e.factor, local, after, element_bytes));
    return w;
  }
  /// What near_paths (search/tight_paths.hpp) budgets: the weight's first component.
  [[nodiscard]] constexpr std::uint64_t key(const path_cost& w) const { return goal == objective::time ? w.time : w.cost; }
  /// A lower bound on the key of any path from `s` to the target.
  [[nodiscard]] constexpr std::uint64_t key_potential(const shape& s) const { return heuristic(s); }
};

/// Build the weak problem of redistributing `a` to `b` over `m`; checks both types and
/// that their global shapes agree. The problem's target is before_partial(a, b), or with
/// opt.pad_pending before_padded_partial (core/rules.hpp): pending axes the source does not
/// have are created by the partial steps the lowering appends, outside the graph
/// (lower/partial.hpp). The memory bound is the real target's.
constexpr result<weak_problem> make_weak_problem(const device_mesh& m, const dist_type& a, const dist_type& target,
                                                 search_options opt = {}) {
  result<weak_problem> r;
  if (error e = check(m, a); !e.ok()) { r.err = e; return r; }
  if (error e = check(m, target); !e.ok()) { r.err = e; return r; }
  if (error e = check_same_global(a, target); !e.ok()) { r.err = e; return r; }
  if (changes_pending_kind(a, target)) {
    text t("the source's partial values combine by ");
    t.append(reduction_name(a.reduce)).append(", the target's by ").append(reduction_name(target.reduce))
        .append(": a redistribution keeps the reduction kind");
    r.err = error::make(errc::rule, t.view());
    return r;
  }
  const dist_type b = opt.pad_pending ? before_padded_partial(m, a, target) : before_partial(a, target);
  weak_problem& p = r.value;
  p.ctx = weak_context_of(m, a, b);
  p.source = shape_of(m, a);
  p.target = shape_of(m, b);
  p.min_local = global_size(a) / m.devices;
  p.target_local = local_size(m, b);
  p.goal = opt.goal;
  p.profile = opt.profile;
  p.element_bytes = opt.element_bytes;
  p.pad_pending = opt.pad_pending;
  double fixed = 1e300, per_byte = 1e300;  // the least over the kinds of the graph's collectives
  for (op o : {op::allgather, op::alltoall, op::allreduce, op::reducescatter}) {
    fixed = fixed < p.profile[o].latency + p.profile[o].per_peer ? fixed : p.profile[o].latency + p.profile[o].per_peer;
    per_byte = per_byte < p.profile[o].per_byte ? per_byte : p.profile[o].per_byte;
  }
  const std::uint64_t fixed_ps = picoseconds(fixed);
  p.collective_floor_ps = fixed_ps > 1 ? fixed_ps - 1 : 0;
  // Every edge writes its tile, of at least min_local elements.
  const std::uint64_t pass_ps =
      p.profile.pass_per_byte > 0
          ? picoseconds(p.profile.pass_per_byte * static_cast<double>(p.min_local) * static_cast<double>(p.element_bytes))
          : 0;
  p.pass_floor_ps = pass_ps > 1 ? pass_ps - 1 : 0;
  const std::uint64_t last_ps =
      p.profile.pass_per_byte > 0 ? picoseconds(p.profile.pass_per_byte * static_cast<double>(p.target_local) *
                                                static_cast<double>(p.element_bytes))
                                  : 0;
  p.pass_target_ps = last_ps > 1 ? last_ps - 1 : 0;
  const double rate = per_byte > 0 ? static_cast<double>(p.element_bytes) * per_byte * 1e12 : 0;
  p.time_per_element_ps = rate >= 1.8e19 ? UINT64_MAX : static_cast<std::uint64_t>(rate);
  std::uint64_t la = local_size(m, a), lb = local_size(m, target);  // the real target
  std::uint64_t mx = la > lb ? la : lb;
  if (error e = check_budget(opt.memory_budget)) {
    r.err = e;
    return r;
  }
  if (opt.memory_budget == 1.0) {
    p.bound = mx;
  } else {
    long double bnd = static_cast<long double>(mx) * static_cast<long double>(opt.memory_budget);
    p.bound = bnd >= 18446744073709551615.0L ? UINT64_MAX : static_cast<std::uint64_t>(bnd);
  }
  for (int k = 0; k < m.nsub; ++k) {
    bool seen = false;
    for (int q = 0; q < p.nprimes; ++q) seen = seen || p.primes[q] == m.sub[k].size;
    if (!seen) {
      if (p.nprimes >= max_primes) { r.err = error::make(errc::capacity, "too many distinct primes in the mesh"); return r; }
      p.primes[p.nprimes++] = m.sub[k].size;
    }
  }
  // Keep the primes sorted so that enumeration order is canonical.
  for (int i = 1; i < p.nprimes; ++i)
    for (int j = i; j > 0 && p.primes[j - 1] > p.primes[j]; --j) {
      std::uint64_t t = p.primes[j]; p.primes[j] = p.primes[j - 1]; p.primes[j - 1] = t;
    }
  return r;
}

namespace detail {
/// Call f(F) for every divisor F > 1 of n built from the problem's primes, in a fixed
/// order (mixed radix over the primes, smallest prime fastest).
template <class F>
constexpr void for_each_divisor(const weak_problem& p, std::uint64_t n, F&& f) {
  int exps[max_primes]{};
  int cur[max_primes]{};
  for (int q = 0; q < p.nprimes; ++q)
    for (std::uint64_t v = n; v % p.primes[q] == 0; v /= p.primes[q]) ++exps[q];
  while (true) {
    int q = 0;
    while (q < p.nprimes && cur[q] == exps[q]) cur[q++] = 0;
    if (q == p.nprimes) return;
    ++cur[q];
    std::uint64_t d = 1;
    for (int t = 0; t < p.nprimes; ++t)
      for (int e = 0; e < cur[t]; ++e) d *= p.primes[t];
    f(d);
  }
}
}  // namespace detail

/// Call f(edge, next_shape, weight) for every edge leaving `s` whose endpoint is within
/// the memory bound. Order: dynslices, alltoalls, reduce-scatters, allreduces,
/// allgathers; dimensions ascending.
template <class F>
constexpr void for_each_successor(const weak_problem& p, const shape& s, F&& f) {
  const weak_context& c = p.ctx;
  const std::uint64_t local = c.local_size(s);
  const std::uint64_t free = c.free(s);
  shape next{};
  auto edge = [&](const weak_edge& e) {  // f for e if its rule holds and it keeps to the bound
    if (!p.apply(s, e, next)) return;
    const std::uint64_t after = c.local_size(next);
    if (after <= p.bound) f(e, next, p.weight(e, local, after));
  };
  for (int i = 0; i < c.rank; ++i) {  // uneven problems: a dynslice may split unevenly
    detail::for_each_divisor(p, c.uneven ? free : detail::gcd(free, c.tile(s, i)), [&](std::uint64_t fac) {
      edge(weak_edge{op::dynslice, -1, static_cast<std::int8_t>(i), fac});
    });
  }
  for (int i = 0; i < c.rank; ++i) {
    if (s.parts[i] == 1) continue;
    for (int j = 0; j < c.rank; ++j) {
      if (j == i) continue;
      detail::for_each_divisor(p, c.uneven ? s.parts[i] : detail::gcd(s.parts[i], c.tile(s, j)), [&](std::uint64_t fac) {
        edge(weak_edge{op::alltoall, static_cast<std::int8_t>(i), static_cast<std::int8_t>(j), fac});
      });
    }
  }
  if (s.sums > 1) {
    const auto sum_dim = static_cast<std::int8_t>(c.rank);
    for (int i = 0; i < c.rank; ++i) {
      // uneven problems: a dimension of one tile may be reduce-scattered into ceil-sized chunks
      detail::for_each_divisor(p, c.uneven ? s.sums : detail::gcd(s.sums, c.tile(s, i)), [&](std::uint64_t fac) {
        edge(weak_edge{op::reducescatter, sum_dim, static_cast<std::int8_t>(i), fac});
      });
    }
    detail::for_each_divisor(p, s.sums, [&](std::uint64_t fac) { edge(weak_edge{op::allreduce, sum_dim, -1, fac}); });
  }
  for (int i = 0; i < c.rank; ++i) {
    if (s.parts[i] == 1) continue;
    detail::for_each_divisor(p, s.parts[i], [&](std::uint64_t fac) {
      edge(weak_edge{op::allgather, static_cast<std::int8_t>(i), -1, fac});
    });
  }
}

/// One step of a weak plan.
struct weak_step {
  weak_edge edge{};
  shape after{};
  path_cost weight{};
};

/// A shortest path in the weak graph.
struct weak_plan {
  bool found = false;
  std::vector<weak_step> steps;
  path_cost total{};
  std::uint64_t nodes_visited = 0;  ///< nodes the search settled (for benchmarks)
  /// Other shortest paths of the same (cost, height, steps), for the lowering to choose
  /// from (search/tight_paths.hpp); may be empty.
  std::vector<std::vector<weak_step>> ties;
};

}  // namespace redist
