// Tests of core/mesh.hpp: parsing and printing meshes, errors with their columns, the
// prime decomposition into sub-axes and the default (row-major) device map.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"

using namespace redist;

namespace {

// ---- compile-time checks: the parser and printer are constexpr -----------------------
constexpr device_mesh m48 = parse_mesh_text("{x: 4, y: 8}").value;
static_assert(m48.naxes == 2 && m48.devices == 32 && m48.nsub == 5);
static_assert(m48.sub[0].size == 2 && m48.sub[0].pre == 1 && m48.sub[0].stride == 16);
static_assert(m48.sub[4].size == 2 && m48.sub[4].pre == 4 && m48.sub[4].stride == 1);
static_assert(mesh_text(m48).view() == "{x: 4, y: 8}");
static_assert(parse_mesh_text("{\"x\": 4, \"y\": 8}").value == m48);
static_assert(parse_mesh_text("{x: 4, x: 2}").err.code == errc::repeated_axis);
static_assert(parse_mesh_text("{x: 4, x: 2}").err.column == 7);
static_assert(subaxis_text(parse_mesh_text("{x: 12}").value, 2).view() == "x:(4)3");
static_assert(m48.axis_coord(1, 13) == 5 && m48.axis_coord(0, 13) == 1);

std::string sub_text(const device_mesh& m, int k) { return subaxis_text(m, k).str(); }

struct bad_mesh {
  std::string text;
  errc code;
  int column;
  std::string message;
};

}  // namespace

TEST_CASE("meshes parse in the paper syntax and print back", "[mesh]") {
  const device_mesh m = parse_mesh("{x: 4, y: 8}");
  CHECK(m.naxes == 2);
  CHECK(std::string(m.names[0].view()) == "x");
  CHECK(std::string(m.names[1].view()) == "y");
  CHECK(m.sizes[0] == 4);
  CHECK(m.sizes[1] == 8);
  CHECK(m.devices == 32);
  CHECK(m.find("x") == 0);
  CHECK(m.find("y") == 1);
  CHECK(m.find("z") == -1);
  CHECK(mesh_text(m).str() == "{x: 4, y: 8}");
  CHECK(parse_mesh(mesh_text(m).view()) == m);

  SECTION("declared order is kept") {
    const device_mesh r = parse_mesh("{y: 8, x: 4}");
    CHECK(mesh_text(r).str() == "{y: 8, x: 4}");
    CHECK_FALSE(r == m);
  }
  SECTION("whitespace is free") {
    CHECK(parse_mesh("  {\tx :4 ,\n y: 8 }  ") == m);
    CHECK(parse_mesh("{x:4,y:8}") == m);
  }
  SECTION("the JSON form is the same grammar") {
    CHECK(parse_mesh("{\"x\": 4, \"y\": 8}") == m);
    CHECK(parse_mesh("{'x': 4, 'y': 8}") == m);
  }
  SECTION("names that are not identifiers are quoted when printed") {
    const device_mesh q = parse_mesh("{\"data parallel\": 2, 'x-1': 3, _ok9: 5}");
    CHECK(std::string(q.names[0].view()) == "data parallel");
    CHECK(std::string(q.names[1].view()) == "x-1");
    CHECK(mesh_text(q).str() == "{\"data parallel\": 2, \"x-1\": 3, _ok9: 5}");
    CHECK(parse_mesh(mesh_text(q).view()) == q);
    CHECK(q.devices == 30);
  }
  SECTION("the empty mesh has one device, axes of size 1 have no sub-axes") {
    const device_mesh e = parse_mesh("{}");
    CHECK(e.naxes == 0);
    CHECK(e.devices == 1);
    CHECK(e.nsub == 0);
    CHECK(mesh_text(e).str() == "{}");
    const device_mesh one = parse_mesh("{x: 1, y: 3}");
    CHECK(one.devices == 3);
    CHECK(one.sub_count[0] == 0);
    CHECK(one.sub_count[1] == 1);
    CHECK(one.nsub == 1);
    CHECK(sub_text(one, 0) == "y");
  }
  SECTION("16 axes fit") {
    std::string s = "{";
    for (int a = 0; a < 16; ++a) s += std::string(a ? ", " : "") + "a" + std::to_string(a) + ": 2";
    s += "}";
    const device_mesh big = parse_mesh(s);
    CHECK(big.naxes == 16);
    CHECK(big.devices == 65536);
    CHECK(mesh_text(big).str() == s);
  }
}

