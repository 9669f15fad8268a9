// Tests of lower/reshard.hpp (issue 26): the joint plan of many arrays.
//
// Random reshards (tests/support/reshard_problems.hpp: 1-6 arrays, each between
// meshes on device sets in every relation, even and uneven, some with pending
// sums) under random budgets: the pieces of every joint array tile every
// rank's target box exactly and come from the sender's source box, every rank
// receives exactly the data-movement lower bound, every round keeps every
// rank's send + receive bytes within the budget, the pieces of a round are in
// message order, and arrays with pending sums take their own plans (the check,
// check_reshard_plan, is in tests/support/reshard_problems.hpp); every rank's own plan
// (reshard_options::of_rank) is the whole plan without the other ranks' pieces. Then named
// cases (a weight sync from FSDP x TP to TP on the same and on other devices, a
// budget cutting one piece into rows) and bad input. Execution on real data is
// tests/runtime/reshard_executor_test.cpp.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "redist/core/element_type.hpp"
#include "redist/core/placement.hpp"
#include "redist/lower/reshard.hpp"
#include "support/random_problems.hpp"
#include "support/reshard_problems.hpp"

namespace {

using namespace redist;

reshard_array array_of(const std::string& name, element_type t, const std::string& from_mesh, const std::string& from,
                       const std::string& to_mesh, const std::string& to) {
  reshard_array a;
  a.name = name;
  a.dtype = t;
  const placed_mesh pa = parse_placed_mesh(from_mesh), pb = parse_placed_mesh(to_mesh);
  a.source = placed_layout{pa, parse_type(pa.mesh, from)};
  a.target = placed_layout{pb, parse_type(pb.mesh, to)};
  return a;
}

}  // namespace

TEST_CASE("random reshards: pieces tile every target, the lower bound, the budget", "[reshard]") {
  std::mt19937 rng(2611);
  testing::reshard_workload w;
  std::size_t planned = 0, budgeted = 0, owned = 0, rounds = 0, boxed = 0, pipelined = 0, halves = 0;
  const std::size_t n = testing::scaled(1500);
  for (std::size_t i = 0; i < n; ++i) {
    const testing::reshard_case c = testing::random_reshard(rng, w);
    INFO(c.text);
    for (const reshard_array& a : c.problem.arrays) boxed += !layout_type(a.source) || !layout_type(a.target);
    const reshard_plan p = plan_reshard(c.problem);
    REQUIRE(testing::check_reshard_plan(p, 0).empty());
    ++planned;
    owned += p.count(reshard_route::own);
    const std::uint64_t row = testing::largest_row(p);
    if (row == 0) continue;
    // A budget between one row and the most any rank moves.
    const std::uint64_t budget = row + rng() % (4 * row + 1);
    const reshard_plan q = plan_reshard(c.problem, {.budget_bytes = budget});
    INFO("budget " << budget);
    REQUIRE(testing::check_reshard_plan(q, budget).empty());
    REQUIRE(q.received_bytes == p.received_bytes);
    REQUIRE(!q.pipelined);  // the built-in profile has no overlap
    ++budgeted;
    rounds += q.rounds.size();
    halves += q.halves;
    // Two rounds at a time: any two consecutive rounds within the budget.
    const reshard_plan r = plan_reshard(c.problem, {.budget_bytes = budget, .pipeline = reshard_pipeline::on});
    REQUIRE(testing::check_reshard_plan(r, budget).empty());
    REQUIRE(r.received_bytes == p.received_bytes);
    REQUIRE(r.pipelined == (q.rounds.size() > 1 && 2 * row <= budget));
    pipelined += r.pipelined;
    if (row > 1) {
      try {
        plan_reshard(c.problem, {.budget_bytes = row - 1});
        FAIL("a budget below one row of a piece was accepted");
      } catch (const redist_error& e) {
        REQUIRE(std::string(e.what()).find("more than the budget of " + std::to_string(row - 1) + " bytes per rank") !=
                std::string::npos);
      }
    }
  }
  CHECK(planned == n);
  CHECK(budgeted * 3 > 2 * n);
  CHECK(owned * 5 > n);      // pending sums
  CHECK(boxed * 5 > n);      // box layouts at one end
  CHECK(rounds > budgeted);  // budgets that cut
  CHECK(pipelined * 5 > n);
  CHECK(halves * 50 > n);  // sends and receives in halves of the budget, where predicted faster (~4%)
}

namespace {

/// "" if `mine` is rank r's plan of the whole plan `whole`: the same routes, rounds (with the
/// whole rounds' counts), bytes per rank and predictions, and of the pieces exactly those
/// rank r sends, receives or keeps, in the same order.
/// The same pieces in the same order: arrays, ranks and boxes.
bool same_pieces(std::span<const reshard_piece> x, std::span<const reshard_piece> y) {
  return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const reshard_piece& a, const reshard_piece& b) {
    return a.array == b.array && a.from == b.from && a.to == b.to && a.b == b.b;
  });
}

std::string rank_plan_differs(const reshard_plan& whole, const reshard_plan& mine, rank_t r) {
  auto of_r = [&](std::span<const reshard_piece> v) {
    std::vector<reshard_piece> out;
    for (const reshard_piece& pc : v)
      if (pc.from == r || pc.to == r) out.push_back(pc);
    return out;
  };
  if (mine.of_rank != std::optional<rank_t>(r) || whole.of_rank) return "of_rank";
  if (mine.route != whole.route || mine.local_count != whole.local_count || mine.pipelined != whole.pipelined)
    return "routes, local pieces or pipelining";
  if (mine.received_bytes != whole.received_bytes || mine.lower_bound_bytes != whole.lower_bound_bytes ||
      mine.transient_bytes != whole.transient_bytes)
    return "bytes per rank";
  if (mine.seconds != whole.seconds || mine.joint_seconds != whole.joint_seconds ||
      mine.unpipelined_seconds != whole.unpipelined_seconds || mine.reason != whole.reason)
    return "predictions: " + mine.reason + " against " + whole.reason;
  if (mine.fused.size() != whole.fused.size()) return "fused sets";
  for (std::size_t f = 0; f < mine.fused.size(); ++f)
    if (mine.fused[f].arrays != whole.fused[f].arrays) return "fused sets";
  if (mine.local_at.size() != whole.local_at.size()) return "local pieces' rounds";
  for (std::size_t k = 0; k + 1 < whole.local_at.size(); ++k)
    if (!same_pieces(mine.local_of(k), of_r(whole.local_of(k)))) return "round " + std::to_string(k) + "'s local pieces";
  if (mine.rounds.size() != whole.rounds.size()) return "rounds";
  for (std::size_t k = 0; k < mine.rounds.size(); ++k) {
    const reshard_round &a = mine.rounds[k], &b = whole.rounds[k];
    if (a.count != b.count || a.messages != b.messages || a.bytes != b.bytes || b.count != b.pieces.size())
      return "round " + std::to_string(k) + "'s counts";
    if (!same_pieces(a.pieces, of_r(b.pieces))) return "round " + std::to_string(k) + "'s pieces";
  }
  return {};
}

}  // namespace

