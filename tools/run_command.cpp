// tools/run_command.cpp -- `redist run`: execute the program of a redistribution on real
// data and report what it cost.
//
//   redist run --backend host --mesh '{x: 4, y: 6}' --from '[3{x}12, 2{y}12]' --to '[2{y}12, 3{x}12]' --verify
//   mpirun -np 8 redist run --backend mpi --mesh '{devs: 8}' --from '[32, 256{devs}2048]'
//       --to '[4{devs}32, 2048]' --verify                               (one command line)
//
// Every element of the global array holds a value that encodes its global index (an
// unsigned integer of --bytes bytes, so the encoding is exact up to 2^(8*bytes) elements).
// The source tiles are filled, the program runs (all D simulated devices in this process
// with the host backend; one rank per process under mpirun with the MPI backend), and with
// --verify every element of every rank's target tile is checked. The report (printed by
// rank 0 only under MPI) gives the plan, then per step the bytes moved and the wall time,
// the peak bytes held per rank and the verification counts. A failed verification exits 1.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "mpi_session.hpp"
#include "redist/backends/host.hpp"
#include "redist/core/error.hpp"
#include "redist/format.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/verify.hpp"
#include "redist/search/weak_graph.hpp"

#if defined(REDIST_WITH_MPI)
#include <mpi.h>

#include "redist/backends/mpi.hpp"
#endif

