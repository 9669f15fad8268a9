// tests/support/between_problems.hpp -- seeded random redistributions between
// meshes on device sets (DESIGN.md section 2, "Meshes on device sets"; issue
// 25), as text, and the helpers that fill and check their tiles on every world
// rank.
//
// A problem is a world of W ranks, a source type on one placed mesh and a
// target type on another, in one of the relations of device sets: the same mesh
// on the same ranks in the same order, the same mesh on the same ranks
// permuted, another mesh shape on the same ranks, overlapping ranks, disjoint
// ranks, or any other size and shape (meshes `{}` of one device included).
// Global shapes are even or uneven (JAX's ceil tiles); a source may have
// pending sums, and a target on the very same placed mesh may keep some of
// them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "redist/box.hpp"
#include "redist/core/placement.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/between.hpp"
#include "redist/runtime/darray.hpp"
#include "redist/runtime/verify.hpp"

namespace redist::testing {

enum class relation { same, permuted, reshaped, overlapping, disjoint, other };
inline const char* relation_name(relation r) {
  switch (r) {
    case relation::same:
      return "same";
    case relation::permuted:
      return "permuted";
    case relation::reshaped:
      return "reshaped";
    case relation::overlapping:
      return "overlapping";
    case relation::disjoint:
      return "disjoint";
    case relation::other:
      return "other";
  }
  return "?";
}
inline constexpr int relation_count = 6;

struct between_text {
  std::uint64_t world = 0;
  relation rel = relation::same;
  std::string from_mesh,
      to_mesh;           ///< placed meshes: `{x: 2, y: 2} @ [4, 6, 5, 7]`
  std::string from, to;  ///< types: `[{x}7, 4] sum{y}`
  [[nodiscard]] std::string text() const {
    return "W=" + std::to_string(world) + " (" + relation_name(rel) + ") " + from + " on " + from_mesh + " -> " + to +
           " on " + to_mesh;
  }
};

struct between_workload {
  std::uint64_t max_world = 12;
  std::uint64_t max_elements = 6144;
  bool target_sums = true;  ///< a target on the same placed mesh may keep pending sums
  bool sums_elsewhere = false;  ///< a target on another placed mesh may have pending sums
  std::uint64_t world = 0;  ///< nonzero: every problem in a world of this many ranks
};

namespace detail_between {

using axes_t = std::vector<std::pair<std::string, std::uint64_t>>;

inline std::uint64_t below(std::mt19937& rng, std::uint64_t n) { return n ? rng() % n : 0; }

inline std::uint64_t product(const axes_t& a) {
  std::uint64_t p = 1;
  for (const auto& x : a) p *= x.second;
  return p;
}

/// 0-3 axes of sizes 1-4 (mostly 2-4) with at most `max_devices` devices (0
/// axes: `{}`, one device).
inline axes_t random_axes(std::mt19937& rng, std::uint64_t max_devices, const char* names) {
  for (;;) {
    axes_t a;
    const std::uint64_t n = below(rng, 16) == 0 ? 0 : 1 + below(rng, 3);
    for (std::uint64_t i = 0; i < n; ++i)
      a.push_back({std::string(1, names[i]), below(rng, 8) == 0 ? 1 : 2 + below(rng, 3)});
    if (product(a) <= max_devices) return a;
  }
}

/// 1-3 axes with exactly `devices` devices, other than `not_this` where
/// possible.
inline axes_t axes_of_size(std::mt19937& rng, std::uint64_t devices, const axes_t& not_this, const char* names) {
  for (int tries = 0; tries < 200; ++tries) {
    axes_t a;
    std::uint64_t left = devices;
    const std::uint64_t n = 1 + below(rng, 3);
    for (std::uint64_t i = 0; i + 1 < n; ++i) {
      std::vector<std::uint64_t> divs;
      for (std::uint64_t d = 1; d <= std::min<std::uint64_t>(left, 4); ++d)
        if (left % d == 0) divs.push_back(d);
      const std::uint64_t d = divs[below(rng, divs.size())];
      a.push_back({std::string(1, names[i]), d});
      left /= d;
    }
    if (left > 4) continue;
    a.push_back({std::string(1, names[n - 1]), left});
    std::shuffle(a.begin(), a.end(), rng);
    for (std::size_t i = 0; i < a.size(); ++i) a[i].first = std::string(1, names[i]);
    bool same = a.size() == not_this.size();
    for (std::size_t i = 0; same && i < a.size(); ++i) same = a[i].second == not_this[i].second;
    if (!same || tries > 100) return a;
  }
  return {{std::string(1, names[0]), devices}};
}

inline std::string mesh_text(const axes_t& a, const std::vector<std::uint32_t>& devices) {
  std::string s = "{";
  for (std::size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + a[i].first + ": " + std::to_string(a[i].second);
  s += "} @ [";
  for (std::size_t i = 0; i < devices.size(); ++i) s += (i ? ", " : "") + std::to_string(devices[i]);
  return s + "]";
}

/// Per dimension: the axes (indices) partitioning it, minor-to-major; -1
/// replicates.
struct assignment {
  std::vector<std::vector<int>> dims;
  std::vector<int> sums;
};

inline assignment draw(std::mt19937& rng, const axes_t& a, int rank, bool sums) {
  assignment s;
  s.dims.resize(static_cast<std::size_t>(rank));
  std::vector<int> order(a.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int x : order) {
    if (sums && below(rng, 3) == 0) {
      s.sums.push_back(x);
      continue;
    }
    const int d = static_cast<int>(below(rng, static_cast<std::uint64_t>(rank) + 1)) - 1;
    if (d >= 0) s.dims[static_cast<std::size_t>(d)].push_back(x);
  }
  std::sort(s.sums.begin(), s.sums.end());
  return s;
}

inline std::uint64_t parts(const axes_t& a, const std::vector<int>& axes) {
  std::uint64_t p = 1;
  for (int x : axes) p *= a[static_cast<std::size_t>(x)].second;
  return p;
}

inline std::string type_text(const axes_t& a, const assignment& s, const std::vector<std::uint64_t>& shape) {
  std::string t = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d) t += ", ";
    if (!s.dims[d].empty()) {
      t += '{';
      for (std::size_t i = 0; i < s.dims[d].size(); ++i) {
        if (i) t += ", ";
        t += a[static_cast<std::size_t>(s.dims[d][i])].first;
      }
      t += '}';
    }
    t += std::to_string(shape[d]);
  }
  t += ']';
  if (!s.sums.empty()) {
    t += " sum{";
    for (std::size_t i = 0; i < s.sums.size(); ++i) {
      if (i) t += ", ";
      t += a[static_cast<std::size_t>(s.sums[i])].first;
    }
    t += '}';
  }
  return t;
}

inline std::uint64_t lcm(std::uint64_t a, std::uint64_t b) { return a / std::gcd(a, b) * b; }

}  // namespace detail_between

