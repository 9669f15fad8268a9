// redist/core/element_type.hpp -- the element types of a reshard manifest (format
// redist-reshard/1, docs/reference.md "Many arrays at once"): their names and sizes.
//
// A redistribution moves elements without looking at them, so most of the library needs
// only an element's size. Reductions (pending sums) need its arithmetic: the C++ type of
// each (runtime/reshard_executor.hpp with_element_type), bf16 and f16 those of
// runtime/half.hpp. A reshard may also convert between the floating-point types on the way
// (element_type_casts, element_type_holding; runtime/cast.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "redist/core/error.hpp"

namespace redist {

/// The element types a manifest names (numpy/JAX short names).
enum class element_type : std::uint8_t { f64, f32, bf16, f16, i64, i32, i8, u8 };

inline constexpr element_type element_types[] = {element_type::f64, element_type::f32, element_type::bf16,
                                                 element_type::f16, element_type::i64, element_type::i32,
                                                 element_type::i8,  element_type::u8};

constexpr std::string_view element_type_name(element_type t) {
  switch (t) {
    case element_type::f64: return "f64";
    case element_type::f32: return "f32";
    case element_type::bf16: return "bf16";
    case element_type::f16: return "f16";
    case element_type::i64: return "i64";
    case element_type::i32: return "i32";
    case element_type::i8: return "i8";
    default: return "u8";
  }
}

/// Bytes of one element.
constexpr std::uint64_t element_type_bytes(element_type t) {
  switch (t) {
    case element_type::f64:
    case element_type::i64: return 8;
    case element_type::f32:
    case element_type::i32: return 4;
    case element_type::bf16:
    case element_type::f16: return 2;
    default: return 1;
  }
}

/// True for the floating-point types (f64, f32, bf16, f16).
constexpr bool element_type_floating(element_type t) {
  return t == element_type::f64 || t == element_type::f32 || t == element_type::bf16 || t == element_type::f16;
}

/// True where a reshard may convert elements of type `from` to `to` on the way (a weight
/// sync from an f32 trainer to a bf16 engine; runtime/cast.hpp): the same type, or two
/// floating-point types.
constexpr bool element_type_casts(element_type from, element_type to) {
  return from == to || (element_type_floating(from) && element_type_floating(to));
}

/// The narrowest type that holds every value of a and of b exactly (a and b the same, or two
/// floating-point types): the wider of the two, f32 for bf16 and f16. Pending values that a
/// reshard casts are reduced in it (lower/reshard.hpp), as PyTorch FSDP's `reduce_dtype`.
constexpr element_type element_type_holding(element_type a, element_type b) {
  if (a == b) return a;
  if (element_type_bytes(a) == element_type_bytes(b)) return element_type::f32;  // bf16 and f16
  return element_type_bytes(a) > element_type_bytes(b) ? a : b;
}

/// The element type named `s`; throws redist_error(errc::syntax) naming the known ones.
inline element_type parse_element_type(std::string_view s) {
  for (element_type t : element_types)
    if (element_type_name(t) == s) return t;
  std::string known;
  for (element_type t : element_types) known += (known.empty() ? "" : ", ") + std::string(element_type_name(t));
  throw redist_error(errc::syntax, "unknown dtype '" + std::string(s) + "' (known: " + known + ")");
}

}  // namespace redist
