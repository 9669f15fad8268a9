// redist/draw.hpp -- pictures of distributed arrays and of collective programs: which
// device holds which box of the global array, in the terminal (Unicode box drawing,
// optional ANSI colour) and as standalone SVG, like jax.debug.visualize_array_sharding.
//
//   auto m = redist::parse_mesh("{x: 2, y: 2}");
//   auto t = redist::parse_type(m, "[64{x}128, 32{y}64]");
//   fmt::print("{}", redist::show_text(m, t));      // header line + the picture below
//   std::string svg = redist::show_svg(m, t);       // the same as an SVG 1.1 document
//   std::string prog = redist::plan_svg(program);   // one panel per state of a program
//
//   mesh {x: 2, y: 2} | type [64{x}128, 32{y}64] | global [128, 64] | tile [64, 32] | local size 2048 elements
//       0  32  64
//     0 ┌───┬───┐
//       │ 0 │ 1 │
//    64 ├───┼───┤
//       │ 2 │ 3 │
//   128 └───┴───┘
//
// Layout: a 1-D array is one row of boxes; a 2-D array a grid (dimension 0 down,
// dimension 1 across); a higher-rank array one such grid per block of its leading
// dimensions, titled with that block's index range (`[0:64, :, :]`). The numbers on the
// borders are the global indices where boxes start and end. A box is labelled with the
// ranks (default device map) of the devices that hold it: `0,2`, runs as `0-3`, long lists
// shortened with `…`. With pending sums every device of a box holds a partial value; the
// label joins the devices of different partials with `+` (`0+1`: device 0 holds one
// partial, device 1 the other; the box's value is their sum). Rows wider than
// draw_options::max_columns boxes wrap into bands.
//
// Who holds what comes from the core's base offsets (core/offsets.hpp) for a type, and by
// following every device's box through the steps of a well-formed program (DESIGN.md
// section 4, checked by runtime/program_check.hpp) for plan_svg: an intermediate type is drawn as it really lies on the devices, also where
// the program only knows it up to a device permutation (step::type_exact false). After an
// exchange every device holds the box the step lists for it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/core/placement.hpp"
#include "redist/exchange.hpp"
#include "redist/program.hpp"
#include "redist/runtime/program_check.hpp"

namespace redist {

/// The largest pictures drawn: more devices or boxes than this throw redist_error
/// (errc::capacity) instead of allocating and printing without end.
inline constexpr std::uint64_t max_draw_devices = std::uint64_t{1} << 16;
inline constexpr std::uint64_t max_draw_boxes = 4096;

/// Every device's box of global indices (all boxes have the same extents) and the set of
/// partial values its data adds up.
struct device_boxes {
  std::vector<std::uint64_t> global;                 ///< global shape
  std::vector<std::uint64_t> tile;                   ///< extents of every device's box
  std::vector<std::uint64_t> lo;                     ///< lower corners: lo[rank * dims + d]
  std::vector<std::uint64_t> hi;                     ///< upper corners, where boxes may differ (program_boxes); empty: lo + tile
  std::vector<std::vector<std::uint32_t>> partials;  ///< per device: ids of the source's partials it holds the sum of
  std::uint32_t total_partials = 1;                  ///< partial values that make up the array

