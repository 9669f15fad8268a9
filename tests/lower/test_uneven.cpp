// Uneven dimensions (DESIGN.md section 2: tile ceil(n / k), tile i covers
// [i*t, min((i+1)*t, n)), possibly empty): the types and their boxes, the plans of
// lower/synthesize.hpp (the collective program of the rules' uneven forms and the exchange,
// chosen by predicted time) on thousands of random uneven problems, both candidates
// executed on the host backend with every element checked and checked by
// tests/support/verify.hpp and the executor's own check, the named cases of the issue, and
// the JAX and DTensor notations.
//
// The programs of the random problems are also written, one JSON document per line, to
// `uneven_programs.jsonl` in the working directory; the ctest `lower_uneven_python_check`
// runs tests/tools/check_program.py over every one of them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/core/dtensor.hpp"
#include "redist/core/jax.hpp"
#include "redist/core/offsets.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/program_json.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/program_check.hpp"
#include "redist/runtime/verify.hpp"
#include "support/memory_formula.hpp"
#include "support/random_problems.hpp"
#include "support/verify.hpp"

using namespace redist;

namespace {

std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges(const device_mesh& m, const dist_type& t, int d) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> v;
  for (std::uint64_t r = 0; r < m.devices; ++r) v.emplace_back(range_lo(m, t.dims[d], r), range_hi(m, t.dims[d], r));
  return v;
}

/// What running a program on the host backend found.
struct run_result {
  std::uint64_t checked = 0, wrong = 0;
  bool padding_kept = true;  ///< every output tile's padding still holds the sentinel
};

/// Run p on the host backend with index-encoded inputs (partials for pending sums) and
/// check every element of every target tile (of the sums of the partials where the target
/// keeps pending sums); output padding starts as a sentinel.
template <class T>
run_result run_on_host(const program& p) {
  host_backend host(static_cast<rank_t>(p.m.devices));
  executor<T, host_backend> ex(host, p);
  std::vector<darray<T>> in, out;
  for (rank_t r = 0; r < p.devices(); ++r) {
    in.emplace_back(p.m, p.source, r);
    fill_global_index(in.back());
    out.emplace_back(p.m, p.target, r);
    for (T& x : out.back().span()) x = T(-7);
  }
  ex.run(std::span<const darray<T>>(in), std::span<darray<T>>(out));
  run_result res;
  for (auto& t : out) {
    std::vector<bool> held(t.size(), false);
    const T* base = t.data();
    for_each_global(t, [&](std::uint64_t, const T& v) { held[static_cast<std::size_t>(&v - base)] = true; });
    for (std::size_t i = 0; i < t.size(); ++i)
      if (!held[i] && !(base[i] == T(-7))) res.padding_kept = false;
  }
  sum_partials_into_roots(std::span<darray<T>>(out));  // pending sums kept in the target
  for (auto& t : out) {
    if (sum_root(p.m, p.target, t.device()) != t.device()) continue;
    const tile_check c = check_global_index(t);
    res.checked += c.checked;
    res.wrong += c.mismatches;
  }
  return res;
}

}  // namespace

TEST_CASE("uneven types: ceil tiles, clipped boxes, printing and errors", "[uneven]") {
  const device_mesh m = parse_mesh("{x: 4, y: 2}");
  const dist_type t = parse_type(m, "[{x}7, 5]");
  CHECK(tile(m, t.dims[0]) == 2);
  CHECK(!even(m, t));
  CHECK(uneven_dim(m, t) == 0);
  CHECK(local_size(m, t) == 10);  // the padded tile: every rank's buffer is equal
  CHECK(std::string(type_text(m, t).view()) == "[2{x}7, 5]");
  CHECK(parse_type(m, "[2{x}7, 5]") == t);
  using R = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  // ranks 0-7 under {x: 4, y: 2}: x = r / 2
  CHECK(ranges(m, t, 0) == R{{0, 2}, {0, 2}, {2, 4}, {2, 4}, {4, 6}, {4, 6}, {6, 7}, {6, 7}});
  // n < k: empty tiles, [n, n)
  const dist_type small = parse_type(m, "[{y, x}3]");
  CHECK(tile(m, small.dims[0]) == 1);
  CHECK(ranges(m, small, 0) == R{{0, 1}, {1, 2}, {2, 3}, {3, 3}, {3, 3}, {3, 3}, {3, 3}, {3, 3}});
  // The lower bound counts the elements a rank really needs (its box), not the padding.
  CHECK(movement_lower_bound(m, t, parse_type(m, "[7, 5]")) == 7 * 5 - 1 * 5);
  CHECK(movement_lower_bound(m, t, t) == 0);
  // Errors keep their columns; a written tile must be ceil(n / k).
  auto fails = [&](const char* s, errc code, int col, const char* msg) {
    const auto r = parse_type_text(m, s);
    CHECK(r.err.code == code);
    CHECK(r.err.column == col);
    CHECK(r.err.message.str() == msg);
  };
  fails("[3{x}7]", errc::tile_mismatch, 1, "tile size 3 of dimension 0 should be 2 (global 7 / 4 tiles, rounded up)");
  fails("[1{x}8]", errc::tile_mismatch, 1, "tile size 1 of dimension 0 should be 2 (global 8 / 4 tiles)");
  fails("[{x}0]", errc::bad_size, 4, "global size 0");
  fails("[{x}4294967296, {y}4294967297]", errc::overflow, 16, "the global size of the array does not fit in 64 bits");
  // The collectives' rules take uneven types where they stay exact (core/rules.hpp): 7 in 4
  // gathers to one tile, or to 2 of 4 (2 + 2 = ceil(7 / 2)).
  CHECK(std::string(type_text(m, rule_allgather(m, t, 0, 2).value).view()) == "[7, 5]");
  CHECK(rule_allgather(m, t, 0, 1).ok());
  const auto wp = make_weak_problem(m, t, parse_type(m, "[7, 5]"));
  REQUIRE(wp.ok());
  CHECK(wp.value.ctx.uneven);
}

