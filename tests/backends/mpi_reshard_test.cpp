// Many arrays at once (issue 26) on the MPI backend, one rank per process: run under
//   mpirun --oversubscribe -np W backends_mpi_test reshard [problems]
// Every rank generates the same seeded random reshards in the world of W ranks
// (tests/support/reshard_problems.hpp: 1-6 arrays between meshes on device sets, even and
// uneven, pending sums on some sources; every fifth problem casting half its floating arrays
// to another floating type on the way), plans them jointly (every other problem under a
// budget that cuts the pieces into several rounds; every fifth one call per array), runs them
// through message rounds (runtime/reshard_executor.hpp: packed, in place and automatic in
// turn; half the budgeted plans pipelined, two rounds at a time; every fifth problem with
// each rank's tiles back to back in one buffer per end, as fused parameters) and checks
// every element of its target tiles. It checks too that the message buffers stay within the
// budget, and that each rank's executor keeps exactly the pieces of its rank, half the ranks
// of every problem running the plan of their own rank (reshard_options::of_rank). Then
// named cases: messages by single copy, a weight sync whose rounds keep every rank's sends
// and receives each within half the budget (reshard_plan::halves) and copy the pieces a
// rank keeps in the rounds it receives less in (reshard_plan::local_of), and (on 8 ranks) gradients (FSDP and HSDP) whose own
// all-reduces, reduce-scatters and two-step programs run as fused collectives. Rank 0 prints
// the totals; the exit status is
// non-zero on any failure on any rank.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>

#include "redist/backends/mpi.hpp"
#include "redist/lower/reshard.hpp"
#include "redist/runtime/reshard_executor.hpp"
#include "redist/runtime/reshard_tiles.hpp"
#include "support/random_problems.hpp"
#include "support/reshard_problems.hpp"
#include "support/reshard_run.hpp"

