// redist/format.hpp -- {fmt} formatters and ostream operators for meshes, collectives,
// distributed types and collective programs.
//
//   fmt::print("{}", mesh)                  {x: 4, y: 8}
//   fmt::print("{}", op::alltoall)          alltoall
//   fmt::print("{}", typed{mesh, type})     [64{x}256, 1024]        (a type needs its mesh)
//   fmt::print("{}", step)                  alltoall concat 1 split 0, 1 group of 32 | cost 2048 | local 2048
//   fmt::print("{}", program)               the plan as a table:
//
//   redist program on {devs: 32}: [32, 64{devs}2048] -> [1{devs}32, 2048], 4-byte elements
//      #  op        concat  split   n  groups  cost (B)  local  type after
//      1  alltoall       1      0  32       1      8192   2048  [1{devs}32, 2048]
//   total 8192 B per device (2048 elements) | peak 2048 | bound 2048 | memory-efficient
//
// Columns: concat/split are the dimensions that grow/shrink; n is the group size (the
// number of chunks for a dynslice); groups is the number of groups; cost is the bytes each
// device sends (Fig. 11), local the elements each device holds after the step. A type
// after `~` holds only up to a permutation of devices. Text the core cut at its fixed
// capacity (core/error.hpp `text`) ends with "...".
//
// An exchange (DESIGN.md section 4, extension) has no dimensions, parts or groups (`-`);
// its cost is the most bytes one device receives, and its type is followed by what the
// sender rule of redist/exchange.hpp makes of it, never by a per-rank list of boxes:
//      1  exchange       -      -  -       -        24      6  [2{y}6, 3{x}6]  (receives at most 6 elements from up to 3 ranks)
// A step alone prints its boxes' shape: `exchange to 6 boxes of [2, 3] | cost 6 | local 6`.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/placement.hpp"
#include "redist/exchange.hpp"
#include "redist/program.hpp"

namespace redist {

/// A distributed type together with its mesh, for printing: `fmt::print("{}", typed{m, t})`.
struct typed {
  const device_mesh& m;
  const dist_type& t;
};

namespace detail {
/// A core text for display; "..." marks one cut at text::capacity characters.
inline std::string shown(const text& t) { return t.len >= text::capacity ? t.str() + "..." : t.str(); }
}  // namespace detail

}  // namespace redist

template <>
struct fmt::formatter<redist::device_mesh> : fmt::formatter<std::string_view> {
  template <class Context>
  auto format(const redist::device_mesh& m, Context& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::string_view>::format(redist::detail::shown(redist::mesh_text(m)), ctx);
  }
};

template <>
struct fmt::formatter<redist::op> : fmt::formatter<std::string_view> {
  template <class Context>
  auto format(redist::op o, Context& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::string_view>::format(redist::op_name(o), ctx);
  }
};

template <>
struct fmt::formatter<redist::typed> : fmt::formatter<std::string_view> {
  template <class Context>
  auto format(const redist::typed& x, Context& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::string_view>::format(redist::detail::shown(redist::type_text(x.m, x.t)), ctx);
  }
};

/// One step on one line: the collective, its dimensions and groups, what each device sends
/// (Fig. 11, elements) and holds afterwards. (Its type needs the program's mesh: the plan
/// table prints it.) An exchange prints how many boxes it lists and their extents (those
/// of rank 0's box; the dimensions come from the step's recorded shape `after`).
///   alltoall concat 1 split 0, 1 group of 32 | cost 2048 | local 2048
///   exchange to 6 boxes of [2, 3] | cost 6 | local 6
template <>
struct fmt::formatter<redist::step> {
  constexpr auto parse(fmt::format_parse_context& ctx) -> decltype(ctx.begin()) { return ctx.begin(); }

