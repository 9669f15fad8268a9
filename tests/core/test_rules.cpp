// Tests of core/rules.hpp: the strong typing rules of Fig. 8 (multi-axis forms, Sec. 7.1)
// with their success and failure cases, and the weak rules (Sec. 5), which must be
// exactly the image of the strong rules on shapes.
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/rules.hpp"
#include "support/strong_search.hpp"

using namespace redist;

namespace {

constexpr device_mesh m44 = parse_mesh_text("{x: 4, y: 4}").value;
// Fig. 5, row 1: alltoall(0, 1) of x (both its prime sub-axes) on [32{x, y}512, 128].
static_assert(type_text(m44, rule_alltoall(m44, parse_type_text(m44, "[32{x, y}512, 128]").value, 0, 1, 2).value)
                  .view() == "[128{y}512, 32{x}128]");
static_assert(rule_allgather(m44, parse_type_text(m44, "[128]").value, 0).err.code == errc::rule);
static_assert(
    rule_allpermute(m44, parse_type_text(m44, "[32{x}128]").value, parse_type_text(m44, "[32{y}128]").value).ok());

std::string tt(const device_mesh& m, const result<dist_type>& r) {
  REQUIRE(r.ok());
  REQUIRE(check(m, r.value).ok());
  return type_text(m, r.value).str();
}
void fails(const result<dist_type>& r, const std::string& msg) {
  CHECK(r.err.code == errc::rule);
  CHECK(r.err.message.str() == msg);
}

}  // namespace

TEST_CASE("T-AllGather removes the minor-most axes", "[rules][allgather]") {
  const device_mesh m = parse_mesh("{x: 4, y: 6}");
  const dist_type t = parse_type(m, "[3{x}12, 2{y}12]");
  CHECK(tt(m, rule_allgather(m, t, 0, 2)) == "[12, 2{y}12]");
  CHECK(tt(m, rule_allgather(m, t, 0)) == "[6{x:(1)2}12, 2{y}12]");  // x:(2)2 is minor-most
  CHECK(tt(m, rule_allgather(m, t, 1)) == "[3{x}12, 6{y:(1)2}12]");  // y:(2)3 is minor-most
  CHECK(tt(m, rule_allgather(m, parse_type(m, "[{y, x}24]"), 0, 3)) == "[12{x:(1)2}24]");
  fails(rule_allgather(m, t, 0, 3), "allgather: the dimension is not partitioned by that many axes");
  fails(rule_allgather(m, t, 0, 0), "allgather: the dimension is not partitioned by that many axes");
  fails(rule_allgather(m, parse_type(m, "[12, 12]"), 1),
        "allgather: the dimension is not partitioned by that many axes");
  fails(rule_allgather(m, t, 2), "allgather: dimension out of range");
  fails(rule_allgather(m, t, -1), "allgather: dimension out of range");
}

TEST_CASE("T-DynSlice adds unused axes as the minor-most ones", "[rules][dynslice]") {
  const device_mesh m = parse_mesh("{x: 4, y: 6}");  // sub-axes: 0 x:(1)2, 1 x:(2)2, 2 y:(1)2, 3 y:(2)3
  const dist_type t = parse_type(m, "[12, 2{y}12]");
  const std::uint8_t x_minor_to_major[] = {1, 0};
  CHECK(tt(m, rule_dynslice(m, t, 0, x_minor_to_major, 2)) == "[3{x}12, 2{y}12]");
  const std::uint8_t x_reversed[] = {0, 1};
  CHECK(tt(m, rule_dynslice(m, t, 0, x_reversed, 2)) == "[3{x:(1)2, x:(2)2}12, 2{y}12]");
  const std::uint8_t one[] = {0};
  const std::uint8_t x_minor[] = {1};
  CHECK(tt(m, rule_dynslice(m, parse_type(m, "[{x:(1)2}12, 12]"), 0, x_minor, 1)) == "[3{x}12, 12]");
  CHECK(tt(m, rule_dynslice(m, parse_type(m, "[{x:(2)2}12, 12]"), 0, one, 1)) == "[3{x:(1)2, x:(2)2}12, 12]");
  CHECK(tt(m, rule_dynslice(m, t, 1, one, 1)) == "[12, 1{x:(1)2, y}12]");  // tile 2 splits by 2
  fails(rule_dynslice(m, t, 1, x_minor_to_major, 2), "dynslice: the tile size is not divisible by the axis size");
  const std::uint8_t y3[] = {3};
  fails(rule_dynslice(m, t, 0, y3, 1), "dynslice: the axis already partitions a dimension");
  const std::uint8_t twice[] = {0, 0};
  fails(rule_dynslice(m, t, 0, twice, 2), "dynslice: the axis already partitions a dimension");
  const std::uint8_t bogus[] = {7};
  fails(rule_dynslice(m, t, 0, bogus, 1), "dynslice: unknown axis");
  // A dimension not split yet splits unevenly (ceil tiles, DESIGN.md section 2).
  CHECK(tt(m, rule_dynslice(m, parse_type(m, "[6, 12]"), 0, x_minor_to_major, 2)) == "[2{x}6, 12]");
  fails(rule_dynslice(m, t, 0, one, 0), "dynslice: the tile size is not divisible by the axis size");
  fails(rule_dynslice(m, t, 5, one, 1), "dynslice: dimension out of range");
}

