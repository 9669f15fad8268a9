// Tests of redist/program_json.hpp: the JSON of DESIGN.md section 4, written and read back.
#include <catch2/catch.hpp>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "redist/core/placement.hpp"
#include "redist/lower/between.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/program_json.hpp"
#include "redist/runtime/program_check.hpp"
#include "support/random_problems.hpp"
#include "support/test_boxes.hpp"

// A namespace of its own: the folder's tests compile as one unit (tests/CMakeLists.txt).
namespace program_json_test {

using namespace redist;
using nlohmann::json;

/// The paper's objective (fewest Fig. 11 bytes): the fixed cases below name its programs.
constexpr synth_options paper{.goal = objective::bytes};

namespace {

void require_same(const program& a, const program& b) {
  REQUIRE(a.m == b.m);
  REQUIRE(a.source == b.source);
  REQUIRE(a.target == b.target);
  REQUIRE(a.element_bytes == b.element_bytes);
  REQUIRE(a.cost_elements == b.cost_elements);
  REQUIRE(a.peak_local_elements == b.peak_local_elements);
  REQUIRE(a.memory_bound_elements == b.memory_bound_elements);
  REQUIRE(a.steps.size() == b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    const step &x = a.steps[i], &y = b.steps[i];
    INFO("step " << i);
    REQUIRE(x.kind == y.kind);
    REQUIRE(x.concat_dim == y.concat_dim);
    REQUIRE(x.split_dim == y.split_dim);
    REQUIRE(x.concat_grid == y.concat_grid);
    REQUIRE(x.split_grid == y.split_grid);
    REQUIRE(x.parts == y.parts);
    REQUIRE(x.members == y.members);
    REQUIRE(x.index == y.index);
    REQUIRE(x.dest == y.dest);
    REQUIRE(x.boxes == y.boxes);
    REQUIRE(x.after == y.after);
    REQUIRE(x.local_after == y.local_after);
    REQUIRE(x.cost == y.cost);
    REQUIRE(x.type_after == y.type_after);
    REQUIRE(x.type_exact == y.type_exact);
    REQUIRE(x.reduce == y.reduce);
  }
}

/// The message of the redist_error that reading `j` throws ("" if none).
std::string read_error(const json& j) {
  try {
    (void)program_from_json(j);
  } catch (const redist_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("JSON round-trips on synthesized programs") {
  std::vector<testing::workload> ws = testing::mixed_workloads();
  ws.insert(ws.begin(), testing::paper_workload());
  std::mt19937_64 rng(2024);
  std::size_t programs = 0, steps = 0;
  for (std::size_t wi = 0; wi < ws.size(); ++wi) {
    for (const auto& pt : testing::random_problems(ws[wi], wi == 0 ? 200 : 40, rng())) {
      INFO(pt.mesh << " " << pt.from << " -> " << pt.to);
      const std::uint64_t bytes = std::uint64_t{1} << (rng() % 4);
      const double budget = rng() % 4 == 0 ? 2.0 : 1.0;
      program p = synthesize(pt.mesh, pt.from, pt.to, {.element_bytes = bytes, .memory_budget = budget});
      const json j = to_json(p);
      const program q = program_from_json(j);
      REQUIRE(to_json(q) == j);
      require_same(p, q);
      // Through the text form, and through the ordered form.
      REQUIRE(to_json(program_from_json_text(program_json_text(p))) == j);
      REQUIRE(json(to_ordered_json(p)) == j);
      // Through nlohmann's conversion hooks.
      const json k = p;
      REQUIRE(k == j);
      REQUIRE(to_json(k.get<program>()) == j);
      ++programs;
      steps += p.steps.size();
    }
  }
  CHECK(programs == 480);
  CHECK(steps > programs);
}

TEST_CASE("the JSON follows DESIGN.md section 4") {
  program p = synthesize("{x: 4, y: 8}", "[64{x}256, 1024]", "[256, 128{y}1024]", paper);
  const json j = to_json(p);
  CHECK(j["format"] == "redist-program/1");
  CHECK(j["mesh"] == json::parse(R"([["x", 4], ["y", 8]])"));
  CHECK(j["global_shape"] == json::parse("[256, 1024]"));
  CHECK(j["element_bytes"] == 4);
  CHECK(j["source"] == "[64{x}256, 1024]");
  CHECK(j["target"] == "[256, 128{y}1024]");
  REQUIRE(j["steps"].size() == 2);
  const json& ds = j["steps"][0];
  CHECK(ds["op"] == "dynslice");
  CHECK(ds["split_dim"] == 1);
  CHECK(ds["parts"] == 8);
  CHECK(ds["index"] == json(p.steps[0].index));
  CHECK(ds["type"] == "[64{x}256, 128{y}1024]");
  CHECK(ds["type_exact"] == true);
  CHECK(ds["local_elements"] == 8192);
  CHECK(ds["cost_bytes"] == 0);
  CHECK_FALSE(ds.contains("groups"));
  const json& ag = j["steps"][1];
  CHECK(ag["op"] == "allgather");
  CHECK(ag["concat_dim"] == 0);
  CHECK(ag["groups"].size() == 8);
  CHECK(ag["groups"][0] == json::parse("[0, 8, 16, 24]"));
  CHECK(ag["cost_bytes"] == 131072);
  CHECK_FALSE(ag.contains("split_dim"));
  CHECK(j["cost_bytes"] == 131072);
  CHECK(j["peak_local_elements"] == 65536);
  CHECK(j["memory_bound_elements"] == 65536);

  program a2a = synthesize("{devs: 32}", "[32, 64{devs}2048]", "[1{devs}32, 2048]", paper);
  const json ja = to_json(a2a);
  const json& s = ja["steps"][0];
  CHECK(s["op"] == "alltoall");
  CHECK(s["concat_dim"] == 1);
  CHECK(s["split_dim"] == 0);
  CHECK(s["groups"].size() == 1);

  // Partial sums (an extension): allreduce {op, groups}, reducescatter {op, split_dim, groups}.
  program ar = synthesize("{a: 2, b: 2}", "[{a}8] sum{b}", "[{a}8]", paper);
  CHECK(to_json(ar)["source"] == "[4{a}8] sum{b}");
  CHECK(to_json(ar)["steps"] == json::parse(R"([{"op": "allreduce", "groups": [[0, 1], [2, 3]], "type": "[4{a}8]",
      "type_exact": true, "local_elements": 4, "cost_bytes": 32}])"));
  program rs = synthesize("{a: 2, b: 2}", "[8] sum{b}", "[{b}8]", paper);
  CHECK(to_json(rs)["steps"] == json::parse(R"([{"op": "reducescatter", "split_dim": 0, "groups": [[0, 1], [2, 3]],
      "type": "[4{b}8]", "type_exact": true, "local_elements": 4, "cost_bytes": 32}])"));
  const json pending = to_json(synthesize("{a: 2, b: 2, c: 2}", "[{a}8, 4] sum{b, c}", "[{a}8, 4] sum{c}", paper));
  CHECK(pending["target"] == "[4{a}8, 4] sum{c}");
  CHECK(program_from_json(pending).target.nsum == 1);

  program perm = synthesize("{x: 2, y: 2}", "[{x}4]", "[{y}4]", paper);
  CHECK(to_json(perm)["steps"] == json::parse(R"([{"op": "allpermute", "dest": [0, 2, 1, 3], "type": "[2{y}4]",
      "type_exact": true, "local_elements": 2, "cost_bytes": 8}])"));
}

TEST_CASE("reductions other than sum: \"reduce\" on allreduce and reducescatter, read with default sum", "[sums]") {
  // Written only where not sum (the sums above have none).
  for (reduction r : {reduction::max, reduction::min, reduction::prod, reduction::avg}) {
    const std::string name(reduction_name(r));
    INFO(name);
    const program ar = synthesize("{a: 2, b: 2}", "[{a}8] " + name + "{b}", "[{a}8]", paper);
    REQUIRE(ar.steps.size() == 1);
    CHECK(ar.steps[0].reduce == r);
    CHECK(to_json(ar)["source"] == "[4{a}8] " + name + "{b}");
    CHECK(to_json(ar)["steps"] == json::parse(R"([{"op": "allreduce", "groups": [[0, 1], [2, 3]], "reduce": ")" + name +
                                              R"(", "type": "[4{a}8]", "type_exact": true, "local_elements": 4,
                                              "cost_bytes": 32}])"));
    const program rs = synthesize("{a: 2, b: 2}", "[8] " + name + "{b}", "[{b}8]", paper);
    REQUIRE(rs.steps.size() == 1);
    CHECK(to_json(rs)["steps"][0]["op"] == "reducescatter");
    CHECK(to_json(rs)["steps"][0]["reduce"] == name);
    require_same(program_from_json(to_json(ar)), ar);
    require_same(program_from_json(to_json(rs)), rs);
    require_same(program_from_json_text(program_json_text(rs)), rs);
    // Pending values kept in the target keep their kind.
    const program keep = synthesize("{a: 2, b: 2, c: 2}", "[{a}8, 4] " + name + "{b, c}", "[{a}8, 4] " + name + "{c}", paper);
    CHECK(to_json(keep)["target"] == "[4{a}8, 4] " + name + "{c}");
    CHECK(program_from_json(to_json(keep)).target.reduce == r);
  }
  CHECK(program_json_text(synthesize("{a: 2, b: 2}", "[8] max{b}", "[{b}8]", paper))
            .find("\"groups\": [[0, 1], [2, 3]],\n      \"reduce\": \"max\",") != std::string::npos);

  // Read: absent means sum; the name must be known and the source's kind.
  const json maxed = to_json(synthesize("{a: 2, b: 2}", "[8] max{b}", "[{b}8]", paper));
  json j = maxed;
  CHECK(read_error(j).empty());
  j["steps"][0].erase("reduce");
  CHECK(read_error(j) == "program JSON: steps[0].reduce: 'sum' but the source's partial values combine by max");
  j["steps"][0]["reduce"] = "mean";
  CHECK(read_error(j) == "program JSON: steps[0].reduce: unknown reduction 'mean' (expected sum, max, min, prod or avg)");
  j["steps"][0]["reduce"] = 3;
  CHECK(read_error(j) == "program JSON: steps[0].reduce: expected a string, found 3");
  j["steps"][0]["reduce"] = "min";
  CHECK(read_error(j) == "program JSON: steps[0].reduce: 'min' but the source's partial values combine by max");
  json summed = to_json(synthesize("{a: 2, b: 2}", "[8] sum{b}", "[{b}8]", paper));
  CHECK(program_from_json(summed).steps[0].reduce == reduction::sum);
  summed["steps"][0]["reduce"] = "sum";  // explicit default
  CHECK(read_error(summed).empty());
  json kinds = to_json(synthesize("{a: 2, b: 2, c: 2}", "[{a}8, 4] max{b, c}", "[{a}8, 4] max{c}", paper));
  kinds["target"] = "[4{a}8, 4] min{c}";
  CHECK(read_error(kinds) ==
        "program JSON: target: its partial values combine by min, the source's by max (a redistribution keeps the "
        "reduction kind)");
}

