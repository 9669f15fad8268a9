// benchmarks/mpi_execution.cpp -- run time of our programs against the xla and naive
// baselines on the MPI backend, on the same data, side by side in one process per rank.
//
//   mpirun --oversubscribe -np 8 mpi_execution [--quick] [--problems N] [--csv FILE]
//          [--min-reps N] [--max-reps N] [--min-time SECONDS]
//
// Systems: ours (strided blocks in place through MPI datatypes), ours packed (the same
// executor packing them), ours before #13 (benchmarks/baselines/legacy_executor.hpp), xla,
// naive. Every rank draws the same problems (benchmarks/workload.hpp: the paper's workload scaled
// to 8-64 MiB of float32) and builds the same three programs. For each problem and each
// system: one executor (runtime/executor.hpp) over the MPI backend, a source tile filled
// with values encoding their global index, one warm-up run (it also builds the
// communicators), then timed repetitions: in each, every system's program runs once, in a
// rotating order (so that all of them see the same machine conditions), each run timed as
// barrier, run, the slowest rank's time (MPI_MAX); at least --min-reps repetitions and
// until the runs took --min-time seconds in all, or --max-reps. The median is reported.
// Every target tile is checked element by element after the warm-up and after the last
// run; the peak bytes an executor held per rank (on top of the caller's tiles) and had live
// are kept.
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
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "baselines/legacy_executor.hpp"
#include "baselines/naive.hpp"
#include "baselines/xla.hpp"
#include "redist/backends/mpi.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/verify.hpp"
#include "stats.hpp"
#include "workload.hpp"

