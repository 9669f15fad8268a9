// benchmarks/cross_mesh.cpp -- redistributions between meshes on device sets (DESIGN.md
// section 2, "Meshes on device sets"; issue 25) on the MPI backend, 8 ranks: the plan
// plan_between chooses (lower/between.hpp), every other candidate it weighed ("collective",
// "permuted", "exchange", "two-phase"), each run through the executor, against two
// baselines written directly in MPI:
//   pull            every receiver takes each piece of its target box from the first (lowest)
//                   world rank that holds it in the source (a local copy when it holds the
//                   piece itself): one MPI_Isend / MPI_Irecv per piece, subarray datatypes
//                   (MPI_Type_create_subarray) on both tiles, no packing.
//   gather-scatter  the first holder of every distinct source tile sends it to world rank 0
//                   (MPI_Gatherv), rank 0 assembles the global array and sends every target
//                   rank its box (MPI_Scatterv).
// Groups 1-4 add a third row: the pieces of redist's exchange (plan_exchange, the sender rule
// of redist/exchange.hpp) moved by the pull's code, without the executor, which separates
// the exchange's pattern from the executor's per-run cost (checks, one agreement
// MPI_Allreduce, datatypes, MPI_Alltoallw over the world).
// All systems of a scenario run the same data, interleaved run by run (in an order shuffled
// afresh every run, the same on every rank), after one warm-up run each; a run's time is the
// slowest rank's (MPI_Wtime between two barriers, MPI_Allreduce max); every output tile of
// every run is filled with NaN before the run and checked against the global index after it.
// Prints markdown tables (times in ms, best and median) and summary lines, one per goal of
// issue 25 and a few geomeans; asserts nothing about time, exits 1 on wrong data.
// Scenarios (7: the candidates alone, no baseline reduces pending sums): 1. a pipeline
// boundary (activations from stage ranks 0-3 to 4-7), 2. the same to
// replicated targets, 3. a weight sync between replicated meshes, 4. a checkpoint from 8 ranks
// to 6, 6. weights replicated over dp (HSDP) to TP 8 on the same ranks (with --nodes the
// chosen exchange's senders are by node: a row "exchange, replicas in turn" runs it without), 5. the
// 2-D grid set between {x: 2, y: 4}, {x: 4, y: 2} and {x: 8}, without and with relabelling
// 7. gradients pending over stage ranks 0-3 to the next stage's ranks (docs/benchmarks.md,
// "Meshes on device sets (issue 25)").
// Usage: mpirun --oversubscribe -np 8 cross_mesh [runs] [--nodes R --link-gbps G | --profile FILE]
// (runs: default 10). --profile plans with a profile of `redist calibrate` (its link where it
// has one, "nodes"). With --nodes, the world is read as nodes of R consecutive ranks joined by
// links of G Gbit/s each way: plans are chosen with the built-in profile plus that link term
// (time_profile::node_ranks, node_per_byte) and the MPI backend copies by cross-memory attach
// only inside a node (mpi_options::node_size). benchmarks/emulated_nodes.sh runs it on one
// machine with the links emulated (TCP between two local addresses, one per node, rate-limited).
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "redist/backends/mpi.hpp"
#include "redist/core/placement.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/between.hpp"
#include "redist/profile_json.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/verify.hpp"
#include "stats.hpp"