TEST_CASE("uneven plans: random problems run on the host backend, every element checked", "[uneven]") {
  // Meshes with axes of 2, 3, 4, 5, 6 and 12; 1-D to 6-D; pending sums in half.
  std::vector<testing::workload> ws;
  auto add = [&](std::vector<std::pair<std::string, std::uint64_t>> axes, int max_dims, bool sums) {
    testing::workload w;
    w.axes = std::move(axes);
    w.max_dims = max_dims;
    w.max_elements = 1 << 12;
    w.partial_sums = sums;
    ws.push_back(w);
  };
  for (bool sums : {false, true}) {
    add({{"x", 2}, {"y", 2}, {"z", 2}}, 6, sums);
    add({{"x", 3}, {"y", 4}}, 4, sums);
    add({{"x", 5}, {"y", 2}}, 4, sums);
    add({{"x", 6}}, 3, sums);
    add({{"x", 12}}, 2, sums);
    add({{"x", 2}, {"y", 3}, {"z", 5}}, 3, sums);
    add({{"data", 2}, {"model", 4}}, 3, sums);
  }
  const std::size_t count = testing::scaled(3000);
  std::ofstream jsonl("uneven_programs.jsonl");
  std::size_t problems = 0, with_sums = 0, empty_tiles = 0, programs = 0, collectives = 0, collectives_chosen = 0;
  std::size_t padded = 0, kept_sums = 0;  // exchanges to targets that keep pending sums
  std::uint64_t elements = 0, wrong = 0;
  double log_ratio = 0;
  std::size_t ratios = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::mt19937_64 rng(0x75657665 + i);
    const testing::problem_text pt = testing::random_uneven_problem(rng, ws[i % ws.size()]);
    INFO(pt.mesh << " " << pt.from << " -> " << pt.to);
    const device_mesh m = parse_mesh(pt.mesh);
    const dist_type a = parse_type(m, pt.from), b = parse_type(m, pt.to);
    REQUIRE((!even(m, a) || !even(m, b)));
    // synthesize takes the candidate of least predicted time (the built-in profile).
    const program p = synthesize(m, a, b, {.element_bytes = 4});
    const plan_choice c = choose_plan(m, a, b, {.element_bytes = 4});
    REQUIRE(!c.candidates.empty());
    CHECK(program_hash(c.chosen_program()) == program_hash(p));
    const std::uint64_t bound = movement_lower_bound(m, a, b);
    for (const plan_candidate& k : c.candidates) {
      const program& q = k.prog;
      INFO(k.name << ":\n" << program_json_text(q));
      CHECK(k.seconds == predicted_seconds(q, builtin_profile));  // priced as from scratch
      // Both checkers accept it; it keeps the memory bound.
      const auto v = testing::verify(q);
      REQUIRE(v.ok);
      REQUIRE(detail::check_program(q).error.empty());
      CHECK(q.memory_efficient());
      CHECK(q.peak_local_elements <= q.memory_bound_elements);
      // The exchange receives the lower bound (all it moves without pending sums).
      if (k.name == "exchange") {
        if (q.count(op::exchange) == 1) CHECK(q.steps.back().cost == bound);
        if (a.nsum == 0) CHECK(q.received_elements() == bound);
      } else {
        ++collectives;
        if (&k == &c.candidates[c.chosen]) ++collectives_chosen;
      }
      if (a.nsum == 0) CHECK(run_received_elements(q) >= bound);
      // Every element where the target puts it; a one-step program that runs as an
      // exchange never writes padding (collectives on padded tiles carry padding along, an
      // allreduce reduces whole tiles, and intermediates of longer programs may live in the
      // output tile).
      const run_result r = run_on_host<std::int32_t>(q);
      CHECK(r.wrong == 0);
      if (q.steps.size() == 1 && moves_as_exchange(q, 0)) CHECK(r.padding_kept);
      for (std::size_t j = 0; j < q.steps.size(); ++j) {  // collectives that ran on padded tiles
        const op o = q.steps[j].kind;
        padded += (o == op::allgather || o == op::alltoall || o == op::allpermute) && !moves_as_exchange(q, j);
      }
      elements += r.checked;
      wrong += r.wrong;
      // The JSON round trip, and the line for the Python checker.
      const std::string json = program_json_text(q);
      CHECK(program_hash(program_from_json_text(json)) == program_hash(q));
      std::string line = json;
      line.erase(std::remove(line.begin(), line.end(), '\n'), line.end());
      jsonl << line << '\n';
      ++programs;
    }
    // Every other problem with pending sums: a target that keeps those it does not
    // partition, planned by a collective that keeps them, or reduced, exchanged and made
    // pending again.
    dist_type kb = b;
    kb.nsum = 0;
    kb.reduce = a.reduce;
    for (int j = 0; j < a.nsum && i % 2 == 0; ++j)
      if (!(used_mask(b) >> a.sum[j] & 1u)) kb.sum[kb.nsum++] = a.sum[j];
    if (kb.nsum > 0 && check(m, kb).ok()) {
      INFO("target keeping sums: " << type_text(m, kb).view());
      for (const plan_candidate& k : choose_plan(m, a, kb, {.element_bytes = 4}).candidates) {
        INFO(k.name << ":\n" << program_json_text(k.prog));
        REQUIRE(testing::verify(k.prog).ok);
        REQUIRE(detail::check_program(k.prog).error.empty());
        CHECK(k.prog.peak_local_elements <= k.prog.memory_bound_elements);
        const run_result r = run_on_host<std::int32_t>(k.prog);
        CHECK(r.wrong == 0);
        elements += r.checked;
        wrong += r.wrong;
        std::string line = program_json_text(k.prog);
        line.erase(std::remove(line.begin(), line.end(), '\n'), line.end());
        jsonl << line << '\n';
        ++programs;
        kept_sums += k.name == "exchange";
      }
    }
    if (bound > 0 && a.nsum == 0) {  // what the chosen plan receives, against the bound
      log_ratio += std::log(static_cast<double>(run_received_elements(p)) / static_cast<double>(bound));
      ++ratios;
    }
    ++problems;
    with_sums += a.nsum > 0;
    for (const dist_type* t : {&a, &b})
      for (std::uint64_t q = 0; q < m.devices; ++q) empty_tiles += tile_box(m, *t, q).empty();
  }
  CHECK(problems == count);
  CHECK(wrong == 0);
  CHECK(collectives > count / 4);  // the uneven rules find collective programs often
  CHECK(padded > count / 4);       // and their collectives run on padded tiles
  CHECK(kept_sums * 1000 >= count);  // targets that keep pending sums no collective reaches
  std::printf("uneven: %zu problems (%zu with pending sums), %zu programs run (%zu collective candidates, %zu chosen, "
              "%zu collectives on padded tiles, %zu exchanges to targets keeping pending sums), %llu elements verified, "
              "%llu wrong, %zu empty tiles; received / lower bound of the chosen plans: geomean %.3f over %zu\n",
              problems, with_sums, programs, collectives, collectives_chosen, padded, kept_sums,
              static_cast<unsigned long long>(elements),
              static_cast<unsigned long long>(wrong), empty_tiles,
              ratios ? std::exp(log_ratio / static_cast<double>(ratios)) : 1.0, ratios);
}

