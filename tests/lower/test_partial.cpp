// Creating pending values (lower/partial.hpp, core/rules.hpp rule_partial and
// rule_partial_padded): DTensor's Replicate() -> Partial(), Shardy's sharded_to_unreduced,
// and every target whose pending axes the source lacks. Named cases (the one-step plans,
// every reduction on real data, the steps' groups), random problems (the targets of random problems given new pending axes of a random kind: the
// plan verified by tests/support/verify.hpp and the executor's check, run on the host with
// every element checked, read back from its JSON), plan equality between the compile-time
// and run-time searches, and the errors.
//
// The random problems' programs are also written, one JSON document per line, to
// `partial_programs.jsonl`; the ctest `lower_partial_python_check` runs
// tests/tools/check_program.py over them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fuzz/host_run.hpp"
#include "redist/core/dtensor.hpp"
#include "redist/lower/between.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/program_json.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/program_check.hpp"
#include "redist/static/plan.hpp"
#include "support/memory_formula.hpp"
#include "support/random_problems.hpp"
#include "support/verify.hpp"

using namespace redist;

namespace {

/// The program is well-formed for both checkers and exact on the host with 32-bit integers
/// and doubles.
void check_runs(const program& p) {
  INFO(testing::describe(p));
  const testing::verify_result v = testing::verify(p);
  INFO(v.message);
  CHECK(v.ok);
  CHECK(detail::check_program(p).error.empty());
  program q = p;  // costs are in elements: the same program for elements of any size
  q.element_bytes = sizeof(std::int32_t);
  host_backend host(static_cast<rank_t>(q.m.devices));
  const executor<std::int32_t, host_backend> ex(host, q);  // its buffers: the memory formula
  CHECK(ex.peak_bytes_held() == testing::expected_bytes_held(q, sizeof(std::int32_t)));
  CHECK(fuzz::host_run_exact<std::int32_t>(q));
  q.element_bytes = sizeof(double);
  CHECK(fuzz::host_run_exact<double>(q));
}

}  // namespace

TEST_CASE("partial: Replicate() -> Partial() is one local step, exact for every reduction", "[partial]") {
  const device_mesh m = parse_mesh("{x: 4}");
  for (reduction r : all_reductions) {
    const std::string kind(reduction_name(r));
    INFO(kind);
    const program p = synthesize(m, parse_type(m, "[12, 3]"), parse_type(m, "[12, 3] " + kind + "{x}"));
    REQUIRE(p.steps.size() == 1);
    const step& s = p.steps[0];
    CHECK(s.kind == op::partial);
    CHECK(s.reduce == r);
    CHECK(s.members == std::vector<rank_t>{0, 1, 2, 3});
    CHECK(s.cost == 0);
    CHECK(p.cost_elements == 0);
    CHECK(p.received_elements() == 0);
    check_runs(p);
  }
  // DTensor's notation, and a target kept sharded: one group per tile, in rank order.
  const device_mesh m2 = parse_mesh("{x: 2, y: 2}");
  const std::uint64_t shape[] = {12, 3};
  const program q = synthesize(m2, from_dtensor(m2, shape, "[Shard(0), Replicate()]"),
                               from_dtensor(m2, shape, "[Shard(0), Partial('max')]"));
  REQUIRE(q.steps.size() == 1);
  CHECK(q.steps[0].members == std::vector<rank_t>{0, 1, 2, 3});
  CHECK(q.steps[0].parts == 2);
  check_runs(q);
  const program q2 = synthesize(m2, parse_type(m2, "[{y}12, 3]"), parse_type(m2, "[{y}12, 3] prod{x}"));
  CHECK(q2.steps.back().members == std::vector<rank_t>{0, 2, 1, 3});
  check_runs(q2);
}

