// redist/runtime/executor.hpp -- runs a collective program (DESIGN.md section 4) on real
// tiles through a backend (runtime/backend.hpp).
//
// For every step the executor hands each local rank's blocks to the backend's collective
// on the step's groups: straight from the tile the step reads and straight into the tile
// it writes when the blocks lie contiguous there or the backend moves strided blocks itself
// (strided_backend_for: the host backend's copies, MPI derived datatypes), otherwise
// through small pack buffers, piece by piece. It drives the ranks the backend names in
// local_ranks(): all D simulated devices for the host backend, one rank for MPI and NCCL.
//
// Where the tiles live. Step 0 reads the caller's input tile, which is never written; the
// last step writes the caller's output tile. A tile between two steps (t_i after step
// i-1, 0 < i < S, S steps) lives, counting back from the end, in the output tile or in
// one scratch buffer per rank, so that no step but an unpadded partial step (it keeps the
// tile or writes the identity over it) reads and writes the same buffer (program.hpp
// tile_homes, which lowering's ranking reads too):
//
//   t_i before an unpadded partial step          -> where t_{i+1} lives (the step in place)
//   t_i, t_{i+1} in the output tile or region B  -> scratch region A (offset 0)
//   t_i, t_{i+1} in region A, local_size(t_i) <= out
//                                                -> the caller's output tile
//   t_i, t_{i+1} in region A, local_size(t_i) >  out
//                                                -> scratch region B (offset A)
//
// (without partial steps: region A at an odd distance S - i from the end, the output tile
// or region B at an even one; partial steps that end a program, creating pending axes,
// run in the output tile and cost no scratch; on a program between meshes where a rank
// holding a tile before the crossing holds none after it, the tiles before the crossing
// take region B where they would take the output tile).
//
// Memory formula (exact; what bytes_held() and peak_bytes_held() report, per local rank,
// on top of the caller's tiles; e = sizeof(T), max of nothing = 0):
//
//   scratch = A + B elements, A = max{ t_i : 0 < i < S, t_i in region A },
//                             B = max{ t_i : 0 < i < S, t_i in region B }
//   pack    = Ps + Pr elements: with C = min(pack_chunk_bytes, max(t_0, t_S) e / 2) bytes
//             (core/time_model.hpp pack_budget_bytes),
//             for every step the executor packs (below), n its group size and b its block
//             (all-to-all, reduce-scatter: L/n of its input tile of L elements; all-gather:
//             L), piece = min(b, max(1, floor(C / (n e)))):
//             Ps = max n * piece over packed all-to-alls and reduce-scatters (sends),
//             Pr = max n * piece over packed all-to-alls and all-gathers (receives);
//             a reduce-scatter whose n does not divide its split extent e (uneven
//             types: chunks of c = ceil(e / n) rows of the padded tile) is packed on
//             every backend, padded, with block b = its tile after (c rows): Ps >= n * piece;
//             an allgather or alltoall on padded tiles whose n blocks reach past the tile
//             after it along concat_dim (uneven types: n times its extent before exceeds
//             its extent after), or an alltoall whose n does not divide its padded split
//             extent t (block b = L / t * ceil(t / n), chunks of ceil(t / n) rows), is
//             packed on every backend, as above, and copied clipped to the tiles;
//             exchanges (op::exchange, and on a program with an uneven type the dynslice
//             and the steps whose boxes do not land on padded tiles, which run as
//             exchanges of their boxes: exchange.hpp moves_as_exchange) when the backend drives one rank of several and
//             packs them (not strided_blocks(op::exchange)): Ps also >= the elements of
//             the distinct pieces the rank sends to other ranks (a piece sent to several
//             ranks is packed once; the pieces are disjoint parts of its tile, so at most
//             the tile), Pr >= the elements it receives from them (whole, not in pieces;
//             at most its tile after the step); a backend driving every rank copies
//             the pieces tile to tile and MPI's datatypes move them in place: nothing;
//             a fused step (program.hpp: a grid of blocks, no one strided layout) is
//             packed on every backend, as above, but a fused all-gather (it packs no
//             sends) in a program where no step packs sends (Ps = 0) with
//             C = min(pack_chunk_bytes, max(t_0, t_S) e) bytes: its receives may take the
//             larger end tile, so that a small one is one collective, not two, and pack
//             stays within max(t_0, t_S) as before
//   held    = (scratch + pack) * e bytes
//
// A step is packed when its blocks are not contiguous in the tiles (pack.hpp's
// block_layout::contiguous) and the backend does not move them in place (for
// reduce-scatters: whenever its send blocks are not contiguous). A one-step program needs
// no scratch; one whose blocks are contiguous (an all-to-all splitting and concatenating
// on dimension 0, an all-gather on dimension 0), or run by the host backend, holds nothing.
// Every memory-efficient program (intermediate tiles <= max(in, out)) holds at most
// 2 max(in, out) + pack, and at most max(in, out) + pack when S <= 2 or when region B
// stays empty, every tile that would take the output tile fitting in it (the lowering's
// programs: slices first, gathers last). executor_options::pack_chunk_bytes (default
// 1 MiB) bounds each pack buffer, and so does half of max(in, out), so that a program
// whose intermediates fit in the output tile holds at most 2 max(in, out) in all (a packed
// exchange's buffers are whole, not chunked: up to max(in, out) each way; after an
// allreduce into scratch, as uneven types with sums are planned, 3 max(in, out)). Buffers
// are allocated once when the executor is built and reused by every run.
//
// The caller's tiles. Input and output tiles must not overlap (run() refuses them, like
// every bad tile); the output tile may hold intermediate data during a run. Inputs are
// never modified.
//
// Memory space (runtime/memory.hpp). The buffers, the dynamic slices and the packing go
// through the backend's memory space, memory_of(backend): host memory and pack.hpp for the
// host and MPI backends; device memory and stream-ordered device copies for NCCL
// (backends/nccl.hpp), where the user's tiles are darrays borrowing device memory and run()
// returns without waiting for the stream. The run() overloads that return new owned tiles
// need a host-accessible memory space. Everything else below is the same for every memory.
//
// Element types. The control code, detail::executor_core<B>, the bulk of the code a
// program compiles to, is one per backend: it learns the element size at run time, holds
// byte pointers and counts elements. What touches the elements goes through one virtual
// call each (detail::element_ops): the backend's collectives and the memory space's copies
// on elements of the unsigned integer of T's size (detail::storage_t; every backend of
// this library moves those, and a backend that does not for some T gets T itself), so that
// executor<float, B> and executor<std::int32_t, B> share them (detail::storage_ops), and
// the reductions (allreduce, reducescatter, a partial step's identity) in T itself
// (detail::typed_ops).
//
// Ranks in parallel. A backend driving several ranks (the host backend) may offer
// parallel_for (runtime/backend.hpp): the executor then runs the groups of a step, and the
// slices and packing of its ranks, through it.
//
// Errors. Building an executor is local and never throws for a bad program; run() first
// checks the program and its tiles on every local rank (program well-formed, mesh device
// count == communicator size, element size, tile types, mesh and buffer sizes, no output
// overlapping another tile), then makes one agreement call (backend::agree: every rank
// compares the program hash and whether its checks passed) and only then moves data. A
// failed check or a mismatch throws redist_error(errc::runtime) on every rank, before any
// buffer or tile is touched.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/time_model.hpp"
#include "redist/exchange.hpp"
#include "redist/program.hpp"
#include "redist/runtime/backend.hpp"
#include "redist/runtime/darray.hpp"
#include "redist/runtime/memory.hpp"
#include "redist/runtime/program_check.hpp"
#include "redist/runtime/pack.hpp"

