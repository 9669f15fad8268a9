// benchmarks/reshard.cpp -- many arrays at once (issue 26) on the MPI backend, 8 ranks.
//
// Part 1, a model's state: the weight-sync example's GPT-style state (examples/gpt_state.hpp)
// scaled to L layers of width D (default 13 x 512: 160 arrays, about 256 MiB of f32), from
// FSDP 4 x TP 2 to TP 8 on the same ranks and to TP 4 on the other half; with --nodes, also
// from HSDP {dp: 2, fsdp: 2, tp: 2} (each node a replica) to TP 8, where a last system runs
// the joint plan with the replicas taking turns whatever the node (planned without the link,
// as before senders by node, redist/exchange.hpp). Systems:
//   joint           plan_reshard's joint plan, no budget (lower/reshard.hpp), its messages
//                   packed and in place (struct datatypes)
//   joint/budget    the same, packed, within a budget of 1/8 of the largest array per rank
//   joint/budget, pipelined  the same budget, rounds two at a time (reshard_pipeline::on:
//                   rounds of half the budget, round k + 1 packed while round k flies)
//   copy floor      not a redistribution: every rank writes its target tiles once with
//                   memcpy from one buffer beside them, at once on all ranks; a reshard
//                   writes every target byte at least once (its data unchecked)
//   per array       one redist call per array, in sequence (each array's own plan)
//   gather+slice    per array, what frameworks do today: every rank all-gathers the whole
//                   array (MPI_Allgatherv of each distinct source box from its first holder)
//                   and slices its target box out of it
//   ..., single copy off  joint in place and per array with mpi_options::exchange_single_copy
//                   off (MPI datatypes between the tiles, as before single copy)
//   pdgemr2d per array  where ScaLAPACK is built in (baselines/scalapack.hpp): psgemr2d /
//                   pdgemr2d per array where it applies (source and target block
//                   distributions without replication: the weights, the embedding, the
//                   column-parallel biases), one redist call for each of the others, in sequence
// Part 2, one array: the 2-D grid problems of float64 (4096 x 4096 and 8192 x 4096) between
// {x: 2, y: 4}, {x: 4, y: 2} and {x: 8}: the executor's exchange in place by MPI_Alltoallw of
// subarray datatypes (the default before single copy), in place in a single copy
// (mpi_options::exchange_single_copy, the default), packed (MPI_Alltoallv), and the message
// rounds of the reshard executor, packed (receives first, packed per peer, unpacked on
// arrival) and in place (datatypes of the pieces, or single copy within the node), and
// ScaLAPACK's pdgemr2d where it is built in.
// Part 3, gradients: FSDP 4 x TP 2 weight gradients pending over fsdp, reduce-scattered to
// their shards, and norms all-reduced (L layers of width D); then the same under HSDP (DDP 2
// x FSDP 2 x TP 2, pending over ddp and fsdp: two collectives per weight): the joint plan,
// whose own programs run fused step by step (lower/reshard.hpp), against the same fused as
// until 2026-11-28 (arrays capped at 128 KiB of buffers, sets up to 32 MiB), against one
// call per array, and the joint plan within a budget of 1/8 of the largest array (own
// programs that would hold more run chunk by chunk).
// Part 4, casts: the state of part 1 from the trainer's f32 to an engine's bf16
// (reshard_array::target_dtype): the joint plan converting on the way (bf16 on the wire),
// against the joint plan in f32 followed by converting every target tile into the engine's
// bf16 weights (cast_elements; the engine then holds an f32 copy beside them), and the joint
// plan in f32 with no cast.
// Part 5, bf16 gradients: part 3's FSDP gradients in bf16, reduce-scattered in bf16
// (runtime/half.hpp, MPI user-defined operations), against converting them to f32, reducing
// in f32 and converting the shards back (what a caller did while redist refused bf16
// reductions), and against the same gradients in f32.
// Part 6, mixed precision: part 3's FSDP gradients in bf16 reduce-scattered in f32 into f32
// shards, as PyTorch FSDP's MixedPrecision(reduce_dtype=f32) does (reshard_array::target_dtype
// on pending values: converted as they are packed into one f32 call), against converting every
// bf16 gradient into an f32 copy and resharding those (what a caller did while redist refused
// casts of pending values), and against bf16 reduced in bf16.
// Every system runs the same data, interleaved run by run after a warm-up; a run's time is
// the slowest rank's (MPI_Wtime between barriers); output tiles are filled with 0xff before
// every run and every element of every target tile is checked after each system's last run.
// Prints markdown tables (ms, best and median, max/min over the runs) and the ratios of the
// issue's goals; asserts nothing about time, exits 1 on wrong data.
// Usage: mpirun --oversubscribe -np 8 reshard_bench [runs] [layers] [dim] [vocab] [parts]
//        (default 7 13 512 50257 123456; parts 1, 3, 4, 5 and 6 run where layers > 0, part 2 where
//        dim >= 512; `parts` lists the parts to run) [--nodes R --link-gbps G]
// With --nodes, part 1 reads the world as nodes of R consecutive ranks joined by links of G
// Gbit/s each way: its plans count the link (time_profile::node_ranks, node_per_byte) and
// single copy stays inside a node (mpi_options::node_size); benchmarks/emulated_nodes.sh runs
// it with the links emulated.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "gpt_state.hpp"
#include "redist/backends/mpi.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/between.hpp"
#include "redist/lower/reshard.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/reshard_executor.hpp"
#include "redist/runtime/reshard_tiles.hpp"
#include "redist/runtime/verify.hpp"
#if defined(REDIST_WITH_SCALAPACK)
#include "baselines/scalapack.hpp"
#endif

