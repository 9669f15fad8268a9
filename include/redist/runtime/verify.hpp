// redist/runtime/verify.hpp -- arrays whose values encode their global index, for
// checking a redistribution element by element (tests, `redist run --verify`).
//
// fill_global_index(a) stores index_value<T>(g) at every element whose row-major global
// index is g; after a redistribution, check_global_index(b) counts the elements of b
// whose value is not index_value<T>(their global index). The encoding is exact (distinct
// indices give distinct values) up to 2^24 elements for float, 2^53 for double and
// 2^bits for integers; beyond that, indices are reduced modulo that range. bf16 and f16
// (runtime/half.hpp) encode g as m 2^e with few significant bits in m (so that the partial
// values below add exactly): 3,216 values for bf16 (|m| in 8..15, e in -100..100), 2,816 for
// f16 (|m| in 64..127, e in -18..3), indices modulo that count.
//
// Partial values: for a type with pending axes (`... sum{y}`, `max{y}`, ...), the P devices
// that differ only along those axes hold partial values whose reduction (the type's kind:
// sum, max, min, prod, avg) is index_value<T>(g) (device with sum index s holds
// partial_value<T>(g, s, P, kind)). check_global_index compares values, so for such a type
// it is called on the reduction of the partials (sum_root names the device of a group with
// all pending coordinates 0; reduce_partials_into_roots reduces into it). The partials are
// small offsets or factors of the value, chosen so that every backend's reduction is exact
// in any order and grouping (floating-point types while the indices stay below about
// 2^digits / P; avg of 8- and 16-bit integers only while P times the value fits, since
// backends add before they divide; bf16 and f16 while P <= 16, and for sums, max and min
// P <= 48 (bf16) and 300 (f16): the partials of g are then small multiples of 2^e).
#pragma once

#include <bit>
#include <complex>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

#include "redist/core/offsets.hpp"
#include "redist/runtime/backend.hpp"
#include "redist/runtime/darray.hpp"
#include "redist/runtime/half.hpp"

namespace redist {

namespace detail {
template <class T>
inline constexpr bool is_half_float = false;
template <half_format F>
inline constexpr bool is_half_float<half_float<F>> = true;

/// The 16-bit floats' encoding of g (the header comment): m with H <= |m| < 2H (distinct
/// values) times 2^e, e from lo to lo + E - 1; unit(g) is 2^e, the step of g's partial values.
template <class T>
struct half_encoding {
  static constexpr bool bf = std::is_same_v<T, bfloat16>;
  static constexpr std::uint64_t H = bf ? 8 : 64, E = bf ? 201 : 22;
  static constexpr int lo = bf ? -100 : -18;
  static constexpr std::uint64_t count = 2 * H * E;
  static constexpr float unit(std::uint64_t g) {
    const int e = lo + static_cast<int>(g % count / (2 * H));
    return std::bit_cast<float>(static_cast<std::uint32_t>(e + 127) << 23);
  }
  static constexpr float mantissa(std::uint64_t g) {
    const std::uint64_t k = g % count % (2 * H);
    return k < H ? -static_cast<float>(H + k) : static_cast<float>(k);  // -(H..2H-1), then H..2H-1
  }
};

/// k steps of g's partial values as a T: k, times 2^e for the 16-bit floats.
template <class T>
constexpr T index_step(std::uint64_t g, int k) {
  if constexpr (is_half_float<T>) return T(static_cast<float>(k) * half_encoding<T>::unit(g));
  else return static_cast<T>(k);
}
}  // namespace detail

/// The value that encodes global index g.
template <class T>
constexpr T index_value(std::uint64_t g) {
  if constexpr (std::is_same_v<T, bool>) {
    return (g & 1) != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    constexpr int digits = std::numeric_limits<T>::digits;  // 24 for float, 53 for double
    constexpr std::uint64_t range = digits >= 64 ? 0 : std::uint64_t{1} << digits;
    return static_cast<T>(range ? g % range : g);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(g);  // modulo 2^bits (C++20 conversions are modular)
  } else if constexpr (detail::is_half_float<T>) {
    using H = detail::half_encoding<T>;
    return T(H::mantissa(g) * H::unit(g));  // exact
  } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    using V = typename T::value_type;
    return T(index_value<V>(g), index_value<V>(~g));
  } else {
    static_assert(sizeof(T) == 0, "index_value: no encoding for this element type");
  }
}

