// Compile-fail test (bad_literal): see tests/static/CMakeLists.txt.
#include "redist/static/dtype.hpp"

using M = redist::mesh<"{x: 4, y: 2}">;
#ifdef REDIST_FAIL
using T = redist::dtype<M, "[4{x}16">;
#else
using T = redist::dtype<M, "[4{x}16]">;
#endif
constexpr auto value = T::value;

int main() { return value.rank == 0; }
