// benchmarks/synthesis_time.cpp -- run-time synthesis speed (search + lowering).
//
// Workloads: the paper's (1000 random problems, mesh {a: 2, b: 2, c: 2}, 1-6 dimensions,
// 64-800 MiB of float32) and 1024-device meshes with 8-D arrays. Prints p50 / p99 / max
// per problem, and the nodes the search settled. Usage: synthesis_time [problems] [seed]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "redist/lower/synthesize.hpp"
#include "support/random_problems.hpp"

namespace {

struct row {
  std::string name;
  std::vector<double> ms;
  std::vector<double> search_ms;
  std::uint64_t nodes_max = 0;
  std::uint64_t steps_max = 0;
  std::size_t permutes = 0;
};

double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  std::size_t i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

row run(const std::string& name, const redist::testing::workload& w, std::size_t n, std::uint64_t seed) {
  using clock = std::chrono::steady_clock;
  row r{name, {}, {}, 0, 0, 0};
  auto probs = redist::testing::random_problems(w, n, seed);
  for (const auto& p : probs) {
    redist::device_mesh m = redist::parse_mesh(p.mesh);
    redist::dist_type a = redist::parse_type(m, p.from), b = redist::parse_type(m, p.to);
    auto t0 = clock::now();
    redist::weak_problem wp = redist::make_weak_problem(m, a, b).get();
    redist::weak_plan plan = redist::search_bgl(wp);
    auto t1 = clock::now();
    redist::program prog = redist::lower(m, a, b, wp, plan, 4).get();
    auto t2 = clock::now();
    r.ms.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());
    r.search_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    r.nodes_max = std::max(r.nodes_max, plan.nodes_visited);
    r.steps_max = std::max<std::uint64_t>(r.steps_max, prog.steps.size());
    r.permutes += prog.count(redist::op::allpermute) > 0;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000;
  const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2024;

  redist::testing::workload paper = redist::testing::paper_workload();
  paper.min_elements = (64ull << 20) / 4;
  paper.max_elements = (800ull << 20) / 4;

  redist::testing::workload big4 = paper;
  big4.axes = {{"a", 4}, {"b", 4}, {"c", 8}, {"d", 8}};
  big4.min_dims = big4.max_dims = 8;
  big4.min_elements = 1ull << 30;
  big4.max_elements = 1ull << 36;

  redist::testing::workload big10 = big4;
  big10.axes.clear();
  for (char c = 'a'; c < 'a' + 10; ++c) big10.axes.push_back({std::string(1, c), 2});

  std::vector<row> rows;
  rows.push_back(run("paper {a:2,b:2,c:2}, 1-6-D", paper, n, seed));
  rows.push_back(run("{a:4,b:4,c:8,d:8}, 8-D", big4, std::max<std::size_t>(n / 10, 10), seed));
  rows.push_back(run("10 axes of 2 (1024 dev), 8-D", big10, std::max<std::size_t>(n / 10, 10), seed));

  fmt::print("{:<32} {:>9} {:>9} {:>9} {:>9} {:>12} {:>10} {:>9} {:>9}\n", "workload", "problems", "p50 ms", "p99 ms",
             "max ms", "search p99", "max nodes", "max steps", "permutes");
  for (const auto& r : rows)
    fmt::print("{:<32} {:>9} {:>9.3f} {:>9.3f} {:>9.3f} {:>12.3f} {:>10} {:>9} {:>9}\n", r.name, r.ms.size(), pct(r.ms, 0.5),
               pct(r.ms, 0.99), pct(r.ms, 1.0), pct(r.search_ms, 0.99), r.nodes_max, r.steps_max, r.permutes);
  return 0;
}
