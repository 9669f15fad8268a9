// Tests of core/offsets.hpp: base offset maps (Fig. 7a) under the default device map,
// against an independent transcription of Fig. 7a, and Lemmas 4.1 / 4.2.
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "support/random_problems.hpp"
#include "support/strong_search.hpp"

using namespace redist;

namespace {

constexpr device_mesh m22 = parse_mesh_text("{x: 2, y: 2}").value;
constexpr dist_type t22 = parse_type_text(m22, "[{x, y}8]").value;
// D[[2{x, y}8]](i) = 2 i_x + 4 i_y; rank = 2 i_x + i_y.
static_assert(base_offset(m22, t22.dims[0], 0) == 0);
static_assert(base_offset(m22, t22.dims[0], 1) == 4);  // i_x = 0, i_y = 1
static_assert(base_offset(m22, t22.dims[0], 2) == 2);  // i_x = 1, i_y = 0
static_assert(base_offset(m22, t22.dims[0], 3) == 6);
static_assert(block_index(m22, t22.dims[0], 3) == 3);

/// Coordinate of sub-axis k at this rank, computed from the declared axes only:
/// row-major axis coordinates, then x:(pre)size's digit of the axis coordinate.
std::uint64_t sub_coord(const device_mesh& m, int k, std::uint64_t rank) {
  const int a = m.sub[k].axis;
  std::uint64_t after = 1;
  for (int b = a + 1; b < m.naxes; ++b) after *= m.sizes[b];
  const std::uint64_t ia = (rank / after) % m.sizes[a];
  const std::uint64_t minor = m.sizes[a] / (m.sub[k].pre * m.sub[k].size);  // sizes of the more-minor sub-axes
  return (ia / minor) % m.sub[k].size;
}

/// Fig. 7a: D[[c{}c]](i) = 0, D[[c{x, xs}n]](i) = c * i_x + D[[(c * k_x){xs}n]](i).
std::uint64_t fig7a(const device_mesh& m, std::uint64_t c, const std::uint8_t* xs, int n, std::uint64_t rank) {
  if (n == 0) return 0;
  return c * sub_coord(m, xs[0], rank) + fig7a(m, c * m.sub[xs[0]].size, xs + 1, n - 1, rank);
}

/// Lemma 4.2 (with 4.1 per dimension): the base offsets of a well-formed type are all
/// the tile-multiples below the global shape, each taken by |devices| / #tiles devices.
void check_lemma_4_2(const device_mesh& m, const dist_type& t) {
  INFO(mesh_text(m).str() << " " << type_text(m, t).str());
  std::map<std::vector<std::uint64_t>, std::uint64_t> count;
  std::uint64_t tiles = 1;
  for (int d = 0; d < t.rank; ++d) tiles *= parts(m, t.dims[d]);
  std::uint64_t off[max_dims]{};
  for (std::uint64_t r = 0; r < m.devices; ++r) {
    base_offsets(m, t, r, off);
    for (int d = 0; d < t.rank; ++d) {
      const dim& dm = t.dims[d];
      REQUIRE(off[d] % tile(m, dm) == 0);
      REQUIRE(off[d] < dm.global);
      REQUIRE(off[d] == fig7a(m, tile(m, dm), dm.axes, dm.n, r));
      REQUIRE(block_index(m, dm, r) * tile(m, dm) == off[d]);
    }
    ++count[std::vector<std::uint64_t>(off, off + t.rank)];
  }
  REQUIRE(count.size() == tiles);  // every tile is held (the offsets are a grid of tiles)
  for (const auto& [o, n] : count) REQUIRE(n == m.devices / tiles);
}

}  // namespace