namespace {

using namespace redist;

int me = 0;
bool wrong = false;
redist::time_profile planning = redist::builtin_profile;  // part 1's plans (--nodes: with the link term)

/// Seconds of f() on the slowest rank.
double timed(const std::function<void()>& f) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  f();
  double t = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

struct series {
  std::string name;
  std::vector<double> t;
  [[nodiscard]] double best() const { return *std::min_element(t.begin(), t.end()); }
  [[nodiscard]] double median() const {
    std::vector<double> v = t;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
  [[nodiscard]] double spread() const { return *std::max_element(t.begin(), t.end()) / best(); }
};

/// Fills t's target tiles with 0xff (before every run: the check then sees what the run wrote).
std::function<void()> clear_targets(reshard_tiles& t) {
  return [&t] {
    for (auto& o : t.out) std::memset(o.data(), 0xff, o.size());
  };
}

/// Run each system `runs` times, interleaved (after one warm-up each); check after its last run.
void interleave(std::vector<series>& s, const std::vector<std::function<void()>>& run,
                const std::vector<std::function<void()>>& clear, const std::vector<std::function<bool()>>& check,
                int runs) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    clear[i]();
    run[i]();
  }
  for (int k = 0; k < runs; ++k)
    for (std::size_t i = 0; i < s.size(); ++i) {
      clear[i]();
      s[i].t.push_back(timed(run[i]));
      if (k + 1 < runs) continue;
      int bad = check[i]() ? 0 : 1;
      MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (bad) {
        wrong = true;
        if (me == 0) std::printf("WRONG DATA: %s\n", s[i].name.c_str());
      }
    }
}

/// Gather then slice, per array: every distinct source box from its first holder, all
/// gathered on every rank (MPI_Allgatherv), then each rank copies its target box.
struct gather_slice {
  struct array_plan {
    std::vector<box> src, dst;   // per world rank
    std::vector<int> counts, displs;
    std::vector<box> boxes;      // per rank: the box it contributes (empty: none)
    std::uint64_t total = 0, e = 0;
  };
  std::vector<array_plan> arrays;
  host_vector<std::byte> full, send;  // on huge pages, as the tiles (runtime/huge_pages.hpp)
  std::vector<extents> src_ext, dst_ext;

  explicit gather_slice(const reshard_plan& p) {
    const std::uint64_t W = p.world;
    std::uint64_t most = 0, most_send = 0;
    for (const reshard_array& a : p.arrays) {
      array_plan ap;
      ap.e = a.element_bytes();
      ap.src = layout_boxes(a.source, W);
      ap.dst = layout_boxes(a.target, W);
      ap.counts.assign(W, 0);
      ap.displs.assign(W, 0);
      ap.boxes.assign(W, box{});
      std::map<box, int> first;
      for (std::uint64_t r = 0; r < W; ++r)
        if (!ap.src[r].empty() && first.emplace(ap.src[r], static_cast<int>(r)).second) {
          ap.boxes[r] = ap.src[r];
          ap.counts[r] = static_cast<int>(ap.src[r].size() * ap.e);
        }
      for (std::uint64_t r = 0; r < W; ++r) {
        ap.displs[r] = static_cast<int>(ap.total);
        ap.total += static_cast<std::uint64_t>(ap.counts[r]);
      }
      most = std::max(most, ap.total);
      most_send = std::max(most_send, ap.src[static_cast<std::size_t>(me)].size() * ap.e);
      arrays.push_back(std::move(ap));
      src_ext.push_back(detail::layout_extents(a.source));
      dst_ext.push_back(detail::layout_extents(a.target));
    }
    full.resize(most);
    send.resize(most_send);
  }

  void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out) {
    const auto r = static_cast<std::size_t>(me);
    for (std::size_t a = 0; a < arrays.size(); ++a) {
      const array_plan& ap = arrays[a];
      if (ap.counts[r] > 0)
        detail::copy_region(in[a].data(), detail::piece_region(ap.boxes[r], ap.src[r], src_ext[a].span(), ap.e),
                            send.data(), detail::packed_region(ap.boxes[r], ap.e));
      MPI_Allgatherv(send.data(), ap.counts[r], MPI_BYTE, full.data(), ap.counts.data(), ap.displs.data(), MPI_BYTE,
                     MPI_COMM_WORLD);
      if (ap.dst[r].empty()) continue;
      for (std::size_t k = 0; k < ap.boxes.size(); ++k) {
        if (ap.counts[k] == 0) continue;
        const box piece = intersect(ap.boxes[k], ap.dst[r]);
        if (piece.empty()) continue;
        const std::array<std::uint64_t, max_dims> ext = [&] {
          std::array<std::uint64_t, max_dims> x{};
          for (int d = 0; d < piece.rank; ++d) x[static_cast<std::size_t>(d)] = ap.boxes[k].extent(d);
          return x;
        }();
        detail::copy_region(full.data() + ap.displs[k],
                            detail::piece_region(piece, ap.boxes[k],
                                                 std::span<const std::uint64_t>(ext.data(), static_cast<std::size_t>(piece.rank)), ap.e),
                            out[a].data(), detail::piece_region(piece, ap.dst[r], dst_ext[a].span(), ap.e));
      }
    }
  }
};

#if defined(REDIST_WITH_SCALAPACK)
/// ScaLAPACK per array where it applies (bench::scalapack_grid_of at both ends, f32 or f64),
/// one redist call (each array's own plan) for every other array; in sequence.
struct scalapack_per_array {
  std::vector<std::function<void(const std::byte*, std::byte*)>> gemr2d;
  std::vector<std::size_t> at;  ///< the array of each gemr2d
  std::vector<std::size_t> rest_at;
  std::unique_ptr<reshard_executor<mpi_backend>> rest;  // the others' own plans; null: none
  std::uint64_t bytes = 0;                               // what ScaLAPACK moves