/// One random problem (text; it may be ill-formed, which the caller skips).
inline between_text random_between(std::mt19937& rng, const between_workload& w) {
  using namespace detail_between;
  between_text p;
  p.rel = static_cast<relation>(below(rng, relation_count));
  // Worlds of 1 to max_world ranks, most of them 4 to 8.
  p.world =
      below(rng, 3) == 0 ? 1 + below(rng, w.max_world) : 4 + below(rng, std::min<std::uint64_t>(5, w.max_world - 3));
  if (w.world) p.world = w.world;
  const std::uint64_t W = p.world;
  std::vector<std::uint32_t> world(W);
  std::iota(world.begin(), world.end(), 0u);
  std::shuffle(world.begin(), world.end(), rng);

  axes_t am = random_axes(rng, W, "xyz");
  const std::uint64_t Da = product(am);
  std::vector<std::uint32_t> da(world.begin(), world.begin() + static_cast<std::ptrdiff_t>(Da));
  std::vector<std::uint32_t> rest(world.begin() + static_cast<std::ptrdiff_t>(Da), world.end());
  if (p.rel == relation::disjoint && rest.empty()) p.rel = relation::other;
  if (p.rel == relation::overlapping && (Da < 2 && rest.empty())) p.rel = relation::other;

  axes_t bm;
  std::vector<std::uint32_t> db;
  switch (p.rel) {
    case relation::same:
      bm = am;
      db = da;
      break;
    case relation::permuted:
      bm = am;
      db = da;
      std::shuffle(db.begin(), db.end(), rng);
      break;
    case relation::reshaped:
      bm = axes_of_size(rng, Da, am, "abc");
      db = da;
      if (below(rng, 2)) std::shuffle(db.begin(), db.end(), rng);
      break;
    case relation::overlapping: {
      // Some of the source's ranks (not all of them, unless no rank is left
      // outside), some others.
      for (;;) {
        bm = random_axes(rng, W, "abc");
        const std::uint64_t Db = product(bm);
        const std::uint64_t lo = Db > rest.size() ? Db - rest.size() : 1;
        const std::uint64_t hi = std::min<std::uint64_t>(Db, Da);
        if (lo > hi) continue;
        std::uint64_t shared = lo + below(rng, hi - lo + 1);
        if (shared == Da && Db == Da && !rest.empty() && shared > 1) --shared;
        if (Db - shared > rest.size()) continue;
        std::vector<std::uint32_t> s = da, o = rest;
        std::shuffle(s.begin(), s.end(), rng);
        std::shuffle(o.begin(), o.end(), rng);
        db.assign(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(shared));
        db.insert(db.end(), o.begin(), o.begin() + static_cast<std::ptrdiff_t>(Db - shared));
        std::shuffle(db.begin(), db.end(), rng);
        break;
      }
      break;
    }
    case relation::disjoint: {
      bm = random_axes(rng, rest.size(), "abc");
      db = rest;
      std::shuffle(db.begin(), db.end(), rng);
      db.resize(product(bm));
      break;
    }
    case relation::other: {
      bm = random_axes(rng, W, "abc");
      db = world;
      std::shuffle(db.begin(), db.end(), rng);
      db.resize(product(bm));
      break;
    }
  }
  const bool same_placed = p.rel == relation::same;

  const int rank = 1 + static_cast<int>(below(rng, 3));
  const bool source_sums = below(rng, 2) == 0;
  assignment sa = draw(rng, am, rank, source_sums);
  assignment sb = draw(rng, bm, rank, w.sums_elsewhere && !same_placed);
  if (same_placed && w.target_sums && !sa.sums.empty() && below(rng, 3) != 0) {
    // The target keeps some of the source's pending axes that it does not
    // partition.
    std::vector<int> free;
    for (int x : sa.sums) {
      bool used = false;
      for (const auto& d : sb.dims) used = used || std::find(d.begin(), d.end(), x) != d.end();
      if (!used) free.push_back(x);
    }
    for (int x : free)
      if (below(rng, 2) == 0) sb.sums.push_back(x);
    if (sb.sums.empty() && !free.empty()) sb.sums.push_back(free[below(rng, free.size())]);
  }
  // Even dimensions: a multiple of both partitions; uneven: any size 1-30.
  std::vector<std::uint64_t> shape(static_cast<std::size_t>(rank));
  for (;;) {
    std::uint64_t total = 1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (below(rng, 2) == 0) {
        shape[d] = lcm(parts(am, sa.dims[d]), parts(bm, sb.dims[d])) * (1 + below(rng, 6));
      } else {
        shape[d] = 1 + below(rng, 30);
      }
      total *= shape[d];
    }
    if (total <= w.max_elements) break;
  }
  p.from_mesh = mesh_text(am, da);
  p.to_mesh = mesh_text(bm, db);
  p.from = type_text(am, sa, shape);
  p.to = type_text(bm, sb, shape);
  return p;
}

