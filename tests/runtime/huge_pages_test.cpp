// Tests of runtime/huge_pages.hpp: allocations of 2 MiB and more start on a huge page boundary
// and carry the kernel's huge-page advice (the "hg" flag of their mapping in
// /proc/self/smaps), smaller ones do not need to; the library's own host tiles and buffers
// (darray's owned tiles, host_memory, reshard_tiles) come from it, and a tile taken from the
// caller's std::vector keeps that vector's memory.
#include "redist/runtime/huge_pages.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "redist/runtime/darray.hpp"
#include "redist/runtime/memory.hpp"

namespace {

/// The VmFlags of the mapping of /proc/self/smaps that holds address p ("" if none).
std::string vm_flags_at(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= a && a < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8) + " ";
  }
  return "";
}

bool aligned(const void* p, std::size_t n) { return reinterpret_cast<std::uintptr_t>(p) % n == 0; }

}  // namespace

TEST_CASE("huge_page_allocator: 2 MiB and more on a huge page boundary, advised onto huge pages") {
  using redist::huge_page_bytes;
  redist::host_vector<std::byte> big(3 * huge_page_bytes + 123, std::byte{7});
  REQUIRE(aligned(big.data(), huge_page_bytes));
  CHECK(big[big.size() - 1] == std::byte{7});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // The advice is on the mapping whatever the machine's setting ("always", "madvise" or
  // "never"), where the kernel has transparent huge pages at all.
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    const std::string flags = vm_flags_at(big.data());
    REQUIRE(!flags.empty());
    CHECK(flags.find(" hg ") != std::string::npos);
  }
#endif
  // Smaller allocations are plain operator new, aligned for their type.
  redist::host_vector<double> small(100, 1.5);
  CHECK(aligned(small.data(), alignof(double)));
  CHECK(small[99] == 1.5);
  // Copies and moves keep the contents; a moved vector keeps its memory.
  redist::host_vector<std::byte> copy = big;
  CHECK(aligned(copy.data(), huge_page_bytes));
  CHECK(copy == big);
  const std::byte* at = big.data();
  redist::host_vector<std::byte> moved = std::move(big);
  CHECK(moved.data() == at);
  CHECK_THROWS_AS(redist::huge_page_allocator<double>().allocate(SIZE_MAX / 4), std::bad_array_new_length);
  CHECK_THROWS_AS(redist::huge_page_allocator<double>().allocate(SIZE_MAX / 8), std::bad_alloc);
}

TEST_CASE("huge_page_allocator: the library's own host tiles and buffers come from it") {
  using redist::huge_page_bytes;
  const redist::device_mesh m = redist::parse_mesh("{x: 2}");
  const redist::dist_type t = redist::parse_type(m, "[2048{x}4096, 512]");  // 4 MiB of f32 per rank
  redist::darray<float> owned(m, t, 1);
  CHECK(aligned(owned.data(), huge_page_bytes));
  CHECK(owned.data()[owned.size() - 1] == 0.0f);
  const redist::darray<float> copied = owned;
  CHECK(aligned(copied.data(), huge_page_bytes));
  // A tile taken from the caller's vector keeps that vector's memory.
  std::vector<float> mine(2048 * 512, 2.0f);
  const float* at = mine.data();
  const redist::darray<float> given(m, t, 0, std::move(mine));
  CHECK(given.data() == at);
  const redist::darray<float> given_copy = given;
  CHECK(given_copy.data() != at);
  CHECK(aligned(given_copy.data(), huge_page_bytes));  // a copy is allocated here
  CHECK(given_copy.data()[5] == 2.0f);
  auto buf = redist::host_memory{}.allocate<std::byte>(huge_page_bytes);
  CHECK(aligned(buf.data(), huge_page_bytes));
}
