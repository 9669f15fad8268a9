// redist/core/jax.hpp -- JAX's sharding notation, in and out.
//
// A JAX sharding is a mesh plus a PartitionSpec with one entry per leading dimension:
// None (replicated), an axis name, or a tuple of axis names; missing trailing entries
// are None. Inside a tuple JAX lists axes MAJOR-to-minor (the first axis varies
// slowest), the reverse of redist's minor-to-major braces:
//   PartitionSpec('x', None, ('y', 'z'))  ==  [{x}.., .., {z, y}..]
// jax.make_mesh lays devices out row-major over the mesh axes, as redist does, so the
// device map is the same. Read as Python reads it: a trailing comma (`P('x',)`, as JAX
// prints a one-entry spec), `unreduced={'y'}` (pending sums over y, `sum{y}`; also a tuple,
// as older JAX printed it), `reduced={'y'}` (replicated over y, which a layout already
// says); UNCONSTRAINED names no layout and is refused. JAX cannot write sub-axes or pending
// values other than sums: such types have no JAX spelling and to_jax reports it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/lex.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/placement.hpp"

namespace redist {

namespace detail {
/// Build a type from per-dimension lists of declared axes, each minor-to-major.
inline dist_type type_from_axes(const device_mesh& m, std::span<const std::uint64_t> global,
                                const std::vector<std::vector<int>>& axes, std::string_view notation) {
  if (global.size() > static_cast<std::size_t>(max_dims))
    throw redist_error(errc::capacity, "a type may have at most 12 dimensions");
  if (axes.size() > global.size())
    throw redist_error(errc::syntax, std::string(notation) + " has " + std::to_string(axes.size()) +
                                         " entries but the array has " + std::to_string(global.size()) + " dimensions");
  dist_type t;
  t.rank = static_cast<int>(global.size());
  for (int d = 0; d < t.rank; ++d) {
    t.dims[d].global = global[static_cast<std::size_t>(d)];
    if (static_cast<std::size_t>(d) >= axes.size()) continue;
    for (int a : axes[static_cast<std::size_t>(d)])
      for (int k = m.sub_begin[a] + m.sub_count[a] - 1; k >= m.sub_begin[a]; --k)
        t.dims[d].axes[t.dims[d].n++] = static_cast<std::uint8_t>(k);
  }
  if (error e = check(m, t); !e.ok()) throw redist_error(e.code, std::string(notation) + ": " + e.message.str());
  return t;
}

/// The declared axes of a dimension, minor-to-major, if it is made of whole axes.
inline bool whole_axes(const device_mesh& m, const dim& d, std::vector<int>& out) {
  out.clear();
  int i = 0;
  while (i < d.n) {
    const int a = m.sub[d.axes[i]].axis;
    for (int k = m.sub_begin[a] + m.sub_count[a] - 1; k >= m.sub_begin[a]; --k, ++i)
      if (i >= d.n || d.axes[i] != k) return false;
    out.push_back(a);
  }
  return true;
}

/// Pending values over whole declared axes (any order): their sub-axes, ascending, as t.sum.
inline void add_pending_axes(const device_mesh& m, std::vector<int> axes, dist_type& t) {
  std::sort(axes.begin(), axes.end());  // the sub-axes of ascending axes ascend
  for (int a : axes)
    for (int k = m.sub_begin[a]; k < m.sub_begin[a] + m.sub_count[a]; ++k) t.sum[t.nsum++] = static_cast<std::uint8_t>(k);
}

/// The declared axes, ascending, whose pending values t holds; throws redist_error naming
/// `notation` where they cover part of an axis (a sub-axis).
inline std::vector<int> pending_axes(const device_mesh& m, const dist_type& t, std::string_view notation) {
  std::vector<int> axes;
  for (int a = 0; a < m.naxes; ++a) {
    int n = 0;
    for (int i = 0; i < t.nsum; ++i) n += m.sub[t.sum[i]].axis == a;
    if (n == 0) continue;
    if (n != m.sub_count[a]) throw redist_error(errc::rule, "a pending sum over a sub-axis has no " + std::string(notation));
    axes.push_back(a);
  }
  return axes;
}

/// An axis name as Python's repr() writes a string: in single quotes unless it holds one.
inline std::string quoted(const device_mesh& m, int a) {
  const std::string_view n = m.names[a].view();
  const char q = n.find('\'') == std::string_view::npos ? '\'' : '"';
  return q + std::string(n) + q;
}

/// `open` + the items separated by ", " + `close`, as Python prints a sequence.
inline std::string listed(std::string_view open, const std::vector<std::string>& items, std::string_view close) {
  std::string s(open);
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s.append(close);
}
}  // namespace detail

namespace detail {
/// The PartitionSpec at the scanner, up to its closing ')' (from_jax).
inline dist_type jax_spec(scanner& sc, const device_mesh& m, std::span<const std::uint64_t> global) {
  const std::string_view spec = sc.s;
  std::vector<std::vector<int>> axes;
  auto fail = [&]() { throw redist_error(sc.err, spec); };
  std::string_view head;
  sc.skip();
  const int hcol = sc.pos;
  if (!sc.name(head) || (head != "PartitionSpec" && head != "P")) {
    sc.err = error::make(errc::syntax, "expected PartitionSpec(...) or P(...)", hcol);
    fail();
  }
  std::vector<int> unreduced, reduced;  // keyword arguments: pending sums; axes that replicate
  auto axis = [&](std::vector<int>& out) {
    sc.skip();
    const int col = sc.pos;
    std::string_view n;
    if (!sc.name(n)) fail();
    const int a = m.find(n);
    if (a < 0) {
      sc.err = error::make(errc::unknown_axis, "unknown mesh axis '" + std::string(n) + "'", col);
      fail();
    }
    bool twice = std::find(out.begin(), out.end(), a) != out.end();
    for (const std::vector<int>* used : {&unreduced, &reduced})
      twice = twice || std::find(used->begin(), used->end(), a) != used->end();
    for (const auto& d : axes) twice = twice || std::find(d.begin(), d.end(), a) != d.end();
    if (twice) {
      sc.err = error::make(errc::repeated_axis, "mesh axis '" + std::string(n) + "' is used twice", col);
      fail();
    }
    out.push_back(a);
  };
  // Axes in parentheses (a tuple) or braces (a set), Python's trailing comma allowed.
  auto axis_list = [&](char close, std::vector<int>& out) {
    while (!sc.accept(close)) {
      axis(out);
      if (!sc.accept(',')) {
        if (!sc.expect(close, close == ')' ? "',' or ')' in a tuple of axes" : "',' or '}' in a set of axes")) fail();
        break;
      }
    }
  };
  if (!sc.expect('(', "'('")) fail();
  while (!sc.accept(')')) {
    sc.skip();
    const int col = sc.pos;
    std::vector<int> major_to_minor;
    auto positional = [&] {  // Python's rule: no entry after a keyword argument
      if (unreduced.empty() && reduced.empty()) return;
      sc.err = error::make(errc::syntax, "an entry after a keyword argument", col);
      fail();
    };
    if (sc.accept('(')) {
      positional();
      axis_list(')', major_to_minor);
    } else if (detail::is_ident_start(sc.peek())) {
      std::string_view n;
      sc.name(n);
      if (n == "unreduced" || n == "reduced") {  // JAX's sets of mesh axes: P('x', unreduced={'y'})
        std::vector<int>& into = n == "unreduced" ? unreduced : reduced;
        if (!sc.expect('=', "'=' after the keyword")) fail();
        if (sc.accept('{')) axis_list('}', into);
        else if (sc.accept('(')) axis_list(')', into);
        else axis(into);
        if (sc.accept(',')) continue;
        if (!sc.expect(')', "',' or ')' after a keyword argument")) fail();
        break;
      }
      positional();
      if (n == "P" || n == "PartitionSpec") (void)(sc.accept('.') && sc.name(n));
      if (n == "UNCONSTRAINED") {
        sc.err = error::make(errc::rule,
                             "UNCONSTRAINED leaves dimension " + std::to_string(axes.size()) +
                                 "'s layout to the compiler: name its mesh axes or None",
                             col);
        fail();
      }
      if (n != "None") {
        sc.pos = col;
        axis(major_to_minor);
      }
    } else {
      positional();
      axis(major_to_minor);  // a quoted name
    }
    axes.emplace_back(major_to_minor.rbegin(), major_to_minor.rend());
    if (sc.accept(',')) continue;
    if (!sc.expect(')', "',' or ')' after an entry")) fail();
    break;
  }
  dist_type t = type_from_axes(m, global, axes, "PartitionSpec");
  add_pending_axes(m, unreduced, t);
  return t;
}
}  // namespace detail

/// Parse a PartitionSpec (`PartitionSpec('x', None, ('y', 'z'))` or `P(...)`) for an
/// array of the given global shape. Throws redist_error naming the column.
inline dist_type from_jax(const device_mesh& m, std::span<const std::uint64_t> global, std::string_view spec) {
  if (error e = detail::check_text_length(spec); !e.ok()) throw redist_error(e);
  detail::scanner sc{spec};
  const dist_type t = detail::jax_spec(sc, m, global);
  if (!sc.at_end()) {
    sc.fail_expected("the end of the PartitionSpec");
    throw redist_error(sc.err, spec);
  }
  return t;
}

namespace detail {
/// Skip one Python argument value at the scanner (`(Auto, Auto)`, `device`,
/// `AxisType.Explicit`): up to a ',' or ')' outside brackets and quotes.
inline void skip_argument(scanner& sc) {
  int depth = 0;
  char quote = 0;
  for (; sc.pos < static_cast<int>(sc.s.size()); ++sc.pos) {
    const char c = sc.s[static_cast<std::size_t>(sc.pos)];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth-- == 0) return;
    } else if (c == ',' && depth == 0) {
      return;
    }
  }
}

