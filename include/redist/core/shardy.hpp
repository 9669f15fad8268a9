// redist/core/shardy.hpp -- Shardy's meshes and shardings (the sdy dialect's text), in and out.
//
// A Shardy mesh names axes with sizes, `sdy.mesh @mesh = <["x"=2, "y"=4]>`, and may place
// them: `<["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>` lists the device at each row-major
// position, as a redist placed mesh does; `<[], device_ids=[3]>` is one device. A sharding
// lists, per dimension, the axes that split it MAJOR-to-minor (like JAX's tuples, the reverse
// of redist's braces): `#sdy.sharding<@mesh, [{"x"}, {"y", "z"}]>` is `[{x}.., {z, y}..]`.
// A sub-axis `"y":(pre)size` is the piece of y of that size below more-major pieces of size
// pre, the notation redist shows its sub-axes in. `unreduced={"x"}` is a pending sum over x
// (`sum{x}`). Read and ignored: open dimensions (`{"x", ?}` and `{?}` mean what they list),
// priorities (`{"x"}p1`), `replicated={...}` (the axes a type does not use replicate it).
// redist splits every axis into prime sub-axes, ascending from major to minor (core/mesh.hpp);
// a Shardy sub-axis that is not a run of them (`"y":(1)3` on y of size 6, whose 3 is major)
// names no type on the mesh: from_shardy refuses it, and shardy_layout reads the sharding,
// with the sub-axes in any order, as the box layout it is (redist/box.hpp; DESIGN.md
// section 2, "Sub-axes in any order"), which plan, run and show take.
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
#include "redist/core/lex.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/core/placement.hpp"

