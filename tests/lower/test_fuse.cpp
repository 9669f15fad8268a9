// Tests of lower/fuse.hpp: fused collectives move exactly the data of the steps they
// replace (independent box checker, program check, JSON round trip; the data itself in
// tests/runtime/executor_test.cpp), are chosen by time, and never under the paper's bytes.
#include "redist/lower/fuse.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "redist/lower/synthesize.hpp"
#include "redist/program_json.hpp"
#include "redist/runtime/program_check.hpp"
#include "support/random_problems.hpp"
#include "support/verify.hpp"

namespace {

using redist::op;

/// Every step costs one latency: fusing always pays.
redist::time_profile latency_only() {
  redist::time_profile p;
  p.set_name("latency");
  for (op o : redist::all_ops) p[o] = {1.0, 0, 0};
  return p;
}

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
  const redist::time_profile lat = latency_only();
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

TEST_CASE("XLA's multi-dimension all-to-all: two all-to-alls become one where latency counts", "[fuse]") {
  // xla/MultipleSourceTargetDimsInOneAllToAll3 on {p: 2, q: 2, r: 2, s: 8}.
  const redist::time_profile lat = latency_only();
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
  // Under the built-in profile 16 peers cost more than a second latency: two steps stay.
  redist::program q = bytes_plan("{p: 2, q: 2, r: 2, s: 8}", "[{p}4, {r, q}4, {s}8, 8]", "[{r, p}4, {q}4, 8, {s}8]");
  redist::fuse_collectives(q, redist::builtin_profile, 4);
  CHECK(q.steps.size() == 2);
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