/// A nested list of device ids at the scanner (`[[0, 1], [2, 3]]`, numpy's `array(...)`
/// around it): the ids row-major, the extent of each nesting level in `shape` (UINT64_MAX:
/// not seen yet), each id's column in `cols`. Throws for a ragged or summarized array.
inline void device_array(scanner& sc, std::size_t depth, std::vector<std::uint64_t>& shape,
                         std::vector<std::uint64_t>& ids, std::vector<int>& cols) {
  auto fail = [&]() { throw redist_error(sc.err, sc.s); };
  sc.skip();
  const int col = sc.pos;
  if (depth >= 16) sc.fail(errc::capacity, "a device array of more than 16 dimensions", col);
  if (sc.failed() || !sc.expect('[', "'[' to open a list of device ids")) fail();
  std::uint64_t n = 0;
  const bool nested = sc.peek() == '[';
  // The first list to close holds ids, at the depth where shape ends (shape.size() - 1):
  // lists above it hold lists, lists there hold ids.
  if (!shape.empty() && (depth >= shape.size() || nested != (depth + 1 < shape.size()))) {
    sc.fail(errc::bad_size, "the device array is ragged: lists and ids at the same depth", col);
    fail();
  }
  while (!sc.accept(']')) {
    if (n > 0 && !sc.expect(',', "',' or ']' in the device ids")) fail();
    if (nested) {
      device_array(sc, depth + 1, shape, ids, cols);
    } else {
      std::uint64_t v = 0;
      if (!sc.device_id(v, cols.emplace_back())) fail();
      ids.push_back(v);
    }
    ++n;
  }
  if (shape.size() <= depth) shape.resize(depth + 1, UINT64_MAX);
  if (shape[depth] == UINT64_MAX) shape[depth] = n;
  if (shape[depth] != n) {
    sc.fail(errc::bad_size, "the device array is ragged: a list of " + std::to_string(n) + " where others have " +
                                std::to_string(shape[depth]),
            col);
    fail();
  }
}