TEST_CASE("uneven named case: a vocabulary of 50257 on {data: 2, model: 4}", "[uneven]") {
  const device_mesh m = parse_mesh("{data: 2, model: 4}");
  const std::uint64_t shape[] = {50257, 64};  // the embedding width does not matter here
  const dist_type a = from_jax(m, shape, "P('model', None)"), b = from_jax(m, shape, "P(None, 'model')");
  CHECK(std::string(type_text(m, a).view()) == "[12565{model}50257, 64]");
  CHECK(std::string(type_text(m, b).view()) == "[50257, 16{model}64]");
  CHECK(tile_box(m, a, 3).hi[0] == 50257);  // model 3 holds the short tile [37695, 50257)
  CHECK(tile_box(m, a, 3).extent(0) == 12562);
  for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    // The collective candidate is one all-to-all, as XLA's, run as XLA runs it, on padded
    // tiles: rows to columns, four blocks of 12565 rows clipped to the 50257 rows of the
    // tile after; columns to rows, 50257 rows sent in chunks of 12565 rows, the last one
    // 12562 and padding. The exchange candidate receives exactly what a rank lacks; at 3 MiB
    // a rank the built-in profile (MPI_Alltoall moves a byte slower than the exchange)
    // prefers it.
    const plan_choice c = choose_plan(m, from, to, {.element_bytes = 4});
    REQUIRE(c.candidates.size() == 2);
    const program& q = c.candidates[0].prog;
    REQUIRE(c.candidates[0].name == "collective");
    REQUIRE(q.steps.size() == 1);
    CHECK(q.steps[0].kind == op::alltoall);
    CHECK(q.steps[0].parts == 4);
    CHECK(!moves_as_exchange(q, 0));
    CHECK(run_received_elements(q) == 3 * 12565 * 16);
    CHECK(run_received_elements(c.candidates[1].prog) == movement_lower_bound(m, from, to));
    CHECK(c.candidates[0].seconds > c.candidates[1].seconds);
    const program p = synthesize(m, from, to, {.element_bytes = 4});
    CHECK(program_hash(p) == program_hash(c.candidates[1].prog));
    CHECK(q.peak_local_elements == 12565 * 64);
    for (const program* x : {&q, &c.candidates[1].prog}) {
      CHECK(testing::verify(*x).ok);
      const run_result r = run_on_host<float>(*x);
      CHECK(r.wrong == 0);
      CHECK(r.checked == 2 * 50257 * 64);  // every element, once per data replica
    }
  }
  // Each rank receives its column block of all 50257 rows but what it held.
  CHECK(movement_lower_bound(m, a, b) == 50257 * 16 - 12562 * 16);
}

