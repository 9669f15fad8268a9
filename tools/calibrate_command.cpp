// tools/calibrate_command.cpp -- `redist calibrate`: measure a backend's time profile
// (runtime/calibrate.hpp) for `redist plan --profile FILE`.
//
//   redist calibrate --backend host [--devices 8] [--out FILE]
//   mpirun -np 8 redist calibrate --backend mpi [--node-ranks N] [--out FILE]
//
// Output: without --out, the profile's JSON (redist/profile_json.hpp) on stdout, so that
// `redist calibrate > profile.json` works, and the readable table on stderr; with --out,
// the JSON into FILE and the table on stdout. Under MPI every rank measures (calibrate is
// collective, times are maxed over ranks) and only rank 0 prints and writes. Under MPI it
// first times the exchange programs in each way the MPI backend can move them
// (backends/mpi_exchange.hpp; runtime/calibrate.hpp time_exchanges), records the fastest
// in the profile's "mpi" object (profile_json.hpp) and measures the profile with it. Where
// the ranks lie on several nodes (consecutive blocks of equal size that share memory, or
// --node-ranks N), it also measures the link between them (the profile's "nodes").
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "mpi_session.hpp"
#include "redist/backends/host.hpp"
#include "redist/core/error.hpp"
#include "redist/profile_json.hpp"
#include "redist/runtime/calibrate.hpp"

#if defined(REDIST_WITH_MPI)
#include <mpi.h>

#include "redist/backends/mpi.hpp"
#endif

