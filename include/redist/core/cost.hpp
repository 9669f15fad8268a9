// redist/core/cost.hpp -- the collectives and their cost model (paper Fig. 11, App. B).
//
// Costs are elements sent per device (the paper factors out the device count); multiply
// by the element size for bytes:
//   allgather  = localsize(after)     each member receives the other n-1 tiles of size
//                                      localsize(before) = localsize(after)/n; (n-1)/n ~ 1
//   alltoall   = localsize(before)    each member sends n-1 of its n chunks
//   allpermute = localsize             every tile moves once
//   dynslice   = 0                     local
//   exchange   = the most elements one device receives (extension: every device receives
//                exactly its new box minus what it held; the step records it, see
//                redist/exchange.hpp)
//   partial    = 0                     local (extension: creates pending values, see below)
#pragma once

#include <cstdint>
#include <string_view>

namespace redist {

/// The steps of a program. `partial` (extension) is local: it turns replicated values into
/// pending ones (DTensor's Replicate() -> Partial()): in every group of the ranks that differ
/// only along the new pending axes, the first member keeps its tile and the others take the
/// reduction's identity (0 for sum, 1 for prod); for max, min and avg every member keeps its
/// tile, whose reduction over the group is the tile itself.
enum class op : std::uint8_t { allgather, alltoall, dynslice, allpermute, allreduce, reducescatter, exchange, partial };

/// The kinds of step a time profile has terms for (core/time_model.hpp, `redist calibrate`,
/// the profile JSON), in their order there. A partial step writes its tile and nothing
/// else: it has no terms of its own (priced as one pass over its tile).
inline constexpr op all_ops[] = {op::allgather, op::alltoall,  op::dynslice, op::allpermute,
                                 op::allreduce, op::reducescatter, op::exchange};

/// Every kind of step a program may hold (the program JSON's "op" names).
inline constexpr op program_ops[] = {op::allgather,     op::alltoall, op::dynslice, op::allpermute, op::allreduce,
                                     op::reducescatter, op::exchange, op::partial};

constexpr std::string_view op_name(op o) {
  switch (o) {
    case op::allgather: return "allgather";
    case op::alltoall: return "alltoall";
    case op::dynslice: return "dynslice";
    case op::allpermute: return "allpermute";
    case op::allreduce: return "allreduce";
    case op::reducescatter: return "reducescatter";
    case op::exchange: return "exchange";
    case op::partial: return "partial";
  }
  return "?";
}

/// Parse an op name (any of program_ops); returns false if unknown.
constexpr bool op_from_name(std::string_view s, op& out) {
  for (op o : program_ops)
    if (op_name(o) == s) { out = o; return true; }
  return false;
}

/// Cost of one collective in elements per device (Fig. 11).
constexpr std::uint64_t cost_elements(op o, std::uint64_t local_before, std::uint64_t local_after) {
  switch (o) {
    case op::allgather: return local_after;
    case op::alltoall: return local_before;
    case op::dynslice: return 0;
    case op::allpermute: return local_before;
    // Extensions (partial sums): a ring all-reduce sends 2(n-1)/n ~ 2 tiles, a
    // reduce-scatter sends (n-1)/n ~ 1 tile.
    case op::allreduce: return 2 * local_before;
    case op::reducescatter: return local_before;
    // An exchange receives at most its whole new tile; the exact figure depends on the
    // boxes and is recorded in the step (redist/exchange.hpp).
    case op::exchange: return local_after;
    case op::partial: return 0;
  }
  return 0;
}

/// Elements a device receives from the others in one collective over groups of n whose
/// members hold `local_before` elements each (the data on the wire, where Fig. 11 rounds
/// (n-1)/n up to 1): an allgather n-1 tiles, an alltoall or a reduce-scatter (n-1)/n of
/// the tile, an all-reduce 2(n-1)/n of it (reduce-scatter, then allgather), a dynslice
/// nothing. An allpermute brings a whole tile to a device unless it keeps its own, which
/// depends on the device: callers count it per device. A reduce-scatter receives n - 1
/// chunks of its new tile, `local_after` when given (on uneven types the padded chunk,
/// ceil-sized: more than local_before / n where the parts do not divide the tile).
constexpr std::uint64_t received_elements(op o, std::uint64_t n, std::uint64_t local_before,
                                          std::uint64_t local_after = 0) {
  if (n == 0) return 0;
  switch (o) {
    case op::allgather: return (n - 1) * local_before;
    case op::alltoall: return (n - 1) * (local_before / n);
    case op::reducescatter: return (n - 1) * (local_after > 0 ? local_after : local_before / n);
    case op::allreduce: return 2 * (n - 1) * (local_before / n);
    case op::allpermute: return local_before;
    case op::dynslice: return 0;
    case op::partial: return 0;
    case op::exchange: return local_before;  // an upper bound; counted per device from the boxes
  }
  return 0;
}

}  // namespace redist