  template <class Context>
  auto format(const redist::step& s, Context& ctx) const -> decltype(ctx.out()) {
    using redist::op;
    auto out = fmt::format_to(ctx.out(), "{}", s.kind);
    auto grid = [&](const char* what, const redist::step_grid& g) {  // fused: " concat 1 (2), 0 (4)"
      for (int q = 0; q < g.n; ++q) out = fmt::format_to(out, "{} {} ({})", q ? "," : what, g.dim[q], g.parts[q]);
    };
    grid(" concat", s.concat_grid);
    grid(" split", s.split_grid);
    if (s.concat_dim >= 0) out = fmt::format_to(out, " concat {}", s.concat_dim);
    if (s.split_dim >= 0) out = fmt::format_to(out, " split {}", s.split_dim);
    if (s.kind == op::exchange) {
      const auto R = static_cast<std::size_t>(s.after.rank);
      if (R > 0 && s.boxes.size() >= 2 * R && s.boxes.size() % (2 * R) == 0) {
        std::string ext;
        for (std::size_t d = 0; d < R; ++d)
          ext += fmt::format("{}{}", d ? ", " : "", s.boxes[2 * d + 1] - std::min(s.boxes[2 * d], s.boxes[2 * d + 1]));
        out = fmt::format_to(out, " to {} boxes of [{}]", s.boxes.size() / (2 * R), ext);
      }
    } else if (s.kind == op::dynslice) {
      out = fmt::format_to(out, " in {}", s.parts);
    } else if (s.kind == op::allpermute) {
      std::size_t moved = 0;
      for (std::size_t r = 0; r < s.dest.size(); ++r) moved += s.dest[r] != r;
      out = fmt::format_to(out, ", {} of {} tiles move", moved, s.dest.size());
    } else {
      const std::size_t g = s.group_count();
      out = fmt::format_to(out, ", {} group{} of {}", g, g == 1 ? "" : "s", s.parts);
    }
    return fmt::format_to(out, " | cost {} | local {}", s.cost, s.local_after);
  }
};

