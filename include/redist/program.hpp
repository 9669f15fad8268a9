// redist/program.hpp -- the collective program: the lowered IR every backend interprets
// (DESIGN.md section 4). Ranks are 0..D-1 under the default device map; every step names
// its groups explicitly, so a backend needs no knowledge of meshes.
//
// Semantics (every tile a box of global indices):
//   allgather(concat_dim, groups): member k of a group contributes its tile as the k-th
//       block along concat_dim; every member ends with the concatenation.
//   alltoall(concat_dim, split_dim, groups): every member splits its tile into n equal
//       chunks along split_dim and sends chunk m to member m; member m concatenates what
//       it received along concat_dim in member order.
//   dynslice(split_dim, parts, index): every rank splits its tile into `parts` chunks
//       along split_dim and keeps chunk index[rank].
//   allpermute(dest): rank r's tile moves to rank dest[r].
//   allreduce(groups, reduce): every member ends with the reduction (sum, max, min, prod or
//       avg: core/dtype.hpp reduction) of the group's tiles, element by element.
//   reducescatter(split_dim, groups, reduce): every member splits its tile into n chunks
//       along split_dim; member m ends with the reduction of everyone's chunk m.
//   partial(groups, reduce): local; every group's first member keeps its tile, the others
//       take the reduction's identity (sum 0, prod 1); max, min, avg: every member keeps
//       its tile (core/cost.hpp op::partial, lower/partial.hpp). Boxes do not change.
//   exchange(boxes): every rank ends with exactly its listed box of global indices; each
//       element comes from a rank that held it (the rank itself where it did; the sender
//       rule is in redist/exchange.hpp). Does not add partial sums.
//   Fused allgather / alltoall (several dimensions in one collective, docs/reference.md
//   "Fused collectives"): the step lists a grid of (dimension, parts) pairs in place of
//   concat_dim (concat_grid) and split_dim (split_grid). A member's position m in its group
//   of n = prod(parts) is a mixed-radix number over the grid, the first pair the most
//   significant digit. allgather: member m contributes its tile as the block at the digits
//   of m along the concat dimensions. alltoall: every member splits its tile into n equal
//   chunks, chunk m the one at the digits of m along the split dimensions, and sends chunk m
//   to member m; member m places what member k sent at the digits of k along the concat
//   dimensions. With one pair each this is the step above; no dimension appears twice. They
//   run on even programs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "redist/box.hpp"
#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/placement.hpp"
#include "redist/core/rules.hpp"

namespace redist {

using rank_t = std::uint32_t;

/// The ops redist runs on tiles of uneven types (DESIGN.md section 2; docs/reference.md
/// "Uneven dimensions"): all of them. The allreduce and the partial step keep every box; the reduce-scatter
/// splits every member's padded tile into ceil-sized chunks (the executor pads its send
/// where they do not divide it) and never runs as an exchange (it reduces); the others
/// move boxes: as the backend's collective on the padded tiles where that lands every box
/// exactly, else as exchanges of exactly the elements the boxes hold (redist/exchange.hpp
/// moves_as_exchange).
constexpr bool runs_on_uneven(op) { return true; }

/// The dimensions a fused step concatenates or splits along, each with its parts; the
/// first pair is the most significant digit of a member's position in its group.
struct step_grid {
  int n = 0;
  int dim[max_dims]{};
  std::uint64_t parts[max_dims]{};

