// redist/backends/nccl.hpp -- the NCCL backend: one rank per GPU, collectives on device
// buffers in a CUDA stream, within a node or across nodes.
//
// Available when built against CUDA and NCCL (CMake target redist::nccl, which defines
// REDIST_WITH_NCCL, and REDIST_WITH_MPI too when MPI is found); otherwise this header
// declares nothing. Plain C++: only the CUDA runtime API (12.0 or newer), NVRTC and NCCL
// are called (the pack kernels are compiled at run time), so it compiles with any host
// compiler; link CUDA::cudart, CUDA::nvrtc and nccl.
//
// - Tiles live in device memory: a darray borrowing memory of the backend's device
//   (`darray<T>(mesh, type, rank, std::span<T>(device_ptr, n))`; cuda_buffer<T> allocates
//   such memory). The executor's buffers are device memory too (memory space
//   `cuda_memory`, runtime/memory.hpp): allocated once when an executor is built, never
//   during a run.
// - Everything a run does is ordered on the backend's CUDA stream: copies, packing (the
//   strided copies that runtime/pack.hpp describes for the host, each one launch of a copy
//   kernel compiled at run time with NVRTC, backends/cuda_strided.hpp, or with
//   nccl_options::pack = cuda_pack::copy_engine 2-D copies, cudaMemcpy2DAsync), and the
//   NCCL calls (the joint exchange of many arrays copies the pieces a rank keeps on a
//   second stream of the backend, joined back by events: message_round). No host
//   synchronization inside a redistribution: run() returns once the work is enqueued; call
//   synchronize() or keep working on stream() before using the output. The tiles passed to
//   run() must be ready in that stream's order (written on the same stream, or
//   synchronized).
// - Bootstrap: over MPI (one process per GPU; rank 0 creates the ncclUniqueId and
//   broadcasts it; each rank takes the GPU of its index among the ranks of its node,
//   modulo the GPUs it sees, or options.device; two ranks of a node on one GPU are
//   refused on every rank before NCCL starts), or from an existing NCCL communicator
//   (not owned).
// - Groups: for every partition of the ranks a program uses, prepare_groups calls
//   ncclCommSplit once, collectively (color = the group's index, key = the rank's
//   position in its group, so the new communicator's rank order is the member order).
//   Communicators are cached by the group's rank list, so a program run many times, or
//   programs sharing groups, split once (ncclCommSplit blocks: the first run of a new
//   program builds its communicators before it enqueues anything). Singleton groups
//   need no communicator (local device copies) except in a one-rank backend, where the
//   group of all ranks is the backend's communicator itself, as for every group of all
//   ranks in order.
// - allgather: ncclAllGather; alltoall: ncclAlltoAll (NCCL >= 2.28, unless
//   options.grouped_alltoall), otherwise grouped ncclSend / ncclRecv; permute: grouped
//   ncclSend / ncclRecv (fixed points are local copies); exchange (redist/exchange.hpp):
//   a message round (below): the executor packs the pieces on the device (a piece that is
//   one run of a tile is sent from it or received into it), one group of ncclSend /
//   ncclRecv, the kept piece copied on the second stream; message rounds (message_round;
//   also the reshard executor of many arrays, runtime/reshard_executor.hpp): each
//   message's pieces packed by one batch kernel launch (backends/cuda_strided.hpp), one
//   group of ncclSend / ncclRecv, each received message unpacked by one launch; rounds
//   two at a time (message_rounds: the next round packed on the second stream while this
//   one's group runs);
//   allreduce / reducescatter:
//   ncclAllReduce / ncclReduceScatter with ncclSum, ncclMax, ncclMin, ncclProd or ncclAvg
//   (the step's reduction; ncclAvg, NCCL >= 2.10, divides integer sums with truncation
//   as the other backends do), for element types with an NCCL datatype (nccl_datatype<T>: 8-, 32- and 64-bit integers, float, double, bfloat16 and float16
//   of runtime/half.hpp; specialize it for others). The data-moving collectives move bytes, so any trivially copyable T works.
// - agree: over MPI when the backend was bootstrapped over MPI (no GPU work); otherwise a
//   3-word ncclAllReduce(max) that waits for the stream (the only host synchronization of
//   a run, and only for a backend built from a communicator).
// - Errors: every CUDA and NCCL call is checked; a failure throws device_error (a
//   redist_error) carrying the call, file, line, cudaGetErrorString / ncclGetErrorString
//   and cudaGetErrorName / ncclGetLastError. Misuse (group lists, communicator sizes,
//   null communicators, no CUDA device) throws redist_error before any CUDA or NCCL call.
#pragma once

#if defined(REDIST_WITH_NCCL)

#include <cuda_runtime_api.h>
#include <nccl.h>

#if defined(REDIST_WITH_MPI)
#include <mpi.h>
#endif

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "redist/backends/cuda_strided.hpp"
#include "redist/core/error.hpp"
#include "redist/program.hpp"
#include "redist/runtime/backend.hpp"
#include "redist/runtime/half.hpp"
#include "redist/runtime/memory.hpp"
#include "redist/runtime/pack.hpp"

namespace redist {

/// A failed CUDA or NCCL call: what() = "<call> failed at <file>:<line>: <reason> [<detail>]".
class device_error : public redist_error {
 public:
  device_error(std::string call, std::string file, int line, std::string reason, std::string detail)
      : redist_error(errc::runtime, describe(call, file, line, reason, detail)),
        call_(std::move(call)),
        file_(std::move(file)),
        line_(line),
        reason_(std::move(reason)),
        detail_(std::move(detail)) {}

  /// The call as written in the source.
  [[nodiscard]] const std::string& call() const noexcept { return call_; }
  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] int line() const noexcept { return line_; }
  /// cudaGetErrorString or ncclGetErrorString of the result.
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  /// cudaGetErrorName of the result, or "last NCCL error: " + ncclGetLastError (may be empty).
  [[nodiscard]] const std::string& detail() const noexcept { return detail_; }

  static std::string describe(const std::string& call, const std::string& file, int line, const std::string& reason,
                              const std::string& detail) {
    std::string s = call + " failed at " + file + ":" + std::to_string(line) + ": " + reason;
    if (!detail.empty()) s += " [" + detail + "]";
    return s;
  }

 private:
  std::string call_, file_;
  int line_;
  std::string reason_, detail_;
};

