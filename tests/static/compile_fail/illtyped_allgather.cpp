// Compile-fail test (illtyped_allgather): a typed collective whose typing rule does not apply.
#include "redist/backends/host.hpp"
#include "redist/static/collectives.hpp"

using M = redist::mesh<"{x: 4, y: 2}">;
using A = redist::dtype<M, "[4{x}16, 16]">;

int main() {
  redist::host_backend comm(1);
  redist::darray<float, A> x(0);
#ifdef REDIST_FAIL
  auto y = redist::all_gather<1>(comm, x);
#else
  auto y = redist::all_gather<0>(comm, x);
#endif
  return y.size() > 0 ? 0 : 1;
}