namespace detail {
template <class T>
struct real_part {
  using type = T;
};
template <class V>
struct real_part<std::complex<V>> {
  using type = V;
};
}  // namespace detail

/// The partial value that the device with sum index s of P holds for global index g: the
/// reduction r of the P partials is index_value<T>(g), exactly. (For bf16 and f16 the small
/// integers below are multiples of g's unit 2^e, detail::half_encoding.)
///   sum:  small integers for floating-point and signed types, scrambled values modulo
///         2^bits for unsigned ones; partial 0 holds the rest.
///   max:  partial 0 holds the value, the others a little less (min: a little more).
///   prod: floating-point and complex: +-2^k (k in -1..1), signed: +-1, unsigned: 1; partial 0
///         holds the value divided by the others' product (exact: powers of two).
///   avg:  the value plus P e_s with small integers e_s adding up to 0, so that every mean of
///         a group of partials (groups dividing P) is an integer off the value (floating-point
///         types and signed integers of 32 bits or more; other types: the value itself).
template <summable T>
constexpr T partial_value(std::uint64_t g, std::uint64_t s, std::uint64_t P, reduction r = reduction::sum) {
  const auto small = [g](std::uint64_t k) { return static_cast<int>((g + 3 * k) % 5) + 1; };  // 1..5
  const T v = index_value<T>(g);
  switch (r) {
    case reduction::max:
    case reduction::min:
      if constexpr (std::totally_ordered<T>) {
        if (s == 0) return v;
        const T d = detail::index_step<T>(g, small(s)), lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
        if (r == reduction::max) return v < static_cast<T>(lo + d) ? lo : static_cast<T>(v - d);
        return v > static_cast<T>(hi - d) ? hi : static_cast<T>(v + d);
      }
      return v;
    case reduction::prod: {
      const auto factor = [&](std::uint64_t k) -> T {
        if constexpr (std::is_floating_point_v<T> || !std::is_arithmetic_v<T>) {  // float, complex
          using V = typename detail::real_part<T>::type;
          const V mag = k % 3 == 0 ? V(0.5) : k % 3 == 1 ? V(1) : V(2);
          return static_cast<T>(k % 2 ? -mag : mag);
        } else if constexpr (std::is_signed_v<T>) {
          return static_cast<T>(k % 2 ? -1 : 1);
        } else {
          return static_cast<T>(1);
        }
      };
      if (s != 0) return factor(s + g);
      T rest = static_cast<T>(1);
      for (std::uint64_t k = 1; k < P; ++k) rest = reduce_mul(rest, factor(k + g));
      if constexpr (std::is_floating_point_v<T> || !std::is_arithmetic_v<T>) return static_cast<T>(v / rest);
      else return reduce_mul(v, rest);  // +-1 is its own inverse
    }
    case reduction::avg: {
      constexpr bool offsets = std::is_floating_point_v<T> || (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) >= 4) ||
                               std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;
      if constexpr (offsets) {
        std::int64_t e = 0;
        if (s != 0) {
          e = small(s);
        } else {
          for (std::uint64_t k = 1; k < P; ++k) e -= small(k);
        }
        return static_cast<T>(v + static_cast<T>(static_cast<std::int64_t>(P) * e));
      }
      return v;
    }
    case reduction::sum: break;
  }
  const auto salt = [&](std::uint64_t k) -> T {
    if constexpr (std::is_unsigned_v<T>) {
      std::uint64_t z = (g * P + k) * 0x9e3779b97f4a7c15ull;  // splitmix64 finalizer
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return static_cast<T>(z ^ (z >> 31));
    } else {
      return detail::index_step<T>(g, small(k));
    }
  };
  if (s != 0) return salt(s);
  T w = v;
  for (std::uint64_t k = 1; k < P; ++k) w = static_cast<T>(w - salt(k));
  return w;
}

