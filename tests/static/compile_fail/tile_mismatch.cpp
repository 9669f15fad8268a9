// Compile-fail test (tile_mismatch): see tests/static/CMakeLists.txt. A written tile must be
// ceil(global / tiles): 8 for 30 over 4, not 7.
#include "redist/static/dtype.hpp"

using M = redist::mesh<"{x: 4, y: 2}">;
#ifdef REDIST_FAIL
using T = redist::dtype<M, "[7{x}30]">;
#else
using T = redist::dtype<M, "[8{x}30]">;
#endif
constexpr auto value = T::value;

int main() { return value.rank == 1 ? 0 : 1; }