TEST_CASE("partial: an unpadded partial step rewrites its tile in place, at the end of a program the output tile", "[partial]") {
  // The gathered tile lands in the output tile and the partial step keeps it or writes the
  // identity over it there: no scratch (a scratch tile of 32 elements before).
  const device_mesh m = parse_mesh("{x: 2, y: 2}");
  host_backend host(4);
  for (reduction r : all_reductions) {
    const std::string kind(reduction_name(r));
    INFO(kind);
    const program p = synthesize(m, parse_type(m, "[{x}8, 4]"), parse_type(m, "[8, 4] " + kind + "{y}"));
    REQUIRE(p.steps.size() == 2);
    CHECK(p.steps[0].kind == op::allgather);
    CHECK(p.steps[1].kind == op::partial);
    CHECK(p.steps[1].concat_dim < 0);
    CHECK(executor<std::int32_t, host_backend>(host, p).scratch_elements() == 0);
    check_runs(p);
  }
  // In the middle of a program the step runs where the tile before it lives: allgather into
  // scratch, partial there, dynslice into the output tile (32 elements of scratch; 64 when
  // every step wrote another buffer).
  const dist_type mid = parse_type(m, "[8, 4] sum{y}");
  const program q = detail::concat_programs(synthesize(m, parse_type(m, "[{x}8, 4]"), mid),
                                            synthesize(m, mid, parse_type(m, "[{x}8, 4] sum{y}")));
  REQUIRE(q.steps.size() == 3);
  CHECK(q.steps[1].kind == op::partial);
  CHECK(q.steps[2].kind == op::dynslice);
  CHECK(executor<std::int32_t, host_backend>(host, q).scratch_elements() == 32);
  check_runs(q);
}

TEST_CASE("partial: Shardy's sharded_to_unreduced is one padded step, nothing moves", "[partial]") {
  struct named {
    const char* mesh;
    const char* from;
    const char* to;
    int concat_dim;
    std::uint64_t parts;
  };
  // Shardy's sharded_to_unreduced tests (one dimension each), in redist's notation, as an
  // earlier version of reshard_to_collectives.mlir had them (sharded_to_unreduced_1,
  // _single_axis, _multiple_axes, _with_subaxis, on these meshes). They now live in
  // insert_explicit_reshards/unreduced.mlir (sharded_to_unreduced, _single_axis,
  // _multiple_axes, _multiple_dims, _with_subaxis on {x: 4, y: 2, z: 4}: tests/peers/cases.json).
  const named cases[] = {
      {"{x: 6}", "[{x}24, 8]", "[24, 8] sum{x}", 0, 6},
      {"{x: 2, y: 2}", "[{y}16, {x}8]", "[{y}16, 8] sum{x}", 1, 2},
      {"{x: 2, y: 2, z: 2}", "[{y, z, x}16, 8]", "[{x}16, 8] sum{y, z}", 0, 4},
      {"{x: 2, y: 8}", "[{y}16, {x}8]", "[{y:(1)4}16, {x}8] sum{y:(4)2}", 0, 2},
  };
  for (const named& c : cases) {
    INFO(c.mesh << " " << c.from << " -> " << c.to);
    const device_mesh m = parse_mesh(c.mesh);
    const program p = synthesize(m, parse_type(m, c.from), parse_type(m, c.to));
    REQUIRE(p.steps.size() == 1);
    CHECK(p.steps[0].kind == op::partial);
    CHECK(p.steps[0].concat_dim == c.concat_dim);
    CHECK(p.steps[0].parts == c.parts);
    CHECK(p.cost_elements == 0);
    CHECK(p.received_elements() == 0);
    CHECK(p.memory_efficient());
    check_runs(p);
  }
  // _multiple_dims: a padded step per dimension.
  const device_mesh m3 = parse_mesh("{x: 2, y: 2, z: 2}");
  const program md = synthesize(m3, parse_type(m3, "[{z, y}16, {x}8]"), parse_type(m3, "[{y}16, 8] sum{x, z}"));
  REQUIRE(md.steps.size() == 2);
  CHECK((md.steps[0].kind == op::partial && md.steps[0].concat_dim == 0));
  CHECK((md.steps[1].kind == op::partial && md.steps[1].concat_dim == 1));
  check_runs(md);
  // Every kind that has an identity pads; avg gathers, then keeps every member's tile.
  const device_mesh m2 = parse_mesh("{x: 2, y: 2}");
  for (reduction r : all_reductions) {
    const std::string kind(reduction_name(r));
    INFO(kind);
    const program p = synthesize(m2, parse_type(m2, "[{y}16, {x}8]"), parse_type(m2, "[{y}16, 8] " + kind + "{x}"));
    CHECK(p.steps.back().kind == op::partial);
    CHECK(p.steps.back().concat_dim == (r == reduction::avg ? -1 : 1));
    CHECK(p.count(op::allgather) == (r == reduction::avg ? 1u : 0u));
    check_runs(p);
  }
  // rule_partial_padded refuses avg, and where the axes are not the minor-most.
  CHECK(std::string(rule_partial_padded(m2, parse_type(m2, "[{y}16, {x}8]"), 1, 1, reduction::avg).err.message.view())
            .find("partial: the mean of zero-padded tiles") == 0);
  CHECK(std::string(rule_partial_padded(m2, parse_type(m2, "[{y}16, 8]"), 1, 1, reduction::sum).err.message.view()) ==
        "partial: the dimension is not partitioned by that many axes");
}

