// redist/core/dtype.hpp -- distributed array types (paper Fig. 6), their
// well-formedness (Fig. 7b), parsing and printing of the paper syntax.
//
// A type is a list of dimensions `tile{a1, a2, ...}global`. Inside braces the axes are
// listed minor-to-major (Fig. 7a). A type may end with pending-sum axes (an extension
// for partial sums): `[64{x}256, 1024] sum{y}` means every device holds a partial value
// and the array is the sum over the devices that differ only along y. A sum axis
// partitions no dimension; sum axes are kept sorted by sub-axis id (a set). Other
// reductions use the same form with their name (DESIGN.md section 2): `max{y}`, `min{y}`,
// `prod{y}`, `avg{y}` (the mean of the partial values, DTensor's Partial('avg')); a type
// has one reduction kind, dist_type::reduce (sum when it has no pending axes). Internally every axis is stored as its prime
// sub-axes (ids of `device_mesh::sub`), also minor-to-major; a user axis `x` of size 4 is the
// list [x:(2)2, x:(1)2].
#pragma once

#include <cstdint>
#include <string_view>

#include "redist/core/config.hpp"
#include "redist/core/error.hpp"
#include "redist/core/lex.hpp"
#include "redist/core/mesh.hpp"

namespace redist {

/// One distributed dimension: global size and its partitioning sub-axes (minor-to-major).
struct dim {
  std::uint64_t global = 1;
  int n = 0;
  std::uint8_t axes[max_subaxes]{};
  constexpr bool operator==(const dim& o) const {
    if (global != o.global || n != o.n) return false;
    for (int i = 0; i < n; ++i)
      if (axes[i] != o.axes[i]) return false;
    return true;
  }
};

/// How the pending partial values of a type combine (DESIGN.md section 2): `sum{y}`,
/// `max{y}`, `min{y}`, `prod{y}`, `avg{y}` (the mean of the partials).
enum class reduction : std::uint8_t { sum, max, min, prod, avg };
inline constexpr reduction all_reductions[] = {reduction::sum, reduction::max, reduction::min, reduction::prod,
                                               reduction::avg};

/// The name of a reduction as types, JSON and DTensor write it ("sum", "max", ...).
constexpr std::string_view reduction_name(reduction r) {
  switch (r) {
    case reduction::sum: return "sum";
    case reduction::max: return "max";
    case reduction::min: return "min";
    case reduction::prod: return "prod";
    case reduction::avg: return "avg";
  }
  return "?";
}
/// The reduction named `n`; false (and `out` unchanged) for an unknown name.
constexpr bool reduction_from_name(std::string_view n, reduction& out) {
  for (reduction r : all_reductions)
    if (reduction_name(r) == n) {
      out = r;
      return true;
    }
  return false;
}

/// A distributed array type over a mesh (the mesh is kept alongside, not inside).
struct dist_type {
  int rank = 0;
  dim dims[max_dims]{};
  int nsum = 0;                       ///< pending-sum sub-axes (partial values of any reduction)
  std::uint8_t sum[max_subaxes]{};    ///< their ids, ascending
  reduction reduce = reduction::sum;  ///< how the partial values combine (meaningful when nsum > 0)
  constexpr bool operator==(const dist_type& o) const {
    if (rank != o.rank || nsum != o.nsum) return false;
    if (nsum > 0 && reduce != o.reduce) return false;
    for (int d = 0; d < rank; ++d)
      if (!(dims[d] == o.dims[d])) return false;
    for (int i = 0; i < nsum; ++i)
      if (sum[i] != o.sum[i]) return false;
    return true;
  }
};

/// t with its pending values combined: no pending-sum axes (the reduction reset to sum, as
/// for every type without pending values).
constexpr dist_type without_pending(dist_type t) {
  t.nsum = 0;
  t.reduce = reduction::sum;
  return t;
}

/// Number of partial values summed per element (product of the sum axes' sizes).
constexpr std::uint64_t sum_parts(const device_mesh& m, const dist_type& t) {
  std::uint64_t p = 1;
  for (int i = 0; i < t.nsum; ++i) p *= m.sub[t.sum[i]].size;
  return p;
}

/// Number of tiles dimension d is split into (product of its axis sizes).
constexpr std::uint64_t parts(const device_mesh& m, const dim& d) {
  std::uint64_t p = 1;
  for (int i = 0; i < d.n; ++i) p *= m.sub[d.axes[i]].size;
  return p;
}
/// Tile size of a dimension (its local size): ceil(global / parts). Where the parts do
/// not divide the global size (an uneven dimension, JAX/XLA semantics), tile i covers
/// [i*t, min((i+1)*t, global)), possibly empty; the local size counts the padded tile t.
constexpr std::uint64_t tile(const device_mesh& m, const dim& d) {
  const std::uint64_t p = parts(m, d);
  return d.global / p + (d.global % p != 0 ? 1 : 0);
}
/// True iff the dimension's parts divide its global size (the paper's types).
constexpr bool even(const device_mesh& m, const dim& d) { return d.global % parts(m, d) == 0; }
/// The first dimension of t that its parts do not divide, or -1 if t is even.
constexpr int uneven_dim(const device_mesh& m, const dist_type& t) {
  for (int d = 0; d < t.rank; ++d)
    if (!even(m, t.dims[d])) return d;
  return -1;
}
/// True iff every dimension of t is even (the paper's types).
constexpr bool even(const device_mesh& m, const dist_type& t) { return uneven_dim(m, t) < 0; }

// The collectives on uneven dimensions (docs/reference.md "Uneven dimensions"): a
// dimension of n in k tiles of t = ceil(n / k) (tile i: [i*t, min((i+1)*t, n))), and what
// the box semantics of DESIGN.md section 4 make of its boxes. Each predicate holds iff the
// step lands exactly on the tiles of the type after it, so that a program of them follows
// types; on even dimensions they are the paper's divisibility conditions.
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }
/// i * t clipped to n, without overflow: where box i of t-wide boxes starts in a dimension of
/// n (n for an empty box past the end). Offsets near 2^64 would wrap (issue 27).
constexpr std::uint64_t clip_mul(std::uint64_t i, std::uint64_t t, std::uint64_t n) {
  if (t != 0 && i > n / t) return n;
  return i * t < n ? i * t : n;
}
/// lo + len clipped to n, without overflow: where a box of len starting at lo ends in a
/// dimension of n.
constexpr std::uint64_t clip_add(std::uint64_t lo, std::uint64_t len, std::uint64_t n) {
  if (lo >= n) return n;
  return len < n - lo ? lo + len : n;
}
/// The tiles of n in k*s nest in those of n in k (tile i of k is the union of tiles i*s ..
/// i*s+s-1 of k*s): an allgather of s adjacent boxes gives a tile of n in k.
constexpr bool tiles_nest(std::uint64_t n, std::uint64_t k, std::uint64_t s) {
  return k == 1 || ceil_div(n, k) == s * ceil_div(n, k * s);
}
/// Splitting every box of n in k into s chunks of ceil(extent / s), the last ones short or
/// empty (a dynslice), gives the tiles of n in k*s.
constexpr bool ceil_split_lands(std::uint64_t n, std::uint64_t k, std::uint64_t s) {
  if (n == 0 || !tiles_nest(n, k, s)) return false;
  const std::uint64_t t = ceil_div(n, k), last = n - (n - 1) / t * t;  // the last non-empty box
  return last == t || last <= 1 || ceil_div(last, s) == ceil_div(n, k * s);
}

