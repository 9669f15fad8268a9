// benchmarks/reshard_planning.cpp -- planning a whole model state for a large world: the
// weight-sync example's GPT-style state (examples/gpt_state.hpp, L layers of width D) from
// FSDP W/8 x TP 8 to engine replicas of TP 8 holding it all ({dp: W/8, tp: 8}) on the same W
// ranks, for worlds of W ranks. Every rank of an MPI or NCCL job plans the same joint plan
// (lower/reshard.hpp) from the same problem: the whole plan, or its own rank's
// (reshard_options::of_rank: the same plan without the other ranks' pieces); its executor
// then keeps only the pieces its rank sends, receives or keeps
// (runtime/reshard_executor.hpp). Prints, per world: the planning time of both (best of the
// runs, one thread), the plan's pieces and their bytes, and the most pieces (and bytes) one
// rank keeps. `plans`: whole, rank (rank 0's) or both; run one at a time under
// /usr/bin/time for the peak memory of each. `budget`: a per-rank budget in MiB (0: none;
// its rounds then cut pieces into chunks, lower/reshard.hpp).
// Usage: reshard_planning [runs = 3] [layers = 12] [dim = 768] [worlds = 8,32,128,512] [plans = both] [budget = 0]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpt_state.hpp"
#include "redist/lower/reshard.hpp"

namespace {
std::string fmt_seconds(double s) {
  char t[32];
  std::snprintf(t, sizeof t, "%.3f", s);
  return t;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace redist;
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const std::uint64_t layers = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 12;
  const std::uint64_t dim = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 768;
  std::vector<std::uint64_t> worlds = {8, 32, 128, 512};
  if (argc > 4) {
    worlds.clear();
    for (std::string s = argv[4]; !s.empty();) {
      const std::size_t comma = s.find(',');
      worlds.push_back(std::strtoull(s.substr(0, comma).c_str(), nullptr, 10));
      s = comma == std::string::npos ? "" : s.substr(comma + 1);
    }
  }
  const std::string plans = argc > 5 ? argv[5] : "both";
  const bool whole = plans != "rank", one = plans != "whole";
  const std::uint64_t budget = (argc > 6 ? std::strtoull(argv[6], nullptr, 10) : 0) << 20;
  try {
    std::printf("# planning a GPT-style state (%llu layers of width %llu) from FSDP W/8 x TP 8 to replicas of TP 8, "
                "best of %d%s\n\n",
                static_cast<unsigned long long>(layers), static_cast<unsigned long long>(dim), runs,
                budget ? (", a budget of " + std::to_string(budget >> 20) + " MiB per rank").c_str() : "");
    std::printf("| W | arrays | MiB of f32 | whole plan s | rank 0's plan s | whole / rank | pieces | plan MiB of pieces | "
                "most pieces a rank keeps | its MiB | rounds | received / bound |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const std::uint64_t W : worlds) {
      if (W < 8 || W % 8 != 0) throw redist_error(errc::bad_size, "a world of " + std::to_string(W) + " ranks is not 8k");
      const std::string n = std::to_string(W / 8);
      const reshard_problem pr = example::gpt_state(layers, dim, "{dp: " + n + ", tp: 8}", element_type::f32, 50257, 1024,
                                                    "{fsdp: " + n + ", tp: 8}", W);
      double best = 0, best_rank = 0;
      reshard_plan p, mine;
      auto time = [&](reshard_plan& into, const reshard_options& o) {
        double b = 1e30;
        for (int r = 0; r < runs; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          into = plan_reshard(pr, o);
          b = std::min(b, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return b;
      };
      if (one) best_rank = time(mine, {.budget_bytes = budget, .of_rank = 0});
      if (whole) best = time(p, {.budget_bytes = budget});
      if (!whole) p = std::move(mine);  // the counts below are the whole plan's; the pieces rank 0's
      std::uint64_t pieces = p.local_count, bytes = 0, received = 0, bound = 0;
      std::vector<std::uint64_t> per_rank(W, 0);
      auto count = [&](const reshard_piece& pc) {
        ++per_rank[pc.from];
        if (pc.to != pc.from) ++per_rank[pc.to];
      };
      for (const reshard_piece& pc : p.local) count(pc);
      for (const reshard_round& r : p.rounds) {
        pieces += r.count;
        for (const reshard_piece& pc : r.pieces) count(pc);
      }
      for (const reshard_array& a : pr.arrays) bytes += a.bytes();
      for (std::uint64_t r = 0; r < W; ++r) {
        received = std::max(received, p.received_bytes[r]);
        bound = std::max(bound, p.lower_bound_bytes[r]);
      }
      const std::uint64_t most = *std::max_element(per_rank.begin(), per_rank.end());
      const double mib = 1024.0 * 1024.0;
      const auto secs = [](bool ran, double s) { return ran ? fmt_seconds(s) : std::string("-"); };
      std::printf("| %llu | %zu | %.0f | %s | %s | %s | %llu | %.1f | %llu | %.2f | %zu | %.3f |\n",
                  static_cast<unsigned long long>(W), pr.arrays.size(), static_cast<double>(bytes) / mib,
                  secs(whole, best).c_str(), secs(one, best_rank).c_str(),
                  whole && one ? (fmt_seconds(best / best_rank) + "x").c_str() : "-",
                  static_cast<unsigned long long>(pieces),
                  static_cast<double>(pieces * sizeof(reshard_piece)) / mib, static_cast<unsigned long long>(most),
                  static_cast<double>(most * sizeof(reshard_piece)) / mib, p.rounds.size(),
                  bound ? static_cast<double>(received) / static_cast<double>(bound) : 1.0);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reshard_planning: %s\n", e.what());
    return 1;
  }
  return 0;
}
