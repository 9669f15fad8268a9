// tests/core/test_xla.cpp -- XLA HloSharding text in and out (core/xla.hpp).
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "redist/core/xla.hpp"
#include "redist/exchange.hpp"
#include "support/random_problems.hpp"

// A namespace of its own: the folder's tests compile as one unit (tests/CMakeLists.txt).
namespace test_xla {

namespace {
using shape = std::vector<std::uint64_t>;

/// The box each world rank holds (ranks outside the mesh hold nothing).
std::map<std::uint64_t, redist::box> held(const redist::placed_mesh& pm, const redist::dist_type& t) {
  std::map<std::uint64_t, redist::box> h;
  for (std::uint64_t p = 0; p < pm.mesh.devices; ++p) h[pm.at(p)] = redist::tile_box(pm.mesh, t, p);
  return h;
}
std::map<std::uint64_t, redist::box> held(const redist::placed_type& p) { return held(p.pm, p.type); }

std::string box_of(const redist::placed_type& p, std::uint64_t rank) { return redist::box_text(held(p).at(rank)); }

/// The ranks that hold the same value as each rank: the mesh's devices that differ from it
/// only along the sub-axes the type leaves unused (not split, not summed). With the boxes this
/// is the whole layout: a pending sum adds one value of each such class of a tile, whichever
/// replicas (XLA sorts each group of replicas, which pairs them up differently).
std::map<std::uint64_t, std::vector<std::uint64_t>> same_value(const redist::placed_type& p) {
  const redist::device_mesh& m = p.pm.mesh;
  const std::uint64_t used = redist::used_mask(p.type);
  std::map<std::uint64_t, std::vector<std::uint64_t>> g;
  for (std::uint64_t a = 0; a < m.devices; ++a)
    for (std::uint64_t b = 0; b < m.devices; ++b) {
      bool same = true;
      for (int k = 0; k < m.nsub; ++k) same = same && (!((used >> k) & 1) || m.coord(k, a) == m.coord(k, b));
      if (same) g[p.pm.at(a)].push_back(p.pm.at(b));
    }
  for (auto& [r, v] : g) std::sort(v.begin(), v.end());
  return g;
}

/// Shardings as XLA's own tests write them, the array shape they apply to, and whether
/// to_xla gives the same text back (XLA prints an explicit list where it was built from one;
/// to_xla prints the (transposed) iota whenever the list is one).
struct case_t {
  const char* text;
  shape global;
  bool same_text;
};
const std::vector<case_t> xla_cases = {
    // xla/service/hlo_sharding_test.cc (ToStringReplicatedTest, ToStringAssignDeviceTest,
    // ToStringTiledTest, ToStringIotaTiledTest, ToStringTupleTest, OstreamTest)
    {"{replicated}", {4, 6}, true},
    {"{maximal device=7}", {4}, true},
    {"{devices=[2,1,2]2,3,5,7}", {4, 3, 6}, true},
    {"{devices=[3,4]<=[2,2,3]T(2,1,0)}", {6, 8}, true},
    {"{devices=[1,2]3,5}", {7, 25}, true},
    {"{devices=[1,1,2,2]0,1,2,3}", {3, 1, 5, 7}, false},
    // xla/service/hlo_sharding_test.cc (V3ToV2Sharding: PartialWithTranspose, SplitAxes1..3,
    // TransposedIota2), the TileAssignment(dims, reshape, perm) written as text; SplitAxes1's
    // [2,8,4] T(2,0,1) has iota dimensions 0 and 1 adjacent in both orders: canonically [16,4] T(1,0)
    {"{devices=[1,8,4]<=[2,4,4]T(0,2,1) last_tile_dim_replicate}", {8, 8}, true},
    {"{devices=[8,8]<=[2,8,4]T(2,0,1) last_tile_dim_replicate}", {64}, false},
    {"{devices=[16,4]<=[2,4,2,4]T(3,1,0,2) last_tile_dim_replicate}", {64}, true},
    {"{devices=[4,16]<=[2,4,2,4]T(0,2,1,3)}", {16, 64}, true},
    {"{devices=[4,8]<=[2,4,4]T(1,0,2)}", {8, 8}, true},
    // xla/service/spmd/spmd_partitioner_test.cc (SingleDeviceToTiled, TiledToTiledEven,
    // TiledToTiledUneven: f32[7,31,128])
    {"{devices=[2,1]1,0}", {2, 3}, true},
    {"{devices=[1,2]0,1}", {8, 2}, false},
    {"{devices=[1,2,1]0,1}", {7, 31, 128}, false},
    {"{devices=[2,1,1]0,1}", {7, 31, 128}, false},
    // xla/service/spmd/shardy/shardy_xla_pass_test.cc (AllowSpmdShardingPropagation...,
    // ElementWise, CostantSplitter, Dot, DotMergeOperands3)
    {"{devices=[2,1,1,4]<=[8] last_tile_dim_replicate}", {8, 128, 512}, true},
    {"{devices=[2,2,1,2]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}", {8, 128, 512}, true},
    {"{devices=[2,2,2]<=[8]}", {8, 256, 128}, true},
    {"{devices=[2,1]<=[2]}", {6, 3}, true},
    {"{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}", {8, 16}, true},
    {"{devices=[4,2]<=[2,2,2]T(2,1,0)}", {128, 512}, true},
    // xla/service/spmd/shardy/test/stablehlo_export_pipeline.mlir (non_trivial_common_mesh,
    // split_axes, multiple_shardings_with_device_list)
    {"{devices=[4,4,2]<=[2,16]T(1,0) last_tile_dim_replicate}", {8, 16}, true},
    {"{devices=[4,2,4]<=[2,2,2,4]T(3,1,0,2) last_tile_dim_replicate}", {8, 8}, true},
    {"{devices=[2,4]0,4,1,5,2,6,3,7}", {8, 8}, false},
    {"{devices=[1,4,2]0,4,2,6,1,5,3,7 last_tile_dim_replicate}", {8, 8}, false},
    {"{devices=[4,1,2]0,2,1,3,4,6,5,7 last_tile_dim_replicate}", {8, 8}, false},
    // xla/hlo/ir/hlo_sharding_test.cc (V3ToV2Sharding, Unreduced: a named sharding with
    // unreduced axes as subgroups; HloSharding::Unreduced), partial sums of a tile, of it all
    {"{devices=[2,1,2]<=[4] last_tile_dims={unreduced}}", {8, 8}, true},
    {"{devices=[2,1,2,2]<=[2,2,2]T(0,2,1) last_tile_dims={unreduced, replicated}}", {8, 8}, true},
    {"{unreduced}", {4, 6}, true},
};
}  // namespace

TEST_CASE("a tile assignment maps to a placed mesh with one axis per split dimension", "[core][xla]") {
  // 8 x 6 in 2 row blocks, each on 2 devices: ranks 0 and 1 rows [0, 4), ranks 2 and 3 rows [4, 8).
  const auto p = redist::from_xla("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", shape{8, 6});
  CHECK(redist::placed_mesh_text(p.pm) == "{d0: 2, r: 2}");
  CHECK(redist::type_text(p.pm.mesh, p.type).str() == "[4{d0}8, 6]");
  CHECK(box_of(p, 0) == "[0, 4) x [0, 6)");
  CHECK(box_of(p, 1) == "[0, 4) x [0, 6)");
  CHECK(box_of(p, 2) == "[4, 8) x [0, 6)");
  CHECK(box_of(p, 3) == "[4, 8) x [0, 6)");
  // Explicit ids place the mesh: tile (i, 0, k) is on ids[2i + k].
  const auto q = redist::from_xla("{devices=[2,1,2]2,3,5,7}", shape{4, 3, 6});
  CHECK(redist::placed_mesh_text(q.pm) == "{d0: 2, d2: 2} @ [2, 3, 5, 7]");
  CHECK(held(q).size() == 4);
  CHECK(box_of(q, 2) == "[0, 2) x [0, 3) x [0, 3)");
  CHECK(box_of(q, 3) == "[0, 2) x [0, 3) x [3, 6)");
  CHECK(box_of(q, 5) == "[2, 4) x [0, 3) x [0, 3)");
  CHECK(box_of(q, 7) == "[2, 4) x [0, 3) x [3, 6)");
  // Uneven: 31 in 2 tiles of 16 (XLA pads the last one, as redist does).
  const auto u = redist::from_xla("{devices=[1,2,1]0,1}", shape{7, 31, 128});
  CHECK(box_of(u, 0) == "[0, 7) x [0, 16) x [0, 128)");
  CHECK(box_of(u, 1) == "[0, 7) x [16, 31) x [0, 128)");
  // Several replication subgroups are named r0, r1.
  const auto s = redist::from_xla("{devices=[2,2,2]<=[8] last_tile_dims={replicated, replicated}}", shape{4});
  CHECK(redist::placed_mesh_text(s.pm) == "{d0: 2, r0: 2, r1: 2}");
  CHECK(held(s) == held(redist::from_xla("{devices=[2,4]<=[8] last_tile_dim_replicate}", shape{4})));
}

TEST_CASE("replicated and maximal shardings", "[core][xla]") {
  const auto r = redist::from_xla("{replicated}", shape{4, 6}, 4);
  CHECK(redist::placed_mesh_text(r.pm) == "{r: 4}");
  for (std::uint64_t k = 0; k < 4; ++k) CHECK(box_of(r, k) == "[0, 4) x [0, 6)");
  CHECK(redist::to_xla(r.pm, r.type) == "{replicated}");
  const auto one = redist::from_xla("replicated", shape{4, 6});  // braces are optional
  CHECK(redist::placed_mesh_text(one.pm) == "{}");
  const auto m = redist::from_xla("{maximal device=3}", shape{4, 6});
  CHECK(redist::placed_mesh_text(m.pm) == "{} @ [3]");
  CHECK(held(m).size() == 1);
  CHECK(box_of(m, 3) == "[0, 4) x [0, 6)");
  CHECK(redist::to_xla(m.pm, m.type) == "{maximal device=3}");
  // hlo_sharding_test.cc HloReplicateShardingWithMetadataTest: metadata is skipped.
  CHECK(held(redist::from_xla("{replicated metadata={{op_name=\"b\"}, {op_name=\"c\"}}}", shape{2}, 2)) ==
        held(redist::from_xla("{replicated}", shape{2}, 2)));
  // Replicated on ranks other than 0..D-1 keeps its ranks.
  const redist::placed_mesh pm = redist::parse_placed_mesh("{x: 2} @ [5, 4]");
  const redist::dist_type t = redist::parse_type(pm.mesh, "[6]");
  CHECK(redist::to_xla(pm, t) == "{devices=[1,2]4,5 last_tile_dim_replicate}");  // replicas in device order
  CHECK(held(redist::from_xla(redist::to_xla(pm, t), shape{6})) == held(pm, t));
}

TEST_CASE("to_xla writes each replication group in device order, as XLA's PartialTile does", "[core][xla]") {
  // XLA prints {devices=[2,1,2]2,0,3,1 last_tile_dim_replicate} with each group sorted:
  // 0,2,1,3, a transposed iota.
  const auto p = redist::from_xla("{devices=[2,1,2]2,0,3,1 last_tile_dim_replicate}", shape{4, 6});
  const std::string printed = redist::to_xla(p.pm, p.type);
  CHECK(printed == "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
  CHECK(held(redist::from_xla(printed, shape{4, 6})) == held(p));
  // A transposed iota whose groups are out of order: XLA sorts its group dimensions
  // (GroupMinorIotaDimsSorted), here 0,2,1,3 and 4,6,5,7 into the plain iota.
  const auto g = redist::from_xla("{devices=[2,1,4]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}", shape{4, 6});
  CHECK(redist::to_xla(g.pm, g.type) == "{devices=[2,1,4]<=[8] last_tile_dim_replicate}");
  CHECK(held(redist::from_xla(redist::to_xla(g.pm, g.type), shape{4, 6})) == held(g));
  // Sorted groups that make no iota stay a list; the tiles' order is kept.
  const redist::placed_mesh pm = redist::parse_placed_mesh("{x: 2, y: 2} @ [7, 5, 4, 6]");
  const redist::dist_type t = redist::parse_type(pm.mesh, "[{x}4, 6]");
  CHECK(redist::to_xla(pm, t) == "{devices=[2,1,2]5,7,4,6 last_tile_dim_replicate}");
  CHECK(held(redist::from_xla(redist::to_xla(pm, t), shape{4, 6})) == held(pm, t));
  // With pending sums only the replicated (last) dimension is sorted: XLA keeps the
  // unreduced subgroup's order. Position 4y + 2x + r: tile y, partial sums over x, replicas r.
  const redist::placed_mesh q = redist::parse_placed_mesh("{y: 2, x: 2, r: 2} @ [3, 2, 1, 0, 7, 6, 5, 4]");
  const redist::dist_type s = redist::parse_type(q.mesh, "[{y}4] sum{x}");
  const std::string text = redist::to_xla(q, s);
  CHECK(text == "{devices=[2,2,2]2,3,0,1,6,7,4,5 last_tile_dims={unreduced, replicated}}");
  const auto back = redist::from_xla(text, shape{4});
  CHECK(held(back) == held(q, s));
  CHECK(same_value(back) == same_value(redist::placed_type{q, s}));
}

TEST_CASE("iota, transposed iota and explicit lists of the same devices agree", "[core][xla]") {
  // reshape(iota(12), [2,2,3]) transposed by (2,1,0), read row-major.
  const auto a = redist::from_xla("{devices=[3,4]<=[2,2,3]T(2,1,0)}", shape{6, 8});
  const auto b = redist::from_xla("{devices=[3,4]0,6,3,9,1,7,4,10,2,8,5,11}", shape{6, 8});
  CHECK(held(a) == held(b));
  CHECK(redist::to_xla(b.pm, b.type) == "{devices=[3,4]<=[2,2,3]T(2,1,0)}");
  // hlo_sharding_test.cc V1V2TileEquivalence: [2,2,2] T(2,0,1) is 0,2,4,6,1,3,5,7; XLA's
  // canonical form merges the iota dimensions 0 and 1 (adjacent in both orders).
  const auto c = redist::from_xla("{devices=[2,2,2]0,2,4,6,1,3,5,7}", shape{2, 2, 2});
  const auto d = redist::from_xla("{devices=[2,2,2]<=[2,2,2]T(2,0,1)}", shape{2, 2, 2});
  CHECK(held(c) == held(d));
  CHECK(redist::to_xla(c.pm, c.type) == "{devices=[2,2,2]<=[4,2]T(1,0)}");
  CHECK(redist::to_xla(d.pm, d.type) == "{devices=[2,2,2]<=[4,2]T(1,0)}");
  // last_tile_dims={replicated} is last_tile_dim_replicate.
  CHECK(held(redist::from_xla("{devices=[2,1,2]<=[4] last_tile_dims={replicated}}", shape{8, 6})) ==
        held(redist::from_xla("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", shape{8, 6})));
}

TEST_CASE("XLA's own shardings round-trip: parse, print, parse gives the same boxes per rank", "[core][xla]") {
  for (const auto& c : xla_cases) {
    INFO(c.text);
    const auto p = redist::from_xla(c.text, c.global, 4);
    const std::string printed = redist::to_xla(p.pm, p.type);
    INFO(printed);
    const auto q = redist::from_xla(printed, c.global, p.pm.mesh.devices);
    CHECK(held(p) == held(q));
    CHECK(same_value(p) == same_value(q));
    CHECK(redist::to_xla(q.pm, q.type) == printed);  // printing is canonical
    if (c.same_text) CHECK(printed == c.text);
  }
}

TEST_CASE("to_xla writes types on any placed mesh, sub-axes and axis orders included", "[core][xla]") {
  const redist::placed_mesh pm = redist::parse_placed_mesh("{x: 4, y: 2}");
  const shape g{8, 6};
  const char* types[] = {"[{x}8, {y}6]", "[{y, x}8, 6]", "[{x, y}8, 6]", "[{x:(2)2}8, {x:(1)2}6]",
                         "[{x:(1)2, y}8, 6]", "[8, {x:(2)2}6]", "[8, {x, y}6]"};
  for (const char* ts : types) {
    INFO(ts);
    const redist::dist_type t = redist::parse_type(pm.mesh, ts);
    const std::string s = redist::to_xla(pm, t);
    INFO(s);
    CHECK(held(redist::from_xla(s, g)) == held(pm, t));
  }
  CHECK(redist::to_xla(pm, redist::parse_type(pm.mesh, "[{x}8, {y}6]")) == "{devices=[4,2]<=[8]}");
  CHECK(redist::to_xla(pm, redist::parse_type(pm.mesh, "[{x}8, 6]")) == "{devices=[4,1,2]<=[8] last_tile_dim_replicate}");
  CHECK(redist::to_xla(pm, redist::parse_type(pm.mesh, "[{y}8, {x}6]")) == "{devices=[2,4]<=[4,2]T(1,0)}");
  CHECK(redist::to_xla(pm, redist::parse_type(pm.mesh, "[{x:(1)2, y}8, 6]")) ==
        "{devices=[4,1,2]<=[4,2]T(1,0) last_tile_dim_replicate}");  // tile i: x:(1)2 = i % 2, y = i / 2
  // A permuted placement that is no transposed iota: the explicit list.
  const redist::placed_mesh q = redist::parse_placed_mesh("{x: 2, y: 2} @ [3, 1, 0, 2]");
  const redist::dist_type t = redist::parse_type(q.mesh, "[{x}8, {y}6]");
  CHECK(redist::to_xla(q, t) == "{devices=[2,2]3,1,0,2}");
  CHECK_THROWS_WITH(redist::to_xla(pm, redist::parse_type(pm.mesh, "[{x}8, 6] max{y}")),
                    "pending max values have no HloSharding (XLA's unreduced values are sums)");
}

TEST_CASE("unreduced subgroups are pending sums; sharding groups are set aside", "[core][xla]") {
  const shape g{8, 6};
  // Partial sums of each tile over a trailing subgroup dimension: the axis `u`, summed.
  const auto p = redist::from_xla("{devices=[2,1,2]<=[4] last_tile_dims={unreduced}}", g);
  CHECK(redist::placed_mesh_text(p.pm) == "{d0: 2, u: 2}");
  CHECK(redist::type_text(p.pm.mesh, p.type).str() == "[4{d0}8, 6] sum{u}");
  const auto both = redist::from_xla("{devices=[2,1,2,2]<=[8] last_tile_dims={unreduced, replicated}}", g);
  CHECK(redist::placed_mesh_text(both.pm) == "{d0: 2, u: 2, r: 2}");
  CHECK(redist::type_text(both.pm.mesh, both.type).str() == "[4{d0}8, 6] sum{u}");
  const auto twice = redist::from_xla("{devices=[1,1,2,2]<=[4] last_tile_dims={unreduced, unreduced}}", g);
  CHECK(redist::placed_mesh_text(twice.pm) == "{u0: 2, u1: 2}");
  CHECK(twice.type.nsum == 2);
  const auto all = redist::from_xla("{unreduced}", g, 4);
  CHECK(redist::placed_mesh_text(all.pm) == "{u: 4}");
  CHECK(redist::type_text(all.pm.mesh, all.type).str() == "[8, 6] sum{u}");
  CHECK(redist::from_xla("{unreduced}", g).type.nsum == 0);  // one device holds the whole value
  // to_xla writes sums so, in XLA's order of subgroups (unreduced, then replicated).
  const redist::placed_mesh pm = redist::parse_placed_mesh("{x: 4, y: 2}");
  auto xla = [&](const char* t) { return redist::to_xla(pm, redist::parse_type(pm.mesh, t)); };
  CHECK(xla("[{x}8, 6] sum{y}") == "{devices=[4,1,2]<=[8] last_tile_dims={unreduced}}");
  CHECK(xla("[{y}8, 6] sum{x:(1)2}") == "{devices=[2,1,2,2]<=[4,2]T(1,0) last_tile_dims={unreduced, replicated}}");
  CHECK(xla("[8, 6] sum{x, y}") == "{unreduced}");
  CHECK(xla("[8, 6] sum{y}") == "{devices=[1,1,2,4]<=[4,2]T(1,0) last_tile_dims={unreduced, replicated}}");
  CHECK(redist::to_xla(redist::parse_placed_mesh("{x: 2} @ [5, 4]"), redist::parse_type(redist::parse_mesh("{x: 2}"),
                                                                                         "[8] sum{x}")) ==
        "{devices=[1,2]5,4 last_tile_dims={unreduced}}");
  // Sharding groups (a hint to XLA's propagation) change no layout; one per sharding.
  for (const char* s : {"{devices=[2,2]<=[4] shard_as 1}", "{devices=[2,2]<=[4] shard_like 0 metadata={op_name=\"a\"}}",
                        "{devices=[2,1,2]<=[4] last_tile_dim_replicate shard_as 7}"}) {
    INFO(s);
    const std::string plain = std::string(s).substr(0, std::string(s).find(" shard_")) + "}";
    CHECK(held(redist::from_xla(s, g)) == held(redist::from_xla(plain, g)));
  }
  const auto replicated = redist::from_xla("{replicated shard_as 2}", g, 2);
  CHECK(redist::type_text(replicated.pm.mesh, replicated.type).str() == "[8, 6]");
  CHECK(redist::placed_mesh_text(replicated.pm) == "{r: 2}");
  CHECK(redist::from_xla("{maximal device=3 shard_like 1}", g).pm.at(0) == 3);
  CHECK(redist::from_xla("{unreduced shard_as 0}", g, 2).type.nsum == 1);
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,2]<=[4] shard_as 1 shard_like 2}", g),
                    "a second sharding group (at column 32 of '{devices=[2,2]<=[4] shard_as 1 shard_like 2}')");
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,2]<=[4] shard_as x}", g), Catch::StartsWith("expected a number"));
}

