// redist/runtime/reshard_tiles.hpp -- owned tiles of every array of a reshard for the ranks
// a process drives, laid out as reshard_executor::run takes them, and the global-index
// encoding of runtime/verify.hpp to fill and check them (the command line's `reshard run
// --verify`, the weight-sync example, the tests and benchmarks). An application passes its
// own memory to run() instead; where it keeps several arrays' tiles back to back in one
// buffer (an inference engine's fused parameters, vLLM's qkv_proj), fused_targets and
// fused_sources find each array's tile in it.
//
// Array a's element at global index g holds index_value(g + a * reshard_array_offset) of the
// array's element type (its arithmetic type where the array has pending values (bf16 and f16: runtime/half.hpp), otherwise an unsigned integer of its size), so that two
// arrays of the same shape hold different values; a source with pending values holds the
// partials that reduce to it (verify.hpp partial_value). Targets that keep pending values
// are not checked (their partials are only defined up to the reduction). An array that casts
// (reshard_array::target_dtype) holds cast_index_value(g + a * reshard_array_offset), a value
// exact in both its types, and its targets are compared bit for bit with that value in theirs;
// one that casts pending values holds the encoding and partials of cast_pending_encoding's
// type, exact in its source, program and target types (and its reductions exact in them).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "redist/lower/reshard.hpp"
#include "redist/runtime/cast.hpp"
#include "redist/runtime/darray.hpp"
#include "redist/runtime/reshard_executor.hpp"
#include "redist/runtime/verify.hpp"

namespace redist {

inline constexpr std::uint64_t reshard_array_offset = 1000003;

/// Source and target tiles of every array for ranks `local` (entry i * A + a), on
/// transparent huge pages from 2 MiB on (runtime/huge_pages.hpp).
struct reshard_tiles {
  std::vector<host_vector<std::byte>> in, out;
  [[nodiscard]] std::vector<std::span<const std::byte>> sources() const {
    return std::vector<std::span<const std::byte>>(in.begin(), in.end());
  }
  [[nodiscard]] std::vector<std::span<std::byte>> targets() {
    std::vector<std::span<std::byte>> v;
    for (auto& t : out) v.emplace_back(t);
    return v;
  }
};

namespace detail {

/// Call f(darray<T>&) on rank r's tile of layout l held in `bytes` (nothing off its mesh or
/// without a box), T the C++ type of element type et: its arithmetic type where `arithmetic`
/// and it has one, otherwise an unsigned integer of its size.
template <class F>
void with_tile(element_type et, bool arithmetic, const array_layout& l, std::uint64_t W, rank_t r,
               std::span<std::byte> bytes, F&& f) {
  const auto* t = std::get_if<placed_layout>(&l);
  const std::int64_t pos = t ? t->pm.positions(W)[r] : std::get<box_layout>(l).boxes[r] ? 0 : -1;
  if (pos < 0) return;
  with_element_type(et, arithmetic, [&](auto e) {
    using T = decltype(e);
    const std::span<T> mem(reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T));
    darray<T> a = t ? darray<T>(t->pm.mesh, t->type, static_cast<rank_t>(pos), mem)
                    : darray<T>::of_layout(std::get<box_layout>(l), r, mem);
    f(a);
  });
}

/// The value encoding global index g in an array cast between floating types a and b: exact
/// in both (the casts neither round nor overflow), distinct modulo the count of such values
/// (2^24 between f64 and f32; the finite patterns of bf16 or f16 against a wider type; 7680
/// between bf16 and f16: 8 significant bits, exponents -14..15, both signs).
inline double cast_index_value(std::uint64_t g, element_type a, element_type b) {
  const auto wide = [](element_type t) { return element_type_bytes(t) > 2; };
  if (wide(a) && wide(b)) return index_value<float>(g);
  if (!wide(a) && !wide(b)) {
    const std::uint64_t k = g % 7680, r = k % 3840;
    const double v = std::ldexp(static_cast<double>(128 + r % 128), static_cast<int>(r / 128) - 21);
    return k < 3840 ? v : -v;
  }
  const element_type n = wide(a) ? b : a;  // the 16-bit one: its finite patterns, both signs
  const std::uint64_t half = n == element_type::bf16 ? 255 * 128 : 31 * 1024, k = g % (2 * half);
  const auto bits = static_cast<std::uint16_t>((k >= half ? 0x8000u : 0u) | (k % half));
  return n == element_type::bf16 ? bf16_bits_to_float(bits) : f16_bits_to_float(bits);
}

/// The type whose index encoding and partial values (verify.hpp) an array casting pending
/// values between floating types a and b holds (reshard_array::casts_pending): the narrower
/// of the two, f16 for bf16 and f16 (values of 7 significant bits between 2^-12 and 2^10, and
/// partials of at most 8 while P <= 26: exact in bf16, and their sums in f32).
constexpr element_type cast_pending_encoding(element_type a, element_type b) {
  if (element_type_bytes(a) == element_type_bytes(b)) return element_type_bytes(a) == 2 ? element_type::f16 : a;
  return element_type_bytes(a) < element_type_bytes(b) ? a : b;
}

/// Call f(v) with a value of the arithmetic type of cast_pending_encoding(x.dtype,
/// x.target_type()) (float, bfloat16 or float16).
template <class F>
void with_cast_pending_encoding(const reshard_array& x, F&& f) {
  with_element_type(cast_pending_encoding(x.dtype, x.target_type()), true, [&](auto v) {
    if constexpr (std::is_same_v<decltype(v), float> || is_half_float<decltype(v)>) f(v);
  });
}

}  // namespace detail

