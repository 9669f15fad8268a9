// Tests of core/dtype.hpp: the paper syntax of distributed types (parse, print, exact
// round trip), sub-axes, inferred tiles, well-formedness (Fig. 7b) and every error class
// with its message and 0-based column.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "support/random_problems.hpp"
#include "support/strong_search.hpp"

#if REDIST_TEST_RAPIDCHECK
#include <rapidcheck/catch.h>
#endif

using namespace redist;

namespace {

// ---- compile-time checks ---------------------------------------------------------------
constexpr device_mesh m46 = parse_mesh_text("{x: 4, y: 6}").value;
constexpr auto ex31 = parse_type_text(m46, "[3{x}12, 2{y}12]");
static_assert(ex31.ok() && ex31.value.rank == 2);
static_assert(local_size(m46, ex31.value) == 6 && global_size(ex31.value) == 144);
static_assert(type_text(m46, ex31.value).view() == "[3{x}12, 2{y}12]");
static_assert(type_text(m46, parse_type_text(m46, "[{x:(2)2, x:(1)2}12]").value).view() == "[3{x}12]");
static_assert(parse_type_text(m46, "[3{z}12]").err.code == errc::unknown_axis);
static_assert(parse_type_text(m46, "[3{z}12]").err.column == 3);
static_assert(parse_type_text(m46, "[4{x}12]").err.code == errc::tile_mismatch);
static_assert(check_same_global(ex31.value, parse_type_text(m46, "[12, 12]").value).ok());

struct bad_type {
  std::string mesh;
  std::string text;
  errc code;
  int column;
  std::string message;
};

std::string round_trip(const device_mesh& m, const std::string& s) { return type_text(m, parse_type(m, s)).str(); }

}  // namespace

TEST_CASE("types parse into prime sub-axes, minor-to-major", "[dtype]") {
  const device_mesh m = parse_mesh("{x: 4, y: 8}");
  const dist_type t = parse_type(m, "[64{x}256, 1024]");
  REQUIRE(t.rank == 2);
  CHECK(t.dims[0].global == 256);
  CHECK(t.dims[1].global == 1024);
  // x:4 is the sub-axes 0 (x:(1)2, major) and 1 (x:(2)2, minor); stored minor-to-major.
  REQUIRE(t.dims[0].n == 2);
  CHECK(t.dims[0].axes[0] == 1);
  CHECK(t.dims[0].axes[1] == 0);
  CHECK(t.dims[1].n == 0);
  CHECK(parts(m, t.dims[0]) == 4);
  CHECK(tile(m, t.dims[0]) == 64);
  CHECK(tile(m, t.dims[1]) == 1024);
  CHECK(local_size(m, t) == 64 * 1024);
  CHECK(global_size(t) == 256 * 1024);
  CHECK(used_mask(t) == 0b11);

  SECTION("axes listed minor first") {
    const dist_type u = parse_type(m, "[{y, x}256]");
    REQUIRE(u.dims[0].n == 5);
    // y (sub-axes 4, 3, 2 minor-to-major) then x (1, 0).
    const std::vector<int> want = {4, 3, 2, 1, 0};
    for (int i = 0; i < 5; ++i) CHECK(u.dims[0].axes[i] == want[static_cast<std::size_t>(i)]);
    CHECK(type_text(m, u).str() == "[8{y, x}256]");
    CHECK(used_mask(u) == 0b11111);
  }
  SECTION("inferred tile sizes") {
    CHECK(round_trip(m, "[{x}256, 1024]") == "[64{x}256, 1024]");
    CHECK(round_trip(m, "[{x, y}256, {}7]") == "[8{x, y}256, 7]");
    CHECK(parse_type(m, "[{x}256, 1024]") == t);
  }
  SECTION("a bare n means n{}n") {
    CHECK(parse_type(m, "[8{}8, 3]") == parse_type(m, "[8, 3]"));
    CHECK(round_trip(m, "[8{}8]") == "[8]");
  }
  SECTION("the empty type is a scalar") {
    const dist_type s = parse_type(m, "[]");
    CHECK(s.rank == 0);
    CHECK(local_size(m, s) == 1);
    CHECK(type_text(m, s).str() == "[]");
  }
  SECTION("whitespace and quoted names") {
    CHECK(round_trip(m, " [ 64 { \"x\" } 256 ,1024 ] ") == "[64{x}256, 1024]");
    const device_mesh q = parse_mesh("{\"a b\": 2, c: 3}");
    CHECK(round_trip(q, "[{'a b', c}12]") == "[2{\"a b\", c}12]");
  }
}

