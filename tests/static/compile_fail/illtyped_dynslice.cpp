// Compile-fail test (illtyped_dynslice): a typed collective whose typing rule does not apply.
#include "redist/backends/host.hpp"
#include "redist/static/collectives.hpp"

using M = redist::mesh<"{x: 4, y: 2}">;
using A = redist::dtype<M, "[4{x}16, 16]">;

int main() {
  redist::host_backend comm(1);
  redist::darray<float, A> x(0);
#ifdef REDIST_FAIL
  auto y = redist::dyn_slice<1, "x">(x);
#else
  auto y = redist::dyn_slice<1, "y">(x);
#endif
  return y.size() > 0 ? 0 : 1;
}
