// redist/runtime/pack.hpp -- strided pack and unpack of row-major tiles: the only local
// data movement of a collective program, written once and shared by every backend.
//
// A row-major tile of extents e = (e_0, ..., e_{r-1}) split into n equal chunks along
// dimension d is, viewed as a 3-D array [outer][e_d][inner] with outer = prod_{k<d} e_k and
// inner = prod_{k>d} e_k, the n slabs [outer][e_d/n][inner]. Chunk m is `outer` contiguous
// runs of (e_d/n)*inner elements, one every e_d*inner elements, starting at m*(e_d/n)*inner.
// Every operation is described once, by the functions of namespace detail below, as a
// `strided_copy` (count x rows runs of contiguous elements, offsets and pitches in
// elements); the host functions here execute it with one std::memcpy per run, and a
// device memory space (backends/nccl.hpp) executes the same description with 2-D strided
// device copies. The index arithmetic is therefore written once for every memory.
//
//   split_copy   tile -> chunk m of n (contiguous)              (dynslice)
//   concat_copy  contiguous chunk -> its place m of n in a tile  (inverse of split_copy)
//   split_all    tile -> all n chunks, back to back              (packing an all-to-all's sends)
//   concat_all   n chunks back to back -> tile                   (unpacking an all-gather or all-to-all)
//
// Postconditions (e' = e with e'_d = e_d / n; idx a multi-index of the chunk):
//   split_copy:  chunk[idx] == tile[idx with idx_d += m * e'_d]
//   concat_copy: tile[idx with idx_d += m * e'_d] == chunk[idx]
//   split_all / concat_all: the same for every m, chunk m at offset m * size/n.
//
// Blocks in place (block_layout). The collectives of a program move n blocks per rank;
// in a tile split along d, block k is chunk k: `outer` runs of `run` elements, one every
// `row` elements, starting at k * step (step = run). The executor hands such layouts to
// backends that move strided blocks themselves (the host backend's copies, MPI derived
// datatypes), and otherwise packs pieces of the blocks, [a, b) in each block's row-major
// element order, into a contiguous buffer (block_piece_copies): the chunked packing that
// bounds the executor's pack space (runtime/executor.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "redist/core/config.hpp"
#include "redist/core/error.hpp"

namespace redist {

namespace detail {

/// The [outer][e_d][inner] view of a tile split into n chunks along d.
struct split_view {
  std::uint64_t outer = 1;  ///< product of the extents before d
  std::uint64_t run = 0;    ///< elements of one contiguous run of a chunk: (e_d / n) * inner
  std::uint64_t row = 0;    ///< distance between consecutive runs: e_d * inner = n * run
};

inline split_view make_split_view(std::span<const std::uint64_t> ext, int d, std::uint64_t n) {
  if (d < 0 || static_cast<std::size_t>(d) >= ext.size())
    throw redist_error(errc::runtime, "pack: dimension " + std::to_string(d) + " is out of range for a tile of rank " +
                                          std::to_string(ext.size()));
  if (n == 0 || ext[static_cast<std::size_t>(d)] % n != 0)
    throw redist_error(errc::runtime, "pack: extent " + std::to_string(ext[static_cast<std::size_t>(d)]) +
                                          " of dimension " + std::to_string(d) + " cannot be split into " +
                                          std::to_string(n) + " chunks");
  split_view v;
  std::uint64_t inner = 1;
  for (std::size_t k = 0; k < ext.size(); ++k) {
    if (k < static_cast<std::size_t>(d)) v.outer *= ext[k];
    else if (k > static_cast<std::size_t>(d)) inner *= ext[k];
  }
  v.row = ext[static_cast<std::size_t>(d)] * inner;
  v.run = v.row / n;
  return v;
}

inline std::uint64_t extent_product(std::span<const std::uint64_t> ext) {
  std::uint64_t s = 1;
  for (std::uint64_t e : ext) s *= e;
  return s;
}

inline void check_pack_size(const char* fn, const char* what, std::size_t have, std::uint64_t need) {
  if (have != need)
    throw redist_error(errc::runtime, std::string(fn) + ": the " + what + " holds " + std::to_string(have) +
                                          " elements, expected " + std::to_string(need));
}

/// A copy of count x rows runs of `width` contiguous elements: run (i, j), 0 <= i < count,
/// 0 <= j < rows, starts at element src + i * src_step + j * src_pitch of the source and
/// goes to dst + i * dst_step + j * dst_pitch of the destination. The runs of one side
/// never overlap. (i, j) is a 2-D index with no preferred order: swapped() describes the
/// same copy with the roles of i and j exchanged, so that a device can issue one 2-D
/// strided copy per i or per j, whichever is fewer.
struct strided_copy {
  std::uint64_t count = 1, rows = 1, width = 0;
  std::uint64_t src = 0, src_pitch = 0, src_step = 0;
  std::uint64_t dst = 0, dst_pitch = 0, dst_step = 0;

