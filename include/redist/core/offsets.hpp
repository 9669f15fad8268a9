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

/// Base offset of dimension d for this rank: D[[d]](phi^-1(rank)), the global index of the
/// first element of its (padded) tile, clipped to the global size (an empty tile of an
/// uneven dimension starts at the end of the array). Never wraps past 2^64.
constexpr std::uint64_t base_offset(const device_mesh& m, const dim& d, std::uint64_t rank) {
  return clip_mul(block_index(m, d, rank), tile(m, d), d.global);
}

/// The range [lo, hi) of global indices of dimension d that this rank's tile holds:
/// [i*t, min((i+1)*t, global)) clipped to the array (empty ranges are [global, global)).
/// Equal to [base_offset, base_offset + tile) on even dimensions; lo <= hi <= global for
/// every size up to 2^64 - 1 (the sums saturate at the global size, core/dtype.hpp clip_add).
constexpr std::uint64_t range_lo(const device_mesh& m, const dim& d, std::uint64_t rank) {
  return base_offset(m, d, rank);
}
constexpr std::uint64_t range_hi(const device_mesh& m, const dim& d, std::uint64_t rank) {
  return clip_add(base_offset(m, d, rank), tile(m, d), d.global);
}

/// Base offsets of all dimensions: T[[t]](phi^-1(rank)), written to out[0..rank).
constexpr void base_offsets(const device_mesh& m, const dist_type& t, std::uint64_t rank, std::uint64_t* out) {
  for (int d = 0; d < t.rank; ++d) out[d] = base_offset(m, t.dims[d], rank);
}

/// The data-movement lower bound of redistributing `a` to `b`, in elements: the most any
/// rank must receive, |target box| - |target box intersected with its source box| (tiles
/// as boxes of global indices, short or empty on uneven dimensions). Every rank must end
/// with its target box and holds only the overlap without communication. Pending sums are
/// ignored (a weaker bound with them).
constexpr std::uint64_t movement_lower_bound(const device_mesh& m, const dist_type& a, const dist_type& b) {
  std::uint64_t worst = 0;
  for (std::uint64_t r = 0; r < m.devices; ++r) {
    std::uint64_t overlap = 1, want = 1;
    for (int d = 0; d < a.rank && d < b.rank; ++d) {
      const std::uint64_t lo_a = range_lo(m, a.dims[d], r), lo_b = range_lo(m, b.dims[d], r);
      const std::uint64_t hi_a = range_hi(m, a.dims[d], r), hi_b = range_hi(m, b.dims[d], r);
      const std::uint64_t lo = lo_a > lo_b ? lo_a : lo_b, hi = hi_a < hi_b ? hi_a : hi_b;
      overlap *= hi > lo ? hi - lo : 0;
      want *= hi_b - lo_b;
    }
    worst = want - overlap > worst ? want - overlap : worst;
  }
  return worst;
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