TEST_CASE("uneven named case: a clipped all-gather is priced in the pieces it runs in", "[uneven]") {
  // [{x}13, 64] -> [13, 64] on {x: 8}: tiles of 2 rows (the last two empty), eight blocks
  // of 2 x 64 gathered into a tile of 13 rows, the last block past its end. The executor
  // receives such a step in pieces within half the end tile (832 elements of 4 bytes: 1664
  // bytes, 52 elements a block), so 3 all-gathers of 8 ranks (3 rounds each); measured on
  // MPI 8 ranks, 250-289 us against 54-63 us for the exchange, which is now chosen.
  const device_mesh m = parse_mesh("{x: 8}");
  const dist_type a = parse_type(m, "[{x}13, 64]"), b = parse_type(m, "[13, 64]");
  const plan_choice c = choose_plan(m, a, b, {.element_bytes = 4});
  REQUIRE(c.candidates.size() == 2);
  const program q = search_program(m, a, b, {.element_bytes = 4});  // the search's, priced on padded tiles
  REQUIRE(q.steps.size() == 1);
  CHECK(q.steps[0].kind == op::allgather);
  const box_states t = trace_states(q);
  CHECK(padded_clips(q, 0, t));
  CHECK(!moves_as_exchange(q, 0, t));
  CHECK(padded_block(q, 0, t, 128) == 128);
  const time_profile& P = builtin_profile;
  const double one_call = step_seconds(P, op::allgather, 8, 128, 832, 4);
  const double pieces = one_call + 2 * (P[op::allgather].latency + 3 * P[op::allgather].per_peer);
  CHECK(predicted_seconds(q, P) == Approx(pieces).epsilon(1e-12));
  // The weak paths priced as they run (clip_priced_program) find a collective program
  // faster than the one gather in pieces (a gather of 2, an all-to-all and a gather of 4:
  // 64.5 us against 100.4 us), still slower than the exchange.
  CHECK(c.candidates[0].seconds < 0.7 * pieces);
  CHECK(c.candidates[1].seconds < c.candidates[0].seconds);
  CHECK(c.candidates[1].seconds > one_call);  // priced as one call, the all-gather looked faster
  CHECK(c.chosen == 1);
  CHECK(program_hash(synthesize(m, a, b, {.element_bytes = 4})) == program_hash(c.candidates[1].prog));
  // A gather whose blocks tile the target exactly is one call: [{x}16, 64] -> [16, 64].
  const program even = synthesize(m, parse_type(m, "[{x}16, 64]"), parse_type(m, "[16, 64]"), {.element_bytes = 4});
  REQUIRE(even.steps.size() == 1);
  CHECK(!padded_clips(even, 0, trace_states(even)));
  CHECK(predicted_seconds(even, P) == Approx(step_seconds(P, op::allgather, 8, 128, 1024, 4)).epsilon(1e-12));
  for (const program* x : {&q, &c.candidates[0].prog, &c.candidates[1].prog}) {
    const run_result r = run_on_host<float>(*x);
    CHECK(r.wrong == 0);
    CHECK(r.checked == 13 * 64 * 8);
  }
}

TEST_CASE("uneven named case: the uneven gather's order chosen by the pieces it runs in", "[uneven]") {
  // XLA's OriginalValueWithTrivialShardingAnnotation (tests/peers/cases.json), scaled: [{a}5,
  // {b}8, 4] to replicated on {a: 8, b: 2}. The search, pricing gathers on padded tiles, gathers
  // the uneven a first (8 blocks of one row into a tile of 5: the last past its end), which runs
  // in pieces: 77.9 us. XLA gathers b first. Within max(in, out) the fastest is a gather of 2
  // of a's parts along dimension 0, a slice of dimension 1, then a gather of 4 along each: 56.9 us.
  const device_mesh m = parse_mesh("{a: 8, b: 2}");
  const dist_type a = parse_type(m, "[{a}5, {b}8, 4]"), b = parse_type(m, "[5, 8, 4]");
  const program searched = search_program(m, a, b, {.element_bytes = 4});
  const double before = predicted_seconds(searched, builtin_profile);
  const plan_choice c = choose_plan(m, a, b, {.element_bytes = 4});
  REQUIRE(c.candidates[c.chosen].name == "collective");
  const program& q = c.candidates[c.chosen].prog;
  CHECK(c.candidates[c.chosen].seconds == Approx(predicted_seconds(q, builtin_profile)).epsilon(1e-12));
  CHECK(c.candidates[c.chosen].seconds < 0.75 * before);
  CHECK(q.memory_efficient());
  const run_result r = run_on_host<float>(q);
  CHECK(r.wrong == 0);
  CHECK(r.checked == 5 * 8 * 4 * 16);
}

TEST_CASE("uneven named case: a batch of 6 on {x: 4} to replicated and back", "[uneven]") {
  const device_mesh m = parse_mesh("{x: 4}");
  const dist_type sharded = parse_type(m, "[{x}6, 32]"), whole = parse_type(m, "[6, 32]");
  CHECK(tile_box(m, sharded, 3).empty());  // ceil(6 / 4) = 2: tiles 2, 2, 2, 0
  for (const auto& [from, to] : {std::pair{sharded, whole}, std::pair{whole, sharded}}) {
    // Gathering boxes of 2, 2, 2 and 0 rows: the all-gather's four blocks of 2 rows reach
    // past the 6 rows of the tile after it, so it runs in three pieces (predicted 67.8 us;
    // MPI 4 ranks 35-49 us) and the exchange (34.9 us; 14 us) is chosen. Back, a dynamic
    // slice into ceil chunks.
    const program p = synthesize(m, from, to, {.element_bytes = 8});
    REQUIRE(p.steps.size() == 1);
    CHECK(p.steps[0].kind == (to == whole ? op::exchange : op::dynslice));
    CHECK(run_received_elements(p) == movement_lower_bound(m, from, to));
    CHECK(p.peak_local_elements == 6 * 32);
    CHECK(testing::verify(p).ok);
    const run_result r = run_on_host<double>(p);
    CHECK(r.wrong == 0);
    CHECK(r.padding_kept);
    CHECK(r.checked == (to == whole ? 4 * 6 * 32 : 6 * 32));
  }
  // Gathering: the rank with the empty tile receives all 6 rows.
  CHECK(movement_lower_bound(m, sharded, whole) == 6 * 32);
  CHECK(movement_lower_bound(m, whole, sharded) == 0);  // slicing moves nothing
}

