// tests/core/test_dtensor.cpp -- PyTorch DTensor placements in and out (core/dtensor.hpp).
#include <catch2/catch.hpp>

#include <vector>

#include "redist/core/dtensor.hpp"
#include "support/random_problems.hpp"

// A namespace of its own: the folder's tests compile as one unit (tests/CMakeLists.txt).
namespace test_dtensor {

namespace {
const redist::device_mesh m = redist::parse_mesh("{x: 2, y: 4, z: 2}");
const std::vector<std::uint64_t> g{256, 1024, 64};

std::string via(const char* placements) { return redist::type_text(m, redist::from_dtensor(m, g, placements)).str(); }
}  // namespace

TEST_CASE("placements map to the paper syntax; the first mesh dimension is the major one", "[core][dtensor]") {
  CHECK(via("[Shard(0), Replicate(), Shard(0)]") == "[64{z, x}256, 1024, 64]");
  CHECK(via("[Shard(1), Shard(1), Partial()]") == "[256, 128{y, x}1024, 64] sum{z}");
  CHECK(via("(Shard(dim=-1), Replicate(), Partial(reduce_op='sum'))") == "[256, 1024, 32{x}64] sum{z}");
  CHECK(via("[Replicate(), Replicate(), Replicate()]") == "[256, 1024, 64]");
  CHECK(redist::to_dtensor(m, redist::parse_type(m, "[64{z, x}256, 1024, 64]")) == "[Shard(0), Replicate(), Shard(0)]");
  CHECK(redist::to_dtensor(m, redist::parse_type(m, "[256, 1024, 64] sum{y}")) == "[Replicate(), Partial(), Replicate()]");
}

TEST_CASE("Partial of every reduction: max, min, prod, avg", "[core][dtensor]") {
  CHECK(via("[Partial('max'), Shard(0), Replicate()]") == "[64{y}256, 1024, 64] max{x}");
  CHECK(via("[Partial(reduce_op='min'), Replicate(), Partial(reduce_op='min')]") == "[256, 1024, 64] min{x, z}");
  CHECK(via("[Replicate(), Partial('prod'), Replicate()]") == "[256, 1024, 64] prod{y}");
  CHECK(via("[Replicate(), Partial('product'), Replicate()]") == "[256, 1024, 64] prod{y}");  // torch's name
  CHECK(via("[Replicate(), Replicate(), Partial(\"avg\")]") == "[256, 1024, 64] avg{z}");
  CHECK(via("[Partial('sum'), Replicate(), Replicate()]") == "[256, 1024, 64] sum{x}");
  CHECK(redist::from_dtensor(m, g, "[Partial('max'), Replicate(), Replicate()]").reduce == redist::reduction::max);
  CHECK(redist::to_dtensor(m, redist::parse_type(m, "[256, 1024, 64] max{y}")) == "[Replicate(), Partial('max'), Replicate()]");
  CHECK(redist::to_dtensor(m, redist::parse_type(m, "[256, 1024, 64] min{x, z}")) ==
        "[Partial('min'), Replicate(), Partial('min')]");
  CHECK(redist::to_dtensor(m, redist::parse_type(m, "[256, 1024, 64] avg{y}")) == "[Replicate(), Partial('avg'), Replicate()]");
  CHECK(redist::to_dtensor(m, redist::parse_type(m, "[256, 1024, 64] prod{y}")) ==
        "[Replicate(), Partial('product'), Replicate()]");
  // Every kind round-trips through placements.
  for (redist::reduction r : redist::all_reductions) {
    const redist::dist_type t = redist::parse_type(m, "[128{x}256, 1024, 64] " + std::string(redist::reduction_name(r)) + "{y}");
    CHECK(redist::from_dtensor(m, g, redist::to_dtensor(m, t)) == t);
  }
}

TEST_CASE("bad placements name the problem", "[core][dtensor]") {
  CHECK_THROWS_WITH(via("[Shard(3), Replicate(), Replicate()]"),
                    "Shard(3) names no dimension of a 3-D array (at column 8 of '[Shard(3), Replicate(), Replicate()]')");
  CHECK_THROWS_WITH(via("[Shard(0)]"), "there are 1 placements but the mesh has 3 axes; DTensor needs one per mesh dimension");
  CHECK_THROWS_WITH(via("[Partial(reduce_op='mean'), Replicate(), Replicate()]"),
                    "unknown reduction 'mean' (Partial takes sum, max, min, prod or avg) (at column 20 of "
                    "'[Partial(reduce_op='mean'), Replicate(), Replicate()]')");
  CHECK_THROWS_WITH(via("[Partial('max'), Partial('min'), Replicate()]"),
                    "Partial('min') after Partial('max'): redist keeps one reduction kind per array (at column 26 of "
                    "'[Partial('max'), Partial('min'), Replicate()]')");
  CHECK_THROWS_WITH(via("[Partial('avg'), Partial(), Replicate()]"),
                    Catch::StartsWith("Partial() (a sum) after Partial('avg'): redist keeps one reduction kind per array"));
  CHECK_THROWS_WITH(via("[Shard(0), Mystery(), Replicate()]"), Catch::Contains("unknown placement 'Mystery'"));
  CHECK_THROWS_WITH(via("[Shard(0), Replicate(), Replicate(), Replicate()]"), Catch::Contains("more placements than the mesh has axes"));
  // The order within a dimension must be the mesh's, and sub-axes have no placement.
  CHECK_THROWS_WITH(redist::to_dtensor(m, redist::parse_type(m, "[64{x, z}256, 1024, 64]")), Catch::Contains("order"));
  CHECK_THROWS_WITH(redist::to_dtensor(m, redist::parse_type(m, "[128{y:(1)2}256, 1024, 64]")), Catch::Contains("sub-axis"));
}

TEST_CASE("hostile placements are refused with a message (fuzz regressions)", "[core][dtensor][fuzz]") {
  // Negating the most negative 64-bit integer was undefined behaviour (UBSan: signed overflow).
  CHECK_THROWS_WITH(via("[Shard(-9223372036854775808), Replicate(), Replicate()]"),
                    Catch::StartsWith("Shard(-9223372036854775808) names no dimension of a 3-D array (at column 9"));
  CHECK_THROWS_WITH(via("[Shard(-18446744073709551615), Replicate(), Replicate()]"),
                    Catch::StartsWith("Shard(-18446744073709551615) names no dimension"));
  CHECK_THROWS_WITH(via("[Shard(-4), Replicate(), Replicate()]"), Catch::StartsWith("Shard(-4) names no dimension"));
  // Python's rule: -3 is the first of three dimensions, -0 is 0.
  CHECK(via("[Shard(-3), Replicate(), Replicate()]") == "[128{x}256, 1024, 64]");
  CHECK(via("[Shard(-0), Replicate(), Replicate()]") == "[128{x}256, 1024, 64]");
  // A truncated keyword inside Partial(...) gave a redist_error with an empty message.
  CHECK_THROWS_WITH(via("[Partial(re"), "expected Partial(), Partial('sum') or Partial(reduce_op='sum') (at column 2 of '[Partial(re')");
  CHECK_THROWS_WITH(via("[Partial(reduce_op"), "expected '=' after reduce_op but the text ended (at column 19 of '[Partial(reduce_op')");
  CHECK_THROWS_WITH(via("[Partia"), "expected '(' after the placement but the text ended (at column 8 of '[Partia')");
  CHECK_THROWS_WITH(via("[Shard(di"), "expected Shard(dim) or Shard(dim=d) (at column 2 of '[Shard(di')");
}

TEST_CASE("ours -> DTensor -> ours round-trips where placements can express the type", "[core][dtensor]") {
  std::size_t tried = 0, expressible = 0;
  redist::testing::workload w = redist::testing::paper_workload();
  w.partial_sums = true;
  for (const auto& pt : redist::testing::random_problems(w, 500, 17)) {
    const redist::device_mesh mm = redist::parse_mesh(pt.mesh);
    const redist::dist_type t = redist::parse_type(mm, pt.from);
    std::vector<std::uint64_t> gl;
    for (int d = 0; d < t.rank; ++d) gl.push_back(t.dims[d].global);
    ++tried;
    std::string s;
    try {
      s = redist::to_dtensor(mm, t);
    } catch (const redist::redist_error& e) {
      CHECK(std::string(e.what()).find("order other than the mesh's") != std::string::npos);
      continue;
    }
    INFO(pt.mesh << " " << pt.from << " -> " << s);
    CHECK(redist::from_dtensor(mm, gl, s) == t);
    ++expressible;
  }
  CHECK(tried == 500);
  CHECK(expressible > 300);
}

}  // namespace test_dtensor
