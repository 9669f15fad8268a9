// Tests of runtime/cast.hpp: the bf16 and f16 conversions against a reference that finds
// the nearest pattern by search (every pattern, every tie between two neighbours and the
// floats beside it, a sweep of the f32 patterns), widening exact and undone by narrowing,
// NaNs, infinities and signed zeros kept, and against the compiler's _Float16 where it has
// one; converting strided copies and cast_elements between every pair of floating types.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "redist/runtime/cast.hpp"

using namespace redist;

namespace {

struct format16 {
  const char* name;
  std::uint16_t (*narrow)(float);
  float (*widen)(std::uint16_t);
  std::uint16_t inf;     ///< +infinity's pattern
  double past_max;       ///< the value the pattern after the largest finite one would have
};

const format16 bf16{"bf16", float_to_bf16_bits, bf16_bits_to_float, 0x7f80, std::ldexp(1.0, 128)};
const format16 f16{"f16", float_to_f16_bits, f16_bits_to_float, 0x7c00, 65536.0};

/// The pattern nearest to f (finite), ties to the even pattern: a binary search over the
/// positive patterns, whose values increase with them.
std::uint16_t nearest(const format16& t, float f) {
  const double a = std::fabs(static_cast<double>(f));
  auto value = [&](std::uint32_t p) {
    return p >= t.inf ? t.past_max : static_cast<double>(t.widen(static_cast<std::uint16_t>(p)));
  };
  std::uint32_t lo = 0, hi = t.inf;  // value(lo) <= a < value(hi + 1) or hi = inf
  while (lo < hi) {
    const std::uint32_t mid = (lo + hi + 1) / 2;
    if (value(mid) <= a) lo = mid;
    else hi = mid - 1;
  }
  std::uint32_t p = lo;
  if (p < t.inf) {
    const double below = a - value(p), above = value(p + 1) - a;
    if (above < below || (above == below && (p & 1) != 0)) ++p;
  }
  return static_cast<std::uint16_t>(p | (std::signbit(f) ? 0x8000u : 0u));
}

bool is_nan(const format16& t, std::uint16_t p) { return (p & 0x7fff) > t.inf; }

}  // namespace

TEST_CASE("bf16 and f16: round to nearest even against a search, every tie", "[cast]") {
  for (const format16* t : {&bf16, &f16}) {
    INFO(t->name);
    std::uint64_t checked = 0, wrong = 0;
    float first = 0;
    auto check = [&](float f) {
      if (t->narrow(f) != nearest(*t, f) && wrong++ == 0) first = f;
      ++checked;
    };
    for (std::uint32_t p = 0; p < 0x10000; ++p) {
      const auto h = static_cast<std::uint16_t>(p);
      if ((h & 0x7fff) >= t->inf) continue;
      const float v = t->widen(h);
      check(v);
      // The tie between h and its neighbour away from zero, and the floats on either side.
      const double next = (h & 0x7fff) + 1 == t->inf ? t->past_max
                                                      : std::fabs(static_cast<double>(t->widen(static_cast<std::uint16_t>(h + 1))));
      const double tie = (std::fabs(static_cast<double>(v)) + next) / 2;
      const float m = static_cast<float>(std::signbit(v) ? -tie : tie);
      REQUIRE(static_cast<double>(std::fabs(m)) == tie);  // exact in f32
      check(m);
      check(std::nextafter(m, 0.0f));
      check(std::nextafter(m, std::signbit(v) ? -INFINITY : INFINITY));
    }
    for (std::uint64_t u = 0; u < 0x100000000ull; u += 7919) {  // a sweep of the f32 patterns
      const auto f = std::bit_cast<float>(static_cast<std::uint32_t>(u));
      if (std::isfinite(f)) check(f);
    }
    INFO("first wrong: " << first << " (0x" << std::hex << std::bit_cast<std::uint32_t>(first) << ")");
    REQUIRE(wrong == 0);
    CHECK(checked > 700000);
    // Infinities, NaNs, the largest finite values.
    CHECK(t->narrow(INFINITY) == t->inf);
    CHECK(t->narrow(-INFINITY) == (t->inf | 0x8000));
    CHECK(is_nan(*t, t->narrow(std::numeric_limits<float>::quiet_NaN())));
    CHECK(is_nan(*t, t->narrow(-std::numeric_limits<float>::quiet_NaN())));
    CHECK(is_nan(*t, t->narrow(std::bit_cast<float>(0x7f800001u))));  // a signalling NaN whose payload narrowing drops
    CHECK(t->narrow(std::numeric_limits<float>::max()) == t->inf);  // past the largest finite value's half ulp
    CHECK(t->narrow(-0.0f) == 0x8000);
  }
  CHECK(float_to_f16_bits(65504.0f) == 0x7bff);
  CHECK(float_to_f16_bits(65519.99f) == 0x7bff);
  CHECK(float_to_f16_bits(65520.0f) == 0x7c00);
  CHECK(float_to_f16_bits(0x1p-24f) == 0x0001);
  CHECK(float_to_f16_bits(0x1p-25f) == 0x0000);  // a tie with 0: to even
  CHECK(float_to_bf16_bits(1.0f + 0x1p-8f) == 0x3f80);  // a tie: to even
  CHECK(float_to_bf16_bits(1.0f + 0x1p-8f + 0x1p-23f) == 0x3f81);
}