/// Store index_value<T>(g) at every element of a's tile (g: the element's global index);
/// for a type with pending sums, the device's partial of it.
/// With `offset`, index g + offset instead (arrays of the same shape told apart).
template <class T>
void fill_global_index(darray<T>& a, std::uint64_t offset = 0) {
  if (a.type().nsum == 0) {
    for_each_global(a, [offset](std::uint64_t g, T& v) { v = index_value<T>(g + offset); });
    return;
  }
  if constexpr (summable<T>) {
    const std::uint64_t s = sum_index(a.mesh(), a.type(), a.device()), P = sum_parts(a.mesh(), a.type());
    const reduction r = a.type().reduce;
    if (!reducible<T>(r))
      throw redist_error(errc::runtime, "fill_global_index: " + std::string(type_text(a.mesh(), a.type()).view()) +
                                            ": " + unreducible_text(r));
    for_each_global(a, [s, P, r, offset](std::uint64_t g, T& v) { v = partial_value<T>(g + offset, s, P, r); });
  } else {
    throw redist_error(errc::runtime, "fill_global_index: a type with pending sums needs an element type with +");
  }
}

/// The device of t's sum group holding `device`: the one whose coordinates along the
/// sum axes are all 0 (the device itself when t has no pending sums).
inline rank_t sum_root(const device_mesh& m, const dist_type& t, rank_t device) {
  std::uint64_t r = device;
  for (int i = 0; i < t.nsum; ++i) r -= m.coord(t.sum[i], device) * m.sub[t.sum[i]].stride;
  return static_cast<rank_t>(r);
}

/// All ranks' target tiles in one process (tiles[r] belongs to rank r, as the host backend
/// lays them out): reduce every group's partial values (by the type's kind) into the tile of
/// its root (sum_root), which then holds the array's values. Nothing changes without
/// pending axes. avg adds the partials' differences from the root's and divides them by P,
/// so that the partial_value offsets give the value exactly.
template <summable T>
void reduce_partials_into_roots(std::span<darray<T>> tiles) {
  if (tiles.empty() || tiles[0].type().nsum == 0) return;
  const reduction r = tiles[0].type().reduce;
  if (!reducible<T>(r)) throw redist_error(errc::runtime, "reduce_partials_into_roots: " + unreducible_text(r));
  const auto sub = [](T a, T b) {  // a - b, wrapping for integers (padding holds any value)
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
    } else {
      return static_cast<T>(a - b);
    }
  };
  std::vector<std::vector<T>> diff(r == reduction::avg ? tiles.size() : 0);
  for (const darray<T>& t : tiles) {
    const rank_t root = sum_root(t.mesh(), t.type(), t.device());
    if (root == t.device()) continue;
    T* out = tiles[root].data();
    if (r == reduction::avg) {
      std::vector<T>& d = diff[root];
      if (d.empty()) d.assign(t.size(), T{});
      for (std::size_t k = 0; k < t.size(); ++k) d[k] = reduce_add(d[k], sub(t.data()[k], out[k]));
    } else {
      for (std::size_t k = 0; k < t.size(); ++k) out[k] = reduce_combine(r, out[k], t.data()[k]);  // padding too
    }
  }
  for (std::size_t root = 0; root < diff.size(); ++root) {
    if (diff[root].empty()) continue;
    const std::uint64_t P = sum_parts(tiles[root].mesh(), tiles[root].type());
    T* out = tiles[root].data();
    for (std::size_t k = 0; k < diff[root].size(); ++k)
      out[k] = reduce_add(out[k], reduce_finish(r, diff[root][k], static_cast<std::size_t>(P)));
  }
}
/// The sums' name for reduce_partials_into_roots (any reduction kind).
template <summable T>
void sum_partials_into_roots(std::span<darray<T>> tiles) {
  reduce_partials_into_roots(tiles);
}

/// The outcome of checking a tile.
struct tile_check {
  std::uint64_t checked = 0;     ///< elements compared
  std::uint64_t mismatches = 0;  ///< elements whose value is not their index's
  std::uint64_t first_bad = 0;   ///< global index of the first mismatch (if any)
  [[nodiscard]] bool ok() const { return mismatches == 0; }
};

/// Compare every element of a's tile with index_value<T>(its global index + offset).
template <class T>
tile_check check_global_index(const darray<T>& a, std::uint64_t offset = 0) {
  tile_check c;
  for_each_global(a, [&](std::uint64_t g, const T& v) {
    ++c.checked;
    if (!(v == index_value<T>(g + offset))) {
      if (c.mismatches++ == 0) c.first_bad = g;
    }
  });
  return c;
}

}  // namespace redist
