// tests/fuzz/reshard_manifest_fuzzer.cpp -- read_reshard_manifest (redist-reshard/1) on
// arbitrary bytes; for a manifest it accepts that is small enough, the joint plan under
// its budget, then with rounds two at a time (pipeline on) and as one call per array:
// each plan must pass the independent check of its pieces, its lower bound and its budget
// (tests/support/reshard_problems.hpp check_reshard_plan), print as JSON, and run on the
// host backend with every target element right and no source written
// (tests/support/reshard_run.hpp). A refusal is a redist_error with a message; the one
// a run may give (an own program whose buffers exceed the budget) too.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "redist/reshard_json.hpp"
#include "support/reshard_problems.hpp"
#include "support/reshard_run.hpp"

namespace {

/// Whether the problem is small enough to plan and run many times a second: at most 8
/// arrays of at most 4096 elements, on worlds of at most 16 ranks.
bool small_enough(const redist::reshard_problem& pr) {
  constexpr std::uint64_t max_world = 16, max_elements = 4096;
  if (pr.arrays.size() > 8 || pr.world > max_world) return false;
  for (const redist::reshard_array& a : pr.arrays) {
    if (redist::layout_world(a.source) > max_world || redist::layout_world(a.target) > max_world) return false;
    std::uint64_t n = 1;
    for (std::uint64_t g : redist::layout_shape(a.source))
      if (g > max_elements || (n *= g) > max_elements) return false;
  }
  return true;
}

/// Plan with `o`, check the plan, print it and run it.
void plan_check_run(const redist::reshard_problem& pr, const redist::reshard_options& o) {
  using namespace redist;
  fuzz::refused_cleanly_or_ran([&] {
    const reshard_plan p = plan_reshard(pr, o);
    if (const std::string e = testing::check_reshard_plan(p, o.budget_bytes); !e.empty())
      fuzz::finding("a joint plan fails its check: " + e);
    if (reshard_plan_to_json(p).empty()) fuzz::finding("an empty plan JSON");
    if (const std::string e = testing::run_reshard_on_host(p); !e.empty())
      fuzz::finding("a joint plan ran wrong on the host backend: " + e);
  });
}

}  // namespace

int redist::fuzz::harness_reshard_manifest(const std::uint8_t* data, std::size_t size) {
  using namespace redist;
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  reshard_manifest m;
  if (!fuzz::refused_cleanly_or_ran([&] { m = read_reshard_manifest(s); }) || !small_enough(m.problem)) return 0;
  plan_check_run(m.problem, {.budget_bytes = m.budget_bytes});
  if (m.budget_bytes > 0) plan_check_run(m.problem, {.budget_bytes = m.budget_bytes, .pipeline = reshard_pipeline::on});
  plan_check_run(m.problem, {.budget_bytes = m.budget_bytes, .joint = false});
  return 0;
}