TEST_CASE("rank plans: the whole plan with the other ranks' pieces left out", "[reshard]") {
  // reshard_options::of_rank: what every rank of an MPI or NCCL job plans for itself.
  std::mt19937 rng(0x72616e6b);
  testing::reshard_workload w;
  w.casts = true;
  std::size_t compared = 0, cut = 0, refused = 0;
  const std::size_t n = testing::scaled(600);
  for (std::size_t i = 0; i < n; ++i) {
    testing::reshard_case c = testing::random_reshard(rng, w);
    if (i % 2 == 0) {  // arrays laid out as an earlier one (a model's layers): its plan and pieces are theirs too
      reshard_array again = c.problem.arrays[0];
      again.name = "again";
      c.problem.arrays.push_back(again);
      if (!again.casts() && element_type_floating(again.dtype)) {  // another type: another own plan, the same pieces
        again.name = "again_in_another_type";
        again.dtype = again.dtype == element_type::f64 ? element_type::bf16 : element_type::f64;
        c.problem.arrays.push_back(again);
      }
    }
    INFO(c.text);
    const reshard_plan p = plan_reshard(c.problem);
    REQUIRE(testing::check_reshard_plan(p, 0).empty());
    const std::uint64_t row = testing::largest_row(p), budget = row + rng() % (4 * row + 1);
    std::vector<reshard_options> options{{}};
    if (row > 0) {
      options.push_back({.budget_bytes = budget});
      options.push_back({.budget_bytes = budget, .pipeline = reshard_pipeline::on});
    }
    for (reshard_options o : options) {
      INFO("budget " << o.budget_bytes);
      const reshard_plan whole = plan_reshard(c.problem, o);
      REQUIRE(testing::check_reshard_plan(whole, o.budget_bytes).empty());
      for (rank_t r = 0; r < whole.world; ++r) {
        o.of_rank = r;
        REQUIRE(rank_plan_differs(whole, plan_reshard(c.problem, o), r).empty());
        ++compared;
      }
      std::uint64_t n = 0;
      for (const reshard_round& k : whole.rounds) n += k.count;
      cut += !p.rounds.empty() && n > p.rounds[0].count;
    }
    if (row > 1) {  // a budget below a row: the same refusal, naming the same piece, on every rank
      std::string said;
      try {
        plan_reshard(c.problem, {.budget_bytes = row - 1});
      } catch (const redist_error& e) {
        said = e.what();
      }
      REQUIRE(!said.empty());
      for (rank_t r = 0; r < p.world; ++r) {
        try {
          plan_reshard(c.problem, {.budget_bytes = row - 1, .of_rank = r});
          FAIL("rank " << r << " accepted a budget below one row");
        } catch (const redist_error& e) {
          REQUIRE(std::string(e.what()) == said);
          ++refused;
        }
      }
    }
  }
  CHECK(compared > 10 * n);
  CHECK(cut * 6 > 5 * n);  // rounds of chunks: more pieces than the whole pieces
  CHECK(refused > 3 * n);
  REQUIRE_THROWS_WITH(plan_reshard(testing::random_reshard(rng, w).problem, {.of_rank = 4096}),
                      Catch::Matchers::Contains("a plan of rank 4096 in a world of"));
}

TEST_CASE("arrays laid out alike share their flows: one round as under a budget it all fits in", "[reshard]") {
  // Without a budget the planner visits the pieces of each layout once, weighted by the arrays
  // laid out so (detail::flow_weights); under a budget every array has its own. A budget of the
  // most bytes a rank moves holds the one round whole: the same round, piece for piece.
  std::mt19937 rng(0x6c696b65);
  testing::reshard_workload w;
  w.casts = true;
  time_profile nodes = builtin_profile;
  nodes.node_ranks = 2;
  nodes.node_per_byte = 4e-10;
  int compared = 0, shared = 0;
  for (int i = 0; i < 400; ++i) {
    testing::reshard_case c = testing::random_reshard(rng, w);
    const std::size_t first = c.problem.arrays.size();
    for (std::size_t k = 0; k < first; ++k)  // layers: copies of some arrays, some in another type
      for (std::size_t m = rng() % 3; m > 0; --m) {
        reshard_array again = c.problem.arrays[k];
        again.name += "_" + std::to_string(m);
        if (!again.casts() && element_type_floating(again.dtype) && rng() % 2 == 0)
          again.dtype = again.dtype == element_type::f64 ? element_type::bf16 : element_type::f64;
        c.problem.arrays.push_back(again);
        ++shared;
      }
    INFO(c.text);
    reshard_options o;
    if (i % 2 == 1) o.synth.time_model = &nodes;
    if (i % 3 == 1) o.of_rank = static_cast<rank_t>(rng() % c.problem.world);
    const reshard_plan p = plan_reshard(c.problem, o);
    const std::uint64_t most = p.transient_bytes.empty() ? 0 : *std::max_element(p.transient_bytes.begin(),
                                                                                  p.transient_bytes.end());
    if (most == 0) continue;
    o.budget_bytes = most;
    const reshard_plan q = plan_reshard(c.problem, o);
    if (q.route != p.route) continue;  // a budget keeps own programs that hold more than the tiles joint
    REQUIRE(p.rounds.size() == 1);
    REQUIRE(q.rounds.size() == 1);
    const reshard_round &a = p.rounds[0], &b = q.rounds[0];
    REQUIRE(a.count == b.count);
    REQUIRE(a.messages == b.messages);
    REQUIRE(a.bytes == b.bytes);
    REQUIRE(same_pieces(a.pieces, b.pieces));
    REQUIRE(p.local_count == q.local_count);
    REQUIRE(p.received_bytes == q.received_bytes);
    REQUIRE(p.transient_bytes == q.transient_bytes);
    REQUIRE(p.joint_seconds == q.joint_seconds);
    ++compared;
  }
  CHECK(compared > 250);
  CHECK(shared > 300);
}

TEST_CASE("large plans: pieces sorted by their keys, pairs numbered, the tally's peers kept as pieces come and go",
          "[reshard]") {
  // sort_pieces (small keys, then each piece moved once) and placed_pieces (records bucketed by
  // sender, then written once) order as reshard_piece::operator<; number_pairs gives flows
  // between the same two ranks one id, ids 0.. in the order of senders, and flows within a
  // rank none; round_tally counts each rank's peers incrementally, as a recount over the
  // pieces does.
  std::mt19937 rng(0x6c617267);
  for (int t = 0; t < 200; ++t) {
    const std::uint32_t W = 1 + rng() % 12;
    std::vector<reshard_piece> v(rng() % 300);
    for (reshard_piece& p : v) {
      p.array = rng() % 3;
      p.from = rng() % W;
      p.to = rng() % W;
      p.b.rank = 2;
      for (std::size_t d = 0; d < 2; ++d) {
        p.b.lo[d] = rng() % 4;  // duplicates of (from, to, array) with other boxes
        p.b.hi[d] = p.b.lo[d] + 1 + rng() % 3;
      }
    }
    std::vector<reshard_piece> want = v;
    std::sort(want.begin(), want.end());
    auto as_wanted = [&](const std::vector<reshard_piece>& got) {
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        REQUIRE(got[i].from == want[i].from);
        REQUIRE(got[i].to == want[i].to);
        REQUIRE(got[i].array == want[i].array);
        REQUIRE(!(got[i].b < want[i].b));
        REQUIRE(!(want[i].b < got[i].b));
      }
    };
    detail::sort_pieces(v);
    as_wanted(v);
    {  // placed_pieces writes the same order from records that name their pieces: each record
       // of `v` in a shuffled order, the box ordering its ties on sender, receiver and array
       // (where the planner orders chunks of one piece by their first row)
      std::vector<detail::placed_piece> placed;
      for (std::size_t i = 0; i < v.size(); ++i)
        placed.push_back({v[i].from, v[i].to, v[i].array, static_cast<std::uint32_t>(i)});
      std::shuffle(placed.begin(), placed.end(), rng);
      const std::vector<reshard_piece> got = detail::placed_pieces(
          placed, W, [&](const detail::placed_piece& q) { return v[q.ref]; },
          [&](const detail::placed_piece& q) { return v[q.ref].b; });
      REQUIRE(placed.empty());
      as_wanted(got);
    }
    std::vector<detail::flow> flows(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) flows[i] = {.array = v[i].array, .from = v[i].from, .to = v[i].to};
    const detail::flow_pairs fp = detail::number_pairs(flows, W);
    REQUIRE(fp.of.size() == flows.size());
    std::map<std::pair<rank_t, rank_t>, std::uint32_t> id;
    for (std::size_t i = 0; i < flows.size(); ++i) {
      if (flows[i].from == flows[i].to) {
        REQUIRE(fp.of[i] == detail::flow::none);
        continue;
      }
      REQUIRE(fp.of[i] < fp.ranks.size());
      REQUIRE(fp.ranks[fp.of[i]] == std::pair{flows[i].from, flows[i].to});
      REQUIRE(id.try_emplace({flows[i].from, flows[i].to}, fp.of[i]).first->second == fp.of[i]);
    }
    REQUIRE(id.size() == fp.ranks.size());
    REQUIRE(std::is_sorted(fp.ranks.begin(), fp.ranks.end(),
                           [](const auto& x, const auto& y) { return x.first < y.first; }));
    auto pair_of = [&](const reshard_piece& p) { return p.from == p.to ? detail::flow::none : id.at({p.from, p.to}); };
    detail::round_tally tally(W, builtin_profile, fp.ranks.size());
    std::vector<reshard_piece> in;
    for (const reshard_piece& p : v) {
      if (!in.empty() && rng() % 3 == 0) {  // take back one, or some of one pair's at once
        const reshard_piece back = in[rng() % in.size()];
        const auto of_pair = [&](const reshard_piece& q) { return q.from == back.from && q.to == back.to; };
        const auto n = static_cast<std::uint64_t>(std::count_if(in.begin(), in.end(), of_pair));
        const std::uint64_t m = rng() % 2 == 0 ? 1 : 1 + rng() % n;
        tally.remove(back.from, back.to, pair_of(back), 4 * m, m);
        for (std::uint64_t j = 0; j < m; ++j) in.erase(std::find_if(in.begin(), in.end(), of_pair));
      }
      const std::uint64_t m = rng() % 4 == 0 ? 1 + rng() % 3 : 1;  // pieces of arrays laid out alike
      tally.add(p.from, p.to, pair_of(p), 4 * m, m);
      in.insert(in.end(), m, p);
    }
    std::vector<std::set<rank_t>> out_peers(W), in_peers(W);
    std::vector<std::uint64_t> sent(W, 0), received(W, 0);
    std::set<std::pair<rank_t, rank_t>> pairs;
    for (const reshard_piece& p : in)
      if (p.from != p.to) {
        out_peers[p.from].insert(p.to);
        in_peers[p.to].insert(p.from);
        sent[p.from] += 4;
        received[p.to] += 4;
        pairs.insert({p.from, p.to});
      }
    for (std::uint32_t r = 0; r < W; ++r) {
      REQUIRE(tally.peers_out[r] == out_peers[r].size());
      REQUIRE(tally.peers_in[r] == in_peers[r].size());
    }
    REQUIRE(tally.sent == sent);
    REQUIRE(tally.received == received);
    for (const auto& [pair, at] : id) REQUIRE((tally.pieces[at] > 0) == pairs.contains(pair));
  }
}

