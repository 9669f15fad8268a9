// redist/core/dtensor.hpp -- PyTorch DTensor placements, in and out.
//
// A DTensor is laid out by one placement per mesh dimension, in mesh order:
// Shard(d) splits tensor dimension d over that mesh dimension, Replicate() replicates,
// Partial() leaves a pending sum (redist's `sum{...}`); Partial('max'), Partial('min'),
// Partial('prod') (or 'product', torch's name, which to_dtensor writes), Partial('avg') and
// Partial(reduce_op='max') leave pending values of that kind (`max{...}`, ...), one kind per
// array. When several mesh dimensions
// shard one tensor dimension, DTensor splits by the first mesh dimension first (it is
// the major one), so [Shard(0), Shard(0)] over mesh dims (x, y) is redist's
// [{y, x}..] (minor-to-major). DeviceMesh(arange(n).reshape(...)) is row-major, like
// redist's default device map. Uneven shards: a single Shard of a tensor dimension is
// torch.chunk, ceil-sized chunks with the last ones short or empty, which is redist's
// uneven tiling (DESIGN.md section 2). Several mesh dimensions sharding one tensor
// dimension chunk each chunk again (nested chunks); that equals redist's ceil tiles only
// for some sizes: from_dtensor refuses placements whose nested chunks differ, with both
// tilings shown (never silently mapped to other places), and dtensor_layout reads them as
// the box layout they are (redist/box.hpp; dtensor_type_says tells which applies). Types that
// use sub-axes have no placements.
//
// _StridedShard(d, split_factor=f) (also `_StridedShard(dim=d, sf=f)`, as torch prints it) is
// FSDP2 over tensor parallelism: later mesh dimensions that shard d, whose sizes multiply to
// f, split it first, then this one splits each of their chunks. [_StridedShard(0, 2),
// Shard(0)] over (dp: 2, tp: 2) is [{dp, tp}..], tp the major axis; uneven, it is the nested
// chunks in that order (tp's chunks, then dp's chunks of each), the data FSDP2 holds. From
// the last mesh dimension back, a Shard goes above the axes after it, a _StridedShard below
// the major ones of them whose sizes multiply to f (torch's _split_tensor: chunks k, k + n,
// ... of n f go to coordinate k); a split factor that no such axes make cuts a device's
// data into several boxes (torch gives overlapping shards) and is refused. to_dtensor
// writes _StridedShard where mesh order alone cannot say a type: every order of whole axes
// has placements.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redist/box.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/jax.hpp"
#include "redist/core/lex.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/placement.hpp"