TEST_CASE("T-AllToAll moves the minor-most axes to another dimension", "[rules][alltoall]") {
  SECTION("Example 3.1 over prime sub-axes") {
    const device_mesh m = parse_mesh("{x: 4, y: 6}");
    const dist_type t = parse_type(m, "[3{x}12, 2{y}12]");
    // alltoall(1, 0) of y:(2)3 needs 3 | 3: [1{y:(2)3, x}12, 6{y:(1)2}12].
    CHECK(tt(m, rule_alltoall(m, t, 1, 0)) == "[1{y:(2)3, x}12, 6{y:(1)2}12]");
    CHECK(tt(m, rule_alltoall(m, t, 0, 1)) == "[6{x:(1)2}12, 1{x:(2)2, y}12]");
    fails(rule_alltoall(m, t, 0, 1, 2),
          "alltoall: the tile of the target dimension is not divisible by the moved axes");
    fails(rule_alltoall(m, t, 1, 0, 2),
          "alltoall: the tile of the target dimension is not divisible by the moved axes");
  }
  SECTION("Example 4.9: one multi-axis alltoall") {
    const device_mesh m = parse_mesh("{a: 8}");
    CHECK(tt(m, rule_alltoall(m, parse_type(m, "[1{a}8, 8]"), 0, 1, 3)) == "[8, 1{a}8]");
  }
  SECTION("Fig. 12, right: alltoall(0, 1) then alltoall(0, 2)") {
    const device_mesh m = parse_mesh("{x: 4, y: 2, z: 4}");
    const dist_type t = parse_type(m, "[1{y, x}8, 8, 8, 1{z}4]");
    const auto s1 = rule_alltoall(m, t, 0, 1);
    CHECK(tt(m, s1) == "[2{x}8, 4{y}8, 8, 1{z}4]");
    CHECK(tt(m, rule_alltoall(m, s1.value, 0, 2, 2)) == "[8, 4{y}8, 2{x}8, 1{z}4]");
  }
  const device_mesh m = parse_mesh("{x: 4, y: 4}");
  const dist_type t = parse_type(m, "[32{x}128, 512, 32{y}128]");
  fails(rule_alltoall(m, t, 0, 0), "alltoall: the target dimension must be another dimension");
  fails(rule_alltoall(m, t, 0, 3), "alltoall: the target dimension must be another dimension");
  fails(rule_alltoall(m, t, 1, 0), "alltoall: the source dimension is not partitioned by that many axes");
  fails(rule_alltoall(m, t, 0, 1, 3), "alltoall: the source dimension is not partitioned by that many axes");
  fails(rule_alltoall(m, t, 3, 1), "alltoall: dimension out of range");
  CHECK(tt(m, rule_alltoall(m, t, 0, 1, 2)) == "[128, 128{x}512, 32{y}128]");
}

