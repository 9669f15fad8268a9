// tests/fuzz/host_run.hpp -- a real run of a program on the host backend, shared by the
// harnesses that execute what they read or synthesize.
#pragma once

#include <span>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/program.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/verify.hpp"

namespace redist::fuzz {

/// Run `p` on a host backend of its devices, every source element encoding its global index
/// (fill_global_index); true iff every target tile then holds its indices, where a target
/// with pending sums holds them as the sum of each sum group's partials.
template <class T>
bool host_run_exact(const program& p) {
  host_backend b(p.m.devices);
  std::vector<darray<T>> in;
  for (rank_t r = 0; r < p.m.devices; ++r) {
    in.emplace_back(p.m, p.source, r);
    fill_global_index(in.back());
  }
  executor<T, host_backend> ex(b, p);
  std::vector<darray<T>> out = ex.run(std::span<const darray<T>>(in));
  sum_partials_into_roots(std::span<darray<T>>(out));
  for (const darray<T>& t : out)
    if (sum_root(p.m, p.target, t.device()) == t.device() && !check_global_index(t).ok()) return false;
  return true;
}

}  // namespace redist::fuzz