namespace {

using redist::box;
using redist::darray;
using redist::placed_layout;
using redist::rank_t;

constexpr std::uint64_t W = 8;  // world ranks
constexpr double MiB = 1024.0 * 1024.0;

placed_layout layout(const std::string& mesh, const std::string& type) {
  const redist::placed_mesh pm = redist::parse_placed_mesh(mesh);
  return {pm, redist::parse_type(pm.mesh, type)};
}

std::vector<rank_t> ranks_of(const redist::placed_mesh& pm) {
  std::vector<rank_t> r(pm.mesh.devices);
  for (std::uint64_t p = 0; p < pm.mesh.devices; ++p) r[p] = static_cast<rank_t>(pm.at(p));
  return r;
}

/// Every world rank's box of layout l (empty outside its mesh).
std::vector<box> boxes_of(const placed_layout& l) {
  const std::vector<rank_t> r = ranks_of(l.pm);
  return redist::placed_boxes(l.pm.mesh, l.type, r, W);
}

/// Rank `me`'s tile of layout l: its mesh position's tile, or none() outside the mesh.
darray<float> tile_of(const placed_layout& l, std::uint64_t me) {
  const std::int64_t pos = l.pm.positions(W)[me];
  return pos < 0 ? darray<float>::none(l.pm.mesh, l.type) : darray<float>(l.pm.mesh, l.type, static_cast<rank_t>(pos));
}

std::string layout_text(const placed_layout& l) {
  return "`" + std::string(redist::type_text(l.pm.mesh, l.type).view()) + "` on `" + redist::placed_mesh_text(l.pm) + "`";
}

/// Copy piece p (global indices) from a row-major tile of extents se whose first element is
/// global index sb.lo to one of extents de starting at db.lo.
void copy_piece(const float* s, const redist::extents& se, const box& sb, float* d, const redist::extents& de,
                const box& db, const box& p) {
  if (p.empty()) return;
  const int R = p.rank;
  std::array<std::uint64_t, redist::max_dims> ss{}, ds{};
  std::uint64_t a = 1, b = 1;
  for (int k = R - 1; k >= 0; --k) {
    ss[k] = a;
    ds[k] = b;
    a *= se[k];
    b *= de[k];
  }
  const std::uint64_t run = p.extent(R - 1), outer = p.size() / run;
  for (std::uint64_t o = 0; o < outer; ++o) {
    std::uint64_t rem = o, so = 0, dof = 0;
    for (int k = R - 2; k >= 0; --k) {
      const std::uint64_t i = p.lo[k] + rem % p.extent(k);
      rem /= p.extent(k);
      so += (i - sb.lo[k]) * ss[k];
      dof += (i - db.lo[k]) * ds[k];
    }
    so += p.lo[R - 1] - sb.lo[R - 1];
    dof += p.lo[R - 1] - db.lo[R - 1];
    std::memcpy(d + dof, s + so, run * sizeof(float));
  }
}

/// The distinct non-empty boxes of `bs`, each with its first (lowest) holder.
std::vector<std::pair<std::uint64_t, box>> first_holders(const std::vector<box>& bs) {
  std::vector<std::pair<std::uint64_t, box>> v;
  for (std::uint64_t r = 0; r < bs.size(); ++r) {
    if (bs[r].empty()) continue;
    bool seen = false;
    for (const auto& [h, b] : v) seen = seen || b == bs[r];
    if (!seen) v.emplace_back(r, bs[r]);
  }
  return v;
}

/// A subarray datatype for piece p of a tile of extents e whose first element is global lo.
MPI_Datatype subarray(const redist::extents& e, const box& tb, const box& p) {
  int sizes[redist::max_dims], sub[redist::max_dims], start[redist::max_dims];
  for (int k = 0; k < p.rank; ++k) {
    sizes[k] = static_cast<int>(e[k]);
    sub[k] = static_cast<int>(p.extent(k));
    start[k] = static_cast<int>(p.lo[k] - tb.lo[k]);
  }
  MPI_Datatype t;
  MPI_Type_create_subarray(p.rank, sizes, sub, start, MPI_ORDER_C, MPI_FLOAT, &t);
  MPI_Type_commit(&t);
  return t;
}

/// Baseline (a): pull every piece from the first holder. With `sender_rule`, the same code
/// moves the pieces of redist's exchange instead (plan_exchange: replicas share the sending),
/// which separates the pattern from the executor's own cost.
struct pull_baseline {
  struct msg {
    int peer, tag;
    MPI_Datatype type;
    bool send;
  };
  std::vector<msg> msgs;
  std::vector<box> local;  // pieces this rank copies from its own source tile
  box sb, tb;
  redist::extents se{}, te{};
  std::uint64_t max_received = 0;

  /// `sender_rule`: the exchange's pieces (with `node_ranks`, its senders by node) instead
  /// of the first holders'.
  pull_baseline(const placed_layout& a, const placed_layout& b, std::uint64_t me, bool sender_rule = false,
                std::uint64_t node_ranks = 0) {
    const std::vector<box> S = boxes_of(a), T = boxes_of(b);
    sb = S[me];
    tb = T[me];
    se = redist::tile_extents(a.pm.mesh, a.type);
    te = redist::tile_extents(b.pm.mesh, b.type);
    std::vector<redist::exchange_piece> pieces;
    if (sender_rule) {
      const redist::exchange_plan x = redist::plan_exchange(S, T, redist::plan_detail::pieces, std::nullopt, node_ranks);
      if (!x.error.empty()) throw std::runtime_error("plan_exchange: " + x.error);
      pieces = x.pieces;
    } else {
      const auto firsts = first_holders(S);
      for (std::uint64_t r = 0; r < W; ++r) {
        if (T[r].empty()) continue;
        for (const auto& [h, B] : firsts) {
          const box p = redist::intersect(T[r], B);
          if (!p.empty()) pieces.push_back({static_cast<rank_t>(S[r] == B ? r : h), static_cast<rank_t>(r), p});
        }
      }
    }
    std::vector<std::uint64_t> got(W, 0);
    int tag = 0;
    for (const redist::exchange_piece& x : pieces) {
      ++tag;
      if (x.b.empty()) continue;
      if (x.from == x.to) {
        if (x.to == me) local.push_back(x.b);
        continue;
      }
      got[x.to] += x.b.size();
      if (x.from == me) msgs.push_back({static_cast<int>(x.to), tag, subarray(se, sb, x.b), true});
      if (x.to == me) msgs.push_back({static_cast<int>(x.from), tag, subarray(te, tb, x.b), false});
    }
    for (std::uint64_t g : got) max_received = std::max(max_received, g);
  }
  pull_baseline(const pull_baseline&) = delete;
  pull_baseline& operator=(const pull_baseline&) = delete;
  ~pull_baseline() {
    for (msg& m : msgs) MPI_Type_free(&m.type);
  }

  void run(const darray<float>& in, darray<float>& out) {
    std::vector<MPI_Request> req;
    req.reserve(msgs.size());
    for (const msg& m : msgs)
      if (!m.send) MPI_Irecv(out.data(), 1, m.type, m.peer, m.tag, MPI_COMM_WORLD, &req.emplace_back());
    for (const msg& m : msgs)
      if (m.send) MPI_Isend(in.data(), 1, m.type, m.peer, m.tag, MPI_COMM_WORLD, &req.emplace_back());
    for (const box& p : local) copy_piece(in.data(), se, sb, out.data(), te, tb, p);
    MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
  }
};

/// Baseline (b): gather the distinct source tiles on rank 0, assemble, scatter the target boxes.
struct gather_scatter_baseline {
  std::vector<std::pair<std::uint64_t, box>> firsts;
  std::vector<box> T;
  std::vector<int> gcount, gdispl, scount, sdispl;
  redist::host_vector<float> staging, global, packed, recv;  // on huge pages, as the tiles
  box whole, tb;
  redist::extents se{}, te{}, ge{};
  bool sends = false, contiguous = true;
  std::uint64_t me, max_received = 0;