TEST_CASE("bf16 and f16: widening is exact and narrowing undoes it", "[cast]") {
  for (const format16* t : {&bf16, &f16})
    for (std::uint32_t p = 0; p < 0x10000; ++p) {
      const auto h = static_cast<std::uint16_t>(p);
      const float v = t->widen(h);
      INFO(t->name << " pattern 0x" << std::hex << p);
      if (is_nan(*t, h)) {
        REQUIRE(std::isnan(v));
        REQUIRE(is_nan(*t, t->narrow(v)));
        continue;
      }
      REQUIRE(t->narrow(v) == h);
      REQUIRE(std::signbit(v) == ((h & 0x8000) != 0));
    }
  CHECK(bf16_bits_to_float(0x3f80) == 1.0f);
  CHECK(f16_bits_to_float(0x3c00) == 1.0f);
  CHECK(f16_bits_to_float(0x0001) == 0x1p-24f);
  CHECK(f16_bits_to_float(0x7bff) == 65504.0f);
}

TEST_CASE("f64 <-> f32: the C++ conversions, NaNs spelled out bit by bit", "[cast]") {
  // Finite values and infinities as static_cast converts them; a NaN keeps its sign and the
  // leading bits of its payload, made quiet (x86's and Arm's conversions; the CUDA kernel,
  // whose own would make it canonical, repeats these bits).
  std::uint64_t nans = 0, wrong = 0, first = 0;
  auto check = [&](bool ok, std::uint64_t pattern) {
    if (!ok && wrong++ == 0) first = pattern;
  };
  for (std::uint64_t u = 0; u < 0x100000000ull; u += 2039) {
    for (const std::uint32_t b : {static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(u) | 0x7f800000u}) {
      const auto f = std::bit_cast<float>(b);
      const double d = float_to_double(f);
      const auto back = std::bit_cast<std::uint32_t>(double_to_float(d));
      if (!std::isnan(f)) {
        check(std::bit_cast<std::uint64_t>(d) == std::bit_cast<std::uint64_t>(static_cast<double>(f)) && back == b, b);
        continue;
      }
      ++nans;  // quiet, signed as f, the payload kept
      check(std::isnan(d) && std::signbit(d) == std::signbit(f) &&
                (std::bit_cast<std::uint64_t>(d) & 0x0008000000000000ull) != 0 && back == (b | 0x00400000u),
            b);
    }
  }
  for (std::uint64_t u = 1; u < 0x100000000ull; u += 7919) {  // payload bits below f32's are dropped
    const std::uint64_t d = 0xfff0000000000000ull | u << 20 | u;
    const auto f = std::bit_cast<std::uint32_t>(double_to_float(std::bit_cast<double>(d)));
    check(f == (0xffc00000u | static_cast<std::uint32_t>(d >> 29 & 0x7fffffu)), d);
  }
  INFO("first wrong pattern: 0x" << std::hex << first);
  CHECK(wrong == 0);
  CHECK(nans > 1000);
  CHECK(double_to_float(0x1p-150) == 0.0f);           // a tie with 0: to even
  CHECK(double_to_float(0x1.000001p0) == 1.0f);       // a tie: to even
  CHECK(double_to_float(0x1.0000011p0) == 1.0f + 0x1p-23f);
  CHECK(std::isinf(double_to_float(1e39)));
}

