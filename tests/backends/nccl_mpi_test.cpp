// The NCCL backend bootstrapped over MPI, one rank per GPU: run under
//   mpirun -np <gpus> backends_nccl_mpi_test [problems]
// With at least one GPU per rank on every node: every rank synthesizes the same seeded
// random problems on meshes of D = <ranks> devices (partial sums too), fills its source
// tile in device memory with values encoding their global index, redistributes through
// NCCL, and checks every element of its target tile; then a few redistributions between
// meshes on device sets (ranks holding no tile on one side); then random reshards of many
// arrays (runtime/reshard_executor.hpp: message rounds of pieces packed and unpacked on the
// device by the batch kernel, some under a byte budget, some casting f32 to bf16 and back on
// the way with the converting kernel), every target element checked, and host tiles refused; then the agreement refuses a program mismatch with nothing moved.
// Rank 0 prints the totals.
// Without a GPU per rank (a machine without GPU: what runs in CI; or two ranks of a node
// on one GPU) the backend must refuse on every rank with a clear message before NCCL
// starts, and the test checks that it does, and says so.
// The exit status is non-zero on any failure on any rank.
#include "redist/backends/nccl.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "redist/backends/mpi.hpp"
#include "redist/core/placement.hpp"
#include "redist/lower/between.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/lower/reshard.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/reshard_executor.hpp"
#include "redist/runtime/reshard_tiles.hpp"
#include "redist/runtime/verify.hpp"
#include "support/random_problems.hpp"
#include "support/reshard_problems.hpp"