namespace redist {

namespace detail {
/// Take `w` at the scanner (after blanks) when it is not followed by an identifier character.
inline bool accept_word(scanner& sc, std::string_view w) {
  sc.skip();
  const auto at = static_cast<std::size_t>(sc.pos);
  if (sc.s.substr(at, w.size()) != w) return false;
  if (at + w.size() < sc.s.size() && is_ident(sc.s[at + w.size()])) return false;
  sc.pos += static_cast<int>(w.size());
  return true;
}

/// A symbol name after '@' (`@mesh`, `@mesh_2d.0`), or a quoted one; false at none.
inline bool symbol(scanner& sc) {
  sc.skip();
  std::string_view n;
  if (sc.peek() == '"') return sc.name(n);
  const int b = sc.pos;
  while (sc.pos < static_cast<int>(sc.s.size())) {
    const char c = sc.s[static_cast<std::size_t>(sc.pos)];
    if (!is_ident(c) && c != '.' && c != '$' && c != '-') break;
    ++sc.pos;
  }
  if (sc.pos > b) return true;
  sc.fail_expected("a mesh name after '@'");
  return false;
}

/// The mesh body at the scanner: `<["x"=2, "y"=4], device_ids=[...]>`. Throws on errors.
inline placed_mesh shardy_mesh_body(scanner& sc) {
  auto fail = [&]() { throw redist_error(sc.err, sc.s); };
  placed_mesh pm;
  if (!sc.expect('<', "'<' to open the mesh") || !sc.expect('[', "'[' to open the mesh axes")) fail();
  if (!sc.accept(']')) {
    do
      if (!mesh_axis_entry(sc, pm.mesh, '=')) fail();
    while (sc.accept(','));
    if (!sc.expect(']', "',' or ']' in the mesh axes")) fail();
  }
  std::vector<int> cols;
  if (sc.accept(',')) {
    sc.skip();
    const int col = sc.pos;
    if (!accept_word(sc, "device_ids")) {
      sc.err = error::make(errc::syntax, "expected device_ids=[...] after the mesh axes", col);
      fail();
    }
    if (!sc.expect('=', "'=' after device_ids") || !sc.expect('[', "'[' to open the device ids")) fail();
    if (!sc.accept(']')) {
      do {
        std::uint64_t r = 0;
        if (!sc.device_id(r, cols.emplace_back())) fail();
        pm.devices.push_back(static_cast<std::uint32_t>(r));
      } while (sc.accept(','));
      sc.skip();
      cols.push_back(sc.pos);
      if (!sc.expect(']', "',' or ']' in the device ids")) fail();
    }
    if (error e = check_placement(pm, std::max<std::uint64_t>(pm.min_world(), pm.mesh.devices), &cols); !e.ok()) {
      sc.err = e;
      fail();
    }
  }
  if (!sc.expect('>', "'>' to close the mesh")) fail();
  return pm;
}

/// A reference to (part of) an axis: `"x"` or `"x":(pre)size`, as the ids of its prime
/// sub-axes, major to minor, appended to `out`. Throws on errors.
inline void shardy_axis_ref(scanner& sc, const device_mesh& m, std::vector<int>& out, std::uint64_t& seen) {
  auto fail = [&]() { throw redist_error(sc.err, sc.s); };
  sc.skip();
  const int col = sc.pos;
  std::string_view n;
  if (!sc.name(n)) fail();
  const int a = m.find(n);
  if (a < 0) {
    std::string names;
    for (int i = 0; i < m.naxes; ++i) names += (i ? ", \"" : "\"") + std::string(m.names[i].view()) + "\"";
    sc.err = error::make(
        errc::unknown_axis,
        "unknown axis \"" + std::string(n) + "\" (the mesh has " + (m.naxes ? names : "no axes") + ")", col);
    fail();
  }
  int lo = m.sub_begin[a], hi = m.sub_begin[a] + m.sub_count[a];
  if (sc.accept(':')) {
    std::uint64_t pre = 0, size = 0;
    if (!sc.expect('(', "'(' of a sub-axis \"x\":(pre)size") || !sc.integer(pre) ||
        !sc.expect(')', "')' of a sub-axis \"x\":(pre)size") || !sc.integer(size))
      fail();
    int b = lo, e = lo;
    if (!subaxis_run(m, a, pre, size, b, e)) {
      std::string pieces;
      for (int k = m.sub_begin[a]; k < m.sub_begin[a] + m.sub_count[a]; ++k)
        pieces += (k > m.sub_begin[a] ? ", \"" : "\"") + std::string(n) + "\":(" + std::to_string(m.sub[k].pre) + ")" +
                  std::to_string(m.sub[k].size);
      const bool fits = size >= 2 && pre >= 1 && m.sizes[a] % pre == 0 && (m.sizes[a] / pre) % size == 0;
      sc.err = error::make(
          errc::unknown_axis,
          "sub-axis \"" + std::string(n) + "\":(" + std::to_string(pre) + ")" + std::to_string(size) +
              (fits ? " is not a run of the prime sub-axes of \"" + std::string(n) + "\" (size " +
                          std::to_string(m.sizes[a]) + ": " + pieces +
                          "); no type on this mesh says it (its box layout does: shardy_layout, xla_layout)"
                    : " does not fit in axis \"" + std::string(n) + "\" of size " + std::to_string(m.sizes[a])),
          col);
      fail();
    }
    lo = b;
    hi = e;
  }
  for (int k = lo; k < hi; ++k) {
    if (seen & (std::uint64_t{1} << k)) {
      sc.err = error::make(errc::repeated_axis,
                           "axis " + std::string(sc.s.substr(static_cast<std::size_t>(col),
                                                            static_cast<std::size_t>(sc.pos - col))) +
                               " is used twice",
                           col);
      fail();
    }
    seen |= std::uint64_t{1} << k;
    out.push_back(k);
  }
}

/// An axis list `{"x", "y":(2)2}` at the scanner, its sub-axis ids appended to `out` major to
/// minor; where `open`, a `?` (an open dimension) may end it. Throws on errors.
inline void shardy_axis_list(scanner& sc, const device_mesh& m, std::vector<int>& out, std::uint64_t& seen, bool open) {
  auto fail = [&]() { throw redist_error(sc.err, sc.s); };
  if (!sc.expect('{', open ? "'{' to open a dimension's axes" : "'{' to open the axes")) fail();
  if (sc.accept('}')) return;
  do {
    if (open && sc.accept('?')) break;  // open: what is listed
    shardy_axis_ref(sc, m, out, seen);
  } while (sc.accept(','));
  if (!sc.expect('}', "',' or '}' after an axis")) fail();
}

/// The dimension shardings `[{"x"}, {"y", ?}p1]` at the scanner for an array of `rank`
/// dimensions: each dimension's sub-axis ids, major to minor (priorities ignored). `[]`
/// leaves every dimension whole where `empty_any_rank`. Throws on errors.
inline std::vector<std::vector<int>> shardy_dims(scanner& sc, const device_mesh& m, std::size_t rank,
                                                 std::uint64_t& seen, bool empty_any_rank) {
  auto fail = [&]() { throw redist_error(sc.err, sc.s); };
  auto fail_at = [&](const std::string& msg, int col) {
    sc.err = error::make(errc::syntax, msg, col);
    fail();
  };
  std::vector<std::vector<int>> dims;
  sc.skip();
  const int dcol = sc.pos;
  if (!sc.expect('[', "'[' to open the dimension shardings")) fail();
  if (!sc.accept(']')) {
    do {
      sc.skip();
      if (dims.size() == rank)
        fail_at("the sharding has more dimensions than the array (" + std::to_string(rank) + ")", sc.pos);
      dims.emplace_back();
      shardy_axis_list(sc, m, dims.back(), seen, true);
      if (sc.peek() == 'p' && sc.pos + 1 < static_cast<int>(sc.s.size()) &&
          is_digit(sc.s[static_cast<std::size_t>(sc.pos) + 1])) {  // a priority: ignored
        ++sc.pos;
        std::uint64_t unused = 0;
        sc.integer(unused);
      }
    } while (sc.accept(','));
    if (!sc.expect(']', "',' or ']' after a dimension")) fail();
  }
  if (dims.empty() && empty_any_rank) dims.resize(rank);
  if (dims.size() != rank)
    fail_at("the sharding has " + std::to_string(dims.size()) + " dimensions but the array has " + std::to_string(rank),
            dcol);
  return dims;
}

/// The type that splits dimension d of `global` by the sub-axes dims[d] (major to minor),
/// with pending `reduce` values over the sub-axes `pending`; errors name the notation `what`.
inline dist_type shardy_type(const device_mesh& m, std::span<const std::uint64_t> global,
                             const std::vector<std::vector<int>>& dims, std::vector<int> pending, reduction reduce,
                             std::string_view what) {
  if (global.size() > static_cast<std::size_t>(max_dims))
    throw redist_error(errc::capacity, "a type may have at most 12 dimensions");
  dist_type t;
  t.rank = static_cast<int>(global.size());
  for (int d = 0; d < t.rank; ++d) {
    dim& dm = t.dims[d];
    dm.global = global[static_cast<std::size_t>(d)];
    const auto& ids = dims[static_cast<std::size_t>(d)];
    for (std::size_t i = ids.size(); i-- > 0;) dm.axes[dm.n++] = static_cast<std::uint8_t>(ids[i]);  // minor-to-major
  }
  std::sort(pending.begin(), pending.end());
  for (int k : pending) t.sum[t.nsum++] = static_cast<std::uint8_t>(k);
  if (!pending.empty()) t.reduce = reduce;
  if (error e = check(m, t); !e.ok()) throw redist_error(e.code, std::string(what) + ": " + e.message.str());
  return t;
}

/// `"x"` quoted for Shardy (`'x'` for XLA: `quote`); throws for a name holding the quote or '\'.
inline std::string shardy_name(const device_mesh& m, int a, char quote = '"') {
  const std::string_view n = m.names[a].view();
  const char bad[] = {quote, '\\', '\0'};
  if (n.find_first_of(bad) != std::string_view::npos)
    throw redist_error(errc::syntax, "axis name '" + std::string(n) + "' holds a quote or backslash, which redist does not write as " +
                                         (quote == '"' ? "Shardy" : "XLA") + " text");
  return quote + std::string(n) + quote;
}

/// Sub-axis ids, major to minor, as Shardy axis references: runs of one axis become `"x"`
/// (the whole axis) or `"x":(pre)size` (quoted by `quote`).
inline std::vector<std::string> shardy_refs(const device_mesh& m, const std::vector<int>& ids, char quote = '"') {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ids.size();) {
    const int a = m.sub[ids[i]].axis;
    std::size_t j = i + 1;
    while (j < ids.size() && ids[j] == ids[j - 1] + 1 && m.sub[ids[j]].axis == a) ++j;
    const int lo = ids[i], hi = ids[j - 1];
    std::string r = shardy_name(m, a, quote);
    if (lo != m.sub_begin[a] || hi != m.sub_begin[a] + m.sub_count[a] - 1) {
      std::uint64_t size = 1;
      for (int k = lo; k <= hi; ++k) size *= m.sub[k].size;
      r += ":(" + std::to_string(m.sub[lo].pre) + ")" + std::to_string(size);
    }
    out.push_back(r);
    i = j;
  }
  return out;
}

/// Sub-axis ids, major to minor, as a braced list of references: `{"x", "y":(1)2}`.
inline std::string shardy_ref_list(const device_mesh& m, const std::vector<int>& ids, char quote = '"') {
  const std::vector<std::string> refs = shardy_refs(m, ids, quote);
  std::string s = "{";
  for (std::size_t i = 0; i < refs.size(); ++i) s += (i ? ", " : "") + refs[i];
  return s + "}";
}

/// A type's dimension shardings, each dimension's axes major to minor: `{"x"}, {}`.
inline std::string shardy_dims_text(const device_mesh& m, const dist_type& t, char quote = '"') {
  std::string s;
  for (int d = 0; d < t.rank; ++d) {
    std::vector<int> ids;
    for (int i = t.dims[d].n; i-- > 0;) ids.push_back(t.dims[d].axes[i]);  // major to minor
    s += (d ? ", " : "") + shardy_ref_list(m, ids, quote);
  }
  return s;
}
}  // namespace detail

