// redist/core/offsets.hpp -- base offset maps (paper Fig. 7a) and device maps (Def. 6.1).
//
//   D[[c{}c]](i)        = 0
//   D[[c{x, xs}n]](i)   = c * i_x + D[[(c * k_x){xs}n]](i)
//   T[[d1, ..., dr]](i) = (D[[d1]](i), ..., D[[dr]](i))
//
// A device map is a bijection from mesh points to ranks. The default one is row-major
// over the declared axes (mesh.hpp); a general one is stored as a permutation of ranks.
#pragma once

#include <cstdint>

#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"

namespace redist {

/// Block index along dimension d (base offset / tile) of the device with this rank,
/// under the default device map. The mixed-radix number of the coordinates of the
/// dimension's axes, minor-most fastest.
constexpr std::uint64_t block_index(const device_mesh& m, const dim& d, std::uint64_t rank) {
  std::uint64_t b = 0, w = 1;
  for (int i = 0; i < d.n; ++i) {
    int k = d.axes[i];
    b += m.coord(k, rank) * w;
    w *= m.sub[k].size;
  }
  return b;
}

/// Index of the partial value this rank holds (partial sums): the mixed-radix number of
/// its coordinates along the type's sum axes, smallest id fastest. Ranks with the same
/// tile and different sum indices hold the partials that add up to the tile's value.
constexpr std::uint64_t sum_index(const device_mesh& m, const dist_type& t, std::uint64_t rank) {
  std::uint64_t b = 0, w = 1;
  for (int i = 0; i < t.nsum; ++i) {
    b += m.coord(t.sum[i], rank) * w;
    w *= m.sub[t.sum[i]].size;
  }
  return b;
}

/// Base offset of dimension d for this rank: D[[d]](phi^-1(rank)).
constexpr std::uint64_t base_offset(const device_mesh& m, const dim& d, std::uint64_t rank) {
  return block_index(m, d, rank) * tile(m, d);
}

/// Base offsets of all dimensions: T[[t]](phi^-1(rank)), written to out[0..rank).
constexpr void base_offsets(const device_mesh& m, const dist_type& t, std::uint64_t rank, std::uint64_t* out) {
  for (int d = 0; d < t.rank; ++d) out[d] = base_offset(m, t.dims[d], rank);
}

/// The default device map: rank of the mesh point with these per-axis coordinates.
constexpr std::uint64_t rank_of(const device_mesh& m, const std::uint64_t* axis_coords) {
  std::uint64_t r = 0;
  for (int a = 0; a < m.naxes; ++a) r = r * m.sizes[a] + axis_coords[a];
  return r;
}

/// Apply a general device map given as a rank permutation `perm` (perm[default rank] =
/// physical rank) to a default-map rank.
constexpr std::uint64_t apply_device_map(const std::uint64_t* perm, std::uint64_t rank) { return perm[rank]; }

}  // namespace redist
