// redist/core/placement.hpp -- meshes on device sets (DESIGN.md section 2, "Meshes on
// device sets").
//
// A placed mesh is a mesh plus the rank of the communicator (the *world* of W ranks) at each
// of its positions, in row-major mesh order: `{x: 2, y: 2} @ [4, 6, 5, 7]` puts position
// (x=0, y=1) on rank 6. Without a list the mesh runs on ranks 0..D-1 (the default device
// map). A type is unchanged by its placement: it says which box the device at each mesh
// position holds, and the placement says which world rank that device is. Ranks outside
// the mesh hold nothing of an array typed on it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redist/box.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/lex.hpp"
#include "redist/core/mesh.hpp"

namespace redist {

/// A mesh on ranks of a world (DESIGN.md section 2).
struct placed_mesh {
  device_mesh mesh{};
  std::vector<std::uint32_t> devices;  ///< world rank at each row-major position; empty: 0..D-1

  /// The world rank of the device at mesh position `pos` (the rank under the default map).
  [[nodiscard]] std::uint64_t at(std::uint64_t pos) const { return devices.empty() ? pos : devices[pos]; }
  /// True if the mesh runs on ranks 0..D-1 in order (no list, or the identity list).
  [[nodiscard]] bool identity() const {
    for (std::size_t p = 0; p < devices.size(); ++p)
      if (devices[p] != p) return false;
    return true;
  }
  /// The smallest world that holds the mesh: the largest rank plus one.
  [[nodiscard]] std::uint64_t min_world() const {
    std::uint64_t w = devices.empty() ? mesh.devices : 0;
    for (std::uint32_t r : devices) w = std::max<std::uint64_t>(w, std::uint64_t{r} + 1);
    return w;
  }
  /// Per world rank (W entries): its mesh position, or -1 for a rank outside the mesh.
  [[nodiscard]] std::vector<std::int64_t> positions(std::uint64_t world) const {
    std::vector<std::int64_t> pos(world, -1);
    for (std::uint64_t p = 0; p < mesh.devices; ++p)
      if (at(p) < world) pos[at(p)] = static_cast<std::int64_t>(p);
    return pos;
  }
  /// Place the mesh on `ids`, the world rank at each row-major position (each below 2^32),
  /// keeping no list where they are 0..D-1.
  void place_on(const std::vector<std::uint64_t>& ids) {
    devices.clear();
    for (std::uint64_t v : ids) devices.push_back(static_cast<std::uint32_t>(v));
    if (identity()) devices.clear();
  }
  /// The same mesh on the same ranks, in the same order.
  bool operator==(const placed_mesh& o) const {
    if (!(mesh == o.mesh)) return false;
    if (devices.empty() && o.devices.empty()) return true;  // no loop over a mesh of 2^60 devices
    for (std::uint64_t p = 0; p < mesh.devices; ++p)
      if (at(p) != o.at(p)) return false;
    return true;
  }
};

/// The problem with a placement in a world of `world` ranks (0: the mesh's own size), or
/// ok: a list whose length is not the mesh size, a rank listed twice, a rank >= W. The
/// column, when `list_col` >= 0, is that of the offending entry (`cols[i]` from the parser).
inline error check_placement(const placed_mesh& pm, std::uint64_t world, const std::vector<int>* cols = nullptr) {
  const std::uint64_t D = pm.mesh.devices;
  const std::uint64_t W = world ? world : D;
  auto col = [&](std::size_t i) { return cols && i < cols->size() ? (*cols)[i] : -1; };
  if (!pm.devices.empty() && pm.devices.size() != D) {
    text t("the device list has ");
    t.append_uint(pm.devices.size()).append(" ranks but the mesh has ").append_uint(D).append(" devices");
    return error::make(errc::bad_size, t.view(), col(pm.devices.size() < D ? pm.devices.size() : D));
  }
  if (D > W) {
    text t("the mesh has ");
    t.append_uint(D).append(" devices, more than the ").append_uint(W).append(" ranks of the world");
    return error::make(errc::bad_size, t.view());
  }
  // The first problem in list order: a rank >= W, or a rank seen before (found by sorting the
  // list, not by a table of W entries: a world may have 2^32 ranks).
  std::size_t bad = pm.devices.size();
  for (std::size_t i = 0; i < pm.devices.size() && bad == pm.devices.size(); ++i)
    if (pm.devices[i] >= W) bad = i;
  std::vector<std::pair<std::uint32_t, std::size_t>> by_rank;
  for (std::size_t i = 0; i < bad; ++i) by_rank.emplace_back(pm.devices[i], i);
  std::sort(by_rank.begin(), by_rank.end());
  std::size_t first = 0, again = bad;  // the earliest repeat (again) and what it repeats (first)
  for (std::size_t k = 1; k < by_rank.size(); ++k)
    if (by_rank[k].first == by_rank[k - 1].first && by_rank[k].second < again &&
        (k < 2 || by_rank[k - 2].first != by_rank[k].first)) {
      first = by_rank[k - 1].second;
      again = by_rank[k].second;
    }
  if (again < bad) {
    text t("device ");
    t.append_uint(pm.devices[again]).append(" is listed twice (positions ").append_uint(first).append(" and ")
        .append_uint(again).append(")");
    return error::make(errc::repeated_axis, t.view(), col(again));
  }
  if (bad < pm.devices.size()) {
    text t("device ");
    t.append_uint(pm.devices[bad]).append(" (position ").append_uint(bad).append(") is not a rank of the world of ")
        .append_uint(W).append(" ranks");
    return error::make(errc::bad_size, t.view(), col(bad));
  }
  return {};
}

/// Parse `{x: 2, y: 2} @ [4, 6, 5, 7]` or a plain mesh `{x: 4}` (ranks 0..D-1). The list
/// is checked for length and repeats (ranks against a world: check_placement). Throws
/// redist_error naming the column.
inline placed_mesh parse_placed_mesh(std::string_view s) {
  // The '@' outside quotes splits the mesh from its list.
  std::size_t at = std::string_view::npos;
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '@') {
      at = i;
      break;
    }
  }
  placed_mesh pm;
  const result<device_mesh> m = parse_mesh_text(s.substr(0, at));
  if (!m.err.ok()) throw redist_error(m.err, s);
  pm.mesh = m.value;
  if (at == std::string_view::npos) return pm;
  detail::scanner sc{s};
  sc.pos = static_cast<int>(at + 1);
  std::vector<int> cols;
  if (sc.expect('[', "'[' to open the device list after '@'") && !sc.accept(']')) {
    do {
      std::uint64_t r = 0;
      if (!sc.device_id(r, cols.emplace_back(), "a rank")) break;
      pm.devices.push_back(static_cast<std::uint32_t>(r));
    } while (sc.accept(','));
    if (!sc.failed()) sc.expect(']', "',' or ']' in the device list");
  }
  if (!sc.failed() && !sc.at_end()) sc.fail_expected("the end of the mesh");
  if (sc.failed()) throw redist_error(sc.err, s);
  cols.push_back(sc.pos);
  if (error e = check_placement(pm, std::max<std::uint64_t>(pm.min_world(), pm.mesh.devices), &cols))
    throw redist_error(e, s);
  return pm;
}

