// Tests of lower/between.hpp (issue 25): redistributions between meshes on
// device sets, planned by plan_between and run on the host backend over the
// whole world.
//
// Random problems across every relation of device sets
// (tests/support/between_problems.hpp), even and uneven, with pending sums: the
// chosen program checks (detail::check_program), keeps to the memory bound,
// survives the JSON round trip and leaves every world rank with exactly its
// target tile (every element checked) or nothing; every candidate runs on a
// share of them, the exchange reaches the data-movement lower bound rank by
// rank, and the relabelled plan is never predicted slower and runs right. Then
// named cases (a pipeline boundary, a checkpoint 8 -> 6, a grid 2x4 -> 4x2
// relabelled) and bad input.
//
// The programs the random problems check are also written, one JSON document a
// line, to `between_programs.jsonl` in the working directory; the ctest
// `lower_between_python_check` runs tests/tools/check_program.py over them.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/core/placement.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/between.hpp"
#include "redist/program_json.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/program_check.hpp"
#include "redist/runtime/verify.hpp"
#include "support/between_problems.hpp"
#include "support/between_run.hpp"
#include "support/random_problems.hpp"
#include "support/test_boxes.hpp"

namespace {

using redist::darray;
using redist::placed_layout;
using redist::program;
using namespace redist::testing;

bool every = false;              // every candidate and the relabelled plan on every problem
std::ofstream* jsonl = nullptr;  // the programs checked, one JSON document a line

struct stats {
  std::uint64_t problems = 0, skipped = 0, elements = 0, candidates_run = 0, exchanges_bounded = 0, relabelled = 0,
                relabel_taken = 0, all_candidates = 0, single_device = 0, empty_mesh = 0, replicated = 0, resized = 0,
                sums = 0, target_sums = 0, uneven = 0;
  std::map<std::string, std::uint64_t> chosen, present, rel;
  std::vector<std::string> failures;
  void fail(const between_problem& pr, const std::string& what, const std::string& why) {
    if (failures.size() < 40)
      failures.push_back(pr.text.text() + " [" + what + "]: " + why);
    else if (failures.size() == 40)
      failures.push_back("...");
  }
};

/// Plan, check and run problem pr (the share of its candidates and relabelled plan by n and
/// `every`), counted in st; its choice (no candidates where planning failed).
template <class T>
redist::plan_choice one_problem(const between_problem& pr, std::uint64_t n, stats& st) {
  const redist::between_options plain{{.element_bytes = sizeof(T)}, false};
  redist::plan_choice c;
  try {
    c = redist::plan_between(pr.a, pr.b, pr.world, plain);
  } catch (const redist::redist_error& e) {
    st.fail(pr, "plan_between", e.what());
    return {};
  }
  for (const redist::plan_candidate& k : c.candidates)  // priced with its exchange's sizes as built
    if (k.seconds != redist::predicted_seconds(k.prog, redist::builtin_profile))
      st.fail(pr, k.name, "predicted " + std::to_string(k.seconds) + " s, from scratch " +
                              std::to_string(redist::predicted_seconds(k.prog, redist::builtin_profile)) + " s");
  ++st.problems;
  ++st.rel[relation_name(pr.text.rel)];
  st.sums += pr.a.type.nsum > 0;
  st.single_device += pr.a.pm.mesh.devices == 1 || pr.b.pm.mesh.devices == 1;
  st.resized += pr.a.pm.mesh.devices != pr.b.pm.mesh.devices;
  st.empty_mesh += pr.a.pm.mesh.naxes == 0 || pr.b.pm.mesh.naxes == 0;
  std::uint64_t target_elements = 0, global = 1;
  for (std::uint64_t q = 0; q < pr.b.pm.mesh.devices; ++q)
    target_elements += redist::tile_box(pr.b.pm.mesh, pr.b.type, q).size();
  for (int d = 0; d < pr.b.type.rank; ++d) global *= pr.b.type.dims[d].global;
  st.replicated += pr.b.type.nsum == 0 && target_elements > global;
  st.target_sums += pr.b.type.nsum > 0;
  st.uneven += !redist::even(pr.a.pm.mesh, pr.a.type) || !redist::even(pr.b.pm.mesh, pr.b.type);
  const auto& w = c.candidates[c.chosen];
  ++st.chosen[w.name];
  for (const auto& k : c.candidates) ++st.present[k.name];
  if (w.prog.world_size() != pr.world)
    st.fail(pr, w.name, "the program's world is " + std::to_string(w.prog.world_size()));
  // The target's ranks in the program are the problem's (no relabelling asked).
  const std::vector<std::int64_t> want = pr.b.pm.positions(pr.world), got = target_positions(w.prog);
  if (want != got) st.fail(pr, w.name, "the program puts the target on other ranks");
  if (std::string e = check_between_program<T>(w.prog, pr.a, pr.b, jsonl); !e.empty())
    st.fail(pr, "chosen " + w.name, e);
  st.elements += target_elements;
  if (pr.b.type.nsum == 0 && !has_between_candidate(c, "exchange")) st.fail(pr, "exchange", "no exchange candidate");
  // The exchange candidate receives exactly the lower bound, rank by rank.
  for (const auto& k : c.candidates)
    if (k.name == "exchange") {
      if (std::string e = check_between_exchange_bound(k.prog, pr.a); !e.empty())
        st.fail(pr, "exchange bound", e);
      else
        ++st.exchanges_bounded;
    }
  // Every candidate on a share of the problems.
  if (every || n % 10 == 0) {
    ++st.all_candidates;
    for (std::size_t i = 0; i < c.candidates.size(); ++i) {
      if (i == c.chosen) continue;
      ++st.candidates_run;
      if (std::string e = check_between_program<T>(c.candidates[i].prog, pr.a, pr.b, jsonl); !e.empty())
        st.fail(pr, "candidate " + c.candidates[i].name, e);
    }
  }
  // The relabelled plan on another share.
  if (every || n % 15 == 7) {
    ++st.relabelled;
    redist::plan_choice r;
    try {
      r = redist::plan_between(pr.a, pr.b, pr.world, {{.element_bytes = sizeof(T)}, true});
    } catch (const redist::redist_error& e) {
      st.fail(pr, "plan_between relabel", e.what());
      return c;
    }
    const auto& rw = r.candidates[r.chosen];
    if (rw.seconds > w.seconds)
      st.fail(pr, "relabel",
              "predicted " + std::to_string(rw.seconds) + " s, without relabelling " + std::to_string(w.seconds));
    // The same ranks hold the target, maybe in another order.
    const std::vector<std::int64_t> rp = target_positions(rw.prog);
    for (std::uint64_t q = 0; q < pr.world; ++q)
      if ((rp[q] < 0) != (want[q] < 0)) st.fail(pr, "relabel", "the target moved to other ranks");
    st.relabel_taken += rp != want;
    if (std::string e = check_between_program<T>(rw.prog, pr.a, pr.b, jsonl); !e.empty())
      st.fail(pr, "relabelled " + rw.name, e);
  }
  return c;
}

}  // namespace