TEST_CASE("bad HloShardings name the problem and the column", "[core][xla]") {
  auto column_of = [](const char* s, const shape& g) {
    try {
      redist::from_xla(s, g);
    } catch (const redist::redist_error& e) {
      return e.column();
    }
    return -2;
  };
  const shape g2{4, 4};
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,2]0,1,2}", g2),
                    "the tile assignment [2,2] has 4 tiles but 3 devices are listed (at column 20 of "
                    "'{devices=[2,2]0,1,2}')");
  CHECK(column_of("{devices=[2,2]0,1,2}", g2) == 19);
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,2]0,1,2,3,4}", g2),
                    Catch::StartsWith("the tile assignment [2,2] has 4 tiles but more devices are listed (at column 23"));
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,2]0,1,1,3}", g2),
                    "device 1 is listed twice (at column 19 of '{devices=[2,2]0,1,1,3}')");
  CHECK(column_of("{devices=[2,2]0,1,1,3}", g2) == 18);
  CHECK_THROWS_WITH(redist::from_xla("{devices=[4]9,1,9,1}", shape{4}), Catch::StartsWith("device 9 is listed twice (at column 17"));
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2]0,4294967296}", shape{4}),
                    Catch::StartsWith("a device id must be below 2^32 (at column 15"));
  CHECK_THROWS_WITH(redist::from_xla("{maximal device=4294967296}", shape{4}),
                    Catch::StartsWith("a device id must be below 2^32 (at column 17"));
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2048,1024]<=[2097152]}", shape{4096, 4096}),
                    Catch::StartsWith("the tile assignment has more than 2^20 devices (at column 10"));
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,2]<=[2,2]T(0,0)}", g2),
                    Catch::StartsWith("transpose index 0 is listed twice (at column 26"));
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,2]<=[2,2]T(2,0)}", g2),
                    Catch::StartsWith("transpose index 2 names no dimension of the iota [2,2] (at column 24"));
  CHECK(column_of("{devices=[2,2]<=[2,2]T(1)}", g2) == 21);
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,2]<=[2,2]T(1)}", g2),
                    Catch::StartsWith("the transpose has 1 indices but the iota has 2 dimensions"));
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,2]<=[8]}", g2),
                    Catch::StartsWith("the iota [8] has 8 devices but the tile assignment [2,2] has 4 (at column 17"));
  CHECK_THROWS_WITH(
      redist::from_xla("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", shape{8, 6, 2}),
      Catch::StartsWith("the tile assignment [2,1,2] has 3 dimensions but an array of rank 3 with 1 subgroup "
                        "dimension(s) needs 4 (at column 10"));
  CHECK(column_of("{devices=[2,2]<=[4]}", shape{4}) == 9);
  CHECK(column_of("{devices=[0,2]<=[4]}", g2) == 10);
  // Refused notations.
  CHECK_THROWS_WITH(redist::from_xla("{manual}", g2), Catch::StartsWith("{manual} names no layout"));
  CHECK(column_of("{manual}", g2) == 1);
  const char* sub = "{devices=[1,1,4,4]<=[16] last_tile_dims={manual, replicated}}";
  CHECK_THROWS_WITH(redist::from_xla(sub, g2), Catch::StartsWith("a manual subgroup (last_tile_dims={manual}) is not read"));
  CHECK(column_of(sub, g2) == static_cast<int>(std::string(sub).find("manual")));
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,1,2]<=[4] last_tile_dims={other}}", g2),
                    Catch::StartsWith("unknown subgroup type 'other' (expected replicated or unreduced) (at column 39"));
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,1,2]<=[4] last_tile_dim_replicate last_tile_dims={unreduced}}", g2),
                    Catch::StartsWith("the subgroup dimensions are given twice (at column 47"));
  CHECK_THROWS_WITH(redist::from_xla("{{replicated}, {maximal device=0}}", g2), Catch::StartsWith("a tuple sharding"));
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,2]<=[4] shard_with 1}", g2), Catch::StartsWith("unknown attribute 'shard_with'"));
  CHECK_THROWS_WITH(redist::from_xla("{devices=[2,2]<=[4]", g2), Catch::Contains("but the text ended"));
  CHECK_THROWS_WITH(redist::from_xla("{maximal device=x}", g2), Catch::StartsWith("expected a number"));
}