TEST_CASE("uneven named case: [3, 3, 64, 128] kernels on a mesh of 8", "[uneven]") {
  const device_mesh m = parse_mesh("{x: 2, y: 4}");
  const std::uint64_t shape[] = {3, 3, 64, 128};
  const dist_type a = from_jax(m, shape, "P('x', 'y')"), b = from_jax(m, shape, "P(None, None, 'x', 'y')");
  CHECK(std::string(type_text(m, a).view()) == "[2{x}3, 1{y}3, 64, 128]");
  // Both candidates run exactly; at 72 KiB latency decides which one is chosen.
  const plan_choice c = choose_plan(m, a, b, {.element_bytes = 4});
  REQUIRE(c.candidates.size() == 2);
  for (const plan_candidate& k : c.candidates) {
    INFO(k.name);
    CHECK(testing::verify(k.prog).ok);
    if (k.name == "exchange") CHECK(run_received_elements(k.prog) == movement_lower_bound(m, a, b));
    const run_result r = run_on_host<float>(k.prog);
    CHECK(r.wrong == 0);
    CHECK(r.checked == 3 * 3 * 64 * 128);
  }
  CHECK(synthesize(m, a, b, {.element_bytes = 4}).steps.size() == c.chosen_program().steps.size());
  const device_mesh m8 = parse_mesh("{x: 8}");
  const program q = synthesize(m8, parse_type(m8, "[{x}3, 3, 64, 128]"), parse_type(m8, "[3, 3, 64, {x}128]"));
  CHECK(testing::verify(q).ok);
  CHECK(run_on_host<float>(q).wrong == 0);
}

TEST_CASE("uneven: pending sums are reduced; a target keeps them by collectives, or reduced and made pending again", "[uneven]") {
  const device_mesh m = parse_mesh("{x: 2, y: 2}");
  const dist_type a = parse_type(m, "[{x}5, 4] sum{y}"), b = parse_type(m, "[5, {y}4]");
  // The collective program reduce-scatters on the even dimension 1 (the padded tiles of the
  // uneven dimension 0 ride along), then gathers; the exchange candidate all-reduces first.
  const plan_choice c = choose_plan(m, a, b);
  REQUIRE(c.candidates.size() == 2);
  const program p = synthesize(m, a, b);
  CHECK(program_hash(p) == program_hash(c.chosen_program()));
  REQUIRE(p.steps.size() == 2);
  CHECK(p.steps[0].kind == op::reducescatter);
  CHECK(p.steps[0].members == std::vector<rank_t>{0, 1, 2, 3});  // y is the minor axis: {0, 1}, {2, 3}
  CHECK(p.steps[0].parts == 2);
  CHECK(p.steps[1].kind == op::allgather);
  const program& ex = c.candidates[c.candidates[0].name == "exchange" ? 0 : 1].prog;
  REQUIRE(ex.steps.size() == 2);
  CHECK(ex.steps[0].kind == op::allreduce);
  CHECK(ex.steps[1].kind == op::exchange);
  for (const plan_candidate& k : c.candidates) {
    CHECK(testing::verify(k.prog).ok);
    CHECK(detail::check_program(k.prog).error.empty());
    CHECK(run_on_host<std::int32_t>(k.prog).wrong == 0);
  }
  // Only the sums: an allreduce.
  const program only = synthesize(m, a, parse_type(m, "[{x}5, 4]"));
  CHECK(only.steps.size() == 1);
  CHECK(run_on_host<std::int32_t>(only).wrong == 0);
  // Sums kept in the target: an all-gather of the partial tiles of 3 and 2 rows.
  const program kept = synthesize(m, a, parse_type(m, "[5, 4] sum{y}"));
  REQUIRE(kept.steps.size() == 1);
  CHECK(kept.steps[0].kind == op::allgather);
  CHECK(testing::verify(kept).ok);
  CHECK(run_on_host<std::int32_t>(kept).wrong == 0);
  // Where no collective lands exactly within the bound (tiles of 3 and 2 rows to tiles of 2,
  // 1, 2 and 0), the exchange keeps no partial sums apart: it reduces them, exchanges, and
  // makes them pending again (the first of each pair along y holds the sum, the other 0).
  const device_mesh m3 = parse_mesh("{x: 2, y: 2, z: 2}");
  const dist_type a3 = parse_type(m3, "[{x}5] sum{y}"), b3 = parse_type(m3, "[{x, z}5] sum{y}");
  const plan_choice c3 = choose_plan(m3, a3, b3);
  REQUIRE(c3.candidates.size() == 1);
  CHECK(c3.reason ==
        "exchange: no collective program: no redistribution exists within the memory budget");
  const program& r3 = c3.candidates[0].prog;
  REQUIRE(r3.steps.size() == 3);
  CHECK(r3.steps[0].kind == op::allreduce);
  CHECK(r3.steps[1].kind == op::exchange);
  CHECK(r3.steps[2].kind == op::partial);
  CHECK(r3.target == b3);
  CHECK(r3.peak_local_elements == 3);
  // The executor: the all-reduced tile of 3 in scratch, the exchanged tile of 2 in the
  // output tile, where the partial step rewrites it (3 = max(in, out), 5 before).
  host_backend host3(8);
  CHECK(executor<std::int32_t, host_backend>(host3, r3).scratch_elements() == 3);
  CHECK(testing::verify(r3).ok);
  CHECK(detail::check_program(r3).error.empty());
  CHECK(run_on_host<std::int32_t>(r3).wrong == 0);
  CHECK(run_on_host<double>(synthesize(m3, parse_type(m3, "[{z}10, 5] sum{y}"), parse_type(m3, "[{x, z}10, 5] sum{y}"), {.element_bytes = 8}))
            .wrong == 0);
  // Where a collective keeps them, it is the only candidate.
  const plan_choice g = choose_plan(m, a, parse_type(m, "[5, 4] sum{y}"));
  REQUIRE(g.candidates.size() == 1);
  CHECK(g.reason == "collective: the target keeps pending sums and dimension 0 of size 5 is split unevenly into 2 "
                    "tiles: an exchange would reduce them first");
  // A program that exchanges without reducing is refused by the executor's check.
  program bad = ex;
  bad.steps.erase(bad.steps.begin());
  CHECK(detail::check_program(bad).error ==
        "invalid program: an exchange does not add partial sums: every pending sum must be reduced before the first "
        "exchange, and the target's pending values created after the last one");
}

