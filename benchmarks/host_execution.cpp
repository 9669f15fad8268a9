// benchmarks/host_execution.cpp -- the executor against the physical limit on one machine:
// the host backend (8 simulated devices in this process) on the paper's exec sample.
//
//   host_execution [--quick] [--problems N] [--threads N] [--reps N] [--csv FILE]
//                  [--profile FILE | --calibrate]
//
// For every problem (first the named case, {x: 2, y: 4}, [{x}8192, {y}8192] ->
// [{y,x}8192, 8192], then benchmarks/workload.hpp's exec workload: the paper's draw scaled
// to 8-64 MiB of float32) and for each system, one warm-up run and then --reps timed runs
// (median reported), the systems alternating run by run:
//   before     the executor as it was (benchmarks/baselines/legacy_executor.hpp: two buffers
//              of max(local sizes) per rank, every tile copied in and out, every strided
//              block packed), on the host backend with one thread, as it was; where the
//              program below has a fused step (which came after it), on the paper's program
//              (objective bytes);
//   after/1    runtime/executor.hpp on the host backend with one thread;
//   after      the same with --threads threads (default: the hardware's);
//   exchange   the problem as one exchange (lower/exchange.hpp: every piece copied once,
//              straight from the sender's tile to the receiver's), --threads threads;
//   chosen     after or exchange, whichever the time model predicts faster (the built-in
//              profile, or --profile FILE: e.g. one from `redist calibrate --backend host`,
//              or --calibrate: that calibration, run here first on the 8 devices with
//              --threads threads);
//   memcpy     one std::memcpy of the bytes that must move: every output tile is written, so
//              D x local_size(target) x 4 bytes (the whole array when the target partitions
//              it), between two buffers touched beforehand.
// Peak transient bytes: what an executor holds per rank on top of the caller's tiles
// (peak_bytes_held), over max(local in, local out). Every output is checked element by
// element after the last run; the exit status is 0 iff every element was right.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "baselines/legacy_executor.hpp"
#include "redist/backends/host.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/profile_json.hpp"
#include "redist/runtime/calibrate.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/verify.hpp"
#include "stats.hpp"
#include "workload.hpp"

namespace {

using namespace redist;

struct options {
  bool quick = false;
  std::size_t problems = 50;
  unsigned threads = 0;
  int reps = 5;
  std::string csv;
  time_profile profile = builtin_profile;
  bool calibrate = false;  ///< calibrate the host backend first and choose with that profile
};

struct row {
  std::string mesh, from, to;
  std::size_t steps = 0;
  double mib = 0, move_mib = 0;
  double before = 0, after1 = 0, after = 0, exchange = 0, memcpy_s = 0;  // median seconds
  bool chose_exchange = false;
  [[nodiscard]] double chosen() const { return chose_exchange ? exchange : after; }
  double held_before = 0, held_after = 0, held_exchange = 0;  // peak bytes held / max(in, out)
  std::uint64_t wrong = 0;
};

using bench::geomean;
using bench::median;
template <class F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

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
    else if (a == "--threads") o.threads = static_cast<unsigned>(std::strtoul(value().c_str(), nullptr, 10));
    else if (a == "--reps") o.reps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--csv") o.csv = value();
    else if (a == "--profile") o.profile = profile_from_file(value());
    else if (a == "--calibrate") o.calibrate = true;
    else
      throw redist_error(errc::syntax, "usage: host_execution [--quick] [--problems N] [--threads N] [--reps N] [--csv FILE] "
                                       "[--profile FILE | --calibrate]");
  }
  if (o.quick) o.reps = 1;
  return o;
}

