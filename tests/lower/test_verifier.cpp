// Tests of the test verifier itself (tests/support/verify.hpp): hand-written programs with
// exact messages, and mutants of synthesized programs, every one of which it must reject.
// A checker that accepts everything would make the other tests vacuous.
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "redist/lower/synthesize.hpp"
#include "support/random_problems.hpp"
#include "support/verify.hpp"

using namespace redist;

namespace {

/// {x: 2}, [2{x}4] -> [4] by one allgather with the given member order.
program gather_program(std::vector<rank_t> members) {
  program p;
  p.m = parse_mesh("{x: 2}");
  p.source = parse_type(p.m, "[2{x}4]");
  p.target = parse_type(p.m, "[4]");
  step s;
  s.kind = op::allgather;
  s.concat_dim = 0;
  s.parts = 2;
  s.members = std::move(members);
  s.after = shape_of(p.m, p.target);
  s.local_after = 4;
  s.cost = 4;
  p.steps.push_back(s);
  p.cost_elements = 4;
  p.peak_local_elements = 4;
  p.memory_bound_elements = 4;
  return p;
}

}  // namespace

TEST_CASE("verifier: hand-written programs and exact messages", "[verifier]") {
  const program good = gather_program({0, 1});
  const auto ok = testing::verify(good);
  INFO(ok.message);
  CHECK(ok.ok);
  CHECK(ok.cost == 4);
  CHECK(ok.peak == 4);
  CHECK(ok.steps_checked == 1);

  auto message = [](const program& p) {
    const auto v = testing::verify(p);
    CHECK_FALSE(v.ok);
    return v.message;
  };
  CHECK(message(gather_program({1, 0})) ==
        "step 0 (allgather): group 0: rank 0's box [0:2) does not follow member 1's box [2:4) along dimension 0");
  CHECK(message(gather_program({0, 0})) == "step 0 (allgather): rank 0 is in two groups");
  CHECK(message(gather_program({0})) == "step 0 (allgather): members lists 1 ranks, the mesh has 2");
  program nothing = gather_program({0, 1});
  nothing.steps.clear();
  nothing.cost_elements = 0;
  nothing.peak_local_elements = 2;
  CHECK(message(nothing) == "after the last step: rank 0 ends with [0:2) but its target tile is [0:4)");
  program over = gather_program({0, 1});
  over.memory_bound_elements = 3;
  CHECK(message(over) == "step 0 (allgather): local size 4 exceeds the memory bound 3");
  program cost = gather_program({0, 1});
  cost.cost_elements = 5;
  CHECK(message(cost) == "after the last step: cost_elements is 5, Fig. 11 gives 4");
  program peak = gather_program({0, 1});
  peak.peak_local_elements = 8;
  CHECK(message(peak) == "after the last step: peak_local_elements is 8, the true peak is 4");
  program step_cost = gather_program({0, 1});
  step_cost.steps[0].cost = 2;
  CHECK(message(step_cost) == "step 0 (allgather): step cost 2, Fig. 11 gives 4");

  // A dynslice keeping the wrong chunk, and a permutation that is not a bijection.
  program slice;
  slice.m = parse_mesh("{x: 2}");
  slice.source = parse_type(slice.m, "[4]");
  slice.target = parse_type(slice.m, "[2{x}4]");
  step d;
  d.kind = op::dynslice;
  d.split_dim = 0;
  d.parts = 2;
  d.index = {1, 0};
  d.after = shape_of(slice.m, slice.target);
  d.local_after = 2;
  slice.steps.push_back(d);
  slice.peak_local_elements = 4;
  slice.memory_bound_elements = 4;
  CHECK(message(slice) == "after the last step: rank 0 ends with [2:4) but its target tile is [0:2)");
  step perm;
  perm.kind = op::allpermute;
  perm.dest = {1, 1};
  perm.after = d.after;
  perm.local_after = 2;
  perm.cost = 2;
  slice.steps.push_back(perm);
  slice.cost_elements = 2;
  CHECK(message(slice) == "step 1 (allpermute): rank 1 receives two tiles (dest is not a bijection)");
  slice.steps[1].dest = {1, 0};
  const auto fixed = testing::verify(slice);
  INFO(fixed.message);
  CHECK(fixed.ok);
  CHECK(fixed.permute_cost == 2);
}