  scalapack_per_array(mpi_backend& mpi, const reshard_problem& pr) {
    reshard_problem rest_problem;
    rest_problem.world = pr.world;
    for (std::size_t a = 0; a < pr.arrays.size(); ++a) {
      const reshard_array& x = pr.arrays[a];
      const auto* f = std::get_if<placed_layout>(&x.source);
      const auto* t = std::get_if<placed_layout>(&x.target);
      const bool fits = f && t && bench::scalapack_grid_of(f->pm, f->type) && bench::scalapack_grid_of(t->pm, t->type);
      if (fits && (x.dtype == element_type::f32 || x.dtype == element_type::f64)) {
        if (x.dtype == element_type::f32)
          add<float>(*f, *t);
        else
          add<double>(*f, *t);
        at.push_back(a);
        bytes += x.bytes();
      } else {
        rest_at.push_back(a);
        rest_problem.arrays.push_back(x);
      }
    }
    if (!rest_at.empty())
      rest = std::make_unique<reshard_executor<mpi_backend>>(mpi, plan_reshard(rest_problem, {.joint = false}));
  }
  template <class T>
  void add(const placed_layout& f, const placed_layout& t) {
    auto r = std::make_shared<bench::scalapack_redistribution<T>>(f, t);
    gemr2d.push_back([r](const std::byte* in, std::byte* out) {
      r->run(reinterpret_cast<const T*>(in), reinterpret_cast<T*>(out));
    });
  }
  void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out) {
    for (std::size_t k = 0; k < gemr2d.size(); ++k) gemr2d[k](in[at[k]].data(), out[at[k]].data());
    if (!rest) return;
    std::vector<std::span<const std::byte>> i;
    std::vector<std::span<std::byte>> o;
    for (std::size_t a : rest_at) {
      i.push_back(in[a]);
      o.push_back(out[a]);
    }
    rest->run(i, o);
  }
};
#endif

std::string mib(std::uint64_t b) { return std::to_string(b / (1024 * 1024)) + "." + std::to_string(b % (1024 * 1024) * 10 / (1024 * 1024)); }

/// Bytes a joint plan's pieces carry between nodes (of planning.node_ranks ranks).
std::uint64_t link_bytes(const reshard_plan& p) {
  const std::uint64_t N = planning.node_ranks;
  std::uint64_t n = 0;
  for (const reshard_round& r : p.rounds)
    for (const reshard_piece& pc : r.pieces) n += pc.from / N != pc.to / N ? p.piece_bytes(pc) : 0;
  return n;
}

void model_state(mpi_backend& mpi, mpi_backend& plain, int runs, std::uint64_t layers, std::uint64_t dim, std::uint64_t vocab) {
  if (me == 0)
    std::printf("## A model's state: %llu layers of width %llu, vocabulary %llu (gpt_state), 8 ranks\n\n"
                "| target | arrays | MiB | system | rounds | messages | best ms | median ms | max/min | received / lower bound | message buffer / rank |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|\n",
                static_cast<unsigned long long>(layers), static_cast<unsigned long long>(dim),
                static_cast<unsigned long long>(vocab));
  // FSDP 4 x TP 2 to TP 8 and to TP 4 on the other half; with ranks on two nodes, also HSDP
  // (dp over the nodes: each node a full replica, sharded over fsdp x tp) to TP 8.
  struct state_case {
    const char* train;
    const char* target;
  };
  std::vector<state_case> cases = {{"{fsdp: 4, tp: 2}", "{tp: 8}"}, {"{fsdp: 4, tp: 2}", "{tp: 4} @ [4, 5, 6, 7]"}};
  if (planning.spans_nodes(8)) cases.push_back({"{dp: 2, fsdp: 2, tp: 2}", "{tp: 8}"});
  for (const state_case& sc : cases) {
    const bool fsdp = std::string(sc.train) == cases.front().train;
    const std::string label = fsdp ? sc.target : "HSDP " + std::string(sc.train) + " -> " + sc.target;
    const char* target = label.c_str();
    const reshard_problem pr = example::gpt_state(layers, dim, sc.target, element_type::f32, vocab, 1024, sc.train);
    std::uint64_t largest = 0, bytes = 0;
    for (const reshard_array& a : pr.arrays) {
      largest = std::max(largest, a.bytes());
      bytes += a.bytes();
    }
    const synth_options so{.time_model = &planning};
    const reshard_plan joint = plan_reshard(pr, {.synth = so});
    const reshard_plan budget = plan_reshard(pr, {.budget_bytes = largest / 8, .synth = so});
    const reshard_plan pipelined =
        plan_reshard(pr, {.budget_bytes = largest / 8, .synth = so, .pipeline = reshard_pipeline::on});
    const reshard_plan separate = plan_reshard(pr, {.synth = so, .joint = false});
    reshard_executor<mpi_backend> ej(mpi, joint, reshard_messages::packed), ei(mpi, joint, reshard_messages::in_place),
        eb(mpi, budget, reshard_messages::packed), es(mpi, separate), pi(plain, joint, reshard_messages::in_place),
        ps(plain, separate), ep(mpi, pipelined, reshard_messages::packed);
    reshard_tiles t = make_reshard_tiles(ej);
    fill_reshard_sources(joint, ej.local_ranks(), t);
    gather_slice gs(joint);
    const auto in = t.sources();
    const auto out = t.targets();
    std::vector<series> s = {{"joint (packed)", {}},
                             {"joint (in place)", {}},
                             {"joint/budget (packed)", {}},
                             {"per array", {}},
                             {"gather+slice", {}},
                             {"joint (in place), single copy off", {}},
                             {"per array, single copy off", {}},
                             {"joint/budget, pipelined (packed)", {}},
                             {"copy floor", {}}};
    std::uint64_t target_bytes = 0;
    for (const auto& o : t.out) target_bytes += o.size();
    const host_vector<std::byte> floor_from(target_bytes, std::byte{1});
    auto copy_floor = [&] {
      const std::byte* at = floor_from.data();
      for (const auto& o : out) {
        std::memcpy(o.data(), at, o.size());
        at += o.size();
      }
    };
    std::vector<std::function<void()>> run = {[&] { ej.run(in, out); }, [&] { ei.run(in, out); },
                                              [&] { eb.run(in, out); }, [&] { es.run(in, out); },
                                              [&] { gs.run(in, out); }, [&] { pi.run(in, out); },
                                              [&] { ps.run(in, out); }, [&] { ep.run(in, out); }, copy_floor};
    const std::function<void()> clear = clear_targets(t);
    auto check = [&] { return check_reshard_targets(joint, ej.local_ranks(), t).ok(); };
    std::vector<std::function<bool()>> checks(s.size(), check);
    checks.back() = [] { return true; };  // the copy floor moves no array
    std::vector<const reshard_plan*> plans = {&joint, &joint, &budget, &separate, nullptr, &joint, &separate, &pipelined, nullptr};
    std::vector<std::uint64_t> buffers = {ej.message_bytes(), ei.message_bytes(), eb.message_bytes(), es.bytes_held(),
                                          gs.full.size() + gs.send.size(), pi.message_bytes(), ps.bytes_held(),
                                          ep.message_bytes(), floor_from.size()};
#if defined(REDIST_WITH_SCALAPACK)
    scalapack_per_array sl(mpi, pr);
    s.push_back({"pdgemr2d per array (" + std::to_string(sl.at.size()) + " of " + std::to_string(pr.arrays.size()) +
                     " arrays, " + mib(sl.bytes) + " MiB; the rest one redist call each)",
                 {}});
    run.push_back([&] { sl.run(in, out); });
    checks.push_back(check);
    plans.push_back(nullptr);
    buffers.push_back(sl.rest ? sl.rest->bytes_held() : 0);
#endif
    // HSDP over two nodes: the joint plan with the replicas taking turns whatever the node
    // (planned without the link, as before senders by node), in place.
    const std::size_t turns_at = s.size();
    reshard_plan turns;
    std::unique_ptr<reshard_executor<mpi_backend>> et;
    if (!fsdp) {
      turns = plan_reshard(pr, {});
      et = std::make_unique<reshard_executor<mpi_backend>>(mpi, turns, reshard_messages::in_place);
      s.push_back({"joint (in place), replicas in turn", {}});
      run.push_back([&] { et->run(in, out); });
      checks.push_back(check);
      plans.push_back(&turns);
      buffers.push_back(et->message_bytes());
    }
    interleave(s, run, std::vector<std::function<void()>>(s.size(), clear), checks, runs);
    std::uint64_t buf = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      buf = buffers[i];
      MPI_Allreduce(MPI_IN_PLACE, &buf, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
      if (me != 0) continue;
      std::string rounds = "-", msgs = "-", ratio = "-";
      if (plans[i] && plans[i]->count(reshard_route::joint) > 0) {
        std::uint64_t m = 0, got = 0, bound = 0;
        for (std::size_t k = 0; k < plans[i]->rounds.size(); ++k) m += plans[i]->messages(k);
        for (std::uint64_t r = 0; r < 8; ++r) {
          got += plans[i]->received_bytes[r];
          bound += plans[i]->lower_bound_bytes[r];
        }
        rounds = std::to_string(plans[i]->rounds.size());
        msgs = std::to_string(m);
        char b[32];
        std::snprintf(b, sizeof b, "%.3f", bound ? static_cast<double>(got) / static_cast<double>(bound) : 1.0);
        ratio = b;
      }
      std::printf("| `%s` | %zu | %s | %s | %s | %s | %.1f | %.1f | %.2f | %s | %s MiB |\n", target, pr.arrays.size(),
                  mib(bytes).c_str(), s[i].name.c_str(), rounds.c_str(), msgs.c_str(), s[i].best() * 1e3,
                  s[i].median() * 1e3, s[i].spread(), ratio.c_str(), mib(buf).c_str());
    }
    if (me == 0)
      std::printf("\nmedians, %s: per array / joint (packed) %.2fx, per array / joint (in place) %.2fx, gather+slice / "
                  "joint (packed) %.2fx, joint/budget / joint %.2fx; budget %s MiB; single copy off / on: joint (in "
                  "place) %.2fx, per array %.2fx; per array / joint (in place), both single copy off %.2fx; "
                  "joint/budget pipelined / one round at a time %.2fx (predicted %.2fx); over the copy floor: joint "
                  "(in place) %.2fx, per array %.2fx\n",
                  target, s[3].median() / s[0].median(), s[3].median() / s[1].median(), s[4].median() / s[0].median(),
                  s[2].median() / s[0].median(), mib(largest / 8).c_str(), s[5].median() / s[1].median(),
                  s[6].median() / s[3].median(), s[6].median() / s[5].median(), s[7].median() / s[2].median(),
                  pipelined.joint_seconds / budget.joint_seconds, s[1].median() / s[8].median(),
                  s[3].median() / s[8].median());
    if (me == 0 && turns_at > 9)
      std::printf("pdgemr2d per array / joint (packed) %.2fx, / joint (in place) %.2fx, / per array %.2fx\n",
                  s[9].median() / s[0].median(), s[9].median() / s[1].median(), s[9].median() / s[3].median());
    if (me == 0 && s.size() > turns_at)
      std::printf("replicas in turn / senders by node, joint in place: %.2fx (pieces over the link: %s MiB against %s "
                  "MiB)\n",
                  s[turns_at].median() / s[1].median(), mib(link_bytes(turns)).c_str(), mib(link_bytes(joint)).c_str());
    if (me == 0) std::printf("\n");
  }
}

