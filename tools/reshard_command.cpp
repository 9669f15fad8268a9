// tools/reshard_command.cpp -- `redist reshard plan|run`: many arrays at once (a model's
// state between a trainer's and an inference engine's layouts, a checkpoint), from a manifest
// (format redist-reshard/1, redist/reshard_json.hpp), in one joint plan (lower/reshard.hpp).
//
//   redist reshard plan --manifest state.json [--budget-bytes N] [--pipeline auto|on|off] [--explain] [--json]
//   redist reshard run --manifest state.json --backend host --verify
//   mpirun -np 8 redist reshard run --manifest state.json --backend mpi --verify
//
// plan prints one row per array (its route: joint or its own plan) and the joint exchange's
// rounds, messages, bytes against the lower bound, the fused collectives of own programs and
// the predicted time against one call per array; --explain adds every round, every fused
// collective's arrays and every array's own plan; --json prints the plan as
// redist-reshard-plan/1. run fills every source tile with values that encode the array and
// the global index (runtime/reshard_tiles.hpp), runs the plan (--repeat times, best time)
// and with --verify checks every element of every target tile; --separate runs every array
// by its own plan, one call each, for comparison. --budget-bytes overrides the manifest's;
// --pipeline runs the rounds two at a time within it (lower/reshard.hpp; auto: where the
// profile's overlap predicts it faster).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "mpi_session.hpp"
#include "redist/backends/host.hpp"
#include "redist/lower/reshard.hpp"
#include "redist/reshard_json.hpp"
#include "redist/runtime/reshard_executor.hpp"
#include "redist/runtime/reshard_tiles.hpp"

#if defined(REDIST_WITH_MPI)
#include <mpi.h>

#include "redist/backends/mpi.hpp"
#endif

