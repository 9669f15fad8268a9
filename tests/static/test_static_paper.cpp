// tests/static/test_static_paper.cpp -- the paper's named cases, planned by the compiler.
// Compiling this file is the test of the static_asserts; the test cases then check that
// the compile-time programs equal the run-time ones and verify them box by box.
#include <catch2/catch.hpp>

#include "redist/lower/synthesize.hpp"
#include "redist/static/plan.hpp"
#include "support/verify.hpp"

namespace {
using redist::dtype;
using redist::mesh;
using redist::op;
using redist::plan_for;

// The paper's cases under the paper's cost (Fig. 11 bytes): objective::bytes. The default
// objective (predicted time) is checked against the run-time search below.
constexpr redist::plan_options paper{redist::objective::bytes};

// Listing 3: one alltoall, within the bound, 2048 elements of 4 bytes per device.
using Devs = mesh<"{devs: 32}">;
using Y = dtype<Devs, "[32, 64{devs}2048]">;
using Z = dtype<Devs, "[1{devs}32, 2048]">;
constexpr auto listing3 = plan_for<Y, Z,
                              redist::plan_budget{}, paper>();
static_assert(listing3.steps() == 1 && listing3.count(op::alltoall) == 1);
static_assert(listing3.memory_efficient() && listing3.count(op::allgather) == 0);
static_assert(listing3.cost_bytes(4) == 8192 && listing3.height() == 2048);
static_assert(redist::redistributable<Y, Z>);
static_assert(!redist::redistributable<Y, dtype<Devs, "[32, 1024]">>);

// Fig. 3: each row is a single allpermute.
using XY4 = mesh<"{xdev: 4, ydev: 4}">;
constexpr auto fig3a = plan_for<dtype<XY4, "[64{ydev, xdev}1024, 128]">, dtype<XY4, "[64{xdev, ydev}1024, 128]">,
                              redist::plan_budget{}, paper>();
constexpr auto fig3b = plan_for<dtype<XY4, "[32{xdev}128, 16{ydev}64]">, dtype<XY4, "[32{ydev}128, 16{xdev}64]">,
                              redist::plan_budget{}, paper>();
constexpr auto fig3c = plan_for<dtype<XY4, "[32{xdev}128]">, dtype<XY4, "[32{ydev}128]">,
                              redist::plan_budget{}, paper>();
static_assert(fig3a.steps() == 1 && fig3a.count(op::allpermute) == 1 && fig3a.cost_bytes(1) == 64 * 128);
static_assert(fig3b.steps() == 1 && fig3b.count(op::allpermute) == 1 && fig3b.cost_bytes(1) == 32 * 16);
static_assert(fig3c.steps() == 1 && fig3c.count(op::allpermute) == 1 && fig3c.cost_bytes(1) == 32);

// Fig. 5 on {x: 4, y: 4}: never costlier than the cheaper sequence shown (Fig. 11 costs).
using XY = mesh<"{x: 4, y: 4}">;
// Rows 1-2: allpermute + alltoall(0,1), or alltoall(0,1) + allpermute: 4096 + 4096.
constexpr auto fig5a = plan_for<dtype<XY, "[32{x, y}512, 128]">, dtype<XY, "[128{x}512, 32{y}128]">,
                              redist::plan_budget{}, paper>();
static_assert(fig5a.cost_elements <= 8192 && fig5a.memory_efficient());
// Row 3: alltoall(0,1) + alltoall(2,1): 2 * 32*512*32.
constexpr auto fig5b = plan_for<dtype<XY, "[32{x}128, 512, 32{y}128]">, dtype<XY, "[128, 32{y, x}512, 128]">,
                              redist::plan_budget{}, paper>();
static_assert(fig5b.cost_elements <= 2 * 524288 && fig5b.count(op::allgather) == 0);
// Row 4: alltoall(2,1) (524288) + allgather(0) (128*128*128) beats allgather(0) + alltoall(2,1).
constexpr auto fig5c = plan_for<dtype<XY, "[32{x}128, 512, 32{y}128]">, dtype<XY, "[128, 128{y}512, 128]">,
                              redist::plan_budget{}, paper>();
static_assert(fig5c.cost_elements <= 524288 + 2097152 && fig5c.memory_efficient());

// Example 3.1: no allgather, within the bound.
using X4Y6 = mesh<"{x: 4, y: 6}">;
constexpr auto ex31 = plan_for<dtype<X4Y6, "[3{x}12, 2{y}12]">, dtype<X4Y6, "[2{y}12, 3{x}12]">,
                              redist::plan_budget{}, paper>();
static_assert(ex31.count(op::allgather) == 0 && ex31.memory_efficient() && ex31.height() == 6);

// Examples 4.9 / 6.8: a single alltoall.
using A8 = mesh<"{a: 8}">;
constexpr auto ex49 = plan_for<dtype<A8, "[1{a}8, 8]">, dtype<A8, "[8, 1{a}8]">,
                              redist::plan_budget{}, paper>();
static_assert(ex49.steps() == 1 && ex49.count(op::alltoall) == 1 && ex49.cost_elements == 8);

// Fig. 12: over-partitioning reaches 384 elements, not 512.
using XYZ = mesh<"{x: 4, y: 2, z: 4}">;
constexpr auto fig12 = plan_for<dtype<XYZ, "[1{y, x}8, 8, 8, 4]">, dtype<XYZ, "[8, 4{y}8, 2{x}8, 4]">,
                              redist::plan_budget{}, paper>();
static_assert(fig12.cost_elements <= 384 && fig12.count(op::dynslice) >= 1);

// Sec. 7.3: [16] -> [4{x}16] is one dynslice, no permutation.
constexpr auto sec73 = plan_for<dtype<XY, "[16]">, dtype<XY, "[4{x}16]">,
                              redist::plan_budget{}, paper>();
static_assert(sec73.steps() == 1 && sec73.count(op::dynslice) == 1 && sec73.cost_elements == 0);

// A memory budget may only lower the cost.
constexpr auto fig5c_2x = plan_for<dtype<XY, "[32{x}128, 512, 32{y}128]">, dtype<XY, "[128, 128{y}512, 128]">,
                                   redist::plan_budget{2, 1}, paper>();
static_assert(fig5c_2x.cost_elements <= fig5c.cost_elements);

// Spelling does not matter: the same type written two ways is the same value.
static_assert(redist::same_type_v<dtype<XY, "[4{x}16]">, dtype<XY, "[ {x}16 ]">>);
static_assert(redist::local_size_v<Y> == 2048);

/// The compile-time program equals the run-time search's collective program under the same
/// objective (synthesize's with objective::bytes; under objective::time synthesize may
/// then choose the exchange, which compile-time plans do not offer: search_program).
// The default objective, predicted time under the built-in profile (core/time_model.hpp, a
// constexpr value): the same model as the run-time search's default.
constexpr auto listing3_time = plan_for<Y, Z>();
static_assert(listing3_time.memory_efficient() && listing3_time.count(op::allgather) == 0);
constexpr auto ex49_time = plan_for<dtype<A8, "[1{a}8, 8]">, dtype<A8, "[8, 1{a}8]">>();
constexpr auto fig12_time = plan_for<dtype<XYZ, "[1{y, x}8, 8, 8, 4]">, dtype<XYZ, "[8, 4{y}8, 2{x}8, 4]">>();
static_assert(ex49_time.memory_efficient() && fig12_time.memory_efficient());
// Pending sums reduced by one all-reduce, as XLA, Shardy and DTensor do (issue 24), where
// Fig. 11 bytes prefer reduce-scatter + all-gather (an all-reduce counts double).
constexpr auto sums_time = plan_for<dtype<XYZ, "[4, 8] sum{y}">, dtype<XYZ, "[4, 8]">>();
static_assert(sums_time.steps() == 1 && sums_time.count(op::allreduce) == 1);
constexpr auto sums_bytes = plan_for<dtype<XYZ, "[4, 8] sum{y}">, dtype<XYZ, "[4, 8]">, redist::plan_budget{}, paper>();
static_assert(sums_bytes.count(op::allreduce) == 0 && sums_bytes.cost_elements < sums_time.cost_elements);

template <class A, class B, class Plan>
void check_equal_to_runtime(const Plan& plan, redist::objective goal = redist::objective::bytes) {
  const redist::device_mesh& m = A::mesh_type::value;
  const redist::synth_options opt{.element_bytes = 4, .goal = goal};
  const redist::program rt = goal == redist::objective::bytes ? redist::synthesize(m, A::value, B::value, opt)
                                                               : redist::search_program(m, A::value, B::value, opt);
  const redist::program ct = plan.to_program(4);
  INFO(redist::type_text(m, A::value).view() << " -> " << redist::type_text(m, B::value).view());
  REQUIRE(ct.steps.size() == rt.steps.size());
  for (std::size_t i = 0; i < rt.steps.size(); ++i) {
    CHECK(ct.steps[i].kind == rt.steps[i].kind);
    CHECK(ct.steps[i].members == rt.steps[i].members);
    CHECK(ct.steps[i].index == rt.steps[i].index);
    CHECK(ct.steps[i].dest == rt.steps[i].dest);
    CHECK(ct.steps[i].cost == rt.steps[i].cost);
  }
  CHECK(ct.cost_elements == rt.cost_elements);
  CHECK(ct.peak_local_elements == rt.peak_local_elements);
  auto v = redist::testing::verify(ct);
  CHECK(v.ok);
  INFO(v.message);
}
}  // namespace

