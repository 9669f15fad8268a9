// benchmarks/baselines/scalapack.hpp -- ScaLAPACK's p?gemr2d as a measured peer of our
// redistribution on the MPI backend (issue #12 part (b)). Benchmark-only: needs MPI and a
// ScaLAPACK library (the CMake target redist_scalapack, defined by
// cmake/redistFindScaLAPACK.cmake when both are found; it also defines
// REDIST_WITH_SCALAPACK=1).
//
// What it covers. p?gemr2d copies a sub-matrix between two block-cyclic distributions of a
// 2-D matrix over process grids, which may lie on any processes of one communicator. Our
// types that it can express: rank 1 or 2 (a vector is a one-column matrix), no pending
// sums, dimension 0 split into p blocks and dimension 1 into q blocks with p * q the mesh's
// size, i.e. every device of the mesh holds a distinct tile and no tile is replicated; even
// or uneven (a block of ceil(M / p) rows, the last ones short or empty, is ScaLAPACK's block
// distribution with MB = ceil(M / p) and one cycle). Any rank order is fine (the sub-axes of
// a dimension may come from several mesh axes, in any order), and the mesh may lie on any
// world ranks (a placed mesh, `{x: 2, y: 2} @ [4, 6, 5, 7]`): BLACS grids are built with
// Cblacs_gridmap from an explicit usermap of world ranks. Replicated types (p * q < D),
// pending sums and types of rank 0 or above 2 are not expressible: scalapack_grid_of
// returns std::nullopt, and scalapack_redistribution refuses them.
//
// How the mapping works. Our tiles are row-major, ScaLAPACK's local arrays column-major.
// A row-major M x N array is, byte for byte, the column-major N x M matrix A^T; so
// ScaLAPACK is handed A^T and nothing is ever transposed: its row blocks are our
// dimension-1 blocks (MB = ceil(N / q)), its column blocks our dimension-0 blocks (NB =
// ceil(M / p)), its grid is q x p (nprow = q, npcol = p), and the process in grid row j,
// column i is the world rank that holds our block (i, j) (core/offsets.hpp block_index of
// its mesh position, then the mesh's device list). One block per process (block-cyclic with
// a single cycle, source processes RSRC = CSRC = 0), LLD = the padded tile's row length, at
// least 1. A rank's row-major padded tile (runtime/darray.hpp) is therefore its local
// array, used in place for the source and the target.
//
// Contract of scalapack_redistribution<T> (T = float: psgemr2d, T = double: pdgemr2d):
//   - construct it collectively on every rank of `comm` (default MPI_COMM_WORLD, of W ranks,
//     at least the largest rank either mesh lies on plus one) for one problem: it builds
//     three BLACS grids (source, target, and a 1 x W grid over all ranks, the context
//     p?gemr2d needs as its last argument) and the two array descriptors (a rank outside a
//     grid passes its descriptor with context -1, as p?gemr2d asks). MPI must be initialized.
//   - run(in_tile, out_tile), collectively on every rank of `comm`: `in_tile` is the rank's
//     row-major source tile (the padded tile's elements, e.g. darray<T>::data(); ignored on
//     a rank outside the source mesh), `out_tile` its row-major target tile (likewise).
//     `in_tile` is read only (ScaLAPACK's prototype is not const; it does not write A). Any
//     number of runs.
//   - the destructor frees the grids (Cblacs_gridexit), collectively as well.
//   - scalapack_finalize(), once after the last use and before MPI_Finalize, frees what
//     BLACS keeps for the whole process (Cblacs_exit(1): buffers, system contexts; MPI
//     stays up). Optional (BLACS's state stays reachable, LeakSanitizer does not report
//     it); BLACS is not to be used after it.
// Errors (a type ScaLAPACK cannot express, a communicator too small for the meshes, sizes
// beyond ScaLAPACK's 32-bit integers, a failing descinit) throw redist_error, on every rank
// alike for the argument checks (they depend only on the arguments), before any BLACS call.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/core/placement.hpp"
#include "redist/lower/between.hpp"

// The BLACS C interface and the Fortran ScaLAPACK routines, as the reference ScaLAPACK
// 2.x exports them (checked with nm -D on Debian's libscalapack-openmpi.so.2.2): Fortran
// INTEGERs are 32-bit ints, every Fortran argument by address.
extern "C" {
void Cblacs_pinfo(int* mypnum, int* nprocs);
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridmap(int* context, int* usermap, int ldumap, int nprow, int npcol);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
void Cblacs_exit(int not_done);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc,
               const int* icsrc, const int* ictxt, const int* lld, int* info);
void psgemr2d_(const int* m, const int* n, float* a, const int* ia, const int* ja, const int* desca, float* b,
               const int* ib, const int* jb, const int* descb, const int* ictxt);
void pdgemr2d_(const int* m, const int* n, double* a, const int* ia, const int* ja, const int* desca, double* b,
               const int* ib, const int* jb, const int* descb, const int* ictxt);
}