TEST_CASE("random redistributions between meshes on device sets run exactly", "[between][random]") {
  const auto t0 = std::chrono::steady_clock::now();
  // REDIST_BETWEEN_PROBLEMS=n REDIST_BETWEEN_SEED=s REDIST_BETWEEN_ALL=1: more
  // problems, another seed, every candidate and the relabelled plan on every
  // problem (exploration; the counts below are for the defaults).
  const char* env_n = std::getenv("REDIST_BETWEEN_PROBLEMS");
  const char* env_seed = std::getenv("REDIST_BETWEEN_SEED");
  const std::uint64_t count = env_n ? std::strtoull(env_n, nullptr, 10) : 3000;
  every = std::getenv("REDIST_BETWEEN_ALL") != nullptr;
  std::mt19937 rng(env_seed ? static_cast<std::uint32_t>(std::strtoul(env_seed, nullptr, 10)) : 0x25u);
  const between_workload wl;
  std::ofstream out("between_programs.jsonl");
  jsonl = &out;
  stats st;
  std::uint64_t tries = 0;
  while (st.problems < count && tries < 10 * count) {
    ++tries;
    const between_text t = random_between(rng, wl);
    between_problem pr;
    if (!parse_between(t, pr)) {
      ++st.skipped;
      continue;
    }
    if (tries % 2 == 0)
      one_problem<std::int64_t>(pr, st.problems, st);
    else
      one_problem<float>(pr, st.problems, st);
  }
  jsonl = nullptr;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string rels, chosen, present;
  for (const auto& [k, v] : st.rel) rels += " " + k + " " + std::to_string(v);
  for (const auto& [k, v] : st.chosen) chosen += " " + k + " " + std::to_string(v);
  for (const auto& [k, v] : st.present) present += " " + k + " " + std::to_string(v);
  std::printf(
      "between: %llu problems (%llu ill-formed skipped; %llu with a "
      "single-device mesh (%llu of them {}), %llu with a replicated target, %llu between meshes of different sizes; "
      "%llu with pending sums, %llu keeping some, %llu uneven), "
      "%llu target elements checked; relations:%s; chosen:%s; "
      "candidates present:%s; every candidate run on %llu problems "
      "(%llu besides the chosen), "
      "%llu exchanges at the lower bound, %llu relabelled (%llu in "
      "another order); %.2f s\n",
      static_cast<unsigned long long>(st.problems), static_cast<unsigned long long>(st.skipped),
      static_cast<unsigned long long>(st.single_device), static_cast<unsigned long long>(st.empty_mesh),
      static_cast<unsigned long long>(st.replicated), static_cast<unsigned long long>(st.resized),
      static_cast<unsigned long long>(st.sums), static_cast<unsigned long long>(st.target_sums),
      static_cast<unsigned long long>(st.uneven), static_cast<unsigned long long>(st.elements), rels.c_str(),
      chosen.c_str(), present.c_str(), static_cast<unsigned long long>(st.all_candidates),
      static_cast<unsigned long long>(st.candidates_run), static_cast<unsigned long long>(st.exchanges_bounded),
      static_cast<unsigned long long>(st.relabelled), static_cast<unsigned long long>(st.relabel_taken), s);
  for (const std::string& f : st.failures) UNSCOPED_INFO(f);
  CHECK(st.failures.empty());
  CHECK(st.problems >= 3000);
  CHECK(st.single_device >= 100);
  CHECK(st.empty_mesh >= 100);
  CHECK(st.replicated >= 500);
  CHECK(st.resized >= 500);
  CHECK(st.target_sums >= 15);
  CHECK(st.all_candidates >= 300);
  CHECK(st.relabelled >= 200);
  for (int r = 0; r < relation_count; ++r) CHECK(st.rel[relation_name(static_cast<relation>(r))] >= 100);
}

