// benchmarks/mpi_execution.cpp -- run time of our programs on the MPI backend against the
// baselines, on the same data, side by side in one process per rank.
//
//   mpirun --oversubscribe -np 8 mpi_execution [--quick] [--problems N] [--csv FILE]
//          [--min-reps N] [--max-reps N] [--min-time SECONDS] [--profile FILE]
//          [--sets exec,small,sums,grids,uneven]
//
// Problem sets on 8 ranks:
//   exec    the paper's draw scaled to 8-64 MiB of float32 (benchmarks/workload.hpp) on the
//           mesh {a: 2, b: 2, c: 2};
//   small   the same draw at 64 KiB-1 MiB (latency-bound);
//   sums    the same small draw with pending partial sums in the sources (all-reduce and
//           reduce-scatter; no exchange: only collectives reduce);
//   grids   2-D arrays of float64 between the block distributions ScaLAPACK expresses
//           (process grids 2x4, 4x2, 8x1, 1x8 over the same 8 ranks, MB = M/prow, NB = N/pcol),
//           where ScaLAPACK's pdgemr2d runs too (when built with ScaLAPACK);
//   uneven  float32 arrays whose dimensions the mesh does not divide (DESIGN.md section 2):
//           issue 15's named cases (vocabulary 50257, batch 6 on 4 devices, 3x3 kernels) and
//           the exec draw with every partitioned dimension one element shorter. Our plan
//           is one exchange; xla runs XLA's patterns on the padded array
//           (baselines::xla_padded_program), timed where its tiles are XLA's.
// Systems: collective (the paper's search, objective::bytes: the program of least Fig. 11
// cost; strided blocks in place through MPI datatypes), collective packed (the same, packed by
// the executor), collective by time (the search under objective::time, the default: least
// predicted time under the profile), exchange (one exchange, MPI_Alltoallw with subarray
// datatypes), exchange packed (MPI_Alltoallv of packed pieces), xla, naive, and pdgemr2d on
// the grids. Two choices, each timed as the system it picks: "chosen, bytes search" (the
// plan before the time objective: collective or exchange, whichever the time model predicts
// faster) and "chosen, time search" (synthesize's default now: collective by time or
// exchange); both under the same profile (core/time_model.hpp: the built-in one, or
// --profile FILE). For each problem and system: one executor over the
// MPI backend, a source tile filled with values encoding their global index, one warm-up
// run, then timed repetitions: in each, every system runs once, in a rotating order (so that
// all see the same machine conditions), each run timed as barrier, run, the slowest rank's
// time (MPI_MAX); at least --min-reps repetitions and until the runs took --min-time seconds
// in all, or --max-reps. The median is reported. Every target tile is checked element by
// element after the warm-up and after the last run.
// Rank 0 prints Markdown tables and, with --csv, one row per (problem, system).
// Exit status: 0 iff every run left every rank with exactly its target tile.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "baselines/naive.hpp"
#include "baselines/xla.hpp"
#include "baselines/xla_2022.hpp"
#include "redist/backends/mpi.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/profile_json.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/verify.hpp"
#include "stats.hpp"
#include "workload.hpp"
#if defined(REDIST_WITH_SCALAPACK)
#include "baselines/scalapack.hpp"
#endif