TEST_CASE("T-Permute needs equal local and global shapes (Fig. 3)", "[rules][allpermute]") {
  const device_mesh m = parse_mesh("{xdev: 4, ydev: 4}");
  auto P = [&](const char* a, const char* b) { return rule_allpermute(m, parse_type(m, a), parse_type(m, b)); };
  CHECK(P("[64{ydev, xdev}1024, 128]", "[64{xdev, ydev}1024, 128]").ok());  // swap within a dimension
  CHECK(P("[32{xdev}128, 16{ydev}64]", "[32{ydev}128, 16{xdev}64]").ok());  // swap across dimensions
  CHECK(P("[32{xdev}128]", "[32{ydev}128]").ok());                          // swap for a replicated axis
  const error e = P("[32{xdev}128, 64]", "[128, 16{xdev}64]");
  CHECK(e.code == errc::rule);
  CHECK(e.message.str() == "allpermute: the local shapes differ");
  const error g = P("[32{xdev}128, 64]", "[32{xdev}128, 128]");
  CHECK(g.message.str() == "allpermute: the global shapes differ");
  const error r = P("[32{xdev}128]", "[32{xdev}128, 1]");
  CHECK(r.message.str() == "allpermute: the global shapes differ");
}

TEST_CASE("strong rules keep types well-formed and change local size as Fig. 8 says", "[rules][exhaustive]") {
  for (const char* mt : {"{x: 4, y: 6}", "{a: 2, b: 2, c: 2}", "{x: 12}"}) {
    const device_mesh m = parse_mesh(mt);
    const auto types = testing::enumerate_types(m, parse_type(m, "[24, 12, 6]"));
    std::size_t applied = 0;
    for (const dist_type& t : types) {
      INFO(mt << " " << type_text(m, t).str());
      const std::uint64_t local = local_size(m, t);
      for (int i = 0; i < t.rank; ++i) {
        std::uint64_t prod = 1;
        for (int c = 1; c <= t.dims[i].n; ++c) {
          prod *= m.sub[t.dims[i].axes[c - 1]].size;
          const auto g = rule_allgather(m, t, i, c);
          REQUIRE(g.ok());
          REQUIRE(check(m, g.value).ok());
          CHECK(local_size(m, g.value) == local * prod);
          CHECK(g.value.dims[i].n == t.dims[i].n - c);
          for (int j = 0; j < t.rank; ++j) {
            if (j == i) continue;
            const auto a = rule_alltoall(m, t, i, j, c);
            // An unsplit dimension may split unevenly (ceil tiles), as a dynslice does.
            CHECK(a.ok() == (tile(m, t.dims[j]) % prod == 0 || t.dims[j].n == 0));
            if (!a.ok() || !even(m, a.value)) continue;
            ++applied;
            REQUIRE(check(m, a.value).ok());
            CHECK(local_size(m, a.value) == local);
            CHECK(same_global(a.value, t));
            // The moved axes lead dimension j, in the same order.
            for (int q = 0; q < c; ++q) CHECK(a.value.dims[j].axes[q] == t.dims[i].axes[q]);
          }
        }
      }
    }
    CHECK(applied > 100);
  }
}

TEST_CASE("weak rules: divisibility on shapes", "[rules][weak]") {
  const device_mesh m = parse_mesh("{x: 4, y: 6}");
  const dist_type t = parse_type(m, "[3{x}12, 2{y}12]");
  const weak_context c = weak_context_of(m, t);
  const shape s = shape_of(m, t);
  CHECK(s.rank == 2);
  CHECK(s.parts[0] == 4);
  CHECK(s.parts[1] == 6);
  CHECK(c.devices == 24);
  CHECK(c.tile(s, 0) == 3);
  CHECK(c.local_size(s) == 6);
  CHECK(c.used(s) == 24);
  CHECK(c.free(s) == 1);
  shape out;
  REQUIRE(weak_allgather(c, s, 0, 4, out));
  CHECK(out.parts[0] == 1);
  CHECK_FALSE(weak_allgather(c, s, 0, 3, out));  // 3 does not divide 4
  CHECK_FALSE(weak_allgather(c, s, 0, 1, out));  // a factor must be > 1
  REQUIRE(weak_alltoall(c, s, 1, 0, 3, out));    // 3 | 6 and 3 | tile 3
  CHECK(out.parts[0] == 12);
  CHECK(out.parts[1] == 2);
  CHECK_FALSE(weak_alltoall(c, s, 1, 0, 2, out));  // 2 does not divide tile 3
  CHECK_FALSE(weak_alltoall(c, s, 1, 1, 2, out));  // same dimension
  CHECK_FALSE(weak_dynslice(c, s, 0, 3, out));     // no free sub-axes
  const shape g = shape_of(m, parse_type(m, "[12, 2{y}12]"));
  CHECK(c.free(g) == 4);
  REQUIRE(weak_dynslice(c, g, 0, 4, out));
  CHECK(out.parts[0] == 4);
  CHECK_FALSE(weak_dynslice(c, g, 0, 3, out));  // 3 does not divide the free 4
  CHECK_FALSE(weak_dynslice(c, g, 1, 4, out));  // 4 does not divide tile 2
  CHECK(shape_of(m, t) == s);
  CHECK(g < s);
}

