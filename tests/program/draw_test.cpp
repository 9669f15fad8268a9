// Tests of redist/draw.hpp: the pictures of types (exact text), the boxes followed through
// programs (against the core's offsets of every exact intermediate type and of the
// target), and the structure of the SVG documents. That the SVG parses as XML and renders
// in a browser is checked from python (tests/tools/test_draw_svg.py, test_svg_render.py).
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "baselines/naive.hpp"
#include "redist/draw.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "support/fuse_profile.hpp"
#include "support/random_problems.hpp"

// A namespace of its own: the folder's tests compile as one unit (tests/CMakeLists.txt).
namespace draw_test {

using namespace redist;

/// The paper's objective (fewest Fig. 11 bytes): the fixed cases below name its programs.
constexpr synth_options paper{.goal = objective::bytes};

namespace {

std::string show(std::string_view mesh, std::string_view type, const draw_options& o = {}) {
  const device_mesh m = parse_mesh(mesh);
  return show_text(m, parse_type(m, type), o);
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

/// The distinct values of an attribute on the elements that start with `element`.
std::set<std::string> attribute_values(const std::string& svg, const std::string& element, const std::string& attr) {
  std::set<std::string> v;
  const std::regex re(element + "[^>]* " + attr + "=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) v.insert((*it)[1]);
  return v;
}

/// The texts of the box labels, in document order.
std::vector<std::string> labels(const std::string& svg) {
  std::vector<std::string> v;
  const std::regex re("<text class=\"label\"[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) v.push_back((*it)[1]);
  return v;
}

}  // namespace

TEST_CASE("a 1-D array is one row of boxes") {
  CHECK(show("{x: 4}", "[{x}64]") ==
        "mesh {x: 4} | type [16{x}64] | global [64] | tile [16] | local size 16 elements\n"
        "0  16  32  48  64\n"
        "┌───┬───┬───┬───┐\n"
        "│ 0 │ 1 │ 2 │ 3 │\n"
        "└───┴───┴───┴───┘\n");
}

TEST_CASE("a 2-D array is a grid, dimension 0 down, dimension 1 across") {
  CHECK(show("{x: 2, y: 2}", "[64{x}128, 32{y}64]") ==
        "mesh {x: 2, y: 2} | type [64{x}128, 32{y}64] | global [128, 64] | tile [64, 32] | local size 2048 elements\n"
        "    0  32  64\n"
        "  0 ┌───┬───┐\n"
        "    │ 0 │ 1 │\n"
        " 64 ├───┼───┤\n"
        "    │ 2 │ 3 │\n"
        "128 └───┴───┘\n");
  // The axes inside braces are minor-to-major: {y, x} puts y fastest.
  CHECK(show("{x: 2, y: 2}", "[{y, x}8]") ==
        "mesh {x: 2, y: 2} | type [2{y, x}8] | global [8] | tile [2] | local size 2 elements\n"
        "0   2   4   6   8\n"
        "┌───┬───┬───┬───┐\n"
        "│ 0 │ 1 │ 2 │ 3 │\n"
        "└───┴───┴───┴───┘\n");
  CHECK(show("{x: 2, y: 2}", "[{x, y}8]") ==
        "mesh {x: 2, y: 2} | type [2{x, y}8] | global [8] | tile [2] | local size 2 elements\n"
        "0   2   4   6   8\n"
        "┌───┬───┬───┬───┐\n"
        "│ 0 │ 2 │ 1 │ 3 │\n"
        "└───┴───┴───┴───┘\n");
}

TEST_CASE("replicated data lists every device that holds it") {
  CHECK(show("{x: 2, y: 2}", "[128, 64]") ==
        "mesh {x: 2, y: 2} | type [128, 64] | global [128, 64] | tile [128, 64] | local size 8192 elements\n"
        "    0    64\n"
        "  0 ┌─────┐\n"
        "    │ 0-3 │\n"
        "128 └─────┘\n");
  CHECK(show("{x: 2, y: 2}", "[64{x}128, 64]") ==
        "mesh {x: 2, y: 2} | type [64{x}128, 64] | global [128, 64] | tile [64, 64] | local size 4096 elements\n"
        "    0    64\n"
        "  0 ┌─────┐\n"
        "    │ 0,1 │\n"
        " 64 ├─────┤\n"
        "    │ 2,3 │\n"
        "128 └─────┘\n");
}

TEST_CASE("a 3-D array is a grid per block of its leading dimension") {
  CHECK(show("{x: 2, y: 2, z: 2}", "[{x}8, {y}4, 6{z}12]") ==
        "mesh {x: 2, y: 2, z: 2} | type [4{x}8, 2{y}4, 6{z}12] | global [8, 4, 12] | tile [4, 2, 6] | local size 48 elements\n"
        "[0:4, :, :]\n"
        "  0   6  12\n"
        "0 ┌───┬───┐\n"
        "  │ 0 │ 1 │\n"
        "2 ├───┼───┤\n"
        "  │ 2 │ 3 │\n"
        "4 └───┴───┘\n"
        "[4:8, :, :]\n"
        "  0   6  12\n"
        "0 ┌───┬───┐\n"
        "  │ 4 │ 5 │\n"
        "2 ├───┼───┤\n"
        "  │ 6 │ 7 │\n"
        "4 └───┴───┘\n");
}

TEST_CASE("pending sums are noted and the devices of different partials joined by +") {
  CHECK(show("{x: 2, y: 2}", "[{x}8, 4] sum{y}") ==
        "mesh {x: 2, y: 2} | type [4{x}8, 4] sum{y} | global [8, 4] | tile [4, 4] | local size 16 elements\n"
        "partial over y: a box is the sum of 2 partial values; '+' joins the devices of different partials\n"
        "  0     4\n"
        "0 ┌─────┐\n"
        "  │ 0+1 │\n"
        "4 ├─────┤\n"
        "  │ 2+3 │\n"
        "8 └─────┘\n");
  // Replicated partials: devices 0 and 1 hold the same partial, 2 and 3 the other.
  const device_mesh m = parse_mesh("{x: 2, y: 2}");
  const tiling t = tiling_of(m, parse_type(m, "[8] sum{x}"));
  REQUIRE(t.boxes() == 1);
  CHECK(t.partial);
  CHECK(t.holders[0] == std::vector<std::vector<rank_t>>{{0, 1}, {2, 3}});
  CHECK(draw_text(t).find("│ (0,1)+(2,3) │") != std::string::npos);
}

TEST_CASE("long device lists are shortened, wide rows wrap, colours are ANSI escapes") {
  const std::string s = show("{x: 8, y: 8}", "[{y}64, 64]");
  CHECK(s.find("│ 0,8,16,24,32,40,…,56 │\n") != std::string::npos);
  CHECK(s.find("│  7,15,23,31,39,…,63  │\n") != std::string::npos);
  CHECK(show("{x: 64}", "[{x}64]").find("0-63") == std::string::npos);  // one box per device
  CHECK(show("{x: 4, y: 16}", "[{x}64, 64]").find("│ 0-15  │\n") != std::string::npos);
  draw_options narrow;
  narrow.max_columns = 3;
  CHECK(show("{x: 4}", "[{x}64]", narrow) ==
        "mesh {x: 4} | type [16{x}64] | global [64] | tile [16] | local size 16 elements\n"
        "0  16  32  48\n"
        "┌───┬───┬───┐\n"
        "│ 0 │ 1 │ 2 │\n"
        "└───┴───┴───┘\n"
        "48 64\n"
        "┌───┐\n"
        "│ 3 │\n"
        "└───┘\n");
  draw_options color;
  color.color = true;
  const std::string c = show("{x: 2}", "[{x}4]", color);
  CHECK(c.find("\x1b[38;2;255;255;255;48;2;31;119;180m 0 \x1b[0m") != std::string::npos);
  CHECK(c.find("\x1b[38;2;0;0;0;48;2;174;199;232m 1 \x1b[0m") != std::string::npos);
  CHECK(show("{x: 2}", "[{x}4]").find('\x1b') == std::string::npos);
  // The header can carry the type in another notation.
  draw_options jax;
  jax.type_label = "PartitionSpec('x')";
  CHECK(show("{x: 2}", "[{x}4]", jax).rfind("mesh {x: 2} | type PartitionSpec('x') | global [4]", 0) == 0);
}

TEST_CASE("too large pictures are refused") {
  const device_mesh big = parse_mesh("{x: 65536, y: 2}");
  CHECK_THROWS_WITH(show_text(big, parse_type(big, "[8]")),
                    "the mesh has 131072 devices, too many to draw (at most 65536)");
  const device_mesh m = parse_mesh("{x: 64, y: 128}");
  CHECK_THROWS_WITH(show_text(m, parse_type(m, "[{x}64, {y}128]")),
                    "the array is cut into 8192 boxes, too many to draw (at most 4096)");
}

TEST_CASE("boxes followed through programs end on the target's tiles and match every exact intermediate type") {
  std::mt19937_64 rng(8);
  int exact = 0;
  for (const auto& w : testing::mixed_workloads()) {
    for (const auto& pt : testing::random_problems(w, 40, rng())) {
      const program p = synthesize(pt.mesh, pt.from, pt.to);
      const std::vector<device_boxes> states = program_boxes(p);
      REQUIRE(states.size() == p.steps.size() + 1);
      auto same = [&](const device_boxes& b, const dist_type& t) {
        const device_boxes want = device_boxes_of(p.m, t);
        return b.lo == want.lo && b.tile == want.tile;
      };
      INFO(pt.mesh << " " << pt.from << " -> " << pt.to);
      CHECK(same(states.front(), p.source));
      CHECK(same(states.back(), p.target));
      for (const auto& pr : states.back().partials)  // every pending sum the target drops is reduced
        CHECK(pr.size() * sum_parts(p.m, p.target) == sum_parts(p.m, p.source));
      for (std::size_t i = 0; i < p.steps.size(); ++i) {
        CHECK(states[i + 1].local_size() == p.steps[i].local_after);
        if (p.steps[i].type_exact) {
          ++exact;
          CHECK(same(states[i + 1], p.steps[i].type_after));
        }
      }
      CHECK_NOTHROW(plan_svg(p));
    }
  }
  CHECK(exact > 50);
}

TEST_CASE("fused steps are drawn as the boxes trace_boxes follows", "[fuse]") {
  // Every fusable pair fused (a profile where only the pass counts): draw's boxes after every
  // step are exchange.hpp's trace_boxes, and the picture of the plan renders.
  const time_profile latency = testing::fuse_all_profile();
  std::mt19937_64 rng(9);
  std::size_t fused = 0;
  for (const auto& w : testing::mixed_workloads()) {
    for (const auto& pt : testing::random_problems(w, 40, rng())) {
      program p = synthesize(pt.mesh, pt.from, pt.to, {.goal = objective::bytes});
      fuse_collectives(p, latency, 4);
      std::size_t here = 0;
      for (const step& s : p.steps) here += s.fused();
      if (here == 0 || p.uneven()) continue;
      fused += here;
      INFO(pt.mesh << " " << pt.from << " -> " << pt.to);
      const std::vector<device_boxes> states = program_boxes(p);
      for (std::size_t i = 1; i < states.size(); ++i) {
        const box_trace t = trace_boxes(p, i);
        REQUIRE(t.error.empty());
        for (std::uint64_t r = 0; r < p.devices(); ++r)
          for (int d = 0; d < p.rank(); ++d)
            CHECK(states[i].lo[r * static_cast<std::uint64_t>(p.rank()) + static_cast<std::uint64_t>(d)] ==
                  t.boxes[r].lo[static_cast<std::size_t>(d)]);
      }
      const std::string svg = plan_svg(p);
      CHECK(svg.find("dims ") != std::string::npos);  // "gather dims 1, 0" or "dims 3, 2 -> dims 1, 0"
    }
  }
  CHECK(fused > 10);
}

TEST_CASE("a program whose type is known only up to a permutation is drawn as it lies on the devices") {
  // An allpermute reorders which device holds which box: the panels must follow it (and the
  // second one puts every box back, so the program ends on its target).
  const device_mesh m = parse_mesh("{x: 2}");
  program p;
  p.m = m;
  p.source = parse_type(m, "[{x}4]");
  p.target = p.source;
  step s;
  s.kind = op::allpermute;
  s.dest = {1, 0};
  s.local_after = 2;
  s.type_after = p.source;
  s.type_exact = false;
  p.steps = {s, s};
  const auto states = program_boxes(p);
  CHECK(tiling_of(states[1]).holders == std::vector<std::vector<std::vector<rank_t>>>{{{1}}, {{0}}});
  CHECK(tiling_of(states[2]).holders == std::vector<std::vector<std::vector<rank_t>>>{{{0}}, {{1}}});
  p.steps.pop_back();  // one swap leaves the boxes off the target: every program's end is checked
  CHECK_THROWS_WITH(program_boxes(p),
                    "invalid program: the program leaves rank 0 with the box [2, 4), its target tile is [0, 2)");
  p.steps[0].dest = {0, 0};
  CHECK_THROWS_WITH(program_boxes(p), "invalid program: step 0 (allpermute): dest must be a permutation of the ranks");
}

TEST_CASE("show_svg: a standalone SVG 1.1 document, one coloured rect and one label per box") {
  const device_mesh m = parse_mesh("{x: 2, y: 2}");
  const std::string svg = show_svg(m, parse_type(m, "[64{x}128, 32{y}64]"));
  CHECK(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\"", 0) == 0);
  CHECK(svg.find("viewBox=\"0 0 ") != std::string::npos);
  CHECK(count(svg, "<rect class=\"tile\"") == 4);
  CHECK(count(svg, "<text class=\"label\"") == 4);
  CHECK(attribute_values(svg, "<rect class=\"tile\"", "fill") ==
        std::set<std::string>{"#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78"});
  CHECK(labels(svg) == std::vector<std::string>{"0", "1", "2", "3"});
  CHECK(svg.find("<title>[64:128, 32:64] on device 3</title>") != std::string::npos);
  // Ticks: 0, 32, 64 across and 0, 64, 128 down.
  CHECK(count(svg, "<text class=\"tick\"") == 6);
  CHECK(svg.find(">mesh {x: 2, y: 2} | type [64{x}128, 32{y}64] | global [128, 64] | tile [64, 32] | local size 2048 elements</text>") !=
        std::string::npos);
  // Twenty boxes or more use the whole palette; replicated boxes list their devices.
  const device_mesh big = parse_mesh("{x: 8, y: 8}");
  const std::string s2 = show_svg(big, parse_type(big, "[{x}64, {y}64]"));
  CHECK(count(s2, "<rect class=\"tile\"") == 64);
  CHECK(attribute_values(s2, "<rect class=\"tile\"", "fill").size() == 20);
  const std::string s3 = show_svg(m, parse_type(m, "[{x}8, 4] sum{y}"));
  CHECK(s3.find(">0+1</text>") != std::string::npos);
  CHECK(s3.find("on devices 0 + 1</title>") != std::string::npos);
  CHECK(s3.find("partial over y") != std::string::npos);
  // Text is escaped.
  draw_options o;
  o.type_label = "<&>";
  CHECK(show_svg(m, parse_type(m, "[8]"), o).find("type &lt;&amp;&gt; |") != std::string::npos);
}

TEST_CASE("plan_svg: a panel per state, the collectives between them, the local size against the bound") {
  const program p = synthesize("{x: 4, y: 8}", "[64{x}256, 1024]", "[256, 128{y}1024]", paper);
  REQUIRE(p.steps.size() == 2);
  const std::string svg = plan_svg(p);
  CHECK(count(svg, "<g class=\"panel\">") == 3);
  CHECK(count(svg, "<g class=\"step\">") == 2);
  CHECK(count(svg, "<rect class=\"tile\"") == 4 + 32 + 8);
  CHECK(svg.find(">after step 1: dynslice</text>") != std::string::npos);
  CHECK(svg.find(">8 groups of 4</text>") != std::string::npos);
  CHECK(svg.find(">131072 B per device</text>") != std::string::npos);
  CHECK(count(svg, "<rect class=\"local\"") == 3);
  CHECK(svg.find(">local 8192 / bound 65536</text>") != std::string::npos);
  CHECK(svg.find("#d62728\"/>") == std::string::npos);  // no bar above the bound
  // The naive baseline gathers everything: its middle panel is over the bound, in red.
  const device_mesh m = parse_mesh("{x: 4, y: 8}");
  const program naive =
      baselines::naive_program(m, parse_type(m, "[64{x}256, 1024]"), parse_type(m, "[256, 128{y}1024]"), 4);
  const std::string n = plan_svg(naive);
  CHECK(n.find(">local 262144 / bound 65536 (over)</text>") != std::string::npos);
  CHECK(n.find("fill=\"#d62728\"/>") != std::string::npos);
}

TEST_CASE("an exchange is drawn with its listed boxes", "[exchange]") {
  std::mt19937_64 rng(12);
  for (const auto& w : testing::mixed_workloads()) {
    for (const auto& pt : testing::random_problems(w, 10, rng())) {
      INFO(pt.mesh << " " << pt.from << " -> " << pt.to);
      const device_mesh m = parse_mesh(pt.mesh);
      const program p = exchange_program(m, parse_type(m, pt.from), parse_type(m, pt.to));
      const std::vector<device_boxes> states = program_boxes(p);
      REQUIRE(states.size() == p.steps.size() + 1);
      const device_boxes want = device_boxes_of(m, p.target);
      CHECK(states.back().lo == want.lo);
      CHECK(states.back().tile == want.tile);
      CHECK_NOTHROW(plan_svg(p));
    }
  }
  const device_mesh m = parse_mesh("{x: 2, y: 3}");
  const program p = exchange_program(m, parse_type(m, "[3{x}6, 2{y}6]"), parse_type(m, "[2{y}6, 3{x}6]"));
  const std::string svg = plan_svg(p);
  CHECK(count(svg, "<g class=\"panel\">") == 2);
  CHECK(svg.find(">after step 1: exchange</text>") != std::string::npos);
  CHECK(svg.find(">to boxes of [2, 3]</text>") != std::string::npos);
  CHECK(svg.find(">24 B per device</text>") != std::string::npos);
  CHECK(count(svg, "<rect class=\"tile\"") == 6 + 6);
}

}  // namespace draw_test
