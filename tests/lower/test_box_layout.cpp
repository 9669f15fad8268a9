// Box layouts (DESIGN.md section 2; issue 25 item 5): layouts no type says (DTensor's nested
// uneven chunks, random guillotine blocks among random ranks) to and from types and other box
// layouts, planned by the exchange (lower/between.hpp), run on host_backend(W) with every
// element checked, read back from JSON; bad layouts refused with one line each.
//
// The random programs are also written, one JSON document a line, to `box_programs.jsonl`
// in the working directory; the ctest lower_box_layout_python_check feeds them to the
// independent checker tests/tools/check_program.py.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/box.hpp"
#include "redist/core/dtensor.hpp"
#include "redist/lower/between.hpp"
#include "redist/program_json.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/program_check.hpp"
#include "support/between_problems.hpp"
#include "support/between_run.hpp"
#include "support/test_boxes.hpp"

namespace {

using redist::array_layout;
using redist::box;
using redist::box_layout;
using redist::darray;
using redist::placed_layout;
using redist::program;
using namespace redist::testing;

/// One exchange at the data-movement bound (every rank receives exactly its box minus what it
/// held, the cost the most of those), and the checks of tests/support/between_run.hpp: the
/// exchange's bound rank by rank, well-formed, the target b's, JSON round trip (written to
/// `jsonl`), runs right.
template <class T>
std::string check_fully(const program& p, const array_layout& a, const array_layout& b, std::ofstream* jsonl) {
  if (p.steps.size() != 1 || p.steps[0].kind != redist::op::exchange) return "not one exchange";
  const std::vector<box> before = redist::source_boxes(p), after = redist::target_boxes(p);
  std::uint64_t most = 0;
  for (std::size_t r = 0; r < before.size(); ++r)
    most = std::max(most, after[r].size() - redist::intersect(after[r], before[r]).size());
  if (p.cost_elements != most) return "cost " + std::to_string(p.cost_elements) + ", the bound " + std::to_string(most);
  if (std::string e = check_between_exchange_bound(p, a); !e.empty()) return e;
  return check_between_program<T>(p, a, b, jsonl);
}

/// The plan for elements of T.
template <class T>
program plan(const array_layout& a, const array_layout& b, std::uint64_t W = 0) {
  redist::between_options o;
  o.synth.element_bytes = sizeof(T);
  return redist::synthesize_between(a, b, W, o);
}

std::string layout_text(const array_layout& l) {
  if (const auto* t = std::get_if<placed_layout>(&l))
    return std::string(redist::type_text(t->pm.mesh, t->type).view()) + " on " + redist::placed_mesh_text(t->pm);
  return redist::box_layout_text(std::get<box_layout>(l));
}

}  // namespace