TEST_CASE("program_json_text keeps the contract's key order and rank lists on one line") {
  program p = synthesize("{x: 2, y: 2}", "[{x}4]", "[{y}4]", paper);
  CHECK(program_json_text(p) ==
        "{\n"
        "  \"format\": \"redist-program/1\",\n"
        "  \"mesh\": [[\"x\", 2], [\"y\", 2]],\n"
        "  \"global_shape\": [4],\n"
        "  \"element_bytes\": 4,\n"
        "  \"source\": \"[2{x}4]\",\n"
        "  \"target\": \"[2{y}4]\",\n"
        "  \"steps\": [\n"
        "    {\n"
        "      \"op\": \"allpermute\",\n"
        "      \"dest\": [0, 2, 1, 3],\n"
        "      \"type\": \"[2{y}4]\",\n"
        "      \"type_exact\": true,\n"
        "      \"local_elements\": 2,\n"
        "      \"cost_bytes\": 8\n"
        "    }\n"
        "  ],\n"
        "  \"cost_bytes\": 8,\n"
        "  \"peak_local_elements\": 2,\n"
        "  \"memory_bound_elements\": 2\n"
        "}");
}

TEST_CASE("a minimal hand-written program is read, its costs recomputed") {
  json steps = json::array();
  std::vector<int> all(32);
  for (int r = 0; r < 32; ++r) all[static_cast<std::size_t>(r)] = r;
  steps.push_back({{"op", "alltoall"}, {"concat_dim", 1}, {"split_dim", 0}, {"groups", json::array({all})}});
  json j = {{"format", "redist-program/1"}, {"mesh", json::array({json::array({"devs", 32})})},
            {"global_shape", {32, 2048}}, {"element_bytes", 4},
            {"source", "[32, 64{devs}2048]"}, {"target", "[1{\"devs\"}32, 2048]"}, {"steps", steps}};
  program p = program_from_json(j);
  CHECK(p.cost_bytes() == 8192);
  CHECK(p.peak_local_elements == 2048);
  CHECK(p.memory_bound_elements == 2048);
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].parts == 32);
  CHECK(p.steps[0].local_after == 2048);
  CHECK(p.steps[0].group_count() == 1);
  CHECK(p.steps[0].after.parts[0] == 32);
  CHECK(p.steps[0].type_after.rank == 0);  // no "type" given
  // Written back, it gains the computed fields but no type.
  json back = to_json(p);
  CHECK(back["cost_bytes"] == 8192);
  CHECK_FALSE(back["steps"][0].contains("type"));
}

