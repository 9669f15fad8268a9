// Tests of runtime/executor.hpp (through the host backend): exact data on the paper's
// examples, memory accounting, statistics, the program hash and every error case.
#include "redist/runtime/executor.hpp"

#include <catch2/catch.hpp>

#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/runtime/verify.hpp"
#include "support/fuse_profile.hpp"
#include "support/memory_formula.hpp"
#include "support/random_problems.hpp"

namespace {

using redist::darray;

template <class T>
std::vector<darray<T>> filled_inputs(const redist::program& p) {
  std::vector<darray<T>> in;
  for (redist::rank_t r = 0; r < p.devices(); ++r) {
    in.emplace_back(p.m, p.source, r);
    redist::fill_global_index(in.back());
  }
  return in;
}

template <class T>
std::vector<darray<T>> sentinel_outputs(const redist::program& p, T v) {
  std::vector<darray<T>> out;
  for (redist::rank_t r = 0; r < p.devices(); ++r) {
    out.emplace_back(p.m, p.target, r);
    for (T& x : out.back().span()) x = v;
  }
  return out;
}

template <class T>
bool all_equal(const std::vector<darray<T>>& tiles, T v) {
  for (const auto& t : tiles)
    for (T x : t.span())
      if (!(x == v)) return false;
  return true;
}

template <class T>
bool all_index_encoded(const std::vector<darray<T>>& tiles) {
  for (const auto& t : tiles)
    if (!redist::check_global_index(t).ok()) return false;
  return true;
}

}  // namespace

TEST_CASE("seed 000 Listing 3 scaled to 8 devices moves every element to its target tile", "[executor]") {
  const auto p = redist::synthesize("{devs: 8}", "[32, 256{devs}2048]", "[4{devs}32, 2048]");
  redist::host_backend host(8);
  redist::executor<float, redist::host_backend> ex(host, p);
  const auto in = filled_inputs<float>(p);
  const auto out = ex.run(in);
  REQUIRE(out.size() == 8);
  for (const auto& t : out) {
    CHECK(t.type() == p.target);
    const auto c = redist::check_global_index(t);
    CHECK(c.checked == 4 * 2048);
    CHECK(c.ok());
  }
  // One all-to-all of the whole tile, straight from the input tiles into the output tiles:
  // nothing held on top of them; live data = the input and the output tile.
  CHECK(ex.capacity() == 8192);
  CHECK(ex.peak_bytes_held() == 0);
  CHECK(ex.peak_bytes_live() == 2 * 8192 * sizeof(float));
  // Inputs are left as they were.
  CHECK(all_index_encoded(in));
}

TEST_CASE("Example 3.1 (factor decomposition) on {x: 4, y: 6}", "[executor]") {
  const auto p = redist::synthesize("{x: 4, y: 6}", "[3{x}12, 2{y}12]", "[2{y}12, 3{x}12]", {.element_bytes = 8});
  CHECK(p.memory_efficient());
  redist::host_backend host(24);
  redist::executor<double, redist::host_backend> ex(host, p);
  const auto out = ex.run(filled_inputs<double>(p));
  CHECK(all_index_encoded(out));
  CHECK(ex.peak_bytes_held() <= 2 * 6 * sizeof(double));
  CHECK(ex.peak_bytes_held() == redist::testing::expected_bytes_held(p, sizeof(double)));
}

TEST_CASE("an executor runs its program again with the same buffers", "[executor]") {
  const auto p = redist::synthesize("{x: 2, y: 4}", "[{x, y}64, 6]", "[{y}64, 6]", {.element_bytes = 8});
  redist::host_backend host(8);
  redist::executor<std::int64_t, redist::host_backend> ex(host, p);
  auto in = filled_inputs<std::int64_t>(p);
  auto out = sentinel_outputs<std::int64_t>(p, -1);
  ex.run(in, out);
  CHECK(all_index_encoded(out));
  const auto held = ex.bytes_held();
  auto out2 = sentinel_outputs<std::int64_t>(p, -1);
  ex.run(in, out2);
  CHECK(all_index_encoded(out2));
  CHECK(ex.runs() == 2);
  CHECK(ex.bytes_held() == held);
  CHECK(ex.peak_bytes_held() == held);
}