/// One array's tile inside a fused buffer (fused_targets, fused_sources): the array's index
/// in the plan (run() takes it at i * A + array) and its bytes.
template <class Byte>
struct fused_tile {
  std::size_t array = 0;
  std::span<Byte> bytes;
};

namespace detail {
/// Each of `names`' array index and tile bytes on rank r (source or target), checked: a
/// name the plan has not, given twice or of another element type than the first, a rank
/// outside the world.
inline std::vector<std::pair<std::size_t, std::uint64_t>> fused_parts(const reshard_plan& p, bool source, rank_t r,
                                                                     const std::vector<std::string>& names) {
  if (r >= p.world)
    throw redist_error(errc::runtime, "fused " + std::string(source ? "source" : "target") + " tiles of rank " +
                                          std::to_string(r) + ": the reshard runs on a world of " +
                                          std::to_string(p.world) + " ranks");
  std::vector<std::pair<std::size_t, std::uint64_t>> v;
  for (const std::string& name : names) {
    const auto it = std::find_if(p.arrays.begin(), p.arrays.end(), [&](const reshard_array& x) { return x.name == name; });
    if (it == p.arrays.end()) throw redist_error(errc::runtime, "fused tiles: no array is named '" + name + "'");
    const auto a = static_cast<std::size_t>(it - p.arrays.begin());
    for (const auto& part : v)
      if (part.first == a) throw redist_error(errc::runtime, "fused tiles: array '" + name + "' is named twice");
    auto type = [source](const reshard_array& x) { return source ? x.dtype : x.target_type(); };
    if (!v.empty() && type(*it) != type(p.arrays[v[0].first]))
      throw redist_error(errc::runtime, "fused tiles: array '" + name + "' holds " +
                                            std::string(element_type_name(type(*it))) + ", array '" + names[0] + "' " +
                                            std::string(element_type_name(type(p.arrays[v[0].first]))) +
                                            " (a fused buffer holds one element type)");
    v.emplace_back(a, layout_tile_elements(source ? it->source : it->target, p.world)[r] *
                          element_type_bytes(type(*it)));
  }
  return v;
}

inline std::uint64_t fused_bytes(const reshard_plan& p, bool source, rank_t r, const std::vector<std::string>& names) {
  std::uint64_t n = 0;
  for (const auto& part : fused_parts(p, source, r, names)) n += part.second;
  return n;
}

template <class Byte>
std::vector<fused_tile<Byte>> fused_tiles(const reshard_plan& p, bool source, rank_t r,
                                          const std::vector<std::string>& names, std::span<Byte> fused) {
  std::vector<fused_tile<Byte>> v;
  std::uint64_t at = 0;
  for (const auto& [a, n] : fused_parts(p, source, r, names)) {
    v.push_back({a, at + n <= fused.size() ? fused.subspan(at, n) : std::span<Byte>()});
    at += n;
  }
  if (at != fused.size()) {
    std::string list;
    for (const std::string& name : names) list += (list.empty() ? "'" : ", '") + name + "'";
    throw redist_error(errc::runtime, "fused " + std::string(source ? "source" : "target") + " tiles of " + list +
                                          " on rank " + std::to_string(r) + ": the buffer has " +
                                          std::to_string(fused.size()) + " bytes, their tiles " + std::to_string(at));
  }
  return v;
}
}  // namespace detail