  [[nodiscard]] std::uint64_t elements() const { return count * rows * width; }
  [[nodiscard]] strided_copy swapped() const {
    return {rows, count, width, src, src_step, src_pitch, dst, dst_step, dst_pitch};
  }
  /// The same copy with fewer, longer runs where both sides are contiguous: rows whose
  /// runs follow each other on both sides become one run, then likewise for i.
  [[nodiscard]] strided_copy merged() const {
    strided_copy c = *this;
    if (c.rows > 1 && c.src_pitch == c.width && c.dst_pitch == c.width) {
      c.width *= c.rows;
      c.rows = 1;
    }
    if (c.rows == 1 && c.count > 1 && c.src_step == c.width && c.dst_step == c.width) {
      c.width *= c.count;
      c.count = 1;
    }
    if (c.rows == 1) c.src_pitch = c.dst_pitch = c.width;
    if (c.count == 1) c.src_step = c.dst_step = c.rows * c.width;
    return c;
  }
};

/// split_copy: chunk m of n along d (after checking the split and the buffer sizes).
inline strided_copy split_copy_plan(std::span<const std::uint64_t> ext, int d, std::uint64_t n, std::uint64_t m,
                                    std::size_t tile_size, std::size_t chunk_size) {
  const split_view v = make_split_view(ext, d, n);
  check_pack_size("split_copy", "tile", tile_size, extent_product(ext));
  check_pack_size("split_copy", "chunk", chunk_size, v.outer * v.run);
  if (m >= n) throw redist_error(errc::runtime, "split_copy: chunk " + std::to_string(m) + " of " + std::to_string(n));
  strided_copy c;
  c.rows = v.outer;
  c.width = v.run;
  c.src = m * v.run;
  c.src_pitch = v.row;
  c.dst_pitch = v.run;
  return c.merged();
}

/// concat_copy: a contiguous chunk (extents chunk_ext) to its place m of n along d.
inline strided_copy concat_copy_plan(std::span<const std::uint64_t> chunk_ext, int d, std::uint64_t n,
                                     std::uint64_t m, std::size_t chunk_size, std::size_t tile_size) {
  const split_view c = make_split_view(chunk_ext, d, 1);  // run = row = chunk run
  check_pack_size("concat_copy", "chunk", chunk_size, c.outer * c.run);
  check_pack_size("concat_copy", "tile", tile_size, c.outer * c.run * n);
  if (m >= n) throw redist_error(errc::runtime, "concat_copy: chunk " + std::to_string(m) + " of " + std::to_string(n));
  strided_copy s;
  s.rows = c.outer;
  s.width = c.run;
  s.src_pitch = c.run;
  s.dst = m * c.run;
  s.dst_pitch = c.run * n;
  return s.merged();
}

/// split_all: every chunk m of n along d, chunk m at offset m * size / n (i = m, j = outer).
inline strided_copy split_all_plan(std::span<const std::uint64_t> ext, int d, std::uint64_t n, std::size_t tile_size,
                                   std::size_t chunks_size) {
  const split_view v = make_split_view(ext, d, n);
  check_pack_size("split_all", "tile", tile_size, extent_product(ext));
  check_pack_size("split_all", "chunk buffer", chunks_size, tile_size);
  strided_copy c;
  c.count = n;
  c.rows = v.outer;
  c.width = v.run;
  c.src_step = v.run;
  c.src_pitch = v.row;
  c.dst_step = v.outer * v.run;
  c.dst_pitch = v.run;
  return c.merged();
}

/// concat_all: n chunks back to back (each of extents chunk_ext) into a tile along d.
inline strided_copy concat_all_plan(std::span<const std::uint64_t> chunk_ext, int d, std::uint64_t n,
                                    std::size_t chunks_size, std::size_t tile_size) {
  const split_view c = make_split_view(chunk_ext, d, 1);
  const std::uint64_t chunk = c.outer * c.run;
  check_pack_size("concat_all", "chunk buffer", chunks_size, chunk * n);
  check_pack_size("concat_all", "tile", tile_size, chunk * n);
  strided_copy s;
  s.count = n;
  s.rows = c.outer;
  s.width = c.run;
  s.src_step = chunk;
  s.src_pitch = c.run;
  s.dst_step = c.run;
  s.dst_pitch = c.run * n;
  return s.merged();
}

/// Copy one run of `width` elements: std::memcpy for long runs; element by element (a
/// fixed-size copy the compiler inlines) for runs shorter than 64 bytes, where a call per
/// run would cost more than the copy.
template <class T>
inline void copy_run(T* dst, const T* src, std::uint64_t width) {
  if (width * sizeof(T) >= 64) {
    std::memcpy(dst, src, width * sizeof(T));
    return;
  }
  for (std::uint64_t e = 0; e < width; ++e) std::memcpy(dst + e, src + e, sizeof(T));
}

/// Execute a strided copy in host memory: one copy_run per run, rows outermost.
template <class T>
void host_strided_copy(const strided_copy& c, const T* src, T* dst) {
  if (c.width == 0) return;
  for (std::uint64_t j = 0; j < c.rows; ++j)
    for (std::uint64_t i = 0; i < c.count; ++i)
      copy_run(dst + c.dst + i * c.dst_step + j * c.dst_pitch, src + c.src + i * c.src_step + j * c.src_pitch, c.width);
}

}  // namespace detail

/// True if splitting a tile of extents `ext` along `d` leaves every chunk contiguous
/// (all extents before d are 1): chunk m is then the range [m*size/n, (m+1)*size/n).
inline bool split_is_contiguous(std::span<const std::uint64_t> ext, int d) {
  for (int k = 0; k < d && static_cast<std::size_t>(k) < ext.size(); ++k)
    if (ext[static_cast<std::size_t>(k)] != 1) return false;
  return true;
}

/// Copy chunk m of n along dimension d of the row-major tile `tile` (extents `ext`) into
/// the contiguous buffer `chunk` (tile.size()/n elements).
template <class T>
  requires std::is_trivially_copyable_v<T>
void split_copy(std::span<const T> tile, std::span<const std::uint64_t> ext, int d, std::uint64_t n, std::uint64_t m,
                std::span<T> chunk) {
  detail::host_strided_copy(detail::split_copy_plan(ext, d, n, m, tile.size(), chunk.size()), tile.data(), chunk.data());
}

/// Write the contiguous `chunk` (extents `chunk_ext`) as chunk m of n along dimension d
/// of the row-major tile `tile`, whose extents are chunk_ext with dimension d times n.
template <class T>
  requires std::is_trivially_copyable_v<T>
void concat_copy(std::span<const T> chunk, std::span<const std::uint64_t> chunk_ext, int d, std::uint64_t n,
                 std::uint64_t m, std::span<T> tile) {
  detail::host_strided_copy(detail::concat_copy_plan(chunk_ext, d, n, m, chunk.size(), tile.size()), chunk.data(),
                            tile.data());
}

/// Split the tile into n chunks along d and write them back to back into `chunks`
/// (chunk m at offset m * tile.size()/n). `chunks` must not overlap `tile`.
template <class T>
  requires std::is_trivially_copyable_v<T>
void split_all(std::span<const T> tile, std::span<const std::uint64_t> ext, int d, std::uint64_t n, std::span<T> chunks) {
  detail::host_strided_copy(detail::split_all_plan(ext, d, n, tile.size(), chunks.size()), tile.data(), chunks.data());
}

/// Concatenate n chunks stored back to back in `chunks` (each of extents `chunk_ext`)
/// along dimension d into `tile`. `tile` must not overlap `chunks`.
template <class T>
  requires std::is_trivially_copyable_v<T>
void concat_all(std::span<const T> chunks, std::span<const std::uint64_t> chunk_ext, int d, std::uint64_t n,
                std::span<T> tile) {
  detail::host_strided_copy(detail::concat_all_plan(chunk_ext, d, n, chunks.size(), tile.size()), chunks.data(),
                            tile.data());
}

/// Where the n blocks of a collective lie in a tile: block k's j-th run (0 <= j < outer)
/// holds `run` contiguous elements starting at k * step + j * row. A block has
/// outer * run elements, in row-major order (run by run).
struct block_layout {
  std::uint64_t n = 1, outer = 1, run = 0, row = 0, step = 0;

