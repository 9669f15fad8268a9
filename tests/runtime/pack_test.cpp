// Tests of runtime/pack.hpp: every element of every chunk against the index arithmetic
// of the postconditions, as properties over random tiles (rapidcheck).
#include "redist/runtime/pack.hpp"

#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace {

struct case_t {
  std::vector<std::uint64_t> ext;  // tile extents
  int d = 0;
  std::uint64_t n = 1;
};

// A random tile shape with a dimension d divisible by n.
case_t draw() {
  case_t c;
  const int rank = *rc::gen::inRange(1, 6);
  for (int k = 0; k < rank; ++k) c.ext.push_back(*rc::gen::inRange<std::uint64_t>(1, 5));
  c.d = *rc::gen::inRange(0, rank);
  c.n = *rc::gen::inRange<std::uint64_t>(1, 5);
  c.ext[static_cast<std::size_t>(c.d)] *= c.n;
  return c;
}

std::uint64_t product(const std::vector<std::uint64_t>& e) {
  return std::accumulate(e.begin(), e.end(), std::uint64_t{1}, std::multiplies<>());
}

// Row-major linear index of a multi-index.
std::uint64_t linear(const std::vector<std::uint64_t>& ext, const std::vector<std::uint64_t>& idx) {
  std::uint64_t l = 0;
  for (std::size_t k = 0; k < ext.size(); ++k) l = l * ext[k] + idx[k];
  return l;
}

// Visit every multi-index of extents ext.
template <class F>
void for_each_index(const std::vector<std::uint64_t>& ext, F f) {
  std::vector<std::uint64_t> idx(ext.size(), 0);
  for (std::uint64_t i = 0, n = product(ext); i < n; ++i) {
    f(idx);
    for (std::size_t k = ext.size(); k-- > 0;) {
      if (++idx[k] < ext[k]) break;
      idx[k] = 0;
    }
  }
}

std::vector<int> iota_tile(std::uint64_t n) {
  std::vector<int> t(n);
  std::iota(t.begin(), t.end(), 1000);
  return t;
}

}  // namespace

TEST_CASE("split_copy takes chunk m along d, element by element", "[pack]") {
  rc::prop("chunk[idx] == tile[idx + m * chunk extent along d]", [] {
    const case_t c = draw();
    const std::vector<int> tile = iota_tile(product(c.ext));
    std::vector<std::uint64_t> cext = c.ext;
    cext[static_cast<std::size_t>(c.d)] /= c.n;
    for (std::uint64_t m = 0; m < c.n; ++m) {
      std::vector<int> chunk(tile.size() / c.n, -1);
      redist::split_copy<int>(tile, c.ext, c.d, c.n, m, chunk);
      for_each_index(cext, [&](const std::vector<std::uint64_t>& idx) {
        std::vector<std::uint64_t> g = idx;
        g[static_cast<std::size_t>(c.d)] += m * cext[static_cast<std::size_t>(c.d)];
        RC_ASSERT(chunk[linear(cext, idx)] == tile[linear(c.ext, g)]);
      });
    }
  });
}

TEST_CASE("concat_copy puts every chunk back in place", "[pack]") {
  rc::prop("concat_copy of the split_copy chunks rebuilds the tile", [] {
    const case_t c = draw();
    const std::vector<int> tile = iota_tile(product(c.ext));
    std::vector<std::uint64_t> cext = c.ext;
    cext[static_cast<std::size_t>(c.d)] /= c.n;
    std::vector<int> back(tile.size(), -1);
    for (std::uint64_t m = 0; m < c.n; ++m) {
      std::vector<int> chunk(tile.size() / c.n);
      redist::split_copy<int>(tile, c.ext, c.d, c.n, m, chunk);
      redist::concat_copy<int>(chunk, cext, c.d, c.n, m, back);
    }
    RC_ASSERT(back == tile);
  });
}

