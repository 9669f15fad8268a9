// redist/core/rules.hpp -- typing rules of the collectives (paper Fig. 8), in their
// multi-axis forms (Sec. 7.1), strong (on syntactic types) and weak (Sec. 5: on types up
// to a permutation of devices, which a local shape identifies, Sec. 7.2).
//
// Strong rules, over prime sub-axes, minor-most axes first:
//   allgather(i, n):        [.., c{x1..xn, xs}s, ..]          -> [.., (c*|x|){xs}s, ..]
//   dynslice(i, x1..xn):    [.., (c*|x|){xs}s, ..]            -> [.., c{x1..xn, xs}s, ..]
//                           (the x are unused and |x| divides the tile)
//   alltoall(i, j, n):      e_i = c_i{x1..xn, xs_i}, e_j = c_j{xs_j}, |x| divides c_j
//                           -> e_i = (c_i*|x|){xs_i}, e_j = (c_j/|x|){x1..xn, xs_j}
//   allpermute:             any t1 -> t2 with equal local and global shapes
//   allreduce(S):           [e] sum{S, ss}                    -> [e] sum{ss}
//   reducescatter(i, S):    [.., c{xs}s, ..] sum{S, ss}       -> [.., (c/|S|){S, xs}s, ..] sum{ss}
//                           (partial sums, an extension; |S| divides the tile)
//
// Weak rules act on a shape: the number of tiles k_d of every dimension (the local
// shape is global_d / k_d) and the number of pending partial sums. With prime sub-axes every shape whose counts multiply to a
// divisor of the device count is realized by some type, and all types with one shape are
// equivalent up to a device permutation (Lemma 5.1), so the weak rules are divisibility:
//   allgather(i, F):  F > 1, F | k_i                          k_i /= F
//   alltoall(i, j, F): F > 1, F | k_i, F | global_j / k_j     k_i /= F, k_j *= F
//   dynslice(i, F):   F > 1, F | global_i / k_i, F | devices / (prod(k) * sums)   k_i *= F
//   allreduce(F):     F > 1, F | sums                          sums /= F
//   reducescatter(i, F): F > 1, F | sums, F | global_i / k_i   sums /= F, k_i *= F
//                     (uneven: scatter_lands(global_i, k_i, F): F divides the padded
//                     tile ceil(global_i / k_i), or k_i = 1 and F <= global_i)
//
// Uneven dimensions (DESIGN.md section 2: n in k tiles of ceil(n / k), the last ones short
// or empty). The rules take them where the box semantics of section 4 land exactly on the
// tiles of the type after the step (core/dtype.hpp): an allgather by F needs tiles_nest(n,
// k / F, F) (a tile of n in k / F is F adjacent tiles of n in k: F divides it, or it is the
// whole dimension); a dynslice by F needs ceil_split_lands(n, k, F) (its ceil-sized chunks
// are the tiles of n in k * F); an alltoall is an allgather on one dimension and a dynslice on
// the other (its chunks ceil-sized on uneven boxes); an allpermute needs the same tiles per
// dimension. On even dimensions these are the divisibility conditions above. A
// reduce-scatter by F onto dimension i splits every member's padded tile t = ceil(n / k)
// into F chunks of c = ceil(t / F) = ceil(n / (k F)) (the last ones short or empty when F
// does not divide t; the executor pads the send to F * c); chunk m of tile b, clipped to
// the box, is tile b * F + m of n in k * F exactly when tile b starts at b * F * c, that
// is tiles_nest(n, k, F): F divides t, or k = 1 (one tile, the whole dimension: DTensor's
// 13 x 3 Partial() -> Shard(0) on 4 devices, chunks of 4, 4, 4, 1). The rules also ask
// F <= t (scatter_lands), so that the padded send, F c < t + F rows, stays within twice
// the tile and the executor's pack buffers within their bounds (runtime/executor.hpp); a
// shorter dimension ([1] sum{x} on {x: 6}) reduces with an allreduce. Nothing more is
// needed (the dynslice's ceil_split_lands also asks the last box's own ceil-sized chunks
// to land, which padded chunks do not use; other dimensions may be uneven: every member of
// a group holds the same box). The weak
// search uses the uneven forms only for problems with an uneven type
// (weak_context::uneven), so that plans between even types never leave them.
#pragma once

