// examples/gpt_state.hpp -- a GPT-2-style model state as a reshard problem (lower/reshard.hpp):
// the token embedding (a vocabulary of 50257, which no mesh divides), the position
// embedding, L layers of attention and MLP weights with their biases and norms, the final
// norm; from the trainer's layout, FSDP x tensor parallel on `{fsdp: 4, tp: 2}` (ranks
// 0-7), to an inference engine's tensor-parallel layout on `target_mesh`: `{tp: 8}` (the
// same ranks), `{tp: 4} @ [4, 5, 6, 7]` (the other half of a world of 8) or `{dp: 2, tp: 4}`
// (two engine replicas, each holding it all). The weight-sync example and the reshard
// benchmark share it.
//
//   weight                     trainer (FSDP 4 x TP 2)        inference (TP)
//   wte [V, D]                 [{tp}V, {fsdp}D]               [{tp}V, D]      vocabulary-parallel
//   wpe [P, D], norms [D],     [{fsdp}P, D], [{fsdp}D]        replicated
//     row biases [D]
//   c_attn [D, 3D], c_fc [D, 4D] (column-parallel)
//                              [{fsdp}D, {tp}K]               [D, {tp}K]
//   their biases [K]           [{tp, fsdp}K]                  [{tp}K]
//   c_proj [K, D] (row-parallel)
//                              [{tp}K, {fsdp}D]               [{tp}K, D]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "redist/core/element_type.hpp"
#include "redist/core/placement.hpp"
#include "redist/lower/reshard.hpp"

namespace example {

/// The state; `train_mesh` and `world` place the trainer elsewhere (a larger world: `{fsdp:
/// 64, tp: 8}` on 512 ranks), its axes named fsdp and tp as here.
inline redist::reshard_problem gpt_state(std::uint64_t layers, std::uint64_t dim, const std::string& target_mesh,
                                         redist::element_type dtype = redist::element_type::f32,
                                         std::uint64_t vocab = 50257, std::uint64_t positions = 1024,
                                         const std::string& train_mesh = "{fsdp: 4, tp: 2}", std::uint64_t world = 8) {
  using namespace redist;
  const placed_mesh train = parse_placed_mesh(train_mesh);
  const placed_mesh infer = parse_placed_mesh(target_mesh);
  reshard_problem pr;
  pr.world = world;
  auto add = [&](const std::string& name, const std::vector<std::uint64_t>& shape, const std::string& from,
                 const std::string& to) {
    auto dims = [&](const std::string& spec) {  // "{tp}|{fsdp}|" per dimension -> a type
      std::string t = "[";
      std::size_t at = 0;
      for (std::size_t d = 0; d < shape.size(); ++d) {
        const std::size_t bar = spec.find('|', at);
        t += (d ? ", " : "") + spec.substr(at, bar - at) + std::to_string(shape[d]);
        at = bar + 1;
      }
      return t + "]";
    };
    reshard_array a;
    a.name = name;
    a.dtype = dtype;
    a.source = placed_layout{train, parse_type(train.mesh, dims(from))};
    a.target = placed_layout{infer, parse_type(infer.mesh, dims(to))};
    pr.arrays.push_back(std::move(a));
  };
  const std::uint64_t D = dim;
  add("wte", {vocab, D}, "{tp}|{fsdp}|", "{tp}||");
  add("wpe", {positions, D}, "{fsdp}||", "||");
  for (std::uint64_t l = 0; l < layers; ++l) {
    const std::string h = "h" + std::to_string(l) + ".";
    add(h + "ln_1.w", {D}, "{fsdp}|", "|");
    add(h + "ln_1.b", {D}, "{fsdp}|", "|");
    add(h + "attn.c_attn.w", {D, 3 * D}, "{fsdp}|{tp}|", "|{tp}|");
    add(h + "attn.c_attn.b", {3 * D}, "{tp, fsdp}|", "{tp}|");
    add(h + "attn.c_proj.w", {D, D}, "{tp}|{fsdp}|", "{tp}||");
    add(h + "attn.c_proj.b", {D}, "{fsdp}|", "|");
    add(h + "ln_2.w", {D}, "{fsdp}|", "|");
    add(h + "ln_2.b", {D}, "{fsdp}|", "|");
    add(h + "mlp.c_fc.w", {D, 4 * D}, "{fsdp}|{tp}|", "|{tp}|");
    add(h + "mlp.c_fc.b", {4 * D}, "{tp, fsdp}|", "{tp}|");
    add(h + "mlp.c_proj.w", {4 * D, D}, "{tp}|{fsdp}|", "{tp}||");
    add(h + "mlp.c_proj.b", {D}, "{fsdp}|", "|");
  }
  add("ln_f.w", {D}, "{fsdp}|", "|");
  add("ln_f.b", {D}, "{fsdp}|", "|");
  return pr;
}

}  // namespace example