  [[nodiscard]] int rank() const { return static_cast<int>(global.size()); }
  [[nodiscard]] std::uint64_t devices() const { return partials.size(); }
  [[nodiscard]] std::uint64_t local_size() const {
    std::uint64_t s = 1;
    for (std::uint64_t e : tile) s *= e;
    return s;
  }
};

/// The boxes of a type under the default device map: base offsets and tiles (Fig. 7a);
/// device r holds partial number sum_index(m, t, r).
inline device_boxes device_boxes_of(const device_mesh& m, const dist_type& t) {
  if (m.devices > max_draw_devices)
    throw redist_error(errc::capacity, fmt::format("the mesh has {} devices, too many to draw (at most {})", m.devices,
                                                   max_draw_devices));
  device_boxes b;
  const auto R = static_cast<std::size_t>(t.rank);
  for (int d = 0; d < t.rank; ++d) {
    b.global.push_back(t.dims[d].global);
    b.tile.push_back(tile(m, t.dims[d]));
  }
  b.lo.resize(m.devices * R);
  b.partials.resize(m.devices);
  std::uint64_t off[max_dims]{};
  for (std::uint64_t r = 0; r < m.devices; ++r) {
    base_offsets(m, t, r, off);
    std::copy(off, off + R, b.lo.begin() + static_cast<std::ptrdiff_t>(r * R));
    b.partials[r] = {static_cast<std::uint32_t>(sum_index(m, t, r))};
  }
  b.total_partials = static_cast<std::uint32_t>(sum_parts(m, t));
  return b;
}

/// The boxes before the first step of `p` (its source) and after each step: every world
/// rank's box as program_check follows it (exchange.hpp step_boxes, DESIGN.md section 4),
/// the tile the check sizes, and the partial values each rank's data adds up. A rank that
/// holds nothing (a program on device sets) or an empty box is drawn as empty. Throws
/// redist_error if the program is not well-formed (runtime/program_check.hpp).
inline std::vector<device_boxes> program_boxes(const program& p) {
  const detail::program_shapes shapes = detail::check_program(p);
  if (!shapes.error.empty()) throw redist_error(errc::runtime, shapes.error);
  const std::uint64_t W = p.world_size();
  if (W > max_draw_devices)
    throw redist_error(errc::capacity, fmt::format("the world has {} ranks, too many to draw (at most {})", W,
                                                   max_draw_devices));
  const auto R = static_cast<std::uint64_t>(p.source.rank);
  std::vector<device_boxes> states;
  for (std::size_t i = 0; i < shapes.boxes.states.size(); ++i) {
    device_boxes b;
    for (int d = 0; d < p.source.rank; ++d) {
      b.global.push_back(p.source.dims[d].global);
      b.tile.push_back(shapes.ext[i][d]);
    }
    b.lo.resize(W * R);
    b.hi.resize(W * R);
    for (std::uint64_t r = 0; r < W; ++r) {
      const box& x = shapes.boxes.states[i][r];
      for (std::uint64_t d = 0; d < R; ++d) {
        b.lo[r * R + d] = x.empty() ? b.global[d] : x.lo[d];
        b.hi[r * R + d] = x.empty() ? b.global[d] : x.hi[d];
      }
    }
    if (i == 0) {  // rank r (mesh position q) holds the source's partial number sum_index(q)
      b.partials.resize(W);
      for (std::uint64_t r = 0; r < W; ++r)
        if (p.boxed_source() && p.source_layout.boxes[r]) b.partials[r] = {0};  // a box layout: whole values
        else if (const std::int64_t q = p.source_position(r); q >= 0 && !p.boxed_source())
          b.partials[r] = {static_cast<std::uint32_t>(sum_index(p.m, p.source, static_cast<std::uint64_t>(q)))};
      b.total_partials = static_cast<std::uint32_t>(sum_parts(p.m, p.source));
    } else {  // the partials follow the data: gathered from one member, moved, or reduced
      const step& s = p.steps[i - 1];
      const device_boxes& cur = states.back();
      b.partials = cur.partials;
      b.total_partials = cur.total_partials;
      switch (s.kind) {
        case op::allgather:
        case op::alltoall:
          for (std::size_t g = 0; g < s.group_count(); ++g)
            for (rank_t k : s.group(g)) b.partials[k] = cur.partials[s.group(g)[0]];
          break;
        case op::allpermute:
          for (std::uint64_t r = 0; r < W; ++r) b.partials[s.dest[r]] = cur.partials[r];
          break;
        case op::allreduce:
        case op::reducescatter:
          for (std::size_t g = 0; g < s.group_count(); ++g) {
            std::vector<std::uint32_t> sum;
            for (rank_t r : s.group(g)) sum.insert(sum.end(), cur.partials[r].begin(), cur.partials[r].end());
            std::sort(sum.begin(), sum.end());
            sum.erase(std::unique(sum.begin(), sum.end()), sum.end());
            for (rank_t r : s.group(g)) b.partials[r] = sum;
          }
          break;
        case op::partial:  // member k of a group holds part k of each value it held
          b.total_partials = cur.total_partials * static_cast<std::uint32_t>(s.parts);
          for (std::size_t g = 0; g < s.group_count(); ++g)
            for (std::size_t k = 0; k < s.parts; ++k) {
              std::vector<std::uint32_t>& mine = b.partials[s.group(g)[k]];
              for (std::uint32_t& v : mine) v = v * static_cast<std::uint32_t>(s.parts) + static_cast<std::uint32_t>(k);
            }
          break;
        case op::exchange: {  // whole values only (program_check): a holder has every partial
          std::vector<std::uint32_t> all(cur.total_partials);
          for (std::uint32_t k = 0; k < cur.total_partials; ++k) all[k] = k;
          for (std::uint64_t r = 0; r < W; ++r) b.partials[r] = s.holds_after(r) ? all : std::vector<std::uint32_t>{};
          break;
        }
        default: break;
      }
    }
    states.push_back(std::move(b));
  }
  return states;
}

/// The picture's model: the global array cut into a grid of equal boxes and, per box, the
/// devices that hold it, grouped by the partial value they hold.
struct tiling {
  std::vector<std::uint64_t> global;  ///< global shape
  std::vector<std::uint64_t> tile;    ///< box extents
  std::vector<std::uint64_t> blocks;  ///< boxes per dimension
  /// holders[b] for box b (row-major over `blocks`): groups of ranks, ascending, one group
  /// per distinct partial value; a single group when its devices hold the whole value.
  std::vector<std::vector<std::vector<rank_t>>> holders;
  bool partial = false;  ///< some box is held as partial values (pending sums)
  std::vector<rank_t> empty;  ///< devices whose tile is empty (uneven dimensions), ascending
  /// Boxes on no grid of equal boxes (box layouts, redist/box.hpp): per dimension the global
  /// indices where the boxes of the picture start and end (every box's edges); empty: the
  /// grid of `tile`-wide boxes.
  std::vector<std::vector<std::uint64_t>> cuts;

