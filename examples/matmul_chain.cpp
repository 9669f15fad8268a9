// examples/matmul_chain.cpp -- seed 000 Listing 3: a partitioned matmul chain.
//
//   mesh {devs: 32}
//   x : [32, 1024]            replicated
//   w1: [1024, 64{devs}2048]  column-sharded
//   y  = x @ w1  : [32, 64{devs}2048]     (local on every device)
//   z  = redistribute y as [1{devs}32, 2048]
//   w2: [2048, 256]           replicated
//   w  = z @ w2  : [1{devs}32, 256]       (local on every device)
//
// The types are template arguments: the compiler finds the redistribution plan of least
// predicted time (the built-in profile, for doubles: what redist::redistribute runs), and the
// static_asserts below check it (no all-gather, within the memory bound) and the paper's
// fewest-bytes plan (objective::bytes: one all-to-all).
// Every device's result is checked against the unpartitioned product.
//   matmul_chain                          32 simulated devices, host backend
//   matmul_chain --devices 8              the same chain scaled to 8 devices
//   mpirun -np 8 matmul_chain --backend mpi --devices 8
#include <cstdint>
#include <vector>

#include <fmt/core.h>

#include "example_support.hpp"
#include "redist/static/plan.hpp"
#include "redist/static/redistribute.hpp"

namespace {

template <redist::fixed_string Mesh, redist::fixed_string W1, redist::fixed_string Y, redist::fixed_string Z,
          redist::fixed_string Out>
struct chain {
  using M = redist::mesh<Mesh>;
  using X = redist::dtype<M, "[32, 1024]">;
  using W1t = redist::dtype<M, W1>;
  using Yt = redist::dtype<M, Y>;
  using Zt = redist::dtype<M, Z>;
  using W2t = redist::dtype<M, "[2048, 256]">;
  using Outt = redist::dtype<M, Out>;

  // The plan redist::redistribute<Zt> runs for tiles of double (plan_options: by time).
  static constexpr auto plan =
      redist::plan_for<Yt, Zt, redist::plan_budget{}, redist::plan_options{redist::objective::time, sizeof(double)}>();
  static_assert(plan.memory_efficient(), "the redistribution stays within max(localsize(y), localsize(z))");
  static_assert(plan.count(redist::op::allgather) == 0, "no all-gather: nothing is ever replicated");
  static constexpr auto paper =
      redist::plan_for<Yt, Zt, redist::plan_budget{}, redist::plan_options{redist::objective::bytes}>();
  static_assert(paper.count(redist::op::alltoall) == 1 && paper.steps() == 1,
                "Listing 3 is one all-to-all under the paper's cost (Fig. 11 bytes)");
};
using listing3 = chain<"{devs: 32}", "[1024, 64{devs}2048]", "[32, 64{devs}2048]", "[1{devs}32, 2048]", "[1{devs}32, 256]">;
using listing3_8 = chain<"{devs: 8}", "[1024, 256{devs}2048]", "[32, 256{devs}2048]", "[4{devs}32, 2048]", "[4{devs}32, 256]">;

// The global inputs, as small integers so that every sum is exact in double.
double x_at(std::uint64_t i, std::uint64_t k) { return static_cast<double>((i * 7 + k * 3) % 11) - 5; }
double w1_at(std::uint64_t k, std::uint64_t j) { return static_cast<double>((k * 5 + j) % 7) - 3; }
double w2_at(std::uint64_t j, std::uint64_t l) { return static_cast<double>((j + 2 * l) % 5) - 2; }

template <class C, class Backend>
int run(Backend& comm, bool print) {
  using T = double;
  const auto local = comm.local_ranks();
  // y = x @ w1 on every device this process drives.
  std::vector<T> x(32 * 1024), w2(2048 * 256);
  for (std::uint64_t i = 0; i < 32; ++i)
    for (std::uint64_t k = 0; k < 1024; ++k) x[i * 1024 + k] = x_at(i, k);
  for (std::uint64_t j = 0; j < 2048; ++j)
    for (std::uint64_t l = 0; l < 256; ++l) w2[j * 256 + l] = w2_at(j, l);
  std::vector<redist::darray<T, typename C::Yt>> ys;
  for (redist::rank_t r : local) {
    redist::darray<T, typename C::W1t> w1(r);
    const std::uint64_t cols = w1.local_extent(1), c0 = w1.offset(1);
    for (std::uint64_t k = 0; k < 1024; ++k)
      for (std::uint64_t j = 0; j < cols; ++j) w1.data()[k * cols + j] = w1_at(k, c0 + j);
    ys.emplace_back(r);
    example::matmul(x.data(), w1.data(), ys.back().data(), 32, 1024, cols);
  }
  // z = redistribute y as [.{devs}32, 2048].
  const auto zs = redist::redistribute<typename C::Zt>(comm, std::span<const redist::darray<T, typename C::Yt>>(ys));
  // w = z @ w2, checked against the unpartitioned (x @ w1) @ w2.
  std::vector<T> w1_full(1024 * 2048), y_full(32 * 2048), ref(32 * 256);
  for (std::uint64_t k = 0; k < 1024; ++k)
    for (std::uint64_t j = 0; j < 2048; ++j) w1_full[k * 2048 + j] = w1_at(k, j);
  example::matmul(x.data(), w1_full.data(), y_full.data(), 32, 1024, 2048);
  example::matmul(y_full.data(), w2.data(), ref.data(), 32, 2048, 256);
  std::uint64_t wrong = 0, checked = 0;
  for (const auto& z : zs) {
    redist::darray<T, typename C::Outt> w(z.device());
    const std::uint64_t rows = z.local_extent(0), r0 = z.offset(0);
    example::matmul(z.data(), w2.data(), w.data(), rows, 2048, 256);
    for (std::uint64_t i = 0; i < rows; ++i)
      for (std::uint64_t l = 0; l < 256; ++l, ++checked) wrong += w.data()[i * 256 + l] != ref[(r0 + i) * 256 + l];
  }
  if (print) {
    const redist::program p = C::plan.to_program(sizeof(T));
    fmt::print("matmul chain on {}: y = x @ w1, z = redistribute y, w = z @ w2\n", C::M::value);
    fmt::print("  redistribute {} -> {}: {} collective(s), {} bytes per device, peak {} elements (bound {})\n",
               redist::typed{p.m, p.source}, redist::typed{p.m, p.target}, p.steps.size(), p.cost_bytes(),
               p.peak_local_elements, p.memory_bound_elements);
    example::print_collectives(p);
  }
  if (print || wrong != 0)  // every rank checks its own devices; the exit status is the worst
    fmt::print("  device(s) {}..{}: {} of {} result elements match the unpartitioned product\n", local.front(),
               local.back(), checked - wrong, checked);
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t devices = example::option(argc, argv, "--devices", 32);
  if (devices == 32)
    return example::with_backend(argc, argv, 32, [](auto& comm, bool print) { return run<listing3>(comm, print); });
  if (devices == 8)
    return example::with_backend(argc, argv, 8, [](auto& comm, bool print) { return run<listing3_8>(comm, print); });
  fmt::print(stderr, "error: --devices must be 32 (Listing 3) or 8 (its scaled variant)\n");
  return 2;
}