/// Part 3: gradients of FSDP 4 x TP 2 (every array an own program of one collective) or of
/// HSDP 2 x 2 x TP 2 (weights: two collectives each): the joint plan (own programs fused
/// step by step, lower/reshard.hpp) against one call per array.
reshard_problem gradient_problem(std::uint64_t layers, std::uint64_t dim, bool hsdp, element_type e) {
  const placed_mesh m = parse_placed_mesh(hsdp ? "{ddp: 2, fsdp: 2, tp: 2}" : "{fsdp: 4, tp: 2}");
  const std::string sum = hsdp ? "sum{ddp, fsdp}" : "sum{fsdp}";
  reshard_problem pr;
  pr.world = 8;
  auto add = [&](const std::string& name, const std::string& from, const std::string& to) {
    pr.arrays.push_back({name, e, placed_layout{m, parse_type(m.mesh, from)}, placed_layout{m, parse_type(m.mesh, to)}});
  };
  const std::string D = std::to_string(dim), D3 = std::to_string(3 * dim), D4 = std::to_string(4 * dim);
  for (std::uint64_t l = 0; l < layers; ++l) {
    const std::string h = "h" + std::to_string(l) + ".";
    for (const auto& [name, rows, cols] : {std::tuple{"c_attn", D, D3}, {"attn.c_proj", D, D}, {"c_fc", D, D4},
                                           {"mlp.c_proj", D4, D}})
      add(h + name, "[{tp}" + rows + ", " + cols + "] " + sum, "[{tp}" + rows + ", {fsdp}" + cols + "]");
    for (const char* norm : {"ln_1.w", "ln_1.b", "ln_2.w", "ln_2.b"}) add(h + norm, "[" + D + "] " + sum, "[" + D + "]");
  }
  return pr;
}

