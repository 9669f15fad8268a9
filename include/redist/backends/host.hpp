// redist/backends/host.hpp -- the in-process backend: a mesh of D simulated devices in one
// process, one buffer each; every collective is a set of memory copies between the
// devices' buffers. The default for tests and examples; needs only the standard library.
//
// It drives all D ranks (local_ranks() = 0..D-1), so the agreement check is trivial (one
// program, one hash) and prepare_groups has nothing to build.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "redist/core/error.hpp"
#include "redist/program.hpp"
#include "redist/runtime/backend.hpp"

namespace redist {

class host_backend {
 public:
  /// A simulated mesh of `devices` devices (ranks 0..devices-1).
  explicit host_backend(std::uint64_t devices) : ranks_(checked(devices)) {
    for (std::uint64_t r = 0; r < devices; ++r) ranks_[r] = static_cast<rank_t>(r);
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
    check_group(g);
    check_buffers(g, io);
    for (std::size_t m = 0; m < g.size(); ++m)
      for (std::size_t k = 0; k < g.size(); ++k)
        std::memcpy(io.recv[g[m]] + k * count, io.send[g[k]], count * sizeof(T));
  }

  /// Member m's recv block k = block m of member k's send.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void alltoall(std::span<const rank_t> g, block_io<T> io, std::size_t count) {
    check_group(g);
    check_buffers(g, io);
    for (std::size_t m = 0; m < g.size(); ++m)
      for (std::size_t k = 0; k < g.size(); ++k)
        std::memcpy(io.recv[g[m]] + k * count, io.send[g[k]] + m * count, count * sizeof(T));
  }

  /// Every member's recv = the element-wise sum of the members' sends (in member order).
  template <class T>
    requires summable<T>
  void allreduce(std::span<const rank_t> g, block_io<T> io, std::size_t count) {
    check_group(g);
    check_buffers(g, io);
    T* first = io.recv[g[0]];
    std::memcpy(first, io.send[g[0]], count * sizeof(T));
    for (std::size_t k = 1; k < g.size(); ++k) {
      const T* src = io.send[g[k]];
      for (std::size_t i = 0; i < count; ++i) first[i] = static_cast<T>(first[i] + src[i]);
    }
    for (std::size_t m = 1; m < g.size(); ++m) std::memcpy(io.recv[g[m]], first, count * sizeof(T));
  }

  /// Member m's recv = the element-wise sum of block m of the members' sends.
  template <class T>
    requires summable<T>
  void reducescatter(std::span<const rank_t> g, block_io<T> io, std::size_t count) {
    check_group(g);
    check_buffers(g, io);
    for (std::size_t m = 0; m < g.size(); ++m) {
      T* dst = io.recv[g[m]];
      std::memcpy(dst, io.send[g[0]] + m * count, count * sizeof(T));
      for (std::size_t k = 1; k < g.size(); ++k) {
        const T* src = io.send[g[k]] + m * count;
        for (std::size_t i = 0; i < count; ++i) dst[i] = static_cast<T>(dst[i] + src[i]);
      }
    }
  }

  /// recv[dest[r]] = send[r] for every rank r.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void permute(std::span<const rank_t> dest, block_io<T> io, std::size_t count) {
    detail::check_permutation("host backend", dest, ranks_.size(), 0);
    check_buffers(ranks_, io);
    for (std::size_t r = 0; r < dest.size(); ++r) std::memcpy(io.recv[dest[r]], io.send[r], count * sizeof(T));
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
  void check_buffers(std::span<const rank_t> g, const block_io<T>& io) const {
    if (io.send.size() < ranks_.size() || io.recv.size() < ranks_.size())
      throw redist_error(errc::runtime, "host backend: block_io must have an entry per rank");
    for (rank_t r : g)
      if (io.send[r] == nullptr || io.recv[r] == nullptr)
        throw redist_error(errc::runtime, "host backend: rank " + std::to_string(r) + " has no buffer");
  }

  std::vector<rank_t> ranks_;
};

static_assert(backend_for<host_backend, float>);
static_assert(reducing_backend_for<host_backend, float>);

}  // namespace redist
