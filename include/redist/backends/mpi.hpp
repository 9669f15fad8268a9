// redist/backends/mpi.hpp -- the MPI backend: one rank per process, one process per device.
//
// Available when built against MPI (CMake target redist::mpi, which defines
// REDIST_WITH_MPI); otherwise this header declares nothing.
//
// - The backend works on its own duplicate of the communicator it is given (so its
//   messages never match the application's), with MPI_ERRORS_RETURN: every failed MPI
//   call becomes a redist_error naming the call.
// - Groups: for every partition of the ranks a program uses, prepare_groups calls
//   MPI_Comm_split once, collectively, with color = the group's index and key = the
//   rank's position in its group, so the new communicator's rank order is the member order
//   (a rank in no group, on a program on device sets, passes MPI_UNDEFINED).
//   Communicators are cached by the group's rank list (and partitions already split are
//   remembered), so a program run many times, or programs sharing groups, split once.
//   Singleton groups need no communicator; a group of all ranks in order uses the
//   duplicate itself.
// - allgather / alltoall: MPI_Allgather / MPI_Alltoall on contiguous blocks. Strided
//   blocks (runtime/backend.hpp's strided_backend_for) go in place, without packing: one
//   derived datatype per side (MPI_Type_vector of the block's runs, resized so that block k
//   starts k blocks further), so MPI moves them straight between the tiles. Whether the
//   executor hands an op's blocks in place or packs them is mpi_options::alltoall_in_place
//   / allgather_in_place. On the exec benchmark (docs/benchmarks.md, 8 ranks on 2 cores)
//   the two paths are within the run-to-run noise for both ops (programs with
//   all-to-alls: datatypes 1.04x faster, with all-gathers: 1.00x), so both default to
//   datatypes, which need no pack buffers.
// - allreduce / reducescatter (partial values): MPI_Allreduce / MPI_Reduce_scatter_block
//   with MPI_SUM, MPI_MAX, MPI_MIN or MPI_PROD (bf16 and f16, runtime/half.hpp, and 8- and
//   16-bit integers with user-defined operations: detail::mpi_reduce_op); avg as MPI_SUM,
//   then the received block divided by the group size (runtime/backend.hpp reduce_finish).
//   Open MPI allocates temporaries as large as the buffers in every such call; the backend
//   sets glibc's thresholds so that they stay mapped between calls
//   (mpi_options::steady_heap, detail::steady_heap).
// - exchange (redist/exchange.hpp): MPI_Alltoallw over the duplicate with one subarray
//   datatype (MPI_Type_create_subarray) per non-empty piece, so MPI reads and writes the
//   pieces in place in the tiles, or, with mpi_options::exchange_in_place = false,
//   MPI_Alltoallv of the pieces the executor packs in rank order.
//   Single copy between the ranks of one node (mpi_options::exchange_single_copy, Linux):
//   the exchange goes as a message round of one message per peer (below), whose pieces
//   within the node move straight between the two tiles with cross-memory attach, one
//   copy per byte. Why: Open MPI 4.1 moves a non-contiguous receive datatype in 32 KiB
//   fragments that the sender and the receiver hand over in turn, so it runs at memory
//   speed only while both are on a core; where a node's cores are shared (more ranks than
//   cores, or other work beside them) MPI_Alltoallw of subarrays ran 4-15x slower
//   (docs/benchmarks.md, "Single-copy exchanges on MPI"): the two speeds of issue 26. A
//   copy by cross-memory attach needs no partner on a core. The constructor decides once,
//   collectively: single copy is on where every rank could read a value from each rank
//   of its node; otherwise every exchange is one MPI_Alltoallw. The kernel pins the other
//   rank's pages as it copies: tiles on transparent huge pages move 1.3-2.1x faster
//   (runtime/huge_pages.hpp; redist's own tiles and buffers are placed there).
// - message rounds (runtime/backend.hpp; the reshard executor's joint exchange): packed
//   messages as MPI_Irecv / MPI_Isend of bytes; messages of pieces in place as one struct
//   of subarray datatypes each. With single copy, a piece of at least 1 MiB between two
//   ranks of one node (mpi_options::single_copy_min_bytes; smaller ones go through MPI at
//   once, without the round trip that follows) waits while the two ranks swap where their
//   pieces lie (MPI_Isend / MPI_Irecv); both then choose alike by a cost model (a span of
//   the other tile costs 2 KiB of copying, mpi_options::single_copy_span_cost, since the
//   kernel pins its pages span by span; a run of the acting rank's tile 128 bytes; a gap
//   read its bytes; MPI copies every byte twice) between the receiver reading it
//   (process_vm_readv), the sender writing it (process_vm_writev) and MPI. The rank that
//   copies moves all its pieces of a message in as few calls as 1024 iovecs a side allow,
//   then tells the other rank it is done. Messages to or from other nodes go through MPI.
//   No collective is needed.
// - permute: one MPI_Sendrecv per rank (to dest[r], from the rank whose dest is r);
//   fixed points are local copies.
// - agree: one MPI_Allreduce (MAX) of {hash, ~hash, failed}: max(hash) and
//   ~max(~hash) = min(hash) are equal iff every rank passed the same hash.
// - Elements: any T with an MPI datatype, given by mpi_datatype<T>::get(). All arithmetic
//   types, bool, std::byte and std::complex<float/double> are provided; specialize
//   mpi_datatype for other types.
#pragma once

#if defined(REDIST_WITH_MPI)

#include <mpi.h>

#if defined(__linux__)
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#define REDIST_MPI_SINGLE_COPY 1
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#define REDIST_MPI_GLIBC_MALLOC 1
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <complex>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "redist/backends/mpi_exchange.hpp"
#include "redist/core/error.hpp"
#include "redist/program.hpp"
#include "redist/runtime/backend.hpp"
#include "redist/runtime/half.hpp"
#include "redist/runtime/pack.hpp"

