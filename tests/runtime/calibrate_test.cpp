// Tests of runtime/calibrate.hpp: the non-negative least-squares fit on synthetic samples
// (exact recovery, clamping, features that do not vary), the features of programs' steps,
// and a small calibration on the host backend (every kind finite and non-negative).
#include "redist/runtime/calibrate.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/synthesize.hpp"

namespace {

using redist::op;
using redist::op_time;
using redist::time_sample;

std::vector<time_sample> synthetic(op_time t, bool vary_peers = true) {
  std::vector<time_sample> s;
  for (double peers : {1.0, 3.0, 7.0})
    for (double bytes : {65536.0, 524288.0, 4194304.0}) {
      const double p = vary_peers ? peers : 1.0;
      s.push_back({1, p, bytes, t.latency + t.per_peer * p + t.per_byte * bytes});
    }
  return s;
}

void require_close(double got, double want) {
  CHECK(std::abs(got - want) <= 1e-9 * std::max(std::abs(want), 1e-12));
}

}  // namespace

TEST_CASE("fit_op_time recovers known coefficients from exact samples", "[calibrate]") {
  const op_time want{20e-6, 4e-6, 0.35e-9};
  const op_time got = redist::fit_op_time(synthetic(want));
  require_close(got.latency, want.latency);
  require_close(got.per_peer, want.per_peer);
  require_close(got.per_byte, want.per_byte);

  // Several steps in one sample: the terms multiply the step count.
  std::vector<time_sample> multi;
  for (double k : {1.0, 2.0, 3.0})
    for (double b : {1000.0, 8000.0}) multi.push_back({k, 2 * k + (b > 5000), b, want.latency * k + want.per_peer * (2 * k + (b > 5000)) + want.per_byte * b});
  const op_time m = redist::fit_op_time(multi);
  require_close(m.latency, want.latency);
  require_close(m.per_peer, want.per_peer);
  require_close(m.per_byte, want.per_byte);
}

TEST_CASE("fit_op_time fits what the offset leaves", "[calibrate]") {
  const op_time want{20e-6, 4e-6, 0.35e-9};
  std::vector<time_sample> s = synthetic(want);
  for (time_sample& x : s) {  // a pass over a tile of twice the bytes received, at 0.3 ns/B
    x.offset = 0.3e-9 * 2 * x.bytes;
    x.seconds += x.offset;
  }
  const op_time got = redist::fit_op_time(s);
  require_close(got.latency, want.latency);
  require_close(got.per_peer, want.per_peer);
  require_close(got.per_byte, want.per_byte);
}

TEST_CASE("fit_op_time keeps every term non-negative", "[calibrate]") {
  // Times that fall with the peers: the unconstrained fit's per_peer would be negative.
  std::vector<time_sample> s;
  for (double peers : {1.0, 2.0, 4.0})
    for (double bytes : {1e3, 1e6}) s.push_back({1, peers, bytes, 1e-4 - 1e-5 * peers + 1e-9 * bytes});
  const op_time t = redist::fit_op_time(s);
  CHECK(t.latency >= 0);
  CHECK(t.per_peer == 0);
  CHECK(t.per_byte > 0);
  // Times that fall with the bytes: per_byte 0, the latency the mean of sorts.
  const op_time z = redist::fit_op_time(std::vector<time_sample>{{1, 0, 1e3, 2e-3}, {1, 0, 1e6, 1e-3}});
  CHECK(z.per_byte == 0);
  CHECK(z.per_peer == 0);
  CHECK(z.latency > 1e-3);
  CHECK(z.latency < 2e-3);
}

TEST_CASE("fit_op_time: a feature that does not vary gets 0, the latency takes it", "[calibrate]") {
  const op_time t = redist::fit_op_time(synthetic({10e-6, 5e-6, 1e-9}, false));  // peers always 1
  CHECK(t.per_peer == 0);
  require_close(t.latency, 15e-6);
  require_close(t.per_byte, 1e-9);
  // No samples: all zero.
  CHECK(redist::fit_op_time({}) == op_time{});
}

TEST_CASE("program_step_features counts as predicted_seconds does", "[calibrate]") {
  const auto m = redist::parse_mesh("{x: 4, y: 2}");
  const auto a = redist::parse_type(m, "[{x}64, 32]");
  const auto b = redist::parse_type(m, "[64, {x}32]");
  const redist::program collective = redist::synthesize(m, a, b, {.goal = redist::objective::bytes});
  for (const redist::program& p : {collective, redist::exchange_program(m, a, b)}) {
    const auto f = redist::program_step_features(p);
    REQUIRE(f.size() == p.steps.size());
    redist::time_profile P = redist::builtin_profile;
    double sum = 0;
    for (const auto& s : f)
      sum += P.seconds(s.kind, 0, 0, 0) * s.steps + P[s.kind].per_peer * s.peers + P[s.kind].per_byte * s.bytes +
             P.pass_per_byte * s.tile;
    require_close(sum, redist::predicted_seconds(p, P));
  }
  // The all-to-all over x: one step, 2 rounds (reaching 3 peers), 3/4 of a 16x32 tile of
  // 4-byte elements.
  const auto f = redist::program_step_features(collective);
  REQUIRE(f.size() == 1);
  CHECK(f[0].kind == op::alltoall);
  CHECK(f[0].steps == 1);
  CHECK(f[0].peers == 2);
  CHECK(f[0].bytes == 3 * 4 * 32 * 4);
}

