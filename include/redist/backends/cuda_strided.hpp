// redist/backends/cuda_strided.hpp -- the NCCL backend's device copy kernels: a whole strided
// copy (runtime/pack.hpp's detail::strided_copy, count x rows runs of `width` elements) as
// one kernel launch on a stream; batches of them (a message's pieces) as one launch; and
// batches of converting copies (runtime/cast.hpp's cast_copy: a reshard that casts f32 to
// bf16 on the way), whose conversions are cast.hpp's own text (detail::convert::text: round to
// nearest even, NaNs kept quiet, subnormals kept) compiled on the device's primitives, so that
// a device converts bit for bit as the host does (tests/backends/nccl_gpu_test.cpp checks
// every 16-bit pattern).
//
// The kernel is CUDA C++ compiled at run time with NVRTC, once per process and compute
// capability (the first cuda_memory built for a device of that capability compiles it,
// about 0.1-0.5 s; later ones find it in a process-wide cache), so that redist stays plain
// C++ for any host compiler: link CUDA::cudart and CUDA::nvrtc. The binary is loaded with
// cudaLibraryLoadData (context-independent, loaded for every device) and never unloaded.
//
// Each thread moves units of the widest size (16, 8, 4, 2 or 1 bytes) that divides every
// run, pitch, step and both base addresses, so float32 runs of 4 elements move as 16-byte
// loads and stores; index arithmetic is 32-bit where every index fits. The run kernel lays
// threads out with the run innermost and, among (i, j), the index whose destination stride
// is smaller next, so that writes are coalesced; each thread has four units in flight.
// Runs of a single unit that are dense along one index in the source and the other in the
// destination (packing for an all-to-all along an inner dimension) go through the
// transpose kernel instead, so that reads are coalesced too.
//
// Failure to compile (an NVRTC without support for this GPU's architecture, say) is not an
// error: strided_kernels::error() then says why and the caller falls back to the copy
// engine (cudaMemcpy2DAsync), which is correct, only slower for short runs.
#pragma once

#if defined(REDIST_WITH_NCCL)

#include <cuda_runtime_api.h>
#include <nvrtc.h>

#if CUDART_VERSION < 12000
#error "redist's NCCL backend needs CUDA 12.0 or newer (cudaLibraryLoadData, cudaKernel_t)"
#endif

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "redist/core/element_type.hpp"
#include "redist/runtime/cast.hpp"
#include "redist/runtime/memory.hpp"
#include "redist/runtime/pack.hpp"