TEST_CASE("box layouts: DTensor [Shard(0), Shard(0)] of 10 x 5 on 2 x 2 reads as its boxes", "[box][named]") {
  const redist::placed_mesh pm = redist::parse_placed_mesh("{x: 2, y: 2}");
  const std::vector<std::uint64_t> shape{10, 5};
  CHECK_FALSE(redist::dtensor_type_says(pm.mesh, shape, "[Shard(0), Shard(0)]"));
  CHECK(redist::dtensor_type_says(pm.mesh, shape, "[Shard(1), Replicate()]"));
  CHECK_THROWS(redist::from_dtensor(pm.mesh, shape, "[Shard(0), Shard(0)]"));  // no type says it
  const box_layout l = redist::dtensor_layout(pm, shape, "[Shard(0), Shard(0)]");
  REQUIRE(l.world() == 4);
  CHECK(*l.boxes[0] == make_box({{0, 3}, {0, 5}}));
  CHECK(*l.boxes[1] == make_box({{3, 5}, {0, 5}}));
  CHECK(*l.boxes[2] == make_box({{5, 8}, {0, 5}}));
  CHECK(*l.boxes[3] == make_box({{8, 10}, {0, 5}}));
  CHECK(l.padded_size() == 15);

  SECTION("to [Shard(1), Replicate()] and back") {
    const placed_layout t{pm, redist::from_dtensor(pm.mesh, shape, "[Shard(1), Replicate()]")};
    const program p = plan<std::int64_t>(l, t);
    CHECK(p.world_size() == 4);
    CHECK(check_fully<std::int64_t>(p, l, t, nullptr) == "");
    const program q = plan<float>(t, l);
    CHECK(check_fully<float>(q, t, l, nullptr) == "");
  }
  SECTION("on {x: 2, y: 2} @ [4, 6, 5, 7] in a world of 8, from the replicated array") {
    const redist::placed_mesh placed = redist::parse_placed_mesh("{x: 2, y: 2} @ [4, 6, 5, 7]");
    const box_layout pl = redist::dtensor_layout(placed, shape, "[Shard(0), Shard(0)]", 8);
    CHECK_FALSE(pl.boxes[0].has_value());
    CHECK(*pl.boxes[6] == make_box({{3, 5}, {0, 5}}));  // position (0, 1) on rank 6
    const placed_layout rep{placed, redist::from_dtensor(placed.mesh, shape, "[Replicate(), Replicate()]")};
    const program p = plan<std::int64_t>(rep, pl, 8);
    CHECK(p.cost_elements == 0);  // every rank keeps part of what it held
    CHECK(check_fully<std::int64_t>(p, rep, pl, nullptr) == "");
    const std::string j = redist::program_json_text(p);
    CHECK(j.find("\"target\": {") != std::string::npos);
    CHECK(j.find("redist-program/2") != std::string::npos);
  }
  SECTION("to another nested layout: [Shard(1), Shard(1)] of 10 x 5") {
    const box_layout m = redist::dtensor_layout(pm, shape, "[Shard(1), Shard(1)]");
    CHECK(*m.boxes[1] == make_box({{0, 10}, {2, 3}}));  // 5 -> 3, 2; 3 -> 2, 1
    const program p = plan<double>(l, m);
    CHECK(check_fully<double>(p, l, m, nullptr) == "");
  }
}

TEST_CASE("box layouts: replicas, from DTensor's Replicate() beside nested uneven chunks", "[box][named]") {
  // [Shard(0), Shard(0), Replicate()] of 10 x 5 on 2 x 2 x 2: rows 3, 2, 3, 2, each on the
  // two ranks that differ only along z.
  const redist::placed_mesh pm = redist::parse_placed_mesh("{x: 2, y: 2, z: 2}");
  const std::vector<std::uint64_t> shape{10, 5};
  const box_layout l = redist::dtensor_layout(pm, shape, "[Shard(0), Shard(0), Replicate()]");
  REQUIRE(l.world() == 8);
  const std::pair<std::uint64_t, std::uint64_t> rows[] = {{0, 3}, {3, 5}, {5, 8}, {8, 10}};
  for (std::uint64_t r = 0; r < 8; ++r) CHECK(*l.boxes[r] == make_box({rows[r / 2], {0, 5}}));
  CHECK(redist::box_layout_problem(l).empty());
  const placed_layout t{pm, redist::from_dtensor(pm.mesh, shape, "[Shard(1), Replicate(), Replicate()]")};
  // From the replicas: every piece once, the sending shared between the replicas.
  const program p = plan<double>(l, t);
  CHECK(check_fully<double>(p, l, t, nullptr) == "");
  const redist::exchange_plan x = redist::plan_exchange(redist::source_boxes(p), redist::target_boxes(p));
  std::vector<std::uint64_t> sends(8, 0);
  for (const auto& pc : x.pieces)
    if (pc.from != pc.to) ++sends[pc.from];
  for (std::uint64_t r = 0; r < 8; ++r) CHECK(sends[r] > 0);
  // To the replicas: each receives its box.
  const program q = plan<float>(t, l);
  CHECK(check_fully<float>(q, t, l, nullptr) == "");
}