namespace redist {

/// The MPI datatype of an element type: specialize with `static MPI_Datatype get()`.
template <class T>
struct mpi_datatype;

#define REDIST_MPI_DATATYPE(T, M)                        \
  template <>                                           \
  struct mpi_datatype<T> {                              \
    static MPI_Datatype get() { return M; }             \
  }
REDIST_MPI_DATATYPE(char, MPI_CHAR);
REDIST_MPI_DATATYPE(signed char, MPI_SIGNED_CHAR);
REDIST_MPI_DATATYPE(unsigned char, MPI_UNSIGNED_CHAR);
REDIST_MPI_DATATYPE(short, MPI_SHORT);
REDIST_MPI_DATATYPE(unsigned short, MPI_UNSIGNED_SHORT);
REDIST_MPI_DATATYPE(int, MPI_INT);
REDIST_MPI_DATATYPE(unsigned, MPI_UNSIGNED);
REDIST_MPI_DATATYPE(long, MPI_LONG);
REDIST_MPI_DATATYPE(unsigned long, MPI_UNSIGNED_LONG);
REDIST_MPI_DATATYPE(long long, MPI_LONG_LONG);
REDIST_MPI_DATATYPE(unsigned long long, MPI_UNSIGNED_LONG_LONG);
REDIST_MPI_DATATYPE(float, MPI_FLOAT);
REDIST_MPI_DATATYPE(double, MPI_DOUBLE);
REDIST_MPI_DATATYPE(long double, MPI_LONG_DOUBLE);
REDIST_MPI_DATATYPE(bool, MPI_CXX_BOOL);
REDIST_MPI_DATATYPE(std::byte, MPI_BYTE);
REDIST_MPI_DATATYPE(std::complex<float>, MPI_CXX_FLOAT_COMPLEX);
REDIST_MPI_DATATYPE(std::complex<double>, MPI_CXX_DOUBLE_COMPLEX);
REDIST_MPI_DATATYPE(bfloat16, MPI_UINT16_T);  // moved as bits, reduced by mpi_reduce_op's own operations
REDIST_MPI_DATATYPE(float16, MPI_UINT16_T);
#undef REDIST_MPI_DATATYPE

namespace detail {
/// MPI's own operation of reduction r (avg: MPI_SUM; the caller divides), for element types
/// MPI has the arithmetic of.
inline MPI_Op mpi_predefined_op(reduction r) {
  return r == reduction::max ? MPI_MAX : r == reduction::min ? MPI_MIN : r == reduction::prod ? MPI_PROD : MPI_SUM;
}

/// Reduction R of T in C++ (runtime/backend.hpp reduce_combine) as an MPI operation, created
/// once.
template <class T, reduction R>
MPI_Op mpi_user_op() {
  static const MPI_Op op = [] {
    MPI_Op o = MPI_OP_NULL;
    MPI_Op_create(
        [](void* in, void* inout, int* len, MPI_Datatype*) {
          const T* a = static_cast<const T*>(in);
          T* b = static_cast<T*>(inout);
          for (int i = 0; i < *len; ++i) b[i] = reduce_combine(R, a[i], b[i]);
        },
        1, &o);
    return o;
  }();
  return op;
}

/// The MPI operation of reduction r on T (avg: the sum; the caller divides): MPI's own
/// (mpi_predefined_op) where MPI has T's arithmetic; otherwise one of mpi_user_op's: for the element types MPI has no
/// arithmetic for (bfloat16, float16, moved as MPI_UINT16_T) and for 8- and 16-bit integers,
/// which Open MPI 4.1's AVX reduction component (Debian 12's 4.1.4) adds with saturating
/// vector instructions (200 + 200 gives 255 for unsigned char on 32 elements or more).
template <class T>
MPI_Op mpi_reduce_op(reduction r) {
  constexpr bool own = (std::is_arithmetic_v<T> && (!std::is_integral_v<T> || sizeof(T) > 2 || std::is_same_v<T, bool>)) ||
                       std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;
  if constexpr (own) {
    return mpi_predefined_op(r);
  } else {
    if constexpr (std::totally_ordered<T>) {
      if (r == reduction::max) return mpi_user_op<T, reduction::max>();
      if (r == reduction::min) return mpi_user_op<T, reduction::min>();
    }
    if constexpr (requires(T a, T b) { a * b; }) {
      if (r == reduction::prod) return mpi_user_op<T, reduction::prod>();
    }
    return mpi_user_op<T, reduction::sum>();
  }
}

/// Whether the environment tunes glibc malloc's thresholds (MALLOC_MMAP_THRESHOLD_,
/// MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_, MALLOC_MMAP_MAX_, or those tunables in
/// GLIBC_TUNABLES): then steady_heap leaves them as they are.
inline bool heap_tuned_by_environment() {
  for (const char* v : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"})
    if (std::getenv(v) != nullptr) return true;
  const char* t = std::getenv("GLIBC_TUNABLES");
  if (t == nullptr) return false;
  for (const char* k : {"glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold", "glibc.malloc.top_pad",
                        "glibc.malloc.mmap_max"})
    if (std::strstr(t, k) != nullptr) return true;
  return false;
}

/// A steady heap for MPI's reductions (mpi_options::steady_heap): glibc's thresholds set so
/// that MPI's temporaries for a reduction buffer of `bytes` come from the heap and stay
/// mapped once freed; returns whether they are. Open MPI 4.1's reduce-scatter and
/// all-reduce allocate temporaries as large as their buffers in every call (recursive
/// halving: two) and free them; under glibc's dynamic thresholds each free could trim the
/// heap (or unmap the block) and the next call fault its pages in again, so that whether a
/// reduction ran at memory speed depended on what the process had allocated before
/// (docs/benchmarks.md, "A steady heap for MPI's reductions"). The mmap threshold becomes
/// the least power of two above twice `bytes`, at least 32 MiB (at most 1 GiB: mallopt takes
/// an int), and the trim threshold twice that; 32 and 64 MiB are the most glibc's own dynamic
/// thresholds reach. They only rise. Nothing where the environment tunes malloc
/// (heap_tuned_by_environment) or without glibc; the sanitizers' allocators refuse them
/// (then false), and one preloaded in glibc's place (jemalloc) does not read them.
inline bool steady_heap(std::uint64_t bytes) {
#if defined(REDIST_MPI_GLIBC_MALLOC)
  static const bool tunable = !heap_tuned_by_environment();
  static std::atomic<std::uint64_t> kept{0};  // the mmap threshold set so far
  static std::atomic<bool> ignored{false};    // malloc is not glibc's
  static std::mutex raising;
  if (!tunable || ignored.load(std::memory_order_relaxed)) return false;
  constexpr std::uint64_t least = std::uint64_t{32} << 20, most = std::uint64_t{1} << 30;
  std::uint64_t want = least;
  while (want <= 2 * std::min(bytes, most) && want < most) want *= 2;
  if (const std::uint64_t k = kept.load(std::memory_order_acquire); want <= k) return 2 * bytes < k;
  const std::lock_guard<std::mutex> lock(raising);
  if (want > kept.load(std::memory_order_relaxed)) {
    if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(want)) != 1 ||
        mallopt(M_TRIM_THRESHOLD, static_cast<int>(std::min<std::uint64_t>(2 * want, INT_MAX))) != 1) {
      ignored.store(true, std::memory_order_relaxed);
      return false;
    }
    kept.store(want, std::memory_order_release);
  }
  return 2 * bytes < want;
#else
  (void)bytes;
  return false;
#endif
}
}  // namespace detail

/// Element types the MPI backend can move.
template <class T>
concept mpi_element = std::is_trivially_copyable_v<T> && requires {
  { mpi_datatype<T>::get() } -> std::convertible_to<MPI_Datatype>;
};

/// Options of the MPI backend: which ops take strided blocks in place (derived datatypes)
/// rather than packed by the executor.
struct mpi_options {
  bool alltoall_in_place = true;
  bool allgather_in_place = true;
  /// Exchanges: MPI_Alltoallw with one subarray datatype per peer (true) or the executor's
  /// packing and MPI_Alltoallv (false).
  bool exchange_in_place = true;
  /// In-place exchanges and messages between ranks of one node: the receiver reads a piece
  /// straight from the sender's tile, or the sender writes it into the receiver's (Linux
  /// cross-memory attach; see the header comment). Used where the kernel allows it
  /// (single_copy() says whether it does). Options must be the same on every rank.
  bool exchange_single_copy = true;
  /// What opening one span of the other tile costs a single copy, in bytes copied (the
  /// kernel pins that tile's pages span by span); a run of the rank's own tile costs a
  /// sixteenth of it (the kernel walks those iovecs one by one: into runs of 512 bytes
  /// process_vm_readv moved 7 GB/s on the development machine, into long runs 16 GB/s).
  /// A piece moves by single copy where spans x this + runs x this / 16 + the bytes it
  /// copies (gaps read between runs included) is at most twice its bytes (what MPI
  /// copies); a reader reads a gap of at most this many bytes (up to 64 KiB) rather than
  /// open a span. Measured on the development machine (docs/benchmarks.md, "The cost of a
  /// span"): process_vm_readv spends 0.3-0.5 us on each span of 256 bytes to 4 KiB, what it
  /// takes to copy 2-3 KiB from 4 KiB pages; on 8 ranks of one node, the 256 MiB model
  /// state's joint exchange in place and its one call per array ran 1.09-1.19x faster in
  /// geomean at 2 KiB than at 8 KiB (0.91x in the worst pair of runs), other exchanges as
  /// fast. 0: every considered piece by single copy, no gap read.
  std::uint64_t single_copy_span_cost = 2048;
  /// Only pieces of at least this many bytes are considered for single copy; a message
  /// with none goes through MPI at once, without the round trip in which the two ranks
  /// swap where their pieces lie (measured: that round trip, which waits for the peer to
  /// arrive, cost more than single copy saved on the 160 arrays of the weight-sync state,
  /// whose pieces are mostly 2 KiB-512 KiB). 0: every piece.
  std::uint64_t single_copy_min_bytes = std::uint64_t{1} << 20;
  /// For tests: treat consecutive groups of this many ranks of each node as separate
  /// nodes (0: the nodes MPI_COMM_TYPE_SHARED reports).
  std::uint64_t node_size = 0;
  /// Keep the heap steady for MPI's reductions (detail::steady_heap): before each reduction,
  /// glibc's mmap and trim thresholds, for the whole process, at least 32 and 64 MiB (the
  /// most glibc's dynamic thresholds reach) and raised where they would not keep the
  /// reduction's temporaries, unless the environment tunes malloc. Open MPI allocates and
  /// frees temporaries as large as a reduction's buffers in every call; under glibc's dynamic
  /// thresholds the next call could fault their pages in again, 2-3x slower, depending on
  /// what the process had allocated before. The process then keeps the memory of those
  /// temporaries mapped between calls. false: leave malloc as it is.
  bool steady_heap = true;

