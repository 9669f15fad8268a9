// Compile-fail test (global_mismatch): a plan between types of different global shapes.
#include "redist/static/plan.hpp"

using M = redist::mesh<"{devs: 32}">;
using Y = redist::dtype<M, "[32, 64{devs}2048]">;
#ifdef REDIST_FAIL
using Z = redist::dtype<M, "[32, 1024]">;
#else
using Z = redist::dtype<M, "[1{devs}32, 2048]">;
#endif
constexpr auto plan = redist::plan_for<Y, Z>();

int main() { return plan.steps() == 1 ? 0 : 1; }