namespace {

using namespace redist;

constexpr int nsys = 5;
constexpr const char* system_name[nsys] = {"ours", "ours packed", "ours before #13", "xla", "naive"};
/// The program each system runs: ours (three executors), xla, naive.
constexpr int program_of[nsys] = {0, 0, 0, 1, 2};
constexpr int nprog = 3;

struct options {
  bool quick = false;
  std::size_t problems = 50;
  std::string csv;
  int min_reps = 5, max_reps = 15;
  double min_time = 1.5;
};

struct measurement {
  double median_s = 0, min_s = 0;
  int reps = 0;
  std::uint64_t peak_held = 0, peak_live = 0, mismatches = 0;
};

struct result_row {
  std::string from, to;
  double mib = 0;
  std::uint64_t inout_bytes = 0;
  std::uint64_t cost[nprog]{}, steps[nprog]{};
  measurement m[nsys];
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
    else
      throw redist_error(errc::syntax, "usage: mpi_execution [--quick] [--problems N] [--csv FILE] [--min-reps N] "
                                       "[--max-reps N] [--min-time SECONDS]");
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

/// Time the programs of one problem side by side: every repetition runs each program once,
/// in a rotating order, so that all of them see the same machine conditions.
void time_programs(mpi_backend& mpi, mpi_backend& packing, const program (&progs)[nprog], const options& o,
                   measurement (&res)[nsys]) {
  const MPI_Comm c = mpi.comm();
  // ours: strided blocks in place (MPI datatypes); ours packed: the same executor packing
  // them; ours before #13: the executor as it was (benchmarks/baselines/legacy_executor.hpp).
  struct slot {
    std::unique_ptr<executor<float, mpi_backend>> ex;
    std::unique_ptr<baselines::legacy_executor<float, mpi_backend>> legacy;
    darray<float> in, out;
    std::vector<double> t;
    std::uint64_t bad = 0;
    slot(mpi_backend& b, const program& p, bool old) : in(p.m, p.source, b.rank()), out(p.m, p.target, b.rank()) {
      if (old) legacy = std::make_unique<baselines::legacy_executor<float, mpi_backend>>(b, p);
      else ex = std::make_unique<executor<float, mpi_backend>>(b, p);
    }
    void run() {
      if (legacy) legacy->run(in, out);
      else ex->run(in, out);
    }
    std::uint64_t held() const { return legacy ? legacy->peak_bytes_held() : ex->peak_bytes_held(); }
    std::uint64_t live() const { return legacy ? legacy->peak_bytes_live() : ex->peak_bytes_live(); }
  };
  std::vector<std::unique_ptr<slot>> slots;
  for (int s = 0; s < nsys; ++s) {
    slots.push_back(std::make_unique<slot>(s == 1 ? packing : mpi, progs[program_of[s]], s == 2));
    slot& x = *slots.back();
    fill_global_index(x.in);
    x.run();  // warm-up: communicators, first touch of the buffers
    x.bad += check_global_index(x.out).mismatches;
  }
  double total = 0;
  for (int k = 0; k < o.max_reps; ++k) {
    for (int q = 0; q < nsys; ++q) {
      slot& x = *slots[static_cast<std::size_t>((k + q) % nsys)];
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
  for (int s = 0; s < nsys; ++s) {
    slot& x = *slots[static_cast<std::size_t>(s)];
    x.bad += check_global_index(x.out).mismatches;
    res[s].median_s = median(x.t);
    res[s].min_s = *std::min_element(x.t.begin(), x.t.end());
    res[s].reps = static_cast<int>(x.t.size());
    res[s].peak_held = reduce_max(c, x.held());
    res[s].peak_live = reduce_max(c, x.live());
    res[s].mismatches = reduce_sum(c, x.bad);
  }
}

void report(const std::vector<result_row>& rows, const options& o, int ranks) {
  const unsigned cores = std::thread::hardware_concurrency();
  fmt::print("### Execution on the MPI backend: {} ranks on {} cores (oversubscribed), {} problems of the paper's"
             " workload at {}\n\n",
             ranks, cores, rows.size(), o.quick ? "64 KiB-1 MiB (quick)" : "8-64 MiB");
  fmt::print("Median of {}-{} timed runs per program (slowest rank per run), after one warm-up run; the five systems"
             " of a problem alternate run by run. ours: this executor, strided blocks in place (MPI derived datatypes);"
             " ours packed: the same executor packing them (mpi_options); ours before #13: the executor as it was"
             " (two buffers, copy in, pack, copy out; benchmarks/baselines/legacy_executor.hpp). Held: bytes an executor"
             " holds per rank on top of the caller's tiles.\n\n",
             o.min_reps, o.max_reps);
  fmt::print("| system | geomean time (ms) | total (s) | speedup of ours: geomean | median | min | max |"
             " ours faster | peak bytes held / rank, max (MiB) | held / max(in, out), max | mean |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int s = 0; s < nsys; ++s) {
    std::vector<double> t, sp, held;
    double total = 0, peak = 0;
    std::size_t faster = 0;
    for (const result_row& r : rows) {
      t.push_back(r.m[s].median_s * 1e3);
      total += r.m[s].median_s;
      sp.push_back(r.m[s].median_s / r.m[0].median_s);
      faster += r.m[0].median_s < r.m[s].median_s;
      held.push_back(static_cast<double>(r.m[s].peak_held) / static_cast<double>(r.inout_bytes));
      peak = std::max(peak, static_cast<double>(r.m[s].peak_held) / (1 << 20));
    }
    const bool self = s == 0;
    fmt::print("| {} | {:.2f} | {:.2f} | {} | {} | {} | {} | {} | {:.1f} | {:.2f} | {:.2f} |\n", system_name[s], geomean(t),
               total, self ? "-" : fmt::format("{:.2f}", geomean(sp)), self ? "-" : fmt::format("{:.2f}", median(sp)),
               self ? "-" : fmt::format("{:.2f}", *std::min_element(sp.begin(), sp.end())),
               self ? "-" : fmt::format("{:.2f}", *std::max_element(sp.begin(), sp.end())),
               self ? "-" : fmt::format("{}/{}", faster, rows.size()), peak, *std::max_element(held.begin(), held.end()),
               std::accumulate(held.begin(), held.end(), 0.0) / static_cast<double>(held.size()));
  }
  fmt::print("\n<details><summary>Per problem (times in ms, cost in MiB per device)</summary>\n\n");
  fmt::print("| # | source | target | MiB | ours ms | packed ms | before ms | xla ms | naive ms | before/ours | xla/ours |"
             " naive/ours | cost ours | xla | naive |\n");
  fmt::print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const result_row& r = rows[i];
    auto mib = [](std::uint64_t b) { return static_cast<double>(b) / (1 << 20); };
    auto ms = [&](int s) { return r.m[s].median_s * 1e3; };
    fmt::print("| {} | `{}` | `{}` | {:.1f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |"
               " {:.2f} | {:.2f} |\n",
               i, r.from, r.to, r.mib, ms(0), ms(1), ms(2), ms(3), ms(4), ms(2) / ms(0), ms(3) / ms(0), ms(4) / ms(0),
               mib(r.cost[0]), mib(r.cost[1]), mib(r.cost[2]));
  }
  fmt::print("\n</details>\n");
}

void write_csv(const std::string& path, const std::vector<result_row>& rows) {
  std::ofstream f(path);
  f << "index,from,to,mib,system,steps,cost_bytes,time_median_s,time_min_s,reps,peak_held_bytes,peak_live_bytes,"
       "inout_bytes,mismatches\n";
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (int s = 0; s < nsys; ++s) {
      const result_row& r = rows[i];
      f << i << ",\"" << r.from << "\",\"" << r.to << "\"," << fmt::format("{:.3f}", r.mib) << "," << system_name[s] << ","
        << r.steps[program_of[s]] << "," << r.cost[program_of[s]] << "," << fmt::format("{:.6e}", r.m[s].median_s) << ","
        << fmt::format("{:.6e}", r.m[s].min_s) << "," << r.m[s].reps << "," << r.m[s].peak_held << ","
        << r.m[s].peak_live << "," << r.inout_bytes << "," << r.m[s].mismatches << "\n";
    }
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
      mpi_backend mpi, packing(MPI_COMM_WORLD, {.alltoall_in_place = false, .allgather_in_place = false});
      const bench::workload_set set = bench::exec_workload(o.quick, o.problems);
      std::vector<result_row> rows;
      std::uint64_t bad = 0;
      for (const auto& mw : set.meshes)
        for (const auto& pt : mw.draw()) {
          result_row r;
          r.from = pt.from;
          r.to = pt.to;
          r.mib = static_cast<double>(pt.elements) * 4 / (1 << 20);
          const device_mesh m = parse_mesh(pt.mesh);
          const dist_type a = parse_type(m, pt.from), b = parse_type(m, pt.to);
          r.inout_bytes = std::max(local_size(m, a), local_size(m, b)) * sizeof(float);
          const program progs[nprog] = {synthesize(m, a, b, {.element_bytes = sizeof(float)}),
                                       baselines::xla_program(m, a, b, sizeof(float)),
                                       baselines::naive_program(m, a, b, sizeof(float))};
          time_programs(mpi, packing, progs, o, r.m);
          for (int q = 0; q < nprog; ++q) {
            r.cost[q] = progs[q].cost_bytes();
            r.steps[q] = progs[q].steps.size();
          }
          for (int s = 0; s < nsys; ++s) {
            bad += r.m[s].mismatches;
            if (r.m[s].mismatches && me == 0)
              std::fprintf(stderr, "WRONG DATA (%s) %s %s -> %s: %llu elements\n", system_name[s], pt.mesh.c_str(),
                           pt.from.c_str(), pt.to.c_str(), static_cast<unsigned long long>(r.m[s].mismatches));
          }
          rows.push_back(r);
        }
      if (me == 0) {
        report(rows, o, size);
        if (!o.csv.empty()) write_csv(o.csv, rows);
        fmt::print("\n{} runs checked element by element on every rank: {} wrong elements.\n",
                   rows.size() * nsys * 2, bad);
      }
      rc = bad == 0 ? 0 : 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: mpi_execution: %s\n", me, e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);  // the other ranks may be waiting in a collective
      rc = 1;
    }
  }
  MPI_Finalize();
  return rc;
}
