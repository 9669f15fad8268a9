// redist/lower/synthesize.hpp -- the run-time entry point: types in, collective program
// out (search with Boost.Graph, then lowering), then the choice between that program and a
// single exchange by predicted time (core/time_model.hpp; the built-in profile unless the
// caller gives one). By default the search itself minimizes predicted time
// (objective::time); objective::bytes gives the paper's fewest-bytes collective program,
// alone unless a profile is given or a dimension is uneven. Types with an uneven dimension
// are always planned by the choice, between the collectives that stay exact on them and
// the exchange (uneven_program).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/time_model.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/lower.hpp"
#include "redist/lower/node_links.hpp"
#include "redist/program.hpp"
#include "redist/search/bgl_search.hpp"
#include "redist/search/weak_graph.hpp"

namespace redist {

struct synth_options {
  std::uint64_t element_bytes = 4;  ///< bytes per element, for cost_bytes and the time model
  double memory_budget = 1.0;       ///< factor over max(localsize(source), localsize(target))
  /// The profile of the time model (core/time_model.hpp); nullptr: the built-in one.
  const time_profile* time_model = nullptr;
  /// What the search minimizes first. objective::time (the default): the collective
  /// program of least predicted time, then the choice between it and the single exchange
  /// (choose_plan below). objective::bytes: the program of least Fig. 11 cost (the paper's
  /// search), chosen against the exchange only when a profile is given or a dimension is
  /// uneven (always chosen by time).
  objective goal = objective::time;
  /// The search's options for these options.
  [[nodiscard]] search_options search() const {
    return search_options{memory_budget, goal, time_model ? *time_model : builtin_profile, element_bytes};
  }
};

/// Predicted seconds of step i of p, an allgather or alltoall the executor clips to padded
/// tiles (redist/exchange.hpp padded_clips; `t`: the boxes through step i), on ranks that
/// hold `local` elements before it: in the pieces the executor moves it in, one backend
/// call each (core/time_model.hpp pieced_step_seconds).
inline double clipped_step_seconds(const program& p, std::size_t i, const box_states& t, std::uint64_t local,
                                   const time_profile& P) {
  const step& s = p.steps[i];
  return pieced_step_seconds(P, s.kind, s.parts, local, s.local_after, p.element_bytes, end_tile_elements(p),
                             padded_block(p, i, t, local), false);
}

namespace detail {
/// Where P's ranks span nodes of p's world (core/time_model.hpp), p's exchanges take each
/// piece from a holder on the receiver's node where one is (step::node_ranks,
/// redist/exchange.hpp): what the link term then prices, and what the executors run.
inline void senders_by_node(program& p, const time_profile& P) {
  if (!P.spans_nodes(p.world_size())) return;
  for (step& s : p.steps)
    if (s.kind == op::exchange) s.node_ranks = P.node_ranks;
}

/// predicted_seconds, where `sizes` (if given) are those of p's first exchange step, planned
/// by the caller (the candidates of choose_plan and plan_between: exchange_program and
/// exchange_between had them).
inline double predicted_seconds(const program& p, const time_profile& P, const exchange_plan* sizes) {
  double t = 0;
  std::uint64_t local = local_size(p.m, p.source);
  const std::uint64_t e = p.element_bytes;
  box_states states;  // followed once, where a step may run as an exchange
  // The link term (core/time_model.hpp): bytes over the busiest node's link, from an
  // exchange's pieces or a collective's groups.
  const bool nodes = P.spans_nodes(p.world_size());
  auto link = [&](std::uint64_t elements) {
    return P.node_per_byte * static_cast<double>(e) * static_cast<double>(elements);
  };
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const step& s = p.steps[i];
    const bool known = sizes && s.kind == op::exchange && s.cost == sizes->max_received;
    if (states.states.empty() && ((s.kind == op::exchange && (!known || nodes)) || p.uneven())) states = trace_states(p);
    const bool as_exchange = s.kind != op::dynslice && moves_as_exchange(p, i, states);
    if (nodes && !as_exchange) t += link(node_link_elements(p, i, local, P.node_ranks));
    if (as_exchange) {
      // Its sizes, and with the link term its pieces (the same walk gives both).
      exchange_plan planned;
      if (!known || nodes) planned = plan_exchange(p, i, states, nodes ? plan_detail::pieces : plan_detail::sizes);
      const exchange_plan& x = known && !nodes ? *sizes : planned;
      if (known) sizes = nullptr;
      if (nodes) t += link(node_link_elements(x, p.world_size(), P.node_ranks));
      // The busiest rank's link: what it receives, or what it sends (a source rank feeding
      // many receivers, as between meshes, is bound by its sends).
      t += P.seconds(op::exchange, x.messages, std::max(x.max_received, x.max_sent) * e, s.local_after * e);
    } else if (p.uneven() && padded_clips(p, i, states)) {  // packed in pieces, clipped to the tiles
      t += clipped_step_seconds(p, i, states, local, P);
    } else {
      t += collective_step_seconds(P, s, local, e, end_tile_elements(p));  // the search's weights
    }
    local = s.local_after;
  }
  return t;
}
}  // namespace detail

