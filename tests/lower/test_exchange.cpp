// Tests of the exchange program (redist/lower/exchange.hpp) against the independent
// checker (tests/support/verify.hpp) and the library's own check (runtime/program_check.hpp):
// on random problems both accept it and its cost is the data-movement lower bound; both
// reject corrupted exchanges, each with its message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "redist/core/offsets.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/runtime/program_check.hpp"
#include "support/random_problems.hpp"
#include "support/verify.hpp"
#include "support/test_boxes.hpp"

using namespace redist;
using redist::testing::make_box;

namespace {

/// A program of exchanges through `stages` (one box per rank each), the last of which
/// should be the target's tiles (then it claims the target as its exact type); costs from
/// the library's plan (0 where it has none), so that the checkers' own findings are what
/// the tests see.
program exchanges(const std::string& mesh, const std::string& from, const std::string& to,
                  const std::vector<std::vector<box>>& stages) {
  program p;
  p.m = parse_mesh(mesh);
  p.source = parse_type(p.m, from);
  p.target = parse_type(p.m, to);
  const int R = p.source.rank;
  p.memory_bound_elements = std::max(local_size(p.m, p.source), local_size(p.m, p.target));
  p.peak_local_elements = local_size(p.m, p.source);
  std::vector<box> before = tile_boxes(p.m, p.source);
  for (std::size_t k = 0; k < stages.size(); ++k) {
    const std::vector<box>& after = stages[k];
    step s;
    s.kind = op::exchange;
    s.boxes = flatten_boxes(after);
    s.after.rank = R;
    for (int d = 0; d < R; ++d) {
      const std::uint64_t e = after[0].extent(d);
      s.after.parts[d] = e ? p.source.dims[d].global / e : 0;
    }
    s.local_after = after[0].size();
    const exchange_plan x = plan_exchange(before, after);
    s.cost = x.error.empty() ? x.max_received : 0;
    if (k + 1 == stages.size() && after == tile_boxes(p.m, p.target)) {
      s.type_after = p.target;
      s.type_exact = true;
    }
    p.cost_elements += s.cost;
    p.peak_local_elements = std::max(p.peak_local_elements, s.local_after);
    p.steps.push_back(s);
    before = after;
  }
  return p;
}

std::string verify_error(const program& p) {
  const auto v = testing::verify(p);
  return v.ok ? std::string("accepted") : v.message;
}

std::string check_error(const program& p) {
  const detail::program_shapes s = detail::check_program(p);
  return s.error.empty() ? std::string("accepted") : s.error;
}

// {x: 2, y: 3}: [3{x}6, 2{y}6] -> [2{y}6, 3{x}6]; rank = 3 x + y.
const std::string mesh23 = "{x: 2, y: 3}", from23 = "[3{x}6, 2{y}6]", to23 = "[2{y}6, 3{x}6]";

std::vector<box> target23() {
  const device_mesh m = parse_mesh(mesh23);
  return tile_boxes(m, parse_type(m, to23));
}

}  // namespace