TEST_CASE("step statistics count the bytes each rank receives", "[executor]") {
  // [{x}8, 4] -> [8, 4] on {x: 4}: one allgather of 4 blocks of 2x4 floats.
  const auto p = redist::synthesize("{x: 4}", "[{x}8, 4]", "[8, 4]");
  REQUIRE(p.steps.size() == 1);
  REQUIRE(p.steps[0].kind == redist::op::allgather);
  redist::host_backend host(4);
  redist::executor<float, redist::host_backend> ex(host, p);
  CHECK(all_index_encoded(ex.run(filled_inputs<float>(p))));
  REQUIRE(ex.stats().size() == 1);
  CHECK(ex.stats()[0].kind == redist::op::allgather);
  CHECK(ex.stats()[0].max_rank_bytes == 3 * 8 * sizeof(float));
  CHECK(ex.stats()[0].bytes_moved == 4 * 3 * 8 * sizeof(float));
  CHECK(ex.stats()[0].seconds >= 0.0);
  // Live data peaks with the tile and the gathered blocks: 8 + 32 elements.
  CHECK(ex.peak_bytes_live() == (8 + 32) * sizeof(float));
}

TEST_CASE("the program hash identifies a program and an element type", "[executor][hash]") {
  const auto p = redist::synthesize("{x: 4, y: 6}", "[3{x}12, 2{y}12]", "[2{y}12, 3{x}12]", {.goal = redist::objective::bytes});
  const auto q = redist::synthesize("{x: 4, y: 6}", "[3{x}12, 2{y}12]", "[2{y}12, 3{x}12]", {.goal = redist::objective::bytes});
  CHECK(redist::program_hash(p) == redist::program_hash(q));
  CHECK(redist::program_hash(p, redist::element_tag<float>()) != redist::program_hash(p, redist::element_tag<std::int32_t>()));
  auto r = p;
  REQUIRE_FALSE(r.steps.empty());
  for (auto& s : r.steps) {
    if (!s.members.empty()) {
      std::swap(s.members[0], s.members[1]);
      break;
    }
    if (!s.dest.empty()) {
      std::swap(s.dest[0], s.dest[1]);
      break;
    }
  }
  CHECK(redist::program_hash(p) != redist::program_hash(r));
  auto t = p;
  t.element_bytes = 8;
  CHECK(redist::program_hash(p) != redist::program_hash(t));
}

TEST_CASE("every element type shares one executor core, those of one size their moves; reductions stay in the element type",
          "[executor]") {
  using redist::host_backend;
  using redist::detail::executor_core;
  using redist::detail::storage_ops;
  using redist::detail::storage_t;
  STATIC_REQUIRE(std::is_same_v<storage_t<float, host_backend>, std::uint32_t>);
  STATIC_REQUIRE(std::is_same_v<storage_t<std::int32_t, host_backend>, std::uint32_t>);
  STATIC_REQUIRE(std::is_same_v<storage_t<double, host_backend>, std::uint64_t>);
  STATIC_REQUIRE(std::is_same_v<storage_t<std::int8_t, host_backend>, std::uint8_t>);
  // 8 bytes aligned to 4: not moved as std::uint64_t (aligned to 8), but as itself.
  STATIC_REQUIRE(std::is_same_v<storage_t<std::complex<float>, host_backend>, std::complex<float>>);
  STATIC_REQUIRE(std::is_same_v<storage_t<std::complex<double>, host_backend>, std::complex<double>>);  // 16 bytes
  using core = executor_core<host_backend>;
  STATIC_REQUIRE(std::is_base_of_v<core, redist::executor<float, host_backend>>);
  STATIC_REQUIRE(std::is_base_of_v<core, redist::executor<double, host_backend>>);
  STATIC_REQUIRE(std::is_base_of_v<core, redist::executor<std::complex<float>, host_backend>>);
  using moves32 = storage_ops<std::uint32_t, host_backend>;
  STATIC_REQUIRE(std::is_base_of_v<moves32, redist::executor<float, host_backend>>);
  STATIC_REQUIRE(std::is_base_of_v<moves32, redist::executor<std::int32_t, host_backend>>);
  STATIC_REQUIRE(!std::is_base_of_v<moves32, redist::executor<double, host_backend>>);

  // Reductions add and compare as float, not as the bits of a std::uint32_t.
  redist::host_backend host(2);
  const std::vector<float> a{1.5f, -2.25f, -3.5f, 0.125f}, b{0.25f, -0.5f, 1.0f, 2.0f};
  for (const auto& [kind, want] : std::vector<std::pair<std::string, std::vector<float>>>{
           {"sum", {1.75f, -2.75f, -2.5f, 2.125f}},
           {"max", {1.5f, -0.5f, 1.0f, 2.0f}},
           {"min", {0.25f, -2.25f, -3.5f, 0.125f}}}) {
    INFO(kind);
    for (const char* to : {"[4]", "[{x}4]"}) {  // allreduce, reducescatter
      INFO(to);
      const auto p = redist::synthesize("{x: 2}", "[4] " + kind + "{x}", to);
      redist::executor<float, host_backend> ex(host, p);
      std::vector<darray<float>> in;
      in.emplace_back(p.m, p.source, 0, a);
      in.emplace_back(p.m, p.source, 1, b);
      const auto out = ex.run(in);
      const std::uint64_t block = std::string(to) == "[4]" ? 0 : 2;  // rank d's elements: [block d, block d + size)
      for (const auto& t : out)
        for (std::uint64_t i = 0; i < t.size(); ++i) CHECK(t.span()[i] == want[block * t.device() + i]);
    }
  }
}