TEST_CASE("calibrate on the host backend produces a profile for every kind", "[calibrate]") {
  redist::host_backend host(4);
  redist::calibrate_options o;
  o.name = "host";
  // Tiles of 64 KiB and 1 MiB: the pass's slope is the difference of two copies' times, and
  // between cache-sized tiles (4 and 32 KiB) that is about a microsecond, which a loaded
  // machine's noise can exceed (CI measured 0 there once).
  o.sizes = {64u << 10, 1u << 20};
  o.repetitions = 3;
  const redist::calibration c = redist::calibrate_samples(host, o);
  const redist::time_profile& p = c.profile;
  CHECK(p.name_view() == "host");
  CHECK(p.devices == 4);
  CHECK(c.programs > 20);
  for (op k : redist::all_ops) {
    INFO(redist::op_name(k));
    CHECK(!c.samples[static_cast<int>(k)].empty());
    for (double v : {p[k].latency, p[k].per_peer, p[k].per_byte}) {
      CHECK(std::isfinite(v));
      CHECK(v >= 0);
    }
    CHECK(p.seconds(k, 1, 1 << 20, 1 << 20) > 0);  // something costs time
  }
  CHECK(p.pass_per_byte > 0);              // the tile copy
  CHECK(p.overlap == 0);                   // no message rounds on the host backend
  CHECK(p[op::dynslice].per_peer == 0);    // no peers
  CHECK(p[op::allpermute].per_peer == 0);  // always one peer
  redist::time_profile capped = p;         // the all-reduce is capped already
  redist::cap_allreduce(capped);
  CHECK(capped == p);
}

TEST_CASE("calibrate measures the link between nodes: every tile to the next node", "[calibrate]") {
  // The fit: seconds over what the offset explains, against the link's bytes, through 0;
  // absolute residuals (the large sample decides), never below 0.
  const std::vector<redist::time_sample> exact = {{0, 0, 1000, 3e-6, 1e-6}, {0, 0, 4000, 9e-6, 1e-6}};
  CHECK(redist::detail::fit_link(exact) == Approx(2e-9));
  const std::vector<redist::time_sample> burst = {{0, 0, 1000, 1e-6, 1e-6}, {0, 0, 1000000, 2.001e-3, 1e-6}};
  CHECK(redist::detail::fit_link(burst) == Approx(2e-9).epsilon(1e-3));
  CHECK(redist::detail::fit_link(std::vector<redist::time_sample>{{0, 0, 1000, 1e-6, 2e-6}}) == 0);
  CHECK(redist::detail::fit_link(std::vector<redist::time_sample>{}) == 0);
  // On 4 host devices as two nodes of 2: the exchange sends node 0's two tiles to node 1,
  // 2 x 64 KiB over its link, one way.
  redist::host_backend host(4);
  redist::calibrate_options o;
  o.sizes = {64u << 10};
  o.repetitions = 1;
  o.node_ranks = 2;
  const redist::calibration c = redist::calibrate_samples(host, o);
  REQUIRE(c.link_samples.size() == 1);
  CHECK(c.link_samples[0].bytes == 2 * (64 << 10));
  CHECK(c.link_samples[0].seconds > 0);
  CHECK(c.link_samples[0].offset > 0);  // the exchange as the profile predicts it without a link
  CHECK(c.profile.node_ranks == 2);
  CHECK(std::isfinite(c.profile.node_per_byte));
  CHECK(c.profile.node_per_byte >= 0);
  // One node (or none given): no link.
  for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{4}}) {
    o.node_ranks = n;
    const redist::calibration one = redist::calibrate_samples(host, o);
    CHECK(one.link_samples.empty());
    CHECK(one.profile.node_ranks == 0);
    CHECK(one.profile.node_per_byte == 0);
  }
}