TEST_CASE("exchange programs on random problems: both checkers accept, the cost is the lower bound", "[exchange]") {
  std::vector<testing::workload> ws;
  auto add = [&](std::vector<std::pair<std::string, std::uint64_t>> axes, int max_dims) {
    testing::workload w;
    w.axes = std::move(axes);
    w.max_dims = max_dims;
    ws.push_back(w);
  };
  add({{"a", 2}, {"b", 2}, {"c", 2}}, 5);
  add({{"x", 3}}, 3);
  add({{"x", 5}, {"y", 2}}, 4);
  add({{"x", 6}}, 3);
  add({{"x", 2}, {"y", 3}}, 4);
  add({{"x", 12}}, 3);
  add({{"x", 6}, {"y", 5}}, 3);
  add({{"x", 3}, {"y", 4}, {"z", 5}}, 3);
  std::size_t programs = 0, moved = 0;
  for (std::size_t wi = 0; wi < ws.size(); ++wi)
    for (const auto& pt : testing::random_problems(ws[wi], 63, 7000 + wi)) {
      INFO(pt.mesh << " " << pt.from << " -> " << pt.to);
      const device_mesh m = parse_mesh(pt.mesh);
      const dist_type a = parse_type(m, pt.from), b = parse_type(m, pt.to);
      const program p = exchange_program(m, a, b, 2);
      const auto v = testing::verify(p);
      INFO(v.message);
      REQUIRE(v.ok);
      CHECK(p.cost_elements == movement_lower_bound(m, a, b));
      CHECK(v.cost == p.cost_elements);
      CHECK(p.peak_local_elements <= std::max(local_size(m, a), local_size(m, b)));
      CHECK(p.memory_efficient());
      CHECK(p.steps.size() == (a == b ? 0u : 1u));
      const detail::program_shapes s = detail::check_program(p);
      INFO(s.error);
      REQUIRE(s.error.empty());
      ++programs;
      moved += p.cost_elements > 0;
    }
  CHECK(programs == 504);
  CHECK(moved > programs / 2);
}

TEST_CASE("the exchange of a 2-D transpose of tilings: the checkers' figures", "[exchange]") {
  const program p = exchanges(mesh23, from23, to23, {target23()});
  const program q = exchange_program(parse_mesh(mesh23), p.source, p.target);
  REQUIRE(q.steps.size() == 1);
  CHECK(q.steps[0].boxes == p.steps[0].boxes);
  CHECK(q.cost_elements == p.cost_elements);
  const auto v = testing::verify(p);
  INFO(v.message);
  REQUIRE(v.ok);
  // Rank 0 holds [0:3, 0:2) and needs [0:2, 0:3): 6 - 4 = 2 elements; rank 1 holds
  // [0:3, 2:4) and needs [2:4, 0:3): 6 - 1 = 5; rank 2 holds [0:3, 4:6) and needs
  // [4:6, 0:3): all 6, the most.
  CHECK(v.cost == 6);
  CHECK(v.peak == 6);
  CHECK(check_error(p) == "accepted");
}

