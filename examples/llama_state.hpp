// examples/llama_state.hpp -- a Llama-style model state as a reshard problem
// (lower/reshard.hpp) into an inference engine's fused parameters: the trainer's weights as
// torchtitan lays them out (FSDP2 over tensor parallelism on `{dp_shard: 4, tp: 2}`, ranks 0-7,
// given in DTensor placements), to vLLM's tensor-parallel layout on `target_mesh` (`{tp: 8}` on
// the same ranks, `{tp: 4} @ [4, 5, 6, 7]`, or `{dp: 2, tp: 4}`: two engine replicas, vLLM's
// data parallelism as colocated RL runs it), where q, k and v land in one qkv_proj tile per
// rank and the MLP's gate and up projections in one gate_up_proj tile
// (runtime/reshard_tiles.hpp fused_targets). Grouped-query attention: by default Mistral 7B's
// heads (32 query heads, 8 key and value heads); with `dim` 4096, 32 layers and vocabulary
// 32000 these are Mistral 7B's shapes, MLP ratio 14336 / 4096. Where the engine has more ranks
// than key and value heads (Qwen2.5 3B's 2 on TP 8), vLLM gives each rank one head, each head
// held by several ranks side by side: k and v are typed on the engine's mesh with tp split into
// `kv: kv_heads, rep: tp/kv_heads` (the same ranks). Used by the weight-sync example.
//
//   weight [rows, cols]            trainer (DTensor on dp_shard x tp)           engine (vLLM, tp)
//   tok_embeddings, output [V, D]  [_StridedShard(0, split_factor=2), Shard(0)]  [{tp}V, D]
//   wq [D, D], wk, wv [KV, D]      the same (colwise)                           [{tp}.., D] or [{kv}KV, D], fused: qkv_proj
//   w1, w3 [I, D] (gate, up)       the same (colwise)                           [{tp}I, D], fused: gate_up_proj
//   wo [D, D], w2 [D, I]           [Shard(0), Shard(1)] (rowwise)               [D, {tp}..]
//   norms [D]                      [Shard(0), Replicate()]                      replicated
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "redist/core/dtensor.hpp"
#include "redist/core/element_type.hpp"
#include "redist/core/placement.hpp"
#include "redist/lower/reshard.hpp"

