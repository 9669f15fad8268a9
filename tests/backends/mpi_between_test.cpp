// Redistributions between meshes on device sets (issue 25) on the MPI backend, one rank per
// process: run under
//   mpirun --oversubscribe -np W backends_mpi_test between [problems]
// Every rank generates the same seeded random problems in the world of W ranks
// (tests/support/between_problems.hpp: every relation of device sets, even and uneven,
// pending sums in the source), plans them with plan_between, passes its source tile (or
// darray::none off the source mesh), and checks every element of its target tile (or that it
// holds none off the target mesh); blocks in place and packed, on alternate pairs of
// problems. Besides the chosen program, every third problem runs one of the other candidates
// in turn and every fifth the relabelled plan; every fourth also runs a random box layout
// (redist/box.hpp: guillotine blocks on some ranks) to the target and, without pending sums,
// from the source. Rank 0 prints the totals; the exit status is non-zero on any failure on
// any rank.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "redist/backends/mpi.hpp"
#include "redist/lower/between.hpp"
#include "redist/runtime/executor.hpp"
#include "support/between_problems.hpp"
#include "support/random_problems.hpp"

// A namespace of its own: the MPI test programs compile as one unit (mpi_main.cpp).
namespace mpi_between_test {

int failures = 0;  // on this rank

void fail(int rank, const std::string& what) {
  ++failures;
  if (failures <= 20) std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
}

/// Run p on every rank and check this rank's target tile; the elements checked.
template <class T>
std::uint64_t run_one(redist::mpi_backend& mpi, const redist::testing::between_problem& pr, const redist::program& p,
                      const std::string& what) {
  const int me = static_cast<int>(mpi.rank());
  redist::executor<T, redist::mpi_backend> ex(mpi, p);
  const redist::darray<T> in = redist::testing::source_tile<T>(pr.a, pr.world, mpi.rank());
  redist::darray<T> out;
  try {
    out = ex.run(in);
  } catch (const redist::redist_error& e) {
    fail(me, pr.text.text() + " [" + what + "]: " + e.what());
    return 0;
  }
  const std::int64_t pos = redist::testing::target_positions(p)[mpi.rank()];
  if (std::string e = redist::testing::check_target_tile(p, mpi.rank(), pos, out); !e.empty()) {
    fail(me, pr.text.text() + " [" + what + "]: " + e);
    return 0;
  }
  return pos < 0 ? 0 : redist::tile_box(p.target_mesh(), p.target, static_cast<std::uint64_t>(pos)).size();
}

/// Run a program from or to box layout l (the other end the problem's) and check this rank's
/// target tile; the elements checked.
template <class T>
std::uint64_t run_layout(redist::mpi_backend& mpi, const redist::testing::between_problem& pr,
                         const redist::box_layout& l, bool from_layout, const redist::between_options& opt) {
  const int me = static_cast<int>(mpi.rank());
  const std::uint64_t r = mpi.rank();
  const std::string what = pr.text.text() + (from_layout ? " [from " : " [to ") + redist::box_layout_text(l) + "]";
  try {
    const redist::program p =
        from_layout ? redist::synthesize_between(redist::array_layout{l}, redist::array_layout{pr.b}, pr.world, opt)
                    : redist::synthesize_between(redist::array_layout{pr.a}, redist::array_layout{l}, pr.world, opt);
    redist::executor<T, redist::mpi_backend> ex(mpi, p);
    const redist::darray<T> in = from_layout ? redist::testing::layout_tile<T>(l, r)
                                             : redist::testing::source_tile<T>(pr.a, pr.world, r);
    const redist::darray<T> out = ex.run(in);
    if (!from_layout) {
      if (std::string e = redist::testing::check_layout_tile(l, r, out); !e.empty()) fail(me, what + ": " + e);
      return l.boxes[r] ? l.boxes[r]->size() : 0;
    }
    const std::int64_t pos = redist::testing::target_positions(p)[r];
    if (std::string e = redist::testing::check_target_tile(p, r, pos, out); !e.empty()) fail(me, what + ": " + e);
    return pos < 0 ? 0 : redist::tile_box(p.target_mesh(), p.target, static_cast<std::uint64_t>(pos)).size();
  } catch (const redist::redist_error& e) {
    fail(me, what + ": " + e.what());
    return 0;
  }
}

/// backends_mpi_test between [problems]
int run(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    redist::mpi_backend mpi;
    // Blocks in place (MPI datatypes) on every other problem, packed on the others.
    redist::mpi_backend packing(MPI_COMM_WORLD,
                                {.alltoall_in_place = false, .allgather_in_place = false, .exchange_in_place = false});
    const int me = static_cast<int>(mpi.rank());
    const std::uint64_t W = mpi.devices();
    // REDIST_TEST_SCALE (the sanitizer pass of .ci/run) runs a fraction of them.
    const std::size_t count = redist::testing::scaled(argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 200);
    std::uint64_t problems = 0, runs = 0, elements = 0;
    std::map<std::string, std::uint64_t> ran;
    const double t0 = MPI_Wtime();
    try {
      redist::testing::between_workload wl;
      wl.world = W;
      wl.max_elements = 1024;  // small arrays: many oversubscribed ranks on few cores
      wl.target_sums = false;  // (a kept sum would need the partials added across ranks)
      std::mt19937 rng(0x6d706925);
      std::uint64_t tries = 0;
      while (problems < count && tries < 20 * count) {
        ++tries;
        redist::testing::between_problem pr;
        if (!redist::testing::parse_between(redist::testing::random_between(rng, wl), pr)) continue;
        const bool wide = problems % 2 == 0;  // int64 or float elements
        const redist::between_options opt{{.element_bytes = wide ? 8u : 4u}, false};
        const redist::plan_choice c = redist::plan_between(pr.a, pr.b, W, opt);
        redist::mpi_backend& b = problems / 2 % 2 == 0 ? mpi : packing;
        auto run = [&](const redist::program& p, const std::string& what) {
          elements += wide ? run_one<std::int64_t>(b, pr, p, what) : run_one<float>(b, pr, p, what);
          ++runs;
          ++ran[what];
        };
        run(c.chosen_program(), c.candidates[c.chosen].name);
        if (problems % 3 == 1 && c.candidates.size() > 1) {  // another candidate, in turn
          const std::size_t k = (c.chosen + 1 + problems / 3 % (c.candidates.size() - 1)) % c.candidates.size();
          run(c.candidates[k].prog, c.candidates[k].name);
        }
        if (problems % 5 == 2) {
          const redist::between_options rel{opt.synth, true};
          const redist::plan_choice r = redist::plan_between(pr.a, pr.b, W, rel);
          run(r.chosen_program(), "relabelled " + r.candidates[r.chosen].name);
        }
        if (problems % 4 == 3) {  // box layouts: the same random layout on every rank
          std::vector<std::uint64_t> shape;
          for (int d = 0; d < pr.a.type.rank; ++d) shape.push_back(pr.a.type.dims[d].global);
          const redist::box_layout l = redist::testing::random_box_layout(rng, shape, W);
          for (const bool from : {true, false}) {
            if (!from && pr.a.type.nsum > 0) continue;
            elements += wide ? run_layout<std::int64_t>(b, pr, l, from, opt) : run_layout<float>(b, pr, l, from, opt);
            ++runs;
            ++ran[from ? "from a box layout" : "to a box layout"];
          }
        }
        ++problems;
      }
    } catch (const std::exception& e) {
      fail(me, std::string("exception: ") + e.what());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const double seconds = MPI_Wtime() - t0;
    std::uint64_t sums[2] = {elements, static_cast<std::uint64_t>(failures)};
    std::uint64_t all[2] = {};
    MPI_Allreduce(sums, all, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
      std::string kinds;
      for (const auto& [k, v] : ran) kinds += (kinds.empty() ? "" : ", ") + std::to_string(v) + " " + k;
      std::printf(
          "mpi backend between meshes, world of %llu ranks: %llu problems, %llu runs (%s), %llu target elements "
          "verified over all ranks, %llu failures; %.2f s\n",
          static_cast<unsigned long long>(W), static_cast<unsigned long long>(problems),
          static_cast<unsigned long long>(runs), kinds.c_str(), static_cast<unsigned long long>(all[0]),
          static_cast<unsigned long long>(all[1]), seconds);
    }
    rc = all[1] == 0 && problems >= count ? 0 : 1;
  }
  MPI_Finalize();
  return rc;
}

}  // namespace mpi_between_test