namespace {
/// XLA's named shardings, as its HLO parser tests print them (xla/hlo/parser/hlo_parser_test.cc,
/// parse_named_sharding*) and as XLA printed them before (xla/hlo/ir/named_sharding_test.cc,
/// `@mesh<...>`), with the Shardy text of the same mesh and sharding.
struct named_t {
  const char* xla;
  const char* shardy;
  shape global;
};
const char* abcd = R"(<["a"=2, "b"=4, "c"=3, "d"=8]> )";
const std::vector<named_t> named_cases = {
    {"{mesh['a'=2,'b'=4,'c'=3,'d'=8], [{'a'}, {'b'}]}", R"(#sdy.sharding<@m, [{"a"}, {"b"}]>)", {16, 8}},
    {"{mesh['a'=2,'b'=4,'c'=3,'d'=8], [{'a'}, {'c', 'b'}]}", R"(#sdy.sharding<@m, [{"a"}, {"c", "b"}]>)", {16, 24}},
    {"{mesh['a'=2,'b'=4,'c'=3,'d'=8], [{'b', 'a'}, {'c', 'd', ?}]}", R"(#sdy.sharding<@m, [{"b", "a"}, {"c", "d"}]>)",
     {16, 48}},
    {"{mesh['a'=2,'b'=4,'c'=3,'d'=8], [{'a'}, {'b':(2)2}]}", R"(#sdy.sharding<@m, [{"a"}, {"b":(2)2}]>)", {16, 8}},
    {"{mesh['a'=2,'b'=4,'c'=3,'d'=8], [{'b':(2)2}, {'d':(4)2, 'c'}]}",
     R"(#sdy.sharding<@m, [{"b":(2)2}, {"d":(4)2, "c"}]>)", {16, 12}},
    {"{mesh['a'=2,'b'=4,'c'=3,'d'=8], [{'b':(2)2}, {'d':(4)2, 'c', ?}]}",
     R"(#sdy.sharding<@m, [{"b":(2)2}, {"d":(4)2, "c"}]>)", {16, 12}},
    {"{mesh['x'=2,'y'=2], device_ids=(0,2,1,3), [{'x'}]}",
     R"(<["x"=2, "y"=2], device_ids=[0, 2, 1, 3]> #sdy.sharding<@m, [{"x"}]>)", {6}},
    {"{mesh['a'=2,'b'=4], replicated}", R"(<["a"=2, "b"=4]> #sdy.sharding<@m, [{}, {}]>)", {8, 8}},
    {"{mesh['a'=2,'b'=4], [{'a'}], replicated={'b'}}", R"(<["a"=2, "b"=4]> #sdy.sharding<@m, [{"a"}]>)", {8}},
    {"{maximal_mesh[device_id=5]}", R"(<[], device_ids=[5]> #sdy.sharding<@m, []>)", {8, 8}},
    {"{mesh['a.b'=2,'<axis> def'=4,'z/w'=2], [{'a.b'}, {'<axis> def':(2)2, 'z/w'}]}",
     R"(<["a.b"=2, "<axis> def"=4, "z/w"=2]> #sdy.sharding<@m, [{"a.b"}, {"<axis> def":(2)2, "z/w"}]>)", {8, 8}},
    {"{mesh['a'=2,'b'=4], unreduced}", R"(<["a"=2, "b"=4]> #sdy.sharding<@m, [{}], unreduced={"a", "b"}>)", {8}},
    {"{mesh['a'=2,'b'=4,'c'=3,'d'=8], [{}, {'b'}], unreduced={'d':(4)2}}",
     R"(#sdy.sharding<@m, [{}, {"b"}], unreduced={"d":(4)2}>)", {8, 8}},
    {"{mesh['a'=2,'b'=4], replicated, metadata={{op_name=\"foo\"}}}", R"(<["a"=2, "b"=4]> #sdy.sharding<@m, [{}]>)",
     {8}},
    {"sharding={mesh['a'=2,'b'=2], [{'a'}, {}]}", R"(<["a"=2, "b"=2]> #sdy.sharding<@m, [{"a"}, {}]>)", {8, 8}},
    // Printed before XLA quoted its names, and first as `@mesh<...>`.
    {"{mesh[a=2,b=4], [{a}, {b}]}", R"(<["a"=2, "b"=4]> #sdy.sharding<@m, [{"a"}, {"b"}]>)", {8, 8}},
    {"{@mesh<a=2,b=4,c=3,d=8>, [{c}, {a, b:(2)2, ?}]}", R"(#sdy.sharding<@m, [{"c"}, {"a", "b":(2)2}]>)", {9, 8}},
    {"{@mesh<a=2,b=4,c=3,d=8>, [], replicated={c}}", R"(#sdy.sharding<@m, [{}, {}]>)", {9, 8}},
    {"{@mesh<a=2,b=4,c=3,d=8>, [], unreduced={d:(4)2}}", R"(#sdy.sharding<@m, [{}], unreduced={"d":(4)2}>)", {9}},
};
}  // namespace

