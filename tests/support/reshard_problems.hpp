// tests/support/reshard_problems.hpp -- seeded random reshards of many arrays
// (lower/reshard.hpp): a world of W ranks and 1 to `max_arrays` arrays, each a
// random redistribution between meshes on device sets of that world
// (support/between_problems.hpp: every relation of device sets, even and
// uneven shapes, pending sums on some sources; a random box layout, replicas too, at one
// end of some arrays), with a random element type (bf16 and f16 only where nothing is
// reduced); and the independent check of a joint plan (check_reshard_plan).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "redist/core/element_type.hpp"
#include "redist/lower/reshard.hpp"
#include "support/between_problems.hpp"

namespace redist::testing {

struct reshard_workload {
  std::uint64_t max_world = 8;
  std::size_t max_arrays = 6;
  std::uint64_t max_elements = 2048;  ///< per array
  bool target_sums = false;           ///< a target on the source's placed mesh may keep pending sums
  bool box_layouts = true;            ///< one array in four without sums: a box layout at one end
  bool casts = false;                 ///< half the floating arrays: a target of another floating type
};

/// A random problem, and its text for messages.
struct reshard_case {
  reshard_problem problem;
  std::string text;
};

inline reshard_case random_reshard(std::mt19937& rng, const reshard_workload& w) {
  reshard_case c;
  const std::uint64_t W = 1 + rng() % w.max_world;
  c.problem.world = W;
  const std::size_t n = 1 + rng() % w.max_arrays;
  between_workload bw;
  bw.world = W;
  bw.max_world = W;
  bw.max_elements = w.max_elements;
  bw.target_sums = w.target_sums;
  c.text = "W=" + std::to_string(W) + ":";
  while (c.problem.arrays.size() < n) {
    between_problem bp;
    if (!parse_between(random_between(rng, bw), bp)) continue;
    reshard_array a;
    a.name = "a" + std::to_string(c.problem.arrays.size());
    a.dtype = element_types[rng() % std::size(element_types)];
    a.source = bp.a;
    a.target = bp.b;
    std::string from = bp.text.from + " on " + bp.text.from_mesh, to = bp.text.to + " on " + bp.text.to_mesh;
    if (w.box_layouts && bp.a.type.nsum == 0 && bp.b.type.nsum == 0 && rng() % 4 == 0) {  // a box layout at one end
      std::vector<std::uint64_t> shape;
      for (int d = 0; d < bp.a.type.rank; ++d) shape.push_back(bp.a.type.dims[d].global);
      const box_layout l = random_box_layout(rng, shape, W);
      if (rng() % 2 == 0) {
        a.source = l;
        from = box_layout_text(l);
      } else {
        a.target = l;
        to = box_layout_text(l);
      }
    }
    if (w.casts && element_type_floating(a.dtype) && rng() % 2 == 0) {  // with pending values: reduced in program_type()
      const element_type t = element_types[rng() % 4];  // f64, f32, bf16, f16
      if (t != a.dtype) a.target_dtype = t;
    }
    c.text += " " + a.name + " " + std::string(element_type_name(a.dtype)) +
              (a.casts() ? ">" + std::string(element_type_name(a.target_type())) : "") + " " + from + " -> " + to + ";";
    c.problem.arrays.push_back(std::move(a));
  }
  return c;
}

/// The same problem in a world of W >= its own ranks: box layouts gain entries of no box.
inline void widen_world(reshard_problem& pr, std::uint64_t W) {
  pr.world = W;
  for (reshard_array& a : pr.arrays)
    for (array_layout* l : {&a.source, &a.target})
      if (auto* b = std::get_if<box_layout>(l)) b->boxes.resize(W);
}

/// The largest row (dimension 0 index) of any piece between ranks, in bytes: the
/// smallest budget plan_reshard accepts.
inline std::uint64_t largest_row(const reshard_plan& p) {
  std::uint64_t most = 0;
  for (const reshard_round& r : p.rounds)
    for (const reshard_piece& pc : r.pieces) {
      const std::uint64_t rows = pc.b.rank > 0 ? pc.b.extent(0) : 1;
      most = std::max(most, p.piece_bytes(pc) / rows);
    }
  return most;
}

/// "" if plan p keeps its promises for its problem, else what is wrong: the pieces of every
/// joint array tile every rank's target box exactly and come from the sender's source box,
/// every rank receives exactly the data-movement lower bound, every round (with the round
/// before it where pipelined) keeps every rank's send + receive bytes within `budget` (0:
/// none; placed in halves, its sends and its receives each within half of a round's share)
/// and within transient_bytes, the pieces of a round are in message order, arrays
/// with pending sums take their own plans (those that cast them, in their program types) and
/// other arrays that cast are joint (bytes on the way counted in their wire types,
/// reshard_plan::piece_bytes), and every round's counts are its pieces' (a whole plan).
inline std::string check_reshard_plan(const reshard_plan& p, std::uint64_t budget) {
  const std::uint64_t W = p.world;
  const std::size_t A = p.arrays.size();
  // Per (array, receiver): the pieces it gets.
  std::map<std::pair<std::uint32_t, rank_t>, std::vector<reshard_piece>> got;
  std::vector<std::uint64_t> received(W, 0);
  for (const reshard_piece& pc : p.local) {
    if (pc.from != pc.to) return "a local piece goes from rank " + std::to_string(pc.from) + " to " + std::to_string(pc.to);
    got[{pc.array, pc.to}].push_back(pc);
  }
  std::vector<std::uint64_t> last(W, 0);  // the previous round's bytes per rank
  if (p.of_rank) return "a rank's plan (check the whole plan)";
  if (p.local_count != p.local.size()) return "local_count is not the local pieces";
  // The local pieces round by round, each round's in piece order.
  const std::vector<std::size_t>& at = p.local_at;
  if (at.size() != std::max<std::size_t>(p.rounds.size(), 1) + 1 || at.front() != 0 || at.back() != p.local.size() ||
      !std::is_sorted(at.begin(), at.end()))
    return "local_at does not cut the local pieces into the rounds";
  for (std::size_t k = 0; k + 1 < at.size(); ++k)
    if (!std::is_sorted(p.local_of(k).begin(), p.local_of(k).end()))
      return "round " + std::to_string(k) + "'s local pieces are not in piece order";
  for (std::size_t k = 0; k < p.rounds.size(); ++k) {
    const auto& v = p.rounds[k].pieces;
    if (!std::is_sorted(v.begin(), v.end())) return "round " + std::to_string(k) + " is not in message order";
    std::uint64_t messages = 0, bytes = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      messages += i == 0 || v[i].from != v[i - 1].from || v[i].to != v[i - 1].to;
      bytes += p.piece_bytes(v[i]);
    }
    if (p.rounds[k].count != v.size() || p.rounds[k].messages != messages || p.rounds[k].bytes != bytes)
      return "round " + std::to_string(k) + "'s counts are not its pieces'";
    std::vector<std::uint64_t> use(W, 0), sent(W, 0);
    for (const reshard_piece& pc : v) {
      if (pc.from == pc.to) return "round " + std::to_string(k) + " has a piece a rank keeps";
      sent[pc.from] += p.piece_bytes(pc);
      use[pc.from] += p.piece_bytes(pc);
      use[pc.to] += p.piece_bytes(pc);
      received[pc.to] += p.piece_bytes(pc);
      got[{pc.array, pc.to}].push_back(pc);
    }
    for (std::uint64_t r = 0; r < W; ++r) {
      // Pipelined, rounds k - 1 and k hold buffers at once.
      const std::uint64_t held = use[r] + (p.pipelined ? last[r] : 0);
      if (budget && held > budget)
        return "round " + std::to_string(k) + ": rank " + std::to_string(r) + " holds " + std::to_string(held) +
               " bytes, over the budget of " + std::to_string(budget);
      if (held > p.transient_bytes[r]) return "transient_bytes of rank " + std::to_string(r) + " is too small";
      const std::uint64_t half = (p.pipelined ? budget / 2 : budget) / 2;
      if (p.halves && (sent[r] > half || use[r] - sent[r] > half))
        return "round " + std::to_string(k) + ": rank " + std::to_string(r) + " sends " + std::to_string(sent[r]) +
               " and receives " + std::to_string(use[r] - sent[r]) + " bytes, not each within " + std::to_string(half);
    }
    last = use;
  }
  if (p.pipelined && budget == 0) return "pipelined without a budget";
  if (p.halves && budget == 0) return "placed in halves without a budget";
  if (budget == 0 && p.rounds.size() > 1) return "more than one round without a budget";
  for (std::size_t a = 0; a < A; ++a) {
    const reshard_array& x = p.arrays[a];
    const bool sums = x.source_pending() || x.target_pending();
    if (sums && p.route[a] != reshard_route::own) return "array " + x.name + " has sums but is joint";
    if (x.casts() && !sums && p.route[a] != reshard_route::joint) return "array " + x.name + " casts but is not joint";
    if (x.program_type() != (sums && x.casts() ? element_type_holding(x.dtype, x.target_type()) : x.dtype))
      return "array " + x.name + "'s program type is wrong";
    const std::vector<box> before = layout_boxes(x.source, W), after = layout_boxes(x.target, W);
    for (std::uint64_t r = 0; r < W; ++r) {
      const auto it = got.find({static_cast<std::uint32_t>(a), static_cast<rank_t>(r)});
      const std::vector<reshard_piece> none;
      const std::vector<reshard_piece>& v = it == got.end() ? none : it->second;
      if (p.route[a] == reshard_route::own) {
        if (!v.empty()) return "array " + x.name + " is own but has joint pieces";
        continue;
      }
      std::uint64_t n = 0;
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!(intersect(v[i].b, after[r]) == v[i].b)) return "a piece of " + x.name + " lies outside its receiver's box";
        if (!(intersect(v[i].b, before[v[i].from]) == v[i].b))
          return "a piece of " + x.name + " is not in its sender's source box";
        for (std::size_t j = 0; j < i; ++j)
          if (!intersect(v[i].b, v[j].b).empty()) return "two pieces of " + x.name + " to rank " + std::to_string(r) + " overlap";
        n += v[i].b.size();
      }
      if (n != after[r].size())
        return "rank " + std::to_string(r) + " gets " + std::to_string(n) + " elements of " + x.name + ", its box has " +
               std::to_string(after[r].size());
    }
  }
  // Fused collectives: sets of at least two own arrays, each in one set, one call each,
  // within the budget; the prediction adds the plan's one agreement (a joint plan is one
  // call), the joint exchange, the sets and the other own programs, which agree no more.
  std::vector<char> fused(A, 0);
  const time_profile& P = builtin_profile;
  const double call = detail::call_seconds(P, W);
  double seconds = call + (p.count(reshard_route::joint) > 0 ? p.joint_seconds : 0);
  for (const reshard_fused& f : p.fused) {
    if (f.arrays.size() < 2 || !std::is_sorted(f.arrays.begin(), f.arrays.end())) return "a fused set is too small or unsorted";
    std::vector<const program*> progs;
    for (std::uint32_t a : f.arrays) {
      const program& pa = p.own[a].chosen_program();
      if (fused[a]++) return "array " + p.arrays[a].name + " is in two fused sets";
      if (p.route[a] != reshard_route::own || !detail::fusible(pa, W) || p.arrays[a].program_type() != p.arrays[f.arrays[0]].program_type() ||
          !detail::same_call(pa, p.own[f.arrays[0]].chosen_program()))
        return "array " + p.arrays[a].name + " cannot share its set's call";
      progs.push_back(&pa);
    }
    if (f.bytes != detail::fused_bytes(progs, element_type_bytes(p.arrays[f.arrays[0]].program_type())) || (budget && f.bytes > budget))
      return "a fused set's bytes are wrong or over the budget";
    seconds += f.seconds;
  }
  // Chunk by chunk: within the budget, only where the array is alone over it and has pending
  // values, each chunk's program a tile of the chunk, in one call, and one pass over both
  // tiles.
  for (std::size_t a = 0; a < A; ++a) {
    if (!p.chunked(a)) continue;
    const reshard_chunks& k = p.chunks[a];
    const reshard_array& x = p.arrays[a];
    if (!budget || k.held_bytes > budget || fused[a] || (p.joint && !(x.source_pending() || x.target_pending())))
      return "array " + x.name + " runs chunk by chunk, yet over the budget, fused or joint without pending values";
    std::uint64_t count = 1;
    const dist_type& t = *layout_type(x.source);
    for (int d = 0; d < t.rank; ++d) {
      const auto i = static_cast<std::size_t>(d);
      const std::uint64_t n = k.units[i] != 0 ? k.units[i] * k.rows[i] : t.dims[d].global;
      if (k.sub.chosen_program().source.dims[d].global != n) return "array " + x.name + ": its chunk's program has another shape";
      if (k.units[i] != 0) count *= t.dims[d].global / n;
    }
    if (count != k.count) return "array " + x.name + ": " + std::to_string(k.count) + " chunks, its cut makes " + std::to_string(count);
  }
  for (std::size_t a = 0; a < A; ++a) {
    if (p.route[a] != reshard_route::own || fused[a]) continue;
    if (!p.chunked(a)) {
      seconds += p.own[a].candidates[p.own[a].chosen].seconds + detail::staging_seconds(P, p.arrays[a], W);
      if (p.own[a].chosen_program().steps.empty()) {  // no steps: the executor copies the tile
        const std::vector<std::uint64_t> d = layout_tile_elements(p.arrays[a].target, W);
        seconds += P.pass_per_byte * static_cast<double>(*std::max_element(d.begin(), d.end()) *
                                                          element_type_bytes(p.arrays[a].program_type()));
      }
      continue;
    }
    const reshard_chunks& k = p.chunks[a];
    const reshard_array& x = p.arrays[a];
    const std::vector<std::uint64_t> s = layout_tile_elements(x.source, W), d = layout_tile_elements(x.target, W);
    // A side is staged where it casts or its chunks are not runs of its tiles; the pass writes
    // a staged source in the program's type, a staged target in its own.
    const bool in = x.casts_pending() && x.dtype != x.program_type(), out = x.casts_pending() && x.target_type() != x.program_type();
    const bool in_runs = detail::chunk_shape_of(k, std::get<placed_layout>(x.source)).one_run(k),
               out_runs = detail::chunk_shape_of(k, std::get<placed_layout>(x.target)).one_run(k);
    std::uint64_t most = 0;
    for (std::uint64_t r = 0; r < W; ++r)
      most = std::max(most, (in || !in_runs ? s[r] * element_type_bytes(x.program_type()) : 0) +
                                (out || !out_runs ? d[r] * x.target_element_bytes() : 0));
    seconds += static_cast<double>(k.count) * k.sub.candidates[k.sub.chosen].seconds +
               P.pass_per_byte * static_cast<double>(most);
  }
  if (!p.joint && !p.fused.empty()) return "one call per array, yet fused sets";
  if (p.joint && std::abs(seconds - p.seconds) > 1e-9 * std::max(1.0, seconds))
    return "predicted " + std::to_string(p.seconds) + " s, the parts add to " + std::to_string(seconds);
  for (std::uint64_t r = 0; r < W; ++r) {
    if (received[r] != p.received_bytes[r]) return "received_bytes of rank " + std::to_string(r) + " is wrong";
    if (received[r] != p.lower_bound_bytes[r])
      return "rank " + std::to_string(r) + " receives " + std::to_string(received[r]) + " bytes, the lower bound is " +
             std::to_string(p.lower_bound_bytes[r]);
  }
  return {};
}

