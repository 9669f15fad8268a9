// Tests of search/weak_graph.hpp: building a weak problem (bound, budget, errors), the
// successor enumeration against a brute-force application of the weak rules, edge
// weights (Fig. 11), path weights, and the consistency of the search potential.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <set>
#include <tuple>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/search/weak_graph.hpp"
#include "support/random_problems.hpp"

using namespace redist;

namespace {

constexpr device_mesh m8 = parse_mesh_text("{a: 8}").value;
constexpr auto p49 =
    make_weak_problem(m8, parse_type_text(m8, "[1{a}8, 8]").value, parse_type_text(m8, "[8, 1{a}8]").value);
static_assert(p49.ok() && p49.value.bound == 8 && p49.value.source.parts[0] == 8 && p49.value.target.parts[1] == 8);
static_assert(path_cost{3, 1, 1} < path_cost{4, 0, 0} && path_cost{3, 1, 1} < path_cost{3, 2, 0});
static_assert((path_cost{3, 5, 1} + path_cost{4, 2, 1}) == path_cost{7, 5, 2});

weak_problem problem(const char* mesh, const char* a, const char* b, double budget = 1.0) {
  const device_mesh m = parse_mesh(mesh);
  return make_weak_problem(m, parse_type(m, a), parse_type(m, b), search_options{budget}).get();
}

using edge_key = std::tuple<int, int, int, std::uint64_t>;
edge_key key(const weak_edge& e) { return {static_cast<int>(e.kind), e.from, e.to, e.factor}; }

/// Every edge the weak rules allow out of `s` within the bound, by brute force over all
/// factors that divide the device count.
std::set<edge_key> brute_force(const weak_problem& p, const shape& s) {
  std::set<edge_key> out;
  const std::uint64_t local = p.ctx.local_size(s);
  for (std::uint64_t f = 2; f <= p.ctx.devices; ++f) {
    if (p.ctx.devices % f != 0) continue;
    for (int i = 0; i < s.rank; ++i) {
      shape n;
      if (weak_dynslice(p.ctx, s, i, f, n)) out.insert({static_cast<int>(op::dynslice), -1, i, f});
      if (weak_allgather(p.ctx, s, i, f, n) && local * f <= p.bound)
        out.insert({static_cast<int>(op::allgather), i, -1, f});
      for (int j = 0; j < s.rank; ++j)
        if (weak_alltoall(p.ctx, s, i, j, f, n)) out.insert({static_cast<int>(op::alltoall), i, j, f});
      // Partial sums: the sums are "dimension" rank (weak_edge::from).
      if (weak_reducescatter(p.ctx, s, i, f, n)) out.insert({static_cast<int>(op::reducescatter), s.rank, i, f});
    }
    shape n;
    if (weak_allreduce(p.ctx, s, f, n)) out.insert({static_cast<int>(op::allreduce), s.rank, -1, f});
  }
  return out;
}

/// All shapes reachable from the source (the explicit graph).
std::vector<shape> reachable(const weak_problem& p) {
  std::vector<shape> seen{p.source};
  std::deque<shape> todo{p.source};
  while (!todo.empty()) {
    const shape s = todo.front();
    todo.pop_front();
    for_each_successor(p, s, [&](const weak_edge&, const shape& n, const path_cost&) {
      for (const shape& q : seen)
        if (q == n) return;
      seen.push_back(n);
      todo.push_back(n);
    });
  }
  return seen;
}

/// Random problems of every workload, with and without partial sums.
std::vector<testing::problem_text> sample(std::size_t per_workload, std::uint64_t seed) {
  std::vector<testing::workload> ws = testing::mixed_workloads();
  ws.push_back(testing::paper_workload());
  std::vector<testing::problem_text> out;
  for (auto w : ws) {
    for (auto& p : testing::random_problems(w, per_workload, ++seed)) out.push_back(p);
    w.partial_sums = true;
    for (auto& p : testing::random_problems(w, per_workload / 2, ++seed)) out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("make_weak_problem: shapes, bound, primes", "[weak_graph]") {
  const weak_problem p = problem("{x: 4, y: 6}", "[3{x}12, 2{y}12]", "[2{y}12, 3{x}12]");
  CHECK(p.ctx.rank == 2);
  CHECK(p.ctx.devices == 24);
  CHECK(p.ctx.global[0] == 12);
  CHECK(p.source.parts[0] == 4);
  CHECK(p.source.parts[1] == 6);
  CHECK(p.target.parts[0] == 6);
  CHECK(p.target.parts[1] == 4);
  CHECK(p.bound == 6);
  REQUIRE(p.nprimes == 2);
  CHECK(p.primes[0] == 2);
  CHECK(p.primes[1] == 3);

  SECTION("the bound is max(localsize(source), localsize(target)) times the budget") {
    CHECK(problem("{x: 4}", "[16, 4{x}16]", "[4{x}16, 16]").bound == 64);
    CHECK(problem("{x: 4}", "[16, 4{x}16]", "[16, 16]").bound == 256);
    CHECK(problem("{x: 4}", "[16, 16]", "[16, 4{x}16]").bound == 256);
  }
  SECTION("budgets") {
    CHECK(problem("{x: 4}", "[4{x}16, 16]", "[16, 16]", 1.0).bound == 256);
    CHECK(problem("{x: 4}", "[4{x}16, 16]", "[16, 4{x}16]", 1.5).bound == 96);
    CHECK(problem("{x: 4}", "[4{x}16, 16]", "[16, 4{x}16]", 2.0).bound == 128);
    CHECK(problem("{x: 4}", "[4{x}16, 16]", "[16, 4{x}16]", 1e30).bound == std::numeric_limits<std::uint64_t>::max());
  }
  SECTION("primes are distinct and sorted") {
    const weak_problem q = problem("{x: 10, y: 6, z: 7}", "[210]", "[210]");
    REQUIRE(q.nprimes == 4);
    CHECK(q.primes[0] == 2);
    CHECK(q.primes[1] == 3);
    CHECK(q.primes[2] == 5);
    CHECK(q.primes[3] == 7);
  }
}

TEST_CASE("make_weak_problem errors", "[weak_graph][errors]") {
  const device_mesh m = parse_mesh("{x: 4}");
  const dist_type a = parse_type(m, "[4{x}16, 16]"), b = parse_type(m, "[16, 4{x}16]");
  for (double bad : {0.999, 0.5, 0.0, -1.0, std::nan("")}) {
    INFO("budget " << bad);
    const auto r = make_weak_problem(m, a, b, search_options{bad});
    CHECK(r.err.code == errc::bad_size);
    CHECK(r.err.message.str() == "the memory budget factor must be at least 1");
  }
  const auto g = make_weak_problem(m, a, parse_type(m, "[16, 4{x}16, 1]"));
  CHECK(g.err.code == errc::global_mismatch);
  CHECK(g.err.message.str() == "global types differ: source is [16, 16], target is [16, 16, 1]");
  dist_type ill = a;
  ill.dims[1].axes[ill.dims[1].n++] = 0;  // x:(1)2 twice
  CHECK(make_weak_problem(m, ill, b).err.code == errc::repeated_axis);
  CHECK(make_weak_problem(m, a, ill).err.code == errc::repeated_axis);
  // Partial sums are reduced in the graph; those the source lacks are created after it (a
  // partial step, lower/partial.hpp): the graph's target is before_partial, without them.
  const device_mesh s = parse_mesh("{x: 4, y: 6}");
  const auto created = make_weak_problem(s, parse_type(s, "[12] sum{x}"), parse_type(s, "[12] sum{y}"));
  REQUIRE(created.ok());
  CHECK(created.value.target == shape_of(s, parse_type(s, "[12]")));
  const auto kept = make_weak_problem(s, parse_type(s, "[12] sum{x, y}"), parse_type(s, "[12] sum{y:(1)2}"));
  REQUIRE(kept.ok());
  CHECK(kept.value.target.sums == 2);
  const auto kinds = make_weak_problem(s, parse_type(s, "[12] sum{x}"), parse_type(s, "[12] max{x, y}"));
  CHECK(kinds.err.code == errc::rule);
  CHECK(kinds.err.message.str() ==
        "the source's partial values combine by sum, the target's by max: a redistribution keeps the reduction kind");
  CHECK(make_weak_problem(s, parse_type(s, "[12] sum{x}"), parse_type(s, "[12] max{y}")).ok());  // x reduced first
  try {
    (void)make_weak_problem(m, a, b, search_options{0.5}).get();
    FAIL("no exception");
  } catch (const redist_error& e) {
    CHECK(e.code() == errc::bad_size);
    CHECK(std::string(e.what()) == "the memory budget factor must be at least 1");
  }
}

TEST_CASE("successors are exactly the weak rules within the bound", "[weak_graph][successors]") {
  std::size_t nodes = 0, edges = 0;
  for (const auto& t : sample(12, 100)) {
    const device_mesh m = parse_mesh(t.mesh);
    for (double budget : {1.0, 2.0}) {
      const weak_problem p =
          make_weak_problem(m, parse_type(m, t.from), parse_type(m, t.to), search_options{budget}).get();
      for (const shape& s : reachable(p)) {
        INFO(t.mesh << " " << t.from << " -> " << t.to << ", budget " << budget);
        REQUIRE(p.ctx.local_size(s) <= p.bound);
        std::set<edge_key> got;
        int phase = 0;  // dynslices, alltoalls, reduce-scatters, allreduces, allgathers
        const std::uint64_t local = p.ctx.local_size(s);
        for_each_successor(p, s, [&](const weak_edge& e, const shape& n, const path_cost& w) {
          CHECK(got.insert(key(e)).second);  // no duplicates
          const int ph = e.kind == op::dynslice        ? 0
                         : e.kind == op::alltoall      ? 1
                         : e.kind == op::reducescatter ? 2
                         : e.kind == op::allreduce     ? 3
                                                       : 4;
          CHECK(ph >= phase);
          phase = ph;
          shape again;
          REQUIRE(p.apply(s, e, again));
          CHECK(again == n);
          CHECK(p.ctx.local_size(n) <= p.bound);
          const std::uint64_t after = p.ctx.local_size(n);
          CHECK(w.cost == cost_elements(e.kind, local, after));  // Fig. 11
          CHECK(w.height == after);
          CHECK(w.steps == 1);
          CHECK(w == p.weight(e, local, after));
          ++edges;
        });
        CHECK(got == brute_force(p, s));
        ++nodes;
      }
    }
  }
  CHECK(nodes > 2000);
  CHECK(edges > 10000);
}

TEST_CASE("the search potential is consistent and zero at the target", "[weak_graph][potential]") {
  // Dijkstra on reduced weights (A*) is exact only if h(u) <= w(u, v) + h(v) on every
  // edge and h(target) == 0; under both objectives.
  std::size_t checked = 0, timed = 0;
  for (const auto& t : sample(12, 200)) {
    const device_mesh m = parse_mesh(t.mesh);
    for (double budget : {1.0, 3.0}) {
      const weak_problem p =
          make_weak_problem(m, parse_type(m, t.from), parse_type(m, t.to), search_options{budget}).get();
      INFO(t.mesh << " " << t.from << " -> " << t.to << ", budget " << budget);
      REQUIRE(p.potential(p.target) == 0);
      for (const shape& s : reachable(p)) {
        const std::uint64_t hu = p.potential(s);
        for_each_successor(p, s, [&](const weak_edge& e, const shape& n, const path_cost& w) {
          INFO("edge " << op_name(e.kind) << " " << int(e.from) << " -> " << int(e.to) << " by " << e.factor);
          CHECK(hu <= w.cost + p.potential(n));
          ++checked;
        });
      }
      // The time objective's potential, in picoseconds, for small and large elements.
      for (std::uint64_t bytes : {1, 8}) {
        const weak_problem q = make_weak_problem(m, parse_type(m, t.from), parse_type(m, t.to),
                                                 {.memory_budget = budget, .element_bytes = bytes})
                                   .get();
        REQUIRE(q.time_potential(q.target) == 0);
        for (const shape& s : reachable(q)) {
          const std::uint64_t hu = q.time_potential(s);
          if (q.potential(s) > 0) CHECK(hu >= q.collective_floor_ps + q.pass_floor_ps);  // some collective is still to run
          for_each_successor(q, s, [&](const weak_edge& e, const shape& n, const path_cost& w) {
            INFO("edge " << op_name(e.kind) << " " << int(e.from) << " -> " << int(e.to) << " by " << e.factor);
            CHECK(hu <= w.time + q.time_potential(n));
            timed += hu > 0;
          });
        }
      }
    }
  }
  CHECK(checked > 10000);
  CHECK(timed > 10000);
}

TEST_CASE("path_cost: lexicographic order, saturating sum", "[weak_graph][cost]") {
  const path_cost inf = path_cost::infinity();
  CHECK(path_cost{5, 100, 9} < inf);
  CHECK_FALSE(inf < inf);
  CHECK((inf + path_cost{1, 1, 1}) == inf);
  CHECK((path_cost{UINT64_MAX - 1, 3, 1} + path_cost{5, 1, 1}).cost == UINT64_MAX);
  CHECK((path_cost{1, 3, 1} + path_cost{2, 7, 1}) == path_cost{3, 7, 2});
  CHECK(path_cost{1, 9, 9} < path_cost{2, 0, 0});  // cost first
  CHECK(path_cost{1, 2, 9} < path_cost{1, 3, 0});  // then height
  CHECK(path_cost{1, 2, 1} < path_cost{1, 2, 2});  // then steps
  CHECK(path_cost{9, 9, 9, 1} < path_cost{1, 1, 1, 2});  // predicted time before everything
  CHECK((path_cost{1, 3, 1, 5} + path_cost{2, 7, 1, 6}) == path_cost{3, 7, 2, 11});
  CHECK((path_cost{1, 3, 1, UINT64_MAX - 1} + path_cost{2, 7, 1, 6}).time == UINT64_MAX);
}

TEST_CASE("edge weights: Fig. 11 cost always, predicted picoseconds under the time objective", "[weak_graph][time]") {
  const device_mesh m = parse_mesh("{x: 4, y: 2}");
  const dist_type a = parse_type(m, "[16{x}64, 8] sum{y}"), b = parse_type(m, "[64, 8]");
  for (objective goal : {objective::time, objective::bytes}) {
    const weak_problem p = make_weak_problem(m, a, b, search_options{1.0, goal, builtin_profile, 8}).get();
    const std::uint64_t local = p.ctx.local_size(p.source);
    std::size_t edges = 0;
    for_each_successor(p, p.source, [&](const weak_edge& e, const shape& next, const path_cost& w) {
      const std::uint64_t after = p.ctx.local_size(next);
      INFO(objective_name(goal) << ": " << op_name(e.kind) << " by " << e.factor);
      CHECK(w.cost == cost_elements(e.kind, local, after));
      const double s = step_seconds(builtin_profile, e.kind, e.factor, local, after, 8);
      CHECK(w.time == (goal == objective::time ? picoseconds(s) : 0));
      CHECK(p.key(w) == (goal == objective::time ? w.time : w.cost));
      ++edges;
    });
    CHECK(edges > 3);
  }
  // step_seconds is the formula of core/time_model.hpp: an allreduce of 2 over 128 elements
  // of 8 bytes receives 2 * 1/2 of the tile in one round and writes the tile once; of 8, 2 *
  // 7/8 of it in 3 rounds.
  const double ar = step_seconds(builtin_profile, op::allreduce, 2, 128, 128, 8);
  const op_time& t = builtin_profile[op::allreduce];
  CHECK(ar == Approx(t.latency + t.per_peer + t.per_byte * 1024 + builtin_profile.pass_per_byte * 1024));
  CHECK(step_seconds(builtin_profile, op::allreduce, 8, 128, 128, 8) ==
        Approx(t.latency + 3 * t.per_peer + t.per_byte * 1792 + builtin_profile.pass_per_byte * 1024));
  CHECK(collective_rounds(0) == 0);
  CHECK(collective_rounds(1) == 0);
  CHECK(collective_rounds(2) == 1);
  CHECK(collective_rounds(5) == 3);
  CHECK(collective_rounds(1024) == 10);
  CHECK(collective_rounds(UINT64_MAX) == 64);
  CHECK(picoseconds(1e-6) == 1000000);
  CHECK(picoseconds(-1) == 0);
  CHECK(picoseconds(1e30) == UINT64_MAX);
}
