// redist/runtime/backend.hpp -- what the executor needs from a communication backend.
//
// A backend drives some of the ranks 0..D-1 of a program in this process: all of them
// (the in-process host backend simulates D devices), or one (MPI, NCCL: one process or
// GPU per rank). It moves contiguous blocks between ranks; everything else (walking the
// program, packing, shapes, memory) is the executor's (runtime/executor.hpp).
//
// Contract of a type B modelling `backend_for<B, T>`:
//
//   b.devices()        number of ranks D of the communicator (the executor refuses a
//                      program whose world, program::world_size, has another size).
//   b.local_ranks()    the ranks this process drives, ascending, as a
//                      std::span<const rank_t>; stable for the backend's lifetime.
//   b.agree(h, ok)     collective over all D ranks: every rank passes the hash of the
//                      program it is about to run and whether its local checks passed.
//                      Returns {same, all_ok}: same iff every rank passed the same h,
//                      all_ok iff every rank passed ok == true. Moves no array data.
//   b.prepare_groups(members, n)
//                      collective over all D ranks, called by the executor for every
//                      partition of the ranks it will use (members: all D ranks, or on a
//                      program on device sets the ranks that hold tiles, as consecutive
//                      groups of n, each in member order), in program order, before any
//                      collective on those groups. A rank in no group takes part in the
//                      call and in no group. A backend may build communicators here
//                      (MPI); it may do nothing (host).
//
// The data-moving calls are made for one ordered group `g` (n = g.size() ranks, member k
// = g[k]) with the blocks given through `io` (block_io<T>: for every rank r this process
// drives, io.send[r] and io.recv[r] are the rank's buffers; entries of other ranks are
// unused). Buffers never overlap. `count` is the number of T in one block. Every rank of
// `g` that this process drives takes part; a call returns when this process's members
// are done (their receive buffers are complete and send buffers may be reused).
//
//   b.allgather(g, io, count)  member k's send holds one block; afterwards every member's
//                              recv holds n blocks, block k = member k's send.
//   b.alltoall(g, io, count)   every member's send holds n blocks; afterwards member m's
//                              recv holds n blocks, block k = block m of member k's send.
//   b.permute(dest, io, count) over all D ranks: dest is a bijection (dest[r] receives r's
//                              block); afterwards recv[dest[r]] = send[r] for every local r
//                              whose receiver is local, and the receives of every local
//                              rank are complete. Fixed points (dest[r] == r) are copies,
//                              but for a rank whose io.send is null (it holds no tile, on a
//                              program on device sets), for which nothing is copied.
//
// Partial values (programs whose types carry `sum{...}`, `max{...}`, ...: core/dtype.hpp
// reduction) also need, for element types with `+` (concept summable), the reductions of
// `reducing_backend_for<B, T>`, where r is the step's reduction (program.hpp step::reduce):
//
//   b.allreduce(g, io, count, r)      every member's send holds one block; afterwards every
//                                     member's recv holds the element-wise reduction r of the
//                                     n blocks.
//   b.reducescatter(g, io, count, r)  every member's send holds n blocks; afterwards member
//                                     m's recv holds the element-wise reduction r of block m
//                                     of every send.
//
// Reductions: sum (a + b), prod (a * b), max, min, avg (the sum divided by n, in T: integer
// division truncates). reducible<T>(r) says which an element type has (max and min need
// `<`, so not std::complex); the executor refuses a program whose reductions its element type
// lacks before moving data, and a backend may throw redist_error(errc::runtime) for one it
// cannot do (before moving data). The order in which terms combine is the backend's
// (floating-point sums may differ in the last bits between backends; integer sums and
// products are exact, modulo 2^bits: signed ones wrap as their unsigned type does).
//
// Blocks in place (optional, concept strided_backend_for<B, T>). A backend that can move
// blocks lying strided in a tile (pack.hpp's block_layout: the host backend's copies, MPI
// derived datatypes) saves the executor its packing and the pack space:
//
//   b.strided_blocks(k)        bool, may depend on the op k (op::alltoall, op::allgather)
//                              and on the backend's options: whether the executor hands
//                              this op's blocks in place (true) or packs them (false).
//   b.alltoall(g, io, sl, rl)  every member's send holds n blocks laid out as `sl`; member
//                              m's recv block k (laid out as `rl`) = block m of member k's
//                              send. sl and rl have n blocks of the same size.
//   b.allgather(g, io, rl)     member k's send holds rl.block_elements() contiguous
//                              elements; every member's recv block k (layout rl) = member
//                              k's send.
//
// Exchanges (op::exchange, redist/exchange.hpp). A backend driving every rank in this
// process (host, the CUDA simulation) needs nothing: the executor copies each piece straight
// from the sender's tile to the receiver's through the memory space. A backend driving one
// rank of several offers, for that rank r (concept exchange_backend_for<B, T>):
//
//   b.alltoallv(io, sc, sd, rc)
//                              over all D ranks: sc[k] elements starting at io.send[r] +
//                              sd[k] go to rank k (send regions may overlap or coincide: a
//                              piece sent to several ranks is packed once); rc[k] elements
//                              come from rank k, contiguous in io.recv[r], back to back in
//                              rank order (sc[r] == rc[r] == 0: the executor copies its own
//                              piece). Every rank calls it once per exchange step.
//
// and, to move the pieces in place without packing (concept strided_exchange_backend_for,
// used when b.strided_blocks(op::exchange) is true):
//
//   b.exchange(io, se, sr, de, rr)
//                              over all D ranks: region sr[k] (pack.hpp's tile_region) of
//                              r's tile io.send[r], whose extents are se, goes to rank k;
//                              region rr[k] of io.recv[r] (extents de) comes from rank k;
//                              empty regions (a zero size) move nothing, and so do sr[r],
//                              rr[r].
//
// Messages (optional, concept message_backend; the joint exchange of many arrays,
// runtime/reshard_executor.hpp). A backend driving one rank of several may offer
//
//   b.message_round(sends, recvs, pack, local, unpack)
//                              point to point, not collective: sends[k] (a message: peer
//                              rank, buffer, bytes) goes to sends[k].peer, recvs[k] comes
//                              from recvs[k].peer (at most one message per peer and
//                              direction). The backend posts every receive first, then
//                              for each k calls pack(k), which fills sends[k].data, and
//                              sends it; then calls local() (work that overlaps the
//                              transfers) and unpack(k) for each receive as soon as it has
//                              arrived, in any order; returns when every send buffer may
//                              be reused. Two rounds between the same ranks match in call
//                              order.
//
// and, to run rounds two at a time (concept pipelined_message_backend; the joint plan's
// pipelined rounds, lower/reshard.hpp):
//
//   b.message_rounds(n, round, pack, local, unpack)
//                              n message rounds; round(k) returns round k's messages (a
//                              message_set). Round k + 1 is posted (its receives, then
//                              pack(k + 1, m) and the send of each message m) before round
//                              k is waited for; local(k) runs while round k flies; unpack(k,
//                              m) for each of round k's receives as it arrives. Round k is
//                              complete (sends reusable, receives unpacked) before round
//                              k + 2 is posted, so rounds k and k + 2 may share buffers.
//
// and, to move the pieces in place without packing (concept strided_message_backend, used
// when b.strided_blocks(op::exchange) is true):
//
//   b.message_round(sends, recvs, local)
//                              the same messages, each a list of regions of tiles
//                              (strided_message: peer, and per piece the tile's base
//                              address, its extents in bytes and the region), moved by the
//                              backend straight between the tiles (MPI: one struct of
//                              subarray datatypes per message), local() while they fly.
//
// Ranks in parallel (optional, concept parallel_backend): a backend driving several ranks
// in one process may offer b.parallel_for(n, bytes, fn): call fn(i) for every i in
// [0, n), in any order and possibly concurrently (bytes: the data the calls move in all,
// a hint for whether threads pay off); it returns when all calls have returned and
// rethrows the first exception one threw. The executor then runs the groups of a step
// and the local copies of its ranks through it; the data-moving calls on disjoint groups
// must then be safe to make concurrently.
//
// The element type of the calls. An executor of element type T (runtime/executor.hpp) makes
// the data-moving calls (allgather, alltoall, permute, exchange, alltoallv) with the unsigned
// integer type of T's size, whose values are T's bytes, where B models backend_for for that
// type and does for it everything it does for T; the reductions always with T.
//
// A backend reports misuse (a group with a rank outside 0..D-1, a count it cannot
// express) by throwing redist_error with errc::runtime before moving any data.
//
// Memory (optional). The buffers in `io` are host memory unless the backend names another
// memory space with a member `b.memory()` (contract in runtime/memory.hpp): then every
// buffer the executor passes lives in that memory (NCCL: one CUDA device), and the
// data-moving calls may return once their work is ordered after the memory space's
// copies and before later ones (NCCL: enqueued on the backend's CUDA stream) instead of
// when it is done. The host and MPI backends have no memory() and work synchronously.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "redist/core/error.hpp"
#include "redist/program.hpp"
#include "redist/runtime/pack.hpp"

