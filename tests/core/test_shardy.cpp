// tests/core/test_shardy.cpp -- Shardy meshes and shardings in and out (core/shardy.hpp),
// checked against XLA's export of the same shardings (core/xla.hpp).
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "redist/core/shardy.hpp"
#include "redist/core/xla.hpp"
#include "redist/exchange.hpp"

// A namespace of its own: the folder's tests compile as one unit (tests/CMakeLists.txt).
namespace test_shardy {

namespace {
using shape = std::vector<std::uint64_t>;

/// The box each world rank holds (ranks outside the mesh hold nothing).
std::map<std::uint64_t, redist::box> held(const redist::placed_mesh& pm, const redist::dist_type& t) {
  std::map<std::uint64_t, redist::box> h;
  for (std::uint64_t p = 0; p < pm.mesh.devices; ++p) h[pm.at(p)] = redist::tile_box(pm.mesh, t, p);
  return h;
}

std::string via_shardy(const char* mesh, const char* sharding, const shape& g) {
  const redist::placed_mesh pm = redist::from_shardy_mesh(mesh);
  return redist::type_text(pm.mesh, redist::from_shardy(pm, sharding, g)).str();
}

/// A Shardy sharding and the HloSharding XLA exports it to, from
/// xla/service/spmd/shardy/test/stablehlo_export_pipeline.mlir (the function named in the
/// comment); `xla_text`: whether to_xla prints XLA's text (XLA keeps the explicit list of a
/// mesh with device_ids, to_xla finds its transposed iota).
struct pair_t {
  const char* mesh;
  const char* sharding;
  shape global;
  const char* hlo;
  bool xla_text;
};
const char* mesh_0 = R"(sdy.mesh @mesh_0 = <["axis_0"=2, "axis_1"=4, "axis_2"=4]>)";
const char* mesh_1 = R"(sdy.mesh @mesh_1 = <["axis_0"=16]>)";
const char* mesh_2 = R"(sdy.mesh @mesh_2 = <["x"=8, "y"=4]>)";
const char* mesh_3 = R"(sdy.mesh @mesh_3 = <["a"=2, "b"=2, "c"=2, "d"=2]>)";
const char* mesh_4 = R"(sdy.mesh @mesh_4 = <["axis_0"=2, "axis_1"=2, "axis_2"=2], device_ids=[0,2,4,6,1,3,5,7]>)";
const char* mesh_5 = R"(sdy.mesh @mesh_5 = <["i"=2, "j"=2]>)";
const std::vector<pair_t> exported = {
    // non_trivial_common_mesh
    {mesh_0, R"(#sdy.sharding<@mesh_0, [{"axis_2"}, {"axis_0", "axis_1"}]>)", {8, 8}, "{devices=[4,8]<=[8,4]T(1,0)}", true},
    {mesh_0, R"(#sdy.sharding<@mesh_0, [{}, {"axis_0"}]>)", {8, 8}, "{devices=[1,2,16]<=[32] last_tile_dim_replicate}", true},
    {mesh_0, R"(#sdy.sharding<@mesh_0, [{"axis_1"}, {"axis_2"}]>)", {8, 16},
     "{devices=[4,4,2]<=[2,16]T(1,0) last_tile_dim_replicate}", true},
    // multiple_shardings
    {mesh_0, R"(#sdy.sharding<@mesh_0, [{}, {"axis_0", "axis_2"}]>)", {8, 8},
     "{devices=[1,8,4]<=[2,4,4]T(0,2,1) last_tile_dim_replicate}", true},
    {mesh_0, R"(#sdy.sharding<@mesh_0, [{}, {"axis_1"}]>)", {8, 16},
     "{devices=[1,4,8]<=[2,4,4]T(1,0,2) last_tile_dim_replicate}", true},
    {mesh_0, R"(#sdy.sharding<@mesh_0, [{"axis_0", "axis_1"}, {"axis_2"}]>)", {8, 16}, "{devices=[8,4]<=[32]}", true},
    {mesh_0, R"(#sdy.sharding_per_value<[<@mesh_0, [{"axis_1","axis_0"}, {}]>]>)", {8, 8},
     "{devices=[8,1,4]<=[2,4,4]T(1,0,2) last_tile_dim_replicate}", true},
    // reshard
    {mesh_0, R"(<@mesh_0, [{"axis_0"}, {"axis_2"}], replicated={"axis_1"}>)", {8, 8},
     "{devices=[2,4,4]<=[2,4,4]T(0,2,1) last_tile_dim_replicate}", true},
    // single_axis
    {mesh_1, R"(#sdy.sharding<@mesh_1, [{"axis_0"}, {}]>)", {32, 8}, "{devices=[16,1]<=[16]}", true},
    // fully_replicated, split_axes, split_constants, collective_permute
    {mesh_2, R"(#sdy.sharding<@mesh_2, [{"y"}, {}]>)", {8, 8}, "{devices=[4,1,8]<=[8,4]T(1,0) last_tile_dim_replicate}", true},
    {mesh_2, R"(#sdy.sharding<@mesh_2, [{}, {}]>)", {8, 8}, "{replicated}", true},
    {mesh_2, R"(#sdy.sharding<@mesh_2, [{"y"}, {"x":(2)2}]>)", {8, 8},
     "{devices=[4,2,4]<=[2,2,2,4]T(3,1,0,2) last_tile_dim_replicate}", true},
    {mesh_2, R"(#sdy.sharding<@mesh_2, [{"x":(1)2}, {"x":(2)4}]>)", {8, 16}, "{devices=[2,4,4]<=[32] last_tile_dim_replicate}",
     true},
    {mesh_2, R"(#sdy.sharding_per_value<[<@mesh_2, [{"x":(1)2, "x":(4)2}, {}]>]>)", {8, 8},
     "{devices=[4,1,8]<=[2,2,2,4]T(0,2,1,3) last_tile_dim_replicate}", true},
    {mesh_2, R"(#sdy.sharding_per_value<[<@mesh_2, [{"x"}, {}]>]>)", {8, 8}, "{devices=[8,1,4]<=[32] last_tile_dim_replicate}",
     true},
    {mesh_2, R"(<@mesh_2, [{"y", "x"}, {}]>)", {32, 8}, "{devices=[32,1]<=[8,4]T(1,0)}", true},
    {mesh_2, R"(#sdy.sharding<@mesh_2, [{"x", "y"}, {}]>)", {32, 2}, "{devices=[32,1]<=[32]}", true},
    // sharding_in_manual_computation_body (open dimensions)
    {mesh_3, R"(#sdy.sharding<@mesh_3, [{"a", ?}, {"b", ?}]>)", {8, 16}, "{devices=[2,2,4]<=[16] last_tile_dim_replicate}", true},
    {mesh_3, R"(#sdy.sharding<@mesh_3, [{"b", ?}, {?}]>)", {16, 32},
     "{devices=[2,1,8]<=[2,2,4]T(1,0,2) last_tile_dim_replicate}", true},
    // multiple_shardings_with_device_list
    {mesh_4, R"(#sdy.sharding<@mesh_4, [{"axis_2"}, {"axis_0", "axis_1"}]>)", {8, 8}, "{devices=[2,4]0,4,1,5,2,6,3,7}", false},
    {mesh_4, R"(#sdy.sharding<@mesh_4, [{}, {"axis_0", "axis_2"}]>)", {8, 8},
     "{devices=[1,4,2]0,4,2,6,1,5,3,7 last_tile_dim_replicate}", false},
    {mesh_4, R"(#sdy.sharding<@mesh_4, [{}, {"axis_1"}]>)", {8, 16},
     "{devices=[1,2,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}", false},
    {mesh_4, R"(#sdy.sharding_per_value<[<@mesh_4, [{"axis_1","axis_0"}, {}]>]>)", {8, 8},
     "{devices=[4,1,2]0,2,1,3,4,6,5,7 last_tile_dim_replicate}", false},
    // free_axis_inside_in_out_shardings_manual_computation
    {mesh_5, R"(#sdy.sharding<@mesh_5, [{"i", ?}, {?}]>)", {4, 8}, "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", true},
    // mesh_with_device_id_should_be_converted_to_maximal_sharding, mesh_empty_should_be_...
    {R"(sdy.mesh @maximal_mesh_0 = <[], device_ids=[0]>)", R"(#sdy.sharding<@maximal_mesh_0, []>)", {8, 8},
     "{maximal device=0}", true},
    {R"(sdy.mesh @maximal_mesh_1 = <[], device_ids=[1]>)", R"(#sdy.sharding_per_value<[<@maximal_mesh_1, []>]>)", {8, 8},
     "{maximal device=1}", true},
    {R"(sdy.mesh @empty_mesh_0 = <[]>)", R"(#sdy.sharding<@empty_mesh_0, [{}, {}]>)", {8, 8}, "{replicated}", false},
};

/// (mesh, sharding, shape) from Shardy's own tests, and what to_shardy prints when it is not
/// the same text (open dimensions, the `<...>` form, `[]` on a maximal mesh).
struct case_t {
  const char* mesh;
  const char* sharding;
  shape global;
  const char* printed;
};
const std::vector<case_t> shardy_cases = {
    // shardy/dialect/sdy/transforms/export/test/reshard_to_collectives.mlir
    {R"(sdy.mesh @mesh2d = <["x"=2, "y"=2]>)", R"(#sdy.sharding<@mesh2d, [{"x"}, {"y"}]>)", {16, 8}, nullptr},
    {R"(sdy.mesh @mesh3d = <["x"=2, "y"=2, "z"=2]>)", R"(#sdy.sharding<@mesh3d, [{"x", "y", "z"}, {}]>)", {16, 8}, nullptr},
    {R"(sdy.mesh @mesh2d_2x8 = <["x"=2, "y"=8]>)", R"(<@mesh2d_2x8, [{"y":(1)4}, {"x"}]>)", {16, 8},
     R"(#sdy.sharding<@mesh2d_2x8, [{"y":(1)4}, {"x"}]>)"},
    {R"(sdy.mesh @mesh3d_4x2x4 = <["x"=4, "y"=2, "z"=4]>)", R"(#sdy.sharding<@mesh3d_4x2x4, [{"x":(1)2}, {"y"}]>)", {16, 8},
     nullptr},
    {R"(sdy.mesh @mesh3d_4x2x4 = <["x"=4, "y"=2, "z"=4]>)", R"(<@mesh3d_4x2x4, [{"x", "z":(2)2}, {"z":(1)2}, {"y"}]>)",
     {16, 8, 8}, R"(#sdy.sharding<@mesh3d_4x2x4, [{"x", "z":(2)2}, {"z":(1)2}, {"y"}]>)"},
    {R"(sdy.mesh @mesh4d_z4 = <["x"=2, "y"=2, "z"=4, "w"=2]>)", R"(<@mesh4d_z4, [{"x", "z":(2)2, "w"}, {"z":(1)2}, {"y"}]>)",
     {16, 8, 8}, R"(#sdy.sharding<@mesh4d_z4, [{"x", "z":(2)2, "w"}, {"z":(1)2}, {"y"}]>)"},
    {R"(sdy.mesh @mesh4d_w4 = <["x"=2, "y"=2, "z"=2, "w"=4]>)", R"(#sdy.sharding<@mesh4d_w4, [{"y", "z", "w":(1)2}, {}]>)",
     {16, 8}, nullptr},
    {R"(sdy.mesh @mesh1d_6 = <["x"=6]>)", R"(#sdy.sharding<@mesh1d_6, [{"x"}, {}]>)", {24, 8}, nullptr},
    {R"(sdy.mesh @mesh2d_4x6 = <["x"=4, "y"=6]>)", R"(#sdy.sharding<@mesh2d_4x6, [{"x"}, {"y":(1)2}]>)", {12, 12}, nullptr},
    {R"(sdy.mesh @mesh2d_non_iota = <["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>)",
     R"(#sdy.sharding<@mesh2d_non_iota, [{"x"}, {}]>)", {16, 8}, nullptr},
    {R"(sdy.mesh @mesh2d_non_iota = <["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>)", R"(<@mesh2d_non_iota, [{"x", "y"}, {}]>)",
     {16, 8}, R"(#sdy.sharding<@mesh2d_non_iota, [{"x", "y"}, {}]>)"},
    {R"(sdy.mesh @mesh2d_non_iota_2 = <["x"=2, "y"=2], device_ids=[3, 1, 2, 0]>)",
     R"(<@mesh2d_non_iota_2, [{}, {"x", "y"}]>)", {16, 8}, R"(#sdy.sharding<@mesh2d_non_iota_2, [{}, {"x", "y"}]>)"},
    // .../export/test/insert_explicit_reshards/meshes.mlir
    {R"(sdy.mesh @mesh_non_iota = <["x"=3, "y"=2], device_ids=[5, 4, 3, 2, 1, 0]>)",
     R"(#sdy.sharding<@mesh_non_iota, [{"x"}]>)", {210}, nullptr},
    // .../export/test/insert_explicit_reshards/reshape.mlir
    {R"(sdy.mesh @mesh_6_4k = <["x"=6, "y"=4096]>)",
     R"(#sdy.sharding_per_value<[<@mesh_6_4k, [{"x":(1)2, "y":(1)2}, {"x":(2)3, "y":(2)2048}, {}]>]>)", {4, 50331648, 16384},
     R"(#sdy.sharding<@mesh_6_4k, [{"x":(1)2, "y":(1)2}, {"x":(2)3, "y":(2)2048}, {}]>)"},
    // .../export/test/resolve_permutation_factors.mlir
    {R"(sdy.mesh @mesh_custom = <["b"=2, "c"=2], device_ids=[3, 2, 1, 0]>)",
     R"(#sdy.sharding_per_value<[#sdy.sharding<@mesh_custom, [{"b", "c"}]>]>)", {8},
     R"(#sdy.sharding<@mesh_custom, [{"b", "c"}]>)"},
    // .../export/test/convert_global_to_local/sdy_collective_permute.mlir
    {R"(sdy.mesh @mesh_b = <["x"=4], device_ids=[1, 2, 3, 0]>)", R"(#sdy.sharding<@mesh_b, [{"x"}]>)", {4}, nullptr},
    // .../export/test/insert_explicit_reshards/unreduced.mlir
    {R"(sdy.mesh @mesh = <["x"=4, "y"=2, "z"=4]>)", R"(#sdy.sharding<@mesh, [{}, {}], unreduced={"y"}>)", {4, 8}, nullptr},
    {R"(sdy.mesh @mesh = <["x"=4, "y"=2, "z"=4]>)", R"(#sdy.sharding<@mesh, [{"x"}, {}], unreduced={"y", "z"}>)", {32, 32},
     nullptr},
    // .../transforms/propagation/test/basic_propagation.mlir
    {R"(sdy.mesh @mesh_a_6 = <["a"=6]>)", R"(#sdy.sharding_per_value<[<@mesh_a_6, [{"a":(1)2, ?}, {"a":(2)3, ?}]>]>)", {2, 4},
     R"(#sdy.sharding<@mesh_a_6, [{"a":(1)2}, {"a":(2)3}]>)"},
    {R"(sdy.mesh @maximal_mesh = <[], device_ids=[0]>)", R"(#sdy.sharding<@maximal_mesh, []>)", {8, 8}, nullptr},
    // .../export/test/resolve_single_device_sharding.mlir
    {R"(sdy.mesh @single_dev_1 = <[], device_ids=[1]>)", R"(<@single_dev_1, []>)", {8, 16},
     R"(#sdy.sharding<@single_dev_1, []>)"},
};