namespace detail {

[[noreturn]] inline void cuda_failed(const char* call, const char* file, int line, cudaError_t rc) {
  (void)cudaGetLastError();  // clear a non-sticky error so that later calls are not blamed
  throw device_error(call, file, line, cudaGetErrorString(rc), cudaGetErrorName(rc));
}

[[noreturn]] inline void nccl_failed(const char* call, const char* file, int line, ncclResult_t rc) {
  const char* last = ncclGetLastError(nullptr);
  throw device_error(call, file, line, ncclGetErrorString(rc),
                     last != nullptr && *last != '\0' ? std::string("last NCCL error: ") + last : std::string());
}

}  // namespace detail

}  // namespace redist

/// Check a CUDA runtime call: throw redist::device_error unless it returns cudaSuccess.
#define REDIST_CUDA_CHECK(...)                                                                  \
  do {                                                                                          \
    const cudaError_t redist_cuda_rc_ = (__VA_ARGS__);                                          \
    if (redist_cuda_rc_ != cudaSuccess)                                                         \
      ::redist::detail::cuda_failed(#__VA_ARGS__, __FILE__, __LINE__, redist_cuda_rc_);         \
  } while (false)

/// Check an NCCL call: throw redist::device_error unless it returns ncclSuccess.
#define REDIST_NCCL_CHECK(...)                                                                  \
  do {                                                                                          \
    const ncclResult_t redist_nccl_rc_ = (__VA_ARGS__);                                         \
    if (redist_nccl_rc_ != ncclSuccess)                                                         \
      ::redist::detail::nccl_failed(#__VA_ARGS__, __FILE__, __LINE__, redist_nccl_rc_);         \
  } while (false)

namespace redist {

namespace detail {

/// The number of CUDA devices, 0 when there is none or no usable driver (`why` then says
/// what cudaGetDeviceCount reported).
inline int cuda_device_count(std::string* why = nullptr) {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
    return 0;
  }
  if (n <= 0 && why) *why = "cudaGetDeviceCount found 0 devices";
  return n > 0 ? n : 0;
}

/// Throw redist_error "<who>: no CUDA device (...)" unless there is one.
inline int require_cuda_device(const std::string& who) {
  std::string why;
  const int n = cuda_device_count(&why);
  if (n == 0) throw redist_error(errc::runtime, who + ": no CUDA device (" + why + ")");
  return n;
}

/// `members` must be all `size` ranks, each once, in consecutive groups of n.
inline void check_partition(const std::string& who, std::span<const rank_t> members, std::size_t n, std::uint64_t size) {
  if (n == 0 || members.size() > size || members.size() % n != 0)
    throw redist_error(errc::runtime, who + ": " + std::to_string(members.size()) + " ranks cannot form groups of " +
                                          std::to_string(n) + " over " + std::to_string(size) + " ranks");
  std::vector<bool> seen(size, false);
  for (rank_t r : members) {
    if (r >= size)
      throw redist_error(errc::runtime, who + ": rank " + std::to_string(r) + " is not among the " +
                                            std::to_string(size) + " ranks of the communicator");
    if (seen[r]) throw redist_error(errc::runtime, who + ": the groups list rank " + std::to_string(r) + " twice");
    seen[r] = true;
  }
}

/// Bytes of `count` elements of T, refusing counts whose size overflows.
template <class T>
std::size_t block_bytes(const std::string& who, std::size_t count) {
  if (count > SIZE_MAX / sizeof(T))
    throw redist_error(errc::runtime, who + ": a block of " + std::to_string(count) + " elements of " +
                                          std::to_string(sizeof(T)) + " bytes overflows");
  return count * sizeof(T);
}

/// Makes `device` current for a scope, restoring the previous one.
class device_guard {
 public:
  explicit device_guard(int device) {
    REDIST_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ == device) prev_ = -1;
    else REDIST_CUDA_CHECK(cudaSetDevice(device));
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  ~device_guard() {
    if (prev_ >= 0) (void)cudaSetDevice(prev_);
  }

 private:
  int prev_ = -1;
};

}  // namespace detail

namespace detail {

/// How a device executes a strided copy: `copy.count` 2-D copies (rows x width, pitches
/// src_pitch / dst_pitch), or, if per_run, one 1-D copy per run.
struct device_copy_shape {
  strided_copy copy;
  bool per_run = false;
};

/// The orientation of `c` (itself or c.swapped()) needing fewer 2-D copies among those a
/// 2-D copy can express (width <= pitch <= max_pitch bytes on both sides, for elements of
/// `elem` bytes); one copy per run if neither can (pitches beyond the device's limit).
inline device_copy_shape device_copy(const strided_copy& c, std::size_t elem, std::size_t max_pitch) {
  if (c.elements() == 0) return {strided_copy{0, 0, 0, 0, 0, 0, 0, 0, 0}, false};
  auto fits = [&](const strided_copy& x) {
    return x.rows == 1 || (x.width <= x.src_pitch && x.width <= x.dst_pitch && x.src_pitch * elem <= max_pitch &&
                           x.dst_pitch * elem <= max_pitch);
  };
  const strided_copy t = c.swapped();
  const bool fc = fits(c), ft = fits(t);
  if (ft && (!fc || t.count < c.count)) return {t, false};
  return {c, !fc};
}

}  // namespace detail

/// An owning buffer of n elements of T in the memory of one CUDA device (cudaMalloc).
template <class T>
class cuda_buffer {
  static_assert(std::is_trivially_copyable_v<T>, "device buffers hold trivially copyable elements");

 public:
  cuda_buffer() = default;
  cuda_buffer(std::size_t n, int device) : n_(n), device_(device) {
    if (n == 0) return;
    const std::size_t bytes = detail::block_bytes<T>("cuda_buffer", n);
    detail::device_guard g(device);
    void* p = nullptr;
    REDIST_CUDA_CHECK(cudaMalloc(&p, bytes));
    p_ = static_cast<T*>(p);
  }
  cuda_buffer(const cuda_buffer&) = delete;
  cuda_buffer& operator=(const cuda_buffer&) = delete;
  cuda_buffer(cuda_buffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), device_(o.device_) {}
  cuda_buffer& operator=(cuda_buffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
      device_ = o.device_;
    }
    return *this;
  }
  ~cuda_buffer() { release(); }

  [[nodiscard]] T* data() const noexcept { return p_; }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  [[nodiscard]] std::span<T> span() const noexcept { return {p_, n_}; }
  [[nodiscard]] int device() const noexcept { return device_; }

 private:
  void release() noexcept {
    if (p_ != nullptr) (void)cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
  int device_ = -1;
};

/// How the NCCL backend executes strided device copies (packing and unpacking blocks).
enum class cuda_pack {
  /// One launch of the copy kernel (backends/cuda_strided.hpp) per strided copy; the copy
  /// engine where the kernel could not be compiled (cuda_memory::pack_engine() says so).
  kernel,
  /// The copy engine: one cudaMemcpy2DAsync per 2-D piece (fewer pieces of the two
  /// orientations), one cudaMemcpyAsync per run where pitches exceed the device's limit.
  copy_engine,
};

/// The memory space of the NCCL backend (contract: runtime/memory.hpp): memory of one
/// CUDA device, every copy enqueued on one stream. A strided copy that is one contiguous
/// run is one cudaMemcpyAsync; others are one kernel launch or 2-D copies (`cuda_pack`).
class cuda_memory {
 public:
  static constexpr bool host_accessible = false;

  cuda_memory() = default;
  /// Memory of `device`, copies on `stream` (which must belong to that device). With
  /// cuda_pack::kernel, the first cuda_memory of a device's compute capability in the
  /// process compiles the copy kernel (NVRTC).
  cuda_memory(int device, cudaStream_t stream, cuda_pack pack = cuda_pack::kernel) : device_(device), stream_(stream) {
    int pitch = 0;
    REDIST_CUDA_CHECK(cudaDeviceGetAttribute(&pitch, cudaDevAttrMaxPitch, device));
    max_pitch_ = pitch > 0 ? static_cast<std::size_t>(pitch) : 0;
    REDIST_CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device));
    if (pack == cuda_pack::kernel) {
      const detail::strided_kernels& k = detail::strided_kernels::for_device(device);
      if (k.ready()) kernels_ = &k;
      else kernel_error_ = &k.error();
    }
  }

  [[nodiscard]] int device() const noexcept { return device_; }
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  /// What executes strided copies: "kernel (sm_90 cubin)", "copy engine", or "copy engine
  /// (the kernel was not compiled: <why>)".
  [[nodiscard]] std::string pack_engine() const {
    if (kernels_ != nullptr) return "kernel (" + kernels_->target() + ")";
    return kernel_error_ != nullptr ? "copy engine (the kernel was not compiled: " + *kernel_error_ + ")"
                                    : "copy engine";
  }
  /// True if strided copies run as kernels.
  [[nodiscard]] bool uses_kernel() const noexcept { return kernels_ != nullptr; }

  template <class T>
  [[nodiscard]] cuda_buffer<T> allocate(std::size_t n) const {
    return cuda_buffer<T>(n, device_);
  }

  template <class T>
  void copy(T* dst, const T* src, std::size_t n) const {
    if (n == 0) return;
    REDIST_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToDevice, stream_));
  }

  /// Store v in n elements from dst: one memset when v is all zero bytes; otherwise v is
  /// copied into the first element and the filled prefix doubled by device copies (no
  /// allocation; about log2(n) copies).
  template <class T>
  void fill(T* dst, std::size_t n, const T& v) const {
    if (n == 0) return;
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    bool zero = true;
    for (unsigned char c : bytes) zero = zero && c == 0;
    if (zero) {
      REDIST_CUDA_CHECK(cudaMemsetAsync(dst, 0, n * sizeof(T), stream_));
      return;
    }
    // From pageable host memory: staged before the call returns, so `bytes` may go.
    REDIST_CUDA_CHECK(cudaMemcpyAsync(dst, bytes, sizeof(T), cudaMemcpyHostToDevice, stream_));
    for (std::size_t done = 1; done < n; done *= 2) copy(dst + done, dst, std::min(done, n - done));
  }

  /// pack.hpp's split_copy in device memory.
  template <class T>
  void split_copy(std::span<const T> tile, std::span<const std::uint64_t> ext, int d, std::uint64_t n, std::uint64_t m,
                  std::span<T> chunk) const {
    strided(detail::split_copy_plan(ext, d, n, m, tile.size(), chunk.size()), tile.data(), chunk.data());
  }
  /// pack.hpp's concat_copy in device memory.
  template <class T>
  void concat_copy(std::span<const T> chunk, std::span<const std::uint64_t> chunk_ext, int d, std::uint64_t n,
                   std::uint64_t m, std::span<T> tile) const {
    strided(detail::concat_copy_plan(chunk_ext, d, n, m, chunk.size(), tile.size()), chunk.data(), tile.data());
  }
  /// pack.hpp's split_all in device memory.
  template <class T>
  void split_all(std::span<const T> tile, std::span<const std::uint64_t> ext, int d, std::uint64_t n,
                 std::span<T> chunks) const {
    strided(detail::split_all_plan(ext, d, n, tile.size(), chunks.size()), tile.data(), chunks.data());
  }
  /// pack.hpp's concat_all in device memory.
  template <class T>
  void concat_all(std::span<const T> chunks, std::span<const std::uint64_t> chunk_ext, int d, std::uint64_t n,
                  std::span<T> tile) const {
    strided(detail::concat_all_plan(chunk_ext, d, n, chunks.size(), tile.size()), chunks.data(), tile.data());
  }

  /// Execute byte copies (runtime/memory.hpp's strided_batch: the reshard executor's packing
  /// and unpacking of messages): with the kernel, one launch per detail::strided_batch_size
  /// copies (detail::launch_batch); with the copy engine, strided() each.
  void strided_batch(std::span<const detail::byte_copy> copies) const {
    if (kernels_ != nullptr) {
      REDIST_CUDA_CHECK(detail::launch_batch(*kernels_, sms_, copies, stream_));
      return;
    }
    for (const detail::byte_copy& b : copies) strided(b.c, b.src, b.dst);
  }

  /// Execute converting copies (runtime/memory.hpp's cast_batch: a reshard that changes an
  /// array's element type): one launch of the converting kernel per
  /// detail::strided_batch_size copies (detail::launch_cast_batch), whichever `cuda_pack`
  /// packs; the kernels are compiled on first use if `cuda_pack::copy_engine` did not.
  void cast_batch(std::span<const detail::cast_copy> copies) const {
    for (const detail::cast_copy& x : copies) detail::require_floating_cast(x.from, x.to);
    const detail::strided_kernels& k = cast_kernels();
    if (!k.ready()) throw redist_error(errc::runtime, "converting copies " + cast_unavailable());
    REDIST_CUDA_CHECK(detail::launch_cast_batch(k, sms_, copies, stream_));
  }
  /// "" if cast_batch can run here, else why not ("cannot run on CUDA device 0: NVRTC could
  /// not compile ...").
  [[nodiscard]] std::string cast_unavailable() const {
    const detail::strided_kernels& k = cast_kernels();
    return k.ready() ? std::string() : "cannot run on CUDA device " + std::to_string(device_) + ": " + k.error();
  }

  /// "" if p is memory of this device (or managed memory), else why not.
  template <class T>
  [[nodiscard]] std::string check_pointer(const T* p) const {
    cudaPointerAttributes a{};
    const cudaError_t rc = cudaPointerGetAttributes(&a, p);
    if (rc != cudaSuccess) {
      (void)cudaGetLastError();
      return "is not usable by CUDA (cudaPointerGetAttributes: " + std::string(cudaGetErrorString(rc)) + ")";
    }
    const std::string want = "memory of CUDA device " + std::to_string(device_);
    switch (a.type) {
      case cudaMemoryTypeDevice:
        if (a.device == device_) return {};
        return "is memory of CUDA device " + std::to_string(a.device) + ", not " + want;
      case cudaMemoryTypeManaged: return {};
      case cudaMemoryTypeHost: return "is pinned host memory, not " + want;
      default: return "is host memory, not " + want;
    }
  }

  /// Execute a strided copy (pack.hpp): one cudaMemcpyAsync if it is one contiguous run;
  /// otherwise one kernel launch, or with the copy engine as detail::device_copy_shape
  /// says: one 2-D device copy (cudaMemcpy2DAsync) per i, or one 1-D copy per run.
  template <class T>
  void strided(const detail::strided_copy& plan, const T* src, T* dst) const {
    if (kernels_ != nullptr && plan.elements() != 0) {
      const detail::strided_copy m = plan.merged();
      if (m.count * m.rows > 1) {
        REDIST_CUDA_CHECK(detail::launch_strided(*kernels_, sms_, m, sizeof(T), src, dst, stream_));
        return;
      }
    }
    const detail::device_copy_shape shape = detail::device_copy(plan, sizeof(T), max_pitch_);
    const detail::strided_copy& c = shape.copy;
    const std::size_t s = sizeof(T);
    for (std::uint64_t i = 0; i < c.count; ++i) {
      T* dp = dst + c.dst + i * c.dst_step;
      const T* sp = src + c.src + i * c.src_step;
      if (shape.per_run) {
        for (std::uint64_t j = 0; j < c.rows; ++j)
          REDIST_CUDA_CHECK(cudaMemcpyAsync(dp + j * c.dst_pitch, sp + j * c.src_pitch, c.width * s,
                                            cudaMemcpyDeviceToDevice, stream_));
      } else if (c.rows == 1) {
        REDIST_CUDA_CHECK(cudaMemcpyAsync(dp, sp, c.width * s, cudaMemcpyDeviceToDevice, stream_));
      } else {
        REDIST_CUDA_CHECK(cudaMemcpy2DAsync(dp, c.dst_pitch * s, sp, c.src_pitch * s, c.width * s, c.rows,
                                            cudaMemcpyDeviceToDevice, stream_));
      }
    }
  }

 private:
  /// The kernels for converting copies: those strided copies use, or (cuda_pack::copy_engine)
  /// the device's from the process-wide cache, compiled on first use.
  [[nodiscard]] const detail::strided_kernels& cast_kernels() const {
    return kernels_ != nullptr ? *kernels_ : detail::strided_kernels::for_device(device_);
  }

  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  std::size_t max_pitch_ = 0;
  int sms_ = 0;
  const detail::strided_kernels* kernels_ = nullptr;  // process-wide cache entries
  const std::string* kernel_error_ = nullptr;
};

