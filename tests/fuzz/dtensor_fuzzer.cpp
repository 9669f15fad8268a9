// tests/fuzz/dtensor_fuzzer.cpp -- from_dtensor / to_dtensor on arbitrary text
// (notation_fuzz.hpp).
#include <cstddef>
#include <cstdint>

#include "notation_fuzz.hpp"
#include "redist/core/dtensor.hpp"

int redist::fuzz::harness_dtensor(const std::uint8_t* data, std::size_t size) {
  redist::fuzz::notation_round_trip(
      data, size, [](const auto& m, const auto& g, auto s) { return redist::from_dtensor(m, g, s); },
      [](const auto& m, const auto& t) { return redist::to_dtensor(m, t); });
  return 0;
}
