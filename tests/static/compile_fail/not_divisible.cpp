// Compile-fail test (not_divisible): see tests/static/CMakeLists.txt.
#include "redist/static/dtype.hpp"

using M = redist::mesh<"{x: 4, y: 2}">;
#ifdef REDIST_FAIL
using T = redist::dtype<M, "[{x}30]">;
#else
using T = redist::dtype<M, "[{x}32]">;
#endif
constexpr auto value = T::value;

int main() { return value.rank == 0; }
