// Tests of lower/node_links.hpp: what a step carries over the links between nodes, and the
// link term it adds to predicted_seconds (core/time_model.hpp, time_profile::node_ranks).
//
// Named cases count the elements by hand (a pipeline boundary's exchange and two-phase
// plan, an all-gather, an all-to-all and an all-reduce over two nodes) and check that a
// slow link makes plan_between choose the plan that crosses it once. Random problems
// between meshes on device sets check the counts against two independent ones: with one
// rank per node, a node's link is that rank's, so an exchange's count is the most a rank
// sends or receives (the exchange's sizes, redist/exchange.hpp) and a collective's is what
// a member receives (core/cost.hpp received_elements); with one node, no term at all.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "redist/core/placement.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/between.hpp"
#include "redist/lower/node_links.hpp"
#include "redist/lower/synthesize.hpp"
#include "support/between_problems.hpp"

// A namespace of its own: the folder's tests compile as one unit (tests/CMakeLists.txt).
namespace node_links_test {

namespace {

using redist::op;
using redist::program;

redist::placed_layout at(const std::string& mesh, const std::string& type) {
  const redist::placed_mesh pm = redist::parse_placed_mesh(mesh);
  return {pm, redist::parse_type(pm.mesh, type)};
}

redist::time_profile with_nodes(std::uint64_t ranks, double per_byte) {
  redist::time_profile p = redist::builtin_profile;
  p.node_ranks = ranks;
  p.node_per_byte = per_byte;
  return p;
}

/// node_link_elements of every step of p.
std::vector<std::uint64_t> links(const program& p, std::uint64_t node_ranks) {
  const redist::box_states t = redist::trace_states(p);
  std::vector<std::uint64_t> out;
  std::uint64_t local = redist::local_size(p.m, p.source);
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const bool x = p.steps[i].kind != op::dynslice && redist::moves_as_exchange(p, i, t);
    out.push_back(x ? redist::detail::node_link_elements(redist::plan_exchange(p, i, t), p.world_size(), node_ranks)
                    : redist::detail::node_link_elements(p, i, local, node_ranks));
    local = p.steps[i].local_after;
  }
  return out;
}

const program& candidate(const redist::plan_choice& c, const std::string& name) {
  for (const redist::plan_candidate& k : c.candidates)
    if (k.name == name) return k.prog;
  FAIL("no candidate " << name);
  return c.candidates.front().prog;
}

/// One collective of a single-mesh program on {x: 8} (float).
program one_step(const std::string& from, const std::string& to, op kind) {
  const redist::device_mesh m = redist::parse_mesh("{x: 8}");
  const program p = redist::search_program(m, redist::parse_type(m, from), redist::parse_type(m, to), {});
  REQUIRE(p.steps.size() == 1);
  REQUIRE(p.steps[0].kind == kind);
  return p;
}

}  // namespace