TEST_CASE("split_all and concat_all are split_copy / concat_copy for every chunk", "[pack]") {
  rc::prop("split_all lays chunks back to back; concat_all inverts it", [] {
    const case_t c = draw();
    const std::vector<int> tile = iota_tile(product(c.ext));
    const std::uint64_t cs = tile.size() / c.n;
    std::vector<int> all(tile.size(), -1);
    redist::split_all<int>(tile, c.ext, c.d, c.n, all);
    for (std::uint64_t m = 0; m < c.n; ++m) {
      std::vector<int> chunk(cs);
      redist::split_copy<int>(tile, c.ext, c.d, c.n, m, chunk);
      RC_ASSERT(std::equal(chunk.begin(), chunk.end(), all.begin() + static_cast<std::ptrdiff_t>(m * cs)));
    }
    std::vector<std::uint64_t> cext = c.ext;
    cext[static_cast<std::size_t>(c.d)] /= c.n;
    std::vector<int> back(tile.size(), -1);
    redist::concat_all<int>(all, cext, c.d, c.n, back);
    RC_ASSERT(back == tile);
    // Contiguous splits (all extents before d equal 1) are the identity layout.
    if (redist::split_is_contiguous(c.ext, c.d)) RC_ASSERT(all == tile);
  });
}

TEST_CASE("split_copy on a 2x6 tile, by hand", "[pack]") {
  const std::vector<int> tile = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};
  const std::vector<std::uint64_t> ext = {2, 6};
  std::vector<int> chunk(4);
  redist::split_copy<int>(tile, ext, 1, 3, 1, chunk);
  CHECK(chunk == std::vector<int>{2, 3, 12, 13});
  std::vector<int> row(6);
  redist::split_copy<int>(tile, ext, 0, 2, 1, row);
  CHECK(row == std::vector<int>{10, 11, 12, 13, 14, 15});
  std::vector<int> all(12);
  redist::split_all<int>(tile, ext, 1, 3, all);
  CHECK(all == std::vector<int>{0, 1, 10, 11, 2, 3, 12, 13, 4, 5, 14, 15});
  CHECK_FALSE(redist::split_is_contiguous(ext, 1));
  CHECK(redist::split_is_contiguous(ext, 0));
}

TEST_CASE("pack rejects bad splits and buffer sizes", "[pack][errors]") {
  const std::vector<int> tile(12);
  const std::vector<std::uint64_t> ext = {2, 6};
  std::vector<int> chunk(3);
  CHECK_THROWS_WITH(redist::split_copy<int>(tile, ext, 1, 4, 0, chunk),
                    "pack: extent 6 of dimension 1 cannot be split into 4 chunks");
  CHECK_THROWS_WITH(redist::split_copy<int>(tile, ext, 2, 2, 0, chunk),
                    "pack: dimension 2 is out of range for a tile of rank 2");
  CHECK_THROWS_WITH(redist::split_copy<int>(tile, ext, 1, 2, 0, chunk),
                    "split_copy: the chunk holds 3 elements, expected 6");
  std::vector<int> small(11);
  CHECK_THROWS_WITH(redist::split_all<int>(small, ext, 1, 2, chunk), "split_all: the tile holds 11 elements, expected 12");
}

TEST_CASE("for_range_regions covers exactly the elements [a, b), in order, in at most 2R - 1 regions", "[pack]") {
  rc::prop("every range of every small tile", [] {
    const auto R = *rc::gen::inRange<std::size_t>(1, 5);
    const auto ext = *rc::gen::container<std::vector<std::uint64_t>>(R, rc::gen::inRange<std::uint64_t>(1, 5));
    std::uint64_t size = 1;
    for (std::uint64_t e : ext) size *= e;
    const auto a = *rc::gen::inRange<std::uint64_t>(0, size);
    const auto b = *rc::gen::inRange<std::uint64_t>(a + 1, size + 1);
    std::uint64_t next = a, regions = 0;
    redist::for_range_regions(std::span<const std::uint64_t>(ext), a, b,
                              [&](const redist::tile_region& r, std::uint64_t first) {
                                RC_ASSERT(first == next);
                                // the region's elements, row-major, are next, next + 1, ...
                                std::vector<std::uint64_t> idx(R, 0);
                                const std::uint64_t n = r.elements(static_cast<int>(R));
                                for (std::uint64_t k = 0; k < n; ++k) {
                                  std::uint64_t flat = 0;
                                  for (std::size_t d = 0; d < R; ++d) flat = flat * ext[d] + r.start[d] + idx[d];
                                  RC_ASSERT(flat == next + k);
                                  for (std::size_t d = R; d-- > 0;) {
                                    if (++idx[d] < r.size[d]) break;
                                    idx[d] = 0;
                                  }
                                }
                                next += n;
                                ++regions;
                              });
    RC_ASSERT(next == b);
    RC_ASSERT(regions <= 2 * R - 1);
  });
}