namespace {

using namespace redist;

enum system_id { collective, collective_packed, timed, exchange, exchange_packed, xla, xla2022, naive, pdgemr2d, nsys };
constexpr const char* system_name[nsys] = {"collective", "collective packed", "collective by time", "exchange",
                                           "exchange packed", "xla", "xla-2022", "naive", "pdgemr2d"};
/// The program each system runs (pdgemr2d: none).
enum program_id { p_collective, p_timed, p_exchange, p_xla, p_xla2022, p_naive, nprog };
constexpr int program_of[nsys] = {p_collective, p_collective, p_timed,  p_exchange,
                                  p_exchange,   p_xla,        p_xla2022, p_naive, -1};

struct options {
  bool quick = false;
  std::size_t problems = 50;
  std::string csv, profile_file, sets = ",exec,small,sums,grids,uneven,";
  [[nodiscard]] bool runs_set(const std::string& set) const { return sets.find("," + set + ",") != std::string::npos; }
  int min_reps = 5, max_reps = 15;
  double min_time = 1.5;
};

struct measurement {
  bool ran = false;
  double median_s = 0, min_s = 0;
  int reps = 0;
  std::uint64_t peak_held = 0, mismatches = 0;
};

struct result_row {
  std::string set, from, to;
  double mib = 0;
  std::uint64_t inout_bytes = 0;
  std::uint64_t cost[nprog]{}, steps[nprog]{}, received[nprog]{}, lower_bound = 0;
  double predicted[nprog]{};
  bool chose_exchange = false;       ///< the bytes search's choice
  bool chose_exchange_time = false;  ///< the time search's choice
  bool sums = false;                 ///< the source has pending sums (no exchange)
  std::string xla_rule;           ///< the pattern XLA's outermost ReshardNoCache applies
  bool xla_remat = false;         ///< XLA's plan contains a full rematerialization
  measurement m[nsys];
  [[nodiscard]] int chosen_sys() const { return chose_exchange ? exchange : collective; }
  [[nodiscard]] int chosen_time_sys() const { return chose_exchange_time ? exchange : timed; }
  [[nodiscard]] double chosen_s() const { return m[chosen_sys()].median_s; }
  [[nodiscard]] double chosen_time_s() const { return m[chosen_time_sys()].median_s; }
};

using bench::geomean;
using bench::median;

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw redist_error(errc::syntax, std::string(a) + " needs a value");
      return argv[++i];
    };
    if (a == "--quick") o.quick = true;
    else if (a == "--problems") o.problems = std::strtoul(value().c_str(), nullptr, 10);
    else if (a == "--csv") o.csv = value();
    else if (a == "--min-reps") o.min_reps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--max-reps") o.max_reps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--min-time") o.min_time = std::atof(value().c_str());
    else if (a == "--profile") o.profile_file = value();
    else if (a == "--sets") o.sets = "," + value() + ",";
    else
      throw redist_error(errc::syntax, "usage: mpi_execution [--quick] [--problems N] [--csv FILE] [--min-reps N] "
                                       "[--max-reps N] [--min-time SECONDS] [--profile FILE] "
                                       "[--sets exec,small,sums,grids,uneven]");
  }
  if (o.quick) {
    o.min_reps = 1;
    o.max_reps = 2;
    o.min_time = 0;
  }
  o.max_reps = std::max(o.max_reps, o.min_reps);
  return o;
}

std::uint64_t reduce_max(MPI_Comm c, std::uint64_t v) {
  std::uint64_t r = 0;
  MPI_Allreduce(&v, &r, 1, MPI_UINT64_T, MPI_MAX, c);
  return r;
}
std::uint64_t reduce_sum(MPI_Comm c, std::uint64_t v) {
  std::uint64_t r = 0;
  MPI_Allreduce(&v, &r, 1, MPI_UINT64_T, MPI_SUM, c);
  return r;
}

/// One system of one problem: its tiles and how to run it.
template <class T>
struct slot {
  int sys = 0;
  darray<T> in, out;
  std::function<void()> run;
  std::function<std::uint64_t()> held;
  std::vector<double> t;
  std::uint64_t bad = 0;
  slot(int s, const device_mesh& m, const dist_type& a, const dist_type& b, rank_t r)
      : sys(s), in(m, a, r), out(m, b, r) {}
};