TEST_CASE("node links: a pipeline boundary to a replicated target on the next node", "[nodes][named]") {
  // [8, 16, 32] of 8-byte elements from ranks 0-3 (node 0) to every rank of 4-7 (node 1).
  const auto a = at("{dp: 2, tp: 2} @ [0, 1, 2, 3]", "[{dp}8, 16, {tp}32]");
  const auto b = at("{dp: 2, tp: 2} @ [4, 5, 6, 7]", "[8, 16, 32]");
  const std::uint64_t N = 8 * 16 * 32;
  const redist::plan_choice flat = redist::plan_between(a, b, 8, {{.element_bytes = 8}, false});
  // The exchange sends the whole array to each of the 4 target ranks over the link; the
  // two-phase plan sends it once, then all-gathers inside node 1.
  const program& ex = candidate(flat, "exchange");
  const program& two = candidate(flat, "two-phase");
  CHECK(links(ex, 4) == std::vector<std::uint64_t>{4 * N});
  const std::vector<std::uint64_t> two_links = links(two, 4);
  REQUIRE(two_links.size() == two.steps.size());
  CHECK(two_links.front() == N);
  for (std::size_t i = 1; i < two_links.size(); ++i) CHECK(two_links[i] == 0);
  // Without a link term the single exchange is predicted faster (one step); with a link of
  // 1 GB/s the two-phase plan is, by what the link carries.
  CHECK(flat.chosen_program().steps.size() == 1);
  const redist::time_profile slow = with_nodes(4, 1e-9);
  const redist::plan_choice c = redist::plan_between(a, b, 8, {{.element_bytes = 8, .time_model = &slow}, false});
  CHECK(c.candidates[c.chosen].name == "two-phase");
  for (const redist::plan_candidate& k : c.candidates) {
    double added = 0;
    for (std::uint64_t l : links(k.prog, 4)) added += 1e-9 * 8 * static_cast<double>(l);
    CHECK(k.seconds == Approx(redist::predicted_seconds(k.prog, redist::builtin_profile) + added).epsilon(1e-12));
  }
  CHECK(c.reason.find("two-phase: predicted") == 0);
  // The same ranks on one node of 8: no link term, the flat choice.
  const redist::time_profile one = with_nodes(8, 1e-9);
  const redist::plan_choice same = redist::plan_between(a, b, 8, {{.element_bytes = 8, .time_model = &one}, false});
  CHECK(same.candidates[same.chosen].name == flat.candidates[flat.chosen].name);
  for (std::size_t i = 0; i < same.candidates.size(); ++i)
    CHECK(same.candidates[i].seconds == flat.candidates[i].seconds);
}

TEST_CASE("node links: weights replicated on both nodes are sent from the receiver's node", "[nodes][named]") {
  // HSDP: rows sharded over fsdp inside a node, replicated over dp (the node); to TP 8 over
  // the same ranks. Every row block a rank lacks has a holder on its own node.
  const auto a = at("{dp: 2, fsdp: 4}", "[{fsdp}1024, 512]");
  const auto b = at("{tp: 8}", "[1024, {tp}512]");
  const redist::time_profile slow = with_nodes(4, 1e-9);
  const redist::plan_choice c = redist::plan_between(a, b, 8, {{.element_bytes = 4, .time_model = &slow}, false});
  const program& ex = candidate(c, "exchange");
  REQUIRE(ex.steps.size() == 1);
  CHECK(ex.steps[0].node_ranks == 4);
  CHECK(links(ex, 4) == std::vector<std::uint64_t>{0});
  // The collective candidate is the same exchange on a's mesh (predicted alike): chosen.
  CHECK(c.chosen_program().steps.size() == 1);
  CHECK(c.chosen_program().steps[0].node_ranks == 4);
  CHECK(links(c.chosen_program(), 4) == std::vector<std::uint64_t>{0});
  // The same exchange with the replicas taking turns whatever the node: half of a node's 12
  // pieces (3 a rank) of 256 x 64 cross.
  program turns = ex;
  turns.steps[0].node_ranks = 0;
  CHECK(links(turns, 4) == std::vector<std::uint64_t>{12 * 256 * 64 / 2});
  CHECK(redist::predicted_seconds(ex, slow) < redist::predicted_seconds(turns, slow));
  // Received = the lower bound either way; without nodes in the profile the step has none.
  CHECK(redist::plan_exchange(ex, 0).received == redist::plan_exchange(turns, 0).received);
  const redist::plan_choice flat = redist::plan_between(a, b, 8, {{.element_bytes = 4}, false});
  CHECK(candidate(flat, "exchange").steps[0].node_ranks == 0);
}

