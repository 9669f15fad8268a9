// redist/reshard_json.hpp -- the reshard manifest, format redist-reshard/1 (docs/reference.md
// "Many arrays at once"), and the joint plan as JSON (redist-reshard-plan/1). Needs
// nlohmann-json.
//
//   {
//     "format": "redist-reshard/1",
//     "world": 8,                                   optional: the smallest world holding every mesh
//     "budget_bytes": 4194304,                      optional: per-rank transient bytes (0: none)
//     "meshes": {"train": "{fsdp: 4, tp: 2}",       named meshes, device lists allowed
//                "infer": "{tp: 4} @ [4, 5, 6, 7]"},
//     "arrays": [
//       {"name": "wte", "shape": [50257, 768], "dtype": "f32", "target_dtype": "bf16",
//        "source": {"mesh": "train", "type": "[{fsdp}50257, {tp}768]"},
//        "target": {"mesh": "infer", "jax": "P(None, 'tp')"}},
//       {"name": "h0.ln", "shape": [768], "dtype": "bf16",
//        "source": {"xla": "{devices=[2,4]<=[8] last_tile_dim_replicate}"},
//        "target": {"shardy": "sdy.mesh @m = <[\"tp\"=4], device_ids=[4,5,6,7]> #sdy.sharding<@m, [{}]>"}}
//     ]
//   }
//
// A layout is an object with one notation: "type" (redist's syntax), "jax" (a PartitionSpec)
// or "dtensor" (placements), each with "mesh" naming one of "meshes"; or "xla" (HloSharding
// text), "shardy" (mesh then sharding) or "jax" as a NamedSharding (with its mesh), which
// carry their own devices and take no "mesh";
// or "boxes", a box layout (redist/box.hpp: one [[lo, hi], ...] box or null per world rank).
// DTensor placements, Shardy shardings and XLA named shardings that no type says (nested
// uneven chunks, sub-axes in another order) are read as the box layouts they are
// (dtensor_layout, shardy_layout, xla_layout).
// dtype: f64, f32, bf16, f16, i64, i32, i8, u8. Optional "target_dtype": the target's, where
// the reshard casts on the way (between f64, f32, bf16 and f16: an f32 trainer's weights to a
// bf16 engine; runtime/cast.hpp). Every error names the array and the field.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "redist/core/dtensor.hpp"
#include "redist/core/element_type.hpp"
#include "redist/core/error.hpp"
#include "redist/core/jax.hpp"
#include "redist/core/placement.hpp"
#include "redist/core/shardy.hpp"
#include "redist/core/xla.hpp"
#include "redist/json_read.hpp"
#include "redist/lower/reshard.hpp"
#include "redist/program_json.hpp"

namespace redist {

inline constexpr std::string_view reshard_json_format = "redist-reshard/1";
inline constexpr std::string_view reshard_plan_json_format = "redist-reshard-plan/1";

/// A manifest: the problem, and the budget it asks for (0: none).
struct reshard_manifest {
  reshard_problem problem;
  std::uint64_t budget_bytes = 0;
};

namespace detail {

[[noreturn]] inline void manifest_fail(errc code, const std::string& where, const std::string& what) {
  throw redist_error(code, "reshard manifest: " + (where.empty() ? what : where + ": " + what));
}

inline const nlohmann::json& manifest_field(const nlohmann::json& obj, const char* key, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end()) manifest_fail(errc::syntax, where, std::string("missing field '") + key + "'");
  return *it;
}

inline std::string manifest_string(const nlohmann::json& v, const std::string& where) {
  if (!v.is_string()) manifest_fail(errc::syntax, where, "expected a string, found " + json_excerpt(v));
  return v.get<std::string>();
}

inline std::uint64_t manifest_uint(const nlohmann::json& v, const std::string& where) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    manifest_fail(errc::syntax, where, "expected an unsigned integer, found " + json_excerpt(v));
  return v.get<std::uint64_t>();
}

/// Run f, turning a redist_error into one that names `where` in the manifest.
template <class F>
auto manifest_blame(const std::string& where, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const redist_error& e) {
    manifest_fail(e.code(), where, e.what());
  }
}

