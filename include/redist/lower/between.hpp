// redist/lower/between.hpp -- redistribution between meshes on device sets (DESIGN.md
// section 2, "Meshes on device sets"; issue 25): a source type on one placed mesh, a target
// type on another (or the same mesh on other ranks), in a world of W ranks.
//
// The candidates, each a format-2 program (program.hpp), chosen by predicted time
// (core/time_model.hpp, lower/synthesize.hpp predicted_seconds):
//   exchange    one exchange from the source's boxes to the target's, on world ranks: every
//               target rank receives exactly what it does not hold (the data-movement lower
//               bound). Always possible (pending sums are reduced on the source mesh first;
//               a target's pending axes are made pending on its mesh after the move, where
//               no collective keeps them as they are).
//   collective  where both meshes run on the same ranks and every sub-axis the target uses
//               moves the ranks as a sub-axis of the source mesh does (retype): the target
//               written as a type on the source mesh, and the same-mesh plan of
//               lower/synthesize.hpp, its ranks renamed to world ranks (place_program).
//   permuted    where both meshes have the same axis sizes on the same ranks in another
//               order: the same-mesh plan to the target type on the source mesh, then one
//               allpermute to the target mesh's ranks (merged with a last allpermute).
//   scattered exchange  where the source has pending sums: the sums reduce-scattered on the
//               source mesh along the dimension predicted fastest (the pending sub-axes
//               minor-most there), where `exchange` all-reduces them, then one exchange: the
//               same bytes into the target, half as many out of each source rank, a smaller
//               tile held.
//   two-phase   where the target replicates and the source ranks are not the target's: an
//               exchange to the target partitioned also over its replicating sub-axes
//               (each byte crosses to the target ranks once), then the target mesh's own
//               plan back to the target (all-gathers inside the target ranks), Alpa's
//               cross-mesh broadcast; `scattered two-phase` the same from the scattered
//               exchange's share of the sums.
// A box layout (redist/box.hpp; DESIGN.md section 2) at either end, or both, is planned by the
// exchange alone (plan_between on array_layout): one exchange from the source's boxes to the
// target's, moving exactly what every rank does not hold. A typed end with pending sums is
// refused there (an exchange does not add them: reduce them first).
// With `relabel`, the target mesh's positions may be put on its ranks in another order
// (COSTA's relabelling): the order that keeps the most data where it is (an assignment of
// positions to ranks maximizing the elements each rank already holds), taken when its
// predicted time is lower; the program's target_devices report the order chosen.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/placement.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/program.hpp"