TEST_CASE("box layouts: random guillotine blocks to and from types and layouts, every element checked",
          "[box][random]") {
  std::mt19937 rng(0x5b0c5u);
  std::ofstream out("box_programs.jsonl");
  between_workload wl;
  wl.max_world = 8;
  wl.target_sums = false;
  std::uint64_t problems = 0, tries = 0, kinds[3] = {0, 0, 0};
  while (problems < 1200 && tries < 20000) {
    ++tries;
    between_workload w = wl;
    w.world = 1 + rng() % 8;
    const between_text t = random_between(rng, w);
    between_problem pr;
    if (!parse_between(t, pr)) continue;
    const std::uint64_t W = pr.world;
    std::vector<std::uint64_t> shape;
    for (int d = 0; d < pr.a.type.rank; ++d) shape.push_back(pr.a.type.dims[d].global);
    const box_layout l = random_box_layout(rng, shape, W);
    const int kind = static_cast<int>(rng() % 3);
    array_layout a = l, b = l;
    if (kind == 0) b = random_box_layout(rng, shape, W);
    if (kind == 1) b = pr.b;
    if (kind == 2) {
      if (pr.a.type.nsum > 0) continue;
      a = pr.a;
    }
    INFO("problem " << problems << ": W=" << W << " " << layout_text(a) << " -> " << layout_text(b));
    const bool as_int = problems % 2 == 1;
    program p;
    try {
      p = as_int ? plan<std::int64_t>(a, b, W) : plan<float>(a, b, W);
    } catch (const redist::redist_error& e) {
      FAIL("plan: " << e.what());
    }
    const std::string e = as_int ? check_fully<std::int64_t>(p, a, b, &out) : check_fully<float>(p, a, b, &out);
    if (!e.empty()) FAIL(e);
    ++kinds[kind];
    ++problems;
  }
  CHECK(problems >= 1000);
  CHECK(kinds[0] > 100);
  CHECK(kinds[1] > 100);
  CHECK(kinds[2] > 100);
}

TEST_CASE("box layouts: bad input, one clear line each", "[box][errors]") {
  box_layout l;
  l.shape = {4, 4};
  l.boxes = {make_box({{0, 3}, {0, 4}}), make_box({{2, 4}, {0, 4}})};
  CHECK(redist::box_layout_problem(l) ==
        "ranks 0 and 1 both hold the element (2, 0) (boxes [0, 3) x [0, 4) and [2, 4) x [0, 4) overlap; replicas hold equal boxes)");
  CHECK_THROWS_WITH(redist::check_box_layout(l),
                    "box layout: ranks 0 and 1 both hold the element (2, 0) (boxes [0, 3) x [0, 4) and [2, 4) x [0, 4) "
                    "overlap; replicas hold equal boxes)");
  l.boxes = {make_box({{0, 2}, {0, 4}}), std::nullopt, make_box({{2, 4}, {0, 3}})};
  CHECK(redist::box_layout_problem(l) == "no rank holds the element (2, 3) (the boxes leave it uncovered)");
  l.boxes = {make_box({{0, 2}, {0, 4}}), make_box({{2, 5}, {0, 4}})};
  CHECK(redist::box_layout_problem(l) == "rank 1's box [2, 5) x [0, 4) is not inside the array [0, 4) x [0, 4)");
  l.boxes = {make_box({{0, 2}, {0, 4}}), make_box({{2, 4}})};
  CHECK(redist::box_layout_problem(l) == "rank 1's box has 1 dimensions, the array 2");
  l.boxes = {std::nullopt, std::nullopt};
  CHECK(redist::box_layout_problem(l) == "no rank holds a box");
  l.boxes = {make_box({{0, 2}, {0, 4}}), make_box({{2, 4}, {0, 4}})};
  CHECK(redist::box_layout_problem(l).empty());
  CHECK(redist::box_layout_problem(l, 3) ==
        "the box layout lists 2 entries, the world has 3 ranks (one box or null per rank)");

  const redist::placed_mesh pm = redist::parse_placed_mesh("{x: 2}");
  CHECK_THROWS_WITH(redist::synthesize_between(array_layout{l}, array_layout{placed_layout{pm, redist::parse_type(pm.mesh, "[{x}4, 4]")}}, 3),
                    "the source box layout: the box layout lists 2 entries, the world has 3 ranks (one box or null "
                    "per rank)");
  CHECK_THROWS_WITH(
      redist::synthesize_between(array_layout{placed_layout{pm, redist::parse_type(pm.mesh, "[4, 4] sum{x}")}},
                                 array_layout{l}),
      "a box layout is planned by one exchange, which does not add partial sums, and the source type [4, 4] sum{x} "
      "has pending sums (reduce them first)");
  // Replicas hold equal boxes; a box that meets another without equalling it is refused.
  l.boxes = {make_box({{0, 2}, {0, 4}}), make_box({{2, 4}, {0, 4}}), make_box({{0, 2}, {0, 4}})};
  CHECK(redist::box_layout_problem(l).empty());
  l.boxes[2] = make_box({{0, 2}, {0, 3}});
  CHECK(redist::box_layout_problem(l) ==
        "ranks 0 and 2 both hold the element (0, 0) (boxes [0, 2) x [0, 4) and [0, 2) x [0, 3) overlap; replicas hold "
        "equal boxes)");
  l.boxes.pop_back();

  // JSON: the field and the rank named.
  const program p = redist::synthesize_between(array_layout{l}, array_layout{placed_layout{pm, redist::parse_type(pm.mesh, "[4, {x}4]")}});
  nlohmann::json j = redist::to_json(p);
  j["source"]["boxes"][1] = nlohmann::json::parse("[[1, 4], [0, 4]]");
  CHECK_THROWS_WITH(redist::program_from_json(j),
                    "program JSON: source.boxes: ranks 0 and 1 both hold the element (1, 0) (boxes [0, 2) x [0, 4) and "
                    "[1, 4) x [0, 4) overlap; replicas hold equal boxes)");
  j["source"]["boxes"][1] = nlohmann::json::parse("[[3, 4], [0, 4]]");
  CHECK_THROWS_WITH(redist::program_from_json(j),
                    "program JSON: source.boxes: no rank holds the element (2, 0) (the boxes leave it uncovered)");
  j["source"]["boxes"][1] = nlohmann::json::parse("[[2, 4]]");
  CHECK_THROWS_WITH(redist::program_from_json(j),
                    "program JSON: source.boxes[1]: has 1 ranges, expected one per dimension (2)");
  j["source"]["boxes"] = nlohmann::json::parse("[[[0, 4], [0, 4]]]");
  CHECK_THROWS_WITH(redist::program_from_json(j),
                    "program JSON: source.boxes: has 1 entries, expected one box or null per world rank (2)");

  // The executor: a tile of another box.
  redist::host_backend host(2);
  redist::executor<float, redist::host_backend> ex(host, p);
  std::vector<darray<float>> in{darray<float>::of_layout(l, 1), darray<float>::of_layout(l, 1)};
  CHECK_THROWS_WITH(ex.run(in), "input tile of rank 0 holds [2, 4) x [0, 4), its box is [0, 2) x [0, 4)");
}