/// One layout object (the header comment).
inline array_layout manifest_layout(const nlohmann::json& v, const std::string& where,
                                    const std::map<std::string, placed_mesh>& meshes,
                                    const std::vector<std::uint64_t>& shape, std::uint64_t world) {
  if (!v.is_object()) manifest_fail(errc::syntax, where, "expected an object with a notation, found " + json_excerpt(v));
  static constexpr const char* notations[] = {"type", "jax", "dtensor", "xla", "shardy", "boxes"};
  const char* which = nullptr;
  for (const char* n : notations)
    if (v.contains(n)) {
      if (which) manifest_fail(errc::syntax, where, std::string("gives both '") + which + "' and '" + n + "'");
      which = n;
    }
  for (const auto& [key, _] : v.items()) {
    bool known = key == "mesh";
    for (const char* n : notations) known = known || key == n;
    if (!known)
      manifest_fail(errc::syntax, where, "unknown field '" + key + "' (a layout has 'mesh' and one of type, jax, dtensor, "
                                         "xla, shardy, boxes)");
  }
  if (!which) manifest_fail(errc::syntax, where, "no notation: give one of type, jax, dtensor, xla, shardy, boxes");
  const std::string w = json_join(where, which);
  const std::string_view n = which;
  const bool jax_sharding = n == "jax" && v[which].is_string() && is_jax_sharding(v[which].get<std::string>());
  if (n == "xla" || n == "shardy" || n == "boxes" || jax_sharding) {
    if (v.contains("mesh"))
      manifest_fail(errc::syntax, where,
                    (jax_sharding ? std::string("a NamedSharding") : "'" + std::string(n) + "'") +
                        " carries its own devices: no 'mesh'");
    if (n == "boxes") return manifest_blame(w, [&] { return box_layout_from_json(v[which], shape, world); });
    const std::string text = manifest_string(v[which], w);
    if (jax_sharding) return manifest_blame(w, [&]() -> array_layout {
        placed_type t = from_jax_sharding(text, shape);
        return placed_layout{std::move(t.pm), t.type};
      });
    return manifest_blame(w, [&]() -> array_layout {
      if (n == "shardy" && !shardy_type_says(text, shape)) return shardy_layout(text, shape, world);
      if (n == "xla" && !xla_type_says(text, shape)) return xla_layout(text, shape, 1, world);
      placed_type t = n == "xla" ? from_xla(text, shape, world ? world : 1) : from_shardy_text(text, shape);
      return placed_layout{std::move(t.pm), t.type};
    });
  }
  const std::string text = manifest_string(v[which], w);
  const std::string mw = json_join(where, "mesh");
  const std::string mesh = manifest_string(manifest_field(v, "mesh", where), mw);
  const auto it = meshes.find(mesh);
  if (it == meshes.end()) manifest_fail(errc::syntax, mw, "no mesh named '" + mesh + "' in 'meshes'");
  const placed_mesh& pm = it->second;
  if (n == "dtensor" && !manifest_blame(w, [&] { return dtensor_type_says(pm.mesh, shape, text); }))
    return manifest_blame(w, [&] { return dtensor_layout(pm, shape, text, world); });
  const dist_type t = manifest_blame(w, [&] {
    if (n == "jax") return from_jax(pm.mesh, shape, text);
    if (n == "dtensor") return from_dtensor(pm.mesh, shape, text);
    dist_type d = parse_type(pm.mesh, text);
    bool same = static_cast<std::size_t>(d.rank) == shape.size();
    for (int k = 0; same && k < d.rank; ++k) same = d.dims[k].global == shape[static_cast<std::size_t>(k)];
    if (!same) {
      std::string s;
      for (std::uint64_t x : shape) s += (s.empty() ? "" : ", ") + std::to_string(x);
      throw redist_error(errc::global_mismatch, "the type's global shape is not the array's shape [" + s + "]");
    }
    return d;
  });
  return placed_layout{pm, t};
}

/// One line: "type on mesh", or "a box layout on W ranks".
inline std::string layout_text(const array_layout& l) {
  if (const auto* t = std::get_if<placed_layout>(&l))
    return std::string(type_text(t->pm.mesh, t->type).view()) + " on " + placed_mesh_text(t->pm);
  return "a box layout on " + std::to_string(std::get<box_layout>(l).world()) + " ranks";
}

/// A layout in the plan's JSON: its text, or a box layout's {"boxes": [...]}.
inline nlohmann::json layout_json(const array_layout& l) {
  const auto* b = std::get_if<box_layout>(&l);
  return b ? box_layout_to_json<nlohmann::json>(*b) : nlohmann::json(layout_text(l));
}

}  // namespace detail

