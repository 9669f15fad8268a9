// Tests of lower/fuse.hpp: fused collectives move exactly the data of the steps they
// replace (independent box checker, program check, JSON round trip; the data itself in
// tests/runtime/executor_test.cpp), are chosen by time, and never under the paper's bytes.
#include "redist/lower/fuse.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "redist/lower/synthesize.hpp"
#include "redist/program_json.hpp"
#include "redist/runtime/program_check.hpp"
#include "support/fuse_profile.hpp"
#include "support/random_problems.hpp"
#include "support/verify.hpp"

namespace {

using redist::op;

std::size_t fused_steps(const redist::program& p, op k) {
  std::size_t n = 0;
  for (const auto& s : p.steps) n += s.kind == k && s.fused();
  return n;
}

redist::program bytes_plan(const std::string& mesh, const std::string& from, const std::string& to) {
  return redist::synthesize(mesh, from, to, {.goal = redist::objective::bytes});
}

}  // namespace

TEST_CASE("fused collectives move exactly what the steps they replace move", "[fuse]") {
  const redist::time_profile lat = redist::testing::fuse_all_profile();
  std::size_t gathers = 0, alltoalls = 0, problems = 0;
  auto ws = redist::testing::mixed_workloads(1 << 12);
  ws.push_back(redist::testing::paper_workload(1 << 12));
  std::uint64_t seed = 0x66757365;
  for (auto w : ws) {
    for (const auto& t : redist::testing::random_problems(w, 200, seed++)) {
      INFO(t.mesh << "  " << t.from << " -> " << t.to);
      const redist::program plain = bytes_plan(t.mesh, t.from, t.to);
      redist::program f = plain;
      redist::fuse_collectives(f, lat, 4);
      ++problems;
      gathers += fused_steps(f, op::allgather);
      alltoalls += fused_steps(f, op::alltoall);
      CHECK(f.steps.size() <= plain.steps.size());
      // No rank receives more; Fig. 11 charges no more; the memory peak does not grow.
      CHECK(f.received_elements() <= plain.received_elements());
      CHECK(f.cost_elements <= plain.cost_elements);
      CHECK(f.peak_local_elements <= plain.peak_local_elements);
      const auto v = redist::testing::verify(f);
      REQUIRE(v.ok);
      REQUIRE(redist::detail::check_program(f).error.empty());
      if (f.steps.size() < plain.steps.size()) {  // the JSON contract: written and read back
        const redist::program back = redist::program_from_json_text(redist::program_json_text(f));
        REQUIRE(back.steps.size() == f.steps.size());
        for (std::size_t i = 0; i < f.steps.size(); ++i) {
          CHECK(back.steps[i].concat_grid == f.steps[i].concat_grid);
          CHECK(back.steps[i].split_grid == f.steps[i].split_grid);
          CHECK(back.steps[i].members == f.steps[i].members);
        }
        CHECK(back.cost_elements == f.cost_elements);
      }
    }
  }
  INFO(problems << " problems, " << gathers << " fused allgathers, " << alltoalls << " fused alltoalls");
  CHECK(gathers > 20);
  CHECK(alltoalls > 10);
}

TEST_CASE("Shardy gathers several dimensions in one all-gather, and so does redist", "[fuse]") {
  // shardy/replace_multiple_axes_diff_dims: two gathers of 2 and 4 ranks become one of 8.
  const redist::program p = redist::synthesize("{x: 2, y: 2, z: 2, w: 2, u: 2, v: 2}", "[{x}8, {z, y}8, 8, 8]",
                                               "[8, 8, {u, w}8, {v}8]");
  REQUIRE(p.count(op::allgather) == 1);
  const redist::step& g = p.steps.back();
  REQUIRE(g.fused());
  CHECK(g.parts == 8);
  CHECK(g.concat_dim == -1);
  REQUIRE(g.concat_grid.n == 2);
  CHECK(g.concat_grid.dim[0] == 1);  // the later gather's dimension is the most significant digit
  CHECK(g.concat_grid.parts[0] == 4);
  CHECK(g.concat_grid.dim[1] == 0);
  CHECK(g.concat_grid.parts[1] == 2);
  CHECK(redist::testing::verify(p).ok);
  // The paper's objective keeps one dimension per collective.
  const redist::program b = bytes_plan("{x: 2, y: 2, z: 2, w: 2, u: 2, v: 2}", "[{x}8, {z, y}8, 8, 8]",
                                       "[8, 8, {u, w}8, {v}8]");
  CHECK(b.steps.size() == 4);  // dynslice, dynslice, alltoall, allgather: the fewest bytes
  CHECK(fused_steps(b, op::allgather) == 0);
}