/// Predicted seconds of program p on a backend with profile `P`: the sum of its steps'
/// times (core/time_model.hpp); an exchange's peers and bytes (the most one rank receives
/// or sends) come from its pieces, and so
/// do those of the steps on uneven tiles that run as exchanges (redist/exchange.hpp
/// moves_as_exchange), priced as exchanges (a dynslice, which moves nothing, as a copy);
/// the collectives that run on padded tiles are priced on them, as the search weighs them,
/// those the executor clips to the tiles in the pieces it moves them in
/// (clipped_step_seconds).
/// Every step that moves or copies pays the pass over the tile it writes.
inline double predicted_seconds(const program& p, const time_profile& P) {
  return detail::predicted_seconds(p, P, nullptr);
}

namespace detail {
/// "12.34 us" below a millisecond (host profiles), else "1.234 ms".
inline std::string seconds_text(double s) {
  char buf[32];
  if (s < 1e-3) std::snprintf(buf, sizeof buf, "%.2f us", s * 1e6);
  else std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return std::string(buf);
}
}  // namespace detail

/// A program synthesize considered, with its predicted time.
struct plan_candidate {
  std::string name;  ///< "collective" or "exchange"
  program prog;
  double seconds = 0;
};

/// The candidates and the one of least predicted time (ties: the collective program).
struct plan_choice {
  std::vector<plan_candidate> candidates;
  std::size_t chosen = 0;
  std::string reason;  ///< one line: why this one
  [[nodiscard]] const program& chosen_program() const { return candidates[chosen].prog; }
};


/// Synthesize the program that redistributes `a` to `b`. Throws redist_error on
/// ill-formed types, differing global shapes, or a budget below 1.
inline program synthesize(const device_mesh& m, const dist_type& a, const dist_type& b, synth_options opt = {});

/// The collective program of least predicted time (objective::time) or Fig. 11 cost
/// (objective::bytes) within the memory bound (the search, Boost.Graph, then the
/// lowering); on uneven types with the rules' uneven forms (core/rules.hpp). Throws
/// redist_error where none exists.
/// A target that creates pending axes from dimensions the source partitions: both routes
/// (lower/partial.hpp), the better program (ranks_before).
inline program search_program(const device_mesh& m, const dist_type& a, const dist_type& b, synth_options opt) {
  if (error e = check_budget(opt.memory_budget)) throw redist_error(e);
  const weak_problem p = make_weak_problem(m, a, b, opt.search()).get();
  program best = lower(m, a, b, p, search_bgl(p), opt.element_bytes).get();
  if (pads_pending(m, a, b)) {
    search_options o = opt.search();
    o.pad_pending = true;
    const weak_problem q = make_weak_problem(m, a, b, o).get();
    result<program> padded = lower(m, a, b, q, search_bgl(q), opt.element_bytes);
    if (padded.ok() && ranks_before(q, padded.value, p, best)) best = std::move(padded.value);
  }
  return best;
}

