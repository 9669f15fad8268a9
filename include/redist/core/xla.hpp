// redist/core/xla.hpp -- XLA's HloSharding text, in and out.
//
// An HloSharding, as HLO dumps print it, is `{replicated}`, `{maximal device=3}` (the whole
// array on one device), or a tile assignment: an array of device ids given by its dimensions
// and either the ids row-major (`{devices=[2,1,2]0,1,2,3}`) or an iota (`<=[4]`: 0..D-1;
// `<=[2,2,2]T(0,2,1)`: 0..D-1 reshaped to [2,2,2], transposed by the permutation, read
// row-major). The first rank(array) dimensions of the assignment tile the array: dimension i
// of n in k tiles of ceil(n / k), the last ones short or empty (redist's uneven tiles).
// `last_tile_dim_replicate`, or `last_tile_dims={replicated}`, adds a trailing dimension
// whose devices hold the same tile.
//
// from_xla builds the mesh of the assignment, one axis per dimension of size > 1: `d<i>` for
// the dimension that tiles array dimension i, `r` for the replication dimension (`r0`, `r1`,
// ... when there are several); the mesh is placed on the flattened ids (no list when they are
// 0..D-1), and the type splits dimension i by `d<i>`. `{replicated}` names no device count:
// the caller gives it (`{r: N}`; one device: `{}`). `{maximal device=3}` is the mesh `{}` on
// [3]. XLA has no axis names, so to_xla writes any type on any placed mesh (sub-axes, any
// axis order: it is all one tile assignment), in the form XLA prints: the iota, a transposed
// iota (reshape dimensions and permutation found from the ids, canonical as XLA's), else the
// explicit list. Refused with a message: manual and unreduced subgroups, `{manual}`,
// `{unknown}`, tuple and named (`{mesh[...], ...}`) shardings; pending sums (to_xla).
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redist/core/config.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/jax.hpp"
#include "redist/core/lex.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/core/placement.hpp"

namespace redist {

namespace detail {
/// The most devices a sharding notation builds a device list for (as many as a program has).
inline constexpr std::uint64_t max_sharding_devices = max_program_devices;

/// The ids of transpose(reshape(iota(D), dims), perm), row-major.
inline std::vector<std::uint64_t> transposed_iota(const std::vector<std::uint64_t>& dims,
                                                  const std::vector<int>& perm) {
  const std::size_t n = dims.size();
  std::vector<std::uint64_t> stride(n, 1);
  for (std::size_t i = n; i-- > 1;) stride[i - 1] = stride[i] * dims[i];
  std::uint64_t D = 1;
  for (std::uint64_t d : dims) D *= d;
  std::vector<std::uint64_t> out;
  out.reserve(D);
  std::vector<std::uint64_t> idx(n, 0);  // the index in the transposed array
  for (std::uint64_t q = 0; q < D; ++q) {
    std::uint64_t v = 0;
    for (std::size_t j = 0; j < n; ++j) v += idx[j] * stride[static_cast<std::size_t>(perm[j])];
    out.push_back(v);
    for (std::size_t j = n; j-- > 0;) {
      if (++idx[j] < dims[static_cast<std::size_t>(perm[j])]) break;
      idx[j] = 0;
    }
  }
  return out;
}

/// The reshape dimensions and permutation whose transposed iota is `ids`, canonical as
/// XLA's (no two dimensions adjacent in both orders are left unmerged); false if there are
/// none (ids that are not 0..D-1 in some transposed order).
///
/// The ids are a linear map of the digits of their index: the minor-most digit is the
/// longest run ids[j] = j * s, and so on over every a-th id. Each digit's stride must then
/// be the product of the sizes of the digits with smaller strides (the iota's row-major
/// strides); the result is checked by rebuilding the list.
inline bool find_transposed_iota(const std::vector<std::uint64_t>& ids, std::vector<std::uint64_t>& dims,
                                 std::vector<int>& perm) {
  const std::uint64_t D = ids.size();
  if (D < 2 || ids[0] != 0) return false;
  std::vector<char> seen(D, 0);
  for (std::uint64_t v : ids) {
    if (v >= D || seen[v]) return false;
    seen[v] = 1;
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> digits;  // (size, stride), minor first
  for (std::uint64_t step = 1, n = D; n > 1;) {
    const std::uint64_t s = ids[step];
    std::uint64_t a = 1;
    while (a < n && ids[a * step] == a * s) ++a;
    if (n % a != 0) return false;
    digits.emplace_back(a, s);
    step *= a;
    n /= a;
  }
  std::vector<std::size_t> order(digits.size());  // digits by decreasing stride: the iota's dims
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return digits[a].second > digits[b].second; });
  std::uint64_t expect = 1;
  for (std::size_t i = order.size(); i-- > 0;) {
    if (digits[order[i]].second != expect) return false;
    expect *= digits[order[i]].first;
  }
  dims.clear();
  for (std::size_t i : order) dims.push_back(digits[i].first);
  perm.assign(digits.size(), 0);
  for (std::size_t j = 0; j < digits.size(); ++j) {  // output dimension j, major first
    const std::size_t digit = digits.size() - 1 - j;
    perm[j] = static_cast<int>(std::find(order.begin(), order.end(), digit) - order.begin());
  }
  return transposed_iota(dims, perm) == ids;
}

template <class T>
std::string number_list(const std::vector<T>& v, std::string_view sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? std::string(sep) : std::string()) + std::to_string(v[i]);
  return s;
}
}  // namespace detail