#include <cstdint>

#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"

namespace redist {

namespace detail {
constexpr error rule_error(std::string_view rule, std::string_view why) {
  text t(rule);
  t.append(": ").append(why);
  error e; e.code = errc::rule; e.message = t;
  return e;
}
/// Whether i names a dimension of t. Every rule tests it itself before it touches t.dims[i]
/// (not through an error value), so that the compiler sees the index in range: g++ -O2
/// warned of t.dims[-1] (-Warray-bounds) in a call with a literal -1, which is refused.
constexpr bool has_dim(const dist_type& t, int i) { return i >= 0 && i < t.rank; }
constexpr error dim_error(std::string_view rule) { return rule_error(rule, "dimension out of range"); }
/// "the tiles of 7 in 4 do not ...": why a step on an uneven dimension is refused.
constexpr error uneven_error(std::string_view rule, std::uint64_t n, std::uint64_t k, std::uint64_t s,
                             std::string_view what) {
  text t(rule);
  t.append(": ").append(what).append(" (dimension of size ").append_uint(n).append(" in ").append_uint(k)
      .append(" tiles, by ").append_uint(s).append(")");
  error e; e.code = errc::rule; e.message = t;
  return e;
}
}  // namespace detail

/// T-AllGather, multi-axis: remove the `count` minor-most axes of dimension i.
constexpr result<dist_type> rule_allgather(const device_mesh& m, const dist_type& t, int i, int count = 1) {
  if (!detail::has_dim(t, i)) return {t, detail::dim_error("allgather")};
  result<dist_type> r{t, {}};
  dim& d = r.value.dims[i];
  if (count < 1 || count > d.n) {
    r.err = detail::rule_error("allgather", "the dimension is not partitioned by that many axes");
    return r;
  }
  std::uint64_t gathered = 1;
  for (int q = 0; q < count; ++q) gathered *= m.sub[d.axes[q]].size;
  for (int q = count; q < d.n; ++q) d.axes[q - count] = d.axes[q];
  d.n -= count;
  if (!tiles_nest(d.global, parts(m, d), gathered))
    r.err = detail::uneven_error("allgather", d.global, parts(m, d) * gathered, gathered,
                                 "the gathered boxes would not make the larger tiles");
  return r;
}

/// T-DynSlice, multi-axis: make the axes `xs[0..n)` (minor-to-major) the minor-most
/// axes of dimension i. They must be unused and their product must divide the tile.
constexpr result<dist_type> rule_dynslice(const device_mesh& m, const dist_type& t, int i, const std::uint8_t* xs, int n) {
  if (!detail::has_dim(t, i)) return {t, detail::dim_error("dynslice")};
  result<dist_type> r{t, {}};
  dim& d = r.value.dims[i];
  std::uint64_t used = used_mask(t), prod = 1;
  for (int q = 0; q < n; ++q) {
    if (xs[q] >= m.nsub) { r.err = detail::rule_error("dynslice", "unknown axis"); return r; }
    if (used & (std::uint64_t{1} << xs[q])) {
      r.err = detail::rule_error("dynslice", "the axis already partitions a dimension");
      return r;
    }
    used |= std::uint64_t{1} << xs[q];
    prod *= m.sub[xs[q]].size;
  }
  if (n < 1 || (even(m, d) && d.n > 0 && tile(m, d) % prod != 0)) {
    r.err = detail::rule_error("dynslice", "the tile size is not divisible by the axis size");
    return r;
  }
  if (!ceil_split_lands(d.global, parts(m, d), prod)) {
    r.err = detail::uneven_error("dynslice", d.global, parts(m, d), prod,
                                 "the ceil-sized chunks of the boxes would not be the smaller tiles");
    return r;
  }
  if (d.n + n > max_subaxes) { r.err = detail::rule_error("dynslice", "too many axes"); return r; }
  for (int q = d.n - 1; q >= 0; --q) d.axes[q + n] = d.axes[q];
  for (int q = 0; q < n; ++q) d.axes[q] = xs[q];
  d.n += n;
  return r;
}

/// T-AllToAll, multi-axis: move the `count` minor-most axes of dimension i to the
/// minor-most position of dimension j; their product must divide j's tile.
constexpr result<dist_type> rule_alltoall(const device_mesh& m, const dist_type& t, int i, int j, int count = 1) {
  if (!detail::has_dim(t, i)) return {t, detail::dim_error("alltoall")};
  result<dist_type> r{t, {}};
  if (!detail::has_dim(t, j) || j == i) {
    r.err = detail::rule_error("alltoall", "the target dimension must be another dimension");
    return r;
  }
  const dim& di = t.dims[i];
  if (count < 1 || count > di.n) {
    r.err = detail::rule_error("alltoall", "the source dimension is not partitioned by that many axes");
    return r;
  }
  std::uint8_t xs[max_subaxes]{};
  std::uint64_t moved = 1;
  for (int q = 0; q < count; ++q) {
    xs[q] = di.axes[q];
    moved *= m.sub[xs[q]].size;
  }
  auto g = rule_allgather(m, t, i, count);
  if (!g.ok()) {
    r.err = g.err;
    return r;
  }
  auto s = rule_dynslice(m, g.value, j, xs, count);
  if (!s.ok()) {
    const dim& dj = t.dims[j];
    r.err = even(m, dj) && dj.n > 0
                ? detail::rule_error("alltoall", "the tile of the target dimension is not divisible by the moved axes")
                : detail::uneven_error("alltoall", dj.global, parts(m, dj), moved,
                                       "the ceil-sized chunks of the target dimension's boxes would not be the smaller tiles");
    return r;
  }
  return s;
}

/// Remove the sum axes `xs[0..n)` (sorted or not) from a type's pending sums.
constexpr result<dist_type> remove_sums(const dist_type& t, const std::uint8_t* xs, int n, std::string_view rule) {
  result<dist_type> r{t, {}};
  dist_type& o = r.value;
  for (int q = 0; q < n; ++q) {
    int at = -1;
    for (int i = 0; i < o.nsum; ++i)
      if (o.sum[i] == xs[q]) at = i;
    if (at < 0) { r.err = detail::rule_error(rule, "the axis is not a pending-sum axis of the type"); return r; }
    for (int i = at + 1; i < o.nsum; ++i) o.sum[i - 1] = o.sum[i];
    --o.nsum;
  }
  if (o.nsum == 0) o.reduce = reduction::sum;  // nothing pending (core/dtype.hpp)
  if (n < 1) r.err = detail::rule_error(rule, "no sum axis given");
  return r;
}

/// A reduce-scatter by s of a dimension of n in k tiles lands on the tiles of n in k * s
/// (see above): s divides the tile, or the dimension is one tile of at least s elements.
constexpr bool scatter_lands(std::uint64_t n, std::uint64_t k, std::uint64_t s) {
  return tiles_nest(n, k, s) && s <= ceil_div(n, k);
}

/// T-AllReduce (partial sums): the sum axes xs are summed over and then replicate.
constexpr result<dist_type> rule_allreduce(const device_mesh&, const dist_type& t, const std::uint8_t* xs, int n) {
  return remove_sums(t, xs, n, "allreduce");
}

/// T-ReduceScatter (partial sums): the sum axes xs (minor-to-major) are summed over and
/// become the minor-most axes of dimension i; their product must divide the tile, or the
/// dimension be one whole tile at least as long (scatter_lands; the ceil-sized chunks of
/// the padded tile are then the smaller tiles, see above).
constexpr result<dist_type> rule_reducescatter(const device_mesh& m, const dist_type& t, int i, const std::uint8_t* xs, int n) {
  result<dist_type> r = remove_sums(t, xs, n, "reducescatter");
  if (!r.ok()) return r;
  if (!detail::has_dim(t, i)) {
    r.err = detail::dim_error("reducescatter");
    return r;
  }
  dim& d = r.value.dims[i];
  std::uint64_t prod = 1;
  for (int q = 0; q < n; ++q) prod *= m.sub[xs[q]].size;  // remove_sums checked the ids
  if (!scatter_lands(d.global, parts(m, d), prod)) {
    r.err = detail::rule_error("reducescatter", parts(m, d) == 1 && d.global < prod
                                                    ? "the tile is shorter than the summed axes (reduce with an allreduce)"
                                                    : "the tile is not divisible by the summed axes");
    return r;
  }
  if (d.n + n > max_subaxes) { r.err = detail::rule_error("reducescatter", "too many axes"); return r; }
  for (int q = d.n - 1; q >= 0; --q) d.axes[q + n] = d.axes[q];
  for (int q = 0; q < n; ++q) d.axes[q] = xs[q];
  d.n += n;
  return r;
}

/// T-Partial (extension, a local step): the sub-axes xs, which partition no dimension and
/// are not pending, become pending axes of the reduction r (core/cost.hpp op::partial says
/// what the ranks do); a type's pending axes have one kind, so a type already pending by
/// another reduction is ill-typed here.
constexpr result<dist_type> rule_partial(const device_mesh& m, const dist_type& t, const std::uint8_t* xs, int n,
                                         reduction r) {
  result<dist_type> out{t, {}};
  if (n < 1) { out.err = detail::rule_error("partial", "no axis given"); return out; }
  if (t.nsum > 0 && t.reduce != r) {
    out.err = detail::rule_error("partial", "the type's partial values combine by another reduction");
    return out;
  }
  if (t.nsum + n > max_subaxes) { out.err = detail::rule_error("partial", "too many axes"); return out; }
  dist_type& o = out.value;
  for (int q = 0; q < n; ++q) {
    if (xs[q] >= m.nsub || (used_mask(o) >> xs[q]) & 1) {
      out.err = detail::rule_error("partial", "the axis is not a free sub-axis of the type");
      return out;
    }
    int at = o.nsum;  // pending ids stay ascending (core/dtype.hpp)
    while (at > 0 && o.sum[at - 1] > xs[q]) {
      o.sum[at] = o.sum[at - 1];
      --at;
    }
    o.sum[at] = xs[q];
    ++o.nsum;
  }
  o.reduce = r;
  return out;
}

/// T-Partial, padded (extension, a local step): the `count` minor-most axes of dimension i
/// become pending axes of the reduction r, as an allgather would remove them (rule_allgather),
/// but nothing moves: every member of a group places its tile at its block of the larger
/// tile and writes the reduction's identity around it (Shardy's sharded_to_unreduced). The
/// mean of such tiles is not the value, so `avg` is refused.
constexpr result<dist_type> rule_partial_padded(const device_mesh& m, const dist_type& t, int i, int count,
                                                reduction r) {
  if (!detail::has_dim(t, i)) return {t, detail::dim_error("partial")};
  result<dist_type> out{t, {}};
  if (r == reduction::avg) {
    out.err = detail::rule_error("partial", "the mean of zero-padded tiles is not the value (avg creates pending "
                                            "values of replicated data only)");
    return out;
  }
  const dim& d = t.dims[i];
  if (count < 1 || count > d.n) {
    out.err = detail::rule_error("partial", "the dimension is not partitioned by that many axes");
    return out;
  }
  result<dist_type> g = rule_allgather(m, t, i, count);
  if (!g.ok()) {
    out.err = detail::rule_error("partial", "the padded boxes would not make the larger tiles");
    return out;
  }
  std::uint8_t xs[max_subaxes]{};
  for (int q = 0; q < count; ++q) xs[q] = d.axes[q];
  return rule_partial(m, g.value, xs, count, r);
}

/// Bit k set iff sub-axis k is a pending axis of b and not of a: the pending axes a plan
/// from a to b creates.
constexpr std::uint64_t new_pending_mask(const dist_type& a, const dist_type& b) {
  std::uint64_t had = 0, mask = 0;
  for (int i = 0; i < a.nsum; ++i) had |= std::uint64_t{1} << a.sum[i];
  for (int i = 0; i < b.nsum; ++i)
    if (!((had >> b.sum[i]) & 1)) mask |= std::uint64_t{1} << b.sum[i];
  return mask;
}

/// b without the pending axes a plan from a creates (new_pending_mask): the type the plan
/// reaches before its partial step; b itself when it creates none.
constexpr dist_type before_partial(const dist_type& a, const dist_type& b) {
  const std::uint64_t mask = new_pending_mask(a, b);
  dist_type t = b;
  t.nsum = 0;
  for (int i = 0; i < b.nsum; ++i)
    if (!((mask >> b.sum[i]) & 1)) t.sum[t.nsum++] = b.sum[i];
  if (t.nsum == 0) t.reduce = reduction::sum;  // nothing pending (core/dtype.hpp)
  return t;
}

/// b keeps pending axes of a with another reduction kind: a redistribution keeps the kind of
/// the pending axes it keeps (those it creates may take any, lower/partial.hpp).
constexpr bool changes_pending_kind(const dist_type& a, const dist_type& b) {
  return a.nsum > 0 && before_partial(a, b).nsum > 0 && a.reduce != b.reduce;
}

/// The type a plan from a to b reaches before its partial steps when it creates b's new
/// pending axes by padding where it can (rule_partial_padded): b with every new pending
/// sub-axis that a partitions dimension d with put back as a minor-most axis of d (in a's
/// order), the others left to the replicated partial step. before_partial(a, b) where no
/// new pending axis partitions a dimension of a, for avg, on uneven types, or where that
/// type is ill-formed.
constexpr dist_type before_padded_partial(const device_mesh& m, const dist_type& a, const dist_type& b) {
  const dist_type plain = before_partial(a, b);
  const std::uint64_t mask = new_pending_mask(a, b);
  if (mask == 0 || b.reduce == reduction::avg || !even(m, a) || !even(m, b)) return plain;
  dist_type t = plain;
  std::uint64_t moved = 0;
  for (int d = 0; d < a.rank && d < t.rank; ++d) {
    const dim& ad = a.dims[d];
    int n = 0;
    std::uint8_t xs[max_subaxes]{};
    for (int q = 0; q < ad.n; ++q)
      if ((mask >> ad.axes[q]) & 1) xs[n++] = ad.axes[q];
    if (n == 0) continue;
    dim& td = t.dims[d];
    if (td.n + n > max_subaxes) return plain;
    for (int q = td.n - 1; q >= 0; --q) td.axes[q + n] = td.axes[q];
    for (int q = 0; q < n; ++q) td.axes[q] = xs[q];
    td.n += n;
    for (int q = 0; q < n; ++q) moved |= std::uint64_t{1} << xs[q];
  }
  if (moved == 0 || !check(m, t).ok() || !even(m, t)) return plain;
  return t;
}

/// T-Permute: local and global shapes must match.
constexpr error rule_allpermute(const device_mesh& m, const dist_type& a, const dist_type& b) {
  if (!same_global(a, b)) return detail::rule_error("allpermute", "the global shapes differ");
  if (!same_local(m, a, b)) return detail::rule_error("allpermute", "the local shapes differ");
  for (int d = 0; d < a.rank; ++d)  // uneven: equal padded tiles may hold different boxes
    if (parts(m, a.dims[d]) != parts(m, b.dims[d]))
      return detail::rule_error("allpermute", "the dimensions are split into different numbers of tiles");
  return {};
}

// ---------------------------------------------------------------------------------------
// Weak rules

/// A weak type: tiles per dimension (with the global shape, it fixes the local shape and
/// identifies the equivalence class E[[t]]).
struct shape {
  int rank = 0;
  std::uint64_t parts[max_dims]{};
  std::uint64_t sums = 1;  ///< partial values per element (product of the sum axes)
  constexpr bool operator==(const shape& o) const {
    if (rank != o.rank || sums != o.sums) return false;
    for (int d = 0; d < rank; ++d)
      if (parts[d] != o.parts[d]) return false;
    return true;
  }
  constexpr bool operator<(const shape& o) const {
    for (int d = 0; d < rank; ++d)
      if (parts[d] != o.parts[d]) return parts[d] < o.parts[d];
    return sums < o.sums;
  }
};

/// The fixed context of the weak rules: the global shape and the device count.
struct weak_context {
  int rank = 0;
  std::uint64_t global[max_dims]{};
  std::uint64_t devices = 1;
  /// The problem has an uneven type (DESIGN.md section 2): the rules then take uneven
  /// dimensions where they stay exact (core/dtype.hpp tiles_nest and the split
  /// predicates), and a dynslice may split a dimension unevenly; without it they are the
  /// paper's divisibility rules, and no path leaves the even types.
  bool uneven = false;