namespace detail {
/// The most partial paths, lowered paths, edges on a path and paths through one weak node
/// that clip_priced_program visits.
inline constexpr std::size_t clip_paths = 20000, clip_lowered = 2000, clip_depth = 8, clip_through = 4;

/// On uneven types, a collective program faster than `bound` seconds by predicted_seconds,
/// if the weak paths hold one (nullopt: none found). The search prices an allgather or
/// alltoall on padded tiles; where its blocks clip (redist/exchange.hpp padded_clips) the
/// executor moves it in pieces, one call each, which only predicted_seconds prices, after
/// the search: gathering the uneven axis first or last can differ by 2x there. So the weak
/// paths are lowered and priced in the order of their edges' predicted time (on padded
/// tiles, a lower bound where no steps fuse), until that passes the best program found:
/// the clip_through fastest paths through each weak node (k shortest paths), within
/// clip_paths partial paths, clip_lowered lowered ones and clip_depth edges.
inline std::optional<program> clip_priced_program(const device_mesh& m, const dist_type& a, const dist_type& b,
                                                  const synth_options& opt, const time_profile& P, double bound) {
  const weak_problem p = make_weak_problem(m, a, b, opt.search()).get();
  struct partial {
    std::uint64_t ps;     // the edges' picoseconds
    std::size_t order;    // ties: the earlier pushed first
    shape at;
    std::vector<weak_step> path;
  };
  auto later = [](const partial& x, const partial& y) { return x.ps != y.ps ? x.ps > y.ps : x.order > y.order; };
  std::vector<partial> heap;
  std::unordered_map<shape, std::size_t, shape_hash> through;  // paths taken from each node
  std::size_t pushed = 0, lowered = 0;
  heap.push_back({0, pushed++, p.source, {}});
  std::optional<std::vector<weak_step>> best;
  while (!heap.empty() && pushed < clip_paths && lowered < clip_lowered) {
    std::pop_heap(heap.begin(), heap.end(), later);
    partial cur = std::move(heap.back());
    heap.pop_back();
    if (static_cast<double>(cur.ps) * 1e-12 >= bound) break;
    if (cur.at == p.target) {
      ++lowered;
      result<program> r = lower_and_fuse(m, a, b, p, cur.path, opt.element_bytes, false);
      if (!r.ok()) continue;
      if (const double t = detail::predicted_seconds(r.value, P, nullptr); t < bound) {
        bound = t;
        best = std::move(cur.path);
      }
      continue;
    }
    if (cur.path.size() >= clip_depth || ++through[cur.at] > clip_through) continue;
    for_each_successor(p, cur.at, [&](const weak_edge& e, const shape& next, const path_cost& w) {
      partial n{cur.ps > UINT64_MAX - w.time ? UINT64_MAX : cur.ps + w.time, pushed++, next, cur.path};
      n.path.push_back(weak_step{e, next, w});
      heap.push_back(std::move(n));
      std::push_heap(heap.begin(), heap.end(), later);
    });
  }
  if (!best) return std::nullopt;
  return lower_and_fuse(m, a, b, p, *best, opt.element_bytes).get();  // annotated, as the search's
}

/// uneven_program, with its exchange's sizes in `sizes` (exchange_program).
inline std::optional<program> uneven_program(const device_mesh& m, const dist_type& a, const dist_type& b,
                                              std::uint64_t element_bytes, exchange_plan& sizes) {
  if (error e = check(m, a)) throw redist_error(e);
  if (error e = check(m, b)) throw redist_error(e);
  if (error e = check_same_global(a, b)) throw redist_error(e);
  const int d = uneven_dim(m, a, b);
  if (d < 0) return std::nullopt;
  const dist_type reduced = without_pending(a);
  // b without its pending axes: those the source has too are reduced with the others and
  // made pending again at the end (an exchange does not keep partial sums apart).
  const dist_type kept = before_partial(reduced, b);
  program p = exchange_program(m, reduced, kept, element_bytes, sizes);
  p.source = a;
  if (a.nsum > 0) {  // groups: the ranks that differ only along the sum axes, in rank order
    std::uint64_t sum_mask = 0;
    for (int i = 0; i < a.nsum; ++i) sum_mask |= std::uint64_t{1} << a.sum[i];
    std::vector<std::pair<std::uint64_t, rank_t>> key(m.devices);
    for (std::uint64_t r = 0; r < m.devices; ++r) {
      std::uint64_t k = 0;
      for (int x = 0; x < m.nsub; ++x)
        if (!(sum_mask & (std::uint64_t{1} << x))) k = k * m.sub[x].size + m.coord(x, r);
      key[r] = {k, static_cast<rank_t>(r)};
    }
    std::sort(key.begin(), key.end());
    step s;
    s.kind = op::allreduce;
    s.reduce = a.reduce;
    s.parts = sum_parts(m, a);
    for (const auto& [k, r] : key) s.members.push_back(r);
    s.after = shape_of(m, reduced);
    s.local_after = local_size(m, a);
    s.cost = cost_elements(op::allreduce, s.local_after, s.local_after);
    s.type_after = reduced;
    s.type_exact = true;
    p.cost_elements += s.cost;
    p.steps.insert(p.steps.begin(), std::move(s));
  }
  append_partial(p, b);
  return p;
}
}  // namespace detail

