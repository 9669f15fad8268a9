// redist/runtime/calibrate.hpp -- measure a backend's time profile (core/time_model.hpp):
// `redist calibrate --backend host|mpi`, or calibrate(backend) from C++.
//
// What it runs. Through the real executor (executor<float, B>), on the backend's D ranks:
// first the pass (time_profile::pass_per_byte): every rank copying its tile at once (an
// empty program, source == target) at each of calibrate_options::sizes bytes, the per-byte
// term of fit_op_time over those copies, each timed as the fastest of its runs (a copy's
// only noise is time added by the machine: a slow run at the small size would tilt the
// slope, and at cache-sized tiles a whole copy costs a few microseconds). Then programs on
// meshes {x: a, y: D/a} for every divisor a >= 2 of D (so that group sizes vary) and arrays
// [N, M] of floats whose larger tile per rank (source or target) is each of those sizes
// (rounded to whole rows):
//
//   allgather      [{x}N, M] -> [N, M]              alltoall   [{x}N, M] -> [N, {x}M]
//   dynslice       [N, M] -> [{x}N, M]              allpermute [{x, y}N, M] -> [{y, x}N, M]
//   allreduce      [N, {y}M] sum{x} -> [N, {y}M]    reducescatter [N, {y}M] sum{x} -> [{x}N, {y}M]
//   exchange       exchange_program (lower/exchange.hpp) of [{x}N, M] -> [N, {x}M],
//                  [{x, y}N, M] -> [{y, x}N, M] and [{x}N, M] -> [N, M] (peers vary)
//
// the collective ones by the paper's search (lower/synthesize.hpp search_program with
// objective::bytes, whatever a profile predicts of splitting them; the sums keep y busy so
// that the search does not slice along it first: one step each). Every step of every program is
// one sample of its kind: its time is the executor's wall time of the step (step_stats:
// pack, collective, unpack), the median over `repetitions` runs after one warm-up run, then
// the max over ranks (`max_over_ranks`: identity for a backend that drives every rank, such
// as the host backend; an MPI_Allreduce with MPI_MAX under MPI, called by every rank in the
// same order). Its features -- steps, peers, bytes and the tile it writes -- are exactly
// what predicted_seconds (lower/synthesize.hpp) counts: the step's predicted seconds under
// unit profiles (latency 1, per_peer 1, per_byte 1 for every kind, or pass 1), as the
// difference between the program cut after the step and cut before it. The pass over the
// tile is the sample's offset: the fit explains what is left. A step with no feature at all
// (an allpermute that moves nothing) is no sample.
//
// The fit (fit_op_time below): per kind, non-negative least squares of
//   seconds - pass * tile ~ latency * steps + per_peer * peers + per_byte * bytes
// over that kind's samples, with relative residuals (each sample weighted by 1/seconds, so
// that small, latency-bound steps count as much as large ones). A feature that does not vary
// independently of the step count (peers of a dynslice, always 0; of an allpermute, always
// 1) gets the term 0 and the latency absorbs it.
//
// The all-reduce's terms are then capped at the reduce-scatter's plus the all-gather's
// (cap_allreduce).
//
// Special cases (documented in docs/reference.md, "Time model"):
//   - D = 1: nothing moves between ranks and every program on one device is empty: every
//     kind gets the tile copy's latency, per_peer and per_byte 0 (the pass is the copy).
//   - a kind without samples (allpermute when D is prime: no mesh has two axes to swap)
//     takes the exchange's terms (a one-peer message is what both are).
//   - ranks on several nodes (calibrate_options::node_ranks = N, 0 < N < D): the programs
//     above run on meshes of N ranks placed on the first node (ranks 0..N-1 of the world;
//     the others hold nothing), so that the per-rank terms are a node's; N = 1 as D = 1.
//     Then the link (below).
//
// Ways of exchanging (time_exchanges below): the three exchanges of the table and the 2-D
// grid [{x}N, {y}M] -> [{y}N, {x}M], on arrays about as wide as tall (the table's arrays have
// 16 D columns, and how long a piece's runs are decides between the ways), timed as above on
// each of several backends that drive the same ranks (the MPI backend with each way of
// moving exchanges, backends/mpi_exchange.hpp), one program at a time on all of them in
// turn; the least geometric mean over the programs wins. `redist calibrate --backend
// mpi` records it in the profile (profile_json.hpp, "mpi") and measures the profile with it.
//
// The link between nodes (time_profile::node_ranks, node_per_byte; measure_link below), where
// calibrate_options::node_ranks = N puts the D ranks on nodes of N consecutive ranks (0 < N <
// D; `redist calibrate --backend mpi` finds N from the ranks that share memory, or takes
// --node-ranks): at each size, the exchange that sends the tiles [{x}EM] of that size on the
// first M = min(N, D - N) ranks to the ranks N..N+M-1 of the next node (a program between
// {x: M} and {x: M} @ [N, ...]), one way: the link as the model counts it, the bytes one
// node sends (a transfer both ways measured up to 1.3x slower over TCP on emulated nodes,
// where each way's acknowledgements queue behind the other's data). Each size is one
// sample: its bytes the most one node's link carries (lower/node_links.hpp, as
// predicted_seconds counts them), its seconds as above, its offset what the profile fitted
// so far predicts of it without a link. The link's per byte (fit_link) is the least squares
// slope of seconds - offset against the bytes, with absolute residuals (the large sizes
// decide; at small ones latencies and a network's burst allowance dominate), at least 0:
// what the network adds to the per-rank terms.
//
// The overlap (time_profile::overlap; measure_overlap below), on a backend driving one rank
// of several in host memory through message rounds (MPI): at the largest size S, a message
// round in which every rank sends S bytes to the next rank and receives S from the one
// before (t_msg), a copy of S bytes alone (t_copy), and both at once, the copy as the
// round's local() (t_both); each the median of the runs after a warm-up, then the max over
// ranks. overlap = (t_msg + t_copy - t_both) / min(t_msg, t_copy), within [0, 1]. 0 on
// other backends (the host backend has no message rounds; NCCL's copies are kernels on its
// streams, which this host-timed probe does not measure).
//
// With the default options (4 KiB, 64 KiB, 1 MiB and 8 MiB, 5 repetitions: the latencies
// measured where they dominate, since the time objective decides how many steps a plan
// takes, and per-byte costs where tiles no longer fit in caches) calibrating 8
// host devices or 8 MPI ranks on one node takes a few seconds; tests use small sizes.
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/time_model.hpp"
#include "redist/lower/between.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/node_links.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/program.hpp"
#include "redist/runtime/darray.hpp"
#include "redist/runtime/executor.hpp"