/// Time the systems of one problem side by side (every repetition runs each once, in a
/// rotating order).
template <class T>
void time_systems(mpi_backend& mpi, mpi_backend& packing, const program (&progs)[nprog], const bool (&runs)[nsys],
                  const options& o, measurement (&res)[nsys]) {
  const MPI_Comm c = mpi.comm();
  const program& p0 = progs[p_collective];
  std::vector<std::unique_ptr<slot<T>>> slots;
  std::vector<std::shared_ptr<void>> keep;  // executors and the ScaLAPACK plan
  for (int s = 0; s < nsys; ++s) {
    if (!runs[s]) continue;
    // Each system between its program's types (xla's are padded on uneven problems).
    const program& ps = s == pdgemr2d ? p0 : progs[program_of[s]];
    auto x = std::make_unique<slot<T>>(s, ps.m, ps.source, ps.target, mpi.rank());
    if (s == pdgemr2d) {
#if defined(REDIST_WITH_SCALAPACK)
      auto sl = std::make_shared<bench::scalapack_redistribution<T>>(p0.m, p0.source, p0.target);
      keep.push_back(sl);
      slot<T>* px = x.get();
      x->run = [sl, px] { sl->run(px->in.data(), px->out.data()); };
      x->held = [] { return std::uint64_t{0}; };
#endif
    } else {
      mpi_backend& b = s == collective_packed || s == exchange_packed ? packing : mpi;
      auto ex = std::make_shared<executor<T, mpi_backend>>(b, progs[program_of[s]]);
      keep.push_back(ex);
      slot<T>* px = x.get();
      x->run = [ex, px] { ex->run(px->in, px->out); };
      x->held = [ex] { return ex->peak_bytes_held(); };
    }
    fill_global_index(x->in);
    x->run();  // warm-up: communicators, first touch of the buffers
    x->bad += check_global_index(x->out).mismatches;
    slots.push_back(std::move(x));
  }
  double total = 0;
  const std::size_t n = slots.size();
  for (int k = 0; k < o.max_reps; ++k) {
    for (std::size_t q = 0; q < n; ++q) {
      slot<T>& x = *slots[(static_cast<std::size_t>(k) + q) % n];
      MPI_Barrier(c);
      const double t0 = MPI_Wtime();
      x.run();
      double dt = MPI_Wtime() - t0, slowest = 0;
      MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, c);  // the same value on every rank
      x.t.push_back(slowest);
      total += slowest;
    }
    if (k + 1 >= o.min_reps && total >= o.min_time) break;
  }
  for (auto& xp : slots) {
    slot<T>& x = *xp;
    x.bad += check_global_index(x.out).mismatches;
    measurement& r = res[x.sys];
    r.ran = true;
    r.median_s = median(x.t);
    r.min_s = *std::min_element(x.t.begin(), x.t.end());
    r.reps = static_cast<int>(x.t.size());
    r.peak_held = reduce_max(c, x.held());
    r.mismatches = reduce_sum(c, x.bad);
  }
}

/// The 2-D problems between the grid distributions ScaLAPACK expresses on {a: 2, b: 2, c: 2}.
std::vector<testing::problem_text> grid_problems(bool quick) {
  const std::string n = quick ? "256" : "2048";
  const std::vector<std::string> types = {
      "[{a}" + n + ", {b,c}" + n + "]", "[{a,b}" + n + ", {c}" + n + "]", "[{a,b,c}" + n + ", " + n + "]",
      "[" + n + ", {a,b,c}" + n + "]",  "[{c}" + n + ", {a,b}" + n + "]", "[{b,c}" + n + ", {a}" + n + "]",
      "[" + n + ", {c,b,a}" + n + "]",  "[{c,b,a}" + n + ", " + n + "]"};
  std::vector<testing::problem_text> out;
  for (std::size_t i = 0; i < types.size(); ++i)
    for (std::size_t j = 0; j < types.size(); ++j) {
      if (i == j || (quick && (i + j) % 5 != 0) || (!quick && (i + 2 * j) % 3 != 0)) continue;
      out.push_back({"{a: 2, b: 2, c: 2}", types[i], types[j], 0});
    }
  return out;
}

