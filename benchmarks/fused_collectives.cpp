// benchmarks/fused_collectives.cpp -- fused collectives (lower/fuse.hpp) against the steps
// they replace, on the MPI backend, side by side: for every problem and size, the weak path
// the default search chooses lowered as the paper does (one collective per weak step,
// lower_path) and with every fusable pair fused (fuse_collectives under a pass-only
// profile, tests/support/fuse_profile.hpp), each run `reps` times alternating, best and median of the slowest rank, every
// output checked element by element. Prints a table; asserts nothing about time.
// Usage: mpirun -np 8 fused_collectives [reps]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "redist/backends/mpi.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/verify.hpp"
#include "support/fuse_profile.hpp"

namespace {

struct problem {
  const char* name;
  const char* mesh;
  std::string from, to;
};

/// Seconds of one run, the slowest rank's; checks the output.
double run_once(redist::executor<float, redist::mpi_backend>& ex, const redist::darray<float>& in, bool& ok) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  const redist::darray<float> out = ex.run(in);
  double dt = MPI_Wtime() - t0, slowest = 0;
  MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  ok = ok && redist::check_global_index(out).ok();
  return slowest;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    redist::mpi_backend mpi(MPI_COMM_WORLD);
    const int me = static_cast<int>(mpi.rank());
    const int reps = argc > 1 ? std::atoi(argv[1]) : 50;
    const redist::time_profile fuse_all = redist::testing::fuse_all_profile();
    if (me == 0)
      std::printf("| problem (8 ranks) | elements per rank | steps apart / fused | apart: best, median us | fused: best, median us | apart / fused (median) |\n"
                  "|---|---:|---:|---:|---:|---:|\n");
    for (std::uint64_t s : {std::uint64_t{1}, std::uint64_t{4}, std::uint64_t{16}, std::uint64_t{64}, std::uint64_t{256}}) {
      const std::string R = std::to_string(16 * s), C = std::to_string(8 * s), K = std::to_string(4 * s);  // 16 s^2 elements per rank (16 s the third)
      const std::vector<problem> problems = {
          // Shardy replace_major_most_axis_then_all_gather_two_dims, scaled
          {"[{y, x}R, {z}C] -> [{z}R, C]", "{x: 2, y: 2, z: 2}", "[{y, x}" + R + ", {z}" + C + "]", "[{z}" + R + ", " + C + "]"},
          // two gathers of two dimensions
          {"[{x}R, {y, z}C] -> [R, C]", "{x: 2, y: 2, z: 2}", "[{x}" + R + ", {y, z}" + C + "]", "[" + R + ", " + C + "]"},
          // two all-to-alls on four dimensions
          {"[{x}16, {y}8, K, 8] -> [16, 8, {x}K, {y}8]", "{x: 2, y: 4}", "[{x}16, {y}8, " + K + ", 8]",
           "[16, 8, {x}" + K + ", {y}8]"}};
      for (const problem& pr : problems) {
        const redist::device_mesh m = redist::parse_mesh(pr.mesh);
        const redist::dist_type a = redist::parse_type(m, pr.from), b = redist::parse_type(m, pr.to);
        const redist::weak_problem wp = redist::make_weak_problem(m, a, b).get();
        const redist::lowering_choice c = redist::choose_lowering(m, a, b, wp, redist::search_bgl(wp), 4);
        const redist::program apart = redist::lower_path(m, a, b, wp, c.path, 4, true, c.sum_order.data()).get();
        redist::program fused = apart;
        redist::fuse_collectives(fused, fuse_all, 4);
        redist::executor<float, redist::mpi_backend> xa(mpi, apart), xf(mpi, fused);
        redist::darray<float> in(m, a, mpi.rank());
        redist::fill_global_index(in);
        bool ok = true;
        std::vector<double> ta, tf;
        run_once(xa, in, ok);
        run_once(xf, in, ok);
        for (int r = 0; r < reps; ++r) {
          ta.push_back(run_once(xa, in, ok));
          tf.push_back(run_once(xf, in, ok));
        }
        std::sort(ta.begin(), ta.end());
        std::sort(tf.begin(), tf.end());
        const double ma = ta[ta.size() / 2], mf = tf[tf.size() / 2];
        if (!ok) {
          std::fprintf(stderr, "rank %d: wrong data on %s\n", me, pr.name);
          rc = 1;
        }
        if (me == 0)
          std::printf("| `%s`, s = %llu | %llu | %zu / %zu | %.1f, %.1f | %.1f, %.1f | %.2f |\n", pr.name,
                      static_cast<unsigned long long>(s), static_cast<unsigned long long>(redist::local_size(m, a)),
                      apart.steps.size(), fused.steps.size(), ta[0] * 1e6, ma * 1e6, tf[0] * 1e6, mf * 1e6, ma / mf);
      }
    }
  }
  MPI_Finalize();
  return rc;
}