  gather_scatter_baseline(const placed_layout& a, const placed_layout& b, std::uint64_t me_) : me(me_) {
    const std::vector<box> S = boxes_of(a);
    T = boxes_of(b);
    firsts = first_holders(S);
    se = redist::tile_extents(a.pm.mesh, a.type);
    te = redist::tile_extents(b.pm.mesh, b.type);
    ge = redist::global_extents(a.type);
    whole.rank = a.type.rank;
    for (int d = 0; d < whole.rank; ++d) whole.hi[d] = ge[d];
    tb = T[me];
    const int L = static_cast<int>(se.size());
    gcount.assign(W, 0);
    gdispl.assign(W, 0);
    scount.assign(W, 0);
    sdispl.assign(W, 0);
    int off = 0;
    std::vector<std::uint64_t> got(W, 0);
    for (const auto& [h, B] : firsts) {
      gcount[h] = L;
      gdispl[h] = off;
      off += L;
      sends = sends || h == me;
      if (h != 0) got[0] += B.size();
    }
    int soff = 0;
    for (std::uint64_t r = 0; r < W; ++r) {
      scount[r] = static_cast<int>(T[r].size());
      sdispl[r] = soff;
      soff += scount[r];
      if (r != 0) got[r] += T[r].size();
    }
    for (std::uint64_t g : got) max_received = std::max(max_received, g);
    if (me == 0) {
      staging.resize(static_cast<std::size_t>(off));
      global.resize(ge.size());
      packed.resize(static_cast<std::size_t>(soff));
    }
    for (int d = 0; d < tb.rank; ++d) contiguous = contiguous && tb.extent(d) == te[d];
    if (!contiguous) recv.resize(tb.size());
  }

  void run(const darray<float>& in, darray<float>& out) {
    MPI_Gatherv(in.data(), sends ? static_cast<int>(in.size()) : 0, MPI_FLOAT, staging.data(), gcount.data(),
                gdispl.data(), MPI_FLOAT, 0, MPI_COMM_WORLD);
    if (me == 0) {
      for (const auto& [h, B] : firsts) copy_piece(staging.data() + gdispl[h], se, B, global.data(), ge, whole, B);
      for (std::uint64_t r = 0; r < W; ++r) {
        if (T[r].empty()) continue;
        redist::extents be{};
        be.rank = T[r].rank;
        for (int d = 0; d < be.rank; ++d) be[d] = T[r].extent(d);
        copy_piece(global.data(), ge, whole, packed.data() + sdispl[r], be, T[r], T[r]);
      }
    }
    float* dst = contiguous ? out.data() : recv.data();
    MPI_Scatterv(packed.data(), scount.data(), sdispl.data(), MPI_FLOAT, dst, static_cast<int>(tb.size()), MPI_FLOAT, 0,
                 MPI_COMM_WORLD);
    if (!contiguous && !tb.empty()) {
      redist::extents be{};
      be.rank = tb.rank;
      for (int d = 0; d < be.rank; ++d) be[d] = tb.extent(d);
      copy_piece(recv.data(), be, tb, out.data(), te, tb, tb);
    }
  }
};

/// One system measured in a scenario.
struct sys {
  std::string name, steps;
  double predicted = std::numeric_limits<double>::quiet_NaN();  // seconds
  std::uint64_t max_received = 0, bound = 0;                     // elements, the busiest rank
  std::uint64_t held = 0;  // bytes this rank's executor holds beyond the tiles (executor systems)
  bool chosen = false;
  std::function<void(const darray<float>&, darray<float>&)> run;
  darray<float> out;
  std::vector<double> times;
  bool ok = true;
  [[nodiscard]] double median() const { return redist::bench::median(times); }
  [[nodiscard]] double best() const { return times.empty() ? 0 : *std::min_element(times.begin(), times.end()); }
};

std::string steps_text(const redist::program& p) {
  if (p.steps.empty()) return "(no step)";
  std::string s;
  for (const redist::step& st : p.steps) s += (s.empty() ? "" : " + ") + std::string(redist::op_name(st.kind));
  return s;
}

/// True where p and q move the same data the same way (the same steps with the same groups,
/// indices, destinations, boxes and senders by node, between the same layouts): two names for
/// one program.
bool same_program(const redist::program& p, const redist::program& q) {
  if (p.steps.size() != q.steps.size() || redist::source_boxes(p) != redist::source_boxes(q) ||
      redist::target_boxes(p) != redist::target_boxes(q))
    return false;
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const redist::step &a = p.steps[i], &b = q.steps[i];
    if (a.kind != b.kind || a.concat_dim != b.concat_dim || a.split_dim != b.split_dim || a.parts != b.parts ||
        a.members != b.members || a.index != b.index || a.dest != b.dest || a.boxes != b.boxes ||
        a.node_ranks != b.node_ranks)
      return false;
  }
  return true;
}

/// Per world rank: |target box| - |its intersection with the source box it held| for program p.
std::vector<std::uint64_t> bound_per_rank(const redist::program& p) {
  const std::vector<box> S = redist::source_boxes(p), T = redist::target_boxes(p);
  std::vector<std::uint64_t> v(T.size());
  for (std::size_t r = 0; r < T.size(); ++r) v[r] = T[r].size() - redist::intersect(T[r], S[r]).size();
  return v;
}