/// JAX's mesh as NamedSharding prints it (`mesh=` in from_jax_sharding): `Mesh('x': 2,
/// 'y': 4, axis_types=(...))` (str; ranks 0..D-1), `Mesh(device_ids=array([[0, 1], [2,
/// 3]]), axis_names=('x', 'y'), axis_types=(...))` (repr; on those devices),
/// `AbstractMesh(...)` or the dict `{'x': 2, 'y': 4}` of older JAX.
inline placed_mesh jax_mesh(scanner& sc) {
  auto fail = [&]() { throw redist_error(sc.err, sc.s); };
  placed_mesh pm;
  auto sizes = [&](char close) {  // 'x': 2, 'y': 4 up to `close`, or a keyword argument
    for (bool first = true; !sc.accept(close); first = false) {
      if (!first && !sc.expect(',', close == '}' ? "',' or '}' in the mesh" : "',' or ')' in the mesh")) fail();
      sc.skip();
      if (sc.accept(close)) break;  // Python's trailing comma
      if (is_ident_start(sc.peek())) {  // axis_types=(...), as str(mesh) ends
        std::string_view k;
        sc.name(k);
        if (!sc.expect('=', "'=' after the keyword")) fail();
        skip_argument(sc);
        continue;
      }
      if (!mesh_axis_entry(sc, pm.mesh, ':')) fail();
    }
  };
  sc.skip();
  const int mcol = sc.pos;
  if (sc.accept('{')) {
    sizes('}');
    return pm;
  }
  std::string_view head;
  if (!sc.name(head) || (head != "Mesh" && head != "AbstractMesh")) {
    sc.err = error::make(errc::syntax, "expected Mesh(...), AbstractMesh(...) or {'x': 2, ...} after 'mesh='", mcol);
    fail();
  }
  if (!sc.expect('(', "'(' after the mesh's name")) fail();
  sc.skip();
  if (sc.peek() == '\'' || sc.peek() == '"' || sc.peek() == ')') {
    sizes(')');
    return pm;
  }
  // repr(mesh): device_ids=..., axis_names=(...), axis_types=(...)
  std::vector<std::uint64_t> shape, ids;
  std::vector<int> cols;
  std::vector<std::pair<std::string_view, int>> names;
  int ids_col = -1, names_col = -1;
  for (bool first = true; !sc.accept(')'); first = false) {
    if (!first && !sc.expect(',', "',' or ')' in the mesh")) fail();
    sc.skip();
    if (sc.accept(')')) break;
    const int col = sc.pos;
    std::string_view k;
    if (!sc.name(k) || !sc.expect('=', "'=' after the keyword")) fail();
    if ((k == "device_ids" && ids_col >= 0) || (k == "axis_names" && names_col >= 0)) {
      sc.err = error::make(errc::syntax, std::string(k) + " is given twice", col);
      fail();
    }
    if (k == "device_ids") {
      sc.skip();
      ids_col = sc.pos;
      std::string_view w;
      const bool array = is_ident_start(sc.peek()) && sc.name(w) && w == "array";
      if (array && !sc.expect('(', "'(' after 'array'")) fail();
      if (!array && !w.empty()) {
        sc.err = error::make(errc::syntax, "expected a list of device ids or array([...])", ids_col);
        fail();
      }
      device_array(sc, 0, shape, ids, cols);
      if (array) {
        sc.skip();
        if (sc.accept(',')) skip_argument(sc);  // dtype=int32
        if (!sc.expect(')', "')' to close array(...)")) fail();
      }
    } else if (k == "axis_names") {
      sc.skip();
      names_col = sc.pos;
      if (!sc.expect('(', "'(' to open the axis names")) fail();
      for (bool f = true; !sc.accept(')'); f = false) {
        if (!f && !sc.expect(',', "',' or ')' in the axis names")) fail();
        sc.skip();
        if (sc.accept(')')) break;
        const int ncol = sc.pos;
        std::string_view n;
        if (!sc.name(n)) fail();
        names.emplace_back(n, ncol);
      }
    } else if (k == "axis_types") {
      skip_argument(sc);
    } else {
      sc.err = error::make(errc::syntax, "unknown keyword '" + std::string(k) + "' of a mesh", col);
      fail();
    }
  }
  if (ids_col < 0 || names_col < 0) {
    sc.err = error::make(errc::syntax, "expected device_ids=... and axis_names=(...) in the mesh", mcol);
    fail();
  }
  if (ids.empty()) {
    sc.err = error::make(errc::bad_size, "an empty mesh holds no array", ids_col);
    fail();
  }
  if (names.size() != shape.size()) {
    sc.err = error::make(errc::bad_size,
                         std::to_string(names.size()) + " axis names for a device array of " +
                             std::to_string(shape.size()) + " dimensions",
                         names_col);
    fail();
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    error e = mesh_add_axis(pm.mesh, names[i].first, shape[i], names[i].second);
    if (e.code == errc::bad_size) e.column = ids_col;
    if (!e.ok()) {
      sc.err = e;
      fail();
    }
  }
  pm.place_on(ids);
  if (error e = check_placement(pm, pm.min_world(), &cols); !e.ok()) {
    sc.err = e;
    fail();
  }
  return pm;
}
}  // namespace detail

