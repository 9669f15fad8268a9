// Tests of core/cost.hpp: the collectives' names and the cost model of Fig. 11.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"

using namespace redist;

// Fig. 11, in elements per device: allgather = localsize(after), alltoall =
// localsize(before), allpermute = localsize, dynslice = 0.
static_assert(cost_elements(op::allgather, 64, 256) == 256);
static_assert(cost_elements(op::alltoall, 256, 256) == 256);
static_assert(cost_elements(op::allpermute, 64, 64) == 64);
static_assert(cost_elements(op::dynslice, 256, 64) == 0);
static_assert(op_name(op::alltoall) == "alltoall");
static_assert([] {
  op o{};
  return op_from_name("allpermute", o) && o == op::allpermute;
}());

TEST_CASE("op names round-trip", "[cost]") {
  int n = 0;
  for (op o : all_ops) {
    op back{};
    REQUIRE(op_from_name(op_name(o), back));
    CHECK(back == o);
    ++n;
  }
  CHECK(n == 7);
  CHECK(std::string(op_name(op::exchange)) == "exchange");
  CHECK(std::string(op_name(op::allgather)) == "allgather");
  CHECK(std::string(op_name(op::dynslice)) == "dynslice");
  CHECK(std::string(op_name(op::reducescatter)) == "reducescatter");
  CHECK(std::string(op_name(op::allreduce)) == "allreduce");
  op o = op::dynslice;
  CHECK_FALSE(op_from_name("all_gather", o));
  CHECK_FALSE(op_from_name("", o));
  CHECK_FALSE(op_from_name("AllGather", o));
  CHECK(o == op::dynslice);  // untouched on failure
}

TEST_CASE("Fig. 11 on the paper's examples", "[cost]") {
  SECTION("Fig. 12: 512 without over-partitioning, 384 with") {
    const device_mesh m = parse_mesh("{x: 4, y: 2, z: 4}");
    auto L = [&](const char* t) { return local_size(m, parse_type(m, t)); };
    // Left: alltoall(0, 1), alltoall(0, 2), each from a tile of 1*8*8*4 = 256 elements.
    const std::uint64_t left = cost_elements(op::alltoall, L("[1{y, x}8, 8, 8, 4]"), L("[2{x}8, 4{y}8, 8, 4]")) +
                               cost_elements(op::alltoall, L("[2{x}8, 4{y}8, 8, 4]"), L("[8, 4{y}8, 2{x}8, 4]"));
    CHECK(left == 512);
    // Right: dynslice(3, z) 0, alltoall(0, 1) 64, alltoall(0, 2) 64, allgather(3) 256.
    const std::uint64_t right =
        cost_elements(op::dynslice, L("[1{y, x}8, 8, 8, 4]"), L("[1{y, x}8, 8, 8, 1{z}4]")) +
        cost_elements(op::alltoall, L("[1{y, x}8, 8, 8, 1{z}4]"), L("[2{x}8, 4{y}8, 8, 1{z}4]")) +
        cost_elements(op::alltoall, L("[2{x}8, 4{y}8, 8, 1{z}4]"), L("[8, 4{y}8, 2{x}8, 1{z}4]")) +
        cost_elements(op::allgather, L("[8, 4{y}8, 2{x}8, 1{z}4]"), L("[8, 4{y}8, 2{x}8, 4]"));
    CHECK(right == 384);
  }
  SECTION("Example 7.1: one merged alltoall costs 8, three cost 24") {
    const device_mesh m = parse_mesh("{a: 8}");
    const std::uint64_t l = local_size(m, parse_type(m, "[1{a}8, 8]"));
    CHECK(cost_elements(op::alltoall, l, l) == 8);
    CHECK(3 * cost_elements(op::alltoall, l, l) + cost_elements(op::allpermute, l, l) == 32);
  }
  SECTION("extensions: all-reduce sends about two tiles, reduce-scatter one") {
    CHECK(cost_elements(op::allreduce, 100, 100) == 200);
    CHECK(cost_elements(op::reducescatter, 100, 25) == 100);
  }
}

TEST_CASE("received elements: the data on the wire per device", "[cost][received]") {
  // Groups of 4 with 100-element tiles.
  CHECK(received_elements(op::allgather, 4, 100) == 300);     // three tiles of the others
  CHECK(received_elements(op::alltoall, 4, 100) == 75);       // three of four chunks
  CHECK(received_elements(op::reducescatter, 4, 100) == 75);  // the others' parts of one chunk
  CHECK(received_elements(op::allreduce, 4, 100) == 150);     // reduce-scatter, then allgather
  CHECK(received_elements(op::allpermute, 4, 100) == 100);
  CHECK(received_elements(op::dynslice, 4, 100) == 0);
  // Fig. 11 rounds (n-1)/n up: it never charges less than what arrives.
  for (op o : all_ops)
    for (std::uint64_t n : {1, 2, 3, 8})
      CHECK(received_elements(o, n, 24) <= cost_elements(o, 24, o == op::allgather ? 24 * n : 24));
  static_assert(received_elements(op::alltoall, 2, 10) == 5);
}
