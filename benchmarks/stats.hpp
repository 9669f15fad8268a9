// benchmarks/stats.hpp -- the summary statistics the benchmark tables print.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace redist::bench {

/// The median (the mean of the middle two for an even count); 0 for no values.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// The geometric mean of positive values; 0 for no values.
inline double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / static_cast<double>(v.size()));
}

}  // namespace redist::bench