TEST_CASE("random targets with pending sums on another mesh: made pending after the move", "[between][random]") {
  // Targets on another placed mesh with pending axes of their own (DTensor's Partial(),
  // Shardy's unreduced axes), sources with or without: where no collective keeps them (the
  // ranks differ), the exchange and two-phase candidates move the data reduced, then the
  // target mesh's plan makes the axes pending. Every candidate on every problem.
  std::mt19937 rng(0x5e25);
  between_workload wl;
  wl.sums_elsewhere = true;
  std::ofstream out("between_programs.jsonl", std::ios::app);  // after the case above (ctest runs it first)
  jsonl = &out;
  every = true;
  stats st;
  std::uint64_t tries = 0, moved = 0, two_phase = 0;
  const std::uint64_t count = redist::testing::scaled(400);
  while (st.target_sums < count && tries < 100 * count) {
    ++tries;
    between_problem pr;
    if (!parse_between(random_between(rng, wl), pr) || pr.b.type.nsum == 0 || pr.a.pm == pr.b.pm) continue;
    const redist::plan_choice c =
        tries % 2 == 0 ? one_problem<std::int64_t>(pr, st.problems, st) : one_problem<float>(pr, st.problems, st);
    if (c.candidates.empty()) continue;  // not planned: a failure recorded
    if (has_between_candidate(c, "collective")) continue;  // it keeps them as they are
    if (!has_between_candidate(c, "exchange")) st.fail(pr, "exchange", "no exchange candidate");
    ++moved;
    two_phase += has_between_candidate(c, "two-phase");
  }
  every = false;
  jsonl = nullptr;
  std::printf("between, targets with pending sums on another mesh: %llu problems (%llu with pending sums in the "
              "source, %llu uneven), %llu candidates besides the chosen run; %llu moved and made pending (no "
              "collective), %llu of them with a two-phase candidate\n",
              static_cast<unsigned long long>(st.problems), static_cast<unsigned long long>(st.sums),
              static_cast<unsigned long long>(st.uneven), static_cast<unsigned long long>(st.candidates_run),
              static_cast<unsigned long long>(moved), static_cast<unsigned long long>(two_phase));
  for (const std::string& f : st.failures) UNSCOPED_INFO(f);
  CHECK(st.failures.empty());
  CHECK(st.target_sums == count);
  CHECK(st.sums >= count / 8);
  CHECK(moved >= count / 2);
  CHECK(two_phase >= count / 10);
}