/// The NCCL datatype of an element type, for the reductions: specialize with
/// `static constexpr ncclDataType_t value`.
template <class T>
struct nccl_datatype;

template <class T>
  requires(std::is_integral_v<T> && !std::same_as<T, bool> && (sizeof(T) == 1 || sizeof(T) == 4 || sizeof(T) == 8))
struct nccl_datatype<T> {
  static constexpr ncclDataType_t value = sizeof(T) == 1   ? (std::is_signed_v<T> ? ncclInt8 : ncclUint8)
                                          : sizeof(T) == 4 ? (std::is_signed_v<T> ? ncclInt32 : ncclUint32)
                                                           : (std::is_signed_v<T> ? ncclInt64 : ncclUint64);
};
#define REDIST_NCCL_DATATYPE(T, N)             \
  template <>                                  \
  struct nccl_datatype<T> {                    \
    static constexpr ncclDataType_t value = N; \
  }
REDIST_NCCL_DATATYPE(float, ncclFloat32);
REDIST_NCCL_DATATYPE(double, ncclFloat64);
REDIST_NCCL_DATATYPE(bfloat16, ncclBfloat16);  // runtime/half.hpp
REDIST_NCCL_DATATYPE(float16, ncclFloat16);
#undef REDIST_NCCL_DATATYPE

