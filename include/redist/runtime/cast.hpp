// redist/runtime/cast.hpp -- converting elements between the floating-point types while a
// reshard moves them (a weight sync from an f32 trainer to a bf16 inference engine, a
// checkpoint written in f32 and loaded in bf16; lower/reshard.hpp, reshard_array::target_dtype).
//
// Conversions round to nearest, ties to even, as PyTorch's `tensor.to(dtype)` and NumPy's
// `astype` do: f64 -> f32 is the C++ conversion (double_to_float: NaNs spelled out); to bf16
// and f16 the value goes through f32
// first (as PyTorch converts f64 to bf16 and f16), so f64 -> bf16 may round twice. Values
// beyond a narrower type's range become infinities; NaNs stay NaNs (quiet, their sign and
// leading payload bits kept); subnormals are kept, not flushed. Widening is exact.
//
// bf16 and f16 have no C++20 arithmetic type, so they are handled here as their 16-bit
// patterns (IEEE binary16, and the upper half of an IEEE binary32 for bf16; runtime/half.hpp
// gives them arithmetic on top of these conversions). A cast_copy is a strided
// copy (pack.hpp) in elements whose two sides have different element types; host memory runs
// it run by run (host_cast_copy), loading and storing through memcpy so that tiles need no
// alignment beyond their element size.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "redist/core/element_type.hpp"
#include "redist/core/error.hpp"
#include "redist/runtime/pack.hpp"