/// Parse a Shardy mesh: `sdy.mesh @mesh = <["x"=2, "y"=4]>`, `#sdy.mesh<[...]>`, `mesh<[...]>`
/// or `<[...]>`, with `device_ids=[...]` or without (0..D-1). Throws redist_error naming the
/// column.
inline placed_mesh from_shardy_mesh(std::string_view s) {
  if (error e = detail::check_text_length(s); !e.ok()) throw redist_error(e);
  detail::scanner sc{s};
  if (detail::accept_word(sc, "sdy.mesh")) {
    if (!sc.expect('@', "'@' before the mesh name") || !detail::symbol(sc) ||
        !sc.expect('=', "'=' after the mesh name"))
      throw redist_error(sc.err, s);
  }
  if (!detail::accept_word(sc, "#sdy.mesh")) detail::accept_word(sc, "mesh");
  placed_mesh pm = detail::shardy_mesh_body(sc);
  if (!sc.at_end()) {
    sc.fail_expected("the end of the mesh");
    throw redist_error(sc.err, s);
  }
  return pm;
}

/// Parse a Shardy sharding (`#sdy.sharding<@mesh, [{"x"}, {}]>`, `<@mesh, ...>`, an inline
/// `mesh<[...]>` equal to `pm`'s, or `#sdy.sharding_per_value<[<...>]>` of one value) for an
/// array of the given global shape on `pm`. Throws redist_error naming the column.
inline dist_type from_shardy(const placed_mesh& pm, std::string_view s, std::span<const std::uint64_t> global) {
  if (error e = detail::check_text_length(s); !e.ok()) throw redist_error(e);
  const device_mesh& m = pm.mesh;
  detail::scanner sc{s};
  auto fail = [&]() { throw redist_error(sc.err, s); };
  auto fail_at = [&](errc c, const std::string& msg, int col) {
    sc.err = error::make(c, msg, col);
    fail();
  };
  const bool per_value = detail::accept_word(sc, "#sdy.sharding_per_value");
  if (per_value) {
    if (!sc.expect('<', "'<' after #sdy.sharding_per_value") || !sc.expect('[', "'[' to open the values")) fail();
  }
  detail::accept_word(sc, "#sdy.sharding");
  if (!sc.expect('<', "'<' to open the sharding")) fail();
  sc.skip();
  const int mcol = sc.pos;
  if (sc.accept('@')) {
    if (!detail::symbol(sc)) fail();
  } else if (detail::accept_word(sc, "mesh") || detail::accept_word(sc, "#sdy.mesh")) {
    const placed_mesh inl = detail::shardy_mesh_body(sc);
    if (!(inl == pm))
      fail_at(errc::global_mismatch,
              "the sharding's mesh " + placed_mesh_text(inl) + " is not the given mesh " + placed_mesh_text(pm), mcol);
  } else {
    sc.fail_expected("'@mesh' or an inline mesh<[...]>");
    fail();
  }
  if (!sc.expect(',', "',' after the mesh")) fail();
  std::uint64_t seen = 0;
  const std::vector<std::vector<int>> dims = detail::shardy_dims(sc, m, global.size(), seen, m.naxes == 0);
  std::vector<int> unreduced;
  while (sc.accept(',')) {
    sc.skip();
    const int col = sc.pos;
    const bool is_unreduced = detail::accept_word(sc, "unreduced");
    if (!is_unreduced && !detail::accept_word(sc, "replicated"))
      fail_at(errc::syntax, "expected replicated={...} or unreduced={...}", col);
    if (!sc.expect('=', "'='")) fail();
    std::vector<int> ids;
    detail::shardy_axis_list(sc, m, ids, seen, false);
    if (is_unreduced) unreduced.insert(unreduced.end(), ids.begin(), ids.end());
  }
  if (!sc.expect('>', "'>' to close the sharding")) fail();
  if (per_value) {
    sc.skip();
    if (sc.peek() == ',') fail_at(errc::syntax, "a sharding of several values: pass one", sc.pos);
    if (!sc.expect(']', "']' after the value's sharding") || !sc.expect('>', "'>' to close the shardings")) fail();
  }
  if (!sc.at_end()) {
    sc.fail_expected("the end of the sharding");
    fail();
  }
  return detail::shardy_type(m, global, dims, unreduced, reduction::sum, "Shardy sharding");
}

