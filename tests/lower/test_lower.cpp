// Tests of lower/lower.hpp and lower/synthesize.hpp: lowering arbitrary weak paths (the
// naive baseline, random walks), the final permutation, error paths, program accessors.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "redist/lower/lower.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/search/bgl_search.hpp"
#include "support/catch_verify.hpp"
#include "support/random_problems.hpp"

using namespace redist;

namespace {

/// The naive weak path of eq. (2): allreduce the sums the target does not keep, allgather
/// every partitioned dimension, then dynslice every dimension to the target's partitioning.
std::vector<weak_step> naive_completion(const weak_problem& p, shape cur) {
  std::vector<weak_step> path;
  if (cur.sums != p.target.sums) {
    const weak_edge e{op::allreduce, static_cast<std::int8_t>(cur.rank), -1, cur.sums / p.target.sums};
    shape next;
    REQUIRE(p.apply(cur, e, next));
    path.push_back({e, next, p.weight(e, p.ctx.local_size(cur), p.ctx.local_size(next))});
    cur = next;
  }
  for (int d = 0; d < cur.rank; ++d) {
    if (cur.parts[d] == 1) continue;
    const weak_edge e{op::allgather, static_cast<std::int8_t>(d), -1, cur.parts[d]};
    shape next;
    REQUIRE(p.apply(cur, e, next));
    path.push_back({e, next, p.weight(e, p.ctx.local_size(cur), p.ctx.local_size(next))});
    cur = next;
  }
  for (int d = 0; d < cur.rank; ++d) {
    if (p.target.parts[d] == 1) continue;
    const weak_edge e{op::dynslice, -1, static_cast<std::int8_t>(d), p.target.parts[d]};
    shape next;
    REQUIRE(p.apply(cur, e, next));
    path.push_back({e, next, p.weight(e, p.ctx.local_size(cur), p.ctx.local_size(next))});
    cur = next;
  }
  REQUIRE(cur == p.target);
  return path;
}

/// A random walk of `len` edges from the source, then the naive completion.
std::vector<weak_step> random_path(const weak_problem& p, std::mt19937_64& rng, int len) {
  std::vector<weak_step> path;
  shape cur = p.source;
  for (int k = 0; k < len; ++k) {
    std::vector<weak_step> out;
    for_each_successor(p, cur, [&](const weak_edge& e, const shape& n, const path_cost& w) {
      if (n.sums % p.target.sums == 0) out.push_back({e, n, w});  // never reduce sums the target keeps
    });
    if (out.empty()) break;
    path.push_back(out[rng() % out.size()]);
    cur = path.back().after;
  }
  for (const auto& s : naive_completion(p, cur)) path.push_back(s);
  return path;
}

std::uint64_t path_cost_of(const std::vector<weak_step>& path) {
  std::uint64_t c = 0;
  for (const auto& s : path) c += s.weight.cost;
  return c;
}

/// Lower a path and check what lower_path promises for any weak path.
void check_lowered(const device_mesh& m, const dist_type& a, const dist_type& b, const weak_problem& p,
                   const std::vector<weak_step>& path) {
  const result<program> r = lower_path(m, a, b, p, path, 4);
  INFO(r.err.message.str());
  REQUIRE(r.ok());
  const auto v = REDIST_REQUIRE_VERIFIED(r.value);
  const program& prog = r.value;
  // The weak steps in order, with at most one allpermute inserted before the trailing
  // allgathers.
  std::size_t q = 0, permutes = 0;
  for (const step& s : prog.steps) {
    if (s.kind == op::allpermute) {
      ++permutes;
      for (std::size_t k = q; k < path.size(); ++k) CHECK(path[k].edge.kind == op::allgather);
      continue;
    }
    REQUIRE(q < path.size());
    CHECK(s.kind == path[q].edge.kind);
    CHECK(s.parts == path[q].edge.factor);
    ++q;
  }
  CHECK(q == path.size());
  CHECK(permutes <= 1);
  CHECK(prog.cost_elements == path_cost_of(path) + v.permute_cost);
}

}  // namespace