TEST_CASE("node links: collectives over two nodes of 4 ranks, counted as a ring or pairwise", "[nodes][named]") {
  // All-gather of [{x}64] on {x: 8}: the ring through node 0, then node 1, crosses from
  // one to the other and back, each edge carrying 7 tiles of 8.
  CHECK(links(one_step("[{x}64]", "[64]", op::allgather), 4) == std::vector<std::uint64_t>{7 * 8});
  // All-to-all of an 8 x 8 tile: each of node 0's 4 ranks sends 1/8 of its tile to each of
  // node 1's 4 (and back).
  CHECK(links(one_step("[{x}64, 8]", "[64, {x}8]", op::alltoall), 4) == std::vector<std::uint64_t>{4 * 4 * 8});
  // All-reduce of 64 pending elements: a ring edge carries 2 * 7 / 8 of them, whatever the
  // order of the group's members (here 0 4 2 6 1 5 3 7: the ring visits each node's together).
  CHECK(links(one_step("[64] sum{x}", "[64]", op::allreduce), 4) == std::vector<std::uint64_t>{2 * 7 * 8});
  // Nodes of 8: the group lies in one node.
  CHECK(links(one_step("[{x}64]", "[64]", op::allgather), 8) == std::vector<std::uint64_t>{0});
  // Nodes of 3 (the last holds 2): every node sends and receives over one edge of the ring.
  CHECK(links(one_step("[{x}64]", "[64]", op::allgather), 3) == std::vector<std::uint64_t>{7 * 8});
}

TEST_CASE("node links: a node's link is the busiest rank's with one rank per node, none on one node", "[nodes][random]") {
  std::mt19937 rng(0x11u);
  const redist::testing::between_workload wl;
  const redist::time_profile one_node = with_nodes(1024, 1e-9);
  std::uint64_t problems = 0, exchanges = 0, collectives = 0, tries = 0;
  while (problems < 1500 && tries < 20000) {
    ++tries;
    const redist::testing::between_text t = redist::testing::random_between(rng, wl);
    redist::testing::between_problem pr;
    if (!redist::testing::parse_between(t, pr)) continue;
    redist::plan_choice c;
    try {
      c = redist::plan_between(pr.a, pr.b, pr.world, {{.element_bytes = 4}, false});
    } catch (const redist::redist_error&) {
      continue;  // no plan: test_between checks which
    }
    ++problems;
    for (const redist::plan_candidate& k : c.candidates) {
      INFO(t.text() << " [" << k.name << "]");
      const program& p = k.prog;
      const redist::box_states st = redist::trace_states(p);
      REQUIRE(st.error.empty());
      std::uint64_t local = redist::local_size(p.m, p.source);
      for (std::size_t i = 0; i < p.steps.size(); ++i) {
        const redist::step& s = p.steps[i];
        INFO("step " << i << " " << redist::op_name(s.kind));
        const bool x = s.kind != op::dynslice && redist::moves_as_exchange(p, i, st);
        if (x) {
          // The pieces' count against the walk's sizes alone (plan_detail::sizes).
          const std::uint64_t got =
              redist::detail::node_link_elements(redist::plan_exchange(p, i, st), p.world_size(), 1);
          const redist::exchange_plan e = redist::plan_exchange(p, i, st, redist::plan_detail::sizes);
          CHECK(got == std::max(e.max_received, e.max_sent));
          ++exchanges;
          local = s.local_after;
          continue;
        }
        const std::uint64_t got = redist::detail::node_link_elements(p, i, local, 1);
        if (s.kind == op::allpermute) {
          bool moves = false;
          for (std::size_t r = 0; r < s.dest.size(); ++r) moves = moves || s.dest[r] != r;
          CHECK(got == (moves ? local : 0));
        } else if (s.kind != op::dynslice && s.kind != op::partial && s.parts > 1) {
          CHECK(got == redist::received_elements(s.kind, s.parts, local, s.local_after));
          ++collectives;
        } else {
          CHECK(got == 0);
        }
        local = s.local_after;
      }
      // Every rank on one node: the profile's link term never applies.
      CHECK(redist::predicted_seconds(p, one_node) == redist::predicted_seconds(p, redist::builtin_profile));
    }
  }
  CHECK(problems >= 1500);
  CHECK(exchanges > 1000);
  CHECK(collectives > 200);
}

}  // namespace node_links_test