namespace redist {

/// A tag for the element type that enters the program hash, so that ranks running the
/// same program with different element types (float vs int32) disagree.
template <class T>
constexpr std::uint64_t element_tag() {
  std::uint64_t kind = std::is_floating_point_v<T> ? 1 : std::is_signed_v<T> ? 2 : std::is_unsigned_v<T> ? 3 : 4;
  return (kind << 32) | sizeof(T);
}

namespace detail {
struct fnv1a {
  std::uint64_t h = 14695981039346656037ull;
  void byte(std::uint8_t b) {
    h ^= b;
    h *= 1099511628211ull;
  }
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) byte(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void ranks(const std::vector<rank_t>& v) {
    u64(v.size());
    for (rank_t r : v) u64(r);
  }
  void type(const dist_type& t) {
    i64(t.rank);
    for (int d = 0; d < t.rank; ++d) {
      u64(t.dims[d].global);
      i64(t.dims[d].n);
      for (int i = 0; i < t.dims[d].n; ++i) u64(t.dims[d].axes[i]);
    }
    i64(t.nsum);
    for (int i = 0; i < t.nsum; ++i) u64(t.sum[i]);
    if (t.nsum > 0) u64(static_cast<std::uint64_t>(t.reduce));
  }
};
}  // namespace detail

/// Hash of everything that determines what a program does (mesh, types, element size,
/// steps with their groups), combined with an element-type tag. Equal programs hash
/// equally on every machine; informational fields (step types, costs) are left out.
inline std::uint64_t program_hash(const program& p, std::uint64_t tag = 0) {
  detail::fnv1a f;
  f.i64(p.m.naxes);
  for (int a = 0; a < p.m.naxes; ++a) {
    f.u64(p.m.names[a].len);
    for (int i = 0; i < p.m.names[a].len; ++i) f.byte(static_cast<std::uint8_t>(p.m.names[a].chars[i]));
    f.u64(p.m.sizes[a]);
  }
  f.type(p.source);
  f.type(p.target);
  f.u64(p.element_bytes);
  f.u64(p.steps.size());
  for (const step& s : p.steps) {
    f.u64(static_cast<std::uint64_t>(s.kind));
    f.i64(s.concat_dim);
    f.i64(s.split_dim);
    f.u64(s.parts);
    f.ranks(s.members);
    f.ranks(s.index);
    f.ranks(s.dest);
    f.u64(s.boxes.size());
    for (std::uint64_t v : s.boxes) f.u64(v);
    if (s.kind == op::allreduce || s.kind == op::reducescatter || s.kind == op::partial)
      f.u64(static_cast<std::uint64_t>(s.reduce));
  }
  for (const box_layout* l : {&p.source_layout, &p.target_layout})  // box-layout ends (nothing otherwise)
    for (const std::optional<box>& b : l->boxes) {
      f.u64(b ? 1 : 0);
      for (int d = 0; b && d < b->rank; ++d) {
        f.u64(b->lo[static_cast<std::size_t>(d)]);
        f.u64(b->hi[static_cast<std::size_t>(d)]);
      }
    }
  f.u64(tag);
  return f.h;
}

/// What one step of the last run did.
struct step_stats {
  op kind = op::dynslice;
  std::uint64_t bytes_moved = 0;     ///< bytes received from other ranks, summed over local ranks
  std::uint64_t max_rank_bytes = 0;  ///< the most bytes one local rank received
  double seconds = 0;                ///< wall time of the step (pack, collective, unpack)
};

/// Options of an executor.
struct executor_options {
  /// The most bytes of one pack buffer (sends or receives) of a step the executor packs;
  /// a step moving more is split into pieces (see the memory formula above).
  std::uint64_t pack_chunk_bytes = default_pack_chunk_bytes;
};

/// How the executor moves the blocks of a step.
enum class block_path : std::uint8_t {
  local,     ///< no collective call with blocks (dynslice, permute, allreduce)
  direct,    ///< contiguous blocks, straight from tile to tile
  in_place,  ///< strided blocks, handed in place to the backend (strided_backend_for)
  packed,    ///< pieces packed into the pack buffers (always for a fused step, program.hpp)
};

/// World rank r's tile of program p's source (target): an owned, value-initialized tile of
/// its position on the source (target) mesh, or darray::none for a rank outside that mesh
/// (programs on device sets, DESIGN.md section 2; in format 1 the tile of device r).
template <class T>
darray<T> source_tile(const program& p, rank_t r) {
  if (p.boxed_source()) return darray<T>::of_layout(p.source_layout, r);
  const std::int64_t pos = p.source_position(r);
  return pos < 0 ? darray<T>::none(p.m, p.source) : darray<T>(p.m, p.source, static_cast<rank_t>(pos));
}
template <class T>
darray<T> target_tile(const program& p, rank_t r) {
  if (p.boxed_target()) return darray<T>::of_layout(p.target_layout, r);
  const std::int64_t pos = p.target_position(r);
  const device_mesh& tm = p.target_mesh();
  return pos < 0 ? darray<T>::none(tm, p.target) : darray<T>(tm, p.target, static_cast<rank_t>(pos));
}

namespace detail {

/// The unsigned integer of N bytes (1, 2, 4 or 8), void for other sizes.
template <std::size_t N>
using unsigned_of_size =
    std::conditional_t<N == 1, std::uint8_t,
                       std::conditional_t<N == 2, std::uint16_t,
                                          std::conditional_t<N == 4, std::uint32_t,
                                                             std::conditional_t<N == 8, std::uint64_t, void>>>>;

/// Whether the executor may move elements of type T as elements of U: the same size and
/// alignment, and backend B and its memory space do for U everything they do for T.
template <class T, class U, class B>
concept moves_as = !std::is_void_v<U> && sizeof(T) == sizeof(U) && alignof(T) == alignof(U) && backend_for<B, U> &&
                   memory_space_for<memory_space_t<B>, U> &&
                   (!strided_backend_for<B, T> || strided_backend_for<B, U>) &&
                   (!exchange_backend_for<B, T> || exchange_backend_for<B, U>) &&
                   (!strided_exchange_backend_for<B, T> || strided_exchange_backend_for<B, U>);

/// The type whose elements the executor moves T's data as: the unsigned integer of T's size
/// where B moves it (every backend of this library), so that every element type of one size
/// shares one executor_core; T itself otherwise.
template <class T, class B>
struct storage_of {
  using type = T;
};
template <class T, class B>
  requires moves_as<T, unsigned_of_size<sizeof(T)>, B>
struct storage_of<T, B> {
  using type = unsigned_of_size<sizeof(T)>;
};
template <class T, class B>
using storage_t = typename storage_of<T, B>::type;

/// What executor_core needs to know of the element type T beyond what element_ops does:
/// its size, the program hash's tag, and what the constructor checks before a program
/// reduces or exchanges.
struct element_info {
  std::size_t size = 0;     ///< sizeof(T)
  std::uint64_t tag = 0;    ///< element_tag<T>()
  bool reduces = false;     ///< reducing_backend_for<B, T>
  bool exchanges = false;   ///< exchange_backend_for<B, storage_t<T, B>>: one rank's alltoallv
  unsigned reducible = 0;   ///< bit r: reducible<T>(r)
  unsigned identity = 0;    ///< bit r: has_reduction_identity<T>(r)

  template <class T, class B>
  static constexpr element_info of() {
    element_info e{sizeof(T), element_tag<T>(), reducing_backend_for<B, T>, exchange_backend_for<B, storage_t<T, B>>,
                   0, 0};
    for (reduction r : all_reductions) {
      e.reducible |= static_cast<unsigned>(redist::reducible<T>(r)) << static_cast<unsigned>(r);
      e.identity |= static_cast<unsigned>(has_reduction_identity<T>(r)) << static_cast<unsigned>(r);
    }
    return e;
  }
};

/// to[k] = from[k] as a pointer to X (buffers of X's elements held as bytes).
template <class X>
void typed_pointers(std::span<std::byte* const> from, std::vector<X*>& to) {
  to.resize(from.size());
  for (std::size_t k = 0; k < from.size(); ++k) to[k] = reinterpret_cast<X*>(from[k]);
}

/// A pointer to elements whose size e is known at run time: arithmetic counts elements.
struct element_ptr {
  std::byte* p = nullptr;
  std::size_t e = 0;
  element_ptr operator+(std::uint64_t k) const { return {p + k * e, e}; }
};

/// Everything executor_core does with the elements themselves, behind one virtual call
/// each, so that the control code (executor_core<B>) is compiled once per backend, not once
/// per element size: the backend's collectives and its memory space's copies on elements
/// of the storage type E (storage_ops<E, B>), the reductions and a partial step's identity
/// in the element type T (typed_ops<T, B>). Pointers are bytes; counts are elements.
template <class B>
class element_ops {
 public:
  using ranks = std::span<const rank_t>;
  using ext = std::span<const std::uint64_t>;
  using regions = std::span<const tile_region>;
  using counts = std::span<const std::uint64_t>;

  /// The buffers of the next collective calls, indexed by world rank (block_io); for the
  /// reductions (allreduce, reducescatter) bind_reduce.
  virtual void bind(std::span<std::byte* const> send, std::span<std::byte* const> recv) = 0;
  virtual void bind_reduce(std::span<std::byte* const> send, std::span<std::byte* const> recv) = 0;
  virtual void allgather(B& b, ranks g, std::size_t count) = 0;
  virtual void allgather(B& b, ranks g, const block_layout& rl) = 0;
  virtual void alltoall(B& b, ranks g, std::size_t count) = 0;
  virtual void alltoall(B& b, ranks g, const block_layout& sl, const block_layout& rl) = 0;
  virtual void permute(B& b, ranks dest, std::size_t count) = 0;
  virtual void exchange(B& b, ext se, regions sr, ext de, regions rr) = 0;
  virtual void alltoallv(B& b, counts sc, counts sd, counts rc) = 0;
  virtual void allreduce(B& b, ranks g, std::size_t count, reduction r) = 0;
  virtual void reducescatter(B& b, ranks g, std::size_t count, reduction r) = 0;
  /// b.strided_blocks(k) where B moves blocks in place (strided_backend_for), else false.
  [[nodiscard]] virtual bool strided_blocks(B& b, op k) const = 0;

  /// A buffer of n elements in B's memory space, held as long as this object.
  virtual std::byte* allocate(B& b, std::size_t n) = 0;
  virtual void copy(B& b, std::byte* dst, const std::byte* src, std::size_t n) = 0;
  virtual void strided(B& b, const strided_copy& c, const std::byte* src, std::byte* dst) = 0;
  virtual void split_copy(B& b, const std::byte* tile, std::size_t tile_n, ext x, int d, std::uint64_t n,
                          std::uint64_t m, std::byte* chunk, std::size_t chunk_n) = 0;
  virtual void concat_copy(B& b, const std::byte* chunk, std::size_t chunk_n, ext x, int d, std::uint64_t n,
                           std::uint64_t m, std::byte* tile, std::size_t tile_n) = 0;
  /// Store the identity of r in n elements from dst.
  virtual void fill_identity(B& b, std::byte* dst, std::size_t n, reduction r) = 0;

 protected:
  element_ops() = default;
  ~element_ops() = default;
  element_ops(const element_ops&) = default;
  element_ops& operator=(const element_ops&) = default;
};

/// element_ops' moves and copies on elements of E (storage_t<T, B>): compiled once per size.
template <class E, class B>
  requires backend_for<B, E> && memory_space_for<memory_space_t<B>, E>
class storage_ops : public element_ops<B> {
  using base = element_ops<B>;

 public:
  using typename base::counts;
  using typename base::ext;
  using typename base::ranks;
  using typename base::regions;

  void bind(std::span<std::byte* const> send, std::span<std::byte* const> recv) final {
    typed_pointers(send, send_);
    typed_pointers(recv, recv_);
  }
  void allgather(B& b, ranks g, std::size_t count) final { b.allgather(g, io(), count); }
  void allgather([[maybe_unused]] B& b, [[maybe_unused]] ranks g, [[maybe_unused]] const block_layout& rl) final {
    if constexpr (strided_backend_for<B, E>) b.allgather(g, io(), rl);
  }
  void alltoall(B& b, ranks g, std::size_t count) final { b.alltoall(g, io(), count); }
  void alltoall([[maybe_unused]] B& b, [[maybe_unused]] ranks g, [[maybe_unused]] const block_layout& sl,
                [[maybe_unused]] const block_layout& rl) final {
    if constexpr (strided_backend_for<B, E>) b.alltoall(g, io(), sl, rl);
  }
  void permute(B& b, ranks dest, std::size_t count) final { b.permute(dest, io(), count); }
  void exchange([[maybe_unused]] B& b, [[maybe_unused]] ext se, [[maybe_unused]] regions sr,
                [[maybe_unused]] ext de, [[maybe_unused]] regions rr) final {
    if constexpr (strided_exchange_backend_for<B, E>) b.exchange(io(), se, sr, de, rr);
  }
  void alltoallv([[maybe_unused]] B& b, [[maybe_unused]] counts sc, [[maybe_unused]] counts sd,
                 [[maybe_unused]] counts rc) final {
    if constexpr (exchange_backend_for<B, E>) b.alltoallv(io(), sc, sd, rc);
  }
  [[nodiscard]] bool strided_blocks([[maybe_unused]] B& b, [[maybe_unused]] op k) const final {
    if constexpr (strided_backend_for<B, E>) return b.strided_blocks(k);
    else return false;
  }