std::uint64_t max_of(const std::vector<std::uint64_t>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

/// True where p is one exchange whose every rank receives exactly its lower bound.
bool exchange_at_bound(const redist::program& p) {
  if (p.steps.size() != 1 || p.steps[0].kind != redist::op::exchange) return false;
  const redist::exchange_plan x = redist::plan_exchange(p, 0);
  return x.error.empty() && x.received == bound_per_rank(p);
}

struct context {
  redist::mpi_backend& mpi;
  std::uint64_t me;
  int runs;
  const redist::time_profile* profile;  // the planning profile (the built-in one, with --nodes its link term)
  bool all_ok = true;
};

/// Run every system `runs` times, alternating; checks every output. `out` must be set.
void measure(context& cx, std::vector<sys>& systems, const darray<float>& in) {
  auto one = [&](sys& s) {
    std::fill(s.out.data(), s.out.data() + s.out.size(), std::numeric_limits<float>::quiet_NaN());
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    s.run(in, s.out);
    double dt = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const redist::tile_check c = redist::check_global_index(s.out);
    std::uint64_t held = s.out.holds() ? 1 : 0;
    for (int d = 0; held && d < s.out.rank(); ++d) held *= s.out.held_extent(d);
    if (!c.ok() || c.checked != held) s.ok = false;
    return slowest;
  };
  for (sys& s : systems) one(s);  // warm-up
  // Every run takes the systems in another order (the same on every rank), so that no system
  // always follows the same one (a gather-scatter leaves the caches cold for the next).
  std::vector<std::size_t> order(systems.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937 rng(20261125u);
  for (int r = 0; r < cx.runs; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t i : order) systems[i].times.push_back(one(systems[i]));
  }
  for (sys& s : systems) {
    int ok = s.ok ? 1 : 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    s.ok = all != 0;
    if (!s.ok) {
      cx.all_ok = false;
      if (cx.me == 0) std::fprintf(stderr, "wrong data: %s\n", s.name.c_str());
    }
  }
}

/// The baselines for a to b, with their output tiles.
void add_baselines(context& cx, std::vector<sys>& v, const placed_layout& a, const placed_layout& b) {
  auto pull = std::make_shared<pull_baseline>(a, b, cx.me);
  sys p;
  p.name = "pull (first holder)";
  p.steps = "Isend/Irecv";
  p.max_received = pull->max_received;
  p.run = [pull](const darray<float>& in, darray<float>& out) { pull->run(in, out); };
  p.out = tile_of(b, cx.me);
  v.push_back(std::move(p));
  auto gs = std::make_shared<gather_scatter_baseline>(a, b, cx.me);
  sys g;
  g.name = "gather-scatter (rank 0)";
  g.steps = "Gatherv + Scatterv";
  g.max_received = gs->max_received;
  g.run = [gs](const darray<float>& in, darray<float>& out) { gs->run(in, out); };
  g.out = tile_of(b, cx.me);
  v.push_back(std::move(g));
}

std::string ms(double seconds) {
  if (std::isnan(seconds)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", seconds * 1e3);
  return b;
}
std::string ratio(double num, double den) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", num / den);
  return b;
}
std::string mib(std::uint64_t elements) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", static_cast<double>(elements) * 4 / MiB);
  return b;
}

/// A scenario of groups 1-4: plan_between's candidates and the two baselines.
struct scenario {
  std::string name;
  placed_layout a, b;
};

struct summary {
  int exchange_chosen = 0, exchange_at_bound = 0;
  std::vector<std::string> replicated_ratios;
  int relabel_pairs = 0, relabel_pred_slower = 0, relabel_taken = 0;
  int grid_pairs = 0, grid_lower = 0, grid_same = 0, grid_higher = 0;
  std::vector<std::string> chooser_notes;
  std::vector<double> relabel_median, relabel_best;  // not relabelled / relabelled, where relabelling is taken
  std::vector<double> grid_pull, grid_gs;            // pull / chosen, gather-scatter / chosen (relabel on)
  std::vector<double> executor_cost;                 // the chosen exchange / its bare pieces, medians
};

/// Build an executor system with its output from a warm-up call.
sys make_executor_system(context& cx, const std::string& name, const redist::plan_candidate& k, bool chosen,
                         const darray<float>& in) {
  sys s;
  s.name = name;
  s.steps = steps_text(k.prog);
  s.predicted = k.seconds;
  s.max_received = redist::run_received_elements(k.prog);
  s.bound = max_of(bound_per_rank(k.prog));
  s.chosen = chosen;
  auto ex = std::make_shared<redist::executor<float, redist::mpi_backend>>(cx.mpi, k.prog);
  s.held = ex->bytes_held();
  s.out = ex->run(in);
  s.run = [ex](const darray<float>& x, darray<float>& out) { ex->run(x, out); };
  return s;
}