/// "dimension 0 of size 7 is split unevenly into 4 tiles", for the messages about an uneven
/// dimension d of t.
constexpr text uneven_text(const device_mesh& m, const dist_type& t, int d) {
  text s("dimension ");
  s.append_int(d).append(" of size ").append_uint(t.dims[d].global).append(" is split unevenly into ")
      .append_uint(parts(m, t.dims[d])).append(" tiles");
  return s;
}
/// The first uneven dimension of a, else of b, or -1 (two types of one array: a program's).
constexpr int uneven_dim(const device_mesh& m, const dist_type& a, const dist_type& b) {
  const int d = uneven_dim(m, a);
  return d >= 0 ? d : uneven_dim(m, b);
}

/// localsize(t): elements of one device's tile.
constexpr std::uint64_t local_size(const device_mesh& m, const dist_type& t) {
  std::uint64_t s = 1;
  for (int d = 0; d < t.rank; ++d) s *= tile(m, t.dims[d]);
  return s;
}
/// globalsize(t): elements of the global array.
constexpr std::uint64_t global_size(const dist_type& t) {
  std::uint64_t s = 1;
  for (int d = 0; d < t.rank; ++d) s *= t.dims[d].global;
  return s;
}
/// Bit k set iff sub-axis k partitions some dimension or is a pending-sum axis.
constexpr std::uint64_t used_mask(const dist_type& t) {
  std::uint64_t u = 0;
  for (int d = 0; d < t.rank; ++d)
    for (int i = 0; i < t.dims[d].n; ++i) u |= std::uint64_t{1} << t.dims[d].axes[i];
  for (int i = 0; i < t.nsum; ++i) u |= std::uint64_t{1} << t.sum[i];
  return u;
}
/// Same global shape (the validity criterion of a redistribution, Sec. 2.5).
constexpr bool same_global(const dist_type& a, const dist_type& b) {
  if (a.rank != b.rank) return false;
  for (int d = 0; d < a.rank; ++d)
    if (a.dims[d].global != b.dims[d].global) return false;
  return true;
}
/// Same local shape (the premise of T-Permute).
constexpr bool same_local(const device_mesh& m, const dist_type& a, const dist_type& b) {
  if (a.rank != b.rank) return false;
  for (int d = 0; d < a.rank; ++d)
    if (tile(m, a.dims[d]) != tile(m, b.dims[d])) return false;
  return true;
}

