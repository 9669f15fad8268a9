// tests/fuzz/synthesize_fuzzer.cpp -- a structured fuzzer of the search and the lowering.
// The input bytes choose a mesh (1 to 3 axes of sizes 1-6, 8, 12), an array of 1 to 4
// dimensions (even or uneven), and two types of it (every axis partitions a dimension or replicates; the
// source may carry a pending sum over an axis it does not use). synthesize must either
// refuse with a redist_error or return a memory-efficient program that the independent
// checker (tests/support/verify.hpp) accepts; small programs also run on the host backend
// with every element checked.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "host_run.hpp"
#include "redist/lower/synthesize.hpp"
#include "support/verify.hpp"

namespace {

constexpr std::uint64_t axis_sizes[] = {1, 2, 3, 4, 5, 6, 8, 12};
const char* const axis_names[] = {"x", "y", "z"};

/// Every axis partitions a dimension (in a drawn order within it) or replicates.
std::vector<std::vector<int>> draw_assignment(redist::fuzz::byte_reader& in, int naxes, int rank) {
  std::vector<std::vector<int>> dims(static_cast<std::size_t>(rank));
  for (int a = 0; a < naxes; ++a) {
    const auto d = static_cast<int>(in.in(0, static_cast<std::uint64_t>(rank)));  // rank = replicate
    if (d == rank) continue;
    auto& v = dims[static_cast<std::size_t>(d)];
    v.insert(v.begin() + static_cast<std::ptrdiff_t>(in.in(0, v.size())), a);
  }
  return dims;
}

std::string type_string(const std::vector<std::vector<int>>& dims, const std::vector<std::uint64_t>& global,
                        int sum_axis) {
  std::string s = "[";
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (d) s += ", ";
    if (!dims[d].empty()) {
      s += "{";
      for (std::size_t i = 0; i < dims[d].size(); ++i) s += std::string(i ? ", " : "") + axis_names[dims[d][i]];
      s += "}";
    }
    s += std::to_string(global[d]);
  }
  s += "]";
  if (sum_axis >= 0) s += std::string(" sum{") + axis_names[sum_axis] + "}";
  return s;
}

}  // namespace

int redist::fuzz::harness_synthesize(const std::uint8_t* data, std::size_t size) {
  using namespace redist;
  fuzz::byte_reader in{data, size};
  const int naxes = static_cast<int>(in.in(1, 3));
  std::vector<std::uint64_t> sizes;
  std::string mesh = "{";
  for (int a = 0; a < naxes; ++a) {
    sizes.push_back(axis_sizes[in.in(0, 7)]);
    mesh += std::string(a ? ", " : "") + axis_names[a] + ": " + std::to_string(sizes.back());
  }
  mesh += "}";
  const int rank = static_cast<int>(in.in(1, 4));
  const auto from = draw_assignment(in, naxes, rank);
  const auto to = draw_assignment(in, naxes, rank);
  // Global sizes: a multiple of both types' partition counts, or (one in three) any size
  // up to it (uneven dimensions, some tiles short or empty).
  std::vector<std::uint64_t> global;
  for (int d = 0; d < rank; ++d) {
    std::uint64_t kf = 1, kt = 1;
    for (int a : from[static_cast<std::size_t>(d)]) kf *= sizes[static_cast<std::size_t>(a)];
    for (int a : to[static_cast<std::size_t>(d)]) kt *= sizes[static_cast<std::size_t>(a)];
    const std::uint64_t g = std::lcm(kf, kt) * in.in(1, 3);
    global.push_back(in.in(0, 2) == 0 ? in.in(1, g) : g);
  }
  int sum_axis = -1;
  if (in.in(0, 3) == 0) {
    const auto a = static_cast<int>(in.in(0, static_cast<std::uint64_t>(naxes - 1)));
    bool used = false;
    for (const auto& v : from)
      for (int b : v) used = used || b == a;
    if (!used && sizes[static_cast<std::size_t>(a)] > 1) sum_axis = a;
  }
  const std::string a_text = type_string(from, global, sum_axis), b_text = type_string(to, global, -1);
  // Uneven problems may be planned as an exchange, whose plan with its pieces (to check and
  // run it) costs about 0.2 us and a box per piece: on 1728 devices with tiles of one row
  // that is millions of pieces and seconds under the sanitizers (docs/reference.md,
  // Limits). Fuzz them on meshes of up to 256 devices. Even problems are planned by time at
  // every size: the exchange candidate is priced by its sizes alone, about 10 ns a piece
  // (regressions/synthesize/even_exchange_1728_devices: [12, {x, y, z}5184] -> [{x}12, 5184]
  // on 12 x 12 x 12, every receiver from every sender, 3 M pieces: 17 s under the
  // sanitizers when the pricing kept every piece, 1.4 s since).
  const std::uint64_t devices = std::accumulate(sizes.begin(), sizes.end(), std::uint64_t{1}, std::multiplies<>());
  bool even_sizes = true;
  for (std::size_t d = 0; d < global.size(); ++d) {
    std::uint64_t kf = 1, kt = 1;
    for (int a : from[d]) kf *= sizes[static_cast<std::size_t>(a)];
    for (int a : to[d]) kt *= sizes[static_cast<std::size_t>(a)];
    even_sizes = even_sizes && global[d] % kf == 0 && global[d] % kt == 0;
  }
  if (!even_sizes && devices > 256) return 0;

  fuzz::refused_cleanly_or_ran([&] {
    const program p = synthesize(mesh, a_text, b_text, {.element_bytes = 4});
    if (!p.memory_efficient()) fuzz::finding("synthesize returned a program over the memory bound: " + mesh + " " + a_text + " -> " + b_text);
    if (const auto v = testing::verify(p); !v.ok)
      fuzz::finding("the checker refuses the program of " + mesh + " " + a_text + " -> " + b_text + ": " + v.message);
    if (p.m.devices * p.peak_local_elements <= (1u << 14) && !fuzz::host_run_exact<std::uint32_t>(p))
      fuzz::finding("the program of " + mesh + " " + a_text + " -> " + b_text + " left a wrong tile");
  });
  return 0;
}
