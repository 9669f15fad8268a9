// Compile-fail test (bad_mesh): a mesh that declares an axis twice.
#include "redist/static/mesh.hpp"

#ifdef REDIST_FAIL
using M = redist::mesh<"{x: 4, x: 2}">;
#else
using M = redist::mesh<"{x: 4, y: 2}">;
#endif
constexpr auto value = M::value;

int main() { return value.devices == 8 ? 0 : 1; }