TEST_CASE("one call per array: every array by its own plan", "[reshard]") {
  std::mt19937 rng(7);
  std::size_t chunked = 0;
  for (int i = 0; i < 100; ++i) {
    const testing::reshard_case c = testing::random_reshard(rng, {});
    INFO(c.text);
    const reshard_plan p = plan_reshard(c.problem, {.joint = false});
    REQUIRE(p.count(reshard_route::own) == c.problem.arrays.size());
    REQUIRE(p.rounds.empty());
    REQUIRE(p.local.empty());
    REQUIRE(p.seconds == p.separate_seconds);
    // Within a budget: each array chunked as its own plan needs, and the joint plan prices
    // one call per array as that plan does.
    const std::uint64_t row = testing::largest_row(plan_reshard(c.problem));
    if (row == 0) continue;
    const std::uint64_t budget = row + rng() % (4 * row + 1);
    INFO("budget " << budget);
    const reshard_plan q = plan_reshard(c.problem, {.budget_bytes = budget, .joint = false});
    REQUIRE(q.seconds == Approx(q.separate_seconds));
    REQUIRE(plan_reshard(c.problem, {.budget_bytes = budget}).separate_seconds == Approx(q.seconds));
    chunked += q.chunked_count();
  }
  CHECK(chunked > 10);
}

TEST_CASE("weight sync: FSDP 4 x TP 2 to TP 8 on the same ranks and to TP 4 on the other half", "[reshard]") {
  const std::string train = "{fsdp: 4, tp: 2}";
  reshard_problem same, half;
  same.world = half.world = 8;
  const std::vector<std::pair<std::string, std::string>> weights = {
      {"[{fsdp}1024, {tp}512]", "[1024, {tp}512]"},     // a column-parallel weight
      {"[{tp}512, {fsdp}1024]", "[{tp}512, 1024]"},     // a row-parallel weight
      {"[{fsdp}256]", "[256]"},                         // a norm
      {"[{fsdp, tp}4096, 64]", "[{tp}4096, 64]"},       // an embedding
  };
  for (std::size_t i = 0; i < weights.size(); ++i) {
    same.arrays.push_back(array_of("w" + std::to_string(i), element_type::bf16, train, weights[i].first, "{tp: 8}",
                                   weights[i].second));
    half.arrays.push_back(array_of("w" + std::to_string(i), element_type::f32, train, weights[i].first,
                                   "{tp: 4} @ [4, 5, 6, 7]", weights[i].second));
  }
  for (const reshard_problem* pr : {&same, &half}) {
    const reshard_plan p = plan_reshard(*pr);
    INFO(p.reason);
    REQUIRE(testing::check_reshard_plan(p, 0).empty());
    REQUIRE(p.rounds.size() == 1);
    // One message per pair of ranks, whatever the number of arrays.
    std::map<std::pair<rank_t, rank_t>, int> pairs;
    for (const reshard_piece& pc : p.rounds[0].pieces) pairs[{pc.from, pc.to}] = 1;
    REQUIRE(p.messages(0) == pairs.size());
    REQUIRE(p.seconds < p.separate_seconds);
  }
  // Within 1/8 of the largest array, rounds that let ranks 4-7 (trainer and engine ranks)
  // send and receive at once: each side within half the budget.
  for (const reshard_problem* pr : {&same, &half}) {
    std::uint64_t big = 0;
    for (const reshard_array& a : pr->arrays) big = std::max(big, a.bytes());
    const reshard_plan q = plan_reshard(*pr, {.budget_bytes = big / 8});
    INFO(q.reason);
    REQUIRE(testing::check_reshard_plan(q, big / 8).empty());
    REQUIRE(q.halves);
    REQUIRE(q.reason.find("(sends and receives in halves of the budget)") != std::string::npos);
  }
  // Ranks 4 and 7 keep a quarter of their targets (of all but the norm), and so receive less
  // than ranks 5 and 6: within 1/8 of the largest array their kept pieces go into the rounds
  // where they receive little (the last), not on top of the full first round.
  {
    const std::uint64_t big = 1024 * 512 * 4;  // the largest array's bytes
    const reshard_plan q = plan_reshard(half, {.budget_bytes = big / 8});
    INFO(q.reason);
    REQUIRE(q.rounds.size() == 11);
    std::vector<std::uint64_t> kept(q.rounds.size(), 0);
    for (std::size_t k = 0; k < q.rounds.size(); ++k)
      for (const reshard_piece& pc : q.local_of(k)) kept[k] += q.piece_bytes(pc);
    CHECK(kept[0] == 0);
    CHECK(kept.back() > 0);
    // 1.41x the time without a budget with every kept piece in the first round.
    CHECK(q.joint_seconds < 1.32 * plan_reshard(half).joint_seconds);
  }
  // On the other half, ranks 0-3 receive nothing and ranks 4-7 their whole tiles but what they held.
  const reshard_plan p = plan_reshard(half);
  for (rank_t r = 0; r < 4; ++r) REQUIRE(p.received_bytes[r] == 0);
  REQUIRE(p.received_bytes[4] > 0);
  // With a budget of 1/8 of the largest array: more rounds, the same bytes, within it on every rank.
  const std::uint64_t budget = 4096 * 64 * 4 / 8;
  const reshard_plan q = plan_reshard(half, {.budget_bytes = budget});
  REQUIRE(testing::check_reshard_plan(q, budget).empty());
  REQUIRE(q.rounds.size() > 1);
  REQUIRE(q.received_bytes == p.received_bytes);
  REQUIRE(*std::max_element(q.transient_bytes.begin(), q.transient_bytes.end()) <= budget);
}