namespace redist::detail {

/// The texts s joined into one, zero-terminated (at compile time).
template <std::size_t... N>
constexpr std::array<char, (N + ...) - sizeof...(N) + 1> join_text(const char (&... s)[N]) {
  std::array<char, (N + ...) - sizeof...(N) + 1> out{};
  std::size_t at = 0;
  ((std::copy_n(s, N - 1, out.begin() + static_cast<std::ptrdiff_t>(at)), at += N - 1), ...);
  return out;
}

/// The kernels' source, for units of 16, 8, 4, 2 and 1 bytes and 32- or 64-bit indices:
/// - redist_strided_<unit bytes>_<index bits>(src, dst, width, rows, total, src_pitch,
///   src_step, dst_pitch, dst_step): src and dst are offset to the copy's first run, the
///   rest is in units; flat index t = (i * rows + j) * width + k moves unit k of run (i, j),
///   src[i * src_step + j * src_pitch + k] -> dst[i * dst_step + j * dst_pitch + k].
/// - redist_transpose_<unit bytes>_<index bits>(src, dst, na, nb, src_a, src_b, dst_a,
///   dst_b): runs of one unit, src[a * src_a + b * src_b] -> dst[a * dst_a + b * dst_b] for
///   a < na, b < nb, through shared memory in 32 x 32 tiles (blocks of 32 x 8 threads), so
///   that reads are coalesced along a (src_a small) and writes along b (dst_b small): the
///   pack of runs of 16 bytes or less, which is a transpose.
inline constexpr auto strided_kernel_text = join_text(R"(
typedef unsigned int u32;
typedef unsigned long long u64;
struct alignas(16) v16 { u64 a, b; };
struct alignas(8) v8 { u64 a; };
#define REDIST_STRIDED(NAME, U, I)                                                                 \
  extern "C" __global__ void __launch_bounds__(256) NAME(const U* __restrict__ src, U* __restrict__ dst, I width, \
      I rows, I total, I src_pitch, I src_step, I dst_pitch, I dst_step) {                         \
    const I block = (I)blockDim.x, stride = (I)gridDim.x * block * 4;                              \
    for (I base = (I)blockIdx.x * block * 4 + (I)threadIdx.x; base < total; base += stride) {     \
      U v[4];                                                                                      \
      I to[4];                                                                                     \
      _Pragma("unroll") for (int u = 0; u < 4; ++u) {                                              \
        const I t = base + (I)u * block;                                                           \
        if (t < total) {                                                                           \
          const I q = t / width, k = t - q * width, i = q / rows, j = q - i * rows;                \
          v[u] = src[i * src_step + j * src_pitch + k];                                            \
          to[u] = i * dst_step + j * dst_pitch + k;                                                \
        }                                                                                          \
      }                                                                                            \
      _Pragma("unroll") for (int u = 0; u < 4; ++u)                                                \
        if (base + (I)u * block < total) dst[to[u]] = v[u];                                        \
    }                                                                                              \
  }
#define REDIST_TRANSPOSE(NAME, U, I)                                                               \
  extern "C" __global__ void __launch_bounds__(256) NAME(const U* __restrict__ src, U* __restrict__ dst, I na, \
      I nb, I src_a, I src_b, I dst_a, I dst_b) {                                                  \
    __shared__ U tile[32][33];                                                                     \
    const I ta = (na + 31) / 32, tiles = ta * ((nb + 31) / 32);                                    \
    for (I t = (I)blockIdx.x; t < tiles; t += (I)gridDim.x) {                                      \
      const I a0 = t % ta * 32, b0 = t / ta * 32;                                                  \
      for (unsigned r = threadIdx.y; r < 32; r += 8) {                                             \
        const I a = a0 + threadIdx.x, b = b0 + r;                                                  \
        if (a < na && b < nb) tile[r][threadIdx.x] = src[a * src_a + b * src_b];                   \
      }                                                                                            \
      __syncthreads();                                                                             \
      for (unsigned r = threadIdx.y; r < 32; r += 8) {                                             \
        const I a = a0 + r, b = b0 + threadIdx.x;                                                  \
        if (a < na && b < nb) dst[a * dst_a + b * dst_b] = tile[threadIdx.x][r];                   \
      }                                                                                            \
      __syncthreads();                                                                             \
    }                                                                                              \
  }
#define REDIST_STRIDED_UNIT(BYTES, U)                                                                  \
  REDIST_STRIDED(redist_strided_##BYTES##_32, U, u32) REDIST_STRIDED(redist_strided_##BYTES##_64, U, u64) \
  REDIST_TRANSPOSE(redist_transpose_##BYTES##_32, U, u32) REDIST_TRANSPOSE(redist_transpose_##BYTES##_64, U, u64)
REDIST_STRIDED_UNIT(16, v16)
REDIST_STRIDED_UNIT(8, v8)
REDIST_STRIDED_UNIT(4, u32)
REDIST_STRIDED_UNIT(2, unsigned short)
REDIST_STRIDED_UNIT(1, unsigned char)
struct redist_job {
  const unsigned char* src;
  unsigned char* dst;
  u64 width, rows, total, src_pitch, src_step, dst_pitch, dst_step;
  u32 unit, pad;
};
struct redist_jobs {
  redist_job job[48];  // strided_batch_size
  u32 n, pad;
};
template <class U>
__device__ __forceinline__ void redist_run_job(const redist_job& b) {
  const U* __restrict__ src = (const U*)b.src;
  U* __restrict__ dst = (U*)b.dst;
  const u64 block = blockDim.x, stride = (u64)gridDim.x * block * 4;
  for (u64 base = (u64)blockIdx.x * block * 4 + threadIdx.x; base < b.total; base += stride) {
    U v[4];
    u64 to[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const u64 t = base + (u64)u * block;
      if (t < b.total) {
        const u64 q = t / b.width, k = t - q * b.width, i = q / b.rows, j = q - i * b.rows;
        v[u] = src[i * b.src_step + j * b.src_pitch + k];
        to[u] = i * b.dst_step + j * b.dst_pitch + k;
      }
    }
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (base + (u64)u * block < b.total) dst[to[u]] = v[u];
  }
}
extern "C" __global__ void __launch_bounds__(256) redist_batch(const __grid_constant__ redist_jobs jobs) {
  const redist_job& b = jobs.job[blockIdx.y];
  switch (b.unit) {
    case 16: redist_run_job<v16>(b); break;
    case 8: redist_run_job<v8>(b); break;
    case 4: redist_run_job<u32>(b); break;
    case 2: redist_run_job<unsigned short>(b); break;
    default: redist_run_job<unsigned char>(b); break;
  }
}
)", R"(
// Converting copies (type codes: 0 f64, 1 f32, 2 bf16, 3 f16) by runtime/cast.hpp's
// conversions: their text (detail::convert::text) follows, on these primitives. Elements at
// addresses that are not multiples of their size (pieces of other types before them in a
// message) are read and written byte by byte.
typedef unsigned short u16;
#define REDIST_CONVERSION __device__ __forceinline__
__device__ __forceinline__ u32 as_u32(float f) { return __float_as_uint(f); }
__device__ __forceinline__ float as_f32(u32 u) { return __uint_as_float(u); }
__device__ __forceinline__ u64 as_u64(double d) { return (u64)__double_as_longlong(d); }
__device__ __forceinline__ double as_f64(u64 u) { return __longlong_as_double((long long)u); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
)", convert::text, R"(
struct redist_cast_job {
  const unsigned char* src;
  unsigned char* dst;
  u64 width, rows, total, src_pitch, src_step, dst_pitch, dst_step;  // in elements
  u32 from, to;
};
struct redist_cast_jobs {
  redist_cast_job job[48];  // strided_batch_size
  u32 n, pad;
};
template <class U>
__device__ __forceinline__ U redist_get(const unsigned char* p, bool aligned) {
  if (aligned) return *(const U*)p;
  U v = 0;
  for (int b = 0; b < (int)sizeof(U); ++b) v |= (U)p[b] << (8 * b);
  return v;
}
template <class U>
__device__ __forceinline__ void redist_put(unsigned char* p, U v, bool aligned) {
  if (aligned) {
    *(U*)p = v;
    return;
  }
  for (int b = 0; b < (int)sizeof(U); ++b) p[b] = (unsigned char)(v >> (8 * b));
}
template <int T>
__device__ __forceinline__ float redist_load_float(const unsigned char* p, bool aligned) {
  if constexpr (T == 1) {
    return __uint_as_float(redist_get<u32>(p, aligned));
  } else {
    const u16 h = redist_get<u16>(p, aligned);
    return T == 2 ? bf16_bits_to_float(h) : f16_bits_to_float(h);
  }
}
template <int T>
__device__ __forceinline__ void redist_store_float(unsigned char* p, float v, bool aligned) {
  if constexpr (T == 1) redist_put<u32>(p, __float_as_uint(v), aligned);
  else redist_put<u16>(p, T == 2 ? float_to_bf16_bits(v) : float_to_f16_bits(v), aligned);
}
// f64 moves as its bits; to and from it through double_to_float and float_to_double, which
// spell NaNs out (the device's cvt would make them canonical).
template <int T>
__device__ __forceinline__ u64 redist_load_double(const unsigned char* p, bool aligned) {
  if constexpr (T == 0) {
    return redist_get<u64>(p, aligned);
  } else {
    return as_u64(float_to_double(redist_load_float<T>(p, aligned)));
  }
}
template <int T>
__device__ __forceinline__ void redist_store_double(unsigned char* p, u64 v, bool aligned) {
  if constexpr (T == 0) {
    redist_put<u64>(p, v, aligned);
  } else {  // to bf16 and f16 through f32
    redist_store_float<T>(p, double_to_float(as_f64(v)), aligned);
  }
}
template <int F, int T>
__device__ void redist_cast_run(const redist_cast_job& b) {
  const u64 fe = F == 0 ? 8 : F == 1 ? 4 : 2, te = T == 0 ? 8 : T == 1 ? 4 : 2;
  const bool sa = (u64)b.src % fe == 0, da = (u64)b.dst % te == 0;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x; t < b.total; t += stride) {
    const u64 q = t / b.width, k = t - q * b.width, i = q / b.rows, j = q - i * b.rows;
    const unsigned char* s = b.src + (i * b.src_step + j * b.src_pitch + k) * fe;
    unsigned char* d = b.dst + (i * b.dst_step + j * b.dst_pitch + k) * te;
    if constexpr (F == 0 || T == 0) redist_store_double<T>(d, redist_load_double<F>(s, sa), da);
    else redist_store_float<T>(d, redist_load_float<F>(s, sa), da);
  }
}
#define REDIST_CAST_CASE(F, T) \
  case F * 4 + T: redist_cast_run<F, T>(b); break;
#define REDIST_CAST_FROM(F) REDIST_CAST_CASE(F, 0) REDIST_CAST_CASE(F, 1) REDIST_CAST_CASE(F, 2) REDIST_CAST_CASE(F, 3)
extern "C" __global__ void __launch_bounds__(256) redist_cast_batch(const __grid_constant__ redist_cast_jobs jobs) {
  const redist_cast_job& b = jobs.job[blockIdx.y];
  switch (b.from * 4 + b.to) { REDIST_CAST_FROM(0) REDIST_CAST_FROM(1) REDIST_CAST_FROM(2) REDIST_CAST_FROM(3) }
}
)");
inline constexpr const char* strided_kernel_source = strided_kernel_text.data();

/// One copy of a batch (the kernel redist_batch): the run kernel's arguments with 64-bit
/// indices, in units of `unit` bytes, from src to dst (offset to the first run). The
/// layout is the kernel source's struct redist_job.
struct strided_job {
  const void* src = nullptr;
  void* dst = nullptr;
  std::uint64_t width = 0, rows = 0, total = 0, src_pitch = 0, src_step = 0, dst_pitch = 0, dst_step = 0;
  std::uint32_t unit = 0, pad = 0;
};
/// The most copies one launch of redist_batch takes (the length of redist_jobs::job in the
/// kernel source): its argument (strided_jobs) stays within the 4 KiB that every CUDA device
/// passes to a kernel.
inline constexpr std::size_t strided_batch_size = 48;
/// The argument of redist_batch (struct redist_jobs): block (x, y) works on job[y].
struct strided_jobs {
  std::array<strided_job, strided_batch_size> job{};
  std::uint32_t n = 0, pad = 0;
};
static_assert(sizeof(strided_job) == 80 && sizeof(strided_jobs) <= 4096, "redist_batch's argument: at most 4 KiB");

/// One converting copy of a batch (the kernel redist_cast_batch): count x rows runs of
/// `width` elements of type code `from` at src (offset to the first run) to elements of type
/// code `to` at dst, strides in elements (cast_type_code). The layout is the kernel
/// source's struct redist_cast_job.
struct cast_job {
  const void* src = nullptr;
  void* dst = nullptr;
  std::uint64_t width = 0, rows = 0, total = 0, src_pitch = 0, src_step = 0, dst_pitch = 0, dst_step = 0;
  std::uint32_t from = 0, to = 0;
};
/// The argument of redist_cast_batch (struct redist_cast_jobs): block (x, y) works on job[y].
struct cast_jobs {
  std::array<cast_job, strided_batch_size> job{};
  std::uint32_t n = 0, pad = 0;
};
static_assert(sizeof(cast_job) == 80 && sizeof(cast_jobs) <= 4096, "redist_cast_batch's argument: at most 4 KiB");

/// The kernel's code of a floating element type: 0 f64, 1 f32, 2 bf16, 3 f16.
constexpr std::uint32_t cast_type_code(element_type t) {
  return t == element_type::f64 ? 0 : t == element_type::f32 ? 1 : t == element_type::bf16 ? 2 : 3;
}

/// Unit sizes the kernels move, widest first.
inline constexpr std::array<std::size_t, 5> strided_units = {16, 8, 4, 2, 1};

/// The compiled kernels for one compute capability: kernel(transpose, u, wide) for units of
/// strided_units[u] bytes and 64-bit (wide) or 32-bit indices; all null when compiling
/// failed, and error() says why.
class strided_kernels {
 public:
  [[nodiscard]] bool ready() const noexcept { return error_.empty(); }
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  [[nodiscard]] cudaKernel_t kernel(bool transpose, std::size_t unit, bool wide) const noexcept {
    return k_[(transpose ? strided_units.size() * 2 : 0) + unit * 2 + (wide ? 1 : 0)];
  }
  /// The batch kernel (redist_batch: up to strided_batch_size copies in one launch).
  [[nodiscard]] cudaKernel_t batch() const noexcept { return batch_; }
  /// The converting batch kernel (redist_cast_batch: up to strided_batch_size cast copies).
  [[nodiscard]] cudaKernel_t cast_batch() const noexcept { return cast_batch_; }
  /// Which code was loaded: "sm_90 cubin", or "compute_90 PTX" when NVRTC does not know
  /// the device's architecture and the driver compiles PTX of the newest one it does.
  [[nodiscard]] const std::string& target() const noexcept { return target_; }

  /// The kernels for `device`'s compute capability, compiled on first use (thread-safe).
  static const strided_kernels& for_device(int device) {
    int major = 0, minor = 0;
    std::string why;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
      (void)cudaGetLastError();
      why = "the compute capability of CUDA device " + std::to_string(device) + " is unknown";
    }
    static std::mutex mu;
    static std::map<int, strided_kernels> cache;  // never erased: references stay valid
    const std::lock_guard<std::mutex> lock(mu);
    const int cc = why.empty() ? major * 10 + minor : -1;
    auto it = cache.find(cc);
    if (it == cache.end()) {
      strided_kernels k;
      if (!why.empty()) k.error_ = why;
      else k.build(cc);
      it = cache.emplace(cc, std::move(k)).first;
    }
    return it->second;
  }

 private:
  void build(int cc) {
    std::string err = compile(cc, true);
    if (!err.empty()) {  // an NVRTC older than the GPU: PTX of its newest architecture below
      int n = 0;
      std::vector<int> archs;
      if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
        archs.resize(static_cast<std::size_t>(n));
        if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) archs.clear();
      }
      int best = -1;
      for (int a : archs)
        if (a <= cc) best = std::max(best, a);
      if (best > 0 && best != cc && compile(best, false).empty()) err.clear();
    }
    if (!err.empty()) {
      error_ = err;
      k_.fill(nullptr);
      return;
    }
    std::size_t n = 0;
    for (const char* kind : {"redist_strided_", "redist_transpose_"})
      for (std::size_t unit : strided_units)
        for (const char* bits : {"_32", "_64"}) {
          const std::string name = kind + std::to_string(unit) + bits;
          if (!get(&k_[n++], name.c_str())) return;
        }
    if (get(&batch_, "redist_batch")) (void)get(&cast_batch_, "redist_cast_batch");
  }