/// Arrays the mesh does not divide: issue 15's named cases, then the exec draw with every
/// partitioned dimension one element shorter (so that no tile count divides it).
std::vector<testing::problem_text> uneven_problems(bool quick, std::size_t problems) {
  const std::string vocab = quick ? "5003" : "50257", hidden = quick ? "64" : "256", f = quick ? "64" : "1024",
                    ci = quick ? "64" : "512", co = quick ? "128" : "1024";
  std::vector<testing::problem_text> out = {
      {"{data: 2, model: 4}", "[{model}" + vocab + ", " + hidden + "]", "[" + vocab + ", {model}" + hidden + "]", 0},
      {"{data: 2, model: 4}", "[" + vocab + ", {model}" + hidden + "]", "[{model}" + vocab + ", " + hidden + "]", 0},
      {"{x: 4, y: 2}", "[{x}6, " + f + ", " + f + "]", "[6, " + f + ", " + f + "]", 0},
      {"{x: 4, y: 2}", "[6, " + f + ", " + f + "]", "[{x}6, " + f + ", " + f + "]", 0},
      {"{a: 2, b: 2, c: 2}", "[3, 3, {c}" + ci + ", {a,b}" + co + "]", "[{a,b}3, 3, " + ci + ", {c}" + co + "]", 0},
      {"{a: 2, b: 2, c: 2}", "[{a,b}3, {c}3, " + ci + ", " + co + "]", "[3, 3, {a,b,c}" + ci + ", " + co + "]", 0}};
  for (const auto& mw : bench::exec_workload(quick, problems).meshes)
    for (const auto& pt : mw.draw()) {
      const device_mesh m = parse_mesh(pt.mesh);
      dist_type a = parse_type(m, pt.from), b = parse_type(m, pt.to);
      for (int d = 0; d < a.rank; ++d)
        if ((parts(m, a.dims[d]) > 1 || parts(m, b.dims[d]) > 1) && a.dims[d].global > 1)
          b.dims[d].global = --a.dims[d].global;
      if (!even(m, a) || !even(m, b))
        out.push_back({pt.mesh, std::string(type_text(m, a).view()), std::string(type_text(m, b).view()), 0});
    }
  return out;
}

/// Spearman's rank correlation of two equally long samples (ties get their mean rank).
double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<std::size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (std::size_t i = 0; i < idx.size();) {
      std::size_t j = i;
      while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
      for (std::size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * static_cast<double>(i + j) + 1;
      i = j + 1;
    }
    return r;
  };
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n, my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

void summary_table(const std::vector<const result_row*>& rows) {
  fmt::print("| system | geomean time (ms) | total (s) | collective / system: geomean | median | min | max |"
             " faster than collective | peak bytes held / rank, max (MiB) | held / max(in, out), max |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  auto line = [&](const std::string& name, auto time_of, auto held_of) {
    std::vector<double> t, sp, held;
    double total = 0, peak = 0;
    std::size_t faster = 0;
    for (const result_row* r : rows) {
      const double s = time_of(*r);
      t.push_back(s * 1e3);
      total += s;
      sp.push_back(r->m[collective].median_s / s);
      faster += s < r->m[collective].median_s;
      held.push_back(static_cast<double>(held_of(*r)) / static_cast<double>(r->inout_bytes));
      peak = std::max(peak, static_cast<double>(held_of(*r)) / (1 << 20));
    }
    if (t.empty()) return;
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {}/{} | {:.1f} | {:.2f} |\n", name, geomean(t),
               total, geomean(sp), median(sp), *std::min_element(sp.begin(), sp.end()),
               *std::max_element(sp.begin(), sp.end()), faster, rows.size(), peak,
               *std::max_element(held.begin(), held.end()));
  };
  for (int s = 0; s < nsys; ++s) {
    bool all = !rows.empty();
    for (const result_row* r : rows) all = all && r->m[s].ran;
    if (all)
      line(system_name[s], [s](const result_row& r) { return r.m[s].median_s; },
           [s](const result_row& r) { return r.m[s].peak_held; });
  }
  line("**chosen, bytes search** (before)", [](const result_row& r) { return r.chosen_s(); },
       [](const result_row& r) { return r.m[r.chosen_sys()].peak_held; });
  line("**chosen, time search** (default)", [](const result_row& r) { return r.chosen_time_s(); },
       [](const result_row& r) { return r.m[r.chosen_time_sys()].peak_held; });
}

/// The time objective against the bytes objective: the chosen plans side by side, steps and
/// time, and how often the two searches' collective programs differ.
void objective_table(const std::vector<const result_row*>& rows, const std::string& set) {
  std::vector<double> ratio, cratio;
  std::size_t differ = 0, faster = 0, slower = 0;
  double steps_b = 0, steps_t = 0;
  for (const result_row* r : rows) {
    const double b = r->chosen_s(), t = r->chosen_time_s();
    ratio.push_back(b / t);
    faster += t < 0.95 * b;
    slower += t > 1.05 * b;
    const bool d = r->steps[p_collective] != r->steps[p_timed] || r->cost[p_collective] != r->cost[p_timed];
    differ += d;
    if (d) cratio.push_back(r->m[collective].median_s / r->m[timed].median_s);
    steps_b += static_cast<double>(r->steps[r->chose_exchange ? p_exchange : p_collective]);
    steps_t += static_cast<double>(r->steps[r->chose_exchange_time ? p_exchange : p_timed]);
  }
  if (rows.empty()) return;
  const double n = static_cast<double>(rows.size());
  fmt::print("| {} | {} | {:.3f} | {:.2f} | {:.2f} | {} | {} | {:.2f} / {:.2f} | {} | {} |\n", set, rows.size(),
             geomean(ratio), *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()),
             faster, slower, steps_b / n, steps_t / n, differ,
             cratio.empty() ? std::string("-") : fmt::format("{:.3f}", geomean(cratio)));
}