TEST_CASE("sub-axis syntax x:(pre)size", "[dtype][primes]") {
  const device_mesh m = parse_mesh("{x: 4, y: 6}");  // x:(1)2 x:(2)2 y:(1)2 y:(2)3 = ids 0..3
  SECTION("single prime sub-axes") {
    const dist_type a = parse_type(m, "[6{x:(2)2}12]");
    REQUIRE(a.dims[0].n == 1);
    CHECK(a.dims[0].axes[0] == 1);
    const dist_type b = parse_type(m, "[6{x:(1)2}12]");
    REQUIRE(b.dims[0].n == 1);
    CHECK(b.dims[0].axes[0] == 0);
    CHECK(type_text(m, a).str() == "[6{x:(2)2}12]");
    CHECK(type_text(m, b).str() == "[6{x:(1)2}12]");
    CHECK(tile(m, parse_type(m, "[{y:(2)3}12]").dims[0]) == 4);
  }
  SECTION("runs of sub-axes in major-to-minor order print as the whole axis") {
    CHECK(round_trip(m, "[{x:(2)2, x:(1)2}12]") == "[3{x}12]");
    CHECK(round_trip(m, "[{x:(1)4}12]") == "[3{x}12]");
    CHECK(parse_type(m, "[{x:(1)4}12]") == parse_type(m, "[{x}12]"));
    // The reverse order is not the axis x.
    CHECK(round_trip(m, "[{x:(1)2, x:(2)2}12]") == "[3{x:(1)2, x:(2)2}12]");
    CHECK(round_trip(m, "[{y:(1)2, y:(2)3}12]") == "[2{y:(1)2, y:(2)3}12]");
  }
  SECTION("aligned multi-prime sub-axes") {
    const device_mesh w = parse_mesh("{x: 12}");
    const dist_type t = parse_type(w, "[{x:(2)6}12]");
    REQUIRE(t.dims[0].n == 2);
    CHECK(t.dims[0].axes[0] == 2);  // x:(4)3, minor
    CHECK(t.dims[0].axes[1] == 1);  // x:(2)2
    CHECK(type_text(w, t).str() == "[2{x:(2)6}12]");
    CHECK(round_trip(w, "[{x:(1)2}12, {x:(2)6}6]") == "[6{x:(1)2}12, 1{x:(2)6}6]");
    CHECK(round_trip(w, "[{x:(1)4}12]") == "[3{x:(1)4}12]");
  }
}

TEST_CASE("printing then parsing gives back exactly the type", "[dtype][roundtrip]") {
  SECTION("every type over small meshes (all orderings of prime sub-axes)") {
    struct mc {
      const char* mesh;
      const char* global;
    };
    std::size_t checked = 0;
    for (const mc& c :
         {mc{"{x: 4, y: 6}", "[12, 24]"}, mc{"{x: 12}", "[12, 6, 4]"}, mc{"{a: 2, b: 2, c: 2}", "[8, 4, 2]"},
          mc{"{\"a b\": 2, y: 9}", "[18, 3]"}, mc{"{x: 8}", "[8, 8]"}}) {
      const device_mesh m = parse_mesh(c.mesh);
      for (const dist_type& t : testing::enumerate_types(m, parse_type(m, c.global))) {
        const std::string s = type_text(m, t).str();
        INFO(c.mesh << " " << s);
        const auto r = parse_type_text(m, s);
        REQUIRE(r.ok());
        CHECK(r.value == t);
        CHECK(type_text(m, r.value).str() == s);
        ++checked;
      }
    }
    CHECK(checked > 400);
  }
  SECTION("random problems of every workload") {
    std::vector<testing::workload> ws = testing::mixed_workloads();
    ws.push_back(testing::paper_workload());
    std::uint64_t seed = 11;
    for (const auto& w : ws) {
      for (const auto& p : testing::random_problems(w, 60, seed++)) {
        const device_mesh m = parse_mesh(p.mesh);
        for (const std::string& s : {p.from, p.to}) {
          INFO(p.mesh << " " << s);
          const dist_type t = parse_type(m, s);
          CHECK(parse_type(m, type_text(m, t).view()) == t);
          CHECK(type_text(m, t).str() == s);  // the generator writes the canonical form
          CHECK(check(m, t).ok());
          CHECK(global_size(t) == p.elements);
        }
      }
    }
  }
#if REDIST_TEST_RAPIDCHECK
  rc::prop("a random problem's types round-trip", [](std::uint64_t seed, unsigned which) {
    auto ws = testing::mixed_workloads();
    ws.push_back(testing::paper_workload());
    std::mt19937_64 rng(seed);
    const auto p = testing::random_problem(rng, ws[which % ws.size()]);
    const device_mesh m = parse_mesh(p.mesh);
    const dist_type a = parse_type(m, p.from), b = parse_type(m, p.to);
    RC_ASSERT(type_text(m, a).str() == p.from);
    RC_ASSERT(parse_type(m, type_text(m, b).view()) == b);
    RC_ASSERT(check_same_global(a, b).ok());
  });
#endif
}

