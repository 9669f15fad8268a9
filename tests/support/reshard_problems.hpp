// tests/support/reshard_problems.hpp -- seeded random reshards of many arrays
// (lower/reshard.hpp): a world of W ranks and 1 to `max_arrays` arrays, each a
// random redistribution between meshes on device sets of that world
// (support/between_problems.hpp: every relation of device sets, even and
// uneven shapes, pending sums on some sources), with a random element type
// (bf16 and f16 only where nothing is reduced).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "redist/core/element_type.hpp"
#include "redist/lower/reshard.hpp"
#include "support/between_problems.hpp"

namespace redist::testing {

struct reshard_workload {
  std::uint64_t max_world = 8;
  std::size_t max_arrays = 6;
  std::uint64_t max_elements = 2048;  ///< per array
  bool target_sums = false;           ///< a target on the source's placed mesh may keep pending sums
};

/// A random problem, and its text for messages.
struct reshard_case {
  reshard_problem problem;
  std::string text;
};

inline reshard_case random_reshard(std::mt19937& rng, const reshard_workload& w) {
  reshard_case c;
  const std::uint64_t W = 1 + rng() % w.max_world;
  c.problem.world = W;
  const std::size_t n = 1 + rng() % w.max_arrays;
  between_workload bw;
  bw.world = W;
  bw.max_world = W;
  bw.max_elements = w.max_elements;
  bw.target_sums = w.target_sums;
  c.text = "W=" + std::to_string(W) + ":";
  while (c.problem.arrays.size() < n) {
    between_problem bp;
    if (!parse_between(random_between(rng, bw), bp)) continue;
    reshard_array a;
    a.name = "a" + std::to_string(c.problem.arrays.size());
    a.dtype = element_types[rng() % std::size(element_types)];
    if (bp.a.type.nsum > 0 && !element_type_reduces(a.dtype)) a.dtype = element_type::f32;
    a.source = bp.a;
    a.target = bp.b;
    c.text += " " + a.name + " " + std::string(element_type_name(a.dtype)) + " " + bp.text.from + " on " +
              bp.text.from_mesh + " -> " + bp.text.to + " on " + bp.text.to_mesh + ";";
    c.problem.arrays.push_back(std::move(a));
  }
  return c;
}

/// The largest row (dimension 0 index) of any piece between ranks, in bytes: the
/// smallest budget plan_reshard accepts.
inline std::uint64_t largest_row(const reshard_plan& p) {
  std::uint64_t most = 0;
  for (const reshard_round& r : p.rounds)
    for (const reshard_piece& pc : r.pieces) {
      const std::uint64_t rows = pc.b.rank > 0 ? pc.b.extent(0) : 1;
      most = std::max(most, p.piece_bytes(pc) / rows);
    }
  return most;
}

}  // namespace redist::testing
