// tests/support/fuse_profile.hpp -- a time profile under which lower/fuse.hpp
// fuse_collectives fuses every pair of steps that fuses: only the pass over the tile a step
// writes costs. The fused step saves the pass over the intermediate tile, and its further
// pieces (core/time_model.hpp fused_step_seconds: latency and per-peer terms) cost nothing,
// so fusing always pays, on tiles of any size.
#pragma once

#include "redist/core/time_model.hpp"

namespace redist::testing {

inline time_profile fuse_all_profile() {
  time_profile p;
  p.set_name("pass only");
  p.pass_per_byte = 1e-9;  // 1 ns per byte: no tile near 2^64 picoseconds
  return p;
}

}  // namespace redist::testing
