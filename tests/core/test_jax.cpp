// tests/core/test_jax.cpp -- JAX PartitionSpec in and out (core/jax.hpp).
#include <catch2/catch.hpp>

#include <vector>

#include "redist/core/jax.hpp"
#include "support/random_problems.hpp"

// A namespace of its own: the folder's tests compile as one unit (tests/CMakeLists.txt).
namespace test_jax {

namespace {
const redist::device_mesh m = redist::parse_mesh("{x: 2, y: 4, z: 2}");
const std::vector<std::uint64_t> g{256, 1024, 64};

std::string via_jax(const char* spec) { return redist::type_text(m, redist::from_jax(m, g, spec)).str(); }
}  // namespace

TEST_CASE("PartitionSpec maps to the paper syntax, tuples reversed to minor-to-major", "[core][jax]") {
  CHECK(via_jax("PartitionSpec('x', None, ('y', 'z'))") == "[128{x}256, 1024, 8{z, y}64]");
  CHECK(via_jax("P(('x', 'y'))") == "[32{y, x}256, 1024, 64]");
  CHECK(via_jax("P(\"x\")") == "[128{x}256, 1024, 64]");
  CHECK(via_jax("P()") == "[256, 1024, 64]");
  CHECK(via_jax("P(None, ())") == "[256, 1024, 64]");
  const redist::dist_type t = redist::parse_type(m, "[128{x}256, 1024, 8{z, y}64]");
  CHECK(redist::to_jax(m, t) == "PartitionSpec('x', None, ('y', 'z'))");
  CHECK(redist::to_jax(m, redist::parse_type(m, "[256, 1024, 64]")) == "PartitionSpec()");
}

TEST_CASE("bad PartitionSpecs name the problem and the column", "[core][jax]") {
  CHECK_THROWS_WITH(via_jax("P(None, 'q')"), "unknown mesh axis 'q' (at column 9 of 'P(None, 'q')')");
  CHECK_THROWS_WITH(via_jax("P('x', 'x')"), "mesh axis 'x' is used twice (at column 8 of 'P('x', 'x')')");
  CHECK_THROWS_WITH(via_jax("P('x', None, None, 'y')"), "PartitionSpec has 4 entries but the array has 3 dimensions");
  CHECK_THROWS_WITH(via_jax("Q('x')"), Catch::Contains("expected PartitionSpec(...) or P(...)"));
  CHECK_THROWS_WITH(via_jax("P('x',"), Catch::Contains("but the text ended"));
  const std::vector<std::uint64_t> odd{3, 1024, 64};
  // JAX pads uneven shards exactly as redist does (ceil tiles, DESIGN.md section 2).
  CHECK(redist::from_jax(m, odd, "P('y')") == redist::parse_type(m, "[1{y}3, 1024, 64]"));
  CHECK_THROWS_WITH(redist::to_jax(m, redist::parse_type(m, "[128{y:(1)2}256, 1024, 64]")), Catch::Contains("sub-axis"));
  CHECK_THROWS_WITH(redist::to_jax(m, redist::parse_type(m, "[256, 1024, 64] max{x}")),
                    "pending max values have no PartitionSpec (JAX's unreduced axes are pending sums)");
  CHECK_THROWS_WITH(redist::to_jax(m, redist::parse_type(m, "[256, 1024, 64] sum{y:(1)2}")),
                    "a pending sum over a sub-axis has no PartitionSpec");
}

TEST_CASE("PartitionSpec as JAX prints it: trailing commas, unreduced and reduced axes", "[core][jax]") {
  // repr(P('x')) is "P('x',)"; a tuple of one axis canonicalizes to the axis.
  CHECK(via_jax("P('x',)") == "[128{x}256, 1024, 64]");
  CHECK(via_jax("PartitionSpec(('x',), None, ('z', 'y',),)") == "[128{x}256, 1024, 8{y, z}64]");
  // unreduced: pending sums over those axes (a set, or a tuple as older JAX printed it).
  CHECK(via_jax("P('x', unreduced={'y'})") == "[128{x}256, 1024, 64] sum{y}");
  CHECK(via_jax("P(unreduced={'z', 'x'})") == "[256, 1024, 64] sum{x, z}");
  CHECK(via_jax("PartitionSpec('x', unreduced=('y',))") == "[128{x}256, 1024, 64] sum{y}");
  CHECK(via_jax("P(None, 'z', unreduced='y')") == "[256, 512{z}1024, 64] sum{y}");
  // reduced: replicated over those axes, as any axis the spec does not use.
  CHECK(via_jax("P('x', unreduced={'y'}, reduced={'z'},)") == "[128{x}256, 1024, 64] sum{y}");
  const redist::dist_type t = redist::parse_type(m, "[128{x}256, 1024, 64] sum{z, y}");
  CHECK(redist::to_jax(m, t) == "PartitionSpec('x', unreduced={'y', 'z'})");
  CHECK(redist::from_jax(m, g, redist::to_jax(m, t)) == t);
  CHECK(redist::to_jax(m, redist::parse_type(m, "[256, 1024, 64] sum{x}")) == "PartitionSpec(unreduced={'x'})");
  // What JAX itself refuses, and a layout left to the compiler.
  CHECK_THROWS_WITH(via_jax("P('x', unreduced={'x'})"), "mesh axis 'x' is used twice (at column 19 of 'P('x', unreduced={'x'})')");
  CHECK_THROWS_WITH(via_jax("P(unreduced={'y'}, reduced={'y'})"), Catch::StartsWith("mesh axis 'y' is used twice"));
  CHECK_THROWS_WITH(via_jax("P(unreduced={'y'}, 'x')"), Catch::StartsWith("an entry after a keyword argument (at column 20"));
  CHECK_THROWS_WITH(via_jax("P('x', P.UNCONSTRAINED)"),
                    "UNCONSTRAINED leaves dimension 1's layout to the compiler: name its mesh axes or None (at column 8 of "
                    "'P('x', P.UNCONSTRAINED)')");
  CHECK_THROWS_WITH(via_jax("P(UNCONSTRAINED)"), Catch::StartsWith("UNCONSTRAINED leaves dimension 0's layout"));
  CHECK_THROWS_WITH(via_jax("P('x',,)"), Catch::StartsWith("expected an axis name but found ','"));
  CHECK_THROWS_WITH(via_jax("P(unreduced={'y'"), Catch::StartsWith("expected ',' or '}' in a set of axes but the text ended"));
}

TEST_CASE("NamedSharding as JAX prints it: the mesh, its devices and the spec", "[core][jax]") {
  const std::vector<std::uint64_t> g2{8, 16};
  auto via = [&](const char* s) {
    const redist::placed_type p = redist::from_jax_sharding(s, g2);
    return redist::placed_mesh_text(p.pm) + " " + redist::type_text(p.pm.mesh, p.type).str();
  };
  // jax/_src/named_sharding.py __repr__ (str(mesh) since JAX 0.4.36, with axis_types since
  // 0.5; a dict of axis sizes and partition_spec= before).
  CHECK(via("NamedSharding(mesh=Mesh('x': 2, 'y': 4, axis_types=(Auto, Auto)), spec=PartitionSpec('x', None), "
            "memory_kind=device)") == "{x: 2, y: 4} [4{x}8, 16]");
  CHECK(via("NamedSharding(mesh=Mesh('x': 2, 'y': 4), spec=PartitionSpec(None, ('x', 'y')))") ==
        "{x: 2, y: 4} [8, 2{y, x}16]");
  CHECK(via("NamedSharding(mesh=AbstractMesh('x': 2, 'y': 4, axis_types=(AxisType.Explicit, AxisType.Explicit)), "
            "spec=P('y', unreduced={'x'}))") == "{x: 2, y: 4} [2{y}8, 16] sum{x}");
  CHECK(via("NamedSharding(mesh={'x': 2, 'y': 4}, spec=PartitionSpec('x', 'y'), memory_kind=pinned_host)") ==
        "{x: 2, y: 4} [4{x}8, 4{y}16]");
  CHECK(via("NamedSharding(mesh={'x': 2}, partition_spec=PartitionSpec('x',))") == "{x: 2} [4{x}8, 16]");
  // repr(mesh) lists the devices: the mesh is placed on them.
  CHECK(via("NamedSharding(mesh=Mesh(device_ids=array([[4, 5, 6, 7],\n       [0, 1, 2, 3]]), axis_names=('x', 'y'), "
            "axis_types=(Auto, Auto)), spec=PartitionSpec('x',))") == "{x: 2, y: 4} @ [4, 5, 6, 7, 0, 1, 2, 3] [4{x}8, 16]");
  CHECK(via("NamedSharding(mesh=Mesh(device_ids=[0, 1, 2, 3], axis_names=('tp',)), spec=PartitionSpec(None, 'tp'))") ==
        "{tp: 4} [8, 4{tp}16]");
  // Errors name what and where.
  auto column_of = [&](const char* s) {
    try {
      (void)redist::from_jax_sharding(s, g2);
    } catch (const redist::redist_error& e) {
      return e.column();
    }
    return -2;
  };
  const char* unknown = "NamedSharding(mesh=Mesh('x': 2), spec=PartitionSpec('q'))";
  CHECK_THROWS_WITH(redist::from_jax_sharding(unknown, g2), Catch::StartsWith("unknown mesh axis 'q'"));
  CHECK(column_of(unknown) == static_cast<int>(std::string(unknown).find("'q'")));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh, P('x'))", g2),
                    Catch::StartsWith("expected keyword arguments (mesh=..., spec=...)"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(spec=P('x'), mesh=Mesh('x': 2))", g2),
                    Catch::StartsWith("the spec before the mesh"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh('x': 2))", g2),
                    Catch::StartsWith("expected spec=PartitionSpec(...)"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh(device_ids=array([[0, 1], [2]]), axis_names=('x', "
                                              "'y')), spec=P())", g2),
                    Catch::StartsWith("the device array is ragged: a list of 1 where others have 2"));
  for (const char* ragged : {"[[0, 1], [[2], [3]]]", "[[[0], [1]], [2, 3]]", "[[], [0, 1]]", "[[0, 1], []]", "[[0, 1], 2]"}) {
    INFO(ragged);
    CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh(device_ids=array(" + std::string(ragged) +
                                                    "), axis_names=('x', 'y')), spec=P())",
                                                g2),
                      Catch::Contains("ragged") || Catch::Contains("expected '['"));
  }
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh(device_ids=array([0, 1, 1, 3]), axis_names=('x',)), "
                                              "spec=P())", g2),
                    Catch::StartsWith("device 1 is listed twice (positions 1 and 2) (at column 49"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh(device_ids=array([0, 4294967296]), axis_names=('x',)), "
                                              "spec=P())", g2),
                    Catch::StartsWith("a device id must be below 2^32 (at column 46"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh(device_ids=array([0, 1]), axis_names=('x', 'y')), "
                                              "spec=P())", g2),
                    Catch::StartsWith("2 axis names for a device array of 1 dimensions"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh(device_ids=[], axis_names=()), spec=P())", g2),
                    Catch::StartsWith("an empty mesh holds no array"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh('x': 2), spec=P(), logical_device_ids=(1, 0))", g2),
                    Catch::StartsWith("logical_device_ids reorders the mesh's devices"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh('x': 2), mesh=Mesh('y': 2), spec=P())", g2),
                    Catch::StartsWith("mesh is given twice (at column 34"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh(device_ids=[0, 1], axis_names=('x',), "
                                              "device_ids=[1, 0]), spec=P())", g2),
                    Catch::StartsWith("device_ids is given twice"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh('x': 2, 'x': 2), spec=P())", g2),
                    Catch::StartsWith("axis 'x' is declared twice in the mesh"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("GSPMDSharding({devices=[2,1]<=[2]})", g2),
                    Catch::StartsWith("expected NamedSharding(mesh=..., spec=...)"));
  CHECK_THROWS_WITH(redist::from_jax_sharding("NamedSharding(mesh=Mesh('x': 2), spec=P('x'))  x", g2),
                    Catch::StartsWith("expected the end of the NamedSharding but found 'x'"));
  // Every prefix parses or is refused with a column inside the text.
  const std::string full = "NamedSharding(mesh=Mesh(device_ids=array([[1, 0],\n [3, 2]]), axis_names=('x', 'y'), "
                           "axis_types=(Auto, Auto)), spec=PartitionSpec(('y', 'x'), unreduced={}), memory_kind=device)";
  std::size_t refused = 0;
  for (std::size_t n = 0; n <= full.size(); ++n) {
    try {
      (void)redist::from_jax_sharding(full.substr(0, n), g2);
    } catch (const redist::redist_error& e) {
      ++refused;
      CHECK(e.column() <= static_cast<int>(n));
    }
  }
  CHECK(refused == full.size());
}

TEST_CASE("truncated PartitionSpecs are refused with a message (fuzz regressions)", "[core][jax][fuzz]") {
  CHECK_THROWS_WITH(via_jax("Partia"), "expected PartitionSpec(...) or P(...) (at column 1 of 'Partia')");
  CHECK_THROWS_WITH(via_jax("PartitionSpec("), "expected an axis name but the text ended (at column 15 of 'PartitionSpec(')");
  CHECK_THROWS_WITH(via_jax("P(('x', "), "expected an axis name but the text ended (at column 9 of 'P(('x', ')");
  CHECK_THROWS_WITH(via_jax("P(Non"), "unknown mesh axis 'Non' (at column 3 of 'P(Non')");
}

TEST_CASE("axis names holding a quote are written as Python writes them (fuzz regression)", "[core][jax][fuzz]") {
  const redist::device_mesh q = redist::parse_mesh(R"({"it's": 2, 'say "x"': 3})");
  const std::vector<std::uint64_t> shape{6, 4};
  const redist::dist_type t = redist::parse_type(q, R"([{'say "x"'}6, {"it's"}4])");
  CHECK(redist::to_jax(q, t) == R"(PartitionSpec('say "x"', "it's"))");
  CHECK(redist::from_jax(q, shape, redist::to_jax(q, t)) == t);
}

TEST_CASE("ours -> JAX -> ours round-trips on random types", "[core][jax]") {
  std::size_t n = 0;
  for (const auto& w : redist::testing::mixed_workloads()) {
    for (const auto& pt : redist::testing::random_problems(w, 100, 31)) {
      const redist::device_mesh mm = redist::parse_mesh(pt.mesh);
      for (const auto& s : {pt.from, pt.to}) {
        const redist::dist_type t = redist::parse_type(mm, s);
        std::vector<std::uint64_t> gl;
        for (int d = 0; d < t.rank; ++d) gl.push_back(t.dims[d].global);
        INFO(pt.mesh << " " << s);
        CHECK(redist::from_jax(mm, gl, redist::to_jax(mm, t)) == t);
        ++n;
      }
    }
  }
  CHECK(n == 1400);
}

}  // namespace test_jax
