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

/// Parse a PartitionSpec (`PartitionSpec('x', None, ('y', 'z'))` or `P(...)`) for an
/// array of the given global shape. Throws redist_error naming the column.
inline dist_type from_jax(const device_mesh& m, std::span<const std::uint64_t> global, std::string_view spec) {
  if (error e = detail::check_text_length(spec); !e.ok()) throw redist_error(e);
  detail::scanner sc{spec};
  std::vector<std::vector<int>> axes;
  auto fail = [&]() { throw redist_error(sc.err, spec); };
  std::string_view head;
  if (!sc.name(head) || (head != "PartitionSpec" && head != "P")) {
    sc.err = error::make(errc::syntax, "expected PartitionSpec(...) or P(...)", 0);
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
  if (!sc.at_end()) {
    sc.fail_expected("the end of the PartitionSpec");
    fail();
  }
  dist_type t = detail::type_from_axes(m, global, axes, "PartitionSpec");
  detail::add_pending_axes(m, unreduced, t);
  return t;
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