TEST_CASE("errors: nothing is touched and the message says what is wrong", "[executor][errors]") {
  const auto p = redist::synthesize("{x: 8}", "[{x}16, 8]", "[16, {x}8]");
  REQUIRE(p.steps.size() == 1);
  const auto in = filled_inputs<float>(p);

  SECTION("element type mismatch") {
    redist::host_backend host(8);
    redist::executor<double, redist::host_backend> ex(host, p);
    std::vector<darray<double>> din = filled_inputs<double>(p);
    auto out = sentinel_outputs<double>(p, -1.0);
    CHECK_THROWS_WITH(ex.run(din, out),
                      "element type mismatch: the program was planned for 4-byte elements, the array's elements have 8 bytes");
    CHECK(all_equal(out, -1.0));
  }
  SECTION("a communicator whose size is not the mesh's device count") {
    redist::host_backend host(4);
    redist::executor<float, redist::host_backend> ex(host, p);
    auto out = sentinel_outputs<float>(p, -1.0f);
    CHECK_THROWS_WITH(ex.run(in, std::span<darray<float>>(out).first(4)),
                      "the communicator has 4 ranks but the program's mesh {x: 8} has 8 devices");
    CHECK(all_equal(out, -1.0f));
  }
  SECTION("wrong buffer size") {
    redist::host_backend host(8);
    redist::executor<float, redist::host_backend> ex(host, p);
    auto bad = in;
    darray<float> gone = std::move(bad[5]);  // bad[5] is now an empty tile
    auto out = sentinel_outputs<float>(p, -1.0f);
    CHECK_THROWS_WITH(ex.run(bad, out), "wrong buffer size: input tile of rank 5 holds 0 elements, its type needs 16");
    CHECK(all_equal(out, -1.0f));
    std::vector<float> mem(3);
    CHECK_THROWS_WITH(darray<float>(p.m, p.target, 0, std::span<float>(mem)),
                      "wrong buffer size: a tile of shape [16, 1] needs 16 elements, the buffer holds 3");
  }
  SECTION("tiles of another type, mesh or device") {
    redist::host_backend host(8);
    redist::executor<float, redist::host_backend> ex(host, p);
    auto out = sentinel_outputs<float>(p, -1.0f);
    auto swapped = in;
    std::swap(swapped[0], swapped[1]);
    CHECK_THROWS_WITH(ex.run(swapped, out), "input tile of rank 0 belongs to device 1");
    CHECK_THROWS_WITH(ex.run(in, std::span<darray<float>>(out).first(7)),
                      "expected one output tile for each of the 8 local ranks, got 7");
    std::vector<darray<float>> wrong_type;
    for (redist::rank_t r = 0; r < 8; ++r) wrong_type.emplace_back(p.m, p.target, r);
    CHECK_THROWS_WITH(ex.run(wrong_type, out), "input tile of rank 0 has type [16, 1{x}8], the program expects [2{x}16, 8]");
    CHECK(all_equal(out, -1.0f));
    CHECK_THROWS_WITH(ex.run(in.front()), "expected one input tile for each of the 8 local ranks, got 1");
  }
  SECTION("a malformed program") {
    redist::host_backend host(8);
    auto bad = p;
    REQUIRE(bad.steps.front().kind == redist::op::alltoall);
    bad.steps.front().members[0] = 1;
    redist::executor<float, redist::host_backend> ex(host, bad);
    auto out = sentinel_outputs<float>(p, -1.0f);
    CHECK_THROWS_WITH(ex.run(in, out),
                      "invalid program: step 0 (alltoall): the groups must list every rank of the 8 devices exactly once");
    auto bad2 = p;
    bad2.steps.front().after.parts[1] = 2;
    redist::executor<float, redist::host_backend> ex2(host, bad2);
    CHECK_THROWS_WITH(ex2.run(in, out),
                      "invalid program: step 0 (alltoall): its recorded shape disagrees with its semantics (tile [16, 1])");
    auto bad3 = p;
    bad3.steps.pop_back();
    bad3.steps.push_back(redist::step{});
    bad3.steps.back().kind = redist::op::allpermute;
    bad3.steps.back().dest.assign(8, 0);
    redist::executor<float, redist::host_backend> ex3(host, bad3);
    CHECK_THROWS_WITH(ex3.run(in, out), "invalid program: step 0 (allpermute): dest must be a permutation of the ranks");
    auto bad4 = p;
    bad4.steps.front().parts = 3;  // every rank listed once, but 8 ranks make no groups of 3
    redist::executor<float, redist::host_backend> ex4(host, bad4);
    CHECK_THROWS_WITH(ex4.run(in, out), "invalid program: step 0 (alltoall): the 8 devices do not split into groups of 3");
    CHECK(all_equal(out, -1.0f));
  }
}