namespace redist::tools {

namespace {

struct reshard_cli_options {
  std::string manifest;
  std::string profile;
  std::uint64_t budget = 0;
  CLI::Option* budget_opt = nullptr;
  bool explain = false, json = false, verify = false, separate = false;
  std::string backend = "host";
  std::string pipeline = "auto";
  exchange_option exchange;
  int repeat = 1;
};

std::string bytes_text(std::uint64_t b) {
  if (b < 10 * 1024) return fmt::format("{} B", b);
  if (b < 10ull * 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1024.0 * 1024.0));
}

/// The plan of the manifest; for `rank` of a job of `ranks` (MPI), where that is the
/// reshard's world, the plan of that rank alone (reshard_options::of_rank).
reshard_plan plan_from(const reshard_cli_options& o, profile_file& profile, std::uint64_t ranks = 1, rank_t rank = 0) {
  std::ifstream f(o.manifest, std::ios::binary);
  std::ostringstream text;
  if (f) text << f.rdbuf();
  if (!f) throw input_error("--manifest", "cannot read the file '" + o.manifest + "'");
  const reshard_manifest m = for_option("--manifest", [&] { return read_reshard_manifest(text.str()); });
  reshard_options ro;
  ro.budget_bytes = o.budget_opt->count() > 0 ? o.budget : m.budget_bytes;
  if (!o.profile.empty()) profile = read_profile(o.profile);
  ro.synth.time_model = &profile.profile;
  ro.joint = !o.separate;
  ro.pipeline = o.pipeline == "on" ? reshard_pipeline::on : o.pipeline == "off" ? reshard_pipeline::off : reshard_pipeline::automatic;
  return for_option("--manifest", [&] {
    if (ranks > 1 && reshard_world(m.problem) == ranks) ro.of_rank = rank;
    return plan_reshard(m.problem, ro);
  });
}

void print_plan(const reshard_plan& p, bool explain) {
  std::uint64_t bytes = 0;
  for (const reshard_array& a : p.arrays) bytes += a.bytes();
  fmt::print("redist reshard: {} arra{} ({}) in a world of {} ranks, {}\n", p.arrays.size(),
             p.arrays.size() == 1 ? "y" : "ys", bytes_text(bytes), p.world,
             p.budget_bytes ? "budget " + bytes_text(p.budget_bytes) + " per rank" : std::string("no budget"));
  std::size_t w = 5, tw = 5;
  const auto dtype = [](const reshard_array& a) {  // "f32", or "f32>bf16" where it casts
    return std::string(element_type_name(a.dtype)) + (a.casts() ? ">" + std::string(element_type_name(a.target_type())) : "");
  };
  for (const reshard_array& a : p.arrays) {
    w = std::max(w, a.name.size());
    tw = std::max(tw, dtype(a).size());
  }
  fmt::print("  {:>3}  {:<{}}  {:<{}}  {:<5}  {:<10}  {}\n", "#", "array", w, "dtype", tw, "route", "own plan",
             "source -> target");
  for (std::size_t i = 0; i < p.arrays.size(); ++i) {
    const reshard_array& a = p.arrays[i];
    fmt::print("  {:>3}  {:<{}}  {:<{}}  {:<5}  {:<10}  {} -> {}{}\n", i + 1, a.name, w, dtype(a), tw,
               reshard_route_name(p.route[i]), p.own[i].candidates[p.own[i].chosen].name, detail::layout_text(a.source),
               detail::layout_text(a.target),
               p.chunked(i) ? fmt::format(" (in {} chunks)", p.chunks[i].count) : std::string());
  }
  std::uint64_t msgs = 0;
  for (std::size_t k = 0; k < p.rounds.size(); ++k) msgs += p.messages(k);
  const auto most = [](const std::vector<std::uint64_t>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); };
  fmt::print("joint exchange: {} {}{}, {} messages; most one rank receives {} (lower bound {}); transient at most {} per "
             "rank{}\n",
             p.rounds.size(), p.rounds.size() == 1 ? "round" : "rounds", p.pipelined ? " (two at a time)" : "", msgs,
             bytes_text(most(p.received_bytes)),
             bytes_text(most(p.lower_bound_bytes)), bytes_text(most(p.transient_bytes)),
             p.halves ? " (sends and receives each within half the budget)" : "");
  if (!p.fused.empty()) {
    std::size_t n = 0;
    std::uint64_t held = 0;
    for (const reshard_fused& f : p.fused) {
      n += f.arrays.size();
      held = std::max(held, f.bytes);
    }
    fmt::print("fused collectives: {} own arrays in {} set{} (one call per step each); buffers at most {} per rank\n", n,
               p.fused.size(), p.fused.size() == 1 ? "" : "s", bytes_text(held));
  }
  fmt::print("predicted {:.3f} ms (one call per array: {:.3f} ms)\n", p.seconds * 1e3, p.separate_seconds * 1e3);
  if (!explain) return;
  fmt::print("\nreason: {}\n", p.reason);
  for (std::size_t k = 0; k < p.rounds.size(); ++k) {
    const std::span<const reshard_piece> kept = p.local_of(k);
    std::uint64_t bytes = 0;
    for (const reshard_piece& pc : kept) bytes += p.piece_bytes(pc);
    fmt::print("  round {}: {} pieces in {} messages, {}{}\n", k + 1, p.rounds[k].count, p.messages(k),
               bytes_text(p.rounds[k].bytes),
               bytes == 0 ? "" : fmt::format("; {} {} kept, {}", kept.size(), kept.size() == 1 ? "piece" : "pieces",
                                               bytes_text(bytes)));
  }
  for (std::size_t k = 0; k < p.fused.size(); ++k) {
    const reshard_fused& f = p.fused[k];
    std::string names, calls;
    for (std::uint32_t a : f.arrays) names += (names.empty() ? "" : ", ") + p.arrays[a].name;
    for (const step& s : p.own[f.arrays.front()].chosen_program().steps)
      calls += (calls.empty() ? "one " : " then one ") + std::string(op_name(s.kind));
    fmt::print("  fused {}: {} of {} arrays ({}), {} per rank, {:.3f} ms\n", k + 1, calls, f.arrays.size(), names,
               bytes_text(f.bytes), f.seconds * 1e3);
  }
  for (std::size_t i = 0; i < p.arrays.size(); ++i) {
    const reshard_array& a = p.arrays[i];
    const std::string in = a.casts_pending() ? fmt::format("; runs in {} (pending values cast: the type that holds {} and {})",
                                                           element_type_name(a.program_type()), element_type_name(a.dtype),
                                                           element_type_name(a.target_type()))
                                             : "";
    std::string chunks;
    if (p.chunked(i)) {
      const reshard_chunks& k = p.chunks[i];
      std::string cut;
      for (std::size_t d = 0; d < k.units.size(); ++d)
        if (k.units[d] != 0)
          cut += fmt::format("{}dimension {}: {} rows of each of its {} units", cut.empty() ? "" : ", ", d, k.rows[d], k.units[d]);
      chunks = fmt::format("; within the budget in {} chunks ({}), each by {}, at most {} per rank", k.count, cut,
                           k.sub.candidates[k.sub.chosen].name, bytes_text(k.held_bytes));
    }
    fmt::print("  {}: {}{}{}\n", a.name, p.own[i].reason, in, chunks);
  }
}