/// Parse an HloSharding (`{devices=[2,1,2]<=[4] last_tile_dim_replicate}`; braces optional,
/// a leading `sharding=` and `metadata={...}` skipped) for an array of the given global
/// shape; `devices` is the device count of `{replicated}`. Throws redist_error naming the
/// column.
inline placed_type from_xla(std::string_view s, std::span<const std::uint64_t> global, std::uint64_t devices = 1) {
  if (error e = detail::check_text_length(s); !e.ok()) throw redist_error(e);
  detail::scanner sc{s};
  auto fail = [&]() { throw redist_error(sc.err, s); };
  auto fail_at = [&](errc c, const std::string& msg, int col) {
    sc.err = error::make(c, msg, col);
    fail();
  };
  auto integer = [&](std::uint64_t& v) -> int {
    sc.skip();
    const int col = sc.pos;
    if (!sc.integer(v)) fail();
    return col;
  };
  if (detail::is_ident_start(sc.peek())) {  // `sharding={...}` as an HLO instruction writes it
    const int at = sc.pos;
    std::string_view w;
    sc.name(w);
    if (w != "sharding" || !sc.accept('=')) sc.pos = at;
  }
  const bool braced = sc.accept('{');
  sc.skip();
  const int kcol = sc.pos;
  if (braced && sc.peek() == '{')
    fail_at(errc::syntax, "a tuple sharding: pass the sharding of one tuple element", kcol);
  if (!detail::is_ident_start(sc.peek())) {
    sc.fail_expected("replicated, maximal or devices=[...]");
    fail();
  }
  std::string_view kind;
  sc.name(kind);

  placed_type out;
  std::vector<std::uint64_t> dims, ids;  // the tile assignment
  int dims_col = -1;
  bool replicate = false;
  int subgroups = 0;  // replicated subgroup dimensions (last_tile_dim_replicate counts one)
  std::uint64_t maximal = 0;
  if (kind == "replicated") {
  } else if (kind == "maximal") {
    std::string_view w;
    sc.skip();
    const int col = sc.pos;
    if (!sc.name(w) || w != "device") fail_at(errc::syntax, "expected 'device=' after 'maximal'", col);
    if (!sc.expect('=', "'=' after 'device'")) fail();
    const int dcol = integer(maximal);
    if (maximal > UINT32_MAX) fail_at(errc::overflow, "a device id must be below 2^32", dcol);
  } else if (kind == "manual" || kind == "unknown") {
    fail_at(errc::rule,
            "{" + std::string(kind) +
                "} names no layout of the global array (redist needs tiled, replicated or maximal)",
            kcol);
  } else if (kind == "mesh") {
    fail_at(errc::syntax, "XLA's named sharding ({mesh[...], ...}) is not read: give it in Shardy's notation", kcol);
  } else if (kind == "devices") {
    if (!sc.expect('=', "'=' after 'devices'")) fail();
    sc.skip();
    dims_col = sc.pos;
    if (!sc.expect('[', "'[' to open the tile assignment dimensions")) fail();
    do {
      std::uint64_t d = 0;
      const int col = integer(d);
      if (d == 0) fail_at(errc::bad_size, "a tile assignment dimension of size 0", col);
      dims.push_back(d);
    } while (sc.accept(','));
    if (!sc.expect(']', "',' or ']' in the tile assignment dimensions")) fail();
    std::uint64_t total = 1;
    for (std::uint64_t d : dims)
      if (!detail::mul_ok(total, d, total) || total > detail::max_sharding_devices)
        fail_at(errc::capacity, "the tile assignment has more than 2^20 devices", dims_col);
    sc.skip();
    if (sc.accept('<')) {  // <=[dims] or <=[dims]T(perm)
      if (!sc.expect('=', "'=' of '<='")) fail();
      sc.skip();
      const int rcol = sc.pos;
      std::vector<std::uint64_t> reshape;
      if (!sc.expect('[', "'[' after '<='")) fail();
      std::uint64_t n = 1;
      do {
        std::uint64_t d = 0;
        const int col = integer(d);
        if (d == 0) fail_at(errc::bad_size, "an iota dimension of size 0", col);
        reshape.push_back(d);
        if (!detail::mul_ok(n, d, n) || n > detail::max_sharding_devices)
          fail_at(errc::capacity, "the iota has more than 2^20 devices", rcol);
      } while (sc.accept(','));
      if (!sc.expect(']', "',' or ']' in the iota dimensions")) fail();
      if (n != total)
        fail_at(errc::bad_size,
                "the iota [" + detail::number_list(reshape, ",") + "] has " + std::to_string(n) +
                    " devices but the tile assignment [" + detail::number_list(dims, ",") + "] has " + std::to_string(total),
                rcol);
      std::vector<int> perm(reshape.size());
      std::iota(perm.begin(), perm.end(), 0);
      if (sc.peek() == 'T') {
        const int tcol = sc.pos;
        ++sc.pos;
        if (!sc.expect('(', "'(' after 'T'")) fail();
        std::vector<int> p;
        std::vector<char> used(reshape.size(), 0);
        do {
          std::uint64_t v = 0;
          const int col = integer(v);
          if (v >= reshape.size())
            fail_at(errc::syntax,
                    "transpose index " + std::to_string(v) + " names no dimension of the iota [" +
                        detail::number_list(reshape, ",") + "]",
                    col);
          if (used[v]) fail_at(errc::repeated_axis, "transpose index " + std::to_string(v) + " is listed twice", col);
          used[v] = 1;
          p.push_back(static_cast<int>(v));
        } while (sc.accept(','));
        if (!sc.expect(')', "',' or ')' in the transpose")) fail();
        if (p.size() != reshape.size())
          fail_at(errc::syntax,
                  "the transpose has " + std::to_string(p.size()) + " indices but the iota has " +
                      std::to_string(reshape.size()) + " dimensions",
                  tcol);
        perm = p;
      }
      ids = detail::transposed_iota(reshape, perm);
    } else {
      std::vector<int> id_cols;
      do {
        std::uint64_t v = 0;
        const int col = integer(v);
        if (v > UINT32_MAX) fail_at(errc::overflow, "a device id must be below 2^32", col);
        if (ids.size() == total)
          fail_at(errc::bad_size,
                  "the tile assignment [" + detail::number_list(dims, ",") + "] has " + std::to_string(total) +
                      " tiles but more devices are listed",
                  col);
        ids.push_back(v);
        id_cols.push_back(col);
      } while (sc.accept(','));
      if (ids.size() != total) {
        sc.skip();
        fail_at(errc::bad_size,
                "the tile assignment [" + detail::number_list(dims, ",") + "] has " + std::to_string(total) +
                    " tiles but " + std::to_string(ids.size()) + " devices are listed",
                sc.pos);
      }
      // A repeated id: the first repeat in the text.
      std::vector<std::pair<std::uint64_t, std::size_t>> by_id;
      for (std::size_t i = 0; i < ids.size(); ++i) by_id.emplace_back(ids[i], i);
      std::sort(by_id.begin(), by_id.end());
      std::size_t repeat = ids.size();
      for (std::size_t i = 1; i < by_id.size(); ++i)
        if (by_id[i].first == by_id[i - 1].first) repeat = std::min(repeat, by_id[i].second);
      if (repeat < ids.size())
        fail_at(errc::repeated_axis, "device " + std::to_string(ids[repeat]) + " is listed twice",
                id_cols[repeat]);
    }
  } else {
    fail_at(errc::syntax,
            "unknown sharding '" + std::string(kind) + "' (expected replicated, maximal or devices=[...])", kcol);
  }

  // Trailing attributes.
  while (detail::is_ident_start(sc.peek())) {
    const int col = sc.pos;
    std::string_view w;
    sc.name(w);
    if (w == "metadata") {  // skipped: {...} with quoted strings
      if (!sc.expect('=', "'=' after 'metadata'") || !sc.expect('{', "'{' after 'metadata='")) fail();
      int depth = 1;
      char quote = 0;
      while (depth > 0 && sc.pos < static_cast<int>(s.size())) {
        const char c = s[static_cast<std::size_t>(sc.pos++)];
        if (quote) {
          if (c == '\\') ++sc.pos;
          else if (c == quote) quote = 0;
        } else if (c == '"') {
          quote = c;
        } else if (c == '{') {
          ++depth;
        } else if (c == '}') {
          --depth;
        }
      }
      if (depth > 0) fail_at(errc::syntax, "unterminated metadata={...}", col);
      continue;
    }
    if (kind != "devices") fail_at(errc::syntax, "'" + std::string(w) + "' after '" + std::string(kind) + "'", col);
    if (w == "last_tile_dim_replicate") {
      if (replicate || subgroups > 0) fail_at(errc::syntax, "the replication dimension is given twice", col);
      replicate = true;
      subgroups = 1;
    } else if (w == "last_tile_dims") {
      if (replicate || subgroups > 0) fail_at(errc::syntax, "the replication dimension is given twice", col);
      if (!sc.expect('=', "'=' after 'last_tile_dims'") || !sc.expect('{', "'{' after 'last_tile_dims='")) fail();
      do {
        sc.skip();
        const int tcol = sc.pos;
        std::string_view type;
        if (!sc.name(type)) fail();
        if (type == "manual" || type == "unreduced")
          fail_at(errc::rule,
                  type == "manual"
                      ? "a manual subgroup (last_tile_dims={manual}) is not read: a redist type lays out a global "
                        "array, not per-device values"
                      : "an unreduced subgroup (last_tile_dims={unreduced}) is not read: give pending sums as "
                        "Shardy's unreduced={...} or redist's sum{...}",
                  tcol);
        if (type != "replicated")
          fail_at(errc::syntax, "unknown subgroup type '" + std::string(type) + "' (expected replicated)", tcol);
        ++subgroups;
      } while (sc.accept(','));
      if (!sc.expect('}', "',' or '}' in last_tile_dims")) fail();
    } else {
      fail_at(errc::syntax, "unknown attribute '" + std::string(w) + "' of a sharding", col);
    }
  }
  if (braced && !sc.expect('}', "'}' to close the sharding")) fail();
  if (!sc.at_end()) {
    sc.fail_expected("the end of the sharding");
    fail();
  }

  device_mesh& m = out.pm.mesh;
  std::vector<std::vector<int>> axes;
  if (kind == "replicated") {
    if (devices == 0) throw redist_error(errc::bad_size, "a replicated sharding needs at least one device");
    if (devices > 1)
      if (error e = mesh_add_axis(m, "r", devices); !e.ok()) throw redist_error(e);
  } else if (kind == "maximal") {
    out.pm.devices = {static_cast<std::uint32_t>(maximal)};
  } else {
    const std::size_t rank = global.size();
    if (dims.size() != rank + static_cast<std::size_t>(subgroups))
      fail_at(errc::syntax,
              "the tile assignment [" + detail::number_list(dims, ",") + "] has " + std::to_string(dims.size()) +
                  " dimensions but an array of rank " + std::to_string(rank) +
                  (subgroups ? " with " + std::to_string(subgroups) + " replication dimension(s)" : std::string()) +
                  " needs " + std::to_string(rank + static_cast<std::size_t>(subgroups)),
              dims_col);
    axes.resize(rank);
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 1) continue;
      const std::string name = i < rank         ? "d" + std::to_string(i)
                               : subgroups == 1 ? std::string("r")
                                                : "r" + std::to_string(i - rank);
      if (error e = mesh_add_axis(m, name, dims[i], dims_col); !e.ok()) throw redist_error(e, s);
      if (i < rank) axes[i].push_back(m.naxes - 1);
    }
    bool identity = true;
    for (std::size_t p = 0; p < ids.size(); ++p) identity = identity && ids[p] == p;
    if (!identity)
      for (std::uint64_t v : ids) out.pm.devices.push_back(static_cast<std::uint32_t>(v));
  }
  out.type = detail::type_from_axes(m, global, axes, "HloSharding");
  return out;
}

