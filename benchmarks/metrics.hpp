// benchmarks/metrics.hpp -- what the benchmarks measure on a program, besides its cost:
// the data-movement lower bound of a problem, the data a program actually moves, and
// verification of baseline programs (which may exceed the memory bound).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/program.hpp"
#include "support/verify.hpp"

namespace redist::bench {

/// The data-movement lower bound of redistributing `a` to `b`, in elements: the most any
/// rank must receive, |target tile| - |target tile intersected with its source tile|
/// (tiles as boxes of global indices from the base offsets, Fig. 7a). Every rank must
/// end with its target tile and can only have the overlap without communication.
inline std::uint64_t movement_lower_bound(const device_mesh& m, const dist_type& a, const dist_type& b) {
  std::uint64_t oa[max_dims]{}, ob[max_dims]{}, worst = 0;
  const std::uint64_t want = local_size(m, b);
  for (std::uint64_t r = 0; r < m.devices; ++r) {
    base_offsets(m, a, r, oa);
    base_offsets(m, b, r, ob);
    std::uint64_t overlap = 1;
    for (int d = 0; d < a.rank; ++d) {
      const std::uint64_t lo = std::max(oa[d], ob[d]);
      const std::uint64_t hi = std::min(oa[d] + tile(m, a.dims[d]), ob[d] + tile(m, b.dims[d]));
      overlap *= hi > lo ? hi - lo : 0;
    }
    worst = std::max(worst, want - overlap);
  }
  return worst;
}

/// The most elements any rank receives from other ranks over the whole program:
/// allgather (n-1) * tile, alltoall (n-1)/n * tile, allpermute the tile unless the rank
/// keeps its own. (The cost model of Fig. 11 rounds (n-1)/n up to 1.)
inline std::uint64_t max_received(const program& p) {
  const std::uint64_t D = p.devices();
  std::vector<std::uint64_t> got(D, 0);
  std::uint64_t local = local_size(p.m, p.source);
  for (const step& s : p.steps) {
    switch (s.kind) {
      case op::allgather:
        for (auto& g : got) g += (s.parts - 1) * local;
        break;
      case op::alltoall:
        for (auto& g : got) g += (s.parts - 1) * (local / s.parts);
        break;
      case op::allpermute:
        for (std::uint64_t r = 0; r < D; ++r)
          if (s.dest[r] != r) got[s.dest[r]] += local;
        break;
      default: break;
    }
    local = s.local_after;
  }
  return D ? *std::max_element(got.begin(), got.end()) : 0;
}

/// Verify a program box by box (tests/support/verify.hpp). Baselines ignore the memory
/// bound, so the bound is raised to the program's own peak for the check; whether the
/// peak is within the paper's bound is reported separately (peak_local_elements vs
/// memory_bound_elements).
inline testing::verify_result verify_ignoring_bound(program p) {
  p.memory_bound_elements = std::max(p.memory_bound_elements, p.peak_local_elements);
  return testing::verify(p);
}

}  // namespace redist::bench