TEST_CASE("XLA's named shardings read as the Shardy shardings they are", "[core][xla][shardy]") {
  for (const auto& c : named_cases) {
    INFO(c.xla);
    std::string sdy = c.shardy;
    if (sdy.rfind("#sdy", 0) == 0) sdy = abcd + sdy;  // the mesh a, b, c, d of XLA's tests
    const redist::placed_type x = redist::from_xla(c.xla, c.global);
    const redist::placed_type y = redist::from_shardy_text(sdy, c.global);
    CHECK(x.pm == y.pm);
    CHECK(x.type == y.type);
  }
  // A transposed iota of device ids: [4,16]T(1,0) is 0, 16, 32, 48, 1, 17, ...
  const auto t = redist::from_xla("{mesh['a'=2,'b'=4,'c'=4,'d'=2], device_ids=([4,16]T(1,0)), [{'a'}]}", shape{8});
  REQUIRE(t.pm.devices.size() == 64);
  for (std::uint64_t p = 0; p < 64; ++p) CHECK(t.pm.devices[p] == (p % 4) * 16 + p / 4);
  CHECK(redist::type_text(t.pm.mesh, t.type).str() == "[4{a}8]");
  // The empty mesh replicates on the caller's devices, as XLA's {replicated} does.
  CHECK(redist::placed_mesh_text(redist::from_xla("{mesh[], replicated}", shape{8}, 4).pm) == "{r: 4}");
  CHECK(redist::from_xla("{mesh[], replicated}", shape{8}) .pm.mesh.devices == 1);
  // Pending values of another reduction.
  const auto mx = redist::from_xla("{mesh['x'=2], [{}], unreduced=max{'x'}}", shape{8});
  CHECK(redist::type_text(mx.pm.mesh, mx.type).str() == "[8] max{x}");
  const auto all = redist::from_xla("{mesh['x'=2,'y'=2], [{'x'}], unreduced=max}", shape{8});
  CHECK(redist::type_text(all.pm.mesh, all.type).str() == "[4{x}8] max{y}");
}