/// Element types the NCCL backend can add (allreduce, reducescatter).
template <class T>
concept nccl_reducible = summable<T> && requires {
  { nccl_datatype<T>::value } -> std::convertible_to<ncclDataType_t>;
};

/// How an NCCL backend is set up.
struct nccl_options {
  /// The rank's CUDA device. -1: with the MPI bootstrap, the rank's index among the ranks
  /// of its node; from a communicator, the communicator's device.
  int device = -1;
  /// The stream every operation is ordered on; nullptr: the backend creates its own
  /// (non-blocking) stream.
  cudaStream_t stream = nullptr;
  /// Use grouped ncclSend / ncclRecv for all-to-all even where ncclAlltoAll exists.
  bool grouped_alltoall = false;
  /// How blocks are packed and unpacked on the device (cuda_pack).
  cuda_pack pack = cuda_pack::kernel;
};

namespace detail {

/// RAII holders, so that a constructor that throws halfway releases what it made: a
/// handle released with `Release` when owned (a borrowed one is left alone).
template <class Handle, auto Release>
struct handle_holder {
  Handle h = nullptr;
  bool owned = false;
  handle_holder() = default;
  handle_holder(const handle_holder&) = delete;
  handle_holder& operator=(const handle_holder&) = delete;
  ~handle_holder() {
    if (owned && h != nullptr) (void)Release(h);
  }
};
using nccl_comm_holder = handle_holder<ncclComm_t, &ncclCommDestroy>;
using cuda_stream_holder = handle_holder<cudaStream_t, &cudaStreamDestroy>;
using cuda_event_holder = handle_holder<cudaEvent_t, &cudaEventDestroy>;
#if defined(REDIST_WITH_MPI)
struct mpi_comm_holder {
  MPI_Comm comm = MPI_COMM_NULL;
  mpi_comm_holder() = default;
  mpi_comm_holder(const mpi_comm_holder&) = delete;
  mpi_comm_holder& operator=(const mpi_comm_holder&) = delete;
  ~mpi_comm_holder() {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};
#endif

}  // namespace detail

class nccl_backend {
 public:
#if defined(REDIST_WITH_MPI)
  /// Bootstrap over MPI, collective over `comm` (MPI must be initialized; the backend
  /// keeps a duplicate of `comm` for its agreement and must be destroyed before
  /// MPI_Finalize). Makes the rank's device current. Every rank throws the same way if
  /// any rank has no usable device, before NCCL is started.
  explicit nccl_backend(MPI_Comm comm = MPI_COMM_WORLD, const nccl_options& o = {}) : grouped_(o.grouped_alltoall) {
    int init = 0;
    MPI_Initialized(&init);
    if (!init) throw redist_error(errc::runtime, "nccl backend: MPI is not initialized (call MPI_Init first)");
    mpi_call(MPI_Comm_dup(comm, &mpi_.comm), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(mpi_.comm, MPI_ERRORS_RETURN);
    int size = 0, rank = 0;
    MPI_Comm_size(mpi_.comm, &size);
    MPI_Comm_rank(mpi_.comm, &rank);
    size_ = static_cast<std::uint64_t>(size);
    me_ = static_cast<rank_t>(rank);

    std::string err = choose_device(o.device);
    int bad = err.empty() ? 0 : 1, any = 0;
    mpi_call(MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, mpi_.comm), "MPI_Allreduce");
    if (bad) throw redist_error(errc::runtime, err);
    if (any)
      throw redist_error(errc::runtime,
                         "nccl backend: another rank has no CUDA device of its own (see its message); NCCL was not started");
    const int device = boot_device_;

    REDIST_CUDA_CHECK(cudaSetDevice(device));
    struct {
      int rc;
      ncclUniqueId id;
    } boot{};
    if (me_ == 0) boot.rc = static_cast<int>(ncclGetUniqueId(&boot.id));
    mpi_call(MPI_Bcast(&boot, static_cast<int>(sizeof boot), MPI_BYTE, 0, mpi_.comm), "MPI_Bcast");
    if (boot.rc != static_cast<int>(ncclSuccess))
      detail::nccl_failed("ncclGetUniqueId(&id) on rank 0", __FILE__, __LINE__, static_cast<ncclResult_t>(boot.rc));
    REDIST_NCCL_CHECK(ncclCommInitRank(&comm_.h, size, boot.id, rank));
    comm_.owned = true;
    setup(device, o.stream, o.pack);
  }
#endif