TEST_CASE("verifier: partial sums must be reduced exactly once", "[verifier][sums]") {
  program p = synthesize("{x: 2, y: 2}", "[4{x}8] sum{y}", "[4{x}8]");
  const auto v = testing::verify(p);
  INFO(testing::describe(p) << ": " << v.message);
  REQUIRE(v.ok);
  // Without its reductions the sums are not complete.
  program skipped = p;
  skipped.steps.clear();
  skipped.cost_elements = 0;
  skipped.peak_local_elements = local_size(p.m, p.source);
  const auto s = testing::verify(skipped);
  CHECK_FALSE(s.ok);
  CHECK(s.message.find("of the 2 partials") != std::string::npos);
}

TEST_CASE("verifier: every mutant of a synthesized program is rejected", "[verifier][mutants]") {
  std::vector<testing::workload> ws = testing::mixed_workloads();
  ws.push_back(testing::paper_workload());
  for (std::size_t i = 0, n0 = ws.size(); i < n0; ++i) {
    ws.push_back(ws[i]);
    ws.back().partial_sums = true;
  }
  std::size_t programs = 0, mutants = 0;
  std::uint64_t seed = 1234;
  for (const auto& w : ws) {
    for (const auto& t : testing::random_problems(w, 20, ++seed)) {
      const program p = synthesize(t.mesh, t.from, t.to);
      INFO(testing::describe(p));
      REQUIRE(testing::verify(p).ok);
      ++programs;
      auto reject = [&](const std::string& what, const std::function<void(program&)>& mutate) {
        program q = p;
        mutate(q);
        const auto v = testing::verify(q);
        INFO("mutant: " << what);
        CHECK_FALSE(v.ok);
        CHECK_FALSE(v.message.empty());
        ++mutants;
      };
      reject("cost + 1", [](program& q) { ++q.cost_elements; });
      reject("peak + 1", [](program& q) { ++q.peak_local_elements; });
      if (p.peak_local_elements > 0)
        reject("bound below the peak", [](program& q) { q.memory_bound_elements = q.peak_local_elements - 1; });
      for (std::size_t k = 0; k < p.steps.size(); ++k) {
        const step& s = p.steps[k];
        reject("drop step " + std::to_string(k),
               [k](program& q) { q.steps.erase(q.steps.begin() + static_cast<std::ptrdiff_t>(k)); });
        reject("step cost + 1", [k](program& q) { ++q.steps[k].cost; });
        reject("local_after + 1", [k](program& q) { ++q.steps[k].local_after; });
        if ((s.kind == op::allgather || s.kind == op::alltoall || s.kind == op::reducescatter) && s.parts >= 2)
          reject("swap the first two members",
                 [k](program& q) { std::swap(q.steps[k].members[0], q.steps[k].members[1]); });
        if (s.kind == op::allreduce && s.parts >= 2)
          reject("a member twice", [k](program& q) { q.steps[k].members[0] = q.steps[k].members[1]; });
        if (s.kind == op::dynslice)
          reject("rank 0 keeps another chunk", [k](program& q) {
            q.steps[k].index[0] = static_cast<rank_t>((q.steps[k].index[0] + 1) % q.steps[k].parts);
          });
        if (s.kind == op::allpermute)
          reject("dest not a bijection", [k](program& q) { q.steps[k].dest[0] = q.steps[k].dest[1]; });
      }
    }
  }
  CHECK(programs == 320);
  CHECK(mutants > 2000);
}