  [[nodiscard]] constexpr std::uint64_t size() const {
    std::uint64_t z = 1;
    for (int q = 0; q < n; ++q) z *= parts[q];
    return z;
  }
  /// Digit q of position m.
  [[nodiscard]] constexpr std::uint64_t digit(std::uint64_t m, int q) const {
    for (int k = n - 1; k > q; --k) m /= parts[k];
    return m % parts[q];
  }
  [[nodiscard]] constexpr bool has(int d) const {
    for (int q = 0; q < n; ++q)
      if (dim[q] == d) return true;
    return false;
  }
  constexpr void push(int d, std::uint64_t p) {
    dim[n] = d;
    parts[n] = p;
    ++n;
  }
  constexpr bool operator==(const step_grid&) const = default;
};

/// One collective of a program.
struct step {
  op kind = op::dynslice;
  int concat_dim = -1;               ///< allgather, alltoall: dimension that grows
  int split_dim = -1;                ///< alltoall, dynslice: dimension that shrinks
  std::uint64_t parts = 1;           ///< dynslice: chunks; allgather/alltoall: group size
  std::vector<rank_t> members;       ///< allgather/alltoall: groups, flattened, `parts` ranks each, in order
  std::vector<rank_t> index;         ///< dynslice: chunk kept by each rank
  std::vector<rank_t> dest;          ///< allpermute: rank receiving each rank's tile
  std::vector<std::uint64_t> boxes;  ///< exchange: for rank r and dimension d of R, the half-open
                                     ///< range [boxes[2(rR+d)], boxes[2(rR+d)+1]) of global indices
  std::vector<std::uint8_t> holds;   ///< exchange of a format-2 program: 1 for the world ranks that
                                     ///< hold a tile after it (JSON: a box), 0 for the others (null,
                                     ///< their range entries are 0); empty: every rank holds one
  std::uint64_t node_ranks = 0;      ///< exchange: world ranks per node, a receiver's piece sent from
                                     ///< a holder on its node where one is (redist/exchange.hpp);
                                     ///< 0: one node (JSON "node_ranks", written when > 0)
  step_grid concat_grid{};           ///< fused allgather/alltoall: the concat dimensions (then
  step_grid split_grid{};            ///< concat_dim = split_dim = -1); fused alltoall: the split ones
  reduction reduce = reduction::sum;  ///< allreduce, reducescatter: how the partial values combine
  shape after{};                     ///< tiles per dimension after the step
  std::uint64_t local_after = 0;     ///< elements per device after the step
  std::uint64_t cost = 0;            ///< elements per device (Fig. 11)
  dist_type type_after{};                ///< a syntactic type of the data after the step
  bool on_target = false;            ///< type_after is a type on the program's target mesh (format 2)
  bool type_exact = false;           ///< true if type_after holds under the default device map,
                                     ///< false if only up to a device permutation

  /// A fused allgather or alltoall (several dimensions in one collective).
  [[nodiscard]] constexpr bool fused() const { return concat_grid.n > 0; }
  /// The concat dimensions of an allgather or alltoall as a grid (one pair unless fused).
  [[nodiscard]] constexpr step_grid concat_dims() const {
    if (fused()) return concat_grid;
    step_grid g;
    if (concat_dim >= 0) g.push(concat_dim, parts);
    return g;
  }
  /// The split dimensions of an alltoall as a grid (one pair unless fused).
  [[nodiscard]] constexpr step_grid split_dims() const {
    if (fused()) return split_grid;
    step_grid g;
    if (split_dim >= 0) g.push(split_dim, parts);
    return g;
  }
  [[nodiscard]] constexpr std::size_t group_count() const { return parts ? members.size() / parts : 0; }
  [[nodiscard]] constexpr std::span<const rank_t> group(std::size_t g) const {
    return std::span<const rank_t>(members).subspan(g * parts, parts);
  }
  /// exchange: lower and upper end of rank r's box along dimension d (arrays of rank R).
  [[nodiscard]] constexpr std::uint64_t box_lo(std::uint64_t r, int R, int d) const { return boxes[2 * (r * R + d)]; }
  [[nodiscard]] constexpr std::uint64_t box_hi(std::uint64_t r, int R, int d) const { return boxes[2 * (r * R + d) + 1]; }
  /// exchange: true if rank r holds a tile after the step.
  [[nodiscard]] constexpr bool holds_after(std::uint64_t r) const { return holds.empty() || (r < holds.size() && holds[r]); }
};

/// Where the executor keeps the tiles between the steps of a program (runtime/executor.hpp,
/// its memory formula; lowering ranks programs by it, lower/lower.hpp scratch_deep).
enum class tile_home : std::uint8_t { input, output, scratch_a, scratch_b };

/// A step that rewrites its tile in place: an unpadded partial step (every rank keeps its
/// tile or writes the identity over it; the tile's shape does not change).
constexpr bool runs_in_place(const step& s) { return s.kind == op::partial && s.concat_dim < 0; }

/// The homes of the tiles t_0..t_S of a program of S steps (t_i the tile before step i):
/// t_0 the caller's input tile (never written), t_S the output tile, and counting back from
/// the end, t_i (0 < i < S) the home of t_{i+1} where step i runs in place (runs_in_place;
/// the output tile only where fits_output(i)), else another buffer than t_{i+1}'s: scratch
/// region A after the output tile or region B, the output tile after A where
/// fits_output(i) (the tile is no larger than the output tile and the rank has one), else
/// region B. Without steps in place: A at an odd distance from the end, the output tile
/// or B at an even one.
template <class FitsOutput>
constexpr std::vector<tile_home> tile_homes(const std::vector<step>& steps, FitsOutput fits_output) {
  const std::size_t S = steps.size();
  std::vector<tile_home> home(S + 1, tile_home::output);
  home[0] = tile_home::input;
  for (std::size_t i = S; i-- > 1;) {
    const tile_home next = home[i + 1];
    if (runs_in_place(steps[i]) && (next != tile_home::output || fits_output(i))) home[i] = next;
    else if (next == tile_home::scratch_a) home[i] = fits_output(i) ? tile_home::output : tile_home::scratch_b;
    else home[i] = tile_home::scratch_a;
  }
  return home;
}

/// A redistribution from `source` to `target` as a sequence of collectives.
///
/// Format 2 (DESIGN.md section 4, "Meshes on device sets"): the source type lives on mesh
/// `m` placed on the world ranks `source_devices`, the target on `target_m` placed on
/// `target_devices` (when two_meshes; else on the source's), in a world of `world` ranks.
/// Every rank in a step is then a world rank and per-rank lists have `world` entries; ranks
/// outside the mesh a step's tiles live on hold nothing (empty tiles). The steps before the
/// first exchange that changes which ranks hold tiles run on the source mesh's ranks, the
/// steps after it on the target mesh's (step::holds).
struct program {
  device_mesh m{};
  dist_type source{};
  dist_type target{};
  std::uint64_t element_bytes = 4;
  std::uint64_t world = 0;              ///< ranks of the communicator; 0: m.devices (format 1)
  std::vector<rank_t> source_devices;   ///< world rank of each position of m, row-major; empty: 0..D-1
  bool two_meshes = false;              ///< the target lives on target_m / target_devices
  device_mesh target_m{};               ///< the target's mesh (when two_meshes)
  std::vector<rank_t> target_devices;   ///< its world ranks, row-major; empty: 0..D-1
  /// A box-layout source (target) (redist/box.hpp; format 2) when its `boxes` are not empty:
  /// every world rank's box or none, in place of a type. `source` (`target`) then is the
  /// replicated type of the global shape on its mesh, which says only the shape; the ranks
  /// holding tiles are the layout's. Such a program runs exchanges only
  /// (runtime/program_check.hpp).
  box_layout source_layout, target_layout;
  std::vector<step> steps;
  std::uint64_t cost_elements = 0;          ///< sum of step costs, elements per device
  std::uint64_t peak_local_elements = 0;    ///< max localsize over source, intermediates, target
  std::uint64_t memory_bound_elements = 0;  ///< the bound the search kept to