namespace redist {

namespace detail::convert {

// The conversions' formulas, written once: REDIST_CONVERSIONS(...) compiles its text here as
// constexpr C++ and keeps it as a string, `text`, which the NCCL backend's kernel source
// (backends/cuda_strided.hpp) puts after its own definitions of the same few primitives, so
// that NVRTC compiles the very same formulas for the device. The text may use only what both
// sides define: u16, u32, u64; as_u32 / as_f32 / as_u64 / as_f64 (bit casts); add_rn and mul_rn
// (a float sum and product rounded to nearest, never fused); REDIST_CONVERSION in front of
// each function (constexpr here, __device__ __forceinline__ there). No comments or
// preprocessor lines inside (stringizing drops the first and cannot hold the second).
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
constexpr u32 as_u32(float f) { return std::bit_cast<u32>(f); }
constexpr float as_f32(u32 u) { return std::bit_cast<float>(u); }
constexpr u64 as_u64(double d) { return std::bit_cast<u64>(d); }
constexpr double as_f64(u64 u) { return std::bit_cast<double>(u); }
constexpr float add_rn(float a, float b) { return a + b; }
constexpr float mul_rn(float a, float b) { return a * b; }

#define REDIST_CONVERSION constexpr
#define REDIST_CONVERSIONS(...) \
  __VA_ARGS__                   \
  inline constexpr char text[] = #__VA_ARGS__;

// float_to_bf16_bits: the bf16 pattern nearest to f (ties to even), a NaN made quiet.
// float_to_f16_bits: the f16 (IEEE binary16) pattern nearest to f (ties to even): every case
//   computed, then one selected; a NaN made quiet; 65520 and above round to infinity; below
//   2^-14 a multiple of 2^-24 in f16, where adding 0.5 (whose ulp is 2^-24) rounds.
// f16_bits_to_float: exact (subnormals as m * 2^-24).
// double_to_float: to nearest, ties to even; a NaN stays a quiet NaN with its sign and the
//   leading bits of its payload (as x86 and Arm convert; spelled out so that every platform,
//   the CUDA kernel too, gives the same bits).
// float_to_double: exact; a NaN stays a quiet NaN with its sign and payload.
// Without branches where loops of them should vectorize (the 16-bit ones).
REDIST_CONVERSIONS(
REDIST_CONVERSION u16 float_to_bf16_bits(float f) {
  const u32 u = as_u32(f);
  const u32 rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet = (u >> 16) | 0x40u;
  return static_cast<u16>((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}
REDIST_CONVERSION float bf16_bits_to_float(u16 h) { return as_f32(static_cast<u32>(h) << 16); }
REDIST_CONVERSION u16 float_to_f16_bits(float f) {
  const u32 x = as_u32(f);
  const u32 sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  const u32 nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  const u32 normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
  const u32 small = as_u32(add_rn(as_f32(a), 0.5f)) - 0x3f000000u;
  const u32 r = a > 0x7f800000u ? nan : a >= 0x477ff000u ? 0x7c00u : a >= 0x38800000u ? normal : small;
  return static_cast<u16>(sign | r);
}
REDIST_CONVERSION float f16_bits_to_float(u16 h) {
  const u32 sign = (static_cast<u32>(h) & 0x8000u) << 16, e = (static_cast<u32>(h) >> 10) & 0x1fu,
            m = static_cast<u32>(h) & 0x3ffu;
  const u32 special = 0x7f800000u | (m << 13), normal = ((e + 112) << 23) | (m << 13),
            small = as_u32(mul_rn(static_cast<float>(m), 0x1p-24f));
  return as_f32(sign | (e == 0x1f ? special : e == 0 ? small : normal));
}
REDIST_CONVERSION float double_to_float(double d) {
  const u64 u = as_u64(d);
  if ((u & 0x7fffffffffffffffull) <= 0x7ff0000000000000ull) return static_cast<float>(d);
  return as_f32(static_cast<u32>(u >> 32 & 0x80000000u) | 0x7fc00000u | static_cast<u32>(u >> 29 & 0x7fffffu));
}
REDIST_CONVERSION double float_to_double(float f) {
  const u32 u = as_u32(f);
  if ((u & 0x7fffffffu) <= 0x7f800000u) return static_cast<double>(f);
  return as_f64(static_cast<u64>(u & 0x80000000u) << 32 | 0x7ff8000000000000ull | static_cast<u64>(u & 0x7fffffu) << 29);
}
)

#undef REDIST_CONVERSIONS
#undef REDIST_CONVERSION

}  // namespace detail::convert

using detail::convert::bf16_bits_to_float;
using detail::convert::double_to_float;
using detail::convert::f16_bits_to_float;
using detail::convert::float_to_bf16_bits;
using detail::convert::float_to_double;
using detail::convert::float_to_f16_bits;

namespace detail {

/// One element of f32, bf16 or f16 at p as a float, and a float stored as one.
template <element_type T>
float load_float(const std::byte* p) {
  if constexpr (T == element_type::f32) {
    float v;
    std::memcpy(&v, p, sizeof v);
    return v;
  } else {
    std::uint16_t h;
    std::memcpy(&h, p, sizeof h);
    return T == element_type::bf16 ? bf16_bits_to_float(h) : f16_bits_to_float(h);
  }
}
template <element_type T>
void store_float(std::byte* p, float v) {
  if constexpr (T == element_type::f32) {
    std::memcpy(p, &v, sizeof v);
  } else {
    const std::uint16_t h = T == element_type::bf16 ? float_to_bf16_bits(v) : float_to_f16_bits(v);
    std::memcpy(p, &h, sizeof h);
  }
}

/// One element of type t at p, as a double (exact: every floating type fits in one).
inline double load_element(const std::byte* p, element_type t) {
  switch (t) {
    case element_type::f64: {
      double v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case element_type::f32: return float_to_double(load_float<element_type::f32>(p));
    case element_type::bf16: return float_to_double(load_float<element_type::bf16>(p));
    default: return float_to_double(load_float<element_type::f16>(p));
  }
}

/// Store v as type t at p (narrowing to bf16 and f16 through f32, the header comment).
inline void store_element(std::byte* p, element_type t, double v) {
  const float f = double_to_float(v);
  switch (t) {
    case element_type::f64: std::memcpy(p, &v, sizeof v); return;
    case element_type::f32: return store_float<element_type::f32>(p, f);
    case element_type::bf16: return store_float<element_type::bf16>(p, f);
    default: return store_float<element_type::f16>(p, f);
  }
}

/// n elements of type `from` at src converted to type `to` at dst (floating types): between
/// f32, bf16 and f16 through float, loops without branches that the compiler vectorizes
/// (-O3: f32 to bf16 about 1.5x a memcpy of the f32, bf16 to f32 about one), f64's through
/// double.
template <element_type From, element_type To>
void cast_run(const std::byte* src, std::byte* dst, std::uint64_t n) {
  constexpr std::uint64_t fe = element_type_bytes(From), te = element_type_bytes(To);
  if constexpr (From == To) {
    if (n != 0) std::memcpy(dst, src, n * fe);
  } else if constexpr (From != element_type::f64 && To != element_type::f64) {
    for (std::uint64_t i = 0; i < n; ++i) store_float<To>(dst + i * te, load_float<From>(src + i * fe));
  } else {
    for (std::uint64_t i = 0; i < n; ++i) store_element(dst + i * te, To, load_element(src + i * fe, From));
  }
}

/// A strided copy (pack.hpp) in elements from src, of type `from`, to dst, of type `to`.
struct cast_copy {
  strided_copy c;
  const std::byte* src = nullptr;
  element_type from = element_type::f32;
  std::byte* dst = nullptr;
  element_type to = element_type::f32;
};

/// Strided copy c from src (From) to dst (To), rows outermost as host_strided_copy, each run
/// converted in line (runs of a few dozen elements are common: columns split over ranks).
template <element_type From, element_type To>
void cast_strided(const strided_copy& c, const std::byte* src, std::byte* dst) {
  constexpr std::uint64_t fe = element_type_bytes(From), te = element_type_bytes(To);
  if (c.width == 0) return;
  for (std::uint64_t j = 0; j < c.rows; ++j)
    for (std::uint64_t i = 0; i < c.count; ++i)
      cast_run<From, To>(src + (c.src + i * c.src_step + j * c.src_pitch) * fe,
                         dst + (c.dst + i * c.dst_step + j * c.dst_pitch) * te, c.width);
}

using cast_strided_fn = void (*)(const strided_copy&, const std::byte*, std::byte*);

/// Throws unless from and to are both floating types (the only casts there are).
inline void require_floating_cast(element_type from, element_type to) {
  if (!element_type_floating(from) || !element_type_floating(to))
    throw redist_error(errc::rule, "no conversion from " + std::string(element_type_name(from)) + " to " +
                                       std::string(element_type_name(to)) + " (casts are between f64, f32, bf16, f16)");
}

/// The converting copy of (from, to), both floating types.
inline cast_strided_fn cast_strided_for(element_type from, element_type to) {
  constexpr element_type f64 = element_type::f64, f32 = element_type::f32, b16 = element_type::bf16,
                         f16 = element_type::f16;
  auto row = [](element_type t) -> int { return t == f64 ? 0 : t == f32 ? 1 : t == b16 ? 2 : 3; };
  static constexpr cast_strided_fn table[4][4] = {
      {cast_strided<f64, f64>, cast_strided<f64, f32>, cast_strided<f64, b16>, cast_strided<f64, f16>},
      {cast_strided<f32, f64>, cast_strided<f32, f32>, cast_strided<f32, b16>, cast_strided<f32, f16>},
      {cast_strided<b16, f64>, cast_strided<b16, f32>, cast_strided<b16, b16>, cast_strided<b16, f16>},
      {cast_strided<f16, f64>, cast_strided<f16, f32>, cast_strided<f16, b16>, cast_strided<f16, f16>}};
  require_floating_cast(from, to);
  return table[row(from)][row(to)];
}

/// Execute a cast copy in host memory.
inline void host_cast_copy(const cast_copy& x) { cast_strided_for(x.from, x.to)(x.c, x.src, x.dst); }

}  // namespace detail

/// Convert n elements of type `from` at src to type `to` at dst (the header comment).
inline void cast_elements(std::span<const std::byte> src, element_type from, std::span<std::byte> dst, element_type to) {
  const std::uint64_t n = src.size() / element_type_bytes(from);
  if (src.size() % element_type_bytes(from) != 0 || dst.size() != n * element_type_bytes(to))
    throw redist_error(errc::runtime, "cast_elements: " + std::to_string(src.size()) + " bytes of " +
                                          std::string(element_type_name(from)) + " into " + std::to_string(dst.size()) +
                                          " bytes of " + std::string(element_type_name(to)));
  detail::strided_copy c;
  c.width = n;
  c.src_pitch = c.dst_pitch = c.src_step = c.dst_step = n;
  detail::cast_strided_for(from, to)(c, src.data(), dst.data());
}

}  // namespace redist
