// The exchange (redist/exchange.hpp, lower/exchange.hpp): the sender rule on named cases
// (senders on the receiver's node too), the plan's refusals, its sizes alone and each rank's pieces against the whole plan on
// random problems, and thousands of random problems run on the host backend with every
// element checked: each rank receives exactly the data-movement lower bound, the peak local
// size is max(in, out), the input tiles are untouched.
#include "redist/exchange.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/lower/between.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/program_check.hpp"
#include "redist/runtime/verify.hpp"
#include "support/between_problems.hpp"
#include "support/memory_formula.hpp"
#include "support/random_problems.hpp"
#include "support/test_boxes.hpp"

namespace {

using namespace redist;
using redist::testing::make_box;

/// Run p on the host backend; returns the number of wrong target elements.
template <class T>
std::uint64_t run_on_host(const program& p, std::uint64_t* max_received_bytes = nullptr) {
  host_backend host(p.devices());
  executor<T, host_backend> ex(host, p);
  std::vector<darray<T>> in;
  for (rank_t r = 0; r < p.devices(); ++r) {
    in.emplace_back(p.m, p.source, r);
    fill_global_index(in.back());
  }
  std::vector<std::vector<T>> before;
  for (const auto& t : in) before.emplace_back(t.span().begin(), t.span().end());
  const std::vector<darray<T>> out = ex.run(in);
  std::uint64_t bad = 0;
  for (std::size_t r = 0; r < in.size(); ++r) {
    bad += check_global_index(out[r]).mismatches;
    bad += !std::equal(before[r].begin(), before[r].end(), in[r].span().begin());
  }
  CHECK(ex.peak_bytes_held() == testing::expected_bytes_held(p, sizeof(T), {.all_local = true}));
  CHECK(ex.peak_bytes_held() == 0);  // every rank local: tile to tile
  if (max_received_bytes) *max_received_bytes = p.steps.empty() ? 0 : ex.stats()[0].max_rank_bytes;
  return bad;
}

/// An exchange's plans (`plan(detail, of_rank)`): the sizes alone (plan_detail::sizes)
/// against the pieces, from which this counts what every rank receives and sends, piece by
/// piece (the pieces must cover each receiver's box); and each rank's own plan against the
/// whole one's pieces that rank receives or sends, in the same order. Returns 1 if the
/// exchange has pieces, 0 if every plan refuses it alike.
template <class Plan>
int check_plans(const std::vector<box>& before, const std::vector<box>& after, Plan&& plan) {
  const exchange_plan full = plan(plan_detail::pieces, std::nullopt);
  const exchange_plan sizes = plan(plan_detail::sizes, std::nullopt);
  REQUIRE(sizes.error == full.error);
  REQUIRE(sizes.too_large == full.too_large);
  if (!full.error.empty()) return 0;
  CHECK(sizes.pieces.empty());
  CHECK(sizes.first.empty());
  CHECK(sizes.before.empty());
  CHECK(sizes.after.empty());
  const std::size_t D = before.size();
  std::vector<std::uint64_t> got(D, 0), sent(D, 0), sent_elements(D, 0), held(D, 0);
  std::uint64_t messages = 0, senders = 0;
  for (std::size_t r = 0; r < D; ++r) {
    std::uint64_t in = 0;
    std::set<rank_t> from;
    for (const exchange_piece& pc : full.into(r)) {
      REQUIRE(pc.to == r);
      REQUIRE(intersect(pc.b, after[r]) == pc.b);
      REQUIRE(intersect(pc.b, before[pc.from]) == pc.b);
      held[r] += pc.b.size();
      if (pc.from == pc.to) continue;
      got[r] += pc.b.size();
      from.insert(pc.from);
      ++in;
      ++sent[pc.from];
      sent_elements[pc.from] += pc.b.size();
    }
    CHECK(held[r] == after[r].size());
    messages = std::max(messages, in);
    senders = std::max<std::uint64_t>(senders, from.size());
  }
  for (std::uint64_t n : sent) messages = std::max(messages, n);
  CHECK(sizes.received == got);
  CHECK(full.received == got);
  CHECK(sizes.max_received == *std::max_element(got.begin(), got.end()));
  CHECK(sizes.max_sent == *std::max_element(sent_elements.begin(), sent_elements.end()));
  CHECK(sizes.messages == messages);
  CHECK(sizes.max_senders == senders);
  CHECK(full.max_received == sizes.max_received);
  CHECK(full.max_sent == sizes.max_sent);
  CHECK(full.messages == sizes.messages);
  for (std::size_t me = 0; me < D; ++me) {
    const exchange_plan mine = plan(plan_detail::pieces, static_cast<rank_t>(me));
    REQUIRE(mine.error.empty());
    CHECK(mine.received == got);
    CHECK(mine.max_sent == sizes.max_sent);
    CHECK(mine.messages == sizes.messages);
    CHECK(mine.before == full.before);
    CHECK(mine.after == full.after);
    REQUIRE(mine.first.size() == D + 1);
    for (std::size_t r = 0; r < D; ++r) {
      std::vector<exchange_piece> want;
      for (const exchange_piece& pc : full.into(r))
        if (pc.from == me || pc.to == me) want.push_back(pc);
      const auto have = mine.into(r);
      REQUIRE(have.size() == want.size());
      for (std::size_t k = 0; k < want.size(); ++k) {
        CHECK(have[k].from == want[k].from);
        CHECK(have[k].to == want[k].to);
        CHECK(have[k].b == want[k].b);
      }
    }
  }
  return 1;
}

/// check_plans of the exchange from boxes `before` to `after` (`node_ranks`: world ranks per
/// node, 0 for one node).
int check_sizes(const std::vector<box>& before, const std::vector<box>& after, std::uint64_t node_ranks = 0) {
  return check_plans(before, after, [&](plan_detail d, std::optional<rank_t> r) {
    return plan_exchange(before, after, d, r, node_ranks);
  });
}

/// Elements an exchange's pieces carry between nodes of `node_ranks` ranks.
std::uint64_t crossing(const exchange_plan& x, std::uint64_t node_ranks) {
  std::uint64_t n = 0;
  for (const exchange_piece& pc : x.pieces)
    if (pc.from / node_ranks != pc.to / node_ranks) n += pc.b.size();
  return n;
}

}  // namespace