  /// Over an existing NCCL communicator, which the caller keeps alive and destroys after
  /// the backend. Uses the communicator's device (o.device, if given, must be it).
  explicit nccl_backend(ncclComm_t comm, const nccl_options& o = {}) : grouped_(o.grouped_alltoall) {
    if (comm == nullptr) throw redist_error(errc::runtime, "nccl backend: the NCCL communicator is null");
    detail::require_cuda_device("nccl backend");
    int size = 0, rank = 0, device = 0;
    REDIST_NCCL_CHECK(ncclCommCount(comm, &size));
    REDIST_NCCL_CHECK(ncclCommUserRank(comm, &rank));
    REDIST_NCCL_CHECK(ncclCommCuDevice(comm, &device));
    if (o.device >= 0 && o.device != device)
      throw redist_error(errc::runtime, "nccl backend: options.device is " + std::to_string(o.device) +
                                            " but the communicator uses CUDA device " + std::to_string(device));
    comm_.h = comm;
    size_ = static_cast<std::uint64_t>(size);
    me_ = static_cast<rank_t>(rank);
    setup(device, o.stream, o.pack);
  }

  nccl_backend(const nccl_backend&) = delete;
  nccl_backend& operator=(const nccl_backend&) = delete;
  ~nccl_backend() {
    (void)cudaStreamSynchronize(stream_.h);  // nothing may be in flight on the communicators
    for (auto& [g, c] : groups_)
      if (c != comm_.h) (void)ncclCommDestroy(c);
  }

  [[nodiscard]] std::uint64_t devices() const { return size_; }
  [[nodiscard]] rank_t rank() const { return me_; }
  [[nodiscard]] std::span<const rank_t> local_ranks() const { return {&me_, 1}; }
  /// The rank's CUDA device.
  [[nodiscard]] int device() const { return mem_.device(); }
  /// The stream every operation is ordered on.
  [[nodiscard]] cudaStream_t stream() const { return stream_.h; }
  /// The backend's communicator over all ranks.
  [[nodiscard]] ncclComm_t comm() const { return comm_.h; }
  /// The memory space of the executor's buffers (runtime/memory.hpp): copies on stream(),
  /// except inside a message round's local(), where they go on the backend's second stream.
  [[nodiscard]] const cuda_memory& memory() const { return *active_; }
  /// Communicators built so far (for tests: the cache must not grow on reruns).
  [[nodiscard]] std::size_t cached_groups() const { return groups_.size(); }
  /// True if all-to-all uses ncclAlltoAll, false if grouped ncclSend / ncclRecv.
  [[nodiscard]] bool native_alltoall() const {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    return !grouped_;
#else
    return false;
#endif
  }
  /// Wait until everything issued on the stream is done.
  void synchronize() const { REDIST_CUDA_CHECK(cudaStreamSynchronize(stream_.h)); }

  agreement agree(std::uint64_t hash, bool ok) {
    std::uint64_t v[3] = {hash, ~hash, ok ? 0u : 1u}, r[3] = {0, 0, 0};
#if defined(REDIST_WITH_MPI)
    if (mpi_.comm != MPI_COMM_NULL) {
      mpi_call(MPI_Allreduce(v, r, 3, MPI_UINT64_T, MPI_MAX, mpi_.comm), "MPI_Allreduce");
      return {r[0] == ~r[1], r[2] == 0};
    }
#endif
    REDIST_CUDA_CHECK(cudaMemcpyAsync(agree_.data(), v, sizeof v, cudaMemcpyHostToDevice, stream_.h));
    REDIST_NCCL_CHECK(ncclAllReduce(agree_.data(), agree_.data(), 3, ncclUint64, ncclMax, comm_.h, stream_.h));
    REDIST_CUDA_CHECK(cudaMemcpyAsync(r, agree_.data(), sizeof r, cudaMemcpyDeviceToHost, stream_.h));
    REDIST_CUDA_CHECK(cudaStreamSynchronize(stream_.h));
    return {r[0] == ~r[1], r[2] == 0};
  }

