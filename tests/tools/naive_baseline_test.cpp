// Tests of benchmarks/baselines/naive.hpp: the all-gather-then-slice baseline (seed 000 eq. 2).
#include <catch2/catch.hpp>

#include "baselines/naive.hpp"
#include "redist/lower/synthesize.hpp"
#include "support/random_problems.hpp"

using namespace redist;

TEST_CASE("the naive path gathers every partitioned dimension, then slices the target's") {
  device_mesh m = parse_mesh("{x: 2, y: 3, z: 2}");
  dist_type a = parse_type(m, "[{x}4, 6, {y, z}12]");
  dist_type b = parse_type(m, "[{z, x}4, {y}6, 12]");
  weak_problem p = make_weak_problem(m, a, b).get();
  auto path = baselines::naive_path(p);
  REQUIRE(path.size() == 4);
  CHECK(path[0].edge == weak_edge{op::allgather, 0, -1, 2});
  CHECK(path[1].edge == weak_edge{op::allgather, 2, -1, 6});
  CHECK(path[2].edge == weak_edge{op::dynslice, -1, 0, 4});
  CHECK(path[3].edge == weak_edge{op::dynslice, -1, 1, 3});
  CHECK(path[1].after == shape{3, {1, 1, 1}});
  CHECK(path[1].weight.cost == 4 * 6 * 12);  // allgather: localsize after
  CHECK(path[3].after == p.target);
}

TEST_CASE("the naive program is correct-looking and above the memory bound") {
  device_mesh m = parse_mesh("{devs: 32}");
  dist_type a = parse_type(m, "[32, 64{devs}2048]"), b = parse_type(m, "[1{devs}32, 2048]");
  program p = baselines::naive_program(m, a, b, 2);
  REQUIRE(p.steps.size() == 2);
  CHECK(p.steps[0].kind == op::allgather);
  CHECK(p.steps[0].members.size() == 32);
  CHECK(p.steps[1].kind == op::dynslice);
  CHECK(p.cost_elements == 32 * 2048);  // the whole array, vs 2048 for the one alltoall
  CHECK(p.cost_bytes() == 2 * 32 * 2048);
  CHECK(p.peak_local_elements == 32 * 2048);
  CHECK(p.memory_bound_elements == 2048);
  CHECK_FALSE(p.memory_efficient());
  CHECK(synthesize(m, a, b, {.goal = objective::bytes}).cost_elements == 2048);
}

TEST_CASE("the naive program never beats the synthesized one on the paper workload") {
  // With the memory bound the search may in principle pay more than an unbounded path;
  // on this workload it does not, and the naive path moves the whole array.
  for (const auto& pt : testing::random_problems(testing::paper_workload(), 200, 11)) {
    INFO(pt.mesh << " " << pt.from << " -> " << pt.to);
    device_mesh m = parse_mesh(pt.mesh);
    dist_type a = parse_type(m, pt.from), b = parse_type(m, pt.to);
    program naive = baselines::naive_program(m, a, b);
    program best = synthesize(m, a, b);
    CHECK(naive.cost_elements >= best.cost_elements);
    CHECK(naive.peak_local_elements >= best.peak_local_elements);
    CHECK(naive.memory_bound_elements == best.memory_bound_elements);
  }
}

TEST_CASE("the naive path all-reduces the partial sums the target does not keep") {
  device_mesh m = parse_mesh("{a: 2, b: 2, c: 2}");
  dist_type a = parse_type(m, "[{a}8, 4] sum{b, c}"), b = parse_type(m, "[8, {a}4] sum{c}");
  weak_problem p = make_weak_problem(m, a, b).get();
  auto path = baselines::naive_path(p);
  REQUIRE(path.size() == 3);
  CHECK(path[0].edge == weak_edge{op::allreduce, 2, -1, 2});  // `from` = rank: the sum column
  CHECK(path[0].after.sums == 2);
  CHECK(path[1].edge == weak_edge{op::allgather, 0, -1, 2});
  CHECK(path[2].edge == weak_edge{op::dynslice, -1, 1, 2});
  program prog = baselines::naive_program(m, a, b);
  CHECK(prog.count(op::allreduce) == 1);
  CHECK(prog.cost_elements == 2 * 16 + 32);  // ring allreduce 2 x local, then the gather
}