TEST_CASE("type errors: class, message and 0-based column", "[dtype][errors]") {
  const std::string m46 = "{x: 4, y: 6}";
  const std::vector<bad_type> cases = {
      {m46, "[3{z}12]", errc::unknown_axis, 3, "unknown axis 'z' (the mesh declares x, y)"},
      {"{}", "[{x}4]", errc::unknown_axis, 2, "unknown axis 'x' (the mesh declares no axes)"},
      {m46, "[12, 3{x, x}12]", errc::repeated_axis, 10, "axis 'x' is used twice in the type"},
      {m46, "[{x}12, {x}12]", errc::repeated_axis, 9, "axis 'x' is used twice in the type"},
      {m46, "[{x:(2)2, x}12]", errc::repeated_axis, 10, "axis 'x' is used twice in the type"},
      {m46, "[{x, x:(1)2}12]", errc::repeated_axis, 5, "axis 'x:(1)2' is used twice in the type"},
      {m46, "[2{x}10]", errc::tile_mismatch, 1,
       "tile size 2 of dimension 0 should be 3 (global 10 / 4 tiles, rounded up)"},
      {m46, "[12, 1{x, y}36]", errc::tile_mismatch, 5,
       "tile size 1 of dimension 1 should be 2 (global 36 / 24 tiles, rounded up)"},
      {m46, "[4{x}12]", errc::tile_mismatch, 1, "tile size 4 of dimension 0 should be 3 (global 12 / 4 tiles)"},
      {m46, "[12, 2 {y}24]", errc::tile_mismatch, 5, "tile size 2 of dimension 1 should be 4 (global 24 / 6 tiles)"},
      {m46, "[{x}0]", errc::bad_size, 4, "global size 0"},
      {m46, "[5, 0]", errc::bad_size, 4, "global size 0"},
      {m46, "[4294967296, 4294967296]", errc::overflow, 13, "the global size of the array does not fit in 64 bits"},
      {m46, "[18446744073709551616]", errc::overflow, 1, "number does not fit in 64 bits"},
      {m46, "[4611686018427387904{x}4]", errc::tile_mismatch, 1,
       "tile size 4611686018427387904 of dimension 0 should be 1 (global 4 / 4 tiles)"},
      {m46, "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]", errc::capacity, 37, "a type may have at most 12 dimensions"},
      {m46, "[12] x", errc::syntax, 5, "expected the end of the type but found 'x'"},
      {m46, "[12]]", errc::syntax, 4, "expected the end of the type but found ']'"},
      {m46, "12]", errc::syntax, 0, "expected '[' to open the type but found '1'"},
      {m46, "[12,]", errc::syntax, 4, "expected a size or '{' but found ']'"},
      {m46, "[12 12]", errc::syntax, 4, "expected ',' or ']' after a dimension but found '1'"},
      {m46, "[12", errc::syntax, 3, "expected ',' or ']' after a dimension but the text ended"},
      {m46, "[{x}]", errc::syntax, 4, "expected a number but found ']'"},
      {m46, "[{x 12]", errc::syntax, 4, "expected ',' or '}' after an axis but found '1'"},
      {m46, "[{x:2}12]", errc::syntax, 4, "expected '(' of a sub-axis x:(pre)size but found '2'"},
      {m46, "[{x:(1)3}12]", errc::unknown_axis, 2,
       "sub-axis x:(1)3 does not match the prime decomposition of axis x of size 4"},
      {m46, "[{y:(3)2}12]", errc::unknown_axis, 2,
       "sub-axis y:(3)2 does not match the prime decomposition of axis y of size 6"},
  };
  for (const auto& c : cases) {
    INFO(c.mesh << " " << c.text);
    const device_mesh m = parse_mesh(c.mesh);
    const auto r = parse_type_text(m, c.text);
    CHECK(r.err.code == c.code);
    CHECK(r.err.column == c.column);
    CHECK(r.err.message.str() == c.message);
    try {
      (void)parse_type(m, c.text);
      FAIL("parse_type did not throw");
    } catch (const redist_error& e) {
      CHECK(e.code() == c.code);
      CHECK(e.column() == c.column);
      CHECK(std::string(e.what()) ==
            c.message + " (at column " + std::to_string(c.column + 1) + " of '" + c.text + "')");
    }
  }
  // Exactly 12 dimensions are fine.
  CHECK(parse_type_text(parse_mesh(m46), "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]").ok());
}