  [[nodiscard]] int rank() const { return static_cast<int>(global.size()); }
  [[nodiscard]] std::uint64_t boxes() const { return holders.size(); }
  /// Global index where box i of dimension d starts (the end of the array for i = blocks):
  /// i * tile, clipped to the array (the last box of an uneven dimension is short).
  [[nodiscard]] std::uint64_t edge(std::size_t d, std::uint64_t i) const {
    return cuts.empty() ? clip_mul(i, tile[d], global[d]) : cuts[d][i];
  }
  /// The index range of box b, `[0:64, 32:64]`.
  [[nodiscard]] std::string box_range(std::uint64_t b) const {
    std::vector<std::string> r(global.size());
    for (std::size_t d = global.size(); d-- > 0;) {
      const std::uint64_t i = b % blocks[d];
      b /= blocks[d];
      r[d] = fmt::format("{}:{}", edge(d, i), edge(d, i + 1));
    }
    return fmt::format("[{}]", fmt::join(r, ", "));
  }
};

/// The tiling of boxes on no grid of equal boxes (a box layout, redist/box.hpp): the array
/// cut at every box's edges (tiling::cuts), each piece held by the ranks whose box holds it,
/// grouped by partial value; ranks with an empty box listed apart. hi: upper corners as lo.
inline tiling cut_tiling(const device_boxes& b, const std::vector<std::uint64_t>& hi) {
  tiling t;
  t.global = b.global;
  const std::size_t R = b.global.size();
  auto held = [&](std::uint64_t r) {
    for (std::size_t d = 0; d < R; ++d)
      if (b.lo[r * R + d] >= hi[r * R + d]) return false;
    return true;
  };
  t.cuts.resize(R);
  std::uint64_t n = 1;
  for (std::size_t d = 0; d < R; ++d) {
    auto& c = t.cuts[d];
    c = {0, b.global[d]};
    for (std::uint64_t r = 0; r < b.devices(); ++r)
      if (held(r)) {
        c.push_back(b.lo[r * R + d]);
        c.push_back(hi[r * R + d]);
      }
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    t.blocks.push_back(c.size() - 1);
    t.tile.push_back(0);
    n *= t.blocks.back();
  }
  if (n > max_draw_boxes)
    throw redist_error(errc::capacity, fmt::format("the array is cut into {} boxes, too many to draw (at most {})", n,
                                                   max_draw_boxes));
  std::vector<std::map<std::vector<std::uint32_t>, std::vector<rank_t>>> by_partial(n);
  for (std::uint64_t r = 0; r < b.devices(); ++r) {
    if (!held(r)) {
      t.empty.push_back(static_cast<rank_t>(r));
      continue;
    }
    // The pieces of r's box: the cuts from its lower to its upper corner, row-major.
    std::vector<std::uint64_t> first(R), last(R), at(R);
    for (std::size_t d = 0; d < R; ++d) {
      const auto& c = t.cuts[d];
      first[d] = static_cast<std::uint64_t>(std::lower_bound(c.begin(), c.end(), b.lo[r * R + d]) - c.begin());
      last[d] = static_cast<std::uint64_t>(std::lower_bound(c.begin(), c.end(), hi[r * R + d]) - c.begin());
      at[d] = first[d];
    }
    while (true) {
      std::uint64_t cell = 0;
      for (std::size_t d = 0; d < R; ++d) cell = cell * t.blocks[d] + at[d];
      by_partial[cell][b.partials[r]].push_back(static_cast<rank_t>(r));
      std::size_t d = R;
      while (d-- > 0 && ++at[d] == last[d]) at[d] = first[d];
      if (d == SIZE_MAX) break;
    }
    if (b.partials[r].size() != b.total_partials) t.partial = true;
  }
  t.holders.resize(n);
  for (std::uint64_t i = 0; i < n; ++i)
    for (auto& [k, ranks] : by_partial[i]) t.holders[i].push_back(std::move(ranks));
  return t;
}

/// Group the devices by the box they hold; devices holding an empty box (an uneven
/// dimension, DESIGN.md section 2) are listed apart. Boxes of other extents, or off the grid
/// of their extents (a box layout, an exchange to one), are drawn cut at every box's edges
/// where their upper corners are known (cut_tiling); otherwise that throws redist_error.
inline tiling tiling_of(const device_boxes& b) {
  if (!b.hi.empty()) {  // boxes on the grid of `tile`-wide boxes, or cut_tiling
    const std::size_t R = b.global.size();
    bool grid = true;
    for (std::uint64_t r = 0; r < b.devices() && grid; ++r) {
      bool none = false;
      for (std::size_t d = 0; d < R; ++d) none = none || b.lo[r * R + d] >= b.hi[r * R + d];
      for (std::size_t d = 0; d < R && !none && grid; ++d) {
        const std::uint64_t l = b.lo[r * R + d], h = b.hi[r * R + d];
        grid = b.tile[d] != 0 && l % b.tile[d] == 0 && h == std::min(l + b.tile[d], b.global[d]);
      }
    }
    if (!grid) return cut_tiling(b, b.hi);
  }
  tiling t;
  t.global = b.global;
  t.tile = b.tile;
  std::uint64_t n = 1;
  for (std::size_t d = 0; d < b.global.size(); ++d) {
    t.blocks.push_back(b.tile[d] ? b.global[d] / b.tile[d] + (b.global[d] % b.tile[d] != 0) : 0);
    n *= t.blocks.back();
  }
  if (n > max_draw_boxes)
    throw redist_error(errc::capacity, fmt::format("the array is cut into {} boxes, too many to draw (at most {})", n,
                                                   max_draw_boxes));
  std::vector<std::map<std::vector<std::uint32_t>, std::vector<rank_t>>> by_partial(n);
  const std::size_t R = b.global.size();
  for (std::uint64_t r = 0; r < b.devices(); ++r) {
    std::uint64_t box = 0;
    bool none = false;
    for (std::size_t d = 0; d < R; ++d) none = none || b.lo[r * R + d] >= b.global[d];
    if (none) {
      t.empty.push_back(static_cast<rank_t>(r));
      continue;
    }
    for (std::size_t d = 0; d < R; ++d) {
      const std::uint64_t l = b.lo[r * R + d];
      if (l % b.tile[d] != 0 || l / b.tile[d] >= t.blocks[d])
        throw redist_error(errc::runtime, fmt::format("device {} holds a box off the grid of {}-wide tiles along dimension {}",
                                                      r, b.tile[d], d));
      box = box * t.blocks[d] + l / b.tile[d];
    }
    by_partial[box][b.partials[r]].push_back(static_cast<rank_t>(r));
    if (b.partials[r].size() != b.total_partials) t.partial = true;
  }
  t.holders.resize(n);
  for (std::uint64_t i = 0; i < n; ++i)
    for (auto& [k, ranks] : by_partial[i]) t.holders[i].push_back(std::move(ranks));
  return t;
}

inline tiling tiling_of(const device_mesh& m, const dist_type& t) { return tiling_of(device_boxes_of(m, t)); }

/// How pictures are drawn.
struct draw_options {
  bool color = false;              ///< text: ANSI colours, one per box (24-bit, the SVG palette)
  std::size_t max_label = 20;      ///< longest device label (columns) before it is shortened with `…`
  std::uint64_t max_columns = 16;  ///< boxes per row; wider rows wrap into bands
  std::string type_label;          ///< show_*: the type as the header prints it (empty: the paper syntax)
  /// show_*: the world rank of each mesh position (a mesh on device sets, core/placement.hpp):
  /// boxes are labelled with those ranks. Empty: the positions (ranks 0..D-1).
  std::vector<std::uint32_t> devices;
};

namespace detail::pic {

/// Display columns of UTF-8 text (every character used here is one column wide).
inline std::size_t columns(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

/// Ranks as `0,2,4` with runs of three or more as `0-3`; one token per item.
inline std::vector<std::string> rank_tokens(const std::vector<rank_t>& r) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < r.size();) {
    std::size_t j = i + 1;
    while (j < r.size() && r[j] == r[j - 1] + 1) ++j;
    if (j - i >= 3) out.push_back(fmt::format("{}-{}", r[i], r[j - 1]));
    else
      for (std::size_t k = i; k < j; ++k) out.push_back(fmt::to_string(r[k]));
    i = j;
  }
  return out;
}

/// Cut text to `max` columns, the last one `…`.
inline std::string cut(const std::string& s, std::size_t max) {
  if (columns(s) <= max) return s;
  std::string out;
  std::size_t cols = 0;
  for (char c : s) {
    const bool starts = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts && ++cols > max - 1) break;
    out += c;
  }
  return out + "…";
}