/// The mesh name in `sdy.mesh @name = ...`.
std::string mesh_name(const char* decl) {
  const std::string s(decl);
  const auto at = s.find('@'), end = s.find(' ', at);
  return s.substr(at + 1, end - at - 1);
}
}  // namespace

TEST_CASE("Shardy meshes: axes, device ids, single devices, every written form", "[core][shardy]") {
  const redist::placed_mesh a = redist::from_shardy_mesh(R"(sdy.mesh @mesh = <["x"=2, "y"=4]>)");
  CHECK(redist::placed_mesh_text(a) == "{x: 2, y: 4}");
  const redist::placed_mesh b = redist::from_shardy_mesh(R"(<["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>)");
  CHECK(redist::placed_mesh_text(b) == "{x: 2, y: 2} @ [3, 2, 1, 0]");
  const redist::placed_mesh c = redist::from_shardy_mesh("<[], device_ids=[3]>");
  CHECK(redist::placed_mesh_text(c) == "{} @ [3]");
  CHECK(c.mesh.devices == 1);
  // shardy/.../import/test/import_func_calls_add_data_flow_edges_on_named_computations_false.mlir
  CHECK(redist::from_shardy_mesh(R"(sdy.mesh @mesh = #sdy.mesh<["x"=2, "y"=2]>)") ==
        redist::parse_placed_mesh("{x: 2, y: 2}"));
  CHECK(redist::from_shardy_mesh(R"(#sdy.mesh<["x"=2]>)") == redist::parse_placed_mesh("{x: 2}"));
  CHECK(redist::from_shardy_mesh(R"(<["x"=2]>)") == redist::parse_placed_mesh("{x: 2}"));
  CHECK(redist::from_shardy_mesh(R"(mesh<["x"=2]>)") == redist::parse_placed_mesh("{x: 2}"));
  CHECK(redist::to_shardy_mesh(a) == R"(sdy.mesh @mesh = <["x"=2, "y"=4]>)");
  CHECK(redist::to_shardy_mesh(b, "mesh2d_non_iota") == R"(sdy.mesh @mesh2d_non_iota = <["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>)");
  CHECK(redist::to_shardy_mesh(c, "single_dev") == "sdy.mesh @single_dev = <[], device_ids=[3]>");
}

