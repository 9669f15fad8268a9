// tests/fuzz/parse_type_fuzzer.cpp -- parse_type on arbitrary text. Input: a mesh on the
// first line (a fixed mesh when it does not parse), the type on the rest. A type that
// parses is well-formed, its local size is its tile's, and it prints back to itself.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/runtime/darray.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace redist;
  const auto f = fuzz::fields(data, size, 2);
  const device_mesh m = fuzz::mesh_or_default(f[0]);
  fuzz::refused_cleanly_or_ran([&] {
    const dist_type t = parse_type(m, f[1]);
    if (!check(m, t).ok()) fuzz::finding("parse_type returned a type that check() refuses");
    if (tile_extents(m, t).size() != local_size(m, t)) fuzz::finding("tile extents disagree with local_size");
    const text back = type_text(m, t);
    if (back.len >= text::capacity) return;
    if (!(parse_type(m, back.view()) == t)) fuzz::finding("type_text does not parse back to the same type");
  });
  return 0;
}