TEST_CASE("mesh errors name what is wrong and the 0-based column", "[mesh][errors]") {
  std::string seventeen = "{";
  for (int a = 0; a < 17; ++a) seventeen += std::string(a ? "," : "") + static_cast<char>('a' + a) + ":1";
  seventeen += "}";
  const std::vector<bad_mesh> cases = {
      {"{x: 4, x: 2}", errc::repeated_axis, 7, "axis 'x' is declared twice in the mesh"},
      {"{x: 4, y: 0}", errc::bad_size, 10, "axis 'y' has size 0"},
      {"{x: 4294967296, y: 4294967296}", errc::overflow, 16,
       "the number of devices in the mesh does not fit in 64 bits"},
      {"{x: 99999999999999999999}", errc::overflow, 4, "number does not fit in 64 bits"},
      {seventeen, errc::capacity, 65, "a mesh may have at most 16 axes"},
      {"{x 4}", errc::syntax, 3, "expected ':' after the axis name but found '4'"},
      {"{x: 4", errc::syntax, 5, "expected ',' or '}' in the mesh but the text ended"},
      {"{x: 4 y: 2}", errc::syntax, 6, "expected ',' or '}' in the mesh but found 'y'"},
      {"{x: 4,}", errc::syntax, 6, "expected an axis name but found '}'"},
      {"{x: 4} z", errc::syntax, 7, "expected the end of the mesh but found 'z'"},
      {"x: 4", errc::syntax, 0, "expected '{' to open the mesh but found 'x'"},
      {"", errc::syntax, 0, "expected '{' to open the mesh but the text ended"},
      {"{x: -1}", errc::syntax, 4, "expected a number but found '-'"},
      {"{x: }", errc::syntax, 4, "expected a number but found '}'"},
      {"{4: 2}", errc::syntax, 1, "expected an axis name but found '4'"},
      {"{\"x: 4}", errc::syntax, 1, "unterminated quoted axis name"},
      {"{\"\": 4}", errc::syntax, 1, "empty axis name"},
      {"{abcdefghijabcdefghijabcdefghijab: 2}", errc::capacity, 1, "axis name longer than 31 characters"},
  };
  for (const auto& c : cases) {
    INFO("mesh text: " << c.text);
    const auto r = parse_mesh_text(c.text);
    CHECK(r.err.code == c.code);
    CHECK(r.err.column == c.column);
    CHECK(r.err.message.str() == c.message);
    // The run-time parser throws the same error, naming the 1-based column and the input.
    try {
      (void)parse_mesh(c.text);
      FAIL("parse_mesh did not throw");
    } catch (const redist_error& e) {
      CHECK(e.code() == c.code);
      CHECK(e.column() == c.column);
      const std::string where =
          c.text.empty() ? std::string() : " (at column " + std::to_string(c.column + 1) + " of '" + c.text + "')";
      CHECK(std::string(e.what()) == c.message + where);
    }
  }
  // A 31-character name is fine.
  CHECK(parse_mesh_text("{abcdefghijabcdefghijabcdefghija: 2}").ok());
  // A product of exactly 2^63 still fits.
  CHECK(parse_mesh("{x: 4294967296, y: 2147483648}").devices == (std::uint64_t{1} << 63));
}