namespace redist::detail {

/// After the type of an exchange (or of a step on uneven tiles that runs as one,
/// redist/exchange.hpp moves_as_exchange) in the plan table: `  (receives at most 6 elements from up to 2 ranks)`, the most elements and
/// the most distinct senders of one device under the sender rule (redist/exchange.hpp); ""
/// when the step cannot be planned (a malformed program still prints).
inline std::string exchange_note(const program& p, std::size_t i) {
  const std::uint64_t D = p.world_size();
  // trace_boxes trusts what program_check checks; printing must not: ranks and dimensions
  // in range.
  auto ranks_ok = [&](const std::vector<rank_t>& v) {
    return v.size() == D && std::all_of(v.begin(), v.end(), [&](rank_t r) { return r < D; });
  };
  auto dim_ok = [&](int d) { return d >= 0 && d < p.source.rank; };
  auto grid_ok = [&](const step_grid& g) {
    for (int q = 0; q < g.n; ++q)
      if (!dim_ok(g.dim[q]) || g.parts[q] == 0) return false;
    return true;
  };
  for (std::size_t k = 0; k <= i; ++k) {
    const step& s = p.steps[k];
    bool ok = s.parts > 0;
    switch (s.kind) {
      case op::exchange: ok = s.boxes.size() == 2 * D * static_cast<std::uint64_t>(p.source.rank); break;
      case op::dynslice: ok = ok && ranks_ok(s.index) && dim_ok(s.split_dim); break;
      case op::allpermute: ok = ranks_ok(s.dest); break;
      case op::allgather:
      case op::alltoall:
        ok = ok && ranks_ok(s.members) &&
             (s.fused() ? grid_ok(s.concat_grid) && grid_ok(s.split_grid)
                        : dim_ok(s.concat_dim) && (s.kind == op::allgather || dim_ok(s.split_dim)));
        break;
      case op::allreduce:
      case op::partial: ok = ok && ranks_ok(s.members); break;
      case op::reducescatter: ok = ok && ranks_ok(s.members) && dim_ok(s.split_dim); break;
    }
    if (!ok) return {};
  }
  const box_states t = trace_states(p, i + 1);
  if (!moves_as_exchange(p, i, t)) return {};  // a collective on padded tiles
  const exchange_plan x = plan_exchange(p, i, t, plan_detail::sizes);
  if (!x.error.empty()) return {};
  const std::uint64_t n = p.steps[i].kind == op::exchange ? p.steps[i].node_ranks : 0;
  return fmt::format("  (receives at most {} elements from up to {} rank{}{})", x.max_received, x.max_senders,
                     x.max_senders == 1 ? "" : "s",
                     n > 0 ? fmt::format("; senders on its node first, nodes of {} ranks", n) : std::string());
}

/// The plan table: one row of cells per step, columns aligned to their widest cell.
inline std::string program_table(const program& p) {
  constexpr std::size_t ncol = 9;
  using row = std::array<std::string, ncol>;
  // Numeric columns are right-aligned, op and type left-aligned.
  constexpr std::array<bool, ncol> right{true, false, true, true, true, true, true, true, false};
  std::vector<row> rows;
  rows.push_back({"#", "op", "concat", "split", "n", "groups", "cost (B)", "local", "type after"});
  auto dims_or_dash = [](int d, const step_grid& g) {  // a fused step: its grid's dimensions, "1,0"
    std::string t;
    for (int q = 0; q < g.n; ++q) t += fmt::format("{}{}", q ? "," : "", g.dim[q]);
    return g.n > 0 ? t : d >= 0 ? fmt::to_string(d) : std::string("-");
  };
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const step& s = p.steps[i];
    const bool grouped = s.kind != op::dynslice && s.kind != op::allpermute && s.kind != op::exchange;
    const bool has_n = s.kind != op::allpermute && s.kind != op::exchange;
    const bool to_boxes = s.type_after.rank != p.source.rank && i + 1 == p.steps.size() && p.boxed_target();
    std::string type = s.type_after.rank == p.source.rank ? shown(type_text(p.mesh_after(i), s.type_after))
                       : to_boxes                          ? std::string("the target box layout")
                                                           : std::string("?");
    if (s.on_target && p.two_meshes) type += " on the target mesh";
    if (s.kind == op::exchange || (p.uneven() && s.kind != op::dynslice)) type += exchange_note(p, i);
    rows.push_back({fmt::to_string(i + 1), std::string(op_name(s.kind)), dims_or_dash(s.concat_dim, s.concat_grid),
                    dims_or_dash(s.split_dim, s.split_grid), has_n ? fmt::to_string(s.parts) : std::string("-"),
                    grouped ? fmt::to_string(s.group_count()) : std::string("-"),
                    fmt::to_string(s.cost * p.element_bytes), fmt::to_string(s.local_after),
                    (s.type_exact || to_boxes ? "" : "~") + type});
  }
  std::array<std::size_t, ncol> width{};
  for (const row& r : rows)
    for (std::size_t c = 0; c < ncol; ++c) width[c] = std::max(width[c], r[c].size());
  std::string out;
  for (const row& r : rows) {
    std::string line = " ";
    for (std::size_t c = 0; c < ncol; ++c) {
      const std::size_t w = c + 1 == ncol ? 0 : width[c];  // no padding after the last column
      line += right[c] ? fmt::format("  {:>{}}", r[c], w) : fmt::format("  {:<{}}", r[c], w);
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace redist::detail

template <>
struct fmt::formatter<redist::program> {
  constexpr auto parse(fmt::format_parse_context& ctx) -> decltype(ctx.begin()) { return ctx.begin(); }

  template <class Context>
  auto format(const redist::program& p, Context& ctx) const -> decltype(ctx.out()) {
    auto out = ctx.out();
    if (!p.placed()) {
      out = fmt::format_to(out, "redist program on {}: {} -> {}, {}-byte elements\n", p.m, redist::typed{p.m, p.source},
                           redist::typed{p.m, p.target}, p.element_bytes);
    } else {  // format 2: the meshes with their ranks (core/placement.hpp)
      // A box-layout end (redist/box.hpp): its boxes by world rank.
      auto end = [&](bool boxed, const redist::box_layout& l, const redist::device_mesh& m, const redist::dist_type& t,
                     const redist::placed_mesh& pm) {
        return boxed ? "the box layout " + redist::box_layout_text(l)
                     : fmt::format("{} on {}", redist::typed{m, t}, redist::placed_mesh_text(pm));
      };
      out = fmt::format_to(out, "redist program on a world of {} ranks: {} -> {}, {}-byte elements\n", p.world_size(),
                           end(p.boxed_source(), p.source_layout, p.m, p.source, p.source_placement()),
                           end(p.boxed_target(), p.target_layout, p.target_mesh(), p.target, p.target_placement()),
                           p.element_bytes);
    }
    if (p.steps.empty()) out = fmt::format_to(out, "  (no steps: every device already holds its target tile)\n");
    else out = fmt::format_to(out, "{}", redist::detail::program_table(p));
    return fmt::format_to(out, "total {} B per device ({} elements) | peak {} | bound {} | {}", p.cost_bytes(),
                          p.cost_elements, p.peak_local_elements, p.memory_bound_elements,
                          p.memory_efficient() ? "memory-efficient" : "NOT memory-efficient");
  }
};

namespace redist {

inline std::ostream& operator<<(std::ostream& os, const device_mesh& m) { return os << fmt::to_string(m); }
inline std::ostream& operator<<(std::ostream& os, op o) { return os << op_name(o); }
inline std::ostream& operator<<(std::ostream& os, const typed& x) { return os << fmt::to_string(x); }
inline std::ostream& operator<<(std::ostream& os, const step& s) { return os << fmt::to_string(s); }
inline std::ostream& operator<<(std::ostream& os, const program& p) { return os << fmt::to_string(p); }

}  // namespace redist