namespace redist::tools {

namespace {

struct calibrate_cli_options {
  std::string backend = "host";
  std::uint64_t devices = 8;
  std::string out;
  std::vector<std::uint64_t> sizes_kib;  ///< empty: calibrate_options' default sizes
  std::uint64_t node_ranks = 0;          ///< --node-ranks (0: found from the ranks that share memory)
  CLI::Option* devices_opt = nullptr;
  CLI::Option* node_ranks_opt = nullptr;
};

/// The calibrate_options of the command line.
calibrate_options options_of(const calibrate_cli_options& o, const char* name) {
  calibrate_options co;
  co.name = name;
  if (!o.sizes_kib.empty()) {
    co.sizes.clear();
    for (std::uint64_t k : o.sizes_kib) {
      if (k == 0 || k > (max_calibrate_bytes >> 10))
        throw input_error("--sizes", fmt::format("expected sizes of 1 to {} KiB per rank", max_calibrate_bytes >> 10));
      co.sizes.push_back(k << 10);
    }
  }
  return co;
}

/// The readable table: per kind the three terms and the samples they come from.
std::string profile_table(const calibration& c, double seconds) {
  const time_profile& p = c.profile;
  std::string t = fmt::format("redist calibrate: backend {}, {} ranks, {} programs timed in {:.1f} s\n",
                              p.name_view(), p.devices, c.programs, seconds);
  t += fmt::format("  {:<14} {:>12} {:>12} {:>14} {:>8}\n", "op", "latency", "per round", "per byte", "samples");
  for (op o : all_ops) {
    const op_time& x = p[o];
    const std::size_t n = c.samples[static_cast<int>(o)].size();
    t += fmt::format("  {:<14} {:>9.2f} us {:>9.2f} us {:>9.4f} ns/B {:>8}{}\n", op_name(o), x.latency * 1e6,
                     x.per_peer * 1e6, x.per_byte * 1e9, n,
                     n == 0 && p.devices > 1 ? "  (not measured: the exchange's terms)" : "");
  }
  t += fmt::format("  pass: {:.4f} ns per byte of the tile every step writes (the executor's tile copy)\n",
                   p.pass_per_byte * 1e9);
  if (p.devices == 1) t += "  one rank: every kind is the executor's tile copy (nothing moves between ranks)\n";
  else
    t += fmt::format("  overlap: {:.2f} of a message round's transfer hides a copy (pipelined reshard rounds{})\n",
                     p.overlap, p.overlap > 0 ? "" : ": not taken");
  if (p.node_ranks > 0)
    t += fmt::format("  link: {:.4f} ns per byte the busiest node's link carries ({}), nodes of {} ranks, {} samples\n",
                     p.node_per_byte * 1e9,
                     p.node_per_byte > 0 ? fmt::format("{:.2f} Gbit/s", 8e-9 / p.node_per_byte)
                                         : std::string("no cost beyond a node's own"),
                     p.node_ranks, c.link_samples.size());
  return t;
}

/// The table's lines on the ways of exchanging: each one's geometric mean, the chosen one.
std::string exchange_table(const exchange_timing& t, const mpi_exchange_choice& chosen) {
  std::string s = fmt::format("  exchanges on MPI, geometric mean over {} programs:", t.programs.size());
  for (std::size_t k = 0; k < all_mpi_exchanges.size(); ++k)
    s += fmt::format(" {} {:.1f} us{}", mpi_exchange_name(all_mpi_exchanges[k]), chosen.geomean_s[k] * 1e6,
                     k + 1 < all_mpi_exchanges.size() ? "," : "");
  return s + fmt::format("; chosen: {} (run and reshard run with --profile move exchanges that way)\n",
                         mpi_exchange_name(chosen.exchange));
}

/// Print (or write) what rank 0 measured.
void emit(const calibrate_cli_options& o, const calibration& c, double seconds,
          const std::optional<mpi_exchange_choice>& mpi = {}, const std::string& mpi_table = "") {
  const std::string json = profile_json_text(c.profile, mpi) + "\n";
  const std::string table = profile_table(c, seconds) + mpi_table;
  if (o.out.empty()) {
    fmt::print(stderr, "{}", table);
    fmt::print("{}", json);
  } else {
    write_file("--out", o.out, json);
    fmt::print("{}  profile written to {}\n", table, o.out);
  }
}

void run_host(const calibrate_cli_options& o) {
  if (o.devices == 0 || o.devices > 64) throw input_error("--devices", "expected 1 to 64 simulated devices");
  if (o.node_ranks_opt->count() > 0)
    throw input_error("--node-ranks", "only for --backend mpi (the host backend's devices share one memory)");
  if (!o.out.empty()) write_file("--out", o.out, "");  // a bad path fails before measuring
  const calibrate_options co = options_of(o, "host");
  host_backend host(o.devices);
  const auto t0 = std::chrono::steady_clock::now();
  const calibration c = calibrate_samples(host, co);
  emit(o, c, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

#if defined(REDIST_WITH_MPI)
/// The world ranks per node where the ranks that share memory (MPI_COMM_TYPE_SHARED) form
/// consecutive blocks of one size (rank r on node r / n), and there are two or more; else 0.
std::uint64_t shared_memory_node_ranks() {
  int me = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
  int n = 1, first = me;
  MPI_Comm_size(node, &n);
  MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_free(&node);
  int blocks = first == me / n * n ? 1 : 0, all = 0, most = 0;
  MPI_Allreduce(&blocks, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  MPI_Allreduce(&n, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int same = most == n ? 1 : 0, every = 0;
  MPI_Allreduce(&same, &every, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all && every && n < world ? static_cast<std::uint64_t>(n) : 0;
}

void run_mpi(const calibrate_cli_options& o) {
  ensure_mpi();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    if (o.devices_opt->count() > 0)
      throw input_error("--devices", "only for --backend host; under MPI the ranks are mpirun's (-np)");
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (o.node_ranks_opt->count() > 0 && (o.node_ranks == 0 || o.node_ranks >= static_cast<std::uint64_t>(world)))
      throw input_error("--node-ranks", fmt::format("expected 1 to {} ranks per node (two nodes or more of the {} ranks)",
                                                    world - 1, world));
    if (rank == 0 && !o.out.empty()) write_file("--out", o.out, "");
    calibrate_options co = options_of(o, "mpi");
    co.node_ranks = o.node_ranks_opt->count() > 0 ? o.node_ranks : shared_memory_node_ranks();
    co.max_over_ranks = [](double t) {
      double m = t;
      MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return m;
    };
    const auto t0 = std::chrono::steady_clock::now();
    // The exchange programs in each way of exchanging, one backend per way; then the
    // profile measured with the fastest.
    std::vector<std::unique_ptr<mpi_backend>> ways;
    std::vector<mpi_backend*> candidates;
    for (mpi_exchange m : all_mpi_exchanges) {
      mpi_options mo = mpi_options{}.set_exchange(m);
      mo.node_size = co.node_ranks;  // single copies inside a node only
      ways.push_back(std::make_unique<mpi_backend>(MPI_COMM_WORLD, mo));
      candidates.push_back(ways.back().get());
    }
    const exchange_timing t = time_exchanges(std::span<mpi_backend* const>(candidates), co);
    mpi_exchange_choice chosen;
    chosen.exchange = all_mpi_exchanges[t.fastest];
    for (std::size_t k = 0; k < all_mpi_exchanges.size(); ++k) chosen.geomean_s[k] = t.geomean[k];
    const std::unique_ptr<mpi_backend> fastest = std::move(ways[t.fastest]);
    ways.clear();  // the others' communicators freed
    const calibration c = calibrate_samples(*fastest, co);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rank == 0) {
      const bool measured = !t.programs.empty();  // one rank: nothing to exchange
      emit(o, c, seconds, measured ? std::optional<mpi_exchange_choice>(chosen) : std::nullopt,
           measured ? exchange_table(t, chosen) : "");
    }
  } catch (...) {
    if (rank == 0) throw;  // rank 0 reports; the others exit 1
    std::exit(1);
  }
}
#endif

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto opts = std::make_shared<calibrate_cli_options>();
  CLI::App* cmd = app.add_subcommand("calibrate", "measure a backend's time profile (for plan --profile)");
  cmd->add_option("--backend", opts->backend, "host: D simulated devices in this process; mpi: one rank per process")
      ->check(CLI::IsMember({"host", "mpi"}))
      ->capture_default_str();
  opts->devices_opt = cmd->add_option("--devices", opts->devices, "host: the number of simulated devices (1 to 64)")
                          ->capture_default_str();
  std::string defaults;
  for (std::uint64_t s : calibrate_options{}.sizes) defaults += (defaults.empty() ? "" : ",") + std::to_string(s >> 10);
  cmd->add_option("--sizes", opts->sizes_kib,
                 "the larger tile per rank of the timed programs, in KiB (default " + defaults +
                     "): the sizes you redistribute")
      ->delimiter(',')
      ->type_name("KIB,...");
  opts->node_ranks_opt =
      cmd->add_option("--node-ranks", opts->node_ranks,
                      "mpi: world ranks per node, consecutive, to measure the link between nodes (default: the ranks "
                      "that share memory, where they form such blocks; one node: no link)")
          ->type_name("N");
  cmd->add_option("--out", opts->out, "write the profile's JSON into this file (the table goes to stdout)")
      ->type_name("FILE");
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