TEST_CASE("exchange: the sizes alone and each rank's pieces agree with the whole plan, on random types, meshes and box layouts",
          "[exchange][property]") {
  std::mt19937 rng(0x512e5);
  const testing::between_workload w;
  int planned = 0, layouts = 0;
  for (int i = 0; i < 3000; ++i) {
    testing::between_problem bp;
    if (!testing::parse_between(testing::random_between(rng, w), bp)) continue;
    const std::uint64_t W = bp.world;
    std::vector<box> before = placed_boxes(bp.a.pm.mesh, bp.a.type, bp.a.pm.devices, W);
    std::vector<box> after = placed_boxes(bp.b.pm.mesh, bp.b.type, bp.b.pm.devices, W);
    if (i % 3 != 0) {  // a box layout at one end: boxes that need not form a grid
      (i % 3 == 1 ? before : after) = testing::random_box_layout(rng, layout_shape(bp.a), W).all_boxes();
      ++layouts;
    }
    INFO(bp.text.from_mesh << " " << bp.text.from << " -> " << bp.text.to_mesh << " " << bp.text.to << ", world " << W
                           << ", problem " << i);
    planned += check_sizes(before, after);
  }
  CHECK(planned > 2000);
  CHECK(layouts > 1000);
  SECTION("a sparse grid of ranges (the boxes by a map, not a table): 64 diagonal blocks, each to the next rank") {
    std::vector<box> before, after;
    for (std::uint64_t r = 0; r < 64; ++r) before.push_back(make_box({{r, r + 1}, {2 * r, 2 * r + 2}}));
    for (std::uint64_t r = 0; r < 64; ++r) after.push_back(before[(r + 1) % 64]);
    CHECK(check_sizes(before, after) == 1);
    CHECK(plan_exchange(before, after, plan_detail::sizes).max_received == 2);
  }
  SECTION("refusals alike: boxes that overlap partly, elements nobody holds") {
    CHECK(check_sizes({make_box({{0, 6}}), make_box({{4, 10}})}, {make_box({{0, 5}}), make_box({{5, 10}})}) == 0);
    CHECK(check_sizes({make_box({{0, 4}}), make_box({{0, 4}})}, {make_box({{0, 4}}), make_box({{4, 8}})}) == 0);
  }
}