TEST_CASE("compile-time plans of the paper's cases equal the run-time plans and verify", "[static]") {
  check_equal_to_runtime<Y, Z>(listing3);
  check_equal_to_runtime<dtype<XY4, "[64{ydev, xdev}1024, 128]">, dtype<XY4, "[64{xdev, ydev}1024, 128]">>(fig3a);
  check_equal_to_runtime<dtype<XY4, "[32{xdev}128, 16{ydev}64]">, dtype<XY4, "[32{ydev}128, 16{xdev}64]">>(fig3b);
  check_equal_to_runtime<dtype<XY4, "[32{xdev}128]">, dtype<XY4, "[32{ydev}128]">>(fig3c);
  check_equal_to_runtime<dtype<XY, "[32{x, y}512, 128]">, dtype<XY, "[128{x}512, 32{y}128]">>(fig5a);
  check_equal_to_runtime<dtype<XY, "[32{x}128, 512, 32{y}128]">, dtype<XY, "[128, 32{y, x}512, 128]">>(fig5b);
  check_equal_to_runtime<dtype<XY, "[32{x}128, 512, 32{y}128]">, dtype<XY, "[128, 128{y}512, 128]">>(fig5c);
  check_equal_to_runtime<dtype<X4Y6, "[3{x}12, 2{y}12]">, dtype<X4Y6, "[2{y}12, 3{x}12]">>(ex31);
  check_equal_to_runtime<dtype<A8, "[1{a}8, 8]">, dtype<A8, "[8, 1{a}8]">>(ex49);
  check_equal_to_runtime<dtype<XYZ, "[1{y, x}8, 8, 8, 4]">, dtype<XYZ, "[8, 4{y}8, 2{x}8, 4]">>(fig12);
  check_equal_to_runtime<dtype<XY, "[16]">, dtype<XY, "[4{x}16]">>(sec73);
}

TEST_CASE("compile-time plans under the time objective equal the run-time search's", "[static][time]") {
  check_equal_to_runtime<Y, Z>(listing3_time, redist::objective::time);
  check_equal_to_runtime<dtype<A8, "[1{a}8, 8]">, dtype<A8, "[8, 1{a}8]">>(ex49_time, redist::objective::time);
  check_equal_to_runtime<dtype<XYZ, "[1{y, x}8, 8, 8, 4]">, dtype<XYZ, "[8, 4{y}8, 2{x}8, 4]">>(fig12_time,
                                                                                             redist::objective::time);
  check_equal_to_runtime<dtype<XYZ, "[4, 8] sum{y}">, dtype<XYZ, "[4, 8]">>(sums_time, redist::objective::time);
  check_equal_to_runtime<dtype<XYZ, "[4, 8] sum{y}">, dtype<XYZ, "[4, 8]">>(sums_bytes);
}
