// The host backend on real data: thousands of random problems (the paper's workload
// scaled down, and non-power-of-two meshes), every element of every tile checked after
// the redistribution, and the memory each simulated device holds.
#include "redist/backends/host.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "redist/lower/synthesize.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/verify.hpp"
#include "support/memory_formula.hpp"
#include "support/random_problems.hpp"

namespace {

struct totals {
  std::uint64_t problems = 0;
  std::uint64_t elements = 0;    // elements of target tiles checked
  std::uint64_t mismatches = 0;
  double max_ratio = 0;          // peak bytes held per rank / max(local in, local out) bytes
  double max_live_ratio = 0;     // peak bytes of live data per rank / the same
  std::uint64_t steps = 0;
  std::uint64_t ops[7] = {};     // steps by kind (redist::op, exchange included)
};

/// Synthesize, run on the simulated mesh, check every element; returns the peak ratio.
template <class T>
void run_one(const redist::testing::problem_text& pt, totals& tot, double budget = 1.0) {
  INFO(pt.mesh << "  " << pt.from << " -> " << pt.to << "  (" << sizeof(T) << "-byte elements, budget " << budget << ")");
  const redist::program p =
      redist::synthesize(pt.mesh, pt.from, pt.to, {.element_bytes = sizeof(T), .memory_budget = budget});
  redist::host_backend host(p.devices());
  redist::executor<T, redist::host_backend> ex(host, p);
  std::vector<redist::darray<T>> in;
  in.reserve(p.devices());
  for (redist::rank_t r = 0; r < p.devices(); ++r) {
    in.emplace_back(p.m, p.source, r);
    redist::fill_global_index(in.back());
  }
  std::vector<std::vector<T>> before;
  for (const auto& t : in) before.emplace_back(t.span().begin(), t.span().end());
  std::vector<redist::darray<T>> out = ex.run(in);
  REQUIRE(out.size() == p.devices());
  for (std::size_t r = 0; r < in.size(); ++r) CHECK(std::equal(before[r].begin(), before[r].end(), in[r].span().begin()));
  CHECK(ex.peak_bytes_held() == redist::testing::expected_bytes_held(p, sizeof(T)));
  if (p.target.nsum > 0) {
    // Pending values in the target: reduce the partials of every group (by the type's
    // kind) into its root.
    for (const auto& st : p.steps)
      if (st.kind == redist::op::allreduce || st.kind == redist::op::reducescatter) CHECK(st.reduce == p.source.reduce);
    redist::reduce_partials_into_roots(std::span<redist::darray<T>>(out));
  }
  std::uint64_t bad = 0;
  for (const auto& t : out) {
    if (redist::sum_root(p.m, p.target, t.device()) != t.device()) continue;
    const redist::tile_check c = redist::check_global_index(t);
    tot.elements += c.checked;
    bad += c.mismatches;
    if (!c.ok()) INFO("rank " << t.device() << ": first wrong element at global index " << c.first_bad);
  }
  CHECK(bad == 0);
  tot.mismatches += bad;
  const std::uint64_t in_out = std::max(redist::local_size(p.m, p.source), redist::local_size(p.m, p.target)) * sizeof(T);
  const double ratio = static_cast<double>(ex.peak_bytes_held()) / static_cast<double>(in_out);
  const double live = static_cast<double>(ex.peak_bytes_live()) / static_cast<double>(in_out);
  CHECK(ex.peak_bytes_live() <= ex.peak_bytes_held() + 2 * budget * static_cast<double>(in_out));
  CHECK(ratio <= 2.0 * budget);
  tot.max_ratio = std::max(tot.max_ratio, ratio);
  tot.max_live_ratio = std::max(tot.max_live_ratio, live);
  tot.steps += p.steps.size();
  for (const auto& st : p.steps) ++tot.ops[static_cast<int>(st.kind)];
  ++tot.problems;
}

/// Rotate element types so that every size and kind goes through the executor.
void run_any(const redist::testing::problem_text& pt, std::size_t i, totals& tot) {
  switch (i % 7) {
    case 0: run_one<float>(pt, tot); break;
    case 1: run_one<double>(pt, tot); break;
    case 2: run_one<std::int32_t>(pt, tot); break;
    case 3: run_one<std::uint64_t>(pt, tot); break;
    case 4: run_one<redist::bfloat16>(pt, tot); break;
    case 5: run_one<redist::float16>(pt, tot); break;
    default: run_one<std::uint16_t>(pt, tot); break;
  }
}

void report(const char* what, const totals& t) {
  std::printf("%s: %llu problems, %llu steps (%llu allgather, %llu alltoall, %llu dynslice, %llu allpermute, "
              "%llu allreduce, %llu reducescatter), %llu elements verified, %llu wrong; peak bytes held / max(local in, "
              "out): max %.3f (live data: max %.3f)\n",
              what, static_cast<unsigned long long>(t.problems), static_cast<unsigned long long>(t.steps),
              static_cast<unsigned long long>(t.ops[0]), static_cast<unsigned long long>(t.ops[1]),
              static_cast<unsigned long long>(t.ops[2]), static_cast<unsigned long long>(t.ops[3]),
              static_cast<unsigned long long>(t.ops[4]), static_cast<unsigned long long>(t.ops[5]),
              static_cast<unsigned long long>(t.elements), static_cast<unsigned long long>(t.mismatches), t.max_ratio,
              t.max_live_ratio);
}

}  // namespace

