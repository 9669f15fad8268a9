// redist/exchange.hpp -- boxes of global indices and the exchange step (DESIGN.md
// section 4): which box every rank holds before a step, and which rank sends which piece in
// an exchange.
//
// A box is one half-open range [lo, hi) of global indices per dimension; a rank's tile
// holds its box in row-major order. trace_boxes follows the boxes of every rank through the
// steps of a program with the semantics of section 4 (partial sums are not followed: an
// exchange never adds them, and program_check refuses an exchange in a program with sums).
//
// The exchange. After the step, rank r holds exactly its listed box A_r. The boxes before
// the step are grouped into distinct boxes B_0, B_1, ... (ordered by their smallest holder;
// empty boxes hold nothing), each with its holders H_j in rank order. For every receiver r
// (in rank order) and every B_j meeting A_r, the piece A_r n B_j comes
//   - from r itself when r holds B_j (a local copy, nothing on the wire), otherwise
//   - from holder H_j[(k + j) mod |H_j|], where r is the k-th rank (from 0, in rank order)
//     that needs a piece of B_j and does not hold it.
// So replicas share the sending evenly, and the choice is the same on every rank. A rank
// receives |A_r| minus what it held, exactly the data-movement lower bound when the step
// starts from the source tiles (core/offsets.hpp movement_lower_bound).
//
// Ranks on several nodes (step::node_ranks = N > 0, an exchange planned with a time profile
// whose ranks span nodes, core/time_model.hpp; JSON "node_ranks"): node n holds the world
// ranks [nN, (n + 1)N). Where some but not all holders of B_j lie on r's node, the piece comes
// from those holders alone: from L_j[(k + j) mod |L_j|], L_j the holders of B_j on r's node
// in rank order and r the k-th rank of its node that takes a piece of B_j from them; so a
// replica on the receiver's node sends and the piece does not cross a link. Otherwise (all
// holders on r's node, or none) the rule above, counting only those receivers. With every
// rank on one node the pieces are the rule's above.
//
// Requirements (plan_exchange's errors): along every dimension the ranges of the boxes
// before the step are equal or disjoint (true of every tiling by a distributed type, so of
// every program made of the paper's collectives and exchanges to tiles), or else the
// distinct boxes before it are disjoint (a box layout, redist/box.hpp: a receiver then
// meets them one by one, in the order of their smallest holders), every element of
// every A_r is held by some rank, and the plan visits at most max_exchange_cells cells of
// the grid of ranges (core/config.hpp; about the pieces it moves).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "redist/box.hpp"
#include "redist/core/config.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/program.hpp"

