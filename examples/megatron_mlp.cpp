// examples/megatron_mlp.cpp -- seed 003 Sec. 2.3: the matmul chain (x @ w1) @ w2 on the
// mesh {B: 4, M: 2} under four strategies, written as distributed types and run with the
// run-time API (types as values, Boost.Graph search):
//   BP           batch parallelism: x split over B, parameters replicated
//   BP+MP        Megatron: w1 column-, w2 row-sharded over M; x @ w1 @ w2 leaves partial
//                sums over M, resolved by one all-reduce
//   BP+MP+Z3     ZeRO-3/FSDP on top: parameters stored sharded over B too, all-gathered
//                before use (one all-gather per parameter)
//   BP+MP+Z3+ES  activations also sharded over M: an all-gather of x before use, and the
//                all-reduce becomes a reduce-scatter
// For each strategy the collectives are counted and checked against what the paper's
// reasoning predicts, and every device's output against the unpartitioned product.
//   megatron_mlp                         8 simulated devices, host backend
//   mpirun -np 8 megatron_mlp --backend mpi
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "example_support.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/runtime/executor.hpp"

namespace {

struct strategy {
  const char* name;
  const char* x_store;
  const char* w1_store;
  const char* w2_store;
  const char* x_use;   ///< what the first matmul needs
  const char* w1_use;
  const char* w2_use;
  const char* x1;      ///< x @ w1, computed locally
  const char* x2;      ///< x1 @ w2, computed locally (partial sums over M when w2 is row-sharded)
  const char* out;
  std::map<redist::op, int> expected;  ///< collectives the paper's reasoning predicts
};

const std::vector<strategy> strategies = {
    {"BP", "[64{B}256, 8]", "[8, 16]", "[16, 8]", "[64{B}256, 8]", "[8, 16]", "[16, 8]", "[64{B}256, 16]",
     "[64{B}256, 8]", "[64{B}256, 8]", {}},
    {"BP+MP", "[64{B}256, 8]", "[8, 8{M}16]", "[8{M}16, 8]", "[64{B}256, 8]", "[8, 8{M}16]", "[8{M}16, 8]",
     "[64{B}256, 8{M}16]", "[64{B}256, 8] sum{M}", "[64{B}256, 8]", {{redist::op::allreduce, 1}}},
    {"BP+MP+Z3", "[64{B}256, 8]", "[2{B}8, 8{M}16]", "[8{M}16, 2{B}8]", "[64{B}256, 8]", "[8, 8{M}16]",
     "[8{M}16, 8]", "[64{B}256, 8{M}16]", "[64{B}256, 8] sum{M}", "[64{B}256, 8]",
     {{redist::op::allgather, 2}, {redist::op::allreduce, 1}}},
    {"BP+MP+Z3+ES", "[64{B}256, 4{M}8]", "[2{B}8, 8{M}16]", "[8{M}16, 2{B}8]", "[64{B}256, 8]", "[8, 8{M}16]",
     "[8{M}16, 8]", "[64{B}256, 8{M}16]", "[64{B}256, 8] sum{M}", "[64{B}256, 4{M}8]",
     {{redist::op::allgather, 3}, {redist::op::reducescatter, 1}}},
};

// Global inputs: small integers, so every sum is exact.
double x_at(std::uint64_t i, std::uint64_t k) { return static_cast<double>((3 * i + k) % 7) - 3; }
double w1_at(std::uint64_t k, std::uint64_t j) { return static_cast<double>((k + 5 * j) % 5) - 2; }
double w2_at(std::uint64_t j, std::uint64_t l) { return static_cast<double>((2 * j + l) % 3) - 1; }

using tiles = std::vector<redist::darray<double>>;

/// The tiles this process drives of an array of type `t`, filled from f(i, j).
template <class F, class Backend>
tiles make(const Backend& comm, const redist::device_mesh& m, const redist::dist_type& t, F f) {
  tiles v;
  for (redist::rank_t r : comm.local_ranks()) {
    v.emplace_back(m, t, r);
    const std::uint64_t cols = t.dims[1].global;
    redist::for_each_global(v.back(), [&](std::uint64_t g, double& x) { x = f(g / cols, g % cols); });
  }
  return v;
}

template <class Backend>
int run(Backend& comm, bool print) {
  const redist::device_mesh m = redist::parse_mesh("{B: 4, M: 2}");
  auto type = [&](const char* s) { return redist::parse_type(m, s); };
  // The unpartitioned reference.
  std::vector<double> x(256 * 8), w1(8 * 16), w2(16 * 8), x1(256 * 16), ref(256 * 8);
  for (std::uint64_t i = 0; i < 256; ++i)
    for (std::uint64_t k = 0; k < 8; ++k) x[i * 8 + k] = x_at(i, k);
  for (std::uint64_t k = 0; k < 8; ++k)
    for (std::uint64_t j = 0; j < 16; ++j) w1[k * 16 + j] = w1_at(k, j);
  for (std::uint64_t j = 0; j < 16; ++j)
    for (std::uint64_t l = 0; l < 8; ++l) w2[j * 8 + l] = w2_at(j, l);
  example::matmul(x.data(), w1.data(), x1.data(), 256, 8, 16);
  example::matmul(x1.data(), w2.data(), ref.data(), 256, 16, 8);

  int failures = 0;
  for (const strategy& s : strategies) {
    std::map<redist::op, int> counted;
    // Redistribute a stored array to the type its use needs.
    auto reshard = [&](const tiles& in, const char* from, const char* to) {
      const redist::program p = redist::synthesize(m, type(from), type(to), {.element_bytes = sizeof(double)});
      for (const auto& st : p.steps) ++counted[st.kind];
      if (print && !p.steps.empty()) {
        fmt::print("  {} -> {}\n", from, to);
        example::print_collectives(p);
      }
      redist::executor<double, Backend> ex(comm, p);
      return ex.run(std::span<const redist::darray<double>>(in));
    };
    if (print) fmt::print("{}:\n", s.name);
    const tiles xs = reshard(make(comm, m, type(s.x_store), x_at), s.x_store, s.x_use);
    const tiles w1s = reshard(make(comm, m, type(s.w1_store), w1_at), s.w1_store, s.w1_use);
    const tiles w2s = reshard(make(comm, m, type(s.w2_store), w2_at), s.w2_store, s.w2_use);
    tiles x2s;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const redist::rank_t r = xs[i].device();
      redist::darray<double> h(m, type(s.x1), r), o(m, type(s.x2), r);
      example::matmul(xs[i].data(), w1s[i].data(), h.data(), xs[i].local_extent(0), xs[i].local_extent(1),
                      w1s[i].local_extent(1));
      example::matmul(h.data(), w2s[i].data(), o.data(), h.local_extent(0), h.local_extent(1), w2s[i].local_extent(1));
      x2s.push_back(std::move(o));
    }
    const tiles outs = reshard(x2s, s.x2, s.out);
    std::uint64_t wrong = 0, checked = 0;
    for (const auto& o : outs)
      redist::for_each_global(o, [&](std::uint64_t g, const double& v) { wrong += v != ref[g]; ++checked; });
    const bool counts_ok = counted == s.expected;
    if (print) {
      fmt::print("  collectives:");
      for (redist::op o : redist::all_ops)
        if (counted.count(o)) fmt::print(" {} x{}", redist::op_name(o), counted[o]);
      if (counted.empty()) fmt::print(" none");
      fmt::print(" ({})\n", counts_ok ? "as predicted" : "NOT as predicted");
    }
    if (print || wrong != 0)  // every rank checks its own devices; the exit status is the worst
      fmt::print("  {}: {} of {} output elements match the unpartitioned product\n", s.name, checked - wrong, checked);
    failures += wrong != 0 || !counts_ok;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return example::with_backend(argc, argv, 8, [](auto& comm, bool print) { return run(comm, print); });
}
