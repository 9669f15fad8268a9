// benchmarks/compile_time/plan_for_tu.cpp -- one translation unit compiled with and
// without a compile-time plan (see ../compile_time.sh): the difference is what plan_for
// adds to a build.
#include "redist/static/plan.hpp"

using Devs = redist::mesh<"{devs: 32}">;
using Y = redist::dtype<Devs, "[32, 64{devs}2048]">;
using Z = redist::dtype<Devs, "[1{devs}32, 2048]">;

using XYZ = redist::mesh<"{x: 4, y: 2, z: 4}">;  // seed 000 Fig. 12
using F12a = redist::dtype<XYZ, "[1{y, x}8, 8, 8, 4]">;
using F12b = redist::dtype<XYZ, "[8, 4{y}8, 2{x}8, 4]">;

using M3 = redist::mesh<"{a: 2, b: 2, c: 2}">;
using A6 = redist::dtype<M3, "[96{a}192, 25{c, b}100, 32, 6, 48, 17]">;
using B6 = redist::dtype<M3, "[192, 100, 16{b}32, 3{a}6, 24{c}48, 17]">;

// The default objective (predicted time), and Fig. 12 under the paper's (fewest bytes).
#if defined(WITH_LISTING3)
constexpr auto plan = redist::plan_for<Y, Z>();
static_assert(plan.memory_efficient() && plan.count(redist::op::allgather) == 0);
#elif defined(WITH_6D)
constexpr auto plan = redist::plan_for<A6, B6>();
static_assert(plan.memory_efficient());
#elif defined(WITH_FIG12)
constexpr auto plan = redist::plan_for<F12a, F12b>();  // needs the alternative-path search
static_assert(plan.memory_efficient());
#elif defined(WITH_FIG12_BYTES)
constexpr auto plan = redist::plan_for<F12a, F12b, redist::plan_budget{}, redist::plan_options{redist::objective::bytes}>();
static_assert(plan.cost_elements <= 384);
#else
constexpr auto types = Y::value.rank + Z::value.rank + A6::value.rank + B6::value.rank + F12a::value.rank +
                       F12b::value.rank;  // parsing only
#endif

int main() { return 0; }