namespace redist {

/// a + b for the reductions of backends that add in C++: signed integers wrap (in their
/// unsigned type) instead of overflowing, so that reducing the padding of uneven tiles,
/// whose values are unspecified, is defined behaviour.
template <class T>
constexpr T reduce_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<T>(a + b);
  }
}

/// a * b for the products of backends that multiply in C++: integers multiply in their
/// unsigned type (at least unsigned int, so that no promotion to int overflows) and wrap.
template <class T>
constexpr T reduce_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return static_cast<T>(a * b);
  }
}

/// Whether element type T has reduction r (runtime/backend.hpp contract above): every
/// summable type has sum and avg; prod needs `*`; max and min need a total order.
template <class T>
constexpr bool reducible(reduction r) {
  if constexpr (std::is_same_v<T, bool> || !std::is_trivially_copyable_v<T>) {
    return false;
  } else {
    constexpr bool add = requires(T a, T b) { { a + b } -> std::convertible_to<T>; };
    constexpr bool mul = requires(T a, T b) { { a * b } -> std::convertible_to<T>; };
    constexpr bool div = requires(T a) { { a / static_cast<T>(2) } -> std::convertible_to<T>; };
    switch (r) {
      case reduction::sum: return add;
      case reduction::avg: return add && div;
      case reduction::prod: return add && mul;
      case reduction::max:
      case reduction::min: return add && std::totally_ordered<T>;
    }
    return false;
  }
}

