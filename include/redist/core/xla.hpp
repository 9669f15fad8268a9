// redist/core/xla.hpp -- XLA's HloSharding text, tiled and named, in and out.
//
// An HloSharding, as HLO dumps print it, is `{replicated}`, `{maximal device=3}` (the whole
// array on one device), or a tile assignment: an array of device ids given by its dimensions
// and either the ids row-major (`{devices=[2,1,2]0,1,2,3}`) or an iota (`<=[4]`: 0..D-1;
// `<=[2,2,2]T(0,2,1)`: 0..D-1 reshaped to [2,2,2], transposed by the permutation, read
// row-major). The first rank(array) dimensions of the assignment tile the array: dimension i
// of n in k tiles of ceil(n / k), the last ones short or empty (redist's uneven tiles).
// `last_tile_dim_replicate`, or `last_tile_dims={replicated}`, adds a trailing dimension
// whose devices hold the same tile; `last_tile_dims={unreduced}` one whose devices hold
// partial sums of it (`last_tile_dims={unreduced, replicated}` both, as XLA orders them), and
// `{unreduced}` partial sums of the whole array on every device. `shard_as N` and
// `shard_like N` (sharding groups, a hint to XLA's propagation) are read and set aside.
//
// from_xla builds the mesh of the assignment, one axis per dimension of size > 1: `d<i>` for
// the dimension that tiles array dimension i, `r` for the replication dimension and `u` for
// the unreduced one (`r0`, `r1`, ... when there are several of a kind); the mesh is placed on
// the flattened ids (no list when they are 0..D-1), and the type splits dimension i by `d<i>`
// and holds pending sums over `u` (`sum{u}`). `{replicated}` and `{unreduced}` name no device
// count: the caller gives it (`{r: N}`, `{u: N}`; one device: `{}`). `{maximal device=3}` is
// the mesh `{}` on [3]. XLA has no axis names, so to_xla writes any type on any placed mesh
// (sub-axes, any axis order: it is all one tile assignment), in the form XLA prints: the iota,
// a transposed iota (reshape dimensions and permutation found from the ids, canonical as
// XLA's), else the explicit list. Refused with a message: manual subgroups, `{manual}`,
// `{unknown}`, tuple shardings; pending values other than sums (to_xla).
//
// XLA's named sharding (xla/hlo/ir/named_sharding.h) is Shardy's sharding in HLO text:
// `{mesh['x'=2,'y'=4], device_ids=([2,4]T(1,0)), [{'x'}, {'y':(1)2, ?}], replicated={...},
// unreduced={'y':(2)2}}` reads as the Shardy sharding of the same mesh (core/shardy.hpp):
// names quoted or not, `@mesh<x=2,y=4>` as XLA first printed it, `{maximal_mesh[device_id=3]}`
// one device, `{mesh[], replicated}` XLA's `{replicated}`, `replicated` / `unreduced` alone
// the whole array, `unreduced=max{...}` pending maxima; `manual` axes are refused.
// to_xla_named writes it; sub-axes in any order read as box layouts (xla_layout).
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
#include "redist/core/shardy.hpp"

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