/// Write a type on a placed mesh as an HloSharding: `{replicated}` (nothing split, ranks
/// 0..D-1), `{maximal device=N}` (one device), else the tile assignment in XLA's compact
/// form, with `last_tile_dim_replicate` when some devices hold the same tile. Throws
/// redist_error for pending sums.
inline std::string to_xla(const placed_mesh& pm, const dist_type& t) {
  const device_mesh& m = pm.mesh;
  if (t.nsum > 0)
    throw redist_error(errc::rule, "a type with pending values (" + std::string(reduction_name(t.reduce)) +
                                       "{...}) has no HloSharding: an XLA sharding holds whole values");
  if (error e = check(m, t); !e.ok()) throw redist_error(e);
  if (!pm.devices.empty() && pm.devices.size() != m.devices)
    throw redist_error(errc::bad_size, "the device list has " + std::to_string(pm.devices.size()) +
                                           " ranks but the mesh has " + std::to_string(m.devices) + " devices");
  const std::uint64_t D = m.devices;
  if (D == 1) return "{maximal device=" + std::to_string(pm.at(0)) + "}";
  bool split = false;
  for (int d = 0; d < t.rank; ++d) split = split || t.dims[d].n > 0;
  if (!split && pm.identity()) return "{replicated}";
  if (D > detail::max_sharding_devices)
    throw redist_error(errc::capacity, "the mesh has " + std::to_string(D) +
                                           " devices, more than the 2^20 an HloSharding is written for");
  std::vector<std::uint64_t> shape;
  std::uint64_t tiles = 1;
  for (int d = 0; d < t.rank; ++d) {
    shape.push_back(parts(m, t.dims[d]));
    tiles *= shape.back();
  }
  const std::uint64_t R = D / tiles;  // devices per tile: the unused sub-axes, in device order
  if (R > 1) shape.push_back(R);
  const std::uint64_t used = used_mask(t);
  std::vector<std::uint64_t> ids(D);
  for (std::uint64_t p = 0; p < D; ++p) {
    std::uint64_t q = 0;
    for (int d = 0; d < t.rank; ++d) q = q * shape[static_cast<std::size_t>(d)] + block_index(m, t.dims[d], p);
    if (R > 1) {
      std::uint64_t replica = 0;
      for (int k = 0; k < m.nsub; ++k)
        if (!((used >> k) & 1)) replica = replica * m.sub[k].size + m.coord(k, p);
      q = q * R + replica;
    }
    ids[q] = pm.at(p);
  }
  std::string s = "{devices=[" + detail::number_list(shape, ",") + "]";
  std::vector<std::uint64_t> reshape;
  std::vector<int> perm;
  if (detail::find_transposed_iota(ids, reshape, perm)) {
    s += "<=[" + detail::number_list(reshape, ",") + "]";
    bool transposed = false;
    for (std::size_t j = 0; j < perm.size(); ++j) transposed = transposed || perm[j] != static_cast<int>(j);
    if (transposed) s += "T(" + detail::number_list(perm, ",") + ")";
  } else {
    s += detail::number_list(ids, ",");
  }
  if (R > 1) s += " last_tile_dim_replicate";
  return s + "}";
}

}  // namespace redist
