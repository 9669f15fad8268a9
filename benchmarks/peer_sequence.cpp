// benchmarks/peer_sequence.cpp -- the predicted time of a peer's collective sequence under
// the same profile as redist's plan (issue 24: the chosen plan's predicted time is never
// above that of the peer's sequence). benchmarks/peer_table.py feeds it the corpus.
//
// Reads lines "mesh<TAB>from<TAB>to<TAB>kinds" (redist syntax; the peer's ops comma-separated
// as in tests/peers/cases.json, possibly none) and writes per line
// "chosen_s<TAB>peer_s<TAB>peer_bounded_s<TAB>uneven", a "-" where no program has the peer's
// ops, uneven 1 where a dimension does not divide evenly.
//
// chosen_s is what `redist plan` chooses, predicted as redist runs it (predicted_seconds:
// collectives on padded tiles priced as collectives, steps on uneven tiles that run as
// exchanges (redist/exchange.hpp moves_as_exchange) priced as exchanges). peer_s is the peer's
// sequence in redist's vocabulary: every weak path whose collectives are the peer's in the
// peer's order, where one all-gather or all-to-all of the peer may be several weak steps in
// a row (the peers gather or exchange several dimensions in one), with dynslices (local)
// anywhere, is lowered by redist's lowering (its groups and dynslice chunks, a permutation
// where the ranks' tiles end up elsewhere, adjacent collectives fused where faster), and the least predicted
// time wins (lowered_time: every collective priced as one, as the peers run them on padded
// tiles). A collective-permute of the peer is what the lowering's permutation does, or its
// latency where the lowering needs none; the partial steps that create new pending axes end
// every program (lower/partial.hpp). peer_s lifts the memory bound (a peer may hold more),
// peer_bounded_s keeps redist's (max(in, out) per rank): there, a collective whose padded
// blocks reach past the tile after it (redist/exchange.hpp padded_clips: `[{x}13]` to `[13]`
// on `{x: 4}`) runs in the pieces redist's executor moves it in, one call each
// (clipped_step_seconds), where the peers receive all of it in one call, into a buffer of
// parts times the padded tile, past the tile after it.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "redist/core/time_model.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/synthesize.hpp"

namespace {

using redist::op;

struct peer_ops {
  std::vector<op> steps;  ///< the peer's collectives the weak graph has, in order
  std::uint64_t permutes = 0;
};

peer_ops read_ops(const std::string& list) {
  peer_ops out;
  std::stringstream in(list);
  for (std::string k; std::getline(in, k, ',');) {
    if (k == "all-gather") out.steps.push_back(op::allgather);
    else if (k == "all-to-all") out.steps.push_back(op::alltoall);
    else if (k == "all-reduce") out.steps.push_back(op::allreduce);
    else if (k == "reduce-scatter") out.steps.push_back(op::reducescatter);
    else if (k == "collective-permute") ++out.permutes;
    // The peers' local ops take no step: the weak path's dynslices and partial steps do them.
    else if (k != "dynamic-slice" && k != "sharded-to-unreduced" && k != "replicated-to-unreduced" && !k.empty())
      throw std::runtime_error("unknown peer op '" + k + "'");
  }
  return out;
}

/// The picoseconds program q's clipped steps (redist/exchange.hpp padded_clips) take within
/// the memory bound beyond one call each: the further pieces the executor moves them in.
std::uint64_t clipped_pieces(const redist::program& q, const redist::time_profile& P) {
  if (!q.uneven()) return 0;
  const redist::box_states t = redist::trace_states(q);
  std::uint64_t extra = 0, local = redist::local_size(q.m, q.source);
  for (std::size_t i = 0; i < q.steps.size(); ++i) {
    const redist::step& s = q.steps[i];
    if (redist::padded_clips(q, i, t))
      extra += redist::picoseconds(redist::clipped_step_seconds(q, i, t, local, P)) -
               redist::picoseconds(redist::step_seconds(P, s.kind, s.parts, local, s.local_after, q.element_bytes));
    local = s.local_after;
  }
  return extra;
}

/// The least predicted picoseconds of the peer's ops as redist lowers them (UINT64_MAX:
/// none); `bounded`: clipped steps in pieces (clipped_pieces).
class pricer {
 public:
  pricer(const redist::device_mesh& m, const redist::dist_type& a, const redist::dist_type& b,
         const redist::weak_problem& p, const peer_ops& ops, bool bounded)
      : m_(m), a_(a), b_(b), p_(p), ops_(ops), bounded_(bounded) {}
  std::uint64_t best() {
    walk(p_.source, 0, false);
    return best_;
  }