TEST_CASE("exchange: the collectives that run as exchanges on uneven tiles, their sizes and each rank's pieces",
          "[exchange][property]") {
  std::vector<testing::workload> ws;
  for (auto axes : std::vector<std::vector<std::pair<std::string, std::uint64_t>>>{
           {{"x", 2}, {"y", 2}, {"z", 2}}, {{"x", 3}, {"y", 4}}, {{"x", 6}}, {{"x", 2}, {"y", 3}, {"z", 5}}}) {
    testing::workload w;
    w.axes = axes;
    w.max_dims = 4;
    w.max_elements = 1 << 12;
    ws.push_back(w);
  }
  std::map<op, int> steps;
  for (std::size_t i = 0; i < 800; ++i) {
    std::mt19937_64 rng(0x636f6c6c + i);
    const testing::problem_text pt = testing::random_uneven_problem(rng, ws[i % ws.size()]);
    INFO(pt.mesh << " " << pt.from << " -> " << pt.to);
    const device_mesh m = parse_mesh(pt.mesh);
    program p;
    try {
      p = search_program(m, parse_type(m, pt.from), parse_type(m, pt.to), {.element_bytes = 4});
    } catch (const redist_error&) {  // no collective program: the exchange alone
      continue;
    }
    const box_states t = trace_states(p);
    REQUIRE(t.error.empty());
    for (std::size_t s = 0; s < p.steps.size(); ++s) {
      if (p.steps[s].kind == op::exchange || !moves_as_exchange(p, s, t)) continue;
      INFO("step " << s);
      const int planned = check_plans(t.states[s], t.states[s + 1], [&](plan_detail d, std::optional<rank_t> r) {
        return plan_exchange(p, s, t, d, r);
      });
      CHECK(planned == 1);
      ++steps[p.steps[s].kind];
    }
  }
  CHECK(steps[op::alltoall] > 20);
  CHECK(steps[op::allgather] > 20);
  CHECK(steps[op::dynslice] > 20);
}

TEST_CASE("exchange: a 2x4 grid to a 4x2 grid, pieces and senders", "[exchange]") {
  const device_mesh m = parse_mesh("{x: 2, y: 4}");
  const program p = exchange_program(m, parse_type(m, "[{x}64, {y}96]"), parse_type(m, "[{y}64, {x}96]"));
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].kind == op::exchange);
  CHECK(p.cost_elements == movement_lower_bound(m, p.source, p.target));
  CHECK(p.cost_elements == 768);  // a 16x48 tile, none of it held before
  CHECK(p.peak_local_elements == 768);
  const detail::program_shapes sh = detail::check_program(p);
  REQUIRE(sh.error.empty());
  const exchange_plan& x = sh.exchanges[0];
  // Rank 0's target tile [0, 16) x [0, 48) lies in the source tiles of ranks 0 and 1.
  const auto into0 = x.into(0);
  REQUIRE(into0.size() == 2);
  CHECK(into0[0].from == 0);
  CHECK(into0[0].b == make_box({{0, 16}, {0, 24}}));
  CHECK(into0[1].from == 1);
  CHECK(into0[1].b == make_box({{0, 16}, {24, 48}}));
  CHECK(x.received[0] == 16 * 24);
  CHECK(x.messages == 2);
}

TEST_CASE("exchange: replicas share the sending evenly", "[exchange]") {
  // [{x}64, 96]: ranks 0-3 hold rows [0, 32), ranks 4-7 rows [32, 64).
  const device_mesh m = parse_mesh("{x: 2, y: 4}");
  const program p = exchange_program(m, parse_type(m, "[{x}64, 96]"), parse_type(m, "[64, {y}96]"));
  const exchange_plan x = plan_exchange(p, 0);
  REQUIRE(x.error.empty());
  std::map<rank_t, int> sends;
  for (const exchange_piece& pc : x.pieces)
    if (pc.from != pc.to) ++sends[pc.from];
  // Every rank needs the other half of its columns: 8 pieces from 8 holders, one each.
  CHECK(sends.size() == 8);
  for (const auto& [r, n] : sends) CHECK(n == 1);
  // The rule: rank 0 is the first of B_1's (rows [32, 64)) receivers: holder (0 + 1) mod 4.
  CHECK(x.into(0)[1].from == 5);
  CHECK(x.max_received == 32 * 24);
  CHECK(p.cost_elements == movement_lower_bound(m, p.source, p.target));
}