/// Well-formedness (Fig. 7b, with uneven dimensions allowed): axes exist, no axis twice,
/// sizes fit.
constexpr error check(const device_mesh& m, const dist_type& t) {
  if (t.rank > max_dims) return error::make(errc::capacity, "a type may have at most 12 dimensions");
  std::uint64_t seen = 0;
  std::uint64_t gsize = 1;
  for (int d = 0; d < t.rank; ++d) {
    const dim& dm = t.dims[d];
    if (dm.global == 0) {
      text s("dimension ");
      s.append_int(d).append(" has global size 0");
      error e; e.code = errc::bad_size; e.message = s; return e;
    }
    if (!detail::mul_ok(gsize, dm.global, gsize))
      return error::make(errc::overflow, "the global size of the array does not fit in 64 bits");
    for (int i = 0; i < dm.n; ++i) {
      int k = dm.axes[i];
      if (k < 0 || k >= m.nsub) return error::make(errc::unknown_axis, "sub-axis id out of range");
      if (seen & (std::uint64_t{1} << k)) {
        text s("axis ");
        s.append(subaxis_text(m, k).view()).append(" is used twice");
        error e; e.code = errc::repeated_axis; e.message = s; return e;
      }
      seen |= std::uint64_t{1} << k;
    }
  }
  for (int i = 0; i < t.nsum; ++i) {
    int k = t.sum[i];
    if (k < 0 || k >= m.nsub) return error::make(errc::unknown_axis, "sub-axis id out of range");
    if (seen & (std::uint64_t{1} << k)) {
      text s("axis ");
      s.append(subaxis_text(m, k).view()).append(" is used twice (a sum axis partitions no dimension)");
      error e; e.code = errc::repeated_axis; e.message = s; return e;
    }
    seen |= std::uint64_t{1} << k;
    if (i > 0 && t.sum[i - 1] >= k) return error::make(errc::syntax, "sum axes must be sorted by sub-axis id");
  }
  return {};
}

