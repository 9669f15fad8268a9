// Theorem 6.7 (near optimality), checked against an exhaustive search over syntactic
// types with the strong rules of Fig. 8 (support/strong_search.hpp), on meshes of up to
// 8 devices: a synthesized program without its final allpermute costs at most the strong
// optimum, and with it at most the optimum plus localsize(target).
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "redist/lower/synthesize.hpp"
#include "support/catch_verify.hpp"
#include "support/random_problems.hpp"
#include "support/strong_search.hpp"

using namespace redist;

namespace {

std::vector<testing::workload> small_workloads() {
  std::vector<testing::workload> ws;
  ws.push_back(testing::paper_workload(1 << 14));  // {a: 2, b: 2, c: 2}
  auto add = [&](std::vector<std::pair<std::string, std::uint64_t>> axes, int max_dims) {
    testing::workload w;
    w.axes = std::move(axes);
    w.max_dims = max_dims;
    w.max_elements = 1 << 14;
    ws.push_back(w);
  };
  add({{"x", 4}, {"y", 2}}, 5);
  add({{"x", 2}, {"y", 3}}, 5);
  add({{"x", 8}}, 4);
  add({{"x", 6}}, 4);
  add({{"x", 2}, {"y", 2}}, 6);
  add({{"x", 3}, {"y", 2}}, 4);
  add({{"x", 5}}, 3);
  add({{"x", 7}}, 3);
  return ws;
}

struct tally {
  std::size_t problems = 0, with_permute = 0, optimum_has_permute = 0, strictly_better = 0;
};

void compare(const testing::problem_text& t, double budget, tally& n) {
  INFO(t.mesh << " " << t.from << " -> " << t.to << " (budget " << budget << ")");
  const device_mesh m = parse_mesh(t.mesh);
  REQUIRE(m.devices <= 8);
  const dist_type a = parse_type(m, t.from), b = parse_type(m, t.to);
  const program p = synthesize(m, a, b, {.element_bytes = 4, .memory_budget = budget, .goal = objective::bytes});
  const auto v = REDIST_REQUIRE_VERIFIED(p);
  const testing::strong_result s = testing::strong_search(m, a, b, p.memory_bound_elements);
  REQUIRE(s.found);
  // The strong optimum's own path stays within the bound and adds up.
  std::uint64_t sum = 0;
  for (const auto& st : s.path) {
    CHECK(local_size(m, st.after) <= p.memory_bound_elements);
    sum += st.cost;
  }
  CHECK(sum == s.cost);
  INFO("ours: " << testing::describe(p) << "; strong optimum " << s.cost << " with " << s.permutes << " allpermute(s)");
  CHECK(p.cost_elements - v.permute_cost <= s.cost);
  CHECK(p.cost_elements <= s.cost + local_size(m, b));
  ++n.problems;
  n.with_permute += p.count(op::allpermute) > 0;
  n.optimum_has_permute += s.permutes > 0;
  n.strictly_better += p.cost_elements < s.cost;
}

}  // namespace

TEST_CASE("Theorem 6.7 against the exhaustive strong search (<= 8 devices)", "[near_optimality]") {
  tally n;
  std::uint64_t seed = 600;
  for (const auto& w : small_workloads())
    for (const auto& t : testing::random_problems(w, w.axes.size() == 3 ? 200 : 60, ++seed)) compare(t, 1.0, n);
  CHECK(n.problems == 680);
  // The comparison is not vacuous: many problems need a permutation somewhere.
  CHECK(n.optimum_has_permute > 50);
  CHECK(n.with_permute > 50);
  WARN("near optimality: " << n.problems << " problems, " << n.with_permute << " programs with an allpermute, "
                           << n.optimum_has_permute << " strong optima with one, " << n.strictly_better
                           << " strictly cheaper than the strong optimum");
}

TEST_CASE("the same comparison with partial sums (strong allreduce / reducescatter)", "[near_optimality][sums]") {
  tally n;
  std::size_t with_sums = 0;
  std::uint64_t seed = 750;
  for (auto w : small_workloads()) {
    w.partial_sums = true;
    for (const auto& t : testing::random_problems(w, 40, ++seed)) {
      with_sums += t.from.find("sum{") != std::string::npos;
      compare(t, 1.0, n);
    }
  }
  CHECK(n.problems == 360);
  CHECK(with_sums > 50);
}

TEST_CASE("Theorem 6.7 with a memory budget of 2 (the strong search gets the same bound)",
          "[near_optimality][budget]") {
  tally n;
  std::uint64_t seed = 900;
  for (const auto& w : small_workloads())
    for (const auto& t : testing::random_problems(w, 15, ++seed)) compare(t, 2.0, n);
  CHECK(n.problems == 135);
}
