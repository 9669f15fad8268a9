// Tests of redist/reshard_json.hpp (issue 26): the reshard manifest (redist-reshard/1) in
// every notation redist reads, read exactly; bad input refused with one line naming the
// array and the field; the plan as JSON (redist-reshard-plan/1) with its pieces and the own
// programs as redist-program/2.
#include <catch2/catch.hpp>
#include <string>

#include <nlohmann/json.hpp>

#include "redist/program_json.hpp"
#include "redist/reshard_json.hpp"

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
  const auto& a = m.problem.arrays;
  REQUIRE(a[0].name == "wte");
  REQUIRE(a[0].dtype == element_type::bf16);
  REQUIRE(std::string(type_text(a[0].source.pm.mesh, a[0].source.type).view()) == "[500{tp}1000, 16{fsdp}64]");
  REQUIRE(placed_mesh_text(a[0].target.pm) == "{tp: 4} @ [4, 5, 6, 7]");
  REQUIRE(std::string(type_text(a[0].target.pm.mesh, a[0].target.type).view()) == "[250{tp}1000, 64]");
  REQUIRE(std::string(type_text(a[1].source.pm.mesh, a[1].source.type).view()) == "[16{fsdp}64, 96{tp}192]");
  REQUIRE(a[2].dtype == element_type::i8);
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