TEST_CASE("two orders: layers' chunks placed chunk by chunk or array by array, the faster taken", "[reshard]") {
  // Four layers of the weight-sync test's weights: arrays laid out alike have the same chunks
  // between the same ranks (the header comment, "Two orders"). Chunk by chunk puts every
  // layer's chunk between two ranks in one round where it fits: never more messages here.
  const std::string train = "{fsdp: 4, tp: 2}";
  const std::vector<std::pair<std::string, std::string>> weights = {
      {"[{fsdp}1024, {tp}512]", "[1024, {tp}512]"},
      {"[{tp}512, {fsdp}1024]", "[{tp}512, 1024]"},
      {"[{fsdp}256]", "[256]"},
      {"[{fsdp, tp}4096, 64]", "[{tp}4096, 64]"},
  };
  const std::uint64_t big = 4096 * 64 * 4;  // the largest array's bytes
  std::map<std::string, std::array<double, 2>> seconds;  // (engine, budget) -> by chunk, by array
  for (const std::string engine : {"{tp: 8}", "{tp: 4} @ [4, 5, 6, 7]", "{dp: 2, tp: 4}"}) {
    reshard_problem pr;
    pr.world = 8;
    for (int l = 0; l < 4; ++l)
      for (std::size_t i = 0; i < weights.size(); ++i)
        pr.arrays.push_back(array_of("w" + std::to_string(i) + "_" + std::to_string(l), element_type::f32, train,
                                     weights[i].first, engine, weights[i].second));
    for (const std::uint64_t budget : {big / 2, big / 8}) {
      INFO(engine << " within " << budget);
      const reshard_plan automatic = plan_reshard(pr, {.budget_bytes = budget});
      std::array<reshard_plan, 2> by;
      std::array<std::uint64_t, 2> messages{};
      for (const reshard_order order : {reshard_order::by_chunk, reshard_order::by_array}) {
        const std::size_t o = order == reshard_order::by_array;
        by[o] = plan_reshard(pr, {.budget_bytes = budget, .order = order});
        REQUIRE(testing::check_reshard_plan(by[o], budget).empty());
        for (std::size_t k = 0; k < by[o].rounds.size(); ++k) messages[o] += by[o].messages(k);
        for (rank_t r = 0; r < 8; ++r)
          REQUIRE(rank_plan_differs(by[o], plan_reshard(pr, {.budget_bytes = budget, .of_rank = r, .order = order}), r)
                      .empty());
      }
      REQUIRE(automatic.joint_seconds == std::min(by[0].joint_seconds, by[1].joint_seconds));
      REQUIRE(messages[0] <= messages[1]);
      seconds[engine + " / " + std::to_string(big / budget)] = {by[0].joint_seconds, by[1].joint_seconds};
    }
  }
  // Each order is the faster somewhere: chunk by chunk where it saves messages (266 -> 160
  // to TP 8 within 1/8), array by array where it spreads the bytes over the rounds better.
  CHECK(seconds["{tp: 8} / 8"][0] < seconds["{tp: 8} / 8"][1]);
  CHECK(seconds["{tp: 4} @ [4, 5, 6, 7] / 8"][1] < seconds["{tp: 4} @ [4, 5, 6, 7] / 8"][0]);
}

TEST_CASE("ranks on two nodes: an array replicated on the other node crosses the link once", "[reshard]") {
  // Ranks 0-3 and 4-7 on two nodes joined by a link of 1 GB/s. A weight replicated on every
  // rank of node 1: the joint exchange sends each of the 4 replicas over the link, the
  // array's own two-phase plan sends it once, then all-gathers inside node 1. A sharded
  // weight crosses once either way and stays joint.
  reshard_problem pr;
  pr.world = 8;
  pr.arrays.push_back(array_of("replicated", element_type::f32, "{fsdp: 4}", "[{fsdp}1024, 512]",
                               "{tp: 4} @ [4, 5, 6, 7]", "[1024, 512]"));
  pr.arrays.push_back(array_of("sharded", element_type::f32, "{fsdp: 4}", "[{fsdp}1024, 512]",
                               "{tp: 4} @ [4, 5, 6, 7]", "[1024, {tp}512]"));
  const reshard_plan flat = plan_reshard(pr);
  REQUIRE(testing::check_reshard_plan(flat, 0).empty());
  CHECK(flat.route[0] == reshard_route::joint);
  CHECK(flat.route[1] == reshard_route::joint);
  time_profile two = builtin_profile;
  two.node_ranks = 4;
  two.node_per_byte = 1e-9;
  const reshard_plan p = plan_reshard(pr, {.synth = {.time_model = &two}});
  INFO(p.reason);
  REQUIRE(testing::check_reshard_plan(p, 0).empty());
  CHECK(p.route[0] == reshard_route::own);
  CHECK(p.own[0].candidates[p.own[0].chosen].name == "two-phase");
  CHECK(p.route[1] == reshard_route::joint);
  // The joint round pays the link for the sharded weight: 1024 x 512 floats over it once.
  const double bytes = 1024.0 * 512 * 4;
  CHECK(p.seconds > bytes * 1e-9 + p.own[0].candidates[p.own[0].chosen].seconds);
  // Both joint, the link would carry 4 + 1 copies: the plan is predicted below that alone.
  CHECK(p.seconds < 5 * bytes * 1e-9);
}

TEST_CASE("ranks on two nodes: weights replicated on both nodes travel inside each node", "[reshard]") {
  // HSDP (rows sharded over fsdp inside a node, replicated over dp, the node) to TP 8 on the
  // same ranks: every row block a rank lacks has a holder on its node, which sends it.
  reshard_problem pr;
  pr.world = 8;
  for (const char* name : {"wq", "wk"})
    pr.arrays.push_back(array_of(name, element_type::f32, "{dp: 2, fsdp: 4}", "[{fsdp}1024, 512]", "{tp: 8}",
                                 "[1024, {tp}512]"));
  auto crossing = [](const reshard_plan& p) {
    std::uint64_t n = 0;
    for (const reshard_round& r : p.rounds)
      for (const reshard_piece& pc : r.pieces) n += pc.from / 4 != pc.to / 4 ? p.piece_bytes(pc) : 0;
    return n;
  };
  const reshard_plan flat = plan_reshard(pr);
  REQUIRE(testing::check_reshard_plan(flat, 0).empty());
  CHECK(flat.node_ranks == 0);
  CHECK(crossing(flat) == 2 * 2 * 12 * 256 * 64 * 4 / 2);  // 2 arrays, 2 nodes, half of a node's 12 pieces
  time_profile two = builtin_profile;
  two.node_ranks = 4;
  two.node_per_byte = 1e-9;
  for (std::uint64_t budget : {std::uint64_t{0}, std::uint64_t{1024 * 512 * 4 / 8}}) {
    const reshard_plan p = plan_reshard(pr, {.budget_bytes = budget, .synth = {.time_model = &two}});
    INFO(p.reason);
    REQUIRE(testing::check_reshard_plan(p, budget).empty());
    CHECK(p.node_ranks == 4);
    CHECK(p.route == std::vector<reshard_route>{reshard_route::joint, reshard_route::joint});
    CHECK(crossing(p) == 0);
    CHECK(p.received_bytes == flat.received_bytes);  // the lower bound, whoever sends
    CHECK(p.received_bytes == p.lower_bound_bytes);
  }
}