TEST_CASE("host backend: the paper's workload (mesh {a: 2, b: 2, c: 2}), every element checked", "[host][random]") {
  totals tot;
  auto w = redist::testing::paper_workload(1 << 18);
  w.max_multiplier = 16;
  const auto problems = redist::testing::random_problems(w, redist::testing::scaled(1200), 0x5eed0001);
  for (std::size_t i = 0; i < problems.size(); ++i) run_any(problems[i], i, tot);
  report("paper workload", tot);
  CHECK(tot.problems == redist::testing::scaled(1200));
  CHECK(tot.mismatches == 0);
  CHECK(tot.max_ratio <= 2.0);
}

TEST_CASE("host backend: non-power-of-two and larger meshes, every element checked", "[host][random]") {
  totals tot;
  std::size_t i = 0;
  for (auto w : redist::testing::mixed_workloads(1 << 16)) {
    w.max_multiplier = 6;
    const std::size_t n = redist::testing::scaled(w.axes.size() >= 6 || w.axes.front().second >= 8 ? 80 : 140);
    const auto problems = redist::testing::random_problems(w, n, 0x5eed0002 + i);
    for (const auto& pt : problems) run_any(pt, i++, tot);
  }
  report("mixed meshes", tot);
  CHECK(tot.problems >= redist::testing::scaled(800));
  CHECK(tot.mismatches == 0);
  CHECK(tot.max_ratio <= 2.0);
}

TEST_CASE("host backend: partial sums (allreduce, reducescatter), every element checked", "[host][random][sums]") {
  totals tot;
  std::size_t i = 0;
  auto paper = redist::testing::paper_workload(1 << 16);
  std::vector<redist::testing::workload> ws = {paper};
  for (const auto& w : redist::testing::mixed_workloads(1 << 14))
    if (w.axes.size() <= 3) ws.push_back(w);
  for (auto& w : ws) {
    w.partial_sums = true;
    const auto problems = redist::testing::random_problems(w, i == 0 ? 200 : 40, 0x5eed0004 + i);
    for (const auto& pt : problems) run_any(pt, i++, tot);
  }
  report("partial sums", tot);
  CHECK(tot.ops[static_cast<int>(redist::op::allreduce)] > 0);
  CHECK(tot.ops[static_cast<int>(redist::op::reducescatter)] > 0);
  CHECK(tot.mismatches == 0);
  CHECK(tot.max_ratio <= 2.0);
}

TEST_CASE("host backend: every reduction (max, min, prod, avg) on random problems, every element checked",
          "[host][random][sums]") {
  std::size_t i = 0;
  for (const char* kind : {"max", "min", "prod", "avg"}) {
    totals tot;
    std::vector<redist::testing::workload> ws = {redist::testing::paper_workload(1 << 12)};
    for (const auto& w : redist::testing::mixed_workloads(1 << 12))
      if (w.axes.size() <= 3) ws.push_back(w);
    for (auto& w : ws) {
      w.partial_sums = true;
      w.reduction = kind;
      for (const auto& pt : redist::testing::random_problems(w, 30, 0x5eed0005 + i)) {
        switch (i++ % 6) {  // (8- and 16-bit integer avg wraps as backends add before dividing)
          case 0: run_one<float>(pt, tot); break;
          case 1: run_one<double>(pt, tot); break;
          case 2: run_one<std::int32_t>(pt, tot); break;
          case 3: run_one<redist::bfloat16>(pt, tot); break;
          case 4: run_one<redist::float16>(pt, tot); break;
          default: run_one<std::uint64_t>(pt, tot); break;
        }
      }
    }
    report(kind, tot);
    CHECK(tot.ops[static_cast<int>(redist::op::allreduce)] + tot.ops[static_cast<int>(redist::op::reducescatter)] > 20);
    CHECK(tot.mismatches == 0);
  }
}

