// The MPI backend on real data, one rank per process: run under
//   mpirun --oversubscribe -np D backends_mpi_test exchange [problems] [uneven problems]
// Every rank synthesizes the same seeded random problems on meshes of D devices, fills
// its source tile with values encoding their global index, redistributes through MPI and
// checks every element of its target tile; then the error cases, each on every rank.
// Rank 0 prints the totals; the exit status is non-zero on any failure on any rank.
#include "redist/backends/mpi.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "redist/lower/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/verify.hpp"
#include "support/fuse_profile.hpp"
#include "support/memory_formula.hpp"
#include "support/random_problems.hpp"

// A namespace of its own: the MPI test programs compile as one unit (mpi_main.cpp).
namespace mpi_exchange_test {

int failures = 0;  // on this rank

void fail(int rank, const std::string& what) {
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
}

struct totals {
  std::uint64_t problems = 0, elements = 0, mismatches = 0, uneven = 0, fused = 0;
  double max_ratio = 0;
  std::uint64_t ops[7] = {};  // steps by kind (redist::op)
};

/// Meshes of exactly D devices: {x: D}, every {x: a, y: D/a}, and the prime factors as axes.
std::vector<redist::testing::workload> workloads_for(std::uint64_t D) {
  std::vector<redist::testing::workload> ws;
  auto add = [&](std::vector<std::pair<std::string, std::uint64_t>> axes) {
    redist::testing::workload w;
    w.axes = std::move(axes);
    w.max_dims = 4;
    w.max_elements = 1 << 14;  // small arrays: many oversubscribed ranks on few cores
    w.max_multiplier = 8;
    ws.push_back(w);
  };
  add({{"x", D}});
  for (std::uint64_t a = 2; a < D; ++a)
    if (D % a == 0) add({{"x", a}, {"y", D / a}});
  std::vector<std::pair<std::string, std::uint64_t>> primes;
  std::uint64_t n = D;
  for (std::uint64_t f = 2; n > 1; ++f)
    while (n % f == 0) {
      primes.push_back({std::string(1, static_cast<char>('a' + primes.size())), f});
      n /= f;
    }
  if (primes.size() > 2) add(primes);
  // The same meshes with partial sums (pending-sum axes in the types: allreduce, reducescatter).
  const std::size_t plain = ws.size();
  for (std::size_t i = 0; i < plain; ++i) {
    ws.push_back(ws[i]);
    ws.back().partial_sums = true;
  }
  // And every other reduction (max, min, prod, avg), one per mesh.
  const char* kinds[] = {"max", "min", "prod", "avg"};
  for (std::size_t i = 0; i < plain; ++i) {
    ws.push_back(ws[plain + i]);
    ws.back().reduction = kinds[i % 4];
  }
  return ws;
}

/// One problem on `mpi` (blocks in place or packed, as its options say), with pack pieces
/// of at most `chunk` bytes.
/// With `exchange`, the problem runs as one exchange (lower/exchange.hpp); problems with
/// partial sums, which an exchange refuses, are skipped.
template <class T>
void run_problem(redist::mpi_backend& mpi, const redist::testing::problem_text& pt, totals& tot,
                 std::uint64_t chunk = std::uint64_t{1} << 20, bool exchange = false, bool fuse = false) {
  const int me = static_cast<int>(mpi.rank());
  redist::program p;
  if (exchange) {
    const redist::device_mesh m = redist::parse_mesh(pt.mesh);
    const redist::dist_type a = redist::parse_type(m, pt.from), b = redist::parse_type(m, pt.to);
    if (a.nsum > 0 || b.nsum > 0) return;
    p = redist::exchange_program(m, a, b, sizeof(T));
    if (p.cost_elements != redist::movement_lower_bound(m, a, b))
      fail(me, pt.mesh + " " + pt.from + " -> " + pt.to + ": the exchange receives more than the lower bound");
    // Senders by node (step::node_ranks) on some problems, the same on every rank: 0 (one
    // node) to D ranks per node, by the problem's text.
    if (!p.steps.empty()) p.steps[0].node_ranks = (pt.from.size() + 3 * pt.to.size()) % (p.devices() + 1);
  } else if (fuse) {  // the paper's program with every fusable pair fused (lower/fuse.hpp)
    p = redist::synthesize(pt.mesh, pt.from, pt.to, {.element_bytes = sizeof(T), .goal = redist::objective::bytes});
    const redist::time_profile latency = redist::testing::fuse_all_profile();
    redist::fuse_collectives(p, latency, sizeof(T));
    bool any = false;
    for (const auto& st : p.steps) any = any || st.fused();
    if (!any) return;
    ++tot.fused;
  } else {
    p = redist::synthesize(pt.mesh, pt.from, pt.to, {.element_bytes = sizeof(T)});
  }
  redist::executor<T, redist::mpi_backend> ex(mpi, p, {.pack_chunk_bytes = chunk});
  redist::darray<T> in(p.m, p.source, mpi.rank());
  redist::fill_global_index(in);
  const std::vector<T> before(in.span().begin(), in.span().end());
  redist::darray<T> out = ex.run(in);
  if (!std::equal(before.begin(), before.end(), in.span().begin()))
    fail(me, pt.mesh + " " + pt.from + " -> " + pt.to + ": the input tile was modified");
  const std::uint64_t formula = redist::testing::expected_bytes_held(
      p, sizeof(T),
      {mpi.options().alltoall_in_place, mpi.options().allgather_in_place, mpi.options().exchange_in_place, false},
      chunk, mpi.rank());
  if (ex.peak_bytes_held() != formula)
    fail(me, pt.mesh + " " + pt.from + " -> " + pt.to + ": holds " + std::to_string(ex.peak_bytes_held()) +
                 " bytes, the memory formula says " + std::to_string(formula));
  if (p.target.nsum > 0) {
    // Pending sums in the target: add up the partials of every sum group.
    MPI_Comm group = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(redist::sum_root(p.m, p.target, mpi.rank())), me, &group);
    redist::mpi_reduce_partials(group, out.data(), out.size(), p.target.reduce);
    MPI_Comm_free(&group);
  }
  const redist::tile_check c = redist::check_global_index(out);
  tot.elements += c.checked;
  tot.mismatches += c.mismatches;
  if (!c.ok())
    fail(me, pt.mesh + " " + pt.from + " -> " + pt.to + ": " + std::to_string(c.mismatches) +
                 " wrong elements, first at global index " + std::to_string(c.first_bad));
  const std::uint64_t in_out = std::max(redist::local_size(p.m, p.source), redist::local_size(p.m, p.target)) * sizeof(T);
  const double ratio = static_cast<double>(ex.peak_bytes_held()) / static_cast<double>(in_out);
  // Memory-efficient programs hold at most 2 max(in, out) (runtime/executor.hpp); a program
  // of several steps with packed exchanges (an exchange after an allreduce, or the steps of
  // an uneven program: scratch, then the pieces sent and received) up to 3.
  const bool exchanges = p.count(redist::op::exchange) > 0 || p.uneven();
  const double limit = exchanges && (p.steps.size() > 1 || p.count(redist::op::allreduce) > 0) ? 3.0 : 2.0;
  if (ratio > limit) fail(me, pt.mesh + " " + pt.from + " -> " + pt.to + ": peak memory ratio " + std::to_string(ratio));
  tot.max_ratio = std::max(tot.max_ratio, ratio);
  ++tot.problems;
  for (const auto& st : p.steps) ++tot.ops[static_cast<int>(st.kind)];
  // A second run reuses the executor's buffers and the cached communicators.
  const std::size_t cached = mpi.cached_groups();
  const redist::darray<T> again = ex.run(in);
  if ((p.target.nsum == 0 && !redist::check_global_index(again).ok()) || mpi.cached_groups() != cached)
    fail(me, pt.mesh + " " + pt.from + " -> " + pt.to + ": the second run differs");
}