namespace redist {

/// Chunk m of box b split into n along d (DESIGN.md section 4): n equal chunks, or with
/// `ceil` chunks of ceil(extent / n), the last ones short or empty (a dynslice; an alltoall
/// on uneven types, docs/reference.md "Uneven dimensions").
inline box chunk_of(box b, int d, std::uint64_t n, std::uint64_t m, bool ceil) {
  const auto i = static_cast<std::size_t>(d);
  const std::uint64_t e = b.extent(d), len = e / n + (ceil && e % n != 0 ? 1 : 0), hi = b.hi[i];
  b.lo[i] = clip_add(b.lo[i], clip_mul(m, len, e), hi);  // saturating: boxes near 2^64 do not wrap
  b.hi[i] = clip_add(b.lo[i], len, hi);
  return b;
}

/// The box of rank r's tile of type t under the default device map (Fig. 7a); short or
/// empty on uneven dimensions (core/offsets.hpp range_lo, range_hi).
inline box tile_box(const device_mesh& m, const dist_type& t, std::uint64_t r) {
  box b;
  b.rank = t.rank;
  for (int d = 0; d < t.rank; ++d) {
    const auto i = static_cast<std::size_t>(d);
    b.lo[i] = range_lo(m, t.dims[d], r);
    b.hi[i] = range_hi(m, t.dims[d], r);
  }
  return b;
}

/// The boxes of every rank of type t.
inline std::vector<box> tile_boxes(const device_mesh& m, const dist_type& t) {
  std::vector<box> v(m.devices);
  for (std::uint64_t r = 0; r < m.devices; ++r) v[r] = tile_box(m, t, r);
  return v;
}

/// Every world rank's box of type t on mesh m placed on the world ranks `devices` (empty:
/// 0..D-1), in a world of W ranks: the tile of its mesh position, or the empty box for a rank
/// outside the mesh (DESIGN.md section 2, "Meshes on device sets").
inline std::vector<box> placed_boxes(const device_mesh& m, const dist_type& t, std::span<const rank_t> devices,
                                     std::uint64_t W) {
  box none;
  none.rank = t.rank;
  std::vector<box> v(W, none);
  for (std::uint64_t pos = 0; pos < m.devices; ++pos) {
    const std::uint64_t r = devices.empty() ? pos : devices[pos];
    if (r < W) v[r] = tile_box(m, t, pos);
  }
  return v;
}
/// Per world rank: 1 if it is a rank of the mesh placed on `devices` (it holds a tile).
inline std::vector<std::uint8_t> placed_holders(std::uint64_t D, std::span<const rank_t> devices, std::uint64_t W) {
  std::vector<std::uint8_t> h(W, 0);
  for (std::uint64_t pos = 0; pos < D; ++pos)
    if (const std::uint64_t r = devices.empty() ? pos : devices[pos]; r < W) h[r] = 1;
  return h;
}
/// The source's and the target's boxes of program p on every world rank.
/// A box-layout end gives its layout's boxes (empty for a rank that holds nothing).
inline std::vector<box> source_boxes(const program& p) {
  if (p.boxed_source()) return p.source_layout.all_boxes();
  return placed_boxes(p.m, p.source, p.source_devices, p.world_size());
}
inline std::vector<box> target_boxes(const program& p) {
  if (p.boxed_target()) return p.target_layout.all_boxes();
  return placed_boxes(p.target_mesh(), p.target, p.two_meshes ? p.target_devices : p.source_devices, p.world_size());
}
/// Per world rank: 1 if it holds a tile of program p's source (target).
inline std::vector<std::uint8_t> source_holders(const program& p) {
  if (p.boxed_source()) return p.source_layout.holders();
  return placed_holders(p.m.devices, p.source_devices, p.world_size());
}
inline std::vector<std::uint8_t> target_holders(const program& p) {
  if (p.boxed_target()) return p.target_layout.holders();
  return placed_holders(p.target_mesh().devices, p.two_meshes ? p.target_devices : p.source_devices, p.world_size());
}

/// Rank r's box after an exchange step of arrays of rank R.
inline box step_box(const step& s, int R, std::uint64_t r) {
  box b;
  b.rank = R;
  for (int d = 0; d < R; ++d) {
    b.lo[static_cast<std::size_t>(d)] = s.box_lo(r, R, d);
    b.hi[static_cast<std::size_t>(d)] = s.box_hi(r, R, d);
  }
  return b;
}

/// The boxes of an exchange step (one per rank), flattened as step::boxes stores them.
inline std::vector<std::uint64_t> flatten_boxes(std::span<const box> bs) {
  std::vector<std::uint64_t> v;
  for (const box& b : bs)
    for (int d = 0; d < b.rank; ++d) {
      v.push_back(b.lo[static_cast<std::size_t>(d)]);
      v.push_back(b.hi[static_cast<std::size_t>(d)]);
    }
  return v;
}

/// Chunk m of a box split evenly over a grid (program.hpp step_grid); sets `problem` when
/// an extent does not split.
inline box grid_chunk(box b, const step_grid& g, std::uint64_t m, std::string& problem) {
  for (int q = 0; q < g.n; ++q) {
    const auto d = static_cast<std::size_t>(g.dim[q]);
    const std::uint64_t e = b.extent(g.dim[q]);
    if (e % g.parts[q] != 0 && problem.empty())
      problem = "the box " + box_text(b) + " does not split into " + std::to_string(g.parts[q]) +
                " equal chunks along dimension " + std::to_string(g.dim[q]);
    b.lo[d] += g.digit(m, q) * (e / g.parts[q]);
    b.hi[d] = b.lo[d] + e / g.parts[q];
  }
  return b;
}

/// The union of equal-sized boxes laid out over a grid (part m at the digits of m along
/// the grid's dimensions, agreeing elsewhere); "" or the problem.
inline std::string grid_concat(std::span<const box> parts, const step_grid& g, box& out) {
  out = parts[0];
  for (int q = 0; q < g.n; ++q) {
    const auto d = static_cast<std::size_t>(g.dim[q]);
    out.hi[d] = out.lo[d] + g.parts[q] * parts[0].extent(g.dim[q]);
  }
  for (std::size_t m = 0; m < parts.size(); ++m) {
    box want = out;
    for (int q = 0; q < g.n; ++q) {
      const auto d = static_cast<std::size_t>(g.dim[q]);
      const std::uint64_t e = parts[0].extent(g.dim[q]);
      want.lo[d] = out.lo[d] + g.digit(m, q) * e;
      want.hi[d] = want.lo[d] + e;
    }
    if (!(want == parts[m]))
      return "the box " + box_text(parts[m]) + " of member " + std::to_string(m) + " is not " + box_text(want) +
             ", its place in the grid";
  }
  return {};
}

/// Every rank's box before step `upto` of p (upto == p.steps.size(): after the last step),
/// or the first step whose boxes cannot be followed.
struct box_trace {
  std::vector<box> boxes;
  std::string error;  ///< empty on success
};

/// The box semantics of DESIGN.md section 4, in one place: every world rank's box after
/// step `si` of p, from `cur`, its boxes before it, into `next`; "" or the problem. Ranks
/// that hold nothing have the empty box (program.hpp, format 2). It trusts what
/// program_check checks of the step's groups, ranks and dimensions.
inline std::string step_boxes(const program& p, std::size_t si, const std::vector<box>& cur, std::vector<box>& next) {
  const std::uint64_t D = p.world_size();
  const int R = p.source.rank;
  const bool uneven = p.uneven();
  const step& s = p.steps[si];
  // Chunk m of n along d: equal chunks (alltoall, reducescatter; `problem` if the extent
  // does not split), or ceil-sized ones, the last short or empty (dynslice).
  auto chunk = [](const box& b, int d, std::uint64_t n, std::uint64_t m, bool ceil, std::string* problem) {
    if (!ceil && b.extent(d) % n != 0 && problem != nullptr && problem->empty())
      *problem = "the box " + box_text(b) + " does not split into " + std::to_string(n) +
                 " equal chunks along dimension " + std::to_string(d);
    return chunk_of(b, d, n, m, ceil);
  };
  // The union of boxes adjacent along d in order, agreeing elsewhere; "" or the problem.
  auto concat = [&](std::span<const box> parts, int d, box& out) -> std::string {
    out = parts[0];
    const auto i = static_cast<std::size_t>(d);
    for (std::size_t k = 1; k < parts.size(); ++k) {
      box x = parts[k];
      x.lo[i] = out.lo[i];
      x.hi[i] = out.hi[i];
      if (!(x == out) || parts[k].lo[i] != out.hi[i])
        return "the boxes " + box_text(out) + " and " + box_text(parts[k]) + " are not adjacent along dimension " +
               std::to_string(d);
      out.hi[i] = parts[k].hi[i];
    }
    return {};
  };
  std::vector<box> parts;
  std::vector<std::uint64_t> padded(static_cast<std::size_t>(R), 0);  // the tile: the longest box per dimension
  next = cur;
  std::string problem;
  if (s.kind == op::reducescatter && uneven && s.split_dim >= 0 && s.split_dim < R && s.parts > 0) {
    // On uneven tiles (DESIGN.md section 2) every rank's buffer is the padded tile, split
    // into chunks of ceil(extent / parts) along split_dim (the last ones short or empty
    // where the parts do not divide it: the executor pads the send); member m gets chunk m.
    const auto d = static_cast<std::size_t>(s.split_dim);
    padded[d] = 0;
    for (const box& b : cur) padded[d] = std::max(padded[d], b.extent(s.split_dim));
  }
  switch (s.kind) {
    case op::partial:  // the boxes of an allreduce (one box per group, kept), padded of an allgather
    case op::allgather:
    case op::alltoall:
    case op::reducescatter:
    case op::allreduce:
      for (std::size_t g = 0; g < s.group_count() && problem.empty(); ++g) {
        const auto grp = s.group(g);
        if (s.fused()) {  // grids of even chunks (program.hpp), on even programs
          for (std::size_t m = 0; m < grp.size() && problem.empty(); ++m) {
            parts.clear();
            for (rank_t k : grp) parts.push_back(s.kind == op::alltoall ? grid_chunk(cur[k], s.split_grid, m, problem) : cur[k]);
            if (problem.empty()) problem = grid_concat(parts, s.concat_grid, next[grp[m]]);
          }
          continue;
        }
        for (std::size_t m = 0; m < grp.size() && problem.empty(); ++m) {
          box b;
          parts.clear();
          for (rank_t k : grp)  // uneven programs: ceil-sized chunks (docs/reference.md)
            parts.push_back(s.kind == op::alltoall ? chunk(cur[k], s.split_dim, s.parts, m, uneven, &problem) : cur[k]);
          if (!problem.empty()) break;
          if (s.kind == op::allreduce || s.kind == op::reducescatter || (s.kind == op::partial && s.concat_dim < 0)) {
            for (const box& x : parts)
              if (!(x == parts[0])) problem = "the boxes of a group differ (" + box_text(x) + ", " + box_text(parts[0]) + ")";
            b = parts[0];
            if (s.kind == op::reducescatter && uneven) {  // ceil-sized chunks of the padded tile, clipped to the box
              const auto d = static_cast<std::size_t>(s.split_dim);
              const std::uint64_t c = ceil_div(padded[d], s.parts);
              b.lo[d] = std::min(parts[0].lo[d] + m * c, parts[0].hi[d]);
              b.hi[d] = std::min(parts[0].lo[d] + (m + 1) * c, parts[0].hi[d]);
            } else if (s.kind == op::reducescatter) {
              b = chunk(parts[0], s.split_dim, s.parts, m, false, &problem);
            }
          } else {
            problem = concat(parts, s.concat_dim, b);
          }
          next[grp[m]] = b;
        }
      }
      break;
    case op::dynslice:
      for (std::uint64_t r = 0; r < D; ++r) next[r] = chunk(cur[r], s.split_dim, s.parts, s.index[r], true, nullptr);
      break;
    case op::allpermute:
      for (std::uint64_t r = 0; r < D; ++r) next[s.dest[r]] = cur[r];
      break;
    case op::exchange:
      for (std::uint64_t r = 0; r < D; ++r) next[r] = step_box(s, R, r);
      break;
  }
  return problem.empty() ? problem : "step " + std::to_string(si) + " (" + std::string(op_name(s.kind)) + "): " + problem;
}

/// Every world rank's box before each step of p and after the last (states[i]: before step
/// i), computed once, up to the first step that cannot be followed (then `error`, and
/// states ends before that step).
struct box_states {
  std::vector<std::vector<box>> states;
  std::string error;  ///< empty on success
};

/// Follow the boxes of a program that program_check accepted up to the groups and shapes,
/// through its first `upto` steps (all by default).
inline box_states trace_states(const program& p, std::size_t upto = SIZE_MAX) {
  box_states t;
  t.states.push_back(source_boxes(p));
  for (std::size_t si = 0; si < upto && si < p.steps.size(); ++si) {
    std::vector<box> next;
    t.error = step_boxes(p, si, t.states.back(), next);
    if (!t.error.empty()) return t;
    t.states.push_back(std::move(next));
  }
  return t;
}

/// The boxes before step `upto` alone (trace_states keeps all of them).
inline box_trace trace_boxes(const program& p, std::size_t upto) {
  box_states t = trace_states(p, upto);
  return {std::move(t.states.back()), std::move(t.error)};
}

namespace detail {
/// The padded tiles of step i (`t`: the boxes through step i and after it): the longest box
/// before it along concat_dim and split_dim, and after it along concat_dim (0 for a
/// dimension the step has not).
struct padded_extents {
  std::uint64_t concat = 0, split = 0, after = 0;
};
inline padded_extents padded_step_extents(const program& p, std::size_t i, const box_states& t) {
  const step& st = p.steps[i];
  const int dc = st.concat_dim, ds = st.split_dim;
  padded_extents x;
  for (const box& b : t.states[i]) {
    if (dc >= 0) x.concat = std::max(x.concat, b.extent(dc));
    if (ds >= 0) x.split = std::max(x.split, b.extent(ds));
  }
  if (dc >= 0)
    for (const box& b : t.states[i + 1]) x.after = std::max(x.after, b.extent(dc));
  return x;
}
/// padded_clips below, on the padded tiles x of step st (a non-fused allgather or alltoall).
inline bool blocks_clip(const step& st, const padded_extents& x) {
  return st.parts * x.concat != x.after || (st.kind == op::alltoall && x.split % st.parts != 0);
}
}  // namespace detail

/// True iff step i of p, an allgather or alltoall (not fused) that runs as the backend's
/// collective on padded tiles (`t`: the boxes through step i), has blocks that do not tile
/// the tiles exactly: parts times the padded tile before it differs from the tile after it
/// along concat_dim (a dimension of n gathered into one tile of n, as `[{x}13]` to `[13]`
/// on `{x: 4}`: blocks of 4 rows, a tile of 13), or, for an alltoall, parts does not divide
/// the padded split extent t (chunks of ceil(t / parts) rows, the last ones short or
/// empty: `[13, {x}4]` to `[{x}13, 4]`). The executor packs such a step in pieces of
/// padded blocks (padded_block) and copies them clipped to the tiles: what lies past them
/// is padding. Never on even types.
inline bool padded_clips(const program& p, std::size_t i, const box_states& t) {
  const step& st = p.steps[i];
  if ((st.kind != op::allgather && st.kind != op::alltoall) || st.fused() || st.parts == 0 || st.concat_dim < 0 ||
      t.states.size() <= i + 1)
    return false;
  return detail::blocks_clip(st, detail::padded_step_extents(p, i, t));
}

/// The elements of the block step i (an allgather or alltoall, not fused) sends each member
/// on tiles of `local` elements (`t`: the boxes through step i): an allgather's tile; an
/// alltoall's padded chunk, `local` / t * ceil(t / parts) for the padded tile t along
/// split_dim (local / parts where parts divides t).
inline std::uint64_t padded_block(const program& p, std::size_t i, const box_states& t, std::uint64_t local) {
  const step& st = p.steps[i];
  if (st.kind != op::alltoall) return local;
  const std::uint64_t ts = t.states.size() > i + 1 ? detail::padded_step_extents(p, i, t).split : 0;
  return ts == 0 ? local / st.parts : local / ts * ceil_div(ts, st.parts);
}

/// True iff step i of p, an allgather, alltoall or allpermute, lands every box exactly
/// when it runs as the backend's collective on padded tiles (`t`: the boxes through step
/// i). Every rank's buffer is the padded tile, the longest box per dimension, with its box
/// at the start (DESIGN.md section 2). An allpermute moves a whole tile to the rank that
/// holds the same box after it: always exact. An allgather or alltoall (not fused: fused
/// steps run on even programs) puts the block of group member m at m times the padded tile
/// along concat_dim: exact where every member's non-empty box starts there in the tile
/// after it (the members before it hold whole tiles), whatever the blocks add past the tile
/// after is padding and dropped (padded_clips: the executor receives `parts` blocks in
/// pieces of at least one element each into a pack buffer of at most half the larger end
/// tile, so only where 2 parts <= max(in, out) elements). An alltoall sends chunk m of the
/// padded tile t along split_dim, rows [m c, (m + 1) c) with c = ceil(t / parts) (clipped
/// to the t rows the tile has, the rest of the chunk padding): exact where every non-empty
/// box's own ceil-sized chunks (DESIGN.md section 4) are c rows too. Where tiles nest
/// (core/dtype.hpp tiles_nest), as between types, both hold.
inline bool padded_lands(const program& p, std::size_t i, const box_states& t) {
  const step& st = p.steps[i];
  if (st.kind == op::allpermute) return true;
  if ((st.kind != op::allgather && st.kind != op::alltoall) || st.fused() || st.parts == 0 ||
      t.states.size() <= i + 1)
    return false;
  const detail::padded_extents x = detail::padded_step_extents(p, i, t);
  if (detail::blocks_clip(st, x) && 2 * st.parts > std::max(p.source_local(), p.target_local()))
    return false;  // pieces of at least one element per block fit max(in, out) / 2 only so
  const std::vector<box>&before = t.states[i], &after = t.states[i + 1];
  const int dc = st.concat_dim, ds = st.split_dim;
  const std::uint64_t c = ceil_div(x.split, st.parts);  // an alltoall's padded chunk
  for (std::size_t g = 0; g < st.group_count(); ++g) {
    const auto grp = st.group(g);
    for (std::size_t m = 0; m < grp.size(); ++m) {
      const box& b = before[grp[m]];
      if (b.empty()) continue;
      if (st.kind == op::alltoall && ceil_div(b.extent(ds), st.parts) != c) return false;
      const box& a = after[grp[m]];
      if (b.lo[static_cast<std::size_t>(dc)] - a.lo[static_cast<std::size_t>(dc)] != m * x.concat) return false;
    }
  }
  return true;
}

/// True iff step i of p moves boxes as an exchange does (plan_exchange below): the exchange
/// itself, and, on a program with uneven types, the dynslice (a local copy of its box's
/// chunk) and the allgather, alltoall and allpermute that do not land exactly on padded
/// tiles (padded_lands), whose pieces then go from group member to group member with
/// exactly the elements their boxes hold. The others run as the backend's collectives, on
/// padded tiles where types are uneven (as XLA and DTensor run them). `t`: the boxes
/// through step i (trace_states).
inline bool moves_as_exchange(const program& p, std::size_t i, const box_states& t) {
  const op k = p.steps[i].kind;
  if (k == op::exchange) return true;
  if (!p.uneven() || k == op::allreduce || k == op::reducescatter || k == op::partial) return false;
  return k == op::dynslice || !padded_lands(p, i, t);
}
/// The same, following the boxes through step i where they decide.
inline bool moves_as_exchange(const program& p, std::size_t i) {
  const op k = p.steps[i].kind;
  const bool traced = p.uneven() && (k == op::allgather || k == op::alltoall);
  return moves_as_exchange(p, i, traced ? trace_states(p, i + 1) : box_states{});
}

/// One piece of an exchange: receiver `to` gets box `b` (global indices) from `from`.
struct exchange_piece {
  rank_t from = 0, to = 0;
  box b;
};

/// How much of an exchange plan_exchange keeps: every piece (what the executor, the JSON
/// writer and `draw` need), or only the sizes (received per rank, max_received, max_sent,
/// messages: what pricing and checking a program need; pieces, first, before and after
/// stay empty). Both visit the same pieces; sizes allocates nothing per piece, which on a
/// dense exchange of thousands of ranks (millions of pieces) is most of the time. With
/// pieces, a rank (`of_rank` below) keeps only the pieces that rank receives or sends: what
/// the executor of one rank among many (MPI, NCCL) runs, in memory linear in the ranks
/// where the whole plan can hold one piece per pair of ranks; the sizes stay the whole
/// exchange's.
enum class plan_detail { pieces, sizes };

namespace detail {
/// Whether a plan of `level` for `of_rank` keeps the piece from `from` to `to` (plan_detail).
inline bool keeps_piece(plan_detail level, std::optional<rank_t> of_rank, rank_t from, rank_t to) {
  return level == plan_detail::pieces && (!of_rank || from == *of_rank || to == *of_rank);
}
}  // namespace detail

/// What every rank sends and receives in one exchange.
struct exchange_plan {
  std::vector<box> before, after;       ///< every rank's box before and after the step
  std::vector<exchange_piece> pieces;   ///< by receiver, in rank order; from == to: a local copy
  std::vector<std::size_t> first;       ///< pieces of receiver r: [first[r], first[r + 1])
  std::vector<std::uint64_t> received;  ///< per rank: elements received from other ranks
  std::uint64_t max_received = 0;       ///< the most elements one rank receives
  std::uint64_t max_sent = 0;           ///< the most elements one rank sends to others
  std::uint64_t messages = 0;           ///< the most pieces one rank sends to or receives from others
  std::uint64_t max_senders = 0;        ///< the most other ranks one rank receives from
  std::string error;                    ///< empty on success
  bool too_large = false;               ///< error: more than max_exchange_cells cells