TEST_CASE("Shardy lists a dimension's axes major-to-minor, redist minor-to-major", "[core][shardy]") {
  const char* m = R"(<["x"=2, "y"=4, "z"=2]>)";
  const shape g{16, 8};
  CHECK(via_shardy(m, R"(#sdy.sharding<@mesh, [{"x"}, {"y", "z"}]>)", g) == "[8{x}16, 1{z, y}8]");
  CHECK(via_shardy(m, R"(#sdy.sharding<@mesh, [{"x", ?}, {?}]>)", g) == "[8{x}16, 8]");
  CHECK(via_shardy(m, R"(#sdy.sharding<@mesh, [{"x"}p1, {}], replicated={"y"}>)", g) == "[8{x}16, 8]");
  CHECK(via_shardy(m, R"(#sdy.sharding<@mesh, [{"y":(2)2}, {"y":(1)2}], unreduced={"x"}>)", g) ==
        "[8{y:(2)2}16, 4{y:(1)2}8] sum{x}");
  CHECK(via_shardy(m, R"(#sdy.sharding<mesh<["x"=2, "y"=4, "z"=2]>, [{"z", "x"}, {}]>)", g) == "[4{x, z}16, 8]");
  // Hand-checked boxes: rank = 8x + 2y + z; dimension 0 split by x, dimension 1 by y (major) then z.
  const redist::placed_mesh pm = redist::from_shardy_mesh(m);
  const redist::dist_type t = redist::from_shardy(pm, R"(<@mesh, [{"x"}, {"y", "z"}]>)", g);
  CHECK(redist::box_text(redist::tile_box(pm.mesh, t, 0)) == "[0, 8) x [0, 1)");
  CHECK(redist::box_text(redist::tile_box(pm.mesh, t, 1)) == "[0, 8) x [1, 2)");
  CHECK(redist::box_text(redist::tile_box(pm.mesh, t, 2)) == "[0, 8) x [2, 3)");
  CHECK(redist::box_text(redist::tile_box(pm.mesh, t, 9)) == "[8, 16) x [1, 2)");
  CHECK(redist::to_shardy(pm, t) == R"(#sdy.sharding<@mesh, [{"x"}, {"y", "z"}]>)");
  CHECK(redist::to_shardy(pm, redist::parse_type(pm.mesh, "[{y:(2)2, x}16, 8] sum{z, y:(1)2}"), "m") ==
        R"(#sdy.sharding<@m, [{"x", "y":(2)2}, {}], unreduced={"y":(1)2, "z"}>)");
}