  /// Kernel `name` of the library into *k; false, with error_ set and no kernel left, if not.
  bool get(cudaKernel_t* k, const char* name) {
    const cudaError_t rc = cudaLibraryGetKernel(k, lib_, name);
    if (rc == cudaSuccess) return true;
    (void)cudaGetLastError();
    error_ = "cudaLibraryGetKernel(" + std::string(name) + "): " + cudaGetErrorString(rc);
    k_.fill(nullptr);
    batch_ = cast_batch_ = nullptr;
    return false;
  }

  /// Compile for sm_<cc> (cubin) or compute_<cc> (PTX) and load it; "" or why not.
  std::string compile(int cc, bool cubin) {
    nvrtcProgram prog = nullptr;
    if (nvrtcCreateProgram(&prog, strided_kernel_source, "redist_strided.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
      return "nvrtcCreateProgram failed";
    struct destroy {
      nvrtcProgram* p;
      ~destroy() { (void)nvrtcDestroyProgram(p); }
    } guard{&prog};
    const std::string target = (cubin ? "sm_" : "compute_") + std::to_string(cc);
    const std::string arch = "--gpu-architecture=" + target;
    const char* opts[] = {arch.c_str(), "-std=c++17"};
    const nvrtcResult rc = nvrtcCompileProgram(prog, 2, opts);
    if (rc != NVRTC_SUCCESS) {
      std::size_t n = 0;
      std::string log;
      if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
        log.resize(n);
        (void)nvrtcGetProgramLog(prog, log.data());
        log.resize(n - 1);
      }
      return "NVRTC could not compile the copy kernel for " + target + ": " + nvrtcGetErrorString(rc) +
             (log.empty() ? "" : " (" + log + ")");
    }
    std::size_t n = 0;
    std::vector<char> code;
    if ((cubin ? nvrtcGetCUBINSize(prog, &n) : nvrtcGetPTXSize(prog, &n)) != NVRTC_SUCCESS || n == 0)
      return "NVRTC returned no code for " + target;
    code.resize(n);
    if ((cubin ? nvrtcGetCUBIN(prog, code.data()) : nvrtcGetPTX(prog, code.data())) != NVRTC_SUCCESS)
      return "NVRTC returned no code for " + target;
    const cudaError_t lr = cudaLibraryLoadData(&lib_, code.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (lr != cudaSuccess) {
      (void)cudaGetLastError();
      return "cudaLibraryLoadData (" + target + "): " + std::string(cudaGetErrorString(lr));
    }
    target_ = target + (cubin ? " cubin" : " PTX");
    return {};
  }

  std::array<cudaKernel_t, strided_units.size() * 4> k_{};
  cudaKernel_t batch_ = nullptr, cast_batch_ = nullptr;
  cudaLibrary_t lib_ = nullptr;
  std::string error_, target_;
};

/// How the kernels run a strided copy of elements of `elem` bytes: the unit (index into
/// strided_units), 32- or 64-bit indices, and the arguments in units of either the run
/// kernel (width, rows, total, pitches, steps) or, if `transpose`, the transpose kernel
/// (na, nb and the four strides).
struct strided_launch {
  std::size_t unit = 0;
  bool wide = false;
  bool transpose = false;
  std::uint64_t width = 0, rows = 0, total = 0;
  std::uint64_t src_pitch = 0, src_step = 0, dst_pitch = 0, dst_step = 0;
  std::uint64_t na = 0, nb = 0, src_a = 0, src_b = 0, dst_a = 0, dst_b = 0;
};

/// The launch for copy `c` (non-empty) from byte address `src` to `dst`: units as wide as
/// every length and address allows. Runs of one unit whose source is denser along one
/// index and destination along the other, at least 16 x 16 of them, are a transpose (a is
/// the source's dense index); otherwise the run kernel with (i, j) arranged so that j, the
/// index next to the run, has the smaller destination stride. `threads` = the run kernel's
/// grid x block x 4 (units in flight), for the 32-bit bound.
inline strided_launch plan_strided_launch(const strided_copy& c0, std::size_t elem, std::uintptr_t src,
                                          std::uintptr_t dst, std::uint64_t threads) {
  strided_copy c = c0.merged();
  if (c.count > 1 && c.rows > 1 && c.swapped().dst_pitch < c.dst_pitch) c = c.swapped();
  if (c.rows == 1 && c.count > 1) c = c.swapped();  // a single index: make it j
  std::uint64_t g = c.width * elem | src | dst;
  if (c.rows > 1) g |= c.src_pitch * elem | c.dst_pitch * elem;
  if (c.count > 1) g |= c.src_step * elem | c.dst_step * elem;
  std::size_t u = 0;
  while (g % strided_units[u] != 0) ++u;
  const std::uint64_t s = strided_units[u];
  strided_launch l;
  l.unit = u;
  l.width = c.width * elem / s;
  l.rows = c.rows;
  l.total = l.width * c.rows * c.count;
  l.src_pitch = c.src_pitch * elem / s;
  l.src_step = c.src_step * elem / s;
  l.dst_pitch = c.dst_pitch * elem / s;
  l.dst_step = c.dst_step * elem / s;
  const std::uint64_t last_src = (c.count - 1) * l.src_step + (c.rows - 1) * l.src_pitch + l.width;
  const std::uint64_t last_dst = (c.count - 1) * l.dst_step + (c.rows - 1) * l.dst_pitch + l.width;
  const std::uint64_t lim = std::uint64_t{1} << 32;
  l.wide = l.total + threads >= lim || last_src >= lim || last_dst >= lim;
  // j has the smaller destination stride; a transpose if i has the smaller source stride.
  if (l.width == 1 && c.count >= 16 && c.rows >= 16 && l.src_step < l.src_pitch) {
    l.transpose = true;
    l.na = c.count;
    l.nb = c.rows;
    l.src_a = l.src_step;
    l.src_b = l.src_pitch;
    l.dst_a = l.dst_step;
    l.dst_b = l.dst_pitch;
  }
  return l;
}

/// Launch the copy `c` of elements of `elem` bytes from `src` to `dst` on `stream`, with
/// `kernels` (ready) on a device of `sms` multiprocessors. Returns the launch's result.
inline cudaError_t launch_strided(const strided_kernels& kernels, int sms, const strided_copy& c, std::size_t elem,
                                  const void* src, void* dst, cudaStream_t stream) {
  if (c.elements() == 0) return cudaSuccess;
  constexpr unsigned block = 256;
  const std::uint64_t max_grid = static_cast<std::uint64_t>(std::max(sms, 1)) * 16;
  const std::uint64_t total = c.elements();  // an upper bound on units, for the grid
  const std::uint64_t grid = std::max<std::uint64_t>(1, std::min(max_grid, (total + block * 4 - 1) / (block * 4)));
  const auto* s = static_cast<const std::byte*>(src) + c.src * elem;
  auto* d = static_cast<std::byte*>(dst) + c.dst * elem;
  const strided_launch l = plan_strided_launch(c, elem, reinterpret_cast<std::uintptr_t>(s),
                                               reinterpret_cast<std::uintptr_t>(d), grid * block * 4);
  const void* sp = s;
  void* dp = d;
  const auto* k = static_cast<const void*>(kernels.kernel(l.transpose, l.unit, l.wide));
  std::uint64_t a[7] = {l.width, l.rows, l.total, l.src_pitch, l.src_step, l.dst_pitch, l.dst_step};
  dim3 g(static_cast<unsigned>(grid)), b(block);
  if (l.transpose) {
    const std::uint64_t tiles = (l.na + 31) / 32 * ((l.nb + 31) / 32);
    g = dim3(static_cast<unsigned>(std::min(tiles, max_grid * 2)));
    b = dim3(32, 8);
    a[0] = l.na, a[1] = l.nb, a[2] = l.src_a, a[3] = l.src_b, a[4] = l.dst_a, a[5] = l.dst_b;
  }
  const int n = l.transpose ? 6 : 7;
  void* args[9] = {&sp, &dp};
  std::uint32_t narrow[7] = {};
  for (int i = 0; i < n; ++i) {
    narrow[i] = static_cast<std::uint32_t>(a[i]);
    args[2 + i] = l.wide ? static_cast<void*>(&a[i]) : static_cast<void*>(&narrow[i]);
  }
  return cudaLaunchKernel(k, g, b, args, 0, stream);
}

/// Launch batch kernel k on `jobs` (strided_jobs or cast_jobs, jobs.n of them, the largest of
/// `most` units, each thread taking `per_thread` units) on a device of `sms`
/// multiprocessors, then empty the batch: block (x, y) works on job y, each job getting the
/// blocks its size needs, up to 16 per multiprocessor shared among the batch but never fewer
/// than 2 per multiprocessor. Nothing to launch without jobs.
template <class Jobs>
cudaError_t launch_jobs(cudaKernel_t k, int sms, Jobs& jobs, std::uint64_t& most, std::uint64_t per_thread,
                        cudaStream_t stream) {
  if (jobs.n == 0) return cudaSuccess;
  constexpr std::uint64_t block = 256;
  const std::uint64_t m = static_cast<std::uint64_t>(std::max(sms, 1));
  const std::uint64_t share = std::max(m * 2, m * 16 / jobs.n);
  const std::uint64_t gx =
      std::max<std::uint64_t>(1, std::min(share, (most + block * per_thread - 1) / (block * per_thread)));
  void* args[1] = {&jobs};
  const cudaError_t rc = cudaLaunchKernel(static_cast<const void*>(k), dim3(static_cast<unsigned>(gx), jobs.n),
                                          dim3(static_cast<unsigned>(block)), args, 0, stream);
  jobs.n = 0;
  most = 0;
  return rc;
}

/// Launch the byte copies `copies` (runtime/memory.hpp's byte_copy; no copy writes where
/// another reads or writes) on `stream` with `kernels` (ready) on a device of `sms`
/// multiprocessors: up to strided_batch_size copies per launch of the batch kernel, in units
/// as wide as each copy allows; transposes (plan_strided_launch) launch on their own; blocks
/// shared among a batch's copies as launch_jobs says. Returns the first failed launch's
/// result.
inline cudaError_t launch_batch(const strided_kernels& kernels, int sms, std::span<const byte_copy> copies,
                                cudaStream_t stream) {
  strided_jobs jobs;
  std::uint64_t most = 0;  // the largest job's units
  auto flush = [&] { return launch_jobs(kernels.batch(), sms, jobs, most, 4, stream); };
  for (const byte_copy& b : copies) {
    if (b.c.elements() == 0) continue;
    const std::byte* s = b.src + b.c.src;
    std::byte* d = b.dst + b.c.dst;
    const strided_launch l =
        plan_strided_launch(b.c, 1, reinterpret_cast<std::uintptr_t>(s), reinterpret_cast<std::uintptr_t>(d), 0);
    if (l.transpose) {
      const cudaError_t rc = launch_strided(kernels, sms, b.c, 1, b.src, b.dst, stream);
      if (rc != cudaSuccess) return rc;
      continue;
    }
    strided_job& j = jobs.job[jobs.n++];
    j = {s, d, l.width, l.rows, l.total, l.src_pitch, l.src_step, l.dst_pitch, l.dst_step,
         static_cast<std::uint32_t>(strided_units[l.unit]), 0};
    most = std::max(most, l.total);
    if (jobs.n == strided_batch_size) {
      const cudaError_t rc = flush();
      if (rc != cudaSuccess) return rc;
    }
  }
  return flush();
}

/// Launch the converting copies `copies` (runtime/cast.hpp's cast_copy between floating
/// types; no copy writes where another reads or writes) on `stream` with `kernels` (ready)
/// on a device of `sms` multiprocessors: up to strided_batch_size copies per launch of
/// redist_cast_batch, blocks shared among them as launch_jobs says. Returns the first failed
/// launch's result.
inline cudaError_t launch_cast_batch(const strided_kernels& kernels, int sms, std::span<const cast_copy> copies,
                                     cudaStream_t stream) {
  cast_jobs jobs;
  std::uint64_t most = 0;  // the largest job's elements
  auto flush = [&] { return launch_jobs(kernels.cast_batch(), sms, jobs, most, 1, stream); };
  for (const cast_copy& x : copies) {
    if (x.c.elements() == 0) continue;
    const strided_copy c = x.c.merged();
    cast_job& j = jobs.job[jobs.n++];
    j = {x.src + c.src * element_type_bytes(x.from), x.dst + c.dst * element_type_bytes(x.to),
         c.width, c.rows, c.elements(), c.src_pitch, c.src_step, c.dst_pitch, c.dst_step,
         cast_type_code(x.from), cast_type_code(x.to)};
    most = std::max(most, j.total);
    if (jobs.n == strided_batch_size) {
      const cudaError_t rc = flush();
      if (rc != cudaSuccess) return rc;
    }
  }
  return flush();
}

}  // namespace redist::detail

#endif  // REDIST_WITH_NCCL
