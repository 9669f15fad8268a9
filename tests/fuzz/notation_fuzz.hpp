// tests/fuzz/notation_fuzz.hpp -- the body shared by the JAX and DTensor harnesses. Input:
// a mesh on the first line, a global shape on the second (fixed ones when they do not
// parse), the notation's text on the rest. A spec that parses gives a well-formed type;
// a type written back in the notation parses to the same type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"

namespace redist::fuzz {

template <class From, class To>
void notation_round_trip(const std::uint8_t* data, std::size_t size, From from, To to) {
  const auto f = fields(data, size, 3);
  const device_mesh m = mesh_or_default(f[0]);
  std::vector<std::uint64_t> global;
  refused_cleanly_or_ran([&] {
    const dist_type s = parse_type(m, f[1]);
    for (int d = 0; d < s.rank; ++d) global.push_back(s.dims[d].global);
  });
  if (global.empty()) global = {240, 120, 7};
  refused_cleanly_or_ran([&] {
    const dist_type t = from(m, global, f[2]);
    if (!check(m, t).ok()) finding("the notation gave a type that check() refuses");
    std::string back;
    if (!refused_cleanly_or_ran([&] { back = to(m, t); })) return;  // not expressible
    if (!(from(m, global, back) == t)) finding("writing the type in the notation does not read back the same");
  });
}

}  // namespace redist::fuzz