TEST_CASE("every call pays one agreement: an array whose own program moves nothing stays joint", "[reshard]") {
  // The column-parallel bias of the weight sync: block index tp + 2 fsdp on {fsdp: 4, tp: 2}
  // is the world rank, as on {tp: 8}, so its own program has no step (each rank copies its
  // tile). The joint exchange copies it too, at no extra call.
  reshard_problem pr;
  pr.world = 8;
  pr.arrays.push_back(array_of("b", element_type::f32, "{fsdp: 4, tp: 2}", "[{tp, fsdp}4096]", "{tp: 8}", "[{tp}4096]"));
  pr.arrays.push_back(array_of("w", element_type::f32, "{fsdp: 4, tp: 2}", "[{fsdp}1024, {tp}512]", "{tp: 8}",
                               "[1024, {tp}512]"));
  pr.arrays.push_back(array_of("s", element_type::f32, "{fsdp: 4, tp: 2}", "[{tp}256, 64] sum{fsdp}", "{tp: 8}",
                               "[{tp}256, 64]"));
  const reshard_plan p = plan_reshard(pr);
  INFO(p.reason);
  const time_profile& P = builtin_profile;
  const double call = detail::call_seconds(P, 8);
  REQUIRE(call == P.seconds(op::allreduce, 3, 0, 24));  // an all-reduce of 24 bytes: 3 rounds among 8
  REQUIRE(p.own[0].candidates[p.own[0].chosen].prog.steps.empty());
  REQUIRE(p.route == std::vector<reshard_route>{reshard_route::joint, reshard_route::joint, reshard_route::own});
  REQUIRE(testing::check_reshard_plan(p, 0).empty());
  const double own = p.own[2].candidates[p.own[2].chosen].seconds;
  REQUIRE(p.seconds == Approx(call + p.joint_seconds + own));  // one call: s agrees within it
  double separate = 0;
  for (const plan_choice& c : p.own) separate += c.candidates[c.chosen].seconds + call;
  separate += P.pass_per_byte * 512 * 4;  // b's program of no steps copies its tile
  REQUIRE(p.separate_seconds == Approx(separate));
  // Without the joint exchange every array is a call of its own.
  const reshard_plan q = plan_reshard(pr, {.joint = false});
  REQUIRE(q.seconds == Approx(separate));
}

TEST_CASE("fused collectives: own all-reduces and reduce-scatters share one call, priced", "[reshard]") {
  const reshard_problem pr = testing::gradient_reshard(4);  // w, n, d, t per layer, then m0, m1
  const reshard_plan p = plan_reshard(pr);
  INFO(p.reason);
  REQUIRE(testing::check_reshard_plan(p, 0).empty());
  REQUIRE(p.count(reshard_route::own) == pr.arrays.size());
  // One call per kind, reduction, element type and groups: w* (f32, reduce-scatter over
  // fsdp), n* (all-reduce over fsdp), d* (f64), t* (reduce-scatter over tp), m* (i32 max).
  using set = std::vector<std::uint32_t>;
  REQUIRE(p.fused.size() == 5);
  REQUIRE(p.fused[0].arrays == set{0, 4, 8, 12});
  REQUIRE(p.fused[1].arrays == set{1, 5, 9, 13});
  REQUIRE(p.fused[2].arrays == set{2, 6, 10, 14});
  REQUIRE(p.fused[3].arrays == set{3, 7, 11, 15});
  REQUIRE(p.fused[4].arrays == set{16, 17});
  REQUIRE(p.reason.find("18 of them in 5 fused collectives") != std::string::npos);
  // The norms' call: its agreement, one all-reduce over groups of 4 of the four [32] f32
  // tiles (each member receives 2 x 3/4 of 512 bytes, writes 512), the pack and the unpack.
  const time_profile& P = builtin_profile;
  const double call = detail::call_seconds(P, 8);
  REQUIRE(p.fused[1].seconds == Approx(P.seconds(op::allreduce, 2, 768, 512) + P.pass_per_byte * 1024));
  REQUIRE(p.fused[1].bytes == 2 * 512);
  REQUIRE(p.fused[0].bytes == (4 + 1) * 4 * 1024);  // n + 1 blocks of four 1 KiB parts
  double fused = 0;
  for (const reshard_fused& f : p.fused) {
    double separate = 0;
    for (std::uint32_t a : f.arrays) separate += p.own[a].candidates[p.own[a].chosen].seconds;
    REQUIRE(f.seconds < separate);
    fused += f.seconds;
  }
  REQUIRE(p.seconds == Approx(call + fused));  // the plan's one agreement, the five calls
  REQUIRE(p.seconds < p.separate_seconds / 3);
  // An array joins only where its part of the buffers is within fuse_array_bytes: the
  // weights hold 5 KiB each.
  const reshard_plan small = plan_reshard(pr, {.fuse_array_bytes = 4096});
  REQUIRE(testing::check_reshard_plan(small, 0).empty());
  REQUIRE(small.fused.size() == 4);
  REQUIRE(small.fused[0].arrays == set{1, 5, 9, 13});
  REQUIRE(small.seconds == Approx(p.seconds - p.fused[0].seconds + 4 * p.own[0].candidates[p.own[0].chosen].seconds));
  // Nothing fused: the same programs in one call, one agreement for all 18 instead of one each.
  const reshard_plan none = plan_reshard(pr, {.fuse_array_bytes = 0});
  REQUIRE(none.fused.empty());
  REQUIRE(none.seconds == Approx(none.separate_seconds - 17 * call));
  // Under a budget the sets split to fit it, in array order.
  const reshard_plan q = plan_reshard(pr, {.budget_bytes = testing::gradient_budget});
  REQUIRE(testing::check_reshard_plan(q, testing::gradient_budget).empty());
  REQUIRE(q.fused.size() == 6);
  REQUIRE(q.fused[0].arrays == set{0, 4});
  REQUIRE(q.fused[1].arrays == set{8, 12});
  // A call's predicted seconds stay within fuse_set_calls agreements' time: the weights' set
  // (0.61 of an agreement) splits in two in array order; the norms' and the maxima's arrays
  // are each above 0.5 alone (their all-reduce over 4 is two rounds), so they run as their
  // own programs.
  const reshard_plan c = plan_reshard(pr, {.fuse_set_calls = 0.5});
  REQUIRE(testing::check_reshard_plan(c, 0).empty());
  REQUIRE(c.fused.size() == 4);
  REQUIRE(c.fused[0].arrays == set{0, 4});
  REQUIRE(c.fused[1].arrays == set{8, 12});
  REQUIRE(c.fused[2].arrays == set{2, 6, 10, 14});
  REQUIRE(c.fused[3].arrays == set{3, 7, 11, 15});
  for (const reshard_fused& f : c.fused) REQUIRE(f.seconds <= 0.5 * call);
  REQUIRE(p.fused[0].seconds > 0.5 * call);
  REQUIRE(plan_reshard(pr, {.fuse_set_calls = 0.15}).fused.empty());
  REQUIRE(plan_reshard(pr, {.fuse_set_calls = 0}).fused.size() == 5);  // no such limit
  // Where the pack and the unpack are predicted dearer than the calls they save, nothing joins.
  time_profile slow = builtin_profile;
  slow.pass_per_byte = 1e-6;
  reshard_options o;
  o.synth.time_model = &slow;
  REQUIRE(plan_reshard(pr, o).fused.empty());
  // One call per array fuses nothing.
  REQUIRE(plan_reshard(pr, {.joint = false}).fused.empty());
}

