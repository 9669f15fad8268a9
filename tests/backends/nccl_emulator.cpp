// tests/backends/nccl_emulator.cpp -- a CPU stand-in for the parts of the CUDA runtime and
// NCCL that the NCCL backend (backends/nccl.hpp) and its tests call, so that CI, which
// has no GPU, runs the backend's code paths on real data: linked instead of libcudart and
// libnccl into copies of the GPU tests (backends_nccl_emulated_*).
//
// - "Device memory" is host memory from cudaMalloc, registered with its device; every
//   device-side copy and every NCCL buffer is bounds-checked against the allocation it
//   starts in (an access outside it fails with cudaErrorInvalidValue / ncclInvalidArgument,
//   stricter than a GPU), and cudaMemcpy2D enforces width <= pitch <= the device's
//   maximum pitch (REDIST_EMULATED_MAX_PITCH bytes, default 2^31 - 1, so that tests can
//   force the backend's fallbacks).
// - REDIST_EMULATED_GPUS devices (default 8) per process, the same on every rank of a
//   node (device k has PCI bus id 0000:k:00.0); cudaPointerGetAttributes tells device,
//   pinned host and other host memory apart.
// - The copy kernels (backends/cuda_strided.hpp) are compiled for real by NVRTC (for an
//   emulated sm_90 with 132 multiprocessors); cudaLaunchKernel runs them on the CPU with
//   the same arguments, checking alignment and bounds (the batch kernels: every job; the
//   converting kernel with the host's conversions). cudaMemGetInfo reports 80 GiB less the
//   bytes allocated on the current device, so memory formulas are checked exactly.
// - Streams run their work later, as a GPU does (REDIST_EMULATED_STREAMS): `random` (the
//   default; `random:SEED` picks the seed) runs some of the enqueued copies and kernels of
//   randomly chosen streams at each call, `lazy` only what a synchronization forces, `sync`
//   everything when called. Each stream keeps its order and its waits on events; copies
//   between device and pageable host memory behave as CUDA's do (an upload is staged when
//   called, a download waits for its stream); cudaMemcpy and cudaMemset (the legacy default
//   stream) do not wait for the non-blocking streams; an NCCL call runs when called, after
//   the work before it on its stream. So a missing cudaStreamSynchronize or event wait
//   reads or leaves stale data here as it could on a GPU.
// - NCCL communicators are MPI communicators (one-rank communicators need no MPI):
//   ncclCommInitRank splits MPI_COMM_WORLD (all its ranks must take part), ncclCommSplit
//   is MPI_Comm_split, collectives are their MPI counterparts (reductions: sum, prod, max,
//   min, and avg as MPI_SUM then a division by the communicator's size), grouped ncclSend/ncclRecv
//   become nonblocking MPI point-to-point completed at ncclGroupEnd.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "redist/backends/cuda_strided.hpp"  // the batch kernel's argument (strided_jobs)
#include "redist/backends/mpi.hpp"           // mpi_reduce_op: 8-bit sums that wrap, bf16 and f16

struct CUstream_st {
  int device = 0;
  bool blocking = true;                      // synchronizes with the legacy default stream
  std::deque<std::function<void()>> work;    // enqueued and not yet run
  std::uint64_t enqueued = 0, done = 0;      // items enqueued and run so far
  bool running = false;
};
struct CUevent_st {
  cudaStream_t s = nullptr;  // the stream it was last recorded on (nullptr: complete)
  std::uint64_t at = 0;      // complete once s has run this many items
};

struct ncclComm {
  int size = 1, rank = 0, device = 0;
  MPI_Comm mpi = MPI_COMM_NULL;  // MPI_COMM_NULL for a one-rank communicator
};