namespace redist {

// ---- the fit ----

/// One measured step: its features (as predicted_seconds counts them) and its time.
struct time_sample {
  double steps = 1;    ///< steps of the kind (1 for one step)
  double peers = 0;    ///< peers (a collective's rounds), summed over those steps
  double bytes = 0;    ///< bytes received (dynslice: copies), summed over those steps
  double seconds = 0;  ///< measured
  double offset = 0;   ///< of those seconds, what is already explained (the pass over the tile)
};

/// Non-negative least squares fit of seconds - offset ~ latency * steps + per_peer * peers +
/// per_byte * bytes, residuals relative to each sample's seconds (weight 1/seconds; weight 1
/// for a sample of 0 seconds). A feature that is 0 in every sample, or proportional to
/// `steps` over all samples (it does not vary independently), gets the term 0. Exact
/// non-negative solution: the least-squares solution of every subset of the usable
/// features, the best one with no negative term (at most 3 features: 8 subsets).
/// No samples: all terms 0.
inline op_time fit_op_time(std::span<const time_sample> samples) {
  constexpr int F = 3;
  const std::size_t n = samples.size();
  auto feature = [&](std::size_t i, int f) {
    const time_sample& s = samples[i];
    return f == 0 ? s.steps : f == 1 ? s.peers : s.bytes;
  };
  auto weight = [&](std::size_t i) { return samples[i].seconds > 0 ? 1.0 / samples[i].seconds : 1.0; };
  // Usable features and column scales (largest weighted magnitude), for conditioning.
  bool usable[F]{};
  double scale[F]{};
  for (int f = 0; f < F; ++f) {
    for (std::size_t i = 0; i < n; ++i) scale[f] = std::max(scale[f], std::abs(feature(i, f) * weight(i)));
    usable[f] = scale[f] > 0;
  }
  for (int f = 1; f < F && usable[0]; ++f) {  // proportional to the step count: no own term
    bool proportional = true;
    double ratio = -1;
    for (std::size_t i = 0; i < n && proportional; ++i) {
      const double s = feature(i, 0), v = feature(i, f);
      if (s == 0) {
        proportional = v == 0;
      } else if (ratio < 0) {
        ratio = v / s;
      } else {
        proportional = std::abs(v / s - ratio) <= 1e-12 * std::max(1.0, ratio);
      }
    }
    if (proportional) usable[f] = false;
  }
  double best_res = -1, best[F]{};
  // Subsets from the largest down, so that equal residuals keep the fuller model.
  for (int size = F; size >= 1; --size) {
    for (int mask = 1; mask < (1 << F); ++mask) {
      if (std::popcount(static_cast<unsigned>(mask)) != size) continue;
      int cols[F], k = 0;
      bool ok = true;
      for (int f = 0; f < F; ++f)
        if (mask & (1 << f)) {
          ok = ok && usable[f];
          cols[k++] = f;
        }
      if (!ok) continue;
      // Normal equations of the scaled, weighted columns: A = X^T X, r = X^T y.
      double A[F][F + 1]{};
      for (std::size_t i = 0; i < n; ++i) {
        const double w = weight(i), y = (samples[i].seconds - samples[i].offset) * w;
        for (int a = 0; a < k; ++a) {
          const double xa = feature(i, cols[a]) * w / scale[cols[a]];
          for (int b = 0; b < k; ++b) A[a][b] += xa * feature(i, cols[b]) * w / scale[cols[b]];
          A[a][k] += xa * y;
        }
      }
      // Gaussian elimination with partial pivoting; a (near) singular system is skipped.
      double diag = 0;
      for (int a = 0; a < k; ++a) diag = std::max(diag, A[a][a]);
      for (int c = 0; c < k && ok; ++c) {
        int p = c;
        for (int r = c + 1; r < k; ++r)
          if (std::abs(A[r][c]) > std::abs(A[p][c])) p = r;
        if (!(std::abs(A[p][c]) > 1e-12 * diag)) {
          ok = false;
          break;
        }
        for (int j = 0; j <= k; ++j) std::swap(A[c][j], A[p][j]);
        for (int r = 0; r < k; ++r) {
          if (r == c) continue;
          const double m = A[r][c] / A[c][c];
          for (int j = c; j <= k; ++j) A[r][j] -= m * A[c][j];
        }
      }
      if (!ok) continue;
      double coef[F]{};
      for (int a = 0; a < k; ++a) {
        coef[cols[a]] = A[a][k] / A[a][a] / scale[cols[a]];
        ok = ok && coef[cols[a]] >= 0 && std::isfinite(coef[cols[a]]);
      }
      if (!ok) continue;
      double res = 0;
      for (std::size_t i = 0; i < n; ++i) {
        double pred = 0;
        for (int f = 0; f < F; ++f) pred += coef[f] * feature(i, f);
        const double d = (pred + samples[i].offset - samples[i].seconds) * weight(i);
        res += d * d;
      }
      if (best_res < 0 || res < best_res) {
        best_res = res;
        std::copy(coef, coef + F, best);
      }
    }
  }
  return op_time{best[0], best[1], best[2]};
}

// ---- the features of a program's steps ----

/// One step's kind and its features as predicted_seconds counts them.
struct step_features {
  op kind = op::dynslice;
  double steps = 0, peers = 0, bytes = 0;
  double tile = 0;  ///< bytes of the tile it writes (the pass term)
};

/// The features of every step of p: predicted_seconds under unit profiles, the program cut
/// after the step minus the program cut before it.
inline std::vector<step_features> program_step_features(const program& p) {
  auto unit = [](int term) {
    time_profile u;
    for (op o : all_ops) {
      op_time& t = u[o];
      t.latency = term == 0;
      t.per_peer = term == 1;
      t.per_byte = term == 2;
    }
    u.pass_per_byte = term == 3;
    return u;
  };
  constexpr int T = 4;
  const time_profile units[T] = {unit(0), unit(1), unit(2), unit(3)};
  std::vector<step_features> out;
  program cut = p;
  double before[T]{};
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    cut.steps.assign(p.steps.begin(), p.steps.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    double after[T];
    for (int k = 0; k < T; ++k) after[k] = predicted_seconds(cut, units[k]);
    out.push_back({p.steps[i].kind, after[0] - before[0], after[1] - before[1], after[2] - before[2],
                   after[3] - before[3]});
    std::copy(after, after + T, before);
  }
  return out;
}

/// An all-reduce is at most the reduce-scatter then all-gather that implement it (how MPI
/// libraries and NCCL run large ones): caps its latency and per-round terms at their sums,
/// its per-byte term at their mean (it receives twice what either does). The fit prices the
/// kinds apart, and at small sizes their noise would otherwise decide between one step and
/// two that measure the same.
constexpr void cap_allreduce(time_profile& p) {
  const op_time rs = p[op::reducescatter], ag = p[op::allgather];
  op_time& ar = p[op::allreduce];
  ar.latency = std::min(ar.latency, rs.latency + ag.latency);
  ar.per_peer = std::min(ar.per_peer, rs.per_peer + ag.per_peer);
  ar.per_byte = std::min(ar.per_byte, 0.5 * (rs.per_byte + ag.per_byte));
}

// ---- calibrate ----

/// The largest tile per rank calibrate measures (calibrate_options::sizes), in bytes.
inline constexpr std::uint64_t max_calibrate_bytes = std::uint64_t{1} << 32;

/// Options of calibrate.
struct calibrate_options {
  std::string name = "calibrated";  ///< the profile's name (the CLI passes "host" or "mpi")
  /// The larger tile per rank (source or target) of every measured program, in bytes.
  std::vector<std::uint64_t> sizes = {4u << 10, 64u << 10, 1u << 20, 8u << 20};
  int repetitions = 5;  ///< timed runs per program (after one warm-up run); the median counts (the pass: the fastest)
  /// World ranks per node (consecutive): with ranks on two or more nodes (0 < node_ranks <
  /// D), calibrate also measures the link between them (time_profile::node_ranks and
  /// node_per_byte; detail::measure_link). 0: one node, no link.
  std::uint64_t node_ranks = 0;
  /// Combines one rank's time with the other ranks': the max over ranks. Identity for a
  /// backend that drives every rank; under MPI, an MPI_Allreduce with MPI_MAX (every rank
  /// calls it equally often, in the same order).
  std::function<double(double)> max_over_ranks = [](double t) { return t; };
};

/// What calibrate measured, for reports: every sample by kind.
struct calibration {
  time_profile profile;
  std::vector<time_sample> samples[op_count];
  /// The link's samples (calibrate_options::node_ranks): bytes the busiest node's link
  /// carries, measured seconds, and as offset the seconds the profile without the link predicts.
  std::vector<time_sample> link_samples;
  std::size_t programs = 0;  ///< programs run
};

namespace detail {

inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

/// Run p (one warm-up, then `reps` timed runs) on the ranks b drives; per step the median
/// of its times, then max_over_ranks. `whole`: time the whole run instead (for programs
/// with no steps: the pass), as one value, the fastest run.
template <class B>
std::vector<double> time_program(B& b, const program& p, const calibrate_options& o, bool whole = false) {
  executor<float, B> ex(b, p);
  std::vector<darray<float>> in, out;
  for (rank_t r : b.local_ranks()) {
    in.push_back(source_tile<float>(p, r));
    out.push_back(target_tile<float>(p, r));
  }
  ex.run(in, out);  // warm-up: first touch of the pages, groups set up
  const std::size_t S = whole ? 1 : p.steps.size();
  std::vector<std::vector<double>> t(S);
  for (int k = 0; k < std::max(1, o.repetitions); ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    ex.run(in, out);
    const double all = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (std::size_t s = 0; s < S; ++s) t[s].push_back(whole ? all : ex.stats()[s].seconds);
  }
  std::vector<double> sec(S);
  for (std::size_t s = 0; s < S; ++s)
    sec[s] = o.max_over_ranks(whole ? *std::min_element(t[s].begin(), t[s].end()) : median_of(std::move(t[s])));
  return sec;
}

/// The overlap of b's message rounds with a copy (the header comment).
template <class B>
double measure_overlap(B& b, const calibrate_options& o) {
  if constexpr (message_backend<B> && std::is_same_v<memory_space_t<B>, host_memory>) {
    const std::uint64_t D = b.devices();
    if (D < 2 || b.local_ranks().size() != 1) return 0;
    const std::uint64_t me = b.local_ranks()[0];
    const std::uint64_t S = *std::max_element(o.sizes.begin(), o.sizes.end());
    std::vector<std::byte> send(S, std::byte{1}), recv(S), from(S, std::byte{2}), to(S);
    const message sends[] = {{static_cast<rank_t>((me + 1) % D), send.data(), S}};
    const message recvs[] = {{static_cast<rank_t>((me + D - 1) % D), recv.data(), S}};
    auto copy = [&] { std::memcpy(to.data(), from.data(), S); };
    auto none = [](std::size_t) {};
    auto seconds = [&](bool messages, bool copying) {
      std::vector<double> t;
      for (int k = 0; k <= std::max(1, o.repetitions); ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        if (messages)
          b.message_round(std::span<const message>(sends), std::span<const message>(recvs), none,
                          [&] {
                            if (copying) copy();
                          },
                          none);
        else
          copy();
        if (k > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      return o.max_over_ranks(median_of(std::move(t)));
    };
    const double msg = seconds(true, false), cp = seconds(false, true), both = seconds(true, true);
    const double least = std::min(msg, cp);
    return least > 0 ? std::clamp((msg + cp - both) / least, 0.0, 1.0) : 0.0;
  } else {
    (void)b;
    (void)o;
    return 0;
  }
}

/// "[{x}N, M]" with N and M filled in: `{N}` and `{M}` stand for the sizes.
inline std::string fill_sizes(std::string t, std::uint64_t N, std::uint64_t M) {
  for (std::size_t at; (at = t.find("{N}")) != std::string::npos;) t.replace(at, 3, std::to_string(N));
  for (std::size_t at; (at = t.find("{M}")) != std::string::npos;) t.replace(at, 3, std::to_string(M));
  return t;
}

/// One program calibrate times, and what it is (for reports).
struct calibration_program {
  program prog;
  std::string what;  ///< "{x: 2, y: 4}: [{x}256, 64] -> [256, {x}64]"
};

/// Which programs calibration_programs makes.
enum class calibration_set {
  profile,        ///< every row of the table in the header comment, arrays [N, 16 D]
  exchange_ways,  ///< the exchanges and a 2-D grid, on arrays about square (time_exchanges)
};

/// The programs of calibrate on D >= 2 ranks: on meshes {x: a, y: D/a} for every divisor
/// a >= 2 of D, at every size (the larger tile per rank, rounded to whole rows).
/// calibration_set::profile: the table in the header comment, on arrays of 16 D columns.
/// calibration_set::exchange_ways: its three exchanges and the 2-D grid [{x}N, {y}M] ->
/// [{y}N, {x}M] (where y has more than one rank), on arrays about as wide as tall, like the
/// arrays users redistribute: how long a piece's runs are decides between the ways of
/// exchanging (a single copy pays per run, MPI's datatypes walk the runs, packing copies
/// every byte into and out of a buffer), and 16 D columns would make every run short.
inline std::vector<calibration_program> calibration_programs(std::uint64_t D, std::span<const std::uint64_t> sizes,
                                                             calibration_set set) {
  struct kase {
    const char* from;
    const char* to;
    bool exchange;
  };
  static constexpr kase kases[] = {
      {"[{x}{N}, {M}]", "[{N}, {M}]", false},                // allgather
      {"[{x}{N}, {M}]", "[{N}, {x}{M}]", false},             // alltoall
      {"[{N}, {M}]", "[{x}{N}, {M}]", false},                // dynslice
      {"[{x, y}{N}, {M}]", "[{y, x}{N}, {M}]", false},       // allpermute
      {"[{N}, {y}{M}] sum{x}", "[{N}, {y}{M}]", false},      // allreduce
      {"[{N}, {y}{M}] sum{x}", "[{x}{N}, {y}{M}]", false},   // reducescatter
      {"[{x}{N}, {M}]", "[{N}, {x}{M}]", true},              // exchanges
      {"[{x, y}{N}, {M}]", "[{y, x}{N}, {M}]", true},
      {"[{x}{N}, {M}]", "[{N}, {M}]", true},
  };
  static constexpr kase grid = {"[{x}{N}, {y}{M}]", "[{y}{N}, {x}{M}]", true};
  const bool ways = set == calibration_set::exchange_ways;
  std::vector<kase> todo;
  for (const kase& k : kases)
    if (k.exchange || !ways) todo.push_back(k);
  const std::uint64_t e = sizeof(float);
  std::vector<calibration_program> out;
  for (std::uint64_t a = 2; a <= D; ++a) {
    if (D % a != 0) continue;
    const std::string mesh_text = "{x: " + std::to_string(a) + ", y: " + std::to_string(D / a) + "}";
    const device_mesh m = parse_mesh(mesh_text);
    std::vector<kase> here = todo;
    if (ways && D / a > 1) here.push_back(grid);
    for (const kase& k : here) {
      // The larger tile per rank as a fraction of the array, from N = M = 16 D.
      const std::uint64_t W = 16 * D;  // divisible by every group size
      const dist_type a0 = parse_type(m, fill_sizes(k.from, W, W));
      const dist_type b0 = parse_type(m, fill_sizes(k.to, W, W));
      const double frac =
          static_cast<double>(std::max(local_size(m, a0), local_size(m, b0))) / static_cast<double>(W * W);
      for (std::uint64_t size : sizes) {
        const double elements = static_cast<double>(size) / static_cast<double>(e) / frac;
        // Columns: 16 D, or (exchange_ways) about the square root of the elements, a
        // multiple of D; rows: the rest, a multiple of D.
        const std::uint64_t M =
            ways ? std::max<std::uint64_t>(
                       W, D * static_cast<std::uint64_t>(std::llround(std::sqrt(elements) / static_cast<double>(D))))
                 : W;
        const double rows = elements / static_cast<double>(M);
        const std::uint64_t N = D * std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(rows / static_cast<double>(D))));
        const std::string from_text = fill_sizes(k.from, N, M), to_text = fill_sizes(k.to, N, M);
        const dist_type from = parse_type(m, from_text);
        const dist_type to = parse_type(m, to_text);
        if (from == to) continue;
        // The paper's search (objective::bytes): one collective of the kind, whatever a
        // profile would predict of splitting it.
        program p = k.exchange ? exchange_program(m, from, to, e)
                               : search_program(m, from, to, synth_options{.element_bytes = e, .goal = objective::bytes});
        if (p.steps.empty()) continue;
        out.push_back({std::move(p), mesh_text + ": " + from_text + " -> " + to_text});
      }
    }
  }
  return out;
}

/// calibrate_options::sizes: at least one, each 1 byte .. max_calibrate_bytes.
inline void check_sizes(const calibrate_options& o) {
  if (o.sizes.empty()) throw redist_error(errc::bad_size, "calibrate: no sizes to measure");
  for (std::uint64_t s : o.sizes)
    if (s == 0 || s > max_calibrate_bytes)
      throw redist_error(errc::bad_size, "calibrate: sizes must lie in 1 byte .. 4 GiB per rank");
}

/// The link's seconds per byte from its samples (measure_link): the least squares slope of
/// seconds - offset against bytes, through 0, absolute residuals (unlike fit_op_time's
/// relative ones: the link's term matters where the bytes are many, and at small sizes the
/// latencies, already in the per-rank terms, and a network's burst allowance dominate);
/// at least 0.
inline double fit_link(std::span<const time_sample> samples) {
  double num = 0, den = 0;
  for (const time_sample& x : samples) {
    num += x.bytes * (x.seconds - x.offset);
    den += x.bytes * x.bytes;
  }
  return den > 0 ? std::max(0.0, num / den) : 0.0;
}

/// The link between nodes of o.node_ranks ranks (the header comment), under profile P (the
/// per-rank terms, fitted): at each size, the exchange that moves the tiles of the first
/// node's ranks to the second node's, one way; the link's seconds per byte fit (fit_link)
/// what P does not predict of those times against the bytes the busiest node's link carries
/// (lower/node_links.hpp).
template <class B>
double measure_link(B& b, const calibrate_options& o, const time_profile& P, std::vector<time_sample>& samples) {
  const std::uint64_t D = b.devices(), N = o.node_ranks, M = std::min(N, D - N);
  const device_mesh m = parse_mesh("{x: " + std::to_string(M) + "}");
  std::vector<rank_t> next(M);
  for (std::uint64_t q = 0; q < M; ++q) next[q] = static_cast<rank_t>(N + q);
  const placed_mesh from{m, {}}, to{m, next};
  for (std::uint64_t size : o.sizes) {
    const std::uint64_t E = std::max<std::uint64_t>(1, size / sizeof(float));
    const dist_type t = parse_type(m, "[{x}" + std::to_string(E * M) + "]");
    const program p = exchange_between(placed_layout{from, t}, placed_layout{to, t}, D, sizeof(float));
    const std::uint64_t link = node_link_elements(plan_exchange(p, 0), D, N) * sizeof(float);
    samples.push_back({0, 0, static_cast<double>(link), time_program(b, p, o).front(), predicted_seconds(p, P)});
  }
  return fit_link(samples);
}
}  // namespace detail

/// Measure the samples and fit the profile (see the header comment). Every rank of the
/// backend calls it (collective under MPI); every rank gets the same profile when
/// max_over_ranks combines the ranks. Throws redist_error if the backend has no ranks or
/// an option is out of range.
template <class B>
calibration calibrate_samples(B& b, const calibrate_options& o = {}) {
  const std::uint64_t D = b.devices();
  if (D == 0) throw redist_error(errc::runtime, "calibrate: the backend has no ranks");
  detail::check_sizes(o);
  calibration c;
  c.profile.set_name(o.name);
  c.profile.devices = D;
  const std::uint64_t e = sizeof(float);

  // The pass (time_profile::pass_per_byte): every rank's executor copying its tile at once
  // (an empty program, source == target), at each size.
  const device_mesh mc = parse_mesh(D == 1 ? std::string("{}") : "{x: " + std::to_string(D) + "}");
  std::vector<time_sample> copies;
  for (std::uint64_t size : o.sizes) {
    const std::uint64_t N = std::max<std::uint64_t>(1, size / e);
    const dist_type t = parse_type(mc, "[" + std::to_string(N) + "]");
    const double sec = detail::time_program(b, synthesize(mc, t, t), o, true).front();
    copies.push_back({1, 0, static_cast<double>(N * e), sec});
    ++c.programs;
  }
  const op_time copy = fit_op_time(copies);
  c.profile.pass_per_byte = copy.per_byte;
  c.profile.overlap = detail::measure_overlap(b, o);

  // Ranks on several nodes: the per-rank terms are measured inside the first node (its
  // ranks run the programs, the others hold nothing), so that the link's term, measured
  // after them, is what the network adds.
  const bool nodes = o.node_ranks > 0 && o.node_ranks < D;
  const std::uint64_t Dn = nodes ? o.node_ranks : D;
  auto link = [&] {
    if (!nodes) return;
    c.profile.node_per_byte = detail::measure_link(b, o, c.profile, c.link_samples);
    c.profile.node_ranks = o.node_ranks;
    c.programs += o.sizes.size();
  };
  if (Dn == 1) {  // nothing moves between a node's ranks: every kind is the tile copy
    for (op k : all_ops) {
      c.profile[k] = {copy.latency, 0, 0};
      c.samples[static_cast<int>(k)] = copies;
    }
    link();
    return c;
  }

  for (const detail::calibration_program& cp :
       detail::calibration_programs(Dn, o.sizes, detail::calibration_set::profile)) {
    const program prog = nodes ? place_program(cp.prog, {}, D) : cp.prog;
    const std::vector<step_features> f = program_step_features(prog);
    const std::vector<double> sec = detail::time_program(b, prog, o);
    ++c.programs;
    for (std::size_t s = 0; s < f.size(); ++s) {
      if (f[s].steps == 0 && f[s].peers == 0 && f[s].bytes == 0) continue;  // e.g. an identity permute
      c.samples[static_cast<int>(f[s].kind)].push_back(
          {f[s].steps, f[s].peers, f[s].bytes, sec[s], c.profile.pass_per_byte * f[s].tile});
    }
  }
  for (op k : all_ops) c.profile[k] = fit_op_time(c.samples[static_cast<int>(k)]);
  for (op k : all_ops)  // a kind no mesh of Dn ranks exercises: the exchange's terms
    if (c.samples[static_cast<int>(k)].empty()) c.profile[k] = c.profile[op::exchange];
  cap_allreduce(c.profile);
  link();
  return c;
}

/// The backend's time profile (see the header comment): calibrate_samples(b, o).profile.
template <class B>
time_profile calibrate(B& b, const calibrate_options& o = {}) {
  return calibrate_samples(b, o).profile;
}

// ---- ways of moving exchanges ----

/// What time_exchanges measured: every exchange program on every candidate backend.
struct exchange_timing {
  std::vector<std::string> programs;         ///< what each program is
  std::vector<std::vector<double>> seconds;  ///< [candidate][program]: median of the runs, max over ranks
  std::vector<double> geomean;               ///< per candidate: the geometric mean over the programs
  std::size_t fastest = 0;                   ///< the candidate of the least geometric mean (the first on a tie)
};

/// Time calibrate's exchange programs (the exchange rows of the table in the header comment:
/// every mesh {x: a, y: D/a} and every size of o.sizes) on each candidate backend, one
/// program at a time on all candidates in turn (so that a change in the machine's load
/// falls on all of them alike), and find the candidate of the least geometric mean: for
/// example the MPI backend with each of its exchange modes (backends/mpi_exchange.hpp;
/// `redist calibrate --backend mpi`). Every candidate drives the same ranks; every rank
/// calls it (collective under MPI). Throws redist_error without candidates, if they drive
/// different numbers of ranks, or as calibrate_samples does for the sizes.
template <class B>
exchange_timing time_exchanges(std::span<B* const> candidates, const calibrate_options& o = {}) {
  if (candidates.empty()) throw redist_error(errc::runtime, "calibrate: no backends to time exchanges on");
  const std::uint64_t D = candidates.front()->devices();
  for (B* b : candidates)
    if (b->devices() != D) throw redist_error(errc::runtime, "calibrate: the backends drive different numbers of ranks");
  detail::check_sizes(o);
  exchange_timing t;
  t.seconds.resize(candidates.size());
  t.geomean.assign(candidates.size(), 0.0);
  if (D < 2) return t;  // nothing moves between ranks
  for (const detail::calibration_program& cp :
       detail::calibration_programs(D, o.sizes, detail::calibration_set::exchange_ways)) {
    t.programs.push_back(cp.what);
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      double sec = 0;
      for (double s : detail::time_program(*candidates[c], cp.prog, o)) sec += s;
      t.seconds[c].push_back(sec);
    }
  }
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    double logs = 0;
    for (double s : t.seconds[c]) logs += std::log(std::max(s, 1e-9));  // (a clock that read 0)
    t.geomean[c] = t.programs.empty() ? 0.0 : std::exp(logs / static_cast<double>(t.programs.size()));
    if (t.geomean[c] < t.geomean[t.fastest]) t.fastest = c;
  }
  return t;
}

}  // namespace redist