TEST_CASE("host backend: the reductions of the backend itself, element by element", "[host][sums]") {
  redist::host_backend host(3);
  std::vector<std::vector<int>> s = {{5, -1, 7}, {2, 8, -3}, {-4, 6, 1}}, r(3, std::vector<int>(3, 0));
  int* send[3] = {s[0].data(), s[1].data(), s[2].data()};
  int* recv[3] = {r[0].data(), r[1].data(), r[2].data()};
  const redist::block_io<int> io{send, recv};
  const std::vector<redist::rank_t> all = {0, 1, 2};
  using redist::reduction;
  host.allreduce<int>(all, io, 3, reduction::max);
  CHECK(r[2] == std::vector<int>{5, 8, 7});
  host.allreduce<int>(all, io, 3, reduction::min);
  CHECK(r[0] == std::vector<int>{-4, -1, -3});
  host.allreduce<int>(all, io, 3, reduction::prod);
  CHECK(r[1] == std::vector<int>{-40, -48, -21});
  host.allreduce<int>(all, io, 3, reduction::avg);
  CHECK(r[1] == std::vector<int>{1, 4, 1});  // 3/3, 13/3, 5/3: integer division truncates
  host.reducescatter<int>(all, io, 1, reduction::max);  // member m: the max of element m
  CHECK((r[0][0] == 5 && r[1][0] == 8 && r[2][0] == 7));
  host.reducescatter<int>(all, io, 1, reduction::min);
  CHECK((r[0][0] == -4 && r[1][0] == -1 && r[2][0] == -3));
  // A reduction the element type lacks: refused before anything is written.
  std::vector<std::complex<float>> cs(3, {1.0f, 2.0f}), cr(3, {9.0f, 9.0f});
  std::complex<float>* csend[3] = {&cs[0], &cs[1], &cs[2]};
  std::complex<float>* crecv[3] = {&cr[0], &cr[1], &cr[2]};
  const redist::block_io<std::complex<float>> cio{csend, crecv};
  CHECK_THROWS_WITH(host.allreduce<std::complex<float>>(all, cio, 1, reduction::max),
                    "host backend: the element type has no max (max and min need a type with <, not complex)");
  CHECK(cr[0] == std::complex<float>(9.0f, 9.0f));
  host.allreduce<std::complex<float>>(all, cio, 1, reduction::prod);
  CHECK(cr[0] == std::complex<float>(1.0f, 2.0f) * std::complex<float>(1.0f, 2.0f) * std::complex<float>(1.0f, 2.0f));
}

TEST_CASE("host backend: a larger memory budget keeps its bound", "[host][random]") {
  totals tot;
  const auto problems = redist::testing::random_problems(redist::testing::paper_workload(1 << 10), 100, 0x5eed0003);
  for (const auto& pt : problems) run_one<float>(pt, tot, 2.0);
  report("budget 2", tot);
  CHECK(tot.mismatches == 0);
  CHECK(tot.max_ratio <= 4.0);
}

TEST_CASE("host backend collectives, block by block", "[host]") {
  redist::host_backend host(4);
  std::vector<int> s[4], r[4];
  int* send[4];
  int* recv[4];
  for (int k = 0; k < 4; ++k) {
    s[k] = {10 * k, 10 * k + 1, 10 * k + 2, 10 * k + 3};
    r[k].assign(4, -1);
    send[k] = s[k].data();
    recv[k] = r[k].data();
  }
  redist::block_io<int> io{send, recv};
  const std::vector<redist::rank_t> g = {3, 1};  // member 0 = rank 3, member 1 = rank 1
  host.alltoall<int>(g, io, 2);
  CHECK(r[3] == std::vector<int>{30, 31, 10, 11});
  CHECK(r[1] == std::vector<int>{32, 33, 12, 13});
  CHECK(r[0] == std::vector<int>{-1, -1, -1, -1});
  host.allgather<int>(std::vector<redist::rank_t>{2, 0}, io, 2);
  CHECK(r[0] == std::vector<int>{20, 21, 0, 1});
  CHECK(r[2] == r[0]);
  host.permute<int>(std::vector<redist::rank_t>{1, 2, 3, 0}, io, 4);
  CHECK(r[1] == s[0]);
  CHECK(r[0] == s[3]);
  CHECK_THROWS_WITH(host.allgather<int>(std::vector<redist::rank_t>{0, 4}, io, 1),
                    "host backend: rank 4 is not among the 4 simulated devices");
  // Destinations that are not a bijection are refused before any tile is written.
  const std::vector<int> before = r[1];
  CHECK_THROWS_WITH(host.permute<int>(std::vector<redist::rank_t>{1, 1, 3, 0}, io, 4),
                    "host backend: permute destinations are not a permutation of the ranks");
  CHECK_THROWS_WITH(host.permute<int>(std::vector<redist::rank_t>{1, 0}, io, 4),
                    "host backend: permute needs one destination per rank (4), got 2");
  CHECK(r[1] == before);
  CHECK_THROWS_WITH(redist::host_backend(0), "host backend: cannot simulate 0 devices");
  for (int k = 0; k < 4; ++k) {
    s[k] = {k, 10 * k, 100 * k, 1000 * k};
    send[k] = s[k].data();
  }
  host.allreduce<int>(std::vector<redist::rank_t>{1, 3}, io, 4);
  CHECK(r[1] == std::vector<int>{4, 40, 400, 4000});
  CHECK(r[3] == r[1]);
  host.reducescatter<int>(std::vector<redist::rank_t>{2, 0, 1}, io, 1);  // 3 blocks of 1 (the 4th unused)
  CHECK(r[2][0] == 2 + 0 + 1);
  CHECK(r[0][0] == 20 + 0 + 10);
  CHECK(r[1][0] == 200 + 0 + 100);
  CHECK(host.agree(1, true).all_ok);
  CHECK_FALSE(host.agree(1, false).all_ok);
}
