// tests/backends/nccl_sim_backend.hpp -- D simulated ranks on one CUDA device: the host
// backend's semantics with the NCCL backend's memory space (cuda_memory: buffers in
// device memory, every copy and pack on one stream).
//
// NCCL runs one rank per GPU, so a machine with one GPU cannot run the NCCL backend on
// more than one rank; this backend lets it run the executor's device path (device
// buffers, strided packing and unpacking, stream order) on every multi-rank program.
// Blocks move with cudaMemcpyAsync on the stream. The reductions (tests only) wait for
// the stream and add on the host.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "redist/backends/nccl.hpp"
#include "redist/core/error.hpp"
#include "redist/runtime/backend.hpp"

namespace redist::testing {

class cuda_sim_backend {
 public:
  cuda_sim_backend(std::uint64_t devices, const cuda_memory& mem) : ranks_(devices), mem_(mem) {
    for (std::uint64_t r = 0; r < devices; ++r) ranks_[r] = static_cast<rank_t>(r);
  }

  [[nodiscard]] std::uint64_t devices() const { return ranks_.size(); }
  [[nodiscard]] std::span<const rank_t> local_ranks() const { return ranks_; }
  [[nodiscard]] const cuda_memory& memory() const { return mem_; }
  agreement agree(std::uint64_t /*hash*/, bool ok) { return {true, ok}; }
  void prepare_groups(std::span<const rank_t> members, std::size_t n) {
    detail::check_partition("cuda sim backend", members, n, ranks_.size());
  }

  template <class T>
    requires std::is_trivially_copyable_v<T>
  void allgather(std::span<const rank_t> g, block_io<T> io, std::size_t count) {
    for (std::size_t m = 0; m < g.size(); ++m)
      for (std::size_t k = 0; k < g.size(); ++k) mem_.copy(io.recv[g[m]] + k * count, io.send[g[k]], count);
  }

  template <class T>
    requires std::is_trivially_copyable_v<T>
  void alltoall(std::span<const rank_t> g, block_io<T> io, std::size_t count) {
    for (std::size_t m = 0; m < g.size(); ++m)
      for (std::size_t k = 0; k < g.size(); ++k) mem_.copy(io.recv[g[m]] + k * count, io.send[g[k]] + m * count, count);
  }

  template <class T>
    requires std::is_trivially_copyable_v<T>
  void permute(std::span<const rank_t> dest, block_io<T> io, std::size_t count) {
    detail::check_permutation("cuda sim backend", dest, ranks_.size(), 0);
    for (std::size_t r = 0; r < dest.size(); ++r)
      if (io.send[r] != nullptr) mem_.copy(io.recv[dest[r]], io.send[r], count);
  }

  template <class T>
    requires summable<T>
  void allreduce(std::span<const rank_t> g, block_io<T> io, std::size_t count, reduction r = reduction::sum) {
    const std::vector<T> sum = add(g, io, 0, count, r);
    for (rank_t r : g) REDIST_CUDA_CHECK(cudaMemcpy(io.recv[r], sum.data(), count * sizeof(T), cudaMemcpyHostToDevice));
    REDIST_CUDA_CHECK(cudaDeviceSynchronize());  // a pageable upload may return before it lands
  }

  template <class T>
    requires summable<T>
  void reducescatter(std::span<const rank_t> g, block_io<T> io, std::size_t count, reduction r = reduction::sum) {
    for (std::size_t m = 0; m < g.size(); ++m) {
      const std::vector<T> sum = add(g, io, m * count, count, r);
      REDIST_CUDA_CHECK(cudaMemcpy(io.recv[g[m]], sum.data(), count * sizeof(T), cudaMemcpyHostToDevice));
    }
    REDIST_CUDA_CHECK(cudaDeviceSynchronize());
  }

 private:
  /// Reduction r over the members of their sends' elements [offset, offset + count), on the host.
  template <class T>
  std::vector<T> add(std::span<const rank_t> g, const block_io<T>& io, std::size_t offset, std::size_t count,
                     reduction r) const {
    if (!reducible<T>(r)) throw redist_error(errc::runtime, "cuda sim backend: " + unreducible_text(r));
    REDIST_CUDA_CHECK(cudaStreamSynchronize(mem_.stream()));
    std::vector<T> sum(count), part(count);
    for (std::size_t k = 0; k < g.size(); ++k) {
      REDIST_CUDA_CHECK(cudaMemcpy(part.data(), io.send[g[k]] + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < count; ++i) sum[i] = k == 0 ? part[i] : redist::reduce_combine(r, sum[i], part[i]);
    }
    for (std::size_t i = 0; i < count; ++i) sum[i] = redist::reduce_finish(r, sum[i], g.size());
    return sum;
  }

  std::vector<rank_t> ranks_;
  cuda_memory mem_;
};

static_assert(reducing_backend_for<cuda_sim_backend, float>);

}  // namespace redist::testing
