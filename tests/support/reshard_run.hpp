// tests/support/reshard_run.hpp -- a joint plan (lower/reshard.hpp) run on the host
// backend with every element checked: the tests of runtime/reshard_executor.hpp and the
// reshard manifest fuzzer share it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/lower/reshard.hpp"
#include "redist/runtime/reshard_executor.hpp"
#include "redist/runtime/reshard_tiles.hpp"

namespace redist::testing {

/// Run plan p on host_backend(p.world), every source element encoding its array and global
/// index (fill_reshard_sources); "" if every target element is right, no source tile was
/// written and the executor held no message buffers, else what is wrong.
inline std::string run_reshard_on_host(const reshard_plan& p) {
  host_backend host(p.world);
  reshard_executor<host_backend> ex(host, p);
  reshard_tiles t = make_reshard_tiles(ex);
  fill_reshard_sources(p, ex.local_ranks(), t);
  const std::vector<std::vector<std::byte>> before = t.in;
  ex.run(t.sources(), t.targets());
  if (t.in != before) return "a source tile was written";
  if (ex.message_bytes() != 0) return "the host backend held message buffers";
  const reshard_check c = check_reshard_targets(p, ex.local_ranks(), t);
  if (!c.ok()) return std::to_string(c.wrong) + " wrong elements, first: " + c.first;
  return {};
}

}  // namespace redist::testing