/// Problem i of a backend test's sequence in a world of W ranks (W >= w.max_world): a random
/// reshard, planned jointly (every fifth one call per array), every other one under a random
/// budget that cuts its pieces into rounds (options.budget_bytes, 0 where none), half of
/// those with pipelined rounds (options.pipeline on, a budget of at least two rows).
struct planned_reshard {
  reshard_case c;
  reshard_options options;
  reshard_plan plan;
};
inline planned_reshard random_planned_reshard(std::mt19937& rng, const reshard_workload& w, std::uint64_t W,
                                              std::size_t i) {
  planned_reshard r{random_reshard(rng, w), {}, {}};
  widen_world(r.c.problem, W);
  r.options.joint = i % 5 != 4;
  r.plan = plan_reshard(r.c.problem, r.options);
  const std::uint64_t row = largest_row(r.plan);
  const std::uint64_t draw = rng();  // drawn on every path: the same sequence of problems
  if (i % 2 == 1 && row > 0) {
    r.options.budget_bytes = row + draw % (2 * row + 1);
    if (i % 4 == 3) {  // two rounds at a time, within half a budget that holds a row
      r.options.pipeline = reshard_pipeline::on;
      r.options.budget_bytes += row;
    }
    r.plan = plan_reshard(r.c.problem, r.options);
  }
  return r;
}