namespace redist {

/// A type on a placed mesh: where an array lives (DESIGN.md section 2).
struct placed_layout {
  placed_mesh pm;
  dist_type type;
  bool operator==(const placed_layout&) const = default;
};

namespace detail {

/// The world ranks of a placed mesh, as a set (W flags).
inline std::vector<std::uint8_t> rank_set(const placed_mesh& pm, std::uint64_t W) {
  return placed_holders(pm.mesh.devices, pm.devices, W);
}

}  // namespace detail

/// Program p (planned on its mesh, ranks 0..D-1) with every rank renamed to the world rank
/// of that mesh position: groups, dynslice indices and allpermute destinations over W ranks
/// (ranks outside the mesh: index 0, fixed points), exchanges listing the mesh's ranks as
/// the ones that hold tiles. The target stays on the same placed mesh.
inline program place_program(program p, const std::vector<rank_t>& devices, std::uint64_t W) {
  const std::uint64_t D = p.m.devices;
  auto at = [&](std::uint64_t r) -> rank_t { return devices.empty() ? static_cast<rank_t>(r) : devices[r]; };
  const int R = p.source.rank;
  const std::vector<std::uint8_t> holds = placed_holders(D, devices, W);
  for (step& s : p.steps) {
    for (rank_t& r : s.members) r = at(r);
    if (!s.index.empty()) {
      std::vector<rank_t> v(W, 0);
      for (std::uint64_t r = 0; r < D; ++r) v[at(r)] = s.index[r];
      s.index = std::move(v);
    }
    if (!s.dest.empty()) {
      std::vector<rank_t> v(W);
      for (std::uint64_t r = 0; r < W; ++r) v[r] = static_cast<rank_t>(r);
      for (std::uint64_t r = 0; r < D; ++r) v[at(r)] = at(s.dest[r]);
      s.dest = std::move(v);
    }
    if (s.kind == op::exchange) {
      std::vector<std::uint64_t> b(W * static_cast<std::uint64_t>(R) * 2, 0);
      for (std::uint64_t r = 0; r < D; ++r)
        std::copy_n(s.boxes.begin() + static_cast<std::ptrdiff_t>(r * R * 2), 2 * R,
                    b.begin() + static_cast<std::ptrdiff_t>(at(r) * std::uint64_t(R) * 2));
      s.boxes = std::move(b);
      s.holds = holds;
    }
  }
  p.world = W;
  p.source_devices = devices;
  return p;
}

/// Type t on placed mesh `from` written as a type on placed mesh `onto`, when both meshes run
/// on the same ranks and every sub-axis t uses has a sub-axis of `onto` of its size whose
/// coordinate is the same on every rank: then every rank holds the same box under both.
/// Nothing otherwise.
inline std::optional<dist_type> retype(const placed_mesh& from, const dist_type& t, const placed_mesh& onto,
                                       std::uint64_t W) {
  if (from.mesh.devices != onto.mesh.devices || detail::rank_set(from, W) != detail::rank_set(onto, W))
    return std::nullopt;
  const std::vector<std::int64_t> pos_onto = onto.positions(W);
  const device_mesh& fm = from.mesh;
  const device_mesh& om = onto.mesh;
  int map[max_subaxes];
  std::uint64_t taken = 0;
  const std::uint64_t used = used_mask(t);
  for (int k = 0; k < fm.nsub; ++k) {
    map[k] = -1;
    if (!(used >> k & 1u)) continue;
    for (int j = 0; j < om.nsub && map[k] < 0; ++j) {
      if (om.sub[j].size != fm.sub[k].size || (taken >> j & 1u)) continue;
      bool same = true;
      for (std::uint64_t p = 0; p < fm.devices && same; ++p) {
        const auto q = static_cast<std::uint64_t>(pos_onto[from.at(p)]);
        same = fm.coord(k, p) == om.coord(j, q);
      }
      if (same) {
        map[k] = j;
        taken |= std::uint64_t{1} << j;
      }
    }
    if (map[k] < 0) return std::nullopt;
  }
  dist_type u = t;
  for (int d = 0; d < u.rank; ++d)
    for (int i = 0; i < u.dims[d].n; ++i) u.dims[d].axes[i] = static_cast<std::uint8_t>(map[t.dims[d].axes[i]]);
  for (int i = 0; i < u.nsum; ++i) u.sum[i] = static_cast<std::uint8_t>(map[t.sum[i]]);
  std::sort(u.sum, u.sum + u.nsum);
  if (check(om, u)) return std::nullopt;
  return u;
}

/// The target with its replicating sub-axes partitioning dimensions too: each unused
/// sub-axis of the mesh becomes the most-major axis of the dimension with the largest tile
/// it divides. Every device then holds 1/R of the target's tile (R: the sub-axes added),
/// and the target is that type all-gathered over them. Nothing when no sub-axis fits.
/// Sub-axes in `minor` (a mask: the pending axes of the target whose pending sums were
/// taken off, `t`) become the minor-most axes instead, where a padded partial step
/// (lower/partial.hpp) makes them pending again without moving anything.
inline std::optional<dist_type> spread_replicas(const device_mesh& m, const dist_type& t, std::uint64_t minor = 0) {
  const std::uint64_t used = used_mask(t);
  dist_type u = t;
  bool any = false;
  for (int k = 0; k < m.nsub; ++k) {
    if (used >> k & 1u) continue;
    int best = -1;
    std::uint64_t best_tile = 0;
    for (int d = 0; d < u.rank; ++d) {
      const std::uint64_t tl = tile(m, u.dims[d]);
      if (!even(m, u.dims[d]) || tl % m.sub[k].size != 0 || u.dims[d].n >= max_subaxes) continue;
      if (tl > best_tile) {
        best = d;
        best_tile = tl;
      }
    }
    if (best < 0) continue;
    dim& d = u.dims[best];
    if (minor >> k & 1u) {
      std::copy_backward(d.axes, d.axes + d.n, d.axes + d.n + 1);
      d.axes[0] = static_cast<std::uint8_t>(k);
      ++d.n;
    } else {
      d.axes[d.n++] = static_cast<std::uint8_t>(k);
    }
    any = true;
  }
  if (!any || check(m, u)) return std::nullopt;
  return u;
}

namespace detail {
/// exchange_between, with the sizes of its exchange (plan_detail::sizes) in `x`, for pricing
/// it without planning it again (lower/synthesize.hpp predicted_seconds).
inline program exchange_between(const placed_layout& a, const placed_layout& b, std::uint64_t W,
                                std::uint64_t element_bytes, exchange_plan& x) {
  for (const placed_layout* l : {&a, &b})
    if (l->type.nsum > 0)
      throw redist_error(errc::rule, "an exchange does not add partial sums, and the type " +
                                         std::string(type_text(l->pm.mesh, l->type).view()) + " has pending sums");
  program p;
  p.m = a.pm.mesh;
  p.source = a.type;
  p.target = b.type;
  p.element_bytes = element_bytes;
  p.world = W;
  p.source_devices = a.pm.devices;
  p.two_meshes = !(a.pm == b.pm);
  if (p.two_meshes) {
    p.target_m = b.pm.mesh;
    p.target_devices = b.pm.devices;
  }
  const std::uint64_t in = local_size(a.pm.mesh, a.type), out = local_size(b.pm.mesh, b.type);
  p.peak_local_elements = std::max(in, out);
  p.memory_bound_elements = p.peak_local_elements;
  const std::vector<box> before = source_boxes(p), after = target_boxes(p);
  if (before == after && !p.two_meshes) return p;
  x = plan_exchange(before, after, plan_detail::sizes);
  if (!x.error.empty()) throw redist_error(x.too_large ? errc::capacity : errc::runtime, "exchange: " + x.error);
  step s;
  s.kind = op::exchange;
  s.boxes = flatten_boxes(after);
  s.holds = placed_holders(b.pm.mesh.devices, b.pm.devices, W);  // the others' boxes are empty: [0, 0)
  s.after = shape_of(b.pm.mesh, b.type);
  s.local_after = out;
  s.cost = x.max_received;
  s.type_after = b.type;
  s.type_exact = true;
  s.on_target = p.two_meshes;
  p.cost_elements = s.cost;
  p.steps.push_back(std::move(s));
  return p;
}
}  // namespace detail

/// The exchange from layout a to layout b in a world of W ranks (format 2; a program with no
/// steps when every rank already holds its box). Throws for pending sums (an exchange does
/// not add them) and exchanges beyond max_exchange_cells.
inline program exchange_between(const placed_layout& a, const placed_layout& b, std::uint64_t W,
                                std::uint64_t element_bytes) {
  exchange_plan x;
  return detail::exchange_between(a, b, W, element_bytes, x);
}

namespace detail {

/// Program `head` followed by `tail` (tail's steps on the target mesh of the result).
inline program concat_programs(program head, const program& tail) {
  head.target = tail.target;
  head.two_meshes = head.two_meshes || tail.two_meshes || !(tail.m == head.m) || tail.source_devices != head.source_devices;
  if (head.two_meshes) {
    head.target_m = tail.target_mesh();
    head.target_devices = tail.two_meshes ? tail.target_devices : tail.source_devices;
  }
  for (step s : tail.steps) {
    s.on_target = s.on_target || head.two_meshes;
    head.steps.push_back(std::move(s));
  }
  head.cost_elements += tail.cost_elements;
  head.peak_local_elements = std::max(head.peak_local_elements, tail.peak_local_elements);
  head.memory_bound_elements = std::max(head.memory_bound_elements, tail.memory_bound_elements);
  return head;
}

/// The same-mesh program of least predicted time from a to b on placed mesh pm (choose_plan),
/// placed on its ranks.
inline program placed_plan(const placed_mesh& pm, const dist_type& a, const dist_type& b, std::uint64_t W,
                           const synth_options& opt) {
  plan_choice c = choose_plan(pm.mesh, a, b, opt);
  return place_program(std::move(c.candidates[c.chosen].prog), pm.devices, W);
}

}  // namespace detail

/// Where an array lives: a type on a placed mesh, or a box layout (redist/box.hpp).
using array_layout = std::variant<placed_layout, box_layout>;

namespace detail {

/// The type that says only the global shape (every dimension whole), carried by a program
/// whose source or target is a box layout (program.hpp).
inline dist_type shape_type(std::span<const std::uint64_t> shape) {
  dist_type t;
  t.rank = static_cast<int>(shape.size());
  for (int d = 0; d < t.rank; ++d) t.dims[d].global = shape[static_cast<std::size_t>(d)];
  return t;
}
inline std::vector<std::uint64_t> shape_of_type(const dist_type& t) {
  std::vector<std::uint64_t> v;
  for (int d = 0; d < t.rank; ++d) v.push_back(t.dims[d].global);
  return v;
}

}  // namespace detail

/// The type of a typed layout; nullptr for a box layout (which holds values, no pending ones).
inline const dist_type* layout_type(const array_layout& l) {
  const auto* t = std::get_if<placed_layout>(&l);
  return t ? &t->type : nullptr;
}

/// The global shape of layout l.
inline std::vector<std::uint64_t> layout_shape(const array_layout& l) {
  const dist_type* t = layout_type(l);
  return t ? detail::shape_of_type(*t) : std::get<box_layout>(l).shape;
}

/// The smallest world that holds layout l: its mesh's largest rank plus one, or a box
/// layout's number of entries.
inline std::uint64_t layout_world(const array_layout& l) {
  const auto* t = std::get_if<placed_layout>(&l);
  return t ? t->pm.min_world() : std::get<box_layout>(l).world();
}

/// Every world rank's box of layout l in a world of W ranks (empty off the mesh). A box
/// layout lists exactly W entries (box_layout_problem(l, W)).
inline std::vector<box> layout_boxes(const array_layout& l, std::uint64_t W) {
  if (const auto* t = std::get_if<placed_layout>(&l)) return placed_boxes(t->pm.mesh, t->type, t->pm.devices, W);
  return std::get<box_layout>(l).all_boxes();
}

/// Every world rank's tile elements of layout l in a world of W ranks: the type's local
/// size, or the box layout's padded tile, on the ranks that hold one; 0 elsewhere.
inline std::vector<std::uint64_t> layout_tile_elements(const array_layout& l, std::uint64_t W) {
  std::vector<std::uint64_t> n(W, 0);
  if (const auto* t = std::get_if<placed_layout>(&l)) {
    const std::uint64_t e = local_size(t->pm.mesh, t->type);
    for (std::uint64_t p = 0; p < t->pm.mesh.devices; ++p)
      if (t->pm.at(p) < W) n[t->pm.at(p)] = e;
    return n;
  }
  const box_layout& b = std::get<box_layout>(l);
  const std::uint64_t e = b.padded_size();
  for (std::uint64_t r = 0; r < W && r < b.world(); ++r) n[r] = b.boxes[r] ? e : 0;
  return n;
}

/// The exchange from layout a to layout b in a world of W ranks, either a box layout
/// (format 2, program.hpp): one exchange step, also where every rank already holds its box
/// (a box-layout end runs exchanges only). Throws redist_error for an invalid layout, other
/// global shapes, a placement outside the world, pending sums, and exchanges beyond
/// max_exchange_cells.
inline program exchange_between(const array_layout& a, const array_layout& b, std::uint64_t W,
                                std::uint64_t element_bytes) {
  const auto* ta = std::get_if<placed_layout>(&a);
  const auto* tb = std::get_if<placed_layout>(&b);
  if (ta && tb) return exchange_between(*ta, *tb, W, element_bytes);
  if (element_bytes == 0) throw redist_error(errc::bad_size, "element size must be at least 1 byte");
  const std::vector<std::uint64_t> shape =
      ta ? detail::shape_of_type(ta->type) : std::get<box_layout>(a).shape;
  for (const auto& [l, key] : {std::pair{&a, "source"}, std::pair{&b, "target"}}) {
    if (const auto* t = std::get_if<placed_layout>(l)) {
      if (error e = check(t->pm.mesh, t->type)) throw redist_error(e);
      if (error e = check_placement(t->pm, W))
        throw redist_error(e.code, std::string("the ") + key + " mesh " + placed_mesh_text(t->pm) + ": " + e.message.str());
      if (t->type.nsum > 0)
        throw redist_error(errc::rule, std::string("a box layout is planned by one exchange, which does not add partial "
                                                   "sums, and the ") + key + " type " +
                                           std::string(type_text(t->pm.mesh, t->type).view()) +
                                           " has pending sums (reduce them first)");
      if (detail::shape_of_type(t->type) != shape)
        throw redist_error(errc::global_mismatch, std::string("the ") + key + " type " +
                                                      std::string(type_text(t->pm.mesh, t->type).view()) +
                                                      " has another global shape than the source");
    } else {
      const box_layout& bl = std::get<box_layout>(*l);
      if (std::string e = box_layout_problem(bl, W); !e.empty())
        throw redist_error(errc::rule, std::string("the ") + key + " box layout: " + e);
      if (bl.shape != shape)
        throw redist_error(errc::global_mismatch,
                           std::string("the ") + key + " box layout has another global shape than the source");
    }
  }
  program p;
  p.element_bytes = element_bytes;
  p.world = W;
  // The meshes: a typed end's own; a box-layout end's carrier the other end's mesh, or one
  // device on rank 0 where both are box layouts.
  placed_mesh carrier;
  if (error e = mesh_add_axis(carrier.mesh, "w", 1)) throw redist_error(e);
  const placed_mesh& ma = ta ? ta->pm : tb ? tb->pm : carrier;
  p.m = ma.mesh;
  p.source_devices = ma.devices;
  p.source = ta ? ta->type : detail::shape_type(shape);
  if (!ta) p.source_layout = std::get<box_layout>(a);
  if (tb) {
    p.target = tb->type;
    p.two_meshes = !(ma == tb->pm);
    if (p.two_meshes) {
      p.target_m = tb->pm.mesh;
      p.target_devices = tb->pm.devices;
    }
  } else {
    p.target = detail::shape_type(shape);
    p.target_layout = std::get<box_layout>(b);
  }
  const std::uint64_t in = ta ? local_size(ta->pm.mesh, ta->type) : p.source_layout.padded_size();
  const std::uint64_t out = tb ? local_size(tb->pm.mesh, tb->type) : p.target_layout.padded_size();
  p.peak_local_elements = std::max(in, out);
  p.memory_bound_elements = p.peak_local_elements;
  const std::vector<box> before = source_boxes(p), after = target_boxes(p);
  const exchange_plan x = plan_exchange(before, after, plan_detail::sizes);
  if (!x.error.empty()) throw redist_error(x.too_large ? errc::capacity : errc::runtime, "exchange: " + x.error);
  step s;
  s.kind = op::exchange;
  s.boxes = flatten_boxes(after);
  s.holds = target_holders(p);  // the others' boxes are empty: [0, 0)
  if (tb) {
    s.after = shape_of(tb->pm.mesh, tb->type);
    s.type_after = tb->type;
    s.type_exact = true;
    s.on_target = p.two_meshes;
  }
  s.local_after = out;
  s.cost = x.max_received;
  p.cost_elements = s.cost;
  p.steps.push_back(std::move(s));
  for (std::vector<rank_t>* d : {&p.source_devices, &p.target_devices})  // 0..D-1: no list
    if (placed_mesh{{}, *d}.identity()) d->clear();
  return p;
}

/// The candidates for redistributing layout a to layout b in a world of W ranks (the header
/// comment), each with its predicted time; the chosen one has the least (ties: the first).
/// Throws redist_error for ill-formed types, other global shapes, placements that do not fit
/// the world, and where no candidate exists (the reasons named).
inline plan_choice choose_between(const placed_layout& a, const placed_layout& b, std::uint64_t W,
                                  const synth_options& opt = {}) {
  const time_profile& P = opt.time_model ? *opt.time_model : builtin_profile;
  if (opt.element_bytes == 0) throw redist_error(errc::bad_size, "element size must be at least 1 byte");
  if (error e = check(a.pm.mesh, a.type)) throw redist_error(e);
  if (error e = check(b.pm.mesh, b.type)) throw redist_error(e);
  if (error e = check_same_global(a.type, b.type)) throw redist_error(e);
  if (error e = check_placement(a.pm, W))
    throw redist_error(e.code, "the source mesh " + placed_mesh_text(a.pm) + ": " + e.message.str());
  if (error e = check_placement(b.pm, W))
    throw redist_error(e.code, "the target mesh " + placed_mesh_text(b.pm) + ": " + e.message.str());
  if (a.type.nsum > 0 && b.type.nsum > 0 && a.type.reduce != b.type.reduce)
    throw redist_error(errc::rule, "the source's partial values combine by " +
                                       std::string(reduction_name(a.type.reduce)) + ", the target's by " +
                                       std::string(reduction_name(b.type.reduce)));
  plan_choice c;
  std::vector<std::string> why_not;
  auto attempt = [&](const char* name, auto&& make) {
    try {
      c.candidates.push_back({name, make(), 0});
    } catch (const redist_error& e) {
      if (e.code() == errc::bad_size) throw;
      why_not.push_back(std::string(name) + ": " + e.what());
    }
  };
  // A mesh's own plan inside a longer program: where the source or the target is uneven,
  // the program runs no fused steps (program.hpp), so a plan that fuses is planned again
  // by bytes (unfused).
  const bool uneven_ends = uneven_dim(a.pm.mesh, a.type) >= 0 || uneven_dim(b.pm.mesh, b.type) >= 0;
  auto own_plan = [&](const placed_mesh& pm, const dist_type& from, const dist_type& to) {
    auto fuses = [](const program& q) {
      for (const step& s : q.steps)
        if (s.fused()) return true;
      return false;
    };
    program q = detail::placed_plan(pm, from, to, W, opt);
    if (uneven_ends && fuses(q)) {
      synth_options unfused = opt;
      unfused.goal = objective::bytes;
      q = detail::placed_plan(pm, from, to, W, unfused);
      if (fuses(q)) throw redist_error(errc::rule, "a mesh's own plan fuses collectives on an uneven program");
    }
    return q;
  };
  // The source with its pending sums reduced on its own mesh, and the plan there.
  const dist_type reduced = without_pending(a.type);
  auto reduce_first = [&](program tail) {
    if (a.type.nsum == 0) return tail;
    return detail::concat_programs(own_plan(a.pm, a.type, reduced), tail);
  };
  const placed_layout ar{a.pm, reduced};
  // The target without its pending axes, and where it has some, the target mesh's plan
  // that makes them pending after the move (lower/partial.hpp: nothing moves).
  const dist_type whole = without_pending(b.type);
  const placed_layout bw{b.pm, whole};
  auto make_pending = [&](program head) {
    if (b.type.nsum == 0) return head;
    program tail = own_plan(b.pm, whole, b.type);
    tail.two_meshes = false;
    return detail::concat_programs(std::move(head), tail);
  };
  const std::optional<dist_type> bt = retype(b.pm, b.type, a.pm, W);  // b's type written on a's mesh
  if (bt) {
    attempt("collective", [&] {
      program p = detail::placed_plan(a.pm, a.type, *bt, W, opt);
      p.target = b.type;  // the same boxes on b's mesh
      p.two_meshes = !(a.pm == b.pm);
      if (p.two_meshes) {
        p.target_m = b.pm.mesh;
        p.target_devices = b.pm.devices;
      }
      return p;
    });
  }
  const bool same_ranks = detail::rank_set(a.pm, W) == detail::rank_set(b.pm, W);
  if (same_ranks && !bt && a.pm.mesh.nsub == b.pm.mesh.nsub) {
    bool same_sizes = a.pm.mesh.naxes == b.pm.mesh.naxes;
    for (int k = 0; same_sizes && k < a.pm.mesh.nsub; ++k) same_sizes = a.pm.mesh.sub[k].size == b.pm.mesh.sub[k].size;
    for (int x = 0; same_sizes && x < a.pm.mesh.naxes; ++x) same_sizes = a.pm.mesh.sizes[x] == b.pm.mesh.sizes[x];
    if (same_sizes)
      attempt("permuted", [&] {
        program p = detail::placed_plan(a.pm, a.type, b.type, W, opt);  // b's type read on a's mesh
        // The tile of position q sits on a.pm.at(q); it belongs on b.pm.at(q).
        std::vector<rank_t> dest(W);
        for (std::uint64_t r = 0; r < W; ++r) dest[r] = static_cast<rank_t>(r);
        for (std::uint64_t q = 0; q < a.pm.mesh.devices; ++q) dest[a.pm.at(q)] = static_cast<rank_t>(b.pm.at(q));
        const std::uint64_t L = local_size(a.pm.mesh, b.type);
        if (!p.steps.empty() && p.steps.back().kind == op::allpermute) {  // one permute: compose
          std::vector<rank_t>& d = p.steps.back().dest;
          for (rank_t& r : d) r = dest[r];
          p.cost_elements -= p.steps.back().cost;
          p.steps.back().cost = 0;
        } else {
          step s;
          s.kind = op::allpermute;
          s.dest = dest;
          s.after = shape_of(a.pm.mesh, b.type);
          s.local_after = L;
          p.steps.push_back(std::move(s));
        }
        bool moves = false;
        for (std::uint64_t r = 0; r < W; ++r) moves = moves || p.steps.back().dest[r] != r;
        // A permute composed to the identity (a relabelled target: every tile is already
        // on its rank) moves nothing: no step (an allpermute step costs its tile).
        if (!moves) p.steps.pop_back();
        else p.cost_elements += p.steps.back().cost = cost_elements(op::allpermute, L, L);
        if (!p.steps.empty()) {
          step& last = p.steps.back();
          last.type_after = b.type;
          last.type_exact = true;
          last.on_target = true;
        }
        p.two_meshes = true;
        p.target_m = b.pm.mesh;
        p.target_devices = b.pm.devices;
        return p;
      });
  }
  exchange_plan direct, spread_sizes;  // the sizes of the exchange candidates' first exchanges
  std::optional<exchange_plan> scattered_sizes, scattered_spread_sizes;
  // A target that keeps pending sums: where the collective keeps them as they are, it alone.
  if (b.type.nsum == 0 || !bt) {
    attempt("exchange", [&] {
      return make_pending(reduce_first(detail::exchange_between(ar, bw, W, opt.element_bytes, direct)));
    });
    // Pending sums reduce-scattered on the source mesh (the pending sub-axes minor-most in one
    // dimension: each rank reduces its share, where the all-reduce gives every rank all of
    // it), then the exchange: the same bytes into the target, fewer out of the source ranks,
    // a smaller tile held. The dimension predicted fastest.
    std::optional<dist_type> share;  // the type the scattered exchange reduce-scatters into
    std::optional<program> share_head;  // the source mesh's plan into it
    // Whether a head has an exchange (then the sizes planned with the tail are not those of
    // the program's first exchange).
    auto exchanges = [](const program& q) {
      return std::any_of(q.steps.begin(), q.steps.end(), [](const step& k) { return k.kind == op::exchange; });
    };
    if (a.type.nsum > 0) {
      std::optional<program> best;
      double best_seconds = 0;
      for (int d = 0; d < a.type.rank; ++d) {
        dist_type s = reduced;
        dim& x = s.dims[d];
        if (x.n + a.type.nsum > max_subaxes || a.type.nsum > a.pm.mesh.nsub) continue;
        std::copy_backward(x.axes, x.axes + x.n, x.axes + x.n + a.type.nsum);
        std::copy(a.type.sum, a.type.sum + a.type.nsum, x.axes);
        x.n += a.type.nsum;
        // An uneven share only where an end is uneven: a program between even types runs
        // even steps (program.hpp).
        if (check(a.pm.mesh, s) || (!uneven_ends && uneven_dim(a.pm.mesh, s) >= 0)) continue;
        try {
          exchange_plan sizes;
          program tail = detail::exchange_between({a.pm, s}, bw, W, opt.element_bytes, sizes);
          program head = own_plan(a.pm, a.type, s);
          const bool first = !exchanges(head);
          program p = make_pending(detail::concat_programs(head, tail));
          detail::senders_by_node(p, P);
          const double t = detail::predicted_seconds(p, P, first ? &sizes : nullptr);
          if (!best || t < best_seconds) {
            best = std::move(p);
            best_seconds = t;
            share = s;
            share_head = std::move(head);
            scattered_sizes = first ? std::optional<exchange_plan>(std::move(sizes)) : std::nullopt;
          }
        } catch (const redist_error& e) {
          if (e.code() == errc::bad_size) throw;
        }
      }
      if (best) attempt("scattered exchange", [&] { return *std::move(best); });
    }
    if (!same_ranks)
      if (const std::optional<dist_type> spread = spread_replicas(b.pm.mesh, whole, new_pending_mask(whole, b.type))) {
        attempt("two-phase", [&] {
          const placed_layout mid{b.pm, *spread};
          program p = reduce_first(detail::exchange_between(ar, mid, W, opt.element_bytes, spread_sizes));
          program tail = own_plan(b.pm, *spread, b.type);
          tail.two_meshes = false;
          return detail::concat_programs(std::move(p), tail);
        });
        // The same from the scattered exchange's share of the sums.
        if (share)
          attempt("scattered two-phase", [&] {
            const placed_layout mid{b.pm, *spread};
            program p = detail::exchange_between({a.pm, *share}, mid, W, opt.element_bytes, scattered_spread_sizes.emplace());
            if (exchanges(*share_head)) scattered_spread_sizes.reset();
            p = detail::concat_programs(*share_head, p);
            program tail = own_plan(b.pm, *spread, b.type);
            tail.two_meshes = false;
            return detail::concat_programs(std::move(p), tail);
          });
      }
  }
  if (c.candidates.empty()) {
    std::string all;
    for (const std::string& w : why_not) all += (all.empty() ? "" : "; ") + w;
    throw redist_error(errc::no_plan, "no plan from " + std::string(type_text(a.pm.mesh, a.type).view()) + " on " +
                                          placed_mesh_text(a.pm) + " to " + std::string(type_text(b.pm.mesh, b.type).view()) +
                                          " on " + placed_mesh_text(b.pm) + ": " + all);
  }
  for (plan_candidate& k : c.candidates) {
    for (std::vector<rank_t>* d : {&k.prog.source_devices, &k.prog.target_devices})  // 0..D-1: no list
      if (placed_mesh{{}, *d}.identity()) d->clear();
    // The first exchange of these two as they were built (the head that reduces has none).
    const std::string_view n = k.name;
    detail::senders_by_node(k.prog, P);
    k.seconds = detail::predicted_seconds(k.prog, P,
                                          n == "exchange"             ? &direct
                                          : n == "two-phase"          ? &spread_sizes
                                          : n == "scattered exchange" && scattered_sizes ? &*scattered_sizes
                                          : n == "scattered two-phase" && scattered_spread_sizes
                                              ? &*scattered_spread_sizes
                                              : nullptr);
  }
  for (std::size_t i = 1; i < c.candidates.size(); ++i)
    if (c.candidates[i].seconds < c.candidates[c.chosen].seconds) c.chosen = i;
  const plan_candidate& w = c.candidates[c.chosen];
  c.reason = w.name + ": predicted " + detail::seconds_text(w.seconds);
  for (std::size_t i = 0; i < c.candidates.size(); ++i)
    if (i != c.chosen)
      c.reason += ", " + c.candidates[i].name + " " + detail::seconds_text(c.candidates[i].seconds);
  c.reason += " (profile " + std::string(P.name_view()) + ")";
  return c;
}

/// COSTA's relabelling: the order of b's mesh positions on b's ranks that maximizes the
/// elements every rank of b already holds of its new tile under layout a (an assignment
/// problem, solved exactly by the Hungarian method up to 256 ranks, greedily beyond).
inline placed_mesh relabel_target(const placed_layout& a, const placed_layout& b, std::uint64_t W) {
  const std::vector<box> before = placed_boxes(a.pm.mesh, a.type, a.pm.devices, W);
  const std::uint64_t n = b.pm.mesh.devices;
  std::vector<rank_t> ranks(n);
  for (std::uint64_t q = 0; q < n; ++q) ranks[q] = static_cast<rank_t>(b.pm.at(q));
  std::vector<box> tiles(n);
  for (std::uint64_t q = 0; q < n; ++q) tiles[q] = tile_box(b.pm.mesh, b.type, q);
  // gain[q][k]: elements rank ranks[k] holds of position q's tile.
  std::vector<std::vector<std::int64_t>> gain(n, std::vector<std::int64_t>(n));
  for (std::uint64_t q = 0; q < n; ++q)
    for (std::uint64_t k = 0; k < n; ++k)
      gain[q][k] = static_cast<std::int64_t>(intersect(tiles[q], before[ranks[k]]).size());
  std::vector<std::uint64_t> assign(n);  // position q -> index k of its rank
  if (n <= 256) {
    // Hungarian method (minimizing -gain), potentials u, v; 1-based.
    const std::int64_t inf = std::numeric_limits<std::int64_t>::max() / 4;
    std::vector<std::int64_t> u(n + 1, 0), v(n + 1, 0), minv(n + 1);
    std::vector<std::uint64_t> p(n + 1, 0), way(n + 1, 0);
    std::vector<char> used(n + 1);
    for (std::uint64_t i = 1; i <= n; ++i) {
      p[0] = i;
      std::uint64_t j0 = 0;
      std::fill(minv.begin(), minv.end(), inf);
      std::fill(used.begin(), used.end(), 0);
      do {
        used[j0] = 1;
        const std::uint64_t i0 = p[j0];
        std::int64_t delta = inf;
        std::uint64_t j1 = 0;
        for (std::uint64_t j = 1; j <= n; ++j)
          if (!used[j]) {
            const std::int64_t cur = -gain[i0 - 1][j - 1] - u[i0] - v[j];
            if (cur < minv[j]) {
              minv[j] = cur;
              way[j] = j0;
            }
            if (minv[j] < delta) {
              delta = minv[j];
              j1 = j;
            }
          }
        for (std::uint64_t j = 0; j <= n; ++j)
          if (used[j]) {
            u[p[j]] += delta;
            v[j] -= delta;
          } else {
            minv[j] -= delta;
          }
        j0 = j1;
      } while (p[j0] != 0);
      do {
        const std::uint64_t j1 = way[j0];
        p[j0] = p[j1];
        j0 = j1;
      } while (j0);
    }
    for (std::uint64_t j = 1; j <= n; ++j) assign[p[j] - 1] = j - 1;
  } else {  // greedy: the largest gains first
    std::vector<std::tuple<std::int64_t, std::uint64_t, std::uint64_t>> e;
    for (std::uint64_t q = 0; q < n; ++q)
      for (std::uint64_t k = 0; k < n; ++k) e.emplace_back(-gain[q][k], q, k);
    std::sort(e.begin(), e.end());
    std::vector<char> qd(n, 0), kd(n, 0);
    for (const auto& [g, q, k] : e)
      if (!qd[q] && !kd[k]) {
        qd[q] = kd[k] = 1;
        assign[q] = k;
      }
  }
  placed_mesh out = b.pm;
  out.devices.assign(n, 0);
  for (std::uint64_t q = 0; q < n; ++q) out.devices[q] = ranks[assign[q]];
  return out;
}

/// Options of a redistribution between meshes.
struct between_options {
  synth_options synth{};
  bool relabel = false;  ///< let the planner choose the order of the target mesh's ranks
};

/// The plan of least predicted time from layout a to layout b in a world of W ranks (0: the
/// smallest world that holds both meshes). With relabel the target may land on its ranks
/// in another order: the program's target_devices say which.
inline plan_choice plan_between(const placed_layout& a, const placed_layout& b, std::uint64_t W = 0,
                                const between_options& o = {}) {
  if (W == 0) W = std::max({a.pm.min_world(), b.pm.min_world()});
  plan_choice c = choose_between(a, b, W, o.synth);
  if (!o.relabel || b.type.nsum > 0) return c;
  const placed_layout nb{relabel_target(a, b, W), b.type};
  if (nb.pm == b.pm) return c;
  plan_choice r = choose_between(a, nb, W, o.synth);
  if (r.candidates[r.chosen].seconds < c.candidates[c.chosen].seconds) {
    r.reason += "; relabelled target " + placed_mesh_text(nb.pm);
    return r;
  }
  c.reason += "; relabelling (" + placed_mesh_text(nb.pm) + ") is not predicted faster";
  return c;
}

/// The plan from layout a to layout b, either a box layout, in a world of W ranks (0: the
/// smallest world that holds both: a box layout's world is its number of entries). Two
/// typed ends: plan_between above. Otherwise the exchange (the header comment), the one
/// candidate.
inline plan_choice plan_between(const array_layout& a, const array_layout& b, std::uint64_t W = 0,
                                const between_options& o = {}) {
  const auto* ta = std::get_if<placed_layout>(&a);
  const auto* tb = std::get_if<placed_layout>(&b);
  if (ta && tb) return plan_between(*ta, *tb, W, o);
  if (W == 0) W = std::max(layout_world(a), layout_world(b));
  const time_profile& P = o.synth.time_model ? *o.synth.time_model : builtin_profile;
  plan_choice c;
  c.candidates.push_back({"exchange", exchange_between(a, b, W, o.synth.element_bytes), 0});
  detail::senders_by_node(c.candidates[0].prog, P);
  c.candidates[0].seconds = predicted_seconds(c.candidates[0].prog, P);
  c.reason = "exchange: predicted " + detail::seconds_text(c.candidates[0].seconds) + " (a box layout is planned by "
             "the exchange alone; profile " + std::string(P.name_view()) + ")";
  return c;
}

/// The program of plan_between.
inline program synthesize_between(const placed_layout& a, const placed_layout& b, std::uint64_t W = 0,
                                  const between_options& o = {}) {
  plan_choice c = plan_between(a, b, W, o);
  return std::move(c.candidates[c.chosen].prog);
}
inline program synthesize_between(const array_layout& a, const array_layout& b, std::uint64_t W = 0,
                                  const between_options& o = {}) {
  plan_choice c = plan_between(a, b, W, o);
  return std::move(c.candidates[c.chosen].prog);
}

}  // namespace redist