namespace example {

/// An engine parameter that holds several arrays' tiles back to back.
struct fused_param {
  std::string name;                ///< vLLM's name, e.g. "layers.0.self_attn.qkv_proj.weight"
  std::vector<std::string> parts;  ///< the arrays, in the order the engine stacks them
};

struct llama_problem {
  redist::reshard_problem problem;
  std::vector<fused_param> fused;
};

/// Attention heads: `q` query heads of dim / q rows each, `kv` key and value heads.
struct llama_heads {
  std::uint64_t q = 32, kv = 8;
};

inline llama_problem llama_state(std::uint64_t layers, std::uint64_t dim, const std::string& target_mesh,
                                 llama_heads heads = {}, redist::element_type dtype = redist::element_type::f32,
                                 std::uint64_t vocab = 32000) {
  using namespace redist;
  const placed_mesh train = parse_placed_mesh("{dp_shard: 4, tp: 2}");
  const placed_mesh infer = parse_placed_mesh(target_mesh);
  const int tp = infer.mesh.find("tp");
  if (tp < 0) throw std::invalid_argument("llama_state: the engine's mesh " + target_mesh + " has no axis tp");
  const std::uint64_t T = infer.mesh.sizes[tp], D = dim, I = dim / 2 * 7;
  if (heads.q == 0 || heads.kv == 0 || heads.q % heads.kv != 0)
    throw std::invalid_argument("llama_state: the query heads must be a multiple of the key and value heads");
  const std::uint64_t KV = heads.kv * (dim / heads.q);
  // What vLLM asserts of the engine's tensor parallelism, and what the trainer's 8-way colwise
  // and rowwise splits need.
  if (heads.q % T != 0 || (heads.kv % T != 0 && T % heads.kv != 0))
    throw std::invalid_argument("llama_state: the engine's " + std::to_string(T) + " ranks must divide the " +
                                std::to_string(heads.q) + " query heads, and divide or be a multiple of the " +
                                std::to_string(heads.kv) + " key and value heads");
  if (dim == 0 || dim % heads.q != 0 || KV % 8 != 0 || D % 16 != 0)
    throw std::invalid_argument("llama_state: dim must be a multiple of 16 and of the query heads, its key and value "
                                "rows (dim / query heads * key and value heads) of 8");
  // k and v: one head per rank, each held by T / kv ranks, where the engine has more ranks.
  const bool replicated_kv = heads.kv < T;
  placed_mesh kv_mesh = infer;
  if (replicated_kv) {  // tp's place split into kv (major) and rep: the same ranks
    device_mesh m;
    auto axis = [&](std::string_view name, std::uint64_t size) {
      if (error e = mesh_add_axis(m, name, size); !e.ok()) throw redist_error(e);
    };
    for (int a = 0; a < infer.mesh.naxes; ++a) {
      if (a != tp) {
        axis(infer.mesh.names[a].view(), infer.mesh.sizes[a]);
        continue;
      }
      axis("kv", heads.kv);
      axis("rep", T / heads.kv);
    }
    kv_mesh.mesh = m;
  }
  const char* kv_split = replicated_kv ? "{kv}" : "{tp}";
  llama_problem s;
  s.problem.world = 8;
  auto add = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols, const char* from, const char* to,
                 const placed_mesh* on = nullptr) {
    const placed_mesh& engine = on ? *on : infer;
    std::vector<std::uint64_t> shape{rows};
    if (cols) shape.push_back(cols);
    std::string type = "[" + std::string(to) + std::to_string(rows);
    if (cols) type += std::string(", ") + (to[0] ? "" : "{tp}") + std::to_string(cols);
    type += "]";
    reshard_array a;
    a.name = name;
    a.dtype = dtype;
    a.source = placed_layout{train, from_dtensor(train.mesh, shape, from)};
    a.target = placed_layout{engine, parse_type(engine.mesh, type)};
    s.problem.arrays.push_back(std::move(a));
  };
  // from: the trainer's placements; to: "{tp}" where the engine splits the rows, "" where it
  // splits the columns (a matrix) or replicates (a vector).
  const char* colwise = "[_StridedShard(0, split_factor=2), Shard(0)]";
  const char* rowwise = "[Shard(0), Shard(1)]";
  const char* norm = "[Shard(0), Replicate()]";
  add("tok_embeddings.weight", vocab, D, colwise, "{tp}");
  for (std::uint64_t l = 0; l < layers; ++l) {
    const std::string h = "layers." + std::to_string(l) + ".";
    add(h + "attention_norm.weight", D, 0, norm, "");
    add(h + "attention.wq.weight", D, D, colwise, "{tp}");
    add(h + "attention.wk.weight", KV, D, colwise, kv_split, &kv_mesh);
    add(h + "attention.wv.weight", KV, D, colwise, kv_split, &kv_mesh);
    add(h + "attention.wo.weight", D, D, rowwise, "");
    add(h + "ffn_norm.weight", D, 0, norm, "");
    add(h + "feed_forward.w1.weight", I, D, colwise, "{tp}");
    add(h + "feed_forward.w3.weight", I, D, colwise, "{tp}");
    add(h + "feed_forward.w2.weight", D, I, rowwise, "");
    s.fused.push_back({h + "self_attn.qkv_proj.weight",
                       {h + "attention.wq.weight", h + "attention.wk.weight", h + "attention.wv.weight"}});
    s.fused.push_back({h + "mlp.gate_up_proj.weight", {h + "feed_forward.w1.weight", h + "feed_forward.w3.weight"}});
  }
  add("norm.weight", D, 0, norm, "");
  add("output.weight", vocab, D, colwise, "{tp}");
  return s;
}

}  // namespace example