TEST_CASE("malformed programs are rejected with one line naming the field") {
  const json perm = to_json(synthesize("{x: 2, y: 2}", "[{x}4]", "[{y}4]", paper));
  const json gather = to_json(synthesize("{x: 4, y: 8}", "[64{x}256, 1024]", "[256, 128{y}1024]", paper));
  REQUIRE(read_error(perm).empty());
  REQUIRE(read_error(gather).empty());
  auto with = [](json j, const std::function<void(json&)>& f) {
    f(j);
    return j;
  };

  CHECK(read_error(json::array()) == "program JSON: expected a JSON object, found []");
  CHECK(read_error(with(gather, [](json& j) { j.erase("steps"); })) == "program JSON: missing field 'steps'");
  CHECK(read_error(with(gather, [](json& j) { j.erase("mesh"); })) == "program JSON: missing field 'mesh'");
  CHECK(read_error(with(gather, [](json& j) { j["format"] = "redist-program/2"; })) ==
        "program JSON: missing field 'world'");  // format 2 names its world
  CHECK(read_error(with(gather, [](json& j) { j["format"] = "redist-program/3"; })) ==
        "program JSON: format: unsupported format 'redist-program/3' (expected 'redist-program/1' or "
        "'redist-program/2')");
  CHECK(read_error(with(gather, [](json& j) { j["element_bytes"] = "4"; })) ==
        "program JSON: element_bytes: expected an unsigned integer, found \"4\"");
  CHECK(read_error(with(gather, [](json& j) { j["element_bytes"] = -4; })) ==
        "program JSON: element_bytes: expected an unsigned integer, found -4");
  CHECK(read_error(with(gather, [](json& j) { j["element_bytes"] = 0; })) ==
        "program JSON: element_bytes: must be at least 1");
  CHECK(read_error(with(gather, [](json& j) { j["mesh"][1] = json::array({"y"}); })) ==
        "program JSON: mesh[1]: expected [name, size], found [\"y\"]");
  CHECK(read_error(with(gather, [](json& j) { j["mesh"][1][0] = "x"; })) ==
        "program JSON: mesh[1]: axis 'x' is declared twice in the mesh");
  CHECK(read_error(with(gather, [](json& j) { j["mesh"][1][0] = ""; })) ==
        "program JSON: mesh[1][0]: an axis name has 1 to 31 characters");
  CHECK(read_error(with(gather, [](json& j) { j["source"] = "[64{z}256, 1024]"; })) ==
        "program JSON: source: unknown axis 'z' (the mesh declares x, y) (at column 5 of '[64{z}256, 1024]')");
  CHECK(read_error(with(gather, [](json& j) { j["target"] = "[256, 512]"; })) ==
        "program JSON: target: global types differ: source is [256, 1024], target is [256, 512]");
  CHECK(read_error(with(gather, [](json& j) { j["global_shape"] = {256, 512}; })) ==
        "program JSON: global_shape: [256,512] is not the global shape of the source type");
  CHECK(read_error(with(gather, [](json& j) { j["steps"][1]["op"] = "allscatter"; })) ==
        "program JSON: steps[1].op: unknown op 'allscatter'");
  CHECK(read_error(with(gather, [](json& j) { j["steps"][1]["op"] = "allreduce"; })) ==
        "program JSON: steps[1]: allreduce with 4-rank groups is ill-typed on tiles per dimension [4, 8] "
        "(global shape [256, 1024])");
  CHECK(read_error(with(gather, [](json& j) { j["steps"][1]["concat_dim"] = 2; })) ==
        "program JSON: steps[1].concat_dim: dimension 2 out of range (the array has 2)");
  CHECK(read_error(with(gather, [](json& j) { j["steps"][1].erase("groups"); })) ==
        "program JSON: steps[1]: missing field 'groups'");
  // Groups: sizes, ranges, partition.
  CHECK(read_error(with(gather, [](json& j) { j["steps"][1]["groups"][1].erase(0); })) ==
        "program JSON: steps[1].groups[1]: has 3 ranks, expected 4 (the size of groups[0])");
  CHECK(read_error(with(gather, [](json& j) { j["steps"][1]["groups"].erase(7); })) ==
        "program JSON: steps[1].groups: 7 groups of 4 ranks do not partition the 32 ranks");
  CHECK(read_error(with(gather, [](json& j) { j["steps"][1]["groups"][2][3] = 32; })) ==
        "program JSON: steps[1].groups[2][3]: rank 32 out of range (the mesh has 32 devices)");
  CHECK(read_error(with(gather, [](json& j) { j["steps"][1]["groups"][2][3] = 0; })) ==
        "program JSON: steps[1].groups[2][3]: rank 0 is in more than one group");
  // Dynslice: index length and range.
  CHECK(read_error(with(gather, [](json& j) { j["steps"][0]["index"][5] = 8; })) ==
        "program JSON: steps[0].index[5]: chunk 8 out of range (must be below 8)");
  CHECK(read_error(with(gather, [](json& j) { j["steps"][0]["index"].erase(0); })) ==
        "program JSON: steps[0].index: has 31 entries, expected one per rank (32)");
  // Allpermute: a bijection of the ranks.
  CHECK(read_error(with(perm, [](json& j) { j["steps"][0]["dest"] = {0, 2, 0, 3}; })) ==
        "program JSON: steps[0].dest[2]: rank 0 receives two tiles (dest is not a bijection)");
  CHECK(read_error(with(perm, [](json& j) { j["steps"][0]["dest"][3] = 4; })) ==
        "program JSON: steps[0].dest[3]: rank 4 out of range (must be below 4)");
  // Typing and bookkeeping.
  CHECK(read_error(with(gather, [](json& j) { j["steps"][0]["parts"] = 3; j["steps"][0]["index"] = std::vector<int>(32, 0); })) ==
        "program JSON: steps[0]: dynslice with 3 parts is ill-typed on tiles per dimension [4, 1] (global shape [256, 1024])");
  CHECK(read_error(with(gather, [](json& j) { j["steps"].erase(1); })) ==
        "program JSON: steps: end with tiles per dimension [4, 8] but the target has [1, 8]");
  CHECK(read_error(with(gather, [](json& j) { j["steps"][1]["type"] = "[256, 1024]"; })) ==
        "program JSON: steps[1].type: '[256, 1024]' does not have the tiles per dimension [1, 8] that the steps produce");
  CHECK(read_error(with(gather, [](json& j) { j["steps"][1]["local_elements"] = 1; })) ==
        "program JSON: steps[1].local_elements: 1 but the step leaves 32768");
  CHECK(read_error(with(gather, [](json& j) { j["steps"][1]["cost_bytes"] = 4; })) ==
        "program JSON: steps[1].cost_bytes: 4 but the step costs 32768 elements of 4 bytes");
  CHECK(read_error(with(gather, [](json& j) { j["cost_bytes"] = 4; })) ==
        "program JSON: cost_bytes: 4 but the steps cost 32768 elements of 4 bytes");
  CHECK(read_error(with(gather, [](json& j) { j["peak_local_elements"] = 4; })) ==
        "program JSON: peak_local_elements: 4 but the steps peak at 65536");

  // A type longer than the core's text capacity cannot be written (rather than cut): two
  // long-named axes of 2^20 devices, every prime sub-axis written on its own.
  {
    const std::string a(31, 'a'), b(31, 'b');
    std::string subs;
    for (const std::string* n : {&a, &b})
      for (std::uint64_t pre = 1; pre < (1u << 20); pre *= 2) subs += (subs.empty() ? "" : ", ") + *n + ":(" + std::to_string(pre) + ")2";
    program longp;
    longp.m = parse_mesh("{" + a + ": 1048576, " + b + ": 1048576}");
    longp.source = parse_type(longp.m, "[{" + subs + "}1099511627776]");
    longp.target = parse_type(longp.m, "[1099511627776]");
    try {
      (void)to_json(longp);
      FAIL("no error");
    } catch (const redist_error& e) {
      CHECK(e.code() == errc::capacity);
      CHECK(std::string(e.what()) == "the source type is longer than " + std::to_string(text::capacity) +
                                         " characters and cannot be written");
    }
  }

  // JSON syntax errors are redist_errors too.
  try {
    (void)program_from_json_text("{\"format\": ");
    FAIL("no error");
  } catch (const redist_error& e) {
    CHECK(e.code() == errc::syntax);
    CHECK(std::string(e.what()).starts_with("program JSON: parse error at line 1, column "));
  }
}