TEST_CASE("XLA's export of Shardy shardings holds the same boxes per device", "[core][shardy][xla]") {
  for (const auto& c : exported) {
    INFO(c.mesh);
    INFO(c.sharding);
    const redist::placed_mesh pm = redist::from_shardy_mesh(c.mesh);
    const redist::dist_type t = redist::from_shardy(pm, c.sharding, c.global);
    const auto x = redist::from_xla(c.hlo, c.global, pm.mesh.devices);
    CHECK(held(pm, t) == held(x.pm, x.type));
    const std::string hlo = redist::to_xla(pm, t);
    if (c.xla_text) CHECK(hlo == c.hlo);
    const auto y = redist::from_xla(hlo, c.global, pm.mesh.devices);
    CHECK(held(y.pm, y.type) == held(pm, t));
    // And Shardy's text back.
    CHECK(redist::from_shardy(pm, redist::to_shardy(pm, t, mesh_name(c.mesh)), c.global) == t);
  }
}

TEST_CASE("Shardy's own shardings round-trip", "[core][shardy]") {
  std::size_t named = 0;
  for (const auto& c : shardy_cases) {
    INFO(c.mesh);
    INFO(c.sharding);
    const redist::placed_mesh pm = redist::from_shardy_mesh(c.mesh);
    CHECK(redist::from_shardy_mesh(redist::to_shardy_mesh(pm, mesh_name(c.mesh))) == pm);
    CHECK(redist::to_shardy_mesh(pm, mesh_name(c.mesh)) == c.mesh);
    const redist::dist_type t = redist::from_shardy(pm, c.sharding, c.global);
    const std::string s = redist::to_shardy(pm, t, mesh_name(c.mesh));
    CHECK(s == (c.printed ? c.printed : c.sharding));
    CHECK(redist::from_shardy(pm, s, c.global) == t);
    if (t.nsum == 0) {  // the same boxes through XLA's notation
      const auto x = redist::from_xla(redist::to_xla(pm, t), c.global, pm.mesh.devices);
      CHECK(held(x.pm, x.type) == held(pm, t));
    }
    try {  // the same mesh and type through XLA's named sharding (on an order of 0..D-1)
      const auto x = redist::from_xla(redist::to_xla_named(pm, t), c.global);
      CHECK(x.pm == pm);
      CHECK(x.type == t);
      ++named;
    } catch (const redist::redist_error& e) {
      CHECK_THAT(e.what(), Catch::StartsWith("XLA's named mesh holds devices 0.."));
    }
  }
  CHECK(named + 2 >= shardy_cases.size());
}