// A namespace of its own: the MPI test programs compile as one unit (mpi_main.cpp).
namespace mpi_reshard_test {

/// backends_mpi_test reshard [problems]
int run(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int failures = 0;
  {
    redist::mpi_backend mpi(MPI_COMM_WORLD);
    redist::mpi_backend packed(MPI_COMM_WORLD, {.alltoall_in_place = true, .allgather_in_place = true,
                                                .exchange_in_place = false});
    // Messages in place between ranks of one node by single copy: every message (span
    // cost 0), or mixed with MPI (nodes of 3 ranks, a span costing 64 bytes).
    redist::mpi_backend single(MPI_COMM_WORLD, {.single_copy_span_cost = 0, .single_copy_min_bytes = 0});
    redist::mpi_backend mixed(MPI_COMM_WORLD, {.single_copy_span_cost = 64, .single_copy_min_bytes = 0, .node_size = 3});
    redist::mpi_backend* const in_place[] = {&mpi, &single, &mixed};
    const int me = static_cast<int>(mpi.rank());
    // REDIST_TEST_SCALE (the sanitizer pass of .ci/run) runs a fraction of them.
    const int problems = static_cast<int>(redist::testing::scaled(argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 200));
    std::mt19937 rng(2699);
    redist::testing::reshard_workload w;
    w.max_world = mpi.devices();
    redist::testing::reshard_workload cast = w;
    cast.casts = true;
    std::uint64_t checked = 0, runs = 0, rounds = 0, refused = 0, pipelined = 0, halves = 0, spread = 0, chunked = 0;
    // Whether plan p copies some of the pieces ranks keep after its first round.
    auto spreads = [](const redist::reshard_plan& p) { return p.local_at.size() > 2 && p.local_at[1] < p.local.size(); };
    auto fail = [&](const std::string& what) {
      if (++failures <= 20) std::fprintf(stderr, "rank %d: FAILED: %s\n", me, what.c_str());
    };
    for (int i = 0; i < problems; ++i) {
      // Every fifth problem casts half its floating arrays (a joint plan: i % 5 != 4).
      const auto [c, o, p] =
          redist::testing::random_planned_reshard(rng, i % 5 == 2 ? cast : w, mpi.devices(), static_cast<std::size_t>(i));
      rounds += p.rounds.size();
      pipelined += p.pipelined;
      halves += p.halves;
      spread += spreads(p);
      for (std::size_t a = 0; a < p.arrays.size(); ++a) chunked += p.chunked(a) ? 1 : 0;
      try {
        // Messages packed, in place, and as the backend's options and the sizes choose.
        const auto how = static_cast<redist::reshard_messages>(i % 3);
        // Half the ranks run their own rank's plan (reshard_options::of_rank), the others the
        // whole plan: they agree on it, and keep the same pieces.
        redist::reshard_options mine = o;
        mine.of_rank = mpi.rank();
        redist::reshard_executor<redist::mpi_backend> ex(i % 4 == 0 ? packed : *in_place[i / 4 % 3],
                                                         (i + me) % 2 == 0 ? redist::plan_reshard(c.problem, mine) : p, how);
        {  // it keeps the pieces this rank sends, receives or keeps, and no other
          auto mine = [&](const redist::reshard_piece& pc) { return pc.from == mpi.rank() || pc.to == mpi.rank(); };
          std::size_t want = static_cast<std::size_t>(std::count_if(p.local.begin(), p.local.end(), mine)),
                      kept = ex.plan().local.size(), stray = 0;
          for (std::size_t k = 0; k < p.rounds.size(); ++k) {
            want += static_cast<std::size_t>(std::count_if(p.rounds[k].pieces.begin(), p.rounds[k].pieces.end(), mine));
            kept += ex.plan().rounds[k].pieces.size();
          }
          for (const auto& r : ex.plan().rounds)
            for (const redist::reshard_piece& pc : r.pieces) stray += mine(pc) ? 0 : 1;
          if (kept != want || stray != 0 || ex.plan().rounds.size() != p.rounds.size())
            fail(c.text + ": the executor keeps " + std::to_string(kept) + " pieces (" + std::to_string(stray) +
                 " of other ranks), this rank's are " + std::to_string(want));
        }
        redist::reshard_tiles t;
        redist::testing::fused_tiles_run f;  // every fifth problem: each rank's tiles in one buffer per end
        std::mt19937 order(static_cast<std::uint32_t>(i * 31 + me));
        if (i % 5 == 1) {
          f = redist::testing::fuse_all_tiles(p, ex.local_ranks(), order);
          ex.run(f.sources, f.targets);
        } else {
          t = redist::make_reshard_tiles(ex);
          redist::fill_reshard_sources(p, ex.local_ranks(), t);
          ex.run(t.sources(), t.targets());
        }
        if (o.budget_bytes > 0 && ex.message_bytes() > o.budget_bytes)
          fail(c.text + ": message buffers of " + std::to_string(ex.message_bytes()) + " bytes, over the budget");
        const redist::reshard_check k = i % 5 == 1 ? redist::check_reshard_targets(p, ex.local_ranks(), f.targets)
                                                   : redist::check_reshard_targets(p, ex.local_ranks(), t);
        checked += k.checked;
        if (!k.ok()) fail(c.text + ": " + std::to_string(k.wrong) + " wrong elements, first: " + k.first);
        ++runs;
      } catch (const redist::redist_error& e) {
        if (std::string(e.what()).find("its own program holds") != std::string::npos ||
            std::string(e.what()).find("another rank rejected") != std::string::npos)
          ++refused;  // an own program over the budget (pending sums): refused on every rank
        else
          fail(c.text + ": " + e.what());
      }
    }
    // Row blocks to column blocks on {x: W} in one round of messages in place, pieces of 32
    // KiB considered for single copy: the sender writes each piece (8 runs of 4 KiB lying
    // 4 KiB x W apart in its tile, contiguous in the receiver's); the reverse, the receiver
    // reads each.
    const std::uint64_t W = mpi.devices();
    const std::string rows = "[{x}" + std::to_string(8 * W) + ", " + std::to_string(1024 * W) + "]",
                      cols = "[" + std::to_string(8 * W) + ", {x}" + std::to_string(1024 * W) + "]";
    auto layout = [&](const std::string& t) {
      redist::placed_layout l;
      l.pm = redist::parse_placed_mesh("{x: " + std::to_string(W) + "}");
      l.type = redist::parse_type(l.pm.mesh, t);
      return l;
    };
    redist::mpi_backend costed(MPI_COMM_WORLD, {.single_copy_min_bytes = 0});  // the default span cost
    for (const bool write : {true, false}) {
      redist::reshard_problem pr;
      pr.world = W;
      pr.arrays.push_back({"a", redist::element_type::f32, layout(write ? rows : cols), layout(write ? cols : rows)});
      redist::reshard_options o;
      o.joint = true;
      const redist::reshard_plan p = redist::plan_reshard(pr, o);
      const auto before = costed.single_copy_moves();
      redist::reshard_executor<redist::mpi_backend> ex(costed, p, redist::reshard_messages::in_place);
      redist::reshard_tiles t = redist::make_reshard_tiles(ex);
      redist::fill_reshard_sources(p, ex.local_ranks(), t);
      ex.run(t.sources(), t.targets());
      const redist::reshard_check k = redist::check_reshard_targets(p, ex.local_ranks(), t);
      const auto after = costed.single_copy_moves();
      const std::uint64_t moved = write ? after.writes - before.writes : after.reads - before.reads;
      if (!k.ok()) fail(std::string(write ? "rows to columns" : "columns to rows") + ": " + k.first);
      if (p.rounds.size() != 1 || (costed.single_copy() && moved != W - 1))
        fail(std::string(write ? "rows to columns" : "columns to rows") + ": " + std::to_string(p.rounds.size()) +
             " rounds, " + std::to_string(moved) + (write ? " pieces written" : " pieces read") + " by single copy, expected 1 and " +
             std::to_string(W - 1));
    }
    // A weight sync from FSDP 2 x TP W/2 to TP W on the same ranks within 1/8 of its largest
    // array: every rank sends and receives, in rounds placed in halves of the budget, and
    // copies what it keeps in the rounds where it receives less.
    if (W % 2 == 0) {
      redist::reshard_problem pr;
      pr.world = W;
      const std::string train = "{fsdp: 2, tp: " + std::to_string(W / 2) + "}", engine = "{tp: " + std::to_string(W) + "}";
      auto weight = [&](const std::string& name, const std::string& from, const std::string& to) {
        const redist::placed_mesh a = redist::parse_placed_mesh(train), b = redist::parse_placed_mesh(engine);
        pr.arrays.push_back({name, redist::element_type::f32, redist::placed_layout{a, redist::parse_type(a.mesh, from)},
                             redist::placed_layout{b, redist::parse_type(b.mesh, to)}});
      };
      const std::string n = std::to_string(32 * W);
      weight("fc", "[{fsdp}" + n + ", {tp}" + n + "]", "[" + n + ", {tp}" + n + "]");
      weight("proj", "[{tp}" + n + ", {fsdp}" + n + "]", "[{tp}" + n + ", " + n + "]");
      const std::uint64_t budget = pr.arrays[0].bytes() / 8;
      const redist::reshard_plan p = redist::plan_reshard(pr, {.budget_bytes = budget});
      redist::reshard_executor<redist::mpi_backend> ex(packed, p);
      redist::reshard_tiles t = redist::make_reshard_tiles(ex);
      redist::fill_reshard_sources(p, ex.local_ranks(), t);
      ex.run(t.sources(), t.targets());
      const redist::reshard_check k = redist::check_reshard_targets(p, ex.local_ranks(), t);
      if (!k.ok() || !p.halves || !spreads(p) || ex.message_bytes() > budget)
        fail("weight sync in halves of the budget: " + p.reason + (k.ok() ? "" : ": " + k.first) + ", message buffer " +
             std::to_string(ex.message_bytes()) + " bytes" + (spreads(p) ? "" : ", every kept piece in the first round"));
      checked += k.checked;
    }
    // Gradients of FSDP 4 x TP 2 and of HSDP (8 ranks): own all-reduces, reduce-scatters and
    // two-step programs as fused collectives, one call per kind and group (per step), without
    // and under a budget that splits them; then random gradients on meshes of 8 ranks.
    auto gradients = [&](const redist::reshard_problem& problem, std::uint64_t budget, bool all_fused) {
      const redist::reshard_plan p = redist::plan_reshard(problem, {.budget_bytes = budget});
      redist::reshard_executor<redist::mpi_backend> ex(mpi, p);
      std::size_t fused = 0;
      for (const auto& set : ex.fused_arrays()) fused += set.size();
      redist::reshard_tiles t = redist::make_reshard_tiles(ex);
      redist::fill_reshard_sources(p, ex.local_ranks(), t);
      for (int run = 0; run < 2; ++run) {
        ex.run(t.sources(), t.targets());
        const redist::reshard_check k = redist::check_reshard_targets(p, ex.local_ranks(), t);
        checked += k.checked;
        if (!k.ok()) fail("gradients: " + std::to_string(k.wrong) + " wrong elements, first: " + k.first);
      }
      if ((all_fused && fused != p.arrays.size()) || (budget > 0 && ex.bytes_held() > budget))
        fail("gradients: " + std::to_string(fused) + " of " + std::to_string(p.arrays.size()) +
             " arrays in fused collectives, " + std::to_string(ex.bytes_held()) + " bytes held");
      return fused;
    };
    if (W == 8) {
      gradients(redist::testing::gradient_reshard(4), 0, true);
      gradients(redist::testing::gradient_reshard(4), redist::testing::gradient_budget, true);
      gradients(redist::testing::hsdp_gradient_reshard(3), 0, true);
      std::mt19937 grng(2612);
      std::size_t fused = 0;
      for (int i = 0; i < 60; ++i)
        if (const redist::reshard_problem g = redist::testing::random_gradient_reshard(grng); g.world == 8)
          fused += gradients(g, 0, false);
      if (fused < 60) fail("random gradients: only " + std::to_string(fused) + " arrays in fused collectives");
      // Ranks whose own programs differ (planned under other profiles) refuse before anything
      // moves, the arrays before it too: rank 0 takes another candidate for the gradient.
      redist::reshard_problem pr;
      pr.world = W;
      pr.arrays.push_back({"w", redist::element_type::f32, layout("[{x}16, 8]"), layout("[16, {x}8]")});
      pr.arrays.push_back({"g", redist::element_type::f32, layout("[16, 8] sum{x}"), layout("[{x}16, 8]")});
      redist::reshard_plan p = redist::plan_reshard(pr);
      if (p.route[1] != redist::reshard_route::own || p.own[1].candidates.size() < 2)
        fail("the gradient has one candidate, or no program of its own");
      if (me == 0) p.own[1].chosen = (p.own[1].chosen + 1) % p.own[1].candidates.size();
      redist::reshard_executor<redist::mpi_backend> ex(mpi, p);
      redist::reshard_tiles t = redist::make_reshard_tiles(ex);
      redist::fill_reshard_sources(p, ex.local_ranks(), t);
      const auto before = t.out;
      try {
        ex.run(t.sources(), t.targets());
        fail("ranks with other own programs ran");
      } catch (const redist::redist_error& e) {
        if (std::string(e.what()).find("ranks disagree on the reshard plan") == std::string::npos)
          fail(std::string("other own programs: ") + e.what());
      }
      if (t.out != before) fail("other own programs: targets written before the refusal");
    }
    // Where the kernel allows single copy, both backends moved pieces that way.
    std::uint64_t moved[2] = {single.single_copy_moves().reads + single.single_copy_moves().writes,
                              mixed.single_copy_moves().reads + mixed.single_copy_moves().writes},
                  moved_all[2] = {};
    MPI_Allreduce(moved, moved_all, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (single.single_copy() && problems >= 100 && (moved_all[0] == 0 || moved_all[1] == 0))
      fail("single copy is on, but the message rounds moved no piece that way");
    if (problems >= 200 && chunked == 0)  // every rank plans the same: no reduction needed
      fail("no own program ran chunk by chunk within its budget");
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    std::uint64_t total = 0;
    MPI_Reduce(&checked, &total, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0)
      std::printf("reshards in a world of %llu ranks: %d problems, %llu runs, %llu rounds (%llu plans pipelined, %llu in "
                  "halves, %llu with kept pieces spread), %llu "
                  "refused over the budget, %llu own programs chunk by chunk, %llu elements checked, %d failures; single copy "
                  "%s: %llu and %llu pieces\n",
                  static_cast<unsigned long long>(mpi.devices()), problems, static_cast<unsigned long long>(runs),
                  static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(pipelined),
                  static_cast<unsigned long long>(halves), static_cast<unsigned long long>(spread),
                  static_cast<unsigned long long>(refused), static_cast<unsigned long long>(chunked),
                  static_cast<unsigned long long>(total), all, single.single_copy() ? "on" : "off",
                  static_cast<unsigned long long>(moved_all[0]), static_cast<unsigned long long>(moved_all[1]));
    failures = all;
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}

}  // namespace mpi_reshard_test
