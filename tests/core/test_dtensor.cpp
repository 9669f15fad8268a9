// tests/core/test_dtensor.cpp -- PyTorch DTensor placements in and out (core/dtensor.hpp).
#include <catch2/catch.hpp>

#include <vector>

#include "redist/core/dtensor.hpp"
#include "redist/exchange.hpp"
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
  // Sub-axes have no placement.
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

TEST_CASE("_StridedShard: FSDP2 over tensor parallelism, the later mesh dimensions major", "[core][dtensor]") {
  // torch's docstring: [8, 8] on (dp: 2, tp: 2), [_StridedShard(0, split_factor=2), Shard(0)]:
  // ranks 0-3 hold rows 0-1, 4-5, 2-3, 6-7 (tp's chunks, then dp's chunks of each).
  const redist::placed_mesh dt{redist::parse_mesh("{dp: 2, tp: 2}"), {}};
  const std::vector<std::uint64_t> g8{8, 8};
  for (const char* p : {"[_StridedShard(0, split_factor=2), Shard(0)]", "[_StridedShard(dim=0, sf=2), Shard(dim=0)]",
                        "(_StridedShard(0, 2), Shard(0))"}) {
    INFO(p);
    const redist::dist_type t = redist::from_dtensor(dt.mesh, g8, p);
    CHECK(redist::type_text(dt.mesh, t).str() == "[2{dp, tp}8, 8]");
    std::vector<std::uint64_t> rows;
    for (std::uint64_t r = 0; r < 4; ++r) rows.push_back(redist::tile_box(dt.mesh, t, r).lo[0]);
    CHECK(rows == std::vector<std::uint64_t>{0, 4, 2, 6});
  }
  // Uneven, the docstring's arange(5): ranks 0-3 hold [0, 1], [3], [2], [4], the nested
  // chunks in that order, which no type says: the box layout.
  const std::vector<std::uint64_t> g5{5};
  CHECK_FALSE(redist::dtensor_type_says(dt.mesh, g5, "[_StridedShard(0, split_factor=2), Shard(0)]"));
  const redist::box_layout l = redist::dtensor_layout(dt, g5, "[_StridedShard(0, split_factor=2), Shard(0)]");
  CHECK(redist::box_layout_text(l) == "{rank 0: [0, 2), rank 1: [3, 4), rank 2: [2, 3), rank 3: [4, 5)}");
  // Three mesh dimensions: each strided one below the major later ones whose sizes multiply
  // to its split factor.
  CHECK(via("[_StridedShard(0, split_factor=2), Replicate(), Shard(0)]") == "[64{x, z}256, 1024, 64]");
  CHECK(via("[_StridedShard(0, sf=8), _StridedShard(0, sf=2), Shard(0)]") == "[16{x, y, z}256, 1024, 64]");
  CHECK(via("[Shard(0), _StridedShard(0, sf=2), Shard(0)]") == "[16{y, z, x}256, 1024, 64]");
  CHECK(via("[_StridedShard(0, sf=4), Shard(0), Shard(0)]") == "[16{z, x, y}256, 1024, 64]");
  CHECK(via("[_StridedShard(0, sf=2), _StridedShard(0, sf=2), Shard(0)]") == "[16{y, x, z}256, 1024, 64]");
  CHECK(via("[_StridedShard(1, sf=1), Shard(1), Replicate()]") == via("[Shard(1), Shard(1), Replicate()]"));
  // torch's test_compute_local_shape_and_global_offset_3D: (2, 2, 2), [_StridedShard(0, 2),
  // Shard(0), Shard(0)] of 16 rows: rank (i, j, k) holds 2 rows at 4 i + 8 j + 2 k.
  const redist::device_mesh m3 = redist::parse_mesh("{a: 2, b: 2, c: 2}");
  const redist::dist_type t3 = redist::from_dtensor(m3, std::vector<std::uint64_t>{16, 16},
                                                    "[_StridedShard(0, split_factor=2), Shard(0), Shard(0)]");
  for (std::uint64_t r = 0; r < 8; ++r) {
    const redist::box b = redist::tile_box(m3, t3, r);
    CHECK(b.lo[0] == 4 * (r / 4) + 8 * (r / 2 % 2) + 2 * (r % 2));
    CHECK(b.hi[0] - b.lo[0] == 2);
  }
  // Written back where mesh order alone cannot say the type.
  for (const char* t : {"[64{x, z}256, 1024, 64]", "[16{x, y, z}256, 1024, 64]", "[16{y, z, x}256, 1024, 64]",
                        "[16{z, x, y}256, 1024, 64]", "[16{y, x, z}256, 1024, 64]", "[256, 128{x, y}1024, 32{z}64]"}) {
    INFO(t);
    const redist::dist_type ty = redist::parse_type(m, t);
    CHECK(redist::from_dtensor(m, g, redist::to_dtensor(m, ty)) == ty);
  }
  CHECK(redist::to_dtensor(m, redist::parse_type(m, "[64{x, z}256, 1024, 64]")) ==
        "[_StridedShard(0, split_factor=2), Replicate(), Shard(0)]");
  // A split factor that no major later axes make (torch's overlapping shards), and malformed ones.
  CHECK_THROWS_WITH(via("[_StridedShard(0, split_factor=4), Replicate(), Shard(0)]"),
                    "_StridedShard(0, split_factor=4) on mesh dimension 0: the split factor must be the product of the "
                    "sizes of the first of the later mesh dimensions that shard dimension 0 (1, 2); others cut a "
                    "device's data into several boxes (at column 32 of '[_StridedShard(0, split_factor=4), Replicate(), "
                    "Shard(0)]')");
  CHECK_THROWS_WITH(via("[_StridedShard(0, sf=2), Replicate(), Replicate()]"), Catch::Contains("(1); others cut"));
  CHECK_THROWS_WITH(via("[_StridedShard(0, sf=3), Shard(0), Shard(0)]"), Catch::Contains("(1, 4, 8); others cut"));
  CHECK_THROWS_WITH(via("[_StridedShard(0, sf=0), Replicate(), Shard(0)]"),
                    Catch::StartsWith("a split factor must be at least 1 (at column 22"));
  CHECK_THROWS_WITH(via("[_StridedShard(0), Replicate(), Shard(0)]"), Catch::StartsWith("expected ',' then the split factor"));
  CHECK_THROWS_WITH(via("[_StridedShard(0, factor=2), Replicate(), Shard(0)]"),
                    Catch::StartsWith("expected split_factor=f or sf=f in _StridedShard"));
}

TEST_CASE("ours -> DTensor -> ours round-trips where placements can express the type", "[core][dtensor]") {
  std::size_t tried = 0, strided = 0;
  redist::testing::workload w = redist::testing::paper_workload();
  w.partial_sums = true;
  for (const auto& pt : redist::testing::random_problems(w, 500, 17)) {
    const redist::device_mesh mm = redist::parse_mesh(pt.mesh);
    const redist::dist_type t = redist::parse_type(mm, pt.from);
    std::vector<std::uint64_t> gl;
    for (int d = 0; d < t.rank; ++d) gl.push_back(t.dims[d].global);
    ++tried;
    std::string s;
    INFO(pt.mesh << " " << pt.from);
    CHECK_NOTHROW(s = redist::to_dtensor(mm, t));  // every order of whole axes: _StridedShard
    INFO(s);
    CHECK(redist::from_dtensor(mm, gl, s) == t);
    strided += s.find("_StridedShard") != std::string::npos;
  }
  CHECK(tried == 500);
  CHECK(strided > 100);
}

}  // namespace test_dtensor