TEST_CASE("partial sums: allreduce and reducescatter add the partial values", "[executor][sums]") {
  redist::host_backend host(2);
  SECTION("allreduce: [4] sum{x} -> [4]") {
    const auto p = redist::synthesize("{x: 2}", "[4] sum{x}", "[4]");
    REQUIRE(p.steps.size() == 1);
    REQUIRE(p.steps[0].kind == redist::op::allreduce);
    redist::executor<std::int32_t, redist::host_backend> ex(host, p);
    std::vector<darray<std::int32_t>> in;
    in.emplace_back(p.m, p.source, 0, std::vector<std::int32_t>{1, 2, 3, 4});
    in.emplace_back(p.m, p.source, 1, std::vector<std::int32_t>{10, 20, 30, 40});
    const auto out = ex.run(in);
    for (const auto& t : out)
      CHECK(std::vector<std::int32_t>(t.span().begin(), t.span().end()) == std::vector<std::int32_t>{11, 22, 33, 44});
    CHECK(ex.stats()[0].max_rank_bytes == 2 * 1 * 4 * sizeof(std::int32_t) / 2);  // a ring all-reduce of 2
  }
  SECTION("reducescatter: [4] sum{x} -> [{x}4]") {
    const auto p = redist::synthesize("{x: 2}", "[4] sum{x}", "[{x}4]");
    REQUIRE(p.steps.size() == 1);
    REQUIRE(p.steps[0].kind == redist::op::reducescatter);
    redist::executor<std::int32_t, redist::host_backend> ex(host, p);
    std::vector<darray<std::int32_t>> in;
    in.emplace_back(p.m, p.source, 0, std::vector<std::int32_t>{1, 2, 3, 4});
    in.emplace_back(p.m, p.source, 1, std::vector<std::int32_t>{10, 20, 30, 40});
    const auto out = ex.run(in);
    CHECK(std::vector<std::int32_t>(out[0].span().begin(), out[0].span().end()) == std::vector<std::int32_t>{11, 22});
    CHECK(std::vector<std::int32_t>(out[1].span().begin(), out[1].span().end()) == std::vector<std::int32_t>{33, 44});
  }
  SECTION("fill_global_index splits every value into partials that add up to it") {
    const auto p = redist::synthesize("{x: 2, y: 3}", "[{x}6, 4] sum{y}", "[6, {x}4]", {.element_bytes = 8});
    redist::host_backend six(6);
    redist::executor<std::uint64_t, redist::host_backend> ex(six, p);
    const auto in = filled_inputs<std::uint64_t>(p);
    CHECK_FALSE(redist::check_global_index(in[0]).ok());  // a partial, not the value
    CHECK(all_index_encoded(ex.run(in)));
  }
  SECTION("an element type without + cannot add partial sums") {
    struct opaque {
      std::int32_t bits;
    };
    const auto p = redist::synthesize("{x: 2}", "[4] sum{x}", "[4]");
    redist::executor<opaque, redist::host_backend> ex(host, p);
    std::vector<darray<opaque>> in, out;
    for (redist::rank_t r = 0; r < 2; ++r) {
      in.emplace_back(p.m, p.source, r);
      out.emplace_back(p.m, p.target, r);
    }
    CHECK_THROWS_WITH(ex.run(in, out), "the program adds partial sums, which needs an element type with + and a backend "
                                       "with allreduce and reducescatter");
  }
}

namespace {

template <class T>
std::vector<T> values(const darray<T>& t) {
  return std::vector<T>(t.span().begin(), t.span().end());
}

/// Run p on fill_global_index data (partials of the source's kind), reduce any partials the
/// target keeps into their roots, and count the elements not equal to their index's value.
template <class T>
std::uint64_t wrong_after_run(const redist::program& p, redist::executor_options o = {}) {
  redist::host_backend host(p.devices());
  redist::executor<T, redist::host_backend> ex(host, p, o);
  const auto in = filled_inputs<T>(p);
  auto out = sentinel_outputs<T>(p, T(7));
  ex.run(in, out);
  redist::reduce_partials_into_roots(std::span<darray<T>>(out));
  std::uint64_t wrong = 0, checked = 0;
  for (const auto& t : out)
    if (redist::sum_root(p.m, p.target, t.device()) == t.device()) {
      const auto c = redist::check_global_index(t);
      wrong += c.mismatches;
      checked += c.checked;
    }
  CHECK(checked >= redist::global_size(p.target));  // every element, on every rank holding it
  return wrong;
}

}  // namespace