TEST_CASE("weak rules are the image of the strong rules (Def. 5.3, Lemma 5.1)", "[rules][weak][exhaustive]") {
  for (const char* mt : {"{x: 4, y: 6}", "{a: 2, b: 2, c: 2}", "{x: 12}", "{x: 2, y: 3, z: 2}"}) {
    const device_mesh m = parse_mesh(mt);
    const dist_type g = parse_type(m, "[12, 24, 6]");
    // Every type, with any sub-axes as pending sums (partial sums, an extension).
    const auto types = testing::enumerate_types(m, g, UINT64_MAX, (std::uint64_t{1} << m.nsub) - 1);
    const weak_context c = weak_context_of(m, g);
    weak_context cu = c;
    cu.uneven = true;
    // Strong edges as weak triples (kind, from, to, factor) from each shape, and the shape reached.
    using edge = std::tuple<int, int, int, std::uint64_t, std::vector<std::uint64_t>>;
    auto key = [](const shape& s) {
      std::vector<std::uint64_t> k(s.parts, s.parts + s.rank);
      k.push_back(s.sums);
      return k;
    };
    std::set<std::pair<std::vector<std::uint64_t>, edge>> strong;
    for (const dist_type& t : types) {
      const shape s = shape_of(m, t);
      std::vector<std::uint8_t> unused;
      for (int k = 0; k < m.nsub; ++k)
        if (!(used_mask(t) & (std::uint64_t{1} << k))) unused.push_back(static_cast<std::uint8_t>(k));
      for (int i = 0; i < t.rank; ++i) {
        std::uint64_t f = 1;
        shape w;
        for (int n = 1; n <= t.dims[i].n; ++n) {
          f *= m.sub[t.dims[i].axes[n - 1]].size;
          const auto r = rule_allgather(m, t, i, n);
          REQUIRE(weak_allgather(c, s, i, f, w));
          CHECK(w == shape_of(m, r.value));
          strong.insert({key(s), edge{0, i, -1, f, key(w)}});
          for (int j = 0; j < t.rank; ++j) {
            if (j == i) continue;
            const auto a = rule_alltoall(m, t, i, j, n);
            shape wu;  // a strong all-to-all may split an unsplit dimension unevenly, as a dynslice
            CHECK(a.ok() == weak_alltoall(cu, s, i, j, f, wu));
            if (a.ok()) CHECK(wu == shape_of(m, a.value));
            CHECK((a.ok() && even(m, a.value)) == weak_alltoall(c, s, i, j, f, w));
            if (!a.ok() || !even(m, a.value)) continue;
            CHECK(w == shape_of(m, a.value));
            strong.insert({key(s), edge{1, i, j, f, key(w)}});
          }
        }
        // Single-prime and all-unused dynslices (enough to realize every factor up to order).
        // A strong dynslice may split an unsplit dimension unevenly; the weak rules take
        // that only on problems with an uneven type (weak_context::uneven).
        for (std::size_t q = 0; q < unused.size(); ++q) {
          const auto d = rule_dynslice(m, t, i, &unused[q], 1);
          const bool ok = weak_dynslice(c, s, i, m.sub[unused[q]].size, w);
          CHECK((d.ok() && even(m, d.value)) == ok);
          shape wu;
          CHECK(d.ok() == weak_dynslice(cu, s, i, m.sub[unused[q]].size, wu));
          if (d.ok()) CHECK(wu == shape_of(m, d.value));
          if (ok) strong.insert({key(s), edge{2, -1, i, m.sub[unused[q]].size, key(w)}});
        }
        // reducescatter of every nonempty subset of the pending sums, in ascending order.
        for (std::uint32_t mask = 1; mask < (1u << t.nsum); ++mask) {
          std::vector<std::uint8_t> xs;
          std::uint64_t fx = 1;
          for (int q = 0; q < t.nsum; ++q)
            if (mask & (1u << q)) {
              xs.push_back(t.sum[q]);
              fx *= m.sub[t.sum[q]].size;
            }
          // A strong reduce-scatter may split an unsplit dimension into ceil-sized chunks
          // (tiles_nest); the weak rules take that only on uneven problems, like the dynslice.
          const auto d = rule_reducescatter(m, t, i, xs.data(), static_cast<int>(xs.size()));
          const bool ok = weak_reducescatter(c, s, i, fx, w);
          CHECK((d.ok() && even(m, d.value)) == ok);
          shape wu;
          CHECK(d.ok() == weak_reducescatter(cu, s, i, fx, wu));
          if (d.ok()) CHECK(wu == shape_of(m, d.value));
          if (ok) {
            CHECK(w == shape_of(m, d.value));
            strong.insert({key(s), edge{3, -1, i, fx, key(w)}});
          }
        }
        for (std::uint32_t mask = 1; mask < (1u << unused.size()); ++mask) {
          std::vector<std::uint8_t> xs;
          std::uint64_t fx = 1;
          for (std::size_t q = 0; q < unused.size(); ++q)
            if (mask & (1u << q)) {
              xs.push_back(unused[q]);
              fx *= m.sub[unused[q]].size;
            }
          const auto d = rule_dynslice(m, t, i, xs.data(), static_cast<int>(xs.size()));
          CHECK((d.ok() && even(m, d.value)) == weak_dynslice(c, s, i, fx, w));
          if (d.ok() && even(m, d.value)) {
            CHECK(w == shape_of(m, d.value));
            strong.insert({key(s), edge{2, -1, i, fx, key(w)}});
          }
        }
      }
    }
    for (const dist_type& t : types) {  // allreduce of every nonempty subset of the pending sums
      const shape s = shape_of(m, t);
      for (std::uint32_t mask = 1; mask < (1u << t.nsum); ++mask) {
        std::vector<std::uint8_t> xs;
        std::uint64_t fx = 1;
        for (int q = 0; q < t.nsum; ++q)
          if (mask & (1u << q)) {
            xs.push_back(t.sum[q]);
            fx *= m.sub[t.sum[q]].size;
          }
        const auto d = rule_allreduce(m, t, xs.data(), static_cast<int>(xs.size()));
        REQUIRE(d.ok());
        shape w;
        REQUIRE(weak_allreduce(c, s, fx, w));
        CHECK(w == shape_of(m, d.value));
        strong.insert({key(s), edge{4, -1, -1, fx, key(w)}});
      }
    }
    // Conversely, every weak edge out of a realized shape is realized by a strong rule
    // from some type of that shape (up to a permutation, which the weak types quotient).
    std::size_t weak_edges = 0;
    std::set<std::vector<std::uint64_t>> shapes;
    for (const dist_type& t : types) shapes.insert(key(shape_of(m, t)));
    for (const auto& k : shapes) {
      shape s;
      s.rank = g.rank;
      for (int d = 0; d < s.rank; ++d) s.parts[d] = k[static_cast<std::size_t>(d)];
      s.sums = k.back();
      for (std::uint64_t f = 2; f <= m.devices; ++f) {
        if (m.devices % f != 0) continue;
        shape w;
        if (weak_allreduce(c, s, f, w)) {
          ++weak_edges;
          CHECK(strong.count({k, edge{4, -1, -1, f, key(w)}}) == 1);
        }
        for (int i = 0; i < s.rank; ++i) {
          if (weak_allgather(c, s, i, f, w)) {
            ++weak_edges;
            CHECK(strong.count({k, edge{0, i, -1, f, key(w)}}) == 1);
          }
          if (weak_dynslice(c, s, i, f, w)) {
            ++weak_edges;
            CHECK(strong.count({k, edge{2, -1, i, f, key(w)}}) == 1);
          }
          if (weak_reducescatter(c, s, i, f, w)) {
            ++weak_edges;
            CHECK(strong.count({k, edge{3, -1, i, f, key(w)}}) == 1);
          }
          for (int j = 0; j < s.rank; ++j)
            if (weak_alltoall(c, s, i, j, f, w)) {
              ++weak_edges;
              INFO("alltoall " << i << " -> " << j << " by " << f);
              CHECK(strong.count({k, edge{1, i, j, f, key(w)}}) == 1);
            }
        }
      }
    }
    CHECK(weak_edges > 50);
  }
}