TEST_CASE("corrupted exchanges are rejected by verify.hpp and by program_check", "[exchange]") {
  SECTION("a shifted box") {
    std::vector<box> t = target23();
    t[0] = make_box({{1, 3}, {0, 3}});
    const program p = exchanges(mesh23, from23, to23, {t});
    CHECK(verify_error(p) == "after the last step: rank 0 ends with [1:3, 0:3) but its target tile is [0:2, 0:3)");
    CHECK(check_error(p) ==
          "invalid program: the program leaves rank 0 with the box [1, 3) x [0, 3), its target tile is [0, 2) x [0, 3)");
  }
  SECTION("two ranks with the same box where the target needs different ones") {
    std::vector<box> t = target23();
    t[4] = t[3];
    const program p = exchanges(mesh23, from23, to23, {t});
    CHECK(verify_error(p) == "after the last step: rank 4 ends with [0:2, 3:6) but its target tile is [2:4, 3:6)");
    CHECK(check_error(p) ==
          "invalid program: the program leaves rank 4 with the box [0, 2) x [3, 6), its target tile is [2, 4) x [3, 6)");
  }
  SECTION("a box outside the array") {
    std::vector<box> t = target23();
    t[5] = make_box({{4, 6}, {4, 7}});
    const program p = exchanges(mesh23, from23, to23, {t});
    CHECK(verify_error(p) == "step 0 (exchange): rank 5's box [4:6, 4:7) is not inside the array (dimension 1 has 6 indices)");
    CHECK(check_error(p) ==
          "invalid program: step 0 (exchange): rank 5's range [4, 7) of dimension 1 is not inside [0, 6)");
  }
  SECTION("a box of another shape") {
    std::vector<box> t = target23();
    t[2] = make_box({{4, 5}, {0, 3}});
    const program p = exchanges(mesh23, from23, to23, {t});
    CHECK(verify_error(p) == "step 0 (exchange): rank 2's box [4:5, 0:3) has a different shape than rank 0's [0:2, 0:3)");
    // The library allows boxes of different lengths (uneven tiles), and finds the wrong end.
    CHECK(check_error(p) ==
          "invalid program: the program leaves rank 2 with the box [4, 5) x [0, 3), its target tile is [4, 6) x [0, 3)");
  }
  SECTION("an element no rank holds before the step") {
    // First every rank takes rank 0's target box, then nobody holds the rest of the array.
    const std::vector<box> same(6, target23()[0]);
    const program p = exchanges(mesh23, from23, to23, {same, target23()});
    CHECK(verify_error(p) ==
          "step 1 (exchange): rank 1's box [2:4, 0:3) is not covered by the boxes held before: no rank holds [2:4, 0:3)");
    CHECK(check_error(p) ==
          "invalid program: step 1 (exchange): no rank holds some elements of rank 1's box [2, 4) x [0, 3) before the "
          "exchange");
  }
  SECTION("a wrong cost") {
    program p = exchanges(mesh23, from23, to23, {target23()});
    ++p.steps[0].cost;
    ++p.cost_elements;
    CHECK(verify_error(p) == "step 0 (exchange): step cost 7, the most one rank receives is 6");
    CHECK(check_error(p) == "accepted");  // program_check leaves costs to the readers
  }
  SECTION("boxes that overlap partly: the data is there, the library's plan refuses it") {
    // Rank r holds [r, r + 1) of a 1-D array of 6, then [0, 2), [1, 3), ...: every element is
    // held, but the ranges are neither equal nor disjoint (plan_exchange's requirement).
    std::vector<box> shifted;
    for (std::uint64_t r = 0; r < 6; ++r) shifted.push_back(make_box({{std::min<std::uint64_t>(r, 4), std::min<std::uint64_t>(r, 4) + 2}}));
    const device_mesh m = parse_mesh("{x: 6}");
    program q = exchanges("{x: 6}", "[1{x}6]", "[{x}6]", {shifted, tile_boxes(m, parse_type(m, "[{x}6]"))});
    q.memory_bound_elements = 2;  // the detour holds 2 elements
    CHECK(verify_error(q) == "accepted");
    CHECK(check_error(q) ==
          "invalid program: step 1 (exchange): the boxes before the exchange overlap partly along dimension 0 ([0, 2) "
          "and [1, 3)): an exchange needs every two ranks' ranges to be equal or disjoint in each dimension, or their "
          "boxes disjoint");
  }
  SECTION("an exchange in a program with partial sums") {
    const device_mesh m = parse_mesh("{a: 2, b: 2}");
    program p = exchanges("{a: 2, b: 2}", "[{a}4]", "[{a}4]", {tile_boxes(m, parse_type(m, "[{a}4]"))});
    p.source = parse_type(m, "[{a}4] sum{b}");
    CHECK(verify_error(p) ==
          "step 0 (exchange): an exchange while ranks hold partial sums (every pending sum must be reduced before it)");
    CHECK(check_error(p) ==
          "invalid program: an exchange does not add partial sums: every pending sum must be reduced before the first "
          "exchange, and the target's pending values created after the last one");
    CHECK_THROWS_WITH(exchange_program(m, p.source, parse_type(m, "[{a}4]")),
                      Catch::Matchers::StartsWith("an exchange does not add partial sums"));
  }
  SECTION("boxes of the wrong count") {
    program p = exchanges(mesh23, from23, to23, {target23()});
    p.steps[0].boxes.pop_back();
    CHECK(verify_error(p) == "step 0 (exchange): boxes lists 23 range ends, expected 2 x 2 dimensions x 6 ranks");
    CHECK(check_error(p) ==
          "invalid program: step 0 (exchange): boxes must list one range per dimension (2) for each of the 6 ranks");
  }
}
