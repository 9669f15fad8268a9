// redist/program_json.hpp -- the collective program as JSON (DESIGN.md section 4,
// format "redist-program/1"), written by `redist plan --json` and read back by tools.
// Requires nlohmann-json (link nlohmann_json::nlohmann_json); the core library does not.
//
//   {"format": "redist-program/1", "mesh": [["x", 4], ["y", 8]], "global_shape": [256, 1024],
//    "element_bytes": 4, "source": "[64{x}256, 1024]", "target": "[256, 128{y}1024]",
//    "steps": [{"op": "allgather", "concat_dim": 0, "groups": [[0, 8, 16, 24], ...]},
//              {"op": "alltoall", "concat_dim": 0, "split_dim": 1, "groups": [...]},
//              {"op": "dynslice", "split_dim": 1, "parts": 8, "index": [/* per rank */]},
//              {"op": "allpermute", "dest": [/* per rank */]},
//              {"op": "allreduce", "groups": [...]},                  (partial sums, an
//              {"op": "reducescatter", "split_dim": 0, "groups": [...]}  extension; both
//                                                   with "reduce": "max" | "min" | "prod" | "avg"
//                                                   where not "sum", the default),
//              {"op": "exchange", "boxes": [[[0, 64], [0, 128]], ...]}  (an extension: per rank
//                                                   in rank order, one [lo, hi) per dimension;
//                                                   "node_ranks": N, optional, world ranks per
//                                                   node: which replica sends, redist/exchange.hpp),
//              {"op": "allgather", "concat_dims": [1, 0], "concat_parts": [2, 4], "groups": [...]}
//                  (fused, an extension, program.hpp; a fused alltoall adds "split_dims" and
//                  "split_parts")],
//    "cost_bytes": 123456, "peak_local_elements": 65536, "memory_bound_elements": 65536}
//
// Format "redist-program/2" (DESIGN.md section 4) adds "world", "devices", "target_mesh",
// "target_devices", and a box-layout source or target (redist/box.hpp) as
// {"boxes": [box or null per world rank]}: such a program is read by
// boxed_program_from_json (valid layouts naming the field and the ranks, exchange steps only,
// the last leaving every rank its target box).
//
// Every step also carries "type" (the type after it, paper syntax), "type_exact" (false:
// the type holds only up to a permutation of devices), "local_elements" and "cost_bytes"
// (per device, after the step); readers may ignore them.
//
// program_from_json checks what a consumer relies on and throws redist_error with one line
// naming the field (`program JSON: steps[1].groups[2]: ...`): fields present with the right
// JSON types, the mesh and both types well-formed with equal global shapes, dimensions in
// range, groups of equal size that partition the ranks 0..D-1, dynslice indices below
// `parts`, allpermute destinations a bijection, every step well-typed under the weak rules
// of core/rules.hpp, and the steps ending on the target's tiles. An exchange's boxes must be
// D lists of R unsigned [lo, hi] pairs, non-empty ranges inside the array, every box of one
// shape whose extents divide the global shape (an even tiling); the program must carry no
// partial sums, and every box's elements must be held before the step by some rank under
// the documented requirements (redist/exchange.hpp plan_exchange: ranges equal or disjoint
// per dimension). It recomputes local sizes, costs (an exchange's: plan_exchange's
// max_received, the most elements one rank receives) and the peak (and checks any given in
// the input); it does not re-verify that every rank ends with exactly its target tile
// (that is the executor's job).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/placement.hpp"
#include "redist/core/rules.hpp"
#include "redist/exchange.hpp"
#include "redist/json_read.hpp"
#include "redist/program.hpp"