TEST_CASE("base offsets on paper examples", "[offsets]") {
  SECTION("Fig. 1 style: [64{xdev}256, 1024] on {xdev: 4, ydev: 8}") {
    const device_mesh m = parse_mesh("{xdev: 4, ydev: 8}");
    const dist_type t = parse_type(m, "[64{xdev}256, 1024]");
    for (std::uint64_t r = 0; r < m.devices; ++r) {
      CHECK(base_offset(m, t.dims[0], r) == 64 * (r / 8));
      CHECK(base_offset(m, t.dims[1], r) == 0);
    }
  }
  SECTION("Fig. 4 left: [32{xdev}128] vs [32{ydev}128] give every tile to 4 devices") {
    const device_mesh m = parse_mesh("{xdev: 4, ydev: 4}");
    const dist_type a = parse_type(m, "[32{xdev}128]"), b = parse_type(m, "[32{ydev}128]");
    for (std::uint64_t r = 0; r < 16; ++r) {
      CHECK(base_offset(m, a.dims[0], r) == 32 * (r / 4));
      CHECK(base_offset(m, b.dims[0], r) == 32 * (r % 4));
    }
  }
  SECTION("minor-to-major: [{y, x}8] on {x: 2, y: 2} is 2 i_y + 4 i_x") {
    const dist_type t = parse_type(m22, "[{y, x}8]");
    const std::vector<std::uint64_t> want = {0, 2, 4, 6};  // rank = 2 i_x + i_y
    for (std::uint64_t r = 0; r < 4; ++r) CHECK(base_offset(m22, t.dims[0], r) == want[r]);
  }
  SECTION("sub-axes: [{x:(2)2}8] and [{x:(1)2}8] on {x: 4}") {
    const device_mesh m = parse_mesh("{x: 4}");
    const dist_type minor = parse_type(m, "[{x:(2)2}8]"), major = parse_type(m, "[{x:(1)2}8]");
    const std::vector<std::uint64_t> wmin = {0, 4, 0, 4}, wmaj = {0, 0, 4, 4};
    for (std::uint64_t r = 0; r < 4; ++r) {
      CHECK(base_offset(m, minor.dims[0], r) == wmin[r]);
      CHECK(base_offset(m, major.dims[0], r) == wmaj[r]);
    }
  }
}

TEST_CASE("Lemmas 4.1 and 4.2 on every type of small meshes", "[offsets][lemma]") {
  struct mc {
    const char* mesh;
    const char* global;
  };
  std::size_t types = 0;
  for (const mc& c :
       {mc{"{x: 4, y: 6}", "[12, 24]"}, mc{"{x: 12}", "[12, 6, 4]"}, mc{"{a: 2, b: 2, c: 2}", "[8, 4, 2]"},
        mc{"{x: 2, y: 3, z: 2}", "[6, 4, 6]"}, mc{"{x: 9, y: 2}", "[9, 6]"}}) {
    const device_mesh m = parse_mesh(c.mesh);
    for (const dist_type& t : testing::enumerate_types(m, parse_type(m, c.global))) {
      check_lemma_4_2(m, t);
      ++types;
    }
  }
  CHECK(types > 400);
}

TEST_CASE("Lemma 4.2 on random problems up to 64 devices", "[offsets][lemma]") {
  std::vector<testing::workload> ws = testing::mixed_workloads();
  ws.push_back(testing::paper_workload());
  std::uint64_t seed = 400;
  std::size_t n = 0;
  for (const auto& w : ws) {
    for (const auto& p : testing::random_problems(w, 30, seed++)) {
      const device_mesh m = parse_mesh(p.mesh);
      check_lemma_4_2(m, parse_type(m, p.from));
      check_lemma_4_2(m, parse_type(m, p.to));
      n += 2;
    }
  }
  CHECK(n == 480);
}

TEST_CASE("rank_of inverts the default device map", "[offsets][devices]") {
  const device_mesh m = parse_mesh("{x: 3, y: 4, z: 2}");
  std::uint64_t r = 0;
  for (std::uint64_t i = 0; i < 3; ++i)
    for (std::uint64_t j = 0; j < 4; ++j)
      for (std::uint64_t k = 0; k < 2; ++k, ++r) {
        const std::uint64_t c[] = {i, j, k};
        CHECK(rank_of(m, c) == r);  // row-major, last axis fastest
        CHECK(m.axis_coord(0, r) == i);
        CHECK(m.axis_coord(1, r) == j);
        CHECK(m.axis_coord(2, r) == k);
      }
  const std::uint64_t perm[] = {3, 0, 2, 1};
  CHECK(apply_device_map(perm, 0) == 3);
  CHECK(apply_device_map(perm, 3) == 1);
}

TEST_CASE("sum_index: the partial a rank holds", "[offsets][sums]") {
  const device_mesh m = parse_mesh("{x: 4, y: 6, z: 2}");
  // sum{z, x:(2)2}: ids 1 (x:(2)2) and 4 (z), smallest id fastest: i = c_1 + 2 c_4.
  const dist_type t = parse_type(m, "[12] sum{z, x:(2)2}");
  std::vector<std::uint64_t> count(4, 0);
  for (std::uint64_t r = 0; r < m.devices; ++r) {
    const std::uint64_t x = m.axis_coord(0, r), z = m.axis_coord(2, r);
    CHECK(sum_index(m, t, r) == x % 2 + 2 * z);
    ++count[sum_index(m, t, r)];
  }
  for (std::uint64_t c : count) CHECK(c == m.devices / 4);  // every partial held equally often
  CHECK(sum_index(m, parse_type(m, "[12]"), 5) == 0);
}