/// Read a manifest (the header comment). Throws redist_error naming the field.
inline reshard_manifest read_reshard_manifest(std::string_view text) {
  const nlohmann::json j = detail::parse_json_text(text, 8, "reshard manifest");
  if (!j.is_object()) detail::manifest_fail(errc::syntax, "", "expected an object, found " + detail::json_excerpt(j));
  const std::string format = detail::manifest_string(detail::manifest_field(j, "format", ""), "format");
  if (format != reshard_json_format)
    detail::manifest_fail(errc::syntax, "format", "'" + format + "' is not " + std::string(reshard_json_format));
  for (const auto& [key, _] : j.items())
    if (key != "format" && key != "world" && key != "budget_bytes" && key != "meshes" && key != "arrays")
      detail::manifest_fail(errc::syntax, "", "unknown field '" + key + "' (format, world, budget_bytes, meshes, arrays)");
  reshard_manifest m;
  if (j.contains("world")) {
    m.problem.world = detail::manifest_uint(j["world"], "world");
    if (m.problem.world == 0 || m.problem.world > max_program_devices)
      detail::manifest_fail(errc::bad_size, "world", "must be 1 to " + std::to_string(max_program_devices) + " ranks");
  }
  if (j.contains("budget_bytes")) m.budget_bytes = detail::manifest_uint(j["budget_bytes"], "budget_bytes");
  std::map<std::string, placed_mesh> meshes;
  if (j.contains("meshes")) {
    const nlohmann::json& jm = j["meshes"];
    if (!jm.is_object())
      detail::manifest_fail(errc::syntax, "meshes", "expected an object of named meshes, found " + detail::json_excerpt(jm));
    for (const auto& [name, v] : jm.items()) {
      const std::string w = "meshes." + name;
      const std::string s = detail::manifest_string(v, w);
      placed_mesh pm = detail::manifest_blame(w, [&] { return parse_placed_mesh(s); });
      if (m.problem.world)
        if (error e = check_placement(pm, m.problem.world)) detail::manifest_fail(e.code, w, e.message.str());
      meshes.emplace(name, std::move(pm));
    }
  }
  const nlohmann::json& ja = detail::manifest_field(j, "arrays", "");
  if (!ja.is_array() || ja.empty())
    detail::manifest_fail(errc::syntax, "arrays", "expected a non-empty array of arrays, found " + detail::json_excerpt(ja));
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < ja.size(); ++i) {
    const nlohmann::json& v = ja[i];
    std::string where = "arrays[" + std::to_string(i) + "]";
    if (!v.is_object()) detail::manifest_fail(errc::syntax, where, "expected an object, found " + detail::json_excerpt(v));
    reshard_array a;
    a.name = detail::manifest_string(detail::manifest_field(v, "name", where), where + ".name");
    if (a.name.empty()) detail::manifest_fail(errc::syntax, where + ".name", "is empty");
    if (const auto [it, fresh] = seen.emplace(a.name, i); !fresh)
      detail::manifest_fail(errc::syntax, where + ".name",
                            "'" + a.name + "' is also the name of arrays[" + std::to_string(it->second) + "]");
    where += " ('" + a.name + "')";
    for (const auto& [key, _] : v.items())
      if (key != "name" && key != "shape" && key != "dtype" && key != "target_dtype" && key != "source" && key != "target")
        detail::manifest_fail(errc::syntax, where,
                              "unknown field '" + key + "' (name, shape, dtype, target_dtype, source, target)");
    const nlohmann::json& js = detail::manifest_field(v, "shape", where);
    if (!js.is_array() || js.size() > static_cast<std::size_t>(max_dims))
      detail::manifest_fail(errc::syntax, where + ".shape",
                            "expected a list of at most " + std::to_string(max_dims) + " sizes, found " +
                                detail::json_excerpt(js));
    std::vector<std::uint64_t> shape;
    for (std::size_t d = 0; d < js.size(); ++d) {
      shape.push_back(detail::manifest_uint(js[d], where + ".shape[" + std::to_string(d) + "]"));
      if (shape.back() == 0) detail::manifest_fail(errc::bad_size, where + ".shape[" + std::to_string(d) + "]", "is 0");
    }
    const std::string dt = detail::manifest_string(detail::manifest_field(v, "dtype", where), where + ".dtype");
    a.dtype = detail::manifest_blame(where + ".dtype", [&] { return parse_element_type(dt); });
    if (v.contains("target_dtype")) {
      const std::string tt = detail::manifest_string(v["target_dtype"], where + ".target_dtype");
      const element_type t = detail::manifest_blame(where + ".target_dtype", [&] { return parse_element_type(tt); });
      if (!element_type_casts(a.dtype, t))
        detail::manifest_fail(errc::rule, where + ".target_dtype",
                              "cannot cast " + dt + " to " + tt + " (casts are between f64, f32, bf16, f16)");
      if (t != a.dtype) a.target_dtype = t;
    }
    a.source = detail::manifest_layout(detail::manifest_field(v, "source", where), where + ".source", meshes, shape,
                                       m.problem.world);
    a.target = detail::manifest_layout(detail::manifest_field(v, "target", where), where + ".target", meshes, shape,
                                       m.problem.world);
    m.problem.arrays.push_back(std::move(a));
  }
  return m;
}