TEST_CASE("texts past max_text_input are refused; long inputs are quoted around the column", "[dtype][errors]") {
  const device_mesh m = parse_mesh("{x: 4, y: 6}");
  const std::string spaces(static_cast<std::size_t>(max_text_input) - 3, ' ');
  CHECK(type_text(m, parse_type(m, "[" + spaces + "8]")).view() == "[8]");  // exactly the limit
  CHECK_THROWS_WITH(parse_type(m, "[ " + spaces + "8]"),
                    "the text has 65537 characters, more than the 65536 the parser reads");
  CHECK_THROWS_WITH(parse_mesh("{" + spaces + spaces + "}"), Catch::StartsWith("the text has 131068 characters"));
  // An error far into a long text quotes 100 characters around its column.
  const std::string pad(300, ' ');
  CHECK_THROWS_WITH(parse_type(m, "[" + pad + "8{q}8" + pad + "]"),
                    "unknown axis 'q' (the mesh declares x, y) (at column 304 of '..." + std::string(48, ' ') + "8{q}8" +
                        std::string(47, ' ') + "...')");
  CHECK_THROWS_WITH(parse_type(m, "[8{q}8" + pad + "]"),
                    "unknown axis 'q' (the mesh declares x, y) (at column 4 of '[8{q}8" + std::string(94, ' ') + "...')");
}

TEST_CASE("well-formedness of constructed types (Fig. 7b)", "[dtype][check]") {
  const device_mesh m = parse_mesh("{x: 4, y: 6}");
  const dist_type good = parse_type(m, "[3{x}12, 2{y}12]");
  REQUIRE(check(m, good).ok());
  SECTION("an axis used twice") {
    dist_type t = good;
    t.dims[1].axes[t.dims[1].n++] = 0;  // x:(1)2 also in dimension 1
    const error e = check(m, t);
    CHECK(e.code == errc::repeated_axis);
    CHECK(e.message.str() == "axis x:(1)2 is used twice");
  }
  SECTION("sizes that do not divide are uneven dimensions, well-formed (DESIGN.md section 2)") {
    dist_type t = good;
    t.dims[1].global = 10;
    CHECK(check(m, t).ok());
    CHECK(tile(m, t.dims[1]) == 2);
    CHECK(!even(m, t));
  }
  SECTION("global size 0") {
    dist_type t = good;
    t.dims[0].global = 0;
    const error e = check(m, t);
    CHECK(e.code == errc::bad_size);
    CHECK(e.message.str() == "dimension 0 has global size 0");
  }
  SECTION("a sub-axis the mesh does not have") {
    dist_type t = good;
    t.dims[0].axes[0] = 9;
    CHECK(check(m, t).code == errc::unknown_axis);
  }
  SECTION("global size overflow") {
    dist_type t = good;
    t.dims[0].global = std::uint64_t{1} << 62;
    t.dims[1].global = std::uint64_t{3} << 40;
    CHECK(check(m, t).code == errc::overflow);
  }
  SECTION("too many dimensions") {
    dist_type t = good;
    t.rank = max_dims + 1;
    CHECK(check(m, t).code == errc::capacity);
  }
}