row measure(const std::string& mesh, const std::string& from, const std::string& to, const options& o) {
  row r{mesh, from, to};
  const device_mesh m = parse_mesh(mesh);
  const dist_type a = parse_type(m, from), b = parse_type(m, to);
  const program p = search_program(m, a, b, {.element_bytes = sizeof(float)});  // the collective program (time search)
  const std::uint64_t D = p.devices();
  r.steps = p.steps.size();
  r.mib = static_cast<double>(global_size(a)) * sizeof(float) / (1 << 20);
  const std::uint64_t in_out = std::max(local_size(m, a), local_size(m, b)) * sizeof(float);
  const std::uint64_t move = D * local_size(m, b) * sizeof(float);
  r.move_mib = static_cast<double>(move) / (1 << 20);

  const program xp = exchange_program(m, a, b, sizeof(float));
  r.chose_exchange = predicted_seconds(xp, o.profile) < predicted_seconds(p, o.profile);
  std::vector<darray<float>> in, out[4];
  for (rank_t k = 0; k < D; ++k) {
    in.emplace_back(m, a, k);
    fill_global_index(in.back());
    for (auto& o3 : out) o3.emplace_back(m, b, k);
  }
  host_backend one(D, {.threads = 1}), many(D, {.threads = o.threads});
  // The executor before #13 ran the paper's programs; it has no fused steps (they came
  // after it): where the chosen program has one, it runs the bytes objective's program.
  const bool fused = std::any_of(p.steps.begin(), p.steps.end(), [](const step& s) { return s.fused(); });
  const program paper = fused ? search_program(m, a, b, {.element_bytes = sizeof(float), .goal = objective::bytes}) : p;
  baselines::legacy_executor<float, host_backend> before(one, paper);
  executor<float, host_backend> after1(one, p), after(many, p), xch(many, xp);
  std::vector<char> src(move, 1), dst(move, 0);
  auto run = [&](int s) {
    switch (s) {
      case 0: before.run(in, out[0]); break;
      case 1: after1.run(in, out[1]); break;
      case 2: after.run(in, out[2]); break;
      case 3: xch.run(in, out[3]); break;
      default: std::memcpy(dst.data(), src.data(), move); break;
    }
  };
  std::vector<double> t[5];
  for (int s = 0; s < 5; ++s) run(s);  // warm-up: first touch of every buffer
  for (int k = 0; k < o.reps; ++k)
    for (int q = 0; q < 5; ++q) {
      const int s = (k + q) % 5;
      t[s].push_back(seconds([&] { run(s); }));
    }
  r.before = median(t[0]);
  r.after1 = median(t[1]);
  r.after = median(t[2]);
  r.exchange = median(t[3]);
  r.memcpy_s = median(t[4]);
  r.held_before = static_cast<double>(before.peak_bytes_held()) / static_cast<double>(in_out);
  r.held_after = static_cast<double>(after.peak_bytes_held()) / static_cast<double>(in_out);
  r.held_exchange = static_cast<double>(xch.peak_bytes_held()) / static_cast<double>(in_out);
  for (const auto& o3 : out)
    for (const auto& tile : o3) r.wrong += check_global_index(tile).mismatches;
  if (dst[move / 2] != 1) ++r.wrong;  // the memcpy happened
  return r;
}

