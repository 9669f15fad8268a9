// tests/fuzz/parse_type_fuzzer.cpp -- parse_type on arbitrary text. Input: a mesh on the
// first line (a fixed mesh when it does not parse), the type on the rest. A type that
// parses is well-formed, its local size is its tile's, it prints back to itself, and the
// ranges of the ranks probed (the first, the last, and up to 64 between) follow the box
// semantics of DESIGN.md section 2: lo <= hi <= global, full tiles but for the last
// non-empty one, empty tiles at the end of the array (issue 27: no wrap near 2^64).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/runtime/darray.hpp"

int redist::fuzz::harness_parse_type(const std::uint8_t* data, std::size_t size) {
  using namespace redist;
  const auto f = fuzz::fields(data, size, 2);
  const device_mesh m = fuzz::mesh_or_default(f[0]);
  fuzz::refused_cleanly_or_ran([&] {
    const dist_type t = parse_type(m, f[1]);
    if (!check(m, t).ok()) fuzz::finding("parse_type returned a type that check() refuses");
    if (tile_extents(m, t).size() != local_size(m, t)) fuzz::finding("tile extents disagree with local_size");
    auto probe = [&](std::uint64_t r) {
      for (int d = 0; d < t.rank; ++d) {
        const dim& x = t.dims[d];
        const std::uint64_t lo = range_lo(m, x, r), hi = range_hi(m, x, r), c = tile(m, x), b = block_index(m, x, r);
        if (!(lo <= hi && hi <= x.global)) fuzz::finding("a range is not inside its dimension: lo > hi or hi > global");
        if (x.global == 0) continue;
        const std::uint64_t last = (x.global - 1) / c;  // the block of the last non-empty tile
        if (b < last && hi - lo != c) fuzz::finding("a tile before the last non-empty one is short");
        if (b == last && (hi != x.global || lo >= hi)) fuzz::finding("the last non-empty tile does not end the dimension");
        if (b > last && (lo != x.global || hi != x.global)) fuzz::finding("an empty tile does not sit at the end of the array");
      }
    };
    const std::uint64_t n = m.devices < 66 ? m.devices : 66;  // the first, the last, and 64 between
    for (std::uint64_t i = 0; i < n; ++i) probe(n == m.devices ? i : i + 1 == n ? m.devices - 1 : i * (m.devices / n));
    const text back = type_text(m, t);
    if (back.len >= text::capacity) return;
    if (!(parse_type(m, back.view()) == t)) fuzz::finding("type_text does not parse back to the same type");
  });
  return 0;
}