TEST_CASE("partial sums: T-AllReduce and T-ReduceScatter", "[rules][sums]") {
  const device_mesh m = parse_mesh("{x: 4, y: 6, z: 2}");  // sub-axes 0 x:(1)2, 1 x:(2)2, 2 y:(1)2, 3 y:(2)3, 4 z
  const dist_type t = parse_type(m, "[12, 4] sum{y, z}");
  const std::uint8_t y3z[] = {3, 4}, z[] = {4}, x[] = {0};
  CHECK(tt(m, rule_allreduce(m, t, y3z, 2)) == "[12, 4] sum{y:(1)2}");
  CHECK(tt(m, rule_allreduce(m, t, z, 1)) == "[12, 4] sum{y}");
  // reducescatter(0, [y:(2)3, z]): the summed axes become dimension 0's minor-most.
  CHECK(tt(m, rule_reducescatter(m, t, 0, y3z, 2)) == "[2{y:(2)3, z}12, 4] sum{y:(1)2}");
  CHECK(tt(m, rule_reducescatter(m, t, 1, z, 1)) == "[12, 2{z}4] sum{y}");
  fails(rule_allreduce(m, t, x, 1), "allreduce: the axis is not a pending-sum axis of the type");
  fails(rule_allreduce(m, t, x, 0), "allreduce: no sum axis given");
  // A dimension of one tile splits into ceil-sized chunks where it is at least as long as
  // the summed axes (4 by 6 is not: its padded send would be 6 rows); tiles of several must
  // be divisible (6 in 4 tiles of 2, by 3).
  fails(rule_reducescatter(m, t, 1, y3z, 2), "reducescatter: the tile is shorter than the summed axes (reduce with an allreduce)");
  CHECK(tt(m, rule_reducescatter(m, parse_type(m, "[12, 7] sum{y, z}"), 1, y3z, 2)) == "[12, 2{y:(2)3, z}7] sum{y:(1)2}");
  const std::uint8_t y3[] = {3};
  fails(rule_reducescatter(m, parse_type(m, "[12, {x}6] sum{y, z}"), 1, y3, 1),
        "reducescatter: the tile is not divisible by the summed axes");
  fails(rule_reducescatter(m, t, 0, x, 1), "reducescatter: the axis is not a pending-sum axis of the type");
  fails(rule_reducescatter(m, t, 2, z, 1), "reducescatter: dimension out of range");
  // Weak forms: the number of partials is one more column.
  const weak_context c = weak_context_of(m, t);
  const shape s = shape_of(m, t);
  CHECK(s.sums == 12);
  CHECK(c.used(s) == 12);  // the sums occupy their axes
  CHECK(c.free(s) == 4);
  shape w;
  REQUIRE(weak_allreduce(c, s, 6, w));
  CHECK(w.sums == 2);
  CHECK_FALSE(weak_allreduce(c, s, 5, w));
  CHECK_FALSE(weak_allreduce(c, s, 1, w));
  REQUIRE(weak_reducescatter(c, s, 1, 4, w));
  CHECK(w.sums == 3);
  CHECK(w.parts[1] == 4);
  CHECK_FALSE(weak_reducescatter(c, s, 1, 3, w));  // 3 does not divide tile 4
  CHECK_FALSE(weak_reducescatter(c, s, 0, 8, w));  // 8 does not divide 12 partials
}