TEST_CASE("hostile JSON is refused with one line, never a crash (fuzz regressions)", "[fuzz]") {
  auto refused = [](const std::string& text) -> std::string {
    try {
      (void)program_from_json_text(text);
    } catch (const redist_error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  // 100,000 levels overflowed the stack (in dump(), writing the message).
  CHECK(refused(deep) == "program JSON: arrays and objects nested deeper than 32 levels (at byte 32)");
  CHECK(refused(R"({"format": "redist-program/1", "mesh": )" + deep + "}") ==
        "program JSON: arrays and objects nested deeper than 32 levels (at byte 70)");
  // Brackets inside strings do not nest; 32 levels are read (and refused for what they hold).
  CHECK(refused(R"({"format": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})") ==
        "program JSON: format: unsupported format '" + std::string(37, '[') + "...' (expected 'redist-program/1' or 'redist-program/2')");
  CHECK(refused("{\"format\": " + std::string(31, '[') + std::string(31, ']') + "}") ==
        "program JSON: format: expected a string, found [[[[...]]]]");
  // Numbers JSON cannot hold let nlohmann's out_of_range escape.
  CHECK(refused(R"({"format": "redist-program/1", "mesh": [["x", 1e400]]})") ==
        "program JSON: number overflow parsing '1e400'");
  CHECK(refused(R"({"format": "redist-program/1", "mesh": [["x", 1e322]]})") ==
        "program JSON: number overflow parsing '1e322'");
  CHECK(refused(R"({"format": "redist-program/1", "mesh": [["x", 1.5e3]]})") ==
        "program JSON: mesh[0][1]: expected an unsigned integer, found 1500.0");
  // A document built in memory is never dumped whole into a message.
  json dom = json::array();
  json* cur = &dom;
  for (int i = 0; i < 100000; ++i) {
    cur->push_back(json::array());
    cur = &(*cur)[0];
  }
  CHECK_THROWS_WITH(program_from_json(dom), "program JSON: expected a JSON object, found [[[[...]]]]");
  const json wide = json{{"format", std::string(100000, 'f')}};
  CHECK_THROWS_WITH(program_from_json(wide), "program JSON: format: unsupported format '" + std::string(37, 'f') +
                                                 "...' (expected 'redist-program/1' or 'redist-program/2')");
  // A mesh of 2^32 - 1 devices is refused before anything per rank is allocated.
  CHECK(refused(R"({"format": "redist-program/1", "mesh": [["x", 4294967295]], "element_bytes": 4,
                    "source": "[4294967295]", "target": "[4294967295]", "global_shape": [4294967295],
                    "steps": [{"op": "allgather", "concat_dim": 0, "groups": [[0]]}]})") ==
        "program JSON: mesh: 4294967295 devices; programs are for at most 1048576");
  CHECK(refused(R"({"format": "redist-program/1", "mesh": [["x", 1048576]], "element_bytes": 4,
                    "source": "[1048576]", "target": "[1048576]", "global_shape": [1048576],
                    "steps": [{"op": "allgather", "concat_dim": 0, "groups": [[0]]}]})") ==
        "program JSON: steps[0].groups: 1 groups of 1 ranks do not partition the 1048576 ranks");
}