  void prepare_groups(std::span<const rank_t> members, std::size_t n) {
    detail::check_partition(who, members, n, size_);
    std::vector<rank_t> key(members.begin(), members.end());
    key.push_back(static_cast<rank_t>(n));
    if (partitions_.count(key) != 0) return;
    const auto p = static_cast<std::size_t>(std::find(members.begin(), members.end(), me_) - members.begin());
    if (p == members.size()) {  // a rank outside the groups (format 2: it holds no tile) joins the split, colourless
      if (n > 1 && members.size() != 0) {
        ncclComm_t c = nullptr;
        REDIST_NCCL_CHECK(ncclCommSplit(comm_.h, NCCL_SPLIT_NOCOLOR, 0, &c, nullptr));
      }
      partitions_.insert(std::move(key));
      return;
    }
    std::vector<rank_t> group(members.begin() + static_cast<std::ptrdiff_t>(p / n * n),
                              members.begin() + static_cast<std::ptrdiff_t>(p / n * n + n));
    bool identity = n == size_;
    for (std::size_t k = 0; identity && k < n; ++k) identity = group[k] == k;
    if (identity) {  // every rank sees the same partition, so every rank skips the split
      groups_.emplace(group, comm_.h);
    } else if (n > 1) {
      ncclComm_t c = nullptr;
      REDIST_NCCL_CHECK(ncclCommSplit(comm_.h, static_cast<int>(p / n), static_cast<int>(p % n), &c, nullptr));
      if (!groups_.emplace(group, c).second) (void)ncclCommDestroy(c);  // same group from another partition
    }
    partitions_.insert(std::move(key));
  }

  template <class T>
    requires std::is_trivially_copyable_v<T>
  void allgather(std::span<const rank_t> g, block_io<T> io, std::size_t count) {
    const std::size_t bytes = detail::block_bytes<T>(who, count);
    const auto bufs = buffers(io);
    const std::byte* send = bufs.first;
    std::byte* recv = bufs.second;
    if (local_copy(g, send, recv, bytes)) return;
    REDIST_NCCL_CHECK(ncclAllGather(send, recv, bytes, ncclUint8, group_comm(g), stream_.h));
  }

  template <class T>
    requires std::is_trivially_copyable_v<T>
  void alltoall(std::span<const rank_t> g, block_io<T> io, std::size_t count) {
    const std::size_t bytes = detail::block_bytes<T>(who, count);
    const auto bufs = buffers(io);
    const std::byte* send = bufs.first;
    std::byte* recv = bufs.second;
    if (local_copy(g, send, recv, bytes)) return;
    ncclComm_t c = group_comm(g);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    if (!grouped_) {
      REDIST_NCCL_CHECK(ncclAlltoAll(send, recv, bytes, ncclUint8, c, stream_.h));
      return;
    }
#endif
    in_group([&] {
      for (std::size_t k = 0; k < g.size(); ++k) {
        REDIST_NCCL_CHECK(ncclSend(send + k * bytes, bytes, ncclUint8, static_cast<int>(k), c, stream_.h));
        REDIST_NCCL_CHECK(ncclRecv(recv + k * bytes, bytes, ncclUint8, static_cast<int>(k), c, stream_.h));
      }
    });
  }

  /// An exchange's pieces, packed on the device by the executor: grouped ncclSend /
  /// ncclRecv of the non-empty ones (runtime/backend.hpp).
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void alltoallv(block_io<T> io, std::span<const std::uint64_t> sc, std::span<const std::uint64_t> sd,
                 std::span<const std::uint64_t> rc) {
    if (sc.size() != size_ || sd.size() != size_ || rc.size() != size_)
      throw redist_error(errc::runtime, std::string(who) + ": alltoallv needs one count per rank (" +
                                            std::to_string(size_) + ")");
    if (io.send.size() <= me_ || io.recv.size() <= me_)
      throw redist_error(errc::runtime, std::string(who) + ": rank " + std::to_string(me_) + " has no buffer");
    // A rank sending or receiving nothing may pass no buffer.
    const auto* send = reinterpret_cast<const std::byte*>(io.send[me_]);
    auto* recv = reinterpret_cast<std::byte*>(io.recv[me_]);
    in_group([&] {
      std::size_t ro = 0;
      for (std::size_t k = 0; k < size_; ++k) {
        const std::size_t sb = detail::block_bytes<T>(who, sc[k]), rb = detail::block_bytes<T>(who, rc[k]);
        const std::size_t so = detail::block_bytes<T>(who, sd[k]);
        if (sb != 0) REDIST_NCCL_CHECK(ncclSend(send + so, sb, ncclUint8, static_cast<int>(k), comm_.h, stream_.h));
        if (rb != 0) REDIST_NCCL_CHECK(ncclRecv(recv + ro, rb, ncclUint8, static_cast<int>(k), comm_.h, stream_.h));
        ro += rb;
      }
    });
  }

  template <class T>
    requires std::is_trivially_copyable_v<T>
  void permute(std::span<const rank_t> dest, block_io<T> io, std::size_t count) {
    const std::pair<rank_t, rank_t> to_from = detail::check_permutation(who, dest, size_, me_);
    const rank_t to = to_from.first, from = to_from.second;
    const std::size_t bytes = detail::block_bytes<T>(who, count);
    if (to == me_) {  // a fixed point: a local copy, or nothing on a rank that holds no tile (format 2)
      const bool held = io.send.size() > me_ && io.recv.size() > me_ && io.send[me_] != nullptr && io.recv[me_] != nullptr;
      if (held) copy_bytes(reinterpret_cast<std::byte*>(io.recv[me_]), reinterpret_cast<const std::byte*>(io.send[me_]), bytes);
      return;
    }
    const auto bufs = buffers(io);
    const std::byte* send = bufs.first;
    std::byte* recv = bufs.second;
    in_group([&] {
      REDIST_NCCL_CHECK(ncclSend(send, bytes, ncclUint8, static_cast<int>(to), comm_.h, stream_.h));
      REDIST_NCCL_CHECK(ncclRecv(recv, bytes, ncclUint8, static_cast<int>(from), comm_.h, stream_.h));
    });
  }

  /// A message round (runtime/backend.hpp, message_backend: the joint exchange of many
  /// arrays, runtime/reshard_executor.hpp). On stream(): pack(k) for every send (the
  /// executor enqueues the message's packing, one batch kernel), the receives and sends as
  /// one NCCL group, then unpack(k) for every receive. local() (the pieces the rank keeps)
  /// goes on the backend's second stream, which starts after everything enqueued on
  /// stream() before the round, so its copies overlap the packing and the transfers; the
  /// round ends with stream() waiting for it (events, no host synchronization). Whatever
  /// is enqueued on stream() after the round sees all of it and may reuse the buffers.
  template <class Pack, class Local, class Unpack>
  void message_round(std::span<const message> sends, std::span<const message> recvs, Pack&& pack, Local&& local,
                     Unpack&& unpack) {
    struct spans {
      std::span<const message> sends, recvs;
    };
    const spans one{sends, recvs};
    message_rounds(
        1, [&](std::size_t) -> const spans& { return one; }, [&](std::size_t, std::size_t m) { pack(m); },
        [&](std::size_t) { local(); }, [&](std::size_t, std::size_t m) { unpack(m); });
  }