/// Uneven problems: our plan (one exchange) against XLA's patterns on padded shards.
void uneven_table(const std::vector<const result_row*>& rows, bool quick) {
  std::size_t remat = 0;
  std::vector<const result_row*> timed;
  std::map<std::string, std::size_t> rules;
  for (const result_row* r : rows) {
    remat += r->xla_remat;
    ++rules[r->xla_rule];
    if (r->m[xla].ran) timed.push_back(r);
  }
  std::string rule_list;
  for (const auto& [name, n] : rules) rule_list += fmt::format("{}{} {}", rule_list.empty() ? "" : ", ", name, n);
  fmt::print("\n#### Uneven shapes: {} problems of float32 ({})\n\n", rows.size(),
             quick ? "quick sizes" : "issue 15's named cases, then the exec draw one element shorter");
  fmt::print("Ours: one exchange (DESIGN.md section 2). xla: XLA's patterns on shards padded to ceil(n / k), padding on"
             " the wire (benchmarks/baselines/xla.hpp, xla_padded_program); its plan falls back to full"
             " rematerialization (all-gather everything, then slice) on {} of {} problems ({:.0f}%); outermost"
             " patterns: {}. Timed against xla: the {} problems where the model's tiles are XLA's.\n\n",
             remat, rows.size(), 100.0 * static_cast<double>(remat) / static_cast<double>(rows.size()), rule_list,
             timed.size());
  fmt::print("| system | geomean time (ms) | system / exchange: geomean | min | max | exchange faster |"
             " received (busiest rank) / lower bound: geomean | max |"
             " held / max(in, out), max |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int s : {exchange, exchange_packed, xla}) {
    std::vector<double> t, ratio, recv, held;
    std::size_t faster = 0;
    for (const result_row* r : timed) {
      const double x = r->m[s].median_s, e = r->m[exchange].median_s;
      t.push_back(x * 1e3);
      ratio.push_back(x / e);
      faster += e < x;
      recv.push_back(r->lower_bound ? static_cast<double>(r->received[program_of[s]]) / static_cast<double>(r->lower_bound) : 1.0);
      held.push_back(static_cast<double>(r->m[s].peak_held) / static_cast<double>(r->inout_bytes));
    }
    if (t.empty()) return;
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {}/{} | {:.3f} | {:.3f} | {:.2f} |\n", system_name[s],
               geomean(t), geomean(ratio), *std::min_element(ratio.begin(), ratio.end()),
               *std::max_element(ratio.begin(), ratio.end()), faster, timed.size(), geomean(recv),
               *std::max_element(recv.begin(), recv.end()), *std::max_element(held.begin(), held.end()));
  }
}