/// Write a placed mesh as Shardy declares it: `sdy.mesh @mesh = <["x"=2, "y"=4]>`, with
/// `device_ids=[...]` unless it runs on 0..D-1; a mesh without axes is Shardy's maximal mesh
/// `<[], device_ids=[N]>`.
inline std::string to_shardy_mesh(const placed_mesh& pm, std::string_view name = "mesh") {
  std::string s = "sdy.mesh @" + std::string(name) + " = <[";
  for (int a = 0; a < pm.mesh.naxes; ++a)
    s += (a ? ", " : "") + detail::shardy_name(pm.mesh, a) + "=" + std::to_string(pm.mesh.sizes[a]);
  s += "]";
  if (!pm.identity() || pm.mesh.naxes == 0) {  // `<[], device_ids=[0]>`: one device (`<[]>` replicates)
    s += ", device_ids=[";
    for (std::uint64_t p = 0; p < pm.mesh.devices; ++p) s += (p ? ", " : "") + std::to_string(pm.at(p));
    s += "]";
  }
  return s + ">";
}

/// Write a type as a Shardy sharding on the mesh named `mesh_name`: `#sdy.sharding<@mesh,
/// [{"x"}, {}]>` (`[]` on a mesh without axes), sub-axes as `"x":(1)2`, pending sums as
/// `unreduced={...}`. Throws
/// redist_error for pending values of another reduction (Shardy's are sums).
inline std::string to_shardy(const placed_mesh& pm, const dist_type& t, std::string_view mesh_name = "mesh") {
  const device_mesh& m = pm.mesh;
  if (error e = check(m, t); !e.ok()) throw redist_error(e);
  if (t.nsum > 0 && t.reduce != reduction::sum)
    throw redist_error(errc::rule, "pending " + std::string(reduction_name(t.reduce)) +
                                       " values have no Shardy spelling (unreduced={...} is a sum)");
  std::string s = "#sdy.sharding<@" + std::string(mesh_name) + ", [";
  if (m.naxes > 0) s += detail::shardy_dims_text(m, t);  // `[]` on a mesh of one device, as Shardy writes it
  s += "]";
  if (t.nsum > 0) s += ", unreduced=" + detail::shardy_ref_list(m, std::vector<int>(t.sum, t.sum + t.nsum));
  return s + ">";
}

