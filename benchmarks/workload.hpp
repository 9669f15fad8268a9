// benchmarks/workload.hpp -- the benchmark workloads, seeded and reproducible (the same
// problems on every machine), drawn with the shared generator tests/support/random_problems.hpp.
//
//   paper   seed 000 Sec. 8: 1000 random problems on {a: 2, b: 2, c: 2}, arrays of 1 to 6
//           dimensions, 64-800 MiB of float32 (log-uniform), each mesh axis replicating or
//           partitioning one dimension (random order within a dimension), source and target
//           drawn independently.
//   mixed   the same draw on meshes with non-prime axes: {x: 4, y: 6}, {x: 3, y: 4, z: 5},
//           {x: 8, y: 4, z: 4}.
//   scale   1024 devices: {a: 4, b: 4, c: 8, d: 8} and ten axes of size 2, 8-D arrays.
//   exec    the paper's draw scaled to 8-64 MiB, for execution on 8 MPI ranks.
// Quick mode (CI) draws a few problems of each, from the same seeds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/random_problems.hpp"

namespace redist::bench {

/// Problems drawn on one mesh.
struct mesh_workload {
  std::string mesh;              ///< as text, for tables
  testing::workload w;
  std::size_t problems = 0;
  std::uint64_t seed = 0;
  [[nodiscard]] std::vector<testing::problem_text> draw() const { return testing::random_problems(w, problems, seed); }
};

/// A named workload: one or more meshes.
struct workload_set {
  std::string name;
  std::vector<mesh_workload> meshes;
};

namespace detail {
inline mesh_workload make(std::vector<std::pair<std::string, std::uint64_t>> axes, int min_dims, int max_dims,
                          std::uint64_t min_elements, std::uint64_t max_elements, std::size_t problems, std::uint64_t seed) {
  mesh_workload m;
  m.w.axes = std::move(axes);
  m.w.min_dims = min_dims;
  m.w.max_dims = max_dims;
  m.w.min_elements = min_elements;
  m.w.max_elements = max_elements;
  m.mesh = testing::mesh_text(m.w);
  m.problems = problems;
  m.seed = seed;
  return m;
}
constexpr std::uint64_t mib_of_float(std::uint64_t mib) { return (mib << 20) / 4; }
}  // namespace detail

inline workload_set paper_workload(bool quick = false) {
  return {"paper",
          {detail::make({{"a", 2}, {"b", 2}, {"c", 2}}, 1, 6, detail::mib_of_float(64), detail::mib_of_float(800),
                        quick ? 40 : 1000, 2024)}};
}

inline workload_set mixed_workload(bool quick = false) {
  const std::size_t n = quick ? 8 : 200;
  const std::uint64_t lo = detail::mib_of_float(64), hi = detail::mib_of_float(800);
  return {"mixed",
          {detail::make({{"x", 4}, {"y", 6}}, 1, 6, lo, hi, n, 3001),
           detail::make({{"x", 3}, {"y", 4}, {"z", 5}}, 1, 6, lo, hi, n, 3002),
           detail::make({{"x", 8}, {"y", 4}, {"z", 4}}, 1, 6, lo, hi, n, 3003)}};
}

inline workload_set scale_workload(bool quick = false) {
  const std::size_t n = quick ? 3 : 50;
  std::vector<std::pair<std::string, std::uint64_t>> ten;
  for (char c = 'a'; c < 'a' + 10; ++c) ten.push_back({std::string(1, c), 2});
  return {"scale",
          {detail::make({{"a", 4}, {"b", 4}, {"c", 8}, {"d", 8}}, 8, 8, std::uint64_t{1} << 30, std::uint64_t{1} << 36, n, 4001),
           detail::make(ten, 8, 8, std::uint64_t{1} << 30, std::uint64_t{1} << 36, n, 4002)}};
}

/// The paper's draw scaled to latency-bound sizes, 64 KiB - 1 MiB, for execution on 8 ranks;
/// with partial sums in the sources (`sums`: the time objective's all-reduce or not).
inline workload_set small_workload(bool quick, std::size_t problems, bool sums) {
  mesh_workload m = detail::make({{"a", 2}, {"b", 2}, {"c", 2}}, 1, 6, (64u << 10) / 4, detail::mib_of_float(1),
                                 quick ? 3 : problems, sums ? 5007 : 5006);
  m.w.partial_sums = sums;
  return {sums ? "sums" : "small", {m}};
}

/// The paper's draw scaled for execution on 8 ranks: 8-64 MiB (quick: 64 KiB - 1 MiB).
inline workload_set exec_workload(bool quick = false, std::size_t problems = 50) {
  return {"exec",
          {detail::make({{"a", 2}, {"b", 2}, {"c", 2}}, 1, 6, quick ? (64u << 10) / 4 : detail::mib_of_float(8),
                        quick ? detail::mib_of_float(1) : detail::mib_of_float(64), quick ? 3 : problems, 5005)}};
}

}  // namespace redist::bench
