// tests/fuzz/xla_fuzzer.cpp -- from_xla / to_xla / to_xla_named on arbitrary text. Input: a
// global shape on the first line (`[8, 6]`; a fixed one when it does not parse), the
// HloSharding (tiled or named) on the rest. A sharding that parses gives a well-formed type;
// written back, it reads back to the same box (held by the same ranks as the same value) on every
// world rank, and writing is canonical (the same text again); written as a named sharding, it
// reads back to the same placed type.
// xla_type_says agrees with from_xla, and where it says no, xla_layout gives a valid layout.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "redist/core/offsets.hpp"
#include "redist/core/xla.hpp"

namespace {
/// lo, hi of every dimension of every world rank's box, and the lowest world rank that holds
/// the same value (the same tile and, with pending sums, the same partial value; which replicas
/// pair up in a sum is not part of the layout: XLA sorts each group of replicas), by rank.
std::map<std::uint64_t, std::vector<std::uint64_t>> boxes(const redist::placed_type& p) {
  const redist::device_mesh& m = p.pm.mesh;
  const std::uint64_t used = redist::used_mask(p.type);
  auto group = [&](std::uint64_t pos) {  // the device's coordinates on the split and sum sub-axes
    std::vector<std::uint64_t> g;
    for (int k = 0; k < m.nsub; ++k)
      if ((used >> k) & 1) g.push_back(m.coord(k, pos));
    return g;
  };
  std::map<std::vector<std::uint64_t>, std::uint64_t> lowest;
  for (std::uint64_t pos = 0; pos < m.devices; ++pos) {
    auto [at, fresh] = lowest.try_emplace(group(pos), p.pm.at(pos));
    if (!fresh) at->second = std::min<std::uint64_t>(at->second, p.pm.at(pos));
  }
  std::map<std::uint64_t, std::vector<std::uint64_t>> out;
  for (std::uint64_t pos = 0; pos < m.devices; ++pos) {
    auto& b = out[p.pm.at(pos)];
    for (int d = 0; d < p.type.rank; ++d) {
      b.push_back(redist::range_lo(m, p.type.dims[d], pos));
      b.push_back(redist::range_hi(m, p.type.dims[d], pos));
    }
    b.push_back(lowest.at(group(pos)));
  }
  return out;
}
}  // namespace

int redist::fuzz::harness_xla(const std::uint8_t* data, std::size_t size) {
  using namespace redist;
  const auto f = fuzz::fields(data, size, 2);
  std::vector<std::uint64_t> global;
  fuzz::refused_cleanly_or_ran([&] {
    const dist_type s = parse_type(device_mesh{}, f[0]);
    for (int d = 0; d < s.rank; ++d) global.push_back(s.dims[d].global);
  });
  if (global.empty()) global = {240, 120, 7};
  bool says = false;
  if (fuzz::refused_cleanly_or_ran([&] { says = xla_type_says(f[1], global, 6); }) && !says)
    fuzz::refused_cleanly_or_ran([&] {
      const box_layout l = xla_layout(f[1], global, 6);
      if (!box_layout_problem(l).empty()) fuzz::finding("xla_layout gave an invalid layout");
    });
  fuzz::refused_cleanly_or_ran([&] {
    const placed_type p = from_xla(f[1], global, 6);
    if (!says) fuzz::finding("xla_type_says says no to a sharding from_xla reads");
    if (!check(p.pm.mesh, p.type).ok()) fuzz::finding("from_xla gave a type that check() refuses");
    if (!check_placement(p.pm, p.pm.min_world()).ok()) fuzz::finding("from_xla gave a bad placement");
    std::string named;
    if (fuzz::refused_cleanly_or_ran([&] { named = to_xla_named(p.pm, p.type); })) {
      const placed_type n = from_xla(named, global, 6);
      if (!(n.pm == p.pm) || !(n.type == p.type)) fuzz::finding("to_xla_named's text does not read back the same");
    }
    if (p.pm.mesh.devices > 4096) return;  // the boxes below visit every device
    std::string back;
    if (!fuzz::refused_cleanly_or_ran([&] { back = to_xla(p.pm, p.type); })) return;
    const placed_type q = from_xla(back, global, p.pm.mesh.devices);
    if (boxes(p) != boxes(q)) fuzz::finding("to_xla's text does not hold the same boxes");
    if (to_xla(q.pm, q.type) != back) fuzz::finding("to_xla is not canonical");
  });
  return 0;
}
