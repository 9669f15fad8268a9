// ScaLAPACK's p?gemr2d baseline (benchmarks/baselines/scalapack.hpp) on real data, one rank
// per process: run under
//   mpirun --oversubscribe -np 8 baselines_scalapack_test
// Every rank runs the same redistributions between 2-D block types on meshes of 8 devices
// (grids 2x4, 4x2, 8x1 and 1x8, in rank order and in other orders), then between meshes on
// device lists (disjoint, overlapping, permuted, 8 ranks to 6), uneven shapes and vectors,
// in float and double: it fills its source tile with values encoding their global index
// (runtime/verify.hpp), redistributes with psgemr2d / pdgemr2d, and checks every element of
// its target tile and that the source tile is unchanged; twice per problem (the second run
// reuses the grids). Then the types ScaLAPACK cannot express (replicated, pending sums,
// rank 3) and the constructor's refusals. Rank 0 prints the totals; the exit status is non-zero on any
// failure on any rank.
#include "baselines/scalapack.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "redist/core/placement.hpp"
#include "redist/lower/between.hpp"
#include "redist/runtime/darray.hpp"
#include "redist/runtime/verify.hpp"

namespace {

int failures = 0;  // on this rank
std::uint64_t checked = 0, problems = 0;

void fail(int rank, const std::string& what) {
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
}

struct problem {
  const char* mesh;
  const char* from;
  const char* to;
  int grid_from[2], grid_to[2];  // expected p x q
};

// Grids: 2x4, 4x2, 8x1, 1x8; rank order row-major ("R") or not.
const problem cases[] = {
    {"{x: 2, y: 4}", "[{x}64, {y}96]", "[{y}64, {x}96]", {2, 4}, {4, 2}},        // R -> column-major
    {"{x: 2, y: 4}", "[{x,y}64, 96]", "[64, {y,x}96]", {8, 1}, {1, 8}},          // interleaved -> R
    {"{x: 2, y: 4}", "[{y,x}64, 96]", "[{x}64, {y}96]", {8, 1}, {2, 4}},         // R -> R
    {"{x: 2, y: 4}", "[64, {x,y}96]", "[{y}64, {x}96]", {1, 8}, {4, 2}},         // interleaved -> column-major
    {"{x: 2, y: 4}", "[{y,x}64, 96]", "[{x,y}64, 96]", {8, 1}, {8, 1}},          // same grid, other order
    {"{x: 2, y: 4}", "[{x}64, {y}96]", "[{x}64, {y}96]", {2, 4}, {2, 4}},        // identity
    {"{x: 4, y: 2}", "[{x}64, {y}96]", "[{y}64, {x}96]", {4, 2}, {2, 4}},        // R -> column-major
    {"{x: 4, y: 2}", "[{y}64, {x}96]", "[64, {x,y}96]", {2, 4}, {1, 8}},
    {"{x: 8}", "[{x}64, 96]", "[64, {x}96]", {8, 1}, {1, 8}},
    {"{x: 8}", "[{x:(1)2}64, {x:(2)4}96]", "[{x:(4)2}64, {x:(1)4}96]", {2, 4}, {2, 4}},  // sub-axes
    {"{x: 8}", "[64, {x}96]", "[{x:(1)4}64, {x:(4)2}96]", {1, 8}, {4, 2}},
    {"{x: 2, y: 4}", "[{y}96, {x}40]", "[{x}96, {y}40]", {4, 2}, {2, 4}},        // other sizes
};

// Between placed meshes (a mesh, then its type, each side), uneven shapes and vectors.
struct placed_problem {
  const char* from_mesh;
  const char* from;
  const char* to_mesh;
  const char* to;
};

const placed_problem placed_cases[] = {
    {"{x: 2, y: 2}", "[{x}64, {y}96]", "{x: 2, y: 2} @ [4, 5, 6, 7]", "[{y}64, {x}96]"},  // pipeline stages
    {"{x: 2, y: 4}", "[{x}64, {y}96]", "{t: 6} @ [0, 1, 2, 3, 4, 5]", "[{t}64, 96]"},      // checkpoint 8 -> 6, uneven
    {"{x: 2, y: 2} @ [2, 3, 4, 5]", "[{x}61, {y}93]", "{x: 4, y: 2} @ [7, 6, 5, 4, 3, 2, 1, 0]",
     "[{y}61, {x}93]"},                                                                   // overlapping, permuted
    {"{x: 2, y: 4}", "[{y}61, {x}93]", "{x: 2, y: 4}", "[{x, y}61, 93]"},                 // uneven, same mesh
    {"{x: 2, y: 4}", "[{x, y}100]", "{t: 4} @ [6, 4, 2, 0]", "[{t}100]"},                 // vectors
    {"{x: 8}", "[{x}5, 40]", "{x: 8}", "[5, {x}40]"},                                     // empty tiles
};

/// Redistribute from -> to (by the one-mesh constructor where `one_mesh`), twice; check every
/// element of the target tile and that the source tile is unchanged.
template <class T>
void run_placed(int me, const redist::placed_layout& from, const redist::placed_layout& to, const std::string& name,
                bool one_mesh = false) {
  auto tile = [&](const redist::placed_layout& l) {
    const std::int64_t pos = l.pm.positions(8)[static_cast<std::size_t>(me)];
    return pos < 0 ? redist::darray<T>::none(l.pm.mesh, l.type)
                   : redist::darray<T>(l.pm.mesh, l.type, static_cast<redist::rank_t>(pos));
  };
  redist::darray<T> in = tile(from), out = tile(to);
  if (in.holds()) redist::fill_global_index(in);
  const std::vector<T> before(in.span().begin(), in.span().end());
  using redistribution = redist::bench::scalapack_redistribution<T>;
  const auto r = one_mesh ? std::make_unique<redistribution>(from.pm.mesh, from.type, to.type)
                          : std::make_unique<redistribution>(from, to);
  for (int run = 0; run < 2; ++run) {
    std::fill(out.span().begin(), out.span().end(), T(-1));
    r->run(in.holds() ? in.data() : nullptr, out.holds() ? out.data() : nullptr);
    if (!out.holds()) continue;
    const redist::tile_check k = redist::check_global_index(out);
    checked += k.checked;
    if (!k.ok())
      fail(me, name + " run " + std::to_string(run) + ": " + std::to_string(k.mismatches) +
                   " wrong elements, first at global index " + std::to_string(k.first_bad));
  }
  if (!std::equal(before.begin(), before.end(), in.span().begin())) fail(me, name + ": the source tile was modified");
  ++problems;
}

template <class T>
void run_placed_case(int me, const placed_problem& c) {
  const std::string name = std::string(c.from_mesh) + " " + c.from + " -> " + c.to_mesh + " " + c.to +
                           (sizeof(T) == 4 ? " (float)" : " (double)");
  const redist::placed_mesh a = redist::parse_placed_mesh(c.from_mesh), b = redist::parse_placed_mesh(c.to_mesh);
  run_placed<T>(me, {a, redist::parse_type(a.mesh, c.from)}, {b, redist::parse_type(b.mesh, c.to)}, name);
}

template <class T>
void run_case(int me, const problem& c) {
  const std::string name = std::string(c.mesh) + " " + c.from + " -> " + c.to + (sizeof(T) == 4 ? " (float)" : " (double)");
  const redist::device_mesh m = redist::parse_mesh(c.mesh);
  const redist::dist_type from = redist::parse_type(m, c.from), to = redist::parse_type(m, c.to);
  const auto ga = redist::bench::scalapack_grid_of(m, from), gb = redist::bench::scalapack_grid_of(m, to);
  if (!ga || !gb || ga->p != c.grid_from[0] || ga->q != c.grid_from[1] || gb->p != c.grid_to[0] || gb->q != c.grid_to[1]) {
    fail(me, name + ": unexpected grid");
    return;
  }
  const redist::placed_mesh pm{m, {}};
  run_placed<T>(me, {pm, from}, {pm, to}, name, true);
}

/// `type` is not expressible; `other` is a type of the same global shape that is.
void expect_not_expressible(int me, const char* mesh, const char* type, const char* other) {
  const redist::device_mesh m = redist::parse_mesh(mesh);
  const redist::dist_type t = redist::parse_type(m, type);
  if (redist::bench::scalapack_grid_of(m, t)) fail(me, std::string(mesh) + " " + type + ": expressible?");
  // The constructor refuses it on every rank, before any collective call.
  const redist::dist_type ok = redist::parse_type(m, other);
  try {
    redist::bench::scalapack_redistribution<double> r(m, t, ok);
    fail(me, std::string(mesh) + " " + type + ": the constructor accepted it");
  } catch (const redist::redist_error& e) {
    if (std::string(e.what()).find("not a 2-D block distribution") == std::string::npos)
      fail(me, std::string(mesh) + " " + type + ": unexpected message: " + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    if (size != 8) {
      fail(me, "run on 8 ranks (mpirun -np 8), not " + std::to_string(size));
    } else {
      for (const problem& c : cases) {
        run_case<float>(me, c);
        run_case<double>(me, c);
      }
      for (const placed_problem& c : placed_cases) {
        run_placed_case<float>(me, c);
        run_placed_case<double>(me, c);
      }
      // Not expressible: replicated (p * q < D), pending sums, rank 3.
      expect_not_expressible(me, "{x: 2, y: 4}", "[{x}64, 96]", "[64, {x,y}96]");
      expect_not_expressible(me, "{x: 2, y: 4}", "[64, {y}96]", "[{x}64, {y}96]");
      expect_not_expressible(me, "{x: 2, y: 4}", "[{x}64, 96] sum{y}", "[{x}64, {y}96]");
      expect_not_expressible(me, "{x: 8}", "[64, 96]", "[64, {x}96]");
      expect_not_expressible(me, "{x: 2, y: 4}", "[{x}64]", "[{y,x}64]");
      expect_not_expressible(me, "{x: 2, y: 4}", "[{x}8, {y}8, 8]", "[8, {x,y}8, 8]");
      // The global shapes must agree; the communicator must have the mesh's size.
      const redist::device_mesh m = redist::parse_mesh("{x: 2, y: 4}");
      try {
        redist::bench::scalapack_redistribution<float> r(m, redist::parse_type(m, "[{x}64, {y}96]"),
                                                         redist::parse_type(m, "[{y}64, {x}64]"));
        fail(me, "different global shapes accepted");
      } catch (const redist::redist_error&) {
      }
      MPI_Comm half = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
      try {
        redist::bench::scalapack_redistribution<float> r(m, redist::parse_type(m, "[{x}64, {y}96]"),
                                                         redist::parse_type(m, "[{y}64, {x}96]"), half);
        fail(me, "a communicator of 4 ranks accepted for 8 devices");
      } catch (const redist::redist_error&) {
      }
      try {  // a placed mesh beyond the communicator's ranks
        const redist::placed_mesh a = redist::parse_placed_mesh("{x: 4}"), b = redist::parse_placed_mesh("{x: 4} @ [4, 5, 6, 7]");
        redist::bench::scalapack_redistribution<float> r({a, redist::parse_type(a.mesh, "[{x}64]")},
                                                         {b, redist::parse_type(b.mesh, "[{x}64]")}, half);
        fail(me, "a mesh on ranks 4-7 accepted on a communicator of 4 ranks");
      } catch (const redist::redist_error& e) {
        if (std::string(e.what()).find("ranks up to 7") == std::string::npos)
          fail(me, std::string("unexpected message: ") + e.what());
      }
      MPI_Comm_free(&half);
    }
  } catch (const std::exception& e) {
    fail(me, std::string("exception: ") + e.what());
  }
  redist::bench::scalapack_finalize();
  int total_failures = 0;
  unsigned long long total_checked = 0, mine = checked;
  MPI_Allreduce(&failures, &total_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Reduce(&mine, &total_checked, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0)
    std::printf("scalapack baseline: %llu problems on %d ranks, %llu elements checked, %d failures\n",
                static_cast<unsigned long long>(problems), size, total_checked, total_failures);
  MPI_Finalize();
  return total_failures == 0 ? 0 : 1;
}