TEST_CASE("uneven: hand-written steps on uneven tiles follow the box semantics or are refused", "[uneven]") {
  // An all-gather of boxes of 2, 2, 2 and 0 rows (DESIGN.md section 4), read from JSON, runs.
  const program g = program_from_json_text(R"({"format": "redist-program/1", "mesh": [["x", 4]], "global_shape": [6],
      "element_bytes": 4, "source": "[{x}6]", "target": "[6]",
      "steps": [{"op": "allgather", "concat_dim": 0, "groups": [[0, 1, 2, 3]]}]})");
  CHECK(detail::check_program(g).error.empty());
  CHECK(testing::verify(g).ok);
  CHECK(run_on_host<std::int32_t>(g).wrong == 0);
  // Members out of order: the boxes are not adjacent.
  program bad = g;
  bad.steps[0].members = {1, 0, 2, 3};
  CHECK(detail::check_program(bad).error ==
        "invalid program: step 0 (allgather): the boxes [2, 4) and [0, 2) are not adjacent along dimension 0");
  // The reduce-scatter on uneven tiles: equal chunks of the padded tile, which its parts
  // must divide (here dimension 1 of every tile, 4 by 2; dimension 0 is uneven).
  const device_mesh m2 = parse_mesh("{x: 2, y: 2}");
  program rs = synthesize(m2, parse_type(m2, "[{x}5, 4] sum{y}"), parse_type(m2, "[{x}5, 4]"));
  step r;
  r.kind = op::reducescatter;
  r.split_dim = 1;
  r.parts = 2;
  r.members = {0, 1, 2, 3};
  rs.target = parse_type(m2, "[{x}5, {y}4]");
  rs.steps = {r};
  CHECK(detail::check_program(rs).error.empty());
  CHECK(run_on_host<std::int32_t>(rs).wrong == 0);
  CHECK(program_from_json_text(R"({"format": "redist-program/1", "mesh": [["x", 2], ["y", 2]],
      "global_shape": [5, 4], "element_bytes": 4, "source": "[{x}5, 4] sum{y}", "target": "[{x}5, {y}4]",
      "steps": [{"op": "reducescatter", "split_dim": 1, "groups": [[0, 1], [2, 3]]}]})")
            .steps.size() == 1);
  // Parts that do not divide the padded tile (3 by 2): ceil-sized chunks of 2 and 1 rows,
  // the tiles of 3 in 2; the executor pads the send.
  program odd = synthesize(m2, parse_type(m2, "[{x}5, 3] sum{y}"), parse_type(m2, "[{x}5, 3]"));
  odd.target = parse_type(m2, "[{x}5, {y}3]");
  odd.steps = {r};
  odd.steps[0].cost = odd.cost_elements = 9;  // Fig. 11: the tile before, 3 x 3
  odd.steps[0].local_after = 6;               // 3 x 2
  odd.steps[0].after = shape_of(m2, odd.target);
  CHECK(detail::check_program(odd).error.empty());
  CHECK(testing::verify(odd).message == "");
  CHECK(run_on_host<std::int32_t>(odd).wrong == 0);
  CHECK(program_from_json_text(R"({"format": "redist-program/1", "mesh": [["x", 2], ["y", 2]],
      "global_shape": [5, 3], "element_bytes": 4, "source": "[{x}5, 3] sum{y}", "target": "[{x}5, {y}3]",
      "steps": [{"op": "reducescatter", "split_dim": 1, "groups": [[0, 1], [2, 3]]}]})")
            .steps.size() == 1);
  // Ceil-sized chunks of tiles of several (7 rows by 2: 4 and 3) are not the finer tiles
  // (tiles of 4): refused where the boxes leave the target.
  program off = synthesize(m2, parse_type(m2, "[{x}13] sum{y}"), parse_type(m2, "[{x}13]"));
  off.target = parse_type(m2, "[{y, x}13]");
  r.split_dim = 0;
  off.steps = {r};
  CHECK(detail::check_program(off).error ==
        "invalid program: the program leaves rank 1 with the box [4, 7), its target tile is [4, 8)");
  CHECK_FALSE(testing::verify(off).ok);
}

