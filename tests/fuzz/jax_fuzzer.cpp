// tests/fuzz/jax_fuzzer.cpp -- from_jax / to_jax on arbitrary text (notation_fuzz.hpp).
#include <cstddef>
#include <cstdint>

#include "notation_fuzz.hpp"
#include "redist/core/jax.hpp"

int redist::fuzz::harness_jax(const std::uint8_t* data, std::size_t size) {
  redist::fuzz::notation_round_trip(
      data, size, [](const auto& m, const auto& g, auto s) { return redist::from_jax(m, g, s); },
      [](const auto& m, const auto& t) { return redist::to_jax(m, t); });
  return 0;
}