namespace {

/// The problem from text (a named case).
between_problem named(std::uint64_t W, const char* from_mesh, const char* from, const char* to_mesh, const char* to) {
  between_problem pr;
  const between_text t{W, relation::other, from_mesh, to_mesh, from, to};
  REQUIRE(parse_between(t, pr));
  return pr;
}

/// Plan, check and run every candidate of a named case (int64 elements); the
/// choice.
redist::plan_choice plan_and_run(const between_problem& pr, bool relabel = false) {
  const redist::plan_choice c = redist::plan_between(pr.a, pr.b, pr.world, {{.element_bytes = 8}, relabel});
  std::printf("%s%s: %s\n", pr.text.text().c_str(), relabel ? " (relabel)" : "", c.reason.c_str());
  for (const auto& k : c.candidates) {
    INFO(pr.text.text() << " candidate " << k.name);
    CHECK(check_between_program<std::int64_t>(k.prog, pr.a, pr.b) == "");
    if (k.name == "exchange") CHECK(check_between_exchange_bound(k.prog, pr.a) == "");
  }
  return c;
}

const program& candidate(const redist::plan_choice& c, const std::string& name) {
  for (const auto& k : c.candidates)
    if (k.name == name) return k.prog;
  FAIL("no candidate " << name);
  return c.candidates.front().prog;
}

}  // namespace

TEST_CASE(
    "pipeline boundary: [B, S, H] from stage {dp: 2, tp: 2} on 0-3 to "
    "the next on 4-7",
    "[between][named]") {
  const auto pr = named(8, "{dp: 2, tp: 2} @ [0, 1, 2, 3]", "[{dp}8, 16, {tp}32]", "{dp: 2, tp: 2} @ [4, 5, 6, 7]",
                        "[8, {tp}16, 32]");
  const auto c = plan_and_run(pr);
  REQUIRE(has_between_candidate(c, "exchange"));
  CHECK_FALSE(has_between_candidate(c, "collective"));  // disjoint ranks
  // The target ranks hold nothing before: each receives its whole tile, 8 x 8
  // x 32.
  CHECK(redist::run_received_elements(candidate(c, "exchange")) == 8 * 8 * 32);
  const program& p = c.chosen_program();
  CHECK(p.world_size() == 8);
  CHECK(p.target_devices == std::vector<redist::rank_t>{4, 5, 6, 7});
}

TEST_CASE("pipeline boundary to a replicated target: exchange and two-phase", "[between][named]") {
  const auto pr =
      named(8, "{dp: 2, tp: 2} @ [0, 1, 2, 3]", "[{dp}8, 16, {tp}32]", "{dp: 2, tp: 2} @ [4, 5, 6, 7]", "[8, 16, 32]");
  const auto c = plan_and_run(pr);
  REQUIRE(has_between_candidate(c, "exchange"));
  REQUIRE(has_between_candidate(c, "two-phase"));
  // The exchange sends the whole array to every target rank; the two-phase
  // sends a quarter across, then all-gathers inside the target ranks.
  CHECK(redist::run_received_elements(candidate(c, "exchange")) == 8 * 16 * 32);
  const program& two = candidate(c, "two-phase");
  REQUIRE(two.steps.size() >= 2);
  CHECK(two.steps.front().kind == redist::op::exchange);
  CHECK(two.steps.front().cost == 8 * 16 * 32 / 4);
  CHECK(two.steps.back().kind == redist::op::allgather);
}

