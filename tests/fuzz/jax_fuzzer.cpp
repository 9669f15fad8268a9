// tests/fuzz/jax_fuzzer.cpp -- from_jax / to_jax on arbitrary text (notation_fuzz.hpp), and
// the same text as a NamedSharding (from_jax_sharding): one that parses gives a well-formed
// type on a valid placement, and its spec written back reads back the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "notation_fuzz.hpp"
#include "redist/core/jax.hpp"

int redist::fuzz::harness_jax(const std::uint8_t* data, std::size_t size) {
  redist::fuzz::notation_round_trip(
      data, size, [](const auto& m, const auto& g, auto s) { return redist::from_jax(m, g, s); },
      [](const auto& m, const auto& t) { return redist::to_jax(m, t); });
  const auto f = redist::fuzz::fields(data, size, 3);
  const std::vector<std::uint64_t> global{240, 120, 7};
  redist::fuzz::refused_cleanly_or_ran([&] {
    const redist::placed_type p = redist::from_jax_sharding(f[2], global);
    if (!redist::check(p.pm.mesh, p.type).ok()) redist::fuzz::finding("from_jax_sharding gave a type that check() refuses");
    if (!redist::check_placement(p.pm, p.pm.min_world()).ok()) redist::fuzz::finding("from_jax_sharding gave a bad placement");
    std::string back;
    if (!redist::fuzz::refused_cleanly_or_ran([&] { back = redist::to_jax(p.pm.mesh, p.type); })) return;
    if (!(redist::from_jax(p.pm.mesh, global, back) == p.type))
      redist::fuzz::finding("a NamedSharding's spec written back does not read back the same");
  });
  return 0;
}
