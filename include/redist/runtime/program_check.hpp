// redist/runtime/program_check.hpp -- well-formedness of a collective program (DESIGN.md
// section 4) before anything follows it: groups that partition the ranks, dimensions in
// range, extents that split evenly (on programs with an uneven type: boxes followed step by
// step, redist/exchange.hpp trace_boxes), permutations that are bijections, and a last step
// that leaves the target's tiles. The executor checks every program with it before moving data;
// redist/draw.hpp before following boxes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/placement.hpp"
#include "redist/exchange.hpp"
#include "redist/program.hpp"
#include "redist/runtime/darray.hpp"

namespace redist {

namespace detail {

/// Shape evolution and well-formedness of a program: the tile extents before every step
/// and after the last, or the first problem found.
struct program_shapes {
  std::vector<extents> ext;  ///< ext[i] = extents before step i; ext.back() = target tile
  std::uint64_t cap = 0;     ///< the largest local size
  bool sums = false;         ///< the program adds partial values (allreduce, reducescatter)
  unsigned reductions = 0;   ///< bit r: some step reduces by reduction r (core/dtype.hpp)
  std::vector<exchange_plan> exchanges;  ///< per step: the pieces of an exchange (empty for other ops),
                                        ///< those of one rank where check_program was given it
  box_states boxes;          ///< every world rank's box before each step and after the last
  /// Per world rank, 1 if it holds a tile before the first exchange that moves tiles to
  /// other ranks (format 2, program.hpp) and after it; both all ones in format 1.
  std::vector<std::uint8_t> holds_before, holds_after;
  std::size_t crossing = 0;  ///< steps [0, crossing) run on holds_before, the rest on holds_after
  std::string error;         ///< empty if well-formed

