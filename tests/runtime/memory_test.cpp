// Tests of runtime/memory.hpp, the memory-space customization point of the executor:
// a backend naming its own memory space (here host memory that the executor must not
// treat as such, with its own buffers, counting every call) gets every buffer, copy and
// pack/unpack of a run routed through it, has tiles outside it refused before anything
// moves, and loses the overloads that hand out owned host tiles. Backends without
// memory() keep host memory. Needs no GPU: this is what the NCCL backend relies on.
#include "redist/runtime/memory.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/verify.hpp"
#include "support/memory_formula.hpp"
#include "support/random_problems.hpp"

namespace {

/// Host memory that only accepts its own buffers and counts what the executor asks of it.
struct tagged_memory {
  static constexpr bool host_accessible = false;

  template <class T>
  struct buffer {
    std::vector<T> v;
    T* data() { return v.data(); }
  };

  std::set<const void*> mine;
  std::uint64_t allocations = 0, copies = 0, fills = 0, concat_copies = 0, split_copies = 0, splits = 0, concats = 0, strided_copies = 0, checks = 0;

  template <class T>
  buffer<T> allocate(std::size_t n) {
    buffer<T> b{std::vector<T>(n)};
    mine.insert(b.v.data());
    ++allocations;
    return b;
  }
  template <class T>
  void copy(T* dst, const T* src, std::size_t n) {
    ++copies;
    redist::host_memory{}.copy(dst, src, n);
  }
  template <class T>
  void fill(T* dst, std::size_t n, const T& v) {
    ++fills;
    redist::host_memory{}.fill(dst, n, v);
  }
  template <class T>
  void split_copy(std::span<const T> tile, std::span<const std::uint64_t> ext, int d, std::uint64_t n, std::uint64_t m,
                  std::span<T> chunk) {
    ++split_copies;
    redist::split_copy<T>(tile, ext, d, n, m, chunk);
  }
  template <class T>
  void concat_copy(std::span<const T> chunk, std::span<const std::uint64_t> ext, int d, std::uint64_t n,
                   std::uint64_t m, std::span<T> tile) {
    ++concat_copies;
    redist::concat_copy<T>(chunk, ext, d, n, m, tile);
  }
  template <class T>
  void split_all(std::span<const T> tile, std::span<const std::uint64_t> ext, int d, std::uint64_t n,
                 std::span<T> chunks) {
    ++splits;
    redist::split_all<T>(tile, ext, d, n, chunks);
  }
  template <class T>
  void concat_all(std::span<const T> chunks, std::span<const std::uint64_t> ext, int d, std::uint64_t n,
                  std::span<T> tile) {
    ++concats;
    redist::concat_all<T>(chunks, ext, d, n, tile);
  }
  template <class T>
  void strided(const redist::detail::strided_copy& c, const T* src, T* dst) {
    ++strided_copies;
    redist::host_memory{}.strided(c, src, dst);
  }
  template <class T>
  std::string check_pointer(const T* p) {
    ++checks;
    return mine.count(p) ? std::string() : std::string("is not tagged memory");
  }
};

/// The host backend with its own memory space; the executor packs strided blocks through it.
class tagged_backend : public redist::host_backend {
 public:
  explicit tagged_backend(std::uint64_t devices) : host_backend(devices, {.strided_blocks = false}) {}
  tagged_memory& memory() { return mem_; }

 private:
  tagged_memory mem_;
};

static_assert(redist::memory_space_for<tagged_memory, double>);
static_assert(std::is_same_v<redist::memory_space_t<tagged_backend>, tagged_memory>);
static_assert(std::is_same_v<redist::memory_space_t<redist::host_backend>, redist::host_memory>);

template <class E, class A>
concept runs_to_owned_tile = requires(E& ex, const A& in) { ex.run(in); };

/// Tiles of one program in the backend's memory, borrowed by darrays.
template <class T>
struct tiles {
  std::vector<tagged_memory::buffer<T>> mem;
  std::vector<redist::darray<T>> arrays;
  tiles(tagged_memory& m, const redist::program& p, const redist::dist_type& t) {
    for (redist::rank_t r = 0; r < p.devices(); ++r) mem.push_back(m.allocate<T>(redist::local_size(p.m, t)));
    for (redist::rank_t r = 0; r < p.devices(); ++r)
      arrays.emplace_back(p.m, t, r, std::span<T>(mem[r].data(), mem[r].v.size()));
  }
};

}  // namespace