/// The label of a box: its devices, partial groups joined by '+', at most `max` columns.
inline std::string box_label(const std::vector<std::vector<rank_t>>& groups, std::size_t max) {
  if (groups.empty()) return "-";
  max = std::max<std::size_t>(max, 4);
  if (groups.size() == 1) {
    const std::vector<std::string> tok = rank_tokens(groups[0]);
    std::string all = fmt::format("{}", fmt::join(tok, ","));
    if (columns(all) <= max) return all;
    for (std::size_t k = tok.size() - 1; k-- > 0;) {  // first k+1 tokens, `…`, the last token
      std::string s = fmt::format("{},…,{}", fmt::join(tok.begin(), tok.begin() + static_cast<std::ptrdiff_t>(k + 1), ","), tok.back());
      if (columns(s) <= max) return s;
    }
    return cut(all, max);
  }
  std::vector<std::string> parts;
  for (const auto& g : groups) {
    std::string s = fmt::format("{}", fmt::join(rank_tokens(g), ","));
    parts.push_back(g.size() > 1 ? "(" + s + ")" : s);
  }
  return cut(fmt::format("{}", fmt::join(parts, "+")), max);
}

/// The fixed palette (matplotlib's tab20, as visualize_array_sharding uses): box b gets
/// colour b mod 20.
struct rgb {
  unsigned r, g, b;
};
inline constexpr rgb palette[] = {
    {0x1f, 0x77, 0xb4}, {0xae, 0xc7, 0xe8}, {0xff, 0x7f, 0x0e}, {0xff, 0xbb, 0x78}, {0x2c, 0xa0, 0x2c},
    {0x98, 0xdf, 0x8a}, {0xd6, 0x27, 0x28}, {0xff, 0x98, 0x96}, {0x94, 0x67, 0xbd}, {0xc5, 0xb0, 0xd5},
    {0x8c, 0x56, 0x4b}, {0xc4, 0x9c, 0x94}, {0xe3, 0x77, 0xc2}, {0xf7, 0xb6, 0xd2}, {0x7f, 0x7f, 0x7f},
    {0xc7, 0xc7, 0xc7}, {0xbc, 0xbd, 0x22}, {0xdb, 0xdb, 0x8d}, {0x17, 0xbe, 0xcf}, {0x9e, 0xda, 0xe5}};
inline constexpr std::size_t palette_size = sizeof(palette) / sizeof(palette[0]);
inline rgb box_color(std::uint64_t b) { return palette[b % palette_size]; }
/// White text on dark colours, black on light ones.
inline bool is_dark(rgb c) { return 299 * c.r + 587 * c.g + 114 * c.b < 150000; }
inline std::string hex(rgb c) { return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b); }

/// One grid of a picture: the boxes of one block of the leading dimensions (lead, flat
/// index) and one band of columns.
struct view {
  std::string title;                          ///< `[0:64, :, :]` for arrays of 3 or more dimensions
  std::uint64_t lead = 0, rows = 1, cols = 1; ///< rows and columns of the whole grid
  std::uint64_t col_begin = 0, col_end = 1;   ///< the band drawn
  [[nodiscard]] std::uint64_t box(std::uint64_t row, std::uint64_t col) const { return (lead * rows + row) * cols + col; }
};

inline std::vector<view> views(const tiling& t, std::uint64_t max_columns) {
  const int R = t.rank();
  const auto uR = static_cast<std::size_t>(R);
  view v;
  v.rows = R >= 2 ? t.blocks[uR - 2] : 1;
  v.cols = R >= 1 ? t.blocks[uR - 1] : 1;
  std::uint64_t nlead = 1;
  for (int d = 0; d + 2 < R; ++d) nlead *= t.blocks[static_cast<std::size_t>(d)];
  const std::uint64_t band = std::max<std::uint64_t>(max_columns, 1);
  std::vector<view> out;
  for (std::uint64_t lead = 0; lead < nlead; ++lead) {
    v.lead = lead;
    if (R >= 3) {
      std::vector<std::string> r(uR, ":");
      std::uint64_t q = lead;
      for (std::size_t d = uR - 2; d-- > 0;) {
        const std::uint64_t i = q % t.blocks[d];
        q /= t.blocks[d];
        r[d] = fmt::format("{}:{}", t.edge(d, i), t.edge(d, i + 1));
      }
      v.title = fmt::format("[{}]", fmt::join(r, ", "));
    }
    for (std::uint64_t c = 0; c < v.cols; c += band) {
      v.col_begin = c;
      v.col_end = std::min(v.cols, c + band);
      out.push_back(v);
      v.title.clear();  // a title heads the first band of its block only
    }
  }
  return out;
}