TEST_CASE("box layouts: a rank's tile is the padded tile with its box at the start", "[box][darray]") {
  box_layout l;
  l.shape = {10, 5};
  l.boxes = {make_box({{0, 3}, {0, 5}}), std::nullopt, make_box({{3, 10}, {0, 2}}), make_box({{3, 10}, {2, 5}})};
  REQUIRE(redist::box_layout_problem(l).empty());
  CHECK(l.padded_size() == 7 * 5);
  const darray<int> a = darray<int>::of_layout(l, 2);
  CHECK(a.of_box_layout());
  CHECK(a.holds());
  CHECK(a.size() == 35);
  CHECK(a.local_extent(0) == 7);
  CHECK(a.local_extent(1) == 5);
  CHECK(a.offset(0) == 3);
  CHECK(a.held_extent(1) == 2);
  CHECK(a.held_box() == make_box({{3, 10}, {0, 2}}));
  std::uint64_t n = 0;
  for_each_global(a, [&](std::uint64_t g, const int&) {
    CHECK(g / 5 >= 3);
    CHECK(g % 5 < 2);
    ++n;
  });
  CHECK(n == 14);
  const darray<int> none = darray<int>::of_layout(l, 1);
  CHECK_FALSE(none.holds());
  CHECK(none.size() == 0);
  std::vector<int> memory(34);
  CHECK_THROWS_WITH(darray<int>::of_layout(l, 0, std::span<int>(memory)),
                    "rank 0's tile of the box layout has 35 elements, the memory 34");
  CHECK_THROWS_WITH(darray<int>::of_layout(l, 4), "rank 4 is not in the box layout's world of 4 ranks");
}