TEST_CASE("cap_allreduce prices an all-reduce at most as its reduce-scatter then all-gather", "[calibrate]") {
  redist::time_profile p;
  p[op::reducescatter] = {2e-6, 10e-6, 1e-9};
  p[op::allgather] = {1e-6, 9e-6, 0.5e-9};
  p[op::allreduce] = {30e-6, 15e-6, 0.9e-9};
  redist::cap_allreduce(p);
  CHECK(p[op::allreduce] == op_time{2e-6 + 1e-6, 15e-6, 0.5 * (1e-9 + 0.5e-9)});
  // Per byte it receives twice what either does: a small sum is one all-reduce, never the pair.
  CHECK(redist::step_seconds(p, op::allreduce, 8, 16, 16, 4) <
        redist::step_seconds(p, op::reducescatter, 8, 16, 2, 4) + redist::step_seconds(p, op::allgather, 8, 2, 16, 4));
  // The built-in profile is one calibrate could return.
  redist::time_profile b = redist::builtin_profile;
  redist::cap_allreduce(b);
  CHECK(b == redist::builtin_profile);
}

TEST_CASE("calibrate with one rank times the tile copy and a prime D borrows the exchange's terms", "[calibrate]") {
  redist::calibrate_options o;
  o.name = "one";
  o.sizes = {4u << 10, 64u << 10};
  o.repetitions = 3;
  redist::host_backend one(1);
  const redist::time_profile p = redist::calibrate(one, o);
  CHECK(p.devices == 1);
  for (op k : redist::all_ops) {
    CHECK(p[k] == p[op::dynslice]);
    CHECK(p[k].per_peer == 0);
    CHECK(std::isfinite(p[k].latency));
    CHECK(std::isfinite(p[k].per_byte));
  }
  redist::host_backend three(3);
  const redist::calibration c = redist::calibrate_samples(three, o);
  CHECK(c.samples[static_cast<int>(op::allpermute)].empty());
  CHECK(c.profile[op::allpermute] == c.profile[op::exchange]);
}

TEST_CASE("time_exchanges times every exchange program on every candidate and finds the fastest", "[calibrate]") {
  // Two host backends stand for two ways of exchanging: the same programs on both.
  redist::host_backend a(4), b(4);
  redist::host_backend* const candidates[] = {&a, &b};
  redist::calibrate_options o;
  o.sizes = {4u << 10, 16u << 10};
  o.repetitions = 1;
  const redist::exchange_timing t = redist::time_exchanges(std::span<redist::host_backend* const>(candidates), o);
  // Meshes {x: 2, y: 2} and {x: 4, y: 1}, three exchanges and the 2-D grid, two sizes;
  // [{x, y}N, M] -> [{y, x}N, M] on {x: 4, y: 1} is no move, and the grid needs two axes.
  CHECK(t.programs.size() == 2 * 4 * 2 - 2 * 2);
  // 4 KiB per rank: 2048 elements, 64 columns (16 D; their square root is 45).
  CHECK(t.programs.front() == "{x: 2, y: 2}: [{x}32, 64] -> [32, {x}64]");
  // 16 KiB per rank on {x: 2, y: 2}: the 2-D grid of 16384 elements, square.
  CHECK(std::find(t.programs.begin(), t.programs.end(), "{x: 2, y: 2}: [{x}128, {y}128] -> [{y}128, {x}128]") !=
        t.programs.end());
  REQUIRE(t.seconds.size() == 2);
  REQUIRE(t.geomean.size() == 2);
  for (std::size_t c = 0; c < 2; ++c) {
    REQUIRE(t.seconds[c].size() == t.programs.size());
    double logs = 0;
    for (double s : t.seconds[c]) {
      CHECK(s > 0);
      logs += std::log(s);
    }
    CHECK(t.geomean[c] == Approx(std::exp(logs / static_cast<double>(t.programs.size()))));
  }
  CHECK(t.geomean[t.fastest] == std::min(t.geomean[0], t.geomean[1]));
  // Errors: no candidates, candidates on different numbers of ranks, no sizes.
  redist::host_backend c3(3);
  redist::host_backend* const mixed[] = {&a, &c3};
  CHECK_THROWS_WITH(redist::time_exchanges(std::span<redist::host_backend* const>(), o),
                    "calibrate: no backends to time exchanges on");
  CHECK_THROWS_WITH(redist::time_exchanges(std::span<redist::host_backend* const>(mixed), o),
                    "calibrate: the backends drive different numbers of ranks");
  o.sizes = {};
  CHECK_THROWS_WITH(redist::time_exchanges(std::span<redist::host_backend* const>(candidates), o),
                    "calibrate: no sizes to measure");
  // One rank: nothing to time.
  redist::host_backend one(1);
  redist::host_backend* const single[] = {&one};
  o.sizes = {1024};
  CHECK(redist::time_exchanges(std::span<redist::host_backend* const>(single), o).programs.empty());
}

TEST_CASE("calibrate refuses bad options", "[calibrate]") {
  redist::host_backend host(2);
  redist::calibrate_options o;
  o.sizes = {};
  CHECK_THROWS_AS(redist::calibrate(host, o), redist::redist_error);
  o.sizes = {0};
  CHECK_THROWS_AS(redist::calibrate(host, o), redist::redist_error);
}