TEST_CASE("every reduction on the host backend: max, min, prod, avg beside sum, element by element", "[executor][sums]") {
  redist::host_backend host(2);
  using redist::reduction;
  const std::vector<std::int32_t> a{1, -2, 3, 40}, b{10, 20, -30, 4};
  auto run2 = [&](const char* from, const char* to) {
    const auto p = redist::synthesize("{x: 2}", from, to);
    REQUIRE(p.steps.size() == 1);
    redist::executor<std::int32_t, redist::host_backend> ex(host, p);
    std::vector<darray<std::int32_t>> in;
    in.emplace_back(p.m, p.source, 0, a);
    in.emplace_back(p.m, p.source, 1, b);
    return std::make_pair(p, ex.run(in));
  };
  SECTION("allreduce: [4] kind{x} -> [4]") {
    const std::vector<std::pair<std::string, std::vector<std::int32_t>>> want = {
        {"sum", {11, 18, -27, 44}}, {"max", {10, 20, 3, 40}}, {"min", {1, -2, -30, 4}},
        {"prod", {10, -40, -90, 160}}, {"avg", {5, 9, -13, 22}}};  // avg of integers truncates
    for (const auto& [kind, v] : want) {
      INFO(kind);
      const auto [p, out] = run2(("[4] " + kind + "{x}").c_str(), "[4]");
      CHECK(p.steps[0].kind == redist::op::allreduce);
      CHECK(redist::reduction_name(p.steps[0].reduce) == kind);
      CHECK(values(out[0]) == v);
      CHECK(values(out[1]) == v);
    }
  }
  SECTION("reducescatter: [4] kind{x} -> [{x}4]") {
    const std::vector<std::pair<std::string, std::vector<std::int32_t>>> want = {
        {"max", {10, 20, 3, 40}}, {"min", {1, -2, -30, 4}}, {"prod", {10, -40, -90, 160}}, {"avg", {5, 9, -13, 22}}};
    for (const auto& [kind, v] : want) {
      INFO(kind);
      const auto [p, out] = run2(("[4] " + kind + "{x}").c_str(), "[{x}4]");
      CHECK(p.steps[0].kind == redist::op::reducescatter);
      CHECK(values(out[0]) == std::vector<std::int32_t>{v[0], v[1]});
      CHECK(values(out[1]) == std::vector<std::int32_t>{v[2], v[3]});
    }
  }
  SECTION("float avg and prod, exactly") {
    const auto p = redist::synthesize("{x: 2}", "[3] avg{x}", "[3]");
    redist::executor<float, redist::host_backend> ex(host, p);
    std::vector<darray<float>> in;
    in.emplace_back(p.m, p.source, 0, std::vector<float>{1.0f, -3.0f, 0.25f});
    in.emplace_back(p.m, p.source, 1, std::vector<float>{2.0f, 5.0f, 0.75f});
    CHECK(values(ex.run(in)[1]) == std::vector<float>{1.5f, 1.0f, 0.5f});
    const auto q = redist::synthesize("{x: 2}", "[3] prod{x}", "[3]");
    redist::executor<float, redist::host_backend> ey(host, q);
    std::vector<darray<float>> jn;
    jn.emplace_back(q.m, q.source, 0, std::vector<float>{1.5f, -3.0f, 0.25f});
    jn.emplace_back(q.m, q.source, 1, std::vector<float>{2.0f, 5.0f, -8.0f});
    CHECK(values(ey.run(jn)[0]) == std::vector<float>{3.0f, -15.0f, -2.0f});
  }
  SECTION("several steps and groups, every element type, pending values kept or not") {
    // Reductions in two steps over groups of 3 and 2 (avg: means of means), on 12 devices.
    const std::vector<std::pair<std::string, std::string>> problems = {
        {"[{x}12, 6] K{y, z}", "[12, {x}6]"},           // reduced by reduce-scatters and all-reduces
        {"[{x}12, 6] K{y, z}", "[{y}12, 6]"},
        {"[{x}12, 6] K{y, z}", "[{x}12, {y}6] K{z}"},   // the z partials stay pending
        {"[12, 6] K{x, y, z}", "[{x}12, {z}6] K{y}"}};
    for (reduction r : redist::all_reductions) {
      for (const auto& [from, to] : problems) {
        const std::string k(redist::reduction_name(r));
        auto subst = [&](std::string s) {
          for (std::size_t at; (at = s.find('K')) != std::string::npos;) s.replace(at, 1, k);
          return s;
        };
        INFO(subst(from) << " -> " << subst(to));
        for (redist::objective goal : {redist::objective::bytes, redist::objective::time}) {
          const redist::device_mesh m = redist::parse_mesh("{x: 2, y: 3, z: 2}");
          auto p = redist::synthesize(m, redist::parse_type(m, subst(from)), redist::parse_type(m, subst(to)),
                                      {.element_bytes = 4, .goal = goal});
          for (const auto& s : p.steps)
            if (s.kind == redist::op::allreduce || s.kind == redist::op::reducescatter) CHECK(s.reduce == r);
          CHECK(wrong_after_run<float>(p) == 0);
          CHECK(wrong_after_run<std::int32_t>(p) == 0);
          CHECK(wrong_after_run<std::uint32_t>(p) == 0);
          CHECK(wrong_after_run<float>(p, {.pack_chunk_bytes = 8}) == 0);  // packed reduce-scatters, in pieces
          p.element_bytes = 8;
          CHECK(wrong_after_run<double>(p) == 0);
          CHECK(wrong_after_run<std::int64_t>(p) == 0);
          if (r == reduction::sum || r == reduction::prod)  // (complex avg: imaginary parts near 2^24)
            CHECK(wrong_after_run<std::complex<float>>(p) == 0);
        }
      }
    }
  }
  SECTION("a wrong reduction is seen: the check compares by the kind") {
    // The same data reduced by sum instead of max is not the array.
    auto p = redist::synthesize("{x: 2, y: 2}", "[{x}4, 4] max{y}", "[{x}4, {y}4]");
    REQUIRE(p.steps.size() == 1);
    CHECK(wrong_after_run<std::int32_t>(p) == 0);
    p.steps[0].reduce = reduction::sum;
    p.source.reduce = reduction::sum;  // a consistent program, run on max partials
    redist::host_backend four(4);
    redist::executor<std::int32_t, redist::host_backend> ex(four, p);
    std::vector<darray<std::int32_t>> in;
    for (redist::rank_t r = 0; r < 4; ++r) {
      in.emplace_back(p.m, p.source, r);
      const std::uint64_t s = redist::sum_index(p.m, p.source, r);
      redist::for_each_global(in.back(), [s](std::uint64_t g, std::int32_t& v) {
        v = redist::partial_value<std::int32_t>(g, s, 2, reduction::max);
      });
    }
    CHECK_FALSE(all_index_encoded(ex.run(in)));
  }
  SECTION("an element type without the reduction: one line before anything moves") {
    const auto p = redist::synthesize("{x: 2}", "[4] max{x}", "[{x}4]", {.element_bytes = 8});
    redist::executor<std::complex<float>, redist::host_backend> ex(host, p);
    std::vector<darray<std::complex<float>>> in, out;
    for (redist::rank_t r = 0; r < 2; ++r) {
      in.emplace_back(p.m, p.source, r);
      out.emplace_back(p.m, p.target, r);
      for (auto& v : out.back().span()) v = {7.0f, 7.0f};
    }
    CHECK_THROWS_WITH(ex.run(in, out), "the program reduces partial values by max, but the element type has no max "
                                       "(max and min need a type with <, not complex)");
    CHECK(all_equal(out, std::complex<float>(7.0f, 7.0f)));
    std::vector<darray<std::complex<float>>> tiles;
    tiles.emplace_back(p.m, p.source, 0);
    CHECK_THROWS_WITH(redist::fill_global_index(tiles[0]),
                      "fill_global_index: [4] max{x}: the element type has no max (max and min need a type with <, "
                      "not complex)");
  }
  SECTION("a step whose reduction is not the source's is refused") {
    auto p = redist::synthesize("{x: 2}", "[4] max{x}", "[{x}4]");
    p.steps[0].reduce = reduction::min;
    redist::executor<std::int32_t, redist::host_backend> ex(host, p);
    std::vector<darray<std::int32_t>> in;
    for (redist::rank_t r = 0; r < 2; ++r) in.emplace_back(p.m, p.source, r);
    CHECK_THROWS_WITH(ex.run(in), "invalid program: step 0 (reducescatter): it reduces by min, but the source's partial "
                                  "values combine by max");
  }
}