TEST_CASE("ours -> XLA named -> ours round-trips on random types and device orders", "[core][xla]") {
  std::mt19937_64 rng(43);
  std::size_t n = 0, placed = 0, sums = 0;
  for (auto w : redist::testing::mixed_workloads()) {
    w.partial_sums = true;
    for (const auto& pt : redist::testing::random_problems(w, 100, 47)) {
      redist::placed_mesh pm{redist::parse_mesh(pt.mesh), {}};
      if (rng() % 2) {  // a random order of 0..D-1
        for (std::uint64_t p = 0; p < pm.mesh.devices; ++p) pm.devices.push_back(static_cast<std::uint32_t>(p));
        std::shuffle(pm.devices.begin(), pm.devices.end(), rng);
        if (pm.identity()) pm.devices.clear();
      }
      placed += !pm.devices.empty();
      for (const auto& s : {pt.from, pt.to}) {
        const redist::dist_type t = redist::parse_type(pm.mesh, s);
        std::vector<std::uint64_t> gl;
        for (int d = 0; d < t.rank; ++d) gl.push_back(t.dims[d].global);
        const std::string text = redist::to_xla_named(pm, t);
        INFO(redist::placed_mesh_text(pm) << " " << s << " -> " << text);
        const redist::placed_type back = redist::from_xla(text, gl);
        CHECK(back.pm == pm);
        CHECK(back.type == t);
        if (t.nsum == 0 || t.reduce == redist::reduction::sum) {  // the same as the HloSharding XLA converts it to
          const std::string v2_text = redist::to_xla(pm, t);
          INFO(v2_text);
          const redist::placed_type v2 = redist::from_xla(v2_text, gl, pm.mesh.devices);
          CHECK(held(v2) == held(back));
          CHECK(same_value(v2) == same_value(back));
          CHECK(redist::to_xla(v2.pm, v2.type) == v2_text);
          sums += t.nsum > 0;
        }
        ++n;
      }
    }
  }
  CHECK(n == 1400);
  CHECK(placed > 300);
  CHECK(sums > 100);
  // What XLA prints: the canonical transposed iota, `[]` with pending sums only, quoted names.
  const redist::placed_mesh pm{redist::parse_mesh("{x: 2, y: 4}"), {0, 4, 1, 5, 2, 6, 3, 7}};
  CHECK(redist::to_xla_named(pm, redist::parse_type(pm.mesh, "[{x}8, {y}8]")) ==
        "{mesh['x'=2,'y'=4], device_ids=([2,4]T(1,0)), [{'x'}, {'y'}]}");
  const redist::placed_mesh id{redist::parse_mesh("{x: 2, y: 4}"), {}};
  CHECK(redist::to_xla_named(id, redist::parse_type(id.mesh, "[8, 8] sum{y:(2)2}")) ==
        "{mesh['x'=2,'y'=4], [], unreduced={'y':(2)2}}");
  CHECK(redist::to_xla_named(id, redist::parse_type(id.mesh, "[8]")) == "{mesh['x'=2,'y'=4], replicated}");
  CHECK(redist::to_xla_named(redist::placed_mesh{redist::device_mesh{}, {3}}, redist::parse_type(redist::device_mesh{}, "[8]")) ==
        "{maximal_mesh[device_id=3]}");
  CHECK_THROWS_WITH(redist::to_xla_named(redist::placed_mesh{redist::parse_mesh("{x: 2}"), {4, 5}},
                                         redist::parse_type(redist::parse_mesh("{x: 2}"), "[{x}8]")),
                    "XLA's named mesh holds devices 0..1 in some order, not {x: 2} @ [4, 5]: write it as an HloSharding "
                    "(to_xla)");
  CHECK_THROWS_WITH(redist::to_xla_named(id, redist::parse_type(id.mesh, "[8] max{x}")),
                    "pending max values have no XLA spelling (unreduced={...} is a sum)");
}