void gradients(mpi_backend& mpi, int runs, std::uint64_t layers, std::uint64_t dim, bool hsdp) {
  const reshard_problem pr = gradient_problem(layers, dim, hsdp, element_type::f32);
  std::uint64_t bytes = 0;
  for (const reshard_array& a : pr.arrays) bytes += a.bytes();
  // The joint plan; beside it, the same fused as until 2026-11-28: arrays of at most 128 KiB
  // of buffers per rank, sets of up to 32 MiB whatever their predicted time.
  // And within a budget of 1/8 of the largest array per rank: the arrays whose own program
  // would hold more run chunk by chunk (lower/reshard.hpp, "Own programs under a budget").
  std::uint64_t largest = 0;
  for (const reshard_array& a : pr.arrays) largest = std::max(largest, a.bytes());
  const reshard_plan joint = plan_reshard(pr),
                     before = plan_reshard(pr, {.fuse_array_bytes = std::uint64_t{128} << 10, .fuse_set_calls = 0}),
                     separate = plan_reshard(pr, {.joint = false}), budget = plan_reshard(pr, {.budget_bytes = largest / 8});
  reshard_executor<mpi_backend> ej(mpi, joint), eb(mpi, before), es(mpi, separate), eg(mpi, budget);
  reshard_tiles t = make_reshard_tiles(ej);
  fill_reshard_sources(joint, ej.local_ranks(), t);
  const auto in = t.sources();
  const auto out = t.targets();
  std::vector<series> s = {{"joint (fused)", {}}, {"joint (fused as before)", {}}, {"per array", {}}, {"joint/budget", {}}};
  const std::vector<std::function<void()>> run = {
      [&] { ej.run(in, out); }, [&] { eb.run(in, out); }, [&] { es.run(in, out); }, [&] { eg.run(in, out); }};
  const std::function<void()> clear = clear_targets(t);
  auto check = [&] { return check_reshard_targets(joint, ej.local_ranks(), t).ok(); };
  interleave(s, run, std::vector<std::function<void()>>(s.size(), clear),
             std::vector<std::function<bool()>>(s.size(), check), runs);
  auto arrays = [](const reshard_plan& p) {
    std::size_t n = 0;
    for (const reshard_fused& f : p.fused) n += f.arrays.size();
    return std::to_string(p.fused.size()) + " (" + std::to_string(n) + ")";
  };
  if (me == 0)
    std::printf("\n## Gradients: %llu layers of width %llu, %s, 8 ranks\n\n"
                "| arrays | MiB | fused calls (arrays): joint, before | joint (fused) best / median ms | "
                "joint (fused as before) | per array | per array / joint, before / joint (medians) | "
                "predicted: joint, before, per array ms | held by the fused calls / rank: joint, before "
                "|\n|---|---|---|---|---|---|---|---|---|\n"
                "| %zu | %s | %s, %s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2fx, %.2fx | %.2f, %.2f, %.2f | "
                "%s, %s MiB |\n",
                static_cast<unsigned long long>(layers), static_cast<unsigned long long>(dim),
                hsdp ? "HSDP: DDP 2 x FSDP 2 x TP 2, pending over ddp and fsdp" : "FSDP 4 x TP 2, pending over fsdp",
                pr.arrays.size(), mib(bytes).c_str(), arrays(joint).c_str(), arrays(before).c_str(), s[0].best() * 1e3,
                s[0].median() * 1e3, s[1].best() * 1e3, s[1].median() * 1e3, s[2].best() * 1e3, s[2].median() * 1e3,
                s[2].median() / s[0].median(), s[1].median() / s[0].median(), joint.seconds * 1e3,
                before.seconds * 1e3, separate.seconds * 1e3, mib(ej.bytes_held()).c_str(),
                mib(eb.bytes_held()).c_str());
  std::size_t chunked = 0, chunks = 0;
  for (std::size_t a = 0; a < budget.arrays.size(); ++a)
    if (budget.chunked(a)) {
      ++chunked;
      chunks += budget.chunks[a].count;
    }
  std::uint64_t held = eg.bytes_held(), most = 0;
  MPI_Allreduce(&held, &most, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0)
    std::printf("\nWithin a budget of 1/8 of the largest array (%s MiB per rank): %zu fused calls, %zu arrays chunk "
                "by chunk in %zu chunks; held at most %s MiB on any rank; joint/budget best / median %.2f / %.2f ms, "
                "joint/budget / joint (medians) %.2fx, predicted %.2f ms\n",
                mib(largest / 8).c_str(), budget.fused.size(), chunked, chunks, mib(most).c_str(), s[3].best() * 1e3,
                s[3].median() * 1e3, s[3].median() / s[0].median(), budget.seconds * 1e3);
}

