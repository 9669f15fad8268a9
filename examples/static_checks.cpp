// examples/static_checks.cpp -- a tour of the compile-time API. Everything checked here
// is checked by the compiler: if this file compiles, the plans are what the asserts say.
#include <fmt/core.h>

#include "redist/backends/host.hpp"
#include "redist/format.hpp"
#include "redist/static/collectives.hpp"
#include "redist/static/plan.hpp"
#include "redist/static/redistribute.hpp"

// 1. A mesh and distributed types are types. Strings are parsed at compile time by the
//    same parser the run-time API uses; a typo stops the build and names the column.
using M = redist::mesh<"{x: 4, y: 8}">;
using A = redist::dtype<M, "[64{x}256, 1024]">;    // rows split over x, replicated over y
using B = redist::dtype<M, "[256, 128{y}1024]">;   // columns split over y, replicated over x
static_assert(redist::local_size_v<A> == 64 * 1024);

// 2. plan_for finds the memory-bounded program of least predicted time (the built-in profile,
//    4-byte elements) with a constexpr Dijkstra; plan_options{redist::objective::bytes} gives
//    the paper's fewest-bytes program.
constexpr auto plan = redist::plan_for<A, B>();
static_assert(plan.memory_efficient());             // never above max(localsize(A), localsize(B))
static_assert(plan.count(redist::op::allgather) == 1 && plan.count(redist::op::dynslice) == 1);
static_assert(plan.count(redist::op::allpermute) == 0);
static_assert(plan.cost_bytes(4) == 128 * 1024);    // bytes per device for float

// 3. redistributable is a concept: same mesh, same global shape.
static_assert(redist::redistributable<A, B>);
static_assert(!redist::redistributable<A, redist::dtype<M, "[256, 512]">>);

// 4. A larger budget may trade memory for bytes moved (here it does not need to).
constexpr auto roomy = redist::plan_for<A, B, redist::plan_budget{2, 1}>();
static_assert(roomy.cost_elements <= plan.cost_elements);

// 5. Typed collectives: the result type follows from the rules of Fig. 8.
using G = redist::all_gather_t<A, 0>;                // drop x from dimension 0
static_assert(redist::same_type_v<G, redist::dtype<M, "[256, 1024]">>);
using S = redist::dyn_slice_t<G, 1, "y">;             // split dimension 1 over y
static_assert(redist::same_type_v<S, B>);
static_assert(!redist::t_allgather<B, 0>);           // dimension 0 of B is not partitioned

// 6. Partial sums: a contracting dimension leaves pending sums; reduce-scatter, not
//    all-reduce + slice, resolves them into a partitioned result.
using P = redist::dtype<M, "[64{x}256, 1024] sum{y}">;
constexpr auto reduce = redist::plan_for<P, redist::dtype<M, "[64{x}256, 128{y}1024]">>();
static_assert(reduce.steps() == 1 && reduce.count(redist::op::reducescatter) == 1);

int main() {
  // 7. At run time the plan is a program any backend executes.
  fmt::print("{}\n", plan.to_program(4));
  redist::host_backend comm(M::value.devices);
  auto xs = redist::make_tiles<float, A>();
  for (auto& x : xs) redist::for_each_global(x.dynamic(), [](std::uint64_t g, float& v) { v = static_cast<float>(g); });
  const auto zs = redist::redistribute<B>(comm, xs);
  std::uint64_t wrong = 0;
  for (const auto& z : zs)
    redist::for_each_global(z.dynamic(), [&](std::uint64_t g, const float& v) { wrong += v != static_cast<float>(g); });
  fmt::print("redistributed {} tiles of {} to {}: {}\n", zs.size(), redist::type_string<A>().view(),
             redist::type_string<B>().view(), wrong == 0 ? "every element in place" : "WRONG");
  return wrong == 0 ? 0 : 1;
}