/// Whether T has an identity of reduction r to pad with (a padded partial step,
/// lower/partial.hpp): 0 for sum, 1 for prod, and for max and min the least and greatest
/// value (infinities where T has them), which std::numeric_limits must say.
template <class T>
constexpr bool has_reduction_identity(reduction r) {
  if (r == reduction::max || r == reduction::min) return std::numeric_limits<T>::is_specialized;
  return true;
}

/// The identity of reduction r in T (has_reduction_identity): sum and avg 0, prod 1, max the
/// least value, min the greatest.
template <class T>
constexpr T reduction_identity(reduction r) {
  if constexpr (std::numeric_limits<T>::is_specialized) {
    using L = std::numeric_limits<T>;
    if (r == reduction::max) return L::has_infinity ? -L::infinity() : L::lowest();
    if (r == reduction::min) return L::has_infinity ? L::infinity() : L::max();
  }
  if (r == reduction::prod) return T(1);
  return T{};
}

/// Why an element type that reducible<T>(r) refuses cannot be reduced by r, for messages.
inline std::string unreducible_text(reduction r) {
  const std::string n(reduction_name(r));
  switch (r) {
    case reduction::max:
    case reduction::min: return "the element type has no " + n + " (max and min need a type with <, not complex)";
    case reduction::prod: return "the element type has no product (prod needs a type with *)";
    default: return "the element type has no " + n + " (it needs a type with +, not bool)";
  }
}

/// One step of reduction r in C++ (host backend, verification): a combined with b. For avg
/// this adds; reduce_finish divides by the count at the end.
template <class T>
constexpr T reduce_combine(reduction r, T a, T b) {
  if constexpr (std::totally_ordered<T>) {
    if (r == reduction::max) return a < b ? b : a;
    if (r == reduction::min) return b < a ? b : a;
  }
  if constexpr (requires { a * b; }) {
    if (r == reduction::prod) return reduce_mul(a, b);
  }
  return reduce_add(a, b);
}
/// The end of a reduction of n values combined by reduce_combine: avg divides by n, the
/// others keep the value.
template <class T>
constexpr T reduce_finish(reduction r, T v, std::size_t n) {
  if (r != reduction::avg || n == 0) return v;
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {  // in 64 bits: n may not fit in T
    return static_cast<T>(static_cast<std::int64_t>(v) / static_cast<std::int64_t>(n));
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<std::uint64_t>(v) / static_cast<std::uint64_t>(n));
  } else if constexpr (requires { v / static_cast<T>(2); }) {
    return static_cast<T>(v / static_cast<T>(n));
  } else {
    return v;
  }
}

/// The buffers of the ranks a backend drives, indexed by rank (size D; entries of ranks
/// the process does not drive are null).
template <class T>
struct block_io {
  std::span<T* const> send;
  std::span<T* const> recv;
};

/// The outcome of the agreement check.
struct agreement {
  bool same = true;    ///< every rank passed the same program hash
  bool all_ok = true;  ///< every rank's local checks passed
};

template <class B, class T>
concept backend_for =
    std::is_trivially_copyable_v<T> &&
    requires(B& b, const B& cb, std::span<const rank_t> ranks, block_io<T> io, std::size_t count, std::uint64_t hash,
             bool ok) {
      { cb.devices() } -> std::convertible_to<std::uint64_t>;
      { cb.local_ranks() } -> std::convertible_to<std::span<const rank_t>>;
      { b.agree(hash, ok) } -> std::same_as<agreement>;
      b.prepare_groups(ranks, count);
      b.allgather(ranks, io, count);
      b.alltoall(ranks, io, count);
      b.permute(ranks, io, count);
    };