void report(const std::vector<result_row>& rows, const options& o, int ranks, const time_profile& P) {
  const unsigned cores = std::thread::hardware_concurrency();
  std::vector<const result_row*> exec, small, sums, grids, uneven;
  for (const result_row& r : rows)
    (r.set == "exec" ? exec : r.set == "small" ? small : r.set == "sums" ? sums : r.set == "grids" ? grids : uneven)
        .push_back(&r);
  fmt::print("### Execution on the MPI backend: {} ranks on {} cores (oversubscribed)\n\n", ranks, cores);
  fmt::print("Median of {}-{} timed runs per system (slowest rank per run), after one warm-up run; the systems of a"
             " problem alternate run by run. chosen: the collective program (of the bytes search, or of the time"
             " search) or the exchange, whichever the time model predicts faster (profile {}). Held: bytes an"
             " executor holds per rank on top of the caller's tiles.\n\n",
             o.min_reps, o.max_reps, P.name_view());
  if (!exec.empty()) {
    fmt::print("#### The paper's exec sample: {} problems at {} of float32\n\n", exec.size(),
               o.quick ? "64 KiB-1 MiB (quick)" : "8-64 MiB");
    summary_table(exec);
  }
  if (!small.empty()) {
    fmt::print("\n#### The same draw at 64 KiB-1 MiB of float32 (latency-bound): {} problems\n\n", small.size());
    summary_table(small);
  }
  if (!sums.empty()) {
    fmt::print("\n#### The small draw with pending partial sums: {} problems (no exchange: only collectives reduce)\n\n",
               sums.size());
    summary_table(sums);
  }
  if (!grids.empty()) {
    fmt::print("\n#### 2-D grid problems (ScaLAPACK's block distributions): {} problems of {} float64\n\n", grids.size(),
               o.quick ? "256x256" : "2048x2048");
    summary_table(grids);
  }

  if (!uneven.empty()) uneven_table(uneven, o.quick);

  if (!exec.empty() || !small.empty() || !sums.empty() || !grids.empty()) {
    fmt::print("\n#### The time objective against the bytes objective (chosen plans, side by side)\n\n"
               "| set | problems | bytes-chosen / time-chosen: geomean | min | max | time faster (>5%) |"
               " time slower (>5%) | steps: bytes / time | collective programs that differ |"
               " their collective / collective by time: geomean |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    objective_table(exec, "exec");
    objective_table(small, "small");
    objective_table(sums, "sums");
    objective_table(grids, "grids");
  }

  // The chooser: how often is the chosen plan within 10% of the faster of the two?
  if (!exec.empty() || !grids.empty())
    fmt::print("\n#### The time model's choice and its predictions\n\n"
               "| set | problems | exchange chosen | chosen within 10% of the faster of collective and exchange |"
               " collective / chosen geomean | Spearman rank correlation, predicted vs measured (all programs) |\n"
               "|---|---:|---:|---:|---:|---:|\n");
  for (const auto* set : {&exec, &grids}) {
    if (set->empty()) continue;
    std::size_t ex = 0, within = 0;
    std::vector<double> sp, pred, meas;
    for (const result_row* r : *set) {
      ex += r->chose_exchange;
      const double best = std::min(r->m[collective].median_s, r->m[exchange].median_s);
      within += r->chosen_s() <= 1.1 * best;
      sp.push_back(r->m[collective].median_s / r->chosen_s());
      for (int q = 0; q < nprog; ++q)
        for (int s = 0; s < nsys; ++s)
          if (program_of[s] == q && s != collective_packed && s != exchange_packed && r->m[s].ran) {
            pred.push_back(r->predicted[q]);
            meas.push_back(r->m[s].median_s);
          }
    }
    fmt::print("| {} | {} | {} | {}/{} ({:.0f}%) | {:.2f} | {:.2f} |\n", set == &exec ? "exec" : "grids", set->size(), ex,
               within, set->size(), 100.0 * static_cast<double>(within) / static_cast<double>(set->size()), geomean(sp),
               spearman(pred, meas));
  }

  fmt::print("\n<details><summary>Per problem (times in ms; received: MiB per rank; bound: the data-movement lower"
             " bound)</summary>\n\n");
  fmt::print("| set | source | target | MiB | collective | coll. packed | coll. by time | exchange | exch. packed | xla |"
             " xla-2022 | naive | pdgemr2d | chosen (bytes / time search) | predicted coll. / by time / exch. |"
             " received coll. / exch. (bound) |\n");
  fmt::print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n");
  for (const result_row& r : rows) {
    auto mib = [](std::uint64_t b) { return static_cast<double>(b) / (1 << 20); };
    auto ms = [&](int s) { return r.m[s].ran ? fmt::format("{:.2f}", r.m[s].median_s * 1e3) : std::string("-"); };
    fmt::print("| {} | `{}` | `{}` | {:.1f} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {:.2f} / {:.2f} / {:.2f} |"
               " {:.2f} / {:.2f} ({:.2f}) |\n",
               r.set, r.from, r.to, r.mib, ms(collective), ms(collective_packed), ms(timed), ms(exchange),
               ms(exchange_packed), ms(xla), ms(xla2022), ms(naive), ms(pdgemr2d), r.chose_exchange ? "exchange" : "collective",
               r.chose_exchange_time ? "exchange" : "by time", r.predicted[p_collective] * 1e3,
               r.predicted[p_timed] * 1e3, r.predicted[p_exchange] * 1e3, mib(r.received[p_collective]),
               mib(r.received[p_exchange]), mib(r.lower_bound));
  }
  fmt::print("\n</details>\n");
}

void write_csv(const std::string& path, const std::vector<result_row>& rows) {
  std::ofstream f(path);
  f << "set,index,from,to,mib,system,steps,cost_bytes,received_bytes,lower_bound_bytes,predicted_s,time_median_s,"
       "time_min_s,reps,peak_held_bytes,inout_bytes,mismatches,chosen_by\n";
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (int s = 0; s < nsys; ++s) {
      const result_row& r = rows[i];
      if (!r.m[s].ran) continue;
      const int q = program_of[s];
      f << r.set << "," << i << ",\"" << r.from << "\",\"" << r.to << "\"," << fmt::format("{:.3f}", r.mib) << ","
        << system_name[s] << "," << (q < 0 ? 0 : r.steps[q]) << "," << (q < 0 ? 0 : r.cost[q]) << ","
        << (q < 0 ? 0 : r.received[q]) << "," << r.lower_bound << ","
        << fmt::format("{:.6e}", q < 0 ? 0.0 : r.predicted[q]) << "," << fmt::format("{:.6e}", r.m[s].median_s) << ","
        << fmt::format("{:.6e}", r.m[s].min_s) << "," << r.m[s].reps << "," << r.m[s].peak_held << "," << r.inout_bytes
        << "," << r.m[s].mismatches << ","
        << (s == r.chosen_sys() ? 1 : 0) + (s == r.chosen_time_sys() ? 2 : 0) << "\n";  // 1 bytes, 2 time, 3 both
    }
}

/// Build the programs of one problem and time its systems (element type T).
template <class T>
result_row run_problem(mpi_backend& mpi, mpi_backend& packing, const std::string& set, const testing::problem_text& pt,
                       const options& o, const time_profile& P) {
  result_row r;
  r.set = set;
  r.from = pt.from;
  r.to = pt.to;
  const device_mesh m = parse_mesh(pt.mesh);
  const dist_type a = parse_type(m, pt.from), b = parse_type(m, pt.to);
  r.mib = static_cast<double>(global_size(a)) * sizeof(T) / (1 << 20);
  r.inout_bytes = std::max(local_size(m, a), local_size(m, b)) * sizeof(T);
  // Uneven problems: synthesize's plan is the exchange; xla runs on padded types; no naive.
  const bool uneven = !even(m, a) || !even(m, b);
  std::optional<baselines::xla_padded> padded;
  if (uneven) padded = baselines::xla_padded_program(m, a, b, sizeof(T));
  r.sums = a.nsum > 0;
  const synth_options by_bytes{.element_bytes = sizeof(T), .time_model = &P, .goal = objective::bytes};
  const synth_options by_time{.element_bytes = sizeof(T), .time_model = &P, .goal = objective::time};
  const program ours = uneven ? synthesize(m, a, b, by_bytes) : search_program(m, a, b, by_bytes);
  const program ours_time = uneven ? synthesize(m, a, b, by_time) : search_program(m, a, b, by_time);
  const program ex = r.sums ? ours : exchange_program(m, a, b, sizeof(T));
  // Pending sums: no exchange, and the baselines do not model them (not run).
  const program progs[nprog] = {ours,
                                ours_time,
                                ex,
                                uneven   ? padded->prog
                                : r.sums ? ours
                                         : baselines::xla_program(m, a, b, sizeof(T)),
                                uneven   ? baselines::xla_2022_padded_program(m, a, b, sizeof(T)).prog
                                : r.sums ? ours
                                         : baselines::xla_2022_program(m, a, b, sizeof(T)),
                                uneven || r.sums ? ex : baselines::naive_program(m, a, b, sizeof(T))};
  if (uneven) {
    r.xla_rule = baselines::xla_rule_name(padded->plan.top);
    r.xla_remat = padded->plan.contains(baselines::xla_rule::full_rematerialization);
  }
  for (int q = 0; q < nprog; ++q) {
    r.cost[q] = progs[q].cost_bytes();
    r.steps[q] = progs[q].steps.size();
    r.received[q] = run_received_elements(progs[q]) * sizeof(T);  // what a run receives (uneven tiles exactly)
    r.predicted[q] = predicted_seconds(progs[q], P);
  }
  r.lower_bound = movement_lower_bound(m, a, b) * sizeof(T);
  r.chose_exchange = uneven || (!r.sums && r.predicted[p_exchange] < r.predicted[p_collective]);
  r.chose_exchange_time = uneven || (!r.sums && r.predicted[p_exchange] < r.predicted[p_timed]);
  bool runs[nsys];
  for (int s = 0; s < nsys; ++s)
    runs[s] = s != pdgemr2d &&
              !(r.sums && (s == exchange || s == exchange_packed || s == xla || s == xla2022 || s == naive));
#if defined(REDIST_WITH_SCALAPACK)
  runs[pdgemr2d] = set == "grids" && bench::scalapack_grid_of(m, a) && bench::scalapack_grid_of(m, b);
#endif
  if (uneven) {
    for (int s : {collective, collective_packed, timed, naive, xla2022}) runs[s] = false;
    runs[xla] = padded->padding_as_xla;
  }
  time_systems<T>(mpi, packing, progs, runs, o, r.m);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    int me = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    try {
      const options o = parse(argc, argv);
      if (size != 8) throw redist_error(errc::runtime, "run on 8 ranks (the paper's mesh {a: 2, b: 2, c: 2}), not " + std::to_string(size));
      const time_profile P = o.profile_file.empty() ? builtin_profile : profile_from_file(o.profile_file);
      mpi_backend mpi, packing(MPI_COMM_WORLD,
                               {.alltoall_in_place = false, .allgather_in_place = false, .exchange_in_place = false});
      std::vector<result_row> rows;
      if (o.runs_set("exec"))
        for (const auto& mw : bench::exec_workload(o.quick, o.problems).meshes)
          for (const auto& pt : mw.draw()) rows.push_back(run_problem<float>(mpi, packing, "exec", pt, o, P));
      for (const bool sums : {false, true}) {
        const char* set = sums ? "sums" : "small";
        if (o.runs_set(set))
          for (const auto& mw : bench::small_workload(o.quick, o.problems, sums).meshes)
            for (const auto& pt : mw.draw())
              // A target that keeps pending sums is left out: its partial tiles are right only
              // summed over the sum axes (runtime/verify.hpp), and the check is per rank.
              if (pt.to.find("sum") == std::string::npos)
                rows.push_back(run_problem<float>(mpi, packing, set, pt, o, P));
      }
      if (o.runs_set("grids"))
        for (const auto& pt : grid_problems(o.quick)) rows.push_back(run_problem<double>(mpi, packing, "grids", pt, o, P));
      if (o.runs_set("uneven"))
        for (const auto& pt : uneven_problems(o.quick, o.problems))
          rows.push_back(run_problem<float>(mpi, packing, "uneven", pt, o, P));
      std::uint64_t bad = 0, runs = 0;
      for (const result_row& r : rows)
        for (int s = 0; s < nsys; ++s) {
          if (!r.m[s].ran) continue;
          runs += 2;
          bad += r.m[s].mismatches;
          if (r.m[s].mismatches && me == 0)
            std::fprintf(stderr, "WRONG DATA (%s) %s -> %s: %llu elements\n", system_name[s], r.from.c_str(),
                         r.to.c_str(), static_cast<unsigned long long>(r.m[s].mismatches));
        }
      if (me == 0) {
        report(rows, o, size, P);
        if (!o.csv.empty()) write_csv(o.csv, rows);
        fmt::print("\n{} runs checked element by element on every rank: {} wrong elements.\n", runs, bad);
      }
      rc = bad == 0 ? 0 : 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: mpi_execution: %s\n", me, e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);  // the other ranks may be waiting in a collective
      rc = 1;
    }
  }
#if defined(REDIST_WITH_SCALAPACK)
  bench::scalapack_finalize();
#endif
  MPI_Finalize();
  return rc;
}