void report(const std::vector<row>& rows, const options& o, unsigned threads) {
  fmt::print("### Host backend against memcpy: 8 simulated devices, {} problems ({}), {} copy threads on {} cores\n\n",
             rows.size(), o.quick ? "quick: 64 KiB-1 MiB" : "the issue's case, then the exec sample at 8-64 MiB", threads,
             std::thread::hardware_concurrency());
  fmt::print("Median of {} runs per system after a warm-up, systems alternating run by run. Time over one memcpy of the"
             " bytes that must move (all output tiles); held = bytes an executor holds per rank on top of the caller's"
             " tiles over max(local in, local out).\n\n",
             o.reps);
  auto summary = [&](const char* what, auto pick) {
    std::vector<double> v;
    for (const row& r : rows) v.push_back(pick(r) / r.memcpy_s);
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} |\n", what, geomean(v), median(v), *std::max_element(v.begin(), v.end()));
  };
  fmt::print("| system | time / memcpy: geomean | median | max |\n|---|---:|---:|---:|\n");
  summary("before (copy in, pack, copy out; 1 thread)", [](const row& r) { return r.before; });
  summary("after, 1 thread", [](const row& r) { return r.after1; });
  const std::string n = fmt::format("{} threads", threads);
  summary(("after, " + n).c_str(), [](const row& r) { return r.after; });
  summary(("exchange, " + n).c_str(), [](const row& r) { return r.exchange; });
  summary(fmt::format("**chosen** (after or exchange, profile {}), {}", o.profile.name_view(), n).c_str(),
          [](const row& r) { return r.chosen(); });
  fmt::print("\n| {} threads, time / memcpy geomean by collective program length | problems | after | exchange |"
             " chosen | exchange chosen |\n|---|---:|---:|---:|---:|---:|\n", threads);
  for (std::size_t lo : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
    std::vector<double> v, x, c;
    std::size_t ex = 0;
    for (const row& r : rows)
      if (lo < 3 ? r.steps == lo : r.steps >= lo) {
        v.push_back(r.after / r.memcpy_s);
        x.push_back(r.exchange / r.memcpy_s);
        c.push_back(r.chosen() / r.memcpy_s);
        ex += r.chose_exchange;
      }
    if (v.empty()) continue;
    fmt::print("| {} step{} | {} | {:.2f} | {:.2f} | {:.2f} | {} |\n", lo < 3 ? fmt::format("{}", lo) : "3 or more",
               lo == 1 ? "" : "s", v.size(), geomean(v), geomean(x), geomean(c), ex);
  }
  double hb1 = 0, ha1 = 0, hb = 0, ha = 0, hx = 0;
  std::size_t n1 = 0;
  for (const row& r : rows) {
    hb = std::max(hb, r.held_before);
    ha = std::max(ha, r.held_after);
    hx = std::max(hx, r.held_exchange);
    if (r.steps == 1) {
      ++n1;
      hb1 = std::max(hb1, r.held_before);
      ha1 = std::max(ha1, r.held_after);
    }
  }
  fmt::print("\n| peak transient bytes / max(in, out), max | one-step programs ({}) | all |\n|---|---:|---:|\n", n1);
  fmt::print("| before | {:.2f} | {:.2f} |\n| after | {:.2f} | {:.2f} |\n| exchange | {:.2f} | {:.2f} |\n", hb1, hb, ha1, ha,
             hx, hx);
  fmt::print("\n<details><summary>Per problem (times in ms)</summary>\n\n");
  fmt::print("| # | mesh | source | target | MiB | steps | memcpy | before | after/1 | after | exchange | before/memcpy |"
             " after/memcpy | exchange/memcpy | chosen | held before | held after |\n");
  fmt::print("|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const row& r = rows[i];
    fmt::print("| {} | `{}` | `{}` | `{}` | {:.1f} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |"
               " {:.2f} | {} | {:.2f} | {:.2f} |\n",
               i, r.mesh, r.from, r.to, r.mib, r.steps, r.memcpy_s * 1e3, r.before * 1e3, r.after1 * 1e3, r.after * 1e3,
               r.exchange * 1e3, r.before / r.memcpy_s, r.after / r.memcpy_s, r.exchange / r.memcpy_s,
               r.chose_exchange ? "exchange" : "after", r.held_before, r.held_after);
  }
  fmt::print("\n</details>\n");
}

void write_csv(const std::string& path, const std::vector<row>& rows) {
  std::ofstream f(path);
  f << "index,mesh,from,to,mib,move_mib,steps,memcpy_s,before_s,after1_s,after_s,exchange_s,chosen,held_before,"
       "held_after,wrong\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const row& r = rows[i];
    f << i << ",\"" << r.mesh << "\",\"" << r.from << "\",\"" << r.to << "\"," << r.mib << "," << r.move_mib << ","
      << r.steps << "," << r.memcpy_s << "," << r.before << "," << r.after1 << "," << r.after << "," << r.exchange << ","
      << (r.chose_exchange ? "exchange" : "after") << "," << r.held_before
      << "," << r.held_after << "," << r.wrong << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    options o = parse(argc, argv);
    const unsigned threads = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
    if (o.calibrate) {
      host_backend host(8, {.threads = o.threads});
      calibrate_options co;
      co.name = "host (calibrated here)";
      if (o.quick) co.sizes = {4u << 10, 64u << 10};
      o.profile = redist::calibrate(host, co);
    }
    std::vector<row> rows;
    if (o.quick) rows.push_back(measure("{x: 2, y: 4}", "[{x}512, {y}512]", "[{y,x}512, 512]", o));
    else rows.push_back(measure("{x: 2, y: 4}", "[{x}8192, {y}8192]", "[{y,x}8192, 8192]", o));
    for (const auto& mw : bench::exec_workload(o.quick, o.problems).meshes)
      for (const auto& pt : mw.draw()) rows.push_back(measure(pt.mesh, pt.from, pt.to, o));
    report(rows, o, threads);
    if (!o.csv.empty()) write_csv(o.csv, rows);
    std::uint64_t wrong = 0;
    for (const row& r : rows) wrong += r.wrong;
    fmt::print("\n{} problems, every output tile of every system checked element by element: {} wrong elements.\n",
               rows.size(), wrong);
    return wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "host_execution: %s\n", e.what());
    return 1;
  }
}
