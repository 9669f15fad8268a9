// examples/weight_sync.cpp -- reinforcement-learning post-training copies the weights from
// the trainer's layout to the inference engine's at every step. Three states, each to TP 8 on
// the same 8 ranks, to TP 4 on the other half of the ranks and to two engine replicas of
// TP 4 on the same ranks (`{dp: 2, tp: 4}`, as colocated RL runs vLLM), in one joint plan each
// (lower/reshard.hpp: one message per pair of ranks for all arrays), within a per-rank byte
// budget, every element checked:
//  - a GPT-style state (examples/gpt_state.hpp: a 50257-token embedding, L layers of
//    attention and MLP weights, biases and norms) from FSDP 4 x TP 2;
//  - a Llama-style state (examples/llama_state.hpp: grouped-query attention, Mistral 7B's
//    heads and MLP ratio, then Qwen2.5 3B's 16 query and 2 key and value heads, fewer than the
//    engine's ranks: each key and value head held by several) from torchtitan's FSDP2 x TP
//    layout, given in DTensor placements, into vLLM's fused parameters: every rank's q, k and
//    v tiles written in place into its one qkv_proj tile, the gate's and up's into
//    gate_up_proj (runtime/reshard_tiles.hpp fused_targets), the engine holding nothing else;
//    the trainer's f32 converted to the engine's bf16 on the way (travelling as bf16).
//
//   build/examples/weight_sync [--layers 4] [--dim 256 (a multiple of 64)] [--budget-bytes N]
//   mpirun -np 8 build/examples/weight_sync --backend mpi
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "example_support.hpp"
#include "gpt_state.hpp"
#include "llama_state.hpp"
#include "redist/lower/reshard.hpp"
#include "redist/runtime/reshard_executor.hpp"
#include "redist/runtime/reshard_tiles.hpp"

namespace {

/// Sync `state` to its target layout; `fused`: the engine's parameters that hold several
/// arrays' tiles back to back (the targets of those arrays are their place in them).
template <class B>
int sync(B& comm, bool print, const std::string& title, const redist::reshard_problem& state,
         const std::vector<example::fused_param>& fused, std::uint64_t budget) {
  // One rank of an MPI job plans its own pieces alone (of_rank: the same plan, without the
  // other ranks' pieces); the host backend drives every rank and needs them all.
  redist::reshard_options options{.budget_bytes = budget};
  if (comm.local_ranks().size() == 1 && comm.devices() > 1) options.of_rank = comm.local_ranks()[0];
  const redist::reshard_plan plan = redist::plan_reshard(state, options);
  redist::reshard_executor<B> ex(comm, plan);
  redist::reshard_tiles tiles = redist::make_reshard_tiles(ex);  // the trainer's and the engine's weights
  redist::fill_reshard_sources(plan, ex.local_ranks(), tiles);
  std::vector<std::span<std::byte>> targets = tiles.targets();
  std::vector<std::vector<std::byte>> engine;  // the fused parameters of the ranks here
  const std::size_t A = plan.arrays.size();
  for (std::size_t i = 0; i < ex.local_ranks().size(); ++i)
    for (const example::fused_param& f : fused) {
      const redist::rank_t r = ex.local_ranks()[i];
      std::vector<std::byte>& param = engine.emplace_back(redist::fused_target_bytes(plan, r, f.parts));
      for (const auto& [a, tile] : redist::fused_targets(plan, r, f.parts, param)) {
        targets[i * A + a] = tile;
        tiles.out[i * A + a] = {};  // not needed: the engine holds the fused parameter alone
      }
    }
  const auto t0 = std::chrono::steady_clock::now();
  ex.run(tiles.sources(), targets);
  const double ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
  const redist::reshard_check check = redist::check_reshard_targets(plan, ex.local_ranks(), targets);
  std::uint64_t bytes = 0, messages = 0, most = 0, bound = 0;
  for (const redist::reshard_array& a : plan.arrays) bytes += a.bytes();
  for (std::size_t k = 0; k < plan.rounds.size(); ++k) messages += plan.messages(k);
  for (std::uint64_t r = 0; r < plan.world; ++r) {
    most = std::max(most, plan.received_bytes[r]);
    bound = std::max(bound, plan.lower_bound_bytes[r]);
  }
  if (print) {
    const redist::reshard_array& a0 = plan.arrays[0];
    fmt::print("{}: {} arrays, {:.1f} MiB of {}{}\n", title, plan.arrays.size(), static_cast<double>(bytes) / (1 << 20),
               redist::element_type_name(a0.dtype),
               a0.casts() ? fmt::format(", {} on the engine", redist::element_type_name(a0.target_type())) : "");
    if (!fused.empty())
      fmt::print("  written in place into the engine's {} fused parameters ({} and {}, ...)\n", fused.size(),
                 fused[0].name, fused.size() > 1 ? fused[1].name : "");
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
    for (const char* target : {"{tp: 8}", "{tp: 4} @ [4, 5, 6, 7]", "{dp: 2, tp: 4}"}) {
      rc |= sync(comm, print, fmt::format("GPT-style, {{fsdp: 4, tp: 2}} -> {}", target),
                 example::gpt_state(layers, dim, target), {}, budget);
      // Mistral 7B's heads, then Qwen2.5 3B's: 2 key and value heads, each held by 4 (2) ranks.
      for (const example::llama_heads heads : {example::llama_heads{32, 8}, example::llama_heads{16, 2}}) {
        // The trainer's f32 weights to an engine serving in bf16: each element converted on
        // the way (runtime/cast.hpp), travelling as bf16.
        example::llama_problem llama = example::llama_state(layers, dim, target, heads);
        for (redist::reshard_array& a : llama.problem.arrays) a.target_dtype = redist::element_type::bf16;
        rc |= sync(comm, print,
                   fmt::format("Llama-style ({} query, {} key and value heads), torchtitan {{dp_shard: 4, tp: 2}} f32 -> "
                               "vLLM {} bf16",
                               heads.q, heads.kv, target),
                   llama.problem, llama.fused, budget);
      }
    }
    return rc;
  });
}