  /// Bytes per device (saturates at 2^64-1 instead of wrapping around).
  [[nodiscard]] constexpr std::uint64_t cost_bytes() const {
    return element_bytes != 0 && cost_elements > UINT64_MAX / element_bytes ? UINT64_MAX : cost_elements * element_bytes;
  }
  [[nodiscard]] constexpr std::uint64_t devices() const { return m.devices; }
  /// The ranks of the communicator the program runs on (W; the mesh's size in format 1).
  [[nodiscard]] constexpr std::uint64_t world_size() const { return world ? world : m.devices; }
  /// The target's mesh.
  [[nodiscard]] constexpr const device_mesh& target_mesh() const { return two_meshes ? target_m : m; }
  /// The world rank of source (target) mesh position `pos`.
  [[nodiscard]] constexpr std::uint64_t source_rank(std::uint64_t pos) const { return source_devices.empty() ? pos : source_devices[pos]; }
  [[nodiscard]] constexpr std::uint64_t target_rank(std::uint64_t pos) const {
    const std::vector<rank_t>& d = two_meshes ? target_devices : source_devices;
    return d.empty() ? pos : d[pos];
  }
  /// The source's (target's) mesh on its world ranks (core/placement.hpp).
  [[nodiscard]] placed_mesh source_placement() const { return placed_mesh{m, source_devices}; }
  [[nodiscard]] placed_mesh target_placement() const {
    return placed_mesh{target_mesh(), two_meshes ? target_devices : source_devices};
  }
  /// World rank r's position in the source (target) mesh, or -1 for a rank outside it.
  [[nodiscard]] constexpr std::int64_t source_position(std::uint64_t r) const {
    return position_in(source_devices, m.devices, r);
  }
  [[nodiscard]] constexpr std::int64_t target_position(std::uint64_t r) const {
    return position_in(two_meshes ? target_devices : source_devices, target_mesh().devices, r);
  }
  static constexpr std::int64_t position_in(const std::vector<rank_t>& devices, std::uint64_t D, std::uint64_t r) {
    if (devices.empty()) return r < D ? static_cast<std::int64_t>(r) : -1;
    for (std::size_t p = 0; p < devices.size(); ++p)
      if (devices[p] == r) return static_cast<std::int64_t>(p);
    return -1;
  }
  /// The program needs format 2: a world larger than the mesh, a device list other than
  /// 0..D-1, or a target mesh or placement other than the source's.
  [[nodiscard]] constexpr bool placed() const {
    auto identity = [](const std::vector<rank_t>& v) {
      for (std::size_t i = 0; i < v.size(); ++i)
        if (v[i] != i) return false;
      return true;
    };
    if (boxed_source() || boxed_target()) return true;
    if (world_size() != m.devices || !identity(source_devices)) return true;
    if (!two_meshes) return false;
    return !(target_m == m) || target_m.devices != m.devices || !identity(target_devices);
  }
  [[nodiscard]] constexpr int rank() const { return source.rank; }
  /// Elements of a rank's source (target) tile: the type's local size, or a box layout's
  /// padded tile (redist/box.hpp).
  [[nodiscard]] constexpr std::uint64_t source_local() const {
    return boxed_source() ? source_layout.padded_size() : local_size(m, source);
  }
  [[nodiscard]] constexpr std::uint64_t target_local() const {
    return boxed_target() ? target_layout.padded_size() : local_size(target_mesh(), target);
  }
  /// The target keeps pending axes of the source with another reduction kind
  /// (core/rules.hpp changes_pending_kind; between two meshes, whose sub-axes differ, any
  /// pending axes of both).
  [[nodiscard]] constexpr bool changes_pending_kind() const {
    return two_meshes ? source.nsum > 0 && target.nsum > 0 && source.reduce != target.reduce
                      : redist::changes_pending_kind(source, target);
  }
  /// The source (target) is a box layout.
  [[nodiscard]] constexpr bool boxed_source() const { return !source_layout.boxes.empty(); }
  [[nodiscard]] constexpr bool boxed_target() const { return !target_layout.boxes.empty(); }
  [[nodiscard]] constexpr std::size_t count(op o) const {
    std::size_t n = 0;
    for (const auto& s : steps) n += s.kind == o;
    return n;
  }
  /// Height (Def. 4.4): the largest local size along the program.
  [[nodiscard]] constexpr std::uint64_t height() const { return peak_local_elements; }
  /// The most elements any rank receives from other ranks over the whole program (the
  /// data on the wire, core/cost.hpp received_elements; Fig. 11 rounds (n-1)/n up to 1).
  /// An allpermute counts for the ranks whose tile changes; an exchange counts its
  /// recorded cost (the most one rank receives in it).
  [[nodiscard]] constexpr std::uint64_t received_elements() const {
    const std::uint64_t D = world_size();
    if (D == 0) return 0;
    std::vector<std::uint64_t> got(D, 0);
    std::uint64_t local = local_size(m, source), all = 0;  // `all`: received by every rank
    for (const step& s : steps) {
      if (s.kind == op::exchange) {
        all += s.cost;
      } else if (s.kind == op::allpermute) {
        for (std::uint64_t r = 0; r < D && r < s.dest.size(); ++r)
          if (s.dest[r] != r) got[s.dest[r]] += local;
      } else {
        all += redist::received_elements(s.kind, s.parts, local, s.local_after);
      }
      local = s.local_after;
    }
    std::uint64_t most = 0;
    for (std::uint64_t g : got) most = g > most ? g : most;
    return all + most;
  }
  /// Eq. (4): height <= max(localsize(source), localsize(target)).
  [[nodiscard]] constexpr bool memory_efficient() const {
    const std::uint64_t a = source_local(), b = target_local();
    return peak_local_elements <= (a > b ? a : b);
  }
  /// The first uneven dimension of the source, else of the target (DESIGN.md section 2), or -1.
  [[nodiscard]] constexpr int uneven_at() const {
    const int d = uneven_dim(m, source);
    return d >= 0 ? d : uneven_dim(target_mesh(), target);
  }
  /// The source or the target has an uneven dimension.
  [[nodiscard]] constexpr bool uneven() const { return uneven_at() >= 0; }
  /// The mesh step i's type_after lives on.
  [[nodiscard]] constexpr const device_mesh& mesh_after(std::size_t i) const {
    return steps[i].on_target ? target_mesh() : m;
  }
};

}  // namespace redist