/// A reshard of arrays that stay on one placed mesh (its ranks the world), added one by one
/// by name, element type and the source and target types' text.
struct one_mesh_reshard {
  placed_mesh m;
  reshard_problem pr;
  explicit one_mesh_reshard(const std::string& mesh) : m(parse_placed_mesh(mesh)) { pr.world = m.mesh.devices; }
  void add(const std::string& name, element_type t, const std::string& from, const std::string& to) {
    reshard_array a;
    a.name = name;
    a.dtype = t;
    a.source = placed_layout{m, parse_type(m.mesh, from)};
    a.target = placed_layout{m, parse_type(m.mesh, to)};
    pr.arrays.push_back(a);
  }
};

/// Gradients of FSDP 4 x TP 2 on 8 ranks, each an own program of one collective: weights
/// pending over fsdp reduce-scattered to their shards (w*, f32; d*, f64), norms
/// all-reduced (n*), weights reduced over tp (t*), `layers` of each; and two i32 maxima (m0,
/// m1). The fused collectives (lower/reshard.hpp) take them by kind and group.
inline reshard_problem gradient_reshard(int layers) {
  one_mesh_reshard r("{fsdp: 4, tp: 2}");
  for (int l = 0; l < layers; ++l) {
    const std::string k = std::to_string(l);
    r.add("w" + k, element_type::f32, "[{tp}64, 32] sum{fsdp}", "[{tp}64, {fsdp}32]");
    r.add("n" + k, element_type::f32, "[32] sum{fsdp}", "[32]");
    r.add("d" + k, element_type::f64, "[{tp}16, 8] sum{fsdp}", "[{tp}16, {fsdp}8]");
    r.add("t" + k, element_type::f32, "[{fsdp}64, 32] sum{tp}", "[{fsdp}64, {tp}32]");
  }
  r.add("m0", element_type::i32, "[16] max{fsdp}", "[16]");
  r.add("m1", element_type::i32, "[16] max{fsdp}", "[16]");
  return r.pr;
}