namespace redist {

/// The format tags of section 4: format 2 for programs on device sets or between meshes
/// (program::placed), format 1 for every other program.
inline constexpr std::string_view program_json_format = "redist-program/1";
inline constexpr std::string_view program_json_format2 = "redist-program/2";

/// The deepest nesting of arrays and objects program_from_json_text reads (a program
/// needs 5: the document, "steps", a step, "groups", a group; 6 with an exchange: "boxes",
/// a rank's box, a range). Deeper text is refused
/// before it is parsed.
inline constexpr int max_json_depth = 32;

namespace detail {

/// text -> std::string, refusing a result the fixed-capacity buffer may have cut short.
inline std::string checked_text(const text& t, std::string_view what) {
  if (t.len >= text::capacity)
    throw redist_error(errc::capacity, std::string(what) + " is longer than " + std::to_string(text::capacity) +
                                           " characters and cannot be written");
  return t.str();
}

template <class Json>
Json mesh_to_json(const device_mesh& m) {
  Json axes = Json::array();
  for (int a = 0; a < m.naxes; ++a) axes.push_back(Json::array({std::string(m.names[a].view()), m.sizes[a]}));
  return axes;
}

/// A box as JSON: one [lo, hi] range per dimension.
template <class Json>
Json box_to_json(const box& b) {
  Json j = Json::array();
  for (int d = 0; d < b.rank; ++d) j.push_back(Json::array({b.lo[static_cast<std::size_t>(d)], b.hi[static_cast<std::size_t>(d)]}));
  return j;
}

/// A box layout as JSON (format 2): {"boxes": [box or null per world rank]}.
template <class Json>
Json box_layout_to_json(const box_layout& l) {
  Json boxes = Json::array();
  for (const std::optional<box>& b : l.boxes) boxes.push_back(b ? box_to_json<Json>(*b) : Json(nullptr));
  Json o;
  o["boxes"] = std::move(boxes);
  return o;
}

/// A placement's rank list (0..D-1 when it is empty).
inline std::vector<rank_t> rank_list_of(const std::vector<rank_t>& devices, std::uint64_t D) {
  if (!devices.empty()) return devices;
  std::vector<rank_t> v(D);
  for (std::uint64_t r = 0; r < D; ++r) v[r] = static_cast<rank_t>(r);
  return v;
}

template <class Json>
Json program_to_json(const program& p) {
  const device_mesh& m = p.m;
  const bool placed = p.placed();
  Json j;
  j["format"] = placed ? program_json_format2 : program_json_format;
  j["mesh"] = mesh_to_json<Json>(m);
  if (placed) {
    j["world"] = p.world_size();
    j["devices"] = rank_list_of(p.source_devices, m.devices);
    if (p.two_meshes) {
      j["target_mesh"] = mesh_to_json<Json>(p.target_m);
      j["target_devices"] = rank_list_of(p.target_devices, p.target_m.devices);
    }
  }
  Json shape = Json::array();
  for (int d = 0; d < p.source.rank; ++d) shape.push_back(p.source.dims[d].global);
  j["global_shape"] = shape;
  j["element_bytes"] = p.element_bytes;
  if (p.boxed_source()) j["source"] = box_layout_to_json<Json>(p.source_layout);
  else j["source"] = checked_text(type_text(m, p.source), "the source type");
  if (p.boxed_target()) j["target"] = box_layout_to_json<Json>(p.target_layout);
  else j["target"] = checked_text(type_text(p.target_mesh(), p.target), "the target type");
  auto bytes = [&](std::uint64_t elements) {
    std::uint64_t b = 0;
    if (!mul_ok(elements, p.element_bytes, b))
      throw redist_error(errc::overflow, "the cost in bytes does not fit in 64 bits");
    return b;
  };
  const int R = p.source.rank;
  Json steps = Json::array();
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const step& s = p.steps[i];
    Json js;
    js["op"] = op_name(s.kind);
    auto grid = [&](const char* dims, const char* parts, const step_grid& g) {
      Json d = Json::array(), n = Json::array();
      for (int q = 0; q < g.n; ++q) {
        d.push_back(g.dim[q]);
        n.push_back(g.parts[q]);
      }
      js[dims] = std::move(d);
      js[parts] = std::move(n);
    };
    switch (s.kind) {
      case op::allgather:
        if (s.fused()) grid("concat_dims", "concat_parts", s.concat_grid);
        else js["concat_dim"] = s.concat_dim;
        break;
      case op::alltoall:
        if (s.fused()) {
          grid("concat_dims", "concat_parts", s.concat_grid);
          grid("split_dims", "split_parts", s.split_grid);
          break;
        }
        js["concat_dim"] = s.concat_dim;
        js["split_dim"] = s.split_dim;
        break;
      case op::dynslice:
        js["split_dim"] = s.split_dim;
        js["parts"] = s.parts;
        js["index"] = s.index;
        break;
      case op::allpermute: js["dest"] = s.dest; break;
      case op::allreduce: break;
      case op::partial:
        if (s.concat_dim >= 0) js["concat_dim"] = s.concat_dim;  // padded
        break;
      case op::reducescatter: js["split_dim"] = s.split_dim; break;
      case op::exchange: {
        const std::uint64_t D = p.world_size();
        if (s.boxes.size() != D * static_cast<std::uint64_t>(R) * 2)
          throw redist_error(errc::rule, "step " + std::to_string(i) + " (exchange) lists " +
                                             std::to_string(s.boxes.size()) + " range ends, expected 2 per dimension (" +
                                             std::to_string(R) + ") for each of the " + std::to_string(D) + " ranks");
        Json boxes = Json::array();
        for (std::uint64_t r = 0; r < D; ++r) {
          if (!s.holds_after(r)) {  // format 2: the rank holds nothing after the step
            boxes.push_back(nullptr);
            continue;
          }
          Json b = Json::array();
          for (int d = 0; d < R; ++d) b.push_back(Json::array({s.box_lo(r, R, d), s.box_hi(r, R, d)}));
          boxes.push_back(std::move(b));
        }
        js["boxes"] = std::move(boxes);
        if (s.node_ranks > 0) js["node_ranks"] = s.node_ranks;  // written only when set
        break;
      }
    }
    if (s.kind != op::dynslice && s.kind != op::allpermute && s.kind != op::exchange) {
      Json groups = Json::array();
      for (std::size_t g = 0; g < s.group_count(); ++g) {
        auto grp = s.group(g);
        groups.push_back(std::vector<rank_t>(grp.begin(), grp.end()));
      }
      js["groups"] = groups;
    }
    if ((s.kind == op::allreduce || s.kind == op::reducescatter || s.kind == op::partial) && s.reduce != reduction::sum)
      js["reduce"] = reduction_name(s.reduce);  // written only when not the default
    if (s.type_after.rank == p.source.rank) {
      js["type"] = checked_text(type_text(p.mesh_after(i), s.type_after), "an intermediate type");
      js["type_exact"] = s.type_exact;
      if (s.on_target && p.two_meshes) js["type_mesh"] = "target";  // format 2: the type is on the target mesh
    }
    js["local_elements"] = s.local_after;
    js["cost_bytes"] = bytes(s.cost);
    steps.push_back(js);
  }
  j["steps"] = steps;
  j["cost_bytes"] = bytes(p.cost_elements);
  j["peak_local_elements"] = p.peak_local_elements;
  j["memory_bound_elements"] = p.memory_bound_elements;
  return j;
}

/// Compact pretty printing: objects one member a line, arrays of numbers (and arrays of
/// such arrays, the groups) on one line.
template <class Json>
bool is_flat_array(const Json& j, int depth) {
  if (!j.is_array()) return false;
  for (const auto& e : j)
    if (e.is_structured() && !(depth > 0 && is_flat_array(e, depth - 1))) return false;
  return true;
}

template <class Json>
void dump_compact(const Json& j, int indent, int level, std::string& out) {
  const std::string pad(static_cast<std::size_t>(indent * (level + 1)), ' ');
  const std::string close(static_cast<std::size_t>(indent * level), ' ');
  if (j.is_object() && !j.empty()) {
    out += "{\n";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ",\n";
      first = false;
      out += pad + Json(it.key()).dump() + ": ";
      dump_compact(it.value(), indent, level + 1, out);
    }
    out += "\n" + close + "}";
  } else if (j.is_array() && !j.empty() && !is_flat_array(j, 1)) {
    out += "[\n";
    bool first = true;
    for (const auto& e : j) {
      if (!first) out += ",\n";
      first = false;
      out += pad;
      dump_compact(e, indent, level + 1, out);
    }
    out += "\n" + close + "]";
  } else if (j.is_array()) {
    out += "[";
    bool first = true;
    for (const auto& e : j) {
      if (!first) out += ", ";
      first = false;
      dump_compact(e, indent, level, out);
    }
    out += "]";
  } else {
    out += j.dump();
  }
}

// ---- reading ----

[[noreturn]] inline void json_fail(errc code, const std::string& where, const std::string& what) {
  throw redist_error(code, "program JSON: " + (where.empty() ? what : where + ": " + what));
}

inline const nlohmann::json& json_field(const nlohmann::json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) json_fail(errc::syntax, where, std::string("missing field '") + key + "'");
  return *it;
}


inline std::uint64_t json_uint(const nlohmann::json& v, const std::string& where) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    json_fail(errc::syntax, where, "expected an unsigned integer, found " + json_excerpt(v));
  return v.get<std::uint64_t>();
}

inline std::string json_string(const nlohmann::json& v, const std::string& where) {
  if (!v.is_string()) json_fail(errc::syntax, where, "expected a string, found " + json_excerpt(v));
  return v.get<std::string>();
}

inline const nlohmann::json& json_array(const nlohmann::json& v, const std::string& where) {
  if (!v.is_array()) json_fail(errc::syntax, where, "expected an array, found " + json_excerpt(v));
  return v;
}