  /// How exchanges move (backends/mpi_exchange.hpp), from the two flags above.
  [[nodiscard]] constexpr mpi_exchange exchange() const {
    return !exchange_in_place ? mpi_exchange::packed
                              : exchange_single_copy ? mpi_exchange::single_copy : mpi_exchange::alltoallw;
  }
  /// Set the two flags for mode m (e.g. the mode `redist calibrate` recorded in a profile).
  constexpr mpi_options& set_exchange(mpi_exchange m) {
    exchange_in_place = m != mpi_exchange::packed;
    exchange_single_copy = m == mpi_exchange::single_copy;
    return *this;
  }
};

namespace detail {
/// How one rank moves a piece between its tile and another process's tile with
/// cross-memory attach (process_vm_readv / process_vm_writev): spans of the other
/// ("remote") tile, in bytes from its start, and the runs of this rank's tile they pair
/// with, in order. The kernel pins the remote pages span by span, so a reader may read a
/// gap between two of the sender's runs into a scratch line (a local run at `gap`) rather
/// than open a new span; a writer never writes gaps.
struct single_copy_plan {
  static constexpr std::uint64_t max_gap = 65536;  ///< the scratch line
  static constexpr std::uint64_t gap = UINT64_MAX;
  static constexpr std::size_t max_runs = 512;  ///< local runs per span (a call takes 1024 iovecs a side)
  enum class how { mpi, read, write };
  struct span {
    std::uint64_t at = 0, bytes = 0;
    std::size_t first = 0, runs = 0;  ///< its local runs: local[first, first + runs)
  };
  struct run {
    std::uint64_t at = 0, bytes = 0;  ///< at == gap: a gap of the remote tile
  };
  std::vector<span> spans;
  std::vector<run> local;
  std::uint64_t useful = 0;  ///< the piece's bytes
  std::uint64_t copied = 0;  ///< with the gaps read
};

/// The plan of region `rr` of a remote tile of extents `re` paired with region `lr` (the
/// same sizes) of a local tile of extents `le`, elements of `elem` bytes; remote gaps of
/// at most `max_gap` bytes (0 for a writer) are read rather than opening a span.
inline single_copy_plan plan_single_copy(std::span<const std::uint64_t> re, const tile_region& rr,
                                         std::span<const std::uint64_t> le, const tile_region& lr, std::size_t elem,
                                         std::uint64_t max_gap) {
  using P = single_copy_plan;
  P p;
  std::uint64_t end = 0;  // the remote offset after the last span
  auto add = [&](std::uint64_t at, std::uint64_t to, std::uint64_t bytes) {
    if (!p.spans.empty() && at >= end && at - end <= max_gap && p.spans.back().runs + 2 <= P::max_runs) {
      P::span& s = p.spans.back();
      if (at > end) {
        p.local.push_back({P::gap, at - end});
        ++s.runs;
      }
      s.bytes += at - end + bytes;
    } else {
      p.spans.push_back({at, bytes, p.local.size(), 0});
    }
    p.local.push_back({to, bytes});
    ++p.spans.back().runs;
    p.useful += bytes;
    end = at + bytes;
  };
  for_region_copies(re, rr, le, lr, [&](const strided_copy& c) {
    for (std::uint64_t j = 0; j < c.rows; ++j)
      for (std::uint64_t i = 0; i < c.count; ++i)
        add((c.src + i * c.src_step + j * c.src_pitch) * elem, (c.dst + i * c.dst_step + j * c.dst_pitch) * elem,
            c.width * elem);
  });
  for (const auto& s : p.spans) p.copied += s.bytes;
  return p;
}

/// One piece: region `sr` of the sender's tile (extents se) to region `dr` of the
/// receiver's (de), the same sizes.
struct single_copy_piece {
  std::span<const std::uint64_t> se;
  tile_region sr;
  std::span<const std::uint64_t> de;
  tile_region dr;
};

/// How a piece goes from the sender to the receiver: the receiver reads it or the sender
/// writes it, whichever costs less, where that cost (spans x span_cost + runs of the
/// acting rank's tile x span_cost / 16 + the bytes copied; mpi_options::
/// single_copy_span_cost) is at most twice its bytes (what MPI copies), else MPI; and the
/// plan of the rank that acts. Both ranks of a pair compute it alike from the same places.
struct single_copy_choice {
  single_copy_plan::how how = single_copy_plan::how::mpi;
  single_copy_plan plan;
};
inline single_copy_choice choose_single_copy(const single_copy_piece& pc, std::size_t elem, std::uint64_t span_cost) {
  using P = single_copy_plan;
  P r = plan_single_copy(pc.se, pc.sr, pc.de, pc.dr, elem, std::min(span_cost, P::max_gap));
  P w = plan_single_copy(pc.de, pc.dr, pc.se, pc.sr, elem, 0);
  const std::uint64_t run_cost = span_cost / 16;
  const std::uint64_t rc = r.spans.size() * span_cost + r.local.size() * run_cost + r.copied,
                      wc = w.spans.size() * span_cost + w.local.size() * run_cost + w.copied;
  if (r.useful == 0 || std::min(rc, wc) > 2 * r.useful) return {};
  if (rc <= wc) return {P::how::read, std::move(r)};
  return {P::how::write, std::move(w)};
}
}  // namespace detail

class mpi_backend {
 public:
  /// A backend over (a duplicate of) `comm`; MPI must be initialized, and the backend
  /// must be destroyed before MPI_Finalize. Collective over `comm`.
  explicit mpi_backend(MPI_Comm comm = MPI_COMM_WORLD, mpi_options o = {}) : opt_(o) {
    int init = 0;
    MPI_Initialized(&init);
    if (!init) throw redist_error(errc::runtime, "mpi backend: MPI is not initialized (call MPI_Init first)");
    call(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    int size = 0, rank = 0;
    MPI_Comm_size(comm_, &size);
    MPI_Comm_rank(comm_, &rank);
    size_ = static_cast<std::uint64_t>(size);
    me_ = static_cast<rank_t>(rank);
    if (opt_.exchange_single_copy && opt_.exchange_in_place) setup_single_copy();
  }
  mpi_backend(const mpi_backend&) = delete;
  mpi_backend& operator=(const mpi_backend&) = delete;
  ~mpi_backend() {
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) return;
    for (auto& [g, c] : groups_)
      if (c != comm_) MPI_Comm_free(&c);
    MPI_Comm_free(&comm_);
  }

  [[nodiscard]] std::uint64_t devices() const { return size_; }
  [[nodiscard]] rank_t rank() const { return me_; }
  [[nodiscard]] std::span<const rank_t> local_ranks() const { return {&me_, 1}; }
  /// The backend's communicator (a duplicate of the one it was given).
  [[nodiscard]] MPI_Comm comm() const { return comm_; }
  /// Communicators built so far (for tests: the cache must not grow on reruns).
  [[nodiscard]] std::size_t cached_groups() const { return groups_.size(); }

