// benchmarks/synthesis_time.cpp -- run-time synthesis speed (search + lowering).
//
// Workloads: the paper's (1000 random problems, mesh {a: 2, b: 2, c: 2}, 1-6 dimensions,
// 64-800 MiB of float32) and 1024-device meshes with 8-D arrays. Prints p50 / p99 / max
// per problem of the search and its lowering, the search's p99, the nodes the search
// settled, and the p99 of the whole of `synthesize` with its default options (the same,
// plus the exchange candidate and the choice between the two by predicted time); then
// `synthesize` on dense exchanges of 1024 and 1728 devices, where every receiver needs a
// piece from every sender (best of 3), with the exchange candidate's pieces.
// Usage: synthesis_time [problems] [seed]
#include <algorithm>
#include <array>
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
  std::vector<double> synthesize_ms;
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
  row r{name, {}, {}, {}, 0, 0, 0};
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
    const redist::program chosen = redist::synthesize(m, a, b);
    auto t3 = clock::now();
    r.synthesize_ms.push_back(std::chrono::duration<double, std::milli>(t3 - t2).count());
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

  fmt::print("{:<32} {:>9} {:>9} {:>9} {:>9} {:>12} {:>10} {:>9} {:>9} {:>15}\n", "workload", "problems", "p50 ms",
             "p99 ms", "max ms", "search p99", "max nodes", "max steps", "permutes", "synthesize p99");
  for (const auto& r : rows)
    fmt::print("{:<32} {:>9} {:>9.3f} {:>9.3f} {:>9.3f} {:>12.3f} {:>10} {:>9} {:>9} {:>15.3f}\n", r.name, r.ms.size(),
               pct(r.ms, 0.5), pct(r.ms, 0.99), pct(r.ms, 1.0), pct(r.search_ms, 0.99), r.nodes_max, r.steps_max,
               r.permutes, pct(r.synthesize_ms, 0.99));

  fmt::print("\n{:<66} {:>10} {:>12} {:>10}\n", "dense exchange", "pieces", "synthesize ms", "chosen");
  for (const auto& [mesh, from, to] : std::vector<std::array<const char*, 3>>{
           {"{x: 12, y: 12, z: 12}", "[12, {x, y, z}5184]", "[{x}12, 5184]"},
           {"{x: 12, y: 12, z: 12}", "[{x, y, z}1700, 64]", "[1700, {x}64]"},
           {"{a: 4, b: 4, c: 8, d: 8}", "[{a, b, c, d}1024, 64]", "[1024, {a, b}64]"}}) {
    const redist::device_mesh m = redist::parse_mesh(mesh);
    const redist::dist_type a = redist::parse_type(m, from), b = redist::parse_type(m, to);
    double best = 1e300;
    redist::program chosen;
    for (int k = 0; k < 3; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      chosen = redist::synthesize(m, a, b);
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    const redist::plan_choice c = redist::choose_plan(m, a, b);
    std::size_t pieces = 0;
    for (const redist::plan_candidate& k : c.candidates)
      if (k.name == "exchange") pieces = redist::plan_exchange(k.prog, k.prog.steps.size() - 1).pieces.size();
    fmt::print("{:<66} {:>10} {:>12.1f} {:>10}\n", fmt::format("{} {} -> {}", mesh, from, to), pieces, best,
               c.candidates[c.chosen].name);
  }
  return 0;
}
