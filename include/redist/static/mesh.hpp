// redist/static/mesh.hpp -- a mesh as a type: `using M = redist::mesh<"{x: 4, y: 8}">;`
// parsed at compile time by the run-time parser (core/mesh.hpp).
#pragma once

#include <concepts>

#include "redist/core/mesh.hpp"
#include "redist/static/diagnostics.hpp"
#include "redist/static/fixed_string.hpp"

namespace redist {

template <fixed_string S>
struct mesh {
  static constexpr result<device_mesh> parsed = parse_mesh_text(S.view());
  static_assert(detail::no_syntax_error_at<parsed.err.column, parsed.err.code>,
                "redist::mesh: the mesh string is not well-formed; the error below names the column and the problem");
  static_assert(detail::report_parse_error<parsed.err>());
  /// The mesh as a value (the run-time representation).
  static constexpr device_mesh value = parsed.value;
  static constexpr fixed_string source_text = S;
};

/// A type that stands for a mesh known at compile time.
template <class M>
concept static_mesh = requires {
  { M::value } -> std::convertible_to<device_mesh>;
};

}  // namespace redist