  /// Message rounds two at a time (runtime/backend.hpp message_rounds; message_round is the
  /// one-round case): round 0 as above; round k + 1 is packed on the second stream while
  /// round k's group runs on stream(), after stream() has finished round k - 1 (whose
  /// buffers round k + 1 reuses), and stream() waits for that packing before round k + 1's
  /// group; local(k), the pieces kept in round k, goes on the second stream before round k +
  /// 1's packing. Events only, no host synchronization; stream() ends after every round and
  /// the kept pieces.
  template <class Round, class Pack, class Local, class Unpack>
  void message_rounds(std::size_t n, Round&& round, Pack&& pack, Local&& local, Unpack&& unpack) {
    if (n == 0) return;
    {
      const auto& m = round(std::size_t{0});
      check_peers(m.sends, m.recvs);
      REDIST_CUDA_CHECK(cudaEventRecord(ready_.h, stream_.h));
      REDIST_CUDA_CHECK(cudaStreamWaitEvent(side_.h, ready_.h, 0));
      for (std::size_t i = 0; i < m.sends.size(); ++i) pack(std::size_t{0}, i);
    }
    for (std::size_t k = 0; k < n; ++k) {
      const auto& m = round(k);
      on_side([&] { local(k); });
      if (k + 1 < n) {
        const auto& next = round(k + 1);
        check_peers(next.sends, next.recvs);
        if (k >= 1) REDIST_CUDA_CHECK(cudaStreamWaitEvent(side_.h, done_[(k + 1) % 2].h, 0));
        on_side([&] {
          for (std::size_t i = 0; i < next.sends.size(); ++i) pack(k + 1, i);
        });
        REDIST_CUDA_CHECK(cudaEventRecord(packed_.h, side_.h));
      }
      send_receive(m.sends, m.recvs);
      for (std::size_t i = 0; i < m.recvs.size(); ++i) unpack(k, i);
      if (k + 2 < n) REDIST_CUDA_CHECK(cudaEventRecord(done_[k % 2].h, stream_.h));  // round k + 2 waits for it
      if (k + 1 < n) REDIST_CUDA_CHECK(cudaStreamWaitEvent(stream_.h, packed_.h, 0));
    }
    REDIST_CUDA_CHECK(cudaEventRecord(kept_.h, side_.h));
    REDIST_CUDA_CHECK(cudaStreamWaitEvent(stream_.h, kept_.h, 0));
  }

  template <class T>
    requires nccl_reducible<T>
  void allreduce(std::span<const rank_t> g, block_io<T> io, std::size_t count, reduction r = reduction::sum) {
    collective_reduce(g, io, count, r, ncclAllReduce);
  }

  template <class T>
    requires nccl_reducible<T>
  void reducescatter(std::span<const rank_t> g, block_io<T> io, std::size_t count, reduction r = reduction::sum) {
    collective_reduce(g, io, count, r, ncclReduceScatter);
  }

  /// An all-reduce or reduce-scatter (`call`: ncclAllReduce or ncclReduceScatter, which take
  /// the same arguments) of blocks of `count` elements over group g.
  template <class T, class Call>
  void collective_reduce(std::span<const rank_t> g, block_io<T> io, std::size_t count, reduction r, Call&& call) {
    const std::size_t bytes = detail::block_bytes<T>(who, count);
    const ncclRedOp_t o = nccl_op<T>(r);
    const auto [send, recv] = buffers(io);
    if (local_copy(g, send, recv, bytes)) return;
    REDIST_NCCL_CHECK(call(send, recv, count, nccl_datatype<T>::value, o, group_comm(g), stream_.h));
  }

  /// NCCL's operation for reduction r; refuses, before any data moves, one the element type
  /// or this NCCL lacks.
  template <class T>
  static ncclRedOp_t nccl_op(reduction r) {
    if (!reducible<T>(r)) throw redist_error(errc::runtime, std::string(who) + ": " + unreducible_text(r));
    switch (r) {
      case reduction::max: return ncclMax;
      case reduction::min: return ncclMin;
      case reduction::prod: return ncclProd;
      case reduction::avg:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
        return ncclAvg;
#else
        throw redist_error(errc::runtime, std::string(who) + ": avg needs ncclAvg (NCCL 2.10 or later)");
#endif
      default: return ncclSum;
    }
  }

 private:
  static constexpr const char* who = "nccl backend";

#if defined(REDIST_WITH_MPI)
  static void mpi_call(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw redist_error(errc::runtime, std::string("nccl backend: ") + what + " failed: " +
                                          std::string(msg, static_cast<std::size_t>(len)));
  }
#endif

#if defined(REDIST_WITH_MPI)
  /// The MPI bootstrap's choice of this rank's device (boot_device_): `asked`, or the
  /// rank's index among the ranks of its node modulo the devices it sees (so that ranks
  /// that each see only their own GPU, as with per-rank CUDA_VISIBLE_DEVICES, all take
  /// device 0). Returns why not, or "" -- in particular when two ranks of a node would
  /// use the same GPU (same PCI bus id), which NCCL refuses. Collective over the node.
  std::string choose_device(int asked) {
    MPI_Comm node = MPI_COMM_NULL;  // the ranks of this node
    mpi_call(MPI_Comm_split_type(mpi_.comm, MPI_COMM_TYPE_SHARED, static_cast<int>(me_), MPI_INFO_NULL, &node),
             "MPI_Comm_split_type");
    int node_rank = 0, node_size = 1;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    std::string err, why;
    const int count = detail::cuda_device_count(&why);
    char bus[32] = {};  // this rank's GPU; stays empty if it has none
    if (count == 0) {
      err = "nccl backend: no CUDA device (" + why + ")";
    } else if (asked >= count) {
      err = "nccl backend: CUDA device " + std::to_string(asked) + " was asked for, this rank sees " +
            std::to_string(count);
    } else {
      boot_device_ = asked >= 0 ? asked : node_rank % count;
      const cudaError_t rc = cudaDeviceGetPCIBusId(bus, static_cast<int>(sizeof bus), boot_device_);
      if (rc != cudaSuccess) {
        (void)cudaGetLastError();
        err = "nccl backend: cudaDeviceGetPCIBusId of device " + std::to_string(boot_device_) + ": " +
              cudaGetErrorString(rc);
        bus[0] = '\0';
      }
    }
    std::vector<char> all(sizeof bus * static_cast<std::size_t>(node_size));
    const int rc = MPI_Allgather(bus, static_cast<int>(sizeof bus), MPI_CHAR, all.data(), static_cast<int>(sizeof bus),
                                 MPI_CHAR, node);
    MPI_Comm_free(&node);
    mpi_call(rc, "MPI_Allgather");
    for (int j = 0; err.empty() && j < node_size; ++j)
      if (j != node_rank && std::string(&all[sizeof bus * static_cast<std::size_t>(j)]) == bus)
        err = "nccl backend: ranks " + std::to_string(std::min(j, node_rank)) + " and " +
              std::to_string(std::max(j, node_rank)) + " of this node would share the CUDA device at PCI " + bus +
              "; NCCL needs one GPU per rank (start at most as many ranks per node as GPUs: mpirun -np <gpus>)";
    return err;
  }
#endif