namespace {

thread_local int current_device = 0;
thread_local cudaError_t last_cuda = cudaSuccess;
thread_local std::string last_nccl;
int group_depth = 0;

struct p2p {
  bool send;
  const void* sbuf;
  void* rbuf;
  std::size_t bytes;
  int peer;
  ncclComm_t comm;
  cudaStream_t stream;
};
std::vector<p2p> pending;

struct allocation {
  std::size_t size;
  int device;  // -1: pinned host memory
};
std::map<std::uintptr_t, allocation>& registry() {
  static std::map<std::uintptr_t, allocation> r;
  return r;
}

int env_int(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? static_cast<int>(std::strtol(v, nullptr, 10)) : static_cast<int>(fallback);
}
int device_count() { return env_int("REDIST_EMULATED_GPUS", 8); }
constexpr std::size_t emulated_memory = std::size_t{80} << 30;  // per device, for cudaMemGetInfo
int max_pitch() { return env_int("REDIST_EMULATED_MAX_PITCH", INT_MAX); }

cudaError_t fail(cudaError_t e) {
  last_cuda = e;
  return e;
}

/// The allocation containing [p, p + n), or nullptr.
const allocation* find(const void* p, std::size_t n) {
  auto& r = registry();
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = r.upper_bound(a);
  if (it == r.begin()) return nullptr;
  --it;
  if (a < it->first || a + n > it->first + it->second.size) return nullptr;
  return &it->second;
}
bool is_device(const void* p, std::size_t n) {
  const allocation* a = find(p, n);
  return a != nullptr && a->device >= 0;
}

/// The byte ranges a copy of `kind` touches must be device memory where the kind says so.
bool copy_ok(void* dst, std::size_t dn, const void* src, std::size_t sn, cudaMemcpyKind kind) {
  if (dn == 0 && sn == 0) return true;
  const bool dd = is_device(dst, dn), sd = is_device(src, sn);
  switch (kind) {
    case cudaMemcpyDeviceToDevice: return dd && sd;
    case cudaMemcpyHostToDevice: return dd && !sd;
    case cudaMemcpyDeviceToHost: return sd && !dd;
    case cudaMemcpyHostToHost: return !dd && !sd;
    default: return true;
  }
}

// ---- Streams: deferred work (see the top of this file) ----

enum class stream_mode { sync, lazy, random };
struct scheduler {
  stream_mode mode = stream_mode::random;
  std::mt19937_64 rng{1};
  std::vector<cudaStream_t> streams;  // the live ones, in creation order
  std::set<cudaEvent_t> events;
  scheduler() {
    const char* v = std::getenv("REDIST_EMULATED_STREAMS");
    const std::string m = v != nullptr ? v : "";
    if (m == "sync") mode = stream_mode::sync;
    else if (m == "lazy") mode = stream_mode::lazy;
    else if (m.rfind("random:", 0) == 0) rng.seed(std::strtoull(m.c_str() + 7, nullptr, 10));
    else if (!m.empty() && m != "random") {
      std::fprintf(stderr, "nccl emulator: REDIST_EMULATED_STREAMS is '%s'; use random, random:SEED, lazy or sync\n",
                   m.c_str());
      std::abort();
    }
  }
};
scheduler& sched() {
  static scheduler s;
  return s;
}

/// Run s's oldest item (which may first run other streams' items it waits for).
void run_head(cudaStream_t s) {
  if (s->running) {  // a cycle of waits: a bug of this emulator, never of a valid program
    std::fprintf(stderr, "nccl emulator: a stream waits on itself\n");
    std::abort();
  }
  std::function<void()> f = std::move(s->work.front());
  s->work.pop_front();
  s->running = true;
  f();
  s->running = false;
  ++s->done;
}
/// Run s until it has run `at` items.
void run_until(cudaStream_t s, std::uint64_t at) {
  while (s->done < at && !s->work.empty()) run_head(s);
}
void run_all(cudaStream_t s) { run_until(s, s->enqueued); }
/// Everything enqueued on every stream (cudaDeviceSynchronize, cudaFree).
void run_everything() {
  for (cudaStream_t s : sched().streams) run_all(s);
}
/// In random mode, run a random number of items of randomly chosen streams.
void progress() {
  scheduler& S = sched();
  if (S.mode != stream_mode::random) return;
  while (S.rng() % 2 != 0) {
    std::vector<cudaStream_t> busy;
    for (cudaStream_t s : S.streams)
      if (!s->work.empty() && !s->running) busy.push_back(s);
    if (busy.empty()) return;
    run_head(busy[S.rng() % busy.size()]);
  }
}
/// What work on stream s waits for: s's earlier work, or for the legacy default stream
/// (nullptr) the blocking streams'.
void run_before(cudaStream_t s) {
  if (s != nullptr) run_all(s);
  else
    for (cudaStream_t b : sched().streams)
      if (b->blocking) run_all(b);
}
/// Work on stream s (nullptr: the legacy default stream, which runs it at once).
void enqueue(cudaStream_t s, std::function<void()> f) {
  if (s == nullptr || sched().mode == stream_mode::sync) {
    run_before(s);
    f();
    if (s != nullptr) ++s->enqueued, ++s->done;
    return;
  }
  s->work.push_back(std::move(f));
  ++s->enqueued;
  progress();
}
/// Before an NCCL call on s runs (at once).
void before_nccl(cudaStream_t s) {
  run_before(s);
  progress();
}

ncclResult_t nccl_fail(ncclResult_t r, const std::string& why) {
  last_nccl = why;
  return r;
}

std::size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

MPI_Datatype mpi_type(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return MPI_INT8_T;
    case ncclUint8: return MPI_UINT8_T;
    case ncclInt32: return MPI_INT32_T;
    case ncclUint32: return MPI_UINT32_T;
    case ncclInt64: return MPI_INT64_T;
    case ncclUint64: return MPI_UINT64_T;
    case ncclFloat16:
    case ncclBfloat16: return MPI_UINT16_T;
    case ncclFloat32: return MPI_FLOAT;
    case ncclFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

/// The MPI operation of an NCCL reduction of elements of type t (ncclAvg: the sum, then
/// divide_by_size), or MPI_OP_NULL for one not emulated: the MPI backend's (backends/mpi.hpp
/// mpi_reduce_op: 8-bit sums wrap as NCCL's do, where Open MPI 4.1's MPI_SUM saturates them;
/// bf16 and f16 round once per addition, as NCCL's do).
MPI_Op mpi_op(ncclRedOp_t op, ncclDataType_t t) {
  redist::reduction r = redist::reduction::sum;
  switch (op) {
    case ncclSum:
    case ncclAvg: break;
    case ncclProd: r = redist::reduction::prod; break;
    case ncclMax: r = redist::reduction::max; break;
    case ncclMin: r = redist::reduction::min; break;
    default: return MPI_OP_NULL;
  }
  switch (t) {
    case ncclInt8: return redist::detail::mpi_reduce_op<std::int8_t>(r);
    case ncclUint8: return redist::detail::mpi_reduce_op<std::uint8_t>(r);
    case ncclBfloat16: return redist::detail::mpi_reduce_op<redist::bfloat16>(r);
    case ncclFloat16: return redist::detail::mpi_reduce_op<redist::float16>(r);
    default: return redist::detail::mpi_predefined_op(r);
  }
}
/// ncclAvg after the sum: every element divided by the communicator's size (integers
/// truncate, as NCCL's sum-then-divide for integer types does).
template <class T>
void divide(void* buf, std::size_t count, int n) {
  T* v = static_cast<T*>(buf);
  using W = std::conditional_t<!std::is_integral_v<T>, T,  // floating, bfloat16, float16
                               std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;
  for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<T>(static_cast<W>(v[i]) / static_cast<W>(n));
}
void divide_by_size(ncclRedOp_t op, ncclDataType_t t, void* buf, std::size_t count, int n) {
  if (op != ncclAvg) return;
  switch (t) {
    case ncclInt8: return divide<std::int8_t>(buf, count, n);
    case ncclUint8: return divide<std::uint8_t>(buf, count, n);
    case ncclInt32: return divide<std::int32_t>(buf, count, n);
    case ncclUint32: return divide<std::uint32_t>(buf, count, n);
    case ncclInt64: return divide<std::int64_t>(buf, count, n);
    case ncclUint64: return divide<std::uint64_t>(buf, count, n);
    case ncclFloat32: return divide<float>(buf, count, n);
    case ncclFloat64: return divide<double>(buf, count, n);
    case ncclBfloat16: return divide<redist::bfloat16>(buf, count, n);
    case ncclFloat16: return divide<redist::float16>(buf, count, n);
    default: return;
  }
}

/// Checks common to every NCCL data call: a communicator, device buffers of its device.
ncclResult_t check_call(const char* fn, ncclComm_t comm, const void* send, std::size_t sbytes, const void* recv,
                        std::size_t rbytes) {
  if (comm == nullptr) return nccl_fail(ncclInvalidArgument, std::string(fn) + " : comm argument is NULL");
  const allocation* s = sbytes ? find(send, sbytes) : nullptr;
  const allocation* r = rbytes ? find(recv, rbytes) : nullptr;
  if ((sbytes && (s == nullptr || s->device != comm->device)) || (rbytes && (r == nullptr || r->device != comm->device)))
    return nccl_fail(ncclInvalidArgument, std::string(fn) + " : buffer is not device memory of the communicator's "
                                                             "device, or the access runs past its allocation");
  if (sbytes > INT_MAX || rbytes > INT_MAX) return nccl_fail(ncclInvalidArgument, std::string(fn) + " : too large");
  return ncclSuccess;
}

ncclResult_t mpi(int rc, const char* fn) {
  return rc == MPI_SUCCESS ? ncclSuccess : nccl_fail(ncclSystemError, std::string(fn) + " : MPI failed");
}

ncclResult_t flush() {
  for (const p2p& op : pending) before_nccl(op.stream);
  std::vector<MPI_Request> reqs;
  std::vector<p2p> local;
  for (const p2p& op : pending) {
    if (op.comm->mpi == MPI_COMM_NULL) {
      local.push_back(op);
      continue;
    }
    MPI_Request q;
    const int n = static_cast<int>(op.bytes);
    if (op.send) MPI_Isend(op.sbuf, n, MPI_BYTE, op.peer, 4242, op.comm->mpi, &q);
    else MPI_Irecv(op.rbuf, n, MPI_BYTE, op.peer, 4242, op.comm->mpi, &q);
    reqs.push_back(q);
  }
  // One-rank communicators: the k-th send to self matches the k-th receive.
  std::vector<const p2p*> sends, recvs;
  for (const p2p& op : local) (op.send ? sends : recvs).push_back(&op);
  pending.clear();
  if (sends.size() != recvs.size()) return nccl_fail(ncclInvalidUsage, "GroupEnd : unmatched send/receive to self");
  for (std::size_t i = 0; i < sends.size(); ++i) {
    if (sends[i]->bytes != recvs[i]->bytes) return nccl_fail(ncclInvalidUsage, "GroupEnd : send/receive sizes differ");
    std::memmove(recvs[i]->rbuf, sends[i]->sbuf, sends[i]->bytes);
  }
  if (!reqs.empty()) return mpi(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "GroupEnd");
  return ncclSuccess;
}

}  // namespace

// ---- CUDA runtime ----

cudaError_t cudaGetDeviceCount(int* count) {
  *count = device_count();
  return cudaSuccess;
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    default: return "unknown error";
  }
}
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidPitchValue: return "cudaErrorInvalidPitchValue";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    default: return "cudaErrorUnknown";
  }
}
cudaError_t cudaGetLastError(void) {
  const cudaError_t e = last_cuda;
  last_cuda = cudaSuccess;
  return e;
}
cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  current_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = current_device;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  switch (attr) {  // an H100's, but the maximum pitch
    case cudaDevAttrMaxPitch: *value = max_pitch(); return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *value = 132; return cudaSuccess;
    default: return fail(cudaErrorInvalidValue);
  }
}
cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  *total = emulated_memory;
  std::size_t used = 0;
  for (const auto& [p, a] : registry())
    if (a.device == current_device) used += a.size;
  *free = *total - std::min(used, *total);
  return cudaSuccess;
}
cudaError_t cudaDeviceGetPCIBusId(char* bus, int len, int device) {
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  std::snprintf(bus, static_cast<std::size_t>(len), "0000:%02x:00.0", device);
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t size) {
  if (size > (std::size_t{1} << 40)) return fail(cudaErrorMemoryAllocation);
  *p = std::malloc(size ? size : 1);
  if (*p == nullptr) return fail(cudaErrorMemoryAllocation);
  registry()[reinterpret_cast<std::uintptr_t>(*p)] = {size, current_device};
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t size) {
  *p = std::malloc(size ? size : 1);
  if (*p == nullptr) return fail(cudaErrorMemoryAllocation);
  registry()[reinterpret_cast<std::uintptr_t>(*p)] = {size, -1};
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  if (p == nullptr) return cudaSuccess;
  run_everything();  // CUDA's cudaFree waits for the device
  auto it = registry().find(reinterpret_cast<std::uintptr_t>(p));
  if (it == registry().end() || it->second.device < 0) return fail(cudaErrorInvalidDevicePointer);
  registry().erase(it);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) {
  run_everything();
  auto it = registry().find(reinterpret_cast<std::uintptr_t>(p));
  if (it == registry().end() || it->second.device >= 0) return fail(cudaErrorInvalidValue);
  registry().erase(it);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  *a = cudaPointerAttributes{};
  const allocation* al = find(p, 1);
  a->type = al == nullptr ? cudaMemoryTypeUnregistered : al->device >= 0 ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
  a->device = al != nullptr && al->device >= 0 ? al->device : -1;
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  if (!copy_ok(dst, n, src, n, kind)) return fail(cudaErrorInvalidValue);
  if (n == 0) return cudaSuccess;
  if (find(src, n) == nullptr) {  // from pageable host memory: staged now
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + n);
    enqueue(s, [=] { std::memcpy(dst, staged->data(), n); });
  } else if (find(dst, n) == nullptr) {  // to pageable host memory: returns once copied
    enqueue(s, [=] { std::memmove(dst, src, n); });
    if (s != nullptr) run_all(s);
  } else {
    enqueue(s, [=] { std::memmove(dst, src, n); });
  }
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return cudaMemcpyAsync(dst, src, n, kind, nullptr);
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t s) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (width > dpitch || width > spitch || dpitch > static_cast<std::size_t>(max_pitch()) ||
      spitch > static_cast<std::size_t>(max_pitch()))
    return fail(cudaErrorInvalidPitchValue);
  if (!copy_ok(dst, (height - 1) * dpitch + width, src, (height - 1) * spitch + width, kind))
    return fail(cudaErrorInvalidValue);
  if (kind != cudaMemcpyDeviceToDevice) return fail(cudaErrorInvalidValue);  // the backend's only use
  enqueue(s, [=] {
    for (std::size_t r = 0; r < height; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
  });
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (!is_device(p, n)) return fail(cudaErrorInvalidValue);
  enqueue(s, [=] { std::memset(p, v, n); });
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int v, size_t n) { return cudaMemsetAsync(p, v, n, nullptr); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  *s = new CUstream_st{};
  (*s)->device = current_device;
  (*s)->blocking = (flags & cudaStreamNonBlocking) == 0;
  sched().streams.push_back(*s);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (s == nullptr) return fail(cudaErrorInvalidValue);
  run_all(s);  // CUDA lets enqueued work finish
  auto& v = sched().streams;
  v.erase(std::remove(v.begin(), v.end(), s), v.end());
  for (cudaEvent_t e : sched().events)
    if (e->s == s) e->s = nullptr;  // complete
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (s != nullptr) run_all(s);
  else run_everything();
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
  run_everything();
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) {
  *e = new CUevent_st{};
  sched().events.insert(*e);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, 0); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (sched().events.erase(e) == 0) return fail(cudaErrorInvalidValue);
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (sched().events.count(e) == 0) return fail(cudaErrorInvalidValue);
  if (s == nullptr) run_everything();  // the legacy stream: complete once everything before it is
  e->s = s;
  e->at = s != nullptr ? s->enqueued : 0;
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  if (sched().events.count(e) == 0) return fail(cudaErrorInvalidValue);
  if (e->s == nullptr || e->s == s) return cudaSuccess;  // complete, or in s's own order
  const cudaStream_t of = e->s;
  const std::uint64_t at = e->at;
  enqueue(s, [of, at] {
    if (std::find(sched().streams.begin(), sched().streams.end(), of) != sched().streams.end()) run_until(of, at);
  });
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (sched().events.count(e) == 0) return fail(cudaErrorInvalidValue);
  if (e->s != nullptr) run_until(e->s, e->at);
  return cudaSuccess;
}

