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
//   with MPI_SUM, MPI_MAX, MPI_MIN or MPI_PROD; avg as MPI_SUM, then the received block
//   divided by the group size (runtime/backend.hpp reduce_finish).
// - exchange (redist/exchange.hpp): MPI_Alltoallw over the duplicate with one subarray
//   datatype (MPI_Type_create_subarray) per non-empty piece, so MPI reads and writes the
//   pieces in place in the tiles, or, with mpi_options::exchange_in_place = false,
//   MPI_Alltoallv of the pieces the executor packs in rank order.
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

#include <algorithm>
#include <climits>
#include <complex>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "redist/core/error.hpp"
#include "redist/program.hpp"
#include "redist/runtime/backend.hpp"
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
#undef REDIST_MPI_DATATYPE

namespace detail {
/// MPI_SUM, but for 8- and 16-bit integers a user-defined op with C++'s wrapping addition:
/// Open MPI 4.1's AVX reduction component (Debian 12's 4.1.4) adds them with saturating
/// vector instructions (200 + 200 gives 255 for unsigned char on 32 elements or more).
template <class T>
MPI_Op mpi_sum_op() {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && sizeof(T) <= 2) {
    static const MPI_Op op = [] {
      MPI_Op o = MPI_OP_NULL;
      MPI_Op_create(
          [](void* in, void* inout, int* len, MPI_Datatype*) {
            using U = std::make_unsigned_t<T>;
            const T* a = static_cast<const T*>(in);
            T* b = static_cast<T*>(inout);
            for (int i = 0; i < *len; ++i) b[i] = static_cast<T>(static_cast<U>(static_cast<U>(a[i]) + static_cast<U>(b[i])));
          },
          1, &o);
      return o;
    }();
    return op;
  } else {
    return MPI_SUM;
  }
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
};

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
  /// region (runtime/backend.hpp).
  template <class T>
    requires mpi_element<T>
  void exchange(block_io<T> io, std::span<const std::uint64_t> se, std::span<const tile_region> sr,
                std::span<const std::uint64_t> de, std::span<const tile_region> rr) {
    check_per_rank(sr.size(), "exchange");
    check_per_rank(rr.size(), "exchange");
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
    constexpr std::uint64_t part = std::uint64_t{1} << 30;
    const int tag = tag_message + static_cast<int>(rounds_++ % 1024);
    std::vector<MPI_Request> rq, sq;
    std::vector<std::size_t> owner;
    std::vector<std::size_t> left(recvs.size(), 0);
    auto parts = [&](const message& m, auto&& post) {
      if (m.peer >= size_ || m.peer == me_)
        throw redist_error(errc::runtime, "mpi backend: a message to or from rank " + std::to_string(m.peer) +
                                              " (this is rank " + std::to_string(me_) + " of " + std::to_string(size_) + ")");
      for (std::uint64_t at = 0; at < m.bytes; at += part) post(m.data + at, static_cast<int>(std::min(part, m.bytes - at)));
    };
    for (std::size_t k = 0; k < recvs.size(); ++k)
      parts(recvs[k], [&](std::byte* p, int n) {
        call(MPI_Irecv(p, n, MPI_BYTE, static_cast<int>(recvs[k].peer), tag, comm_, &rq.emplace_back()), "MPI_Irecv");
        owner.push_back(k);
        ++left[k];
      });
    for (std::size_t k = 0; k < sends.size(); ++k) {
      pack(k);
      parts(sends[k], [&](std::byte* p, int n) {
        call(MPI_Isend(p, n, MPI_BYTE, static_cast<int>(sends[k].peer), tag, comm_, &sq.emplace_back()), "MPI_Isend");
      });
    }
    local();
    for (std::size_t done = 0; done < rq.size(); ++done) {
      int i = MPI_UNDEFINED;
      call(MPI_Waitany(static_cast<int>(rq.size()), rq.data(), &i, MPI_STATUS_IGNORE), "MPI_Waitany");
      const std::size_t k = owner[static_cast<std::size_t>(i)];
      if (--left[k] == 0) unpack(k);
    }
    call(MPI_Waitall(static_cast<int>(sq.size()), sq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

  /// Point-to-point messages of pieces in place (runtime/backend.hpp strided_message): one
  /// MPI_Type_create_struct of subarray datatypes (absolute addresses, MPI_BOTTOM) per
  /// message, so MPI packs and unpacks straight between the tiles; receives posted first,
  /// local() while the messages fly.
  template <class Local>
  void message_round(std::span<const strided_message> sends, std::span<const strided_message> recvs, Local&& local) {
    const int tag = tag_message + static_cast<int>(rounds_++ % 1024);
    std::vector<region_type> parts;
    std::vector<message_type> types;
    types.reserve(sends.size() + recvs.size());
    auto type_of = [&](const strided_message& m) -> MPI_Datatype {
      if (m.peer >= size_ || m.peer == me_)
        throw redist_error(errc::runtime, "mpi backend: a message to or from rank " + std::to_string(m.peer) +
                                              " (this is rank " + std::to_string(me_) + " of " + std::to_string(size_) + ")");
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
      return types.emplace_back(t, at).type;
    };
    std::vector<MPI_Request> rq(recvs.size()), sq(sends.size());
    for (std::size_t k = 0; k < recvs.size(); ++k)
      call(MPI_Irecv(MPI_BOTTOM, 1, type_of(recvs[k]), static_cast<int>(recvs[k].peer), tag, comm_, &rq[k]), "MPI_Irecv");
    for (std::size_t k = 0; k < sends.size(); ++k)
      call(MPI_Isend(MPI_BOTTOM, 1, type_of(sends[k]), static_cast<int>(sends[k].peer), tag, comm_, &sq[k]), "MPI_Isend");
    local();
    call(MPI_Waitall(static_cast<int>(rq.size()), rq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    call(MPI_Waitall(static_cast<int>(sq.size()), sq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

 private:
  static constexpr int tag_permute = 7201;
  static constexpr int tag_message = 8192;  ///< message rounds: 8192 + (round mod 1024)
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
    switch (r) {
      case reduction::max: return MPI_MAX;
      case reduction::min: return MPI_MIN;
      case reduction::prod: return MPI_PROD;
      default: return detail::mpi_sum_op<T>();  // sum, avg
    }
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
    const MPI_Op o = r == reduction::max    ? MPI_MAX
                     : r == reduction::min  ? MPI_MIN
                     : r == reduction::prod ? MPI_PROD
                                            : detail::mpi_sum_op<T>();
    MPI_Allreduce(MPI_IN_PLACE, v, n, mpi_datatype<T>::get(), o, group);
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
  MPI_Allreduce(MPI_IN_PLACE, v, n, mpi_datatype<T>::get(), detail::mpi_sum_op<T>(), group);
  for (std::size_t k = 0; k < count; ++k)
    v[k] = reduce_add(root[k], reduce_finish(r, v[k], static_cast<std::size_t>(size)));
}

}  // namespace redist

#endif  // REDIST_WITH_MPI
