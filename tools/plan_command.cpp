// tools/plan_command.cpp -- `redist plan`: synthesize the program of a redistribution and
// print it (a table by default, the JSON of DESIGN.md section 4 with --json); with
// --notation jax|dtensor also the types of the program in that notation; with --svg FILE
// also draw it (redist/draw.hpp plan_svg: one panel per state).
//
// It prints what synthesize returns (lower/synthesize.hpp): by default the search minimizes
// predicted time under the built-in profile, or under --profile FILE (a time profile from
// `redist calibrate`), and the program of least predicted time among its collective program
// and the single exchange is printed (choose_plan). --objective bytes prints the paper's
// fewest-bytes collective program instead, chosen against the exchange only with --profile
// or on uneven types. --explain prints both candidates' predicted times and the reason of
// the choice; after the table, or on stderr with --json (stdout stays exactly one JSON
// program).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli.hpp"
#include "commands.hpp"
#include "redist/core/error.hpp"
#include "redist/draw.hpp"
#include "redist/format.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/profile_json.hpp"
#include "redist/program_json.hpp"
#include "redist/search/weak_graph.hpp"

namespace redist::tools {

namespace {

struct plan_options {
  problem_options problem;
  planning_options planning;
  bool json = false;
  std::string baseline;
  std::string svg;                  ///< file to draw the program into
  std::string notation = "redist";  ///< notation of the extra type lines
  bool explain = false;
};

std::string byte_text(std::uint64_t b) {
  if (b < 10 * 1024) return fmt::format("{} B", b);
  if (b < 1024ull * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1024.0 * 1024.0));
}

/// --explain: the candidates with their predicted times and the reason of the choice.
std::string explain_text(const plan_choice& c, const time_profile& P, bool chosen_printed) {
  std::string out = fmt::format("time model: profile {}{}\n", P.name_view(),
                                P.devices ? fmt::format(" (measured on {} ranks)", P.devices) : std::string());
  std::size_t width = 10;  // the names' column
  for (const plan_candidate& k : c.candidates) width = std::max(width, k.name.size());
  for (std::size_t i = 0; i < c.candidates.size(); ++i) {
    const plan_candidate& k = c.candidates[i];
    const std::uint64_t bytes = run_received_elements(k.prog) * k.prog.element_bytes;  // what a run receives
    std::string what;
    if (k.name == "exchange" && k.prog.count(op::exchange) == 1) {
      std::size_t at = 0;  // the exchange (after an allreduce of sums, before a partial step)
      while (k.prog.steps[at].kind != op::exchange) ++at;
      const exchange_plan x = plan_exchange(k.prog, at, plan_detail::sizes);
      const std::size_t n = k.prog.steps.size();
      what = fmt::format("{} step{}, {} peers, {} received per rank", n, n > 1 ? "s" : "", x.messages, byte_text(bytes));
    } else {
      what = fmt::format("{} step{}, {} received per rank", k.prog.steps.size(), k.prog.steps.size() == 1 ? "" : "s",
                         byte_text(bytes));
    }
    const std::string t = k.seconds < 1e-3 ? fmt::format("{:.2f} us", k.seconds * 1e6)
                                           : fmt::format("{:.3f} ms", k.seconds * 1e3);
    out += fmt::format("  {} {:<{}}  {:<44}  predicted {}\n", i == c.chosen ? '*' : ' ', k.name, width, what, t);
  }
  out += fmt::format("reason: {}\n", c.reason);
  if (!chosen_printed && c.candidates.size() > 1)
    out += "printed: the collective program of the search (--objective bytes without --profile; --profile FILE or "
           "built-in chooses by time)\n";
  return out;
}

/// The program's types (source, after each step, target) in a notation, one line each.
std::string types_in_notation(const program& prog, const std::string& notation) {
  std::string out = fmt::format("types as {}:\n", notation_title(notation));
  const placed_mesh src = prog.source_placement(), dst = prog.target_placement();
  const std::string boxes = "(a box layout: no type says it)";
  out += fmt::format("  source  {}\n", prog.boxed_source() ? boxes : type_in(src, prog.source, notation));
  for (std::size_t i = 0; i < prog.steps.size(); ++i) {
    const step& s = prog.steps[i];
    const placed_mesh& on = s.on_target && prog.two_meshes ? dst : src;
    if (s.type_exact) out += fmt::format("  step {}  {}\n", i + 1, type_in(on, s.type_after, notation));
    else if (s.type_after.rank == 0 && i + 1 == prog.steps.size() && prog.boxed_target()) out += fmt::format("  step {}  {}\n", i + 1, boxes);
    else out += fmt::format("  step {}  (a type up to a device permutation)\n", i + 1);
  }
  return out + fmt::format("  target  {}\n", prog.boxed_target() ? boxes : type_in(dst, prog.target, notation));
}

void run_plan(const plan_options& o) {
  const problem pr = parse_problem(o.problem);
  program prog;
  std::string explained;
  if (!o.baseline.empty()) {
    prog = baseline_program(o.baseline, pr);
  } else {
    const planning pl = parse_planning(o.planning);  // the only inputs left unchecked
    const synth_options so = pl.options(pr.bytes);
    const bool between = pr.placed() || pl.relabel;  // lower/between.hpp: always by time
    if (!o.explain) {
      prog = program_for(pr, pl);
    } else {
      plan_choice c = choose_for(pr, pl);
      const bool by_time = between || chooses_by_time(pr.m, pr.from, pr.to, so);  // as synthesize
      explained = explain_text(c, pl.profile, by_time);
      prog = std::move(c.candidates[by_time ? c.chosen : 0].prog);
    }
    if (pl.relabel && !o.json) {
      const std::vector<rank_t>& d = prog.two_meshes ? prog.target_devices : prog.source_devices;
      explained = fmt::format("relabelled: the target mesh's positions on ranks [{}]\n",
                              fmt::join(detail::rank_list_of(d, prog.target_mesh().devices), ", ")) +
                  explained;
    }
  }
  std::uint64_t cost_bytes = 0;
  if (!detail::mul_ok(prog.cost_elements, prog.element_bytes, cost_bytes))
    throw input_error("--bytes", "the cost in bytes (" + std::to_string(prog.cost_elements) + " elements of " +
                                     std::to_string(prog.element_bytes) + " bytes) does not fit in 64 bits");
  if (!o.svg.empty()) write_file("--svg", o.svg, plan_svg(prog));  // first: a failure prints nothing
  if (o.json) fmt::print("{}\n", program_json_text(prog));
  else fmt::print("{}\n", prog);
  if (!o.json && o.notation != "redist") fmt::print("{}", types_in_notation(prog, o.notation));
  if (!explained.empty()) {
    if (o.json) fmt::print(stderr, "{}", explained);
    else fmt::print("\n{}", explained);
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto opts = std::make_shared<plan_options>();
  CLI::App* cmd = app.add_subcommand("plan", "synthesize and print the program of a redistribution");
  add_problem_options(*cmd, opts->problem);
  cmd->add_flag("--json", opts->json,
                "print the program as JSON (format redist-program/1; redist-program/2 on device sets)");
  add_planning_options(*cmd, opts->planning);
  std::vector<std::string> names;
  for (const baseline& b : baselines()) names.emplace_back(b.name);
  CLI::Option* baseline =
      cmd->add_option("--baseline", opts->baseline, "print a baseline's program instead of the synthesized one")
          ->check(CLI::IsMember(names))
          ->excludes(opts->planning.budget_opt)
          ->excludes(opts->planning.objective_opt)
          ->excludes(opts->planning.profile_opt);
  cmd->add_flag("--explain", opts->explain,
                "print both candidates' predicted times and why one is chosen (stderr with --json)")
      ->excludes(baseline);
  cmd->add_option("--svg", opts->svg, "also draw the program into this SVG file: one panel per state")
      ->type_name("FILE");
  CLI::Option* json = cmd->get_option("--json");
  cmd->add_option("--notation", opts->notation, "also print the program's types in this notation")
      ->check(CLI::IsMember(notation_names()))
      ->excludes(json)
      ->capture_default_str();
  cmd->callback([opts] { run_plan(*opts); });
}

}  // namespace redist::tools