  [[nodiscard]] const mpi_options& options() const { return opt_; }
  /// Whether in-place exchanges and messages move pieces between ranks of this node in a
  /// single copy (mpi_options::exchange_single_copy, and the kernel let every rank read
  /// its node's ranks); the same on every rank.
  [[nodiscard]] bool single_copy() const { return !node_index_.empty(); }
  /// How exchanges move: the options' way, except alltoallw where single copy was asked for
  /// and the kernel does not allow it (single_copy()).
  [[nodiscard]] mpi_exchange exchange() const {
    const mpi_exchange m = opt_.exchange();
    return m == mpi_exchange::single_copy && !single_copy() ? mpi_exchange::alltoallw : m;
  }
  /// Pieces this rank has read and written by single copy so far (for tests and tuning).
  struct single_copy_count {
    std::uint64_t reads = 0, writes = 0;
  };
  [[nodiscard]] single_copy_count single_copy_moves() const { return single_copy_moves_; }
  /// Whether the executor hands op k's strided blocks in place (derived datatypes).
  [[nodiscard]] bool strided_blocks(op k) const {
    return k == op::alltoall    ? opt_.alltoall_in_place
           : k == op::allgather ? opt_.allgather_in_place
           : k == op::exchange  ? opt_.exchange_in_place
                                : false;
  }

  agreement agree(std::uint64_t hash, bool ok) {
    std::uint64_t v[3] = {hash, ~hash, ok ? 0u : 1u}, r[3] = {0, 0, 0};
    call(MPI_Allreduce(v, r, 3, MPI_UINT64_T, MPI_MAX, comm_), "MPI_Allreduce");
    return {r[0] == ~r[1], r[2] == 0};
  }

  void prepare_groups(std::span<const rank_t> members, std::size_t n) {
    if (n == 0 || members.size() > size_ || members.size() % n != 0)
      throw redist_error(errc::runtime, "mpi backend: " + std::to_string(members.size()) +
                                            " ranks cannot form groups of " + std::to_string(n) + " over " +
                                            std::to_string(size_) + " ranks");
    std::vector<rank_t> key(members.begin(), members.end());
    key.push_back(static_cast<rank_t>(n));
    if (!partitions_.insert(key).second) return;
    if (n == 1) return;  // singletons: local copies
    auto pos = std::find(members.begin(), members.end(), me_);
    if (pos == members.end()) {  // a rank outside the groups (format 2: it holds no tile) joins the split, colourless
      MPI_Comm c = MPI_COMM_NULL;
      call(MPI_Comm_split(comm_, MPI_UNDEFINED, 0, &c), "MPI_Comm_split");
      return;
    }
    const auto p = static_cast<std::size_t>(pos - members.begin());
    std::vector<rank_t> group(members.begin() + static_cast<std::ptrdiff_t>(p / n * n),
                              members.begin() + static_cast<std::ptrdiff_t>(p / n * n + n));
    if (n == size_) {
      bool identity = true;
      for (std::size_t k = 0; k < n; ++k) identity = identity && group[k] == k;
      if (identity) {  // every rank sees the same partition, so every rank skips the split
        groups_.emplace(group, comm_);
        return;
      }
    }
    MPI_Comm c = MPI_COMM_NULL;
    call(MPI_Comm_split(comm_, static_cast<int>(p / n), static_cast<int>(p % n), &c), "MPI_Comm_split");
    if (!groups_.emplace(group, c).second) MPI_Comm_free(&c);  // same group from another partition
    else MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  }

  template <class T>
    requires mpi_element<T>
  void allgather(std::span<const rank_t> g, block_io<T> io, std::size_t count) {
    const int cnt = checked_count(count);
    if (g.size() == 1) {
      std::memcpy(io.recv[me_], io.send[me_], count * sizeof(T));
      return;
    }
    const MPI_Datatype t = mpi_datatype<T>::get();
    call(MPI_Allgather(io.send[me_], cnt, t, io.recv[me_], cnt, t, group_comm(g)), "MPI_Allgather");
  }

  template <class T>
    requires mpi_element<T>
  void alltoall(std::span<const rank_t> g, block_io<T> io, std::size_t count) {
    const int cnt = checked_count(count);
    if (g.size() == 1) {
      std::memcpy(io.recv[me_], io.send[me_], count * sizeof(T));
      return;
    }
    const MPI_Datatype t = mpi_datatype<T>::get();
    call(MPI_Alltoall(io.send[me_], cnt, t, io.recv[me_], cnt, t, group_comm(g)), "MPI_Alltoall");
  }

  /// Member m's recv block k (layout rl) = member k's send (contiguous): one derived
  /// datatype for the receive side.
  template <class T>
    requires mpi_element<T>
  void allgather(std::span<const rank_t> g, block_io<T> io, const block_layout& rl) {
    const int cnt = checked_count(rl.block_elements());
    if (g.size() == 1) {
      detail::host_block_copy<T>(io.send[me_], packed_layout(1, rl.block_elements()), 0, io.recv[me_], rl, 0);
      return;
    }
    const MPI_Datatype t = mpi_datatype<T>::get();
    const block_type rt(rl, t, sizeof(T));
    call(MPI_Allgather(io.send[me_], cnt, t, io.recv[me_], 1, rt.type, group_comm(g)), "MPI_Allgather");
  }

  /// Member m's recv block k (layout rl) = block m of member k's send (layout sl): one
  /// derived datatype per side.
  template <class T>
    requires mpi_element<T>
  void alltoall(std::span<const rank_t> g, block_io<T> io, const block_layout& sl, const block_layout& rl) {
    if (sl.block_elements() != rl.block_elements())
      throw redist_error(errc::runtime, "mpi backend: alltoall sends blocks of " + std::to_string(sl.block_elements()) +
                                            " elements into blocks of " + std::to_string(rl.block_elements()));
    if (g.size() == 1) {
      detail::host_block_copy<T>(io.send[me_], sl, 0, io.recv[me_], rl, 0);
      return;
    }
    const MPI_Datatype t = mpi_datatype<T>::get();
    const block_type st(sl, t, sizeof(T)), rt(rl, t, sizeof(T));
    call(MPI_Alltoall(io.send[me_], 1, st.type, io.recv[me_], 1, rt.type, group_comm(g)), "MPI_Alltoall");
  }

  /// An exchange's pieces, packed by the executor: MPI_Alltoallv over all ranks (send
  /// displacements may repeat: MPI reads a send location any number of times).
  template <class T>
    requires mpi_element<T>
  void alltoallv(block_io<T> io, std::span<const std::uint64_t> sc, std::span<const std::uint64_t> sd,
                 std::span<const std::uint64_t> rc) {
    check_per_rank(sc.size(), "alltoallv");
    check_per_rank(sd.size(), "alltoallv");
    check_per_rank(rc.size(), "alltoallv");
    std::vector<int> scount(size_), sdispl(size_), rcount(size_), rdispl(size_);
    std::uint64_t ro = 0;
    for (std::size_t k = 0; k < size_; ++k) {
      scount[k] = checked_count(sc[k]);
      rcount[k] = checked_count(rc[k]);
      sdispl[k] = checked_count(sd[k]);
      rdispl[k] = checked_count(ro);
      ro += rc[k];
    }
    const MPI_Datatype t = mpi_datatype<T>::get();
    call(MPI_Alltoallv(io.send[me_], scount.data(), sdispl.data(), t, io.recv[me_], rcount.data(), rdispl.data(), t,
                       comm_),
         "MPI_Alltoallv");
  }