TEST_CASE("partial: pending values reduced by one kind, then created by another", "[partial]") {
  const device_mesh m = parse_mesh("{x: 4, y: 2}");
  const program p = synthesize(m, parse_type(m, "[{y}4, 8] sum{x}"), parse_type(m, "[4, {x}8] max{y}"));
  CHECK(p.steps.back().kind == op::partial);
  CHECK(p.count(op::partial) == 1);
  check_runs(p);
  // Kept pending axes keep their kind.
  CHECK_THROWS_WITH(synthesize(m, parse_type(m, "[4, 8] sum{x}"), parse_type(m, "[4, 8] max{x, y}")),
                    "the source's partial values combine by sum, the target's by max: a redistribution keeps the "
                    "reduction kind");
  // An exchange before the partial step (uneven types, where the exchange is a candidate).
  const device_mesh m3 = parse_mesh("{x: 2, y: 4}");
  const plan_choice c = choose_plan(m3, parse_type(m3, "[{x}5, 3]"), parse_type(m3, "[5, {x}3] sum{y}"));
  REQUIRE(c.candidates.size() == 2);
  for (const plan_candidate& k : c.candidates) {
    CHECK(k.prog.steps.back().kind == op::partial);
    check_runs(k.prog);
  }
}

TEST_CASE("partial: rule_partial and the JSON form", "[partial]") {
  const device_mesh m = parse_mesh("{x: 2, y: 3}");
  const dist_type t = parse_type(m, "[{x}4, 6]");
  const std::uint8_t y[] = {1}, x[] = {0};
  const result<dist_type> ok = rule_partial(m, t, y, 1, reduction::min);
  REQUIRE(ok.ok());
  CHECK(ok.value == parse_type(m, "[{x}4, 6] min{y}"));
  CHECK(std::string(rule_partial(m, t, x, 1, reduction::sum).err.message.view()) ==
        "partial: the axis is not a free sub-axis of the type");
  CHECK(std::string(rule_partial(m, ok.value, y, 0, reduction::min).err.message.view()) == "partial: no axis given");
  const dist_type pending = parse_type(m, "[4, 6] sum{x}");
  CHECK(std::string(rule_partial(m, pending, y, 1, reduction::max).err.message.view()) ==
        "partial: the type's partial values combine by another reduction");

  const program p = synthesize(m, t, parse_type(m, "[{x}4, 6] avg{y}"));
  const std::string text = program_json_text(p);
  CHECK(text.find("\"op\": \"partial\"") != std::string::npos);
  CHECK(text.find("\"reduce\": \"avg\"") != std::string::npos);
  const program back = program_from_json_text(text);
  REQUIRE(back.steps.size() == p.steps.size());
  CHECK(back.steps[0].kind == op::partial);
  CHECK(back.steps[0].reduce == reduction::avg);
  CHECK(back.steps[0].members == p.steps[0].members);
  nlohmann::json j = nlohmann::json::parse(text);
  j["steps"][0]["reduce"] = "sum";
  try {
    (void)program_from_json(j);
    FAIL("read a partial step of another kind than the target's");
  } catch (const redist_error& e) {
    CHECK(std::string(e.what()) ==
          "program JSON: steps[0].reduce: 'sum' but the target's partial values combine by avg");
  }
  j["steps"][0]["reduce"] = "avg";
  j["steps"][0]["groups"] = {{0, 2, 4}, {1, 3, 5}};  // along x: ranks holding different tiles
  j["target"] = "[{x}4, 6] avg{x}";
  try {
    (void)program_from_json(j);
    FAIL("read a partial step over a partitioning axis");
  } catch (const redist_error& e) {
    CHECK(std::string(e.what()).find("program JSON: ") == 0);
  }
}

