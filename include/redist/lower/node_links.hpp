// redist/lower/node_links.hpp -- what a step of a program carries over the network links
// between nodes (core/time_model.hpp: time_profile::node_ranks, node_per_byte), for the
// link term of predicted_seconds (lower/synthesize.hpp).
//
// Nodes hold consecutive world ranks: rank r is on node r / node_ranks. A step's elements
// that go from a rank on one node to a rank on another leave the first node's link and
// enter the second's; the term is the most any node sends or receives, counted as the
// step's ranks move it:
//   exchange (and the steps that move as one on uneven tiles)  its pieces (the sender rule,
//              redist/exchange.hpp)
//   allgather, reducescatter, allreduce  a ring over each group that visits each node's
//              members together (NCCL's rings, hierarchical MPI collectives): each node the
//              group spans sends and receives, over its link, what one link of the ring
//              carries, which is what a member receives
//              (core/cost.hpp received_elements: (n - 1) tiles before for an all-gather,
//              (n - 1) tiles after for a reduce-scatter, 2 (n - 1) / n of the tile for an
//              all-reduce)
//   alltoall   every ordered pair of the group, 1/n of the tile each
//   allpermute a rank's tile where it goes to another node
//   dynslice, partial  nothing
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "redist/core/cost.hpp"
#include "redist/exchange.hpp"
#include "redist/program.hpp"

namespace redist::detail {

/// Elements (or bytes) every node sends to and receives from other nodes in one step.
class node_tally {
 public:
  node_tally(std::uint64_t world, std::uint64_t node_ranks)
      : per_(node_ranks), out_((world + node_ranks - 1) / node_ranks, 0), in_(out_.size(), 0) {}

  [[nodiscard]] std::uint64_t node(rank_t r) const { return static_cast<std::uint64_t>(r) / per_; }
  /// `elements` from rank `from` to rank `to` (nothing where they share a node).
  void add(rank_t from, rank_t to, std::uint64_t elements) {
    const std::uint64_t a = node(from), b = node(to);
    if (a == b || a >= out_.size() || b >= in_.size()) return;
    out_[a] += elements;
    in_[b] += elements;
  }
  /// Take back what add() counted.
  void remove(rank_t from, rank_t to, std::uint64_t elements) {
    const std::uint64_t a = node(from), b = node(to);
    if (a == b || a >= out_.size() || b >= in_.size()) return;
    out_[a] -= elements;
    in_[b] -= elements;
  }
  /// A ring over the ranks of `grp` that visits each node's members together, each of its
  /// links carrying `link` elements: where the group spans several nodes, every one of them
  /// sends and receives `link` over its link to the others.
  void ring(std::span<const rank_t> grp, std::uint64_t link) {
    seen_.clear();
    for (rank_t r : grp) seen_.push_back(node(r));
    std::sort(seen_.begin(), seen_.end());
    seen_.erase(std::unique(seen_.begin(), seen_.end()), seen_.end());
    if (seen_.size() < 2) return;
    for (std::uint64_t k : seen_)
      if (k < out_.size()) {
        out_[k] += link;
        in_[k] += link;
      }
  }
  /// The most elements one node sends or receives.
  [[nodiscard]] std::uint64_t most() const {
    std::uint64_t m = 0;
    for (std::size_t k = 0; k < out_.size(); ++k) m = std::max({m, out_[k], in_[k]});
    return m;
  }

 private:
  std::uint64_t per_;
  std::vector<std::uint64_t> out_, in_;
  std::vector<std::uint64_t> seen_;  // ring: the group's nodes
};

/// The most elements one node sends to or receives from other nodes in exchange x (its
/// pieces: plan_detail::pieces) among `world` ranks, with nodes of `node_ranks` (> 0).
inline std::uint64_t node_link_elements(const exchange_plan& x, std::uint64_t world, std::uint64_t node_ranks) {
  node_tally nodes(world, node_ranks);
  for (const exchange_piece& pc : x.pieces)
    if (pc.from != pc.to) nodes.add(pc.from, pc.to, pc.b.size());
  return nodes.most();
}

/// The same for step i of p, a collective that does not move as an exchange
/// (redist/exchange.hpp moves_as_exchange), on ranks that hold `local` elements before it.
inline std::uint64_t node_link_elements(const program& p, std::size_t i, std::uint64_t local,
                                        std::uint64_t node_ranks) {
  const step& s = p.steps[i];
  node_tally nodes(p.world_size(), node_ranks);
  switch (s.kind) {
    case op::allgather:
    case op::reducescatter:
    case op::allreduce:
    case op::alltoall:
      for (std::size_t g = 0; g < s.group_count(); ++g) {
        const std::span<const rank_t> grp = s.group(g);
        const std::uint64_t n = grp.size();
        if (n < 2) continue;
        if (s.kind == op::alltoall) {
          for (rank_t a : grp)
            for (rank_t b : grp)
              if (a != b) nodes.add(a, b, local / n);
          continue;
        }
        // A ring's link carries what one member receives (core/cost.hpp).
        nodes.ring(grp, received_elements(s.kind, n, local, s.local_after));
      }
      break;
    case op::allpermute:
      for (std::size_t r = 0; r < s.dest.size(); ++r)
        if (s.dest[r] != r) nodes.add(static_cast<rank_t>(r), s.dest[r], local);
      break;
    default:
      break;
  }
  return nodes.most();
}

}  // namespace redist::detail
