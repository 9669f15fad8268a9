// redist/profile_json.hpp -- a backend's time profile (core/time_model.hpp) as JSON, format
// "redist-time-profile/2": written by `redist calibrate`, read by `redist plan --profile`.
// Requires nlohmann-json (link nlohmann_json::nlohmann_json); the core library does not.
//
//   {"format": "redist-time-profile/2", "name": "mpi", "devices": 8, "pass_per_byte_s": 3e-10,
//    "overlap": 0.1,
//    "ops": {"allgather": {"latency_s": 2e-05, "per_peer_s": 4e-06, "per_byte_s": 3.5e-10},
//            "alltoall": {...}, "dynslice": {...}, "allpermute": {...}, "allreduce": {...},
//            "reducescatter": {...}, "exchange": {...}}}
//
// Seconds per step, per peer (a collective's round: ceil(log2 n) of them) and per byte
// received, and per byte of a tile written (the pass; core/time_model.hpp has the formula);
// "overlap", the share of a message round's transfer a rank can spend copying (0 to 1,
// time_profile::overlap; missing: 0, as in profiles written before it); "nodes", where the
// ranks run on several nodes (time_profile::node_ranks, node_per_byte: the link term of
// core/time_model.hpp; calibration runs on one node and writes none, so it is added by hand):
//
//   "nodes": {"ranks": 8, "per_byte_s": 4e-11}
//
// "ranks" world ranks per node, consecutive (an unsigned integer >= 1), "per_byte_s" the
// seconds per byte one node's link carries each way (finite, >= 0).
// Format /1 priced a collective per peer (n - 1); its files are refused with a line that
// says to recalibrate.
//
// A profile of `redist calibrate --backend mpi` also says how the MPI backend moves
// exchanges (backends/mpi_exchange.hpp), as calibrate measured (runtime/calibrate.hpp
// time_exchanges: the geometric mean of the exchange programs' times in each mode):
//
//   "mpi": {"exchange": "single-copy",
//           "geomean_s": {"single-copy": 0.0011, "alltoallw": 0.0014, "packed": 0.0016}}
//
// `redist run --backend mpi --profile FILE` and `redist reshard run` move exchanges that
// way (mpi_options::set_exchange). "exchange" is one of the three names; "geomean_s", if
// present, has finite seconds >= 0 under those names only.
// profile_from_json checks everything and throws redist_error with one line naming the
// JSON path (`time profile JSON: ops.alltoall.per_byte_s: expected a finite number >= 0,
// found -1`): the format tag, "name" a string of at most 31 bytes, "devices" an unsigned
// integer, "ops" an object with every kind of step and no unknown one, each with the three
// terms finite and non-negative; "pass_per_byte_s" the same, or missing (0: profiles written
// before it); "overlap" from 0 to 1, or missing (0); "nodes" as above, or missing (one node);
// "mpi", where present (below), as it says. Other fields are ignored. Text nested deeper
// than max_profile_json_depth, malformed JSON and numbers JSON cannot hold (1e400) are
// redist_errors too.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "redist/backends/mpi_exchange.hpp"
#include "redist/core/cost.hpp"
#include "redist/core/error.hpp"
#include "redist/core/time_model.hpp"
#include "redist/json_read.hpp"

namespace redist {

/// The format tag of a time profile.
inline constexpr std::string_view profile_json_format = "redist-time-profile/2";

/// The deepest nesting of arrays and objects profile_from_json_text reads (a profile needs
/// 3: the document, "ops" or "mpi", an op or "geomean_s").
inline constexpr int max_profile_json_depth = 8;

/// How `redist calibrate --backend mpi` found the MPI backend's exchanges fastest, and the
/// geometric means it measured (the profile's "mpi" object).
struct mpi_exchange_choice {
  mpi_exchange exchange = mpi_exchange::single_copy;
  /// Seconds per mode, in the order of all_mpi_exchanges; a negative value: not measured.
  std::array<double, all_mpi_exchanges.size()> geomean_s = {-1, -1, -1};
};

namespace detail {

[[noreturn]] inline void profile_fail(errc code, const std::string& where, const std::string& what) {
  throw redist_error(code, "time profile JSON: " + (where.empty() ? what : where + ": " + what));
}

inline const nlohmann::json& profile_field(const nlohmann::json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) profile_fail(errc::syntax, where, std::string("missing field '") + key + "'");
  return *it;
}

inline double profile_seconds(const nlohmann::json& obj, const char* key, const std::string& where) {
  const nlohmann::json& v = profile_field(obj, key, where);
  const double d = v.is_number() ? v.get<double>() : -1;
  if (!v.is_number() || !std::isfinite(d) || d < 0)
    profile_fail(errc::syntax, json_join(where, key), "expected a finite number >= 0 (seconds), found " + json_excerpt(v));
  return d;
}

}  // namespace detail