TEST_CASE("a sharding as an MLIR dump writes it after an argument, in its attribute dictionary", "[core][shardy]") {
  const std::vector<std::uint64_t> g{8, 8};
  const std::string mesh = R"(sdy.mesh @mesh = <["x"=2, "y"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>)";
  const redist::placed_type plain = redist::from_shardy_text(mesh + R"( #sdy.sharding<@mesh, [{"x"}, {"y"}]>)", g);
  for (const char* dict : {R"( {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>})",
                           "\n{ sdy.sharding=#sdy.sharding<@mesh, [{\"x\"}, {\"y\"}]> }\n"}) {
    INFO(dict);
    const redist::placed_type t = redist::from_shardy_text(mesh + dict, g);
    CHECK(t.type == plain.type);
    CHECK(t.pm == plain.pm);
  }
  CHECK_THROWS_WITH(redist::from_shardy_text(mesh + R"( {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>)", g),
                    "expected '}' after the sharding to close '{sdy.sharding = ...'");
  // Another attribute is not a sharding: the mesh's parse names the brace.
  CHECK_THROWS_WITH(redist::from_shardy_text(mesh + R"( {sdy.other = #sdy.sharding<@mesh, [{"x"}, {"y"}]>})", g),
                    Catch::StartsWith("expected the end of the mesh but found '{'"));
}

