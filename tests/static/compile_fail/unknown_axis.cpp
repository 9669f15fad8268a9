// Compile-fail test (unknown_axis): see tests/static/CMakeLists.txt.
#include "redist/static/dtype.hpp"

using M = redist::mesh<"{x: 4, y: 2}">;
#ifdef REDIST_FAIL
using T = redist::dtype<M, "[32, 64{dev}2048]">;
#else
using T = redist::dtype<M, "[32, 512{x}2048]">;
#endif
constexpr auto value = T::value;

int main() { return value.rank == 0; }
