// tests/support/random_problems.hpp -- seeded random redistribution problems, as text
// (so every test goes through the parser).
//
// The paper's workload (seed 000 Sec. 8): a mesh of 3 axes of size 2, arrays of 1 to 6
// dimensions, each mesh axis either replicating the data or partitioning one dimension
// (in random order within a dimension), source and target drawn independently. Sizes are
// scaled by the caller: every dimension is a random multiple of what both types need.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace redist::testing {

struct problem_text {
  std::string mesh;  ///< `{a: 2, b: 2, c: 2}`
  std::string from;  ///< `[4{a}8, 3]`
  std::string to;
  std::uint64_t elements = 0;  ///< global element count
};

struct workload {
  std::vector<std::pair<std::string, std::uint64_t>> axes;  ///< the mesh
  int min_dims = 1;
  int max_dims = 6;
  std::uint64_t max_multiplier = 3;      ///< each dimension is lcm(needs) * [1, max_multiplier]
  std::uint64_t max_elements = 1 << 16;  ///< redraw multipliers (down to 1) above this
  /// If nonzero, sizes are instead drawn so that the global element count is log-uniform
  /// in [min_elements, max_elements] (the paper's 64-800 MiB), ignoring max_multiplier.
  std::uint64_t min_elements = 0;
  /// If set, a replicated axis of the source becomes a pending-sum axis with probability
  /// 1/2, and the target keeps a random subset of those that it does not partition.
  bool partial_sums = false;
  /// The reduction the pending axes are written with (`sum{..}`, `max{..}`, ...).
  std::string reduction = "sum";
};

/// The paper's mesh {a: 2, b: 2, c: 2}.
inline workload paper_workload(std::uint64_t max_elements = 1 << 16) {
  workload w;
  w.axes = {{"a", 2}, {"b", 2}, {"c", 2}};
  w.max_elements = max_elements;
  return w;
}

namespace testing_detail {
inline std::uint64_t gcd(std::uint64_t a, std::uint64_t b) { return b ? gcd(b, a % b) : a; }
inline std::uint64_t lcm(std::uint64_t a, std::uint64_t b) { return a / gcd(a, b) * b; }

/// Each axis replicates (-1) or partitions a dimension; order within a dimension random.
inline std::vector<std::vector<int>> draw_assignment(std::mt19937_64& rng, const workload& w, int rank) {
  std::vector<std::vector<int>> dims(static_cast<std::size_t>(rank));
  std::vector<int> order(w.axes.size());
  for (std::size_t a = 0; a < order.size(); ++a) order[a] = static_cast<int>(a);
  std::shuffle(order.begin(), order.end(), rng);
  for (int a : order) {
    int d = static_cast<int>(rng() % static_cast<std::uint64_t>(rank + 1)) - 1;
    if (d >= 0) dims[static_cast<std::size_t>(d)].push_back(a);
  }
  return dims;
}

/// The type in the paper syntax; with `tiles` false the tile sizes are left out (inferred).
inline std::string write_type(const workload& w, const std::vector<std::vector<int>>& assign,
                              const std::vector<std::uint64_t>& shape, const std::vector<int>& sums = {},
                              bool tiles = true) {
  std::string s = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d) s += ", ";
    std::uint64_t parts = 1;
    for (int a : assign[d]) parts *= w.axes[static_cast<std::size_t>(a)].second;
    if (assign[d].empty()) {
      s += std::to_string(shape[d]);
      continue;
    }
    if (tiles) s += std::to_string(shape[d] / parts + (shape[d] % parts != 0));  // ceil (uneven dimensions)
    s += '{';
    for (std::size_t i = 0; i < assign[d].size(); ++i) {
      if (i) s += ", ";
      s += w.axes[static_cast<std::size_t>(assign[d][i])].first;
    }
    s += '}';  // (not "}" + std::string: GCC 12 -Wrestrict false positive, PR 105329)
    s += std::to_string(shape[d]);
  }
  s += "]";
  if (!sums.empty()) {
    s += ' ';
    s += w.reduction;
    s += '{';
    for (std::size_t i = 0; i < sums.size(); ++i) {
      if (i) s += ", ";
      s += w.axes[static_cast<std::size_t>(sums[i])].first;
    }
    s += "}";
  }
  return s;
}

