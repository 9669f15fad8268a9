// Tests of redist/reshard_json.hpp (issue 26): the reshard manifest (redist-reshard/1) in
// every notation redist reads, read exactly; bad input refused with one line naming the
// array and the field; the plan as JSON (redist-reshard-plan/1) with its pieces and the own
// programs as redist-program/2.
#include <catch2/catch.hpp>
#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "redist/program_json.hpp"
#include "redist/reshard_json.hpp"

// A namespace of its own: the folder's tests compile as one unit (tests/CMakeLists.txt).
namespace reshard_json_test {

namespace {

using namespace redist;

const char* manifest = R"J({
  "format": "redist-reshard/1",
  "world": 8,
  "budget_bytes": 4096,
  "meshes": {"train": "{fsdp: 4, tp: 2}", "infer": "{tp: 4} @ [4, 5, 6, 7]"},
  "arrays": [
    {"name": "wte", "shape": [1000, 64], "dtype": "bf16",
     "source": {"mesh": "train", "type": "[{tp}1000, {fsdp}64]"},
     "target": {"mesh": "infer", "jax": "P('tp', None)"}},
    {"name": "c_attn", "shape": [64, 192], "dtype": "f32",
     "source": {"mesh": "train", "dtensor": "[Shard(0), Shard(1)]"},
     "target": {"mesh": "infer", "type": "[64, {tp}192]"}},
    {"name": "ln", "shape": [64], "dtype": "i8",
     "source": {"xla": "{devices=[4,2]<=[8] last_tile_dim_replicate}"},
     "target": {"shardy": "sdy.mesh @m = <[\"tp\"=4], device_ids=[4,5,6,7]> #sdy.sharding<@m, [{}]>"}},
    {"name": "grad", "shape": [8, 8], "dtype": "f64",
     "source": {"mesh": "train", "type": "[{fsdp}8, 8] sum{tp}"},
     "target": {"mesh": "train", "type": "[8, {tp}8]"}}
  ]
})J";