TEST_CASE("bad named shardings name the problem and the column", "[core][xla]") {
  const shape g2{8, 8};
  auto refused = [&](const std::string& s, const std::string& msg, const std::string& at) {
    INFO(s);
    try {
      (void)redist::from_xla(s, g2);
      FAIL("accepted");
    } catch (const redist::redist_error& e) {
      CHECK(std::string(e.what()).rfind(msg, 0) == 0);
      CHECK(e.column() == static_cast<int>(at.empty() ? s.size() : s.find(at)));  // "": the end
    }
  };
  refused("{mesh['a'=2,'b'=4], [{'q'}, {}]}", "unknown axis \"q\" (the mesh has \"a\", \"b\")", "'q'");
  refused("{mesh['a'=2,'b'=4], [{'a'}, {'a'}]}", "axis 'a' is used twice", "'a'}]");
  refused("{mesh['a'=2,'b'=4], [{'a'}, {}], unreduced={'a'}}", "axis 'a' is used twice", "'a'}}");
  refused("{mesh['a'=2,'a'=4], [{'a'}, {}]}", "axis 'a' is declared twice in the mesh", "'a'=4");
  refused("{mesh['a'=2,'b'=0], [{'a'}, {}]}", "axis 'b' has size 0", "0]");
  refused("{mesh['x'=2,'y'=2], device_ids=(0,2,1), [{'x'}, {}]}", "the mesh has 4 devices but 3 devices are listed", ")");
  refused("{mesh['x'=2,'y'=2], device_ids=(0,2,1,2), [{'x'}, {}]}", "device 2 is listed twice", "2)");
  refused("{mesh['x'=2,'y'=2], device_ids=([8]), [{'x'}, {}]}", "the iota [8] has 8 devices but the mesh has 4", "[8]");
  refused("{@mesh<x=2>(1,0), device_ids=(1,0), [{x}, {}]}", "the device ids are given twice", "(1,0), [");
  refused("{mesh['x'=2,'y'=2], [{'x'}, {}, {}]}", "the sharding has more dimensions than the array (2)", "{}]");
  refused("{mesh['x'=2,'y'=2], [{'x'}]}", "the sharding has 1 dimensions but the array has 2", "[{");
  refused("{mesh['x'=2,'y'=2], manual}", "manual axes (manual, manual={...}) are not read", "manual");
  refused("{mesh['a'=2,'b'=4], [{'a'}, {}], manual={'b':(2)2}}", "manual axes (manual, manual={...}) are not read", "manual");
  refused("{mesh['a'=2,'b'=4], [{'a'}, {}], replicated}", "'replicated' alone stands for the whole sharding", "replicated");
  refused("{mesh['a'=2,'b'=4], [{'a'}, {}], unreduced=avg{'b'}, unreduced={'b'}}", "the unreduced axes are given twice",
          "unreduced={");
  refused("{mesh['a'=2,'b'=4], [{'a'}, {}], unreduced=mean{'b'}}", "unknown reduction 'mean'", "mean");
  refused("{mesh['a'=2,'b'=4], [{'a'}, {}], unreduced='b'}", "expected '{' to open the axes but found", "'b'}");
  refused("{mesh['a'=2,'b'=4], unreduced, replicated={'a'}}", "axis 'a' is used twice", "'a'}}");
  refused("{mesh['a'=2,'b'=4], [{'a'}, {}], shard_as=1}", "unknown attribute 'shard_as' of a named sharding", "shard_as");
  refused("{mesh['a'=2,'b'=4], replicated, [{'a'}, {}]}", "the dimension shardings come right after the mesh", "[{");
  refused("{mesh['a'=2,'b'=4], replicated={'b'}, [{'a'}, {}]}", "the dimension shardings come right after the mesh", "[{");
  refused("{mesh['a'=2,'b'=4], [{'b':(1)3}, {}]}", "sub-axis \"b\":(1)3 does not fit in axis \"b\" of size 4", "'b':");
  refused("{maximal_mesh[device=5]}", "expected device_id=N in maximal_mesh[...]", "device=");
  refused("{@meshes<a=2>, [{a}, {}]}", "expected '@mesh<...>'", "@");
  refused("{mesh['a'=2,'b'=4], [{'a'}, {}]", "expected '}' to close the sharding but the text ended", "");
  CHECK_THROWS_WITH(redist::from_xla("{{mesh['a'=2], [{'a'}, {}]}, {replicated}}", g2), Catch::StartsWith("a tuple sharding"));
}

