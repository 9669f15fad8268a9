// redist/core/config.hpp -- fixed capacities of the constexpr model.
#pragma once

#include <cstdint>

namespace redist {

/// Axes a mesh may declare.
inline constexpr int max_axes = 16;
/// Prime sub-axes of a whole mesh (a mesh of 2^k devices has k of them).
inline constexpr int max_subaxes = 64;
/// Dimensions of a distributed array.
inline constexpr int max_dims = 12;
/// Characters in an axis name.
inline constexpr int max_name = 31;
/// Distinct primes among a mesh's sub-axes.
inline constexpr int max_primes = 16;
/// Devices of a mesh that a collective program is made for: a program lists every rank in
/// every step, and the lowering follows every rank's tile (linear time and memory in D).
inline constexpr std::uint64_t max_program_devices = std::uint64_t{1} << 20;
/// Grid cells an exchange plan visits over all receivers (about the pieces it moves; each
/// piece holds a box of 2 x max_dims indices): a larger exchange is refused, and synthesize
/// keeps the collective program.
inline constexpr std::uint64_t max_exchange_cells = std::uint64_t{1} << 22;
/// Characters of one text the parsers read (a mesh, a type, a PartitionSpec, placements).
inline constexpr int max_text_input = 1 << 16;

}  // namespace redist