TEST_CASE("pending sums reduced on the source mesh before an uneven target: no fused step", "[between][named]") {
  // The reduction on the source mesh alone reduce-scatters twice and all-gathers two
  // dimensions in one fused call; the uneven target (23 rows over b: 3) makes the whole
  // program uneven, which runs no fused steps: the head is planned unfused (a stress run
  // of random reshards found it).
  const between_problem pr =
      named(18, "{x: 3, y: 3, z: 2}", "[23, 24, 24] sum{x, z}", "{a: 4, b: 3}", "[{b}23, 24, {a}24]");
  const redist::plan_choice c = plan_and_run(pr);
  const program& p = candidate(c, "exchange");
  CHECK(p.count(redist::op::reducescatter) + p.count(redist::op::allreduce) >= 1);
  for (const redist::step& s : p.steps) CHECK_FALSE(s.fused());
}

TEST_CASE("pending sums to other ranks: reduce-scattered on the source mesh, then exchanged", "[between][named]") {
  // Gradients handed to the next stage's ranks. The exchange all-reduces on the source ranks
  // (each sends and receives its whole tile) and sends each target rank its tile from one
  // holder; the scattered exchange reduce-scatters along the dimension predicted fastest
  // (each sends half as much, and holds half a tile after), then sends each target rank
  // its tile from both: the same elements into the target, in less predicted time. Every
  // candidate runs on the host, every element checked (plan_and_run).
  for (const char* to : {"[16, 24]", "[{a}16, 24]", "[16, {a}24]"}) {
    INFO(to);
    const between_problem pr = named(4, "{x: 2} @ [0, 1]", "[16, 24] sum{x}", "{a: 2} @ [2, 3]", to);
    const redist::plan_choice c = plan_and_run(pr);
    CHECK(c.candidates[c.chosen].name == "scattered exchange");
    const program& e = candidate(c, "exchange");
    const program& s = candidate(c, "scattered exchange");
    REQUIRE(e.steps.size() == 2);
    REQUIRE(s.steps.size() == 2);
    CHECK(e.steps[0].kind == redist::op::allreduce);
    CHECK(s.steps[0].kind == redist::op::reducescatter);
    CHECK(s.steps[1].kind == redist::op::exchange);
    CHECK(2 * s.steps[0].cost == e.steps[0].cost);
    CHECK(s.steps[0].local_after * 2 == e.steps[0].local_after);
    CHECK(s.steps[1].cost == e.steps[1].cost);  // each target rank receives its whole tile
    if (std::string(to) == "[16, 24]") {  // replicated: the two-phase plans too, from each head
      const program& t = candidate(c, "scattered two-phase");
      REQUIRE(t.steps.size() == 3);
      CHECK(t.steps[0].kind == redist::op::reducescatter);
      CHECK(candidate(c, "two-phase").steps[0].kind == redist::op::allreduce);
    }
  }
  // Uneven: 23 rows reduce-scattered over 3 source ranks (tiles of 8, 8, 7).
  const between_problem u = named(6, "{x: 3} @ [2, 4, 1]", "[23, 3] sum{x}", "{a: 2, b: 1} @ [5, 3]", "[{b}23, 3]");
  const redist::plan_choice c = plan_and_run(u);
  CHECK(c.candidates[c.chosen].name == "scattered exchange");
  CHECK(candidate(c, "scattered exchange").steps[0].kind == redist::op::reducescatter);
}