/// Expect `f` to throw redist_error with exactly `msg` on this rank.
template <class F>
void expect_error(int me, const char* what, const std::string& msg, F f) {
  try {
    f();
    fail(me, std::string(what) + ": no error");
  } catch (const redist::redist_error& e) {
    if (e.what() != msg) fail(me, std::string(what) + ": got '" + e.what() + "', expected '" + msg + "'");
  }
}

void error_cases(redist::mpi_backend& mpi) {
  const int me = static_cast<int>(mpi.rank());
  const std::uint64_t D = mpi.devices();
  const std::string mesh = "{x: " + std::to_string(D) + "}";
  const std::string global = std::to_string(2 * D);
  const redist::program p = redist::synthesize(mesh, "[{x}" + global + ", " + global + "]", "[" + global + ", {x}" + global + "]");
  redist::darray<float> in(p.m, p.source, mpi.rank());
  redist::fill_global_index(in);
  auto untouched = [&](const redist::darray<float>& out) {
    for (float v : out.span())
      if (v != -1.0f) return false;
    return redist::check_global_index(in).ok();
  };
  auto sentinel = [&] {
    redist::darray<float> out(p.m, p.target, mpi.rank());
    for (float& v : out.span()) v = -1.0f;
    return out;
  };

  {  // a communicator whose size is not the mesh's device count
    const std::string small = "{x: " + std::to_string(D / 2) + "}";
    const redist::program q = redist::synthesize(small, "[{x}" + global + "]", "[" + global + "]");
    redist::executor<float, redist::mpi_backend> ex(mpi, q);
    redist::darray<float> qin(q.m, q.source, mpi.rank() % static_cast<redist::rank_t>(D / 2));
    expect_error(me, "communicator size", "the communicator has " + std::to_string(D) + " ranks but the program's mesh " +
                                              small + " has " + std::to_string(D / 2) + " devices",
                 [&] { (void)ex.run(qin); });
  }
  {  // element type mismatch on every rank
    redist::executor<double, redist::mpi_backend> ex(mpi, p);
    redist::darray<double> din(p.m, p.source, mpi.rank());
    expect_error(me, "element type",
                 "element type mismatch: the program was planned for 4-byte elements, the array's elements have 8 bytes",
                 [&] { (void)ex.run(din); });
  }
  const std::string disagree =
      "ranks disagree on the program (hash mismatch): every rank must run the same program with the same element "
      "type; nothing was moved";
  {  // rank 0 runs another program
    const redist::program other = redist::synthesize(mesh, "[{x}" + global + ", " + global + "]", "[" + global + ", " + global + "]");
    redist::executor<float, redist::mpi_backend> ex(mpi, me == 0 ? other : p);
    if (me == 0) {
      redist::darray<float> out(other.m, other.target, 0);
      expect_error(me, "program mismatch", disagree, [&] { ex.run(in, out); });
    } else {
      redist::darray<float> out = sentinel();
      expect_error(me, "program mismatch", disagree, [&] { ex.run(in, out); });
      if (!untouched(out)) fail(me, "program mismatch: data was touched");
    }
  }
  {  // rank 0 uses int32 elements, the others float: same sizes, different element types
    if (me == 0) {
      redist::executor<std::int32_t, redist::mpi_backend> ex(mpi, p);
      redist::darray<std::int32_t> iin(p.m, p.source, 0);
      expect_error(me, "element type across ranks", disagree, [&] { (void)ex.run(iin); });
    } else {
      redist::executor<float, redist::mpi_backend> ex(mpi, p);
      redist::darray<float> out = sentinel();
      expect_error(me, "element type across ranks", disagree, [&] { ex.run(in, out); });
      if (!untouched(out)) fail(me, "element type across ranks: data was touched");
    }
  }
  {  // the last rank passes an empty tile: it reports the size, every other rank the refusal
    redist::executor<float, redist::mpi_backend> ex(mpi, p);
    redist::darray<float> out = sentinel();
    if (me == static_cast<int>(D) - 1) {
      redist::darray<float> moved = in;
      redist::darray<float> gone = std::move(moved);
      expect_error(me, "wrong buffer size",
                   "wrong buffer size: input tile of rank " + std::to_string(me) + " holds 0 elements, its type needs " +
                       std::to_string(in.size()),
                   [&] { ex.run(moved, out); });
    } else {
      expect_error(me, "wrong buffer size elsewhere",
                   "another rank rejected the redistribution (see its message); nothing was moved", [&] { ex.run(in, out); });
    }
    if (!untouched(out)) fail(me, "wrong buffer size: data was touched");
    // The same executor then runs normally.
    ex.run(in, out);
    if (!redist::check_global_index(out).ok()) fail(me, "run after a refused run");
  }
}