/// Part 5: the FSDP gradients of part 3 in bf16, reduced in bf16 (runtime/half.hpp; MPI
/// through user-defined operations), against what a caller did while redist refused bf16
/// reductions: convert every gradient to f32, reduce in f32, convert the shards back; and
/// against the same gradients in f32.
void half_gradients(mpi_backend& mpi, int runs, std::uint64_t layers, std::uint64_t dim) {
  const reshard_problem ph = gradient_problem(layers, dim, false, element_type::bf16),
                        pf = gradient_problem(layers, dim, false, element_type::f32);
  const reshard_plan h = plan_reshard(ph), f = plan_reshard(pf);
  reshard_executor<mpi_backend> eh(mpi, h), ef(mpi, f);
  reshard_tiles th = make_reshard_tiles(eh), tu = make_reshard_tiles(eh), tf = make_reshard_tiles(ef),
                t32 = make_reshard_tiles(ef);  // bf16; bf16 through f32 (its f32 copies in tf); f32
  fill_reshard_sources(h, eh.local_ranks(), th);
  fill_reshard_sources(f, ef.local_ranks(), t32);
  const auto h_in = th.sources(), f_in = tf.sources(), x_in = t32.sources();
  const auto h_out = th.targets(), f_out = tf.targets(), x_out = t32.targets();
  std::vector<series> s = {{"bf16, reduced in bf16", {}}, {"bf16 through f32 (convert, reduce, convert back)", {}},
                           {"f32", {}}};
  const std::vector<std::function<void()>> run = {
      [&] { eh.run(h_in, h_out); },
      [&] {
        for (std::size_t k = 0; k < th.in.size(); ++k) cast_elements(th.in[k], element_type::bf16, tf.in[k], element_type::f32);
        ef.run(f_in, f_out);
        for (std::size_t k = 0; k < tf.out.size(); ++k) cast_elements(tf.out[k], element_type::f32, tu.out[k], element_type::bf16);
      },
      [&] { ef.run(x_in, x_out); }};
  const std::vector<std::function<bool()>> checks = {
      [&] { return check_reshard_targets(h, eh.local_ranks(), th).ok(); },
      [&] { return check_reshard_targets(h, eh.local_ranks(), tu).ok(); },
      [&] { return check_reshard_targets(f, ef.local_ranks(), t32).ok(); }};
  interleave(s, run, {clear_targets(th), clear_targets(tu), clear_targets(t32)}, checks, runs);
  std::uint64_t bytes = 0;
  for (const reshard_array& a : ph.arrays) bytes += a.bytes();
  if (me == 0) {
    std::printf("\n## bf16 gradients: %llu layers of width %llu, FSDP 4 x TP 2, pending over fsdp, %zu arrays, %s MiB "
                "in bf16, 8 ranks\n\n| system | best ms | median ms | max/min | / bf16 (medians) |\n|---|---|---|---|---|\n",
                static_cast<unsigned long long>(layers), static_cast<unsigned long long>(dim), ph.arrays.size(),
                mib(bytes).c_str());
    for (const series& x : s)
      std::printf("| %s | %.2f | %.2f | %.2f | %.2fx |\n", x.name.c_str(), x.best() * 1e3, x.median() * 1e3, x.spread(),
                  x.median() / s[0].median());
  }
}

/// Part 6: part 3's FSDP gradients in bf16, reduce-scattered in f32 into f32 shards.
void mixed_gradients(mpi_backend& mpi, int runs, std::uint64_t layers, std::uint64_t dim) {
  reshard_problem pm = gradient_problem(layers, dim, false, element_type::bf16);
  for (reshard_array& a : pm.arrays) a.target_dtype = element_type::f32;
  const reshard_problem ph = gradient_problem(layers, dim, false, element_type::bf16),
                        pf = gradient_problem(layers, dim, false, element_type::f32);
  const reshard_plan m = plan_reshard(pm), h = plan_reshard(ph), f = plan_reshard(pf);
  reshard_executor<mpi_backend> em(mpi, m), eh(mpi, h), ef(mpi, f);
  // Mixed in one plan; bf16 converted to f32 copies (tf.in), then the f32 plan; bf16 in bf16.
  reshard_tiles tm = make_reshard_tiles(em), tf = make_reshard_tiles(ef), th = make_reshard_tiles(eh);
  fill_reshard_sources(m, em.local_ranks(), tm);  // bf16 partials, exact in f32
  fill_reshard_sources(h, eh.local_ranks(), th);
  const auto m_in = tm.sources(), f_in = tf.sources(), h_in = th.sources();
  const auto m_out = tm.targets(), f_out = tf.targets(), h_out = th.targets();
  std::vector<series> s = {{"bf16 to f32 shards, reduced in f32 (one plan)", {}},
                           {"bf16 converted to f32 copies, then reduced in f32", {}},
                           {"bf16 reduced in bf16 (bf16 shards)", {}}};
  const std::vector<std::function<void()>> run = {
      [&] { em.run(m_in, m_out); },
      [&] {
        for (std::size_t k = 0; k < tm.in.size(); ++k) cast_elements(tm.in[k], element_type::bf16, tf.in[k], element_type::f32);
        ef.run(f_in, f_out);
      },
      [&] { eh.run(h_in, h_out); }};
  const std::vector<std::function<bool()>> checks = {
      [&] { return check_reshard_targets(m, em.local_ranks(), tm).ok(); },
      [&] { return check_reshard_targets(m, em.local_ranks(), tf).ok(); },  // f32 shards of the same values
      [&] { return check_reshard_targets(h, eh.local_ranks(), th).ok(); }};
  interleave(s, run, {clear_targets(tm), clear_targets(tf), clear_targets(th)}, checks, runs);
  std::uint64_t bytes = 0, held[3] = {em.bytes_held(), ef.bytes_held(), eh.bytes_held()};
  for (const reshard_array& a : pm.arrays) bytes += a.bytes();
  for (const auto& x : tf.in) held[1] += x.size();  // the f32 copies of the gradients
  MPI_Allreduce(MPI_IN_PLACE, held, 3, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0) {
    std::printf("\n## Mixed precision: bf16 gradients reduced in f32 into f32 shards, %llu layers of width %llu, FSDP 4 x "
                "TP 2, %zu arrays, %s MiB in bf16, 8 ranks\n\n| system | best ms | median ms | max/min | / one plan "
                "(medians) | held beyond the tiles (most of a rank) |\n|---|---|---|---|---|---|\n",
                static_cast<unsigned long long>(layers), static_cast<unsigned long long>(dim), pm.arrays.size(),
                mib(bytes).c_str());
    for (std::size_t i = 0; i < s.size(); ++i)
      std::printf("| %s | %.2f | %.2f | %.2f | %.2fx | %s MiB |\n", s[i].name.c_str(), s[i].best() * 1e3,
                  s[i].median() * 1e3, s[i].spread(), s[i].median() / s[0].median(), mib(held[i]).c_str());
  }
}

