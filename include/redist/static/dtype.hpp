// redist/static/dtype.hpp -- a distributed type as a type:
//   using Y = redist::dtype<M, "[32, 64{devs}2048]">;
// parsed at compile time by the run-time parser (core/dtype.hpp), so a bad literal is
// rejected with the same message and column. Types computed by typed collectives are
// `type_value<M, V>`; two static types denote the same distributed type when their
// meshes and values are equal (same_type_v), whatever their spelling.
#pragma once

#include <concepts>

#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/static/diagnostics.hpp"
#include "redist/static/fixed_string.hpp"
#include "redist/static/mesh.hpp"

namespace redist {

template <static_mesh M, fixed_string S>
struct dtype {
  using mesh_type = M;
  static constexpr result<dist_type> parsed = parse_type_text(M::value, S.view());
  static_assert(detail::no_syntax_error_at<parsed.err.column, parsed.err.code>,
                "redist::dtype: the type string is not well-formed over this mesh; the error below names the column and "
                "the problem");
  static_assert(detail::report_parse_error<parsed.err>());
  static constexpr dist_type value = parsed.value;
};

/// A distributed type given by its value (the result type of typed collectives).
template <static_mesh M, dist_type V>
struct type_value {
  using mesh_type = M;
  static constexpr dist_type value = V;
};

/// A type that stands for a distributed type known at compile time.
template <class T>
concept static_type = requires {
  typename T::mesh_type;
  { T::value } -> std::convertible_to<dist_type>;
} && static_mesh<typename T::mesh_type>;

template <static_type A, static_type B>
inline constexpr bool same_mesh_v = A::mesh_type::value == B::mesh_type::value;

/// Same mesh and same distributed type (spelling aside).
template <static_type A, static_type B>
inline constexpr bool same_type_v = same_mesh_v<A, B> && A::value == B::value;

/// The type written in the paper syntax.
template <static_type A>
constexpr text type_string() {
  return type_text(A::mesh_type::value, A::value);
}

/// localsize(A): elements of one device's tile.
template <static_type A>
inline constexpr std::uint64_t local_size_v = local_size(A::mesh_type::value, A::value);

}  // namespace redist
