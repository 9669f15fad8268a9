// redist/runtime/half.hpp -- bfloat16 and float16: the 16-bit floating-point element types
// (bf16, f16) as C++ types with arithmetic, so that pending values of those types (a
// tensor-parallel matmul's bf16 partial sums, a reduce-scatter of bf16 gradients) reduce on
// every backend: the host adds them in C++, MPI through a user-defined operation
// (backends/mpi.hpp), NCCL natively (ncclBfloat16, ncclFloat16). A darray<bfloat16> is an
// ordinary tile of 2-byte elements; an application that holds __nv_bfloat16 or
// torch.bfloat16 data passes the same bytes.
//
// Arithmetic rounds once, to nearest with ties to even, as CUDA's __hadd/__hmul and NCCL's
// bf16 and f16 reductions do: a + b and a * b are computed in float, where they are exact
// (8 or 11 significant bits each: the sum fits in float's 24 unless the exponents differ by
// more than 15 (bf16) or 12 (f16), and then the smaller is less than half an ulp of the larger
// and cannot make a tie; the product has at most 16 or 22 bits, and a bf16 product that
// float holds as a subnormal has no bits below float's), then rounded to the type. a / b
// (avg divides a sum by the count) rounds in float, then in the type. Comparisons are
// float's: NaN is unordered, -0 == +0. Like any floating sum, a reduction of many values
// depends on its order; redist's verification chooses values whose sums are exact
// (runtime/verify.hpp).
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "redist/runtime/cast.hpp"

namespace redist {

enum class half_format : std::uint8_t { bf16, f16 };

/// A 16-bit floating-point value of format F, held as its bit pattern.
template <half_format F>
class half_float {
 public:
  constexpr half_float() = default;
  /// The value of v rounded to the type (ties to even; a double or an integer beyond float's
  /// 24 bits goes through float first, as runtime/cast.hpp converts f64).
  template <class U>
    requires std::is_arithmetic_v<U>
  explicit constexpr half_float(U v) : bits_(encode(to_float(v))) {}

  static constexpr half_float from_bits(std::uint16_t b) {
    half_float h;
    h.bits_ = b;
    return h;
  }
  [[nodiscard]] constexpr std::uint16_t bits() const { return bits_; }

  /// Exact.
  explicit constexpr operator float() const { return F == half_format::bf16 ? bf16_bits_to_float(bits_) : f16_bits_to_float(bits_); }
  explicit constexpr operator double() const { return float_to_double(static_cast<float>(*this)); }

  friend constexpr half_float operator+(half_float a, half_float b) { return half_float(float(a) + float(b)); }
  friend constexpr half_float operator-(half_float a, half_float b) { return half_float(float(a) - float(b)); }
  friend constexpr half_float operator*(half_float a, half_float b) { return half_float(float(a) * float(b)); }
  friend constexpr half_float operator/(half_float a, half_float b) { return half_float(float(a) / float(b)); }
  friend constexpr half_float operator-(half_float a) { return from_bits(static_cast<std::uint16_t>(a.bits_ ^ 0x8000u)); }
  constexpr half_float& operator+=(half_float b) { return *this = *this + b; }
  constexpr half_float& operator-=(half_float b) { return *this = *this - b; }
  constexpr half_float& operator*=(half_float b) { return *this = *this * b; }
  constexpr half_float& operator/=(half_float b) { return *this = *this / b; }

  friend constexpr bool operator==(half_float a, half_float b) { return float(a) == float(b); }
  friend constexpr std::partial_ordering operator<=>(half_float a, half_float b) { return float(a) <=> float(b); }

 private:
  template <class U>
  static constexpr float to_float(U v) {
    if constexpr (std::is_same_v<U, double>) return double_to_float(v);
    else return static_cast<float>(v);
  }
  static constexpr std::uint16_t encode(float f) {
    return F == half_format::bf16 ? float_to_bf16_bits(f) : float_to_f16_bits(f);
  }
  std::uint16_t bits_ = 0;
};

/// bf16: 8 significant bits, float's exponent range.
using bfloat16 = half_float<half_format::bf16>;
/// f16 (IEEE binary16): 11 significant bits, largest finite 65504.
using float16 = half_float<half_format::f16>;

static_assert(sizeof(bfloat16) == 2 && std::is_trivially_copyable_v<bfloat16> && sizeof(float16) == 2 &&
              std::is_trivially_copyable_v<float16>);

}  // namespace redist

namespace std {
/// The limits of the 16-bit types (the reductions' identities take max, min and infinities).
template <redist::half_format F>
struct numeric_limits<redist::half_float<F>> {
 private:
  using T = redist::half_float<F>;
  static constexpr bool bf = F == redist::half_format::bf16;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr bool is_iec559 = !bf;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr int radix = 2;
  static constexpr int digits = bf ? 8 : 11;
  static constexpr int digits10 = bf ? 2 : 3;
  static constexpr int max_digits10 = bf ? 4 : 5;
  static constexpr int min_exponent = bf ? -125 : -13;
  static constexpr int max_exponent = bf ? 128 : 16;
  static constexpr T min() noexcept { return T::from_bits(bf ? 0x0080 : 0x0400); }  // least positive normal
  static constexpr T max() noexcept { return T::from_bits(bf ? 0x7f7f : 0x7bff); }
  static constexpr T lowest() noexcept { return T::from_bits(bf ? 0xff7f : 0xfbff); }
  static constexpr T epsilon() noexcept { return T::from_bits(bf ? 0x3c00 : 0x1400); }
  static constexpr T round_error() noexcept { return T::from_bits(bf ? 0x3f00 : 0x3800); }  // 0.5
  static constexpr T infinity() noexcept { return T::from_bits(bf ? 0x7f80 : 0x7c00); }
  static constexpr T quiet_NaN() noexcept { return T::from_bits(bf ? 0x7fc0 : 0x7e00); }
  static constexpr T signaling_NaN() noexcept { return T::from_bits(bf ? 0x7fa0 : 0x7d00); }
  static constexpr T denorm_min() noexcept { return T::from_bits(1); }
};
}  // namespace std