/// An exchange step's optional "node_ranks" (step::node_ranks): 0 when absent.
inline std::uint64_t json_node_ranks(const nlohmann::json& js, const std::string& where) {
  const auto it = js.find("node_ranks");
  if (it == js.end()) return 0;
  const std::string w = json_join(where, "node_ranks");
  const std::uint64_t n = json_uint(*it, w);
  if (n == 0) json_fail(errc::bad_size, w, "expected an integer >= 1 (world ranks per node), found 0");
  return n;
}

/// A required unsigned field of an object.
inline std::uint64_t json_uint_field(const nlohmann::json& obj, const char* key, const std::string& where) {
  return json_uint(json_field(obj, key, where), json_join(where, key));
}

inline int json_dim(const nlohmann::json& obj, const char* key, const std::string& where, int rank) {
  std::uint64_t d = json_uint_field(obj, key, where);
  if (d >= static_cast<std::uint64_t>(rank))
    json_fail(errc::bad_size, json_join(where, key),
              "dimension " + std::to_string(d) + " out of range (the array has " + std::to_string(rank) + ")");
  return static_cast<int>(d);
}

/// A per-rank array of D values, each below `limit`.
/// A fused step's grid: `dims` (distinct dimensions) and `parts` (one count >= 1 each).
inline step_grid json_grid(const nlohmann::json& obj, const char* dims, const char* parts, const std::string& where,
                           int rank) {
  const std::string wd = where + "." + dims, wp = where + "." + parts;
  const auto& jd = json_array(json_field(obj, dims, where), wd);
  const auto& jp = json_array(json_field(obj, parts, where), wp);
  if (jd.empty() || jd.size() > static_cast<std::size_t>(rank))
    json_fail(errc::bad_size, wd, "lists " + std::to_string(jd.size()) + " dimensions, expected 1 to " + std::to_string(rank));
  if (jp.size() != jd.size())
    json_fail(errc::bad_size, wp, "lists " + std::to_string(jp.size()) + " counts for " + std::to_string(jd.size()) +
                                      " dimensions");
  step_grid g;
  for (std::size_t q = 0; q < jd.size(); ++q) {
    const std::string wq = wd + "[" + std::to_string(q) + "]";
    const std::uint64_t d = json_uint(jd[q], wq);
    if (d >= static_cast<std::uint64_t>(rank))
      json_fail(errc::bad_size, wq, "dimension " + std::to_string(d) + " out of range (the array has " +
                                        std::to_string(rank) + ")");
    if (g.has(static_cast<int>(d))) json_fail(errc::rule, wq, "dimension " + std::to_string(d) + " is listed twice");
    const std::uint64_t n = json_uint(jp[q], wp + "[" + std::to_string(q) + "]");
    if (n == 0) json_fail(errc::bad_size, wp + "[" + std::to_string(q) + "]", "must be at least 1");
    g.push(static_cast<int>(d), n);
  }
  return g;
}

inline std::vector<rank_t> json_rank_array(const nlohmann::json& v, const std::string& where, std::uint64_t D,
                                           std::uint64_t limit, const char* what) {
  json_array(v, where);
  if (v.size() != D)
    json_fail(errc::bad_size, where,
              "has " + std::to_string(v.size()) + " entries, expected one per rank (" + std::to_string(D) + ")");
  std::vector<rank_t> out;
  out.reserve(v.size());
  for (std::size_t r = 0; r < v.size(); ++r) {
    std::uint64_t x = json_uint(v[r], where + "[" + std::to_string(r) + "]");
    if (x >= limit)
      json_fail(errc::bad_size, where + "[" + std::to_string(r) + "]",
                what + std::to_string(x) + " out of range (must be below " + std::to_string(limit) + ")");
    out.push_back(static_cast<rank_t>(x));
  }
  return out;
}

inline dist_type json_type(const device_mesh& m, const nlohmann::json& v, const std::string& where) {
  std::string s = json_string(v, where);
  try {
    return parse_type(m, s);
  } catch (const redist_error& e) {
    json_fail(e.code(), where, e.what());
  }
}

inline std::string shape_string(const shape& s) {
  std::string out = "[";
  for (int d = 0; d < s.rank; ++d) out += (d ? ", " : "") + std::to_string(s.parts[d]);
  out += "]";
  if (s.sums > 1) out += " with " + std::to_string(s.sums) + " pending partial sums";
  return out;
}

}  // namespace detail

/// The program as JSON (keys sorted, nlohmann::json's object order).
inline nlohmann::json to_json(const program& p) { return detail::program_to_json<nlohmann::json>(p); }

/// The program as JSON with the keys in the order of DESIGN.md section 4.
inline nlohmann::ordered_json to_ordered_json(const program& p) {
  return detail::program_to_json<nlohmann::ordered_json>(p);
}

/// JSON text for people and files: keys in contract order, `indent` spaces per level,
/// rank lists and groups on one line each.
inline std::string program_json_text(const program& p, int indent = 2) {
  std::string out;
  detail::dump_compact(to_ordered_json(p), indent, 0, out);
  return out;
}

