// tests/fuzz/parse_mesh_fuzzer.cpp -- parse_mesh on arbitrary text. A mesh that parses
// prints back to text that parses to the same mesh.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "redist/core/mesh.hpp"

int redist::fuzz::harness_parse_mesh(const std::uint8_t* data, std::size_t size) {
  using namespace redist;
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  fuzz::refused_cleanly_or_ran([&] {
    const device_mesh m = parse_mesh(s);
    const text t = mesh_text(m);
    if (t.len >= text::capacity) return;  // cut short: nothing to compare
    if (!(parse_mesh(t.view()) == m)) fuzz::finding("mesh_text does not parse back to the same mesh");
  });
  return 0;
}