  /// Tile size of dimension d (ceil, as core/dtype.hpp tile).
  [[nodiscard]] constexpr std::uint64_t tile(const shape& s, int d) const {
    return global[d] / s.parts[d] + (global[d] % s.parts[d] != 0 ? 1 : 0);
  }
  [[nodiscard]] constexpr std::uint64_t local_size(const shape& s) const {
    std::uint64_t l = 1;
    for (int d = 0; d < rank; ++d) l *= tile(s, d);
    return l;
  }
  [[nodiscard]] constexpr std::uint64_t used(const shape& s) const {
    std::uint64_t u = s.sums;
    for (int d = 0; d < rank; ++d) u *= s.parts[d];
    return u;
  }
  /// Product of the sizes of the sub-axes that partition nothing.
  [[nodiscard]] constexpr std::uint64_t free(const shape& s) const { return devices / used(s); }
};

constexpr weak_context weak_context_of(const device_mesh& m, const dist_type& t) {
  weak_context c;
  c.rank = t.rank;
  for (int d = 0; d < t.rank; ++d) c.global[d] = t.dims[d].global;
  c.devices = m.devices;
  c.uneven = !even(m, t);
  return c;
}
/// The context of redistributing a to b: uneven if either type is.
constexpr weak_context weak_context_of(const device_mesh& m, const dist_type& a, const dist_type& b) {
  weak_context c = weak_context_of(m, a);
  c.uneven = uneven_dim(m, a, b) >= 0;
  return c;
}

constexpr shape shape_of(const device_mesh& m, const dist_type& t) {
  shape s;
  s.rank = t.rank;
  for (int d = 0; d < t.rank; ++d) s.parts[d] = parts(m, t.dims[d]);
  s.sums = sum_parts(m, t);
  return s;
}

/// Weak allgather on dimension i by a factor f (a product of sub-axis sizes).
constexpr bool weak_allgather(const weak_context& c, const shape& s, int i, std::uint64_t f, shape& out) {
  if (f < 2 || s.parts[i] % f != 0 || !tiles_nest(c.global[i], s.parts[i] / f, f)) return false;
  out = s;
  out.parts[i] /= f;
  return true;
}
/// Weak alltoall moving a factor f of dimension i's partitioning to dimension j.
constexpr bool weak_alltoall(const weak_context& c, const shape& s, int i, int j, std::uint64_t f, shape& out) {
  if (f < 2 || i == j || s.parts[i] % f != 0 || !tiles_nest(c.global[i], s.parts[i] / f, f)) return false;
  if (c.uneven ? !ceil_split_lands(c.global[j], s.parts[j], f) : c.tile(s, j) % f != 0) return false;
  out = s;
  out.parts[i] /= f;
  out.parts[j] *= f;
  return true;
}
/// Weak allreduce of a factor f of the pending sums.
constexpr bool weak_allreduce(const weak_context&, const shape& s, std::uint64_t f, shape& out) {
  if (f < 2 || s.sums % f != 0) return false;
  out = s;
  out.sums /= f;
  return true;
}
/// Weak reduce-scatter of a factor f of the pending sums onto dimension i: f divides the
/// (padded) tile, or, on uneven problems, the dimension is one whole tile of at least f
/// (scatter_lands).
constexpr bool weak_reducescatter(const weak_context& c, const shape& s, int i, std::uint64_t f, shape& out) {
  if (f < 2 || s.sums % f != 0) return false;
  if (c.uneven ? !scatter_lands(c.global[i], s.parts[i], f) : c.tile(s, i) % f != 0) return false;
  out = s;
  out.sums /= f;
  out.parts[i] *= f;
  return true;
}
/// Weak partial: a factor f of free sub-axes becomes pending (a local step, no data moves);
/// padded (dimension i >= 0): a factor f of dimension i's partitioning does, as an allgather
/// would gather it.
constexpr bool weak_partial(const weak_context& c, const shape& s, std::uint64_t f, shape& out, int i = -1) {
  if (i >= 0) {
    if (!weak_allgather(c, s, i, f, out)) return false;
    out.sums *= f;
    return true;
  }
  if (f < 2 || c.free(s) % f != 0) return false;
  out = s;
  out.sums *= f;
  return true;
}
/// Weak dynslice of dimension i by a factor f of free sub-axes.
constexpr bool weak_dynslice(const weak_context& c, const shape& s, int i, std::uint64_t f, shape& out) {
  if (f < 2 || c.free(s) % f != 0) return false;
  if (c.uneven ? !ceil_split_lands(c.global[i], s.parts[i], f) : c.tile(s, i) % f != 0) return false;
  out = s;
  out.parts[i] *= f;
  return true;
}

}  // namespace redist