TEST_CASE("movement_lower_bound: what a rank must receive at least", "[offsets][bound]") {
  const device_mesh m = parse_mesh("{a: 2, b: 2}");
  const auto bound = [&](const char* a, const char* b) { return movement_lower_bound(m, parse_type(m, a), parse_type(m, b)); };
  CHECK(bound("[{a}8, 8]", "[8, {a}8]") == 32 - 16);     // keeps the quarter both tiles share
  CHECK(bound("[{a}8, 8]", "[8, 8]") == 32);             // gathers the other half
  CHECK(bound("[{a}8, 8]", "[{a}8, {b}8]") == 0);        // slicing needs nothing
  CHECK(bound("[{a}8, {b}8]", "[{b}8, {a}8]") == 16);    // ranks 1 and 2 need a whole new tile
  CHECK(bound("[8, {b}8]", "[{a, b}8, 8]") == 8);        // a quarter of the rows of the other half
  CHECK(bound("[{a, b}8, 8]", "[{a, b}8, 8]") == 0);
  static_assert(movement_lower_bound(m22, t22, t22) == 0);
}

// Issue 27: the last tile of a dimension near 2^64 ended at (2^64 - 2^59) + 2^59, which
// wrapped to 0. Every range must satisfy lo <= hi <= global, with only the last non-empty
// tile short; offsets saturate at the global size.
TEST_CASE("ranges near 2^64 saturate at the global size", "[offsets][overflow]") {
  constexpr std::uint64_t top = UINT64_MAX;  // 2^64 - 1, the largest size the reference allows
  constexpr device_mesh m48 = parse_mesh_text("{x: 4, y: 8}").value;
  constexpr dist_type t = parse_type_text(m48, "[{y,x}18446744073709551615]").value;
  constexpr std::uint64_t t59 = std::uint64_t{1} << 59;
  static_assert(tile(m48, t.dims[0]) == t59);
  static_assert(range_lo(m48, t.dims[0], 31) == top - t59 + 1);  // 2^64 - 2^59
  static_assert(range_hi(m48, t.dims[0], 31) == top);             // was 0
  static_assert(base_offset(m48, t.dims[0], 31) == top - t59 + 1);
  static_assert(movement_lower_bound(m48, t, t) == 0);
  std::uint64_t covered = 0;
  for (std::uint64_t r = 0; r < m48.devices; ++r) {
    const std::uint64_t lo = range_lo(m48, t.dims[0], r), hi = range_hi(m48, t.dims[0], r);
    INFO("rank " << r << ": [" << lo << ", " << hi << ")");
    CHECK(lo <= hi);
    CHECK(hi <= top);
    CHECK(hi - lo == (block_index(m48, t.dims[0], r) == 31 ? t59 - 1 : t59));  // only the last is short
    covered += hi - lo;
  }
  CHECK(covered == top);  // the tiles cover the dimension exactly once

  // Empty tiles past the end: 2^64 - 1 split into 2^33 * 3 tiles of ceil(..) each; the
  // blocks beyond the data start and end at the global size instead of wrapping.
  const device_mesh big = parse_mesh("{x: 3, y: 8589934592}");
  const dist_type e = parse_type(big, "[{y,x}18446744073709551615]");
  const std::uint64_t k = parts(big, e.dims[0]), c = tile(big, e.dims[0]);
  CHECK(k == 25769803776ULL);
  CHECK(c == 715827883ULL);  // ceil((2^64 - 1) / (3 * 2^33))
  const std::uint64_t last = (top - 1) / c;  // the block of the last element
  for (std::uint64_t r : {std::uint64_t{0}, last, last + 1, big.devices - 1}) {
    const std::uint64_t b = block_index(big, e.dims[0], r);
    const std::uint64_t lo = range_lo(big, e.dims[0], r), hi = range_hi(big, e.dims[0], r);
    INFO("rank " << r << " block " << b << ": [" << lo << ", " << hi << ")");
    CHECK(lo <= hi);
    CHECK(hi <= top);
    if (b < last) CHECK(hi - lo == c);
    if (b == last) CHECK((hi == top && lo < hi));
    if (b > last) CHECK((lo == top && hi == top));
  }
  CHECK(clip_mul(UINT64_MAX, 2, 10) == 10);
  CHECK(clip_add(UINT64_MAX - 1, 5, UINT64_MAX) == UINT64_MAX);
  CHECK(clip_add(3, 4, 10) == 7);
  CHECK(clip_mul(2, 3, 10) == 6);
}