TEST_CASE("a target with pending sums on other ranks: moved, then made pending where it lands", "[between][named]") {
  // DTensor's Partial() on the next stage's mesh. The exchange sends every target rank its
  // whole tile, then makes the sums pending (the first of each pair along b keeps it, the
  // other writes 0); the two-phase plan sends each rank half of its tile, and a padded
  // partial step makes b pending without moving anything.
  const between_problem pr = named(6, "{x: 2} @ [0, 1]", "[{x}8, 4]", "{a: 2, b: 2} @ [2, 3, 4, 5]", "[{a}8, 4] sum{b}");
  const redist::plan_choice c = plan_and_run(pr);
  const program& e = candidate(c, "exchange");
  REQUIRE(e.steps.size() == 2);
  CHECK(e.steps[0].kind == redist::op::exchange);
  CHECK(e.steps[1].kind == redist::op::partial);
  const program& t = candidate(c, "two-phase");
  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[0].kind == redist::op::exchange);
  CHECK(t.steps[1].kind == redist::op::partial);
  CHECK(t.steps[1].concat_dim == 0);  // padded
  CHECK(redist::run_received_elements(e) == 16);
  CHECK(redist::run_received_elements(t) == 8);
}

TEST_CASE("checkpoint 8 -> 6 ranks: {x: 8} [{x}48, 10] -> {y: 6} [{y}48, 10]", "[between][named]") {
  const auto pr = named(8, "{x: 8}", "[{x}48, 10]", "{y: 6}", "[{y}48, 10]");
  const auto c = plan_and_run(pr);
  REQUIRE(has_between_candidate(c, "exchange"));
  // Rank r of the target holds rows [8r, 8r + 8) and held [6r, 6r + 6): the
  // busiest rank (r = 5: rows 40-47, held 30-35) receives all 8 rows.
  CHECK(redist::run_received_elements(candidate(c, "exchange")) == 8 * 10);
  // Ranks 6 and 7 end with nothing (checked by the run); the program's target
  // is on 0-5.
  const program& p = c.chosen_program();
  CHECK(p.world_size() == 8);
  CHECK(p.target_mesh().devices == 6);
}

TEST_CASE(
    "grid 2x4 -> 4x2 with relabelling: COSTA's order halves the busiest "
    "rank's receive",
    "[between][named]") {
  const auto pr = named(8, "{x: 2, y: 4}", "[{x}16, {y}16]", "{a: 4, b: 2}", "[{a}16, {b}16]");
  const auto plain = plan_and_run(pr);
  const auto relabelled = plan_and_run(pr, true);
  const std::uint64_t before = redist::run_received_elements(plain.chosen_program());
  const std::uint64_t after = redist::run_received_elements(relabelled.chosen_program());
  std::printf(
      "grid 2x4 -> 4x2: the busiest rank receives %llu elements "
      "without relabelling (%s), %llu with (%s, "
      "target devices",
      static_cast<unsigned long long>(before), plain.candidates[plain.chosen].name.c_str(),
      static_cast<unsigned long long>(after), relabelled.candidates[relabelled.chosen].name.c_str());
  for (redist::rank_t r : relabelled.chosen_program().target_devices) std::printf(" %u", r);
  std::printf(")\n");
  CHECK(relabelled.candidates[relabelled.chosen].seconds <= plain.candidates[plain.chosen].seconds);
  // Every target tile (4 x 8) meets a source tile (8 x 4) in at most 4 x 4: 16
  // of its 32 elements can stay, and the relabelled order keeps 16 on every
  // rank.
  CHECK(before == 32);
  CHECK(after == 16);
  CHECK(2 * after <= before);
}