/// Axes used by an assignment.
inline std::vector<bool> used_axes(const workload& w, const std::vector<std::vector<int>>& assign) {
  std::vector<bool> used(w.axes.size(), false);
  for (const auto& d : assign)
    for (int a : d) used[static_cast<std::size_t>(a)] = true;
  return used;
}
}  // namespace testing_detail

inline std::string mesh_text(const workload& w) {
  std::string s = "{";
  for (std::size_t a = 0; a < w.axes.size(); ++a) {
    if (a) s += ", ";
    s += w.axes[a].first + ": " + std::to_string(w.axes[a].second);
  }
  return s + "}";
}

/// One random problem of the workload.
inline problem_text random_problem(std::mt19937_64& rng, const workload& w) {
  const int rank = w.min_dims + static_cast<int>(rng() % static_cast<std::uint64_t>(w.max_dims - w.min_dims + 1));
  auto src = testing_detail::draw_assignment(rng, w, rank);
  auto dst = testing_detail::draw_assignment(rng, w, rank);
  std::vector<int> src_sums, dst_sums;
  if (w.partial_sums) {
    const auto su = testing_detail::used_axes(w, src), du = testing_detail::used_axes(w, dst);
    for (std::size_t a = 0; a < w.axes.size(); ++a) {
      if (su[a] || rng() % 2 == 0) continue;
      src_sums.push_back(static_cast<int>(a));
      if (!du[a] && rng() % 2 == 0) dst_sums.push_back(static_cast<int>(a));
    }
  }
  std::vector<std::uint64_t> need(static_cast<std::size_t>(rank), 1), shape(static_cast<std::size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    std::uint64_t ps = 1, pd = 1;
    for (int a : src[static_cast<std::size_t>(d)]) ps *= w.axes[static_cast<std::size_t>(a)].second;
    for (int a : dst[static_cast<std::size_t>(d)]) pd *= w.axes[static_cast<std::size_t>(a)].second;
    need[static_cast<std::size_t>(d)] = testing_detail::lcm(ps, pd);
  }
  std::uint64_t total = 0;
  if (w.min_elements > 0) {
    // Log-uniform total, split over the dimensions by random weights.
    std::uniform_real_distribution<double> u(0.0, 1.0);
    double base = 1;
    for (auto n : need) base *= static_cast<double>(n);
    for (int attempt = 0;; ++attempt) {
      const double lo = std::log(static_cast<double>(w.min_elements)), hi = std::log(static_cast<double>(w.max_elements));
      const double want = std::exp(lo + (hi - lo) * u(rng)) / base;
      std::vector<double> wt(static_cast<std::size_t>(rank));
      double sum = 0;
      for (auto& x : wt) sum += (x = u(rng) + 0.05);
      total = 1;
      for (int d = 0; d < rank; ++d) {
        double m = std::round(std::pow(want, wt[static_cast<std::size_t>(d)] / sum));
        shape[static_cast<std::size_t>(d)] = need[static_cast<std::size_t>(d)] * static_cast<std::uint64_t>(m < 1 ? 1 : m);
        total *= shape[static_cast<std::size_t>(d)];
      }
      if ((total >= w.min_elements && total <= w.max_elements) || attempt > 100) break;
    }
    return {mesh_text(w), testing_detail::write_type(w, src, shape, src_sums), testing_detail::write_type(w, dst, shape, dst_sums), total};
  }
  for (std::uint64_t mult = w.max_multiplier;; mult = mult > 1 ? mult - 1 : 1) {
    total = 1;
    for (int d = 0; d < rank; ++d) {
      shape[static_cast<std::size_t>(d)] = need[static_cast<std::size_t>(d)] * (1 + rng() % mult);
      total *= shape[static_cast<std::size_t>(d)];
    }
    if (total <= w.max_elements || mult == 1) break;
  }
  return {mesh_text(w), testing_detail::write_type(w, src, shape, src_sums), testing_detail::write_type(w, dst, shape, dst_sums), total};
}

/// How many random problems a test of n problems runs: n times the factor in the environment
/// variable REDIST_TEST_SCALE (in (0, 1]; 1 when unset), at least 1. .ci/run's sanitizer pass
/// sets 0.25 for the largest property tests: there the point is memory errors and undefined
/// behaviour on every code path, and the g++ pass runs every problem.
inline std::size_t scaled(std::size_t n) {
  const char* v = std::getenv("REDIST_TEST_SCALE");
  const double f = v == nullptr ? 1.0 : std::strtod(v, nullptr);
  if (!(f > 0.0) || f >= 1.0) return n;
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(static_cast<double>(n) * f)));
}