/// An iota `[4,16]` or `[2,2,3]T(2,1,0)` at the scanner: 0..total-1 reshaped to the
/// dimensions, transposed by the permutation, read row-major; `of` names what holds `total`
/// devices ("the tile assignment [2,2]"). Throws on errors.
inline std::vector<std::uint64_t> xla_iota(scanner& sc, std::uint64_t total, const std::string& of) {
  auto fail = [&]() { throw redist_error(sc.err, sc.s); };
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
  sc.skip();
  const int rcol = sc.pos;
  std::vector<std::uint64_t> reshape;
  if (!sc.expect('[', "'[' to open the iota dimensions")) fail();
  std::uint64_t n = 1;
  do {
    std::uint64_t d = 0;
    const int col = integer(d);
    if (d == 0) fail_at(errc::bad_size, "an iota dimension of size 0", col);
    reshape.push_back(d);
    if (!mul_ok(n, d, n) || n > max_sharding_devices) fail_at(errc::capacity, "the iota has more than 2^20 devices", rcol);
  } while (sc.accept(','));
  if (!sc.expect(']', "',' or ']' in the iota dimensions")) fail();
  if (n != total)
    fail_at(errc::bad_size,
            "the iota [" + number_list(reshape, ",") + "] has " + std::to_string(n) + " devices but " + of + " has " +
                std::to_string(total),
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
                    number_list(reshape, ",") + "]",
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
  return transposed_iota(reshape, perm);
}

/// Device ids `0,2,1,3` at the scanner, `total` of them (`of` has `total` `unit`: "the tile
/// assignment [2,2]", "tiles"); a repeated id is refused at its first repeat. Throws on errors.
inline std::vector<std::uint64_t> xla_ids(scanner& sc, std::uint64_t total, const std::string& of,
                                          std::string_view unit) {
  auto fail_at = [&](errc c, const std::string& msg, int col) {
    sc.err = error::make(c, msg, col);
    throw redist_error(sc.err, sc.s);
  };
  std::vector<std::uint64_t> ids;
  std::vector<int> id_cols;
  const std::string has = of + " has " + std::to_string(total) + " " + std::string(unit) + " but ";
  do {
    int col = 0;
    std::uint64_t v = 0;
    if (!sc.device_id(v, col)) throw redist_error(sc.err, sc.s);
    if (ids.size() == total) fail_at(errc::bad_size, has + "more devices are listed", col);
    ids.push_back(v);
    id_cols.push_back(col);
  } while (sc.accept(','));
  if (ids.size() != total) {
    sc.skip();
    fail_at(errc::bad_size, has + std::to_string(ids.size()) + " devices are listed", sc.pos);
  }
  std::vector<std::pair<std::uint64_t, std::size_t>> by_id;
  for (std::size_t i = 0; i < ids.size(); ++i) by_id.emplace_back(ids[i], i);
  std::sort(by_id.begin(), by_id.end());
  std::size_t repeat = ids.size();
  for (std::size_t i = 1; i < by_id.size(); ++i)
    if (by_id[i].first == by_id[i - 1].first) repeat = std::min(repeat, by_id[i].second);
  if (repeat < ids.size())
    fail_at(errc::repeated_axis, "device " + std::to_string(ids[repeat]) + " is listed twice", id_cols[repeat]);
  return ids;
}

/// Skip `{...}` at the scanner (nested braces, quoted strings), as `metadata={...}` is
/// skipped; `what` names it in the error for an unterminated one.
inline void skip_braced(scanner& sc, std::string_view what) {
  sc.skip();
  const int col = sc.pos;
  if (!sc.expect('{', "'{'")) throw redist_error(sc.err, sc.s);
  int depth = 1;
  char quote = 0;
  while (depth > 0 && sc.pos < static_cast<int>(sc.s.size())) {
    const char c = sc.s[static_cast<std::size_t>(sc.pos++)];
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
  if (depth > 0) {
    sc.err = error::make(errc::syntax, "unterminated " + std::string(what), col);
    throw redist_error(sc.err, sc.s);
  }
}

/// XLA's named sharding after its first word, `kind`: `mesh` (`mesh['a'=2,'b'=4]`, names
/// quoted or not), `@mesh` (`@mesh<a=2,b=4>`, as XLA printed it first) or `maximal_mesh`
/// (`maximal_mesh[device_id=5]`); see from_xla. With `any_order`, the mesh's prime sub-axes
/// are ordered so that every sub-axis the sharding names is a run of them (as shardy_layout
/// does). Throws on errors.
inline placed_type xla_named(scanner& sc, std::string_view kind, std::span<const std::uint64_t> global,
                             std::uint64_t devices, bool any_order) {
  auto fail = [&]() { throw redist_error(sc.err, sc.s); };
  auto fail_at = [&](errc c, const std::string& msg, int col) {
    sc.err = error::make(c, msg, col);
    fail();
  };
  placed_type out;
  placed_mesh& pm = out.pm;
  device_mesh& m = pm.mesh;
  const bool maximal = kind == "maximal_mesh";
  if (maximal) {
    if (!sc.expect('[', "'[' after 'maximal_mesh'")) fail();
    sc.skip();
    const int col = sc.pos;
    if (!accept_word(sc, "device_id")) fail_at(errc::syntax, "expected device_id=N in maximal_mesh[...]", col);
    if (!sc.expect('=', "'=' after 'device_id'")) fail();
    int dcol = 0;
    std::uint64_t d = 0;
    if (!sc.device_id(d, dcol)) fail();
    if (!sc.expect(']', "']' to close maximal_mesh[...]")) fail();
    pm.devices = {static_cast<std::uint32_t>(d)};
  } else {
    const bool angle = kind == "@mesh";
    if (!sc.expect(angle ? '<' : '[', "'" + std::string(angle ? "<" : "[") + "' to open the mesh axes")) fail();
    if (!sc.accept(angle ? '>' : ']')) {
      do
        if (!mesh_axis_entry(sc, m, '=')) fail();
      while (sc.accept(','));
      if (!sc.expect(angle ? '>' : ']', "',' or '" + std::string(angle ? ">" : "]") + "' in the mesh axes")) fail();
    }
    if (any_order) m = shardy_subaxis_mesh(m, sc.s.substr(static_cast<std::size_t>(sc.pos)));
  }
  bool placed = false;
  auto device_ids = [&]() {  // `(0,2,1,3)` or `([4,16]T(1,0))`: the device at each row-major position
    sc.skip();
    const int col = sc.pos;
    if (!sc.expect('(', "'(' to open the device ids")) fail();
    if (m.naxes == 0) fail_at(errc::syntax, "device ids for a mesh without axes", col);
    if (placed) fail_at(errc::syntax, "the device ids are given twice", col);
    placed = true;
    const std::vector<std::uint64_t> ids =
        sc.peek() == '[' ? xla_iota(sc, m.devices, "the mesh") : xla_ids(sc, m.devices, "the mesh", "devices");
    if (!sc.expect(')', "')' to close the device ids")) fail();
    pm.place_on(ids);
  };
  bool comma = false;  // a ',' taken before the body
  if (!maximal) {
    if (sc.peek() == '(') device_ids();
    if (sc.accept(',')) {
      if (accept_word(sc, "device_ids")) {
        if (!sc.expect('=', "'=' after 'device_ids'")) fail();
        device_ids();
      } else {
        comma = true;
      }
    }
  }
  // The body: `[{'a'}, {'b':(2)2, ?}]`, or `replicated` / `unreduced` alone (the whole
  // array), then `replicated={...}`, `unreduced={...}` (`unreduced=max{...}`), `metadata={...}`.
  const std::size_t rank = global.size();
  std::uint64_t seen = 0;
  std::vector<std::vector<int>> dims(rank);
  std::vector<int> pending;
  reduction reduce = reduction::sum;
  bool unreduced = false;
  for (int item = 0; comma || sc.accept(','); ++item) {
    comma = false;
    sc.skip();
    const int col = sc.pos;
    if (sc.peek() == '[') {
      if (item > 0) fail_at(errc::syntax, "the dimension shardings come right after the mesh", col);
      dims = shardy_dims(sc, m, rank, seen, true);
      continue;
    }
    std::string_view w;
    if (!is_ident_start(sc.peek())) {
      sc.fail_expected("[...], replicated, unreduced or metadata");
      fail();
    }
    sc.name(w);
    const std::string word(w);
    if (w == "metadata") {
      if (!sc.expect('=', "'=' after 'metadata'")) fail();
      skip_braced(sc, "metadata={...}");
    } else if (w == "manual") {
      fail_at(errc::rule,
              "manual axes (manual, manual={...}) are not read: a redist type lays out a global array, not per-device "
              "values",
              col);
    } else if (w == "replicated" || w == "unreduced") {
      const bool all = !sc.accept('=');
      if (all && item > 0)
        fail_at(errc::syntax, "'" + word + "' alone stands for the whole sharding, right after the mesh", col);
      if (w == "replicated") {
        std::vector<int> ids;  // the axes that replicate: checked, then nothing to do
        if (!all) shardy_axis_list(sc, m, ids, seen, false);
        continue;
      }
      if (unreduced) fail_at(errc::syntax, "the unreduced axes are given twice", col);
      unreduced = true;
      bool named_reduction = false;
      if (!all && is_ident_start(sc.peek())) {  // unreduced=max{...}
        const int rcol = sc.pos;
        std::string_view r;
        sc.name(r);
        for (reduction k : all_reductions)
          if (reduction_name(k) == r) {
            reduce = k;
            named_reduction = true;
          }
        if (!named_reduction)
          fail_at(errc::syntax, "unknown reduction '" + std::string(r) + "' (expected sum, max, min, prod or avg)", rcol);
      }
      if (!all && (sc.peek() == '{' || !named_reduction)) {
        shardy_axis_list(sc, m, pending, seen, false);
      } else {  // `unreduced`, `unreduced=max`: every axis the dimensions do not use
        for (int k = 0; k < m.nsub; ++k)
          if (!((seen >> k) & 1)) pending.push_back(k);
        for (int k : pending) seen |= std::uint64_t{1} << k;
      }
    } else {
      fail_at(errc::syntax,
              "unknown attribute '" + word + "' of a named sharding (expected replicated, unreduced or metadata)", col);
    }
  }
  if (!maximal && m.naxes == 0) {  // `mesh[]`: XLA's {replicated}, on the caller's devices
    if (devices == 0) throw redist_error(errc::bad_size, "a replicated sharding needs at least one device");
    if (devices > 1)
      if (error e = mesh_add_axis(m, "r", devices); !e.ok()) throw redist_error(e);
    dims.assign(rank, {});
  }
  out.type = shardy_type(m, global, dims, pending, reduce, "XLA named sharding");
  return out;
}

/// from_xla; with `any_order`, a named sharding's sub-axes in any order (xla_named).
inline placed_type parse_xla(std::string_view s, std::span<const std::uint64_t> global, std::uint64_t devices,
                             bool any_order) {
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
  std::string_view kind;
  if (sc.peek() == '@') {  // `@mesh<a=2,b=4>`, as XLA first printed named shardings
    ++sc.pos;
    if (!sc.name(kind) || kind != "mesh") fail_at(errc::syntax, "expected '@mesh<...>'", kcol);
    kind = "@mesh";
  } else if (!detail::is_ident_start(sc.peek())) {
    sc.fail_expected("replicated, maximal, devices=[...] or mesh[...]");
    fail();
  } else {
    sc.name(kind);
  }
  if (kind == "mesh" || kind == "@mesh" || kind == "maximal_mesh") {
    placed_type named = detail::xla_named(sc, kind, global, devices, any_order);
    if (braced && !sc.expect('}', "'}' to close the sharding")) fail();
    if (!sc.at_end()) {
      sc.fail_expected("the end of the sharding");
      fail();
    }
    return named;
  }

  placed_type out;
  std::vector<std::uint64_t> dims, ids;  // the tile assignment
  int dims_col = -1;
  std::vector<char> unreduced;  // per subgroup dimension: pending sums (else replicated)
  std::uint64_t maximal = 0;
  if (kind == "replicated" || kind == "unreduced") {
  } else if (kind == "maximal") {
    std::string_view w;
    sc.skip();
    const int col = sc.pos;
    if (!sc.name(w) || w != "device") fail_at(errc::syntax, "expected 'device=' after 'maximal'", col);
    if (!sc.expect('=', "'=' after 'device'")) fail();
    int dcol = 0;
    if (!sc.device_id(maximal, dcol)) fail();
  } else if (kind == "manual" || kind == "unknown") {
    fail_at(errc::rule,
            "{" + std::string(kind) +
                "} names no layout of the global array (redist needs tiled, replicated or maximal)",
            kcol);
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
    const std::string of = "the tile assignment [" + detail::number_list(dims, ",") + "]";
    if (sc.accept('<')) {  // <=[dims] or <=[dims]T(perm)
      if (!sc.expect('=', "'=' of '<='")) fail();
      ids = detail::xla_iota(sc, total, of);
    } else {
      ids = detail::xla_ids(sc, total, of, "tiles");
    }
  } else {
    fail_at(errc::syntax,
            "unknown sharding '" + std::string(kind) +
                "' (expected replicated, unreduced, maximal, devices=[...] or mesh[...])",
            kcol);
  }

  // Trailing attributes.
  bool grouped = false;
  while (detail::is_ident_start(sc.peek())) {
    const int col = sc.pos;
    std::string_view w;
    sc.name(w);
    if (w == "metadata") {
      if (!sc.expect('=', "'=' after 'metadata'")) fail();
      detail::skip_braced(sc, "metadata={...}");
      continue;
    }
    if (w == "shard_as" || w == "shard_like") {  // a sharding group: a hint to XLA's propagation, no layout
      if (grouped) fail_at(errc::syntax, "a second sharding group", col);
      grouped = true;
      std::uint64_t id = 0;
      integer(id);
      continue;
    }
    if (kind != "devices") fail_at(errc::syntax, "'" + std::string(w) + "' after '" + std::string(kind) + "'", col);
    if (w == "last_tile_dim_replicate") {
      if (!unreduced.empty()) fail_at(errc::syntax, "the subgroup dimensions are given twice", col);
      unreduced = {0};
    } else if (w == "last_tile_dims") {
      if (!unreduced.empty()) fail_at(errc::syntax, "the subgroup dimensions are given twice", col);
      if (!sc.expect('=', "'=' after 'last_tile_dims'") || !sc.expect('{', "'{' after 'last_tile_dims='")) fail();
      do {
        sc.skip();
        const int tcol = sc.pos;
        std::string_view type;
        if (!sc.name(type)) fail();
        if (type == "manual")
          fail_at(errc::rule,
                  "a manual subgroup (last_tile_dims={manual}) is not read: a redist type lays out a global "
                  "array, not per-device values",
                  tcol);
        if (type != "replicated" && type != "unreduced")
          fail_at(errc::syntax, "unknown subgroup type '" + std::string(type) + "' (expected replicated or unreduced)",
                  tcol);
        unreduced.push_back(type == "unreduced");
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
  std::vector<int> pending;  // the axes of unreduced subgroups
  if (kind == "replicated" || kind == "unreduced") {
    if (devices == 0) throw redist_error(errc::bad_size, "a " + std::string(kind) + " sharding needs at least one device");
    if (devices > 1) {
      if (error e = mesh_add_axis(m, kind == "replicated" ? "r" : "u", devices); !e.ok()) throw redist_error(e);
      if (kind == "unreduced") pending.push_back(0);
    }
  } else if (kind == "maximal") {
    out.pm.devices = {static_cast<std::uint32_t>(maximal)};
  } else {
    const std::size_t rank = global.size(), subgroups = unreduced.size();
    if (dims.size() != rank + subgroups)
      fail_at(errc::syntax,
              "the tile assignment [" + detail::number_list(dims, ",") + "] has " + std::to_string(dims.size()) +
                  " dimensions but an array of rank " + std::to_string(rank) +
                  (subgroups ? " with " + std::to_string(subgroups) + " subgroup dimension(s)" : std::string()) +
                  " needs " + std::to_string(rank + subgroups),
              dims_col);
    axes.resize(rank);
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 1) continue;
      std::string name = "d" + std::to_string(i);
      if (i >= rank) {  // `r`, `u`; `r0`, `r1`, ... where several subgroups are of one type
        const char u = unreduced[i - rank];
        name = u ? "u" : "r";
        if (std::count(unreduced.begin(), unreduced.end(), u) > 1) name += std::to_string(i - rank);
      }
      if (error e = mesh_add_axis(m, name, dims[i], dims_col); !e.ok()) throw redist_error(e, s);
      if (i < rank) axes[i].push_back(m.naxes - 1);
      else if (unreduced[i - rank]) pending.push_back(m.naxes - 1);
    }
    out.pm.place_on(ids);
  }
  out.type = detail::type_from_axes(m, global, axes, "HloSharding");
  if (!pending.empty()) {  // XLA's unreduced values are partial sums
    detail::add_pending_axes(m, pending, out.type);
    out.type.reduce = reduction::sum;
  }
  return out;
}
}  // namespace detail

/// Parse an HloSharding (`{devices=[2,1,2]<=[4] last_tile_dim_replicate}`; braces optional,
/// a leading `sharding=` and `metadata={...}` skipped) or XLA's named sharding
/// (`{mesh['x'=2,'y'=2], [{'x'}, {}]}`) for an array of the given global shape; `devices` is
/// the device count of `{replicated}` and `{mesh[], replicated}`. Throws redist_error naming
/// the column.
inline placed_type from_xla(std::string_view s, std::span<const std::uint64_t> global, std::uint64_t devices = 1) {
  return detail::parse_xla(s, global, devices, false);
}

/// True iff a type on the sharding's mesh says it (from_xla reads it); false for a named
/// sharding whose sub-axes need another order of redist's prime sub-axes (`'y':(1)3` on
/// y: 6; xla_layout reads it). Throws redist_error for a malformed sharding.
inline bool xla_type_says(std::string_view s, std::span<const std::uint64_t> global, std::uint64_t devices = 1) {
  try {
    (void)from_xla(s, global, devices);
    return true;
  } catch (const redist_error&) {
    (void)detail::parse_xla(s, global, devices, true);  // a malformed sharding throws here
    return false;
  }
}

/// The sharding's layout as boxes (redist/box.hpp), a named sharding's sub-axes in any order,
/// as shardy_layout reads Shardy's: the placed mesh's ranks hold their tiles in a world of W
/// ranks (0: the mesh's smallest world). Throws redist_error for what from_xla throws and
/// for pending values.
inline box_layout xla_layout(std::string_view s, std::span<const std::uint64_t> global, std::uint64_t devices = 1,
                             std::uint64_t W = 0) {
  const placed_type pt = detail::parse_xla(s, global, devices, true);
  return detail::type_box_layout(pt.pm, pt.type, global, W);
}

/// Write a type on a placed mesh as an HloSharding: `{replicated}` (nothing split, ranks
/// 0..D-1 in any order), `{unreduced}` (nothing split, partial sums over every axis, the same),
/// `{maximal device=N}` (one device), else the tile assignment in XLA's compact form, with
/// `last_tile_dim_replicate` when some devices hold the same tile, `last_tile_dims={unreduced}`
/// when some hold partial sums of it, and `last_tile_dims={unreduced, replicated}` for both;
/// the devices of each replication group in ascending order, as XLA prints them. Throws
/// redist_error for pending values other than sums.
inline std::string to_xla(const placed_mesh& pm, const dist_type& t) {
  const device_mesh& m = pm.mesh;
  if (t.nsum > 0 && t.reduce != reduction::sum)
    throw redist_error(errc::rule, "pending " + std::string(reduction_name(t.reduce)) +
                                       " values have no HloSharding (XLA's unreduced values are sums)");
  if (error e = check(m, t); !e.ok()) throw redist_error(e);
  if (!pm.devices.empty() && pm.devices.size() != m.devices)
    throw redist_error(errc::bad_size, "the device list has " + std::to_string(pm.devices.size()) +
                                           " ranks but the mesh has " + std::to_string(m.devices) + " devices");
  const std::uint64_t D = m.devices;
  if (D == 1) return "{maximal device=" + std::to_string(pm.at(0)) + "}";
  bool split = false;
  for (int d = 0; d < t.rank; ++d) split = split || t.dims[d].n > 0;
  std::uint64_t U = 1, summed = 0;  // devices per tile holding partial sums of it: the sum sub-axes
  for (int i = 0; i < t.nsum; ++i) {
    U *= m.sub[t.sum[i]].size;
    summed |= std::uint64_t{1} << t.sum[i];
  }
  // Nothing split and every device alike (all replicas, or all partial sums): only the set of
  // devices counts, and XLA's shorthand says 0..D-1.
  if (!split && pm.min_world() == D && (U == 1 || U == D)) return U == 1 ? "{replicated}" : "{unreduced}";
  if (D > detail::max_sharding_devices)
    throw redist_error(errc::capacity, "the mesh has " + std::to_string(D) +
                                           " devices, more than the 2^20 an HloSharding is written for");
  std::vector<std::uint64_t> shape;
  std::uint64_t tiles = 1;
  for (int d = 0; d < t.rank; ++d) {
    shape.push_back(parts(m, t.dims[d]));
    tiles *= shape.back();
  }
  // Subgroup dimensions in XLA's order: the unreduced, then the replicated (the unused
  // sub-axes), each in device order.
  const std::uint64_t R = D / tiles / U;
  if (U > 1) shape.push_back(U);
  if (R > 1) shape.push_back(R);
  const std::uint64_t used = used_mask(t);
  std::vector<std::uint64_t> ids(D);
  for (std::uint64_t p = 0; p < D; ++p) {
    std::uint64_t q = 0;
    for (int d = 0; d < t.rank; ++d) q = q * shape[static_cast<std::size_t>(d)] + block_index(m, t.dims[d], p);
    if (U > 1) {
      std::uint64_t part = 0;
      for (int k = 0; k < m.nsub; ++k)
        if ((summed >> k) & 1) part = part * m.sub[k].size + m.coord(k, p);
      q = q * U + part;
    }
    if (R > 1) {
      std::uint64_t replica = 0;
      for (int k = 0; k < m.nsub; ++k)
        if (!((used >> k) & 1)) replica = replica * m.sub[k].size + m.coord(k, p);
      q = q * R + replica;
    }
    ids[q] = pm.at(p);
  }
  // XLA's canonical partial replication (HloSharding::PartialTile) holds each group of
  // replicas in ascending device order: the order of replicas says nothing of the layout.
  if (R > 1)
    for (auto g = ids.begin(); g != ids.end(); g += static_cast<std::ptrdiff_t>(R))
      std::sort(g, g + static_cast<std::ptrdiff_t>(R));
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
  if (U > 1) s += R > 1 ? " last_tile_dims={unreduced, replicated}" : " last_tile_dims={unreduced}";
  else if (R > 1) s += " last_tile_dim_replicate";
  return s + "}";
}

/// Write a type on a placed mesh as XLA's named sharding, as HLO dumps print it and XLA's
/// parser reads it: `{mesh['x'=2,'y'=4], [{'x'}, {}]}`, sub-axes `'y':(2)2`, pending sums
/// `unreduced={'y'}`, `device_ids=(...)` (the transposed iota where the ids are one, as XLA
/// prints it, else the list) unless the mesh runs on 0..D-1, `replicated` where nothing is
/// split or pending, `{maximal_mesh[device_id=3]}` for a mesh without axes. Throws
/// redist_error for pending values of another reduction and for a device list that is not
/// an order of 0..D-1 (XLA's named meshes hold no other devices: to_xla writes them).
inline std::string to_xla_named(const placed_mesh& pm, const dist_type& t) {
  const device_mesh& m = pm.mesh;
  if (error e = check(m, t); !e.ok()) throw redist_error(e);
  if (t.nsum > 0 && t.reduce != reduction::sum)
    throw redist_error(errc::rule, "pending " + std::string(reduction_name(t.reduce)) +
                                       " values have no XLA spelling (unreduced={...} is a sum)");
  if (!pm.devices.empty() && pm.devices.size() != m.devices)
    throw redist_error(errc::bad_size, "the device list has " + std::to_string(pm.devices.size()) +
                                           " ranks but the mesh has " + std::to_string(m.devices) + " devices");
  if (m.naxes == 0) return "{maximal_mesh[device_id=" + std::to_string(pm.at(0)) + "]}";
  std::string s = "{mesh[";
  for (int a = 0; a < m.naxes; ++a)
    s += (a ? "," : "") + detail::shardy_name(m, a, '\'') + "=" + std::to_string(m.sizes[a]);
  s += "]";
  if (!pm.identity()) {
    std::vector<std::uint64_t> ids(pm.devices.begin(), pm.devices.end()), sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t p = 0; p < sorted.size(); ++p)
      if (sorted[p] != p)
        throw redist_error(errc::rule, "XLA's named mesh holds devices 0.." + std::to_string(m.devices - 1) +
                                           " in some order, not " + placed_mesh_text(pm) +
                                           ": write it as an HloSharding (to_xla)");
    std::vector<std::uint64_t> reshape;
    std::vector<int> perm;
    s += ", device_ids=(";
    if (detail::find_transposed_iota(ids, reshape, perm))
      s += "[" + detail::number_list(reshape, ",") + "]T(" + detail::number_list(perm, ",") + ")";
    else
      s += detail::number_list(ids, ",");
    s += ")";
  }
  bool split = false;
  for (int d = 0; d < t.rank; ++d) split = split || t.dims[d].n > 0;
  if (!split && t.nsum == 0) return s + ", replicated}";
  s += ", [" + (split ? detail::shardy_dims_text(m, t, '\'') : std::string()) + "]";  // `[]`: XLA's canonical form
  if (t.nsum > 0) s += ", unreduced=" + detail::shardy_ref_list(m, std::vector<int>(t.sum, t.sum + t.nsum), '\'');
  return s + "}";
}

}  // namespace redist