namespace detail {
/// Resolve an axis reference at the scanner position: `x` or `x:(pre)size`.
/// Appends the referenced prime sub-axes, minor-to-major, to `out`.
constexpr bool parse_axis_ref(scanner& sc, const device_mesh& m, dim& out, std::uint64_t& seen) {
  sc.skip();
  int col = sc.pos;
  std::string_view n;
  if (!sc.name(n)) return false;
  int a = m.find(n);
  if (a < 0) {
    text t("unknown axis '");
    t.append(n).append("' (the mesh declares ");
    for (int i = 0; i < m.naxes; ++i) {
      if (i) t.append(", ");
      t.append(m.names[i].view());
    }
    if (m.naxes == 0) t.append("no axes");
    t.append(")");
    sc.err.code = errc::unknown_axis; sc.err.column = col; sc.err.message = t;
    return false;
  }
  int lo = m.sub_begin[a], hi = m.sub_begin[a] + m.sub_count[a];  // sub-axis ids [lo, hi)
  if (sc.accept(':')) {
    std::uint64_t pre = 0, size = 0;
    if (!sc.expect('(', "'(' of a sub-axis x:(pre)size")) return false;
    if (!sc.integer(pre)) return false;
    if (!sc.expect(')', "')' of a sub-axis x:(pre)size")) return false;
    if (!sc.integer(size)) return false;
    int b = lo, e = lo;
    if (!subaxis_run(m, a, pre, size, b, e)) {
      text t("sub-axis ");
      t.append(n).append(":(").append_uint(pre).append(")").append_uint(size)
          .append(" does not match the prime decomposition of axis ").append(n)
          .append(" of size ").append_uint(m.sizes[a]);
      sc.err.code = errc::unknown_axis; sc.err.column = col; sc.err.message = t;
      return false;
    }
    lo = b; hi = e;
  }
  for (int k = hi - 1; k >= lo; --k) {  // minor-to-major
    if (seen & (std::uint64_t{1} << k)) {
      text t("axis '");
      t.append(sc.s.substr(static_cast<std::size_t>(col), static_cast<std::size_t>(sc.pos - col)))
          .append("' is used twice in the type");
      sc.err.code = errc::repeated_axis; sc.err.column = col; sc.err.message = t;
      return false;
    }
    seen |= std::uint64_t{1} << k;
    out.axes[out.n++] = static_cast<std::uint8_t>(k);
  }
  return true;
}
}  // namespace detail