inline std::vector<std::string> labels(const tiling& t, const draw_options& o) {
  std::vector<std::string> l;
  for (const auto& h : t.holders) l.push_back(box_label(h, o.max_label));
  return l;
}

inline std::string repeat(std::string_view s, std::uint64_t n) {
  std::string out;
  for (std::uint64_t i = 0; i < n; ++i) out += s;
  return out;
}

/// Place tick texts centred on positions, left to right, skipping those that would touch
/// the previous one.
inline std::string tick_line(const std::vector<std::pair<std::size_t, std::string>>& ticks) {
  std::string line;
  for (const auto& [pos, s] : ticks) {
    std::size_t start = pos >= s.size() / 2 ? pos - s.size() / 2 : 0;
    if (!line.empty() && start <= line.size()) continue;
    line.resize(start, ' ');
    line += s;
  }
  return line;
}

}  // namespace detail::pic

/// The picture of a tiling as text: one grid per view, box-drawing characters, each box
/// one line tall and labelled with its devices; the global index where every row and
/// column of boxes starts (and the last one ends) on the borders. Lines end with '\n'.
inline std::string draw_text(const tiling& t, const draw_options& o = {}) {
  using namespace detail::pic;
  const int R = t.rank();
  const auto uR = static_cast<std::size_t>(R);
  const std::vector<std::string> label = labels(t, o);
  std::size_t w = 1;
  for (const auto& l : label) w = std::max(w, columns(l));
  w += 2;  // a space each side
  std::size_t margin = 0;
  if (R >= 2) margin = fmt::formatted_size("{}", t.global[uR - 2]) + 1;
  std::string out;
  for (const view& v : views(t, o.max_columns)) {
    if (!v.title.empty()) out += v.title + "\n";
    const std::uint64_t ncol = v.col_end - v.col_begin;
    if (R >= 1) {
      std::vector<std::pair<std::size_t, std::string>> ticks;
      for (std::uint64_t j = 0; j <= ncol; ++j)
        ticks.emplace_back(margin + j * (w + 1), fmt::to_string(t.edge(uR - 1, v.col_begin + j)));
      out += tick_line(ticks) + "\n";
    }
    auto border = [&](std::uint64_t row, std::string_view l, std::string_view mid, std::string_view r) {
      std::string s = R >= 2 ? fmt::format("{:>{}} ", t.edge(uR - 2, row), margin - 1) : std::string();
      s += l;
      for (std::uint64_t j = 0; j < ncol; ++j) s += repeat("─", w) + std::string(j + 1 < ncol ? mid : r);
      out += s + "\n";
    };
    for (std::uint64_t row = 0; row < v.rows; ++row) {
      if (row == 0) border(row, "┌", "┬", "┐");
      else border(row, "├", "┼", "┤");
      std::string s(margin, ' ');
      s += "│";
      for (std::uint64_t c = v.col_begin; c < v.col_end; ++c) {
        const std::uint64_t b = v.box(row, c);
        const std::string& l = label[b];
        const std::size_t pad = w - columns(l), left = pad / 2;
        std::string cell = std::string(left, ' ') + l + std::string(pad - left, ' ');
        if (o.color) {
          const rgb bg = box_color(b), fg = is_dark(bg) ? rgb{255, 255, 255} : rgb{0, 0, 0};
          cell = fmt::format("\x1b[38;2;{};{};{};48;2;{};{};{}m{}\x1b[0m", fg.r, fg.g, fg.b, bg.r, bg.g, bg.b, cell);
        }
        s += cell + "│";
      }
      out += s + "\n";
    }
    border(v.rows, "└", "┴", "┘");
  }
  return out;
}

namespace detail::pic {

inline std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

// SVG geometry, in user units (pixels at scale 1): 12px monospace, about 7.2px a character.
inline constexpr int char_w = 8, line_h = 18, box_h = 28, tick_h = 16, gap = 14;
inline int text_w(std::string_view s) { return static_cast<int>(columns(s)) * char_w; }

struct extent {
  int w = 0, h = 0;
};

inline std::string svg_text(int x, int y, std::string_view cls, std::string_view s, std::string_view extra = {}) {
  return fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\"{}{}>{}</text>\n", cls, x, y, extra.empty() ? "" : " ", extra,
                     xml_escape(s));
}

