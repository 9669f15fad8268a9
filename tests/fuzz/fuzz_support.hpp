// tests/fuzz/fuzz_support.hpp -- what every fuzz harness shares: the input split into
// text fields, a byte reader for the structured harness, and the one rule all harnesses
// check: hostile input ends in a redist_error with a message, never in anything else.
//
// The harnesses (one per *_fuzzer.cpp) are one program, redist_fuzz (fuzz_main.cpp), which
// runs the one its name picks: build/tests/fuzz/fuzz_<harness> are links to it. Built with
// libFuzzer (-DREDIST_FUZZ=ON, clang) it is a coverage-guided fuzzer; built without it,
// replay_main.cpp makes it a driver that runs every file of a harness's corpus and
// regression folders (ctest fuzz_<harness>_replay).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"

namespace redist::fuzz {

/// The harnesses, X(name) each: harness_<name> is what the fuzzer calls for one input
/// (tests/fuzz/<name>_fuzzer.cpp); fuzz_main.cpp's table of names comes from the same list.
#define REDIST_FUZZ_HARNESSES(X) \
  X(parse_mesh) X(parse_type) X(jax) X(dtensor) X(xla) X(shardy) X(program_json) X(synthesize) X(reshard_manifest) X(between)
#define REDIST_FUZZ_DECLARE(name) int harness_##name(const std::uint8_t* data, std::size_t size);
REDIST_FUZZ_HARNESSES(REDIST_FUZZ_DECLARE)
#undef REDIST_FUZZ_DECLARE

/// A finding: print what broke and abort, so that libFuzzer (or the replay driver) reports
/// the input.
[[noreturn]] inline void finding(std::string_view what) {
  std::fprintf(stderr, "fuzz finding: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

/// Run `f`; a redist_error with a message is a clean refusal, anything else a finding.
/// Returns true if `f` completed.
template <class F>
bool refused_cleanly_or_ran(F&& f) {
  try {
    f();
    return true;
  } catch (const redist_error& e) {
    if (std::string_view(e.what()).empty()) finding("a redist_error with an empty message");
    return false;
  } catch (const std::exception& e) {
    finding(std::string("an exception other than redist_error escaped: ") + e.what());
  } catch (...) {
    finding("a non-standard exception escaped");
  }
}

/// The input as text fields separated by newlines: the first `n - 1` lines, then the rest.
inline std::vector<std::string_view> fields(const std::uint8_t* data, std::size_t size, std::size_t n) {
  std::string_view s(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> out;
  while (out.size() + 1 < n) {
    const std::size_t nl = s.find('\n');
    if (nl == std::string_view::npos) break;
    out.push_back(s.substr(0, nl));
    s.remove_prefix(nl + 1);
  }
  out.push_back(s);
  while (out.size() < n) out.emplace_back();
  return out;
}

/// The mesh the first line of an input names, or a fixed one when it does not parse.
inline device_mesh mesh_or_default(std::string_view text) {
  device_mesh m;
  if (!refused_cleanly_or_ran([&] { m = parse_mesh(text); })) m = parse_mesh("{x: 4, y: 6, z: 5}");
  return m;
}

/// Reads small integers from the input bytes (zero once they run out).
struct byte_reader {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  /// A value in [lo, hi].
  std::uint64_t in(std::uint64_t lo, std::uint64_t hi) { return lo + byte() % (hi - lo + 1); }
};

}  // namespace redist::fuzz
