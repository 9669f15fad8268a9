// redist/static/diagnostics.hpp -- readable compile errors for the compile-time layer.
//
// A failed static_assert can only print a fixed sentence; the details (the column of a
// syntax error, the two global shapes that differ) are carried by an undefined class
// template that the failing check instantiates, so the compiler prints its arguments,
// CTRE-style:
//   error: static assertion failed: redist::dtype: the type string is not well-formed ...
//   error: invalid use of incomplete type
//          'redist::syntax_error_at_position<11, redist::errc::unknown_axis,
//                                            "unknown axis 'z' (the mesh declares x, y)">'
#pragma once

#include "redist/core/error.hpp"
#include "redist/static/fixed_string.hpp"

namespace redist {

/// Never defined: names where a mesh or type literal is wrong (0-based column) and why.
template <int Column, errc Problem, fixed_string Message>
struct syntax_error_at_position;

/// Never defined: names the global shapes of a source and target that differ.
template <fixed_string Source, fixed_string Target>
struct global_shapes_differ;

/// Never defined: names the typing rule a typed collective violates and why.
template <fixed_string Rule>
struct ill_typed_collective;

namespace detail {

inline constexpr std::size_t diagnostic_length = 96;

/// False exactly when there is an error; its arguments show in the compiler's message.
template <int Column, errc Problem>
inline constexpr bool no_syntax_error_at = Problem == errc::ok;

/// True if `e` is no error; otherwise instantiates syntax_error_at_position (a hard
/// error that prints the column, the code and the message).
template <error E>
constexpr bool report_parse_error() {
  if constexpr (E.code != errc::ok) {
    return sizeof(syntax_error_at_position<E.column, E.code, to_fixed_string<diagnostic_length>(E.message.view())>) > 0;
  } else {
    return true;
  }
}

}  // namespace detail
}  // namespace redist