// Kernels: a library is any non-empty code (NVRTC's real output); its kernels are those of
// backends/cuda_strided.hpp, run here on the CPU with the same arguments, every unit's
// source and destination bounds-checked like a copy.
struct CUlib_st {};
struct CUkern_st {
  bool transpose;
  std::size_t unit;
  bool wide;
  bool batch = false;  // redist_batch: its argument is a redist::detail::strided_jobs
  bool cast = false;   // redist_cast_batch: its argument is a redist::detail::cast_jobs
};
cudaError_t cudaLibraryLoadData(cudaLibrary_t* lib, const void* code, cudaJitOption*, void**, unsigned int,
                                cudaLibraryOption*, void**, unsigned int) {
  if (code == nullptr || *static_cast<const char*>(code) == '\0') return fail(cudaErrorInvalidValue);
  static CUlib_st library;  // one for the process: the backend never unloads it
  *lib = &library;
  return cudaSuccess;
}
cudaError_t cudaLibraryGetKernel(cudaKernel_t* k, cudaLibrary_t lib, const char* name) {
  static std::vector<CUkern_st> kernels = [] {
    std::vector<CUkern_st> v;
    for (bool t : {false, true})
      for (std::size_t u : {16, 8, 4, 2, 1})
        for (bool w : {false, true}) v.push_back({t, u, w});
    return v;
  }();
  static CUkern_st batch{false, 0, true, true}, cast{false, 0, true, false, true};
  if (lib == nullptr) return fail(cudaErrorInvalidValue);
  if (std::string(name) == "redist_batch" || std::string(name) == "redist_cast_batch") {
    *k = std::string(name) == "redist_batch" ? &batch : &cast;
    return cudaSuccess;
  }
  for (auto& x : kernels)
    if (std::string(name) ==
        (x.transpose ? "redist_transpose_" : "redist_strided_") + std::to_string(x.unit) + (x.wide ? "_64" : "_32")) {
      *k = &x;
      return cudaSuccess;
    }
  return fail(cudaErrorSymbolNotFound);
}
namespace {
/// The copy of count x rows runs of `width` units of u bytes (strides in units), checked;
/// copied only if `go` (a launch checks its arguments when called, then copies when its
/// stream runs it).
cudaError_t run_units(const char* src, char* dst, std::uint64_t u, std::uint64_t count, std::uint64_t rows,
                      std::uint64_t width, std::uint64_t ss, std::uint64_t sp, std::uint64_t ds, std::uint64_t dp,
                      bool go) {
  if (count == 0 || rows == 0 || width == 0) return cudaSuccess;
  const std::uint64_t slast = ((count - 1) * ss + (rows - 1) * sp + width) * u,
                      dlast = ((count - 1) * ds + (rows - 1) * dp + width) * u;
  if (reinterpret_cast<std::uintptr_t>(src) % u != 0 || reinterpret_cast<std::uintptr_t>(dst) % u != 0 ||
      !is_device(src, slast) || !is_device(dst, dlast))
    return fail(cudaErrorInvalidValue);  // misaligned units or outside the allocations
  if (!go) return cudaSuccess;
  for (std::uint64_t i = 0; i < count; ++i)
    for (std::uint64_t j = 0; j < rows; ++j)
      std::memcpy(dst + (i * ds + j * dp) * u, src + (i * ss + j * sp) * u, width * u);
  return cudaSuccess;
}
/// A launch of redist_strided_* / redist_transpose_*: its arguments (a[]: the integers,
/// 32- or 64-bit by the kernel) read when launched.
struct strided_launch {
  const CUkern_st* k;
  const char* src;
  char* dst;
  std::uint64_t a[7];
  cudaError_t run(bool go) const {
    if (k->transpose)  // (na, nb, src_a, src_b, dst_a, dst_b): runs of one unit
      return run_units(src, dst, k->unit, a[0], a[1], 1, a[2], a[3], a[4], a[5], go);
    const std::uint64_t width = a[0], rows = a[1], total = a[2];
    if (width == 0 || rows == 0 || total % (width * rows) != 0) return fail(cudaErrorInvalidValue);
    return run_units(src, dst, k->unit, total / (width * rows), rows, width, a[4], a[3], a[6], a[5], go);
  }
};
template <class I>
strided_launch strided_args(const CUkern_st& k, void** args) {
  strided_launch l{&k, *static_cast<const char* const*>(args[0]), *static_cast<char* const*>(args[1]), {}};
  for (int i = 0; i < (k.transpose ? 6 : 7); ++i) l.a[i] = *static_cast<const I*>(args[2 + i]);
  return l;
}
/// redist_batch: block row y copies job[y] (units of job.unit bytes, 64-bit indices); one
/// row per job, each job checked like a copy.
cudaError_t batch_kernel(dim3 grid, const redist::detail::strided_jobs& b, bool go) {
  if (b.n == 0 || b.n > b.job.size() || grid.y != b.n) return fail(cudaErrorInvalidValue);
  for (std::uint32_t y = 0; y < b.n; ++y) {
    const redist::detail::strided_job& j = b.job[y];
    const std::uint32_t u = j.unit;
    if ((u != 1 && u != 2 && u != 4 && u != 8 && u != 16) || j.width == 0 || j.rows == 0 ||
        j.total % (j.width * j.rows) != 0)
      return fail(cudaErrorInvalidValue);
    const cudaError_t rc = run_units(static_cast<const char*>(j.src), static_cast<char*>(j.dst), u,
                                     j.total / (j.width * j.rows), j.rows, j.width, j.src_step, j.src_pitch,
                                     j.dst_step, j.dst_pitch, go);
    if (rc != cudaSuccess) return rc;
  }
  return cudaSuccess;
}
/// redist_cast_batch: block row y converts job[y] (strides in elements of its types, any
/// alignment), each job's source and destination bounds-checked, then converted by the
/// host's conversions (runtime/cast.hpp), whose text the kernel compiles.
cudaError_t cast_kernel(dim3 grid, const redist::detail::cast_jobs& b, bool go) {
  if (b.n == 0 || b.n > b.job.size() || grid.y != b.n) return fail(cudaErrorInvalidValue);
  constexpr redist::element_type types[4] = {redist::element_type::f64, redist::element_type::f32,
                                             redist::element_type::bf16, redist::element_type::f16};
  for (std::uint32_t y = 0; y < b.n; ++y) {
    const redist::detail::cast_job& j = b.job[y];
    if (j.from > 3 || j.to > 3 || j.width == 0 || j.rows == 0 || j.total % (j.width * j.rows) != 0)
      return fail(cudaErrorInvalidValue);
    redist::detail::cast_copy x;
    x.c.count = j.total / (j.width * j.rows);
    x.c.rows = j.rows;
    x.c.width = j.width;
    x.c.src_pitch = j.src_pitch, x.c.src_step = j.src_step, x.c.dst_pitch = j.dst_pitch, x.c.dst_step = j.dst_step;
    x.src = static_cast<const std::byte*>(j.src);
    x.dst = static_cast<std::byte*>(j.dst);
    x.from = types[j.from];
    x.to = types[j.to];
    const std::uint64_t fe = redist::element_type_bytes(x.from), te = redist::element_type_bytes(x.to);
    const std::uint64_t last = x.c.count - 1, row = x.c.rows - 1;
    if (!is_device(j.src, (last * j.src_step + row * j.src_pitch + j.width) * fe) ||
        !is_device(j.dst, (last * j.dst_step + row * j.dst_pitch + j.width) * te))
      return fail(cudaErrorInvalidValue);  // outside the allocations
    if (go) redist::detail::host_cast_copy(x);
  }
  return cudaSuccess;
}
}  // namespace
cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t, cudaStream_t s) {
  const auto* k = static_cast<const CUkern_st*>(func);
  if (k == nullptr || grid.x == 0 || grid.y == 0 || block.x * block.y * block.z == 0 ||
      block.x * block.y * block.z > 1024)
    return fail(cudaErrorInvalidValue);
  if (k->batch) {  // the argument is passed by value: copied now
    auto jobs = std::make_shared<redist::detail::strided_jobs>(*static_cast<const redist::detail::strided_jobs*>(args[0]));
    if (const cudaError_t e = batch_kernel(grid, *jobs, false); e != cudaSuccess) return e;
    enqueue(s, [grid, jobs] { (void)batch_kernel(grid, *jobs, true); });
    return cudaSuccess;
  }
  if (k->cast) {
    auto jobs = std::make_shared<redist::detail::cast_jobs>(*static_cast<const redist::detail::cast_jobs*>(args[0]));
    if (const cudaError_t e = cast_kernel(grid, *jobs, false); e != cudaSuccess) return e;
    enqueue(s, [grid, jobs] { (void)cast_kernel(grid, *jobs, true); });
    return cudaSuccess;
  }
  const strided_launch l = k->wide ? strided_args<std::uint64_t>(*k, args) : strided_args<std::uint32_t>(*k, args);
  if (const cudaError_t e = l.run(false); e != cudaSuccess) return e;
  enqueue(s, [l] { (void)l.run(true); });
  return cudaSuccess;
}