TEST_CASE("bad Shardy text names the problem and the column", "[core][shardy]") {
  auto column_of = [](auto f) {
    try {
      f();
    } catch (const redist::redist_error& e) {
      return e.column();
    }
    return -2;
  };
  const redist::placed_mesh pm = redist::from_shardy_mesh(R"(<["x"=2, "y"=6]>)");
  const shape g{12, 12};
  // A sub-axis that is not a run of the ascending prime sub-axes (y = 2 x 3).
  const char* s3 = R"(#sdy.sharding<@mesh, [{"y":(1)3}, {}]>)";
  CHECK_THROWS_WITH(redist::from_shardy(pm, s3, g),
                    Catch::StartsWith(R"(sub-axis "y":(1)3 is not a run of the prime sub-axes of "y" (size 6: "y":(1)2, "y":(2)3); )"
                                      R"(no type on this mesh says it (its box layout does: shardy_layout, xla_layout) (at column 24)"));
  CHECK(column_of([&] { redist::from_shardy(pm, s3, g); }) == 23);
  CHECK(via_shardy(R"(<["x"=2, "y"=6]>)", R"(<@mesh, [{"y":(2)3}, {"y":(1)2}]>)", g) == "[4{y:(2)3}12, 6{y:(1)2}12]");
  CHECK_THROWS_WITH(redist::from_shardy(pm, R"(<@mesh, [{"y":(4)3}, {}]>)", g),
                    Catch::StartsWith(R"(sub-axis "y":(4)3 does not fit in axis "y" of size 6)"));
  CHECK_THROWS_WITH(redist::from_shardy(pm, R"(<@mesh, [{"q"}, {}]>)", g),
                    R"(unknown axis "q" (the mesh has "x", "y") (at column 11 of '<@mesh, [{"q"}, {}]>'))");
  CHECK_THROWS_WITH(redist::from_shardy(pm, R"(<@mesh, [{"x"}, {"x"}]>)", g),
                    Catch::StartsWith(R"(axis "x" is used twice (at column 18)"));
  CHECK_THROWS_WITH(redist::from_shardy(pm, R"(<@mesh, [{"x"}], replicated={"x"}>)", g),
                    Catch::StartsWith(R"(the sharding has 1 dimensions but the array has 2 (at column 9)"));
  CHECK_THROWS_WITH(redist::from_shardy(pm, R"(<@mesh, [{"x"}, {}], replicated={"x"}>)", g),
                    Catch::StartsWith(R"(axis "x" is used twice (at column 34)"));
  CHECK(column_of([&] { redist::from_shardy(pm, R"(<@mesh, [{}, {}, {}]>)", g); }) == 17);
  CHECK_THROWS_WITH(redist::from_shardy(pm, R"(<mesh<["x"=2]>, [{}, {}]>)", g),
                    Catch::StartsWith("the sharding's mesh {x: 2} is not the given mesh {x: 2, y: 6} (at column 2"));
  CHECK_THROWS_WITH(redist::from_shardy(pm, R"(#sdy.sharding_per_value<[<@mesh, [{}, {}]>, <@mesh, [{}, {}]>]>)", g),
                    Catch::StartsWith("a sharding of several values: pass one"));
  CHECK_THROWS_WITH(redist::from_shardy(pm, R"(<@mesh, [{}, {}], manual={"x"}>)", g),
                    Catch::StartsWith("expected replicated={...} or unreduced={...} (at column 19"));
  CHECK_THROWS_WITH(redist::from_shardy(pm, R"(<@mesh, [{"x"}, {}])", g), Catch::Contains("but the text ended"));
  // Meshes.
  CHECK_THROWS_WITH(redist::from_shardy_mesh(R"(<["x"=2, "y"=2], device_ids=[3, 2, 1]>)"),
                    Catch::StartsWith("the device list has 3 ranks but the mesh has 4 devices (at column 37"));
  CHECK_THROWS_WITH(redist::from_shardy_mesh(R"(<["x"=2], device_ids=[1, 1]>)"),
                    Catch::StartsWith("device 1 is listed twice (positions 0 and 1) (at column 26"));
  CHECK_THROWS_WITH(redist::from_shardy_mesh(R"(<["x"=2], device_ids=[1, 4294967296]>)"),
                    Catch::StartsWith("a device id must be below 2^32 (at column 26"));
  CHECK_THROWS_WITH(redist::from_shardy_mesh(R"(<["x"=2, "x"=2]>)"), Catch::StartsWith("axis 'x' is declared twice"));
  CHECK(column_of([] { redist::from_shardy_mesh(R"(<["x"=0]>)"); }) == 6);
  CHECK_THROWS_WITH(redist::from_shardy_mesh(R"(<["x"=2], ids=[0, 1]>)"),
                    Catch::StartsWith("expected device_ids=[...] after the mesh axes (at column 11"));
  // Printing what Shardy cannot say.
  CHECK_THROWS_WITH(redist::to_shardy(pm, redist::parse_type(pm.mesh, "[12, 12] max{x}")),
                    Catch::StartsWith("pending max values have no Shardy spelling"));
  const redist::placed_mesh q = redist::parse_placed_mesh(R"({'say "x"': 2})");
  CHECK_THROWS_WITH(redist::to_shardy_mesh(q), Catch::Contains("holds a quote or backslash"));
}