  std::byte* allocate(B& b, std::size_t n) final {
    buffers_.push_back(memory_of(b).template allocate<E>(n));
    return reinterpret_cast<std::byte*>(buffers_.back().data());
  }
  void copy(B& b, std::byte* dst, const std::byte* src, std::size_t n) final {
    memory_of(b).copy(typed(dst), typed(src), n);
  }
  void strided(B& b, const strided_copy& c, const std::byte* src, std::byte* dst) final {
    memory_of(b).strided(c, typed(src), typed(dst));
  }
  void split_copy(B& b, const std::byte* tile, std::size_t tile_n, ext x, int d, std::uint64_t n, std::uint64_t m,
                  std::byte* chunk, std::size_t chunk_n) final {
    memory_of(b).split_copy(std::span<const E>(typed(tile), tile_n), x, d, n, m, std::span<E>(typed(chunk), chunk_n));
  }
  void concat_copy(B& b, const std::byte* chunk, std::size_t chunk_n, ext x, int d, std::uint64_t n, std::uint64_t m,
                   std::byte* tile, std::size_t tile_n) final {
    memory_of(b).concat_copy(std::span<const E>(typed(chunk), chunk_n), x, d, n, m, std::span<E>(typed(tile), tile_n));
  }

 protected:
  storage_ops() = default;
  ~storage_ops() = default;
  storage_ops(const storage_ops&) = delete;
  storage_ops& operator=(const storage_ops&) = delete;

 private:
  using buffer_type = decltype(std::declval<memory_space_t<B>&>().template allocate<E>(0));
  static E* typed(std::byte* p) { return reinterpret_cast<E*>(p); }
  static const E* typed(const std::byte* p) { return reinterpret_cast<const E*>(p); }
  block_io<E> io() { return {std::span<E* const>(send_), std::span<E* const>(recv_)}; }
  std::vector<E*> send_, recv_;
  std::vector<buffer_type> buffers_;
};

/// element_ops complete: storage_ops<storage_t<T, B>, B> and the reductions in T.
template <class T, class B>
class typed_ops : public storage_ops<storage_t<T, B>, B> {
  using base = element_ops<B>;

 public:
  using typename base::ranks;

  void bind_reduce(std::span<std::byte* const> send, std::span<std::byte* const> recv) final {
    typed_pointers(send, send_);
    typed_pointers(recv, recv_);
  }
  void allreduce([[maybe_unused]] B& b, [[maybe_unused]] ranks g, [[maybe_unused]] std::size_t count,
                 [[maybe_unused]] reduction r) final {
    if constexpr (reducing_backend_for<B, T>) b.allreduce(g, io(), count, r);
  }
  void reducescatter([[maybe_unused]] B& b, [[maybe_unused]] ranks g, [[maybe_unused]] std::size_t count,
                     [[maybe_unused]] reduction r) final {
    if constexpr (reducing_backend_for<B, T>) b.reducescatter(g, io(), count, r);
  }
  void fill_identity([[maybe_unused]] B& b, [[maybe_unused]] std::byte* dst, [[maybe_unused]] std::size_t n,
                     [[maybe_unused]] reduction r) final {
    if constexpr (reducing_backend_for<B, T>)
      memory_of(b).fill(reinterpret_cast<T*>(dst), n, reduction_identity<T>(r));
  }

 protected:
  typed_ops() = default;
  ~typed_ops() = default;

 private:
  block_io<T> io() { return {std::span<T* const>(send_), std::span<T* const>(recv_)}; }
  std::vector<T*> send_, recv_;
};

/// The executor (class executor below) on elements whose size it learns at run time:
/// everything but what element_ops does with them (the backend's typed calls, the copies).
template <class B>
class executor_core {
 public:
  /// The backend's memory space (runtime/memory.hpp).
  using memory_type = memory_space_t<B>;

  [[nodiscard]] const program& prog() const { return p_; }
  [[nodiscard]] std::uint64_t hash() const { return hash_; }
  [[nodiscard]] std::span<const rank_t> local_ranks() const { return local_; }
  [[nodiscard]] const executor_options& options() const { return opt_; }
  /// Per-step statistics of the last run.
  [[nodiscard]] const std::vector<step_stats>& stats() const { return stats_; }
  /// Elements of the largest tile along the program (source, intermediates, target).
  [[nodiscard]] std::uint64_t capacity() const { return shapes_.cap; }
  /// Elements of the scratch buffer per rank (regions A + B of the memory formula).
  [[nodiscard]] std::uint64_t scratch_elements() const { return scratch_a_ + scratch_b_; }
  /// Elements of the send and receive pack buffers per rank.
  [[nodiscard]] std::uint64_t pack_send_elements() const { return pack_send_; }
  [[nodiscard]] std::uint64_t pack_recv_elements() const { return pack_recv_; }
  /// How step s moves its blocks.
  [[nodiscard]] block_path path(std::size_t s) const { return s < path_.size() ? path_[s] : block_path::local; }
  /// Bytes the executor holds per rank now, on top of the caller's tiles (the formula above).
  [[nodiscard]] std::uint64_t bytes_held() const { return held_; }
  /// The most bytes it ever held per rank (it allocates once: bytes_held()).
  [[nodiscard]] std::uint64_t peak_bytes_held() const { return peak_held_; }
  /// The most bytes of live data one rank had at once during a run, counting the tile a
  /// step reads and the tile it writes, whether the caller's or the executor's.
  [[nodiscard]] std::uint64_t peak_bytes_live() const { return peak_live_ * e_; }
  /// Number of completed runs.
  [[nodiscard]] std::uint64_t runs() const { return runs_; }

 protected:
  executor_core(B& backend, const program& p, executor_options o, const element_info& el, element_ops<B>& ops)
      : b_(backend), p_(p), opt_(o), shapes_(detail::check_program(p, one_rank(backend))),
        hash_(program_hash(p, el.tag)), e_(el.size), ops_(ops) {
    const auto local = b_.local_ranks();
    local_.assign(local.begin(), local.end());
    if (shapes_.error.empty()) {
      if (p_.world_size() != b_.devices())
        shapes_.error = "the communicator has " + std::to_string(b_.devices()) + " ranks but the program" +
                        (p_.placed() ? " runs on a world of " + std::to_string(p_.world_size()) + " ranks"
                                     : "'s mesh " + std::string(mesh_text(p_.m).view()) + " has " +
                                           std::to_string(p_.m.devices) + " devices");
      else if (p_.element_bytes != e_)
        shapes_.error = "element type mismatch: the program was planned for " + std::to_string(p_.element_bytes) +
                        "-byte elements, the array's elements have " + std::to_string(e_) + " bytes";
      else if (shapes_.sums && !el.reduces)
        shapes_.error = "the program adds partial sums, which needs an element type with + and a backend with "
                        "allreduce and reducescatter";
      for (reduction r : all_reductions)
        if (shapes_.error.empty() && (shapes_.reductions >> static_cast<unsigned>(r) & 1u) &&
            !(el.reducible >> static_cast<unsigned>(r) & 1u))
          shapes_.error = "the program reduces partial values by " + std::string(reduction_name(r)) + ", but " +
                          unreducible_text(r);
      if (shapes_.error.empty() && exchanges() > 0 && local_.size() != p_.world_size() &&
          !(el.exchanges && local_.size() == 1))
        shapes_.error = "the program has an exchange (or a step on uneven tiles that runs as one), which needs a "
                        "backend driving every rank or one rank with alltoallv (runtime/backend.hpp)";
      for (const step& st : p_.steps)
        if (shapes_.error.empty() && st.kind == op::partial && st.concat_dim >= 0 &&
            !(el.identity >> static_cast<unsigned>(st.reduce) & 1u))
          shapes_.error = "the program pads tiles with the identity of " + std::string(reduction_name(st.reduce)) +
                          ", but the element type has no " + (st.reduce == reduction::max ? "least" : "greatest") +
                          " value (std::numeric_limits)";
    }
    stats_.resize(p_.steps.size());
    for (std::size_t i = 0; i < p_.steps.size(); ++i) stats_[i].kind = p_.steps[i].kind;
    if (!shapes_.error.empty()) return;
    index_.assign(p_.world_size(), local_.size());
    for (std::size_t i = 0; i < local_.size(); ++i) index_[local_[i]] = i;
    plan_memory();
    ranks_.resize(local_.size());
    for (auto& rs : ranks_) {
      rs.scratch = {ops_.allocate(b_, scratch_a_ + scratch_b_), e_};
      rs.pack_send = {ops_.allocate(b_, pack_send_), e_};
      rs.pack_recv = {ops_.allocate(b_, pack_recv_), e_};
    }
    held_ = (scratch_a_ + scratch_b_ + pack_send_ + pack_recv_) * e_;
    peak_held_ = held_;
  }

  executor_core(const executor_core&) = delete;
  executor_core& operator=(const executor_core&) = delete;

  /// "" or why the program cannot run here (the constructor's checks).
  [[nodiscard]] const std::string& error() const { return shapes_.error; }