/// A parsed problem.
struct between_problem {
  between_text text;
  placed_layout a, b;
  std::uint64_t world = 0;
};

/// The problem parsed, or false where it is ill-formed (a type that does not
/// check).
inline bool parse_between(const between_text& t, between_problem& out) {
  try {
    out.text = t;
    out.world = t.world;
    out.a.pm = parse_placed_mesh(t.from_mesh);
    out.b.pm = parse_placed_mesh(t.to_mesh);
    const result<dist_type> a = parse_type_text(out.a.pm.mesh, t.from);
    const result<dist_type> b = parse_type_text(out.b.pm.mesh, t.to);
    if (!a.err.ok() || !b.err.ok()) return false;
    out.a.type = a.value;
    out.b.type = b.value;
    if (check(out.a.pm.mesh, out.a.type) || check(out.b.pm.mesh, out.b.type)) return false;
    if (check_same_global(out.a.type, out.b.type)) return false;
    return true;
  } catch (const redist_error&) {
    return false;
  }
}

/// The value global index g holds.
template <class T>
T expected_value(std::uint64_t g) {
  return static_cast<T>(g % 1000003 * 3 + 1);
}

/// Rank r's source tile of layout a (none() off its mesh): the value at every
/// global index on the sum group's root (sum-axis coordinates all 0), zero on
/// the other members, so that the partials add up to the value.
template <class T>
darray<T> source_tile(const placed_layout& a, std::uint64_t W, std::uint64_t r) {
  const std::vector<std::int64_t> pos = a.pm.positions(W);
  if (pos[r] < 0) return darray<T>::none(a.pm.mesh, a.type);
  const auto device = static_cast<rank_t>(pos[r]);
  darray<T> t(a.pm.mesh, a.type, device);
  const bool root = sum_root(a.pm.mesh, a.type, device) == device;
  for (T& x : t.span()) x = T{};
  for_each_global(t, [&](std::uint64_t g, T& x) { x = root ? expected_value<T>(g) : T{}; });
  return t;
}