TEST_CASE("Shardy sub-axes in any order read as the boxes they name", "[core][shardy][box]") {
  const std::string mesh = R"(sdy.mesh @mesh = <["x"=2, "y"=6]> )";
  const shape g{12, 12};
  auto make = [](std::pair<std::uint64_t, std::uint64_t> a, std::pair<std::uint64_t, std::uint64_t> b) {
    redist::box x;
    x.rank = 2;
    x.lo = {a.first, b.first};
    x.hi = {a.second, b.second};
    return x;
  };
  // y's 3 major ("y":(1)3 on y = 2 x 3): the y coordinate c cuts the rows by c / 2; ranks
  // that differ along x or c % 2 only are replicas.
  const std::string t1 = mesh + R"(#sdy.sharding<@mesh, [{"y":(1)3}, {}]>)";
  CHECK_FALSE(redist::shardy_type_says(t1, g));
  CHECK_THROWS_WITH(redist::from_shardy_text(t1, g), Catch::Contains("no type on this mesh says it"));
  const redist::box_layout l = redist::shardy_layout(t1, g);
  REQUIRE(l.world() == 12);
  for (std::uint64_t r = 0; r < 12; ++r) {
    const std::uint64_t c = r % 6;
    CHECK(*l.boxes[r] == make({4 * (c / 2), 4 * (c / 2) + 4}, {0, 12}));
  }
  CHECK(redist::box_layout_problem(l).empty());
  // XLA writes the same layout as a transposed iota: devices [2, 3, 2] (x, y's 3, y's 2),
  // y's 3 first, the other two replicating.
  const redist::placed_type x = redist::from_xla("{devices=[3,1,4]<=[2,3,2]T(1,0,2) last_tile_dim_replicate}", g, 12);
  for (const auto& [r, b] : held(x.pm, x.type)) CHECK(*l.boxes[r] == b);

  // y's 2 minor on the rows, its 3 major on the columns, on listed devices in a world of 16.
  const std::string t2 = R"(sdy.mesh @mesh = <["x"=2, "y"=6], device_ids=[11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]> )"
                         R"(#sdy.sharding<@mesh, [{"y":(3)2}, {"y":(1)3}]>)";
  CHECK_FALSE(redist::shardy_type_says(t2, g));
  const redist::box_layout l2 = redist::shardy_layout(t2, g, 16);
  REQUIRE(l2.world() == 16);
  for (std::uint64_t p = 0; p < 12; ++p) {
    const std::uint64_t c = p % 6;
    CHECK(*l2.boxes[11 - p] == make({6 * (c % 2), 6 * (c % 2) + 6}, {4 * (c / 2), 4 * (c / 2) + 4}));
  }
  for (std::uint64_t r = 12; r < 16; ++r) CHECK_FALSE(l2.boxes[r].has_value());
  // Uneven: 7 rows in ceil tiles of 3 (3, 3, 1).
  const redist::box_layout l3 = redist::shardy_layout(t1, shape{7, 2});
  CHECK(*l3.boxes[5] == make({6, 7}, {0, 2}));
  // Sub-axes in redist's order stay types; sums and overlapping sub-axes are refused.
  CHECK(redist::shardy_type_says(mesh + R"(#sdy.sharding<@mesh, [{"y":(2)3}, {"y":(1)2}]>)", g));
  CHECK_THROWS_WITH(redist::shardy_layout(mesh + R"(#sdy.sharding<@mesh, [{"y":(1)3}, {}], unreduced={"x"}>)", g),
                    "unreduced={...}: a box layout holds values, not partial ones (reduce them first)");
  CHECK_THROWS_WITH(redist::shardy_layout(mesh + R"(#sdy.sharding<@mesh, [{"y":(1)2}, {"y":(1)3}]>)", g),
                    Catch::StartsWith(R"(sub-axis "y":(1)3 is not a run of the prime sub-axes of "y")"));

  // XLA's named shardings of the same meshes name the same boxes (xla_layout).
  const char* x1 = "{mesh['x'=2,'y'=6], [{'y':(1)3}, {}]}";
  CHECK_FALSE(redist::xla_type_says(x1, g));
  CHECK_THROWS_WITH(redist::from_xla(x1, g), Catch::Contains("no type on this mesh says it"));
  CHECK(redist::xla_layout(x1, g).boxes == l.boxes);
  const char* x2 = "{mesh[x=2,y=6], device_ids=(11,10,9,8,7,6,5,4,3,2,1,0), [{y:(3)2}, {y:(1)3}]}";
  CHECK_FALSE(redist::xla_type_says(x2, g));
  CHECK(redist::xla_layout(x2, g, 1, 16).boxes == l2.boxes);
  CHECK(redist::xla_type_says("{mesh['x'=2,'y'=6], [{'y':(2)3}, {'y':(1)2}]}", g));
  CHECK(redist::xla_type_says("{devices=[2,1]<=[2]}", g));
  CHECK_THROWS_WITH(redist::xla_type_says("{mesh['x'=2,'y'=6], [{'y':(1)2}, {'q'}]}", g),
                    Catch::StartsWith(R"(unknown axis "q")"));
  CHECK_THROWS_WITH(redist::xla_layout("{mesh['x'=2,'y'=6], [{'y':(1)3}, {}], unreduced={'x'}}", g),
                    "unreduced={...}: a box layout holds values, not partial ones (reduce them first)");
}