/// The joint plan as JSON (redist-reshard-plan/1): the arrays with their routes (an own
/// array with its program, redist-program/2), the pieces each rank keeps, the rounds with
/// their pieces ([array, from, to, box]), the fused collectives (arrays, steps, bytes per
/// rank, predicted seconds), and the per-rank measures.
inline std::string reshard_plan_to_json(const reshard_plan& p, int indent = 2) {
  using nlohmann::json;
  json j;
  j["format"] = reshard_plan_json_format;
  j["world"] = p.world;
  if (p.node_ranks > 0) j["node_ranks"] = p.node_ranks;  // the joint exchange's senders by node
  j["budget_bytes"] = p.budget_bytes;
  json arrays = json::array();
  for (std::size_t a = 0; a < p.arrays.size(); ++a) {
    const reshard_array& x = p.arrays[a];
    json ja;
    ja["name"] = x.name;
    ja["dtype"] = element_type_name(x.dtype);
    if (x.casts()) ja["target_dtype"] = element_type_name(x.target_type());
    if (x.program_type() != x.dtype) ja["program_dtype"] = element_type_name(x.program_type());
    ja["source"] = detail::layout_json(x.source);
    ja["target"] = detail::layout_json(x.target);
    ja["route"] = reshard_route_name(p.route[a]);
    const plan_candidate& c = p.own[a].candidates[p.own[a].chosen];
    ja["own_plan"] = c.name;
    ja["own_seconds"] = c.seconds;
    if (p.route[a] == reshard_route::own) ja["program"] = detail::program_to_json<json>(c.prog);
    if (p.chunked(a)) {
      const reshard_chunks& k = p.chunks[a];
      json cuts = json::array();
      for (std::size_t d = 0; d < max_dims; ++d)
        if (k.units[d] != 0) cuts.push_back({{"dim", d}, {"units", k.units[d]}, {"rows", k.rows[d]}});
      ja["chunks"] = {{"count", k.count},
                      {"cut", std::move(cuts)},
                      {"held_bytes", k.held_bytes},
                      {"program", detail::program_to_json<json>(k.sub.chosen_program())}};
    }
    arrays.push_back(std::move(ja));
  }
  j["arrays"] = std::move(arrays);
  auto pieces = [&](const std::vector<reshard_piece>& v) {
    json out = json::array();
    for (const reshard_piece& pc : v) out.push_back({pc.array, pc.from, pc.to, detail::box_to_json<json>(pc.b)});
    return out;
  };
  j["local"] = pieces(p.local);
  j["local_at"] = p.local_at;
  json rounds = json::array();
  for (std::size_t k = 0; k < p.rounds.size(); ++k)
    rounds.push_back({{"messages", p.messages(k)}, {"pieces", pieces(p.rounds[k].pieces)}});
  j["rounds"] = std::move(rounds);
  json fused = json::array();
  for (const reshard_fused& f : p.fused) {
    json steps = json::array();
    for (const step& s : p.own[f.arrays.front()].chosen_program().steps) steps.push_back(op_name(s.kind));
    fused.push_back({{"arrays", f.arrays}, {"steps", steps}, {"bytes", f.bytes}, {"predicted_seconds", f.seconds}});
  }
  j["fused"] = std::move(fused);
  j["pipelined"] = p.pipelined;
  j["halves"] = p.halves;
  j["received_bytes"] = p.received_bytes;
  j["lower_bound_bytes"] = p.lower_bound_bytes;
  j["transient_bytes"] = p.transient_bytes;
  j["predicted_seconds"] = p.seconds;
  j["separate_seconds"] = p.separate_seconds;
  j["reason"] = p.reason;
  return j.dump(indent);
}

}  // namespace redist