/// Append the grids of a tiling at (x, y); returns their size.
inline extent svg_tiling(std::string& out, const tiling& t, int x, int y, const draw_options& o) {
  const int R = t.rank();
  const auto uR = static_cast<std::size_t>(R);
  const std::vector<std::string> label = labels(t, o);
  int bw = 48;
  for (const auto& l : label) bw = std::max(bw, text_w(l) + 16);
  const int margin = R >= 2 ? text_w(fmt::to_string(t.global[uR - 2])) + 8 : 0;
  extent e;
  int cy = y;
  for (const view& v : views(t, o.max_columns)) {
    if (cy != y) cy += gap;
    if (!v.title.empty()) {
      out += svg_text(x, cy + 13, "slice", v.title);
      cy += line_h;
    }
    const auto ncol = static_cast<int>(v.col_end - v.col_begin);
    const int gx = x + margin;
    if (R >= 1) {  // column ticks, centred on the borders, skipping those that would touch
      int right = -1 << 30;
      for (int j = 0; j <= ncol; ++j) {
        const std::string s = fmt::to_string(t.edge(uR - 1, v.col_begin + static_cast<std::uint64_t>(j)));
        const int cx = gx + j * bw, half = text_w(s) / 2;
        if (cx - half <= right + 4) continue;
        out += svg_text(cx, cy + 12, "tick", s, "text-anchor=\"middle\"");
        right = cx + half;
        e.w = std::max(e.w, cx + half - x);
      }
      cy += tick_h;
    }
    for (std::uint64_t row = 0; row < v.rows; ++row) {
      const int ry = cy + static_cast<int>(row) * box_h;
      for (std::uint64_t c = v.col_begin; c < v.col_end; ++c) {
        const std::uint64_t b = v.box(row, c);
        const int rx = gx + static_cast<int>(c - v.col_begin) * bw;
        const rgb col = box_color(b);
        std::string who;
        std::size_t n = 0;
        for (std::size_t g = 0; g < t.holders[b].size(); ++g) {
          who += fmt::format("{}{}", g ? " + " : "", fmt::join(t.holders[b][g], ","));
          n += t.holders[b][g].size();
        }
        out += fmt::format(
            "<rect class=\"tile\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} on {}</title></rect>\n",
            rx, ry, bw, box_h, hex(col), t.box_range(b),
            n == 0 ? std::string("no device") : fmt::format("device{} {}", n == 1 ? "" : "s", xml_escape(who)));
        out += svg_text(rx + bw / 2, ry + box_h / 2 + 4, "label", label[b],
                        fmt::format("text-anchor=\"middle\" fill=\"{}\"", is_dark(col) ? "#ffffff" : "#000000"));
      }
    }
    if (R >= 2)
      for (std::uint64_t row = 0; row <= v.rows; ++row)
        out += svg_text(gx - 4, cy + static_cast<int>(row) * box_h + 4, "tick", fmt::to_string(t.edge(uR - 2, row)),
                        "text-anchor=\"end\"");
    cy += static_cast<int>(v.rows) * box_h;
    e.w = std::max(e.w, margin + ncol * bw);
  }
  e.h = cy - y;
  return e;
}

/// A standalone SVG 1.1 document of the given size around `body`.
inline std::string svg_document(int w, int h, std::string_view title, std::string_view body) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\">\n"
      "<title>{2}</title>\n"
      "<style type=\"text/css\">text {{ font-family: monospace; font-size: 12px; fill: #000000; }} "
      "text.label {{ fill: inherit; }} text.title {{ font-size: 13px; font-weight: bold; }} "
      "rect.tile {{ stroke: #333333; stroke-width: 1; }}</style>\n"
      "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "{3}</svg>\n",
      w, h, xml_escape(title), body);
}

/// The pending-sum axes of a type as its text writes them (`y` for `... sum{y}`, `max{y}`).
inline std::string sum_axes_text(const device_mesh& m, const dist_type& t) {
  const std::string s = type_text(m, t).str();
  const std::string key = " " + std::string(reduction_name(t.reduce)) + "{";
  const std::size_t at = s.rfind(key);
  return at == std::string::npos ? std::string() : s.substr(at + key.size(), s.size() - at - key.size() - 1);
}

/// What a box of partial values is, in words: "sum", "max", "min", "product", "mean".
constexpr std::string_view reduction_word(reduction r) {
  return r == reduction::prod ? "product" : r == reduction::avg ? "mean" : reduction_name(r);
}

}  // namespace detail::pic

/// The header line of show_text and show_svg: mesh, type, global shape, tile, local size.
inline std::string show_header(const device_mesh& m, const dist_type& t, const draw_options& o = {}) {
  std::vector<std::uint64_t> g, tl;
  for (int d = 0; d < t.rank; ++d) {
    g.push_back(t.dims[d].global);
    tl.push_back(tile(m, t.dims[d]));
  }
  return fmt::format("mesh {} | type {} | global [{}] | tile [{}] | local size {} elements",
                     placed_mesh_text(placed_mesh{m, o.devices}),
                     o.type_label.empty() ? type_text(m, t).str() : o.type_label, fmt::join(g, ", "), fmt::join(tl, ", "),
                     local_size(m, t));
}

/// The note under the header for a type with pending sums or uneven dimensions (empty
/// without): which tiles are short, and which devices hold empty tiles.
inline tiling placed_tiling(const device_mesh& m, const dist_type& t, const draw_options& o);

inline std::string show_note(const device_mesh& m, const dist_type& t, const draw_options& o = {}) {
  std::vector<std::string> lines;
  if (t.nsum > 0)
    lines.push_back(fmt::format(
        "partial over {}: a box is the {} of {} partial values; '+' joins the devices of different partials",
        detail::pic::sum_axes_text(m, t), detail::pic::reduction_word(t.reduce), sum_parts(m, t)));
  for (int d = 0; d < t.rank; ++d) {
    if (even(m, t.dims[d])) continue;
    const std::uint64_t n = t.dims[d].global, k = parts(m, t.dims[d]), c = tile(m, t.dims[d]);
    const std::uint64_t full = n / c, rest = n % c, held = full + (rest != 0);
    std::string l = fmt::format("uneven: dimension {} of size {} in {} tiles of {}: ", d, n, k, c);
    if (rest != 0) l += fmt::format("tile {} holds {}", full, rest);
    if (held < k) l += fmt::format("{}{} empty", rest != 0 ? ", " : "", k - held == 1 ? fmt::format("tile {} is", held)
                                                                     : fmt::format("tiles {}-{} are", held, k - 1));
    lines.push_back(l + " (tiles are padded to " + std::to_string(c) + " in local memory)");
  }
  if (!even(m, t)) {
    const tiling g = placed_tiling(m, t, o);
    if (!g.empty.empty())
      lines.push_back(fmt::format("devices holding no elements: {}", fmt::join(detail::pic::rank_tokens(g.empty), ",")));
  }
  return fmt::format("{}", fmt::join(lines, "\n"));
}