  /// An exchange's pieces in place: MPI_Alltoallw with one subarray datatype per non-empty
  /// region (runtime/backend.hpp); with single copy, one message per peer through the
  /// strided message round below (pieces within this node in a single copy where that
  /// pays, the rest point to point).
  template <class T>
    requires mpi_element<T>
  void exchange(block_io<T> io, std::span<const std::uint64_t> se, std::span<const tile_region> sr,
                std::span<const std::uint64_t> de, std::span<const tile_region> rr) {
    check_per_rank(sr.size(), "exchange");
    check_per_rank(rr.size(), "exchange");
    if (single_copy() && !se.empty() && se.size() == de.size()) {
      // The pieces as regions of tiles of bytes (the last extent times sizeof(T)).
      auto piece = [](const T* base, std::span<const std::uint64_t> ext, const tile_region& r) {
        message_piece m;
        m.base = reinterpret_cast<const std::byte*>(base);
        m.rank = static_cast<int>(ext.size());
        std::copy(ext.begin(), ext.end(), m.extents.begin());
        m.region = r;
        const std::size_t last = ext.size() - 1;
        m.extents[last] *= sizeof(T);
        m.region.start[last] *= sizeof(T);
        m.region.size[last] *= sizeof(T);
        return m;
      };
      std::vector<strided_message> sends, recvs;
      for (std::size_t k = 0; k < size_; ++k) {
        if (k == me_) continue;
        if (sr[k].elements(static_cast<int>(se.size())) != 0)
          sends.push_back({static_cast<rank_t>(k), {piece(io.send[me_], se, sr[k])}});
        if (rr[k].elements(static_cast<int>(de.size())) != 0)
          recvs.push_back({static_cast<rank_t>(k), {piece(io.recv[me_], de, rr[k])}});
      }
      message_round(std::span<const strided_message>(sends), std::span<const strided_message>(recvs), [] {});
      return;
    }
    const MPI_Datatype t = mpi_datatype<T>::get();
    std::vector<region_type> types;
    types.reserve(2 * size_);
    std::vector<int> scount(size_, 0), rcount(size_, 0), zero(size_, 0);
    std::vector<MPI_Datatype> stype(size_, t), rtype(size_, t);
    for (std::size_t k = 0; k < size_; ++k) {
      if (k == me_) continue;
      if (sr[k].elements(static_cast<int>(se.size())) != 0) {
        stype[k] = types.emplace_back(se, sr[k], t).type;
        scount[k] = 1;
      }
      if (rr[k].elements(static_cast<int>(de.size())) != 0) {
        rtype[k] = types.emplace_back(de, rr[k], t).type;
        rcount[k] = 1;
      }
    }
    call(MPI_Alltoallw(io.send[me_], scount.data(), zero.data(), stype.data(), io.recv[me_], rcount.data(),
                       zero.data(), rtype.data(), comm_),
         "MPI_Alltoallw");
  }

  template <class T>
    requires mpi_element<T> && summable<T>
  void allreduce(std::span<const rank_t> g, block_io<T> io, std::size_t count, reduction r = reduction::sum) {
    const int cnt = checked_count(count);
    const MPI_Op o = mpi_op<T>(r);
    if (g.size() == 1) {
      std::memcpy(io.recv[me_], io.send[me_], count * sizeof(T));
      return;
    }
    if (opt_.steady_heap) detail::steady_heap(count * sizeof(T));
    call(MPI_Allreduce(io.send[me_], io.recv[me_], cnt, mpi_datatype<T>::get(), o, group_comm(g)), "MPI_Allreduce");
    finish(r, io.recv[me_], count, g.size());
  }

  template <class T>
    requires mpi_element<T> && summable<T>
  void reducescatter(std::span<const rank_t> g, block_io<T> io, std::size_t count, reduction r = reduction::sum) {
    const int cnt = checked_count(count);
    const MPI_Op o = mpi_op<T>(r);
    if (g.size() == 1) {
      std::memcpy(io.recv[me_], io.send[me_], count * sizeof(T));
      return;
    }
    if (opt_.steady_heap) detail::steady_heap(count * g.size() * sizeof(T));
    call(MPI_Reduce_scatter_block(io.send[me_], io.recv[me_], cnt, mpi_datatype<T>::get(), o, group_comm(g)),
         "MPI_Reduce_scatter_block");
    finish(r, io.recv[me_], count, g.size());
  }

  template <class T>
    requires mpi_element<T>
  void permute(std::span<const rank_t> dest, block_io<T> io, std::size_t count) {
    const auto [to, from_rank] = detail::check_permutation("mpi backend", dest, size_, me_);
    const int cnt = checked_count(count);
    const auto from = static_cast<int>(from_rank);
    if (to == me_) {
      if (io.send[me_] != nullptr) std::memcpy(io.recv[me_], io.send[me_], count * sizeof(T));
      return;
    }
    const MPI_Datatype t = mpi_datatype<T>::get();
    call(MPI_Sendrecv(io.send[me_], cnt, t, static_cast<int>(to), tag_permute, io.recv[me_], cnt, t, from,
                      tag_permute, comm_, MPI_STATUS_IGNORE),
         "MPI_Sendrecv");
  }

  /// Point-to-point messages (runtime/backend.hpp message_round): every receive posted
  /// first (MPI_Irecv), each send packed and posted at once (MPI_Isend), local() while they
  /// fly, each receive unpacked as it completes (MPI_Waitany). Messages above 1 GiB go in
  /// parts of 1 GiB (MPI keeps their order between two ranks). Rounds use tags in turn.
  template <class Pack, class Local, class Unpack>
  void message_round(std::span<const message> sends, std::span<const message> recvs, Pack&& pack, Local&& local,
                     Unpack&& unpack) {
    posted_round r = post_round(sends, recvs, pack);
    local();
    finish_round(r, unpack);
  }

  /// Rounds of messages two at a time (runtime/backend.hpp message_rounds): round k + 1
  /// posted (receives, then each send packed and posted) before round k is waited for, so
  /// that its packing runs while round k's messages fly; then local(k).
  template <class Round, class Pack, class Local, class Unpack>
  void message_rounds(std::size_t n, Round&& round, Pack&& pack, Local&& local, Unpack&& unpack) {
    if (n == 0) return;
    auto post = [&](std::size_t k) {
      const auto& m = round(k);
      return post_round(m.sends, m.recvs, [&](std::size_t i) { pack(k, i); });
    };
    posted_round r = post(0);
    for (std::size_t k = 0; k < n; ++k) {
      posted_round next;
      if (k + 1 < n) next = post(k + 1);
      local(k);
      finish_round(r, [&](std::size_t i) { unpack(k, i); });
      r = std::move(next);
    }
  }