namespace redist::bench {

/// A type of rank 1 or 2 as a block distribution over a p x q grid of the D ranks of its
/// mesh, in our orientation: block (i, j) is rows [i * tile_rows, (i+1) * tile_rows) and
/// columns [j * tile_cols, (j+1) * tile_cols) of the global row-major M x N array (clipped
/// to it: short or empty on an uneven dimension; N = 1 for a vector), and it is the tile of
/// world rank ranks[i * q + j]. Every rank of the mesh appears exactly once.
struct scalapack_grid {
  int p = 1, q = 1;                ///< blocks along dimension 0 and dimension 1 (p * q == D)
  int rows = 0, cols = 0;          ///< global M and N
  int row_tile = 0, col_tile = 0;  ///< the padded tile: ceil(M / p) x ceil(N / q)
  std::vector<int> ranks;          ///< row-major p x q: the world rank holding block (i, j)
  [[nodiscard]] int rank_at(int i, int j) const { return ranks[static_cast<std::size_t>(i) * static_cast<std::size_t>(q) + static_cast<std::size_t>(j)]; }
  [[nodiscard]] int tile_rows() const { return row_tile; }
  [[nodiscard]] int tile_cols() const { return col_tile; }
};

/// The block grid of `t` on the placed mesh `pm` when ScaLAPACK can express it (see the
/// header comment): rank 1 or 2, no pending sums, p * q == the mesh's devices, no empty
/// dimension, sizes and ranks within int; std::nullopt otherwise.
inline std::optional<scalapack_grid> scalapack_grid_of(const placed_mesh& pm, const dist_type& t) {
  constexpr auto int_max = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
  const device_mesh& m = pm.mesh;
  if ((t.rank != 1 && t.rank != 2) || t.nsum != 0 || check(m, t)) return std::nullopt;
  const bool matrix = t.rank == 2;
  const std::uint64_t p = parts(m, t.dims[0]), q = matrix ? parts(m, t.dims[1]) : 1;
  const std::uint64_t rows = t.dims[0].global, cols = matrix ? t.dims[1].global : 1;
  if (p * q != m.devices || rows == 0 || cols == 0 || pm.min_world() > int_max || rows > int_max || cols > int_max)
    return std::nullopt;
  scalapack_grid g;
  g.p = static_cast<int>(p);
  g.q = static_cast<int>(q);
  g.rows = static_cast<int>(rows);
  g.cols = static_cast<int>(cols);
  g.row_tile = static_cast<int>(tile(m, t.dims[0]));
  g.col_tile = matrix ? static_cast<int>(tile(m, t.dims[1])) : 1;
  g.ranks.assign(static_cast<std::size_t>(m.devices), -1);
  for (std::uint64_t pos = 0; pos < m.devices; ++pos) {
    const std::uint64_t slot = block_index(m, t.dims[0], pos) * q + (matrix ? block_index(m, t.dims[1], pos) : 0);
    if (g.ranks[slot] != -1) return std::nullopt;  // two ranks with one block: replicated
    g.ranks[slot] = static_cast<int>(pm.at(pos));
  }
  return g;
}

/// The same on a mesh on ranks 0..D-1.
inline std::optional<scalapack_grid> scalapack_grid_of(const device_mesh& m, const dist_type& t) {
  return scalapack_grid_of(placed_mesh{m, {}}, t);
}

/// Once after the last scalapack_redistribution and before MPI_Finalize: frees BLACS's
/// process-wide state (Cblacs_exit(1) leaves MPI running). Collective over all processes.
inline void scalapack_finalize() { Cblacs_exit(1); }

/// One redistribution `from` -> `to` on `m` by ScaLAPACK's p?gemr2d (T = float or double);
/// see the header comment for the contract and the mapping.
template <class T>
class scalapack_redistribution {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "scalapack_redistribution: p?gemr2d exists for float (psgemr2d) and double (pdgemr2d) here");