/// Gradients of hybrid sharding (HSDP: FSDP 2 inside replicas of DDP 2, TP 2, 8 ranks), each
/// an own program of two collectives: small weights reduce-scattered over fsdp then
/// all-reduced over ddp (w*), larger ones reduce-scattered over ddp and fsdp then all-gathered
/// over ddp (v*), norms all-reduced over ddp and tp then all-gathered over fsdp (n*, from
/// shards), f64 weights reduce-scattered over ddp then all-gathered over ddp and fsdp (e*),
/// `layers` of each. Fused collectives run each kind as one call per step.
inline reshard_problem hsdp_gradient_reshard(int layers) {
  one_mesh_reshard r("{ddp: 2, fsdp: 2, tp: 2}");
  for (int l = 0; l < layers; ++l) {
    const std::string k = std::to_string(l);
    r.add("w" + k, element_type::f32, "[{tp}64, 32] sum{ddp, fsdp}", "[{tp}64, {fsdp}32]");
    r.add("v" + k, element_type::f32, "[{tp}128, 128] sum{ddp, fsdp}", "[{tp}128, {fsdp}128]");
    r.add("n" + k, element_type::f32, "[{fsdp}64] sum{ddp, tp}", "[64]");
    r.add("e" + k, element_type::f64, "[{fsdp}64, 32] sum{ddp}", "[64, 32]");
  }
  return r.pr;
}