// A namespace of its own: on the CPU stand-in it compiles in one unit with nccl_gpu_test.cpp
// (nccl_emulated_main.cpp).
namespace nccl_mpi_test {

int failures = 0;  // on this rank

void fail(int rank, const std::string& what) {
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
}

struct totals {
  std::uint64_t problems = 0, elements = 0, mismatches = 0, reshards = 0, messages = 0, pipelined = 0, casts = 0;
  std::uint64_t ops[7] = {};
};

std::vector<redist::testing::workload> workloads_for(std::uint64_t D) {
  std::vector<redist::testing::workload> ws;
  auto add = [&](std::vector<std::pair<std::string, std::uint64_t>> axes) {
    redist::testing::workload w;
    w.axes = std::move(axes);
    w.max_dims = 4;
    w.max_elements = 1 << 18;
    w.max_multiplier = 16;
    ws.push_back(w);
  };
  add({{"x", D}});
  for (std::uint64_t a = 2; a < D; ++a)
    if (D % a == 0) add({{"x", a}, {"y", D / a}});
  const std::size_t plain = ws.size();
  for (std::size_t i = 0; i < plain; ++i) {
    ws.push_back(ws[i]);
    ws.back().partial_sums = true;
  }
  // Every other reduction (ncclMax, ncclMin, ncclProd, ncclAvg), one per mesh.
  const char* kinds[] = {"max", "min", "prod", "avg"};
  for (std::size_t i = 0; i < plain; ++i) {
    ws.push_back(ws[plain + i]);
    ws.back().reduction = kinds[i % 4];
  }
  return ws;
}

template <class T>
redist::cuda_buffer<T> upload(const redist::nccl_backend& b, std::span<const T> v) {
  redist::cuda_buffer<T> d(v.size(), b.device());
  REDIST_CUDA_CHECK(cudaMemcpy(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  REDIST_CUDA_CHECK(cudaDeviceSynchronize());
  return d;
}

/// With `exchange`, the problem runs as one exchange (grouped ncclSend / ncclRecv of pieces
/// packed on the device); problems with partial sums, which it refuses, are skipped.
template <class T>
void run_problem(redist::nccl_backend& b, const redist::testing::problem_text& pt, totals& tot, bool exchange = false) {
  const int me = static_cast<int>(b.rank());
  redist::program p;
  if (exchange) {
    const redist::device_mesh m = redist::parse_mesh(pt.mesh);
    const redist::dist_type from = redist::parse_type(m, pt.from), to = redist::parse_type(m, pt.to);
    if (from.nsum > 0 || to.nsum > 0) return;
    p = redist::exchange_program(m, from, to, sizeof(T));
  } else {
    p = redist::synthesize(pt.mesh, pt.from, pt.to, {.element_bytes = sizeof(T)});
  }
  redist::executor<T, redist::nccl_backend> ex(b, p);
  redist::darray<T> host_in(p.m, p.source, b.rank());
  redist::fill_global_index(host_in);
  const redist::cuda_buffer<T> din = upload<T>(b, host_in.span());
  redist::cuda_buffer<T> dout(redist::local_size(p.m, p.target), b.device());
  const redist::darray<T> in(p.m, p.source, b.rank(), din.span());
  redist::darray<T> out(p.m, p.target, b.rank(), dout.span());
  for (int k = 0; k < 2; ++k) {  // the second run reuses the buffers and cached communicators
    const std::size_t cached = b.cached_groups();
    ex.run(in, out);
    b.synchronize();
    redist::darray<T> res(p.m, p.target, b.rank());
    REDIST_CUDA_CHECK(cudaMemcpy(res.data(), dout.data(), res.size() * sizeof(T), cudaMemcpyDeviceToHost));
    if (p.target.nsum > 0) {
      MPI_Comm group = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(redist::sum_root(p.m, p.target, b.rank())), me, &group);
      redist::mpi_reduce_partials(group, res.data(), res.size(), p.target.reduce);  // by the target's kind
      MPI_Comm_free(&group);
    }
    const redist::tile_check c = redist::check_global_index(res);
    tot.elements += c.checked;
    tot.mismatches += c.mismatches;
    if (!c.ok())
      fail(me, pt.mesh + " " + pt.from + " -> " + pt.to + " (run " + std::to_string(k) + "): " +
                   std::to_string(c.mismatches) + " wrong elements, first at global index " + std::to_string(c.first_bad));
    if (k == 1 && b.cached_groups() != cached) fail(me, pt.mesh + " " + pt.from + " -> " + pt.to + ": the rerun split again");
  }
  ++tot.problems;
  for (const auto& st : p.steps) ++tot.ops[static_cast<int>(st.kind)];
}

/// A redistribution between meshes on device sets (DESIGN.md section 2, lower/between.hpp)
/// in the world of the backend's ranks: ranks outside the source mesh pass no tile
/// (darray::none), ranks outside the target mesh receive none; every target element is
/// checked.
void run_placed_problem(redist::nccl_backend& b, const std::string& ma, const std::string& from, const std::string& mb,
                        const std::string& to, totals& tot) {
  using T = float;
  const int me = static_cast<int>(b.rank());
  const redist::placed_mesh pa = redist::parse_placed_mesh(ma), pb = redist::parse_placed_mesh(mb);
  const redist::program p =
      redist::synthesize_between({pa, redist::parse_type(pa.mesh, from)}, {pb, redist::parse_type(pb.mesh, to)},
                                 b.devices(), {{.element_bytes = sizeof(T)}});
  redist::executor<T, redist::nccl_backend> ex(b, p);
  redist::darray<T> host_in = redist::source_tile<T>(p, b.rank());
  redist::fill_global_index(host_in);
  const redist::darray<T> host_out = redist::target_tile<T>(p, b.rank());
  const redist::cuda_buffer<T> din = upload<T>(b, host_in.span());
  redist::cuda_buffer<T> dout(host_out.size(), b.device());
  const redist::darray<T> in = host_in.holds() ? redist::darray<T>(p.m, p.source, host_in.device(), din.span()) : host_in;
  redist::darray<T> out =
      host_out.holds() ? redist::darray<T>(p.target_mesh(), p.target, host_out.device(), dout.span()) : host_out;
  ex.run(in, out);
  b.synchronize();
  const std::string what = ma + " " + from + " -> " + mb + " " + to;
  if (host_out.holds()) {
    redist::darray<T> res = host_out;
    REDIST_CUDA_CHECK(cudaMemcpy(res.data(), dout.data(), res.size() * sizeof(T), cudaMemcpyDeviceToHost));
    const redist::tile_check c = redist::check_global_index(res);
    tot.elements += c.checked;
    tot.mismatches += c.mismatches;
    if (!c.ok()) fail(me, what + ": " + std::to_string(c.mismatches) + " wrong elements");
  } else if (out.size() != 0) {
    fail(me, what + ": a rank outside the target mesh got a tile");
  }
  ++tot.problems;
  for (const auto& st : p.steps) ++tot.ops[static_cast<int>(st.kind)];
}

/// Placed problems for a world of W ranks: disjoint halves, a replicated target, the
/// same ranks in reverse order, a source on one rank.
void placed_cases(redist::nccl_backend& b, totals& tot) {
  const std::uint64_t W = b.devices();
  auto list = [](std::uint64_t lo, std::uint64_t n, bool reverse = false) {
    std::string s = " @ [";
    for (std::uint64_t k = 0; k < n; ++k) s += (k ? ", " : "") + std::to_string(reverse ? lo + n - 1 - k : lo + k);
    return s + "]";
  };
  const std::string G = std::to_string(12 * W);
  const std::string all = "{x: " + std::to_string(W) + "}";
  run_placed_problem(b, all + list(0, W, true), "[{x}" + G + ", 6]", all, "[" + G + ", 6]", tot);
  run_placed_problem(b, all, "[{x}" + G + ", 6]", "{y: " + std::to_string(W) + "}" + list(0, W, true), "[" + G + ", 6]", tot);
  run_placed_problem(b, "{}" + list(W - 1, 1), "[" + G + ", 5]", all, "[{x}" + G + ", 5]", tot);
  if (W >= 2) {
    const std::uint64_t h = W / 2;
    const std::string src = "{x: " + std::to_string(h) + "}" + list(0, h);
    const std::string dst = "{y: " + std::to_string(W - h) + "}" + list(h, W - h);
    run_placed_problem(b, src, "[{x}" + G + ", 7]", dst, "[{y}" + G + ", 7]", tot);
    run_placed_problem(b, src, "[{x}" + G + ", 7]", dst, "[" + G + ", 7]", tot);
    run_placed_problem(b, dst, "[{y}" + G + ", 3]", "{}" + list(0, 1), "[" + G + ", 3]", tot);  // onto one rank
  }
}

/// One planned reshard of many arrays through NCCL: the tiles in device memory, poisoned
/// (0xff bytes), then the sources uploaded on the backend's stream as a producer's output
/// would be; every target element checked on the host, the message buffer within the budget.
/// An own program over the budget is refused on every rank, which is not a failure.
void run_reshard(redist::nccl_backend& b, const redist::reshard_plan& p, std::uint64_t budget, const std::string& what,
                 totals& tot) {
  const int me = static_cast<int>(b.rank());
  try {
    redist::reshard_executor<redist::nccl_backend> ex(b, p);
    redist::reshard_tiles t = redist::make_reshard_tiles(ex);
    redist::fill_reshard_sources(p, ex.local_ranks(), t);
    std::vector<redist::cuda_buffer<std::byte>> din, dout;
    std::vector<std::span<const std::byte>> in;
    std::vector<std::span<std::byte>> out;
    for (const auto* side : {&t.in, &t.out})
      for (const auto& h : *side) {
        auto& d = (side == &t.in ? din : dout).emplace_back(h.size(), b.device());
        REDIST_CUDA_CHECK(cudaMemset(d.data(), 0xff, h.size()));
      }
    REDIST_CUDA_CHECK(cudaDeviceSynchronize());
    for (std::size_t k = 0; k < t.in.size(); ++k) {
      if (!t.in[k].empty())
        REDIST_CUDA_CHECK(cudaMemcpyAsync(din[k].data(), t.in[k].data(), t.in[k].size(), cudaMemcpyHostToDevice, b.stream()));
      in.emplace_back(din[k].data(), t.in[k].size());
    }
    for (std::size_t k = 0; k < t.out.size(); ++k) out.emplace_back(dout[k].data(), t.out[k].size());
    ex.run(in, out);
    b.synchronize();
    for (std::size_t k = 0; k < t.out.size(); ++k)
      if (!t.out[k].empty())
        REDIST_CUDA_CHECK(cudaMemcpy(t.out[k].data(), dout[k].data(), t.out[k].size(), cudaMemcpyDeviceToHost));
    if (budget > 0 && ex.message_bytes() > budget)
      fail(me, what + ": message buffer of " + std::to_string(ex.message_bytes()) + " bytes, over the budget");
    const redist::reshard_check k = redist::check_reshard_targets(p, ex.local_ranks(), t);
    tot.elements += k.checked;
    tot.mismatches += k.wrong;
    if (!k.ok()) fail(me, what + ": " + std::to_string(k.wrong) + " wrong elements, first: " + k.first);
    ++tot.reshards;
    tot.casts += std::any_of(p.arrays.begin(), p.arrays.end(), [](const redist::reshard_array& x) { return x.casts(); });
    tot.pipelined += p.pipelined;
    for (std::size_t r = 0; r < p.rounds.size(); ++r) tot.messages += p.messages(r);
  } catch (const redist::redist_error& e) {
    const std::string w = e.what();
    if (w.find("its own program holds") == std::string::npos && w.find("another rank rejected") == std::string::npos)
      fail(me, what + ": " + w);
  }
}

/// `n` seeded random reshards of many arrays (tests/support/reshard_problems.hpp) in the
/// world of the backend's ranks, planned jointly (every other one under a budget that cuts
/// the pieces into rounds; every fifth one call per array). Then pieces every rank keeps
/// (no message: only the copies on the backend's second stream, which must wait for the
/// uploads before them; repeated, as the emulator's streams run in random orders), rows to
/// columns in pipelined rounds (the next round packed on the second stream into the half of
/// the buffer the round before last used; repeated too), gradients whose own collectives run
/// fused (8 ranks), casts on the way (the converting kernel), and host tiles, which the
/// device cannot use. Half the ranks of every random problem run their own rank's plan
/// (reshard_options::of_rank), the others the whole plan.
void reshard_cases(redist::nccl_backend& b, std::size_t n, totals& tot) {
  const int me = static_cast<int>(b.rank());
  std::mt19937 rng(2699);
  redist::testing::reshard_workload w;
  w.max_world = b.devices();
  redist::testing::reshard_workload cast = w;
  cast.casts = true;
  for (std::size_t i = 0; i < n; ++i) {  // every fifth casts half its floating arrays on the way
    const auto [c, o, p] = redist::testing::random_planned_reshard(rng, i % 5 == 2 ? cast : w, b.devices(), i);
    redist::reshard_options mine = o;  // half the ranks run their own rank's plan, the others the whole plan
    mine.of_rank = b.rank();
    run_reshard(b, (i + static_cast<std::size_t>(me)) % 2 == 0 ? redist::plan_reshard(c.problem, mine) : p,
                o.budget_bytes, c.text, tot);
  }
  redist::reshard_problem pr;
  pr.world = b.devices();
  const std::string D = std::to_string(b.devices()), G = std::to_string(4 * b.devices());
  redist::placed_layout from, to;
  from.pm = to.pm = redist::parse_placed_mesh("{x: " + D + "}");
  from.type = redist::parse_type(from.pm.mesh, "[{x}" + G + ", " + G + "]");
  to.type = redist::parse_type(to.pm.mesh, "[" + G + ", {x}" + G + "]");
  pr.arrays.push_back({"k", redist::element_type::f32, from, from});
  const redist::reshard_plan kept = redist::plan_reshard(pr, {});
  for (int i = 0; i < 16; ++i) run_reshard(b, kept, 0, "kept pieces", tot);
  pr.arrays.back() = {"w", redist::element_type::f32, from, to};
  // Rows to columns on the ranks in reverse order (no one collective does it: the joint
  // exchange), every piece 4 x 4 floats (64 bytes); rounds within half a budget of 192
  // bytes hold one piece sent or received per rank: 2 (D - 1) rounds or so, two at a time.
  if (b.devices() >= 3) {
    std::string reversed;
    for (std::uint64_t r = b.devices(); r-- > 0;) reversed += (reversed.empty() ? "" : ", ") + std::to_string(r);
    redist::reshard_problem rev = pr;
    redist::placed_layout back = to;
    back.pm = redist::parse_placed_mesh("{x: " + D + "} @ [" + reversed + "]");
    rev.arrays.back().target = back;
    const std::uint64_t budget = 192;
    const redist::reshard_plan two =
        redist::plan_reshard(rev, {.budget_bytes = budget, .pipeline = redist::reshard_pipeline::on});
    if (!two.pipelined || two.rounds.size() < b.devices() - 1) fail(me, "rows to columns: " + two.reason);
    for (int i = 0; i < 8; ++i) run_reshard(b, two, budget, "rows to columns, pipelined", tot);
  }
  // Gradients of FSDP 4 x TP 2 and of HSDP (8 ranks): own all-reduces, reduce-scatters and
  // two-step programs as fused collectives over flat buffers in device memory, without and
  // under a budget that splits them (repeated, as the emulator's streams run in random orders).
  const std::pair<redist::reshard_problem, std::uint64_t> gradients[] = {
      {redist::testing::gradient_reshard(4), 0},
      {redist::testing::gradient_reshard(4), redist::testing::gradient_budget},
      {redist::testing::hsdp_gradient_reshard(3), 0}};
  if (b.devices() == 8)
    for (const auto& [problem, budget] : gradients) {
      const redist::reshard_plan g = redist::plan_reshard(problem, {.budget_bytes = budget});
      if (redist::reshard_executor<redist::nccl_backend>(b, g).fused_arrays().empty())
        fail(me, "gradients: no fused collective");
      for (int i = 0; i < 4; ++i) run_reshard(b, g, budget, "gradients, fused collectives", tot);
    }
  // Host tiles: refused on every rank, naming the array, the rank and the tile.
  redist::reshard_executor<redist::nccl_backend> ex(b, redist::plan_reshard(pr, {}));
  redist::reshard_tiles t = redist::make_reshard_tiles(ex);
  std::vector<redist::cuda_buffer<std::byte>> dout;
  std::vector<std::span<std::byte>> out;
  for (const auto& h : t.out) {
    dout.emplace_back(h.size(), b.device());
    out.emplace_back(dout.back().data(), h.size());
  }
  const std::string want = "array 'w' on rank " + std::to_string(me) + ": the source tile is host memory, not memory of CUDA device " +
                           std::to_string(b.device());
  try {
    ex.run(t.sources(), out);
    fail(me, "host tiles: no error");
  } catch (const redist::redist_error& e) {
    if (e.what() != want) fail(me, std::string("host tiles: got '") + e.what() + "', expected '" + want + "'");
  }
  // Casts on the way (the converting kernel): rows to columns f32 -> bf16, converted as the
  // pieces are packed (and as the kept ones are copied), bf16 -> f32 and f16 -> f64,
  // widening, converted as they are unpacked; without and within a budget of 64 bytes
  // (rounds). Every target element bit for bit (repeated: random stream orders).
  const std::pair<redist::element_type, redist::element_type> casts[] = {
      {redist::element_type::f32, redist::element_type::bf16},
      {redist::element_type::bf16, redist::element_type::f32},
      {redist::element_type::f16, redist::element_type::f64}};
  for (const auto& [from_type, to_type] : casts)
    for (const std::uint64_t budget : {std::uint64_t{0}, std::uint64_t{64}}) {
      redist::reshard_problem cp = pr;
      cp.arrays.back().dtype = from_type;
      cp.arrays.back().target_dtype = to_type;
      const redist::reshard_plan plan = redist::plan_reshard(cp, {.budget_bytes = budget});
      const std::string what = std::string("a cast ") + std::string(redist::element_type_name(from_type)) + " -> " +
                               std::string(redist::element_type_name(to_type)) + " within " + std::to_string(budget);
      for (int i = 0; i < 4; ++i) run_reshard(b, plan, budget, what, tot);
    }
}

void mismatch_case(redist::nccl_backend& b) {
  const int me = static_cast<int>(b.rank());
  const std::string D = std::to_string(b.devices()), G = std::to_string(2 * b.devices());
  const std::string mesh = "{x: " + D + "}";
  const redist::program p = redist::synthesize(mesh, "[{x}" + G + ", " + G + "]", "[" + G + ", {x}" + G + "]");
  const redist::program other = redist::synthesize(mesh, "[{x}" + G + ", " + G + "]", "[" + G + ", " + G + "]");
  const redist::program& mine = me == 0 ? other : p;
  redist::executor<float, redist::nccl_backend> ex(b, mine);
  redist::darray<float> host_in(mine.m, mine.source, b.rank());
  redist::fill_global_index(host_in);
  const redist::cuda_buffer<float> din = upload<float>(b, host_in.span());
  redist::cuda_buffer<float> dout(redist::local_size(mine.m, mine.target), b.device());
  REDIST_CUDA_CHECK(cudaMemset(dout.data(), 0xff, dout.size() * sizeof(float)));
  REDIST_CUDA_CHECK(cudaDeviceSynchronize());
  const redist::darray<float> in(mine.m, mine.source, b.rank(), din.span());
  redist::darray<float> out(mine.m, mine.target, b.rank(), dout.span());
  const std::string want =
      "ranks disagree on the program (hash mismatch): every rank must run the same program with the same element "
      "type; nothing was moved";
  try {
    ex.run(in, out);
    fail(me, "program mismatch: no error");
  } catch (const redist::redist_error& e) {
    if (e.what() != want) fail(me, std::string("program mismatch: got '") + e.what() + "'");
  }
  std::vector<std::uint32_t> back(dout.size());
  REDIST_CUDA_CHECK(cudaMemcpy(back.data(), dout.data(), back.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::uint32_t v : back)
    if (v != 0xffffffffu) {
      fail(me, "program mismatch: the output was touched");
      break;
    }
}

int run(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, size = 1, node_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  std::string why;
  const int gpus = redist::detail::cuda_device_count(&why);
  // REDIST_TEST_SCALE (the sanitizer pass of .ci/run) runs a fraction of them.
  const std::size_t count = redist::testing::scaled(argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 60);
  const std::size_t uneven_count = size > 1 ? count / 2 : 0;
  int rc = 0;

  // Start the backend on every rank; it must refuse, on every rank, exactly when the
  // ranks of a node cannot each have a GPU of their own.
  std::string refused;
  std::unique_ptr<redist::nccl_backend> backend;
  try {
    backend = std::make_unique<redist::nccl_backend>(MPI_COMM_WORLD);
  } catch (const redist::redist_error& e) {
    refused = e.what();
  }
  const int mine = refused.empty() ? 0 : 1;
  int any_refused = 0, all_refused = 0;
  MPI_Allreduce(&mine, &any_refused, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &all_refused, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (any_refused) {
    backend.reset();
    const std::string no_device = "nccl backend: no CUDA device (" + why + ")";
    const std::string other = "nccl backend: another rank has no CUDA device of its own (see its message); NCCL was "
                              "not started";
    if (!all_refused) fail(me, "some ranks started the backend, others refused it");
    if (gpus == 0 && refused != no_device) fail(me, "got '" + refused + "', expected '" + no_device + "'");
    if (gpus > 0 && gpus >= node_size) fail(me, "refused with " + std::to_string(gpus) + " GPUs: " + refused);
    if (gpus > 0 && refused != other && refused.find("of this node would share the CUDA device at PCI") ==
                                            std::string::npos)
      fail(me, "unexpected refusal: " + refused);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
      std::printf("nccl backend over MPI, %d ranks, %d CUDA devices seen by rank 0: refused on every rank as expected "
                  "(%d failures): %s\n",
                  size, gpus, all, refused.c_str());
    MPI_Finalize();
    return all == 0 ? 0 : 1;
  }

  {
    totals tot;
    const double t0 = MPI_Wtime();
    try {
      redist::nccl_backend& b = *backend;
      const auto ws = workloads_for(b.devices());
      for (std::size_t i = 0; i < count; ++i) {
        std::mt19937_64 rng(0x6e63636c + i);
        const auto pt = redist::testing::random_problem(rng, ws[i % ws.size()]);
        if (i % 2 == 0) run_problem<float>(b, pt, tot);
        else run_problem<double>(b, pt, tot);
        if (i % 3 == 0) run_problem<float>(b, pt, tot, true);
      }
      // Uneven dimensions: one exchange (after an allreduce). One rank (one GPU) has none.
      for (std::size_t i = 0; i < uneven_count; ++i) {
        std::mt19937_64 rng(0x756e6576 + i);
        run_problem<float>(b, redist::testing::random_uneven_problem(rng, ws[i % ws.size()]), tot);
      }
      placed_cases(b, tot);  // meshes on device sets: ranks that hold no tile on one side
      reshard_cases(b, std::max<std::size_t>(count / 2, 2), tot);  // many arrays: message rounds
      if (b.devices() > 1) mismatch_case(b);  // one rank cannot disagree with itself
    } catch (const std::exception& e) {
      fail(me, std::string("exception: ") + e.what());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    backend.reset();  // before MPI_Finalize
    const double seconds = MPI_Wtime() - t0;
    std::uint64_t sums[4] = {tot.elements, tot.mismatches, static_cast<std::uint64_t>(failures), tot.problems};
    std::uint64_t all[4] = {};
    MPI_Allreduce(sums, all, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
      std::printf("nccl backend over MPI, %d ranks: %llu problems, %llu elements verified over all ranks, %llu wrong, "
                  "%llu failures; steps: %llu allgather, %llu alltoall, %llu dynslice, %llu allpermute, %llu allreduce, "
                  "%llu reducescatter, %llu exchange; %llu reshards of many arrays (%llu casting) in %llu messages "
                  "(%llu pipelined); %.2f s\n",
                  size, static_cast<unsigned long long>(all[3] / static_cast<std::uint64_t>(size)),
                  static_cast<unsigned long long>(all[0]), static_cast<unsigned long long>(all[1]),
                  static_cast<unsigned long long>(all[2]), static_cast<unsigned long long>(tot.ops[0]),
                  static_cast<unsigned long long>(tot.ops[1]), static_cast<unsigned long long>(tot.ops[2]),
                  static_cast<unsigned long long>(tot.ops[3]), static_cast<unsigned long long>(tot.ops[4]),
                  static_cast<unsigned long long>(tot.ops[5]), static_cast<unsigned long long>(tot.ops[6]),
                  static_cast<unsigned long long>(tot.reshards), static_cast<unsigned long long>(tot.casts),
                  static_cast<unsigned long long>(tot.messages),
                  static_cast<unsigned long long>(tot.pipelined), seconds);
    rc = all[1] == 0 && all[2] == 0 && all[3] >= (count + uneven_count + 3) * static_cast<std::uint64_t>(size) ? 0 : 1;
  }
  MPI_Finalize();
  return rc;
}

}  // namespace nccl_mpi_test

#if !defined(REDIST_NCCL_EMULATED_TESTS)
int main(int argc, char** argv) { return nccl_mpi_test::run(argc, argv); }
#endif
