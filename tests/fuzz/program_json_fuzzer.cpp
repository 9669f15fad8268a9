// tests/fuzz/program_json_fuzzer.cpp -- program_from_json_text on arbitrary bytes, then,
// for a program it accepts that is small enough, a real run on the host backend: the
// executor checks the program again and moves data only inside the tiles (AddressSanitizer
// watches every copy). When the independent checker (tests/support/verify.hpp) accepts
// the program too, every rank must end with exactly its target tile.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_support.hpp"
#include "host_run.hpp"
#include "redist/program_json.hpp"
#include "support/verify.hpp"

namespace {

/// Run `p` (always, for the sanitizers); a program the checker accepts must be exact (a
/// well-formed program may still move the wrong data).
template <class T>
void run_on_host(const redist::program& p) {
  const bool exact = redist::fuzz::host_run_exact<T>(p);
  if (!exact && redist::testing::verify(p).ok) redist::fuzz::finding("a program the checker accepts left a wrong target tile");
}

}  // namespace

int redist::fuzz::harness_program_json(const std::uint8_t* data, std::size_t size) {
  using namespace redist;
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  fuzz::refused_cleanly_or_ran([&] {
    const program p = program_from_json_text(s);
    // Real runs only for small programs: the host backend holds every device's tiles.
    const std::uint64_t D = p.m.devices, cap = p.peak_local_elements;
    if (D > 64 || cap > (1u << 12) || D * cap > (1u << 16)) return;
    switch (p.element_bytes) {
      case 1: run_on_host<std::uint8_t>(p); break;
      case 2: run_on_host<std::uint16_t>(p); break;
      case 4: run_on_host<std::uint32_t>(p); break;
      case 8: run_on_host<std::uint64_t>(p); break;
      default: break;
    }
  });
  return 0;
}
