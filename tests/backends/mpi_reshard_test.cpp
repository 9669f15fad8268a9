// Many arrays at once (issue 26) on the MPI backend, one rank per process: run under
//   mpirun --oversubscribe -np W backends_mpi_reshard_test [problems]
// Every rank generates the same seeded random reshards in the world of W ranks
// (tests/support/reshard_problems.hpp: 1-6 arrays between meshes on device sets, even and
// uneven, pending sums on some sources), plans them jointly (every other problem under a
// budget that cuts the pieces into several rounds; every fifth one call per array), runs them
// through message rounds (runtime/reshard_executor.hpp: packed, in place and automatic in
// turn) and checks every element of its target tiles. It checks too that the message
// buffers stay within the budget. Rank 0 prints
// the totals; the exit status is non-zero on any failure on any rank.
#include <mpi.h>

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
#include "support/reshard_problems.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int failures = 0;
  {
    redist::mpi_backend mpi(MPI_COMM_WORLD);
    redist::mpi_backend packed(MPI_COMM_WORLD, {.alltoall_in_place = true, .allgather_in_place = true,
                                                .exchange_in_place = false});
    const int me = static_cast<int>(mpi.rank());
    const int problems = argc > 1 ? std::atoi(argv[1]) : 200;
    std::mt19937 rng(2699);
    redist::testing::reshard_workload w;
    w.max_world = mpi.devices();
    std::uint64_t checked = 0, runs = 0, rounds = 0, refused = 0;
    auto fail = [&](const std::string& what) {
      if (++failures <= 20) std::fprintf(stderr, "rank %d: FAILED: %s\n", me, what.c_str());
    };
    for (int i = 0; i < problems; ++i) {
      redist::testing::reshard_case c = redist::testing::random_reshard(rng, w);
      redist::testing::widen_world(c.problem, mpi.devices());
      redist::reshard_options o;
      o.joint = i % 5 != 4;
      redist::reshard_plan p = redist::plan_reshard(c.problem, o);
      const std::uint64_t row = redist::testing::largest_row(p);
      if (i % 2 == 1 && row > 0) {
        o.budget_bytes = row + rng() % (2 * row + 1);
        p = redist::plan_reshard(c.problem, o);
      } else {
        (void)rng();  // the same draws on every path
      }
      rounds += p.rounds.size();
      try {
        // Messages packed, in place, and as the backend's options and the sizes choose.
        const auto how = static_cast<redist::reshard_messages>(i % 3);
        redist::reshard_executor<redist::mpi_backend> ex(i % 4 == 0 ? packed : mpi, p, how);
        redist::reshard_tiles t = redist::make_reshard_tiles(ex);
        redist::fill_reshard_sources(p, ex.local_ranks(), t);
        ex.run(t.sources(), t.targets());
        if (o.budget_bytes > 0 && ex.message_bytes() > o.budget_bytes)
          fail(c.text + ": message buffers of " + std::to_string(ex.message_bytes()) + " bytes, over the budget");
        const redist::reshard_check k = redist::check_reshard_targets(p, ex.local_ranks(), t);
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
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    std::uint64_t total = 0;
    MPI_Reduce(&checked, &total, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0)
      std::printf("reshards in a world of %llu ranks: %d problems, %llu runs, %llu rounds, %llu refused over the budget, "
                  "%llu elements checked, %d failures\n",
                  static_cast<unsigned long long>(mpi.devices()), problems, static_cast<unsigned long long>(runs),
                  static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(refused),
                  static_cast<unsigned long long>(total), all);
    failures = all;
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