/// The profile as JSON, keys in the order above (ops in the order of core/cost.hpp all_ops),
/// with the "mpi" object when `mpi` is given.
inline nlohmann::ordered_json profile_to_json(const time_profile& p, const std::optional<mpi_exchange_choice>& mpi = {}) {
  nlohmann::ordered_json j;
  j["format"] = profile_json_format;
  j["name"] = std::string(p.name_view());
  j["devices"] = p.devices;
  j["pass_per_byte_s"] = p.pass_per_byte;
  j["overlap"] = p.overlap;
  if (p.node_ranks > 0 || p.node_per_byte > 0) j["nodes"] = {{"ranks", p.node_ranks}, {"per_byte_s", p.node_per_byte}};
  nlohmann::ordered_json ops = nlohmann::ordered_json::object();
  for (op o : all_ops) {
    nlohmann::ordered_json t;
    t["latency_s"] = p[o].latency;
    t["per_peer_s"] = p[o].per_peer;
    t["per_byte_s"] = p[o].per_byte;
    ops[std::string(op_name(o))] = std::move(t);
  }
  j["ops"] = std::move(ops);
  if (mpi) {
    nlohmann::ordered_json m;
    m["exchange"] = std::string(mpi_exchange_name(mpi->exchange));
    nlohmann::ordered_json g = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < all_mpi_exchanges.size(); ++k)
      if (mpi->geomean_s[k] >= 0) g[std::string(mpi_exchange_name(all_mpi_exchanges[k]))] = mpi->geomean_s[k];
    m["geomean_s"] = std::move(g);
    j["mpi"] = std::move(m);
  }
  return j;
}