namespace {

/// Run p on `host` with every tile checked; returns the executor's peak bytes held and
/// checks that the inputs were not modified (bit for bit).
template <class T>
std::uint64_t run_checked(redist::host_backend& host, const redist::program& p, redist::executor_options o) {
  redist::executor<T, redist::host_backend> ex(host, p, o);
  const auto in = filled_inputs<T>(p);
  std::vector<std::vector<T>> copy;
  for (const auto& t : in) copy.emplace_back(t.span().begin(), t.span().end());
  auto out = sentinel_outputs<T>(p, T(7));
  ex.run(in, out);
  CHECK(all_index_encoded(out));
  for (std::size_t r = 0; r < in.size(); ++r) CHECK(std::equal(copy[r].begin(), copy[r].end(), in[r].span().begin()));
  CHECK(ex.bytes_held() == ex.peak_bytes_held());
  return ex.peak_bytes_held();
}

}  // namespace

TEST_CASE("the executor holds exactly its memory formula, and never writes the inputs", "[executor][memory]") {
  // The paper's workload, small: every program run with the host backend's blocks in place,
  // and packed with a pack chunk of 40 bytes (pieces that cut runs, many calls per step).
  auto w = redist::testing::paper_workload(1 << 10);
  w.max_multiplier = 8;
  std::uint64_t packed_steps = 0, multi = 0, zero_one_step = 0;
  for (const auto& pt : redist::testing::random_problems(w, 250, 0x6d656d32)) {
    INFO(pt.mesh << "  " << pt.from << " -> " << pt.to);
    const auto p = redist::synthesize(pt.mesh, pt.from, pt.to, {.element_bytes = 4});
    if (p.source.nsum > 0) continue;
    const std::uint64_t in_out = std::max(redist::local_size(p.m, p.source), redist::local_size(p.m, p.target)) * 4;
    redist::host_backend direct(p.devices());
    const std::uint64_t held = run_checked<float>(direct, p, {});
    CHECK(held == redist::testing::expected_bytes_held(p, 4));
    if (p.steps.size() <= 2) CHECK(held <= in_out);
    if (p.steps.size() == 1) zero_one_step += held == 0;
    multi += p.steps.size() > 1;
    redist::host_backend packing(p.devices(), {.strided_blocks = false});
    const redist::executor_options small{.pack_chunk_bytes = 40};
    const std::uint64_t held_packed = run_checked<float>(packing, p, small);
    CHECK(held_packed == redist::testing::expected_bytes_held(p, 4, {false, false}, 40));
    redist::executor<float, redist::host_backend> probe(packing, p, small);
    for (std::size_t s = 0; s < p.steps.size(); ++s) packed_steps += probe.path(s) == redist::block_path::packed;
  }
  CHECK(packed_steps > 50);
  CHECK(multi > 50);
  CHECK(zero_one_step > 10);
}