  /// Redistribute the local ranks' tiles (in[i], out[i]: local_ranks()[i]'s data), after
  /// `err`: "" or why this rank refuses (the constructor's checks, then check_tiles). in and
  /// out are read during the call only. Without `agree`, no agreement call: the caller's
  /// own, made on every rank before, covered this program and these tiles.
  void run(const std::string& err, std::span<const std::byte* const> in, std::span<std::byte* const> out,
           bool agree = true) {
    const agreement ag = agree ? b_.agree(hash_, err.empty()) : agreement{true, err.empty()};
    if (!err.empty()) throw redist_error(errc::runtime, err);
    if (!ag.all_ok)
      throw redist_error(errc::runtime, "another rank rejected the redistribution (see its message); nothing was moved");
    if (!ag.same)
      throw redist_error(errc::runtime,
                         "ranks disagree on the program (hash mismatch): every rank must run the same program with the "
                         "same element type; nothing was moved");
    prepare();
    in_ = in;
    out_ = out;
    live(shapes_.ext.front().size());
    step_now_ = 0;
    if (p_.steps.empty()) {  // source == target: the tile itself
      each_rank(shapes_.ext.front().size() * e_,
                [&](std::size_t i) { ops_.copy(b_, out_[i], in_[i], shapes_.ext.front().size()); });
      live(2 * shapes_.ext.front().size());
    }
    for (std::size_t s = 0; s < p_.steps.size(); ++s) {
      const auto t0 = std::chrono::steady_clock::now();
      run_step(s);
      stats_[s].seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    ++runs_;
  }

  /// What check_tiles needs of a darray of any element type.
  struct tile_facts {
    const device_mesh* m = nullptr;
    const dist_type* t = nullptr;
    rank_t device = 0;
    bool holds = false, boxed = false;
    box held;  ///< of a box layout's tile that holds one
    std::size_t size = 0;
    const std::byte* data = nullptr;

    template <class A>
    static tile_facts of(const A& a) {
      tile_facts f{&a.mesh(), &a.type(), a.device(), a.holds(), a.of_box_layout(), {}, a.size(),
                   reinterpret_cast<const std::byte*>(std::as_const(a).data())};
      if (f.boxed && f.holds) f.held = a.held_box();
      return f;
    }
  };

  /// "" unless a tile is wrong for the program: each local rank's input and output tile
  /// (darrays of the program's element type, tile_facts::of; in[i] and out[i] belong to
  /// local_ranks()[i]).
  std::string check_tiles(std::span<const tile_facts> in, std::span<const tile_facts> out) const {
    if (in.size() != local_.size())
      return "expected one input tile for each of the " + std::to_string(local_.size()) + " local ranks, got " +
             std::to_string(in.size());
    if (out.size() != local_.size())
      return "expected one output tile for each of the " + std::to_string(local_.size()) + " local ranks, got " +
             std::to_string(out.size());
    // Rank r's tile of type `want` on mesh m, at mesh position pos (-1: r is not on the
    // mesh, and passes an empty tile, darray::none).
    auto one = [&](const tile_facts& a, rank_t r, const device_mesh& m, const dist_type& want, std::int64_t pos,
                   const char* what) -> std::string {
      const std::string who = std::string(what) + " tile of rank " + std::to_string(r);
      if (pos < 0) {
        if (a.holds || a.size != 0)
          return who + " must be empty (darray::none): rank " + std::to_string(r) + " is not on the " +
                 (std::string(what) == "input" ? "source" : "target") + " mesh";
        return {};
      }
      if (a.device != static_cast<rank_t>(pos))
        return who + " belongs to device " + (a.holds ? std::to_string(a.device) : std::string("none")) +
               (p_.placed() ? ", rank " + std::to_string(r) + " is device " + std::to_string(pos) + " of its mesh"
                            : std::string());
      if (!(*a.m == m))
        return who + " lives on mesh " + std::string(mesh_text(*a.m).view()) + ", the program's mesh is " +
               std::string(mesh_text(m).view());
      if (!(*a.t == want))
        return who + " has type " + std::string(type_text(*a.m, *a.t).view()) + ", the program expects " +
               std::string(type_text(m, want).view());
      const std::uint64_t need = local_size(m, want);
      if (a.size != need || a.data == nullptr)
        return "wrong buffer size: " + who + " holds " + std::to_string(a.size) + " elements, its type needs " +
               std::to_string(need);
      if (std::string e = mem().check_pointer(a.data); !e.empty()) return who + " " + e;
      return {};
    };
    // Rank r's tile of box layout l (darray::of_layout): its box in the padded tile, or none.
    auto boxed = [&](const tile_facts& a, rank_t r, const box_layout& l, const char* what) -> std::string {
      const std::string who = std::string(what) + " tile of rank " + std::to_string(r);
      const std::optional<box>& want = l.boxes[r];
      if (!a.boxed) return who + " must be a tile of the box layout (darray::of_layout)";
      if (!want) {
        if (a.holds || a.size != 0) return who + " must be empty: rank " + std::to_string(r) + " has no box";
        return {};
      }
      if (!a.holds || !(a.held == *want))
        return who + " holds " + (a.holds ? box_text(a.held) : std::string("nothing")) + ", its box is " +
               box_text(*want);
      if (a.size != l.padded_size() || a.data == nullptr)
        return "wrong buffer size: " + who + " holds " + std::to_string(a.size) + " elements, the layout's padded tile " +
               std::to_string(l.padded_size());
      if (std::string e = mem().check_pointer(a.data); !e.empty()) return who + " " + e;
      return {};
    };
    for (std::size_t i = 0; i < local_.size(); ++i) {
      const rank_t r = local_[i];
      if (std::string e = p_.boxed_source() ? boxed(in[i], r, p_.source_layout, "input")
                                            : one(in[i], r, p_.m, p_.source, p_.source_position(r), "input");
          !e.empty())
        return e;
      if (std::string e = p_.boxed_target() ? boxed(out[i], r, p_.target_layout, "output")
                                            : one(out[i], r, p_.target_mesh(), p_.target, p_.target_position(r), "output");
          !e.empty())
        return e;
    }
    return check_overlaps(in, out);
  }

  /// "" unless an output tile overlaps an input tile or another output tile (inputs may
  /// share memory: they are only read).
  std::string check_overlaps(std::span<const tile_facts> in, std::span<const tile_facts> out) const {
    struct range {
      std::uintptr_t lo, hi;
      bool output;
      rank_t rank;
    };
    std::vector<range> rs;
    auto add = [&](const void* p, std::size_t n, bool output, rank_t r) {
      if (n == 0) return;
      const auto lo = reinterpret_cast<std::uintptr_t>(p);
      rs.push_back({lo, lo + n * e_, output, r});
    };
    for (std::size_t i = 0; i < local_.size(); ++i) {
      add(in[i].data, in[i].size, false, local_[i]);
      add(out[i].data, out[i].size, true, local_[i]);
    }
    std::sort(rs.begin(), rs.end(), [](const range& a, const range& b) { return a.lo < b.lo; });
    auto name = [](const range& x) {
      return std::string(x.output ? "output" : "input") + " tile of rank " + std::to_string(x.rank);
    };
    const range* far_any = nullptr;  // of the ranges so far, the one reaching furthest
    const range* far_out = nullptr;  // the same among outputs
    for (const range& x : rs) {
      const range* hit = x.output ? far_any : far_out;
      if (hit != nullptr && x.lo < hit->hi)
        return "the " + name(x) + " overlaps the " + name(*hit) +
               ": outputs must not share memory with inputs or other outputs (the executor writes an output while it "
               "reads the inputs); nothing was moved";
      if (far_any == nullptr || x.hi > far_any->hi) far_any = &x;
      if (x.output && (far_out == nullptr || x.hi > far_out->hi)) far_out = &x;
    }
    return {};
  }


 private:
  struct rank_state {  // buffers held by ops_
    element_ptr scratch, pack_send, pack_recv;
  };

  /// Where every tile lives, how every step moves its blocks, and the buffer sizes: the
  /// memory formula at the top of this file.
  void plan_memory() {
    const std::size_t S = p_.steps.size();
    const std::uint64_t out_size = shapes_.ext.back().size();
    // A program between meshes (format 2): a rank holding a tile before the crossing may
    // have no output tile (it is off the target mesh), so the tiles before the crossing
    // never live in the output tile.
    bool off_target = false;
    for (std::size_t r = 0; r < shapes_.holds_before.size(); ++r)
      off_target = off_target || (shapes_.holds_before[r] && !(r < shapes_.holds_after.size() && shapes_.holds_after[r]));
    loc_ = tile_homes(p_.steps, [&](std::size_t i) {
      return shapes_.ext[i].size() <= out_size && !(off_target && i < shapes_.crossing);
    });
    for (std::size_t i = 1; i < S; ++i) {
      const std::uint64_t t = shapes_.ext[i].size();
      if (loc_[i] == tile_home::scratch_a) scratch_a_ = std::max(scratch_a_, t);
      if (loc_[i] == tile_home::scratch_b) scratch_b_ = std::max(scratch_b_, t);
    }
    path_.assign(S, block_path::local);
    packed_.assign(S, {});
    for (std::size_t s = 0; s < S; ++s) {
      const step& st = p_.steps[s];
      const std::uint64_t n = st.parts, L = shapes_.ext[s].size();
      auto piece = [&](std::uint64_t block) { return n * piece_elements(s, block); };
      if (st.fused()) {  // a grid of blocks is no one strided layout: packed, in pieces
        path_[s] = block_path::packed;
        if (st.kind == op::alltoall) {  // a fused allgather's pieces: below, once every step's path is known
          pack_recv_ = std::max(pack_recv_, piece(L / n));
          pack_send_ = std::max(pack_send_, piece(L / n));
          packs_sends_ = true;
        }
        continue;
      }
      switch (moves_as_exchange(p_, s, shapes_.boxes) ? op::exchange : st.kind) {
        case op::allgather:
          path_[s] = clipped(s)                   ? block_path::packed
                     : recv_layout(s).contiguous() ? block_path::direct
                     : in_place(op::allgather)   ? block_path::in_place
                                                 : block_path::packed;
          if (path_[s] == block_path::packed) pack_recv_ = std::max(pack_recv_, piece(L));
          break;
        case op::alltoall:
          path_[s] = clipped(s)                                                  ? block_path::packed
                     : send_layout(s).contiguous() && recv_layout(s).contiguous() ? block_path::direct
                     : in_place(op::alltoall)                                    ? block_path::in_place
                                                                                 : block_path::packed;
          if (path_[s] == block_path::packed) {
            pack_send_ = std::max(pack_send_, piece(step_block(s)));
            pack_recv_ = std::max(pack_recv_, piece(step_block(s)));
            packs_sends_ = true;
          }
          break;
        case op::reducescatter:
          if (padded_scatter(s)) {  // padded to n chunks of the new tile, packed in pieces
            path_[s] = block_path::packed;
            pack_send_ = std::max(pack_send_, piece(shapes_.ext[s + 1].size()));
            packs_sends_ = true;
            break;
          }
          path_[s] = send_layout(s).contiguous() ? block_path::direct : block_path::packed;
          if (path_[s] == block_path::packed) pack_send_ = std::max(pack_send_, piece(L / n));
          packs_sends_ = packs_sends_ || path_[s] == block_path::packed;
          break;
        case op::exchange: {
          if (local_.size() == p_.world_size()) {  // every rank here: tile to tile
            path_[s] = block_path::direct;
            break;
          }
          path_[s] = in_place(op::exchange) ? block_path::in_place : block_path::packed;
          if (path_[s] == block_path::packed) {
            packs_sends_ = true;  // on every rank, whatever this one sends
            const exchange_plan& x = shapes_.exchanges[s];
            packed_[s] = packed_pieces(x, local_[0]);
            std::uint64_t sent = 0;
            for (const auto& [b, at] : packed_[s]) sent += b.size();
            pack_send_ = std::max(pack_send_, sent);
            pack_recv_ = std::max(pack_recv_, x.received[local_[0]]);
          }
          break;
        }
        default: break;
      }
    }
    for (std::size_t s = 0; s < S; ++s)  // fused allgathers: receives within the end tile where nothing packs sends
      if (p_.steps[s].fused() && p_.steps[s].kind == op::allgather)
        pack_recv_ = std::max(pack_recv_, p_.steps[s].parts * piece_elements(s, shapes_.ext[s].size()));
  }

  /// The backend's one rank where it drives one (MPI, NCCL): its exchanges need only that
  /// rank's pieces (program_check); none where it drives several.
  static std::optional<rank_t> one_rank(B& backend) {
    const auto local = backend.local_ranks();
    if (local.size() != 1) return std::nullopt;
    return static_cast<rank_t>(local[0]);
  }

  /// The distinct boxes rank r sends to other ranks in exchange x, each with its offset in
  /// the send pack buffer (a piece sent to several ranks is packed once).
  static std::map<box, std::uint64_t> packed_pieces(const exchange_plan& x, rank_t r) {
    std::map<box, std::uint64_t> at;
    std::uint64_t end = 0;
    for (const exchange_piece& pc : x.pieces)
      if (pc.from == r && pc.to != r && at.emplace(pc.b, end).second) end += pc.b.size();
    return at;
  }

  /// Steps that run as exchanges (exchange.hpp moves_as_exchange).
  std::size_t exchanges() const {
    std::size_t n = 0;
    for (std::size_t s = 0; s < p_.steps.size(); ++s) n += moves_as_exchange(p_, s, shapes_.boxes);
    return n;
  }

  /// An allgather or alltoall on padded tiles whose blocks do not tile the tiles exactly
  /// (exchange.hpp padded_clips): packed, in pieces of padded blocks (step_block), and
  /// copied clipped to the tiles (clipped_copy): what lies past them is padding.
  bool clipped(std::size_t s) const { return padded_clips(p_, s, shapes_.boxes); }
  /// The elements of one block an allgather (its tile) or alltoall (its padded chunk)
  /// sends: exchange.hpp padded_block.
  std::uint64_t step_block(std::size_t s) const { return padded_block(p_, s, shapes_.boxes, shapes_.ext[s].size()); }
  /// Elements [a, b) of each of the n blocks of w rows along dimension d of a tile of
  /// extents x (block m at rows [m w, (m + 1) w), clipped to the x[d] rows the tile has),
  /// between the tile and a pack buffer that holds the n pieces back to back (pack: tile ->
  /// buffer, else buffer -> tile): the blocks that lie whole in the tile, then the part of
  /// the one that reaches past its end; nothing of the rest (in the buffer: padding).
  void clipped_copy(const extents& x, int d, std::uint64_t n, std::uint64_t w, std::uint64_t a, std::uint64_t b,
                    bool pack, element_ptr from, element_ptr to) {
    std::uint64_t outer = 1, inner = 1;
    for (int k = 0; k < x.rank; ++k) {
      if (k < d) outer *= x[k];
      else if (k > d) inner *= x[k];
    }
    if (w == 0 || inner == 0) return;
    const std::uint64_t run = w * inner, row = x[d] * inner, whole = std::min(x[d] / w, n);
    auto copy = [&](const block_layout& l, std::uint64_t keep, std::uint64_t tile_at, std::uint64_t buffer_at) {
      const piece_copies pc = block_piece_copies(l, a, b, pack, keep);
      for (int k = 0; k < pc.count; ++k)
        strided(pc.copy[k], from + (pack ? tile_at : buffer_at), to + (pack ? buffer_at : tile_at));
    };
    if (whole > 0) copy(block_layout{whole, outer, run, row, run}, run, 0, 0);
    if (whole < n && x[d] > whole * w)
      copy(block_layout{1, outer, run, row, run}, (x[d] - whole * w) * inner, whole * run, whole * (b - a));
  }

  /// A reduce-scatter whose parts do not divide its split extent (uneven types, DESIGN.md
  /// section 2: chunks of ceil(extent / parts) of the padded tile, the last ones short or
  /// empty): the executor pads its send to parts chunks of the new tile.
  bool padded_scatter(std::size_t s) const {
    const step& st = p_.steps[s];
    return st.kind == op::reducescatter && !st.fused() && st.parts > 0 &&
           shapes_.ext[s][st.split_dim] % st.parts != 0;
  }

  bool in_place(op k) const { return ops_.strided_blocks(b_, k); }
  /// The blocks step s sends (split of its input tile) and receives (split of its output).
  block_layout send_layout(std::size_t s) const {
    return split_layout(shapes_.ext[s].span(), p_.steps[s].split_dim, p_.steps[s].parts);
  }
  block_layout recv_layout(std::size_t s) const {
    return split_layout(shapes_.ext[s + 1].span(), p_.steps[s].concat_dim, p_.steps[s].parts);
  }
  /// The elements of block `block` per piece in a packed step (core/time_model.hpp
  /// pack_budget_bytes and pack_piece_elements, which the time model prices fused steps
  /// by): a fused allgather's within the whole end tile where no step packs sends
  /// (packs_sends_, complete by the time it is asked; the same on every rank).
  std::uint64_t piece_elements(std::size_t s, std::uint64_t block) const {
    const step& st = p_.steps[s];
    const std::uint64_t in_out = std::max(shapes_.ext.front().size(), shapes_.ext.back().size());
    const bool whole = st.fused() && st.kind == op::allgather && !packs_sends_;
    return pack_piece_elements(st.parts, block, pack_budget_bytes(in_out, e_, whole, opt_.pack_chunk_bytes), e_);
  }

  /// Local rank i's buffer at location w.
  element_ptr buffer(std::size_t i, tile_home w) {
    switch (w) {
      case tile_home::input: return {const_cast<std::byte*>(in_[i]), e_};  // only ever read: backends never write sends
      case tile_home::output: return {out_[i], e_};
      case tile_home::scratch_a: return ranks_[i].scratch;
      case tile_home::scratch_b: return ranks_[i].scratch + scratch_a_;
    }
    return {};
  }


  /// The backend's memory space, asked for afresh at every use (a small handle).
  decltype(memory_of(std::declval<B&>())) mem() const { return memory_of(b_); }
  /// The strided copy c (in elements) from `from` to `to`.
  void strided(const detail::strided_copy& c, element_ptr from, element_ptr to) { ops_.strided(b_, c, from.p, to.p); }

  /// Let the backend build its groups (communicators) once, in program order.
  void prepare() {
    if (prepared_) return;
    for (const step& s : p_.steps)
      if (!s.members.empty()) b_.prepare_groups(s.members, s.parts);
    prepared_ = true;
  }

  void live(std::uint64_t elements) { peak_live_ = std::max(peak_live_, elements); }

  /// fn(i) for every local rank i that holds a tile in step step_now_ (every rank, but
  /// on programs on device sets), in parallel where the backend offers it.
  template <class F>
  void each_rank(std::uint64_t bytes, F&& fn) {
    auto one = [&](std::size_t i) {
      if (holding(i)) fn(i);
    };
    if constexpr (parallel_backend<B>) b_.parallel_for(local_.size(), bytes, one);
    else
      for (std::size_t i = 0; i < local_.size(); ++i) one(i);
  }
  /// Local rank i holds a tile in step step_now_ (an exchange: always; its pieces say).
  bool holding(std::size_t i) const {
    return step_now_ == no_step || shapes_.holds(step_now_, local_[i]);
  }

  /// Call `fn(group)` for every group of the step that holds a local rank (in parallel
  /// where the backend offers it).
  template <class F>
  void for_local_groups(const step& s, std::uint64_t bytes, F&& fn) {
    groups_.clear();
    for (std::size_t g = 0; g < s.group_count(); ++g) {
      const auto grp = s.group(g);
      bool mine = false;
      for (rank_t r : grp) mine = mine || send_[r] != nullptr;
      if (mine) groups_.push_back(g);
    }
    if constexpr (parallel_backend<B>)
      b_.parallel_for(groups_.size(), bytes, [&](std::size_t k) { fn(s.group(groups_[k])); });
    else
      for (std::size_t g : groups_) fn(s.group(g));
  }

  /// Point every local rank's send at send(i) and receive at recv(i); null for a rank
  /// that holds no tile in the step (programs on device sets).
  template <class S, class R>
  void point(S&& send, R&& recv) {
    for (std::size_t i = 0; i < local_.size(); ++i) {
      const bool h = holding(i);
      send_[local_[i]] = h ? element_ptr(send(i)).p : nullptr;
      recv_[local_[i]] = h ? element_ptr(recv(i)).p : nullptr;
    }
  }

  /// point(), and hand the buffers to the moves (allgather, alltoall, permute, exchange).
  template <class S, class R>
  void bind(S&& send, R&& recv) {
    point(send, recv);
    ops_.bind(send_, recv_);
  }

  /// point(), and hand the buffers to the reductions (allreduce, reducescatter).
  template <class S, class R>
  void bind_reduce(S&& send, R&& recv) {
    point(send, recv);
    ops_.bind_reduce(send_, recv_);
  }

  /// Step statistics: one local rank received b bytes; every local rank did.
  static void account_one(step_stats& st, std::uint64_t b) {
    st.bytes_moved += b;
    st.max_rank_bytes = std::max(st.max_rank_bytes, b);
  }
  void account_all(step_stats& st, std::uint64_t b) const {
    for (std::size_t i = 0; i < local_.size(); ++i)
      if (holding(i)) account_one(st, b);
  }

  void run_step(std::size_t si) {
    const step& s = p_.steps[si];
    const extents &before = shapes_.ext[si], &after = shapes_.ext[si + 1];
    const std::uint64_t L = before.size(), n = s.parts;
    const std::uint64_t bytes = L * e_ * local_.size();
    step_stats& st = stats_[si];
    st.bytes_moved = st.max_rank_bytes = 0;
    send_.assign(p_.world_size(), nullptr);
    recv_.assign(p_.world_size(), nullptr);
    step_now_ = si;
    auto src = [&](std::size_t i) { return buffer(i, loc_[si]); };
    auto dst = [&](std::size_t i) { return buffer(i, loc_[si + 1]); };
    auto account_rank = [&](std::uint64_t b) { account_one(st, b); };
    auto account = [&](std::uint64_t b) { account_all(st, b); };
    auto pack_send = [&](std::size_t i) { return ranks_[i].pack_send; };
    auto pack_recv = [&](std::size_t i) { return ranks_[i].pack_recv; };
    // Packed steps: pieces [a, b) of every block of `block` elements.
    auto pieces = [&](std::uint64_t block, auto&& fn) {
      const std::uint64_t c = piece_elements(si, block);
      for (std::uint64_t a = 0; a < block; a += c) fn(a, std::min(block, a + c));
    };
    auto piece_copy = [&](const block_layout& l, std::uint64_t a, std::uint64_t b, bool pack, std::size_t i) {
      const piece_copies pc = block_piece_copies(l, a, b, pack);
      const element_ptr from = pack ? src(i) : pack_recv(i), to = pack ? pack_send(i) : dst(i);
      for (int k = 0; k < pc.count; ++k) strided(pc.copy[k], from, to);
    };

    if (moves_as_exchange(p_, si, shapes_.boxes)) {
      run_exchange(si);
      return;
    }
    if (s.fused()) {
      run_fused(si);
      return;
    }
    switch (s.kind) {
      case op::dynslice: {
        each_rank(bytes / n, [&](std::size_t i) {
          ops_.split_copy(b_, src(i).p, L, before.span(), s.split_dim, n, s.index[local_[i]], dst(i).p, L / n);
        });
        live(L + L / n);
        break;
      }
      case op::allgather: {
        // send: the tile; recv: n blocks along concat_dim of the new tile.
        switch (path_[si]) {
          case block_path::in_place:
            {  // a backend moving strided blocks (in_place)
              const block_layout rl = recv_layout(si);
              bind(src, dst);
              for_local_groups(s, bytes * n, [&](std::span<const rank_t> g) { ops_.allgather(b_, g, rl); });
            }
            break;
          case block_path::packed: {
            const bool clip = clipped(si);
            const block_layout rl = clip ? block_layout{} : recv_layout(si);
            pieces(L, [&](std::uint64_t a, std::uint64_t b) {
              bind([&](std::size_t i) { return src(i) + a; }, pack_recv);
              for_local_groups(s, (b - a) * n * e_ * local_.size(),
                               [&](std::span<const rank_t> g) { ops_.allgather(b_, g, b - a); });
              each_rank((b - a) * n * e_ * local_.size(), [&](std::size_t i) {
                if (clip) clipped_copy(after, s.concat_dim, n, before[s.concat_dim], a, b, false, pack_recv(i), dst(i));
                else piece_copy(rl, a, b, false, i);
              });
            });
            break;
          }
          default:
            bind(src, dst);
            for_local_groups(s, bytes * n, [&](std::span<const rank_t> g) { ops_.allgather(b_, g, L); });
            break;
        }
        account((n - 1) * L * e_);
        live(L + L * n);
        break;
      }
      case op::alltoall: {
        // send: n chunks along split_dim; recv: n chunks along concat_dim of the new tile.
        switch (path_[si]) {
          case block_path::in_place:
            {  // a backend moving strided blocks (in_place)
              const block_layout sl = send_layout(si), rl = recv_layout(si);
              bind(src, dst);
              for_local_groups(s, bytes, [&](std::span<const rank_t> g) { ops_.alltoall(b_, g, sl, rl); });
            }
            break;
          case block_path::packed: {
            const bool clip = clipped(si);
            const block_layout sl = clip ? block_layout{} : send_layout(si), rl = clip ? block_layout{} : recv_layout(si);
            const std::uint64_t w = ceil_div(before[s.split_dim], n);  // rows of a chunk: ceil(t / n)
            pieces(step_block(si), [&](std::uint64_t a, std::uint64_t b) {
              const std::uint64_t piece_bytes = (b - a) * n * e_ * local_.size();
              each_rank(piece_bytes, [&](std::size_t i) {
                if (clip) clipped_copy(before, s.split_dim, n, w, a, b, true, src(i), pack_send(i));
                else piece_copy(sl, a, b, true, i);
              });
              bind(pack_send, pack_recv);
              for_local_groups(s, piece_bytes, [&](std::span<const rank_t> g) { ops_.alltoall(b_, g, b - a); });
              each_rank(piece_bytes, [&](std::size_t i) {
                if (clip) clipped_copy(after, s.concat_dim, n, before[s.concat_dim], a, b, false, pack_recv(i), dst(i));
                else piece_copy(rl, a, b, false, i);
              });
            });
            break;
          }
          default:
            bind(src, dst);
            for_local_groups(s, bytes, [&](std::span<const rank_t> g) { ops_.alltoall(b_, g, L / n); });
            break;
        }
        account((n - 1) * (L / n) * e_);
        live(2 * L);
        break;
      }
      case op::allpermute: {
        bind(src, dst);
        ops_.permute(b_, s.dest, L);
        for (std::size_t i = 0; i < local_.size(); ++i)  // a block from another rank unless a fixed point
          if (s.dest[local_[i]] != local_[i]) account_rank(L * e_);
        live(2 * L);
        break;
      }
      case op::allreduce: {
        bind_reduce(src, dst);
        for_local_groups(s, bytes * n, [&](std::span<const rank_t> g) { ops_.allreduce(b_, g, L, s.reduce); });
        account(2 * (n - 1) * L * e_ / n);  // what a ring all-reduce receives
        live(2 * L);
        break;
      }
      case op::reducescatter: {
        // send: n chunks along split_dim; recv: the sum of every member's chunk m, the new tile.
        if (padded_scatter(si)) {
          run_padded_scatter(si);
          break;
        }
        if (path_[si] == block_path::packed) {
          const block_layout sl = send_layout(si);
          pieces(L / n, [&](std::uint64_t a, std::uint64_t b) {
            const std::uint64_t piece_bytes = (b - a) * n * e_ * local_.size();
            each_rank(piece_bytes, [&](std::size_t i) { piece_copy(sl, a, b, true, i); });
            bind_reduce(pack_send, [&](std::size_t i) { return dst(i) + a; });
            for_local_groups(s, piece_bytes,
                             [&](std::span<const rank_t> g) { ops_.reducescatter(b_, g, b - a, s.reduce); });
          });
        } else {
          bind_reduce(src, dst);
          for_local_groups(s, bytes, [&](std::span<const rank_t> g) { ops_.reducescatter(b_, g, L / n, s.reduce); });
        }
        account((n - 1) * (L / n) * e_);
        live(2 * L);
        break;
      }
      case op::exchange:
        run_exchange(si);
        break;
      case op::partial: {  // local (lower/partial.hpp)
        // Every world rank's member position in its group (sized once: no allocation after
        // the first run).
        std::vector<std::uint32_t>& at = member_at_;
        at.assign(p_.world_size(), 0);
        for (std::size_t g = 0; g < s.group_count(); ++g)
          for (std::size_t k = 0; k < n; ++k) at[s.group(g)[k]] = static_cast<std::uint32_t>(k);
        if (s.concat_dim >= 0) {  // padded: the tile at its block of the larger tile, the identity around it
          each_rank(bytes * n, [&](std::size_t i) {
            ops_.fill_identity(b_, dst(i).p, L * n, s.reduce);
            ops_.concat_copy(b_, src(i).p, L, before.span(), s.concat_dim, n, at[local_[i]], dst(i).p, L * n);
          });
          live(L + L * n);
        } else {  // the first member keeps its tile; under sum and prod the others write the identity
          const bool keep_all = s.reduce != reduction::sum && s.reduce != reduction::prod;
          const bool in_place = loc_[si] == loc_[si + 1];  // tile_homes: the kept tiles stay where they are
          each_rank(bytes, [&](std::size_t i) {
            if (keep_all || at[local_[i]] == 0) {
              if (!in_place) ops_.copy(b_, dst(i).p, src(i).p, L);
            } else {
              ops_.fill_identity(b_, dst(i).p, L, s.reduce);
            }
          });
          live(in_place ? L : 2 * L);
        }
        break;
      }
    }
  }

  /// A padded reduce-scatter (padded_scatter), in pieces like a packed step: block m of
  /// what a rank sends is chunk m of its tile, rows [m c, min((m + 1) c, e)) along the split
  /// dimension (c = ceil(e / n), the new tile's extent), with the rows past its tile filled
  /// by copies of its first rows (values it holds, so that reducing them stays as quiet as
  /// reducing its data; they land only in the padding of the receivers' tiles). Elements
  /// [a, b) of every block (row-major in the new tile's extents) go to the send pack buffer,
  /// block m at m * (b - a), and the backend's reduce-scatter of n blocks of b - a writes
  /// elements [a, b) of the new tile.
  void run_padded_scatter(std::size_t si) {
    const step& s = p_.steps[si];
    const extents& before = shapes_.ext[si];
    const extents& after = shapes_.ext[si + 1];
    const int R = before.rank;
    const auto k = static_cast<std::size_t>(s.split_dim);
    const std::uint64_t n = s.parts, e = before[s.split_dim], c = after[s.split_dim], blk = after.size();
    auto src = [&](std::size_t i) { return buffer(i, loc_[si]); };
    auto dst = [&](std::size_t i) { return buffer(i, loc_[si + 1]); };
    auto pack_send = [&](std::size_t i) { return ranks_[i].pack_send; };
    // Rows [lo, hi) of region r of block m (rows of the chunk) from tile rows from_row..,
    // into the piece `p` of extents r.size.
    auto rows = [&](std::size_t i, const tile_region& r, element_ptr p, std::uint64_t lo, std::uint64_t hi,
                    std::uint64_t from_row) {
      if (lo >= hi) return;
      tile_region from = r, to;
      for (int q = 0; q < R; ++q) to.size[static_cast<std::size_t>(q)] = r.size[static_cast<std::size_t>(q)];
      from.start[k] = from_row;
      from.size[k] = to.size[k] = hi - lo;
      to.start[k] = lo - r.start[k];
      for_region_copies(before.span(), from, extent_span(r, R), to, [&](const detail::strided_copy& x) { strided(x, src(i), p); });
    };
    const std::uint64_t piece = piece_elements(si, blk);
    for (std::uint64_t a = 0; a < blk; a += piece) {
      const std::uint64_t b = std::min(blk, a + piece), piece_bytes = (b - a) * n * e_ * local_.size();
      each_rank(piece_bytes, [&](std::size_t i) {
        for (std::uint64_t m = 0; m < n; ++m) {
          const std::uint64_t v = m * c < e ? std::min(c, e - m * c) : 0;  // rows of the tile in chunk m
          for_range_regions(after.span(), a, b, [&](const tile_region& r, std::uint64_t first) {
            const element_ptr p = pack_send(i) + m * (b - a) + (first - a);
            const std::uint64_t lo = r.start[k], hi = lo + r.size[k];
            rows(i, r, p, lo, std::min(hi, v), m * c + lo);                  // the tile's rows
            rows(i, r, p, std::max(lo, v), hi, std::max(lo, v) - v);         // padding: its first rows (c <= e)
          });
        }
      });
      bind_reduce(pack_send, [&](std::size_t i) { return dst(i) + a; });
      for_local_groups(s, piece_bytes, [&](std::span<const rank_t> g) { ops_.reducescatter(b_, g, b - a, s.reduce); });
    }
    account_all(stats_[si], (n - 1) * blk * e_);
    live(before.size() + blk);
  }

  static std::span<const std::uint64_t> extent_span(const tile_region& t, int R) {
    return {t.size.data(), static_cast<std::size_t>(R)};
  }

  /// A fused allgather or alltoall (program.hpp), in pieces like a packed step: elements
  /// [a, b) of every block (row-major) at a time. An alltoall packs those of chunk m (at the
  /// digits of m along the split dimensions) at m * (b - a); the backend's contiguous
  /// collective moves them; every rank unpacks those of block k to the digits of k along
  /// the concat dimensions of its new tile.
  void run_fused(std::size_t si) {
    const step& s = p_.steps[si];
    const extents& before = shapes_.ext[si];
    const extents& after = shapes_.ext[si + 1];
    const std::uint64_t L = before.size(), n = s.parts;
    const bool alltoall = s.kind == op::alltoall;
    extents chunk = before;  // the block a member sends to each member
    for (int q = 0; q < s.split_grid.n; ++q) chunk[s.split_grid.dim[q]] /= s.split_grid.parts[q];
    const std::uint64_t C = chunk.size();
    auto src = [&](std::size_t i) { return buffer(i, loc_[si]); };
    auto dst = [&](std::size_t i) { return buffer(i, loc_[si + 1]); };
    auto pack_send = [&](std::size_t i) { return ranks_[i].pack_send; };
    auto pack_recv = [&](std::size_t i) { return ranks_[i].pack_recv; };
    auto corner = [&](const step_grid& g, std::uint64_t m) {  // where block m starts
      std::array<std::uint64_t, max_dims> c{};
      for (int q = 0; q < g.n; ++q) c[static_cast<std::size_t>(g.dim[q])] = g.digit(m, q) * chunk[g.dim[q]];
      return c;
    };
    // Copy the elements [a, b) of a block between a tile (the block at `at`) and a piece.
    auto move = [&](element_ptr tile, std::span<const std::uint64_t> te, const std::array<std::uint64_t, max_dims>& at,
                    element_ptr piece, std::uint64_t a, std::uint64_t b, bool pack) {
      for_range_regions(chunk.span(), a, b, [&](const tile_region& r, std::uint64_t first) {
        tile_region in_tile = r, in_piece;
        for (int d = 0; d < before.rank; ++d) {
          const auto k = static_cast<std::size_t>(d);
          in_tile.start[k] += at[k];
          in_piece.size[k] = r.size[k];
        }
        const std::span<const std::uint64_t> pe = extent_span(r, before.rank);
        const element_ptr p = piece + (first - a);
        for_region_copies(pack ? te : pe, pack ? in_tile : in_piece, pack ? pe : te, pack ? in_piece : in_tile,
                          [&](const detail::strided_copy& c) { strided(c, pack ? tile : p, pack ? p : tile); });
      });
    };
    const std::uint64_t c = piece_elements(si, C);
    for (std::uint64_t a = 0; a < C; a += c) {
      const std::uint64_t b = std::min(C, a + c), piece_bytes = (b - a) * n * e_ * local_.size();
      if (alltoall) {
        each_rank(piece_bytes, [&](std::size_t i) {
          for (std::uint64_t m = 0; m < n; ++m)
            move(src(i), before.span(), corner(s.split_grid, m), pack_send(i) + m * (b - a), a, b, true);
        });
        bind(pack_send, pack_recv);
        for_local_groups(s, piece_bytes, [&](std::span<const rank_t> g) { ops_.alltoall(b_, g, b - a); });
      } else {  // the tile is the block: its elements [a, b) lie contiguous
        bind([&](std::size_t i) { return src(i) + a; }, pack_recv);
        for_local_groups(s, piece_bytes, [&](std::span<const rank_t> g) { ops_.allgather(b_, g, b - a); });
      }
      each_rank(piece_bytes, [&](std::size_t i) {
        for (std::uint64_t k = 0; k < n; ++k)
          move(dst(i), after.span(), corner(s.concat_grid, k), pack_recv(i) + k * (b - a), a, b, false);
      });
    }
    account_all(stats_[si], (n - 1) * C * e_);
    live(alltoall ? 2 * L : L + L * n);
  }

  /// An exchange (redist/exchange.hpp): every piece straight from the sender's tile to the
  /// receiver's when every rank is local, otherwise through the backend for the one local
  /// rank, in place (regions) or packed in rank order.
  void run_exchange(std::size_t si) {
    step_now_ = no_step;  // ranks holding no tile before it may receive one
    const exchange_plan& x = shapes_.exchanges[si];
    const extents& before = shapes_.ext[si];
    const extents& after = shapes_.ext[si + 1];
    const int R = before.rank;
    step_stats& st = stats_[si];
    auto src = [&](std::size_t i) { return buffer(i, loc_[si]); };
    auto dst = [&](std::size_t i) { return buffer(i, loc_[si + 1]); };
    auto region = [&](const box& piece, const box& tile) {
      tile_region t;
      for (int d = 0; d < R; ++d) {
        const auto k = static_cast<std::size_t>(d);
        t.start[k] = piece.lo[k] - tile.lo[k];
        t.size[k] = piece.extent(d);
      }
      return t;
    };
    auto copy = [&](element_ptr from, std::span<const std::uint64_t> fe, const tile_region& fr, element_ptr to,
                    std::span<const std::uint64_t> te, const tile_region& tr) {
      for_region_copies(fe, fr, te, tr, [&](const detail::strided_copy& c) { strided(c, from, to); });
    };
    // The piece a rank keeps from its own tile, when every other piece goes through the backend.
    auto own = [&](std::size_t i, const exchange_piece& pc) {
      copy(src(i), before.span(), region(pc.b, x.before[pc.from]), dst(i), after.span(), region(pc.b, x.after[pc.to]));
    };
    switch (path_[si]) {
      case block_path::direct:
        each_rank(after.size() * e_ * local_.size(), [&](std::size_t i) {
          for (const exchange_piece& pc : x.into(local_[i])) {
            const std::size_t k = index_[pc.from];
            copy(buffer(k, loc_[si]), before.span(), region(pc.b, x.before[pc.from]), dst(i),
                 after.span(), region(pc.b, x.after[pc.to]));
          }
        });
        break;
      case block_path::in_place:
        {  // a backend with exchange (strided_exchange_backend_for): in_place(op::exchange)
          const rank_t me = local_[0];
          std::vector<tile_region> sr(p_.world_size()), rr(p_.world_size());
          for (const exchange_piece& pc : x.pieces)
            if (pc.from == me && pc.to != me) sr[pc.to] = region(pc.b, x.before[me]);
          for (const exchange_piece& pc : x.into(me)) {
            if (pc.from == me) own(0, pc);
            else rr[pc.from] = region(pc.b, x.after[me]);
          }
          bind(src, dst);
          if (x.max_received > 0)  // the same on every rank: a dynslice moves nothing
            ops_.exchange(b_, before.span(), std::span<const tile_region>(sr), after.span(),
                        std::span<const tile_region>(rr));
        }
        break;
      case block_path::packed:
        {  // a backend with alltoallv (exchange_backend_for; the constructor checked)
          const rank_t me = local_[0];
          const std::uint64_t D = p_.world_size();
          const std::map<box, std::uint64_t>& packed = packed_[si];
          std::vector<std::uint64_t> sc(D, 0), sd(D, 0), rc(D, 0), ro(D + 1, 0);
          std::vector<const exchange_piece*> in(D, nullptr);
          std::vector<const exchange_piece*> kept;  // what the rank keeps from its own tile
          for (const exchange_piece& pc : x.pieces)
            if (pc.from == me && pc.to != me) {
              sc[pc.to] = pc.b.size();
              sd[pc.to] = packed.at(pc.b);
            }
          for (const exchange_piece& pc : x.into(me)) {
            if (pc.from == me) {
              kept.push_back(&pc);
            } else {
              rc[pc.from] = pc.b.size();
              in[pc.from] = &pc;
            }
          }
          for (std::uint64_t k = 0; k < D; ++k) ro[k + 1] = ro[k] + rc[k];
          const element_ptr ps = ranks_[0].pack_send, pr = ranks_[0].pack_recv;
          auto pack = [&](const box& b) {
            const tile_region whole = region(b, b);
            copy(src(0), before.span(), region(b, x.before[me]), ps + packed.at(b), extent_span(whole, R), whole);
          };
          auto unpack = [&](std::uint64_t k) {
            const tile_region whole = region(in[k]->b, in[k]->b);
            copy(pr + ro[k], extent_span(whole, R), whole, dst(0), after.span(), region(in[k]->b, x.after[me]));
          };
          if constexpr (message_backend<B>) {
            // Pipelined (runtime/backend.hpp message_round): receives posted first, each piece
            // packed and sent at once (a piece for several ranks packed once), the kept piece
            // copied while they fly (NCCL: on the backend's second stream), each piece unpacked
            // as it arrives. A piece that is one contiguous run of the sender's tile is sent
            // from the tile, and one that is a run of the receiver's tile is received into it:
            // no pack, no unpack.
            std::vector<message> sends, recvs;
            std::vector<const box*> sent;  // per send: the piece to pack, nullptr when sent from the tile
            std::vector<char> unpacks;     // per receive: unpack it (0: received in place)
            const element_ptr in_tile = src(0);
            for (const exchange_piece& pc : x.pieces)
              if (pc.from == me && pc.to != me) {
                const std::uint64_t at = detail::run_offset(before.span(), region(pc.b, x.before[me]));
                const bool run = at != detail::no_run;
                sends.push_back({pc.to, (run ? in_tile + at : ps + sd[pc.to]).p, sc[pc.to] * e_});
                sent.push_back(run ? nullptr : &pc.b);
              }
            for (std::uint64_t k = 0; k < D; ++k)
              if (in[k] != nullptr) {
                const std::uint64_t at = detail::run_offset(after.span(), region(in[k]->b, x.after[me]));
                const bool run = at != detail::no_run;
                recvs.push_back({static_cast<rank_t>(k), (run ? dst(0) + at : pr + ro[k]).p,
                                 rc[k] * e_});
                unpacks.push_back(!run);
              }
            std::set<const box*> done;  // pieces packed (one piece may go to several ranks)
            b_.message_round(
                std::span<const message>(sends), std::span<const message>(recvs),
                [&](std::size_t m) {
                  if (sent[m] && done.insert(&packed.find(*sent[m])->first).second) pack(*sent[m]);
                },
                [&] {
                  for (const exchange_piece* pc : kept) own(0, *pc);
                },
                [&](std::size_t m) {
                  if (unpacks[m]) unpack(recvs[m].peer);
                });
          } else {
            for (const exchange_piece* pc : kept) own(0, *pc);
            for (const auto& [b, at] : packed) pack(b);
            bind([&](std::size_t) { return ps; }, [&](std::size_t) { return pr; });
            if (x.max_received > 0)
              ops_.alltoallv(b_, std::span<const std::uint64_t>(sc), std::span<const std::uint64_t>(sd),
                           std::span<const std::uint64_t>(rc));
            for (std::uint64_t k = 0; k < D; ++k)
              if (in[k] != nullptr) unpack(k);
          }
        }
        break;
      default: break;
    }
    for (std::size_t i = 0; i < local_.size(); ++i) account_one(st, x.received[local_[i]] * e_);
    live(before.size() + after.size());
  }

  B& b_;
  program p_;
  executor_options opt_;
  detail::program_shapes shapes_;
  std::uint64_t hash_ = 0;
  std::size_t e_ = 0;  ///< bytes of an element
  element_ops<B>& ops_;
  std::vector<rank_t> local_;
  std::vector<std::size_t> index_;  ///< local index of each rank (local_.size() if not local)
  std::vector<rank_state> ranks_;
  std::vector<tile_home> loc_;      ///< where tile t_i lives (program.hpp tile_homes)
  std::vector<std::uint32_t> member_at_;  ///< a partial step: every world rank's position in its group
  std::vector<block_path> path_;    ///< how step s moves its blocks
  std::vector<std::map<box, std::uint64_t>> packed_;  ///< packed exchange s: its send pieces and their offsets
  std::uint64_t scratch_a_ = 0, scratch_b_ = 0, pack_send_ = 0, pack_recv_ = 0;
  bool packs_sends_ = false;  ///< some step packs sends (on every rank: its path, not its bytes)
  std::span<const std::byte* const> in_;  ///< the tiles of the run in progress
  std::span<std::byte* const> out_;
  std::vector<std::byte*> send_, recv_;
  std::vector<std::size_t> groups_;
  std::vector<step_stats> stats_;
  std::uint64_t held_ = 0, peak_held_ = 0, peak_live_ = 0, runs_ = 0;
  static constexpr std::size_t no_step = SIZE_MAX;
  std::size_t step_now_ = no_step;  ///< the step running (each_rank skips ranks holding no tile in it)
  bool prepared_ = false;
};

}  // namespace detail

/// Runs one program, any number of times, on the ranks a backend drives. The control code
/// (detail::executor_core) is one per backend; the data moves as elements of an unsigned
/// integer of T's size (detail::storage_ops), shared by every element type of one size;
/// only the reductions are T's own (detail::typed_ops).
template <class T, class B>
  requires backend_for<B, T> && memory_space_for<memory_space_t<B>, T>
class executor final : detail::typed_ops<T, B>, public detail::executor_core<B> {
  using core = detail::executor_core<B>;
  using facts = typename core::tile_facts;