  [[nodiscard]] std::span<const exchange_piece> into(std::uint64_t r) const {
    return std::span<const exchange_piece>(pieces).subspan(first[r], first[r + 1] - first[r]);
  }
};

namespace detail {
/// An exchange plan's sender side, from the pieces (`sent`) and elements each rank sends
/// to others: max_sent, and messages, the most of max_senders and the pieces one rank sends.
inline void finish_senders(exchange_plan& x, std::span<const std::uint64_t> sent,
                           std::span<const std::uint64_t> sent_elements) {
  x.messages = x.max_senders;
  for (std::uint64_t n : sent) x.messages = std::max(x.messages, n);
  for (std::uint64_t n : sent_elements) x.max_sent = std::max(x.max_sent, n);
}
}  // namespace detail

namespace detail {
/// The walk of plan_exchange below: every piece of the exchange from boxes `before` to boxes
/// `after` by the sender rule at the top of this file, in plan order (by receiver, in rank
/// order), handed to `piece(from, to, a, held)` (the piece is a n held: rank `to`'s box after
/// the step and the distinct box before it that it meets), with the sizes (received,
/// max_received, max_sent, messages, max_senders) and any error in x. Visiting a piece costs
/// no allocation; what to keep of it is the caller's (plan_exchange, lower/reshard.hpp).
/// `node_ranks`: the world ranks per node (0: one node; the header comment).
template <class Piece>
void walk_exchange(std::span<const box> before, std::span<const box> after, exchange_plan& x, Piece&& piece,
                   std::uint64_t node_ranks = 0) {
  const std::size_t D = before.size();
  const int R = D ? before[0].rank : 0;
  x.received.assign(D, 0);
  if (after.size() != D) {
    x.error = "an exchange needs one box per rank";
    return;
  }
  // Distinct non-empty boxes, ordered by their smallest holder, with their holders; own[r]:
  // the one rank r holds (none: npos).
  constexpr std::size_t npos = SIZE_MAX;
  std::map<box, std::size_t> index;
  std::vector<box> distinct;
  std::vector<std::vector<rank_t>> holders;
  std::vector<std::size_t> own(D, npos);
  for (std::size_t r = 0; r < D; ++r) {
    if (before[r].empty()) continue;
    auto [it, fresh] = index.emplace(before[r], distinct.size());
    if (fresh) {
      distinct.push_back(before[r]);
      holders.emplace_back();
    }
    holders[it->second].push_back(static_cast<rank_t>(r));
    own[r] = it->second;
  }
  // Per dimension, the distinct ranges, sorted: pairwise disjoint (a grid of ranges, every
  // tiling by a type), or else the distinct boxes must be pairwise disjoint (a box layout:
  // every receiver then meets the boxes one by one, `grid` false).
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> ranges(static_cast<std::size_t>(R));
  bool grid = true;
  std::string partly;
  for (int d = 0; d < R; ++d) {
    auto& v = ranges[static_cast<std::size_t>(d)];
    for (const box& b : distinct) v.emplace_back(b.lo[static_cast<std::size_t>(d)], b.hi[static_cast<std::size_t>(d)]);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    for (std::size_t k = 1; k < v.size() && grid; ++k)
      if (v[k].first < v[k - 1].second) {
        grid = false;
        partly = "the boxes before the exchange overlap partly along dimension " + std::to_string(d) + " ([" +
                 std::to_string(v[k - 1].first) + ", " + std::to_string(v[k - 1].second) + ") and [" +
                 std::to_string(v[k].first) + ", " + std::to_string(v[k].second) +
                 ")): an exchange needs every two ranks' ranges to be equal or disjoint in each dimension, or their "
                 "boxes disjoint";
      }
  }
  for (std::size_t j = 0; j < distinct.size() && !grid; ++j)
    for (std::size_t k = 0; k < j; ++k)
      if (!intersect(distinct[j], distinct[k]).empty()) {
        x.error = partly;
        return;
      }
  // The distinct boxes by their range numbers (a cell of the grid of ranges): in a table
  // by the cell's row-major number where the grid is at most a few times the boxes (a
  // tiling by a type fills its grid), else in a map.
  using cell = std::array<std::uint32_t, max_dims>;
  auto range_of = [&](int d, std::uint64_t lo) {
    const auto& v = ranges[static_cast<std::size_t>(d)];
    return static_cast<std::uint32_t>(std::lower_bound(v.begin(), v.end(), std::make_pair(lo, std::uint64_t{0})) - v.begin());
  };
  std::uint64_t grid_cells = 1;
  for (int d = 0; d < R && grid; ++d)
    if (!detail::mul_ok(grid_cells, ranges[static_cast<std::size_t>(d)].size(), grid_cells)) grid_cells = UINT64_MAX;
  const bool table = grid && grid_cells <= 16 * distinct.size() + 1024;
  auto number = [&](const cell& c) {
    std::uint64_t n = 0;
    for (int d = 0; d < R; ++d) n = n * ranges[static_cast<std::size_t>(d)].size() + c[static_cast<std::size_t>(d)];
    return n;
  };
  std::vector<std::size_t> at_table(table ? grid_cells : 0, npos);
  std::map<cell, std::size_t> at;
  for (std::size_t j = 0; j < distinct.size() && grid; ++j) {
    cell c{};
    for (int d = 0; d < R; ++d) c[static_cast<std::size_t>(d)] = range_of(d, distinct[j].lo[static_cast<std::size_t>(d)]);
    if (table) at_table[number(c)] = j;
    else at.emplace(c, j);
  }
  std::vector<std::uint64_t> served(distinct.size(), 0);  // receivers of each box so far
  std::map<std::pair<std::size_t, std::uint64_t>, std::uint64_t> served_near;  // ... per (box, node)
  std::vector<std::uint64_t> sent(D, 0);                  // pieces each rank sends
  std::vector<std::uint64_t> sent_elements(D, 0);
  std::array<std::uint32_t, max_dims> lo_i{}, hi_i{};
  std::array<std::vector<std::uint64_t>, max_dims> meet;  // a's extent in each range it meets
  std::uint64_t cells = 0;                                 // visited, over all receivers
  auto too_many = [&] {
    x.error = "the exchange would move more than " + std::to_string(max_exchange_cells) +
              " pieces (many small boxes to many ranks)";
    x.too_large = true;
  };
  for (std::size_t r = 0; r < D; ++r) {
    const box& a = after[r];
    if (a.rank != R) {
      x.error = "rank " + std::to_string(r) + "'s box has " + std::to_string(a.rank) + " dimensions, the array " +
                std::to_string(R);
      return;
    }
    if (a.empty()) continue;
    std::uint64_t covered = 0, got = 0, msgs = 0;
    // The piece of a in distinct box j, of n elements (n > 0), from r itself or by the
    // sender rule.
    auto take = [&](std::size_t j, std::uint64_t n) {
      rank_t from = static_cast<rank_t>(r);
      if (own[r] != j) {
        std::span<const rank_t> h = holders[j];
        std::uint64_t* count = &served[j];
        if (node_ranks > 0 && h.size() > 1) {  // the holders on r's node, where some are elsewhere
          const std::uint64_t node = r / node_ranks;
          const auto lo = std::partition_point(h.begin(), h.end(), [&](rank_t q) { return q / node_ranks < node; });
          const auto hi = std::partition_point(lo, h.end(), [&](rank_t q) { return q / node_ranks == node; });
          if (lo != hi && hi - lo != std::ssize(h)) {
            h = std::span<const rank_t>(lo, hi);
            count = &served_near[{j, node}];
          }
        }
        from = h.size() == 1 ? h[0] : h[(*count + j) % h.size()];
        ++*count;
        ++sent[from];
        sent_elements[from] += n;
        got += n;
        ++msgs;
      }
      covered += n;
      piece(from, static_cast<rank_t>(r), a, distinct[j]);
    };
    if (!grid) {  // disjoint boxes, one by one
      for (std::size_t j = 0; j < distinct.size(); ++j) {
        if ((cells += 1) > max_exchange_cells) {
          too_many();
          return;
        }
        if (const std::uint64_t n = intersect(a, distinct[j]).size()) take(j, n);
      }
    } else {
      // The ranges meeting a along each dimension, [lo_i[d], hi_i[d]), and a's extent in
      // each; then every cell of that block, row-major, its piece's elements the product of
      // the extents (pre[d]: over the dimensions before d) and its number kept alongside.
      bool none = false;
      for (int d = 0; d < R; ++d) {
        const auto i = static_cast<std::size_t>(d);
        const auto& v = ranges[i];
        auto first = std::partition_point(v.begin(), v.end(), [&](const auto& q) { return q.second <= a.lo[i]; });
        auto last = std::partition_point(first, v.end(), [&](const auto& q) { return q.first < a.hi[i]; });
        lo_i[i] = static_cast<std::uint32_t>(first - v.begin());
        hi_i[i] = static_cast<std::uint32_t>(last - v.begin());
        none = none || first == last;
        meet[i].clear();
        for (auto q = first; q != last; ++q) meet[i].push_back(std::min(a.hi[i], q->second) - std::max(a.lo[i], q->first));
      }
      cell c = lo_i;
      std::array<std::uint64_t, max_dims + 1> pre{}, num{};
      pre[0] = 1;
      int from_d = 0;  // the prefixes from this dimension on are stale
      while (!none) {
        if (++cells > max_exchange_cells) {
          too_many();
          return;
        }
        for (int d = from_d; d < R; ++d) {
          const auto i = static_cast<std::size_t>(d);
          pre[i + 1] = pre[i] * meet[i][c[i] - lo_i[i]];
          num[i + 1] = num[i] * ranges[i].size() + c[i];
        }
        std::size_t j = npos;
        if (table) j = at_table[num[static_cast<std::size_t>(R)]];
        else if (const auto it = at.find(c); it != at.end()) j = it->second;
        if (j != npos) take(j, pre[static_cast<std::size_t>(R)]);
        int d = R - 1;  // next cell, row-major
        for (; d >= 0; --d) {
          const auto i = static_cast<std::size_t>(d);
          if (++c[i] < hi_i[i]) break;
          c[i] = lo_i[i];
        }
        if (d < 0) break;
        from_d = d;
      }
    }
    if (covered != a.size()) {
      x.error = "no rank holds some elements of rank " + std::to_string(r) + "'s box " + box_text(a) +
                " before the exchange";
      return;
    }
    x.received[r] = got;
    x.max_received = std::max(x.max_received, got);
    x.max_senders = std::max(x.max_senders, msgs);  // a piece from each (a rank holds one box)
  }
  finish_senders(x, sent, sent_elements);
}
}  // namespace detail

/// The pieces of an exchange from boxes `before` to boxes `after` (one of each per rank),
/// with the sender rule at the top of this file (`level`, `of_rank`: plan_detail above;
/// `node_ranks`: world ranks per node, 0 for one node).
inline exchange_plan plan_exchange(std::span<const box> before, std::span<const box> after,
                                   plan_detail level = plan_detail::pieces, std::optional<rank_t> of_rank = {},
                                   std::uint64_t node_ranks = 0) {
  exchange_plan x;
  const bool keep = level == plan_detail::pieces;
  detail::walk_exchange(
      before, after, x,
      [&](rank_t from, rank_t to, const box& a, const box& held) {
        if (detail::keeps_piece(level, of_rank, from, to)) x.pieces.push_back({from, to, intersect(a, held)});
      },
      node_ranks);
  if (keep) {  // the pieces lie by receiver, in rank order
    const std::size_t D = before.size();
    x.first.assign(D + 1, 0);
    for (const exchange_piece& pc : x.pieces) ++x.first[pc.to + std::size_t{1}];
    for (std::size_t r = 0; r < D; ++r) x.first[r + 1] += x.first[r];
    x.before.assign(before.begin(), before.end());
    x.after.assign(after.begin(), after.end());
  }
  return x;
}

/// The pieces of step `s` of p, a step that moves_as_exchange (program.hpp) and is not an
/// exchange, from every rank's boxes before and after it: the collective's own pattern, each
/// piece exactly the elements a box holds. Allgather: member r receives every other member's
/// box from it; alltoall: chunk m of member k's box (ceil-sized) goes from k to member m;
/// allpermute: r's box goes to dest[r]; dynslice: every rank keeps its chunk (local copies).
/// `level`, `of_rank`: what it keeps, as plan_exchange.
inline exchange_plan plan_collective_pieces(const program& p, std::size_t s, std::vector<box> before,
                                            std::vector<box> after, plan_detail level = plan_detail::pieces,
                                            std::optional<rank_t> of_rank = {}) {
  exchange_plan x;
  const step& st = p.steps[s];
  const std::uint64_t D = p.world_size();
  const bool keep = level == plan_detail::pieces;
  std::vector<std::vector<exchange_piece>> into(keep ? D : 0);
  std::vector<std::uint64_t> sent(D, 0), sent_elements(D, 0), senders(D, 0);
  x.received.assign(D, 0);
  auto add = [&](std::uint64_t from, std::uint64_t to, const box& b) {
    const std::uint64_t n = b.size();
    if (n == 0) return;
    if (from != to) {
      x.received[to] += n;
      ++senders[to];  // one piece from each member
      ++sent[from];
      sent_elements[from] += n;
    }
    if (detail::keeps_piece(level, of_rank, static_cast<rank_t>(from), static_cast<rank_t>(to)))
      into[to].push_back({static_cast<rank_t>(from), static_cast<rank_t>(to), b});
  };
  switch (st.kind) {
    case op::allgather:
    case op::alltoall:
      for (std::size_t g = 0; g < st.group_count(); ++g) {
        const auto grp = st.group(g);
        for (std::size_t m = 0; m < grp.size(); ++m)
          for (rank_t k : grp)  // an alltoall: chunk m of k's box, ceil-sized as trace_boxes splits it
            add(k, grp[m], st.kind == op::alltoall ? chunk_of(before[k], st.split_dim, st.parts, m, true) : before[k]);
      }
      break;
    case op::allpermute:
      for (std::uint64_t r = 0; r < D; ++r) add(r, st.dest[r], before[r]);
      break;
    default:  // dynslice
      for (std::uint64_t r = 0; r < D; ++r) add(r, r, after[r]);
      break;
  }
  for (std::uint64_t r = 0; r < D; ++r) {
    x.max_received = std::max(x.max_received, x.received[r]);
    x.max_senders = std::max(x.max_senders, senders[r]);
  }
  detail::finish_senders(x, sent, sent_elements);
  if (!keep) return x;
  x.first.assign(D + 1, 0);
  for (std::uint64_t r = 0; r < D; ++r) {
    x.first[r] = x.pieces.size();
    x.pieces.insert(x.pieces.end(), into[r].begin(), into[r].end());
  }
  x.first[D] = x.pieces.size();
  x.before = std::move(before);
  x.after = std::move(after);
  return x;
}

/// The plan of step `s` of program p (which program_check accepted up to the boxes), a
/// step that moves_as_exchange: an exchange's by the sender rule above, another step's by
/// plan_collective_pieces; from the boxes of trace_states (at least through step s).
inline exchange_plan plan_exchange(const program& p, std::size_t s, const box_states& t,
                                   plan_detail level = plan_detail::pieces, std::optional<rank_t> of_rank = {}) {
  if (t.states.size() <= s + 1) {
    exchange_plan x;
    x.error = t.error.empty() ? "the boxes are not followed through step " + std::to_string(s) : t.error;
    return x;
  }
  if (p.steps[s].kind != op::exchange)
    return plan_collective_pieces(p, s, t.states[s], t.states[s + 1], level, of_rank);
  return plan_exchange(t.states[s], t.states[s + 1], level, of_rank, p.steps[s].node_ranks);
}
/// The same, following the boxes up to step s.
inline exchange_plan plan_exchange(const program& p, std::size_t s, plan_detail level = plan_detail::pieces) {
  return plan_exchange(p, s, trace_states(p, s + 1), level);
}

/// The most elements one rank receives in a run of p: the steps that move boxes as
/// exchanges (moves_as_exchange above: the exchange, and on uneven types the collectives
/// whose boxes do not land on padded tiles) by their pieces, rank by rank; an allpermute by
/// the tiles that change rank; every other collective by core/cost.hpp received_elements,
/// which every rank receives (on uneven types: padded blocks, as they run). This is what a
/// run moves, where program::received_elements counts exchange-run steps by padded tiles
/// over the group size (below the data-movement lower bound on short and empty tiles); on
/// even programs the two agree but for exchanges, where this one is
/// exact per rank.
inline std::uint64_t run_received_elements(const program& p) {
  const std::uint64_t D = p.world_size();
  const box_states states = trace_states(p);
  std::vector<std::uint64_t> got(D, 0);
  std::uint64_t local = local_size(p.m, p.source), all = 0;
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const step& s = p.steps[i];
    if (moves_as_exchange(p, i, states)) {
      const exchange_plan x = plan_exchange(p, i, states, plan_detail::sizes);
      if (x.error.empty())
        for (std::uint64_t r = 0; r < D; ++r) got[r] += x.received[r];
      else
        all += s.kind == op::exchange ? s.cost : received_elements(s.kind, s.parts, local, s.local_after);
    } else if (s.kind == op::allpermute) {
      for (std::uint64_t r = 0; r < D && r < s.dest.size(); ++r)
        if (s.dest[r] != r && s.dest[r] < D) got[s.dest[r]] += local;
    } else if (s.kind == op::alltoall && !s.fused() && p.uneven() && states.states.size() > i) {
      all += (s.parts - 1) * padded_block(p, i, states, local);  // padded chunks of ceil(t / parts) rows
    } else {
      all += received_elements(s.kind, s.parts, local, s.local_after);
    }
    local = s.local_after;
  }
  std::uint64_t most = 0;
  for (std::uint64_t g : got) most = std::max(most, g);
  return all + most;
}

}  // namespace redist