/// Per world rank: its position in the program's target mesh, or -1.
inline std::vector<std::int64_t> target_positions(const program& p) {
  const std::vector<rank_t>& d = p.two_meshes ? p.target_devices : p.source_devices;
  std::vector<std::int64_t> pos(p.world_size(), -1);
  for (std::uint64_t q = 0; q < p.target_mesh().devices; ++q) {
    const std::uint64_t r = d.empty() ? q : d[q];
    if (r < pos.size()) pos[r] = static_cast<std::int64_t>(q);
  }
  return pos;
}

/// Check rank r's output tile `t` of program p (target type without pending
/// sums): the empty tile off the target mesh, else exactly its box with the
/// expected values. "" if right, else what is wrong.
template <class T>
std::string check_target_tile(const program& p, std::uint64_t r, std::int64_t pos, const darray<T>& t) {
  const std::string who = "rank " + std::to_string(r) + ": ";
  if (pos < 0) {
    if (t.holds() || t.size() != 0) return who + "holds a tile but is not on the target mesh";
    return {};
  }
  if (!t.holds() || t.device() != static_cast<rank_t>(pos)) return who + "holds the tile of another position";
  if (!(t.type() == p.target) || !(t.mesh() == p.target_mesh())) return who + "output of another type or mesh";
  std::uint64_t n = 0, bad = 0, first_bad = 0;
  for_each_global(t, [&](std::uint64_t g, const T& x) {
    ++n;
    if (!(x == expected_value<T>(g))) {
      if (bad++ == 0) first_bad = g;
    }
  });
  const std::uint64_t want = tile_box(p.target_mesh(), p.target, static_cast<std::uint64_t>(pos)).size();
  if (n != want) return who + "visited " + std::to_string(n) + " elements, its box has " + std::to_string(want);
  if (bad)
    return who + std::to_string(bad) + " wrong elements of " + std::to_string(n) + ", first at global index " +
           std::to_string(first_bad);
  return {};
}