TEST_CASE("XLA's multi-dimension all-to-all: two all-to-alls become one where fusing pays", "[fuse]") {
  // xla/MultipleSourceTargetDimsInOneAllToAll3 on {p: 2, q: 2, r: 2, s: 8}.
  const redist::time_profile lat = redist::testing::fuse_all_profile();
  redist::program p = bytes_plan("{p: 2, q: 2, r: 2, s: 8}", "[{p}4, {r, q}4, {s}8, 8]", "[{r, p}4, {q}4, 8, {s}8]");
  REQUIRE(p.count(op::alltoall) == 2);
  const std::uint64_t received = p.received_elements();
  redist::fuse_collectives(p, lat, 4);
  REQUIRE(p.steps.size() == 1);
  const redist::step& s = p.steps[0];
  REQUIRE(s.fused());
  CHECK(s.parts == 16);
  CHECK(s.concat_grid.n == 2);
  CHECK(s.split_grid.n == 2);
  CHECK(redist::testing::verify(p).ok);
  CHECK(p.received_elements() < received);  // every element crosses once: 15/16 of the tile, not 1/2 + 7/8
  // Under the built-in profile too: the fused step reaches its 15 peers in 4 rounds, the two
  // it replaces in 1 + 3 and a second latency.
  redist::program q = bytes_plan("{p: 2, q: 2, r: 2, s: 8}", "[{p}4, {r, q}4, {s}8, 8]", "[{r, p}4, {q}4, 8, {s}8]");
  redist::fuse_collectives(q, redist::builtin_profile, 4);
  CHECK(q.steps.size() == 1);
  CHECK(q.steps[0].parts == 16);
}

TEST_CASE("steps whose groups do not fuse into one partition stay apart", "[fuse]") {
  // Two allgathers on 4 ranks whose groups cross: {0,1},{2,3} then {0,2},{1,3} fuse; then
  // {0,1},{2,3} with {1,2},{3,0} do not (rank 0's list would be 3 0 0 1).
  redist::step a;
  a.kind = op::allgather;
  a.concat_dim = 0;
  a.parts = 2;
  a.members = {0, 1, 2, 3};
  redist::step b = a;
  b.concat_dim = 1;
  b.members = {0, 2, 1, 3};
  CHECK(redist::detail::fusable_dims(a, b));
  CHECK(redist::detail::fused_members(a, b, 4) == std::vector<redist::rank_t>{0, 1, 2, 3});
  b.members = {1, 2, 3, 0};
  CHECK(redist::detail::fused_members(a, b, 4).empty());
  b.concat_dim = 0;  // the same dimension twice: not fused
  CHECK_FALSE(redist::detail::fusable_dims(a, b));
  // alltoalls: four distinct dimensions
  redist::step x = a, y = a;
  x.kind = y.kind = op::alltoall;
  x.concat_dim = 0;
  x.split_dim = 1;
  y.concat_dim = 2;
  y.split_dim = 1;
  CHECK_FALSE(redist::detail::fusable_dims(x, y));
  y.split_dim = 3;
  CHECK(redist::detail::fusable_dims(x, y));
}