namespace detail {

/// The program's totals: "cost_bytes" and "peak_local_elements" checked against the steps,
/// "memory_bound_elements" read (default `bound`).
inline void read_totals(const nlohmann::json& j, program& p, std::uint64_t bound) {
  if (auto it = j.find("cost_bytes"); it != j.end()) {
    std::uint64_t b = 0;
    if (!mul_ok(p.cost_elements, p.element_bytes, b) || json_uint(*it, "cost_bytes") != b)
      json_fail(errc::rule, "cost_bytes",
                json_excerpt(*it) + " but the steps cost " + std::to_string(p.cost_elements) + " elements of " +
                    std::to_string(p.element_bytes) + " bytes");
  }
  if (auto it = j.find("peak_local_elements"); it != j.end() && json_uint(*it, "peak_local_elements") != p.peak_local_elements)
    json_fail(errc::rule, "peak_local_elements", json_excerpt(*it) + " but the steps peak at " + std::to_string(p.peak_local_elements));
  if (auto it = j.find("memory_bound_elements"); it != j.end())
    p.memory_bound_elements = json_uint(*it, "memory_bound_elements");
  else
    p.memory_bound_elements = bound;
}

/// One box of R [lo, hi] ranges (`where`: its field), or nothing for null when `null`.
inline std::optional<box> json_box(const nlohmann::json& v, const std::string& where, int R, bool null) {
  if (v.is_null() && null) return std::nullopt;
  const auto& jr = json_array(v, where);
  if (jr.size() != static_cast<std::size_t>(R))
    json_fail(errc::bad_size, where,
              "has " + std::to_string(jr.size()) + " ranges, expected one per dimension (" + std::to_string(R) + ")");
  box b;
  b.rank = R;
  for (int d = 0; d < R; ++d) {
    const std::string wd = where + "[" + std::to_string(d) + "]";
    const auto& jd = json_array(jr[static_cast<std::size_t>(d)], wd);
    if (jd.size() != 2) json_fail(errc::syntax, wd, "expected [lo, hi], found " + json_excerpt(jd));
    b.lo[static_cast<std::size_t>(d)] = json_uint(jd[0], wd + "[0]");
    b.hi[static_cast<std::size_t>(d)] = json_uint(jd[1], wd + "[1]");
  }
  return b;
}

/// A per-world-rank list of boxes or null (`where`: its field).
inline std::vector<std::optional<box>> json_boxes(const nlohmann::json& v, const std::string& where, int R,
                                                  std::uint64_t W) {
  const auto& jb = json_array(v, where);
  if (jb.size() != W)
    json_fail(errc::bad_size, where,
              "has " + std::to_string(jb.size()) + " entries, expected one box or null per world rank (" +
                  std::to_string(W) + ")");
  std::vector<std::optional<box>> out;
  for (std::size_t r = 0; r < jb.size(); ++r) out.push_back(json_box(jb[r], where + "[" + std::to_string(r) + "]", R, true));
  return out;
}

/// A box layout of an array of `shape` from its JSON list, one box or null per world rank (W
/// of them; 0: as many as listed), checked (box_layout_problem). Throws redist_error naming
/// the entry or the problem, without the "program JSON: " of a program's errors (the command
/// line's --boxes, the reshard manifest).
inline box_layout box_layout_from_json(const nlohmann::json& v, std::vector<std::uint64_t> shape, std::uint64_t W = 0) {
  box_layout l;
  l.shape = std::move(shape);
  try {
    l.boxes = json_boxes(v, "", l.rank(), W ? W : v.is_array() ? v.size() : 0);
  } catch (const redist_error& e) {
    std::string m = e.what();
    if (const std::string_view head = "program JSON: "; m.starts_with(head)) m.erase(0, head.size());
    throw redist_error(e.code(), m);
  }
  check_box_layout(l);
  return l;
}

/// A format-2 program whose source or target is a box layout (program.hpp): the mesh, world
/// and devices read into p; the ends, exchange steps and totals here. Every box lies inside
/// the array, the layouts cover it exactly once (redist/box.hpp), the steps are exchanges and
/// leave every rank with its target box.
inline program boxed_program_from_json(const nlohmann::json& j, program p) {
  const std::uint64_t W = p.world_size();
  p.element_bytes = json_uint_field(j, "element_bytes", "");
  if (p.element_bytes == 0) json_fail(errc::bad_size, "element_bytes", "must be at least 1");
  const auto& jg = json_array(json_field(j, "global_shape", ""), "global_shape");
  if (jg.empty() || jg.size() > static_cast<std::size_t>(max_dims))
    json_fail(errc::bad_size, "global_shape", "an array has 1 to " + std::to_string(max_dims) + " dimensions");
  std::vector<std::uint64_t> shape;
  for (std::size_t d = 0; d < jg.size(); ++d) shape.push_back(json_uint(jg[d], "global_shape[" + std::to_string(d) + "]"));
  const int R = static_cast<int>(shape.size());
  const device_mesh& tm = p.target_mesh();
  for (const auto& [key, mesh, type, layout] :
       {std::tuple{"source", static_cast<const device_mesh*>(&p.m), &p.source, &p.source_layout}, std::tuple{"target", &tm, &p.target, &p.target_layout}}) {
    const auto& js = json_field(j, key, "");
    if (js.is_object()) {
      layout->shape = shape;
      layout->boxes = json_boxes(json_field(js, "boxes", key), std::string(key) + ".boxes", R, W);
      if (std::string e = box_layout_problem(*layout, W); !e.empty()) json_fail(errc::rule, std::string(key) + ".boxes", e);
      *type = dist_type{};
      type->rank = R;
      for (int d = 0; d < R; ++d) type->dims[d].global = shape[static_cast<std::size_t>(d)];
      continue;
    }
    *type = json_type(*mesh, js, key);
    bool same = type->rank == R;
    for (int d = 0; same && d < R; ++d) same = type->dims[d].global == shape[static_cast<std::size_t>(d)];
    if (!same) json_fail(errc::global_mismatch, key, "its global shape is not global_shape " + json_excerpt(jg));
    if (type->nsum > 0)
      json_fail(errc::rule, key, "pending sums beside a box layout: an exchange does not add partial sums (reduce them first)");
  }
  const std::vector<std::uint8_t> start = source_holders(p);
  auto padded = [&](const std::vector<std::optional<box>>& bs) {
    box_layout l{shape, bs};
    return l.padded_size();
  };
  p.peak_local_elements = std::max(p.boxed_source() ? p.source_layout.padded_size() : local_size(p.m, p.source),
                                   p.boxed_target() ? p.target_layout.padded_size() : local_size(tm, p.target));
  const std::uint64_t ends = p.peak_local_elements;
  const auto& jsteps = json_array(json_field(j, "steps", ""), "steps");
  for (std::size_t i = 0; i < jsteps.size(); ++i) {
    const std::string where = "steps[" + std::to_string(i) + "]";
    const auto& js = jsteps[i];
    if (!js.is_object()) json_fail(errc::syntax, where, "expected an object, found " + json_excerpt(js));
    const std::string name = json_string(json_field(js, "op", where), where + ".op");
    if (name != "exchange")
      json_fail(errc::rule, where + ".op", "'" + name + "': a program with a box-layout source or target runs exchanges only");
    step s;
    s.kind = op::exchange;
    const std::vector<std::optional<box>> bs = json_boxes(json_field(js, "boxes", where), where + ".boxes", R, W);
    s.node_ranks = json_node_ranks(js, where);
    s.holds.assign(W, 0);
    for (std::uint64_t r = 0; r < W; ++r) {
      box b;
      b.rank = R;
      if (bs[r]) {
        b = *bs[r];
        s.holds[r] = 1;
        for (int d = 0; d < R; ++d)
          if (b.lo[static_cast<std::size_t>(d)] > b.hi[static_cast<std::size_t>(d)] ||
              b.hi[static_cast<std::size_t>(d)] > shape[static_cast<std::size_t>(d)])
            json_fail(errc::bad_size, where + ".boxes[" + std::to_string(r) + "]",
                      "rank " + std::to_string(r) + "'s box " + box_text(b) + " is not inside the array " +
                          box_text(whole_box(shape)));
      }
      const std::vector<box> one{b};
      const std::vector<std::uint64_t> flat = flatten_boxes(one);
      s.boxes.insert(s.boxes.end(), flat.begin(), flat.end());
    }
    s.local_after = padded(bs);
    if (auto it = js.find("type"); it != js.end()) {
      auto tmn = js.find("type_mesh");
      const bool on_target =
          tmn != js.end() && json_string(*tmn, where + ".type_mesh") == "target" && p.two_meshes;
      s.type_after = json_type(on_target ? tm : p.m, *it, where + ".type");
      s.on_target = on_target;
      if (auto ex = js.find("type_exact"); ex != js.end()) {
        if (!ex->is_boolean()) json_fail(errc::syntax, where + ".type_exact", "expected true or false, found " + json_excerpt(*ex));
        s.type_exact = ex->get<bool>();
      }
    }
    if (auto it = js.find("local_elements"); it != js.end() && json_uint(*it, where + ".local_elements") != s.local_after)
      json_fail(errc::rule, where + ".local_elements",
                json_excerpt(*it) + " but the step leaves " + std::to_string(s.local_after));
    p.peak_local_elements = std::max(p.peak_local_elements, s.local_after);
    p.steps.push_back(std::move(s));
    const exchange_plan x = plan_exchange(p, i, plan_detail::sizes);
    if (!x.error.empty()) json_fail(errc::rule, where, x.error);
    p.steps.back().cost = x.max_received;
    p.cost_elements += x.max_received;
    std::uint64_t b = 0;
    if (auto it = js.find("cost_bytes");
        it != js.end() && (!mul_ok(x.max_received, p.element_bytes, b) || json_uint(*it, where + ".cost_bytes") != b))
      json_fail(errc::rule, where + ".cost_bytes",
                json_excerpt(*it) + " but the step costs " + std::to_string(x.max_received) + " elements of " +
                    std::to_string(p.element_bytes) + " bytes");
  }
  if (p.steps.empty() && !(p.source_layout == p.target_layout))
    json_fail(errc::rule, "steps", "none, but a program with a box-layout source or target moves its boxes by an exchange");
  const box_states t = trace_states(p);
  const std::vector<box> want = target_boxes(p);
  const std::vector<std::uint8_t> holders = target_holders(p);
  const std::vector<std::uint8_t>& last = p.steps.empty() ? start : p.steps.back().holds;
  for (std::uint64_t r = 0; r < W; ++r)
    if (last[r] != holders[r] || (holders[r] && !(t.states.back()[r] == want[r])))
      json_fail(errc::rule, "steps",
                "leave rank " + std::to_string(r) + " with " +
                    (last[r] ? box_text(t.states.back()[r]) : std::string("nothing")) + ", its target is " +
                    (holders[r] ? box_text(want[r]) : std::string("nothing")));
  read_totals(j, p, ends);
  return p;
}

}  // namespace detail