/// Part 4: the state of part 1 synced from the trainer's f32 to an engine's bf16.
void casts(mpi_backend& mpi, int runs, std::uint64_t layers, std::uint64_t dim, std::uint64_t vocab) {
  if (me == 0)
    std::printf("\n## Casting on the way: %llu layers of width %llu, vocabulary %llu (gpt_state), f32 to bf16, 8 "
                "ranks\n\n| target | system | best ms | median ms | max/min | most one rank receives | engine holds (most "
                "of a rank) |\n|---|---|---|---|---|---|---|\n",
                static_cast<unsigned long long>(layers), static_cast<unsigned long long>(dim),
                static_cast<unsigned long long>(vocab));
  for (const char* target : {"{tp: 8}", "{tp: 4} @ [4, 5, 6, 7]"}) {
    reshard_problem pr = example::gpt_state(layers, dim, target, element_type::f32, vocab);
    const reshard_plan same = plan_reshard(pr);
    for (reshard_array& a : pr.arrays) a.target_dtype = element_type::bf16;
    const reshard_plan cast = plan_reshard(pr);
    reshard_executor<mpi_backend> ec(mpi, cast), es(mpi, same);
    reshard_tiles tc = make_reshard_tiles(ec), ts = make_reshard_tiles(es);
    fill_reshard_sources(cast, ec.local_ranks(), tc);
    fill_reshard_sources(same, es.local_ranks(), ts);
    std::vector<host_vector<std::byte>> bf;  // the engine's bf16 weights, converted from the f32 ones
    for (const auto& o : ts.out) bf.emplace_back(o.size() / 2);
    const auto c_in = tc.sources(), s_in = ts.sources();
    const auto c_out = tc.targets(), s_out = ts.targets();
    std::vector<series> s = {{"joint, cast on the way", {}}, {"joint in f32, then cast on the engine", {}},
                             {"joint in f32 (no cast)", {}}};
    const std::vector<std::function<void()>> run = {
        [&] { ec.run(c_in, c_out); },
        [&] {
          es.run(s_in, s_out);
          for (std::size_t k = 0; k < ts.out.size(); ++k)
            cast_elements(ts.out[k], element_type::f32, bf[k], element_type::bf16);
        },
        [&] { es.run(s_in, s_out); }};
    const std::vector<std::function<void()>> clears = {clear_targets(tc), clear_targets(ts), clear_targets(ts)};
    auto check_same = [&] { return check_reshard_targets(same, es.local_ranks(), ts).ok(); };
    const std::vector<std::function<bool()>> checks = {
        [&] { return check_reshard_targets(cast, ec.local_ranks(), tc).ok(); }, check_same, check_same};
    interleave(s, run, clears, checks, runs);
    auto most = [](const reshard_plan& p) { return *std::max_element(p.received_bytes.begin(), p.received_bytes.end()); };
    std::uint64_t held_cast = 0, held_same = 0;  // the engine's weights (and its f32 staging copy)
    for (std::size_t k = 0; k < tc.out.size(); ++k) held_cast += tc.out[k].size();
    for (std::size_t k = 0; k < ts.out.size(); ++k) held_same += ts.out[k].size();
    MPI_Allreduce(MPI_IN_PLACE, &held_cast, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);  // the engine's ranks
    MPI_Allreduce(MPI_IN_PLACE, &held_same, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    const std::string holds[] = {mib(held_cast), mib(held_same + held_cast), mib(held_same)};
    const std::uint64_t received[] = {most(cast), most(same), most(same)};
    if (me == 0)
      for (std::size_t i = 0; i < s.size(); ++i)
        std::printf("| %s | %s | %.2f | %.2f | %.2f | %s MiB | %s MiB |\n", target, s[i].name.c_str(), s[i].best() * 1e3,
                    s[i].median() * 1e3, s[i].spread(), mib(received[i]).c_str(), holds[i].c_str());
    if (me == 0)
      std::printf("| %s | then cast / on the way (medians) | %.2fx | | | | |\n", target, s[1].median() / s[0].median());
  }
}

void grid(mpi_backend& mpi, mpi_backend& alltoallw, int runs) {
  if (me == 0)
    std::printf("\n## One array: the 2-D grid problems, float64, 8 ranks\n\n"
                "| shape | from -> to | in place (Alltoallw) best / median ms | single copy | packed (Alltoallv) | "
                "message rounds (packed) | message rounds (in place) | pdgemr2d | Alltoallw / single copy (medians) | "
                "max/min Alltoallw | max/min single copy | max/min rounds packed |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  mpi_backend packed(MPI_COMM_WORLD, {.alltoall_in_place = true, .allgather_in_place = true, .exchange_in_place = false});
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"{x: 2, y: 4}|[{x}R, {y}C]", "{x: 4, y: 2}|[{x}R, {y}C]"},
      {"{x: 2, y: 4}|[{x}R, {y}C]", "{x: 2, y: 4}|[{y}R, {x}C]"},
      {"{x: 4, y: 2}|[{x}R, {y}C]", "{x: 8}|[R, {x}C]"},
      {"{x: 8}|[{x}R, C]", "{x: 2, y: 4}|[{y}R, {x}C]"},
  };
  std::vector<double> ratios, rounds, pdgemr2d;
  for (const auto& shape : {std::pair<int, int>{4096, 4096}, {8192, 4096}}) {
    const int rows = shape.first, cols = shape.second;  // named, not bound: clang 14 cannot capture bindings
    for (const auto& [from, to] : pairs) {
      auto layout = [&](const std::string& s) {
        std::string t = s.substr(s.find('|') + 1);
        t.replace(t.find('R'), 1, std::to_string(rows));
        t.replace(t.find('C'), 1, std::to_string(cols));
        placed_layout l;
        l.pm = parse_placed_mesh(s.substr(0, s.find('|')));
        l.type = parse_type(l.pm.mesh, t);
        return l;
      };
      reshard_problem pr;
      pr.world = 8;
      pr.arrays.push_back({"a", element_type::f64, layout(from), layout(to)});
      const reshard_plan rp = plan_reshard(pr);
      const program x = exchange_between(pr.arrays[0].source, pr.arrays[0].target, 8, 8);
      reshard_executor<mpi_backend> er(mpi, rp, reshard_messages::packed), eri(mpi, rp, reshard_messages::in_place);
      executor<double, mpi_backend> ew(alltoallw, x), ei(mpi, x), ep(packed, x);
      reshard_tiles t = make_reshard_tiles(er);
      fill_reshard_sources(rp, er.local_ranks(), t);
      auto as_d = [&](host_vector<std::byte>& v, const placed_layout& l, bool src) {
        const std::int64_t pos = l.pm.positions(8)[static_cast<std::size_t>(me)];
        std::span<double> s(reinterpret_cast<double*>(v.data()), v.size() / 8);
        (void)src;
        return pos < 0 ? darray<double>::none(l.pm.mesh, l.type) : darray<double>(l.pm.mesh, l.type, static_cast<rank_t>(pos), s);
      };
      const darray<double> din = as_d(t.in[0], std::get<placed_layout>(pr.arrays[0].source), true);
      darray<double> dout = as_d(t.out[0], std::get<placed_layout>(pr.arrays[0].target), false);
      const auto in = t.sources();
      const auto out = t.targets();
      std::vector<series> s = {
          {"Alltoallw", {}}, {"single copy", {}}, {"packed", {}}, {"rounds", {}}, {"rounds in place", {}}};
      std::vector<std::function<void()>> run = {[&] { ew.run(din, dout); }, [&] { ei.run(din, dout); },
                                                [&] { ep.run(din, dout); }, [&] { er.run(in, out); },
                                                [&] { eri.run(in, out); }};
#if defined(REDIST_WITH_SCALAPACK)
      bench::scalapack_redistribution<double> sl(std::get<placed_layout>(pr.arrays[0].source),
                                                 std::get<placed_layout>(pr.arrays[0].target));
      s.push_back({"pdgemr2d", {}});
      run.push_back([&] {
        sl.run(reinterpret_cast<const double*>(t.in[0].data()), reinterpret_cast<double*>(t.out[0].data()));
      });
      pdgemr2d.push_back(0);
#endif
      auto clear = [&] { std::memset(t.out[0].data(), 0xff, t.out[0].size()); };
      auto check = [&] { return check_reshard_targets(rp, er.local_ranks(), t).ok(); };
      interleave(s, run, std::vector<std::function<void()>>(s.size(), clear),
                 std::vector<std::function<bool()>>(s.size(), check), runs);
      ratios.push_back(s[0].median() / s[1].median());
      rounds.push_back(s[0].median() / s[3].median());
      char gemr2d[64] = "-";
      if (s.size() > 5) {
        std::snprintf(gemr2d, sizeof gemr2d, "%.1f / %.1f", s[5].best() * 1e3, s[5].median() * 1e3);
        pdgemr2d.back() = s[5].median() / s[1].median();
      }
      if (me == 0)
        std::printf("| %dx%d | `%s` -> `%s` | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %s | "
                    "%.2f | %.2f | %.2f | %.2f |\n",
                    rows, cols, from.c_str(), to.c_str(), s[0].best() * 1e3, s[0].median() * 1e3, s[1].best() * 1e3,
                    s[1].median() * 1e3, s[2].best() * 1e3, s[2].median() * 1e3, s[3].best() * 1e3, s[3].median() * 1e3,
                    s[4].best() * 1e3, s[4].median() * 1e3, gemr2d, ratios.back(), s[0].spread(), s[1].spread(),
                    s[3].spread());
    }
  }
  auto geomean = [](const std::vector<double>& v) {
    double g = 1;
    for (double r : v) g *= r;
    return std::pow(g, 1.0 / static_cast<double>(v.size()));
  };
  if (me == 0)
    std::printf("\nsingle copy is %s; geomean Alltoallw / single copy %.2fx, Alltoallw / rounds packed %.2fx over %zu "
                "problems\n",
                mpi.single_copy() ? "on" : "off (the kernel refused it: the single-copy column is Alltoallw)",
                geomean(ratios), geomean(rounds), ratios.size());
  if (me == 0 && !pdgemr2d.empty())
    std::printf("geomean pdgemr2d / single copy %.2fx over %zu problems\n", geomean(pdgemr2d), pdgemr2d.size());
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  {
    std::vector<std::string> args;  // the positional ones
    double gbps = 0;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--nodes" && i + 1 < argc) planning.node_ranks = std::strtoull(argv[++i], nullptr, 10);
      else if (a == "--link-gbps" && i + 1 < argc) gbps = std::atof(argv[++i]);
      else args.push_back(a);
    }
    planning.node_per_byte = gbps > 0 ? 8 / (gbps * 1e9) : 0;
    const int runs = args.size() > 0 ? std::atoi(args[0].c_str()) : 7;
    const std::uint64_t layers = args.size() > 1 ? std::strtoull(args[1].c_str(), nullptr, 10) : 13;
    const std::uint64_t dim = args.size() > 2 ? std::strtoull(args[2].c_str(), nullptr, 10) : 512;
    const std::uint64_t vocab = args.size() > 3 ? std::strtoull(args[3].c_str(), nullptr, 10) : 50257;
    const std::string parts = args.size() > 4 ? args[4] : "123456";
    auto part = [&](char c) { return parts.find(c) != std::string::npos; };
    mpi_backend mpi(MPI_COMM_WORLD, {.node_size = planning.node_ranks});
    if (mpi.devices() != 8 || (planning.node_ranks > 0) != (gbps > 0) || planning.node_ranks >= 8) {
      if (me == 0)
        std::fprintf(stderr, "reshard: run on 8 ranks (mpirun -np 8), --nodes R (1 to 7) with --link-gbps G\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (me == 0 && planning.node_ranks > 0)
      std::printf("Part 1 planned for nodes of %llu ranks joined by links of %.2f Gbit/s\n\n",
                  static_cast<unsigned long long>(planning.node_ranks), gbps);
    mpi_backend plain(MPI_COMM_WORLD, {.exchange_single_copy = false, .node_size = planning.node_ranks});
    if (layers > 0 && part('1')) model_state(mpi, plain, runs, layers, dim, vocab);
    if (dim >= 512 && part('2')) grid(mpi, plain, runs);
    if (layers > 0 && part('3'))
      for (const bool hsdp : {false, true}) gradients(mpi, runs, layers, dim, hsdp);
    if (layers > 0 && part('4')) casts(mpi, runs, layers, dim, vocab);
    if (layers > 0 && part('5')) half_gradients(mpi, runs, layers, dim);
    if (layers > 0 && part('6')) mixed_gradients(mpi, runs, layers, dim);
  }
#if defined(REDIST_WITH_SCALAPACK)
  bench::scalapack_finalize();
#endif
  MPI_Finalize();
  return wrong ? 1 : 0;
}