// Box semantics (DESIGN.md section 4) on one dimension of n in k ceil tiles, by brute force:
// the boxes, the ceil-chunk split (dynslice, the split side of an alltoall) and the union of
// s adjacent boxes (allgather, the gathered side), against the tiles of the type after.
namespace {
using range = std::pair<std::uint64_t, std::uint64_t>;
std::vector<range> tiles_of(std::uint64_t n, std::uint64_t k) {
  const std::uint64_t t = (n + k - 1) / k;
  std::vector<range> v;
  for (std::uint64_t i = 0; i < k; ++i) v.emplace_back(std::min(n, i * t), std::min(n, (i + 1) * t));
  return v;
}
}  // namespace

TEST_CASE("uneven forms of the rules land exactly on ceil tiles (core/dtype.hpp)", "[rules][uneven]") {
  std::size_t nest = 0, ceil_ok = 0, cases = 0;
  for (std::uint64_t n = 1; n <= 64; ++n)
    for (std::uint64_t k = 1; k <= 12; ++k)
      for (std::uint64_t s = 2; s <= 6; ++s) {
        INFO("n " << n << " k " << k << " s " << s);
        const auto big = tiles_of(n, k), small = tiles_of(n, k * s);
        bool unions = true, ceil_split = true;
        for (std::uint64_t i = 0; i < k; ++i) {
          // allgather: boxes i*s .. i*s+s-1 of k*s, adjacent, make box i of k.
          const range u{small[i * s].first, small[i * s + s - 1].second};
          unions = unions && (u == big[i] || (u.first == u.second && big[i].first == big[i].second));
          const std::uint64_t e = big[i].second - big[i].first, c = (e + s - 1) / s;
          for (std::uint64_t j = 0; j < s; ++j) {
            const range got{std::min(big[i].second, big[i].first + j * c), std::min(big[i].second, big[i].first + (j + 1) * c)};
            const range& want = small[i * s + j];
            auto same = [&](const range& a) { return a == want || (a.first == a.second && want.first == want.second); };
            ceil_split = ceil_split && same(got);
          }
        }
        // The predicates hold only where the semantics land on the tiles (they may be
        // stricter: boxes that are all empty are not worth a rule).
        if (tiles_nest(n, k, s)) CHECK(unions);
        if (ceil_split_lands(n, k, s)) CHECK(ceil_split);
        // ... and wherever a tile holds something: exactly.
        if (n >= k * s) {
          CHECK(tiles_nest(n, k, s) == unions);
          CHECK(ceil_split_lands(n, k, s) == ceil_split);
        }
        if (n % (k * s) == 0) CHECK((tiles_nest(n, k, s) && ceil_split_lands(n, k, s)));
        nest += tiles_nest(n, k, s);
        ceil_ok += ceil_split_lands(n, k, s);
        ++cases;
      }
  CHECK(cases == 64 * 12 * 5);
  CHECK(nest > ceil_ok);
  CHECK(ceil_ok > cases / 4);
  // The named ones: 50257 over 4 gathers to one tile; 1024 splits by 4; 6 over 4 (2 2 2 0).
  CHECK(tiles_nest(50257, 1, 4));
  CHECK(!tiles_nest(50257, 2, 2));  // 25129 is not 2 x 12565
  CHECK(ceil_split_lands(6, 1, 4));
  CHECK(ceil_split_lands(50257, 1, 4));
  CHECK(ceil_split_lands(6, 4, 2));  // tiles 2 2 2 0 in halves: 1 1 1 1 1 1 0 0
  CHECK(!ceil_split_lands(21, 4, 3));  // the last box [18, 21) in thirds is not the tiles of 2
}