TEST_CASE("a backend's memory space gets every buffer, copy and pack of a run", "[memory]") {
  std::uint64_t problems = 0, packs = 0;
  const auto problems_text = redist::testing::random_problems(redist::testing::paper_workload(1 << 12), 150, 0x6d656d31);
  for (const auto& pt : problems_text) {
    INFO(pt.mesh << "  " << pt.from << " -> " << pt.to);
    // The collective programs (the paper's objective): every step one of the block paths.
    const redist::program p = redist::synthesize(pt.mesh, pt.from, pt.to, {.goal = redist::objective::bytes});
    if (p.source.nsum > 0) continue;
    tagged_backend b(p.devices());
    tagged_memory& m = b.memory();
    tiles<float> in(m, p, p.source), out(m, p, p.target);
    for (auto& a : in.arrays) redist::fill_global_index(a);
    const std::uint64_t user_allocations = m.allocations;
    redist::executor<float, tagged_backend> ex(b, p);
    // scratch, send pack and receive pack per rank, made once
    CHECK(m.allocations - user_allocations == 3 * p.devices());
    CHECK(ex.peak_bytes_held() == redist::testing::expected_bytes_held(p, 4, {false, false}));
    ex.run(std::span<const redist::darray<float>>(in.arrays), std::span<redist::darray<float>>(out.arrays));
    for (const auto& a : out.arrays) CHECK(redist::check_global_index(a).ok());
    // straight from the input tiles into the output tiles (a program of no steps copies them)
    CHECK(m.copies == (p.steps.empty() ? p.devices() : 0));
    CHECK(m.checks == 2 * p.devices());  // every tile checked
    std::uint64_t dynslices = 0, packed = 0;
    for (std::size_t s = 0; s < p.steps.size(); ++s) {
      dynslices += p.steps[s].kind == redist::op::dynslice ? 1 : 0;
      packed += ex.path(s) == redist::block_path::packed ? 1 : 0;
    }
    CHECK(m.split_copies == dynslices * p.devices());
    CHECK((m.strided_copies > 0) == (packed > 0));  // packing goes through the memory space
    packs += m.strided_copies;
    // A second run allocates nothing.
    ex.run(std::span<const redist::darray<float>>(in.arrays), std::span<redist::darray<float>>(out.arrays));
    CHECK(m.allocations - user_allocations == 3 * p.devices());
    ++problems;
  }
  CHECK(problems > 100);
  CHECK(packs > 0);  // some all-to-alls and all-gathers needed strided packing
}

TEST_CASE("tiles outside the backend's memory are refused before anything moves", "[memory][errors]") {
  const auto p = redist::synthesize("{x: 4}", "[{x}8, 8]", "[8, {x}8]");
  tagged_backend b(4);
  tagged_memory& m = b.memory();
  tiles<float> in(m, p, p.source), out(m, p, p.target);
  for (auto& a : in.arrays) redist::fill_global_index(a);
  for (auto& a : out.arrays)
    for (float& v : a.span()) v = -1.0f;
  std::vector<redist::darray<float>> host_in;
  for (redist::rank_t r = 0; r < 4; ++r) host_in.emplace_back(p.m, p.source, r);
  host_in[0] = in.arrays[0];  // a view of tagged memory: rank 0 is fine, rank 1 is not
  redist::executor<float, tagged_backend> ex(b, p);
  CHECK_THROWS_WITH(ex.run(std::span<const redist::darray<float>>(host_in), std::span<redist::darray<float>>(out.arrays)),
                    "input tile of rank 1 is not tagged memory");
  CHECK(m.copies == 0);
  for (const auto& a : out.arrays)
    for (float v : a.span()) CHECK(v == -1.0f);
  // No overload hands out owned (host) tiles for such a memory; the host backend keeps them.
  STATIC_REQUIRE_FALSE(runs_to_owned_tile<redist::executor<float, tagged_backend>, redist::darray<float>>);
  STATIC_REQUIRE(runs_to_owned_tile<redist::executor<float, redist::host_backend>, redist::darray<float>>);
  ex.run(std::span<const redist::darray<float>>(in.arrays), std::span<redist::darray<float>>(out.arrays));
  for (const auto& a : out.arrays) CHECK(redist::check_global_index(a).ok());
}