TEST_CASE("a document built in memory with strings that are not UTF-8 is refused, not thrown past", "[fuzz]") {
  json j = json::parse(R"({"format": "redist-program/1", "mesh": [["x", 2]], "element_bytes": 4,
                           "source": "[2]", "target": "[2]", "global_shape": [2], "steps": []})");
  j["mesh"] = json::array({json::array({"\xff", "\xfe"})});
  CHECK_THROWS_WITH(program_from_json(j), "program JSON: mesh[0][1]: expected an unsigned integer, found \"\xEF\xBF\xBD\"");
  j["format"] = 7;
  CHECK_THROWS_WITH(program_from_json(j), "program JSON: format: expected a string, found 7");
}

TEST_CASE("exchange programs round-trip: boxes written per rank, costs recomputed from the boxes", "[exchange]") {
  std::vector<testing::workload> ws = testing::mixed_workloads();
  ws.insert(ws.begin(), testing::paper_workload());
  std::mt19937_64 rng(77);
  std::size_t exchanges = 0;
  for (std::size_t wi = 0; wi < ws.size(); ++wi)
    for (const auto& pt : testing::random_problems(ws[wi], 20, rng())) {
      INFO(pt.mesh << " " << pt.from << " -> " << pt.to);
      const device_mesh m = parse_mesh(pt.mesh);
      const program p = exchange_program(m, parse_type(m, pt.from), parse_type(m, pt.to), std::uint64_t{1} << (rng() % 4));
      const json j = to_json(p);
      const program q = program_from_json(j);
      require_same(p, q);
      REQUIRE(to_json(q) == j);
      REQUIRE(to_json(program_from_json_text(program_json_text(p))) == j);
      // Without the written costs the reader finds the same ones.
      json bare = j;
      bare.erase("cost_bytes");
      for (json& s : bare["steps"]) {
        s.erase("cost_bytes");
        s.erase("local_elements");
        s.erase("type");
        s.erase("type_exact");
      }
      const program r = program_from_json(bare);
      REQUIRE(r.cost_elements == p.cost_elements);
      REQUIRE(r.peak_local_elements == p.peak_local_elements);
      exchanges += p.count(op::exchange);
    }
  CHECK(exchanges > 100);
}

TEST_CASE("an exchange step in the JSON of DESIGN.md section 4", "[exchange]") {
  const device_mesh m = parse_mesh("{x: 2, y: 2}");
  const program p = exchange_program(m, parse_type(m, "[{x}4]"), parse_type(m, "[{y}4]"));
  CHECK(to_json(p)["steps"] == json::parse(R"([{"op": "exchange", "boxes": [[[0, 2]], [[2, 4]], [[0, 2]], [[2, 4]]],
      "type": "[2{y}4]", "type_exact": true, "local_elements": 2, "cost_bytes": 8}])"));
  CHECK(to_json(p)["cost_bytes"] == 8);
  // One rank's box a line.
  const std::string text = program_json_text(p);
  CHECK(text.find("      \"boxes\": [\n        [[0, 2]],\n        [[2, 4]],\n        [[0, 2]],\n        [[2, 4]]\n      ],\n") !=
        std::string::npos);
  // A hand-written exchange without the extra fields: its cost is what rank 1 and rank 2
  // receive (2 elements each), the peak the larger of the tiles.
  const json j = json::parse(R"({"format": "redist-program/1", "mesh": [["x", 2], ["y", 2]], "global_shape": [4],
      "element_bytes": 4, "source": "[2{x}4]", "target": "[2{y}4]",
      "steps": [{"op": "exchange", "boxes": [[[0, 2]], [[2, 4]], [[0, 2]], [[2, 4]]]}]})");
  const program q = program_from_json(j);
  REQUIRE(q.steps.size() == 1);
  CHECK(q.steps[0].kind == op::exchange);
  CHECK(q.steps[0].cost == 2);
  CHECK(q.cost_bytes() == 8);
  CHECK(q.steps[0].local_after == 2);
  CHECK(q.steps[0].after == shape_of(m, p.target));
  CHECK(q.peak_local_elements == 2);
}