TEST_CASE("the strong rules take uneven types where they stay exact", "[rules][uneven]") {
  const device_mesh m = parse_mesh("{data: 2, model: 4}");  // sub-axes: data, model:(1)2, model:(2)2
  const dist_type vocab = parse_type(m, "[{model}50257, 1024]");
  CHECK(tt(m, rule_alltoall(m, vocab, 0, 1, 2)) == "[50257, 256{model}1024]");
  CHECK(tt(m, rule_allgather(m, vocab, 0, 2)) == "[50257, 1024]");
  fails(rule_allgather(m, vocab, 0, 1),
        "allgather: the gathered boxes would not make the larger tiles (dimension of size 50257 in 4 tiles, by 2)");
  CHECK(tt(m, rule_alltoall(m, parse_type(m, "[{data}7, {model}8]"), 1, 0, 2)) == "[1{model, data}7, 8]");
  CHECK(tt(m, rule_alltoall(m, parse_type(m, "[50257, {model}1024]"), 1, 0, 2)) == "[12565{model}50257, 1024]");
  fails(rule_alltoall(m, parse_type(m, "[{data}5, {model}8]"), 1, 0, 2),
        "alltoall: the ceil-sized chunks of the target dimension's boxes would not be the smaller tiles "
        "(dimension of size 5 in 2 tiles, by 4)");
  const std::uint8_t data[] = {0};
  CHECK(tt(m, rule_dynslice(m, parse_type(m, "[6, 1024]"), 0, data, 1)) == "[3{data}6, 1024]");
  const std::uint8_t thirds[] = {2, 1};  // minor-to-major: the whole model axis
  CHECK(tt(m, rule_dynslice(m, parse_type(m, "[{data}7]"), 0, thirds, 2)) == "[1{model, data}7]");
  fails(rule_dynslice(m, parse_type(m, "[{data}5]"), 0, thirds, 2),
        "dynslice: the ceil-sized chunks of the boxes would not be the smaller tiles (dimension of size 5 in 2 tiles, by 4)");
  CHECK(rule_allpermute(m, parse_type(m, "[{data}7]"), parse_type(m, "[{model:(1)2}7]")).ok());
  CHECK(rule_allpermute(m, parse_type(m, "[{data}7]"), parse_type(m, "[{model}7]")).message.str() ==
        "allpermute: the local shapes differ");
  const device_mesh m3 = parse_mesh("{x: 5, y: 6}");
  CHECK(rule_allpermute(m3, parse_type(m3, "[{x}7]"), parse_type(m3, "[{y}7]")).message.str() ==
        "allpermute: the dimensions are split into different numbers of tiles");
  // The reduce-scatter on uneven tiles: equal chunks of the padded tile (7 in 4 tiles of 2,
  // then 8 tiles of 1, the last empty); on a dimension of one tile, ceil-sized chunks of it
  // (7 by 2: 4 and 3; DTensor's 13 by 4: 4, 4, 4, 1); parts that do not divide a padded
  // tile of several are refused.
  CHECK(tt(m, rule_reducescatter(m, parse_type(m, "[{model}7] sum{data}"), 0, data, 1)) == "[1{data, model}7]");
  CHECK(tt(m, rule_reducescatter(m, parse_type(m, "[{data}5, 4] max{model}"), 1, thirds, 2)) == "[3{data}5, 1{model}4]");
  CHECK(tt(m, rule_reducescatter(m, parse_type(m, "[7] sum{data}"), 0, data, 1)) == "[4{data}7]");
  CHECK(tt(m, rule_reducescatter(m, parse_type(m, "[13, 3] sum{model}"), 0, thirds, 2)) == "[4{model}13, 3]");
  fails(rule_reducescatter(m, parse_type(m, "[{model}10] sum{data}"), 0, data, 1),
        "reducescatter: the tile is not divisible by the summed axes");  // tiles of 3
  fails(rule_reducescatter(m, parse_type(m, "[{data}13, 3] sum{model}"), 0, thirds, 2),
        "reducescatter: the tile is not divisible by the summed axes");  // tiles of 7 by 4
  const dist_type dt = parse_type(m, "[13, 3] sum{model}");
  const weak_context wc = weak_context_of(m, dt, parse_type(m, "[{model}13, 3]"));
  shape wo;
  REQUIRE(weak_reducescatter(wc, shape_of(m, dt), 0, 4, wo));
  CHECK(wo == shape_of(m, parse_type(m, "[{model}13, 3]")));
  CHECK_FALSE(weak_reducescatter(weak_context_of(m, dt), shape_of(m, dt), 0, 4, wo));  // even problems stay even
}
