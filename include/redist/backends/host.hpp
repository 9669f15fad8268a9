// redist/backends/host.hpp -- the in-process backend: a mesh of D simulated devices in one
// process, one buffer each; every collective is a set of memory copies between the
// devices' buffers. The default for tests and examples; needs only the standard library.
//
// It drives all D ranks (local_ranks() = 0..D-1), so the agreement check is trivial (one
// program, one hash) and prepare_groups has nothing to build.
//
// Straight copies. The backend moves strided blocks itself (strided_backend_for,
// runtime/backend.hpp): an all-to-all or all-gather copies every block straight from the
// sender's tile to its place in the receiver's tile (pack.hpp's host_block_copy), so the
// executor neither packs nor unpacks. host_options::strided_blocks = false makes the
// executor pack instead (for tests of that path).
//
// Threads. The copies of a call run on host_options::threads threads (0: one per hardware
// thread), one receiving rank per task (all-gather, all-to-all, permute, reductions), and
// the executor runs the groups of a step and its local copies through parallel_for. Every
// task writes only its own rank's buffer, so results do not depend on the thread count
// (reductions add in member order on every thread count). Calls moving less than
// host_options::parallel_bytes run on the calling thread; a parallel_for inside another
// runs serially (no nested threads).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "redist/core/error.hpp"
#include "redist/program.hpp"
#include "redist/runtime/backend.hpp"

namespace redist {

/// Options of the host backend.
struct host_options {
  unsigned threads = 0;                      ///< copy threads; 0: std::thread::hardware_concurrency()
  std::uint64_t parallel_bytes = 8u << 20;   ///< calls moving fewer bytes run on the calling thread
  bool strided_blocks = true;                ///< move strided blocks in place (false: the executor packs)
};

class host_backend {
 public:
  /// A simulated mesh of `devices` devices (ranks 0..devices-1).
  explicit host_backend(std::uint64_t devices, host_options o = {}) : ranks_(checked(devices)), opt_(o) {
    for (std::uint64_t r = 0; r < devices; ++r) ranks_[r] = static_cast<rank_t>(r);
    if (opt_.threads == 0) opt_.threads = std::max(1u, std::thread::hardware_concurrency());
  }

  [[nodiscard]] const host_options& options() const { return opt_; }
  /// Whether the executor hands blocks in place (all-to-all, all-gather) or packs them.
  [[nodiscard]] bool strided_blocks(op /*k*/) const { return opt_.strided_blocks; }

  /// Call fn(i) for i in [0, n), on up to options().threads threads when `bytes` (the data
  /// the calls move in all) reaches options().parallel_bytes; serially inside another
  /// parallel_for. Rethrows the first exception a call threw, after all have returned.
  template <class F>
  void parallel_for(std::size_t n, std::uint64_t bytes, F&& fn) const {
    const std::size_t nt = std::min<std::size_t>(opt_.threads, n);
    if (nt <= 1 || bytes < opt_.parallel_bytes || in_parallel()) {
      for (std::size_t i = 0; i < n; ++i) fn(i);
      return;
    }
    std::atomic<std::size_t> next{0};
    std::exception_ptr first;
    std::mutex m;
    auto work = [&] {
      in_parallel() = true;
      for (std::size_t i; (i = next.fetch_add(1)) < n;) {
        try {
          fn(i);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(m);
          if (!first) first = std::current_exception();
        }
      }
      in_parallel() = false;
    };
    {
      std::vector<std::jthread> pool;
      pool.reserve(nt - 1);
      for (std::size_t t = 1; t < nt; ++t) pool.emplace_back(work);
      work();
    }
    if (first) std::rethrow_exception(first);
  }

  [[nodiscard]] std::uint64_t devices() const { return ranks_.size(); }
  [[nodiscard]] std::span<const rank_t> local_ranks() const { return ranks_; }

  /// All ranks live here and run the one program they were given.
  agreement agree(std::uint64_t /*hash*/, bool ok) { return {true, ok}; }
  void prepare_groups(std::span<const rank_t> members, std::size_t n) {
    if (n == 0 || members.size() % n != 0)
      throw redist_error(errc::runtime, "host backend: " + std::to_string(members.size()) +
                                            " ranks cannot form groups of " + std::to_string(n));
    check_group(members);
  }

  /// Member m's recv block k = member k's send.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void allgather(std::span<const rank_t> g, block_io<T> io, std::size_t count) {
    allgather(g, io, packed_layout(g.size(), count));
  }

  /// Member m's recv block k (layout rl) = member k's send (contiguous).
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void allgather(std::span<const rank_t> g, block_io<T> io, const block_layout& rl) {
    check_group(g);
    check_buffers(g, io);
    check_layout(g, rl);
    const block_layout whole = packed_layout(1, rl.block_elements());
    parallel_for(g.size(), moved_bytes<T>(g, rl), [&](std::size_t m) {
      for (std::size_t k = 0; k < g.size(); ++k) detail::host_block_copy(io.send[g[k]], whole, 0, io.recv[g[m]], rl, k);
    });
  }

