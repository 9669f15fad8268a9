// tests/support/reshard_run.hpp -- a joint plan (lower/reshard.hpp) run on the host
// backend with every element checked: the tests of runtime/reshard_executor.hpp and the
// reshard manifest fuzzer share it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/lower/reshard.hpp"
#include "redist/runtime/reshard_executor.hpp"
#include "redist/runtime/reshard_tiles.hpp"

namespace redist::testing {

/// Every array's source and target tiles of ranks `local` back to back in one buffer per
/// rank, end and element type, the arrays in a random order (runtime/reshard_tiles.hpp
/// fused_sources, fused_targets: an engine's fused parameters), as run() takes them, the
/// sources filled (fill_reshard_sources).
struct fused_tiles_run {
  std::vector<std::vector<std::byte>> in, out;  ///< per local rank and element type: its source (target) tiles
  std::vector<std::span<const std::byte>> sources;
  std::vector<std::span<std::byte>> targets;
};

inline fused_tiles_run fuse_all_tiles(const reshard_plan& p, std::span<const rank_t> local, std::mt19937& rng) {
  const std::size_t A = p.arrays.size();
  fused_tiles_run f;
  f.sources.resize(local.size() * A);
  f.targets.resize(local.size() * A);
  std::vector<std::span<std::byte>> fill(local.size() * A);
  for (std::size_t i = 0; i < local.size(); ++i)
    for (const element_type type : element_types)
      for (const bool source : {true, false}) {
        std::vector<std::string> names;
        for (const reshard_array& x : p.arrays)
          if ((source ? x.dtype : x.target_type()) == type) names.push_back(x.name);
        if (names.empty()) continue;
        std::shuffle(names.begin(), names.end(), rng);
        std::vector<std::byte>& buf = (source ? f.in : f.out)
                                          .emplace_back(source ? fused_source_bytes(p, local[i], names)
                                                               : fused_target_bytes(p, local[i], names));
        if (source) {
          for (const auto& [a, b] : fused_sources(p, local[i], names, buf)) {
            f.sources[i * A + a] = b;
            fill[i * A + a] = std::span<std::byte>(buf).subspan(static_cast<std::size_t>(b.data() - buf.data()), b.size());
          }
        } else {
          for (const auto& [a, b] : fused_targets(p, local[i], names, buf)) f.targets[i * A + a] = b;
        }
      }
  fill_reshard_sources(p, local, fill);
  return f;
}

/// Run plan p on host_backend(p.world), every source element encoding its array and global
/// index (fill_reshard_sources); "" if every target element is right, no source tile was
/// written and the executor held no message buffers, else what is wrong.
inline std::string run_reshard_on_host(const reshard_plan& p) {
  host_backend host(p.world);
  reshard_executor<host_backend> ex(host, p);
  reshard_tiles t = make_reshard_tiles(ex);
  fill_reshard_sources(p, ex.local_ranks(), t);
  const auto before = t.in;
  ex.run(t.sources(), t.targets());
  if (t.in != before) return "a source tile was written";
  if (ex.message_bytes() != 0) return "the host backend held message buffers";
  const reshard_check c = check_reshard_targets(p, ex.local_ranks(), t);
  if (!c.ok()) return std::to_string(c.wrong) + " wrong elements, first: " + c.first;
  return {};
}

}  // namespace redist::testing
