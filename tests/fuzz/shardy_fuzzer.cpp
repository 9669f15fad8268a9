// tests/fuzz/shardy_fuzzer.cpp -- the Shardy mesh and sharding readers and writers on
// arbitrary text. Input: a Shardy mesh on the first line (a fixed one when it does not
// parse), a global shape on the second (`[8, 6]`; a fixed one when it does not parse), the
// sharding on the rest. A mesh or sharding that parses is well-formed and reads back the
// same from what the writers make of it; the box layout shardy_layout reads from the mesh and
// the sharding (sub-axes in any order) is valid.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "redist/core/shardy.hpp"

int redist::fuzz::harness_shardy(const std::uint8_t* data, std::size_t size) {
  using namespace redist;
  const auto f = fuzz::fields(data, size, 3);
  placed_mesh pm;
  if (!fuzz::refused_cleanly_or_ran([&] { pm = from_shardy_mesh(f[0]); }))
    pm = from_shardy_mesh(R"(<["x"=2, "y"=6], device_ids=[11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]>)");
  if (!check_placement(pm, pm.min_world()).ok()) fuzz::finding("from_shardy_mesh gave a bad placement");
  fuzz::refused_cleanly_or_ran([&] {
    if (!(from_shardy_mesh(to_shardy_mesh(pm, "m")) == pm)) fuzz::finding("to_shardy_mesh does not read back the same");
  });
  std::vector<std::uint64_t> global;
  fuzz::refused_cleanly_or_ran([&] {
    const dist_type s = parse_type(device_mesh{}, f[1]);
    for (int d = 0; d < s.rank; ++d) global.push_back(s.dims[d].global);
  });
  if (global.empty()) global = {240, 120, 7};
  fuzz::refused_cleanly_or_ran([&] {
    const dist_type t = from_shardy(pm, f[2], global);
    if (!check(pm.mesh, t).ok()) fuzz::finding("from_shardy gave a type that check() refuses");
    std::string back;
    if (!fuzz::refused_cleanly_or_ran([&] { back = to_shardy(pm, t, "m"); })) return;
    if (!(from_shardy(pm, back, global) == t)) fuzz::finding("to_shardy does not read back the same");
  });
  // Sub-axes in any order: the box layout, valid wherever it is read.
  fuzz::refused_cleanly_or_ran([&] {
    const box_layout l = shardy_layout(to_shardy_mesh(pm) + " " + std::string(f[2]), global);
    if (!box_layout_problem(l).empty()) fuzz::finding("shardy_layout gave an invalid box layout: " + box_layout_problem(l));
  });
  return 0;
}