/// The exchange program for types with an uneven dimension (DESIGN.md section 2), or
/// nothing for even ones: an allreduce of the pending sums (if any; every member of a
/// group holds the same box, so it stays exact), then one exchange to the target's boxes
/// (short and empty tiles move exactly their elements), then the partial step of the
/// target's pending axes (lower/partial.hpp): those it creates and those it keeps from the
/// source, which the allreduce reduced (an exchange does not keep partial sums apart). Its
/// exchange receives the data-movement lower bound, and it never holds more than
/// max(localsize(source), localsize(target)).
inline std::optional<program> uneven_program(const device_mesh& m, const dist_type& a, const dist_type& b,
                                              std::uint64_t element_bytes) {
  exchange_plan x;
  return detail::uneven_program(m, a, b, element_bytes, x);
}

/// The collective program of the search and the exchange, each where it exists, with its
/// predicted time under opt.time_model (the built-in profile if none); the chosen one has
/// the least. Even types: the collective program always exists, the exchange unless the
/// types carry partial sums. Uneven types (DESIGN.md section 2): the collective program
/// where the rules' exact uneven forms reach the target within the memory bound, and the
/// exchange (uneven_program); where the target keeps pending sums of the source, the
/// exchange (which reduces them first) only where no collective program keeps them. Throws
/// as synthesize.
inline plan_choice choose_plan(const device_mesh& m, const dist_type& a, const dist_type& b, synth_options opt = {});