/// Single-copy exchanges (mpi_options::exchange_single_copy): the plans of a few pieces,
/// and that the random problems above moved pieces that way where the kernel allows it.
void single_copy_cases(int me, const redist::mpi_backend& single, const redist::mpi_backend& mixed,
                       std::size_t random_problems) {
  using redist::detail::single_copy_plan;
  using how = single_copy_plan::how;
  auto region = [](std::uint64_t r0, std::uint64_t c0, std::uint64_t rows, std::uint64_t cols) {
    redist::tile_region r;
    r.start[0] = r0;
    r.start[1] = c0;
    r.size[0] = rows;
    r.size[1] = cols;
    return r;
  };
  const std::uint64_t src[] = {4, 8}, dst[] = {4, 4};
  // Columns 2..5 of a 4 x 8 tile of floats into a whole 4 x 4 tile: the reader reads the
  // 16-byte gaps between the rows' runs (one span), the writer writes one span (the
  // destination is contiguous) and no gap.
  const auto rd = redist::detail::plan_single_copy(src, region(0, 2, 4, 4), dst, region(0, 0, 4, 4), 4, 4096);
  if (rd.spans.size() != 1 || rd.spans[0].at != 8 || rd.spans[0].bytes != 112 || rd.local.size() != 7 ||
      rd.useful != 64 || rd.local[1].at != single_copy_plan::gap || rd.local[2].at != 16)
    fail(me, "single copy: the reads of columns 2..5 of a 4 x 8 tile");
  const auto wr = redist::detail::plan_single_copy(dst, region(0, 0, 4, 4), src, region(0, 2, 4, 4), 4, 0);
  if (wr.spans.size() != 1 || wr.spans[0].bytes != 64 || wr.local.size() != 4 || wr.local[3].at != 3 * 32 + 8)
    fail(me, "single copy: the writes of columns 2..5 of a 4 x 8 tile");
  // The choice by cost: spans x c + the acting rank's runs x c / 16 + the bytes copied,
  // against MPI's two copies of the 64 bytes. With c = 0, the reader's 4 spans of 16
  // bytes (a tie with the writer: read); with 48, the writer's one span and 4 runs (48 + 12
  // + 64 = 124) against the reader's span with its gaps (48 + 21 + 112); with 53, MPI (129).
  auto choose = [](const redist::detail::single_copy_piece& pc, std::uint64_t cost) {
    return redist::detail::choose_single_copy(pc, 4, cost);
  };
  const redist::detail::single_copy_piece cols{src, region(0, 2, 4, 4), dst, region(0, 0, 4, 4)};
  if (choose(cols, 0).how != how::read || choose(cols, 0).plan.spans.size() != 4 || choose(cols, 48).how != how::write ||
      choose(cols, 53).how != how::mpi)
    fail(me, "single copy: the choice for columns 2..5 of a 4 x 8 tile");
  // Rows of 4 KiB lying 16 KiB apart into a contiguous tile: written in one span of 64 KiB
  // (16 runs) while 2c + 64 KiB is at most 128 KiB, then MPI.
  const std::uint64_t wide[] = {16, 4096}, narrow[] = {16, 1024};
  const redist::detail::single_copy_piece strided{wide, region(0, 0, 16, 1024), narrow, region(0, 0, 16, 1024)};
  const auto w = choose(strided, 8192);
  if (w.how != how::write || w.plan.spans.size() != 1 || w.plan.local.size() != 16 || choose(strided, 32768).how != how::write ||
      choose(strided, 32784).how != how::mpi)
    fail(me, "single copy: strided rows into a contiguous tile are written");
  // A layer's column block on 8 ranks, runs of 256 bytes (64 floats of 512-float rows) into
  // a contiguous tile: at the default span cost (2 KiB, a run 128 bytes) the sender writes it
  // (2 KiB + 64 x 128 + 16 KiB = 26 KiB, at most 32 KiB); at 8 KiB it went by MPI (56 KiB).
  const std::uint64_t layer[] = {64, 512}, block[] = {64, 64};
  const redist::detail::single_copy_piece cols64{layer, region(0, 64, 64, 64), block, region(0, 0, 64, 64)};
  const auto by_default = choose(cols64, redist::mpi_options{}.single_copy_span_cost);
  if (by_default.how != how::write || by_default.plan.spans.size() != 1 || by_default.plan.local.size() != 64 ||
      choose(cols64, 8192).how != how::mpi)
    fail(me, "single copy: runs of 256 bytes into a contiguous tile are written at the default span cost");
  if (single.single_copy() != mixed.single_copy())
    fail(me, "single copy: on for one backend and not the other");
  // Row blocks to column blocks on {x: D}: each piece is 8 runs of 4 KiB lying 4 KiB x D
  // apart in the sender's tile and contiguous in the receiver's, so the sender writes it
  // (by the default span cost); the reverse is read, contiguous in the sender's tile.
  const std::uint64_t D = single.devices();
  const redist::testing::problem_text rows_to_cols{"{x: " + std::to_string(D) + "}",
                                                   "[{x}" + std::to_string(8 * D) + ", " + std::to_string(1024 * D) + "]",
                                                   "[" + std::to_string(8 * D) + ", {x}" + std::to_string(1024 * D) + "]"};
  const redist::testing::problem_text cols_to_rows{rows_to_cols.mesh, rows_to_cols.to, rows_to_cols.from};
  redist::mpi_backend plain(MPI_COMM_WORLD, {.single_copy_min_bytes = 0});  // the default span cost
  totals t;
  run_problem<float>(plain, rows_to_cols, t, std::uint64_t{1} << 20, true);
  run_problem<float>(plain, cols_to_rows, t, std::uint64_t{1} << 20, true);
  const auto moved = plain.single_copy_moves();
  // two runs each (run_problem runs its executor again)
  if (plain.single_copy() && (moved.writes != 2 * (D - 1) || moved.reads != 2 * (D - 1)))
    fail(me, "single copy: " + std::to_string(moved.writes) + " writes and " + std::to_string(moved.reads) +
                 " reads of the row and column blocks, expected " + std::to_string(2 * (D - 1)) + " each");
  if (t.mismatches != 0 || t.problems != 2) fail(me, "single copy: the row and column blocks");
  std::uint64_t reads[2] = {single.single_copy_moves().reads, mixed.single_copy_moves().reads}, all[2] = {};
  MPI_Allreduce(reads, all, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (single.single_copy() && random_problems >= 100 && (all[0] == 0 || all[1] == 0))
    fail(me, "single copy is on, but the random exchanges read no piece that way");
}

/// The steady heap (mpi_options::steady_heap, on by default): after an all-reduce of 20
/// MiB through the backend its thresholds are 64 and 128 MiB, so a block of 40 MiB, which
/// glibc's dynamic thresholds (at most 32 MiB) would mmap, comes from the heap and stays
/// mapped once freed; for a reduction buffer of 48 MiB they rise to 128 and 256 MiB: a block
/// of 80 MiB comes from the heap, one of 200 MiB is still mmapped. Skipped where the
/// environment tunes malloc, or under AddressSanitizer, whose allocator refuses mallopt.
void steady_heap_cases(int me, redist::mpi_backend& mpi) {
#if defined(REDIST_MPI_GLIBC_MALLOC)
  if (redist::detail::address_sanitizer || redist::detail::heap_tuned_by_environment()) return;
  static void* volatile sink = nullptr;  // each block escapes: the compiler keeps malloc and free
  // Whether a block of `mib` MiB comes from the heap (not mmapped) and stays mapped once freed.
  auto steady = [&](std::size_t mib) {
    const struct mallinfo2 before = mallinfo2();
    sink = std::malloc(mib << 20);
    if (sink == nullptr) return false;
    const struct mallinfo2 during = mallinfo2();
    std::free(sink);
    const struct mallinfo2 after = mallinfo2();
    return during.hblkhd == before.hblkhd && after.arena >= during.arena;
  };
  const std::uint64_t D = mpi.devices();
  if (D > 1) {
    const std::size_t n = std::size_t{5} << 20;  // 20 MiB of floats
    std::vector<float> in(n, 1.0f), out(n, 0.0f);
    std::vector<float*> send(D, nullptr), recv(D, nullptr);
    send[mpi.rank()] = in.data();
    recv[mpi.rank()] = out.data();
    std::vector<redist::rank_t> all(D);
    for (std::uint64_t r = 0; r < D; ++r) all[r] = static_cast<redist::rank_t>(r);
    mpi.prepare_groups(all, D);
    mpi.allreduce<float>(all, {send, recv}, n);
    if (out[0] != static_cast<float>(D) || out[n - 1] != static_cast<float>(D)) fail(me, "steady heap: the all-reduce's sums");
    if (!steady(40)) fail(me, "steady heap: a block of 40 MiB was mmapped or trimmed after an all-reduce of 20 MiB");
  }
  if (!redist::detail::steady_heap(std::size_t{48} << 20)) fail(me, "steady heap: not raised for 48 MiB");
  if (!steady(80)) fail(me, "steady heap: a block of 80 MiB was mmapped or trimmed after raising for 48 MiB");
  if (steady(200)) fail(me, "steady heap: a block of 200 MiB came from the heap (the threshold is 128 MiB)");
#else
  (void)me;
  (void)mpi;
#endif
}

/// backends_mpi_test exchange [problems] [uneven problems]
int run(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    redist::mpi_backend mpi;
    redist::mpi_backend packing(MPI_COMM_WORLD,
                                {.alltoall_in_place = false, .allgather_in_place = false, .exchange_in_place = false});
    // In-place exchanges: by default (single copy for pieces of 1 MiB where the cost model
    // says so; these problems' pieces are smaller, so point to point), every piece of the
    // node in a single copy (span cost 0), mixed with MPI (nodes of 3 ranks, point to point
    // between them; a span costing 64 bytes, so small pieces by MPI), and one MPI_Alltoallw
    // (single copy off).
    redist::mpi_backend single(MPI_COMM_WORLD, {.single_copy_span_cost = 0, .single_copy_min_bytes = 0});
    redist::mpi_backend mixed(MPI_COMM_WORLD, {.single_copy_span_cost = 64, .single_copy_min_bytes = 0, .node_size = 3});
    redist::mpi_backend alltoallw(MPI_COMM_WORLD, {.exchange_single_copy = false});
    redist::mpi_backend* const in_place[] = {&mpi, &single, &mixed, &alltoallw};
    const int me = static_cast<int>(mpi.rank());
    const std::size_t count = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 120;
    const std::size_t uneven = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 200;
    totals tot;
    const double t0 = MPI_Wtime();
    try {
      const auto ws = workloads_for(mpi.devices());
      for (std::size_t i = 0; i < count; ++i) {
        const auto& w = ws[i % ws.size()];
        std::mt19937_64 rng(0x6d7069 + i);
        const auto pt = redist::testing::random_problem(rng, w);
        // every other problem with packed blocks, in pieces of at most 48 bytes
        redist::mpi_backend& b = i / 3 % 2 == 0 ? mpi : packing;
        const std::uint64_t chunk = i / 3 % 2 == 0 ? std::uint64_t{1} << 20 : 48;
        if (i % 3 == 0) run_problem<float>(b, pt, tot, chunk);
        else if (i % 3 == 1) run_problem<double>(b, pt, tot, chunk);
        else if (w.reduction == "avg") run_problem<std::int32_t>(b, pt, tot, chunk);  // (16-bit sums wrap)
        else run_problem<std::int16_t>(b, pt, tot, chunk);
        // the same problem as one exchange, in place (MPI_Alltoallw or single copy) or packed
        // (MPI_Alltoallv)
        if (i % 2 == 0) run_problem<float>(*in_place[i / 2 % 4], pt, tot, chunk, true);
        else run_problem<std::int32_t>(packing, pt, tot, chunk, true);
        // the paper's program with its collectives fused, blocks in place or packed
        run_problem<float>(b, pt, tot, chunk, false, true);
      }
      // Uneven dimensions (DESIGN.md section 2): an allreduce of pending sums if any, then
      // one exchange; in place and packed, sums in half of the workloads.
      const std::uint64_t even_problems = tot.problems;
      for (std::size_t i = 0; i < uneven; ++i) {
        const auto& w = ws[i % ws.size()];
        std::mt19937_64 rng(0x756e6576 + i);
        const auto pt = redist::testing::random_uneven_problem(rng, w);
        if (i % 2 == 0) run_problem<float>(*in_place[i / 2 % 4], pt, tot);
        else run_problem<std::int32_t>(packing, pt, tot, 48);
      }
      single_copy_cases(me, single, mixed, count + uneven);
      steady_heap_cases(me, mpi);
      tot.uneven = tot.problems - even_problems;
      error_cases(mpi);
    } catch (const std::exception& e) {
      fail(me, std::string("exception: ") + e.what());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const double seconds = MPI_Wtime() - t0;
    std::uint64_t sums[4] = {tot.elements, tot.mismatches, static_cast<std::uint64_t>(failures), tot.problems};
    std::uint64_t all[4] = {};
    MPI_Allreduce(sums, all, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    double ratio = 0;
    MPI_Allreduce(&tot.max_ratio, &ratio, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0)
      std::printf("mpi backend, %llu ranks (single copy %s: %llu pieces on rank 0): %llu problems (%llu uneven), %llu elements verified over all ranks, %llu wrong, "
                  "%llu failures; steps: %llu allgather, %llu alltoall, %llu dynslice, %llu allpermute, %llu allreduce, "
                  "%llu reducescatter, %llu exchange; %llu programs with fused steps; "
                  "peak bytes held / max(local in, out): max %.3f; %.2f s\n",
                  static_cast<unsigned long long>(mpi.devices()), single.single_copy() ? "on" : "off",
                  static_cast<unsigned long long>(single.single_copy_moves().reads + single.single_copy_moves().writes +
                                                  mixed.single_copy_moves().reads + mixed.single_copy_moves().writes),
                  static_cast<unsigned long long>(all[3] / mpi.devices()),
                  static_cast<unsigned long long>(tot.uneven), static_cast<unsigned long long>(all[0]), static_cast<unsigned long long>(all[1]),
                  static_cast<unsigned long long>(all[2]), static_cast<unsigned long long>(tot.ops[0]),
                  static_cast<unsigned long long>(tot.ops[1]), static_cast<unsigned long long>(tot.ops[2]),
                  static_cast<unsigned long long>(tot.ops[3]), static_cast<unsigned long long>(tot.ops[4]),
                  static_cast<unsigned long long>(tot.ops[5]), static_cast<unsigned long long>(tot.ops[6]),
                  static_cast<unsigned long long>(tot.fused), ratio,
                  seconds);
    rc = all[1] == 0 && all[2] == 0 && all[3] >= (count + uneven) * mpi.devices() && tot.uneven == uneven &&
                 (count < 10 || tot.fused > 0)
             ? 0
             : 1;
  }
  MPI_Finalize();
  return rc;
}

}  // namespace mpi_exchange_test