TEST_CASE("fused collectives: exact tiles, in place and packed, and the memory formula", "[executor][fuse]") {
  // The paper's workload's programs with every fusable pair fused (a profile where only
  // the pass counts, support/fuse_profile.hpp): the tiles come out exact on the host backend, with its
  // blocks in place and packed, and the executor holds its formula (fused steps pack whole).
  const redist::time_profile lat = redist::testing::fuse_all_profile();
  auto ws = redist::testing::mixed_workloads(1 << 10);
  ws.push_back(redist::testing::paper_workload(1 << 10));
  std::vector<redist::testing::problem_text> problems;
  std::uint64_t seed = 0x66757365;
  for (const auto& w : ws)
    for (const auto& pt : redist::testing::random_problems(w, 150, seed++)) problems.push_back(pt);
  std::size_t gathers = 0, alltoalls = 0;
  for (const auto& pt : problems) {
    INFO(pt.mesh << "  " << pt.from << " -> " << pt.to);
    auto p = redist::synthesize(pt.mesh, pt.from, pt.to, {.element_bytes = 4, .goal = redist::objective::bytes});
    if (p.source.nsum > 0) continue;
    redist::fuse_collectives(p, lat, 4);
    std::size_t fused = 0;
    for (const auto& s : p.steps) {
      fused += s.fused();
      gathers += s.fused() && s.kind == redist::op::allgather;
      alltoalls += s.fused() && s.kind == redist::op::alltoall;
    }
    if (fused == 0) continue;
    redist::host_backend direct(p.devices());
    CHECK(run_checked<float>(direct, p, {}) == redist::testing::expected_bytes_held(p, 4));
    redist::host_backend packing(p.devices(), {.strided_blocks = false});
    CHECK(run_checked<float>(packing, p, {.pack_chunk_bytes = 40}) ==
          redist::testing::expected_bytes_held(p, 4, {false, false}, 40));
  }
  INFO(gathers << " fused allgathers, " << alltoalls << " fused alltoalls");
  CHECK(gathers > 20);
  CHECK(alltoalls > 20);
}