namespace redist::tools {

namespace {

struct run_options {
  problem_options problem;
  std::string backend = "host";
  bool verify = false;
  int repeat = 1;
  planning_options planning;
  exchange_option exchange;
  std::string baseline;
};

/// What one rank (or, for the host backend, all simulated devices) measured.
struct measurement {
  std::vector<double> seconds;          // per step: best over repeats
  std::vector<std::uint64_t> bytes;     // per step: bytes received, summed over ranks
  std::vector<std::uint64_t> max_rank;  // per step: the most bytes one rank received
  double total_seconds = 0;             // best over repeats, whole program incl. copies in and out
  std::uint64_t peak_held = 0;          // bytes per rank
  std::uint64_t peak_live = 0;
  std::uint64_t checked = 0, wrong = 0, bad_ranks = 0;
  std::uint64_t first_bad_rank = 0, first_bad_index = 0;
  std::string exchange;  // mpi: the way exchanges moved (mpi_backend::exchange())
};

template <class T>
void note_check(measurement& me, const darray<T>& t) {
  const tile_check c = check_global_index(t);
  me.checked += c.checked;
  if (c.ok()) return;
  if (me.bad_ranks++ == 0) {
    me.first_bad_rank = t.device();
    me.first_bad_index = c.first_bad;
  }
  me.wrong += c.mismatches;
}

/// Run the program `repeat` times on the ranks `b` drives; fill, check, measure.
template <class T, class B>
measurement execute(B& b, const program& prog, const run_options& o) {
  executor<T, B> ex(b, prog);
  std::vector<darray<T>> in, out;
  for (rank_t r : b.local_ranks()) {  // world ranks; a rank outside a mesh holds no tile of it
    in.push_back(source_tile<T>(prog, r));
    fill_global_index(in.back());
    out.push_back(target_tile<T>(prog, r));
  }
  measurement me;
  me.seconds.assign(prog.steps.size(), 0);
  for (int k = 0; k < o.repeat; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    ex.run(in, out);
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    me.total_seconds = k == 0 ? total : std::min(me.total_seconds, total);
    for (std::size_t s = 0; s < prog.steps.size(); ++s)
      me.seconds[s] = k == 0 ? ex.stats()[s].seconds : std::min(me.seconds[s], ex.stats()[s].seconds);
  }
  for (const step_stats& s : ex.stats()) {
    me.bytes.push_back(s.bytes_moved);
    me.max_rank.push_back(s.max_rank_bytes);
  }
  me.peak_held = ex.peak_bytes_held();
  me.peak_live = ex.peak_bytes_live();
  if (!o.verify) return me;
  if (prog.target.nsum == 0) {
    for (const auto& t : out) note_check(me, t);
    return me;
  }
  // Pending values in the target: check the reduction (the type's kind) of the partials of
  // every group (runtime/verify.hpp reduce_partials_into_roots).
#if defined(REDIST_WITH_MPI)
  const device_mesh& tm = prog.target_mesh();
  if constexpr (std::is_same_v<B, mpi_backend>) {
    MPI_Comm group = MPI_COMM_NULL;
    darray<T>& t = out.front();
    const bool holds = t.holds();  // the groups are by mesh position, on the target mesh's ranks
    const rank_t pos = t.device(), root = holds ? sum_root(tm, prog.target, pos) : 0;
    MPI_Comm_split(b.comm(), holds ? static_cast<int>(root) : MPI_UNDEFINED, static_cast<int>(pos), &group);
    if (!holds) return me;
    mpi_reduce_partials(group, t.data(), t.size(), prog.target.reduce);  // the root: the group's least position
    MPI_Comm_free(&group);
    if (root == pos) note_check(me, t);
    return me;
  }
#endif
  // All ranks are local: the target mesh's tiles by position.
  std::vector<darray<T>> by_position(tm.devices);
  for (auto& t : out)
    if (t.holds()) by_position[t.device()] = std::move(t);
  reduce_partials_into_roots(std::span<darray<T>>(by_position));
  for (const auto& t : by_position)
    if (sum_root(tm, prog.target, t.device()) == t.device()) note_check(me, t);
  return me;
}

/// Dispatch on the element size: unsigned integers encode the global index exactly.
template <class B>
measurement execute_bytes(B& b, const program& prog, const run_options& o) {
  switch (prog.element_bytes) {
    case 1: return execute<std::uint8_t>(b, prog, o);
    case 2: return execute<std::uint16_t>(b, prog, o);
    case 4: return execute<std::uint32_t>(b, prog, o);
    case 8: return execute<std::uint64_t>(b, prog, o);
    default:
      throw input_error("--bytes", "redist run moves 1-, 2-, 4- or 8-byte elements, not " +
                                       std::to_string(prog.element_bytes) + "-byte ones");
  }
}

std::string human_bytes(std::uint64_t b) {
  if (b < 10 * 1024) return fmt::format("{} B", b);
  if (b < 10ull * 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1024.0 * 1024.0));
}

std::string group_text(const step& s) {
  switch (s.kind) {
    case op::allgather:
    case op::alltoall:
    case op::allreduce:
    case op::reducescatter:
    case op::partial: return fmt::format("{} x {}", s.group_count(), s.parts);
    case op::allpermute: {
      std::size_t moved = 0;
      for (std::size_t r = 0; r < s.dest.size(); ++r) moved += s.dest[r] != r;
      return fmt::format("{} moved", moved);
    }
    default: return "-";
  }
}

void report(const program& prog, const run_options& o, const measurement& me, std::uint64_t ranks) {
  const std::uint64_t es = prog.element_bytes;
  fmt::print("{}\n\n", prog);
  fmt::print("redist run: backend {}{}, {} ranks, {}-byte elements (values encode their global index), best of {}\n",
             o.backend, me.exchange.empty() ? "" : " (exchanges: " + me.exchange + ")", ranks, es, o.repeat);
  fmt::print("  {:>2}  {:<10}  {:>9}  {:>14}  {:>14}  {:>12}\n", "#", "op", "groups", "moved (all)", "max per rank",
             "time");
  std::uint64_t total = 0, total_max = 0;
  for (std::size_t s = 0; s < prog.steps.size(); ++s) {
    fmt::print("  {:>2}  {:<10}  {:>9}  {:>14}  {:>14}  {:>9.1f} us\n", s + 1, op_name(prog.steps[s].kind),
               group_text(prog.steps[s]), human_bytes(me.bytes[s]), human_bytes(me.max_rank[s]), me.seconds[s] * 1e6);
    total += me.bytes[s];
    total_max += me.max_rank[s];
  }
  fmt::print("  bytes moved: {} over all ranks, at most {} per rank (cost model: {} per device)\n", human_bytes(total),
             human_bytes(total_max), human_bytes(prog.cost_bytes()));
  fmt::print("  wall time: {:.1f} us for the whole redistribution (checks, copying tiles in and out, all steps){}\n",
             me.total_seconds * 1e6, ranks > 1 && o.backend == "mpi" ? ", slowest rank" : "");
  const std::uint64_t in_out = std::max(prog.source_local(), prog.target_local()) * es;
  fmt::print("  peak bytes held per rank: {} = {:.2f} x max(local in, local out) ({}); live data at most {}\n",
             human_bytes(me.peak_held), static_cast<double>(me.peak_held) / static_cast<double>(in_out),
             human_bytes(in_out), human_bytes(me.peak_live));
  if (!o.verify) return;
  const std::string summed =
      prog.target.nsum > 0
          ? " (the " + std::string(reduction_name(prog.target.reduce)) + " of the target's partial values)"
          : "";
  if (me.wrong == 0) {
    fmt::print("  verify: OK, {} elements checked on {} ranks{}, all in place\n", me.checked, ranks, summed);
  } else {
    fmt::print("  verify: FAILED, {} of {} elements wrong on {} ranks (first: rank {}, global index {})\n", me.wrong,
               me.checked, me.bad_ranks, me.first_bad_rank, me.first_bad_index);
  }
}

void check_result(const run_options& o, const measurement& me) {
  if (o.verify && me.wrong != 0)
    throw redist_error(errc::runtime, fmt::format("verification failed: {} elements are not where the target type puts "
                                                  "them (first: rank {}, global index {})",
                                                  me.wrong, me.first_bad_rank, me.first_bad_index));
}

/// The program to run and, from --profile, the way the MPI backend moves exchanges fastest
/// (none with --baseline, which excludes --profile).
struct planned_run {
  program prog;
  std::optional<mpi_exchange_choice> mpi;
};

planned_run make_program(const run_options& o) {
  const problem pr = parse_problem(o.problem);
  if (!o.baseline.empty()) return {baseline_program(o.baseline, pr), std::nullopt};
  const planning pl = parse_planning(o.planning);
  return {program_for(pr, pl), pl.mpi};
}

/// The most memory `redist run --backend host` uses for its simulated devices.
constexpr std::uint64_t host_simulation_limit = 8ull << 30;

/// Refuse, before allocating anything, a host run whose simulated devices would together hold
/// more than host_simulation_limit: every device's source and target tiles plus the
/// executor's buffers (at most 2 x the program's peak local size).
void check_host_simulation(const program& prog) {
  const long double per_device = static_cast<long double>(prog.source_local()) +
                                 static_cast<long double>(prog.target_local()) +
                                 2.0L * static_cast<long double>(prog.peak_local_elements);
  const long double total = per_device * static_cast<long double>(prog.element_bytes) *
                            static_cast<long double>(prog.world_size());
  if (total > static_cast<long double>(host_simulation_limit))
    throw input_error("--backend", fmt::format("host: {} simulated devices would hold {:.1f} GiB (tiles in and out and the "
                                               "executor's buffers), more than the {} GiB the host backend simulates; "
                                               "use a smaller array or mesh, or --backend mpi",
                                               prog.world_size(), static_cast<double>(total / (1ull << 30)),
                                               host_simulation_limit >> 30));
}

void run_host(const run_options& o) {
  (void)exchange_of(o.exchange, std::nullopt, o.backend);  // refuses --exchange
  const program prog = make_program(o).prog;
  check_host_simulation(prog);
  host_backend host(prog.world_size());
  const measurement me = execute_bytes(host, prog, o);
  report(prog, o, me, prog.world_size());
  check_result(o, me);
}

#if defined(REDIST_WITH_MPI)
void run_mpi(const run_options& o) {
  ensure_mpi();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    const planned_run plan = make_program(o);
    const program& prog = plan.prog;
    // --exchange, else the way the profile's calibration found fastest.
    const mpi_exchange way = exchange_of(o.exchange, plan.mpi, o.backend);
    measurement me;
    std::uint64_t ranks = 0;
    {
      mpi_backend mpi(MPI_COMM_WORLD, mpi_options{}.set_exchange(way));
      ranks = mpi.devices();
      me = execute_bytes(mpi, prog, o);
      me.exchange = std::string(mpi_exchange_name(mpi.exchange()));
      // Combine: bytes and checks summed, times and memory maxed over ranks.
      const std::size_t n = prog.steps.size();
      std::vector<std::uint64_t> sums = me.bytes;
      sums.insert(sums.end(), {me.checked, me.wrong, me.bad_ranks});
      std::vector<std::uint64_t> maxs = me.max_rank;
      maxs.insert(maxs.end(), {me.peak_held, me.peak_live});
      std::vector<double> times = me.seconds;
      times.push_back(me.total_seconds);
      MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_UINT64_T, MPI_SUM, mpi.comm());
      MPI_Allreduce(MPI_IN_PLACE, maxs.data(), static_cast<int>(maxs.size()), MPI_UINT64_T, MPI_MAX, mpi.comm());
      MPI_Allreduce(MPI_IN_PLACE, times.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX, mpi.comm());
      // The first wrong element, from the lowest rank that has one.
      const std::uint64_t mine[2] = {me.bad_ranks ? me.first_bad_rank : UINT64_MAX, me.first_bad_index};
      std::vector<std::uint64_t> firsts(2 * ranks);
      MPI_Allgather(mine, 2, MPI_UINT64_T, firsts.data(), 2, MPI_UINT64_T, mpi.comm());
      for (std::size_t s = 0; s < n; ++s) {
        me.bytes[s] = sums[s];
        me.max_rank[s] = maxs[s];
        me.seconds[s] = times[s];
      }
      me.checked = sums[n];
      me.wrong = sums[n + 1];
      me.bad_ranks = sums[n + 2];
      me.peak_held = maxs[n];
      me.peak_live = maxs[n + 1];
      me.total_seconds = times.back();
      for (std::uint64_t r = 0; r < ranks; ++r)
        if (firsts[2 * r] != UINT64_MAX) {
          me.first_bad_rank = firsts[2 * r];
          me.first_bad_index = firsts[2 * r + 1];
          break;
        }
    }
    if (rank == 0) report(prog, o, me, ranks);
    check_result(o, me);
  } catch (...) {
    // Every rank fails alike (inputs are the same everywhere, the executor's agreement
    // check and the reductions above see to the rest): rank 0 reports, the others exit 1.
    if (rank == 0) throw;
    std::exit(1);
  }
}
#endif

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<run_options>();
  CLI::App* cmd = app.add_subcommand("run", "execute a redistribution on real data and check every element");
  add_problem_options(*cmd, opts->problem);
  cmd->add_option("--backend", opts->backend,
                  "host: D (or --world) simulated devices in this process; mpi: one rank per process")
      ->check(CLI::IsMember({"host", "mpi"}))
      ->capture_default_str();
  cmd->add_flag("--verify", opts->verify, "check every element of every rank's target tile");
  cmd->add_option("--repeat", opts->repeat, "run the program this many times and report the best times")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  add_planning_options(*cmd, opts->planning);
  add_exchange_option(*cmd, opts->exchange);
  std::vector<std::string> names;
  for (const baseline& b : baselines()) names.emplace_back(b.name);
  cmd->add_option("--baseline", opts->baseline, "run a comparison baseline's program instead of the synthesized one")
      ->check(CLI::IsMember(names))
      ->excludes(opts->planning.objective_opt)
      ->excludes(opts->planning.profile_opt);
  cmd->callback([opts] {
    if (opts->backend == "mpi") {
#if defined(REDIST_WITH_MPI)
      run_mpi(*opts);
#else
      throw input_error("--backend", "this redist was built without MPI (configure with MPI installed)");
#endif
    } else {
      run_host(*opts);
    }
  });
}

}  // namespace redist::tools