/// The header, the note on pending sums if any, and the picture of a type.
/// The tiling of type t with its devices labelled by their world ranks (o.devices).
inline tiling placed_tiling(const device_mesh& m, const dist_type& t, const draw_options& o) {
  tiling x = tiling_of(m, t);
  if (o.devices.empty()) return x;
  for (auto& box : x.holders)
    for (auto& group : box) {
      for (rank_t& r : group) r = o.devices[r];
      std::sort(group.begin(), group.end());
    }
  for (rank_t& r : x.empty) r = o.devices[r];
  std::sort(x.empty.begin(), x.empty.end());
  return x;
}

inline std::string show_text(const device_mesh& m, const dist_type& t, const draw_options& o = {}) {
  std::string out = show_header(m, t, o) + "\n";
  if (const std::string n = show_note(m, t, o); !n.empty()) out += n + "\n";
  return out + draw_text(placed_tiling(m, t, o), o);
}

/// show_text as a standalone SVG 1.1 document: one rect per box, coloured from a fixed
/// palette, labelled with its devices; the index ticks; the header as its title.
inline std::string show_svg(const device_mesh& m, const dist_type& t, const draw_options& o = {}) {
  using namespace detail::pic;
  const std::string header = show_header(m, t, o), note = show_note(m, t, o);
  std::string body = svg_text(gap, gap + 13, "title", header);
  int y = gap + line_h;
  int w = text_w(header);
  for (std::size_t at = 0; at < note.size();) {  // one line of text per line of the note
    const std::size_t end = std::min(note.find('\n', at), note.size());
    const std::string line = note.substr(at, end - at);
    body += svg_text(gap, y + 13, "note", line);
    y += line_h;
    w = std::max(w, text_w(line));
    at = end + 1;
  }
  y += 6;
  const extent e = svg_tiling(body, placed_tiling(m, t, o), gap, y, o);
  return svg_document(std::max(w, e.w) + 2 * gap, y + e.h + gap, header, body);
}

/// A box layout's boxes (redist/box.hpp), every holder with the whole value; a rank with
/// no box holds an empty one.
inline device_boxes device_boxes_of(const box_layout& l) {
  if (l.world() > max_draw_devices)
    throw redist_error(errc::capacity, fmt::format("the world has {} ranks, too many to draw (at most {})", l.world(),
                                                   max_draw_devices));
  device_boxes b;
  b.global = l.shape;
  const auto pad = l.padded();
  const std::size_t R = l.shape.size();
  for (std::size_t d = 0; d < R; ++d) b.tile.push_back(pad[d]);
  b.partials.assign(l.world(), {0});
  for (const std::optional<box>& x : l.boxes)
    for (std::size_t d = 0; d < R; ++d) {
      b.lo.push_back(x && !x->empty() ? x->lo[d] : l.shape[d]);
      b.hi.push_back(x && !x->empty() ? x->hi[d] : l.shape[d]);
    }
  return b;
}

/// The header line of a box layout's picture: world, global shape, padded tile, local size.
inline std::string show_header(const box_layout& l) {
  const auto pad = l.padded();
  return fmt::format("box layout on a world of {} ranks | global [{}] | padded tile [{}] | local size {} elements",
                     l.world(), fmt::join(l.shape, ", "),
                     fmt::join(std::vector<std::uint64_t>(pad.begin(), pad.begin() + static_cast<std::ptrdiff_t>(l.shape.size())), ", "),
                     l.padded_size());
}

/// A box layout drawn: the header, the ranks holding nothing, and the array cut at every
/// box's edges, each piece labelled with the rank holding it (cut_tiling).
inline std::string show_text(const box_layout& l, const draw_options& o = {}) {
  check_box_layout(l);
  const tiling t = tiling_of(device_boxes_of(l));
  std::string out = show_header(l) + "\n";
  if (!t.empty.empty())
    out += fmt::format("ranks holding no elements: {}\n", fmt::join(detail::pic::rank_tokens(t.empty), ","));
  return out + draw_text(t, o);
}

/// show_text of a box layout as a standalone SVG 1.1 document.
inline std::string show_svg(const box_layout& l, const draw_options& o = {}) {
  using namespace detail::pic;
  check_box_layout(l);
  const std::string header = show_header(l);
  std::string body = svg_text(gap, gap + 13, "title", header);
  const int y = gap + line_h + 6;
  const extent e = svg_tiling(body, tiling_of(device_boxes_of(l)), gap, y, o);
  return svg_document(std::max(text_w(header), e.w) + 2 * gap, y + e.h + gap, header, body);
}