namespace redist {

namespace detail {
/// "" if DTensor's nested chunks of a dimension of size n sharded by mesh axes of these
/// sizes (major first, the placement order) are redist's ceil tiles; otherwise one line
/// with both tilings (their lengths, up to 64 tiles).
///
/// Without enumerating the tiles (a mesh may have billions of devices): with t = ceil(n/k),
/// the ceil tiles grouped by level j are blocks of T_j = t * (k / K_j) (K_j the product of
/// the first j sizes), clipped to n; torch.chunk splits a parent of length L into pieces
/// of ceil(L / s). Full parents (L = T_(j-1) = s T_j) always split into T_j; only the
/// partial parent, L = n mod T_(j-1), can differ, and it splits the same way iff L <= 1 or
/// ceil(L / s) = T_j.
inline std::string nested_chunk_problem(std::uint64_t n, std::span<const std::uint64_t> sizes, int dim) {
  std::uint64_t k = 1;
  for (std::uint64_t s : sizes) k *= s;  // the mesh's device count fits in 64 bits
  const std::uint64_t t = n / k + (n % k != 0);
  bool same = true;
  std::uint64_t below = k;  // T_(j-1) = t * below (compared with n by division: no overflow)
  for (std::uint64_t s : sizes) {
    const std::uint64_t block = below / s;  // T_j = t * block
    if (s > 1) {
      // T_(j-1) > n: the one parent is [0, n); otherwise the partial one is n mod T_(j-1).
      const std::uint64_t L = t > n / below ? n : n % (t * below);
      const std::uint64_t c = L / s + (L % s != 0);
      if (L > 1 && (t > n / block || c != t * block)) same = false;  // T_j > n >= L > c, or c != T_j
    }
    below = block;
  }
  if (same) return {};
  std::string text = "dimension " + std::to_string(dim) + " of size " + std::to_string(n) + ": DTensor's nested chunks";
  if (k <= 64) {  // both tilings' lengths
    std::vector<std::pair<std::uint64_t, std::uint64_t>> chunks{{0, n}}, next;
    for (std::uint64_t s : sizes) {  // torch.chunk of every chunk: ceil-sized, short or empty at the end
      next.clear();
      for (auto [lo, hi] : chunks) {
        const std::uint64_t len = hi - lo, c = len / s + (len % s != 0);
        for (std::uint64_t j = 0; j < s; ++j) next.emplace_back(lo + clip_mul(j, c, len), lo + clip_mul(j + 1, c, len));
      }
      std::swap(chunks, next);
    }
    std::string dt, ours;
    for (std::uint64_t i = 0; i < k; ++i) {
      dt += (i ? " " : "") + std::to_string(chunks[i].second - chunks[i].first);
      ours += (i ? " " : "") + std::to_string(clip_mul(i + 1, t, n) - clip_mul(i, t, n));
    }
    text += " have lengths " + dt + ", redist's tiles (ceil(" + std::to_string(n) + " / " + std::to_string(k) +
            ")) " + ours;
  } else {
    text += " over " + std::to_string(k) + " devices are not redist's tiles of ceil(" + std::to_string(n) + " / " +
            std::to_string(k) + ") = " + std::to_string(t);
  }
  return text + "; the placements and the type put data in different places";
}

/// Refuse a dimension sharded by several mesh axes (declared ids, major first) whose
/// nested chunks are not ceil tiles.
inline void check_nested_chunks(const device_mesh& m, std::uint64_t n, const std::vector<int>& major_first, int dim) {
  if (major_first.size() < 2) return;
  std::vector<std::uint64_t> sizes;
  for (int a : major_first) sizes.push_back(m.sizes[a]);
  if (std::string e = nested_chunk_problem(n, sizes, dim); !e.empty()) throw redist_error(errc::not_divisible, e);
}
}  // namespace detail

namespace detail {
/// Placements read: per tensor dimension the mesh axes sharding it (declared ids, major
/// first, the placement order), the mesh axes of pending values and their reduction.
struct dtensor_placements {
  std::vector<std::vector<int>> axes;
  std::vector<int> sums;
  reduction reduce = reduction::sum;
};

/// Parse placements (from_dtensor's grammar); throws redist_error naming the column.
inline dtensor_placements parse_placements(const device_mesh& m, std::span<const std::uint64_t> global,
                                           std::string_view placements) {
  if (error e = detail::check_text_length(placements); !e.ok()) throw redist_error(e);
  detail::scanner sc{placements};
  auto fail = [&]() { throw redist_error(sc.err, placements); };
  const int rank = static_cast<int>(global.size());
  std::vector<std::vector<int>> axes(global.size());  // placement order while reading
  std::vector<std::vector<std::pair<std::uint64_t, int>>> factors(global.size());  // per axis: split factor, column
  std::vector<int> sums;
  reduction reduce = reduction::sum;  // Partial('max'), ...: one kind for all
  const char close = sc.peek() == '(' ? ')' : ']';
  if (!sc.accept('[') && !sc.accept('(')) {
    sc.fail_expected("'[' or '(' to open the placements");
    fail();
  }
  int mesh_dim = 0;
  if (!sc.accept(close)) {
    do {
      sc.skip();
      const int col = sc.pos;
      std::string_view kind;
      if (!sc.name(kind)) fail();
      if (mesh_dim >= m.naxes) {
        sc.err = error::make(errc::syntax, "more placements than the mesh has axes (" + std::to_string(m.naxes) + ")", col);
        fail();
      }
      if (!sc.expect('(', "'(' after the placement")) fail();
      if (kind == "Shard" || kind == "_StridedShard") {
        const bool strided = kind == "_StridedShard";
        sc.skip();
        if (detail::is_ident_start(sc.peek())) {  // dim=
          std::string_view kw;
          sc.name(kw);
          if (kw != "dim" || !sc.expect('=', "'=' after dim")) {
            if (!sc.failed())
              sc.err = error::make(errc::syntax,
                                   strided ? "expected _StridedShard(dim, split_factor=f) or _StridedShard(dim=d, sf=f)"
                                           : "expected Shard(dim) or Shard(dim=d)",
                                   col);
            fail();
          }
        }
        const bool neg = sc.accept('-');
        std::uint64_t d = 0;
        sc.skip();
        const int dcol = sc.pos;
        if (!sc.integer(d)) fail();
        // Python's rule: a negative d counts from the end (-1 is the last dimension, -0 is 0).
        // Compared as unsigned, so that no value of d can overflow.
        const auto R = static_cast<std::uint64_t>(rank);
        const bool from_end = neg && d > 0;
        if (from_end ? d > R : d >= R) {
          sc.err = error::make(errc::syntax, "Shard(" + std::string(neg ? "-" : "") + std::to_string(d) +
                                                 ") names no dimension of a " + std::to_string(rank) + "-D array",
                               dcol);
          fail();
        }
        std::uint64_t factor = 1;  // _StridedShard's split factor, 1 for Shard
        int fcol = 0;
        if (strided) {
          if (!sc.expect(',', "',' then the split factor")) fail();
          sc.skip();
          if (detail::is_ident_start(sc.peek())) {  // split_factor= or sf=
            std::string_view kw;
            sc.name(kw);
            if ((kw != "split_factor" && kw != "sf") || !sc.expect('=', "'=' after the keyword")) {
              if (!sc.failed())
                sc.err = error::make(errc::syntax, "expected split_factor=f or sf=f in _StridedShard", col);
              fail();
            }
          }
          sc.skip();
          fcol = sc.pos;
          if (!sc.integer(factor)) fail();
          if (factor == 0) {
            sc.err = error::make(errc::bad_size, "a split factor must be at least 1", fcol);
            fail();
          }
        }
        const auto dim = static_cast<std::size_t>(from_end ? R - d : d);
        axes[dim].push_back(mesh_dim);
        factors[dim].emplace_back(factor, fcol);
      } else if (kind == "Replicate") {
      } else if (kind == "Partial") {
        sc.skip();
        if (sc.peek() != ')') {  // Partial('sum') or Partial(reduce_op='sum')
          if (detail::is_ident_start(sc.peek())) {
            std::string_view kw;
            sc.name(kw);
            if (kw != "reduce_op") {
              sc.err = error::make(errc::syntax, "expected Partial(), Partial('sum') or Partial(reduce_op='sum')", col);
              fail();
            }
            if (!sc.expect('=', "'=' after reduce_op")) fail();
          }
          std::string_view op;
          sc.skip();
          const int ocol = sc.pos;
          if (!sc.name(op)) fail();
          reduction r = reduction::sum;
          if (!reduction_from_name(op == "product" ? std::string_view("prod") : op, r)) {
            sc.err = error::make(errc::syntax,
                                 "unknown reduction '" + std::string(op) + "' (Partial takes sum, max, min, prod or avg)",
                                 ocol);
            fail();
          }
          if (!sums.empty() && r != reduce) {
            sc.err = error::make(errc::rule,
                                 "Partial('" + std::string(op) + "') after Partial('" +
                                     std::string(reduction_name(reduce)) +
                                     "'): redist keeps one reduction kind per array",
                                 ocol);
            fail();
          }
          reduce = r;
        } else if (!sums.empty() && reduce != reduction::sum) {
          sc.err = error::make(errc::rule,
                               "Partial() (a sum) after Partial('" + std::string(reduction_name(reduce)) +
                                   "'): redist keeps one reduction kind per array",
                               col);
          fail();
        }
        sums.push_back(mesh_dim);
      } else {
        sc.err = error::make(errc::syntax,
                             "unknown placement '" + std::string(kind) + "' (Shard, _StridedShard, Replicate, Partial)", col);
        fail();
      }
      if (!sc.expect(')', "')' to close the placement")) fail();
      ++mesh_dim;
    } while (sc.accept(','));
    if (!sc.expect(close, close == ']' ? "',' or ']'" : "',' or ')'")) fail();
  }
  if (!sc.at_end()) {
    sc.fail_expected("the end of the placements");
    fail();
  }
  if (mesh_dim != m.naxes)
    throw redist_error(errc::syntax, "there are " + std::to_string(mesh_dim) + " placements but the mesh has " +
                                         std::to_string(m.naxes) + " axes; DTensor needs one per mesh dimension");
  // _StridedShard(d, f): later mesh dimensions that shard d, the product of whose sizes is
  // f, split it first (FSDP2 over tensor parallelism: right-to-left), then this one, then
  // the rest. From the last mesh dimension back, a Shard goes above the axes after it, a
  // _StridedShard below the major ones of them whose sizes multiply to f.
  for (std::size_t d = 0; d < axes.size(); ++d) {
    std::vector<int> order;  // major first
    for (std::size_t i = axes[d].size(); i-- > 0;) {
      const int a = axes[d][i];
      const auto [f, fcol] = factors[d][i];
      std::size_t at = 0;  // below the major axes whose sizes multiply to f
      for (std::uint64_t p = 1; p != f; p *= m.sizes[order[at++]]) {
        if (at < order.size() && p <= f / m.sizes[order[at]]) continue;
        std::string products = "1";  // what a split factor may be here
        for (std::uint64_t q = 1; int b : order) products += ", " + std::to_string(q *= m.sizes[b]);
        throw redist_error(error::make(errc::rule,
                                       "_StridedShard(" + std::to_string(d) + ", split_factor=" + std::to_string(f) +
                                           ") on mesh dimension " + std::to_string(a) +
                                           ": the split factor must be the product of the sizes of the first of the "
                                           "later mesh dimensions that shard dimension " + std::to_string(d) + " (" +
                                           products + "); others cut a device's data into several boxes",
                                       fcol),
                           placements);
      }
      order.insert(order.begin() + static_cast<std::ptrdiff_t>(at), a);
    }
    axes[d] = std::move(order);
  }
  return {std::move(axes), std::move(sums), reduce};
}

/// True iff some dimension's nested chunks are not redist's ceil tiles (no type says them).
inline bool nested_uneven(const device_mesh& m, std::span<const std::uint64_t> global, const dtensor_placements& pl) {
  for (std::size_t d = 0; d < pl.axes.size() && d < global.size(); ++d) {
    if (pl.axes[d].size() < 2) continue;
    std::vector<std::uint64_t> sizes;
    for (int a : pl.axes[d]) sizes.push_back(m.sizes[a]);
    if (!nested_chunk_problem(global[d], sizes, static_cast<int>(d)).empty()) return true;
  }
  return false;
}
}  // namespace detail

/// Parse placements (`[Shard(0), Replicate()]`, `(Shard(dim=1), Partial())`), one per
/// mesh axis in declared order, for an array of the given global shape. Throws
/// redist_error naming the column, and for nested chunks no type says (read those with
/// dtensor_layout).
inline dist_type from_dtensor(const device_mesh& m, std::span<const std::uint64_t> global, std::string_view placements) {
  auto [axes, sums, reduce] = detail::parse_placements(m, global, placements);
  for (std::size_t d = 0; d < axes.size() && d < global.size(); ++d)
    detail::check_nested_chunks(m, global[d], axes[d], static_cast<int>(d));
  for (auto& a : axes) std::reverse(a.begin(), a.end());  // minor-to-major
  dist_type t = detail::type_from_axes(m, global, axes, "placements");
  detail::add_pending_axes(m, sums, t);
  if (t.nsum > 0) t.reduce = reduce;
  return t;
}

/// Write a type as DTensor placements; throws redist_error if it has none.
inline std::string to_dtensor(const device_mesh& m, const dist_type& t) {
  std::vector<std::string> place(static_cast<std::size_t>(m.naxes), "Replicate()");
  std::vector<int> axes;
  for (int d = 0; d < t.rank; ++d) {
    if (!detail::whole_axes(m, t.dims[d], axes))
      throw redist_error(errc::rule, "dimension " + std::to_string(d) + " is split by a sub-axis, which placements cannot name");
    std::reverse(axes.begin(), axes.end());  // major first
    detail::check_nested_chunks(m, t.dims[d].global, axes, d);
    // The reading's rule backwards (parse_placements): the earliest mesh dimension left is a
    // Shard if it is the major axis left, else a _StridedShard over the axes above it.
    std::vector<int> left = axes;
    while (!left.empty()) {
      const auto first = std::min_element(left.begin(), left.end());
      std::uint64_t f = 1;
      for (auto it = left.begin(); it != first; ++it) f *= m.sizes[*it];
      place[static_cast<std::size_t>(*first)] =
          f == 1 ? "Shard(" + std::to_string(d) + ")"
                 : "_StridedShard(" + std::to_string(d) + ", split_factor=" + std::to_string(f) + ")";
      left.erase(first);
    }
  }
  for (int a : detail::pending_axes(m, t, "placement")) {
    // DTensor's names: Partial() for sums, 'product' (torch's ReduceOp.PRODUCT) for prod.
    place[static_cast<std::size_t>(a)] = t.reduce == reduction::sum    ? std::string("Partial()")
                                         : t.reduce == reduction::prod ? std::string("Partial('product')")
                                                                       : "Partial('" + std::string(reduction_name(t.reduce)) + "')";
  }
  return detail::listed("[", place, "]");
}

/// True iff a type says the placements' layout (from_dtensor reads them); false where some
/// dimension's nested chunks are not redist's ceil tiles (dtensor_layout reads them).
/// Throws redist_error for malformed placements.
inline bool dtensor_type_says(const device_mesh& m, std::span<const std::uint64_t> global, std::string_view placements) {
  return !detail::nested_uneven(m, global, detail::parse_placements(m, global, placements));
}

/// The placements' layout as boxes (redist/box.hpp): mesh position p's box, DTensor's
/// nested torch.chunk of every sharded dimension (mesh dimensions in placement order, each
/// chunk split again into ceil-sized chunks, the last ones short or empty), on world rank
/// pm.at(p) in a world of W ranks (0: pm.min_world()); the other ranks hold nothing; ranks
/// that differ only along Replicate() mesh dimensions hold equal boxes (replicas). Throws
/// redist_error for malformed placements and Partial() (a box layout holds values, not
/// partial ones).
inline box_layout dtensor_layout(const placed_mesh& pm, std::span<const std::uint64_t> global,
                                 std::string_view placements, std::uint64_t W = 0) {
  const device_mesh& m = pm.mesh;
  const detail::dtensor_placements pl = detail::parse_placements(m, global, placements);
  if (!pl.sums.empty())
    throw redist_error(errc::rule, "Partial() on mesh dimension " + std::to_string(pl.sums.front()) +
                                       ": a box layout holds values, not partial ones");
  box_layout l = placed_box_layout(pm, global, W);
  for (std::uint64_t p = 0; p < m.devices; ++p) {
    std::vector<std::uint64_t> coord(static_cast<std::size_t>(m.naxes));  // of row-major position p
    for (std::uint64_t a = coord.size(), rest = p; a-- > 0; rest /= m.sizes[a]) coord[a] = rest % m.sizes[a];
    box b;
    b.rank = static_cast<int>(global.size());
    for (std::size_t d = 0; d < global.size(); ++d) {
      std::uint64_t lo = 0, hi = global[d];
      for (int a : pl.axes[d]) {  // torch.chunk of the chunk: ceil-sized pieces
        const std::uint64_t len = hi - lo, s = m.sizes[a], c = len / s + (len % s != 0);
        const std::uint64_t i = coord[static_cast<std::size_t>(a)];
        hi = lo + clip_mul(i + 1, c, len);
        lo = lo + clip_mul(i, c, len);
      }
      b.lo[d] = lo;
      b.hi[d] = hi;
    }
    l.boxes[pm.at(p)] = b;
  }
  return l;
}

}  // namespace redist
