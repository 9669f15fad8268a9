// examples/llama_state.hpp -- a Llama-style model state as a reshard problem (lower/reshard.hpp)
// into an inference engine's fused parameters: the trainer's weights as torchtitan lays them
// out (FSDP2 over tensor parallelism on `{dp_shard: 4, tp: 2}`, ranks 0-7, given in DTensor
// placements), to vLLM's tensor-parallel layout on `target_mesh` (`{tp: 8}` on the same ranks
// or `{tp: 4} @ [4, 5, 6, 7]`), where q, k and v land in one qkv_proj tile per rank and the
// MLP's gate and up projections in one gate_up_proj tile (runtime/reshard_tiles.hpp
// fused_targets). Grouped-query attention with Mistral 7B's heads (32 query heads, 8 key and
// value heads) and MLP ratio (14336 / 4096); `dim` 4096, 32 layers and vocabulary 32000 are
// Mistral 7B's shapes. Used by the weight-sync example.
//
//   weight [rows, cols]            trainer (DTensor on dp_shard x tp)           engine (vLLM, tp)
//   tok_embeddings, output [V, D]  [_StridedShard(0, split_factor=2), Shard(0)]  [{tp}V, D]
//   wq [D, D], wk, wv [D/4, D]     the same (colwise)                           [{tp}.., D], fused: qkv_proj
//   w1, w3 [I, D] (gate, up)       the same (colwise)                           [{tp}I, D], fused: gate_up_proj
//   wo [D, D], w2 [D, I]           [Shard(0), Shard(1)] (rowwise)               [D, {tp}..]
//   norms [D]                      [Shard(0), Replicate()]                      replicated
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "redist/core/dtensor.hpp"
#include "redist/core/element_type.hpp"
#include "redist/core/placement.hpp"
#include "redist/lower/reshard.hpp"

namespace example {

/// An engine parameter that holds several arrays' target tiles back to back.
struct fused_param {
  std::string name;                 ///< vLLM's name, e.g. "layers.0.self_attn.qkv_proj.weight"
  std::vector<std::string> parts;   ///< the arrays, in the order the engine stacks them
  std::vector<std::size_t> arrays;  ///< their indices in the problem
};

struct llama_problem {
  redist::reshard_problem problem;
  std::vector<fused_param> fused;
};

inline llama_problem llama_state(std::uint64_t layers, std::uint64_t dim, const std::string& target_mesh,
                                 redist::element_type dtype = redist::element_type::f32, std::uint64_t vocab = 32000) {
  using namespace redist;
  if (dim == 0 || dim % 32 != 0) throw std::invalid_argument("llama_state: dim must be a multiple of 32");
  const placed_mesh train = parse_placed_mesh("{dp_shard: 4, tp: 2}");
  const placed_mesh infer = parse_placed_mesh(target_mesh);
  const std::uint64_t D = dim, KV = dim / 4, I = dim / 2 * 7;
  llama_problem s;
  s.problem.world = 8;
  auto add = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols, const char* from, const char* to) {
    std::vector<std::uint64_t> shape{rows};
    if (cols) shape.push_back(cols);
    std::string type = "[" + std::string(to) + std::to_string(rows);
    if (cols) type += std::string(", ") + (to[0] ? "" : "{tp}") + std::to_string(cols);
    type += "]";
    reshard_array a;
    a.name = name;
    a.dtype = dtype;
    a.source = placed_layout{train, from_dtensor(train.mesh, shape, from)};
    a.target = placed_layout{infer, parse_type(infer.mesh, type)};
    s.problem.arrays.push_back(std::move(a));
  };
  // from: the trainer's placements; to: "{tp}" where the engine splits the rows, "" where it
  // splits the columns (a matrix) or replicates (a vector).
  const char* colwise = "[_StridedShard(0, split_factor=2), Shard(0)]";
  const char* rowwise = "[Shard(0), Shard(1)]";
  const char* norm = "[Shard(0), Replicate()]";
  auto fuse = [&](const std::string& name, const std::vector<std::string>& parts) {
    fused_param f{name, parts, {}};
    for (const std::string& p : parts)
      for (std::size_t a = 0; a < s.problem.arrays.size(); ++a)
        if (s.problem.arrays[a].name == p) f.arrays.push_back(a);
    s.fused.push_back(std::move(f));
  };
  add("tok_embeddings.weight", vocab, D, colwise, "{tp}");
  for (std::uint64_t l = 0; l < layers; ++l) {
    const std::string h = "layers." + std::to_string(l) + ".";
    add(h + "attention_norm.weight", D, 0, norm, "");
    add(h + "attention.wq.weight", D, D, colwise, "{tp}");
    add(h + "attention.wk.weight", KV, D, colwise, "{tp}");
    add(h + "attention.wv.weight", KV, D, colwise, "{tp}");
    add(h + "attention.wo.weight", D, D, rowwise, "");
    add(h + "ffn_norm.weight", D, 0, norm, "");
    add(h + "feed_forward.w1.weight", I, D, colwise, "{tp}");
    add(h + "feed_forward.w3.weight", I, D, colwise, "{tp}");
    add(h + "feed_forward.w2.weight", D, I, rowwise, "");
    fuse(h + "self_attn.qkv_proj.weight", {h + "attention.wq.weight", h + "attention.wk.weight", h + "attention.wv.weight"});
    fuse(h + "mlp.gate_up_proj.weight", {h + "feed_forward.w1.weight", h + "feed_forward.w3.weight"});
  }
  add("norm.weight", D, 0, norm, "");
  add("output.weight", vocab, D, colwise, "{tp}");
  return s;
}

}  // namespace example