  [[nodiscard]] std::uint64_t block_elements() const { return outer * run; }
  /// True if the blocks are contiguous and back to back (block k = [k*b, (k+1)*b), b =
  /// block_elements()): a backend's contiguous collective can move them as they lie.
  [[nodiscard]] bool contiguous() const { return (outer == 1 || row == run) && (n == 1 || step == block_elements()); }
  friend bool operator==(const block_layout&, const block_layout&) = default;
};

/// The layout of a tile of extents `ext` split into n chunks along d (block k = chunk k).
inline block_layout split_layout(std::span<const std::uint64_t> ext, int d, std::uint64_t n) {
  const detail::split_view v = detail::make_split_view(ext, d, n);
  return {n, v.outer, v.run, v.row, v.run};
}

/// n contiguous blocks of `count` elements back to back.
inline block_layout packed_layout(std::uint64_t n, std::uint64_t count) { return {n, 1, count, count, count}; }

/// At most three strided copies that move elements [a, b) of every block of `layout` (in
/// each block's row-major order) to or from a packed buffer holding the n pieces back to
/// back (piece k at k * (b - a)): a partial first run, the whole runs, a partial last run.
/// `pack` true: layout -> packed; false: packed -> layout. `keep`: only the first `keep`
/// elements of every run are copied (a padded block clipped at the end of a tile; the
/// packed side keeps its positions).
struct piece_copies {
  detail::strided_copy copy[3];
  int count = 0;
};

inline piece_copies block_piece_copies(const block_layout& l, std::uint64_t a, std::uint64_t b, bool pack,
                                       std::uint64_t keep = UINT64_MAX) {
  if (a > b || b > l.block_elements() || l.run == 0)
    throw redist_error(errc::runtime, "pack: elements [" + std::to_string(a) + ", " + std::to_string(b) +
                                          ") are not within a block of " + std::to_string(l.block_elements()));
  piece_copies out;
  const std::uint64_t piece = b - a;
  // elements [x, y) of the block lying in runs j0..j0+rows-1, the same offset in each run
  auto add = [&](std::uint64_t x, std::uint64_t rows, std::uint64_t width) {
    const std::uint64_t j0 = x / l.run, off = x % l.run;
    if (off >= keep) return;
    width = std::min(width, keep - off);
    if (rows == 0 || width == 0) return;
    detail::strided_copy c;
    c.count = l.n;
    c.rows = rows;
    c.width = width;
    c.src = j0 * l.row + off;
    c.src_pitch = l.row;
    c.src_step = l.step;
    c.dst = x - a;
    c.dst_pitch = l.run;
    c.dst_step = piece;
    if (!pack) {
      std::swap(c.src, c.dst);
      std::swap(c.src_pitch, c.dst_pitch);
      std::swap(c.src_step, c.dst_step);
    }
    out.copy[out.count++] = c.merged();
  };
  std::uint64_t x = a;
  if (x % l.run != 0) {  // the partial first run
    const std::uint64_t w = std::min(l.run - x % l.run, b - x);
    add(x, 1, w);
    x += w;
  }
  const std::uint64_t whole = (b - x) / l.run;  // whole runs
  add(x, whole, l.run);
  x += whole * l.run;
  add(x, 1, b - x);  // the partial last run
  return out;
}

/// Pack or unpack elements [a, b) of every block in host memory (block_piece_copies).
template <class T>
  requires std::is_trivially_copyable_v<T>
void copy_block_pieces(const block_layout& l, std::uint64_t a, std::uint64_t b, bool pack, const T* src, T* dst) {
  const piece_copies pc = block_piece_copies(l, a, b, pack);
  for (int i = 0; i < pc.count; ++i) detail::host_strided_copy(pc.copy[i], src, dst);
}

/// A sub-box of a row-major tile: `size[d]` indices from `start[d]` along each dimension.
/// An exchange (redist/exchange.hpp) moves one region per pair of ranks.
struct tile_region {
  std::array<std::uint64_t, max_dims> start{}, size{};
  [[nodiscard]] std::uint64_t elements(int rank) const {
    std::uint64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= size[static_cast<std::size_t>(d)];
    return n;
  }
};

namespace detail {
inline constexpr std::uint64_t no_run = UINT64_MAX;

/// The row-major offset (in elements) of region r of a tile of extents `ext` when r's
/// elements are one contiguous run of the tile (every dimension after the first that r
/// spans more than one index of is whole), else no_run (also for an empty region).
inline std::uint64_t run_offset(std::span<const std::uint64_t> ext, const tile_region& r) {
  const std::size_t R = ext.size();
  std::size_t d0 = 0;
  for (std::size_t d = 0; d < R; ++d)
    if (r.size[d] == 0) return no_run;
  while (d0 < R && r.size[d0] == 1) ++d0;
  for (std::size_t d = d0 + 1; d < R; ++d)
    if (r.start[d] != 0 || r.size[d] != ext[d]) return no_run;
  std::uint64_t at = 0;
  for (std::size_t d = 0; d < R; ++d) at = at * ext[d] + r.start[d];
  return at;
}
}  // namespace detail

/// The elements [a, b) (row-major order) of a tile of extents `ext` as at most 2R - 1
/// regions, in order: emit(region, first), `first` the row-major index of the region's
/// first element. Every region's elements are contiguous in that order, so a region is
/// also the row-major sub-box of a packed piece (fused steps move their blocks in pieces).
template <class F>
void for_range_regions(std::span<const std::uint64_t> ext, std::uint64_t a, std::uint64_t b, F&& emit) {
  const int R = static_cast<int>(ext.size());
  if (a >= b) return;
  tile_region r;
  if (R == 0) {
    emit(r, std::uint64_t{0});
    return;
  }
  std::array<std::uint64_t, max_dims + 1> inner{};  // inner[d]: elements of one index of dimension d - 1
  inner[static_cast<std::size_t>(R)] = 1;
  for (int d = R - 1; d >= 0; --d)
    inner[static_cast<std::size_t>(d)] = inner[static_cast<std::size_t>(d + 1)] * ext[static_cast<std::size_t>(d)];
  // [lo, hi) within the sub-array of dimensions d.. at offset `base` (its prefix fixed in r).
  auto rec = [&](auto&& self, int d, std::uint64_t base, std::uint64_t lo, std::uint64_t hi) -> void {
    const auto k = static_cast<std::size_t>(d);
    const std::uint64_t in = inner[k + 1];
    auto whole = [&](std::uint64_t i0, std::uint64_t n) {  // indices i0..i0+n of d, the rest whole
      tile_region x = r;
      x.start[k] = i0;
      x.size[k] = n;
      for (int e = d + 1; e < R; ++e) {
        x.start[static_cast<std::size_t>(e)] = 0;
        x.size[static_cast<std::size_t>(e)] = ext[static_cast<std::size_t>(e)];
      }
      emit(x, base + i0 * in);
    };
    std::uint64_t i0 = lo / in;
    const std::uint64_t i1 = hi / in;  // whole indices end here
    if (i0 == (hi - 1) / in && (lo % in != 0 || hi % in != 0)) {  // inside one index of d
      r.start[k] = i0;
      r.size[k] = 1;
      self(self, d + 1, base + i0 * in, lo - i0 * in, hi - i0 * in);
      return;
    }
    if (lo % in != 0) {
      r.start[k] = i0;
      r.size[k] = 1;
      self(self, d + 1, base + i0 * in, lo % in, in);
      ++i0;
    }
    if (i1 > i0) whole(i0, i1 - i0);
    if (hi % in != 0) {
      r.start[k] = i1;
      r.size[k] = 1;
      self(self, d + 1, base + i1 * in, 0, hi % in);
    }
  };
  rec(rec, 0, 0, a, b);
}

/// Copy region `from` of a row-major tile of extents `se` to region `to` (the same sizes)
/// of one of extents `de`: calls emit(c) for each strided copy c describing it (one per
/// index of the dimensions outside the last two that are not contiguous on both sides).
/// Dimensions whose region spans the whole extent on both sides merge into longer runs.
template <class F>
void for_region_copies(std::span<const std::uint64_t> se, const tile_region& from, std::span<const std::uint64_t> de,
                       const tile_region& to, F&& emit) {
  const int R = static_cast<int>(se.size());
  if (R == 0 || de.size() != se.size()) {
    if (R == 0) emit(detail::strided_copy{1, 1, 1, 0, 1, 1, 0, 1, 1});
    return;
  }
  auto at = [](const auto& a, int d) { return a[static_cast<std::size_t>(d)]; };
  for (int d = 0; d < R; ++d)
    if (at(from.size, d) == 0) return;
  std::array<std::uint64_t, max_dims> ss{}, ds{};  // strides
  ss[static_cast<std::size_t>(R - 1)] = ds[static_cast<std::size_t>(R - 1)] = 1;
  for (int d = R - 1; d > 0; --d) {
    ss[static_cast<std::size_t>(d - 1)] = at(ss, d) * at(se, d);
    ds[static_cast<std::size_t>(d - 1)] = at(ds, d) * at(de, d);
  }
  int j = R - 1;  // the run covers dimensions j..R-1
  std::uint64_t width = at(from.size, j);
  while (j > 0 && at(from.size, j) == at(se, j) && at(from.size, j) == at(de, j)) {
    --j;
    width *= at(from.size, j);
  }
  // i (count) runs along dimension j - 1, j (rows) along j - 2: host_strided_copy walks
  // rows outermost, so both tiles are read and written in row-major order.
  detail::strided_copy c;
  c.width = width;
  c.count = j >= 1 ? at(from.size, j - 1) : 1;
  c.src_step = j >= 1 ? at(ss, j - 1) : width;
  c.dst_step = j >= 1 ? at(ds, j - 1) : width;
  c.rows = j >= 2 ? at(from.size, j - 2) : 1;
  c.src_pitch = j >= 2 ? at(ss, j - 2) : c.count * c.src_step;
  c.dst_pitch = j >= 2 ? at(ds, j - 2) : c.count * c.dst_step;
  std::uint64_t base_s = 0, base_d = 0;
  for (int d = 0; d < R; ++d) {
    base_s += at(from.start, d) * at(ss, d);
    base_d += at(to.start, d) * at(ds, d);
  }
  // The outer dimensions 0..j-3, row-major.
  const int outer = j - 2;
  std::array<std::uint64_t, max_dims> idx{};
  while (true) {
    std::uint64_t os = base_s, od = base_d;
    for (int d = 0; d < outer; ++d) {
      os += at(idx, d) * at(ss, d);
      od += at(idx, d) * at(ds, d);
    }
    detail::strided_copy x = c;
    x.src = os;
    x.dst = od;
    emit(x.merged());
    int d = outer - 1;
    for (; d >= 0; --d) {
      if (++idx[static_cast<std::size_t>(d)] < at(from.size, d)) break;
      idx[static_cast<std::size_t>(d)] = 0;
    }
    if (d < 0) break;
  }
}

namespace detail {
/// Copy block sk of `sl` in src to block dk of `dl` in dst (blocks of the same size), on the
/// host: walks both blocks' runs together, one std::memcpy per overlap of a source run and
/// a destination run. The host backend moves blocks straight between tiles with it.
template <class T>
void host_block_copy(const T* src, const block_layout& sl, std::uint64_t sk, T* dst, const block_layout& dl,
                     std::uint64_t dk) {
  const std::uint64_t total = sl.block_elements();
  if (total != dl.block_elements())
    throw redist_error(errc::runtime, "pack: blocks of " + std::to_string(total) + " and " +
                                          std::to_string(dl.block_elements()) + " elements");
  const T* s = src + sk * sl.step;  // start of the source run
  T* d = dst + dk * dl.step;        // start of the destination run
  std::uint64_t so = 0, doff = 0;   // offsets within the current runs
  for (std::uint64_t done = 0; done < total;) {
    const std::uint64_t w = std::min(sl.run - so, dl.run - doff);
    copy_run(d + doff, s + so, w);
    done += w;
    if ((so += w) == sl.run) {
      s += sl.row;
      so = 0;
    }
    if ((doff += w) == dl.run) {
      d += dl.row;
      doff = 0;
    }
  }
}
}  // namespace detail

}  // namespace redist
