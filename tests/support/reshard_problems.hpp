// tests/support/reshard_problems.hpp -- seeded random reshards of many arrays
// (lower/reshard.hpp): a world of W ranks and 1 to `max_arrays` arrays, each a
// random redistribution between meshes on device sets of that world
// (support/between_problems.hpp: every relation of device sets, even and
// uneven shapes, pending sums on some sources; a random box layout, replicas too, at one
// end of some arrays), with a random element type (bf16 and f16 only where nothing is
// reduced).
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
  bool box_layouts = true;            ///< one array in four without sums: a box layout at one end
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
    std::string from = bp.text.from + " on " + bp.text.from_mesh, to = bp.text.to + " on " + bp.text.to_mesh;
    if (w.box_layouts && bp.a.type.nsum == 0 && bp.b.type.nsum == 0 && rng() % 4 == 0) {  // a box layout at one end
      std::vector<std::uint64_t> shape;
      for (int d = 0; d < bp.a.type.rank; ++d) shape.push_back(bp.a.type.dims[d].global);
      const box_layout l = random_box_layout(rng, shape, W);
      if (rng() % 2 == 0) {
        a.source = l;
        from = box_layout_text(l);
      } else {
        a.target = l;
        to = box_layout_text(l);
      }
    }
    c.text += " " + a.name + " " + std::string(element_type_name(a.dtype)) + " " + from + " -> " + to + ";";
    c.problem.arrays.push_back(std::move(a));
  }
  return c;
}

/// The same problem in a world of W >= its own ranks: box layouts gain entries of no box.
inline void widen_world(reshard_problem& pr, std::uint64_t W) {
  pr.world = W;
  for (reshard_array& a : pr.arrays)
    for (array_layout* l : {&a.source, &a.target})
      if (auto* b = std::get_if<box_layout>(l)) b->boxes.resize(W);
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

/// Problem i of a backend test's sequence in a world of W ranks (W >= w.max_world): a random
/// reshard, planned jointly (every fifth one call per array), every other one under a random
/// budget that cuts its pieces into rounds (options.budget_bytes, 0 where none), half of
/// those with pipelined rounds (options.pipeline on, a budget of at least two rows).
struct planned_reshard {
  reshard_case c;
  reshard_options options;
  reshard_plan plan;
};
inline planned_reshard random_planned_reshard(std::mt19937& rng, const reshard_workload& w, std::uint64_t W,
                                              std::size_t i) {
  planned_reshard r{random_reshard(rng, w), {}, {}};
  widen_world(r.c.problem, W);
  r.options.joint = i % 5 != 4;
  r.plan = plan_reshard(r.c.problem, r.options);
  const std::uint64_t row = largest_row(r.plan);
  const std::uint64_t draw = rng();  // drawn on every path: the same sequence of problems
  if (i % 2 == 1 && row > 0) {
    r.options.budget_bytes = row + draw % (2 * row + 1);
    if (i % 4 == 3) {  // two rounds at a time, within half a budget that holds a row
      r.options.pipeline = reshard_pipeline::on;
      r.options.budget_bytes += row;
    }
    r.plan = plan_reshard(r.c.problem, r.options);
  }
  return r;
}

}  // namespace redist::testing