std::string with(const std::string& from, const std::string& to) {
  std::string s = manifest;
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

std::string error_of(const std::string& text) {
  try {
    read_reshard_manifest(text);
  } catch (const redist_error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("a manifest in every notation", "[reshard_json]") {
  const reshard_manifest m = read_reshard_manifest(manifest);
  REQUIRE(m.problem.world == 8);
  REQUIRE(m.budget_bytes == 4096);
  REQUIRE(m.problem.arrays.size() == 4);
  struct typed {  // the arrays' layouts, all typed here
    placed_layout source, target;
  };
  std::vector<typed> a;
  for (const reshard_array& x : m.problem.arrays)
    a.push_back({std::get<placed_layout>(x.source), std::get<placed_layout>(x.target)});
  const auto& arr = m.problem.arrays;
  REQUIRE(arr[0].name == "wte");
  REQUIRE(arr[0].dtype == element_type::bf16);
  REQUIRE(std::string(type_text(a[0].source.pm.mesh, a[0].source.type).view()) == "[500{tp}1000, 16{fsdp}64]");
  REQUIRE(placed_mesh_text(a[0].target.pm) == "{tp: 4} @ [4, 5, 6, 7]");
  REQUIRE(std::string(type_text(a[0].target.pm.mesh, a[0].target.type).view()) == "[250{tp}1000, 64]");
  REQUIRE(std::string(type_text(a[1].source.pm.mesh, a[1].source.type).view()) == "[16{fsdp}64, 96{tp}192]");
  REQUIRE(arr[2].dtype == element_type::i8);
  REQUIRE(a[2].source.pm.mesh.devices == 8);
  REQUIRE(a[2].target.pm.devices == std::vector<std::uint32_t>{4, 5, 6, 7});
  REQUIRE(a[3].source.type.nsum == 1);
  // Planned and written: the sums' array is own, with its program.
  const reshard_plan p = plan_reshard(m.problem, {.budget_bytes = m.budget_bytes});
  const nlohmann::json j = nlohmann::json::parse(reshard_plan_to_json(p));
  REQUIRE(j["format"] == "redist-reshard-plan/1");
  REQUIRE(j["arrays"].size() == 4);
  REQUIRE(j["arrays"][3]["route"] == "own");
  REQUIRE(j["arrays"][3]["program"]["format"] == "redist-program/1");
  REQUIRE(program_from_json(j["arrays"][3]["program"]).steps.size() == p.own[3].chosen_program().steps.size());
  REQUIRE(j["rounds"].size() == p.rounds.size());
  std::size_t pieces = 0;
  for (const auto& r : j["rounds"]) pieces += r["pieces"].size();
  std::size_t want = 0;
  for (const reshard_round& r : p.rounds) want += r.pieces.size();
  REQUIRE(pieces == want);
  REQUIRE(j["received_bytes"] == j["lower_bound_bytes"]);
  for (const auto& t : j["transient_bytes"]) REQUIRE(t.get<std::uint64_t>() <= 4096);
}

TEST_CASE("bad manifests name the array and the field", "[reshard_json]") {
  REQUIRE(error_of("[1, 2]") == "reshard manifest: expected an object, found [1,2]");
  REQUIRE(error_of(with("redist-reshard/1", "redist-reshard/9")) ==
          "reshard manifest: format: 'redist-reshard/9' is not redist-reshard/1");
  REQUIRE(error_of(with("\"dtype\": \"bf16\"", "\"dtype\": \"f8\"")) ==
          "reshard manifest: arrays[0] ('wte').dtype: unknown dtype 'f8' (known: f64, f32, bf16, f16, i64, i32, i8, u8)");
  REQUIRE(error_of(with("\"name\": \"c_attn\"", "\"name\": \"wte\"")) ==
          "reshard manifest: arrays[1].name: 'wte' is also the name of arrays[0]");
  REQUIRE(error_of(with("[Shard(0), Shard(1)]", "[Shard(0), Shard(2)]")).rfind(
              "reshard manifest: arrays[1] ('c_attn').source.dtensor: ", 0) == 0);
  REQUIRE(error_of(with("\"type\": \"[64, {tp}192]\"", "\"type\": \"[64, {tp}96]\"")) ==
          "reshard manifest: arrays[1] ('c_attn').target.type: the type's global shape is not the array's shape [64, 192]");
  REQUIRE(error_of(with("\"mesh\": \"infer\", \"jax\"", "\"mesh\": \"nowhere\", \"jax\"")) ==
          "reshard manifest: arrays[0] ('wte').target.mesh: no mesh named 'nowhere' in 'meshes'");
  REQUIRE(error_of(with("\"mesh\": \"infer\", \"jax\": \"P('tp', None)\"", "\"jax\": \"P('tp', None)\", \"type\": \"[1000, 64]\"")) ==
          "reshard manifest: arrays[0] ('wte').target: gives both 'type' and 'jax'");
  REQUIRE(error_of(with("\"world\": 8", "\"world\": 4")) ==
          "reshard manifest: meshes.infer: device 4 (position 0) is not a rank of the world of 4 ranks");
}

TEST_CASE("a manifest takes the shardings JAX and XLA print, with their meshes", "[reshard_json]") {
  const std::string text = R"J({
  "format": "redist-reshard/1",
  "world": 8,
  "meshes": {"m": "{x: 8}"},
  "arrays": [
    {"name": "act", "shape": [8, 4], "dtype": "bf16",
     "source": {"jax": "NamedSharding(mesh=Mesh(device_ids=array([[4, 5],\n       [6, 7]]), axis_names=('dp', 'tp')), spec=PartitionSpec('dp', 'tp'), memory_kind=device)"},
     "target": {"xla": "{mesh['x'=2,'y'=2], device_ids=(0,2,1,3), [{}, {'y', 'x'}]}"}},
    {"name": "w", "shape": [8, 4], "dtype": "f32",
     "source": {"jax": "NamedSharding(mesh=Mesh('x': 8, axis_types=(Auto,)), spec=PartitionSpec('x',))"},
     "target": {"mesh": "m", "jax": "P(None, 'x')"}}
  ]
})J";
  const reshard_manifest m = read_reshard_manifest(text);
  const auto* act = std::get_if<placed_layout>(&m.problem.arrays[0].source);
  REQUIRE(act);
  CHECK(placed_mesh_text(act->pm) == "{dp: 2, tp: 2} @ [4, 5, 6, 7]");
  CHECK(type_text(act->pm.mesh, act->type).str() == "[4{dp}8, 2{tp}4]");
  const auto* to = std::get_if<placed_layout>(&m.problem.arrays[0].target);
  REQUIRE(to);
  CHECK(placed_mesh_text(to->pm) == "{x: 2, y: 2} @ [0, 2, 1, 3]");
  CHECK(type_text(to->pm.mesh, to->type).str() == "[8, 1{x, y}4]");
  const auto* w = std::get_if<placed_layout>(&m.problem.arrays[1].source);
  REQUIRE(w);
  CHECK(placed_mesh_text(w->pm) == "{x: 8}");
  // A NamedSharding names its mesh: no 'mesh' beside it; a bare spec needs one.
  std::string bad = text;
  bad.replace(bad.find("\"source\": {\"jax\": \"NamedSharding(mesh=Mesh('x'"), 19, "\"source\": {\"mesh\": \"m\", \"jax\": \"");
  CHECK(error_of(bad) == "reshard manifest: arrays[1] ('w').source: a NamedSharding carries its own devices: no 'mesh'");
  bad = text;
  bad.replace(bad.find("spec=PartitionSpec('dp', 'tp')"), 30, "spec=PartitionSpec('dp', 'q')");
  CHECK(error_of(bad).rfind("reshard manifest: arrays[0] ('act').source.jax: unknown mesh axis 'q'", 0) == 0);
}

TEST_CASE("box layouts in a manifest: explicit boxes, DTensor's nested chunks, Shardy's sub-axes", "[reshard_json][box]") {
  const std::string text = R"J({
  "format": "redist-reshard/1",
  "world": 8,
  "meshes": {"m": "{x: 2, y: 2, z: 2}"},
  "arrays": [
    {"name": "rows", "shape": [4, 3], "dtype": "f32",
     "source": {"boxes": [[[0, 1], [0, 3]], [[1, 4], [0, 3]], null, null, null, null, null, [[1, 4], [0, 3]]]},
     "target": {"mesh": "m", "type": "[{x}4, 3]"}},
    {"name": "nested", "shape": [10, 5], "dtype": "f64",
     "source": {"mesh": "m", "dtensor": "[Shard(0), Shard(0), Replicate()]"},
     "target": {"mesh": "m", "type": "[10, {z}5]"}},
    {"name": "sub", "shape": [12, 4], "dtype": "i32",
     "source": {"mesh": "m", "type": "[{x, y, z}12, 4]"},
     "target": {"shardy": "sdy.mesh @s = <[\"a\"=2, \"b\"=4]> #sdy.sharding<@s, [{\"b\":(1)2}, {\"b\":(2)2}]>"}}
  ]
})J";
  const reshard_manifest m = read_reshard_manifest(text);
  const auto& a = m.problem.arrays;
  REQUIRE(a.size() == 3);
  const auto* rows = std::get_if<box_layout>(&a[0].source);
  REQUIRE(rows);
  CHECK(rows->world() == 8);
  CHECK(rows->boxes[7] == rows->boxes[1]);  // replicas
  const auto* nested = std::get_if<box_layout>(&a[1].source);
  REQUIRE(nested);
  CHECK(nested->boxes[1]->lo[0] == 0);  // rows 3, 2, 3, 2, each on two ranks
  CHECK(nested->boxes[2]->lo[0] == 3);
  CHECK(nested->boxes[2]->hi[0] == 5);
  // "b":(1)2 and "b":(2)2 on b = 4 are redist's own sub-axes: a type, not boxes.
  REQUIRE(std::holds_alternative<placed_layout>(a[2].target));
  const reshard_plan p = plan_reshard(m.problem);
  CHECK(p.count(reshard_route::joint) == 3);
  CHECK(p.received_bytes == p.lower_bound_bytes);
  const nlohmann::json j = nlohmann::json::parse(reshard_plan_to_json(p));
  CHECK(j["arrays"][0]["source"]["boxes"][7] == nlohmann::json::parse("[[1, 4], [0, 3]]"));
  CHECK(j["arrays"][0]["source"]["boxes"][2].is_null());
  CHECK(j["arrays"][0]["target"] == "[2{x}4, 3] on {x: 2, y: 2, z: 2}");

  // Sub-axes out of redist's prime order read as boxes.
  std::string sub = text;
  const std::string order = R"(#sdy.sharding<@s, [{\"b\":(1)2}, {\"b\":(2)2}]>)";
  sub.replace(sub.find(order), order.size(), R"(#sdy.sharding<@s, [{\"b\":(1)2}, {}]>)");
  sub.replace(sub.find(R"(\"b\"=4)"), 7, R"(\"b\"=6)");
  sub.replace(sub.find(R"(\"a\"=2)"), 7, R"(\"a\"=1)");
  CHECK(std::holds_alternative<placed_layout>(read_reshard_manifest(sub).problem.arrays[2].target));
  sub.replace(sub.find(R"(\"b\":(1)2)"), 10, R"(\"b\":(1)3)");
  const reshard_manifest ms = read_reshard_manifest(sub);
  const auto* sl = std::get_if<box_layout>(&ms.problem.arrays[2].target);
  REQUIRE(sl);
  CHECK(sl->world() == 8);  // the manifest's world; the mesh holds ranks 0..5
  CHECK(sl->boxes[3]->lo[0] == 4);  // b's coordinate 3 is in its major 3's block 1 (rows [4, 8))
  CHECK_FALSE(sl->boxes[6].has_value());

  // Bad boxes: the array, the field, the entry.
  std::string bad = text;
  bad.replace(bad.find("null, null, null, null, null, [[1, 4]"), 37, "null, null, null, null, [[1, 4]");
  CHECK(error_of(bad) == "reshard manifest: arrays[0] ('rows').source.boxes: has 7 entries, expected one box or null "
                         "per world rank (8)");
  bad = text;
  bad.replace(bad.find("[[1, 4], [0, 3]], null"), 16, "[[0, 4], [0, 3]]");
  CHECK(error_of(bad) == "reshard manifest: arrays[0] ('rows').source.boxes: box layout: ranks 0 and 1 both hold the "
                         "element (0, 0) (boxes [0, 1) x [0, 3) and [0, 4) x [0, 3) overlap; replicas hold equal boxes)");
  bad = text;
  bad.replace(bad.find("{\"boxes\""), 8, "{\"mesh\": \"m\", \"boxes\"");
  CHECK(error_of(bad) == "reshard manifest: arrays[0] ('rows').source: 'boxes' carries its own devices: no 'mesh'");
}