TEST_CASE("exchange: senders on the receiver's node (step::node_ranks)", "[exchange]") {
  // [{y}64, 96] on {x: 2, y: 4}: rows block y on ranks y and 4 + y, one replica on each node
  // of 4 ranks. To [64, {y}96], every rank needs the 3 row blocks it does not hold.
  const device_mesh m = parse_mesh("{x: 2, y: 4}");
  program p = exchange_program(m, parse_type(m, "[{y}64, 96]"), parse_type(m, "[64, {y}96]"));
  REQUIRE(p.steps.size() == 1);
  const exchange_plan plain = plan_exchange(p, 0);
  REQUIRE(plain.error.empty());
  CHECK(crossing(plain, 4) == 8 * 3 * 16 * 24 / 2);  // the replicas take turns: half the pieces cross
  p.steps[0].node_ranks = 4;
  const exchange_plan near = plan_exchange(p, 0);
  REQUIRE(near.error.empty());
  CHECK(crossing(near, 4) == 0);
  CHECK(near.received == plain.received);
  CHECK(near.max_received == 3 * 16 * 24);
  CHECK(near.pieces.size() == plain.pieces.size());
  // Rank 5 (node 1) takes row block 0 from rank 4, block 2 from 6, block 3 from 7.
  const auto into5 = near.into(5);
  REQUIRE(into5.size() == 4);
  CHECK(into5[0].from == 4);
  CHECK(into5[0].b == make_box({{0, 16}, {24, 48}}));
  CHECK(into5[1].from == 5);  // its own block
  CHECK(into5[2].from == 6);
  CHECK(into5[3].from == 7);
  // Every replica on one node, or one rank per node with one holder each: the plain rule.
  for (std::uint64_t n : {std::uint64_t{8}, std::uint64_t{100}}) {
    p.steps[0].node_ranks = n;
    const exchange_plan x = plan_exchange(p, 0);
    REQUIRE(x.pieces.size() == plain.pieces.size());
    for (std::size_t k = 0; k < x.pieces.size(); ++k) CHECK(x.pieces[k].from == plain.pieces[k].from);
  }
  // Nodes of 2: ranks {4, 5} hold blocks 0 and 1; rank 6 needs blocks 0, 1, 3: none of their
  // holders on its node {6, 7} but block 3's (rank 7).
  p.steps[0].node_ranks = 2;
  const exchange_plan two = plan_exchange(p, 0);
  for (const exchange_piece& pc : two.into(6))
    if (pc.b.lo[0] == 48) CHECK(pc.from == 7);
  CHECK(crossing(two, 2) < crossing(plain, 2));
  // Hosts run it: every element checked.
  p.steps[0].node_ranks = 4;
  CHECK(run_on_host<std::int32_t>(p) == 0);
}

TEST_CASE("exchange: senders on the receiver's node, on random problems between meshes and box layouts",
          "[exchange][property]") {
  std::mt19937 rng(0x6e6f6465);
  const testing::between_workload w;
  int planned = 0, fewer = 0;
  for (int i = 0; i < 1500; ++i) {
    testing::between_problem bp;
    if (!testing::parse_between(testing::random_between(rng, w), bp)) continue;
    const std::uint64_t W = bp.world;
    std::vector<box> before = placed_boxes(bp.a.pm.mesh, bp.a.type, bp.a.pm.devices, W);
    const std::vector<box> after = placed_boxes(bp.b.pm.mesh, bp.b.type, bp.b.pm.devices, W);
    if (i % 4 == 3) {
      before = testing::random_box_layout(rng, layout_shape(bp.a), W).all_boxes();
    }
    const std::uint64_t n = 1 + rng() % W;
    INFO(bp.text.from_mesh << " " << bp.text.from << " -> " << bp.text.to_mesh << " " << bp.text.to << ", world " << W
                           << ", nodes of " << n << " ranks, problem " << i);
    if (check_sizes(before, after, n) == 0) continue;
    const exchange_plan plain = plan_exchange(before, after);
    const exchange_plan near = plan_exchange(before, after, plan_detail::pieces, std::nullopt, n);
    CHECK(near.received == plain.received);  // the lower bound, whoever sends
    // A piece crosses a link exactly where no holder of its box is on the receiver's node.
    for (const exchange_piece& pc : near.pieces) {
      bool here = false;
      for (std::uint64_t q = pc.to / n * n; q < std::min(W, (pc.to / n + 1) * n) && !here; ++q)
        here = before[q] == before[pc.from];
      CHECK((pc.from / n != pc.to / n) == !here);
    }
    CHECK(crossing(near, n) <= crossing(plain, n));
    fewer += crossing(near, n) < crossing(plain, n);
    if (n >= W) {
      REQUIRE(near.pieces.size() == plain.pieces.size());
      for (std::size_t k = 0; k < near.pieces.size(); ++k) CHECK(near.pieces[k].from == plain.pieces[k].from);
    }
    ++planned;
  }
  CHECK(planned > 1000);
  CHECK(fewer > 100);
}