/// A box layout (redist/box.hpp) of an array of `shape` drawn by `below(n)` (a value in
/// [0, n)) and `shuffle(ranks)`: a guillotine partition into 1..W blocks (a drawn block cut
/// along a drawn dimension at a drawn place, again and again, at most `tries` times), on a
/// drawn subset of the W ranks; each other rank holds a replica of a drawn block (one in
/// three) or nothing. The random problems draw from an mt19937, the between fuzzer from its
/// input bytes.
template <class Below, class Shuffle>
box_layout guillotine_box_layout(const std::vector<std::uint64_t>& shape, std::uint64_t W, int tries, Below&& below,
                                 Shuffle&& shuffle) {
  std::vector<box> pieces{whole_box(shape)};
  const std::uint64_t want = 1 + below(W);
  for (int k = 0; pieces.size() < want && k < tries; ++k) {
    box& b = pieces[below(pieces.size())];
    const int d = static_cast<int>(below(shape.size()));
    if (b.extent(d) < 2) continue;
    const auto i = static_cast<std::size_t>(d);
    const std::uint64_t cut = b.lo[i] + 1 + below(b.extent(d) - 1);
    box c = b;
    b.hi[i] = cut;
    c.lo[i] = cut;
    pieces.push_back(c);
  }
  std::vector<std::uint64_t> ranks(W);
  std::iota(ranks.begin(), ranks.end(), 0);
  shuffle(ranks);
  box_layout l;
  l.shape = shape;
  l.boxes.assign(W, std::nullopt);
  for (std::size_t k = 0; k < pieces.size(); ++k) l.boxes[ranks[k]] = pieces[k];
  for (std::size_t k = pieces.size(); k < W; ++k)
    if (below(3) == 0) l.boxes[ranks[k]] = pieces[below(pieces.size())];
  return l;
}

/// A random box layout (guillotine_box_layout) from `rng`.
inline box_layout random_box_layout(std::mt19937& rng, const std::vector<std::uint64_t>& shape, std::uint64_t W) {
  return guillotine_box_layout(
      shape, W, 100, [&](std::uint64_t n) { return rng() % n; },
      [&](std::vector<std::uint64_t>& v) { std::shuffle(v.begin(), v.end(), rng); });
}

/// Rank r's tile of box layout l (darray::of_layout), the expected value at every element.
template <class T>
darray<T> layout_tile(const box_layout& l, std::uint64_t r) {
  darray<T> x = darray<T>::of_layout(l, static_cast<rank_t>(r));
  for_each_global(x, [&](std::uint64_t g, T& v) { v = expected_value<T>(g); });
  return x;
}

/// Check rank r's output tile `t` of box layout l: no tile for a rank without a box, else
/// exactly its box with the expected values. "" if right, else what is wrong.
template <class T>
std::string check_layout_tile(const box_layout& l, std::uint64_t r, const darray<T>& t) {
  const std::string who = "rank " + std::to_string(r) + ": ";
  const std::optional<box>& want = l.boxes[r];
  if (!want) {
    if (t.holds() || t.size() != 0) return who + "holds a tile but has no box";
    return {};
  }
  if (!t.of_box_layout() || !(t.held_box() == *want)) return who + "holds another box";
  std::uint64_t n = 0, bad = 0;
  for_each_global(t, [&](std::uint64_t g, const T& v) {
    ++n;
    bad += !(v == expected_value<T>(g));
  });
  if (n != want->size()) return who + "visited " + std::to_string(n) + " elements, its box has " + std::to_string(want->size());
  if (bad) return who + std::to_string(bad) + " wrong elements of " + std::to_string(n);
  return {};
}

}  // namespace redist::testing