 public:
  scalapack_redistribution(const placed_layout& from, const placed_layout& to, MPI_Comm comm = MPI_COMM_WORLD) {
    const std::optional<scalapack_grid> a = scalapack_grid_of(from.pm, from.type), b = scalapack_grid_of(to.pm, to.type);
    if (!a || !b) {
      const placed_layout& l = !a ? from : to;
      throw redist_error(errc::runtime, "scalapack baseline: the " + std::string(!a ? "source" : "target") + " type " +
                                            std::string(type_text(l.pm.mesh, l.type).view()) +
                                            " is not a 2-D block distribution over all " +
                                            std::to_string(l.pm.mesh.devices) +
                                            " devices of its mesh (rank 1 or 2, no pending sums, no replication)");
    }
    if (!same_global(from.type, to.type))
      throw redist_error(errc::global_mismatch, "scalapack baseline: the source and target global shapes differ");
    int size = 0, me = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &me);
    const std::uint64_t world = std::max(from.pm.min_world(), to.pm.min_world());
    if (static_cast<std::uint64_t>(size) < world)
      throw redist_error(errc::runtime, "scalapack baseline: the communicator has " + std::to_string(size) +
                                            " ranks, the meshes lie on ranks up to " + std::to_string(world - 1));
    rows_ = a->rows;
    cols_ = a->cols;
    int pinfo_me = 0, pinfo_n = 0;
    Cblacs_pinfo(&pinfo_me, &pinfo_n);  // initializes BLACS on first use (MPI already is)
    src_ = make_grid(comm, *a);
    dst_ = make_grid(comm, *b);
    const int sys = Csys2blacs_handle(comm);
    all_ = sys;
    Cblacs_gridinit(&all_, "R", 1, size);
    Cfree_blacs_system_handle(sys);
    try {
      describe(*a, src_, desc_src_, me);
      describe(*b, dst_, desc_dst_, me);
    } catch (...) {
      free_grids();
      throw;
    }
  }
  /// The same between two types of one mesh on ranks 0..D-1 (`comm` of exactly D ranks).
  scalapack_redistribution(const device_mesh& m, const dist_type& from, const dist_type& to,
                           MPI_Comm comm = MPI_COMM_WORLD)
      : scalapack_redistribution(placed_layout{placed_mesh{m, {}}, from}, placed_layout{placed_mesh{m, {}}, to},
                                 checked_size(comm, m.devices)) {}
  scalapack_redistribution(const scalapack_redistribution&) = delete;
  scalapack_redistribution& operator=(const scalapack_redistribution&) = delete;
  ~scalapack_redistribution() { free_grids(); }

  /// Redistribute this rank's row-major source tile into its row-major target tile
  /// (collective over the communicator; a rank outside a mesh passes anything there).
  void run(const T* in_tile, T* out_tile) {
    // ScaLAPACK's matrix is our array transposed: N rows, M columns (header comment).
    const int m = cols_, n = rows_, one = 1;
    T* in = const_cast<T*>(in_tile);  // p?gemr2d reads A only
    T none{};                         // where a rank holds no tile (its descriptor says so)
    if (!in) in = &none;
    if (!out_tile) out_tile = &none;
    if constexpr (std::is_same_v<T, float>)
      psgemr2d_(&m, &n, in, &one, &one, desc_src_, out_tile, &one, &one, desc_dst_, &all_);
    else
      pdgemr2d_(&m, &n, in, &one, &one, desc_src_, out_tile, &one, &one, desc_dst_, &all_);
  }

 private:
  void free_grids() noexcept {
    for (int ctx : {all_, dst_, src_})
      if (ctx >= 0) Cblacs_gridexit(ctx);
  }

  /// `comm`, after checking that it has exactly `devices` ranks (the one-mesh constructor).
  static MPI_Comm checked_size(MPI_Comm comm, std::uint64_t devices) {
    int size = 0;
    MPI_Comm_size(comm, &size);
    if (static_cast<std::uint64_t>(size) != devices)
      throw redist_error(errc::runtime, "scalapack baseline: the communicator has " + std::to_string(size) +
                                            " ranks, the mesh " + std::to_string(devices) + " devices");
    return comm;
  }

  /// A BLACS grid of g transposed: nprow = q, npcol = p, process (j, i) = g.rank_at(i, j);
  /// -1 on a rank outside it (Cblacs_gridmap's answer there).
  static int make_grid(MPI_Comm comm, const scalapack_grid& g) {
    std::vector<int> usermap(g.ranks.size());  // column-major q x p, leading dimension q
    for (int i = 0; i < g.p; ++i)
      for (int j = 0; j < g.q; ++j)
        usermap[static_cast<std::size_t>(i) * static_cast<std::size_t>(g.q) + static_cast<std::size_t>(j)] = g.rank_at(i, j);
    int ctx = Csys2blacs_handle(comm);
    const int sys = ctx;
    Cblacs_gridmap(&ctx, usermap.data(), g.q, g.q, g.p);
    Cfree_blacs_system_handle(sys);
    return ctx;
  }

  /// The descriptor of A^T on grid `ctx`: N x M, blocks ceil(N / q) x ceil(M / p), source
  /// process (0, 0); on a rank outside the grid only its context, -1 (p?gemr2d's rule).
  static void describe(const scalapack_grid& g, int ctx, int* desc, int me) {
    if (ctx < 0) {
      std::fill(desc, desc + 9, 0);
      desc[1] = -1;
      return;
    }
    const int m = g.cols, n = g.rows, mb = g.tile_cols(), nb = g.tile_rows(), zero = 0, lld = std::max(1, mb);
    int info = 0;
    descinit_(desc, &m, &n, &mb, &nb, &zero, &zero, &ctx, &lld, &info);
    if (info != 0)
      throw redist_error(errc::runtime, "scalapack baseline: descinit failed on rank " + std::to_string(me) +
                                            " (info " + std::to_string(info) + ")");
  }

  int rows_ = 0, cols_ = 0;          ///< our global M x N
  int src_ = -1, dst_ = -1, all_ = -1;  ///< BLACS contexts
  int desc_src_[9]{}, desc_dst_[9]{};
};

}  // namespace redist::bench
