// redist/box.hpp -- boxes of global indices and box layouts (DESIGN.md section 2, "Meshes
// on device sets"; section 4, format 2).
//
// A box is one half-open range [lo, hi) of global indices per dimension. A box layout says
// where an array lives where no type can say it (DTensor's nested uneven chunks, a user's
// custom blocks): one box per world rank, or none (the rank holds nothing). Ranks holding
// equal boxes are replicas of each other (a Shardy or DTensor layout that replicates over
// some axes). A valid layout covers every element of the array: its boxes lie inside the
// array, two boxes are equal or share no element, and no element is left uncovered
// (check_box_layout).
//
// A rank's tile of a box layout is the layout's padded tile: per dimension the longest box
// of any rank, the rank's box at its start, row-major with the padded tile's strides (as a
// short tile of an uneven type, DESIGN.md section 2); a rank with no box holds no tile.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "redist/core/config.hpp"
#include "redist/core/error.hpp"

namespace redist {

/// A box of global indices: [lo[d], hi[d]) along each of `rank` dimensions.
struct box {
  int rank = 0;
  std::array<std::uint64_t, max_dims> lo{}, hi{};

  [[nodiscard]] constexpr std::uint64_t extent(int d) const {
    const auto i = static_cast<std::size_t>(d);
    return hi[i] > lo[i] ? hi[i] - lo[i] : 0;
  }
  /// Number of elements (0 if empty).
  [[nodiscard]] constexpr std::uint64_t size() const {
    std::uint64_t s = 1;
    for (int d = 0; d < rank; ++d) s *= extent(d);
    return s;
  }
  [[nodiscard]] constexpr bool empty() const { return size() == 0; }
  constexpr bool operator==(const box& o) const {
    if (rank != o.rank) return false;
    for (int d = 0; d < rank; ++d) {
      const auto i = static_cast<std::size_t>(d);
      if (lo[i] != o.lo[i] || hi[i] != o.hi[i]) return false;
    }
    return true;
  }
  bool operator<(const box& o) const {
    for (int d = 0; d < rank; ++d) {
      const auto i = static_cast<std::size_t>(d);
      if (lo[i] != o.lo[i]) return lo[i] < o.lo[i];
      if (hi[i] != o.hi[i]) return hi[i] < o.hi[i];
    }
    return false;
  }
};

/// The common part of two boxes (empty if they do not meet).
inline box intersect(const box& a, const box& b) {
  box c;
  c.rank = a.rank;
  for (int d = 0; d < a.rank; ++d) {
    const auto i = static_cast<std::size_t>(d);
    c.lo[i] = std::max(a.lo[i], b.lo[i]);
    c.hi[i] = std::max(c.lo[i], std::min(a.hi[i], b.hi[i]));
  }
  return c;
}

/// "[0, 4) x [8, 16)".
inline std::string box_text(const box& b) {
  std::string s;
  for (int d = 0; d < b.rank; ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (d) s += " x ";
    s += "[" + std::to_string(b.lo[i]) + ", " + std::to_string(b.hi[i]) + ")";
  }
  return s;
}

/// "(4, 1)": an element's global indices.
inline std::string element_text(const std::array<std::uint64_t, max_dims>& at, int rank) {
  std::string s = "(";
  for (int d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(at[static_cast<std::size_t>(d)]);
  return s + ")";
}

/// Where an array of global shape `shape` lives: per world rank its box, or nothing.
struct box_layout {
  std::vector<std::uint64_t> shape;       ///< the global shape
  std::vector<std::optional<box>> boxes;  ///< per world rank: its box, or std::nullopt (holds nothing)

  [[nodiscard]] constexpr int rank() const { return static_cast<int>(shape.size()); }
  [[nodiscard]] std::uint64_t world() const { return boxes.size(); }
  /// Every world rank's box, the empty box for a rank that holds nothing.
  [[nodiscard]] std::vector<box> all_boxes() const {
    box none;
    none.rank = rank();
    std::vector<box> v(boxes.size(), none);
    for (std::size_t r = 0; r < boxes.size(); ++r)
      if (boxes[r]) v[r] = *boxes[r];
    return v;
  }
  /// Per world rank: 1 if it holds a box (possibly empty), 0 for nothing.
  [[nodiscard]] std::vector<std::uint8_t> holders() const {
    std::vector<std::uint8_t> h(boxes.size(), 0);
    for (std::size_t r = 0; r < boxes.size(); ++r) h[r] = boxes[r].has_value();
    return h;
  }
  /// The padded tile: per dimension the longest box (the header comment).
  [[nodiscard]] constexpr std::array<std::uint64_t, max_dims> padded() const {
    std::array<std::uint64_t, max_dims> x{};
    for (const auto& b : boxes)
      if (b)
        for (int d = 0; d < rank(); ++d) x[static_cast<std::size_t>(d)] = std::max(x[static_cast<std::size_t>(d)], b->extent(d));
    return x;
  }
  /// Elements of the padded tile.
  [[nodiscard]] constexpr std::uint64_t padded_size() const {
    const auto x = padded();
    std::uint64_t s = 1;
    for (int d = 0; d < rank(); ++d) s *= x[static_cast<std::size_t>(d)];
    return s;
  }
  bool operator==(const box_layout&) const = default;
};

/// The whole array of shape `shape` as one box.
inline box whole_box(const std::vector<std::uint64_t>& shape) {
  box b;
  b.rank = static_cast<int>(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) b.hi[d] = shape[d];
  return b;
}

/// The problem with layout l in a world of W ranks (0: any), in one line naming the rank(s)
/// and the box or element, or "": one entry per world rank, boxes of the array's rank inside
/// it, two boxes equal (replicas) or sharing no element, every element in some box.
inline std::string box_layout_problem(const box_layout& l, std::uint64_t W = 0) {
  const int R = l.rank();
  if (R < 1 || R > max_dims) return "the array has " + std::to_string(R) + " dimensions (1 to " + std::to_string(max_dims) + ")";
  if (W != 0 && l.world() != W)
    return "the box layout lists " + std::to_string(l.world()) + " entries, the world has " + std::to_string(W) +
           " ranks (one box or null per rank)";
  const box all = whole_box(l.shape);
  bool any = false;
  for (std::size_t r = 0; r < l.boxes.size(); ++r) {
    if (!l.boxes[r]) continue;
    any = true;
    const box& b = *l.boxes[r];
    if (b.rank != R)
      return "rank " + std::to_string(r) + "'s box has " + std::to_string(b.rank) + " dimensions, the array " +
             std::to_string(R);
    for (int d = 0; d < R; ++d) {
      const auto i = static_cast<std::size_t>(d);
      if (b.lo[i] > b.hi[i] || b.hi[i] > all.hi[i])
        return "rank " + std::to_string(r) + "'s box " + box_text(b) + " is not inside the array " + box_text(all);
    }
  }
  if (!any) return "no rank holds a box";
  // The distinct non-empty boxes (replicas count once), each with its smallest holder.
  std::vector<std::pair<box, std::size_t>> distinct;
  std::uint64_t covered = 0;
  for (std::size_t r = 0; r < l.boxes.size(); ++r) {
    if (!l.boxes[r] || l.boxes[r]->empty()) continue;
    const box& b = *l.boxes[r];
    bool replica = false;
    for (const auto& [o, q] : distinct) {
      if (o == b) {
        replica = true;
        break;
      }
      const box c = intersect(o, b);
      if (!c.empty())
        return "ranks " + std::to_string(q) + " and " + std::to_string(r) + " both hold the element " +
               element_text(c.lo, R) + " (boxes " + box_text(o) + " and " + box_text(b) +
               " overlap; replicas hold equal boxes)";
    }
    if (replica) continue;
    distinct.emplace_back(b, r);
    covered += b.size();
  }
  if (covered == all.size()) return {};
  // Disjoint boxes holding fewer elements than the array: the first element (row-major) of
  // the grid of the boxes' range ends that no box holds.
  std::vector<std::vector<std::uint64_t>> cuts(static_cast<std::size_t>(R));
  for (int d = 0; d < R; ++d) {
    auto& c = cuts[static_cast<std::size_t>(d)];
    c = {0, all.hi[static_cast<std::size_t>(d)]};
    for (const auto& b : l.boxes)
      if (b && !b->empty()) {
        c.push_back(b->lo[static_cast<std::size_t>(d)]);
        c.push_back(b->hi[static_cast<std::size_t>(d)]);
      }
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  std::vector<std::size_t> at(static_cast<std::size_t>(R), 0);
  while (true) {
    std::array<std::uint64_t, max_dims> e{};
    for (int d = 0; d < R; ++d) e[static_cast<std::size_t>(d)] = cuts[static_cast<std::size_t>(d)][at[static_cast<std::size_t>(d)]];
    bool held = false;
    for (const auto& b : l.boxes) {
      if (!b) continue;
      bool in = true;
      for (int d = 0; d < R && in; ++d) in = b->lo[static_cast<std::size_t>(d)] <= e[static_cast<std::size_t>(d)] &&
                                             e[static_cast<std::size_t>(d)] < b->hi[static_cast<std::size_t>(d)];
      if ((held = in)) break;
    }
    if (!held) return "no rank holds the element " + element_text(e, R) + " (the boxes leave it uncovered)";
    int d = R - 1;  // the next cell, row-major (every cell's first element)
    for (; d >= 0; --d) {
      const auto k = static_cast<std::size_t>(d);
      if (++at[k] + 1 < cuts[k].size()) break;
      at[k] = 0;
    }
    if (d < 0) return {};  // unreachable: covered < size leaves a cell uncovered
  }
}

/// Throws redist_error(errc::rule) naming the problem of box_layout_problem.
inline void check_box_layout(const box_layout& l, std::uint64_t W = 0) {
  if (std::string e = box_layout_problem(l, W); !e.empty()) throw redist_error(errc::rule, "box layout: " + e);
}

/// "{rank 0: [0, 3) x [0, 5), rank 1: none, ...}".
inline std::string box_layout_text(const box_layout& l) {
  std::string s = "{";
  for (std::size_t r = 0; r < l.boxes.size(); ++r)
    s += (r ? ", rank " : "rank ") + std::to_string(r) + ": " + (l.boxes[r] ? box_text(*l.boxes[r]) : std::string("none"));
  return s + "}";
}

}  // namespace redist
