// benchmarks/plan_quality.cpp -- plan quality and synthesis time of redist against the
// xla and naive baselines on the benchmark workloads (benchmarks/workload.hpp).
//
// For every problem: synthesize ours (weak-graph search + lowering, timed), build the
// xla and naive programs, verify all three box by box (tests/support/verify.hpp; the
// baselines with the memory bound lifted to their own peak), then compare costs (bytes
// per device, Fig. 11), peaks over the memory bound (eq. 4), and ours against the
// data-movement lower bound (core/offsets.hpp movement_lower_bound); the exchange (checked,
// lower/exchange.hpp) and the plan the time model chooses (built-in profile) against the
// same bound. Prints Markdown tables; with
// --csv DIR also writes one row per problem to DIR/quality_<workload>.csv.
//
// Usage: plan_quality [--quick] [--workload paper|mixed|scale|all] [--csv DIR] [--reps N]
// Exit status: 0 when every program of every system verified, 1 otherwise (2: usage).
// Nothing is asserted about time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "baselines/naive.hpp"
#include "baselines/xla.hpp"
#include "baselines/xla_2022.hpp"
#include "metrics.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/runtime/program_check.hpp"
#include "support/verify.hpp"
#include "workload.hpp"

namespace {

using namespace redist;
using clock_type = std::chrono::steady_clock;

constexpr int ours = 0, xla = 1, naive = 2, xla2022 = 3;
constexpr const char* system_name[] = {"ours", "xla", "naive", "xla-2022"};

struct row {
  std::string mesh, from, to;
  std::uint64_t elements = 0;
  int dims = 0;
  double synth_ms = 0, xla_ms = 0;
  std::uint64_t cost[4]{}, peak[4]{}, steps[4]{};
  std::uint64_t bound = 0, lb = 0, received = 0;  // elements
  std::uint64_t least_received = 0;               // over lowered weak paths, 0: not computed
  std::uint64_t bytes = 4;
  baselines::xla_rule top = baselines::xla_rule::identity;
  bool xla_full = false;
  bool exchange = false;           // the time model (built-in profile) chose the exchange
  std::uint64_t chosen_received = 0;  // elements a rank receives in the chosen plan
  std::string xla_text;  // describe() of the xla program (kept for reports of xla wins)
  std::string ours_text;
};

struct failure {
  std::string system, problem, message;
};

/// The fewest elements a rank receives in any program the lowering makes from a weak
/// path of at most twice the weak optimum's cost and two more steps (at most 5000 paths),
/// whatever its Fig. 11 cost: how close programs of these collectives come to the
/// data-movement lower bound. `ours` is the synthesized program's.
std::uint64_t least_received_lowered(const device_mesh& m, const dist_type& a, const dist_type& b, std::uint64_t ours) {
  const weak_problem wp = make_weak_problem(m, a, b, search_options{1.0, objective::bytes}).get();
  const weak_plan plan = search_bgl(wp);
  std::uint64_t least = ours;
  near_paths(wp, 2 * plan.total.cost, 0, plan.steps.size() + 2, 5000, 2000000,
             [&](const std::vector<weak_step>& path, std::uint64_t) {
               const result<program> r = lower_path(m, a, b, wp, path, 4);
               if (r.ok()) least = std::min(least, r.value.received_elements());
               return true;
             });
  return least;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
double quantile(std::vector<double> v, double q) {  // nearest rank
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}
double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}
double maximum(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

/// Cost ratios other/ours (0/0 counts as 1; x/0 with x > 0 is counted apart as `free`).
struct ratio_stats {
  std::vector<double> r;
  std::size_t free = 0;  // ours costs nothing, the other does
  std::size_t ours_cheaper = 0, equal = 0, other_cheaper = 0, above5 = 0;
};

ratio_stats ratios(const std::vector<row>& rows, int other) {
  ratio_stats s;
  for (const row& x : rows) {
    const std::uint64_t a = x.cost[ours], b = x.cost[other];
    if (a < b) ++s.ours_cheaper;
    else if (a == b) ++s.equal;
    else ++s.other_cheaper;
    if (a == 0) {
      if (b == 0) s.r.push_back(1.0);
      else ++s.free;
      continue;
    }
    const double q = static_cast<double>(b) / static_cast<double>(a);
    s.r.push_back(q);
    s.above5 += q > 5.0;
  }
  return s;
}

std::string csv_quote(const std::string& s) { return "\"" + s + "\""; }

struct options {
  bool quick = false;
  std::string workload = "all";
  std::string csv_dir;
  int reps = 3;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "plan_quality: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--quick") o.quick = true;
    else if (a == "--workload") o.workload = value();
    else if (a == "--csv") o.csv_dir = value();
    else if (a == "--reps") o.reps = std::max(1, std::atoi(value().c_str()));
    else {
      std::fprintf(stderr, "usage: plan_quality [--quick] [--workload paper|mixed|scale|all] [--csv DIR] [--reps N]\n");
      std::exit(2);
    }
  }
  if (o.workload != "all" && o.workload != "paper" && o.workload != "mixed" && o.workload != "scale") {
    std::fprintf(stderr, "plan_quality: --workload: unknown workload '%s' (paper, mixed, scale, all)\n", o.workload.c_str());
    std::exit(2);
  }
  return o;
}

