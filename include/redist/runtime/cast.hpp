// redist/runtime/cast.hpp -- converting elements between the floating-point types while a
// reshard moves them (a weight sync from an f32 trainer to a bf16 inference engine, a
// checkpoint written in f32 and loaded in bf16; lower/reshard.hpp, reshard_array::target_dtype).
//
// Conversions round to nearest, ties to even, as PyTorch's `tensor.to(dtype)` and NumPy's
// `astype` do: f64 -> f32 is the C++ conversion; to bf16 and f16 the value goes through f32
// first (as PyTorch converts f64 to bf16 and f16), so f64 -> bf16 may round twice. Values
// beyond a narrower type's range become infinities; NaNs stay NaNs (quiet, their sign and
// leading payload bits kept); subnormals are kept, not flushed. Widening is exact.
//
// bf16 and f16 have no C++20 arithmetic type, so they are handled as their 16-bit patterns
// (IEEE binary16, and the upper half of an IEEE binary32 for bf16). A cast_copy is a strided
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

/// The bf16 pattern nearest to f (ties to even).
constexpr std::uint16_t float_to_bf16_bits(float f) {
  const auto u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // NaN, made quiet
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

constexpr float bf16_bits_to_float(std::uint16_t h) { return std::bit_cast<float>(std::uint32_t{h} << 16); }

/// The f16 (IEEE binary16) pattern nearest to f (ties to even).
constexpr std::uint16_t float_to_f16_bits(float f) {
  const auto x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN, made quiet
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // 65520 and above round to infinity
  if (a >= 0x38800000u)                                                     // normal in f16: rebias, round
    return static_cast<std::uint16_t>(sign | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13));
  // Below 2^-14: a multiple of 2^-24 in f16. Adding 0.5 (whose ulp is 2^-24) rounds there.
  const float v = std::bit_cast<float>(a) + 0.5f;
  return static_cast<std::uint16_t>(sign | (std::bit_cast<std::uint32_t>(v) - 0x3f000000u));
}

constexpr float f16_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  if (e == 0) return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(static_cast<float>(m) * 0x1p-24f));
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

namespace detail {

/// One element of type t at p, as a double (exact: every floating type fits in one).
inline double load_element(const std::byte* p, element_type t) {
  switch (t) {
    case element_type::f64: {
      double v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case element_type::f32: {
      float v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    default: {
      std::uint16_t h;
      std::memcpy(&h, p, sizeof h);
      return t == element_type::bf16 ? bf16_bits_to_float(h) : f16_bits_to_float(h);
    }
  }
}

/// Store v as type t at p (narrowing to bf16 and f16 through f32, the header comment).
inline void store_element(std::byte* p, element_type t, double v) {
  switch (t) {
    case element_type::f64: std::memcpy(p, &v, sizeof v); return;
    case element_type::f32: {
      const auto f = static_cast<float>(v);
      std::memcpy(p, &f, sizeof f);
      return;
    }
    default: {
      const auto f = static_cast<float>(v);
      const std::uint16_t h = t == element_type::bf16 ? float_to_bf16_bits(f) : float_to_f16_bits(f);
      std::memcpy(p, &h, sizeof h);
    }
  }
}

/// n elements of type `from` at src converted to type `to` at dst (floating types).
template <element_type From, element_type To>
void cast_run(const std::byte* src, std::byte* dst, std::uint64_t n) {
  constexpr std::uint64_t fe = element_type_bytes(From), te = element_type_bytes(To);
  for (std::uint64_t i = 0; i < n; ++i) store_element(dst + i * te, To, load_element(src + i * fe, From));
}

using cast_run_fn = void (*)(const std::byte*, std::byte*, std::uint64_t);

/// The converting run of (from, to), both floating types.
inline cast_run_fn cast_run_for(element_type from, element_type to) {
  constexpr element_type f64 = element_type::f64, f32 = element_type::f32, b16 = element_type::bf16,
                         f16 = element_type::f16;
  auto row = [](element_type t) -> int { return t == f64 ? 0 : t == f32 ? 1 : t == b16 ? 2 : 3; };
  static constexpr cast_run_fn table[4][4] = {
      {cast_run<f64, f64>, cast_run<f64, f32>, cast_run<f64, b16>, cast_run<f64, f16>},
      {cast_run<f32, f64>, cast_run<f32, f32>, cast_run<f32, b16>, cast_run<f32, f16>},
      {cast_run<b16, f64>, cast_run<b16, f32>, cast_run<b16, b16>, cast_run<b16, f16>},
      {cast_run<f16, f64>, cast_run<f16, f32>, cast_run<f16, b16>, cast_run<f16, f16>}};
  if (!element_type_floating(from) || !element_type_floating(to))
    throw redist_error(errc::rule, "no conversion from " + std::string(element_type_name(from)) + " to " +
                                       std::string(element_type_name(to)) + " (casts are between f64, f32, bf16, f16)");
  return table[row(from)][row(to)];
}

/// A strided copy (pack.hpp) in elements from src, of type `from`, to dst, of type `to`.
struct cast_copy {
  strided_copy c;
  const std::byte* src = nullptr;
  element_type from = element_type::f32;
  std::byte* dst = nullptr;
  element_type to = element_type::f32;
};

/// Execute a cast copy in host memory, rows outermost as host_strided_copy.
inline void host_cast_copy(const cast_copy& x) {
  const strided_copy& c = x.c;
  if (c.width == 0) return;
  const cast_run_fn run = cast_run_for(x.from, x.to);
  const std::uint64_t fe = element_type_bytes(x.from), te = element_type_bytes(x.to);
  for (std::uint64_t j = 0; j < c.rows; ++j)
    for (std::uint64_t i = 0; i < c.count; ++i)
      run(x.src + (c.src + i * c.src_step + j * c.src_pitch) * fe, x.dst + (c.dst + i * c.dst_step + j * c.dst_pitch) * te,
          c.width);
}

}  // namespace detail

/// Convert n elements of type `from` at src to type `to` at dst (the header comment).
inline void cast_elements(std::span<const std::byte> src, element_type from, std::span<std::byte> dst, element_type to) {
  const std::uint64_t n = src.size() / element_type_bytes(from);
  if (src.size() % element_type_bytes(from) != 0 || dst.size() != n * element_type_bytes(to))
    throw redist_error(errc::runtime, "cast_elements: " + std::to_string(src.size()) + " bytes of " +
                                          std::string(element_type_name(from)) + " into " + std::to_string(dst.size()) +
                                          " bytes of " + std::string(element_type_name(to)));
  detail::cast_run_for(from, to)(src.data(), dst.data(), n);
}

}  // namespace redist