TEST_CASE("exchange: refusals", "[exchange]") {
  SECTION("boxes that overlap partly") {
    const std::vector<box> before = {make_box({{0, 6}}), make_box({{4, 10}})};
    const std::vector<box> after = {make_box({{0, 5}}), make_box({{5, 10}})};
    const exchange_plan x = plan_exchange(before, after);
    CHECK(x.error.find("overlap partly along dimension 0 ([0, 6) and [4, 10))") != std::string::npos);
  }
  SECTION("elements nobody holds") {
    const std::vector<box> before = {make_box({{0, 4}}), make_box({{0, 4}})};
    const std::vector<box> after = {make_box({{0, 4}}), make_box({{4, 8}})};
    const exchange_plan x = plan_exchange(before, after);
    CHECK(x.error == "no rank holds some elements of rank 1's box [4, 8) before the exchange");
  }
  SECTION("partial sums") {
    const device_mesh m = parse_mesh("{x: 2, y: 2}");
    try {
      (void)exchange_program(m, parse_type(m, "[{x}8, 4] sum{y}"), parse_type(m, "[8, {y}4]"));
      FAIL("an exchange of partial sums was accepted");
    } catch (const redist_error& e) {
      CHECK(std::string(e.what()).find("an exchange does not add partial sums, and the type [4{x}8, 4] sum{y} has pending sums") !=
            std::string::npos);
    }
  }
  SECTION("program_check: a box outside the array, boxes of two shapes, the wrong end") {
    const device_mesh m = parse_mesh("{x: 2}");
    program p = exchange_program(m, parse_type(m, "[{x}8, 4]"), parse_type(m, "[8, {x}4]"));
    program bad = p;
    bad.steps[0].boxes[1] = 9;  // rank 0, dimension 0: [0, 9)
    CHECK(detail::check_program(bad).error.find("rank 0's range [0, 9) of dimension 0 is not inside [0, 8)") !=
          std::string::npos);
    bad = p;
    bad.steps[0].boxes[3] = 1;  // rank 0, dimension 1: [0, 1)
    CHECK(detail::check_program(bad).error.find("leaves rank 0 with the box [0, 8) x [0, 1)") != std::string::npos);
    bad = p;
    std::swap_ranges(bad.steps[0].boxes.begin(), bad.steps[0].boxes.begin() + 4, bad.steps[0].boxes.begin() + 4);
    CHECK(detail::check_program(bad).error.find("leaves rank 0 with the box [0, 8) x [2, 4)") != std::string::npos);
  }
}

TEST_CASE("exchange: random problems on the host backend, every element checked", "[exchange][property]") {
  std::vector<testing::workload> ws;
  for (auto axes : std::vector<std::vector<std::pair<std::string, std::uint64_t>>>{
           {{"a", 2}, {"b", 2}, {"c", 2}}, {{"x", 3}, {"y", 5}}, {{"x", 6}}, {{"x", 12}}, {{"x", 2}, {"y", 6}},
           {{"x", 4}, {"y", 3}}, {{"x", 5}}, {{"x", 3}, {"y", 2}, {"z", 2}}}) {
    testing::workload w;
    w.axes = axes;
    w.max_dims = 5;
    w.max_elements = 1 << 12;
    ws.push_back(w);
  }
  std::uint64_t problems = 0, elements = 0;
  for (std::size_t i = 0; i < 2400; ++i) {
    std::mt19937_64 rng(0x6578 + i);
    const testing::problem_text pt = testing::random_problem(rng, ws[i % ws.size()]);
    INFO(pt.mesh << "  " << pt.from << " -> " << pt.to);
    const device_mesh m = parse_mesh(pt.mesh);
    const dist_type a = parse_type(m, pt.from), b = parse_type(m, pt.to);
    program p = exchange_program(m, a, b, 4);
    if (i % 3 == 1 && !p.steps.empty()) p.steps[0].node_ranks = 1 + i % p.devices();  // senders by node
    REQUIRE(detail::check_program(p).error.empty());
    CHECK(p.cost_elements == movement_lower_bound(m, a, b));
    CHECK(p.received_elements() == movement_lower_bound(m, a, b));
    CHECK(p.peak_local_elements == std::max(local_size(m, a), local_size(m, b)));
    CHECK(p.memory_efficient());
    std::uint64_t got = 0;
    CHECK(run_on_host<std::int32_t>(p, &got) == 0);
    CHECK(got == p.cost_elements * 4);
    ++problems;
    elements += pt.elements;
  }
  CHECK(problems == 2400);
  WARN("exchange: " << problems << " random problems on the host backend, " << elements << " global elements each checked");
}