namespace detail {
/// choose_plan, with its reason where `explain` (synthesize, which drops it, saves the
/// received bytes of both candidates: on a dense exchange of a thousand ranks, a pass over a
/// million pieces).
inline plan_choice choose_plan(const device_mesh& m, const dist_type& a, const dist_type& b, const synth_options& opt,
                               bool explain) {
  const time_profile& P = opt.time_model ? *opt.time_model : builtin_profile;
  if (error e = check(m, a)) throw redist_error(e);
  if (error e = check(m, b)) throw redist_error(e);
  if (error e = check_same_global(a, b)) throw redist_error(e);
  plan_choice c;
  const int uneven_at = uneven_dim(m, a, b);
  std::string no_collective, no_exchange;
  exchange_plan sizes;  // the exchange candidate's, planned once
  try {
    c.candidates.push_back({"collective", search_program(m, a, b, opt), 0});
  } catch (const redist_error& e) {
    if (uneven_at < 0 || e.code() == errc::bad_size) throw;
    no_collective = "no collective program: " + std::string(e.what());
  }
  // The type before the partial steps that create the target's new pending axes, if any
  // (lower/partial.hpp; padded where it can be, the smaller tiles): the exchange reaches it,
  // then those steps end the program.
  const dist_type kept = before_padded_partial(m, a, b);
  if (uneven_at >= 0) {
    const dist_type& t = uneven_dim(m, a) >= 0 ? a : b;
    if (a == kept)
      no_exchange = a == b ? "source and target are the same type" : "source and target hold the same tiles";
    else if (kept.nsum > 0 && !c.candidates.empty())  // the collective keeps the partial sums as they are
      no_exchange = "the target keeps pending sums and " + uneven_text(m, t, uneven_dim(m, t)).str() +
                    ": an exchange would reduce them first";
    else  // where the target keeps pending sums: reduced, exchanged, made pending again
      c.candidates.push_back({"exchange", *detail::uneven_program(m, a, b, opt.element_bytes, sizes), 0});
    if (c.candidates.empty())
      throw redist_error(errc::rule, "no plan for " + std::string(type_text(m, a).view()) + " -> " +
                                         std::string(type_text(m, b).view()) + ": " + no_collective + "; " + no_exchange);
  } else if (a.nsum > 0 || kept.nsum > 0) {
    no_exchange = "the types carry partial sums, which only collectives add";
  } else if (a == kept) {
    no_exchange = a == b ? "source and target are the same type" : "source and target hold the same tiles";
  } else {
    try {
      program x = detail::exchange_program(m, a, kept, opt.element_bytes, sizes);
      append_partial(x, b);
      c.candidates.push_back({"exchange", std::move(x), 0});
    } catch (const redist_error& e) {
      if (e.code() != errc::capacity) throw;
      no_exchange = e.what();
    }
  }
  for (plan_candidate& k : c.candidates) {  // the exchange's sizes as its candidate was built
    detail::senders_by_node(k.prog, P);
    k.seconds = detail::predicted_seconds(k.prog, P, k.name == "exchange" ? &sizes : nullptr);
  }
  // An uneven collective program with clipped steps: the weak paths priced as they run.
  if (uneven_at >= 0 && opt.goal == objective::time && !c.candidates.empty() && c.candidates[0].name == "collective") {
    plan_candidate& k = c.candidates[0];
    const box_states t = trace_states(k.prog);
    bool clips = false;
    for (std::size_t i = 0; i < k.prog.steps.size(); ++i) clips = clips || padded_clips(k.prog, i, t);
    if (clips)
      if (std::optional<program> q = detail::clip_priced_program(m, a, b, opt, P, k.seconds)) {
        k.prog = std::move(*q);
        detail::senders_by_node(k.prog, P);
        k.seconds = detail::predicted_seconds(k.prog, P, nullptr);
      }
  }
  for (std::size_t i = 1; i < c.candidates.size(); ++i)
    if (c.candidates[i].seconds < c.candidates[c.chosen].seconds) c.chosen = i;
  if (!explain) return c;
  const std::string profile = "profile " + std::string(P.name_view());
  const auto ms = detail::seconds_text;
  if (c.candidates.size() == 1) {
    c.reason = c.candidates[0].name + ": " + (no_exchange.empty() ? no_collective : no_exchange);
  } else {
    const plan_candidate& w = c.candidates[c.chosen];
    const plan_candidate& l = c.candidates[1 - c.chosen];
    c.reason = w.name + ": predicted " + ms(w.seconds) + " against " + ms(l.seconds) + " for the " + l.name +
               " (" + profile + "; " + std::to_string(w.prog.steps.size()) + " vs " +
               std::to_string(l.prog.steps.size()) + " steps, " + std::to_string(run_received_elements(w.prog)) + " vs " +
               std::to_string(run_received_elements(l.prog)) + " elements received per rank)";
  }
  return c;
}
}  // namespace detail

inline plan_choice choose_plan(const device_mesh& m, const dist_type& a, const dist_type& b, synth_options opt) {
  return detail::choose_plan(m, a, b, opt, true);
}

/// Whether synthesize chooses by predicted time between the collective program and the
/// exchange (choose_plan): under objective::time, with a profile, or on uneven types.
inline bool chooses_by_time(const device_mesh& m, const dist_type& a, const dist_type& b, const synth_options& opt) {
  return opt.goal == objective::time || opt.time_model != nullptr ||
         (check(m, a).ok() && check(m, b).ok() && uneven_dim(m, a, b) >= 0);
}

inline program synthesize(const device_mesh& m, const dist_type& a, const dist_type& b, synth_options opt) {
  if (opt.element_bytes == 0) throw redist_error(errc::bad_size, "element size must be at least 1 byte");
  if (error e = detail::check_program_devices(m)) throw redist_error(e);
  if (chooses_by_time(m, a, b, opt)) {
    plan_choice c = detail::choose_plan(m, a, b, opt, false);
    return std::move(c.candidates[c.chosen].prog);
  }
  return search_program(m, a, b, opt);
}

/// Convenience: parse the mesh and both types, then synthesize.
inline program synthesize(std::string_view mesh_text, std::string_view from, std::string_view to,
                          synth_options opt = {}) {
  device_mesh m = parse_mesh(mesh_text);
  return synthesize(m, parse_type(m, from), parse_type(m, to), opt);
}

}  // namespace redist