/// A mesh with its device list: `{x: 2, y: 2} @ [4, 6, 5, 7]`; without the list when it is
/// 0..D-1.
inline std::string placed_mesh_text(const placed_mesh& pm) {
  std::string s(mesh_text(pm.mesh).view());
  if (pm.identity()) return s;
  s += " @ [";
  for (std::size_t i = 0; i < pm.devices.size(); ++i) s += (i ? ", " : "") + std::to_string(pm.devices[i]);
  return s + "]";
}

/// A type on a placed mesh: what a notation that names devices (XLA's HloSharding, Shardy's
/// mesh with device_ids) says in one value.
struct placed_type {
  placed_mesh pm;
  dist_type type;
};

/// A box layout of an array of `shape` on the ranks of a world of W ranks (0:
/// pm.min_world()) in which no rank holds a box yet: the start of a layout read from a
/// notation on pm (dtensor_layout, shardy_layout), which gives pm's ranks their boxes.
/// Throws redist_error for a world of more than max_program_devices ranks (a box layout lists
/// every rank, as a program does) and for pm's ranks outside the world.
inline box_layout placed_box_layout(const placed_mesh& pm, std::span<const std::uint64_t> shape, std::uint64_t W) {
  if (W == 0) W = pm.min_world();
  if (W > max_program_devices)
    throw redist_error(errc::capacity, "a box layout lists every rank: at most " + std::to_string(max_program_devices) +
                                           " ranks, the world has " + std::to_string(W));
  if (error e = check_placement(pm, W)) throw redist_error(e);
  box_layout l;
  l.shape.assign(shape.begin(), shape.end());
  l.boxes.assign(W, std::nullopt);
  return l;
}

}  // namespace redist