TEST_CASE("bad input: one clear message each", "[between][errors]") {
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const redist::redist_error& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(message([] { (void)redist::parse_placed_mesh("{x: 2, y: 2} @ [4, 6, 4, 7]"); }) ==
        "device 4 is listed twice (positions 0 and 2) (at column 23 of "
        "'{x: 2, y: 2} @ [4, 6, 4, 7]')");
  CHECK(message([] { (void)redist::parse_placed_mesh("{x: 2} @ [0, 4294967296]"); }) ==
        "a rank must be below 2^32 (at column 14 of '{x: 2} @ [0, 4294967296]')");
  CHECK(message([] { (void)redist::parse_placed_mesh("{x: 2, y: 2} @ [4, 6, 5]"); }) ==
        "the device list has 3 ranks but the mesh has 4 devices (at "
        "column 25 of '{x: 2, y: 2} @ [4, 6, 5]')");
  CHECK(message([] { (void)redist::parse_placed_mesh("{x: 2, y: 2} @ [4, 6, 5, 7, 8]"); }) ==
        "the device list has 5 ranks but the mesh has 4 devices (at "
        "column 29 of '{x: 2, y: 2} @ [4, 6, 5, 7, 8]')");
  const auto m = redist::parse_placed_mesh("{x: 4} @ [0, 1, 2, 9]");
  const redist::dist_type t = redist::parse_type(m.mesh, "[{x}8]");
  const auto n = redist::parse_placed_mesh("{y: 2} @ [3, 4]");
  const redist::dist_type u = redist::parse_type(n.mesh, "[{y}8]");
  CHECK(message([&] {
          (void)redist::plan_between({m, t}, {n, u}, 8);
        }) ==
        "the source mesh {x: 4} @ [0, 1, 2, 9]: device 9 (position 3) is "
        "not a rank of the world of 8 ranks");
  CHECK(message([&] {
          (void)redist::plan_between({n, u}, {m, t}, 8);
        }) ==
        "the target mesh {x: 4} @ [0, 1, 2, 9]: device 9 (position 3) is "
        "not a rank of the world of 8 ranks");

  // A program from {x: 2} on ranks 1, 3 to {y: 2} on ranks 0, 2 in a world
  // of 4.
  const auto pr = named(4, "{x: 2} @ [1, 3]", "[{x}8, 2]", "{y: 2} @ [0, 2]", "[8, {y}2]");
  const program p = redist::synthesize_between(pr.a, pr.b, 4, {{.element_bytes = 8}, false});
  redist::host_backend host(4);
  redist::executor<std::int64_t, redist::host_backend> ex(host, p);
  {  // none() for rank 3, which is device 1 of the source mesh
    auto in = between_inputs<std::int64_t>(pr.a, 4);
    in[3] = darray<std::int64_t>::none(pr.a.pm.mesh, pr.a.type);
    CHECK(message([&] { (void)ex.run(in); }) ==
          "input tile of rank 3 belongs to device none, rank 3 is device 1 of "
          "its mesh");
  }
  {  // a real tile for rank 0, which is not on the source mesh
    auto in = between_inputs<std::int64_t>(pr.a, 4);
    in[0] = darray<std::int64_t>(pr.a.pm.mesh, pr.a.type, 0);
    CHECK(message([&] { (void)ex.run(in); }) ==
          "input tile of rank 0 must be empty (darray::none): rank 0 is not on "
          "the source mesh");
  }
  {  // outputs: a real tile for rank 1 (off the target mesh), none() for rank 2
    // (device 1)
    const auto in = between_inputs<std::int64_t>(pr.a, 4);
    std::vector<darray<std::int64_t>> out;
    for (std::uint64_t r = 0; r < 4; ++r)
      out.push_back(r % 2 == 0 ? darray<std::int64_t>(pr.b.pm.mesh, pr.b.type, static_cast<redist::rank_t>(r / 2))
                               : darray<std::int64_t>::none(pr.b.pm.mesh, pr.b.type));
    out[1] = darray<std::int64_t>(pr.b.pm.mesh, pr.b.type, 0);
    CHECK(message([&] { ex.run(in, out); }) ==
          "output tile of rank 1 must be empty (darray::none): rank 1 is not "
          "on the target mesh");
    out[1] = darray<std::int64_t>::none(pr.b.pm.mesh, pr.b.type);
    out[2] = darray<std::int64_t>::none(pr.b.pm.mesh, pr.b.type);
    CHECK(message([&] { ex.run(in, out); }) ==
          "output tile of rank 2 belongs to device none, rank 2 is device 1 of "
          "its mesh");
    // Right tiles: the run goes through.
    out[2] = darray<std::int64_t>(pr.b.pm.mesh, pr.b.type, 1);
    ex.run(in, out);
    for (std::uint64_t r = 0; r < 4; ++r)
      CHECK(check_target_tile(p, r, r % 2 == 0 ? std::int64_t(r / 2) : -1, out[r]) == "");
  }
}