void run_scenario(context& cx, const scenario& sc, bool replicated_target, summary& sum) {
  redist::between_options o;
  o.synth.element_bytes = 4;
  o.synth.time_model = cx.profile;
  const redist::plan_choice c = redist::plan_between(sc.a, sc.b, W, o);
  darray<float> in = tile_of(sc.a, cx.me);
  redist::fill_global_index(in);
  std::vector<sys> v;
  for (std::size_t i = 0; i < c.candidates.size(); ++i)
    v.push_back(make_executor_system(cx, c.candidates[i].name, c.candidates[i], i == c.chosen, in));
  // Where the chosen plan's exchanges take other senders by node (step::node_ranks), the
  // same program with the replicas taking turns whatever the node.
  redist::plan_candidate turns{"exchange, replicas in turn", c.candidates[c.chosen].prog, 0};
  bool by_node = false;
  {
    const redist::box_states t = redist::trace_states(turns.prog);
    for (std::size_t i = 0; i < turns.prog.steps.size(); ++i) {
      redist::step& st = turns.prog.steps[i];
      if (st.kind != redist::op::exchange || st.node_ranks == 0) continue;
      const redist::exchange_plan near = redist::plan_exchange(turns.prog, i, t);
      st.node_ranks = 0;
      const redist::exchange_plan plain = redist::plan_exchange(turns.prog, i, t);
      for (std::size_t k = 0; k < near.pieces.size() && !by_node; ++k) by_node = near.pieces[k].from != plain.pieces[k].from;
    }
  }
  std::vector<const redist::program*> progs;  // of the executor systems
  for (const redist::plan_candidate& k : c.candidates) progs.push_back(&k.prog);
  if (by_node) {
    turns.seconds = redist::predicted_seconds(turns.prog, *cx.profile);
    v.push_back(make_executor_system(cx, turns.name, turns, false, in));
    progs.push_back(&turns.prog);
  }
  const std::size_t nexec = v.size();
  add_baselines(cx, v, sc.a, sc.b);
  {
    const std::uint64_t nodes = cx.profile->spans_nodes(W) ? cx.profile->node_ranks : 0;
    auto bare = std::make_shared<pull_baseline>(sc.a, sc.b, cx.me, true, nodes);
    sys x;
    x.name = "exchange pieces, bare MPI";
    x.steps = "Isend/Irecv (no executor)";
    x.max_received = bare->max_received;
    x.run = [bare](const darray<float>& i, darray<float>& out) { bare->run(i, out); };
    x.out = tile_of(sc.b, cx.me);
    v.push_back(std::move(x));
  }
  measure(cx, v, in);
  const sys& chosen = v[c.chosen];
  const double pull = v[nexec].median(), gs = v[nexec + 1].median();
  if (c.candidates[c.chosen].name == "exchange") sum.executor_cost.push_back(chosen.median() / v[nexec + 2].median());
  if (c.candidates[c.chosen].name == "exchange") {
    ++sum.exchange_chosen;
    sum.exchange_at_bound += exchange_at_bound(c.candidates[c.chosen].prog) ? 1 : 0;
  }
  if (replicated_target) {
    std::string x = sc.name + ": " + ratio(pull, chosen.median()) + "x (" + chosen.name;
    for (std::size_t i = 0; i < nexec; ++i)
      if (i != c.chosen) x += "; " + v[i].name + " " + ratio(pull, v[i].median()) + "x";
    sum.replicated_ratios.push_back(x + ")");
  }
  for (std::size_t i = 0; i < nexec; ++i)
    if (same_program(*progs[i], c.candidates[c.chosen].prog) && i != c.chosen) v[i].steps += " (the same program)";
  for (std::size_t i = 0; i < nexec; ++i)
    if (i != c.chosen && v[i].median() < 0.9 * chosen.median() && !same_program(*progs[i], c.candidates[c.chosen].prog))
      sum.chooser_notes.push_back(sc.name + ": chose " + chosen.name + " (predicted " + ms(chosen.predicted) +
                                  " ms, measured " + ms(chosen.median()) + " ms), but " + v[i].name + " (predicted " +
                                  ms(v[i].predicted) + " ms) measured " + ms(v[i].median()) + " ms");
  if (cx.me != 0) return;
  const std::uint64_t bound = max_of(bound_per_rank(c.candidates[c.chosen].prog));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const sys& s = v[i];
    const std::string cell = i == 0 ? sc.name + "<br>" + layout_text(sc.a) + " -> " + layout_text(sc.b) : "";
    std::printf("| %s | %s%s: %s | %s | %s | %s | %s | %s | %s | %s |%s\n", cell.c_str(), s.chosen ? "**" : "",
                s.name.c_str(), (s.steps + (s.chosen ? " (chosen)**" : "")).c_str(), ms(s.predicted).c_str(),
                ms(s.best()).c_str(), ms(s.median()).c_str(), ratio(pull, s.median()).c_str(), ratio(gs, s.median()).c_str(),
                mib(s.max_received).c_str(), i == 0 ? mib(bound).c_str() : "", s.ok ? "" : " WRONG DATA");
  }
  std::fflush(stdout);
}