TEST_CASE("check_same_global names both shapes", "[dtype][global]") {
  const device_mesh m = parse_mesh("{x: 4, y: 6}");
  const dist_type a = parse_type(m, "[3{x}12, 4]");
  CHECK(check_same_global(a, parse_type(m, "[12, 1{x}4]")).ok());
  const error e = check_same_global(a, parse_type(m, "[12]"));
  CHECK(e.code == errc::global_mismatch);
  CHECK(e.column == -1);
  CHECK(e.message.str() == "global types differ: source is [12, 4], target is [12]");
  const error f = check_same_global(parse_type(m, "[512, 170{y}1020]"), parse_type(m, "[1020, 128{x}512]"));
  CHECK(f.message.str() == "global types differ: source is [512, 1020], target is [1020, 512]");
  CHECK(same_local(m, parse_type(m, "[3{x}12, 4]"), parse_type(m, "[3{x:(2)2, y:(2)3}18, 4]")));
  CHECK_FALSE(same_local(m, parse_type(m, "[3{x}12, 4]"), parse_type(m, "[12, 1{x}4]")));
}

TEST_CASE("partial sums: `sum{...}` after the type", "[dtype][sums]") {
  const device_mesh m = parse_mesh("{x: 4, y: 6, z: 2}");  // sub-axes 0 x:(1)2, 1 x:(2)2, 2 y:(1)2, 3 y:(2)3, 4 z
  const dist_type t = parse_type(m, "[64{x}256, 1024] sum{z, y}");
  REQUIRE(t.nsum == 3);  // a set of sub-axes, ascending ids
  CHECK(t.sum[0] == 2);
  CHECK(t.sum[1] == 3);
  CHECK(t.sum[2] == 4);
  CHECK(sum_parts(m, t) == 12);
  CHECK(local_size(m, t) == 64 * 1024);  // a sum axis partitions no dimension
  CHECK(used_mask(t) == 0b11111);
  CHECK(type_text(m, t).str() == "[64{x}256, 1024] sum{y, z}");
  CHECK(round_trip(m, "[12]sum{y:(2)3}") == "[12] sum{y:(2)3}");
  CHECK(round_trip(m, "[12] sum{x:(2)2, z}") == "[12] sum{x:(2)2, z}");
  CHECK(round_trip(m, "[12] sum{x:(1)2, x:(2)2}") == "[12] sum{x}");
  CHECK(round_trip(m, "[12] sum{}") == "[12]");
  CHECK(parse_type(m, "[12] sum{z, y}") == parse_type(m, "[12] sum{y, z}"));
  CHECK_FALSE(parse_type(m, "[12] sum{z}") == parse_type(m, "[12]"));
  // Every sum subset of a mesh round-trips.
  for (const dist_type& u : testing::enumerate_types(m, parse_type(m, "[12, 4]"), UINT64_MAX, 0b11111)) {
    INFO(type_text(m, u).str());
    CHECK(parse_type(m, type_text(m, u).view()) == u);
  }
  const std::vector<bad_type> cases = {
      {"{x: 4, y: 6, z: 2}", "[{x}12] sum{x}", errc::repeated_axis, 12, "axis 'x' is used twice in the type"},
      {"{x: 4, y: 6, z: 2}", "[12] sum{y, y}", errc::repeated_axis, 12, "axis 'y' is used twice in the type"},
      {"{x: 4, y: 6, z: 2}", "[12] sum{w}", errc::unknown_axis, 9, "unknown axis 'w' (the mesh declares x, y, z)"},
      {"{x: 4, y: 6, z: 2}", "[12] summ{y}", errc::syntax, 5,
       "unknown reduction 'summ' (expected sum, max, min, prod or avg, as in 'sum{y}')"},
      {"{x: 4, y: 6, z: 2}", "[12] sum y", errc::syntax, 9, "expected '{' after 'sum' but found 'y'"},
      {"{x: 4, y: 6, z: 2}", "[12] sum{y", errc::syntax, 10, "expected ',' or '}' after a sum axis but the text ended"},
      {"{x: 4, y: 6, z: 2}", "[12] sum{y} x", errc::syntax, 12, "expected the end of the type but found 'x'"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    const auto r = parse_type_text(m, c.text);
    CHECK(r.err.code == c.code);
    CHECK(r.err.column == c.column);
    CHECK(r.err.message.str() == c.message);
  }
  SECTION("check() on constructed sums") {
    dist_type u = parse_type(m, "[{x}12] sum{z}");
    u.sum[u.nsum++] = 0;  // x:(1)2 partitions dimension 0 and is a sum axis
    CHECK(check(m, u).code == errc::repeated_axis);
    CHECK(check(m, u).message.str() == "axis x:(1)2 is used twice (a sum axis partitions no dimension)");
    dist_type v = parse_type(m, "[12] sum{y, z}");
    std::swap(v.sum[0], v.sum[2]);  // not sorted
    CHECK(check(m, v).code == errc::syntax);
  }
}

TEST_CASE("every reduction: `max{...}`, `min{...}`, `prod{...}`, `avg{...}` beside `sum{...}`", "[dtype][sums]") {
  const device_mesh m = parse_mesh("{x: 4, y: 6, z: 2}");
  for (reduction r : all_reductions) {
    const std::string name(reduction_name(r));
    INFO(name);
    const dist_type t = parse_type(m, "[64{x}256, 1024] " + name + "{z, y}");
    CHECK(t.reduce == r);
    CHECK(t.nsum == 3);
    CHECK(sum_parts(m, t) == 12);
    CHECK(type_text(m, t).str() == "[64{x}256, 1024] " + name + "{y, z}");
    CHECK(parse_type(m, type_text(m, t).view()) == t);
    reduction back = reduction::sum;
    CHECK(reduction_from_name(name, back));
    CHECK(back == r);
    // `max{}`: nothing pending, the type is the plain one (and its kind the default).
    const dist_type none = parse_type(m, "[12] " + name + "{}");
    CHECK(none.nsum == 0);
    CHECK(none.reduce == reduction::sum);
    CHECK(none == parse_type(m, "[12]"));
  }
  // The kind is part of the type: same axes, other kind, other type.
  CHECK_FALSE(parse_type(m, "[12] max{y}") == parse_type(m, "[12] sum{y}"));
  CHECK_FALSE(parse_type(m, "[12] max{y}") == parse_type(m, "[12] min{y}"));
  CHECK(round_trip(m, "[12]avg{y:(2)3}") == "[12] avg{y:(2)3}");
  reduction unchanged = reduction::min;
  CHECK_FALSE(reduction_from_name("mean", unchanged));
  CHECK(unchanged == reduction::min);
  // The constexpr path (compile-time types) reads the kind too.
  static_assert(parse_type_text(parse_mesh_text("{x: 2, y: 2}").value, "[{x}4] max{y}").value.reduce == reduction::max);
  static_assert(type_text(parse_mesh_text("{x: 2, y: 2}").value,
                          parse_type_text(parse_mesh_text("{x: 2, y: 2}").value, "[{x}4] prod{y}").value)
                    .view() == "[2{x}4] prod{y}");
  const std::vector<bad_type> cases = {
      {"{x: 4, y: 6, z: 2}", "[12] mean{y}", errc::syntax, 5,
       "unknown reduction 'mean' (expected sum, max, min, prod or avg, as in 'sum{y}')"},
      {"{x: 4, y: 6, z: 2}", "[12] max{y} sum{z}", errc::syntax, 12,
       "two reduction kinds in one type: 'max' and 'sum' (a type's partial values have one reduction kind)"},
      {"{x: 4, y: 6, z: 2}", "[12] sum{y} avg{z}", errc::syntax, 12,
       "two reduction kinds in one type: 'sum' and 'avg' (a type's partial values have one reduction kind)"},
      {"{x: 4, y: 6, z: 2}", "[12] min{y} min{z}", errc::syntax, 12,
       "the pending axes of 'min' are listed twice: write them in one 'min{...}'"},
      {"{x: 4, y: 6, z: 2}", "[12] max y", errc::syntax, 9, "expected '{' after 'max' but found 'y'"},
      {"{x: 4, y: 6, z: 2}", "[12] prod{y", errc::syntax, 11, "expected ',' or '}' after a pending axis but the text ended"},
      {"{x: 4, y: 6, z: 2}", "[{y}12] max{y}", errc::repeated_axis, 12, "axis 'y' is used twice in the type"},
      {"{x: 4, y: 6, z: 2}", "[12] max{z} q", errc::syntax, 12, "expected the end of the type but found 'q'"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    const auto r = parse_type_text(parse_mesh(c.mesh), c.text);
    CHECK(r.err.code == c.code);
    CHECK(r.err.column == c.column);
    CHECK(r.err.message.str() == c.message);
  }
}