/// Parse the paper syntax `[64{x}256, 1024]`, `[{x, y}256, 8]`, `[2{x:(1)2}8]`.
/// Checks well-formedness; errors carry the 0-based column.
constexpr result<dist_type> parse_type_text(const device_mesh& m, std::string_view s) {
  result<dist_type> r;
  dist_type& t = r.value;
  if (r.err = detail::check_text_length(s); !r.err.ok()) return r;
  detail::scanner sc{s};
  std::uint64_t seen = 0;
  std::uint64_t gsize = 1;
  if (!sc.expect('[', "'[' to open the type")) { r.err = sc.err; return r; }
  if (!sc.accept(']')) {
    do {
      sc.skip();
      int dcol = sc.pos;
      if (t.rank >= max_dims) { sc.fail(errc::capacity, "a type may have at most 12 dimensions", dcol); break; }
      dim& d = t.dims[t.rank++];
      std::uint64_t first = 0;
      bool has_tile = false;
      if (detail::is_digit(sc.peek())) {
        if (!sc.integer(first)) break;
        has_tile = true;
      }
      if (sc.accept('{')) {
        if (sc.peek() != '}') {
          do {
            if (!detail::parse_axis_ref(sc, m, d, seen)) break;
          } while (sc.accept(','));
          if (sc.failed()) break;
        }
        if (!sc.expect('}', "',' or '}' after an axis")) break;
        sc.skip();
        int gcol = sc.pos;
        if (!sc.integer(d.global)) break;
        if (d.global == 0) { sc.fail(errc::bad_size, "global size 0", gcol); break; }
        const std::uint64_t p = parts(m, d), t_ok = tile(m, d);
        if (has_tile && first != t_ok) {
          text msg("tile size ");
          msg.append_uint(first).append(" of dimension ").append_int(t.rank - 1).append(" should be ")
              .append_uint(t_ok).append(" (global ").append_uint(d.global).append(" / ").append_uint(p)
              .append(d.global % p == 0 ? " tiles)" : " tiles, rounded up)");
          sc.err.code = errc::tile_mismatch; sc.err.column = dcol; sc.err.message = msg;
          break;
        }
      } else {
        if (!has_tile) { sc.fail_expected("a size or '{'"); break; }
        if (first == 0) { sc.fail(errc::bad_size, "global size 0", dcol); break; }
        d.global = first;
      }
      if (!detail::mul_ok(gsize, d.global, gsize)) {
        sc.fail(errc::overflow, "the global size of the array does not fit in 64 bits", dcol);
        break;
      }
    } while (sc.accept(','));
    if (!sc.failed()) sc.expect(']', "',' or ']' after a dimension");
  }
  // Pending partial values: `sum{y, z}`, `max{y}`, ... (a set; stored sorted), one kind.
  bool pending = false;
  if (!sc.failed() && detail::is_ident_start(sc.peek())) {  // a word: a reduction, or `word{` a misspelt one
    sc.skip();
    const int at = sc.pos;
    std::string_view w;
    reduction unused{};
    pending = sc.name(w) && (reduction_from_name(w, unused) || sc.peek() == '{');
    sc.pos = at;
    sc.err = {};
  }
  if (pending) {
    sc.skip();
    int col = sc.pos;
    std::string_view kw;
    if (sc.name(kw) && !reduction_from_name(kw, t.reduce)) {
      text msg("unknown reduction '");
      msg.append(kw).append("' (expected sum, max, min, prod or avg, as in 'sum{y}')");
      sc.err.code = errc::syntax; sc.err.column = col; sc.err.message = msg;
    }
    text open("'{' after '");
    open.append(kw).append("'");
    if (!sc.failed() && sc.expect('{', open.view())) {
      dim acc;
      if (sc.peek() != '}') {
        do {
          if (!detail::parse_axis_ref(sc, m, acc, seen)) break;
        } while (sc.accept(','));
      }
      text close("',' or '}' after ");
      close.append(kw == "sum" ? "a sum axis" : "a pending axis");
      if (!sc.failed() && sc.expect('}', close.view())) {
        for (int i = 0; i < acc.n; ++i) {  // insertion into the sorted set
          int j = t.nsum++;
          while (j > 0 && t.sum[j - 1] > acc.axes[i]) { t.sum[j] = t.sum[j - 1]; --j; }
          t.sum[j] = acc.axes[i];
        }
      }
    }
    if (!sc.failed() && detail::is_ident_start(sc.peek())) {  // a second `kind{...}`?
      sc.skip();
      const int col2 = sc.pos;
      std::string_view kw2;
      reduction other = t.reduce;
      if (sc.name(kw2) && reduction_from_name(kw2, other)) {
        text msg;
        if (other == t.reduce) {
          msg.append("the pending axes of '").append(kw).append("' are listed twice: write them in one '")
              .append(kw).append("{...}'");
        } else {
          msg.append("two reduction kinds in one type: '").append(kw).append("' and '").append(kw2)
              .append("' (a type's partial values have one reduction kind)");
        }
        sc.err.code = errc::syntax; sc.err.column = col2; sc.err.message = msg;
      } else {
        sc.pos = col2;  // not a reduction: "expected the end of the type" below
      }
    }
    if (t.nsum == 0) t.reduce = reduction::sum;  // `max{}`: nothing pending
  }
  if (!sc.failed() && !sc.at_end()) sc.fail_expected("the end of the type");
  r.err = sc.err;
  return r;
}