TEST_CASE("fused collectives of two steps: HSDP gradients, one call per step", "[reshard]") {
  const reshard_problem pr = testing::hsdp_gradient_reshard(3);  // w, v, n, e per layer
  const reshard_plan p = plan_reshard(pr);
  INFO(p.reason);
  REQUIRE(testing::check_reshard_plan(p, 0).empty());
  using set = std::vector<std::uint32_t>;
  REQUIRE(p.fused.size() == 4);
  const std::vector<std::vector<op>> kinds = {{op::reducescatter, op::allreduce},
                                              {op::reducescatter, op::allgather},
                                              {op::allreduce, op::allgather},
                                              {op::reducescatter, op::allgather}};
  for (std::uint32_t k = 0; k < 4; ++k) {
    REQUIRE(p.fused[k].arrays == set{k, k + 4, k + 8});
    std::vector<op> got;
    for (const step& s : p.own[k].chosen_program().steps) got.push_back(s.kind);
    REQUIRE(got == kinds[k]);
  }
  // w*: the source tiles packed in reduce-scatter order (3 x 32 x 32 elements), the
  // reduce-scatter over fsdp into the other buffer (half), the all-reduce over ddp back into
  // the first, unpacked: buffers of 3072 and 1536 f32, two passes of copies.
  const time_profile& P = builtin_profile;
  REQUIRE(p.fused[0].bytes == (3072 + 1536) * 4);
  REQUIRE(p.fused[0].seconds == Approx(step_seconds(P, op::reducescatter, 2, 3072, 1536, 4) +
                                       step_seconds(P, op::allreduce, 2, 1536, 1536, 4) +
                                       P.pass_per_byte * (3072 + 1536) * 4));
  // v*: reduce-scatter over 4, then all-gather over 2 (the result in member blocks, unpacked
  // into the target tiles' halves): 3 x 64 x 128 elements, then a quarter, then a half.
  REQUIRE(p.fused[1].bytes == (3 * 8192 + 3 * 2048) * 4);
  for (const reshard_fused& f : p.fused) {
    double separate = 0;
    for (std::uint32_t a : f.arrays) separate += p.own[a].candidates[p.own[a].chosen].seconds;
    REQUIRE(f.seconds < separate);
  }
  // An all-gather then a reduce-scatter: the all-gather's member blocks repacked into tiles,
  // then into the reduce-scatter's chunks, through the other buffer each time.
  std::vector<step> steps(2);
  steps[0].kind = op::allgather;
  steps[1].kind = op::reducescatter;
  const std::vector<detail::fused_action> x = detail::schedule_fused(steps);
  using fa = detail::fused_arrangement;
  REQUIRE(x.size() == 6);
  auto is = [](const detail::fused_action& a, bool call, std::size_t state, int from, int to, fa in, fa out) {
    return a.call == call && a.state == state && a.from == from && a.to == to && a.in == in && a.out == out;
  };
  CHECK(is(x[0], false, 0, -1, 0, fa::tiles, fa::tiles));
  CHECK(is(x[1], true, 0, 0, 1, fa::tiles, fa::members));
  CHECK(is(x[2], false, 1, 1, 0, fa::members, fa::tiles));
  CHECK(is(x[3], false, 1, 0, 1, fa::tiles, fa::chunks));
  CHECK(is(x[4], true, 1, 1, 0, fa::chunks, fa::tiles));
  CHECK(is(x[5], false, 2, 0, -1, fa::tiles, fa::tiles));
  REQUIRE(detail::fused_buffers(x, {4, 8, 2}) == std::array<std::uint64_t, 2>{8, 8});
}

TEST_CASE("a budget cuts one piece into chunks of whole rows", "[reshard]") {
  reshard_problem pr;
  pr.arrays.push_back(array_of("x", element_type::f32, "{} @ [0]", "[64, 64]", "{} @ [1]", "[64, 64]"));
  const reshard_plan p = plan_reshard(pr, {.budget_bytes = 1024});  // rows of 256 bytes: 4 a chunk
  REQUIRE(p.world == 2);
  REQUIRE(testing::check_reshard_plan(p, 1024).empty());
  REQUIRE(p.rounds.size() == 16);
  for (const reshard_round& r : p.rounds) {
    REQUIRE(r.pieces.size() == 1);
    REQUIRE(r.pieces[0].b.extent(0) == 4);
  }
  REQUIRE(p.transient_bytes == std::vector<std::uint64_t>{1024, 1024});
  try {
    plan_reshard(pr, {.budget_bytes = 255});
    FAIL("accepted");
  } catch (const redist_error& e) {
    REQUIRE(std::string(e.what()) == "array 'x': one row of the piece [0, 64) x [0, 64) from rank 0 to rank 1 is 256 "
                                     "bytes, more than the budget of 255 bytes per rank");
  }
}

TEST_CASE("pipelined rounds: half the budget each, chosen by the overlap", "[reshard]") {
  reshard_problem pr;
  pr.arrays.push_back(array_of("x", element_type::f32, "{} @ [0]", "[64, 64]", "{} @ [1]", "[64, 64]"));
  // The built-in profile: transfers and copies share the cores, nothing to hide.
  const reshard_plan one = plan_reshard(pr, {.budget_bytes = 1024});
  REQUIRE(!one.pipelined);
  REQUIRE(one.rounds.size() == 16);
  // On: rounds of 512 bytes (2 rows), two at a time within 1024.
  const reshard_plan two = plan_reshard(pr, {.budget_bytes = 1024, .pipeline = reshard_pipeline::on});
  REQUIRE(two.pipelined);
  REQUIRE(testing::check_reshard_plan(two, 1024).empty());
  REQUIRE(two.rounds.size() == 32);
  REQUIRE(two.transient_bytes == std::vector<std::uint64_t>{1024, 1024});
  REQUIRE(two.unpipelined_seconds == one.joint_seconds);
  REQUIRE(two.joint_seconds > one.joint_seconds);  // more latencies, nothing hidden
  REQUIRE(two.reason.find("in 32 pipelined rounds") != std::string::npos);
  // Half the budget below one row (256 bytes): one round at a time, and the reason says why.
  const reshard_plan odd = plan_reshard(pr, {.budget_bytes = 511, .pipeline = reshard_pipeline::on});
  REQUIRE(!odd.pipelined);
  REQUIRE(odd.rounds.size() == 64);
  REQUIRE(odd.reason.find("not pipelined: a row of a piece is more than half the budget") != std::string::npos);
  // No budget: one round, nothing to pipeline.
  REQUIRE(!plan_reshard(pr, {.pipeline = reshard_pipeline::on}).pipelined);
  // A profile whose transfers leave the cores free and whose copies are slow: automatic
  // pipelines, priced sum (t + c) - overlap * sum min(t_k, c_{k+1}).
  time_profile P = builtin_profile;
  P.overlap = 0.75;
  P.pass_per_byte = 1e-6;
  reshard_options o{.budget_bytes = 1024};
  o.synth.time_model = &P;
  const reshard_plan fast = plan_reshard(pr, o);
  REQUIRE(fast.pipelined);
  REQUIRE(fast.rounds.size() == 32);
  const double t = P.seconds(op::exchange, 1, 512, 0), c = P.pass_per_byte * 512;
  REQUIRE(fast.joint_seconds == Approx(32 * (t + c) - 31 * 0.75 * std::min(t, c)));
  REQUIRE(fast.unpipelined_seconds == Approx(16 * (P.seconds(op::exchange, 1, 1024, 0) + 2 * c)));
  REQUIRE(fast.joint_seconds < fast.unpipelined_seconds);
  o.pipeline = reshard_pipeline::off;
  REQUIRE(!plan_reshard(pr, o).pipelined);
}

TEST_CASE("pending values take their own plans, bf16 and f16 too; their collectives fuse", "[reshard]") {
  reshard_problem pr;
  pr.arrays.push_back(array_of("g", element_type::f32, "{x: 2, y: 2}", "[{x}8, 8] sum{y}", "{x: 2, y: 2}", "[8, {y}8]"));
  pr.arrays.push_back(array_of("w", element_type::f32, "{x: 2, y: 2}", "[{x}8, 8]", "{x: 2, y: 2}", "[8, {y}8]"));
  const reshard_plan p = plan_reshard(pr);
  REQUIRE(p.route[0] == reshard_route::own);
  REQUIRE(testing::check_reshard_plan(p, 0).empty());
  for (const element_type t : {element_type::bf16, element_type::f16}) {
    pr.arrays[0].dtype = t;
    const reshard_plan h = plan_reshard(pr);
    REQUIRE(h.route[0] == reshard_route::own);
    REQUIRE(testing::check_reshard_plan(h, 0).empty());
    CHECK(h.own[0].chosen_program().steps.size() == p.own[0].chosen_program().steps.size());
  }
  // A target that creates pending values (a partial step, lower/partial.hpp): its own
  // program too.
  pr.arrays[0] = array_of("g", element_type::bf16, "{x: 2, y: 2}", "[{x}8, {y}8]", "{x: 2, y: 2}", "[{x}8, 8] max{y}");
  const reshard_plan q = plan_reshard(pr);
  REQUIRE(q.route[0] == reshard_route::own);
  CHECK(q.own[0].chosen_program().steps.back().kind == op::partial);
  // bf16 gradients reduce-scattered, as FSDP does: one fused call for every array of a type.
  reshard_problem grads;
  for (int i = 0; i < 6; ++i)
    grads.arrays.push_back(array_of("g" + std::to_string(i), i < 4 ? element_type::bf16 : element_type::f16, "{x: 4}",
                                    "[32, 8] sum{x}", "{x: 4}", "[{x}32, 8]"));
  const reshard_plan f = plan_reshard(grads);
  REQUIRE(f.count(reshard_route::own) == 6);
  REQUIRE(f.fused.size() == 2);
  CHECK(f.fused[0].arrays == std::vector<std::uint32_t>{0, 1, 2, 3});
  CHECK(f.fused[1].arrays == std::vector<std::uint32_t>{4, 5});
}

