// tests/static/test_static_execution.cpp -- compile-time plans and typed collectives run
// on the host backend with real data: every element of every tile checked against the
// global array it belongs to.
#include <catch2/catch.hpp>

#include "redist/backends/host.hpp"
#include "redist/static/collectives.hpp"
#include "redist/static/redistribute.hpp"

namespace {
using redist::darray;
using redist::dtype;
using redist::mesh;

/// Fill every device's tile of type A with the global array's values.
template <class A>
std::vector<darray<double, A>> filled() {
  auto xs = redist::make_tiles<double, A>();
  // Every element holds its row-major position in the global array.
  for (auto& x : xs) redist::for_each_global(x.dynamic(), [](std::uint64_t g, double& v) { v = static_cast<double>(g); });
  return xs;
}

/// Every element of every device's tile holds the global array's value there.
template <class B>
std::size_t check_tiles(const std::vector<darray<double, B>>& zs) {
  REQUIRE(zs.size() == B::mesh_type::value.devices);
  std::size_t checked = 0, wrong = 0;
  for (std::size_t r = 0; r < zs.size(); ++r) {
    CHECK(zs[r].device() == r);
    redist::for_each_global(zs[r].dynamic(), [&](std::uint64_t g, const double& v) {
      wrong += v != static_cast<double>(g);
      ++checked;
    });
  }
  CHECK(wrong == 0);
  return checked;
}

template <class A, class B>
void redistribute_and_check() {
  redist::host_backend comm(A::mesh_type::value.devices);
  const auto xs = filled<A>();
  const auto zs = redist::redistribute<B>(comm, xs);
  CHECK(check_tiles<B>(zs) == B::mesh_type::value.devices * redist::local_size_v<B>);
}

using Devs = mesh<"{devs: 32}">;
using XY4 = mesh<"{xdev: 4, ydev: 4}">;
using XY = mesh<"{x: 4, y: 4}">;
using X4Y6 = mesh<"{x: 4, y: 6}">;
using A8 = mesh<"{a: 8}">;
using XYZ = mesh<"{x: 4, y: 2, z: 4}">;
}  // namespace

TEST_CASE("redistribute<B> moves real data for the paper's named cases", "[static][host]") {
  redistribute_and_check<dtype<Devs, "[32, 64{devs}2048]">, dtype<Devs, "[1{devs}32, 2048]">>();
  redistribute_and_check<dtype<XY4, "[64{ydev, xdev}1024, 128]">, dtype<XY4, "[64{xdev, ydev}1024, 128]">>();
  redistribute_and_check<dtype<XY4, "[32{xdev}128, 16{ydev}64]">, dtype<XY4, "[32{ydev}128, 16{xdev}64]">>();
  redistribute_and_check<dtype<XY4, "[32{xdev}128]">, dtype<XY4, "[32{ydev}128]">>();
  redistribute_and_check<dtype<XY, "[32{x, y}512, 8]">, dtype<XY, "[128{x}512, 2{y}8]">>();
  redistribute_and_check<dtype<XY, "[4{x}16, 64, 4{y}16]">, dtype<XY, "[16, 4{y, x}64, 16]">>();
  redistribute_and_check<dtype<XY, "[4{x}16, 64, 4{y}16]">, dtype<XY, "[16, 16{y}64, 16]">>();
  redistribute_and_check<dtype<X4Y6, "[3{x}12, 2{y}12]">, dtype<X4Y6, "[2{y}12, 3{x}12]">>();
  redistribute_and_check<dtype<A8, "[1{a}8, 8]">, dtype<A8, "[8, 1{a}8]">>();
  redistribute_and_check<dtype<XYZ, "[1{y, x}8, 8, 8, 4]">, dtype<XYZ, "[8, 4{y}8, 2{x}8, 4]">>();
  redistribute_and_check<dtype<XY, "[16]">, dtype<XY, "[4{x}16]">>();
}

TEST_CASE("typed collectives have the types of Fig. 8 and move real data", "[static][host]") {
  using M = mesh<"{x: 4, y: 2}">;
  using A = dtype<M, "[4{x}16, 8{y}16]">;
  redist::host_backend comm(8);
  const auto xs = filled<A>();

  // T-AllGather drops the minor-most axis of dimension 0.
  static_assert(redist::same_type_v<redist::all_gather_t<A, 0>, dtype<M, "[16, 8{y}16]">>);
  const auto g = redist::all_gather<0>(comm, std::span<const darray<double, A>>(xs));
  check_tiles(g);

  // T-AllToAll moves x from dimension 0 to the minor-most place of dimension 1.
  static_assert(redist::same_type_v<redist::all_to_all_t<A, 0, 1>, dtype<M, "[16, 2{x, y}16]">>);
  const auto t = redist::all_to_all<0, 1>(comm, std::span<const darray<double, A>>(xs));
  check_tiles(t);

  // T-DynSlice is local: every device keeps the chunk its coordinate along y names.
  using R = dtype<M, "[16, 16]">;
  static_assert(redist::same_type_v<redist::dyn_slice_t<R, 0, "y">, dtype<M, "[8{y}16, 16]">>);
  const auto rs = filled<R>();
  std::vector<darray<double, redist::dyn_slice_t<R, 0, "y">>> sliced;
  for (const auto& r : rs) sliced.push_back(redist::dyn_slice<0, "y">(r));
  check_tiles(sliced);

  // T-Permute: same local shape, other axes.
  using P = dtype<M, "[4{y, x:(2)2}16, 8{x:(1)2}16]">;
  static_assert(redist::t_permute<A, P>);
  const auto p = redist::all_permute<P>(comm, std::span<const darray<double, A>>(xs));
  check_tiles(p);

  // A rule that does not apply is a constraint that is not satisfied.
  static_assert(!redist::t_allgather<R, 0>);                              // nothing to gather
  static_assert(!redist::t_allgather<A, 2>);                              // no dimension 2
  static_assert(!redist::t_alltoall<A, 0, 0>);                            // same dimension
  static_assert(!redist::t_alltoall<dtype<M, "[4{x}16, 1{y}2]">, 0, 1>);  // tile 1 not divisible by 4
  static_assert(!redist::t_dynslice<A, 0, "y">);                          // y already partitions
  static_assert(!redist::t_dynslice<R, 0, "z">);                          // no axis z
  static_assert(!redist::t_dynslice<dtype<M, "[3, 16]">, 0, "x">);        // 3 not divisible by 4
  static_assert(!redist::t_permute<A, R>);                                // local shapes differ
}

TEST_CASE("static darray checks its type", "[static]") {
  using M = mesh<"{x: 4}">;
  using A = dtype<M, "[4{x}16]">;
  const redist::device_mesh& m = M::value;
  darray<float> wrong(m, redist::parse_type(m, "[16]"), 0);
  CHECK_THROWS_WITH((darray<float, A>(wrong)), Catch::Contains("is not the static type [4{x}16]"));
  CHECK_THROWS_WITH((darray<float, A>(0, std::vector<float>(3))), Catch::Contains("3"));
  darray<float, dtype<M, "[{x}16]">> same(darray<float, A>(2));  // same type, other spelling
  CHECK(same.offset(0) == 8);
}