  /// The stream (given or created on `device`), the memory space, the agreement buffer;
  /// the second stream of message rounds, its memory space and its events.
  void setup(int device, cudaStream_t stream, cuda_pack pack) {
    detail::device_guard g(device);
    if (stream != nullptr) {
      stream_.h = stream;
    } else {
      REDIST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_.h, cudaStreamNonBlocking));
      stream_.owned = true;
    }
    mem_ = cuda_memory(device, stream_.h, pack);
    agree_ = cuda_buffer<std::uint64_t>(3, device);
    REDIST_CUDA_CHECK(cudaStreamCreateWithFlags(&side_.h, cudaStreamNonBlocking));
    side_.owned = true;
    side_mem_ = cuda_memory(device, side_.h, pack);
    for (detail::cuda_event_holder* e : {&ready_, &kept_, &packed_, &done_[0], &done_[1]}) {
      REDIST_CUDA_CHECK(cudaEventCreateWithFlags(&e->h, cudaEventDisableTiming));
      e->owned = true;
    }
  }

  void check_peers(std::span<const message> sends, std::span<const message> recvs) const {
    for (const auto* side : {&sends, &recvs})
      for (const message& m : *side) detail::check_message_peer(who, m.peer, size_, me_);
  }

  /// A round's receives and sends as one NCCL group on stream().
  void send_receive(std::span<const message> sends, std::span<const message> recvs) {
    in_group([&] {
      for (const message& r : recvs)
        if (r.bytes != 0)
          REDIST_NCCL_CHECK(ncclRecv(r.data, r.bytes, ncclUint8, static_cast<int>(r.peer), comm_.h, stream_.h));
      for (const message& m : sends)
        if (m.bytes != 0)
          REDIST_NCCL_CHECK(ncclSend(m.data, m.bytes, ncclUint8, static_cast<int>(m.peer), comm_.h, stream_.h));
    });
  }

  /// f() with memory() on the second stream.
  template <class F>
  void on_side(F&& f) {
    struct restore {
      const cuda_memory*& active;
      const cuda_memory& main;
      ~restore() { active = &main; }
    } r{active_, mem_};
    active_ = &side_mem_;
    f();
  }

  /// This rank's send and receive buffers, as bytes.
  template <class T>
  std::pair<const std::byte*, std::byte*> buffers(const block_io<T>& io) const {
    if (io.send.size() <= me_ || io.recv.size() <= me_ || io.send[me_] == nullptr || io.recv[me_] == nullptr)
      throw redist_error(errc::runtime, std::string(who) + ": rank " + std::to_string(me_) + " has no buffer");
    return {reinterpret_cast<const std::byte*>(io.send[me_]), reinterpret_cast<std::byte*>(io.recv[me_])};
  }

  void copy_bytes(std::byte* dst, const std::byte* src, std::size_t bytes) const {
    if (bytes != 0) REDIST_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_.h));
  }

  /// A singleton group of a backend of several ranks: a local copy (true), after checking
  /// that the one member is this rank.
  bool local_copy(std::span<const rank_t> g, const std::byte* send, std::byte* recv, std::size_t bytes) const {
    if (g.size() != 1 || size_ == 1) return false;
    if (g[0] != me_)
      throw redist_error(errc::runtime, std::string(who) + ": rank " + std::to_string(me_) +
                                            " called a collective on the group of rank " + std::to_string(g[0]));
    copy_bytes(recv, send, bytes);
    return true;
  }

  ncclComm_t group_comm(std::span<const rank_t> g) const {
    auto it = groups_.find(std::vector<rank_t>(g.begin(), g.end()));
    if (it == groups_.end())
      throw redist_error(errc::runtime, std::string(who) + ": a collective on a group that prepare_groups did not build");
    return it->second;
  }

  /// Run `f` (NCCL point-to-point calls) between ncclGroupStart and ncclGroupEnd; the group
  /// is closed even when a call fails.
  template <class F>
  static void in_group(F&& f) {
    REDIST_NCCL_CHECK(ncclGroupStart());
    try {
      f();
    } catch (...) {
      (void)ncclGroupEnd();
      throw;
    }
    REDIST_NCCL_CHECK(ncclGroupEnd());
  }

#if defined(REDIST_WITH_MPI)
  detail::mpi_comm_holder mpi_;  // destroyed last
  int boot_device_ = -1;
#endif
  detail::cuda_stream_holder stream_, side_;  // side_: local() of message rounds
  detail::cuda_event_holder ready_, kept_;     // side_ starts after ready_; stream_ waits for kept_
  detail::cuda_event_holder packed_, done_[2];  // message_rounds: the next round packed; round k done
  detail::nccl_comm_holder comm_;              // destroyed before the streams
  cuda_memory mem_, side_mem_;
  const cuda_memory* active_ = &mem_;  // memory(): side_mem_ inside local()
  cuda_buffer<std::uint64_t> agree_;
  std::uint64_t size_ = 0;
  rank_t me_ = 0;
  bool grouped_ = false;
  std::map<std::vector<rank_t>, ncclComm_t> groups_;
  std::set<std::vector<rank_t>> partitions_;
};

static_assert(memory_space_for<cuda_memory, float>);
static_assert(backend_for<nccl_backend, float>);
static_assert(backend_for<nccl_backend, std::int16_t>);
static_assert(reducing_backend_for<nccl_backend, double>);
static_assert(reducing_backend_for<nccl_backend, std::int32_t>);
static_assert(!reducing_backend_for<nccl_backend, std::int16_t>);
static_assert(message_backend<nccl_backend>);

}  // namespace redist

#endif  // REDIST_WITH_NCCL