TEST_CASE("prime decomposition: sub-axes in Shardy notation, major to minor", "[mesh][primes]") {
  SECTION("x:12 -> x:(1)2, x:(2)2, x:(4)3") {
    const device_mesh m = parse_mesh("{x: 12}");
    REQUIRE(m.nsub == 3);
    CHECK(sub_text(m, 0) == "x:(1)2");
    CHECK(sub_text(m, 1) == "x:(2)2");
    CHECK(sub_text(m, 2) == "x:(4)3");
    CHECK(m.sub[0].size == 2);
    CHECK(m.sub[1].size == 2);
    CHECK(m.sub[2].size == 3);
    CHECK(m.sub[0].stride == 6);
    CHECK(m.sub[1].stride == 3);
    CHECK(m.sub[2].stride == 1);
  }
  SECTION("a prime axis is one sub-axis written by its name") {
    const device_mesh m = parse_mesh("{x: 4, y: 6, z: 5}");
    REQUIRE(m.nsub == 5);
    const std::vector<std::string> names = {"x:(1)2", "x:(2)2", "y:(1)2", "y:(2)3", "z"};
    const std::vector<std::uint64_t> strides = {60, 30, 15, 5, 1};
    for (int k = 0; k < m.nsub; ++k) {
      CHECK(sub_text(m, k) == names[static_cast<std::size_t>(k)]);
      CHECK(m.sub[k].stride == strides[static_cast<std::size_t>(k)]);
    }
    CHECK(m.sub_begin[1] == 2);
    CHECK(m.sub_count[1] == 2);
    CHECK(m.sub_begin[2] == 4);
    CHECK(m.sub_count[2] == 1);
  }
  SECTION("every axis size factors into ascending primes; pre and strides are consistent") {
    for (std::uint64_t size = 1; size <= 360; ++size) {
      device_mesh m;
      REQUIRE(mesh_add_axis(m, "w", 3).ok());
      REQUIRE(mesh_add_axis(m, "a", size).ok());
      REQUIRE(mesh_add_axis(m, "z", 2).ok());
      INFO("size " << size);
      std::uint64_t prod = 1, prev = 1;
      for (int k = m.sub_begin[1]; k < m.sub_begin[1] + m.sub_count[1]; ++k) {
        const subaxis& s = m.sub[k];
        CHECK(s.axis == 1);
        CHECK(s.pre == prod);
        CHECK(s.size >= prev);
        for (std::uint64_t f = 2; f * f <= s.size; ++f) CHECK(s.size % f != 0);  // prime
        prev = s.size;
        prod *= s.size;
      }
      CHECK(prod == size);
      CHECK(m.devices == 6 * size);
      std::uint64_t stride = 1;
      for (int k = m.nsub - 1; k >= 0; --k) {
        CHECK(m.sub[k].stride == stride);
        stride *= m.sub[k].size;
      }
      CHECK(stride == m.devices);
    }
  }
  SECTION("a large prime axis") {
    const device_mesh m = parse_mesh("{p: 1000003}");
    REQUIRE(m.nsub == 1);
    CHECK(m.sub[0].size == 1000003);
    CHECK(sub_text(m, 0) == "p");
  }
}

TEST_CASE("default device map: row-major over the declared axes", "[mesh][devices]") {
  for (const char* text :
       {"{x: 4, y: 8}", "{x: 4, y: 6, z: 5}", "{a: 2, b: 2, c: 2}", "{x: 12}", "{x: 3, y: 1, z: 4}"}) {
    const device_mesh m = parse_mesh(text);
    INFO(text);
    for (std::uint64_t r = 0; r < m.devices; ++r) {
      // rank = sum_a i_a * prod_{b declared after a} size_b
      std::uint64_t coords[max_axes]{}, rank = 0;
      for (int a = 0; a < m.naxes; ++a) {
        coords[a] = m.axis_coord(a, r);
        CHECK(coords[a] < m.sizes[a]);
        std::uint64_t after = 1;
        for (int b = a + 1; b < m.naxes; ++b) after *= m.sizes[b];
        rank += coords[a] * after;
      }
      CHECK(rank == r);
      CHECK(rank_of(m, coords) == r);
      // The sub-axis coordinates are the mixed-radix digits of the rank.
      std::uint64_t again = 0;
      for (int k = 0; k < m.nsub; ++k) again = again * m.sub[k].size + m.coord(k, r);
      CHECK(again == r);
    }
  }
  // Spot values: on {x: 4, y: 8}, rank 13 is x = 1, y = 5; the last axis varies fastest.
  const device_mesh m = parse_mesh("{x: 4, y: 8}");
  CHECK(m.axis_coord(0, 13) == 1);
  CHECK(m.axis_coord(1, 13) == 5);
  CHECK(m.axis_coord(1, 14) == 6);
  const std::uint64_t c[] = {3, 7};
  CHECK(rank_of(m, c) == 31);
}