#ifdef __FLT16_MAX__
TEST_CASE("f16: the same patterns as the compiler's _Float16", "[cast]") {
  for (std::uint32_t p = 0; p < 0x10000; ++p) {
    const auto h = static_cast<std::uint16_t>(p);
    _Float16 x;
    std::memcpy(&x, &h, sizeof x);
    const float v = f16_bits_to_float(h);
    if (std::isnan(v)) continue;
    REQUIRE(static_cast<float>(x) == v);
  }
  std::uint64_t wrong = 0;
  for (std::uint64_t u = 0; u < 0x100000000ull; u += 3571) {
    const auto f = std::bit_cast<float>(static_cast<std::uint32_t>(u));
    if (std::isnan(f)) continue;
    const auto x = static_cast<_Float16>(f);
    std::uint16_t h;
    std::memcpy(&h, &x, sizeof h);
    wrong += float_to_f16_bits(f) != h;
  }
  REQUIRE(wrong == 0);
}
#endif

TEST_CASE("cast_elements and strided converting copies between every pair of floating types", "[cast]") {
  const element_type types[] = {element_type::f64, element_type::f32, element_type::bf16, element_type::f16};
  // Values exact in every type: small multiples of powers of two, both signs.
  std::vector<double> values;
  for (int i = 0; i < 24; ++i) values.push_back(std::ldexp((i % 2 ? -1 : 1) * (1 + i % 7), i % 9 - 4));
  for (const element_type from : types)
    for (const element_type to : types) {
      INFO(element_type_name(from) << " -> " << element_type_name(to));
      const std::uint64_t fe = element_type_bytes(from), te = element_type_bytes(to);
      std::vector<std::byte> src(values.size() * fe), dst(values.size() * te), want(dst.size());
      for (std::size_t i = 0; i < values.size(); ++i) {
        detail::store_element(src.data() + i * fe, from, values[i]);
        detail::store_element(want.data() + i * te, to, values[i]);
      }
      cast_elements(src, from, dst, to);
      REQUIRE(dst == want);
      // A strided copy: 3 x 2 runs of 2 elements out of a 4 x 6 tile into a packed 12.
      std::vector<std::byte> packed(12 * te, std::byte{0xee});
      detail::strided_copy c;
      c.count = 3;
      c.rows = 2;
      c.width = 2;
      c.src = 1;
      c.src_step = 6;   // i: rows of the tile
      c.src_pitch = 3;  // j: a second run in the same row
      c.dst_step = 2;
      c.dst_pitch = 6;
      detail::host_cast_copy({c, src.data(), from, packed.data(), to});
      for (std::uint64_t i = 0; i < 3; ++i)
        for (std::uint64_t j = 0; j < 2; ++j)
          for (std::uint64_t k = 0; k < 2; ++k) {
            const std::uint64_t s = 1 + i * 6 + j * 3 + k, d = i * 2 + j * 6 + k;
            REQUIRE(detail::load_element(packed.data() + d * te, to) == values[s]);
          }
    }
  // Narrowing that rounds: f64 to f32, and to bf16 through f32 (as PyTorch converts).
  std::vector<std::byte> one(8), out(4), half(2);
  detail::store_element(one.data(), element_type::f64, 1.0 + 0x1p-30);
  cast_elements(one, element_type::f64, out, element_type::f32);
  CHECK(detail::load_element(out.data(), element_type::f32) == 1.0);
  detail::store_element(one.data(), element_type::f64, 1.0 + 0x1p-8 + 0x1p-40);  // above the bf16 tie, f32 rounds onto it
  cast_elements(one, element_type::f64, half, element_type::bf16);
  CHECK(detail::load_element(half.data(), element_type::bf16) == 1.0);
  CHECK_THROWS_WITH(cast_elements(one, element_type::f64, half, element_type::f32),
                    "cast_elements: 8 bytes of f64 into 2 bytes of f32");
  std::vector<std::byte> ints(4);
  CHECK_THROWS_WITH(cast_elements(ints, element_type::i32, out, element_type::f32),
                    "no conversion from i32 to f32 (casts are between f64, f32, bf16, f16)");
}