TEST_CASE("partial: random targets with new pending axes, checked and run", "[partial][random]") {
  std::ofstream jsonl("partial_programs.jsonl");
  std::mt19937_64 rng(2611);
  std::size_t planned = 0, padded = 0;
  for (testing::workload w : testing::mixed_workloads(1 << 11)) {
    w.max_dims = 3;
    w.partial_sums = true;
    for (const testing::problem_text& pt : testing::random_problems(w, 100, rng())) {
      const device_mesh m = parse_mesh(pt.mesh);
      const dist_type a = parse_type(m, pt.from);
      dist_type b = parse_type(m, pt.to);
      // New pending axes: free sub-axes of the target, each with probability 1/2.
      std::uint8_t xs[max_subaxes];
      int n = 0;
      std::uint64_t pending_a = 0;
      for (int i = 0; i < a.nsum; ++i) pending_a |= std::uint64_t{1} << a.sum[i];
      for (int k = 0; k < m.nsub; ++k)
        if (!((used_mask(b) >> k) & 1) && !((pending_a >> k) & 1) && rng() % 2 == 0)
          xs[n++] = static_cast<std::uint8_t>(k);
      if (n == 0) continue;
      const reduction r = b.nsum > 0 ? b.reduce : all_reductions[rng() % 5];
      const result<dist_type> bt = rule_partial(m, b, xs, n, r);
      REQUIRE(bt.ok());
      b = bt.value;
      INFO(pt.mesh << " " << pt.from << " -> " << std::string(type_text(m, b).view()));
      const program p = synthesize(m, a, b);
      CHECK(p.target == b);
      CHECK(p.steps.back().kind == op::partial);
      padded += p.steps.back().concat_dim >= 0 || (p.steps.size() > 1 && p.steps[p.steps.size() - 2].concat_dim >= 0 &&
                                                   p.steps[p.steps.size() - 2].kind == op::partial);
      check_runs(p);
      const std::string text = program_json_text(p);
      CHECK(program_hash(program_from_json_text(text)) == program_hash(p));
      std::string line = text;
      line.erase(std::remove(line.begin(), line.end(), '\n'), line.end());
      jsonl << line << '\n';
      ++planned;
    }
  }
  CHECK(planned >= 150);
  CHECK(padded >= 30);
}

namespace {
using XY = mesh<"{x: 2, y: 4}">;
using Sharded = dtype<XY, "[{x}8, 6]">;
using PendingY = dtype<XY, "[8, {x}6] sum{y}">;
constexpr auto compile_time_plan = plan_for<Sharded, PendingY>();
using ShardedXY = dtype<XY, "[{y}8, {x}6]">;
using PendingX = dtype<XY, "[{y}8, 6] max{x}">;
constexpr auto padded_plan = plan_for<ShardedXY, PendingX>();
static_assert(padded_plan.steps() == 1 && padded_plan.step(0).kind == op::partial &&
                  padded_plan.step(0).concat_dim == 1 && padded_plan.step(0).reduce == reduction::max,
              "the compile-time plan pads, as the run-time one");
static_assert(compile_time_plan.steps() > 0 &&
                  compile_time_plan.step(compile_time_plan.steps() - 1).kind == op::partial,
              "the compile-time plan ends with the partial step");
}  // namespace

TEST_CASE("partial: the compile-time plan is the run-time plan", "[partial][static]") {
  const device_mesh m = parse_mesh("{x: 2, y: 4}");
  const program p = search_program(m, parse_type(m, "[{x}8, 6]"), parse_type(m, "[8, {x}6] sum{y}"), synth_options{});
  const program q = compile_time_plan.to_program();
  REQUIRE(p.steps.size() == q.steps.size());
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    CHECK(p.steps[i].kind == q.steps[i].kind);
    CHECK(p.steps[i].members == q.steps[i].members);
    CHECK(p.steps[i].index == q.steps[i].index);
    CHECK(p.steps[i].reduce == q.steps[i].reduce);
  }
  check_runs(q);
  const program pr = search_program(m, parse_type(m, "[{y}8, {x}6]"), parse_type(m, "[{y}8, 6] max{x}"), synth_options{});
  const program pq = padded_plan.to_program();
  REQUIRE(pr.steps.size() == 1);
  CHECK(pr.steps[0].members == pq.steps[0].members);
  CHECK(pr.steps[0].concat_dim == pq.steps[0].concat_dim);
  check_runs(pq);
}