/// Read a program back (see the header comment for what is checked). Step shapes, local
/// sizes and costs are recomputed; intermediate types are taken from "type" when given.
inline program program_from_json(const nlohmann::json& j) {
  using namespace detail;
  if (!j.is_object()) json_fail(errc::syntax, "", "expected a JSON object, found " + json_excerpt(j));
  program p;
  std::string format = json_string(json_field(j, "format", ""), "format");
  const bool v2 = format == program_json_format2;
  if (format != program_json_format && !v2)
    json_fail(errc::syntax, "format",
              "unsupported format '" + (format.size() > 40 ? format.substr(0, 37) + "..." : format) + "' (expected '" +
                  std::string(program_json_format) + "' or '" + std::string(program_json_format2) + "')");

  // Mesh: [["x", 4], ["y", 8]].
  auto read_mesh = [&](const char* key, device_mesh& out) {
    const auto& jm = json_array(json_field(j, key, ""), key);
    for (std::size_t a = 0; a < jm.size(); ++a) {
      const std::string where = std::string(key) + "[" + std::to_string(a) + "]";
      const auto& ax = json_array(jm[a], where);
      if (ax.size() != 2) json_fail(errc::syntax, where, "expected [name, size], found " + json_excerpt(ax));
      std::string name = json_string(ax[0], where + "[0]");
      if (name.empty() || name.size() > static_cast<std::size_t>(max_name))
        json_fail(errc::syntax, where + "[0]", "an axis name has 1 to " + std::to_string(max_name) + " characters");
      if (error e = mesh_add_axis(out, name, json_uint(ax[1], where + "[1]")); !e.ok())
        json_fail(e.code, where, std::string(e.message.view()));
    }
    if (out.devices > max_program_devices)
      json_fail(errc::capacity, key,
                std::to_string(out.devices) + " devices; programs are for at most " + std::to_string(max_program_devices));
  };
  read_mesh("mesh", p.m);
  const device_mesh& m = p.m;
  const std::uint64_t D = m.devices;
  // Format 2 (DESIGN.md section 4): the world, the meshes' ranks, the target mesh.
  std::uint64_t W = D;
  if (v2) {
    W = json_uint_field(j, "world", "");
    if (W == 0 || W > max_program_devices)
      json_fail(errc::bad_size, "world", std::to_string(W) + " ranks; programs are for 1 to " +
                                             std::to_string(max_program_devices));
    auto read_devices = [&](const char* key, const device_mesh& mesh, std::vector<rank_t>& out) {
      if (auto it = j.find(key); it != j.end()) {
        const auto& jd = json_array(*it, key);
        placed_mesh pm{mesh, {}};
        std::vector<std::string> where;
        for (std::size_t k = 0; k < jd.size(); ++k) {
          where.push_back(std::string(key) + "[" + std::to_string(k) + "]");
          const std::uint64_t r = json_uint(jd[k], where.back());
          pm.devices.push_back(static_cast<std::uint32_t>(std::min<std::uint64_t>(r, UINT32_MAX)));
        }
        if (error e = check_placement(pm, W)) json_fail(e.code, key, std::string(e.message.view()));
        if (!pm.identity()) out.assign(pm.devices.begin(), pm.devices.end());  // 0..D-1: kept as no list
      } else if (mesh.devices > W) {
        json_fail(errc::bad_size, key, "missing, and the mesh's " + std::to_string(mesh.devices) +
                                           " devices do not fit in the world of " + std::to_string(W) + " ranks");
      }
    };
    read_devices("devices", m, p.source_devices);
    if (j.contains("target_mesh") || j.contains("target_devices")) {
      p.two_meshes = true;
      if (j.contains("target_mesh")) read_mesh("target_mesh", p.target_m);
      else p.target_m = m;
      if (!j.contains("target_devices") && p.target_m.devices != D)
        json_fail(errc::bad_size, "target_devices", "missing, and the target mesh has another size than the source's");
      if (j.contains("target_devices")) read_devices("target_devices", p.target_m, p.target_devices);
      else p.target_devices = p.source_devices;
    }
    p.world = W;
    for (const char* key : {"source", "target"})
      if (j.contains(key) && j[key].is_object()) return detail::boxed_program_from_json(j, std::move(p));
  }
  const device_mesh& tm = p.target_mesh();

  p.element_bytes = json_uint_field(j, "element_bytes", "");
  if (p.element_bytes == 0) json_fail(errc::bad_size, "element_bytes", "must be at least 1");
  p.source = json_type(m, json_field(j, "source", ""), "source");
  p.target = json_type(tm, json_field(j, "target", ""), "target");
  if (error e = check_same_global(p.source, p.target); !e.ok()) json_fail(e.code, "target", std::string(e.message.view()));
  if (p.changes_pending_kind())
    json_fail(errc::rule, "target",
              "its partial values combine by " + std::string(reduction_name(p.target.reduce)) + ", the source's by " +
                  std::string(reduction_name(p.source.reduce)) + " (a redistribution keeps the reduction kind)");
  const auto& jg = json_array(json_field(j, "global_shape", ""), "global_shape");
  bool same = jg.size() == static_cast<std::size_t>(p.source.rank);
  for (std::size_t d = 0; same && d < jg.size(); ++d)
    same = json_uint(jg[d], "global_shape[" + std::to_string(d) + "]") == p.source.dims[d].global;
  if (!same) json_fail(errc::global_mismatch, "global_shape", json_excerpt(jg) + " is not the global shape of the source type");

  const int R = p.source.rank;
  weak_context ctx = weak_context_of(m, p.source);  // uneven forms where either type is
  ctx.uneven = p.uneven();
  shape cur = shape_of(m, p.source);
  std::uint64_t local = local_size(m, p.source);
  p.peak_local_elements = std::max(local, local_size(tm, p.target));
  // The ranks that hold tiles (format 2; all D in format 1), and how many.
  std::vector<std::uint8_t> holds = placed_holders(D, p.source_devices, W);
  std::uint64_t H = D;
  const std::string world_text = v2 ? "the world has " + std::to_string(W) + " ranks" : "the mesh has " + std::to_string(D) + " devices";
  // Exchanges: their costs need the boxes of every step before them, so they are planned
  // once all steps are read (below); "cost_bytes" of each is checked then.
  std::vector<std::pair<std::size_t, const nlohmann::json*>> exchanges;
  // Uneven types (DESIGN.md section 2): every op but the reduce-scatter, typed by the rules'
  // uneven forms.
  const int uneven_at = p.uneven_at();
  const bool uneven = uneven_at >= 0;
  const char* exchange_sums =
      "an exchange does not add partial sums: every pending sum must be reduced before it (a partial step after "
      "the last exchange creates the target's)";

  const auto& jsteps = json_array(json_field(j, "steps", ""), "steps");
  for (std::size_t i = 0; i < jsteps.size(); ++i) {
    const std::string where = "steps[" + std::to_string(i) + "]";
    const auto& js = jsteps[i];
    if (!js.is_object()) json_fail(errc::syntax, where, "expected an object, found " + json_excerpt(js));
    step s;
    const std::string name = json_string(json_field(js, "op", where), where + ".op");
    if (!op_from_name(name, s.kind)) json_fail(errc::syntax, where + ".op", "unknown op '" + name + "'");
    bool typed_ok = false;
    shape next = cur;
    std::array<std::uint64_t, max_dims> longest{};
    if (uneven && !runs_on_uneven(s.kind))
      json_fail(errc::rule, where,
                name + " on uneven tiles (dimension " + std::to_string(uneven_at) + " of size " +
                    std::to_string(ctx.global[uneven_at]) +
                    " does not split evenly): redist runs every op but the reduce-scatter there (reduce with an "
                    "allreduce)");
    switch (s.kind) {
      case op::allgather:
      case op::alltoall:
      case op::allreduce:
      case op::reducescatter:
      case op::partial: {
        const bool fused = (s.kind == op::allgather || s.kind == op::alltoall) && js.contains("concat_dims");
        if (fused) {
          if (uneven) json_fail(errc::rule, where, "a fused " + name + " runs on even programs only");
          s.concat_grid = json_grid(js, "concat_dims", "concat_parts", where, R);
          if (s.kind == op::alltoall) s.split_grid = json_grid(js, "split_dims", "split_parts", where, R);
          for (int q = 0; q < s.split_grid.n; ++q)
            if (s.concat_grid.has(s.split_grid.dim[q]))
              json_fail(errc::rule, where + ".split_dims",
                        "dimension " + std::to_string(s.split_grid.dim[q]) + " is in concat_dims too");
        } else {
          if (s.kind == op::allgather || s.kind == op::alltoall || (s.kind == op::partial && js.contains("concat_dim")))
            s.concat_dim = json_dim(js, "concat_dim", where, R);
          if (s.kind == op::alltoall || s.kind == op::reducescatter) s.split_dim = json_dim(js, "split_dim", where, R);
          if (s.kind == op::alltoall && s.split_dim == s.concat_dim)
            json_fail(errc::rule, where, "concat_dim and split_dim must differ");
        }
        const std::string wg = where + ".groups";
        const auto& groups = json_array(json_field(js, "groups", where), wg);
        if (groups.empty()) json_fail(errc::bad_size, wg, "no groups");
        std::vector<bool> seen;  // allocated once the groups' sizes add up to D
        for (std::size_t g = 0; g < groups.size(); ++g) {
          const std::string wgi = wg + "[" + std::to_string(g) + "]";
          const auto& grp = json_array(groups[g], wgi);
          if (g == 0) {
            s.parts = grp.size();
            if (s.parts == 0 || H % s.parts != 0 || groups.size() != H / s.parts)
              json_fail(errc::bad_size, wg,
                        std::to_string(groups.size()) + " groups of " + std::to_string(grp.size()) +
                            " ranks do not partition the " + std::to_string(H) + " ranks" +
                            (v2 ? " that hold tiles" : ""));
            seen.assign(W, false);
          } else if (grp.size() != s.parts) {
            json_fail(errc::bad_size, wgi,
                      "has " + std::to_string(grp.size()) + " ranks, expected " + std::to_string(s.parts) +
                          " (the size of groups[0])");
          }
          for (std::size_t k = 0; k < grp.size(); ++k) {
            const std::string wr = wgi + "[" + std::to_string(k) + "]";
            std::uint64_t r = json_uint(grp[k], wr);
            if (r >= W)
              json_fail(errc::bad_size, wr, "rank " + std::to_string(r) + " out of range (" + world_text + ")");
            if (!holds[r]) json_fail(errc::rule, wr, "rank " + std::to_string(r) + " holds no tile before the step");
            if (seen[r]) json_fail(errc::rule, wr, "rank " + std::to_string(r) + " is in more than one group");
            seen[r] = true;
            s.members.push_back(static_cast<rank_t>(r));
          }
        }
        if (s.kind == op::allreduce || s.kind == op::reducescatter || s.kind == op::partial) {  // "reduce": default sum
          if (auto it = js.find("reduce"); it != js.end()) {
            const std::string rn = json_string(*it, where + ".reduce");
            if (!reduction_from_name(rn, s.reduce))
              json_fail(errc::syntax, where + ".reduce",
                        "unknown reduction '" + (rn.size() > 40 ? rn.substr(0, 37) + "..." : rn) +
                            "' (expected sum, max, min, prod or avg)");
          }
          if (s.kind == op::partial) {  // creates the target's pending values
            if (s.concat_dim >= 0 && s.reduce == reduction::avg)
              json_fail(errc::rule, where + ".reduce", "'avg' pads no tiles (the mean of padded tiles is not the value)");
            if (p.target.nsum == 0 || s.reduce != p.target.reduce)
              json_fail(errc::rule, where + ".reduce",
                        "'" + std::string(reduction_name(s.reduce)) + "' but " +
                            (p.target.nsum == 0 ? std::string("the target has no pending values")
                                                : "the target's partial values combine by " +
                                                      std::string(reduction_name(p.target.reduce))));
          } else if (p.source.nsum > 0 && s.reduce != p.source.reduce)
            json_fail(errc::rule, where + ".reduce",
                      "'" + std::string(reduction_name(s.reduce)) + "' but the source's partial values combine by " +
                          std::string(reduction_name(p.source.reduce)));
        }
        if (fused) {
          if (s.concat_grid.size() != s.parts || (s.kind == op::alltoall && s.split_grid.size() != s.parts))
            json_fail(errc::rule, where,
                      "the parts of its grids must multiply to the group size " + std::to_string(s.parts));
          typed_ok = true;  // the concat dimensions gather, the split ones divide the tile
          for (int q = 0; q < s.concat_grid.n && typed_ok; ++q) {
            const int d = s.concat_grid.dim[q];
            typed_ok = next.parts[d] % s.concat_grid.parts[q] == 0;
            if (typed_ok) next.parts[d] /= s.concat_grid.parts[q];
          }
          for (int q = 0; q < s.split_grid.n && typed_ok; ++q) {
            const int d = s.split_grid.dim[q];
            typed_ok = ctx.tile(next, d) % s.split_grid.parts[q] == 0;
            if (typed_ok) next.parts[d] *= s.split_grid.parts[q];
          }
        } else switch (s.kind) {
          case op::allgather: typed_ok = weak_allgather(ctx, cur, s.concat_dim, s.parts, next); break;
          case op::alltoall: typed_ok = weak_alltoall(ctx, cur, s.concat_dim, s.split_dim, s.parts, next); break;
          case op::allreduce: typed_ok = weak_allreduce(ctx, cur, s.parts, next); break;
          case op::partial: typed_ok = weak_partial(ctx, cur, s.parts, next, s.concat_dim); break;
          default: typed_ok = weak_reducescatter(ctx, cur, s.split_dim, s.parts, next); break;
        }
        break;
      }
      case op::dynslice: {
        s.split_dim = json_dim(js, "split_dim", where, R);
        s.parts = json_uint_field(js, "parts", where);
        if (s.parts == 0) json_fail(errc::bad_size, where + ".parts", "must be at least 1");
        s.index = json_rank_array(json_field(js, "index", where), where + ".index", W, s.parts, "chunk ");
        typed_ok = weak_dynslice(ctx, cur, s.split_dim, s.parts, next);
        break;
      }
      case op::allpermute: {
        s.parts = 1;
        s.dest = json_rank_array(json_field(js, "dest", where), where + ".dest", W, W, "rank ");
        std::vector<bool> hit(W, false);
        for (std::size_t r = 0; r < W; ++r) {
          const std::string wr = where + ".dest[" + std::to_string(r) + "]";
          if (hit[s.dest[r]])
            json_fail(errc::rule, wr, "rank " + std::to_string(s.dest[r]) + " receives two tiles (dest is not a bijection)");
          if (holds[r] != holds[s.dest[r]] || (!holds[r] && s.dest[r] != r))
            json_fail(errc::rule, wr,
                      holds[r] ? "moves rank " + std::to_string(r) + "'s tile to rank " + std::to_string(s.dest[r]) +
                                     ", which holds none"
                               : "rank " + std::to_string(r) + " holds no tile and must stay in place");
          hit[s.dest[r]] = true;
        }
        typed_ok = true;
        break;
      }
      case op::exchange: {
        if (cur.sums > 1)  // pending sums must be reduced before (and are created after: program_check)
          json_fail(errc::rule, where, exchange_sums);
        // boxes: D lists of R [lo, hi] pairs inside the array, tiles of a tiling: one shape
        // for all on even types; on uneven ones (DESIGN.md section 2) the longest box per
        // dimension is the tile ceil(n / k) of some k.
        const std::string wb = where + ".boxes";
        const auto& jb = json_array(json_field(js, "boxes", where), wb);
        s.node_ranks = json_node_ranks(js, where);
        if (jb.size() != W)
          json_fail(errc::bad_size, wb,
                    "has " + std::to_string(jb.size()) + " boxes, expected one per rank (" + std::to_string(W) + ")");
        s.boxes.reserve(W * static_cast<std::uint64_t>(R) * 2);
        if (v2) s.holds.assign(W, 1);
        bool first_box = true;
        for (std::size_t r = 0; r < jb.size(); ++r) {
          const std::string wr = wb + "[" + std::to_string(r) + "]";
          if (v2 && jb[r].is_null()) {  // the rank holds nothing after the step
            s.holds[r] = 0;
            s.boxes.insert(s.boxes.end(), 2 * static_cast<std::size_t>(R), 0);
            continue;
          }
          const auto& jr = json_array(jb[r], wr);
          if (jr.size() != static_cast<std::size_t>(R))
            json_fail(errc::bad_size, wr,
                      "has " + std::to_string(jr.size()) + " ranges, expected one per dimension (" + std::to_string(R) +
                          ")");
          for (int d = 0; d < R; ++d) {
            const std::string wd = wr + "[" + std::to_string(d) + "]";
            const auto& jd = json_array(jr[static_cast<std::size_t>(d)], wd);
            if (jd.size() != 2) json_fail(errc::syntax, wd, "expected [lo, hi], found " + json_excerpt(jd));
            const std::uint64_t lo = json_uint(jd[0], wd + "[0]"), hi = json_uint(jd[1], wd + "[1]");
            const std::uint64_t n = ctx.global[d];
            const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
            if (lo >= hi && !(uneven && lo == hi))
              json_fail(errc::bad_size, wd, "the range " + range + " is empty (a box holds lo <= i < hi, lo < hi)");
            if (hi > n)
              json_fail(errc::bad_size, wd,
                        "the range " + range + " is not inside dimension " + std::to_string(d) + " [0, " +
                            std::to_string(n) + ")");
            const std::uint64_t e = hi - lo;
            if (uneven) {
              longest[static_cast<std::size_t>(d)] = std::max(longest[static_cast<std::size_t>(d)], e);
            } else if (first_box) {
              if (n % e != 0)
                json_fail(errc::rule, wd,
                          "extent " + std::to_string(e) + " does not divide dimension " + std::to_string(d) + " (" +
                              std::to_string(n) + "): the boxes of an exchange are the tiles of an even tiling");
              next.parts[d] = n / e;
            } else if (e != n / next.parts[d]) {
              json_fail(errc::rule, wd,
                        "rank " + std::to_string(r) + " holds " + std::to_string(e) + " indices of dimension " +
                            std::to_string(d) + ", rank 0 " + std::to_string(n / next.parts[d]) +
                            ": every rank's box has one shape");
            }
            s.boxes.push_back(lo);
            s.boxes.push_back(hi);
          }
          first_box = false;
        }
        if (v2 && s.holds != holds) {  // the exchange moves the tiles to other ranks
          holds = s.holds;
          H = 0;
          for (std::uint8_t h : holds) H += h;
          ctx.devices = H;
        }
        if (uneven) {  // the tiles: the target's if they agree, otherwise ceil(n / k) for some k
          const shape want = shape_of(tm, p.target);
          bool target = true;
          for (int d = 0; d < R; ++d) {
            const auto k = static_cast<std::size_t>(d);
            const std::uint64_t n = ctx.global[d], e = longest[k];
            target = target && e == ctx.tile(want, d);
            next.parts[d] = e == 0 ? 0 : n / e + (n % e != 0);
            if (e == 0 || ctx.tile(next, d) != e)
              json_fail(errc::rule, where + ".boxes",
                        "the longest box along dimension " + std::to_string(d) + " holds " + std::to_string(e) +
                            " indices, which is not the tile ceil(" + std::to_string(n) + " / k) of any k");
          }
          if (target) next = want;
        }
        typed_ok = true;
        break;
      }
    }
    if (s.kind == op::exchange) exchanges.emplace_back(i, nullptr);
    if (!typed_ok)
      json_fail(errc::rule, where,
                name + " with " + std::to_string(s.parts) + (s.kind == op::dynslice ? " parts" : "-rank groups") +
                    " is ill-typed on tiles per dimension " + shape_string(cur) + " (global shape " +
                    std::string(shape_text(ctx.global, R).view()) + ")");
    const std::uint64_t before = local;
    cur = next;
    local = ctx.local_size(cur);
    s.after = cur;
    s.local_after = local;
    s.cost = s.kind == op::exchange ? 0 : cost_elements(s.kind, before, local);  // exchanges: below
    p.cost_elements += s.cost;
    p.peak_local_elements = std::max(p.peak_local_elements, local);

    if (auto it = js.find("type_mesh"); it != js.end()) {  // format 2: "target" for a type on the target mesh
      const std::string tmn = json_string(*it, where + ".type_mesh");
      if (tmn != "target" && tmn != "source")
        json_fail(errc::syntax, where + ".type_mesh", "expected \"source\" or \"target\", found " + json_excerpt(*it));
      s.on_target = tmn == "target" && p.two_meshes;
    }
    if (auto it = js.find("type"); it != js.end()) {
      const device_mesh& sm = s.on_target ? tm : m;
      s.type_after = json_type(sm, *it, where + ".type");
      // An uneven exchange's boxes say its tiles, not always its parts (a dimension of 1
      // index in 2 parts has the tile of 1 part): a type with those tiles names the parts.
      bool same_tiles = uneven && s.kind == op::exchange && same_global(s.type_after, p.source);
      for (int d = 0; same_tiles && d < R; ++d)
        same_tiles = ctx.tile(shape_of(sm, s.type_after), d) == ctx.tile(cur, d);
      if (same_tiles) cur = s.after = shape_of(sm, s.type_after);
      if (!same_global(s.type_after, p.source) || !(shape_of(sm, s.type_after) == cur))
        json_fail(errc::rule, where + ".type",
                  "'" + it->get<std::string>() + "' does not have the tiles per dimension " + shape_string(cur) +
                      " that the steps produce");
      if (auto ex = js.find("type_exact"); ex != js.end()) {
        if (!ex->is_boolean()) json_fail(errc::syntax, where + ".type_exact", "expected true or false, found " + json_excerpt(*ex));
        s.type_exact = ex->get<bool>();
      }
    }
    if (auto it = js.find("local_elements"); it != js.end() && json_uint(*it, where + ".local_elements") != local)
      json_fail(errc::rule, where + ".local_elements", json_excerpt(*it) + " but the step leaves " + std::to_string(local));
    if (auto it = js.find("cost_bytes"); it != js.end() && s.kind == op::exchange) {
      exchanges.back().second = &*it;
    } else if (it != js.end()) {
      std::uint64_t b = 0;
      if (!mul_ok(s.cost, p.element_bytes, b) || json_uint(*it, where + ".cost_bytes") != b)
        json_fail(errc::rule, where + ".cost_bytes",
                  json_excerpt(*it) + " but the step costs " + std::to_string(s.cost) + " elements of " +
                      std::to_string(p.element_bytes) + " bytes");
    }
    p.steps.push_back(std::move(s));
  }
  if (!(cur == shape_of(tm, p.target)))
    json_fail(errc::rule, "steps",
              "end with tiles per dimension " + shape_string(cur) + " but the target has " +
                  shape_string(shape_of(tm, p.target)));
  if (v2 && holds != placed_holders(tm.devices, p.two_meshes ? p.target_devices : p.source_devices, W))
    json_fail(errc::rule, "steps", "end with tiles on other ranks than the target mesh's devices");
  // The exchanges' pieces (the sender rule of redist/exchange.hpp) and their costs.
  for (const auto& [i, jcost] : exchanges) {
    const std::string where = "steps[" + std::to_string(i) + "]";
    const exchange_plan x = plan_exchange(p, i, plan_detail::sizes);
    if (!x.error.empty()) json_fail(errc::rule, where, x.error);
    step& s = p.steps[i];
    s.cost = x.max_received;
    p.cost_elements += s.cost;
    std::uint64_t b = 0;
    if (jcost && (!mul_ok(s.cost, p.element_bytes, b) || json_uint(*jcost, where + ".cost_bytes") != b))
      json_fail(errc::rule, where + ".cost_bytes",
                json_excerpt(*jcost) + " but the step costs " + std::to_string(s.cost) + " elements of " +
                    std::to_string(p.element_bytes) + " bytes");
  }

  detail::read_totals(j, p, std::max(local_size(m, p.source), local_size(tm, p.target)));
  return p;
}

/// nlohmann-json's conversion hooks (found by ADL): `json j = prog;`, `j.get<program>()`.
inline void to_json(nlohmann::json& j, const program& p) { j = to_json(p); }
inline void to_json(nlohmann::ordered_json& j, const program& p) { j = to_ordered_json(p); }
inline void from_json(const nlohmann::json& j, program& p) { p = program_from_json(j); }

/// Parse JSON text and read the program. Malformed JSON, a number JSON cannot hold (1e400),
/// and nesting deeper than max_json_depth are redist_errors too.
inline program program_from_json_text(std::string_view text) {
  return program_from_json(detail::parse_json_text(text, max_json_depth, "program JSON"));
}

}  // namespace redist
