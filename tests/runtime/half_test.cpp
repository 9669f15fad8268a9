// Tests of runtime/half.hpp: bfloat16 and float16 sums and products rounded once (against
// the exact result in double rounded by a search over the patterns, for every pattern against
// random others near and far in magnitude), quotients, comparisons, negation, the limits;
// and runtime/verify.hpp's encoding of the 16-bit types: distinct values, and partial values
// that reduce exactly in every order and grouping.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "redist/runtime/half.hpp"
#include "redist/runtime/verify.hpp"
#include "support/random_problems.hpp"

using namespace redist;

namespace {

template <class T>
double value(std::uint16_t p) {
  return static_cast<double>(T::from_bits(p));
}

template <class T>
bool is_nan(std::uint16_t p) {
  const std::uint16_t inf = std::numeric_limits<T>::infinity().bits();
  return (p & 0x7fff) > inf;
}

/// The pattern of T nearest to x (ties to the even pattern, beyond the largest finite value
/// by half an ulp or more: infinity), by a binary search over the positive patterns.
template <class T>
std::uint16_t nearest(double x) {
  const std::uint16_t inf = std::numeric_limits<T>::infinity().bits();
  const double a = std::fabs(x);
  const double max = value<T>(static_cast<std::uint16_t>(inf - 1));
  const double past = max + (max - value<T>(static_cast<std::uint16_t>(inf - 2)));  // the next pattern's value
  auto at = [&](std::uint32_t p) { return p >= inf ? past : value<T>(static_cast<std::uint16_t>(p)); };
  std::uint32_t lo = 0, hi = inf;
  while (lo < hi) {
    const std::uint32_t mid = (lo + hi + 1) / 2;
    if (at(mid) <= a) lo = mid;
    else hi = mid - 1;
  }
  std::uint32_t p = lo;
  if (p < inf) {
    const double below = a - at(p), above = at(p + 1) - a;
    if (above < below || (above == below && (p & 1) != 0)) ++p;
  }
  return static_cast<std::uint16_t>(std::min<std::uint32_t>(p, inf) | (std::signbit(x) ? 0x8000u : 0u));
}

/// Every finite pattern a against `others` random finite patterns b, half of them within
/// 20 binades of a: a + b and a * b are the nearest pattern to the exact result (in double:
/// exact for products, and for sums but where b is below double's precision at a, which
/// rounds to a as the exact result does).
template <class T>
void check_rounding(int others) {
  std::mt19937 rng(7);
  const std::uint16_t inf = std::numeric_limits<T>::infinity().bits();
  std::uint64_t checked = 0, wrong = 0;
  std::uint16_t wa = 0, wb = 0;
  char wop = ' ';
  auto check = [&](std::uint16_t a, std::uint16_t b, char op, T got, double exact) {
    ++checked;
    const std::uint16_t want = nearest<T>(exact);
    const bool same = std::isnan(exact) ? is_nan<T>(got.bits()) : got.bits() == want || (exact == 0 && (got.bits() & 0x7fff) == 0);
    if (!same && wrong++ == 0) wa = a, wb = b, wop = op;
  };
  for (std::uint32_t pa = 0; pa < 0x10000; ++pa) {
    const auto a = static_cast<std::uint16_t>(pa);
    if ((a & 0x7fff) >= inf) continue;
    for (int k = 0; k < others; ++k) {
      std::uint16_t b;
      if (k % 2 == 0) {
        b = static_cast<std::uint16_t>(rng());
      } else {  // within 20 binades of a's pattern, either sign
        const int shift = static_cast<int>(rng() % 41) - 20;
        const int bits = std::numeric_limits<T>::digits - 1;  // the stored significand bits
        const int e = std::clamp(static_cast<int>((a & 0x7fff) >> bits) + shift, 0, (inf >> bits) - 1);
        b = static_cast<std::uint16_t>((rng() & 0x8000u) | (static_cast<std::uint32_t>(e) << bits) | (rng() & ((1u << bits) - 1)));
      }
      if ((b & 0x7fff) >= inf) continue;
      const T x = T::from_bits(a), y = T::from_bits(b);
      check(a, b, '+', x + y, value<T>(a) + value<T>(b));
      check(a, b, '*', x * y, value<T>(a) * value<T>(b));
    }
  }
  INFO("first wrong: " << value<T>(wa) << " " << wop << " " << value<T>(wb));
  REQUIRE(checked > 0x10000u * static_cast<unsigned>(others) / 2);
  REQUIRE(wrong == 0);
}

}  // namespace

TEST_CASE("bfloat16 and float16: sums and products round once, to nearest even", "[half]") {
  const int others = static_cast<int>(testing::scaled(48));
  SECTION("bf16") { check_rounding<bfloat16>(others); }
  SECTION("f16") { check_rounding<float16>(others); }
}