/// Run one problem; failures are appended to `fails`.
row run_problem(const bench::mesh_workload& mw, const testing::problem_text& pt, int reps, std::vector<failure>& fails) {
  row x;
  x.mesh = mw.mesh;
  x.from = pt.from;
  x.to = pt.to;
  x.elements = pt.elements;
  const device_mesh m = parse_mesh(pt.mesh);
  const dist_type a = parse_type(m, pt.from), b = parse_type(m, pt.to);
  x.dims = a.rank;
  const std::string what = pt.mesh + " " + pt.from + " -> " + pt.to;

  // Ours, timed: search + lowering (parsing excluded); best of `reps` runs.
  program prog[4];
  double best = 1e300;
  for (int k = 0; k < reps; ++k) {
    const auto t0 = clock_type::now();
    weak_problem wp = make_weak_problem(m, a, b, search_options{1.0, objective::bytes}).get();  // the paper's search
    weak_plan plan = search_bgl(wp);
    prog[ours] = lower(m, a, b, wp, plan, x.bytes).get();
    best = std::min(best, std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
  }
  x.synth_ms = best;
  {
    const auto t0 = clock_type::now();
    weak_problem wp = make_weak_problem(m, a, b).get();
    baselines::xla_plan xp = baselines::xla_path(m, a, b, wp);
    prog[xla] = baselines::xla_plan_program(m, a, b, wp, xp, x.bytes);
    x.xla_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    x.top = xp.top;
    x.xla_full = xp.contains(baselines::xla_rule::full_rematerialization);
  }
  prog[naive] = baselines::naive_program(m, a, b, x.bytes);
  prog[xla2022] = baselines::xla_2022_program(m, a, b, x.bytes);

  for (int s = 0; s < 4; ++s) {
    const testing::verify_result v = s == ours ? testing::verify(prog[s]) : bench::verify_ignoring_bound(prog[s]);
    if (!v.ok) fails.push_back({system_name[s], what, v.message});
    x.cost[s] = prog[s].cost_bytes();
    x.peak[s] = prog[s].peak_local_elements;
    x.steps[s] = prog[s].steps.size();
  }
  if (!prog[ours].memory_efficient()) fails.push_back({"ours", what, "the program exceeds the memory bound"});
  x.bound = prog[ours].memory_bound_elements;
  x.lb = movement_lower_bound(m, a, b);
  x.received = prog[ours].received_elements();
  if (m.devices <= 64) x.least_received = least_received_lowered(m, a, b, x.received);
  // The chosen plan: synthesize's default, the time objective's collective program or the
  // exchange, whichever the built-in profile predicts faster.
  const program chosen = synthesize(m, a, b, synth_options{x.bytes});
  if (const testing::verify_result v = testing::verify(chosen); !v.ok) fails.push_back({"chosen", what, v.message});
  x.chosen_received = run_received_elements(chosen);
  x.exchange = chosen.count(op::exchange) > 0;
  if (a.nsum == 0 && b.nsum == 0) {
    const program ex = exchange_program(m, a, b, x.bytes);
    if (const std::string e = detail::check_program(ex).error; !e.empty()) fails.push_back({"exchange", what, e});
    if (ex.received_elements() != x.lb) fails.push_back({"exchange", what, "receives more than the lower bound"});
    if (!ex.memory_efficient()) fails.push_back({"exchange", what, "the exchange exceeds the memory bound"});
  }
  x.ours_text = testing::describe(prog[ours]);
  x.xla_text = testing::describe(prog[xla]);
  return x;
}

void write_csv(const std::string& path, const std::string& workload, const std::vector<row>& rows) {
  std::ofstream f(path);
  f << "workload,mesh,index,dims,elements,from,to,ours_cost,xla_cost,naive_cost,ours_peak,xla_peak,naive_peak,bound,"
       "lower_bound,ours_received,synth_ms,xla_ms,xla_rule,xla_full,ours_steps,xla_steps,naive_steps\n";
  std::size_t i = 0;
  for (const row& x : rows) {
    f << workload << "," << csv_quote(x.mesh) << "," << i++ << "," << x.dims << "," << x.elements << "," << csv_quote(x.from)
      << "," << csv_quote(x.to) << "," << x.cost[ours] << "," << x.cost[xla] << "," << x.cost[naive] << "," << x.peak[ours]
      << "," << x.peak[xla] << "," << x.peak[naive] << "," << x.bound << "," << x.lb * x.bytes << ","
      << x.received * x.bytes << "," << fmt::format("{:.4f}", x.synth_ms) << "," << fmt::format("{:.4f}", x.xla_ms) << ","
      << baselines::xla_rule_name(x.top) << "," << (x.xla_full ? 1 : 0) << "," << x.steps[ours] << "," << x.steps[xla]
      << "," << x.steps[naive] << "\n";
  }
}

struct group {
  std::string label;  // workload or workload/mesh
  std::vector<row> rows;
};

std::string fmt_ratio(double v) { return fmt::format("{:.3f}", v); }

void print_tables(const std::vector<group>& groups) {
  fmt::print("### Plan quality: cost in bytes per device (Fig. 11), ratios baseline/ours\n\n");
  fmt::print("| workload | problems | xla/ours geomean | median | max | > 5x | ours cheaper | equal | xla cheaper |"
             " naive/ours geomean | median | max | naive cheaper |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::vector<std::string> notes;
  for (const group& g : groups) {
    const ratio_stats sx = ratios(g.rows, xla), sn = ratios(g.rows, naive);
    fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", g.label, g.rows.size(),
               fmt_ratio(geomean(sx.r)), fmt_ratio(median(sx.r)), fmt_ratio(maximum(sx.r)), sx.above5, sx.ours_cheaper,
               sx.equal, sx.other_cheaper, fmt_ratio(geomean(sn.r)), fmt_ratio(median(sn.r)), fmt_ratio(maximum(sn.r)),
               sn.other_cheaper);
    if (sx.free || sn.free) notes.push_back(fmt::format("{}: xla {}, naive {}", g.label, sx.free, sn.free));
  }
  if (!notes.empty()) {
    fmt::print("\nNot in the ratios (ours costs 0, the baseline does not):");
    for (std::size_t i = 0; i < notes.size(); ++i) fmt::print("{} {}", i ? ";" : "", notes[i]);
    fmt::print(".\n");
  }

  fmt::print("\n### Today's XLA and the XLA the paper measured (xla-2022), side by side: cost ratios baseline/ours\n\n");
  fmt::print("| workload | problems | xla/ours geomean | max | xla cheaper | xla-2022/ours geomean | max | > 5x |"
             " xla-2022 cheaper | xla-2022/xla geomean |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const group& g : groups) {
    const ratio_stats sx = ratios(g.rows, xla), s22 = ratios(g.rows, xla2022);
    std::vector<double> gen;  // xla-2022 over today's xla, where today's moves anything
    for (const row& x : g.rows)
      if (x.cost[xla] > 0) gen.push_back(static_cast<double>(x.cost[xla2022]) / static_cast<double>(x.cost[xla]));
    fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", g.label, g.rows.size(), fmt_ratio(geomean(sx.r)),
               fmt_ratio(maximum(sx.r)), sx.other_cheaper, fmt_ratio(geomean(s22.r)), fmt_ratio(maximum(s22.r)),
               s22.above5, s22.other_cheaper, fmt_ratio(geomean(gen)));
  }

  fmt::print("\n### Memory: peak local size over the memory bound max(local in, local out) (eq. 4)\n\n");
  fmt::print("| workload | ours max | ours over bound | xla max | xla geomean | xla over bound | naive max | naive geomean |"
             " naive over bound |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const group& g : groups) {
    std::vector<double> q[3];
    std::size_t over[3]{};
    for (const row& x : g.rows)
      for (int s = 0; s < 3; ++s) {
        const double v = static_cast<double>(x.peak[s]) / static_cast<double>(x.bound);
        q[s].push_back(v);
        over[s] += x.peak[s] > x.bound;
      }
    fmt::print("| {} | {:.2f} | {} | {:.2f} | {:.2f} | {} | {:.2f} | {:.2f} | {} |\n", g.label, maximum(q[ours]), over[ours],
               maximum(q[xla]), geomean(q[xla]), over[xla], maximum(q[naive]), geomean(q[naive]), over[naive]);
  }

  fmt::print("\n### Ours against the data-movement lower bound (max over ranks of target tile minus its overlap with"
             " the source tile)\n\n");
  fmt::print("| workload | problems with bound > 0 | cost/bound geomean | max | received/bound geomean | max |"
             " received == bound | bound = 0 (ours cost 0) | least received over lowered paths / bound |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const group& g : groups) {
    std::vector<double> c, r, least;
    std::size_t zero = 0, zero_ok = 0, exact = 0;
    for (const row& x : g.rows) {
      if (x.lb == 0) {
        ++zero;
        zero_ok += x.cost[ours] == 0;
        continue;
      }
      c.push_back(static_cast<double>(x.cost[ours]) / static_cast<double>(x.lb * x.bytes));
      r.push_back(static_cast<double>(x.received) / static_cast<double>(x.lb));
      exact += x.received == x.lb;
      if (x.least_received) least.push_back(static_cast<double>(x.least_received) / static_cast<double>(x.lb));
    }
    fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} |\n", g.label, c.size(), fmt_ratio(geomean(c)),
               fmt_ratio(maximum(c)), fmt_ratio(geomean(r)), fmt_ratio(maximum(r)), exact, zero, zero_ok,
               least.size() == c.size() ? fmt_ratio(geomean(least)) : std::string("-"));
  }

  fmt::print("\n### Chosen plans against the data-movement lower bound: the collective program or the exchange,"
             " whichever the time model predicts faster (built-in profile)\n\n");
  fmt::print("| workload | problems with bound > 0 | exchange chosen | received/bound geomean, all | max |"
             " where the exchange is chosen | where the collective program is chosen |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|\n");
  for (const group& g : groups) {
    std::vector<double> all, ex, co;
    for (const row& x : g.rows) {
      if (x.lb == 0) continue;
      const double q = static_cast<double>(x.chosen_received) / static_cast<double>(x.lb);
      all.push_back(q);
      (x.exchange ? ex : co).push_back(q);
    }
    fmt::print("| {} | {} | {} | {} | {} | {} | {} |\n", g.label, all.size(), ex.size(), fmt_ratio(geomean(all)),
               fmt_ratio(maximum(all)), ex.empty() ? std::string("-") : fmt_ratio(geomean(ex)),
               co.empty() ? std::string("-") : fmt_ratio(geomean(co)));
  }

  fmt::print("\n### Synthesis time per problem, ms (search + lowering, best of the repetitions)\n\n");
  fmt::print("| workload | problems | p50 | p99 | max | xla baseline p50 |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|\n");
  for (const group& g : groups) {
    std::vector<double> t, tx;
    for (const row& x : g.rows) {
      t.push_back(x.synth_ms);
      tx.push_back(x.xla_ms);
    }
    fmt::print("| {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} |\n", g.label, g.rows.size(), median(t), quantile(t, 0.99),
               maximum(t), median(tx));
  }

  fmt::print("\n### The xla baseline: outermost ReshardNoCache pattern per problem\n\n");
  std::vector<baselines::xla_rule> rules;
  for (int r = 0; r <= static_cast<int>(baselines::xla_rule::slice_from_replicated); ++r)
    rules.push_back(static_cast<baselines::xla_rule>(r));
  fmt::print("| workload |");
  for (auto r : rules) fmt::print(" {} |", baselines::xla_rule_name(r));
  fmt::print(" any full rematerialization |\n|---|");
  for (std::size_t i = 0; i <= rules.size(); ++i) fmt::print("---:|");
  fmt::print("\n");
  for (const group& g : groups) {
    std::map<baselines::xla_rule, std::size_t> n;
    std::size_t full = 0;
    for (const row& x : g.rows) {
      ++n[x.top];
      full += x.xla_full;
    }
    fmt::print("| {} |", g.label);
    for (auto r : rules) fmt::print(" {} |", n[r]);
    fmt::print(" {} |\n", full);
  }

  for (const group& g : groups) {
    std::size_t shown = 0;
    for (const row& x : g.rows) {
      if (x.cost[xla] >= x.cost[ours]) continue;
      if (shown++ == 0) fmt::print("\n### {}: problems where xla is cheaper than ours\n\n", g.label);
      if (shown > 20) continue;
      fmt::print("- ours: {}\n  xla:  {}\n", x.ours_text, x.xla_text);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  std::vector<bench::workload_set> sets;
  if (o.workload == "all" || o.workload == "paper") sets.push_back(bench::paper_workload(o.quick));
  if (o.workload == "all" || o.workload == "mixed") sets.push_back(bench::mixed_workload(o.quick));
  if (o.workload == "all" || o.workload == "scale") sets.push_back(bench::scale_workload(o.quick));

  std::vector<failure> fails;
  std::vector<group> groups;
  std::size_t programs = 0;
  try {
    for (const auto& set : sets) {
      std::vector<row> all;
      for (const auto& mw : set.meshes) {
        group g{set.name + " " + mw.mesh, {}};
        for (const auto& pt : mw.draw()) g.rows.push_back(run_problem(mw, pt, o.reps, fails));
        programs += 3 * g.rows.size();
        all.insert(all.end(), g.rows.begin(), g.rows.end());
        groups.push_back(std::move(g));
      }
      if (set.meshes.size() > 1) groups.push_back({set.name + " (all meshes)", all});
      if (!o.csv_dir.empty()) write_csv(o.csv_dir + "/quality_" + set.name + ".csv", set.name, all);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plan_quality: %s\n", e.what());
    return 1;
  }
  print_tables(groups);
  fmt::print("\n{} programs verified box by box, {} failed.\n", programs, fails.size());
  for (const failure& f : fails) std::fprintf(stderr, "INVALID (%s) %s: %s\n", f.system.c_str(), f.problem.c_str(), f.message.c_str());
  return fails.empty() ? 0 : 1;
}