TEST_CASE("a manifest's casts: target_dtype read, written in the plan, refused between other types", "[reshard_json]") {
  const std::string cast = with("\"dtype\": \"f32\",", "\"dtype\": \"f32\", \"target_dtype\": \"bf16\",");
  const reshard_manifest m = read_reshard_manifest(cast);
  const reshard_array& c = m.problem.arrays[1];
  REQUIRE(c.name == "c_attn");
  REQUIRE(c.casts());
  REQUIRE(c.target_type() == element_type::bf16);
  REQUIRE(c.wire_bytes() == 2);
  REQUIRE(!m.problem.arrays[0].casts());
  // The same type is no cast.
  REQUIRE(!read_reshard_manifest(with("\"dtype\": \"f32\",", "\"dtype\": \"f32\", \"target_dtype\": \"f32\","))
               .problem.arrays[1]
               .target_dtype);
  const nlohmann::json j = nlohmann::json::parse(reshard_plan_to_json(plan_reshard(m.problem)));
  REQUIRE(j["arrays"][1]["target_dtype"] == "bf16");
  REQUIRE(j["arrays"][1]["route"] == "joint");
  REQUIRE(!j["arrays"][0].contains("target_dtype"));
  REQUIRE(error_of(with("\"dtype\": \"f32\",", "\"dtype\": \"f32\", \"target_dtype\": \"i8\",")) ==
          "reshard manifest: arrays[1] ('c_attn').target_dtype: cannot cast f32 to i8 (casts are between f64, f32, bf16, "
          "f16)");
  REQUIRE(error_of(with("\"dtype\": \"f32\",", "\"dtype\": \"f32\", \"target_dtype\": \"fp8\",")) ==
          "reshard manifest: arrays[1] ('c_attn').target_dtype: unknown dtype 'fp8' (known: f64, f32, bf16, f16, i64, i32, "
          "i8, u8)");
  REQUIRE(error_of(with("\"dtype\": \"f32\",", "\"dtype\": \"f32\", \"to_dtype\": \"bf16\",")) ==
          "reshard manifest: arrays[1] ('c_attn'): unknown field 'to_dtype' (name, shape, dtype, target_dtype, source, "
          "target)");
  // Pending values cast: reduced in the type that holds both (f64), then narrowed.
  const std::string grad = with("\"dtype\": \"f64\",", "\"dtype\": \"f64\", \"target_dtype\": \"f32\",");
  const reshard_plan g = plan_reshard(read_reshard_manifest(grad).problem);
  const auto it = std::find_if(g.arrays.begin(), g.arrays.end(), [](const reshard_array& x) { return x.name == "grad"; });
  REQUIRE(it != g.arrays.end());
  CHECK(it->casts_pending());
  CHECK(it->program_type() == element_type::f64);
  CHECK(g.route[static_cast<std::size_t>(it - g.arrays.begin())] == reshard_route::own);
}

}  // namespace reshard_json_test