TEST_CASE("a fused step is priced in the pieces the executor moves it in", "[fuse]") {
  // The benchmark's two gathers (docs/benchmarks.md "Fused collectives"), {x: 2, y: 2, z: 2},
  // [{x}R, {y, z}C] -> [R, C]: gathers of 2 and 4, or one of 8.
  const redist::time_profile& P = redist::builtin_profile;
  const op g = op::allgather;
  // Tiny tiles (R = 16, C = 8): 16 elements per rank before, 128 after. A fused allgather
  // packs no sends, so its receives may fill the end tile (512 bytes): one piece of the
  // whole block, one collective, priced as one step.
  CHECK(redist::pack_budget_bytes(128, 4) == 256);        // a step that packs sends too: half
  CHECK(redist::pack_budget_bytes(128, 4, true) == 512);  // a fused allgather, no sends packed: all
  CHECK(redist::pack_budget_bytes(128, 4, true, 300) == 300);  // never above pack_chunk_bytes
  CHECK(redist::pack_piece_elements(8, 16, 512, 4) == 16);
  CHECK(redist::pack_piece_elements(8, 16, 256, 4) == 8);  // half the end tile: two pieces
  CHECK(redist::fused_step_seconds(P, g, 8, 16, 128, 4, 128) == redist::step_seconds(P, g, 8, 16, 128, 4));
  const redist::detail::fuse_times tiny = redist::detail::fuse_prediction(P, g, 2, 4, 16, 32, 128, 4, 128);
  CHECK(tiny.faster());
  CHECK(tiny.apart == redist::picoseconds(redist::step_seconds(P, g, 2, 16, 32, 4)) +
                          redist::picoseconds(redist::step_seconds(P, g, 4, 32, 128, 4)));
  // 2 MiB per rank after (R = 1024, C = 512): pieces of 1 MiB (executor_options' default),
  // two collectives: the second costs a latency and the per-peer terms again (3 rounds of 8).
  CHECK(redist::pack_budget_bytes(524288, 4, true) == redist::default_pack_chunk_bytes);
  CHECK(redist::pack_piece_elements(8, 65536, redist::default_pack_chunk_bytes, 4) == 32768);
  CHECK(redist::fused_step_seconds(P, g, 8, 65536, 524288, 4, 524288) ==
        redist::step_seconds(P, g, 8, 65536, 524288, 4) + (P[g].latency + P[g].per_peer * 3));
  // An alltoall packs sends and receives: half the end tile. 64 elements per rank, 16
  // members (4 rounds), chunks of 4: pieces of 2 (128 bytes / 16 / 4), two collectives.
  CHECK(redist::pack_piece_elements(16, 4, redist::pack_budget_bytes(64, 4), 4) == 2);
  CHECK(redist::fused_step_seconds(P, op::alltoall, 16, 64, 64, 4, 64) ==
        redist::step_seconds(P, op::alltoall, 16, 64, 64, 4) + (P[op::alltoall].latency + P[op::alltoall].per_peer * 4));
  // The time search fuses the tiny gathers, and the program's predicted time is the fused
  // step's, as fuse_collectives priced it.
  const redist::program chosen = redist::synthesize("{x: 2, y: 2, z: 2}", "[{x}16, {y, z}8]", "[16, 8]");
  REQUIRE(chosen.steps.size() == 1);
  REQUIRE(fused_steps(chosen, g) == 1);
  CHECK(redist::end_tile_elements(chosen) == 128);
  CHECK(redist::predicted_seconds(chosen, P) == redist::fused_step_seconds(P, g, 8, 16, 128, 4, 128));
  // A piece is never empty, and never more than the block.
  CHECK(redist::pack_piece_elements(8, 3, 4, 4) == 1);
  CHECK(redist::pack_piece_elements(2, 5, 1u << 20, 4) == 5);
}

TEST_CASE("the near-path walk prices a prefix with the fusions its lowering makes", "[fuse]") {
  // A paper-workload problem: the time optimum (two all-to-alls) needs a permutation once
  // lowered; three all-to-alls of which the last two fuse need none and are faster, but
  // their weights add up to more than that lowered optimum.
  const redist::device_mesh m = redist::parse_mesh("{a: 2, b: 2, c: 2}");
  const redist::dist_type a = redist::parse_type(m, "[133{c}266, 66{a}132, 9{b}18, 152]");
  const redist::dist_type b = redist::parse_type(m, "[133{b}266, 132, 18, 38{a, c}152]");
  const redist::weak_problem p = redist::make_weak_problem(m, a, b).get();
  const redist::weak_plan optimum = redist::search_bgl(p);
  const redist::program direct = redist::lower_and_fuse(m, a, b, p, optimum.steps, 4, false).get();
  REQUIRE(direct.count(op::allpermute) == 1);
  const std::uint64_t budget = redist::lowered_time(p, direct) - 1;
  auto three = [&](auto... key_of) {  // fused three-step paths under the budget
    std::size_t n = 0;
    redist::near_paths(
        p, budget, 3, 3, 100, 100000,
        [&](const std::vector<redist::weak_step>& path, std::uint64_t) {
          const redist::program q = redist::lower_and_fuse(m, a, b, p, path, 4, false).get();
          n += q.count(op::allpermute) == 0 && fused_steps(q, op::alltoall) == 1 && redist::lowered_time(p, q) <= budget;
          return true;
        },
        key_of...);
    return n;
  };
  CHECK(three() == 0);  // summed weights prune every one of them
  CHECK(three([&](const std::vector<redist::weak_step>& path, std::uint64_t) {
          return redist::detail::path_rank(p, path).time;
        }) > 0);
  // The lowering takes one: two steps, no permutation, faster than the optimum's program.
  const redist::program chosen = redist::search_program(m, a, b, {});
  CHECK(chosen.steps.size() == 2);
  CHECK(chosen.count(op::allpermute) == 0);
  CHECK(fused_steps(chosen, op::alltoall) == 1);
  CHECK(redist::predicted_seconds(chosen, redist::builtin_profile) < redist::predicted_seconds(direct, redist::builtin_profile));
}