/// Run-time parse; throws redist_error naming the column.
inline dist_type parse_type(const device_mesh& m, std::string_view s) { return parse_type_text(m, s).get(s); }

/// Length of the run of sub-axes starting at position i of a dimension that reads as one
/// axis or aligned sub-axis: same declared axis, ids descending by one (minor-to-major).
/// The first run is the dimension's minor-most axis as a user writes it.
constexpr int axis_run(const device_mesh& m, const dim& d, int i) {
  int j = i + 1;
  while (j < d.n && d.axes[j] == d.axes[j - 1] - 1 && m.sub[d.axes[j]].axis == m.sub[d.axes[i]].axis) ++j;
  return j - i;
}

/// Write a dimension's axes, grouping runs of sub-axes back into whole axes
/// (`x`) or aligned sub-axes (`x:(pre)size`).
constexpr void append_axes(text& t, const device_mesh& m, const dim& d) {
  int i = 0;
  bool first = true;
  while (i < d.n) {
    int k = d.axes[i];
    int a = m.sub[k].axis;
    int j = i + axis_run(m, d, i);
    int lo = d.axes[j - 1], hi = d.axes[i];  // ids [lo, hi]
    if (!first) t.append(", ");
    first = false;
    m.names[a].write(t);
    bool whole = lo == m.sub_begin[a] && hi == m.sub_begin[a] + m.sub_count[a] - 1;
    if (!whole) {
      std::uint64_t size = 1;
      for (int q = lo; q <= hi; ++q) size *= m.sub[q].size;
      t.append(":(").append_uint(m.sub[lo].pre).append(")").append_uint(size);
    }
    i = j;
  }
}

/// Write a type in the paper syntax; `parse_type_text(m, type_text(m, t))` gives back `t`.
constexpr text type_text(const device_mesh& m, const dist_type& t) {
  text s("[");
  for (int d = 0; d < t.rank; ++d) {
    if (d) s.append(", ");
    const dim& dm = t.dims[d];
    if (dm.n == 0) {
      s.append_uint(dm.global);
    } else {
      s.append_uint(tile(m, dm)).append('{');
      append_axes(s, m, dm);
      s.append('}').append_uint(dm.global);
    }
  }
  s.append("]");
  if (t.nsum > 0) {
    // Each declared axis in mesh order: its sum sub-axes as runs, minor-to-major.
    dim runs;
    for (int a = 0; a < m.naxes; ++a)
      for (int k = m.sub_begin[a] + m.sub_count[a] - 1; k >= m.sub_begin[a]; --k)
        for (int i = 0; i < t.nsum; ++i)
          if (t.sum[i] == k) runs.axes[runs.n++] = static_cast<std::uint8_t>(k);
    s.append(' ').append(reduction_name(t.reduce)).append('{');
    append_axes(s, m, runs);
    s.append('}');
  }
  return s;
}

/// The global shape written as `[256, 1024]`.
constexpr text shape_text(const std::uint64_t* shape, int rank) {
  text s("[");
  for (int d = 0; d < rank; ++d) {
    if (d) s.append(", ");
    s.append_uint(shape[d]);
  }
  return s.append("]");
}

/// Check that two types describe the same global array; the message names both shapes.
constexpr error check_same_global(const dist_type& a, const dist_type& b) {
  if (same_global(a, b)) return {};
  std::uint64_t ga[max_dims]{}, gb[max_dims]{};
  for (int d = 0; d < a.rank; ++d) ga[d] = a.dims[d].global;
  for (int d = 0; d < b.rank; ++d) gb[d] = b.dims[d].global;
  text s("global types differ: source is ");
  s.append(shape_text(ga, a.rank).view()).append(", target is ").append(shape_text(gb, b.rank).view());
  error e; e.code = errc::global_mismatch; e.message = s;
  return e;
}

}  // namespace redist