TEST_CASE("the memory formula on named programs", "[executor][memory]") {
  SECTION("one all-to-all with contiguous blocks needs no buffer, even packing") {
    const auto p = redist::synthesize("{x: 2, y: 2}", "[{x, y}16, 4]", "[{y, x}16, 4]");
    REQUIRE(p.steps.size() == 1);
    redist::host_backend packing(4, {.strided_blocks = false});
    CHECK(run_checked<float>(packing, p, {}) == 0);
  }
  SECTION("the issue's case: in place it holds nothing; packed, two pack pieces") {
    const auto p = redist::synthesize("{x: 2, y: 4}", "[{x}64, {y}64]", "[{y, x}64, 64]");
    REQUIRE(p.steps.size() == 1);
    REQUIRE(p.steps[0].kind == redist::op::alltoall);
    redist::host_backend direct(8);
    CHECK(run_checked<float>(direct, p, {}) == 0);
    redist::host_backend packing(8, {.strided_blocks = false});
    // blocks of 32 x 16 / 4 = 128 floats, n = 4; 256-byte chunk: pieces of 16 floats
    CHECK(run_checked<float>(packing, p, {.pack_chunk_bytes = 256}) == 2 * 4 * 16 * sizeof(float));
    // by default each pack buffer holds at most half of max(in, out) = 256 floats: pieces of 64
    CHECK(run_checked<float>(packing, p, {}) == 2 * 4 * 64 * sizeof(float));
  }
  SECTION("a fused all-gather packs no sends: its receives fill the end tile, one collective") {
    // [{x}16, {y, z}8] -> [16, 8]: 16 elements per rank, 128 after, one gather of 8.
    const auto p = redist::synthesize("{x: 2, y: 2, z: 2}", "[{x}16, {y, z}8]", "[16, 8]");  // time: fused
    REQUIRE(p.steps.size() == 1);
    REQUIRE(p.steps[0].fused());
    redist::host_backend host(8);
    CHECK(run_checked<float>(host, p, {}) == 128 * sizeof(float));  // the whole block in one piece
    CHECK(run_checked<float>(host, p, {.pack_chunk_bytes = 256}) == 64 * sizeof(float));  // two pieces of 8
  }
  SECTION("Example 3.1: the intermediate tiles in one scratch buffer and the output tile") {
    const auto p = redist::synthesize("{x: 4, y: 6}", "[3{x}12, 2{y}12]", "[2{y}12, 3{x}12]", {.goal = redist::objective::bytes});
    REQUIRE(p.steps.size() >= 2);
    redist::host_backend host(24);
    const std::uint64_t held = run_checked<float>(host, p, {});
    CHECK(held > 0);
    CHECK(held <= 6 * sizeof(float));  // max(in, out) = 6 elements
    CHECK(held == redist::testing::expected_bytes_held(p, 4));
  }
}

TEST_CASE("outputs that overlap an input or another output are refused, nothing moved", "[executor][errors]") {
  const auto p = redist::synthesize("{x: 4}", "[{x}8, 4]", "[8, 4]");
  redist::host_backend host(4);
  redist::executor<float, redist::host_backend> ex(host, p);
  const auto in = filled_inputs<float>(p);
  std::vector<float> pool(4 * 32 + 4, -1.0f);
  std::vector<darray<float>> out;
  for (redist::rank_t r = 0; r < 4; ++r) out.emplace_back(p.m, p.target, r, std::span<float>(pool.data() + 32 * r, 32));
  // Rank 3's output starts 4 elements into rank 2's.
  std::vector<darray<float>> shifted;
  for (redist::rank_t r = 0; r < 4; ++r)
    shifted.emplace_back(p.m, p.target, r, std::span<float>(pool.data() + (r == 3 ? 2 * 32 + 4 : 32 * r), 32));
  CHECK_THROWS_WITH(ex.run(in, shifted),
                    "the output tile of rank 3 overlaps the output tile of rank 2: outputs must not share memory with "
                    "inputs or other outputs (the executor writes an output while it reads the inputs); nothing was moved");
  CHECK(std::all_of(pool.begin(), pool.end(), [](float v) { return v == -1.0f; }));
  // An output over an input.
  std::vector<darray<float>> over;
  for (redist::rank_t r = 0; r < 4; ++r) over.emplace_back(p.m, p.target, r, std::span<float>(pool.data() + 32 * r, 32));
  std::vector<darray<float>> in_view = in;  // rank 1's input: the last 2 elements of its output and 6 of rank 2's
  in_view[1] = darray<float>(p.m, p.source, 1, std::span<float>(pool.data() + 32 + 30, 8));
  CHECK_THROWS_WITH(ex.run(in_view, over),
                    "the input tile of rank 1 overlaps the output tile of rank 1: outputs must not share memory with "
                    "inputs or other outputs (the executor writes an output while it reads the inputs); nothing was moved");
  CHECK(std::all_of(pool.begin(), pool.end(), [](float v) { return v == -1.0f; }));
  // Inputs may share memory: they are only read.
  std::vector<float> shared(8);
  for (std::size_t i = 0; i < 8; ++i) shared[i] = static_cast<float>(i);
  std::vector<darray<float>> same_in;
  for (redist::rank_t r = 0; r < 4; ++r) same_in.emplace_back(p.m, p.source, r, std::span<float>(shared));
  ex.run(same_in, out);
  CHECK(out[2].span()[9] == 1.0f);  // block 1 of every output is rank 1's tile = shared
}