TEST_CASE("own programs over the budget run chunk by chunk", "[reshard]") {
  // Gradients reduce-scattered along dimension 1: the executor packs the strided blocks, 768
  // bytes at most; dimension 0 is one unit at both ends, a chunk of its rows one run of
  // every tile.
  reshard_problem pr;
  pr.arrays.push_back(array_of("g", element_type::f32, "{x: 2}", "[16, 24] sum{x}", "{x: 2}", "[16, {x}24]"));
  const reshard_plan whole = plan_reshard(pr, {.budget_bytes = 768});
  REQUIRE(detail::own_held_bound(whole.own[0].chosen_program(), 4) == 768);
  REQUIRE_FALSE(whole.chunked(0));
  CHECK(&whole.own_program(0) == &whole.own[0].chosen_program());
  const reshard_plan p = plan_reshard(pr, {.budget_bytes = 600});
  REQUIRE(p.chunked(0));
  const reshard_chunks& k = p.chunks[0];
  CHECK(k.count == 2);
  CHECK(k.units[0] == 1);
  CHECK(k.rows[0] == 8);
  CHECK(k.units[1] == 0);
  CHECK(k.held_bytes == 384);
  const program& sub = p.own_program(0);
  CHECK(sub.source.dims[0].global == 8);
  CHECK(sub.target == parse_type(sub.m, "[8, {x}24]"));
  CHECK(p.seconds == Approx(detail::call_seconds(builtin_profile, 2) + detail::own_seconds(p, builtin_profile, 0, false)));
  // One call (its agreement covers both chunks), two chunks' programs.
  CHECK(p.seconds == Approx(detail::call_seconds(builtin_profile, 2) + 2 * k.sub.candidates[k.sub.chosen].seconds));
  CHECK_THAT(p.reason, Catch::Matchers::Contains("1 of them chunk by chunk within the budget"));
  // One row a chunk: contiguous reduce-scatters, nothing held.
  const reshard_plan q = plan_reshard(pr, {.budget_bytes = 40});
  REQUIRE(q.chunked(0));
  CHECK(q.chunks[0].count == 16);
  CHECK(q.chunks[0].held_bytes == 0);
  // Units of the least common multiple of the blocks at both ends (1 and 3 of [30]: 3
  // units of 10); where one dimension is not enough, one row of it and rows of the next.
  pr.arrays[0] = array_of("g", element_type::f32, "{x: 2}", "[30] sum{x}", "{a: 3} @ [2, 3, 4]", "[{a}30]");
  const reshard_plan u = plan_reshard(pr, {.budget_bytes = 100});
  REQUIRE(u.chunked(0));
  CHECK(u.chunks[0].units[0] == 3);
  CHECK(u.chunks[0].rows[0] == 2);
  CHECK(u.chunks[0].count == 5);
  CHECK(u.chunks[0].held_bytes <= 100);
  pr.arrays[0] = array_of("g", element_type::f32, "{x: 2}", "[30, 4] sum{x}", "{a: 3} @ [2, 3, 4]", "[{a}30, 4]");
  const reshard_plan v = plan_reshard(pr, {.budget_bytes = 100});
  REQUIRE(v.chunked(0));
  CHECK(v.chunks[0].units[0] == 3);
  CHECK(v.chunks[0].rows[0] == 1);
  CHECK(v.chunks[0].units[1] == 1);
  CHECK(v.chunks[0].rows[1] == 2);
  CHECK(v.chunks[0].count == 20);
  CHECK(v.chunks[0].held_bytes <= 100);
  // Below a chunk of one row of every dimension: not chunked (the executor refuses it).
  CHECK_FALSE(plan_reshard(pr, {.budget_bytes = 10}).chunked(0));
  // Without a budget, never.
  CHECK_FALSE(plan_reshard(pr).chunked(0));
  // bf16 gradients reduced in f32: every chunk of the source staged, converted, priced as a
  // pass writing the source tile in f32 (the target's chunks are runs of its f32 tiles).
  pr.arrays[0] = array_of("g", element_type::bf16, "{x: 2}", "[6, 8, 10] sum{x}", "{x: 2}", "[6, {x}8, 10]");
  pr.arrays[0].target_dtype = element_type::f32;
  const reshard_plan m = plan_reshard(pr, {.budget_bytes = 400});
  REQUIRE(m.chunked(0));
  CHECK(m.chunks[0].count == 6);
  CHECK(detail::staged_sides(m.arrays[0], m.chunks[0]) == std::array<bool, 2>{true, false});
  const plan_candidate& mc = m.chunks[0].sub.candidates[m.chunks[0].sub.chosen];
  CHECK(m.seconds == Approx(detail::call_seconds(builtin_profile, 2) + 6 * mc.seconds +
                            builtin_profile.pass_per_byte * (6 * 8 * 10) * 4));
  // With one call per array, any array: weights without pending values, all-to-all'd over
  // strided blocks (768 bytes of packs), stay joint in the joint plan and run in chunks alone
  // (4 of 3 rows of each of the 2 units of dimension 1, staged: 576 bytes).
  pr.arrays[0] = array_of("w", element_type::f32, "{x: 2}", "[{x}16, 24]", "{x: 2}", "[16, {x}24]");
  const reshard_plan j = plan_reshard(pr, {.budget_bytes = 600});
  CHECK(j.route[0] == reshard_route::joint);
  CHECK_FALSE(j.chunked(0));
  const reshard_plan s = plan_reshard(pr, {.budget_bytes = 600, .joint = false});
  REQUIRE(s.chunked(0));
  CHECK(s.chunks[0].count == 4);
  CHECK(s.chunks[0].units[1] == 2);
  CHECK(s.chunks[0].rows[1] == 3);
  CHECK(s.chunks[0].held_bytes == 576);
  CHECK(s.seconds == Approx(detail::own_seconds(s, builtin_profile, 0, true)));  // one call per array: its own agreement
  CHECK_THAT(s.reason, Catch::Matchers::StartsWith("1 arrays, one call each (1 chunk by chunk within the budget)"));
}

TEST_CASE("bad input names the array", "[reshard]") {
  reshard_problem pr;
  REQUIRE_THROWS_WITH(plan_reshard(pr), "the reshard has no arrays");
  pr.arrays.push_back(array_of("x", element_type::f32, "{a: 2}", "[{a}8]", "{a: 2}", "[8]"));
  pr.arrays.push_back(array_of("x", element_type::f32, "{a: 2}", "[{a}8]", "{a: 2}", "[8]"));
  REQUIRE_THROWS_WITH(plan_reshard(pr), "two arrays are named 'x'");
  pr.arrays[1] = array_of("y", element_type::f32, "{a: 2}", "[{a}8]", "{b: 2} @ [2, 3]", "[8]");
  pr.world = 3;
  REQUIRE_THROWS_WITH(plan_reshard(pr), "array 'y': its meshes need a world of 4 ranks, the reshard has 3");
  pr.world = 0;
  pr.arrays[1] = array_of("y", element_type::f32, "{a: 2}", "[{a}8]", "{a: 4}", "[{a}16]");
  try {
    plan_reshard(pr);
    FAIL("accepted");
  } catch (const redist_error& e) {
    REQUIRE(std::string(e.what()).rfind("array 'y': ", 0) == 0);
    REQUIRE(e.code() == errc::global_mismatch);
  }
}