/// True iff the text is a NamedSharding (from_jax_sharding), not a bare PartitionSpec.
inline bool is_jax_sharding(std::string_view s) {
  const std::size_t b = s.find_first_not_of(" \t\r\n");
  return b != std::string_view::npos && s.substr(b, 13) == "NamedSharding";
}

/// Parse JAX's NamedSharding as JAX prints it (`print(x.sharding)`): `NamedSharding(mesh=
/// Mesh('x': 2, 'y': 4, axis_types=(Auto, Auto)), spec=PartitionSpec('x', None),
/// memory_kind=device)` for an array of the given global shape: the mesh (on ranks 0..D-1,
/// or on the devices a mesh's repr lists: `Mesh(device_ids=array([[0, 1], [2, 3]]),
/// axis_names=('x', 'y'), ...)`) and the type of the spec (from_jax). `partition_spec=`
/// and a dict mesh (`{'x': 2}`) as older JAX printed them; `memory_kind` ignored;
/// `logical_device_ids` refused. Throws redist_error naming the column.
inline placed_type from_jax_sharding(std::string_view s, std::span<const std::uint64_t> global) {
  if (error e = detail::check_text_length(s); !e.ok()) throw redist_error(e);
  detail::scanner sc{s};
  auto fail = [&]() { throw redist_error(sc.err, s); };
  auto fail_at = [&](errc c, const std::string& msg, int col) {
    sc.err = error::make(c, msg, col);
    fail();
  };
  std::string_view head;
  sc.skip();
  const int hcol = sc.pos;
  if (!sc.name(head) || head != "NamedSharding") fail_at(errc::syntax, "expected NamedSharding(mesh=..., spec=...)", hcol);
  if (!sc.expect('(', "'(' after NamedSharding")) fail();
  placed_type out;
  bool mesh = false, spec = false;
  for (bool first = true; !sc.accept(')'); first = false) {
    if (!first && !sc.expect(',', "',' or ')' after an argument")) fail();
    sc.skip();
    const int col = sc.pos;
    std::string_view k;
    if (!detail::is_ident_start(sc.peek())) fail_at(errc::syntax, "expected mesh=, spec= or memory_kind=", col);
    sc.name(k);
    sc.skip();
    if (sc.peek() != '=')
      fail_at(errc::syntax, "expected keyword arguments (mesh=..., spec=...), as JAX prints a NamedSharding", col);
    ++sc.pos;
    if ((k == "mesh" && mesh) || ((k == "spec" || k == "partition_spec") && spec))
      fail_at(errc::syntax, std::string(k) + " is given twice", col);
    if (k == "mesh") {
      out.pm = detail::jax_mesh(sc);
      mesh = true;
    } else if (k == "spec" || k == "partition_spec") {
      if (!mesh) fail_at(errc::syntax, "the spec before the mesh: give mesh= first, as JAX prints it", col);
      out.type = detail::jax_spec(sc, out.pm.mesh, global);
      spec = true;
    } else if (k == "memory_kind") {
      detail::skip_argument(sc);
    } else if (k == "logical_device_ids") {
      fail_at(errc::rule, "logical_device_ids reorders the mesh's devices: give the sharding as its HloSharding",
              col);
    } else {
      fail_at(errc::syntax, "unknown argument '" + std::string(k) + "' of NamedSharding", col);
    }
  }
  if (!sc.at_end()) {
    sc.fail_expected("the end of the NamedSharding");
    fail();
  }
  if (!spec) fail_at(errc::syntax, "expected spec=PartitionSpec(...) in the NamedSharding", hcol);
  return out;
}