template <class B>
int run_on(B& b, const reshard_plan& p, const reshard_cli_options& o, bool print) {
  reshard_executor<B> ex(b, p);
  reshard_tiles t = make_reshard_tiles(ex);
  fill_reshard_sources(p, ex.local_ranks(), t);
  double best = 0;
  for (int k = 0; k < o.repeat; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    ex.run(t.sources(), t.targets());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = k == 0 ? s : std::min(best, s);
  }
  reshard_check c;
  if (o.verify) c = check_reshard_targets(p, ex.local_ranks(), t);
  std::uint64_t checked = c.checked, wrong = c.wrong, held = ex.bytes_held();
#if defined(REDIST_WITH_MPI)
  if constexpr (std::is_same_v<B, mpi_backend>) {
    std::uint64_t v[2] = {checked, wrong}, s[2] = {0, 0};
    MPI_Allreduce(v, s, 2, MPI_UINT64_T, MPI_SUM, b.comm());
    checked = s[0];
    wrong = s[1];
    MPI_Allreduce(MPI_IN_PLACE, &best, 1, MPI_DOUBLE, MPI_MAX, b.comm());
    MPI_Allreduce(MPI_IN_PLACE, &held, 1, MPI_UINT64_T, MPI_MAX, b.comm());
  }
#endif
  if (print) {
    print_plan(p, false);
    std::string way;
#if defined(REDIST_WITH_MPI)
    if constexpr (std::is_same_v<B, mpi_backend>) way = fmt::format(" (exchanges: {})", mpi_exchange_name(b.exchange()));
#endif
    fmt::print("\nredist reshard run: backend {}{}, {} ranks, best of {}: {:.3f} ms; bytes held per rank beyond the "
               "tiles: at most {}\n",
               o.backend, way, p.world, o.repeat, best * 1e3, bytes_text(held));
    if (o.verify)
      fmt::print("verified: {} elements, {} wrong{}{}\n", checked, wrong,
                 c.unchecked_arrays ? fmt::format(" ({} arra{} pending values: not checked)", c.unchecked_arrays,
                                                   c.unchecked_arrays == 1 ? "y keeps" : "ys keep")
                                   : "",
                 c.first.empty() ? "" : "; first: " + c.first);
  }
  return wrong == 0 ? 0 : 1;
}

}  // namespace

void add_reshard_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("reshard", "many arrays at once, from a manifest (redist-reshard/1)");
  cmd->require_subcommand(1);
  // The options every subcommand has (each its own copy: CLI11 counts an option per subcommand).
  auto common = [](CLI::App* c) {
    auto o = std::make_shared<reshard_cli_options>();
    c->add_option("--manifest", o->manifest, "the manifest: the world, meshes and arrays (redist-reshard/1)")
        ->required()
        ->type_name("FILE");
    o->budget_opt = c->add_option("--budget-bytes", o->budget,
                                  "most bytes one rank holds for the joint exchange in a round (overrides the "
                                  "manifest's budget_bytes; 0: none)");
    c->add_option("--profile", o->profile, "the time profile: a file from `redist calibrate`, or built-in")
        ->type_name("FILE");
    c->add_flag("--separate", o->separate, "every array by its own plan, one call each (for comparison)");
    c->add_option("--pipeline", o->pipeline,
                  "rounds two at a time, each within half the budget: auto (where the profile's overlap predicts "
                  "it faster), on or off")
        ->check(CLI::IsMember({"auto", "on", "off"}))
        ->capture_default_str();
    return o;
  };
  CLI::App* plan = cmd->add_subcommand("plan", "plan the arrays jointly and print the plan");
  auto po = common(plan);
  plan->add_flag("--explain", po->explain, "every round and every array's own plan, with the reason of the choice");
  plan->add_flag("--json", po->json, "print the plan as JSON (redist-reshard-plan/1)");
  plan->callback([po] {
    profile_file profile;
    const reshard_plan p = plan_from(*po, profile);
    if (po->json) fmt::print("{}\n", reshard_plan_to_json(p));
    else print_plan(p, po->explain);
  });
  CLI::App* run = cmd->add_subcommand("run", "run the joint plan on real data");
  auto o = common(run);
  run->add_option("--backend", o->backend, "host (every rank in this process) or mpi (one rank per process)")
      ->check(CLI::IsMember({"host", "mpi"}))
      ->capture_default_str();
  run->add_flag("--verify", o->verify, "check every element of every target tile");
  run->add_option("--repeat", o->repeat, "runs; the best time is reported")->check(CLI::PositiveNumber);
  add_exchange_option(*run, o->exchange);
  run->callback([o] {
    profile_file profile;
    int rc = 0;
    if (o->backend == "host") {
      (void)exchange_of(o->exchange, std::nullopt, o->backend);  // refuses --exchange
      const reshard_plan p = plan_from(*o, profile);
      host_backend host(p.world);
      rc = run_on(host, p, *o, true);
    } else {
#if defined(REDIST_WITH_MPI)
      ensure_mpi();
      int rank = 0, ranks = 1;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      MPI_Comm_size(MPI_COMM_WORLD, &ranks);
      const reshard_plan p = plan_from(*o, profile, static_cast<std::uint64_t>(ranks), static_cast<rank_t>(rank));
      // --exchange, else the way the profile's calibration found fastest.
      const mpi_exchange way = exchange_of(o->exchange, profile.mpi, o->backend);
      mpi_backend mpi(MPI_COMM_WORLD, mpi_options{}.set_exchange(way));
      if (p.world != mpi.devices())
        throw input_error("--manifest", fmt::format("the reshard runs on a world of {} ranks, mpirun started {}", p.world,
                                                    mpi.devices()));
      rc = run_on(mpi, p, *o, mpi.rank() == 0);
#else
      throw input_error("--backend", "this redist was built without MPI");
#endif
    }
    if (rc != 0) throw input_error("--verify", "wrong elements in the target tiles");
  });
}

}  // namespace redist::tools