  /// Point-to-point messages of pieces in place (runtime/backend.hpp strided_message): one
  /// MPI_Type_create_struct of subarray datatypes (absolute addresses, MPI_BOTTOM) per
  /// message, so MPI packs and unpacks straight between the tiles; receives posted first,
  /// local() while the messages fly. With single copy (mpi_options::exchange_single_copy),
  /// a message between two ranks of this node moves as an exchange's piece does, pair by
  /// pair: the two ranks swap where their pieces lie, the receiver reads them or the sender
  /// writes them where that pays, and the rank that copied tells the other when it is done.
  template <class Local>
  void message_round(std::span<const strided_message> sends, std::span<const strided_message> recvs, Local&& local) {
    const int tag = tag_message + static_cast<int>(rounds_++ % 1024), late_tag = tag + 1024;
    // The pieces single copy may move (single_copy_min_bytes; both ranks of a pair see the
    // same sizes, so they split alike) wait until the two ranks have chosen; the rest go
    // through MPI at once.
    std::vector<strided_message> held_s, held_r, late_s, late_r;
    std::span<const strided_message> early_s = sends, early_r = recvs;
    if (single_copy()) {
      held_s.assign(sends.begin(), sends.end());
      held_r.assign(recvs.begin(), recvs.end());
      late_s.resize(sends.size());
      late_r.resize(recvs.size());
      split_considered(held_s, late_s);
      split_considered(held_r, late_r);
      early_s = held_s;
      early_r = held_r;
    }
    std::vector<region_type> parts;
    std::deque<region_type> pieces;  // single-piece messages' datatypes (stable while in flight)
    std::vector<message_type> types;
    types.reserve(2 * (sends.size() + recvs.size()));
    // A message's buffer and datatype: one piece is its subarray at the tile; several, a
    // struct of their subarrays at absolute addresses (MPI_BOTTOM).
    auto type_of = [&](const strided_message& m) -> std::pair<void*, MPI_Datatype> {
      check_peer(m.peer);
      if (m.pieces.size() == 1) {
        const message_piece& pc = m.pieces[0];
        const std::span<const std::uint64_t> ext(pc.extents.data(), static_cast<std::size_t>(pc.rank));
        return {const_cast<std::byte*>(pc.base), pieces.emplace_back(ext, pc.region, MPI_BYTE).type};
      }
      parts.clear();
      std::vector<MPI_Datatype> t;
      std::vector<MPI_Aint> at;
      for (const message_piece& pc : m.pieces) {
        const std::span<const std::uint64_t> ext(pc.extents.data(), static_cast<std::size_t>(pc.rank));
        t.push_back(parts.emplace_back(ext, pc.region, MPI_BYTE).type);
        MPI_Aint a = 0;
        call(MPI_Get_address(pc.base, &a), "MPI_Get_address");
        at.push_back(a);
      }
      return {MPI_BOTTOM, types.emplace_back(t, at).type};
    };
    std::vector<MPI_Request> rq, sq;
    auto post = [&](std::span<const strided_message> s, std::span<const strided_message> r, int t) {
      for (const strided_message& m : r)
        if (!m.pieces.empty()) {
          const auto [at, type] = type_of(m);
          call(MPI_Irecv(at, 1, type, static_cast<int>(m.peer), t, comm_, &rq.emplace_back()), "MPI_Irecv");
        }
      for (const strided_message& m : s)
        if (!m.pieces.empty()) {
          const auto [at, type] = type_of(m);
          call(MPI_Isend(at, 1, type, static_cast<int>(m.peer), t, comm_, &sq.emplace_back()), "MPI_Isend");
        }
    };
    post(early_s, early_r, tag);
    single_copy_round sc;
    if (single_copy()) {
      sc = plan_single_copy_round(late_s, late_r);  // leaves the pieces chosen for MPI
      post(late_s, late_r, late_tag);
    }
    for (const rank_t peer : sc.passive)  // the other rank copies; it says when it is done
      call(MPI_Irecv(nullptr, 0, MPI_BYTE, static_cast<int>(peer), tag_done, comm_, &rq.emplace_back()), "MPI_Irecv");
    for (const auto& m : sc.moves) {
      const std::string e = move_message(m.peer, m.read, m.remote, m.local, m.plans);
      if (sc.failed.empty()) sc.failed = e;
      call(MPI_Isend(nullptr, 0, MPI_BYTE, static_cast<int>(m.peer), tag_done, comm_, &sq.emplace_back()), "MPI_Isend");
    }
    local();
    call(MPI_Waitall(static_cast<int>(rq.size()), rq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    call(MPI_Waitall(static_cast<int>(sq.size()), sq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    if (!sc.failed.empty()) throw redist_error(errc::runtime, "mpi backend: message round: " + sc.failed);
  }

 private:
  static constexpr int tag_permute = 7201;
  static constexpr int tag_places_sent = 7203;      ///< message rounds: where a sender's pieces lie
  static constexpr int tag_places_received = 7204;  ///< and where a receiver's go
  static constexpr int tag_done = 7205;             ///< a single copy of a message is done
  static constexpr int tag_message = 8192;  ///< message rounds: 8192 + (round mod 1024), + 1024 for late pieces
  std::uint64_t rounds_ = 0;

  /// A committed datatype this object frees (movable, not copyable): the base of the
  /// datatypes below, which commit `type` in their constructors.
  struct owned_type {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    owned_type() = default;
    owned_type(owned_type&& o) noexcept : type(o.type) { o.type = MPI_DATATYPE_NULL; }
    owned_type(const owned_type&) = delete;
    owned_type& operator=(const owned_type&) = delete;
    owned_type& operator=(owned_type&&) = delete;
    ~owned_type() {
      if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
    }
  };

  /// The committed datatype of one block of a layout (its runs, resized to the distance
  /// between blocks), freed by the destructor.
  struct block_type : owned_type {
    block_type(const block_layout& l, MPI_Datatype t, std::size_t elem) {
      MPI_Datatype runs = MPI_DATATYPE_NULL;
      call(MPI_Type_vector(checked_count(l.outer), checked_count(l.run), checked_count(l.row), t, &runs),
           "MPI_Type_vector");
      const int rc = MPI_Type_create_resized(runs, 0, static_cast<MPI_Aint>(l.step * elem), &type);
      MPI_Type_free(&runs);
      call(rc, "MPI_Type_create_resized");
      call(MPI_Type_commit(&type), "MPI_Type_commit");
    }
  };

  /// The committed subarray datatype of one region of a tile, freed by the destructor.
  struct region_type : owned_type {
    region_type(std::span<const std::uint64_t> ext, const tile_region& r, MPI_Datatype t) {
      const auto R = ext.size();
      std::vector<int> sizes(R), sub(R), start(R);
      for (std::size_t d = 0; d < R; ++d) {
        sizes[d] = checked_count(ext[d]);
        sub[d] = checked_count(r.size[d]);
        start[d] = checked_count(r.start[d]);
      }
      call(MPI_Type_create_subarray(static_cast<int>(R), sizes.data(), sub.data(), start.data(), MPI_ORDER_C, t, &type),
           "MPI_Type_create_subarray");
      call(MPI_Type_commit(&type), "MPI_Type_commit");
    }
  };

  /// The committed struct datatype of one message: its pieces' datatypes at absolute
  /// addresses (sent from or received into MPI_BOTTOM), freed by the destructor.
  struct message_type : owned_type {
    message_type(std::vector<MPI_Datatype>& parts, std::vector<MPI_Aint>& at) {
      std::vector<int> ones(parts.size(), 1);
      call(MPI_Type_create_struct(static_cast<int>(parts.size()), ones.data(), at.data(), parts.data(), &type),
           "MPI_Type_create_struct");
      call(MPI_Type_commit(&type), "MPI_Type_commit");
    }
  };

  // Single-copy exchanges (mpi_options::exchange_single_copy). -------------------------

  /// Whether region a of a tile of r dimensions has the sizes of region b.
  static bool same_piece(std::size_t r, const tile_region& a, const tile_region& b) {
    return std::equal(a.size.begin(), a.size.begin() + static_cast<std::ptrdiff_t>(r), b.size.begin());
  }

  /// Move one message's pieces between rank peer's tiles (a rank of this node) and this
  /// rank's: read them (process_vm_readv) or write them (process_vm_writev), all pieces'
  /// spans in as few calls as 1024 iovecs a side allow. Returns an error text, or "".
  std::string move_message(rank_t peer, bool read, std::span<const std::uint64_t> remote, std::span<void* const> local,
                           std::span<const detail::single_copy_plan> plans) {
    ++(read ? single_copy_moves_.reads : single_copy_moves_.writes);
#if defined(REDIST_MPI_SINGLE_COPY)
    constexpr std::size_t iov_max = 1024;
    const auto pid = static_cast<pid_t>(node_pids_[static_cast<std::size_t>(node_index_[peer])]);
    std::vector<iovec> l, r;
    std::uint64_t want = 0;
    auto flush = [&]() -> std::string {
      if (r.empty()) return {};
      errno = 0;
      const ssize_t got = read ? process_vm_readv(pid, l.data(), l.size(), r.data(), r.size(), 0)
                               : process_vm_writev(pid, l.data(), l.size(), r.data(), r.size(), 0);
      const int e = errno;
      const std::uint64_t asked = want;
      l.clear();
      r.clear();
      want = 0;
      if (got >= 0 && static_cast<std::uint64_t>(got) == asked) return {};
      return "rank " + std::to_string(me_) + (read ? " read " : " wrote ") + std::to_string(got < 0 ? 0 : got) +
             " of " + std::to_string(asked) + " bytes " + (read ? "from" : "to") + " rank " + std::to_string(peer) +
             (read ? " (process_vm_readv: " : " (process_vm_writev: ") + std::strerror(e) + ")";
    };
    for (std::size_t i = 0; i < plans.size(); ++i) {
      auto* const base = static_cast<std::byte*>(local[i]);
      for (const auto& sp : plans[i].spans) {
        if (r.size() == iov_max || l.size() + sp.runs > iov_max)
          if (std::string e = flush(); !e.empty()) return e;
        r.push_back({reinterpret_cast<void*>(static_cast<std::uintptr_t>(remote[i] + sp.at)), sp.bytes});
        for (std::size_t k = sp.first; k < sp.first + sp.runs; ++k) {
          const auto& run = plans[i].local[k];
          l.push_back({run.at == detail::single_copy_plan::gap ? static_cast<void*>(scratch_.data())
                                                                : static_cast<void*>(base + run.at),
                       run.bytes});
        }
        want += sp.bytes;
      }
    }
    return flush();
#else
    (void)peer, (void)read, (void)remote, (void)local, (void)plans;
    return "single-copy messages need Linux";
#endif
  }

  /// What one message round moves by single copy: per message, the pieces this rank
  /// copies; the peers that copy pieces of its messages (each says when it is done, once
  /// per message); and the first error.
  struct single_copy_round {
    struct move {
      rank_t peer = 0;
      bool read = false;
      std::vector<std::uint64_t> remote;  ///< per piece: the other rank's tile
      std::vector<void*> local;           ///< per piece: this rank's tile
      std::vector<detail::single_copy_plan> plans;
    };
    std::vector<move> moves;
    std::vector<rank_t> passive;
    std::string failed;
  };

  /// Move the pieces of messages to or from ranks of this node that single copy may move
  /// (at least single_copy_min_bytes and single_copy_span_cost: less never pays) from
  /// `all` to `late`, message by message.
  void split_considered(std::vector<strided_message>& all, std::vector<strided_message>& late) const {
    for (std::size_t k = 0; k < all.size(); ++k) {
      check_peer(all[k].peer);
      late[k].peer = all[k].peer;
      if (node_index_[all[k].peer] < 0) continue;
      std::vector<message_piece> keep;
      for (const message_piece& pc : all[k].pieces) {
        const std::uint64_t n = pc.region.elements(pc.rank);
        const bool considered = pc.rank > 0 && n > 0 && n >= opt_.single_copy_min_bytes && n >= opt_.single_copy_span_cost;
        (considered ? late[k].pieces : keep).push_back(pc);
      }
      all[k].pieces = std::move(keep);
    }
  }

  /// The single-copy part of a message round, on the pieces split_considered held back:
  /// each such message swaps its pieces' places with the peer (MPI_Isend / MPI_Irecv of
  /// message_piece: the receiver's places for the sender, the sender's for the receiver);
  /// then both ranks choose alike, piece by piece, and the messages keep only the pieces
  /// chosen for MPI.
  single_copy_round plan_single_copy_round(std::vector<strided_message>& sends, std::vector<strided_message>& recvs) {
    std::vector<std::vector<message_piece>> there_s(sends.size()), there_r(recvs.size());
    auto swapped = [](const strided_message& m) { return !m.pieces.empty(); };
    std::vector<MPI_Request> rq;
    auto swap = [&](const strided_message& m, std::vector<message_piece>& there, int mine_tag, int their_tag) {
      const int n = static_cast<int>(m.pieces.size() * sizeof(message_piece));
      there.resize(m.pieces.size());
      call(MPI_Irecv(there.data(), n, MPI_BYTE, static_cast<int>(m.peer), their_tag, comm_, &rq.emplace_back()),
           "MPI_Irecv");
      call(MPI_Isend(m.pieces.data(), n, MPI_BYTE, static_cast<int>(m.peer), mine_tag, comm_, &rq.emplace_back()),
           "MPI_Isend");
    };
    for (std::size_t k = 0; k < sends.size(); ++k)
      if (swapped(sends[k])) swap(sends[k], there_s[k], tag_places_sent, tag_places_received);
    for (std::size_t k = 0; k < recvs.size(); ++k)
      if (swapped(recvs[k])) swap(recvs[k], there_r[k], tag_places_received, tag_places_sent);
    call(MPI_Waitall(static_cast<int>(rq.size()), rq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    single_copy_round sc;
    using P = detail::single_copy_plan;
    // from: the sender's pieces, to: the receiver's; `sending`: this rank is the sender.
    auto choose = [&](const strided_message& m, const std::vector<message_piece>& from,
                      const std::vector<message_piece>& to, bool sending, strided_message& by_mpi) {
      typename single_copy_round::move mv;
      mv.peer = m.peer;
      mv.read = !sending;
      bool waits = false;
      by_mpi.pieces.clear();
      for (std::size_t i = 0; i < from.size(); ++i) {
        const message_piece &a = from[i], &b = to[i];
        const auto r = static_cast<std::size_t>(a.rank);
        if (a.rank != b.rank || a.rank < 0 || a.rank > max_dims || !same_piece(r, a.region, b.region)) {
          sc.failed = "the pieces of the message from rank " + std::to_string(sending ? me_ : m.peer) + " to rank " +
                      std::to_string(sending ? m.peer : me_) + " differ in shape on the two ranks";
          by_mpi.pieces.push_back(sending ? a : b);
          continue;
        }
        detail::single_copy_choice c = detail::choose_single_copy(
            {std::span<const std::uint64_t>(a.extents.data(), r), a.region,
             std::span<const std::uint64_t>(b.extents.data(), r), b.region},
            1, opt_.single_copy_span_cost);
        if (c.how == P::how::mpi) {
          by_mpi.pieces.push_back(sending ? a : b);
        } else if ((c.how == P::how::write) != sending) {
          waits = true;  // the peer copies this piece
        } else {
          mv.remote.push_back(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>((sending ? b : a).base)));
          mv.local.push_back(const_cast<std::byte*>((sending ? a : b).base));
          mv.plans.push_back(std::move(c.plan));
        }
      }
      if (waits) sc.passive.push_back(m.peer);
      if (!mv.plans.empty()) sc.moves.push_back(std::move(mv));
    };
    for (std::size_t k = 0; k < sends.size(); ++k)
      if (!there_s[k].empty()) {
        const std::vector<message_piece> mine = sends[k].pieces;
        choose(sends[k], mine, there_s[k], true, sends[k]);
      }
    for (std::size_t k = 0; k < recvs.size(); ++k)
      if (!there_r[k].empty()) {
        const std::vector<message_piece> mine = recvs[k].pieces;
        choose(recvs[k], there_r[k], mine, false, recvs[k]);
      }
    return sc;
  }

  void check_peer(rank_t peer) const { detail::check_message_peer("mpi backend", peer, size_, me_); }

  /// A message round in flight: its requests, and per receive how many parts are pending.
  struct posted_round {
    std::vector<MPI_Request> rq, sq;
    std::vector<std::size_t> owner;  ///< the receive of each request of rq
    std::vector<std::size_t> left;
  };

  /// Post a message round: every receive, then each send packed (pack(k)) and posted.
  template <class Pack>
  posted_round post_round(std::span<const message> sends, std::span<const message> recvs, Pack&& pack) {
    constexpr std::uint64_t part = std::uint64_t{1} << 30;
    const int tag = tag_message + static_cast<int>(rounds_++ % 1024);
    posted_round r;
    r.left.assign(recvs.size(), 0);
    auto parts = [&](const message& m, auto&& post) {
      check_peer(m.peer);
      for (std::uint64_t at = 0; at < m.bytes; at += part) post(m.data + at, static_cast<int>(std::min(part, m.bytes - at)));
    };
    for (std::size_t k = 0; k < recvs.size(); ++k)
      parts(recvs[k], [&](std::byte* p, int n) {
        call(MPI_Irecv(p, n, MPI_BYTE, static_cast<int>(recvs[k].peer), tag, comm_, &r.rq.emplace_back()), "MPI_Irecv");
        r.owner.push_back(k);
        ++r.left[k];
      });
    for (std::size_t k = 0; k < sends.size(); ++k) {
      pack(k);
      parts(sends[k], [&](std::byte* p, int n) {
        call(MPI_Isend(p, n, MPI_BYTE, static_cast<int>(sends[k].peer), tag, comm_, &r.sq.emplace_back()), "MPI_Isend");
      });
    }
    return r;
  }

  /// Wait for a posted round: unpack(k) for each receive as it completes, then the sends.
  template <class Unpack>
  void finish_round(posted_round& r, Unpack&& unpack) {
    for (std::size_t done = 0; done < r.rq.size(); ++done) {
      int i = MPI_UNDEFINED;
      call(MPI_Waitany(static_cast<int>(r.rq.size()), r.rq.data(), &i, MPI_STATUS_IGNORE), "MPI_Waitany");
      const std::size_t k = r.owner[static_cast<std::size_t>(i)];
      if (--r.left[k] == 0) unpack(k);
    }
    call(MPI_Waitall(static_cast<int>(r.sq.size()), r.sq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

  /// The constructor's collective check: this node's ranks (node_index_, node_pids_)
  /// where every rank of the communicator read a value from every rank of its node.
  void setup_single_copy() {
#if defined(REDIST_MPI_SINGLE_COPY)
    MPI_Comm node = MPI_COMM_NULL;
    call(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, static_cast<int>(me_), MPI_INFO_NULL, &node),
         "MPI_Comm_split_type");
    if (opt_.node_size > 0) {
      int r = 0;
      MPI_Comm_rank(node, &r);
      MPI_Comm part = MPI_COMM_NULL;
      const int rc = MPI_Comm_split(node, static_cast<int>(static_cast<std::uint64_t>(r) / opt_.node_size), r, &part);
      MPI_Comm_free(&node);
      call(rc, "MPI_Comm_split");
      node = part;
    }
    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    struct peer {
      std::int64_t rank, pid;
      std::uint64_t at, value;
    };
    probe_ = std::random_device{}() * 0x9e3779b97f4a7c15ull ^ me_;
    const peer mine{static_cast<std::int64_t>(me_), static_cast<std::int64_t>(getpid()),
                    static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&probe_)), probe_};
    int n = 1;
    MPI_Comm_size(node, &n);
    std::vector<peer> all(static_cast<std::size_t>(n));
    const int bytes = static_cast<int>(sizeof(peer));
    int rc = MPI_Allgather(&mine, bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, node);
    int state[2] = {rc == MPI_SUCCESS ? 0 : 1, n}, agreed[2] = {1, 1};  // {a failure, the largest node}
    for (const peer& p : all) {
      if (state[0] || p.rank == mine.rank) continue;
      std::uint64_t v = 0;
      iovec l{&v, sizeof v}, r{reinterpret_cast<void*>(static_cast<std::uintptr_t>(p.at)), sizeof v};
      if (process_vm_readv(static_cast<pid_t>(p.pid), &l, 1, &r, 1, 0) != static_cast<ssize_t>(sizeof v) || v != p.value)
        state[0] = 1;
    }
    rc = MPI_Allreduce(state, agreed, 2, MPI_INT, MPI_MAX, comm_);
    MPI_Comm_free(&node);  // the check's only use of it: the rounds talk over comm_
    call(rc, "MPI_Allreduce");
    if (agreed[0] != 0 || agreed[1] < 2) return;
    node_index_.assign(size_, -1);
    for (const peer& p : all) {
      node_index_[static_cast<std::size_t>(p.rank)] = static_cast<int>(node_pids_.size());
      node_pids_.push_back(p.pid);
    }
    scratch_.resize(std::min(opt_.single_copy_span_cost, detail::single_copy_plan::max_gap));
#endif
  }

  void check_per_rank(std::size_t n, const char* what) const {
    if (n != size_)
      throw redist_error(errc::runtime, std::string("mpi backend: ") + what + " needs one entry per rank (" +
                                            std::to_string(size_) + "), got " + std::to_string(n));
  }

  static void call(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw redist_error(errc::runtime, std::string("mpi backend: ") + what + " failed: " + std::string(msg, static_cast<std::size_t>(len)));
  }

  /// The MPI operation of reduction r (avg: MPI_SUM, then finish); refuses, before any data
  /// moves, a reduction the element type lacks.
  template <class T>
  static MPI_Op mpi_op(reduction r) {
    if (!reducible<T>(r)) throw redist_error(errc::runtime, "mpi backend: " + unreducible_text(r));
    return detail::mpi_reduce_op<T>(r);
  }
  /// avg: divide the n members' sum by n, element by element.
  template <class T>
  static void finish(reduction r, T* v, std::size_t count, std::size_t n) {
    if (r != reduction::avg) return;
    for (std::size_t i = 0; i < count; ++i) v[i] = reduce_finish(r, v[i], n);
  }

  static int checked_count(std::size_t count) {
    if (count > static_cast<std::size_t>(INT_MAX))
      throw redist_error(errc::runtime, "mpi backend: a block of " + std::to_string(count) +
                                            " elements exceeds MPI's int count");
    return static_cast<int>(count);
  }

  MPI_Comm group_comm(std::span<const rank_t> g) const {
    auto it = groups_.find(std::vector<rank_t>(g.begin(), g.end()));
    if (it == groups_.end())
      throw redist_error(errc::runtime, "mpi backend: a collective on a group that prepare_groups did not build");
    return it->second;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::uint64_t size_ = 0;
  rank_t me_ = 0;
  std::map<std::vector<rank_t>, MPI_Comm> groups_;
  std::set<std::vector<rank_t>> partitions_;
  mpi_options opt_;
  std::vector<std::int64_t> node_pids_;  ///< this node's process ids, by node rank
  std::vector<int> node_index_;          ///< per rank of comm_: its node rank, or -1 on another node;
                                         ///< empty where single copy is off
  std::uint64_t probe_ = 0;              ///< the value the constructor's check reads
  std::vector<std::byte> scratch_;       ///< where gaps between a sender's runs are read to
  single_copy_count single_copy_moves_;
};

static_assert(backend_for<mpi_backend, float>);
static_assert(backend_for<mpi_backend, std::complex<double>>);
static_assert(reducing_backend_for<mpi_backend, double>);
static_assert(strided_backend_for<mpi_backend, float>);
static_assert(strided_exchange_backend_for<mpi_backend, float>);

/// Verification over MPI, one rank per process (runtime/verify.hpp's
/// reduce_partials_into_roots): every member of `group` (the ranks holding the partial
/// values of one tile, its root first) ends with the reduction r of their `count` values.
/// avg: the root's values plus the mean of the differences from them, so that verify.hpp's
/// partial_value offsets give the value exactly.
template <class T>
  requires mpi_element<T> && summable<T>
void mpi_reduce_partials(MPI_Comm group, T* v, std::size_t count, reduction r) {
  if (!reducible<T>(r)) throw redist_error(errc::runtime, "mpi_reduce_partials: " + unreducible_text(r));
  if (count > static_cast<std::size_t>(INT_MAX))
    throw redist_error(errc::runtime, "mpi_reduce_partials: a tile of " + std::to_string(count) + " elements");
  const int n = static_cast<int>(count);
  if (r != reduction::avg) {
    MPI_Allreduce(MPI_IN_PLACE, v, n, mpi_datatype<T>::get(), detail::mpi_reduce_op<T>(r), group);
    return;
  }
  int size = 1;
  MPI_Comm_size(group, &size);
  std::vector<T> root(v, v + count);
  MPI_Bcast(root.data(), n, mpi_datatype<T>::get(), 0, group);
  for (std::size_t k = 0; k < count; ++k) {
    if constexpr (std::is_integral_v<T>) {  // wrapping (padding holds any value)
      using U = std::make_unsigned_t<T>;
      v[k] = static_cast<T>(static_cast<U>(static_cast<U>(v[k]) - static_cast<U>(root[k])));
    } else {
      v[k] = static_cast<T>(v[k] - root[k]);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, v, n, mpi_datatype<T>::get(), detail::mpi_reduce_op<T>(reduction::sum), group);
  for (std::size_t k = 0; k < count; ++k)
    v[k] = reduce_add(root[k], reduce_finish(r, v[k], static_cast<std::size_t>(size)));
}

}  // namespace redist

#endif  // REDIST_WITH_MPI