/// The bytes of rank r's target tiles of the arrays `names`: the size of the fused buffer
/// fused_targets takes for them (0 on a rank off every one's mesh). Throws as fused_targets
/// does on the names and the rank.
inline std::uint64_t fused_target_bytes(const reshard_plan& p, rank_t r, const std::vector<std::string>& names) {
  return detail::fused_bytes(p, false, r, names);
}

/// The same for source tiles (the size of the buffer fused_sources takes).
inline std::uint64_t fused_source_bytes(const reshard_plan& p, rank_t r, const std::vector<std::string>& names) {
  return detail::fused_bytes(p, true, r, names);
}

/// Rank r's target tiles of the arrays `names`, in that order, back to back in one buffer
/// `fused` of exactly their bytes (fused_target_bytes): a parameter an inference engine
/// keeps fused along its first dimension, as vLLM's qkv_proj holds the rank's tile of q,
/// then k's, then v's, and gate_up_proj the gate's, then up's (row-major tiles of the same
/// trailing extents, one after the other). Pass each bytes to run() as its array's target
/// (out[i * A + array]): the reshard writes the fused parameter in place. A rank off an
/// array's mesh has an empty tile. The arrays share one element type (so each tile is
/// aligned where `fused` is). Throws redist_error(errc::runtime) naming the array that the
/// plan has not, that comes twice or holds another element type, a rank outside the world,
/// or the sizes when the tiles do not fill `fused`.
inline std::vector<fused_tile<std::byte>> fused_targets(const reshard_plan& p, rank_t r,
                                                        const std::vector<std::string>& names, std::span<std::byte> fused) {
  return detail::fused_tiles(p, false, r, names, fused);
}

/// The same for source tiles held fused (an engine's weights synced back to a trainer, a
/// checkpoint written from fused parameters).
inline std::vector<fused_tile<const std::byte>> fused_sources(const reshard_plan& p, rank_t r,
                                                              const std::vector<std::string>& names,
                                                              std::span<const std::byte> fused) {
  return detail::fused_tiles(p, true, r, names, fused);
}

/// Zeroed tiles of the right sizes for ranks `local` (reshard_executor::source_bytes).
template <class B>
reshard_tiles make_reshard_tiles(const reshard_executor<B>& ex) {
  reshard_tiles t;
  const std::size_t A = ex.plan().arrays.size();
  for (rank_t r : ex.local_ranks())
    for (std::size_t a = 0; a < A; ++a) {
      t.in.emplace_back(ex.source_bytes(a, r));
      t.out.emplace_back(ex.target_bytes(a, r));
    }
  return t;
}