/// JSON text: one line per op. Doubles print with 17 significant digits at most (nlohmann's
/// round-trip form), so reading the text back gives the same profile.
inline std::string profile_json_text(const time_profile& p, const std::optional<mpi_exchange_choice>& mpi = {}) {
  const nlohmann::ordered_json j = profile_to_json(p, mpi);
  std::string out = "{\n";
  out += "  \"format\": " + j["format"].dump() + ",\n";
  out += "  \"name\": " + j["name"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ",\n";
  out += "  \"devices\": " + j["devices"].dump() + ",\n";
  out += "  \"pass_per_byte_s\": " + j["pass_per_byte_s"].dump() + ",\n";
  out += "  \"overlap\": " + j["overlap"].dump() + ",\n";
  if (j.contains("nodes")) out += "  \"nodes\": " + j["nodes"].dump() + ",\n";
  out += "  \"ops\": {\n";
  bool first = true;
  for (const auto& [name, t] : j["ops"].items()) {
    if (!first) out += ",\n";
    first = false;
    out += "    \"" + name + "\": " + t.dump();
  }
  out += "\n  }";
  if (j.contains("mpi")) out += ",\n  \"mpi\": " + j["mpi"].dump();
  return out + "\n}";
}

/// The profile's "mpi" object, checked (see the header comment), or none if it has none.
inline std::optional<mpi_exchange_choice> mpi_exchange_from_profile_json(const nlohmann::json& j) {
  using namespace detail;
  if (!j.is_object() || !j.contains("mpi")) return std::nullopt;
  const nlohmann::json& m = j["mpi"];
  if (!m.is_object()) profile_fail(errc::syntax, "mpi", "expected an object, found " + json_excerpt(m));
  const nlohmann::json& e = profile_field(m, "exchange", "mpi");
  const std::optional<mpi_exchange> mode =
      e.is_string() ? mpi_exchange_from_name(e.get_ref<const std::string&>()) : std::nullopt;
  if (!mode)
    profile_fail(errc::syntax, "mpi.exchange",
                 "expected one of " + mpi_exchange_names() + ", found " + json_excerpt(e));
  mpi_exchange_choice c;
  c.exchange = *mode;
  if (m.contains("geomean_s")) {
    const nlohmann::json& g = m["geomean_s"];
    if (!g.is_object()) profile_fail(errc::syntax, "mpi.geomean_s", "expected an object, found " + json_excerpt(g));
    for (auto it = g.begin(); it != g.end(); ++it) {
      const std::optional<mpi_exchange> k = mpi_exchange_from_name(it.key());
      if (!k)
        profile_fail(errc::syntax, "mpi.geomean_s",
                     "unknown way of exchanging " + json_excerpt(nlohmann::json(it.key())) + " (known: " +
                         mpi_exchange_names() + ")");
      c.geomean_s[static_cast<std::size_t>(*k)] = profile_seconds(g, it.key().c_str(), "mpi.geomean_s");
    }
  }
  return c;
}

/// Read a profile back (see the header comment for what is checked).
inline time_profile profile_from_json(const nlohmann::json& j) {
  using namespace detail;
  if (!j.is_object()) profile_fail(errc::syntax, "", "expected an object, found " + json_excerpt(j));
  const nlohmann::json& format = profile_field(j, "format", "");
  if (format == "redist-time-profile/1")
    profile_fail(errc::syntax, "format",
                 "\"redist-time-profile/1\" priced a collective per peer, this redist per round (\"" +
                     std::string(profile_json_format) + "\"): run redist calibrate again");
  if (!format.is_string() || format.get<std::string>() != profile_json_format)
    profile_fail(errc::syntax, "format",
                 "expected \"" + std::string(profile_json_format) + "\", found " + json_excerpt(format));
  time_profile p;
  const nlohmann::json& name = profile_field(j, "name", "");
  if (!name.is_string()) profile_fail(errc::syntax, "name", "expected a string, found " + json_excerpt(name));
  const std::string& n = name.get_ref<const std::string&>();
  if (n.size() >= sizeof p.name || n.find('\0') != std::string::npos)
    profile_fail(errc::capacity, "name",
                 "expected at most " + std::to_string(sizeof p.name - 1) + " bytes and no NUL, found " +
                     std::to_string(n.size()) + " bytes");
  p.set_name(n);
  const nlohmann::json& devices = profile_field(j, "devices", "");
  if (!devices.is_number_unsigned() && !(devices.is_number_integer() && devices.get<std::int64_t>() >= 0))
    profile_fail(errc::syntax, "devices", "expected an unsigned integer, found " + json_excerpt(devices));
  p.devices = devices.get<std::uint64_t>();
  if (j.contains("pass_per_byte_s")) p.pass_per_byte = profile_seconds(j, "pass_per_byte_s", "");
  if (j.contains("overlap")) {
    const nlohmann::json& v = j["overlap"];
    const double d = v.is_number() ? v.get<double>() : -1;
    if (!v.is_number() || !(d >= 0 && d <= 1))
      profile_fail(errc::syntax, "overlap", "expected a number from 0 to 1, found " + json_excerpt(v));
    p.overlap = d;
  }
  if (j.contains("nodes")) {
    const nlohmann::json& v = j["nodes"];
    if (!v.is_object()) profile_fail(errc::syntax, "nodes", "expected an object, found " + json_excerpt(v));
    const nlohmann::json& r = profile_field(v, "ranks", "nodes");
    if (!(r.is_number_unsigned() ? r.get<std::uint64_t>() >= 1 : r.is_number_integer() && r.get<std::int64_t>() >= 1))
      profile_fail(errc::syntax, "nodes.ranks", "expected an integer >= 1 (world ranks per node), found " + json_excerpt(r));
    p.node_ranks = r.get<std::uint64_t>();
    p.node_per_byte = profile_seconds(v, "per_byte_s", "nodes");
  }
  const nlohmann::json& ops = profile_field(j, "ops", "");
  if (!ops.is_object()) profile_fail(errc::syntax, "ops", "expected an object, found " + json_excerpt(ops));
  for (auto it = ops.begin(); it != ops.end(); ++it) {
    op o{};
    if (!op_from_name(it.key(), o) || o == op::partial) {  // a partial step has no terms (core/cost.hpp)
      std::string known;
      for (op k : all_ops) known += (known.empty() ? "" : ", ") + std::string(op_name(k));
      profile_fail(errc::syntax, "ops",
                   "unknown kind of step " + json_excerpt(nlohmann::json(it.key())) + " (known: " + known + ")");
    }
  }
  for (op o : all_ops) {
    const std::string where = "ops." + std::string(op_name(o));
    auto it = ops.find(std::string(op_name(o)));
    if (it == ops.end()) profile_fail(errc::syntax, "ops", "missing the kind of step '" + std::string(op_name(o)) + "'");
    if (!it->is_object()) profile_fail(errc::syntax, where, "expected an object, found " + json_excerpt(*it));
    p[o].latency = profile_seconds(*it, "latency_s", where);
    p[o].per_peer = profile_seconds(*it, "per_peer_s", where);
    p[o].per_byte = profile_seconds(*it, "per_byte_s", where);
  }
  (void)mpi_exchange_from_profile_json(j);  // a profile is read whole or refused
  return p;
}

/// Parse JSON text and read the profile. Malformed JSON, a number JSON cannot hold (1e400)
/// and nesting deeper than max_profile_json_depth are redist_errors too.
inline time_profile profile_from_json_text(std::string_view text) {
  return profile_from_json(detail::parse_json_text(text, max_profile_json_depth, "time profile JSON"));
}

/// Parse JSON text and read its "mpi" object (none if it has none); errors as
/// profile_from_json_text's.
inline std::optional<mpi_exchange_choice> mpi_exchange_from_profile_json_text(std::string_view text) {
  return mpi_exchange_from_profile_json(detail::parse_json_text(text, max_profile_json_depth, "time profile JSON"));
}

/// Read a profile file (as `redist calibrate --out FILE` writes it).
inline time_profile profile_from_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw redist_error(errc::runtime, "cannot read the profile file '" + path + "'");
  std::ostringstream text;
  text << f.rdbuf();
  return profile_from_json_text(text.str());
}

}  // namespace redist