TEST_CASE("uneven types with pending values: one reduce-scatter where it is exact on the padded tiles", "[uneven][sums]") {
  // (mesh, source, target): the reduce-scatter splits every member's padded tile into equal
  // chunks; chunk m of tile b is tile b * F + m of the finer tiling (t / F = ceil(n / (k F))).
  const std::vector<std::array<const char*, 3>> cases = {
      {"{x: 2, y: 2}", "[{x}5, 4] S{y}", "[{x}5, {y}4]"},    // the uneven dimension is another one
      {"{x: 4, y: 2}", "[{x}14] S{y}", "[{y, x}14]"},        // 14 in 4 tiles of 4, then 8 of 2 (the last empty)
      {"{x: 4, y: 2}", "[{x}10, 6] S{y}", "[{y, x}10, 6]"},  // tiles of 3: not by 2, refused
      {"{x: 2, y: 3}", "[{x}7, 6] S{y}", "[{x}7, {y}6]"},
      {"{x: 3, y: 2}", "[{x}10, 4] S{y}", "[{y, x}10, 4]"}};  // 10 in 3 tiles of 4, then 6 of 2
  for (const auto& [mesh, from, to] : cases) {
    for (reduction kind : all_reductions) {
      const std::string k(reduction_name(kind));
      auto subst = [&](std::string s) { return s.replace(s.find('S'), 1, k); };
      const device_mesh m = parse_mesh(mesh);
      const dist_type a = parse_type(m, subst(from)), b = parse_type(m, to);
      INFO(mesh << " " << subst(from) << " -> " << to);
      const std::uint8_t y[] = {static_cast<std::uint8_t>(a.sum[0])};
      const int d = std::string(to).find("{y") == 1 ? 0 : 1;
      const result<dist_type> rule = rule_reducescatter(m, a, d, y, 1);
      if (tile(m, a.dims[d]) % sum_parts(m, a) != 0) {  // the 10 in 4 tiles of 3 case: not by 2
        CHECK(rule.err.message.str() == "reducescatter: the tile is not divisible by the summed axes");
        continue;
      }
      REQUIRE(rule.ok());
      CHECK(rule.value == b);
      for (objective goal : {objective::bytes, objective::time}) {
        const program p = synthesize(m, a, b, {.goal = goal});
        if (goal == objective::bytes) {  // the fewest bytes: the one reduce-scatter
          REQUIRE(p.steps.size() == 1);
          CHECK(p.steps[0].kind == op::reducescatter);
          CHECK(p.steps[0].reduce == kind);
        }
        CHECK(testing::verify(p).ok);
        CHECK(run_on_host<std::int32_t>(p).wrong == 0);
        CHECK(run_on_host<float>(p).wrong == 0);
        CHECK(program_hash(program_from_json_text(program_json_text(p))) == program_hash(p));
      }
    }
  }
}