 public:
  using typename core::memory_type;

  executor(B& backend, const program& p, executor_options o = {})
      : core(backend, p, o, detail::element_info::of<T, B>(), *this) {}

  /// "" or why the program cannot run here (the constructor's checks; run() throws it).
  using core::error;

  /// Redistribute the tiles of all local ranks: in[i] and out[i] belong to local_ranks()[i];
  /// in[i] has the program's source type, out[i] (owned or borrowed) its target type. The
  /// inputs are not modified; no output may overlap an input or another output.
  void run(std::span<const darray<T>> in, std::span<darray<T>> out) { run_tiles(in, out, true); }

  /// As run(in, out), without the agreement call, for a caller whose own agreement, made on
  /// every rank before this run, covered the program and tiles of these shapes
  /// (reshard_executor: a joint plan's own programs, and the chunks of an own program after
  /// its first). A failed check throws on this rank alone.
  void run_agreed(std::span<const darray<T>> in, std::span<darray<T>> out) { run_tiles(in, out, false); }

  /// As above, returning new owned target tiles (host-accessible memory only).
  std::vector<darray<T>> run(std::span<const darray<T>> in)
    requires memory_type::host_accessible
  {
    std::vector<darray<T>> out;
    if (core::error().empty() && in.size() == core::local_ranks().size()) {
      out.reserve(in.size());
      for (rank_t r : core::local_ranks()) out.push_back(target_tile<T>(core::prog(), r));
    }
    run(in, std::span<darray<T>>(out));
    return out;
  }