/// Write a type as a PartitionSpec, pending sums as `unreduced={...}`; throws redist_error
/// if JAX cannot express it (sub-axes, pending values other than sums). Trailing None
/// entries are dropped, as JAX does.
inline std::string to_jax(const device_mesh& m, const dist_type& t) {
  if (t.nsum > 0 && t.reduce != reduction::sum)
    throw redist_error(errc::rule, "pending " + std::string(reduction_name(t.reduce)) +
                                       " values have no PartitionSpec (JAX's unreduced axes are pending sums)");
  std::vector<std::string> sums;
  for (int a : detail::pending_axes(m, t, "PartitionSpec")) sums.push_back(detail::quoted(m, a));
  std::vector<std::string> entries;
  std::vector<int> axes;
  for (int d = 0; d < t.rank; ++d) {
    if (!detail::whole_axes(m, t.dims[d], axes))
      throw redist_error(errc::rule, "dimension " + std::to_string(d) + " is split by a sub-axis, which a PartitionSpec cannot name");
    if (axes.empty()) entries.push_back("None");
    else if (axes.size() == 1) entries.push_back(detail::quoted(m, axes[0]));
    else {
      std::vector<std::string> names;
      for (std::size_t i = axes.size(); i-- > 0;) names.push_back(detail::quoted(m, axes[i]));  // major-to-minor
      entries.push_back(detail::listed("(", names, ")"));
    }
  }
  while (!entries.empty() && entries.back() == "None") entries.pop_back();
  if (!sums.empty()) entries.push_back(detail::listed("unreduced={", sums, "}"));
  return detail::listed("PartitionSpec(", entries, ")");
}

}  // namespace redist