namespace detail {
/// Shardy's text split into the mesh's and the sharding's (from_shardy_text). The sharding
/// may sit in the attribute dictionary an MLIR dump writes after an argument or result,
/// `{sdy.sharding = #sdy.sharding<...>}`: the braces and the name are dropped.
inline std::pair<std::string, std::string> shardy_split(const std::string& text) {
  std::size_t at = text.find("#sdy.sharding");
  if (at == std::string::npos) at = text.find("sharding<");
  if (at == std::string::npos)
    throw redist_error(errc::syntax, "expected Shardy's mesh then its sharding, '#sdy.sharding<@mesh, [...]>'");
  std::string mesh = text.substr(0, at);
  std::string sharding = text.substr(at);
  // The mesh's text ends with `{`, `sdy.sharding`, `=` (blanks between): drop them.
  std::size_t cut = mesh.size();
  auto back = [&](std::string_view w) {
    const std::size_t k = cut == 0 ? std::string::npos : mesh.find_last_not_of(" \t\n", cut - 1);
    if (k == std::string::npos || k + 1 < w.size() || mesh.compare(k + 1 - w.size(), w.size(), w) != 0) return false;
    cut = k + 1 - w.size();
    return true;
  };
  if (back("=") && back("sdy.sharding") && back("{")) {
    const std::size_t close = sharding.find_last_not_of(" \t\n");
    if (sharding[close] != '}')
      throw redist_error(errc::syntax, "expected '}' after the sharding to close '{sdy.sharding = ...'");
    mesh.erase(cut);
    sharding.erase(close);
  }
  if (mesh.find_first_not_of(" \t\n;") == std::string::npos) {  // the mesh inline: mesh<...> up to its '>'
    const std::size_t m0 = sharding.find("mesh<");
    if (m0 == std::string::npos)
      throw redist_error(errc::syntax, "the sharding names a mesh ('@...'): give the mesh ('sdy.mesh @mesh = <[...]>') "
                                       "before it");
    int depth = 0;
    std::size_t end = m0 + 4;
    for (; end < sharding.size(); ++end) {
      depth += sharding[end] == '<' ? 1 : sharding[end] == '>' ? -1 : 0;
      if (depth == 0) break;
    }
    mesh = sharding.substr(m0, end + 1 - m0);
  }
  return {mesh, sharding};
}

/// Mesh m with each axis's prime sub-axes ordered so that every sub-axis reference
/// `"x":(pre)size` in the sharding's text (Shardy's, or XLA's `'x':(pre)size`) is a run of them: its bounds pre and pre * size
/// are cuts of one chain 1 | c1 | ... | size(x) (each cut divides the next), and the primes
/// between two cuts ascend (core/mesh.hpp with_subaxis_order). An axis whose references
/// fit no chain (they overlap) keeps its order: the parse then names the reference.
inline device_mesh shardy_subaxis_mesh(const device_mesh& m, std::string_view s) {
  std::vector<std::vector<std::uint64_t>> cuts(static_cast<std::size_t>(m.naxes));
  auto number = [&](std::size_t& k, std::uint64_t& v) {
    const std::size_t k0 = k;
    v = 0;
    for (; k < s.size() && is_digit(s[k]) && v < (std::uint64_t{1} << 59); ++k) v = v * 10 + static_cast<std::uint64_t>(s[k] - '0');
    return k > k0;
  };
  auto spaces = [&](std::size_t& k) {
    while (k < s.size() && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n')) ++k;
  };
  for (std::size_t i = s.find(':'); i != std::string_view::npos; i = s.find(':', i + 1)) {
    // The axis name before the ':', quoted ("y", 'y') or not (y).
    std::size_t e = i;
    while (e > 0 && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n')) --e;
    std::size_t b = e;
    if (e > 0 && (s[e - 1] == '"' || s[e - 1] == '\'')) {
      const std::size_t open = s.rfind(s[e - 1], e >= 2 ? e - 2 : std::string_view::npos);
      if (e < 2 || open == std::string_view::npos) continue;
      b = open + 1;
      --e;
    } else {
      while (b > 0 && is_ident(s[b - 1])) --b;
    }
    const int a = m.find(s.substr(b, e - b));
    std::size_t k = i + 1;
    std::uint64_t pre = 0, size = 0;
    spaces(k);
    if (a < 0 || k >= s.size() || s[k] != '(') continue;
    ++k;
    if (!number(k, pre) || k >= s.size() || s[k] != ')') continue;
    ++k;
    if (!number(k, size)) continue;
    const std::uint64_t n = m.sizes[a];
    if (pre == 0 || size < 2 || n % pre != 0 || (n / pre) % size != 0) continue;  // the parse says why
    cuts[static_cast<std::size_t>(a)].push_back(pre);
    cuts[static_cast<std::size_t>(a)].push_back(pre * size);
  }
  device_mesh out = m;
  for (int a = 0; a < m.naxes; ++a) {
    auto& c = cuts[static_cast<std::size_t>(a)];
    if (c.empty()) continue;
    c.push_back(1);
    c.push_back(m.sizes[a]);
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    bool chain = true;
    for (std::size_t k = 1; k < c.size(); ++k) chain = chain && c[k] % c[k - 1] == 0;
    if (!chain) continue;
    std::uint64_t primes[max_subaxes]{};
    int np = 0;
    for (std::size_t k = 1; k < c.size(); ++k)
      for (std::uint64_t r = c[k] / c[k - 1]; r > 1 && np < max_subaxes;) {
        const std::uint64_t p = smallest_prime_factor(r);  // the mesh factored the axis: never 0
        primes[np++] = p;
        r /= p;
      }
    out = with_subaxis_order(out, a, primes, np);
  }
  return out;
}

/// Type t on placed mesh pm as boxes (redist/box.hpp): mesh position p's tile on world rank
/// pm.at(p) of W (0: the mesh's smallest world), nothing on the other ranks. Throws for
/// pending values (a box layout holds values, not partial ones).
inline box_layout type_box_layout(const placed_mesh& pm, const dist_type& t, std::span<const std::uint64_t> g,
                                  std::uint64_t W) {
  if (t.nsum > 0)
    throw redist_error(errc::rule, "unreduced={...}: a box layout holds values, not partial ones (reduce them first)");
  box_layout l = placed_box_layout(pm, g, W);
  for (std::uint64_t p = 0; p < pm.mesh.devices; ++p) {
    box b;
    b.rank = t.rank;
    for (int d = 0; d < t.rank; ++d) {
      b.lo[static_cast<std::size_t>(d)] = range_lo(pm.mesh, t.dims[d], p);
      b.hi[static_cast<std::size_t>(d)] = range_hi(pm.mesh, t.dims[d], p);
    }
    l.boxes[pm.at(p)] = b;
  }
  return l;
}
}  // namespace detail

/// Shardy's text as a user copies it from an MLIR dump: the mesh (`sdy.mesh @mesh = <...>`,
/// `<[...]>`), then the sharding (`#sdy.sharding<@mesh, [...]>`); or a sharding with its mesh
/// inline (`#sdy.sharding<mesh<[...]>, [...]>`), for an array of the given global shape.
inline placed_type from_shardy_text(const std::string& text, std::span<const std::uint64_t> g) {
  const auto [mesh, sharding] = detail::shardy_split(text);
  placed_type r;
  r.pm = from_shardy_mesh(mesh);
  r.type = from_shardy(r.pm, sharding, g);
  return r;
}

/// True iff a type on the sharding's mesh says it (from_shardy_text reads it); false where a
/// sub-axis needs another order of redist's prime sub-axes (`"y":(1)3` on y: 6; then
/// shardy_layout reads it). Throws redist_error for a malformed mesh or sharding.
inline bool shardy_type_says(const std::string& text, std::span<const std::uint64_t> g) {
  const auto [mesh, sharding] = detail::shardy_split(text);
  placed_mesh pm = from_shardy_mesh(mesh);
  const device_mesh ordered = detail::shardy_subaxis_mesh(pm.mesh, sharding);
  bool same = true;
  for (int k = 0; k < pm.mesh.nsub; ++k) same = same && ordered.sub[k].size == pm.mesh.sub[k].size;
  if (same) return true;
  // Another order of sub-axes may still say what the default one says (`{"y":(1)3,
  // "y":(3)2}` is all of y): the type if the default order reads it.
  try {
    (void)from_shardy(pm, sharding, g);
    return true;
  } catch (const redist_error&) {
    pm.mesh = ordered;
    (void)from_shardy(pm, sharding, g);  // a malformed sharding throws here
    return false;
  }
}

/// The Shardy text's layout as boxes (redist/box.hpp), with sub-axes in any order: mesh
/// position p's tile, under the order of prime sub-axes that makes every referenced sub-axis
/// a run of them (`"y":(1)3` on y: 6: y's 3 major, its 2 minor), on world rank pm.at(p) in a
/// world of W ranks (0: the mesh's smallest world); the other ranks hold nothing, and ranks
/// that differ only along axes the sharding does not use hold equal boxes (replicas).
/// Throws redist_error for what from_shardy_text throws and for `unreduced` axes (a box
/// layout holds values, not partial ones).
inline box_layout shardy_layout(const std::string& text, std::span<const std::uint64_t> g, std::uint64_t W = 0) {
  const auto [mesh, sharding] = detail::shardy_split(text);
  placed_mesh pm = from_shardy_mesh(mesh);
  pm.mesh = detail::shardy_subaxis_mesh(pm.mesh, sharding);
  return detail::type_box_layout(pm, from_shardy(pm, sharding, g), g, W);
}

}  // namespace redist