// ---- NCCL ----

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    default: return "unknown result code";
  }
}
const char* ncclGetLastError(ncclComm_t) { return last_nccl.c_str(); }

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return nccl_fail(ncclInvalidArgument, "GetUniqueId : out argument is NULL");
  std::memset(id, 0, sizeof *id);
  std::strcpy(id->internal, "redist nccl emulator");
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  auto* c = new ncclComm{nranks, rank, current_device, MPI_COMM_NULL};
  if (nranks > 1) {
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
      delete c;
      return nccl_fail(ncclInvalidUsage, "CommInitRank : the emulator needs MPI for more than one rank");
    }
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c->mpi);
    int size = 0;
    MPI_Comm_size(c->mpi, &size);
    if (size != nranks) {
      MPI_Comm_free(&c->mpi);
      delete c;
      return nccl_fail(ncclInvalidUsage, "CommInitRank : the emulator's communicators span MPI_COMM_WORLD");
    }
  }
  *comm = c;
  return ncclSuccess;
}
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  if (ndev != 1) return nccl_fail(ncclInvalidUsage, "CommInitAll : the emulator supports one device");
  *comm = new ncclComm{1, 0, devlist != nullptr ? devlist[0] : 0, MPI_COMM_NULL};
  return ncclSuccess;
}
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t*) {
  if (comm == nullptr) return nccl_fail(ncclInvalidArgument, "CommSplit : comm argument is NULL");
  if (comm->mpi == MPI_COMM_NULL) {
    *newcomm = color == NCCL_SPLIT_NOCOLOR ? nullptr : new ncclComm{1, 0, comm->device, MPI_COMM_NULL};
    return ncclSuccess;
  }
  MPI_Comm c = MPI_COMM_NULL;
  if (MPI_Comm_split(comm->mpi, color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color, key, &c) != MPI_SUCCESS)
    return nccl_fail(ncclSystemError, "CommSplit : MPI_Comm_split failed");
  if (c == MPI_COMM_NULL) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  int size = 0, rank = 0;
  MPI_Comm_size(c, &size);
  MPI_Comm_rank(c, &rank);
  *newcomm = new ncclComm{size, rank, comm->device, c};
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin && comm->mpi != MPI_COMM_NULL) MPI_Comm_free(&comm->mpi);
  delete comm;
  return ncclSuccess;
}
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr) return nccl_fail(ncclInvalidArgument, "CommCount : comm argument is NULL");
  *count = comm->size;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr) return nccl_fail(ncclInvalidArgument, "CommUserRank : comm argument is NULL");
  *rank = comm->rank;
  return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr) return nccl_fail(ncclInvalidArgument, "CommCuDevice : comm argument is NULL");
  *device = comm->device;
  return ncclSuccess;
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t t, ncclComm_t comm, cudaStream_t s) {
  const std::size_t b = count * type_size(t);
  if (ncclResult_t r = check_call("AllGather", comm, send, b, recv, b * (comm ? comm->size : 1)); r != ncclSuccess) return r;
  before_nccl(s);
  if (comm->mpi == MPI_COMM_NULL) {
    std::memmove(recv, send, b);
    return ncclSuccess;
  }
  const int n = static_cast<int>(b);
  return mpi(MPI_Allgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm->mpi), "AllGather");
}
ncclResult_t ncclAlltoAll(const void* send, void* recv, size_t count, ncclDataType_t t, ncclComm_t comm, cudaStream_t s) {
  const std::size_t b = count * type_size(t), all = b * (comm ? comm->size : 1);
  if (ncclResult_t r = check_call("AlltoAll", comm, send, all, recv, all); r != ncclSuccess) return r;
  before_nccl(s);
  if (comm->mpi == MPI_COMM_NULL) {
    std::memmove(recv, send, b);
    return ncclSuccess;
  }
  const int n = static_cast<int>(b);
  return mpi(MPI_Alltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm->mpi), "AlltoAll");
}
ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t s) {
  const std::size_t b = count * type_size(t);
  if (ncclResult_t r = check_call("AllReduce", comm, send, b, recv, b); r != ncclSuccess) return r;
  if (mpi_type(t) == MPI_DATATYPE_NULL || mpi_op(op, t) == MPI_OP_NULL)
    return nccl_fail(ncclInvalidArgument, "AllReduce : datatype or operation not emulated");
  before_nccl(s);
  if (comm->mpi == MPI_COMM_NULL) {
    std::memmove(recv, send, b);
    return ncclSuccess;
  }
  const ncclResult_t r = mpi(
      MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, static_cast<int>(count), mpi_type(t), mpi_op(op, t), comm->mpi),
      "AllReduce");
  if (r == ncclSuccess) divide_by_size(op, t, recv, count, comm->size);
  return r;
}
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recvcount, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t s) {
  const std::size_t b = recvcount * type_size(t);
  if (ncclResult_t r = check_call("ReduceScatter", comm, send, b * (comm ? comm->size : 1), recv, b); r != ncclSuccess)
    return r;
  if (mpi_type(t) == MPI_DATATYPE_NULL || mpi_op(op, t) == MPI_OP_NULL)
    return nccl_fail(ncclInvalidArgument, "ReduceScatter : datatype or operation not emulated");
  before_nccl(s);
  if (comm->mpi == MPI_COMM_NULL) {
    std::memmove(recv, send, b);
    return ncclSuccess;
  }
  const ncclResult_t r = mpi(
      MPI_Reduce_scatter_block(send, recv, static_cast<int>(recvcount), mpi_type(t), mpi_op(op, t), comm->mpi),
      "ReduceScatter");
  if (r == ncclSuccess) divide_by_size(op, t, recv, recvcount, comm->size);
  return r;
}
ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t s) {
  const std::size_t b = count * type_size(t);
  if (ncclResult_t r = check_call("Send", comm, send, b, nullptr, 0); r != ncclSuccess) return r;
  if (peer < 0 || peer >= comm->size) return nccl_fail(ncclInvalidArgument, "Send : peer out of range");
  pending.push_back({true, send, nullptr, b, peer, comm, s});
  return group_depth == 0 ? flush() : ncclSuccess;
}
ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t s) {
  const std::size_t b = count * type_size(t);
  if (ncclResult_t r = check_call("Recv", comm, nullptr, 0, recv, b); r != ncclSuccess) return r;
  if (peer < 0 || peer >= comm->size) return nccl_fail(ncclInvalidArgument, "Recv : peer out of range");
  pending.push_back({false, nullptr, recv, b, peer, comm, s});
  return group_depth == 0 ? flush() : ncclSuccess;
}
ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  if (group_depth == 0) return nccl_fail(ncclInvalidUsage, "GroupEnd : not in a group");
  return --group_depth == 0 ? flush() : ncclSuccess;
}
