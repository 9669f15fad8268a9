// tests/support/test_boxes.hpp -- what tests of boxes (redist/box.hpp) share: a box written
// as its ranges, and a program's JSON round trip, written one document a line for the
// independent checker (tests/tools/check_program.py).
#pragma once

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "redist/box.hpp"
#include "redist/program.hpp"
#include "redist/program_json.hpp"

namespace redist::testing {

/// The box [lo, hi) x ... of the given ranges, one per dimension.
inline box make_box(std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges) {
  box b;
  b.rank = static_cast<int>(ranges.size());
  for (std::size_t d = 0; d < ranges.size(); ++d) {
    b.lo[d] = ranges[d].first;
    b.hi[d] = ranges[d].second;
  }
  return b;
}

/// "" if p's JSON text reads back into a program with the same text, else what differs;
/// the text, on one line, is also written to `jsonl` when given.
inline std::string json_round_trip(const program& p, std::ofstream* jsonl) {
  try {
    const std::string j = program_json_text(p);
    const std::string k = program_json_text(program_from_json_text(j));
    if (j != k) return "JSON round trip differs:\n" + j + "\n" + k;
    if (jsonl) {
      std::string line = j;
      line.erase(std::remove(line.begin(), line.end(), '\n'), line.end());
      *jsonl << line << '\n';
    }
  } catch (const redist_error& e) {
    return std::string("JSON round trip: ") + e.what();
  }
  return {};
}

}  // namespace redist::testing
