// tests/static/test_cross_check.cpp -- the constexpr search and the Boost.Graph search on
// random problems: same cost and height, and the same program after lowering; every
// program verifies box by box. (The constexpr search is evaluated at run time here; the
// generated test static_cases.cpp evaluates a subset at compile time.)
#include <catch2/catch.hpp>

#include "redist/lower/lower.hpp"
#include "redist/search/bgl_search.hpp"
#include "redist/search/constexpr_search.hpp"
#include "support/random_problems.hpp"
#include "support/verify.hpp"

TEST_CASE("constexpr and Boost.Graph searches agree on random problems", "[static][search]") {
  std::vector<redist::testing::workload> ws = redist::testing::mixed_workloads();
  ws.push_back(redist::testing::paper_workload());
  std::size_t problems = 0, identical = 0;
  for (std::size_t w = 0; w < ws.size(); ++w) {
    for (const auto& pt : redist::testing::random_problems(ws[w], 80, 1000 + w)) {
      INFO(pt.mesh << " " << pt.from << " -> " << pt.to);
      const redist::device_mesh m = redist::parse_mesh(pt.mesh);
      const redist::dist_type a = redist::parse_type(m, pt.from), b = redist::parse_type(m, pt.to);
      const redist::weak_problem p = redist::make_weak_problem(m, a, b).get();
      const redist::weak_plan rt = redist::search_bgl(p);
      const redist::weak_plan ct = redist::search_constexpr(p);
      REQUIRE(rt.found);
      REQUIRE(ct.found);
      CHECK(rt.total.cost == ct.total.cost);
      CHECK(rt.total.height == ct.total.height);
      CHECK(rt.total.steps == ct.total.steps);
      const redist::program x = redist::lower(m, a, b, p, rt).get();
      const redist::program y = redist::lower(m, a, b, p, ct).get();
      bool same = x.steps.size() == y.steps.size() && x.cost_elements == y.cost_elements;
      for (std::size_t i = 0; same && i < x.steps.size(); ++i)
        same = x.steps[i].kind == y.steps[i].kind && x.steps[i].members == y.steps[i].members &&
               x.steps[i].index == y.steps[i].index && x.steps[i].dest == y.steps[i].dest;
      CHECK(same);
      const auto vx = redist::testing::verify(x), vy = redist::testing::verify(y);
      INFO(vx.message << vy.message);
      CHECK(vx.ok);
      CHECK(vy.ok);
      ++problems;
      identical += same;
    }
  }
  CHECK(problems >= 500);
  CHECK(identical == problems);
}