  /// One local rank (MPI, NCCL): redistribute its tile into `out`.
  void run(const darray<T>& in, darray<T>& out) { run(std::span<const darray<T>>(&in, 1), std::span<darray<T>>(&out, 1)); }
  /// One local rank: redistribute its tile into a new owned tile (host-accessible memory only).
  darray<T> run(const darray<T>& in)
    requires memory_type::host_accessible
  {
    std::vector<darray<T>> out = run(std::span<const darray<T>>(&in, 1));
    return std::move(out.front());
  }

 private:
  void run_tiles(std::span<const darray<T>> in, std::span<darray<T>> out, bool agree) {
    std::string err = core::error();
    if (err.empty()) {
      facts_in_.clear();
      facts_out_.clear();
      for (const darray<T>& a : in) facts_in_.push_back(facts::of(a));
      for (const darray<T>& a : out) facts_out_.push_back(facts::of(a));
      err = core::check_tiles(facts_in_, facts_out_);
    }
    tiles_in_.clear();
    tiles_out_.clear();
    if (err.empty())
      for (std::size_t i = 0; i < in.size(); ++i) {
        tiles_in_.push_back(reinterpret_cast<const std::byte*>(in[i].data()));
        tiles_out_.push_back(reinterpret_cast<std::byte*>(out[i].data()));
      }
    core::run(err, tiles_in_, tiles_out_, agree);
  }

  std::vector<facts> facts_in_, facts_out_;
  std::vector<const std::byte*> tiles_in_;
  std::vector<std::byte*> tiles_out_;
};

/// Run `p` once on the tiles of all local ranks (in[i] belongs to local_ranks()[i]).
template <class T, class B>
  requires backend_for<B, T> && memory_space_t<B>::host_accessible
std::vector<darray<T>> redistribute(B& backend, const program& p, std::span<const darray<T>> in) {
  executor<T, B> ex(backend, p);
  return ex.run(in);
}

/// Run `p` once on the tile of the single local rank (MPI; for NCCL, whose tiles live in
/// device memory, build an executor and call run(in, out)).
template <class T, class B>
  requires backend_for<B, T> && memory_space_t<B>::host_accessible
darray<T> redistribute(B& backend, const program& p, const darray<T>& in) {
  executor<T, B> ex(backend, p);
  return ex.run(in);
}

}  // namespace redist
