// examples/weight_sync.cpp -- reinforcement-learning post-training copies the weights from
// the trainer's layout to the inference engine's at every step: a GPT-style state
// (examples/gpt_state.hpp: a 50257-token embedding, L layers of attention and MLP weights,
// biases and norms) from FSDP 4 x TP 2 on 8 ranks to TP 8 on the same ranks, and to TP 4 on
// the other half of the ranks, in one joint plan each (lower/reshard.hpp: one message per
// pair of ranks for all arrays), within a per-rank byte budget, every element checked.
//
//   build/examples/weight_sync [--layers 4] [--dim 256] [--budget-bytes N]
//   mpirun -np 8 build/examples/weight_sync --backend mpi
#include <chrono>
#include <cstdint>
#include <string>

#include <fmt/core.h>

#include "example_support.hpp"
#include "gpt_state.hpp"
#include "redist/lower/reshard.hpp"
#include "redist/runtime/reshard_executor.hpp"
#include "redist/runtime/reshard_tiles.hpp"

namespace {

template <class B>
int sync(B& comm, bool print, const std::string& target, std::uint64_t layers, std::uint64_t dim, std::uint64_t budget) {
  const redist::reshard_problem state = example::gpt_state(layers, dim, target);
  const redist::reshard_plan plan = redist::plan_reshard(state, {.budget_bytes = budget});
  redist::reshard_executor<B> ex(comm, plan);
  redist::reshard_tiles tiles = redist::make_reshard_tiles(ex);  // the trainer's and the engine's weights
  redist::fill_reshard_sources(plan, ex.local_ranks(), tiles);
  const auto t0 = std::chrono::steady_clock::now();
  ex.run(tiles.sources(), tiles.targets());
  const double ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
  const redist::reshard_check check = redist::check_reshard_targets(plan, ex.local_ranks(), tiles);
  std::uint64_t bytes = 0, messages = 0, most = 0, bound = 0;
  for (const redist::reshard_array& a : plan.arrays) bytes += a.bytes();
  for (std::size_t k = 0; k < plan.rounds.size(); ++k) messages += plan.messages(k);
  for (std::uint64_t r = 0; r < plan.world; ++r) {
    most = std::max(most, plan.received_bytes[r]);
    bound = std::max(bound, plan.lower_bound_bytes[r]);
  }
  if (print) {
    fmt::print("{{fsdp: 4, tp: 2}} -> {}: {} arrays, {:.1f} MiB of f32\n", target, plan.arrays.size(),
               static_cast<double>(bytes) / (1 << 20));
    fmt::print("  joint plan: {} arrays in {} round(s) of {} messages, {} by their own plans; most one rank receives "
               "{} B (lower bound {} B); message buffer {} B per rank{}\n",
               plan.count(redist::reshard_route::joint), plan.rounds.size(), messages,
               plan.count(redist::reshard_route::own), most, bound, ex.message_bytes(),
               budget ? fmt::format(" (budget {} B)", budget) : std::string());
    fmt::print("  predicted {:.2f} ms against {:.2f} ms for one call per array; ran in {:.2f} ms here\n",
               plan.seconds * 1e3, plan.separate_seconds * 1e3, ms);
    fmt::print("  checked {} elements on this process: {}\n", check.checked, check.ok() ? "all right" : "WRONG: " + check.first);
  }
  return check.ok() && most == bound && (budget == 0 || ex.message_bytes() <= budget) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t layers = example::option(argc, argv, "--layers", 4);
  const std::uint64_t dim = example::option(argc, argv, "--dim", 256);
  const std::uint64_t budget = example::option(argc, argv, "--budget-bytes", 0);
  return example::with_backend(argc, argv, 8, [&](auto& comm, bool print) {
    int rc = 0;
    for (const char* target : {"{tp: 8}", "{tp: 4} @ [4, 5, 6, 7]"}) rc |= sync(comm, print, target, layers, dim, budget);
    return rc;
  });
}