TEST_CASE("the naive path (eq. 2) lowers without a permutation", "[lower][naive]") {
  std::size_t n = 0;
  std::vector<testing::workload> ws = testing::mixed_workloads();
  ws.push_back(testing::paper_workload());
  ws.push_back(testing::paper_workload());
  ws.back().partial_sums = true;
  std::uint64_t seed = 70;
  for (const auto& w : ws) {
    for (const auto& t : testing::random_problems(w, 25, ++seed)) {
      INFO(t.mesh << " " << t.from << " -> " << t.to);
      const device_mesh m = parse_mesh(t.mesh);
      const dist_type a = parse_type(m, t.from), b = parse_type(m, t.to);
      const weak_problem p = make_weak_problem(m, a, b, search_options{1e30}).get();
      const auto path = naive_completion(p, p.source);
      check_lowered(m, a, b, p, path);
      // Every rank can slice exactly its target tile out of the replicated array.
      CHECK(lower_path(m, a, b, p, path).value.count(op::allpermute) == 0);
      ++n;
    }
  }
  CHECK(n == 225);
}

TEST_CASE("random weak paths lower to verified programs", "[lower][random]") {
  std::size_t n = 0;
  std::vector<testing::workload> ws = testing::mixed_workloads();
  ws.push_back(testing::paper_workload());
  for (std::size_t i = 0, n0 = ws.size(); i < n0; ++i) {  // and with partial sums
    ws.push_back(ws[i]);
    ws.back().partial_sums = true;
  }
  std::mt19937_64 rng(99);
  std::uint64_t seed = 170;
  for (const auto& w : ws) {
    for (const auto& t : testing::random_problems(w, 40, ++seed)) {
      INFO(t.mesh << " " << t.from << " -> " << t.to);
      const device_mesh m = parse_mesh(t.mesh);
      const dist_type a = parse_type(m, t.from), b = parse_type(m, t.to);
      for (double budget : {1.0, 1e30}) {
        const weak_problem p = make_weak_problem(m, a, b, search_options{budget}).get();
        const auto path = random_path(p, rng, 1 + static_cast<int>(rng() % 6));
        // The naive completion may leave the bound; check it against a large one.
        weak_problem big = p;
        big.bound = UINT64_MAX;
        check_lowered(m, a, b, big, path);
        ++n;
      }
    }
  }
  CHECK(n == 1280);
}

TEST_CASE("tied shortest paths all lower to verified programs of the weak cost", "[lower][ties]") {
  std::size_t n = 0;
  for (const auto& t : testing::random_problems(testing::paper_workload(), 150, 31)) {
    INFO(t.mesh << " " << t.from << " -> " << t.to);
    const device_mesh m = parse_mesh(t.mesh);
    const dist_type a = parse_type(m, t.from), b = parse_type(m, t.to);
    const weak_problem p = make_weak_problem(m, a, b).get();
    const weak_plan wp = search_bgl(p);
    for (const auto& tie : wp.ties) {
      check_lowered(m, a, b, p, tie);
      ++n;
    }
  }
  CHECK(n >= 150);
}

TEST_CASE("lowering errors", "[lower][errors]") {
  const device_mesh m = parse_mesh("{x: 4}");
  const dist_type a = parse_type(m, "[4{x}16]"), b = parse_type(m, "[16]");
  const weak_problem p = make_weak_problem(m, a, b).get();
  SECTION("no plan") {
    const result<program> r = lower(m, a, b, p, weak_plan{});
    CHECK(r.err.code == errc::no_plan);
    CHECK(r.err.message.str() == "no redistribution exists within the memory budget");
  }
  SECTION("synthesize: bad element size, budget, global shapes, syntax") {
    auto code_of = [](auto&& f) {
      try {
        f();
      } catch (const redist_error& e) {
        return e.code();
      }
      return errc::ok;
    };
    CHECK(code_of([&] { (void)synthesize(m, a, b, synth_options{0, 1.0}); }) == errc::bad_size);
    CHECK(code_of([&] { (void)synthesize(m, a, b, synth_options{4, 0.5}); }) == errc::bad_size);
    CHECK(code_of([&] { (void)synthesize(m, a, parse_type(m, "[16, 1]")); }) == errc::global_mismatch);
    try {
      (void)synthesize("{x: 4}", "[4{x}16]", "[16, 2{z}2]");
      FAIL("no exception");
    } catch (const redist_error& e) {
      CHECK(e.code() == errc::unknown_axis);
      CHECK(e.column() == 7);
      CHECK(std::string(e.what()) == "unknown axis 'z' (the mesh declares x) (at column 8 of '[16, 2{z}2]')");
    }
    try {
      (void)synthesize("{x: 4}", "[{x}8]", "[16]");
      FAIL("no exception");
    } catch (const redist_error& e) {
      CHECK(std::string(e.what()) == "global types differ: source is [8], target is [16]");
    }
    try {
      (void)synthesize(m, a, b, synth_options{0, 1.0});
      FAIL("no exception");
    } catch (const redist_error& e) {
      CHECK(std::string(e.what()) == "element size must be at least 1 byte");
    }
  }
}