/// Fill every source tile (in[i * A + a], as run() takes them) with the encoding of the
/// header comment.
inline void fill_reshard_sources(const reshard_plan& p, std::span<const rank_t> local,
                                 std::span<const std::span<std::byte>> in) {
  const std::size_t A = p.arrays.size();
  for (std::size_t i = 0; i < local.size(); ++i)
    for (std::size_t a = 0; a < A; ++a) {
      const reshard_array& x = p.arrays[a];
      const std::uint64_t off = a * reshard_array_offset;
      detail::with_tile(x.dtype, !x.casts(), x.source, p.world, local[i], in[i * A + a], [&](auto& d) {
        if (!x.casts()) return fill_global_index(d, off);
        // A cast array's tiles hold unsigned integers of its element's size (with_tile): the
        // encodings below are compiled for those alone.
        if constexpr (std::is_unsigned_v<typename std::remove_cvref_t<decltype(d)>::value_type>) {
          auto store = [&](auto& v, double value) {
            std::byte e[8];
            detail::store_element(e, x.dtype, value);
            std::memcpy(&v, e, sizeof v);
          };
          if (!x.casts_pending())
            return for_each_global(d, [&](std::uint64_t g, auto& v) {
              store(v, detail::cast_index_value(g + off, x.dtype, x.target_type()));
            });
          const bool pending = x.source_pending();
          const std::uint64_t s = pending ? sum_index(d.mesh(), d.type(), d.device()) : 0;
          const std::uint64_t P = pending ? sum_parts(d.mesh(), d.type()) : 1;
          const reduction r = pending ? d.type().reduce : reduction::sum;
          detail::with_cast_pending_encoding(x, [&](auto e) {
            using E = decltype(e);
            for_each_global(d, [&](std::uint64_t g, auto& v) { store(v, static_cast<double>(partial_value<E>(g + off, s, P, r))); });
          });
        }
      });
    }
}

/// The same over owned tiles.
inline void fill_reshard_sources(const reshard_plan& p, std::span<const rank_t> local, reshard_tiles& t) {
  std::vector<std::span<std::byte>> in;
  for (auto& x : t.in) in.emplace_back(x);
  fill_reshard_sources(p, local, in);
}

/// What checking the target tiles found.
struct reshard_check {
  std::uint64_t checked = 0, wrong = 0;
  std::uint64_t unchecked_arrays = 0;  ///< arrays whose target keeps pending values
  std::string first;                   ///< the first wrong element: array, rank, global index
  [[nodiscard]] bool ok() const { return wrong == 0; }
};

/// Compare every element of every target tile (out[i * A + a], as run() takes them) with
/// the encoding of the header comment.
inline reshard_check check_reshard_targets(const reshard_plan& p, std::span<const rank_t> local,
                                           std::span<const std::span<std::byte>> out) {
  reshard_check c;
  const std::size_t A = p.arrays.size();
  for (std::size_t a = 0; a < A; ++a) {
    if (p.arrays[a].target_pending()) {
      ++c.unchecked_arrays;
      continue;
    }
    const reshard_array& x = p.arrays[a];
    const std::uint64_t off = a * reshard_array_offset;
    for (std::size_t i = 0; i < local.size(); ++i)
      detail::with_tile(x.target_type(), !x.casts(), x.target, p.world, local[i], out[i * A + a], [&](auto& d) {
        tile_check k;
        if (!x.casts()) {
          k = check_global_index(d, off);
        } else if constexpr (std::is_unsigned_v<typename std::remove_cvref_t<decltype(d)>::value_type>) {  // as above
          auto check = [&](std::uint64_t g, const auto& v, double value) {  // bit for bit
            std::byte want[8];
            detail::store_element(want, x.target_type(), value);
            ++k.checked;
            if (std::memcmp(want, &v, sizeof v) != 0 && k.mismatches++ == 0) k.first_bad = g;
          };
          if (!x.casts_pending())
            for_each_global(d, [&](std::uint64_t g, const auto& v) {
              check(g, v, detail::cast_index_value(g + off, x.dtype, x.target_type()));
            });
          else
            detail::with_cast_pending_encoding(x, [&](auto e) {
              using E = decltype(e);
              for_each_global(d, [&](std::uint64_t g, const auto& v) { check(g, v, static_cast<double>(index_value<E>(g + off))); });
            });
        }
        c.checked += k.checked;
        if (!k.ok() && c.wrong == 0)
          c.first = "array '" + p.arrays[a].name + "' on rank " + std::to_string(local[i]) + ", global index " +
                    std::to_string(k.first_bad);
        c.wrong += k.mismatches;
      });
  }
  return c;
}

/// The same over owned tiles.
inline reshard_check check_reshard_targets(const reshard_plan& p, std::span<const rank_t> local, reshard_tiles& t) {
  const std::vector<std::span<std::byte>> out = t.targets();
  return check_reshard_targets(p, local, out);
}

}  // namespace redist