TEST_CASE("every prefix of a mesh or sharding parses or is refused with a redist_error", "[core][shardy][fuzz]") {
  std::size_t refused = 0;
  for (const auto& c : shardy_cases) {
    const redist::placed_mesh pm = redist::from_shardy_mesh(c.mesh);
    const std::string m = c.mesh, s = c.sharding;
    for (std::size_t n = 0; n <= m.size(); ++n) {
      try {
        redist::from_shardy_mesh(m.substr(0, n));
      } catch (const redist::redist_error& e) {
        ++refused;
        CHECK(e.column() <= static_cast<int>(n));
      }
    }
    for (std::size_t n = 0; n <= s.size(); ++n) {
      bool ok = true;
      try {
        ok = redist::check(pm.mesh, redist::from_shardy(pm, s.substr(0, n), c.global)).ok();
      } catch (const redist::redist_error& e) {
        ++refused;
        CHECK(e.column() <= static_cast<int>(n));
      }
      CHECK(ok);
    }
  }
  CHECK(refused > 1000);
}

TEST_CASE("device lists are checked without a table of the world's ranks", "[core][shardy][placement]") {
  // A world of 2^32 ranks and a mesh of 2^60 devices without a list cost nothing.
  const redist::placed_mesh big = redist::from_shardy_mesh(R"(<["x"=2], device_ids=[4000000000, 0]>)");
  CHECK(big.min_world() == 4000000001);
  const redist::placed_mesh huge = redist::from_shardy_mesh(R"(<["x"=1152921504606846976]>)");
  CHECK(redist::check_placement(huge, 0).ok());
  CHECK(redist::from_shardy(huge, R"(<mesh<["x"=1152921504606846976]>, [{"x"}]>)", shape{8}).dims[0].n == 60);
  // The first problem in list order is reported, as before.
  redist::placed_mesh p;
  p.mesh = redist::parse_mesh("{x: 3}");
  p.devices = {9, 1, 1};
  CHECK(redist::check_placement(p, 4).message.view() == "device 9 (position 0) is not a rank of the world of 4 ranks");
  redist::placed_mesh q;
  q.mesh = redist::parse_mesh("{x: 4}");
  q.devices = {1, 3, 3, 9};
  CHECK(redist::check_placement(q, 4).message.view() == "device 3 is listed twice (positions 1 and 2)");
  CHECK_THROWS_WITH(redist::parse_placed_mesh("{x: 4} @ [5, 2, 7, 2]"),
                    "device 2 is listed twice (positions 1 and 3) (at column 20 of '{x: 4} @ [5, 2, 7, 2]')");
  CHECK_THROWS_WITH(redist::from_shardy_mesh(R"(<["x"=4], device_ids=[5, 7, 5, 7]>)"),
                    Catch::StartsWith("device 5 is listed twice (positions 0 and 2) (at column 29"));
}

}  // namespace test_shardy