TEST_CASE("every prefix of a sharding parses or is refused with a redist_error", "[core][xla][fuzz]") {
  std::size_t refused = 0;
  for (const auto& c : xla_cases) {
    const std::string s = c.text;
    for (std::size_t n = 0; n <= s.size(); ++n) {
      bool ok = true;
      try {
        const auto p = redist::from_xla(s.substr(0, n), c.global, 2);
        ok = redist::check(p.pm.mesh, p.type).ok();
      } catch (const redist::redist_error& e) {
        ++refused;
        CHECK(e.column() <= static_cast<int>(n));
      }
      CHECK(ok);
    }
  }
  for (const auto& c : named_cases) {
    const std::string s = c.xla;
    for (std::size_t n = 0; n <= s.size(); ++n) {
      try {
        const auto p = redist::from_xla(s.substr(0, n), c.global, 2);
        CHECK(redist::check(p.pm.mesh, p.type).ok());
      } catch (const redist::redist_error& e) {
        ++refused;
        CHECK(e.column() <= static_cast<int>(n));
      }
    }
  }
  CHECK(refused > 1500);
  // HLO text writes the sharding as an attribute.
  CHECK(redist::to_xla(redist::from_xla("sharding={devices=[2,1]<=[2]}", shape{6, 3}).pm,
                       redist::from_xla("sharding={devices=[2,1]<=[2]}", shape{6, 3}).type) == "{devices=[2,1]<=[2]}");
}

}  // namespace test_xla
