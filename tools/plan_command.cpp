// tools/plan_command.cpp -- `redist plan`: synthesize the program of a redistribution and
// print it (a table by default, the JSON of DESIGN.md section 4 with --json).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "redist/core/error.hpp"
#include "redist/format.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/program_json.hpp"
#include "redist/search/weak_graph.hpp"

namespace redist::tools {

namespace {

struct plan_options {
  problem_options problem;
  bool json = false;
  double budget = 1.0;
  std::string baseline;
};

void run_plan(const plan_options& o) {
  const problem pr = parse_problem(o.problem);
  program prog;
  if (!o.baseline.empty()) {
    for (const baseline& b : baselines())
      if (b.name == o.baseline) prog = b.make(pr.m, pr.from, pr.to, pr.bytes);
  } else {
    // The budget is the only input left unchecked; check it before searching.
    for_option("--budget", [&] { return make_weak_problem(pr.m, pr.from, pr.to, search_options{o.budget}).get(); });
    prog = synthesize(pr.m, pr.from, pr.to, synth_options{pr.bytes, o.budget});
  }
  std::uint64_t cost_bytes = 0;
  if (!detail::mul_ok(prog.cost_elements, prog.element_bytes, cost_bytes))
    throw input_error("--bytes", "the cost in bytes (" + std::to_string(prog.cost_elements) + " elements of " +
                                     std::to_string(prog.element_bytes) + " bytes) does not fit in 64 bits");
  if (o.json) fmt::print("{}\n", program_json_text(prog));
  else fmt::print("{}\n", prog);
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto opts = std::make_shared<plan_options>();
  CLI::App* cmd = app.add_subcommand("plan", "synthesize and print the program of a redistribution");
  add_problem_options(*cmd, opts->problem);
  cmd->add_flag("--json", opts->json, "print the program as JSON (format redist-program/1)");
  CLI::Option* budget =
      cmd->add_option("--budget", opts->budget,
                      "memory budget: intermediates may hold this factor times max(local source, local target)")
          ->capture_default_str();
  std::vector<std::string> names;
  for (const baseline& b : baselines()) names.emplace_back(b.name);
  cmd->add_option("--baseline", opts->baseline, "print a baseline's program instead of the synthesized one")
      ->check(CLI::IsMember(names))
      ->excludes(budget);
  cmd->callback([opts] { run_plan(*opts); });
}

}  // namespace redist::tools