TEST_CASE("malformed exchanges are rejected with one line naming the field", "[exchange]") {
  const device_mesh m = parse_mesh("{x: 2, y: 3}");
  const json good = to_json(exchange_program(m, parse_type(m, "[3{x}6, 2{y}6]"), parse_type(m, "[2{y}6, 3{x}6]")));
  REQUIRE(read_error(good).empty());
  auto with = [&](const std::function<void(json&)>& f) {
    json j = good;
    f(j);
    return read_error(j);
  };
  REQUIRE(good["steps"][0]["boxes"][1] == json::parse("[[2, 4], [0, 3]]"));  // rank 1 = (x 0, y 1)

  CHECK(with([](json& j) { j["steps"][0].erase("boxes"); }) == "program JSON: steps[0]: missing field 'boxes'");
  CHECK(with([](json& j) { j["steps"][0]["boxes"] = 7; }) == "program JSON: steps[0].boxes: expected an array, found 7");
  CHECK(with([](json& j) { j["steps"][0]["boxes"].erase(5); }) ==
        "program JSON: steps[0].boxes: has 5 boxes, expected one per rank (6)");
  CHECK(with([](json& j) { j["steps"][0]["boxes"][2] = "[[4, 6], [0, 3]]"; }) ==
        "program JSON: steps[0].boxes[2]: expected an array, found \"[[4, 6], [0, 3]]\"");
  CHECK(with([](json& j) { j["steps"][0]["boxes"][2].erase(1); }) ==
        "program JSON: steps[0].boxes[2]: has 1 ranges, expected one per dimension (2)");
  CHECK(with([](json& j) { j["steps"][0]["boxes"][2][1] = json::parse("[0, 1, 3]"); }) ==
        "program JSON: steps[0].boxes[2][1]: expected [lo, hi], found [0,1,3]");
  CHECK(with([](json& j) { j["steps"][0]["boxes"][2][1][0] = -1; }) ==
        "program JSON: steps[0].boxes[2][1][0]: expected an unsigned integer, found -1");
  CHECK(with([](json& j) { j["steps"][0]["boxes"][2][1][1] = 2.5; }) ==
        "program JSON: steps[0].boxes[2][1][1]: expected an unsigned integer, found 2.5");
  CHECK(with([](json& j) { j["steps"][0]["boxes"][2][1] = {3, 0}; }) ==
        "program JSON: steps[0].boxes[2][1]: the range [3, 0) is empty (a box holds lo <= i < hi, lo < hi)");
  CHECK(with([](json& j) { j["steps"][0]["boxes"][2][1] = {3, 3}; }) ==
        "program JSON: steps[0].boxes[2][1]: the range [3, 3) is empty (a box holds lo <= i < hi, lo < hi)");
  CHECK(with([](json& j) { j["steps"][0]["boxes"][5][1] = {4, 7}; }) ==
        "program JSON: steps[0].boxes[5][1]: the range [4, 7) is not inside dimension 1 [0, 6)");
  CHECK(with([](json& j) { j["steps"][0]["boxes"][5][1] = {4, 18446744073709551615u}; }) ==
        "program JSON: steps[0].boxes[5][1]: the range [4, 18446744073709551615) is not inside dimension 1 [0, 6)");
  CHECK(with([](json& j) { j["steps"][0]["boxes"][2][0] = {4, 5}; }) ==
        "program JSON: steps[0].boxes[2][0]: rank 2 holds 1 indices of dimension 0, rank 0 2: every rank's box has "
        "one shape");
  CHECK(with([](json& j) {
          for (json& b : j["steps"][0]["boxes"]) b[0] = {0, 4};
        }) == "program JSON: steps[0].boxes[0][0]: extent 4 does not divide dimension 0 (6): the boxes of an exchange "
              "are the tiles of an even tiling");
  // Boxes that read well but do not make a program: the end shape, the written costs.
  CHECK(with([](json& j) {
          for (json& b : j["steps"][0]["boxes"]) b[0] = {0, 6};
        }) == "program JSON: steps[0].type: '[2{y}6, 3{x}6]' does not have the tiles per dimension [1, 2] that the "
              "steps produce");
  CHECK(with([](json& j) { j["steps"][0]["cost_bytes"] = 20; }) ==
        "program JSON: steps[0].cost_bytes: 20 but the step costs 6 elements of 4 bytes");
  CHECK(with([](json& j) { j["cost_bytes"] = 20; }) == "program JSON: cost_bytes: 20 but the steps cost 6 elements of 4 bytes");
  CHECK(with([](json& j) { j["steps"][0]["local_elements"] = 5; }) ==
        "program JSON: steps[0].local_elements: 5 but the step leaves 6");
  // An element nobody holds: every rank first takes rank 0's target box.
  CHECK(with([](json& j) {
          json first = j["steps"][0];
          first.erase("type");
          first.erase("type_exact");
          first.erase("cost_bytes");
          for (json& b : first["boxes"]) b = json::parse("[[0, 2], [0, 3]]");
          j["steps"].insert(j["steps"].begin(), first);
          j.erase("cost_bytes");
          j["steps"][1].erase("cost_bytes");
        }) == "program JSON: steps[1]: no rank holds some elements of rank 1's box [2, 4) x [0, 3) before the exchange");
  // A box that shifts the tiling: ranges that overlap partly before the next exchange.
  CHECK(with([](json& j) {
          json first = j["steps"][0];
          first.erase("type");
          first.erase("type_exact");
          first.erase("cost_bytes");
          first["boxes"][1][0] = {1, 3};
          j["steps"].insert(j["steps"].begin(), first);
          j.erase("cost_bytes");
          j["steps"][1].erase("cost_bytes");
        }) == "program JSON: steps[1]: the boxes before the exchange overlap partly along dimension 0 ([0, 2) and [1, "
              "3)): an exchange needs every two ranks' ranges to be equal or disjoint in each dimension, or their boxes "
              "disjoint");
  // Partial sums: an exchange does not add them.
  const device_mesh ab = parse_mesh("{a: 2, b: 2}");
  json sums = to_json(exchange_program(ab, parse_type(ab, "[{a}4]"), parse_type(ab, "[{b}4]")));
  sums["source"] = "[{a}4] sum{b}";
  sums["target"] = "[{b}4] sum{a}";
  CHECK(read_error(sums) ==
        "program JSON: steps[0]: an exchange does not add partial sums: every pending sum must be reduced before it "
        "(a partial step after the last exchange creates the target's)");
}