TEST_CASE("bfloat16 and float16: conversions, quotients, comparisons, limits", "[half]") {
  REQUIRE(static_cast<float>(bfloat16(1.0f)) == 1.0f);
  REQUIRE(bfloat16(1.0f).bits() == 0x3f80);
  REQUIRE(float16(1.0f).bits() == 0x3c00);
  REQUIRE(bfloat16(257).bits() == bfloat16(256).bits());     // 257 is a tie: to even
  REQUIRE(float16(2049).bits() == float16(2048).bits());
  REQUIRE(static_cast<double>(float16(65504.0)) == 65504.0);
  REQUIRE(std::isinf(static_cast<float>(float16(65520.0))));  // rounds past the largest
  REQUIRE(static_cast<float>(bfloat16(3) / bfloat16(4)) == 0.75f);
  REQUIRE(static_cast<float>(float16(1) / float16(3)) == static_cast<float>(float16(1.0f / 3.0f)));
  REQUIRE((-bfloat16(2)).bits() == 0xc000);
  REQUIRE(static_cast<float>(bfloat16(5) - bfloat16(7)) == -2.0f);
  bfloat16 s(1);
  s += bfloat16(2);
  s *= bfloat16(4);
  REQUIRE(static_cast<float>(s) == 12.0f);
  // Comparisons as float: signed zeros equal, NaN unordered.
  REQUIRE(bfloat16(0.0f) == bfloat16(-0.0f));
  const bfloat16 nan = std::numeric_limits<bfloat16>::quiet_NaN();
  REQUIRE_FALSE(nan == nan);
  REQUIRE_FALSE(nan < bfloat16(1));
  REQUIRE_FALSE(bfloat16(1) < nan);
  REQUIRE(bfloat16(1) < bfloat16(2));
  REQUIRE(float16(-3) < float16(-2));
  REQUIRE(std::max(float16(2), float16(7)) == float16(7));
  STATIC_REQUIRE(std::totally_ordered<bfloat16>);
  STATIC_REQUIRE(reducible<bfloat16>(reduction::sum) && reducible<bfloat16>(reduction::avg) &&
                 reducible<bfloat16>(reduction::prod) && reducible<float16>(reduction::max));
  STATIC_REQUIRE(summable<float16>);
  // The limits: the largest finite pattern's neighbour is infinity, lowest is -max, min the
  // least normal, epsilon the step above 1.
  auto limits = []<class T>(T, double max, double min, double eps) {
    using L = std::numeric_limits<T>;
    REQUIRE(static_cast<double>(L::max()) == max);
    REQUIRE(T::from_bits(static_cast<std::uint16_t>(L::max().bits() + 1)).bits() == L::infinity().bits());
    REQUIRE(static_cast<double>(L::lowest()) == -max);
    REQUIRE(static_cast<double>(L::min()) == min);
    REQUIRE(static_cast<double>(L::epsilon()) == eps);
    REQUIRE(static_cast<double>(T::from_bits(static_cast<std::uint16_t>(T(1).bits() + 1))) == 1 + eps);
    REQUIRE(std::isinf(static_cast<double>(L::infinity())));
    REQUIRE(std::isnan(static_cast<double>(L::quiet_NaN())));
    REQUIRE(std::isnan(static_cast<double>(L::signaling_NaN())));
    REQUIRE(static_cast<double>(L::denorm_min()) == min * eps);
    REQUIRE(static_cast<double>(L::round_error()) == 0.5);
    REQUIRE(L::digits == 1 - std::ilogb(eps));
  };
  limits(bfloat16{}, std::ldexp(255.0, 120), std::ldexp(1.0, -126), std::ldexp(1.0, -7));
  limits(float16{}, 65504.0, std::ldexp(1.0, -14), std::ldexp(1.0, -10));
  REQUIRE(reduction_identity<bfloat16>(reduction::max).bits() == 0xff80);  // -infinity
  REQUIRE(reduction_identity<float16>(reduction::min).bits() == 0x7c00);
  REQUIRE(reduction_identity<bfloat16>(reduction::prod).bits() == 0x3f80);
}

TEST_CASE("verify's encoding of bf16 and f16: distinct values, partials exact in any order", "[half]") {
  auto run = []<class T>(T, std::uint64_t count, std::uint64_t max_sum_parts, std::uint64_t max_parts) {
    // index_value: distinct over `count` indices, then repeating.
    std::set<std::uint16_t> seen;
    for (std::uint64_t g = 0; g < count; ++g) seen.insert(index_value<T>(g).bits());
    REQUIRE(seen.size() == count);
    REQUIRE(index_value<T>(count + 5).bits() == index_value<T>(5).bits());
    // Partials: reduced in random orders, one by one and as sums of random groups (a
    // reduce-scatter's tree, a hierarchy of steps), every reduction gives the value.
    std::mt19937_64 rng(11);
    std::uint64_t wrong = 0;
    for (int trial = 0; trial < static_cast<int>(testing::scaled(4000)); ++trial) {
      const std::uint64_t g = rng() % (2 * count);
      const reduction r = all_reductions[rng() % std::size(all_reductions)];
      const std::uint64_t limit = r == reduction::sum || r == reduction::max || r == reduction::min ? max_sum_parts : max_parts;
      const std::uint64_t P = 1 + rng() % limit;
      std::vector<T> parts;
      for (std::uint64_t s = 0; s < P; ++s) parts.push_back(partial_value<T>(g, s, P, r));
      std::shuffle(parts.begin(), parts.end(), rng);
      // Combine random adjacent pairs until one value is left; avg adds, then divides by P.
      const reduction c = r == reduction::avg ? reduction::sum : r;
      while (parts.size() > 1) {
        const std::size_t i = rng() % (parts.size() - 1);
        parts[i] = reduce_combine(c, parts[i], parts[i + 1]);
        parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      }
      const T got = reduce_finish(r, parts[0], static_cast<std::size_t>(P));
      if (!(got == index_value<T>(g))) {
        if (wrong++ == 0) FAIL_CHECK("g " << g << " " << reduction_name(r) << " P " << P << ": " << static_cast<float>(got) << " instead of " << static_cast<float>(index_value<T>(g)));
      }
    }
    REQUIRE(wrong == 0);
  };
  run(bfloat16{}, 16 * 201, 48, 16);
  run(float16{}, 128 * 22, 300, 16);
}