/// `count` problems from a seed; the same seed gives the same problems on every machine.
inline std::vector<problem_text> random_problems(const workload& w, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<problem_text> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) out.push_back(random_problem(rng, w));
  return out;
}

/// One random problem with uneven dimensions (DESIGN.md section 2): each dimension's size
/// is a prime, smaller than its number of tiles (empty tiles), lcm * t - 1, or any size
/// up to three times its tile counts; at least one dimension of the source or the target
/// is uneven. With w.partial_sums the source may carry pending sums (the target none).
/// Tiles are inferred (`{x}7`) or written (`2{x}7`, ceil) at random. A mesh of one device
/// has no uneven problem: std::invalid_argument (it used to loop forever).
inline problem_text random_uneven_problem(std::mt19937_64& rng, const workload& w) {
  std::uint64_t devices = 1;
  for (const auto& a : w.axes) devices *= a.second;
  if (devices < 2) throw std::invalid_argument("random_uneven_problem: a mesh of one device has no uneven problem");
  static constexpr std::uint64_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71};
  for (;;) {
    const int rank = w.min_dims + static_cast<int>(rng() % static_cast<std::uint64_t>(w.max_dims - w.min_dims + 1));
    auto src = testing_detail::draw_assignment(rng, w, rank);
    auto dst = testing_detail::draw_assignment(rng, w, rank);
    std::vector<int> src_sums;
    if (w.partial_sums) {
      const auto su = testing_detail::used_axes(w, src);
      for (std::size_t a = 0; a < w.axes.size(); ++a)
        if (!su[a] && rng() % 2 == 0) src_sums.push_back(static_cast<int>(a));
    }
    std::vector<std::uint64_t> shape(static_cast<std::size_t>(rank));
    std::uint64_t total = 1;
    bool uneven = false;
    for (int d = 0; d < rank; ++d) {
      const auto k = static_cast<std::size_t>(d);
      std::uint64_t ps = 1, pd = 1;
      for (int a : src[k]) ps *= w.axes[static_cast<std::size_t>(a)].second;
      for (int a : dst[k]) pd *= w.axes[static_cast<std::size_t>(a)].second;
      const std::uint64_t l = testing_detail::lcm(ps, pd), most = std::max(ps, pd);
      std::uint64_t n = 0;
      switch (rng() % 4) {
        case 0: n = primes[rng() % std::size(primes)]; break;
        case 1: n = most > 1 ? 1 + rng() % (most - 1) : 1; break;
        case 2: n = l * (1 + rng() % 3) - (l > 1 ? 1 : 0); break;
        default: n = 1 + rng() % (3 * l); break;
      }
      shape[k] = n;
      total *= n;
      uneven = uneven || n % ps != 0 || n % pd != 0;
    }
    if (!uneven || total > w.max_elements) continue;
    std::string from = testing_detail::write_type(w, src, shape, src_sums, rng() % 2 != 0);  // tiles written or inferred
    std::string to = testing_detail::write_type(w, dst, shape, {}, rng() % 2 != 0);
    return {mesh_text(w), std::move(from), std::move(to), total};
  }
}

/// Meshes beyond the paper's: non-prime axes (3, 4, 6, 12) and up to 64 devices.
inline std::vector<workload> mixed_workloads(std::uint64_t max_elements = 1 << 16) {
  std::vector<workload> ws;
  auto add = [&](std::vector<std::pair<std::string, std::uint64_t>> axes, int max_dims) {
    workload w;
    w.axes = std::move(axes);
    w.max_dims = max_dims;
    w.max_elements = max_elements;
    ws.push_back(w);
  };
  add({{"x", 4}, {"y", 6}}, 4);
  add({{"x", 3}, {"y", 4}, {"z", 5}}, 4);
  add({{"x", 12}}, 3);
  add({{"x", 2}, {"y", 3}, {"z", 2}}, 5);
  add({{"x", 4}, {"y", 4}, {"z", 4}}, 5);
  add({{"x", 8}, {"y", 8}}, 4);
  add({{"p", 2}, {"q", 2}, {"r", 2}, {"s", 2}, {"t", 2}, {"u", 2}}, 6);
  return ws;
}

}  // namespace redist::testing