/// A random gradient reshard: 2-6 arrays on one mesh of 4 or 8 ranks (2-3 axes), pending
/// over the same random axes S (sum or max), each `[{t}R, C] op{S}` to `[{t}R, {s}C]` (t an
/// optional axis outside S, s a random ordered subset of S, R and C random multiples of 16),
/// f32, f64, bf16 or f16, half the 16-bit ones reduced into f32 and a quarter of the f32 ones
/// into bf16 (FSDP's mixed precision, reshard_array::program_type): own programs of one or two
/// collectives that the planner fuses where they share their calls.
inline reshard_problem random_gradient_reshard(std::mt19937& rng) {
  static const char* const meshes[] = {"{a: 2, b: 2, c: 2}", "{a: 4, b: 2}", "{a: 2, b: 4}", "{a: 2, b: 2}"};
  one_mesh_reshard r(meshes[rng() % std::size(meshes)]);
  std::vector<std::string> axes;
  for (int k = 0; k < r.m.mesh.naxes; ++k) axes.emplace_back(r.m.mesh.names[k].view());
  std::shuffle(axes.begin(), axes.end(), rng);
  const std::size_t nsum = 1 + rng() % (axes.size() - (rng() % 2 == 0 ? 0 : 1));  // sometimes an axis stays free
  const std::vector<std::string> sum(axes.begin(), axes.begin() + static_cast<std::ptrdiff_t>(nsum));
  const std::string t = nsum < axes.size() && rng() % 2 == 0 ? axes[nsum] : "";
  std::vector<std::string> split;
  for (const std::string& a : sum)
    if (rng() % 2 == 0) split.push_back(a);
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& a : v) s += (s.empty() ? "" : ", ") + a;
    return s;
  };
  const std::string reduce = rng() % 3 == 0 ? "max" : "sum";
  const std::size_t n = 2 + rng() % 5;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string R = std::to_string(16 * (1 + rng() % 4)), C = std::to_string(16 * (1 + rng() % 4));
    const std::string row = t.empty() ? R : "{" + t + "}" + R;
    const element_type e = std::array{element_type::f64, element_type::f64, element_type::bf16, element_type::f16,
                                      element_type::f32, element_type::f32}[rng() % 6];
    r.add("g" + std::to_string(i), e, "[" + row + ", " + C + "] " + reduce + "{" + list(sum) + "}",
          "[" + row + ", " + (split.empty() ? C : "{" + list(split) + "}" + C) + "]");
    if (element_type_bytes(e) == 2 && rng() % 2 == 0) r.pr.arrays.back().target_dtype = element_type::f32;
    else if (e == element_type::f32 && rng() % 4 == 0) r.pr.arrays.back().target_dtype = element_type::bf16;
  }
  return r.pr;
}

/// A budget that splits gradient_reshard's fused reduce-scatters of w* into pairs: two of
/// them hold 2 x 5 x 1 KiB (send n x part, receive part, n = 4), three would hold 15 KiB.
inline constexpr std::uint64_t gradient_budget = 3 * 64 * 32 * 4 / 2;

}  // namespace redist::testing