/// Element types that partial sums can add: trivially copyable, with `+` (bool excluded).
template <class T>
concept summable = std::is_trivially_copyable_v<T> && !std::same_as<T, bool> && requires(T a, T b) {
  { a + b } -> std::convertible_to<T>;
};

template <class B, class T>
concept reducing_backend_for =
    backend_for<B, T> && summable<T> &&
    requires(B& b, std::span<const rank_t> group, block_io<T> io, std::size_t count, reduction r) {
      b.allreduce(group, io, count, r);
      b.reducescatter(group, io, count, r);
    };

template <class B, class T>
concept strided_backend_for =
    backend_for<B, T> && requires(B& b, const B& cb, std::span<const rank_t> group, block_io<T> io, block_layout l) {
      { cb.strided_blocks(op::alltoall) } -> std::convertible_to<bool>;
      b.alltoall(group, io, l, l);
      b.allgather(group, io, l);
    };

template <class B, class T>
concept exchange_backend_for =
    backend_for<B, T> && requires(B& b, block_io<T> io, std::span<const std::uint64_t> counts) {
      b.alltoallv(io, counts, counts, counts);
    };

template <class B, class T>
concept strided_exchange_backend_for =
    exchange_backend_for<B, T> && requires(B& b, const B& cb, block_io<T> io, std::span<const std::uint64_t> ext,
                                           std::span<const tile_region> regions) {
      { cb.strided_blocks(op::exchange) } -> std::convertible_to<bool>;
      b.exchange(io, ext, regions, ext, regions);
    };

/// One point-to-point message of a message round (bytes at data, to or from rank peer).
struct message {
  rank_t peer = 0;
  std::byte* data = nullptr;
  std::uint64_t bytes = 0;
};

/// The messages of one round (message_rounds).
struct message_set {
  std::vector<message> sends, recvs;
};

/// One piece of a strided message: a region of a row-major tile of bytes.
struct message_piece {
  const std::byte* base = nullptr;        ///< the tile (written through for a receive)
  std::array<std::uint64_t, max_dims> extents{};  ///< the tile's extents, the last in bytes
  int rank = 0;                           ///< dimensions
  tile_region region;                     ///< the piece, the last dimension in bytes
};
/// A message of pieces lying in place in tiles, to or from rank peer, in piece order.
struct strided_message {
  rank_t peer = 0;
  std::vector<message_piece> pieces;
};

template <class B>
concept strided_message_backend = requires(B& b, const B& cb, std::span<const strided_message> m, void (*l)()) {
  { cb.strided_blocks(op::exchange) } -> std::convertible_to<bool>;
  b.message_round(m, m, l);
};

template <class B>
concept message_backend = requires(B& b, std::span<const message> m, void (*k)(std::size_t), void (*l)()) {
  b.message_round(m, m, k, l, k);
};

template <class B>
concept pipelined_message_backend =
    message_backend<B> &&
    requires(B& b, std::size_t n, message_set (*r)(std::size_t), void (*k)(std::size_t, std::size_t),
             void (*l)(std::size_t)) {
      b.message_rounds(n, r, k, l, k);
    };

template <class B>
concept parallel_backend = requires(B& b, std::size_t n, std::uint64_t bytes, void (*fn)(std::size_t)) {
  b.parallel_for(n, bytes, fn);
};

namespace detail {
/// The check every backend's message rounds make of a message's peer (`who` names the
/// backend): another rank of the `size` ranks than `me`.
inline void check_message_peer(const std::string& who, rank_t peer, std::uint64_t size, rank_t me) {
  if (peer >= size || peer == me)
    throw redist_error(errc::runtime, who + ": a message to or from rank " + std::to_string(peer) + " (this is rank " +
                                          std::to_string(me) + " of " + std::to_string(size) + ")");
}

/// The check every backend's permute makes of its destinations (`who` names the backend in
/// the message): `dest` must be a bijection of the `size` ranks. Returns {dest[me], the
/// rank sending to me}.
inline std::pair<rank_t, rank_t> check_permutation(const std::string& who, std::span<const rank_t> dest,
                                                    std::uint64_t size, rank_t me) {
  if (dest.size() != size)
    throw redist_error(errc::runtime, who + ": permute needs one destination per rank (" + std::to_string(size) +
                                          "), got " + std::to_string(dest.size()));
  std::vector<bool> seen(size, false);
  rank_t from = 0;
  for (std::size_t r = 0; r < dest.size(); ++r) {
    if (dest[r] >= size || seen[dest[r]])
      throw redist_error(errc::runtime, who + ": permute destinations are not a permutation of the ranks");
    seen[dest[r]] = true;
    if (dest[r] == me) from = static_cast<rank_t>(r);
  }
  return {dest[me], from};
}
}  // namespace detail

}  // namespace redist