/// A program drawn as panels left to right: the source, then the state after every step
/// (which device holds which box, from program_boxes), with the collective between two
/// panels (op, dimensions, groups, bytes per device) and, under each panel, its local size
/// against the program's memory bound (a bar; red above the bound).
inline std::string plan_svg(const program& p, const draw_options& o = {}) {
  using namespace detail::pic;
  const std::vector<device_boxes> states = program_boxes(p);
  const std::uint64_t bound = std::max<std::uint64_t>(p.memory_bound_elements, 1);
  const std::string source_text = p.boxed_source() ? std::string("a box layout")
                                                  : type_text(p.m, p.source).str() + " on " + placed_mesh_text(p.source_placement());
  const std::string target_text =
      p.boxed_target() ? std::string("a box layout")
                       : type_text(p.target_mesh(), p.target).str() + " on " + placed_mesh_text(p.target_placement());
  const std::string title =
      p.placed() ? fmt::format("redist program on a world of {} ranks: {} -> {}, {}-byte elements", p.world_size(),
                               source_text, target_text, p.element_bytes)
                 : fmt::format("redist program on {}: {} -> {}, {}-byte elements", mesh_text(p.m).str(),
                               type_text(p.m, p.source).str(), type_text(p.m, p.target).str(), p.element_bytes);
  const std::string totals = fmt::format("total {} B per device | peak {} | bound {} elements | {}", p.cost_bytes(),
                                         p.peak_local_elements, p.memory_bound_elements,
                                         p.memory_efficient() ? "memory-efficient" : "NOT memory-efficient");
  std::string body = svg_text(gap, gap + 13, "title", title) + svg_text(gap, gap + 13 + line_h, "note", totals);
  const int top = gap + 2 * line_h + 10;
  int x = gap, height = 0;
  constexpr int bar_w = 120, bar_h = 10, arrow_w = 190;
  for (std::size_t i = 0; i < states.size(); ++i) {
    std::vector<std::string> caption;
    if (i == 0) {
      caption = {"source", p.boxed_source() ? std::string("a box layout") : type_text(p.m, p.source).str()};
    } else {
      const step& s = p.steps[i - 1];
      caption = {fmt::format("after step {}: {}", i, op_name(s.kind)),
                 s.type_exact ? type_text(p.mesh_after(i - 1), s.type_after).str() + (s.on_target && p.two_meshes ? " (target mesh)" : "")
                 : s.type_after.rank == 0 && i == p.steps.size() && p.boxed_target() ? std::string("the target box layout")
                                                                                   : std::string("(a type up to a device permutation)")};
      // The collective between the previous panel and this one.
      std::vector<std::string> lines{std::string(op_name(s.kind))};
      auto dims = [](const step_grid& g) {
        std::vector<int> v(g.dim, g.dim + g.n);
        return fmt::format("{}", fmt::join(v, ", "));
      };
      if (s.fused() && s.kind == op::alltoall)
        lines.push_back(fmt::format("dims {} -> dims {}", dims(s.split_grid), dims(s.concat_grid)));
      else if (s.fused()) lines.push_back(fmt::format("gather dims {}", dims(s.concat_grid)));
      else if (s.concat_dim >= 0 && s.split_dim >= 0) lines.push_back(fmt::format("dim {} -> dim {}", s.split_dim, s.concat_dim));
      else if (s.concat_dim >= 0) lines.push_back(fmt::format("gather dim {}", s.concat_dim));
      else if (s.split_dim >= 0) lines.push_back(fmt::format("split dim {} in {}", s.split_dim, s.parts));
      if (s.kind == op::exchange && p.source.rank > 0) {
        std::uint64_t r0 = 0;  // the first rank that holds a box after it
        while (r0 + 1 < p.world_size() && !s.holds_after(r0)) ++r0;
        std::vector<std::uint64_t> ext;
        for (int d = 0; d < p.source.rank; ++d) ext.push_back(s.box_hi(r0, p.source.rank, d) - s.box_lo(r0, p.source.rank, d));
        lines.push_back(fmt::format("to boxes of [{}]", fmt::join(ext, ", ")));
      }
      if (s.kind != op::dynslice && s.kind != op::allpermute && s.kind != op::exchange)
        lines.push_back(fmt::format("{} group{} of {}", s.group_count(), s.group_count() == 1 ? "" : "s", s.parts));
      lines.push_back(fmt::format("{} B per device", s.cost * p.element_bytes));
      const int ay = top + 40;
      body += fmt::format("<g class=\"step\">\n");
      for (std::size_t l = 0; l < lines.size(); ++l)
        body += svg_text(x + arrow_w / 2, ay + static_cast<int>(l) * line_h, l == 0 ? "op" : "opinfo", lines[l],
                         "text-anchor=\"middle\"");
      const int ly = ay + static_cast<int>(lines.size()) * line_h;
      body += fmt::format("<path class=\"arrow\" d=\"M {} {} H {} m -8 -5 l 8 5 l -8 5\" fill=\"none\" stroke=\"#333333\" stroke-width=\"2\"/>\n",
                          x + 10, ly, x + arrow_w - 10);
      body += "</g>\n";
      x += arrow_w;
    }
    const device_boxes& b = states[i];
    const tiling t = tiling_of(b);
    body += fmt::format("<g class=\"panel\">\n");
    int y = top, w = 0;
    for (const std::string& c : caption) {
      body += svg_text(x, y + 13, "caption", c);
      w = std::max(w, text_w(c));
      y += line_h;
    }
    if (t.partial) {
      const std::string n = "partial sums: '+' joins devices of different partials";
      body += svg_text(x, y + 13, "note", n);
      w = std::max(w, text_w(n));
      y += line_h;
    }
    y += 4;
    const extent e = svg_tiling(body, t, x, y, o);
    w = std::max(w, e.w);
    y += e.h + 12;
    const std::uint64_t local = b.local_size();
    const bool over = local > p.memory_bound_elements;
    const int fill = static_cast<int>(static_cast<double>(bar_w) * static_cast<double>(std::min(local, bound)) / static_cast<double>(bound));
    body += fmt::format("<rect class=\"bound\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#ffffff\" stroke=\"#333333\"/>\n",
                        x, y, bar_w, bar_h);
    body += fmt::format("<rect class=\"local\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", x, y, fill, bar_h,
                        over ? "#d62728" : "#2ca02c");
    const std::string mem = fmt::format("local {} / bound {}{}", local, p.memory_bound_elements, over ? " (over)" : "");
    body += svg_text(x + bar_w + 6, y + bar_h, "memory", mem);
    w = std::max(w, bar_w + 6 + text_w(mem));
    y += bar_h + 6;
    body += "</g>\n";
    height = std::max(height, y);
    x += w + gap;
  }
  const int width = std::max(x, text_w(title) + 2 * gap);
  return svg_document(width, height + gap, title, body);
}

}  // namespace redist
