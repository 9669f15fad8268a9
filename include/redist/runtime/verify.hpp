// redist/runtime/verify.hpp -- arrays whose values encode their global index, for
// checking a redistribution element by element (tests, `redist run --verify`).
//
// fill_global_index(a) stores index_value<T>(g) at every element whose row-major global
// index is g; after a redistribution, check_global_index(b) counts the elements of b
// whose value is not index_value<T>(their global index). The encoding is exact (distinct
// indices give distinct values) up to 2^24 elements for float, 2^53 for double and
// 2^bits for integers; beyond that, indices are reduced modulo that range.
//
// Partial sums: for a type with pending-sum axes (`... sum{y}`), the P devices that differ
// only along the sum axes hold partial values that add up to index_value<T>(g) (device
// with sum index s holds partial_value<T>(g, s, P)). check_global_index compares values,
// so for such a type it is called on the sum of the partials (sum_root names the device
// of a sum group with all sum coordinates 0).
#pragma once

#include <complex>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

#include "redist/core/offsets.hpp"
#include "redist/runtime/backend.hpp"
#include "redist/runtime/darray.hpp"

namespace redist {

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
  } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    using V = typename T::value_type;
    return T(index_value<V>(g), index_value<V>(~g));
  } else {
    static_assert(sizeof(T) == 0, "index_value: no encoding for this element type");
  }
}

/// The partial value that the device with sum index s of P holds for global index g: the
/// P partials add up to index_value<T>(g), exactly (small integers for floating-point and
/// signed types, scrambled values modulo 2^bits for unsigned ones).
template <summable T>
constexpr T partial_value(std::uint64_t g, std::uint64_t s, std::uint64_t P) {
  const auto salt = [](std::uint64_t g_, std::uint64_t P_, std::uint64_t k) {
    if constexpr (std::is_unsigned_v<T>) {
      std::uint64_t z = (g_ * P_ + k) * 0x9e3779b97f4a7c15ull;  // splitmix64 finalizer
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return static_cast<T>(z ^ (z >> 31));
    } else {
      return static_cast<T>(static_cast<int>((g_ + 3 * k) % 5) + 1);
    }
  };
  if (s != 0) return salt(g, P, s);
  T v = index_value<T>(g);
  for (std::uint64_t k = 1; k < P; ++k) v = static_cast<T>(v - salt(g, P, k));
  return v;
}

/// Store index_value<T>(g) at every element of a's tile (g: the element's global index);
/// for a type with pending sums, the device's partial of it.
template <class T>
void fill_global_index(darray<T>& a) {
  if (a.type().nsum == 0) {
    for_each_global(a, [](std::uint64_t g, T& v) { v = index_value<T>(g); });
    return;
  }
  if constexpr (summable<T>) {
    const std::uint64_t s = sum_index(a.mesh(), a.type(), a.device()), P = sum_parts(a.mesh(), a.type());
    for_each_global(a, [s, P](std::uint64_t g, T& v) { v = partial_value<T>(g, s, P); });
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
/// lays them out): add every sum group's partial values into the tile of its root
/// (sum_root), which then holds the array's values. Nothing changes without pending sums.
template <summable T>
void sum_partials_into_roots(std::span<darray<T>> tiles) {
  for (const darray<T>& t : tiles) {
    const rank_t root = sum_root(t.mesh(), t.type(), t.device());
    if (root == t.device()) continue;
    T* r = tiles[root].data();
    for (std::size_t k = 0; k < t.size(); ++k) r[k] = reduce_add(r[k], t.data()[k]);  // padding too
  }
}

/// The outcome of checking a tile.
struct tile_check {
  std::uint64_t checked = 0;     ///< elements compared
  std::uint64_t mismatches = 0;  ///< elements whose value is not their index's
  std::uint64_t first_bad = 0;   ///< global index of the first mismatch (if any)
  [[nodiscard]] bool ok() const { return mismatches == 0; }
};

/// Compare every element of a's tile with index_value<T>(its global index).
template <class T>
tile_check check_global_index(const darray<T>& a) {
  tile_check c;
  for_each_global(a, [&](std::uint64_t g, const T& v) {
    ++c.checked;
    if (!(v == index_value<T>(g))) {
      if (c.mismatches++ == 0) c.first_bad = g;
    }
  });
  return c;
}

}  // namespace redist