TEST_CASE("uneven types with pending values: DTensor's 13 x 3, one reduce-scatter of ceil-sized chunks, padded",
          "[uneven][sums]") {
  // (mesh, source, target, split dimension): a dimension of one tile split into F chunks of
  // ceil(n / F), the last ones short or empty (13 by 4: 4, 4, 4, 1), which are the tiles of
  // n in F; the executor pads every member's send to F chunks of the new tile.
  struct rs_case {
    const char *mesh, *from, *to;
    int d;
  };
  const std::vector<rs_case> cases = {
      {"{x: 4}", "[13, 3] S{x}", "[{x}13, 3]", 0},               // DTensor's Partial() -> Shard(0)
      {"{x: 4}", "[3, 13] S{x}", "[3, {x}13]", 1},               // strided chunks
      {"{x: 4, y: 2}", "[{y}5, 13] S{x}", "[{y}5, {x}13]", 1},  // another dimension uneven too
      {"{x: 2, y: 3}", "[7, {x}5] S{y}", "[{y}7, {x}5]", 0},    // 7 by 3: 3, 3, 1
      {"{x: 3}", "[4, 5] S{x}", "[{x}4, 5]", 0}};               // 4 by 3: 2, 2, 0
  for (const rs_case& rc : cases) {
    for (reduction kind : all_reductions) {
      const std::string k(reduction_name(kind));
      auto subst = [&](std::string s) { return s.replace(s.find('S'), 1, k); };
      const device_mesh m = parse_mesh(rc.mesh);
      const dist_type a = parse_type(m, subst(rc.from)), b = parse_type(m, rc.to);
      INFO(rc.mesh << " " << subst(rc.from) << " -> " << rc.to);
      std::uint8_t xs[max_subaxes]{};
      for (int q = 0; q < a.nsum; ++q) xs[q] = a.sum[a.nsum - 1 - q];  // minor-to-major: the whole axis
      const result<dist_type> rule = rule_reducescatter(m, a, rc.d, xs, a.nsum);
      REQUIRE(rule.ok());
      CHECK(rule.value == b);
      std::uint64_t elements = 1;
      for (int d = 0; d < a.rank; ++d) elements *= a.dims[d].global;
      for (objective goal : {objective::bytes, objective::time}) {
        const program p = synthesize(m, a, b, {.goal = goal});
        REQUIRE(p.steps.size() == 1);
        CHECK(p.steps[0].kind == op::reducescatter);
        CHECK(p.steps[0].split_dim == rc.d);
        CHECK(p.steps[0].reduce == kind);
        CHECK(detail::check_program(p).error.empty());
        CHECK(testing::verify(p).ok);
        const run_result ri = run_on_host<std::int32_t>(p), rf = run_on_host<float>(p);
        CHECK(ri.wrong == 0);
        CHECK(ri.checked == elements);
        CHECK(rf.wrong == 0);
        CHECK(rf.checked == elements);
        CHECK(program_hash(program_from_json_text(program_json_text(p))) == program_hash(p));
        // The padded send: F chunks of the new tile, packed on the host backend too, in
        // pieces (of one element each under an 8-byte chunk: the data still exact).
        host_backend host(static_cast<rank_t>(p.m.devices));
        executor<float, host_backend> ex(host, p);
        CHECK(ex.path(0) == block_path::packed);
        CHECK(ex.pack_send_elements() > 0);
        CHECK(ex.pack_send_elements() <= p.steps[0].parts * local_size(m, b));
        CHECK(ex.peak_bytes_held() == ex.pack_send_elements() * sizeof(float));  // one step: no scratch
        CHECK(ex.peak_bytes_held() == testing::expected_bytes_held(p, sizeof(float)));
        executor<std::int32_t, host_backend> small(host, p, {.pack_chunk_bytes = 8});
        CHECK(small.pack_send_elements() == p.steps[0].parts);
        CHECK(small.peak_bytes_held() == testing::expected_bytes_held(p, 4, {false, false}, 8));
        std::vector<darray<std::int32_t>> in;
        for (rank_t r = 0; r < p.devices(); ++r) {
          in.emplace_back(p.m, p.source, r);
          fill_global_index(in.back());
        }
        std::vector<darray<std::int32_t>> out = small.run(std::span<const darray<std::int32_t>>(in));
        for (const auto& t : out) CHECK(check_global_index(t).ok());
      }
    }
  }
  // The received elements count the padded chunks: 3 of 4 x 3 in the 13 x 3 case.
  const device_mesh m4 = parse_mesh("{x: 4}");
  const program p = synthesize(m4, parse_type(m4, "[13, 3] sum{x}"), parse_type(m4, "[{x}13, 3]"));
  CHECK(p.received_elements() == 3 * 12);
  CHECK(run_received_elements(p) == 3 * 12);
  CHECK(p.cost_elements == 39);  // Fig. 11: the tile before
  // A dimension shorter than the parts (its padded send would be more than twice the tile)
  // reduces with an allreduce.
  const device_mesh m6 = parse_mesh("{x: 6}");
  const dist_type one = parse_type(m6, "[1, 4] max{x}"), sliced = parse_type(m6, "[{x}1, 4]");
  const std::uint8_t x6[] = {1, 0};  // minor-to-major: the whole x
  CHECK(rule_reducescatter(m6, one, 0, x6, 2).err.message.str() ==
        "reducescatter: the tile is shorter than the summed axes (reduce with an allreduce)");
  const program q = synthesize(m6, one, sliced);
  CHECK(q.count(op::reducescatter) == 0);
  CHECK(q.count(op::allreduce) == 1);
  CHECK(run_on_host<std::int32_t>(q).wrong == 0);
}

TEST_CASE("uneven notations: JAX pads like redist, DTensor's nested chunks only where they coincide", "[uneven]") {
  const device_mesh m = parse_mesh("{x: 2, y: 3}");
  const std::uint64_t ten[] = {10}, twelve[] = {12}, six[] = {6};
  CHECK(from_jax(m, ten, "P(('x', 'y'))") == parse_type(m, "[{y, x}10]"));
  // A single Shard is torch.chunk: ceil-sized chunks, the last ones short or empty.
  CHECK(from_dtensor(m, six, "[Shard(0), Replicate()]") == parse_type(m, "[{x}6]"));
  CHECK(from_dtensor(parse_mesh("{x: 4}"), six, "[Shard(0)]") == parse_type(parse_mesh("{x: 4}"), "[2{x}6]"));
  // Nested chunks: 10 by 2 then by 3 is 2 2 1 2 2 1; ceil(10 / 6) tiles are 2 2 2 2 2 0.
  const char* differ =
      "dimension 0 of size 10: DTensor's nested chunks have lengths 2 2 1 2 2 1, redist's tiles "
      "(ceil(10 / 6)) 2 2 2 2 2 0; the placements and the type put data in different places";
  CHECK_THROWS_WITH(from_dtensor(m, ten, "[Shard(0), Shard(0)]"), Catch::Contains(differ));
  CHECK_THROWS_WITH(to_dtensor(m, parse_type(m, "[{y, x}10]")),
                    Catch::Contains("DTensor's nested chunks have lengths 2 2 1 2 2 1"));
  // Where they coincide (12 = 2 x 3 x 2; 7 over 2 x 2 is 2 2 2 1 both ways) they map.
  CHECK(from_dtensor(m, twelve, "[Shard(0), Shard(0)]") == parse_type(m, "[{y, x}12]"));
  const device_mesh m22 = parse_mesh("{x: 2, y: 2}");
  const std::uint64_t seven[] = {7};
  CHECK(from_dtensor(m22, seven, "[Shard(0), Shard(0)]") == parse_type(m22, "[{y, x}7]"));
  CHECK(to_dtensor(m22, parse_type(m22, "[{y, x}7]")) == "[Shard(0), Shard(0)]");
}