  /// True if world rank r holds a tile before step i (i == steps: after the last).
  [[nodiscard]] bool holds(std::size_t i, std::uint64_t r) const {
    const auto& h = i < crossing ? holds_before : holds_after;
    return r < h.size() && h[r];
  }
};

inline std::string step_name(const program& p, std::size_t i) {
  return "step " + std::to_string(i) + " (" + std::string(op_name(p.steps[i].kind)) + ")";
}

/// The problem with a mesh's placement (list length, repeats, ranks in the world), or "".
inline std::string placement_problem(const device_mesh& m, const std::vector<rank_t>& devices, std::uint64_t W,
                                     const char* which) {
  const placed_mesh pm{m, devices};
  if (error e = check_placement(pm, W)) return std::string(which) + ": " + e.message.str();
  return {};
}

/// True iff `v` (size D) lists every rank 0..D-1 exactly once.
inline bool is_permutation_of_ranks(const std::vector<rank_t>& v, std::uint64_t D) {
  if (v.size() != D) return false;
  std::vector<bool> seen(D, false);
  for (rank_t r : v) {
    if (r >= D || seen[r]) return false;
    seen[r] = true;
  }
  return true;
}

/// The problem with exchange step st (boxes inside the array), or ""; sets x to the tile
/// extents after it: per dimension the longest box (every box sits at the start of its
/// padded tile, DESIGN.md section 2; on a tiling by a distributed type, its tile).
inline std::string exchange_problem(const program& p, const step& st, extents& x) {
  const std::uint64_t D = p.world_size();
  const int R = p.source.rank;
  if (st.boxes.size() != D * static_cast<std::uint64_t>(R) * 2)
    return "boxes must list one range per dimension (" + std::to_string(R) + ") for each of the " +
           std::to_string(D) + " ranks";
  if (!st.holds.empty() && st.holds.size() != D)
    return "holds must have one entry for each of the " + std::to_string(D) + " ranks";
  for (int d = 0; d < R; ++d) x[d] = 0;
  for (std::uint64_t r = 0; r < D; ++r)
    for (int d = 0; d < R; ++d) {
      if (!st.holds_after(r)) {
        if (st.box_lo(r, R, d) != 0 || st.box_hi(r, R, d) != 0)
          return "rank " + std::to_string(r) + " holds nothing after the step but has a range";
        continue;
      }
      const std::uint64_t lo = st.box_lo(r, R, d), hi = st.box_hi(r, R, d), n = p.source.dims[d].global;
      if (lo > hi || hi > n)
        return "rank " + std::to_string(r) + "'s range [" + std::to_string(lo) + ", " + std::to_string(hi) +
               ") of dimension " + std::to_string(d) + " is not inside [0, " + std::to_string(n) + ")";
      x[d] = std::max(x[d], hi - lo);
    }
  return {};
}

/// The problem with fused step st (program.hpp: grids of distinct dimensions in range whose
/// parts multiply to the group size, extents that split evenly), or ""; applies it to x.
inline std::string fused_problem(const step& st, extents& x) {
  const int R = x.rank;
  const step_grid& c = st.concat_grid;
  const step_grid& sp = st.split_grid;
  if (st.concat_dim >= 0 || st.split_dim >= 0) return "a fused step lists its dimensions in grids, not concat_dim/split_dim";
  if (st.kind == op::allgather && sp.n > 0) return "a fused allgather splits no dimension";
  if (st.kind == op::alltoall && sp.n == 0) return "a fused alltoall lists the dimensions it splits";
  step_grid all = c;
  for (int q = 0; q < sp.n; ++q) all.push(sp.dim[q], sp.parts[q]);
  for (int q = 0; q < all.n; ++q) {
    if (all.dim[q] < 0 || all.dim[q] >= R) return "dimension " + std::to_string(all.dim[q]) + " out of range";
    if (all.parts[q] < 1) return "dimension " + std::to_string(all.dim[q]) + " in 0 parts";
    for (int k = 0; k < q; ++k)
      if (all.dim[k] == all.dim[q]) return "dimension " + std::to_string(all.dim[q]) + " is listed twice";
  }
  if (c.size() != st.parts) return "the concat parts multiply to " + std::to_string(c.size()) + ", the groups have " +
                                   std::to_string(st.parts) + " members";
  if (sp.n > 0 && sp.size() != st.parts)
    return "the split parts multiply to " + std::to_string(sp.size()) + ", the groups have " + std::to_string(st.parts) +
           " members";
  for (int q = 0; q < sp.n; ++q) {
    const int d = sp.dim[q];
    if (x[d] % sp.parts[q] != 0)
      return "extent " + std::to_string(x[d]) + " of dimension " + std::to_string(sp.dim[q]) + " cannot be split into " +
             std::to_string(sp.parts[q]);
    x[d] /= sp.parts[q];
  }
  for (int q = 0; q < c.n; ++q) x[c.dim[q]] *= c.parts[q];
  return {};
}

/// Check program p and follow its shapes and boxes. `of_rank`: the exchanges keep only the
/// pieces that rank receives or sends (plan_exchange; an executor of that one rank).
inline program_shapes check_program(const program& p, std::optional<rank_t> of_rank = {}) {
  program_shapes s;
  auto fail = [&](std::string msg) {
    s.error = "invalid program: " + std::move(msg);
    return s;
  };
  const device_mesh& tm = p.target_mesh();
  if (error e = check(p.m, p.source)) return fail("source type: " + e.message.str());
  if (error e = check(tm, p.target)) return fail("target type: " + e.message.str());
  if (error e = check_same_global(p.source, p.target)) return fail(e.message.str());
  if (p.changes_pending_kind())
    return fail("the source's partial values combine by " + std::string(reduction_name(p.source.reduce)) +
                ", the target's by " + std::string(reduction_name(p.target.reduce)));
  // Format 2 (program.hpp): world ranks, and the ranks that hold tiles, step by step.
  const std::uint64_t D = p.world_size();
  const bool placed = p.placed();
  if (placed) {
    std::string problem = placement_problem(p.m, p.source_devices, D, "the source mesh's devices");
    if (problem.empty() && p.two_meshes)
      problem = placement_problem(tm, p.target_devices, D, "the target mesh's devices");
    if (!problem.empty()) return fail(problem);
  }
  // Box-layout ends (program.hpp; redist/box.hpp): valid layouts of the array, on W ranks,
  // moved by exchanges only (their tiles are padded tiles no other step follows).
  for (const auto& [l, key] : {std::pair{&p.source_layout, "source"}, std::pair{&p.target_layout, "target"}}) {
    if (l->boxes.empty()) continue;
    if (std::string e = box_layout_problem(*l, D); !e.empty()) return fail(std::string(key) + " box layout: " + e);
    for (int d = 0; d < p.source.rank; ++d)
      if (l->rank() != p.source.rank || l->shape[static_cast<std::size_t>(d)] != p.source.dims[d].global)
        return fail(std::string(key) + " box layout: its shape is not the array's global shape");
    for (std::size_t i = 0; i < p.steps.size(); ++i)
      if (p.steps[i].kind != op::exchange)
        return fail(step_name(p, i) + ": a program with a box-layout " + key + " runs exchanges only");
    if (p.steps.empty() && !(p.source_layout == p.target_layout))
      return fail(std::string("a program with a box-layout ") + key + " needs an exchange");
  }
  s.holds_before = source_holders(p);
  s.crossing = p.steps.size();
  std::vector<std::uint8_t> holds = s.holds_before;
  std::uint64_t holders = 0;
  for (std::uint8_t h : holds) holders += h != 0;
  const int R = p.source.rank;
  // The tile extents: the type's tile, or a box layout's padded tile.
  extents x = p.boxed_source() ? tile_extents(p.source_layout) : tile_extents(p.m, p.source);
  const int uneven_at = p.uneven_at();
  s.ext.push_back(x);
  s.cap = x.size();
  s.boxes.states.push_back(source_boxes(p));
  auto dim_ok = [&](int d) { return d >= 0 && d < R; };
  // The problem with a step's groups (allgather, alltoall, allreduce, reducescatter), or "":
  // they partition the ranks that hold tiles (all D ranks in format 1).
  auto groups_problem = [&](const step& st) -> std::string {
    if (st.parts == 0) return "group size 0";
    if (!placed && !is_permutation_of_ranks(st.members, D))
      return "the groups must list every rank of the " + std::to_string(D) + " devices exactly once";
    if (placed) {
      std::vector<std::uint8_t> seen(D, 0);
      for (rank_t r : st.members)
        if (r >= D || !holds[r] || seen[r]++)
          return "the groups must list every rank that holds a tile exactly once (" + std::to_string(r) +
                 (r >= D ? " is not a rank of the world)" : !holds[r] ? " holds none)" : " is listed twice)");
      if (st.members.size() != holders)
        return "the groups must list every rank that holds a tile exactly once (" + std::to_string(holders) + " ranks)";
    }
    if (holders % st.parts != 0)
      return "the " + std::to_string(holders) + " devices do not split into groups of " + std::to_string(st.parts);
    return {};
  };
  // The problem with splitting the tile into st.parts chunks along st.split_dim, or "";
  // without one, the split is applied to x.
  // On uneven programs the boxes decide (below), and the chunks may be ceil-sized.
  auto split = [&](const step& st) -> std::string {
    if (!dim_ok(st.split_dim)) return "split_dim " + std::to_string(st.split_dim) + " out of range";
    if (st.parts == 0 || (uneven_at < 0 && x[st.split_dim] % st.parts != 0))
      return "extent " + std::to_string(x[st.split_dim]) + " of dimension " + std::to_string(st.split_dim) +
             " cannot be split into " + std::to_string(st.parts);
    x[st.split_dim] = ceil_div(x[st.split_dim], st.parts);
    return {};
  };
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const step& st = p.steps[i];
    const std::string name = step_name(p, i);
    std::string problem;
    if (uneven_at >= 0 && !runs_on_uneven(st.kind))
      return fail(name + ": on uneven tiles (dimension " + std::to_string(uneven_at) + " of size " +
                  std::to_string(p.source.dims[uneven_at].global) +
                  " does not split evenly) redist runs every op but the reduce-scatter (reduce with an allreduce)");
    switch (st.kind) {
      case op::allgather:
      case op::alltoall:
        if (!(problem = groups_problem(st)).empty()) break;
        if (st.fused()) {
          problem = uneven_at >= 0 ? "a fused step runs on even programs only" : fused_problem(st, x);
          break;
        }
        if (!dim_ok(st.concat_dim)) {
          problem = "concat_dim " + std::to_string(st.concat_dim) + " out of range";
          break;
        }
        if (st.kind == op::alltoall && !(problem = split(st)).empty()) break;
        x[st.concat_dim] *= st.parts;
        break;
      case op::dynslice:
        if (st.index.size() != D) {
          problem = "index must have one entry per rank";
          break;
        }
        for (rank_t v : st.index)
          if (v >= st.parts) problem = "index " + std::to_string(v) + " is not below parts " + std::to_string(st.parts);
        if (problem.empty()) problem = split(st);
        break;
      case op::allpermute:
        if (!is_permutation_of_ranks(st.dest, D)) problem = "dest must be a permutation of the ranks";
        for (std::uint64_t r = 0; r < D && problem.empty() && placed; ++r)
          if (holds[r] ? !holds[st.dest[r]] : st.dest[r] != r)
            problem = "dest moves rank " + std::to_string(r) + "'s tile " +
                      (holds[r] ? "to rank " + std::to_string(st.dest[r]) + ", which holds none"
                                : std::string("but it holds none"));
        break;
      case op::allreduce:
      case op::reducescatter:
        if (!(problem = groups_problem(st)).empty()) break;
        if (st.kind == op::reducescatter) problem = split(st);
        if (problem.empty() && p.source.nsum > 0 && st.reduce != p.source.reduce)
          problem = "it reduces by " + std::string(reduction_name(st.reduce)) +
                    ", but the source's partial values combine by " + std::string(reduction_name(p.source.reduce));
        s.sums = true;
        s.reductions |= 1u << static_cast<unsigned>(st.reduce);
        break;
      case op::partial:  // local: creates pending values (lower/partial.hpp)
        if (!(problem = groups_problem(st)).empty()) break;
        if (st.concat_dim >= 0) {  // padded: the tile grows as an allgather's
          if (!dim_ok(st.concat_dim)) {
            problem = "concat_dim " + std::to_string(st.concat_dim) + " out of range";
            break;
          }
          if (st.reduce == reduction::avg) {
            problem = "avg pads no tiles (the mean of padded tiles is not the value)";
            break;
          }
          x[st.concat_dim] *= st.parts;
        }
        if (p.target.nsum == 0 || st.reduce != p.target.reduce)
          problem = "it creates values pending by " + std::string(reduction_name(st.reduce)) +
                    (p.target.nsum == 0 ? ", but the target has no pending values"
                                        : ", but the target's combine by " + std::string(reduction_name(p.target.reduce)));
        s.sums = true;
        s.reductions |= 1u << static_cast<unsigned>(st.reduce);
        break;
      case op::exchange:
        problem = exchange_problem(p, st, x);
        if (problem.empty() && placed && st.holds.empty())
          problem = "an exchange of a program on device sets lists which ranks hold a tile after it";
        if (problem.empty() && !st.holds.empty() && st.holds != holds) {
          if (s.crossing != p.steps.size())
            problem = "a second exchange changes which ranks hold tiles (a program crosses between meshes once)";
          s.crossing = i + 1;
          holds = st.holds;
          holders = 0;
          for (std::uint8_t h : holds) holders += h != 0;
        }
        break;
    }
    if (!problem.empty()) return fail(name + ": " + problem);
    // The boxes after the step (exchange.hpp step_boxes, the one statement of the semantics).
    std::vector<box> next;
    if (std::string e = step_boxes(p, i, s.boxes.states.back(), next); !e.empty()) return fail(e);
    s.boxes.states.push_back(std::move(next));
    if (uneven_at >= 0 && st.kind != op::exchange) {
      // The tile after the step: the longest box per dimension (DESIGN.md section 2).
      for (int d = 0; d < R; ++d) {
        x[d] = 0;
        for (const box& b : s.boxes.states.back()) x[d] = std::max(x[d], b.extent(d));
      }
    }
    if (st.after.rank == R) {  // the recorded shape (tiles per dimension), when present
      for (int d = 0; d < R; ++d)
        if (st.after.parts[d] == 0 ||
            p.source.dims[d].global / st.after.parts[d] + (p.source.dims[d].global % st.after.parts[d] != 0) != x[d])
          return fail(name + ": its recorded shape disagrees with its semantics (tile " + extents_text(x) + ")");
    }
    s.ext.push_back(x);
    s.cap = std::max(s.cap, x.size());
  }
  s.holds_after = holds;
  if (placed && holds != target_holders(p))
    return fail(std::string("the last step leaves tiles on other ranks than the target ") +
                (p.boxed_target() ? "layout's" : "mesh's devices"));
  const extents want = p.boxed_target() ? tile_extents(p.target_layout) : tile_extents(tm, p.target);
  if (!(x == want))
    return fail("the last step leaves tiles of shape " + extents_text(x) + ", the target's tiles are " +
                extents_text(want));
  {  // the pieces of the steps that run as exchanges, and the end
    // Partial sums are allowed only when reductions before the first exchange add all of
    // them (the uneven plans of lower/synthesize.hpp: allreduce, then exchange), and
    // pending values are created after the last exchange only (partial steps, which
    // create all of the target's).
    std::uint64_t reduced = 1, created = 1;
    bool after_exchange = false, late_sum = false;
    for (const step& st : p.steps) {
      after_exchange = after_exchange || st.kind == op::exchange;
      if (st.kind == op::exchange) created = 1;
      if (st.kind == op::partial) created *= st.parts;
      if (st.kind == op::allreduce || st.kind == op::reducescatter) {
        late_sum = late_sum || after_exchange;
        reduced *= st.parts;
      }
    }
    if (p.count(op::exchange) > 0 &&
        (created != sum_parts(tm, p.target) || late_sum || reduced != sum_parts(p.m, p.source)))
      return fail("an exchange does not add partial sums: every pending sum must be reduced before the first "
                  "exchange, and the target's pending values created after the last one");
    s.exchanges.resize(p.steps.size());
    for (std::size_t i = 0; i < p.steps.size(); ++i)
      if (moves_as_exchange(p, i, s.boxes)) {
        s.exchanges[i] = plan_exchange(p, i, s.boxes, plan_detail::pieces, of_rank);
        if (!s.exchanges[i].error.empty()) return fail(step_name(p, i) + ": " + s.exchanges[i].error);
      }
    const std::vector<box>& end = s.boxes.states.back();
    const std::vector<box> want_boxes = target_boxes(p);
    for (std::uint64_t r = 0; r < D; ++r)
      if (const box& t = want_boxes[r]; !(end[r] == t))
        return fail("the program leaves rank " + std::to_string(r) + " with the box " + box_text(end[r]) +
                    ", its target tile is " + box_text(t));
  }
  return s;
}

}  // namespace detail

}  // namespace redist
