// tests/package/consumer/consumer.cpp -- a program that takes redist in through CMake
// (find_package, add_subdirectory or FetchContent; see CMakeLists.txt next to it).
//
// It uses the three layers a user meets first: a compile-time plan (checked by
// static_assert), the run-time synthesis of the same redistribution, and its execution on
// the host backend (4 simulated devices), checking every element of the result.
#include <cstdint>
#include <span>
#include <vector>

#include <fmt/core.h>

#include "redist/backends/host.hpp"
#include "redist/format.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/static/plan.hpp"

namespace {

// [8, 2{x}8] -> [2{x}8, 8] on 4 devices: column blocks to row blocks, one all-to-all.
using M = redist::mesh<"{x: 4}">;
using Columns = redist::dtype<M, "[8, 2{x}8]">;
using Rows = redist::dtype<M, "[2{x}8, 8]">;
constexpr auto plan = redist::plan_for<Columns, Rows>();
static_assert(plan.steps() == 1 && plan.count(redist::op::alltoall) == 1, "one all-to-all");
static_assert(plan.memory_efficient());

constexpr std::uint64_t n = 8;  // global extents: n x n, element (i, j) holds i * n + j

}  // namespace

int main() {
  const redist::program p = redist::synthesize(M::value, Columns::value, Rows::value, {.element_bytes = 4});
  if (p.steps.size() != plan.steps() || p.steps[0].kind != redist::op::alltoall ||
      p.cost_elements != plan.cost_elements) {
    fmt::print(stderr, "error: the run-time program differs from the compile-time plan:\n{}", p);
    return 1;
  }

  redist::host_backend host(p.devices());
  std::vector<redist::darray<int>> in;
  for (redist::rank_t r = 0; r < p.devices(); ++r) {
    auto& a = in.emplace_back(p.m, p.source, r);
    const std::uint64_t cols = a.local_extent(1), c0 = a.offset(1);
    for (std::uint64_t i = 0; i < n; ++i)
      for (std::uint64_t j = 0; j < cols; ++j) a.data()[i * cols + j] = static_cast<int>(i * n + c0 + j);
  }
  const auto out = redist::redistribute(host, p, std::span<const redist::darray<int>>(in));

  std::uint64_t checked = 0, wrong = 0;
  for (const auto& z : out) {
    const std::uint64_t rows = z.local_extent(0), r0 = z.offset(0);
    for (std::uint64_t i = 0; i < rows; ++i)
      for (std::uint64_t j = 0; j < n; ++j, ++checked) wrong += z.data()[i * n + j] != static_cast<int>((r0 + i) * n + j);
  }
  fmt::print("consumer: {} -> {} in {} step(s), {} of {} elements in place\n", redist::typed{p.m, p.source},
             redist::typed{p.m, p.target}, p.steps.size(), checked - wrong, checked);
  return wrong == 0 && checked == n * n ? 0 : 1;
}