TEST_CASE("run_offset: a region's offset exactly when its elements are one run of the tile", "[pack]") {
  rc::prop("every region of every small tile", [] {
    const auto R = *rc::gen::inRange<std::size_t>(1, 5);
    const auto ext = *rc::gen::container<std::vector<std::uint64_t>>(R, rc::gen::inRange<std::uint64_t>(1, 4));
    redist::tile_region r;
    for (std::size_t d = 0; d < R; ++d) {
      r.start[d] = *rc::gen::inRange<std::uint64_t>(0, ext[d]);
      r.size[d] = *rc::gen::inRange<std::uint64_t>(0, ext[d] - r.start[d] + 1);
    }
    // The region's elements, row-major, as flat indices of the tile.
    std::vector<std::uint64_t> flat;
    const std::uint64_t n = r.elements(static_cast<int>(R));
    std::vector<std::uint64_t> idx(R, 0);
    for (std::uint64_t k = 0; k < n; ++k) {
      std::uint64_t f = 0;
      for (std::size_t d = 0; d < R; ++d) f = f * ext[d] + r.start[d] + idx[d];
      flat.push_back(f);
      for (std::size_t d = R; d-- > 0;) {
        if (++idx[d] < r.size[d]) break;
        idx[d] = 0;
      }
    }
    bool run = n > 0;
    for (std::size_t k = 1; k < flat.size(); ++k) run = run && flat[k] == flat[k - 1] + 1;
    const std::uint64_t at = redist::detail::run_offset(std::span<const std::uint64_t>(ext), r);
    RC_ASSERT(at == (run ? flat[0] : redist::detail::no_run));
  });
}

TEST_CASE("block_piece_copies moves elements [a, b) of every block, only the first `keep` of each run", "[pack]") {
  // Unpacking n pieces of b - a elements (piece k at k (b - a)) into blocks of `outer` runs
  // of `run` elements (run j of block k at k step + j row): element i of block k (a <= i < b)
  // lands at k step + (i / run) row + i % run exactly when i % run < keep (a padded block
  // clipped at a tile's end, as the executor's clipped all-gathers unpack); packing reads
  // the same places. Nothing else is written.
  rc::prop("every element of every piece, clipped to keep", [] {
    redist::block_layout l;
    l.n = *rc::gen::inRange<std::uint64_t>(1, 4);
    l.outer = *rc::gen::inRange<std::uint64_t>(1, 4);
    l.run = *rc::gen::inRange<std::uint64_t>(1, 6);
    l.row = l.run + *rc::gen::inRange<std::uint64_t>(0, 3);
    l.step = l.outer * l.row;
    const std::uint64_t blk = l.block_elements(), keep = *rc::gen::inRange<std::uint64_t>(0, l.run + 1);
    const std::uint64_t a = *rc::gen::inRange<std::uint64_t>(0, blk + 1), b = *rc::gen::inRange<std::uint64_t>(a, blk + 1);
    const std::vector<int> packed = iota_tile(l.n * (b - a));
    std::vector<int> tile(l.n * l.step, -1), want(l.n * l.step, -1);
    for (std::uint64_t k = 0; k < l.n; ++k)
      for (std::uint64_t i = a; i < b; ++i)
        if (i % l.run < keep) want[k * l.step + i / l.run * l.row + i % l.run] = packed[k * (b - a) + i - a];
    const redist::piece_copies pc = redist::block_piece_copies(l, a, b, false, keep);
    for (int c = 0; c < pc.count; ++c) redist::detail::host_strided_copy(pc.copy[c], packed.data(), tile.data());
    RC_ASSERT(tile == want);
    std::vector<int> back(packed.size(), -1), back_want(packed.size(), -1);  // and packing reads the same
    for (std::uint64_t k = 0; k < l.n; ++k)
      for (std::uint64_t i = a; i < b; ++i)
        if (i % l.run < keep) back_want[k * (b - a) + i - a] = packed[k * (b - a) + i - a];
    const redist::piece_copies pk = redist::block_piece_copies(l, a, b, true, keep);
    for (int c = 0; c < pk.count; ++c) redist::detail::host_strided_copy(pk.copy[c], tile.data(), back.data());
    RC_ASSERT(back == back_want);
  });
}
