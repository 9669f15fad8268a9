// tests/fuzz/fuzz_main.cpp -- the entry points of redist_fuzz, the one program of every
// harness: it runs the harness its name picks, fuzz_<harness> (build/tests/fuzz/fuzz_<harness>
// are links to it), or else the one REDIST_FUZZ_HARNESS names. One program compiles the
// library once for all harnesses: with the sanitizers and libFuzzer, 194 s of CPU for the
// first eight as one translation unit, where program_json and synthesize alone took 160 s
// and 95 s (all ten: 137 s on the faster machine of 2026-11-28).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"

namespace {

struct harness {
  std::string_view name;
  int (*run)(const std::uint8_t*, std::size_t);
};

#define REDIST_FUZZ_ENTRY(name) {#name, &redist::fuzz::harness_##name},
constexpr harness harnesses[] = {REDIST_FUZZ_HARNESSES(REDIST_FUZZ_ENTRY)};
#undef REDIST_FUZZ_ENTRY

int (*chosen)(const std::uint8_t*, std::size_t) = nullptr;

}  // namespace

/// Called once before any input (by libFuzzer, and by replay_main.cpp): picks the harness.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  std::string_view name;
  if (const char* env = std::getenv("REDIST_FUZZ_HARNESS"); env != nullptr && *env != '\0') {
    name = env;
  } else if (*argc > 0) {
    name = (*argv)[0];
    if (const std::size_t slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
    if (name.starts_with("fuzz_")) name.remove_prefix(5);
  }
  for (const harness& h : harnesses)
    if (h.name == name) chosen = h.run;
  if (chosen == nullptr) {
    std::string names;
    for (const harness& h : harnesses) names += std::string(names.empty() ? "" : ", ") + std::string(h.name);
    std::fprintf(stderr,
                 "redist_fuzz: no harness named '%.*s': run it as fuzz_<harness> (a link to it) or set "
                 "REDIST_FUZZ_HARNESS; harnesses: %s\n",
                 static_cast<int>(name.size()), name.data(), names.c_str());
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { return chosen(data, size); }