/// Group 7: a source with pending sums, which the baselines cannot reduce: plan_between's
/// candidates alone, each against the chosen one.
void run_candidates(context& cx, const scenario& sc) {
  redist::between_options o;
  o.synth.element_bytes = 4;
  o.synth.time_model = cx.profile;
  const redist::plan_choice c = redist::plan_between(sc.a, sc.b, W, o);
  darray<float> in = tile_of(sc.a, cx.me);
  redist::fill_global_index(in);  // every source rank's partial values
  std::vector<sys> v;
  std::vector<std::uint64_t> held;  // the most scratch any rank's executor holds, bytes
  for (std::size_t i = 0; i < c.candidates.size(); ++i) {
    v.push_back(make_executor_system(cx, c.candidates[i].name, c.candidates[i], i == c.chosen, in));
    std::uint64_t most = 0;
    MPI_Allreduce(&v.back().held, &most, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    held.push_back(most);
  }
  measure(cx, v, in);
  if (cx.me != 0) return;
  const sys& chosen = v[c.chosen];
  for (std::size_t i = 0; i < v.size(); ++i) {
    const sys& s = v[i];
    const std::string cell = i == 0 ? sc.name + "<br>" + layout_text(sc.a) + " -> " + layout_text(sc.b) : "";
    std::printf("| %s | %s%s: %s | %s | %s | %s | %s | %s |%s\n", cell.c_str(), s.chosen ? "**" : "", s.name.c_str(),
                (s.steps + (s.chosen ? " (chosen)**" : "")).c_str(), ms(s.predicted).c_str(), ms(s.best()).c_str(),
                ms(s.median()).c_str(), ratio(s.median(), chosen.median()).c_str(), mib(held[i] / 4).c_str(),
                s.ok ? "" : " WRONG DATA");
  }
  std::fflush(stdout);
}

void table_head(const char* title, const context& cx) {
  if (cx.me != 0) return;
  std::printf("\n### %s\n\n", title);
  std::printf("| scenario | plan: steps | predicted ms | best ms | median ms | vs pull | vs gather-scatter | max received / rank MiB | lower bound MiB |\n"
              "|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
}

/// Group 5: one pair of the 2-D grid set, without and with relabelling.
void run_grid_pair(context& cx, const placed_layout& a, const placed_layout& b, bool grid_to_grid, summary& sum) {
  redist::between_options o;
  o.synth.element_bytes = 4;
  o.synth.time_model = cx.profile;
  const redist::plan_choice c = redist::plan_between(a, b, W, o);
  o.relabel = true;
  const redist::plan_choice r = redist::plan_between(a, b, W, o);
  const bool relabelled = r.reason.find("relabelled target") != std::string::npos;
  darray<float> in = tile_of(a, cx.me);
  redist::fill_global_index(in);
  std::vector<sys> v;
  for (std::size_t i = 0; i < c.candidates.size(); ++i)
    v.push_back(make_executor_system(cx, c.candidates[i].name, c.candidates[i], i == c.chosen, in));
  const std::size_t nexec = v.size();
  std::size_t irel = c.chosen;
  if (relabelled) {
    irel = v.size();
    v.push_back(make_executor_system(cx, "relabelled " + r.candidates[r.chosen].name, r.candidates[r.chosen], false, in));
  }
  const std::size_t ibase = v.size();
  add_baselines(cx, v, a, b);
  measure(cx, v, in);
  const redist::program& pc = c.candidates[c.chosen].prog;
  const redist::program& pr = r.candidates[r.chosen].prog;
  for (const redist::program* p : {&pc, &pr}) {
    if (p->steps.size() == 1 && p->steps[0].kind == redist::op::exchange) {
      ++sum.exchange_chosen;
      sum.exchange_at_bound += exchange_at_bound(*p) ? 1 : 0;
    }
    if (!relabelled) break;
  }
  ++sum.relabel_pairs;
  sum.relabel_taken += relabelled ? 1 : 0;
  if (r.candidates[r.chosen].seconds > c.candidates[c.chosen].seconds) ++sum.relabel_pred_slower;
  const std::uint64_t rc_recv = v[c.chosen].max_received, rr_recv = v[irel].max_received;
  if (grid_to_grid) {
    ++sum.grid_pairs;
    if (rr_recv < rc_recv) ++sum.grid_lower;
    else if (rr_recv == rc_recv) ++sum.grid_same;
    else ++sum.grid_higher;
  }
  const sys& ch = v[c.chosen];
  if (relabelled) {
    sum.relabel_median.push_back(ch.median() / v[irel].median());
    sum.relabel_best.push_back(ch.best() / v[irel].best());
  }
  sum.grid_pull.push_back(v[ibase].median() / v[irel].median());
  sum.grid_gs.push_back(v[ibase + 1].median() / v[irel].median());
  for (std::size_t i = 0; i < nexec; ++i)
    if (i != c.chosen && v[i].median() < 0.9 * ch.median() &&
        !same_program(c.candidates[i].prog, c.candidates[c.chosen].prog))
      sum.chooser_notes.push_back(layout_text(a) + " -> " + layout_text(b) + ": chose " + ch.name + " (predicted " +
                                  ms(ch.predicted) + " ms, measured " + ms(ch.median()) + " ms), but " + v[i].name +
                                  " (predicted " + ms(v[i].predicted) + " ms) measured " + ms(v[i].median()) + " ms");
  if (cx.me != 0) return;
  std::string others;
  for (std::size_t i = 0; i < nexec; ++i)
    if (i != c.chosen)
      others += (others.empty() ? "" : "; ") + v[i].name +
                (same_program(c.candidates[i].prog, c.candidates[c.chosen].prog) ? " (the same program) " : " ") +
                ms(v[i].predicted) + " / " + ms(v[i].median());
  if (others.empty()) others = "-";
  const sys& rl = v[irel];
  std::string order = relabelled ? "`" + redist::placed_mesh_text(redist::placed_mesh{pr.target_mesh(), pr.target_devices}) + "`"
                                 : "as given";
  const double pull = v[ibase].median(), gs = v[ibase + 1].median();
  std::printf("| `%s` -> `%s` | %s: %s | %s / %s / %s | %s / %s | %s | %s: %s | %s / %s / %s | %s / %s | %s / %s | %s | %s | %s |%s\n",
              std::string(redist::type_text(a.pm.mesh, a.type).view()).c_str(),
              std::string(redist::type_text(b.pm.mesh, b.type).view()).c_str(),
              ch.name.c_str(), ch.steps.c_str(), ms(ch.predicted).c_str(), ms(ch.best()).c_str(), ms(ch.median()).c_str(),
              mib(ch.max_received).c_str(), mib(ch.bound).c_str(), order.c_str(),
              relabelled ? rl.name.c_str() : "same", relabelled ? rl.steps.c_str() : "-", ms(rl.predicted).c_str(),
              ms(rl.best()).c_str(), ms(rl.median()).c_str(), mib(rl.max_received).c_str(), mib(rl.bound).c_str(), ms(pull).c_str(),
              ms(gs).c_str(), ratio(pull, rl.median()).c_str(), ratio(gs, rl.median()).c_str(), others.c_str(),
              [&] {
                bool ok = true;
                for (const sys& s : v) ok = ok && s.ok;
                return ok ? "" : " WRONG DATA";
              }());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    int runs = 10;
    std::uint64_t node_ranks = 0;
    double gbps = 0;
    std::string profile_file;
    bool usage = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--nodes" && i + 1 < argc) node_ranks = std::strtoull(argv[++i], nullptr, 10);
      else if (a == "--link-gbps" && i + 1 < argc) gbps = std::atof(argv[++i]);
      else if (a == "--profile" && i + 1 < argc) profile_file = argv[++i];
      else if (i == 1 && std::atoi(argv[i]) > 0) runs = std::atoi(argv[i]);
      else usage = true;
    }
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (usage || world != static_cast<int>(W) || (node_ranks > 0) != (gbps > 0) || node_ranks >= W ||
        (!profile_file.empty() && node_ranks > 0)) {
      if (me == 0)
        std::fprintf(stderr, "usage: mpirun -np 8 cross_mesh [runs] [--nodes R --link-gbps G | --profile FILE] (R from 1 "
                             "to 7; %d ranks given)\n",
                     world);
      MPI_Finalize();
      return 2;
    }
    redist::time_profile profile = redist::builtin_profile;
    profile.node_ranks = node_ranks;
    profile.node_per_byte = gbps > 0 ? 8 / (gbps * 1e9) : 0;
    if (!profile_file.empty()) {  // a calibrated profile, with its link where it has one
      profile = redist::profile_from_file(profile_file);
      node_ranks = profile.spans_nodes(W) ? profile.node_ranks : 0;
      gbps = node_ranks > 0 ? 8e-9 / profile.node_per_byte : 0;
    }
    redist::mpi_backend mpi(MPI_COMM_WORLD, {.node_size = node_ranks});
    context cx{mpi, mpi.rank(), runs, &profile};
    char nodes[96] = "";
    if (node_ranks > 0)
      std::snprintf(nodes, sizeof nodes, " with nodes of %llu ranks joined by links of %.2f Gbit/s",
                    static_cast<unsigned long long>(node_ranks), gbps);
    const std::string source = profile_file.empty() ? "built-in profile" : "profile " + profile_file;
    if (cx.me == 0)
      std::printf("cross_mesh: 8 ranks, float32, medians of %d runs, the systems interleaved in a new order every run (slowest rank per run), every output "
                  "checked; predicted: %s%s; vs X = X's median / this one's (> 1: this one is faster)\n",
                  cx.runs, source.c_str(), nodes);
    auto load = [] {
      char b[128] = "?";
      if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (!std::fgets(b, sizeof b, f)) b[0] = 0;
        std::fclose(f);
      }
      std::string s(b);
      return s.substr(0, s.find(' ', s.find(' ', s.find(' ') + 1) + 1));
    };
    if (cx.me == 0) std::printf("load average at the start (1, 5, 15 min): %s\n", load().c_str());
    summary sum;
    const std::string src4 = "{dp: 2, tp: 2} @ [0, 1, 2, 3]", dst4 = "{dp: 2, tp: 2} @ [4, 5, 6, 7]";
    const placed_layout act = layout(src4, "[{dp}8, 512, {tp}512]");  // [B, S, H] = 8 MiB
    table_head("1. Pipeline boundary: activations [B, S, H] = [8, 512, 512] (8 MiB) from stage ranks 0-3 to 4-7",
               cx);
    run_scenario(cx, {"1a same layout", act, layout(dst4, "[{dp}8, 512, {tp}512]")}, false, sum);
    run_scenario(cx, {"1b another layout", act, layout(dst4, "[{dp}8, {tp}512, 512]")}, false, sum);
    table_head("2. Pipeline boundary to replicated targets (8 MiB)", cx);
    run_scenario(cx, {"2a replicated", act, layout(dst4, "[8, 512, 512]")}, true, sum);
    run_scenario(cx, {"2b replicated over tp", act, layout(dst4, "[{dp}8, 512, 512]")}, true, sum);
    table_head("3. Weight sync trainer -> inference: [2048, 1024] (8 MiB) replicated on 0-3 to replicated on 4-7",
               cx);
    run_scenario(cx, {"3 weight sync", layout("{x: 4} @ [0, 1, 2, 3]", "[2048, 1024]"),
                      layout("{y: 4} @ [4, 5, 6, 7]", "[2048, 1024]")},
                 true, sum);
    table_head("4. Checkpoint 8 -> 6: [1920, 1024] (7.5 MiB)", cx);
    run_scenario(cx, {"4 checkpoint 8 -> 6", layout("{x: 8}", "[{x}1920, 1024]"),
                      layout("{y: 6} @ [0, 1, 2, 3, 4, 5]", "[{y}1920, 1024]")},
                 false, sum);
    table_head("6. Weights replicated over dp (HSDP, dp = ranks 0-3 and 4-7) to TP 8: [2048, 1024] (8 MiB)", cx);
    run_scenario(cx, {"6 HSDP -> TP 8", layout("{dp: 2, fsdp: 4}", "[{fsdp}2048, 1024]"),
                      layout("{tp: 8}", "[2048, {tp}1024]")},
                 false, sum);
    // 5. The 2-D grid set: 2048 x 1024 (8 MiB) between {x: 2, y: 4}, {x: 4, y: 2} and {x: 8}.
    if (cx.me == 0) {
      std::printf("\n### 5. 2-D grid set: [2048, 1024] (8 MiB) between `{x: 2, y: 4}`, `{x: 4, y: 2}` and `{x: 8}` on "
                  "ranks 0-7, without and with relabelling\n\n");
      std::printf("| source mesh -> target mesh: source -> target | chosen: steps | predicted / best / median ms | max "
                  "received / bound MiB | relabel: target order | relabelled: steps | predicted / best / median ms | max "
                  "received / bound MiB | pull / gather-scatter ms | relabel chosen vs pull | vs gather-scatter | "
                  "other candidates: predicted / median ms |\n"
                  "|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|---|\n");
    }
    const char* meshes[] = {"{x: 2, y: 4}", "{x: 4, y: 2}"};
    const char* types[] = {"[{x}2048, {y}1024]", "[{y}2048, {x}1024]", "[{x, y}2048, 1024]"};
    for (int s = 0; s < 2; ++s) {
      if (cx.me == 0) std::printf("| **`%s` -> `%s`** | | | | | | | | | | | |\n", meshes[s], meshes[1 - s]);
      for (const char* ta : types)
        for (const char* tb : types) run_grid_pair(cx, layout(meshes[s], ta), layout(meshes[1 - s], tb), true, sum);
    }
    for (int s = 0; s < 2; ++s) {
      if (cx.me == 0) std::printf("| **`{x: 8}` -> `%s`** | | | | | | | | | | | |\n", meshes[s]);
      for (const char* tb : types) run_grid_pair(cx, layout("{x: 8}", "[{x}2048, 1024]"), layout(meshes[s], tb), false, sum);
    }
    for (int s = 0; s < 2; ++s) {
      if (cx.me == 0) std::printf("| **`%s` -> `{x: 8}`** | | | | | | | | | | | |\n", meshes[s]);
      for (const char* ta : types) run_grid_pair(cx, layout(meshes[s], ta), layout("{x: 8}", "[{x}2048, 1024]"), false, sum);
    }

    if (cx.me == 0)
      std::printf("\n### 7. Gradients to the next stage's ranks: [2048, 1024] (8 MiB) pending over the source ranks\n\n"
                  "| scenario | plan: steps | predicted ms | best ms | median ms | / chosen (medians) | executor's "
                  "buffers, most of a rank MiB |\n|---|---|---:|---:|---:|---:|---:|\n");
    run_candidates(cx, {"7a to a row-sharded stage", layout("{x: 4} @ [0, 1, 2, 3]", "[2048, 1024] sum{x}"),
                        layout("{y: 4} @ [4, 5, 6, 7]", "[{y}2048, 1024]")});
    run_candidates(cx, {"7b to a replicated stage", layout("{x: 4} @ [0, 1, 2, 3]", "[2048, 1024] sum{x}"),
                        layout("{y: 4} @ [4, 5, 6, 7]", "[2048, 1024]")});
    run_candidates(cx, {"7c to overlapping ranks", layout("{x: 4} @ [0, 1, 2, 3]", "[2048, 1024] sum{x}"),
                        layout("{y: 6} @ [2, 3, 4, 5, 6, 7]", "[{y}2048, 1024]")});

    if (cx.me == 0) {
      std::printf("\nSummary\n\n");
      std::printf("- received = lower bound where the exchange is chosen: %d of %d chosen exchanges receive exactly "
                  "|target box| - |overlap with the box held| on every rank\n",
                  sum.exchange_at_bound, sum.exchange_chosen);
      std::string r;
      for (const std::string& x : sum.replicated_ratios) r += (r.empty() ? "" : ", ") + x;
      std::printf("- >= 2x faster than the point-to-point pull on replicated targets: pull / chosen = %s\n", r.c_str());
      std::printf("- relabelling never predicted slower: %d of %d pairs predicted slower with it (taken on %d); lowers "
                  "the max received on 2x4 <-> 4x2: lower on %d, same on %d, higher on %d of %d pairs\n",
                  sum.relabel_pred_slower, sum.relabel_pairs, sum.relabel_taken, sum.grid_lower, sum.grid_same,
                  sum.grid_higher, sum.grid_pairs);
      std::printf("- where relabelling is taken (%zu pairs), not relabelled / relabelled: geomean %.2f of the medians, "
                  "%.2f of the best runs; the grid set's chosen plans (relabelling on) against the pull %.2fx, against "
                  "gather-scatter %.2fx (geomean of median ratios, %zu pairs)\n",
                  sum.relabel_median.size(), redist::bench::geomean(sum.relabel_median),
                  redist::bench::geomean(sum.relabel_best), redist::bench::geomean(sum.grid_pull),
                  redist::bench::geomean(sum.grid_gs), sum.grid_pull.size());
      std::printf("- the executor's cost on the chosen exchanges of groups 1-4: executor / the same pieces in bare MPI = "
                  "%.2f (geomean of medians, %zu scenarios)\n",
                  redist::bench::geomean(sum.executor_cost), sum.executor_cost.size());
      for (const std::string& n : sum.chooser_notes) std::printf("- chooser measured slower: %s\n", n.c_str());
      std::printf("- outputs: %s\n", cx.all_ok ? "every tile of every run correct" : "WRONG DATA (see stderr)");
    }
    rc = cx.all_ok ? 0 : 1;
  }
  MPI_Finalize();
  return rc;
}