TEST_CASE("axis sizes with huge prime factors are refused at once, not factored for minutes (fuzz regression)", "[mesh][fuzz]") {
  // The largest prime below 2^64 took 2^31 trial divisions.
  CHECK_THROWS_WITH(redist::parse_mesh("{x: 18446744073709551557}"),
                    "axis 'x' has size 18446744073709551557, which cannot be split into prime sub-axes (a factor of at "
                    "least 2^32 with no prime factor below 65536) (at column 5 of '{x: 18446744073709551557}')");
  CHECK_THROWS_AS(redist::parse_mesh("{x: 18446744073709551614}"), redist::redist_error);  // 2 * 7^2 * ... * 92737 * 649657
  // Every size below 2^32 factors: the largest prime below 2^32 is one sub-axis.
  const redist::device_mesh m = redist::parse_mesh("{x: 4294967291, y: 12}");
  CHECK(m.sub_count[0] == 1);
  CHECK(m.sub[0].size == 4294967291u);
  CHECK(m.devices == 4294967291ull * 12);
  // Above 2^32, sizes whose large part is a prime below 2^32 still factor.
  const redist::device_mesh big = redist::parse_mesh("{x: 17179869164}");  // 4 * 4294967291
  CHECK(big.sub_count[0] == 3);
  CHECK(big.sub[2].size == 4294967291u);
}

TEST_CASE("names holding a quote print back in the other quote (fuzz regression)", "[mesh][fuzz]") {
  // A name holding '"' was printed between '"'s, which does not parse.
  const redist::device_mesh m = redist::parse_mesh(R"({'a"b': 3, "it's": 2, x: 2})");
  CHECK(redist::mesh_text(m).view() == R"({'a"b': 3, "it's": 2, x: 2})");
  CHECK(redist::parse_mesh(redist::mesh_text(m).view()) == m);
  const redist::dist_type t = redist::parse_type(m, R"([{'a"b', "it's"}12, 2])");
  CHECK(redist::type_text(m, t).view() == R"([2{'a"b', "it's"}12, 2])");
  CHECK(redist::parse_type(m, redist::type_text(m, t).view()) == t);
}

TEST_CASE("another order of an axis's prime sub-axes keeps the device map (Shardy's sub-axes)", "[mesh]") {
  const redist::device_mesh m = redist::parse_mesh("{x: 2, y: 12, z: 2}");  // y = 2 x 2 x 3
  const std::uint64_t order[] = {3, 2, 2};                                   // y's 3 major
  const redist::device_mesh o = redist::with_subaxis_order(m, 1, order, 3);
  REQUIRE(o.sub_count[1] == 3);
  const int y = o.sub_begin[1];
  CHECK(o.sub[y].size == 3);
  CHECK(o.sub[y].pre == 1);
  CHECK(o.sub[y + 1].pre == 3);
  CHECK(o.sub[y + 2].pre == 6);
  CHECK(o.sub[y + 2].stride == 2);  // z's size below it
  CHECK(o.sub[y].stride == 8);
  CHECK(o == m);  // the same axes and sizes: the same mesh to its users
  for (std::uint64_t r = 0; r < m.devices; ++r) {
    for (int a = 0; a < 3; ++a) CHECK(o.axis_coord(a, r) == m.axis_coord(a, r));
    CHECK(o.coord(y, r) == m.axis_coord(1, r) / 4);  // "y":(1)3: the y coordinate over 12 / 3
  }
  const std::uint64_t wrong[] = {5, 2, 2};  // not a factorization of 12: unchanged
  const redist::device_mesh same = redist::with_subaxis_order(m, 1, wrong, 3);
  for (int k = 0; k < m.nsub; ++k) CHECK(same.sub[k].size == m.sub[k].size);
}