  /// Member m's recv block k = block m of member k's send.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void alltoall(std::span<const rank_t> g, block_io<T> io, std::size_t count) {
    const block_layout l = packed_layout(g.size(), count);
    alltoall(g, io, l, l);
  }

  /// Member m's recv block k (layout rl) = block m of member k's send (layout sl).
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void alltoall(std::span<const rank_t> g, block_io<T> io, const block_layout& sl, const block_layout& rl) {
    check_group(g);
    check_buffers(g, io);
    check_layout(g, sl);
    check_layout(g, rl);
    if (sl.block_elements() != rl.block_elements())
      throw redist_error(errc::runtime, "host backend: alltoall sends blocks of " + std::to_string(sl.block_elements()) +
                                            " elements into blocks of " + std::to_string(rl.block_elements()));
    parallel_for(g.size(), moved_bytes<T>(g, rl), [&](std::size_t m) {
      for (std::size_t k = 0; k < g.size(); ++k) detail::host_block_copy(io.send[g[k]], sl, m, io.recv[g[m]], rl, k);
    });
  }

  /// Every member's recv = the element-wise reduction r of the members' sends (in member
  /// order; avg: their sum divided by the group size).
  template <class T>
    requires summable<T>
  void allreduce(std::span<const rank_t> g, block_io<T> io, std::size_t count, reduction r = reduction::sum) {
    check_group(g);
    check_buffers(g, io);
    check_reduction<T>(r);
    T* first = io.recv[g[0]];
    std::memcpy(first, io.send[g[0]], count * sizeof(T));
    for (std::size_t k = 1; k < g.size(); ++k) {
      const T* src = io.send[g[k]];
      for (std::size_t i = 0; i < count; ++i) first[i] = reduce_combine(r, first[i], src[i]);
    }
    if (r == reduction::avg)
      for (std::size_t i = 0; i < count; ++i) first[i] = reduce_finish(r, first[i], g.size());
    parallel_for(g.size() - 1, g.size() * count * sizeof(T),
                 [&](std::size_t m) { std::memcpy(io.recv[g[m + 1]], first, count * sizeof(T)); });
  }

  /// Member m's recv = the element-wise reduction r of block m of the members' sends.
  template <class T>
    requires summable<T>
  void reducescatter(std::span<const rank_t> g, block_io<T> io, std::size_t count, reduction r = reduction::sum) {
    check_group(g);
    check_buffers(g, io);
    check_reduction<T>(r);
    parallel_for(g.size(), g.size() * g.size() * count * sizeof(T), [&](std::size_t m) {
      T* dst = io.recv[g[m]];
      std::memcpy(dst, io.send[g[0]] + m * count, count * sizeof(T));
      for (std::size_t k = 1; k < g.size(); ++k) {
        const T* src = io.send[g[k]] + m * count;
        for (std::size_t i = 0; i < count; ++i) dst[i] = reduce_combine(r, dst[i], src[i]);
      }
      if (r == reduction::avg)
        for (std::size_t i = 0; i < count; ++i) dst[i] = reduce_finish(r, dst[i], g.size());
    });
  }

  /// recv[dest[r]] = send[r] for every rank r.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void permute(std::span<const rank_t> dest, block_io<T> io, std::size_t count) {
    detail::check_permutation("host backend", dest, ranks_.size(), 0);
    std::vector<rank_t> holding;  // ranks with no send buffer hold no tile (a fixed point, nothing to copy)
    for (rank_t r : ranks_)
      if (r >= io.send.size() || io.send[r] != nullptr || dest[r] != r) holding.push_back(r);
    check_buffers(holding, io);
    parallel_for(dest.size(), dest.size() * count * sizeof(T),
                 [&](std::size_t r) {
                   if (io.send[r] != nullptr) std::memcpy(io.recv[dest[r]], io.send[r], count * sizeof(T));
                 });
  }

 private:
  static std::vector<rank_t> checked(std::uint64_t devices) {
    if (devices == 0 || devices > UINT32_MAX)
      throw redist_error(errc::runtime, "host backend: cannot simulate " + std::to_string(devices) + " devices");
    return std::vector<rank_t>(devices);
  }
  void check_group(std::span<const rank_t> g) const {
    for (rank_t r : g)
      if (r >= ranks_.size())
        throw redist_error(errc::runtime, "host backend: rank " + std::to_string(r) + " is not among the " +
                                              std::to_string(ranks_.size()) + " simulated devices");
  }
  template <class T>
  static void check_reduction(reduction r) {
    if (!reducible<T>(r))
      throw redist_error(errc::runtime, "host backend: " + unreducible_text(r));
  }
  template <class T>
  void check_buffers(std::span<const rank_t> g, const block_io<T>& io) const {
    if (io.send.size() < ranks_.size() || io.recv.size() < ranks_.size())
      throw redist_error(errc::runtime, "host backend: block_io must have an entry per rank");
    for (rank_t r : g)
      if (io.send[r] == nullptr || io.recv[r] == nullptr)
        throw redist_error(errc::runtime, "host backend: rank " + std::to_string(r) + " has no buffer");
  }

  template <class T>
  static std::uint64_t moved_bytes(std::span<const rank_t> g, const block_layout& l) {
    return g.size() * g.size() * l.block_elements() * sizeof(T);
  }
  void check_layout(std::span<const rank_t> g, const block_layout& l) const {
    if (l.n != g.size())
      throw redist_error(errc::runtime, "host backend: a layout of " + std::to_string(l.n) + " blocks for a group of " +
                                            std::to_string(g.size()));
  }
  static bool& in_parallel() {
    thread_local bool inside = false;
    return inside;
  }

  std::vector<rank_t> ranks_;
  host_options opt_;
};

static_assert(backend_for<host_backend, float>);
static_assert(reducing_backend_for<host_backend, float>);
static_assert(strided_backend_for<host_backend, float>);
static_assert(parallel_backend<host_backend>);

}  // namespace redist