TEST_CASE("program accessors", "[lower][program]") {
  // The paper's objective (fewest bytes): the programs these sections name.
  constexpr synth_options paper{.goal = objective::bytes};
  const program p = synthesize("{x: 4, y: 8}", "[64{x}256, 1024]", "[256, 128{y}1024]",
                               {.element_bytes = 8, .goal = objective::bytes});
  REDIST_REQUIRE_VERIFIED(p);
  CHECK(p.devices() == 32);
  CHECK(p.rank() == 2);
  CHECK(p.element_bytes == 8);
  CHECK(p.cost_bytes() == p.cost_elements * 8);
  CHECK(p.height() == p.peak_local_elements);
  CHECK(p.memory_efficient());
  CHECK(p.count(op::dynslice) + p.count(op::allgather) + p.count(op::alltoall) + p.count(op::allpermute) ==
        p.steps.size());
  for (const step& s : p.steps) {
    if (s.kind != op::allgather && s.kind != op::alltoall) continue;
    CHECK(s.group_count() * s.parts == 32);
    std::vector<rank_t> flat;
    for (std::size_t g = 0; g < s.group_count(); ++g)
      for (rank_t r : s.group(g)) flat.push_back(r);
    CHECK(flat == s.members);
  }
  SECTION("received elements: (n-1)/n of an alltoall, (n-1) tiles of an allgather, moved tiles of a permute") {
    // A dynslice to 8192 elements, then an allgather of 4: each rank receives 3 tiles.
    REQUIRE(p.steps.size() == 2);
    CHECK(p.steps[1].kind == op::allgather);
    CHECK(p.steps[1].parts == 4);
    CHECK(p.received_elements() == 3 * 8192);
    CHECK(movement_lower_bound(p.m, p.source, p.target) == 3 * 8192);
    const device_mesh m2 = parse_mesh("{a: 2, b: 2}");
    CHECK(synthesize(m2, parse_type(m2, "[{a}8, 8]"), parse_type(m2, "[8, 8]"), paper).received_elements() == 32);
    const program perm = synthesize(m2, parse_type(m2, "[{a}8, {b}8]"), parse_type(m2, "[{b}8, {a}8]"), paper);
    REQUIRE(perm.count(op::allpermute) == 1);
    CHECK(perm.received_elements() == 16);  // ranks 1 and 2 swap their 16-element tiles
    CHECK(movement_lower_bound(m2, perm.source, perm.target) == 16);
  }
  SECTION("at equal cost, the program whose ranks receive least") {
    // Three alltoalls (each rank receives 3 x 16) cost the same 96 elements as the
    // alltoall-alltoall-permute paths (16 + 16 + 32), which keep less in place.
    const device_mesh m3 = parse_mesh("{a: 2, b: 2, c: 2}");
    const program q = synthesize(m3, parse_type(m3, "[{c, b, a}16, 4, 4]"), parse_type(m3, "[16, {a, b}4, {c}4]"), paper);
    REDIST_REQUIRE_VERIFIED(q);
    CHECK(q.cost_elements == 96);
    CHECK(q.count(op::allpermute) == 0);
    CHECK(q.received_elements() == 48);
    CHECK(movement_lower_bound(m3, q.source, q.target) == 28);
  }
  SECTION("the identity is the empty program") {
    const program e = synthesize("{x: 4, y: 8}", "[64{x}256, 1024]", "[64{x}256, 1024]");
    REDIST_REQUIRE_VERIFIED(e);
    CHECK(e.steps.empty());
    CHECK(e.cost_elements == 0);
    CHECK(e.peak_local_elements == 64 * 1024);
  }
  SECTION("a larger budget raises the bound, never the weak cost") {
    const program b2 = synthesize("{x: 4, y: 8}", "[64{x}256, 1024]", "[256, 128{y}1024]",
                                  {.memory_budget = 2.0, .goal = objective::bytes});
    REDIST_REQUIRE_VERIFIED(b2);
    CHECK(b2.memory_bound_elements == 2 * 65536);
    CHECK(b2.cost_elements <= p.cost_elements);
  }
}
