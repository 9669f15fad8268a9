// Tests of runtime/darray.hpp and runtime/verify.hpp: tiles, their global indices and
// the errors of bad buffers.
#include "redist/runtime/darray.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <vector>

#include "redist/runtime/verify.hpp"

using redist::darray;

TEST_CASE("a darray's tile has the type's local shape and base offsets", "[darray]") {
  const auto m = redist::parse_mesh("{x: 4, y: 6}");
  const auto t = redist::parse_type(m, "[3{x}12, 2{y}12]");
  darray<float> a(m, t, 13);  // x = 2, y = 1
  CHECK(a.size() == 6);
  CHECK(a.local_shape() == redist::extents{2, {3, 2}});
  CHECK(a.global_extent(0) == 12);
  CHECK(a.offset(0) == 6);
  CHECK(a.offset(1) == 2);
  CHECK(a.owns_memory());
  for (float v : a.span()) CHECK(v == 0.0f);
}

TEST_CASE("for_each_global visits the tile's global indices in row-major order", "[darray]") {
  const auto m = redist::parse_mesh("{x: 2, y: 3}");
  const auto t = redist::parse_type(m, "[{y}6, 4{}4, 2{x}4]");
  darray<int> a(m, t, 4);  // x = 1, y = 1: rows 2..3, all of dim 1, columns 2..3
  std::vector<std::uint64_t> seen;
  for_each_global(a, [&](std::uint64_t g, int&) { seen.push_back(g); });
  std::vector<std::uint64_t> want;
  for (std::uint64_t i = 2; i < 4; ++i)
    for (std::uint64_t j = 0; j < 4; ++j)
      for (std::uint64_t k = 2; k < 4; ++k) want.push_back((i * 4 + j) * 4 + k);
  CHECK(seen == want);
}

TEST_CASE("the tiles of all devices cover the global array, replicated as the type says", "[darray]") {
  const auto m = redist::parse_mesh("{x: 3, y: 4, z: 5}");
  for (const char* s : {"[{x}6, {z, y}20]", "[{z}10, 8, 3]", "[{y,x}12, 5]"}) {
    const auto t = redist::parse_type(m, s);
    std::uint64_t parts = 1;
    for (int d = 0; d < t.rank; ++d) parts *= redist::parts(m, t.dims[d]);
    std::map<std::uint64_t, std::uint64_t> count;
    for (redist::rank_t r = 0; r < m.devices; ++r) {
      darray<double> a(m, t, r);
      redist::fill_global_index(a);
      CHECK(redist::check_global_index(a).ok());
      for_each_global(a, [&](std::uint64_t g, double v) {
        ++count[g];
        CHECK(v == static_cast<double>(g));
      });
    }
    INFO(s);
    CHECK(count.size() == redist::global_size(t));
    for (auto& [g, c] : count) CHECK(c == m.devices / parts);
  }
}

TEST_CASE("borrowed and owned storage", "[darray]") {
  const auto m = redist::parse_mesh("{x: 2}");
  const auto t = redist::parse_type(m, "[2{x}4, 3]");
  std::vector<std::int32_t> mem(6, 7);
  darray<std::int32_t> b(m, t, 1, std::span<std::int32_t>(mem));
  CHECK_FALSE(b.owns_memory());
  CHECK(b.data() == mem.data());
  redist::fill_global_index(b);
  CHECK(mem == std::vector<std::int32_t>{6, 7, 8, 9, 10, 11});
  darray<std::int32_t> c = b;  // copies the view
  CHECK(c.data() == mem.data());

  darray<std::int32_t> o(m, t, 0, std::vector<std::int32_t>{1, 2, 3, 4, 5, 6});
  CHECK(o.owns_memory());
  darray<std::int32_t> o2 = o;  // copies the data
  CHECK(o2.data() != o.data());
  CHECK(std::vector<std::int32_t>(o2.span().begin(), o2.span().end()) == std::vector<std::int32_t>{1, 2, 3, 4, 5, 6});
  const std::int32_t* p = o.data();
  darray<std::int32_t> o3 = std::move(o);  // moves the buffer
  CHECK(o3.data() == p);
  CHECK(o.size() == 0);  // NOLINT(bugprone-use-after-move): a moved-from tile is empty
}

TEST_CASE("check_global_index finds a wrong element", "[darray][verify]") {
  const auto m = redist::parse_mesh("{x: 2}");
  const auto t = redist::parse_type(m, "[{x}8]");
  darray<std::uint16_t> a(m, t, 1);
  redist::fill_global_index(a);
  a.data()[2] = 99;
  const redist::tile_check c = redist::check_global_index(a);
  CHECK(c.checked == 4);
  CHECK(c.mismatches == 1);
  CHECK(c.first_bad == 6);
  CHECK(redist::index_value<float>((1u << 24) + 5) == 5.0f);
  CHECK(redist::index_value<std::uint8_t>(258) == 2);
}

TEST_CASE("bad tiles are rejected with a clear message", "[darray][errors]") {
  const auto m = redist::parse_mesh("{x: 4}");
  const auto t = redist::parse_type(m, "[{x}16, 8]");
  std::vector<float> mem(31);
  CHECK_THROWS_WITH(darray<float>(m, t, 0, std::span<float>(mem)),
                    "wrong buffer size: a tile of shape [4, 8] needs 32 elements, the buffer holds 31");
  CHECK_THROWS_WITH(darray<float>(m, t, 0, std::vector<float>(33)),
                    "wrong buffer size: a tile of shape [4, 8] needs 32 elements, the buffer holds 33");
  CHECK_THROWS_WITH(darray<float>(m, t, 4), "device 4 is not in the mesh {x: 4} of 4 devices");
}
