// Compile-fail test (uneven_plan): see tests/static/CMakeLists.txt. An uneven type parses
// at compile time (ceil tiles), but plan_for refuses it in plain words.
#include "redist/static/plan.hpp"

using M = redist::mesh<"{x: 4, y: 2}">;
#ifdef REDIST_FAIL
using A = redist::dtype<M, "[{x}30]">;
using B = redist::dtype<M, "[30]">;
static_assert(A::value.dims[0].global == 30 && redist::tile(M::value, A::value.dims[0]) == 8);
#else
using A = redist::dtype<M, "[{x}32]">;
using B = redist::dtype<M, "[32]">;
#endif
constexpr auto plan = redist::plan_for<A, B>();

int main() { return plan.steps() == 1 ? 0 : 1; }