 private:
  /// Weak paths from s whose collectives match ops_.steps from position k on; `open`: the
  /// last edge is a collective that the next edge of its kind may join (the same peer op).
  void walk(const redist::shape& s, std::size_t k, bool open) {
    if (k == ops_.steps.size() && s == p_.target) price();
    if (path_.size() >= ops_.steps.size() + extra_edges || lowered_ >= most_lowered) return;
    redist::for_each_successor(p_, s, [&](const redist::weak_edge& e, const redist::shape& next,
                                          const redist::path_cost& w) {
      const bool local = e.kind == op::dynslice;
      const bool more = open && (e.kind == op::allgather || e.kind == op::alltoall) && ops_.steps[k - 1] == e.kind;
      const bool fresh = k < ops_.steps.size() && ops_.steps[k] == e.kind;
      if (!local && !more && !fresh) return;
      path_.push_back(redist::weak_step{e, next, w});
      if (local) walk(next, k, false);  // a dynslice ends a run
      if (more) walk(next, k, true);
      if (fresh) walk(next, k + 1, true);
      path_.pop_back();
    });
  }
  void price() {
    ++lowered_;
    const redist::result<redist::program> r = redist::lower_and_fuse(m_, a_, b_, p_, path_, p_.element_bytes, false);
    if (!r.ok()) return;
    const std::uint64_t permutes = r.value.count(op::allpermute);
    std::uint64_t t = redist::lowered_time(p_, r.value);
    if (bounded_) t += clipped_pieces(r.value, p_.profile);
    if (ops_.permutes > permutes)
      t += (ops_.permutes - permutes) * redist::picoseconds(p_.profile[op::allpermute].latency);
    best_ = std::min(best_, t);
  }
  static constexpr std::size_t extra_edges = 4;        ///< weak steps beyond one per peer op
  static constexpr std::size_t most_lowered = 20000;  ///< candidates lowered at most
  const redist::device_mesh& m_;
  const redist::dist_type &a_, &b_;
  const redist::weak_problem& p_;
  const peer_ops& ops_;
  const bool bounded_;
  std::vector<redist::weak_step> path_;
  std::size_t lowered_ = 0;
  std::uint64_t best_ = UINT64_MAX;
};

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<std::string> f;
    std::stringstream in(line);
    for (std::string x; std::getline(in, x, '\t');) f.push_back(x);
    if (f.size() == 3) f.emplace_back();
    if (f.size() != 4) {
      std::fprintf(stderr, "peer_sequence: expected mesh, from, to, ops separated by tabs: %s\n", line.c_str());
      return 2;
    }
    const redist::device_mesh m = redist::parse_mesh(f[0]);
    const redist::dist_type a = redist::parse_type(m, f[1]), b = redist::parse_type(m, f[2]);
    const double chosen = redist::predicted_seconds(redist::synthesize(m, a, b), redist::builtin_profile);
    const peer_ops ops = read_ops(f[3]);
    std::printf("%.9g", chosen);
    for (double budget : {1e12, 1.0}) {
      std::uint64_t best = UINT64_MAX;
      for (bool pad : {false, true}) {
        if (pad && !redist::pads_pending(m, a, b)) continue;
        const redist::weak_problem p =
            redist::make_weak_problem(m, a, b, {.memory_budget = budget, .goal = redist::objective::time, .pad_pending = pad})
                .get();
        best = std::min(best, pricer(m, a, b, p, ops, budget == 1.0).best());
      }
      if (best == UINT64_MAX) std::printf("\t-");
      else std::printf("\t%.9g", static_cast<double>(best) * 1e-12);
    }
    std::printf("\t%d\n", redist::uneven_dim(m, a, b) >= 0 ? 1 : 0);
    std::fflush(stdout);
  }
}
