// benchmarks/baselines/naive.hpp -- the naive redistribution of seed 000 eq. (2): all-gather
// every partitioned dimension (the whole array on every device), then dynamic-slice every
// dimension the target partitions. For comparison only: it moves the whole array to every
// device, so its peak local size is the global size, far above the memory bound.
#pragma once

#include <cstdint>
#include <vector>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/rules.hpp"
#include "redist/lower/lower.hpp"
#include "redist/program.hpp"
#include "redist/search/weak_graph.hpp"

namespace redist::baselines {

/// The weak path of eq. (2): one allgather per partitioned dimension of the source (by its
/// whole tile count, dimensions ascending), then one dynslice per partitioned dimension of
/// the target; pending partial sums the target does not keep are all-reduced first.
/// Ignores the problem's memory bound.
inline std::vector<weak_step> naive_path(const weak_problem& p) {
  std::vector<weak_step> path;
  shape cur = p.source;
  std::uint64_t local = p.ctx.local_size(cur);
  auto add = [&](const weak_edge& e) {
    weak_step st;
    st.edge = e;
    if (!p.apply(cur, e, st.after)) throw redist_error(errc::rule, "naive baseline: ill-typed step");
    st.weight = p.weight(e, local, p.ctx.local_size(st.after));
    cur = st.after;
    local = p.ctx.local_size(cur);
    path.push_back(st);
  };
  // Partial sums (an extension): first reduce the sums the target does not keep.
  if (p.source.sums > p.target.sums)
    add({op::allreduce, static_cast<std::int8_t>(p.source.rank), -1, p.source.sums / p.target.sums});
  for (int d = 0; d < p.source.rank; ++d)
    if (p.source.parts[d] > 1) add({op::allgather, static_cast<std::int8_t>(d), -1, p.source.parts[d]});
  for (int d = 0; d < p.target.rank; ++d)
    if (p.target.parts[d] > 1) add({op::dynslice, -1, static_cast<std::int8_t>(d), p.target.parts[d]});
  return path;
}

/// The naive program from `a` to `b`. Its memory_bound_elements stays the paper's bound
/// (eq. 4), so `peak_local_elements > memory_bound_elements` shows what it costs in memory.
/// Throws redist_error on ill-formed types or differing global shapes.
inline program naive_program(const device_mesh& m, const dist_type& a, const dist_type& b, std::uint64_t element_bytes = 4) {
  if (element_bytes == 0) throw redist_error(errc::bad_size, "element size must be at least 1 byte");
  weak_problem p = make_weak_problem(m, a, b).get();
  return lower_path(m, a, b, p, naive_path(p), element_bytes).get();
}

}  // namespace redist::baselines