TEST_CASE("hostile exchange JSON is refused with one line, never a crash", "[exchange][fuzz]") {
  auto refused = [](const std::string& text) -> std::string {
    try {
      (void)program_from_json_text(text);
    } catch (const redist_error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string head = R"({"format": "redist-program/1", "mesh": [["x", 2]], "element_bytes": 4,
      "source": "[{x}4]", "target": "[4]", "global_shape": [4], "steps": [)";
  CHECK(refused(head + R"({"op": "exchange", "boxes": [[[0, 4]], [[0, 4]]]}]})") == "no error");
  CHECK(refused(head + R"({"op": "exchange", "boxes": [[[0, 4]], [[0, 1e400]]]}]})") ==
        "program JSON: number overflow parsing '1e400'");
  CHECK(refused(head + R"({"op": "exchange", "boxes": [[[0, 4]], [[0, 18446744073709551616]]]}]})") ==
        "program JSON: steps[0].boxes[1][0][1]: expected an unsigned integer, found 1.8446744073709552e+19");
  CHECK(refused(head + R"({"op": "exchange", "boxes": [[[0, 4]], [[[[0, 4]]]]]}]})") ==
        "program JSON: steps[0].boxes[1][0]: expected [lo, hi], found [[[0,4]]]");
  CHECK(refused(head + R"({"op": "exchange", "boxes": [[[0, 4]], [[null, 4]]]}]})") ==
        "program JSON: steps[0].boxes[1][0][0]: expected an unsigned integer, found null");
  CHECK(refused(head + R"({"op": "exchange", "boxes": [[[0, 4]], {"0": [0, 4]}]}]})") ==
        "program JSON: steps[0].boxes[1]: expected an array, found {\"0\":[0,4]}");
  CHECK(refused(head + R"({"op": "exchange", "boxes": []}]})") ==
        "program JSON: steps[0].boxes: has 0 boxes, expected one per rank (2)");
}

TEST_CASE("an exchange must come after the reduction of every pending sum", "[exchange]") {
  const std::string head = R"({"format": "redist-program/1", "mesh": [["a", 2]], "element_bytes": 4,
      "source": "[4] sum{a}", "target": "[4]", "global_shape": [4], "steps": [)";
  const std::string reduce = R"({"op": "allreduce", "groups": [[0, 1]]})";
  const std::string exchange = R"({"op": "exchange", "boxes": [[[0, 4]], [[0, 4]]]})";
  // Reduced first (the plans of uneven types): read.
  const program p = program_from_json_text(head + reduce + ", " + exchange + "]}");
  CHECK(p.steps.size() == 2);
  CHECK(p.steps[1].cost == 0);
  // Exchanged first: refused.
  CHECK(read_error(json::parse(head + exchange + ", " + reduce + "]}")) ==
        "program JSON: steps[0]: an exchange does not add partial sums: every pending sum must be reduced before it "
        "(a partial step after the last exchange creates the target's)");
}

// ---- Format 2: programs on device sets (DESIGN.md section 4, lower/between.hpp) ----

namespace {
/// The chosen program between two placed layouts.
program between(const char* ma, const char* a, const char* mb, const char* b, std::uint64_t W) {
  const placed_mesh pa = parse_placed_mesh(ma), pb = parse_placed_mesh(mb);
  return synthesize_between(placed_layout{pa, parse_type(pa.mesh, a)}, placed_layout{pb, parse_type(pb.mesh, b)}, W);
}
}  // namespace

TEST_CASE("programs on device sets round-trip as redist-program/2", "[placed]") {
  const program cases[] = {
      between("{x: 2, y: 2} @ [4, 6, 5, 7]", "[{x}8, {y}8]", "{x: 2, y: 2} @ [4, 6, 5, 7]", "[8, {x}8]", 8),
      between("{dp: 2, tp: 2} @ [0, 1, 2, 3]", "[{dp}8, 4, {tp}8]", "{dp: 2, tp: 2} @ [4, 5, 6, 7]", "[{dp}8, {tp}4, 8]", 8),
      between("{x: 2}", "[{x}16, 16]", "{a: 2, b: 2} @ [2, 3, 4, 5]", "[{a}16, 16]", 6),
      between("{x: 8}", "[{x}10, 7]", "{y: 3} @ [5, 1, 7]", "[{y}10, 7]", 8),
      between("{x: 2, y: 2}", "[{x}8, {y}8]", "{x: 2, y: 2} @ [1, 0, 2, 3]", "[{x}8, {y}8]", 4),
  };
  for (const program& p : cases) {
    INFO(program_json_text(p));
    REQUIRE(p.placed());
    REQUIRE(detail::check_program(p).error.empty());
    const json j = to_json(p);
    CHECK(j["format"] == "redist-program/2");
    CHECK(j["world"] == p.world_size());
    const program back = program_from_json(j);
    require_same(p, back);
    CHECK(back.world == p.world);
    CHECK(back.source_devices == p.source_devices);
    CHECK(back.two_meshes == p.two_meshes);
    CHECK(back.target_devices == p.target_devices);
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
      CHECK(back.steps[i].holds == p.steps[i].holds);
      CHECK(back.steps[i].on_target == p.steps[i].on_target);
    }
    CHECK(program_json_text(back) == program_json_text(p));
  }
}

TEST_CASE("an exchange's senders by node (\"node_ranks\") round-trip, written only when set", "[exchange]") {
  const device_mesh m = parse_mesh("{x: 2, y: 4}");
  program one = exchange_program(m, parse_type(m, "[{y}64, 96]"), parse_type(m, "[64, {y}96]"));
  CHECK_FALSE(to_json(one)["steps"][0].contains("node_ranks"));
  program two = between("{x: 2, y: 2} @ [0, 4, 1, 5]", "[{y}8, 8]", "{t: 4} @ [2, 3, 6, 7]", "[8, {t}8]", 8);
  box_layout rows{{8, 8}, {}};
  for (std::uint64_t r = 0; r < 8; ++r) rows.boxes.push_back(testing::make_box({{r, r + 1}, {0, 8}}));
  const placed_mesh pm = parse_placed_mesh("{x: 2}");
  program boxed = exchange_between(array_layout{rows}, array_layout{placed_layout{pm, parse_type(pm.mesh, "[8, {x}8]")}},
                                   8, 4);
  for (program* p : {&one, &two, &boxed}) {
    REQUIRE(p->steps.size() == 1);
    REQUIRE(p->steps[0].kind == op::exchange);
    p->steps[0].node_ranks = 4;
    const json j = to_json(*p);
    INFO(j.dump());
    CHECK(j["steps"][0]["node_ranks"] == 4);
    const program back = program_from_json(j);
    CHECK(back.steps[0].node_ranks == 4);
    CHECK(program_json_text(back) == program_json_text(*p));
    json bad = j;
    bad["steps"][0]["node_ranks"] = 0;
    CHECK(read_error(bad) == "program JSON: steps[0].node_ranks: expected an integer >= 1 (world ranks per node), found 0");
    bad["steps"][0]["node_ranks"] = "four";
    CHECK(read_error(bad) == "program JSON: steps[0].node_ranks: expected an unsigned integer, found \"four\"");
  }
}

TEST_CASE("the JSON of a cross-mesh exchange lists null for ranks that hold nothing after it", "[placed]") {
  const program p = between("{x: 2}", "[{x}8]", "{y: 2} @ [2, 3]", "[{y}8]", 4);
  const json j = to_json(p);
  CHECK(j["devices"] == json::parse("[0, 1]"));
  CHECK(j["target_mesh"] == json::parse(R"([["y", 2]])"));
  CHECK(j["target_devices"] == json::parse("[2, 3]"));
  REQUIRE(j["steps"].size() == 1);
  CHECK(j["steps"][0]["op"] == "exchange");
  CHECK(j["steps"][0]["boxes"] == json::parse("[null, null, [[0, 4]], [[4, 8]]]"));
  CHECK(j["steps"][0]["type_mesh"] == "target");
  CHECK(j["cost_bytes"] == 16);
}

TEST_CASE("malformed programs on device sets are rejected with one line naming the field", "[placed]") {
  const json good = to_json(between("{x: 2, y: 2} @ [4, 6, 5, 7]", "[{x}8, {y}8]", "{x: 2, y: 2} @ [4, 6, 5, 7]",
                                    "[8, {y}8]", 8));
  REQUIRE(read_error(good).empty());
  REQUIRE(good["steps"][0]["op"] == "allgather");
  auto with = [&](const std::function<void(json&)>& f) {
    json j = good;
    f(j);
    return read_error(j);
  };
  CHECK(with([](json& j) { j.erase("world"); }) == "program JSON: missing field 'world'");
  CHECK(with([](json& j) { j["devices"] = json::parse("[4, 6, 5, 5]"); }) ==
        "program JSON: devices: device 5 is listed twice (positions 2 and 3)");
  CHECK(with([](json& j) { j["devices"] = json::parse("[4, 6, 5, 8]"); }) ==
        "program JSON: devices: device 8 (position 3) is not a rank of the world of 8 ranks");
  CHECK(with([](json& j) { j["devices"] = json::parse("[4, 6, 5]"); }) ==
        "program JSON: devices: the device list has 3 ranks but the mesh has 4 devices");
  CHECK(with([](json& j) { j["steps"][0]["groups"][0][0] = 0; }) ==
        "program JSON: steps[0].groups[0][0]: rank 0 holds no tile before the step");
  CHECK(with([](json& j) { j["steps"][0]["groups"][0][0] = 9; }) ==
        "program JSON: steps[0].groups[0][0]: rank 9 out of range (the world has 8 ranks)");
  CHECK(with([](json& j) { j["format"] = "redist-program/1"; }).starts_with("program JSON: steps[0].groups[0][0]: rank "));
  // Box layouts (redist/box.hpp): read, and refused naming the field (tests/lower/test_box_layout.cpp has more).
  CHECK(with([](json& j) { j["source"] = json::parse(R"({"boxes": []})"); }) ==
        "program JSON: source.boxes: has 0 entries, expected one box or null per world rank (8)");
  CHECK(with([](json& j) { j["source"] = json::parse(R"({"box": []})"); }) ==
        "program JSON: source: missing field 'boxes'");
  CHECK(with([](json& j) {
          j["source"] = json::parse(R"({"boxes": [null, null, null, null, [[0, 8], [0, 8]], null, null, null]})");
        }) == "program JSON: steps[0].op: 'allgather': a program with a box-layout source or target runs exchanges only");
}

TEST_CASE("program_check follows programs on device sets: ranks outside the mesh hold nothing", "[placed]") {
  program p = between("{x: 2} @ [3, 1]", "[{x}8]", "{x: 2} @ [3, 1]", "[8]", 4);
  REQUIRE(p.steps.size() == 1);
  REQUIRE(p.steps[0].kind == op::allgather);
  CHECK(p.steps[0].members == std::vector<rank_t>{3, 1});
  CHECK(detail::check_program(p).error.empty());
  program bad = p;
  bad.steps[0].members = {3, 0};
  CHECK(detail::check_program(bad).error ==
        "invalid program: step 0 (allgather): the groups must list every rank that holds a tile exactly once (0 holds "
        "none)");
  bad = p;
  bad.steps[0].members = {1, 3};  // the order of the concatenation: the boxes do not follow
  CHECK(detail::check_program(bad).error ==
        "invalid program: step 0 (allgather): the boxes [4, 8) and [0, 4) are not adjacent along dimension 0");
  bad = p;
  bad.source_devices = {3, 4};
  CHECK(detail::check_program(bad).error ==
        "invalid program: the source mesh's devices: device 4 (position 1) is not a rank of the world of 4 ranks");
}

}  // namespace program_json_test