TEST_CASE("casts: joint, on the way in the narrower type; what is refused", "[reshard][cast]") {
  std::mt19937 rng(2631);
  testing::reshard_workload w;
  w.casts = true;
  int casts = 0;
  for (int i = 0; i < 400; ++i) {
    const testing::reshard_case c = testing::random_reshard(rng, w);
    INFO(c.text);
    const reshard_plan p = plan_reshard(c.problem);
    REQUIRE(testing::check_reshard_plan(p, 0).empty());
    for (const reshard_array& a : p.arrays) casts += a.casts();
  }
  CHECK(casts > 200);
  // f32 [16, 8] row blocks on {x: 2} to column blocks of bf16 on {y: 2} @ [2, 3]: each target
  // rank receives its 64 elements as bf16, 128 bytes, from two senders; the other way
  // (widening) they travel as bf16 too. Its target tile holds bf16.
  reshard_problem pr;
  pr.arrays.push_back(array_of("w", element_type::f32, "{x: 2}", "[{x}16, 8]", "{y: 2} @ [2, 3]", "[16, {y}8]"));
  pr.arrays[0].target_dtype = element_type::bf16;
  const reshard_plan p = plan_reshard(pr);
  REQUIRE(testing::check_reshard_plan(p, 0).empty());
  CHECK(p.route[0] == reshard_route::joint);
  CHECK(p.received_bytes == std::vector<std::uint64_t>{0, 0, 128, 128});
  CHECK(p.lower_bound_bytes == p.received_bytes);
  reshard_problem back;
  back.arrays.push_back(array_of("w", element_type::bf16, "{x: 2}", "[{x}16, 8]", "{y: 2} @ [2, 3]", "[16, {y}8]"));
  back.arrays[0].target_dtype = element_type::f32;
  CHECK(plan_reshard(back).received_bytes == p.received_bytes);
  // A budget counts bf16 rows: a row of a piece is 4 elements, 8 bytes on the way.
  const reshard_plan q = plan_reshard(pr, {.budget_bytes = 8});
  REQUIRE(testing::check_reshard_plan(q, 8).empty());
  CHECK(q.rounds.size() == 16);
  REQUIRE_THROWS_WITH(plan_reshard(pr, {.budget_bytes = 7}), Catch::Matchers::Contains("is 8 bytes, more than the budget of 7"));
  // Refused: casts between other types, casts of values without the joint exchange.
  reshard_problem ints = pr;
  ints.arrays[0].dtype = element_type::i32;
  ints.arrays[0].target_dtype = element_type::f32;
  REQUIRE_THROWS_WITH(plan_reshard(ints),
                      "array 'w': cannot cast i32 to f32 (casts are between the floating-point types f64, f32, bf16, f16)");
  ints.arrays[0] = array_of("g", element_type::i32, "{x: 2}", "[16, 8] sum{x}", "{x: 2}", "[{x}16, 8]");
  ints.arrays[0].target_dtype = element_type::f32;
  REQUIRE_THROWS_WITH(plan_reshard(ints),
                      "array 'g': cannot cast i32 to f32 (casts are between the floating-point types f64, f32, bf16, f16)");
  REQUIRE_THROWS_WITH(plan_reshard(pr, {.joint = false}),
                      "array 'w' casts f32 to bf16, which only the joint exchange does (one call per array was asked)");
}

TEST_CASE("casts of pending values: reduced in the type that holds both, as FSDP's reduce_dtype", "[reshard][cast]") {
  using enum element_type;
  CHECK(element_type_holding(bf16, f32) == f32);
  CHECK(element_type_holding(f32, bf16) == f32);
  CHECK(element_type_holding(bf16, f16) == f32);
  CHECK(element_type_holding(f16, f64) == f64);
  CHECK(element_type_holding(f32, f64) == f64);
  CHECK(element_type_holding(bf16, bf16) == bf16);
  // FSDP's MixedPrecision(param_dtype=bf16, reduce_dtype=f32): bf16 gradients reduce-scattered
  // in f32 into f32 shards. They share one f32 call with f32 gradients and with f32 partial
  // sums that land in bf16; f16 gradients into bf16 shards reduce in f32 too.
  reshard_problem grads;
  const element_type from[] = {bf16, f32, f16, f32, bf16, f16};
  const element_type to[] = {f32, f32, f32, bf16, bf16, bf16};
  for (int i = 0; i < 6; ++i) {
    grads.arrays.push_back(
        array_of("g" + std::to_string(i), from[i], "{x: 4}", "[32, 8] sum{x}", "{x: 4}", "[{x}32, 8]"));
    grads.arrays.back().target_dtype = to[i];
  }
  const reshard_plan f = plan_reshard(grads);
  REQUIRE(testing::check_reshard_plan(f, 0).empty());
  REQUIRE(f.count(reshard_route::own) == 6);
  const element_type program[] = {f32, f32, f32, f32, bf16, f32};
  for (std::size_t i = 0; i < 6; ++i) CHECK(f.arrays[i].program_type() == program[i]);
  REQUIRE(f.fused.size() == 1);
  CHECK(f.fused[0].arrays == std::vector<std::uint32_t>{0, 1, 2, 3, 5});  // g4 reduces in bf16, alone
  // Its own program is planned for the program's elements, and pays the passes that convert
  // its tiles: source 32 x 8 elements per rank to f32 before, target 8 x 8 to bf16 after.
  reshard_problem one;
  one.arrays.push_back(array_of("g", f32, "{x: 4}", "[32, 8] sum{x}", "{x: 4}", "[{x}32, 8]"));
  const reshard_plan plain = plan_reshard(one);
  one.arrays[0].dtype = bf16;
  const time_profile& P = builtin_profile;
  one.arrays[0].target_dtype = f32;
  const reshard_plan cast = plan_reshard(one);
  REQUIRE(cast.route[0] == reshard_route::own);
  CHECK(cast.own[0].candidates[cast.own[0].chosen].name == plain.own[0].candidates[plain.own[0].chosen].name);
  CHECK(cast.own[0].candidates[cast.own[0].chosen].seconds == plain.own[0].candidates[plain.own[0].chosen].seconds);
  CHECK(detail::staging_seconds(P, cast.arrays[0], 4) == P.pass_per_byte * (32 * 8 * 4));
  CHECK(cast.seconds == Approx(detail::call_seconds(P, 4) + detail::own_seconds(cast, P, 0, false)));
  CHECK(cast.seconds > plain.seconds);
  one.arrays[0].dtype = f32;
  one.arrays[0].target_dtype = bf16;
  CHECK(detail::staging_seconds(P, plan_reshard(one).arrays[0], 4) == P.pass_per_byte * (8 * 8 * 2));
  // bf16 to f16 both ways through f32: a pass on each side. One call per array takes them.
  one.arrays[0].dtype = bf16;
  one.arrays[0].target_dtype = f16;
  CHECK(detail::staging_seconds(P, one.arrays[0], 4) == P.pass_per_byte * (32 * 8 * 4 + 8 * 8 * 2));
  const reshard_plan separate = plan_reshard(one, {.joint = false});
  CHECK(separate.route[0] == reshard_route::own);
  CHECK(separate.arrays[0].program_type() == f32);
  // A target that creates pending values casts as well (a partial step in the wider type).
  one.arrays[0] = array_of("p", f32, "{x: 4}", "[{x}32, 8]", "{x: 4}", "[32, 8] sum{x}");
  one.arrays[0].target_dtype = bf16;
  const reshard_plan partial = plan_reshard(one);
  REQUIRE(partial.route[0] == reshard_route::own);
  CHECK(partial.arrays[0].program_type() == f32);
  CHECK(partial.own[0].chosen_program().steps.back().kind == op::partial);
}
