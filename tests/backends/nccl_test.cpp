// The NCCL backend (backends/nccl.hpp), the parts that need no GPU: run by ctest
// everywhere, CI included. Error reporting of failed CUDA and NCCL calls, the checks that
// refuse misuse before any CUDA or NCCL call, the "no CUDA device" error, the element
// types, and the strided device copies (the 2-D copies the device would issue, executed
// here by an emulator of cudaMemcpy2D that enforces its preconditions) against the host
// pack. The GPU parts are nccl_gpu_test.cpp and nccl_mpi_test.cpp.
#include "redist/backends/nccl.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "redist/runtime/executor.hpp"
#include "redist/runtime/pack.hpp"

namespace {

template <class E, class A>
concept runs_to_owned_tile = requires(E& ex, const A& in) { ex.run(in); };
template <class E, class A>
concept runs_into = requires(E& ex, const A& in, A& out) { ex.run(in, out); };

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST_CASE("a failed CUDA call names the call, file, line and CUDA's reason", "[nccl][errors]") {
  const cudaError_t rc = cudaSetDevice(-1);  // fails with or without a device
  (void)cudaGetLastError();
  REQUIRE(rc != cudaSuccess);
  int line = 0;
  try {
    line = __LINE__ + 1;
    REDIST_CUDA_CHECK(cudaSetDevice(-1));
    FAIL("no exception");
  } catch (const redist::device_error& e) {
    CHECK(e.call() == "cudaSetDevice(-1)");
    CHECK(ends_with(e.file(), "nccl_test.cpp"));
    CHECK(e.line() == line);
    CHECK(e.reason() == cudaGetErrorString(rc));
    CHECK(e.detail() == cudaGetErrorName(rc));
    CHECK(e.code() == redist::errc::runtime);
    CHECK(std::string(e.what()) == "cudaSetDevice(-1) failed at " + e.file() + ":" + std::to_string(line) + ": " +
                                       cudaGetErrorString(rc) + " [" + cudaGetErrorName(rc) + "]");
  }
}

TEST_CASE("a failed NCCL call names the call, file, line, ncclGetErrorString and ncclGetLastError", "[nccl][errors]") {
  int n = 0;
  int line = 0;
  try {
    line = __LINE__ + 1;
    REDIST_NCCL_CHECK(ncclCommCount(nullptr, &n));
    FAIL("no exception");
  } catch (const redist::redist_error& base) {
    const auto* e = dynamic_cast<const redist::device_error*>(&base);
    REQUIRE(e != nullptr);
    CHECK(e->call() == "ncclCommCount(nullptr, &n)");
    CHECK(ends_with(e->file(), "nccl_test.cpp"));
    CHECK(e->line() == line);
    CHECK(e->reason() == ncclGetErrorString(ncclInvalidArgument));
    CHECK(e->detail() == std::string("last NCCL error: ") + ncclGetLastError(nullptr));
    CHECK(e->detail().size() > std::string("last NCCL error: ").size());
    CHECK(std::string(e->what()) == "ncclCommCount(nullptr, &n) failed at " + e->file() + ":" + std::to_string(line) +
                                        ": " + ncclGetErrorString(ncclInvalidArgument) + " [" + e->detail() + "]");
  }
  CHECK(redist::device_error::describe("f(x)", "a.cpp", 7, "bad", "") == "f(x) failed at a.cpp:7: bad");
  CHECK(redist::device_error::describe("f(x)", "a.cpp", 7, "bad", "why") == "f(x) failed at a.cpp:7: bad [why]");
}

TEST_CASE("no CUDA device: a clear error, before NCCL is touched", "[nccl][errors]") {
  CHECK_THROWS_WITH(redist::nccl_backend(static_cast<ncclComm_t>(nullptr)), "nccl backend: the NCCL communicator is null");
  std::string why;
  const int count = redist::detail::cuda_device_count(&why);
  if (count > 0) {
    WARN("this machine has " << count << " CUDA device(s): the no-device checks are skipped (nccl_gpu_test runs)");
    CHECK(redist::detail::require_cuda_device("nccl backend") == count);
    return;
  }
  int n = -1;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  (void)cudaGetLastError();
  const std::string reason = rc == cudaSuccess ? std::string("cudaGetDeviceCount found 0 devices")
                                               : std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
  CHECK(why == reason);
  const std::string expected = "nccl backend: no CUDA device (" + reason + ")";
  CHECK_THROWS_WITH(redist::detail::require_cuda_device("nccl backend"), expected);
  // A communicator that is not null is not looked at when there is no device.
  int not_a_communicator = 0;
  CHECK_THROWS_WITH(redist::nccl_backend(reinterpret_cast<ncclComm_t>(&not_a_communicator)), expected);
}

TEST_CASE("group lists and permutations are checked before any NCCL call", "[nccl][errors]") {
  using redist::rank_t;
  using redist::detail::check_partition;
  using redist::detail::check_permutation;
  const std::vector<rank_t> four = {2, 0, 3, 1};
  CHECK_NOTHROW(check_partition("nccl backend", four, 2, 4));
  CHECK_NOTHROW(check_partition("nccl backend", four, 4, 4));
  CHECK_NOTHROW(check_partition("nccl backend", four, 2, 8));  // the ranks holding tiles of a placed program
  CHECK_THROWS_WITH(check_partition("nccl backend", four, 2, 2),
                    "nccl backend: 4 ranks cannot form groups of 2 over 2 ranks");
  CHECK_THROWS_WITH(check_partition("nccl backend", four, 3, 4),
                    "nccl backend: 4 ranks cannot form groups of 3 over 4 ranks");
  CHECK_THROWS_WITH(check_partition("nccl backend", four, 0, 4),
                    "nccl backend: 4 ranks cannot form groups of 0 over 4 ranks");
  CHECK_THROWS_WITH(check_partition("nccl backend", std::vector<rank_t>{0, 4, 1, 2}, 2, 4),
                    "nccl backend: rank 4 is not among the 4 ranks of the communicator");
  CHECK_THROWS_WITH(check_partition("nccl backend", std::vector<rank_t>{0, 1, 1, 2}, 2, 4),
                    "nccl backend: the groups list rank 1 twice");

  const std::vector<rank_t> dest = {1, 2, 3, 0};  // r's block goes to dest[r]
  CHECK(check_permutation("nccl backend", dest, 4, 0) == std::pair<rank_t, rank_t>{1, 3});
  CHECK(check_permutation("nccl backend", dest, 4, 2) == std::pair<rank_t, rank_t>{3, 1});
  CHECK(check_permutation("nccl backend", std::vector<rank_t>{0, 1}, 2, 1) == std::pair<rank_t, rank_t>{1, 1});
  CHECK_THROWS_WITH(check_permutation("nccl backend", dest, 8, 0),
                    "nccl backend: permute needs one destination per rank (8), got 4");
  CHECK_THROWS_WITH(check_permutation("nccl backend", std::vector<rank_t>{1, 1, 3, 0}, 4, 0),
                    "nccl backend: permute destinations are not a permutation of the ranks");
  CHECK_THROWS_WITH(check_permutation("nccl backend", std::vector<rank_t>{1, 4, 3, 0}, 4, 0),
                    "nccl backend: permute destinations are not a permutation of the ranks");

  CHECK(redist::detail::block_bytes<double>("nccl backend", 5) == 40);
  CHECK_THROWS_WITH(redist::detail::block_bytes<double>("nccl backend", SIZE_MAX / 4),
                    "nccl backend: a block of " + std::to_string(SIZE_MAX / 4) + " elements of 8 bytes overflows");
}

TEST_CASE("element types: any trivially copyable type moves, NCCL's arithmetic types add up", "[nccl]") {
  STATIC_REQUIRE(redist::nccl_datatype<float>::value == ncclFloat32);
  STATIC_REQUIRE(redist::nccl_datatype<double>::value == ncclFloat64);
  STATIC_REQUIRE(redist::nccl_datatype<std::int8_t>::value == ncclInt8);
  STATIC_REQUIRE(redist::nccl_datatype<std::uint8_t>::value == ncclUint8);
  STATIC_REQUIRE(redist::nccl_datatype<std::int32_t>::value == ncclInt32);
  STATIC_REQUIRE(redist::nccl_datatype<std::uint32_t>::value == ncclUint32);
  STATIC_REQUIRE(redist::nccl_datatype<std::int64_t>::value == ncclInt64);
  STATIC_REQUIRE(redist::nccl_datatype<std::uint64_t>::value == ncclUint64);
  STATIC_REQUIRE(redist::nccl_reducible<float>);
  STATIC_REQUIRE(redist::nccl_datatype<redist::bfloat16>::value == ncclBfloat16);  // runtime/half.hpp
  STATIC_REQUIRE(redist::nccl_datatype<redist::float16>::value == ncclFloat16);
  STATIC_REQUIRE(redist::nccl_reducible<redist::bfloat16>);
  STATIC_REQUIRE_FALSE(redist::nccl_reducible<std::int16_t>);  // NCCL has no 16-bit integers
  STATIC_REQUIRE_FALSE(redist::nccl_reducible<bool>);
  struct pair16 {
    std::int16_t a, b;
  };
  STATIC_REQUIRE(redist::backend_for<redist::nccl_backend, pair16>);
  STATIC_REQUIRE(redist::reducing_backend_for<redist::nccl_backend, std::uint64_t>);
  STATIC_REQUIRE_FALSE(redist::reducing_backend_for<redist::nccl_backend, std::int16_t>);
  // Device memory is not host memory: no executor overload hands out owned host tiles.
  STATIC_REQUIRE_FALSE(redist::cuda_memory::host_accessible);
  STATIC_REQUIRE(std::is_same_v<redist::memory_space_t<redist::nccl_backend>, redist::cuda_memory>);
  using nccl_executor = redist::executor<float, redist::nccl_backend>;
  STATIC_REQUIRE_FALSE(runs_to_owned_tile<nccl_executor, redist::darray<float>>);
  STATIC_REQUIRE(runs_into<nccl_executor, redist::darray<float>>);
}

namespace {

/// What the device does with a device_copy_shape, emulated in host memory: every 2-D copy
/// must satisfy cudaMemcpy2D's preconditions (width <= pitch <= max pitch).
struct branches {
  std::uint64_t two_d = 0, swapped = 0, per_run = 0;
};

template <class T>
void emulate_device_copy(const redist::detail::strided_copy& plan, std::size_t max_pitch, const T* src, T* dst,
                         branches& seen) {
  const redist::detail::device_copy_shape shape = redist::detail::device_copy(plan, sizeof(T), max_pitch);
  const redist::detail::strided_copy& c = shape.copy;
  const std::size_t s = sizeof(T);
  seen.per_run += shape.per_run ? 1 : 0;
  seen.two_d += !shape.per_run && c.rows > 1 ? 1 : 0;
  seen.swapped += plan.count != plan.rows && c.count == plan.rows ? 1 : 0;
  for (std::uint64_t i = 0; i < c.count; ++i) {
    T* dp = dst + c.dst + i * c.dst_step;
    const T* sp = src + c.src + i * c.src_step;
    if (shape.per_run || c.rows == 1) {
      for (std::uint64_t j = 0; j < c.rows; ++j) std::memcpy(dp + j * c.dst_pitch, sp + j * c.src_pitch, c.width * s);
      continue;
    }
    REQUIRE(c.width <= c.src_pitch);
    REQUIRE(c.width <= c.dst_pitch);
    REQUIRE(c.src_pitch * s <= max_pitch);
    REQUIRE(c.dst_pitch * s <= max_pitch);
    for (std::uint64_t j = 0; j < c.rows; ++j) std::memcpy(dp + j * c.dst_pitch, sp + j * c.src_pitch, c.width * s);
  }
}

}  // namespace

TEST_CASE("the device's strided copies are the host's pack, in every orientation and pitch limit", "[nccl][pack]") {
  std::mt19937_64 rng(0x6e63636c);
  std::uint64_t cases = 0;
  branches seen;
  for (int iter = 0; iter < 3000; ++iter) {
    const int rank = 1 + static_cast<int>(rng() % 5);
    std::vector<std::uint64_t> ext(static_cast<std::size_t>(rank));
    for (auto& e : ext) e = 1 + rng() % 5;
    const int d = static_cast<int>(rng() % static_cast<std::uint64_t>(rank));
    const std::uint64_t n = 1 + rng() % 4;
    ext[static_cast<std::size_t>(d)] *= n;
    std::vector<std::uint64_t> cext = ext;
    cext[static_cast<std::size_t>(d)] /= n;
    std::uint64_t size = 1;
    for (auto e : ext) size *= e;
    // Limits from "anything goes" down to "no 2-D copy fits", forcing every branch.
    const std::size_t max_pitch = iter % 3 == 0 ? SIZE_MAX : (1 + rng() % 64) * sizeof(int);
    INFO("tile " << ext.size() << "-d, d " << d << ", n " << n << ", max pitch " << max_pitch);
    std::vector<int> tile(size);
    for (std::size_t i = 0; i < tile.size(); ++i) tile[i] = static_cast<int>(i) + 7;

    std::vector<int> want(size), got(size, -1);
    redist::split_all<int>(tile, ext, d, n, want);
    emulate_device_copy(redist::detail::split_all_plan(ext, d, n, size, size), max_pitch, tile.data(), got.data(),
                        seen);
    REQUIRE(got == want);

    std::vector<int> back(size, -1);
    emulate_device_copy(redist::detail::concat_all_plan(cext, d, n, size, size), max_pitch, want.data(), back.data(),
                        seen);
    REQUIRE(back == tile);

    const std::uint64_t m = rng() % n;
    std::vector<int> chunk(size / n), chunk_got(size / n, -1);
    redist::split_copy<int>(tile, ext, d, n, m, chunk);
    emulate_device_copy(redist::detail::split_copy_plan(ext, d, n, m, size, size / n), max_pitch, tile.data(),
                        chunk_got.data(), seen);
    REQUIRE(chunk_got == chunk);

    std::vector<int> placed(size, -1), placed_got(size, -1);
    redist::concat_copy<int>(chunk, cext, d, n, m, placed);
    emulate_device_copy(redist::detail::concat_copy_plan(cext, d, n, m, size / n, size), max_pitch, chunk.data(),
                        placed_got.data(), seen);
    REQUIRE(placed_got == placed);
    ++cases;
  }
  CHECK(cases == 3000);
  // Every branch of the device path ran: 2-D copies, the swapped orientation, one copy per run.
  CHECK(seen.two_d > 0);
  CHECK(seen.swapped > 0);
  CHECK(seen.per_run > 0);
}

TEST_CASE("a split along one dimension is one 2-D copy per chunk (or per row, whichever is fewer)", "[nccl][pack]") {
  using redist::detail::device_copy;
  using redist::detail::split_all_plan;
  const std::vector<std::uint64_t> ext = {64, 8, 32};  // outer 64 x (8 x 32)
  // Split dimension 1 into 4: 4 chunks of 64 runs of 2 x 32 elements, pitch 256 elements.
  const auto plan = split_all_plan(ext, 1, 4, 64 * 8 * 32, 64 * 8 * 32);
  CHECK(plan.count == 4);
  CHECK(plan.rows == 64);
  CHECK(plan.width == 64);
  CHECK(plan.src_pitch == 256);
  CHECK(plan.dst_pitch == 64);
  const auto shape = device_copy(plan, 4, SIZE_MAX);
  CHECK_FALSE(shape.per_run);
  CHECK(shape.copy.count == 4);  // 4 cudaMemcpy2DAsync of 64 rows
  // 64 chunks of 2 rows: one 2-D copy per row instead (2 copies of 64 rows).
  const std::vector<std::uint64_t> wide = {2, 64 * 4};
  const auto w = device_copy(split_all_plan(wide, 1, 64, 2 * 256, 2 * 256), 4, SIZE_MAX);
  CHECK(w.copy.count == 2);
  CHECK(w.copy.rows == 64);
  // A split along the first dimension is contiguous: one 1-D copy.
  const auto first = device_copy(split_all_plan(ext, 0, 4, 64 * 8 * 32, 64 * 8 * 32), 4, SIZE_MAX);
  CHECK(first.copy.count == 1);
  CHECK(first.copy.rows == 1);
  CHECK(first.copy.width == 64 * 8 * 32);
}

namespace {

/// What the copy kernel does with launch l (backends/cuda_strided.hpp), on the host.
void run_launch(const redist::detail::strided_launch& l, const std::byte* src, std::byte* dst) {
  const std::uint64_t u = redist::detail::strided_units[l.unit];
  if (l.transpose) {
    for (std::uint64_t a = 0; a < l.na; ++a)
      for (std::uint64_t b = 0; b < l.nb; ++b)
        std::memcpy(dst + (a * l.dst_a + b * l.dst_b) * u, src + (a * l.src_a + b * l.src_b) * u, u);
    return;
  }
  for (std::uint64_t t = 0; t < l.total; ++t) {
    const std::uint64_t q = t / l.width, k = t % l.width, i = q / l.rows, j = q % l.rows;
    std::memcpy(dst + (i * l.dst_step + j * l.dst_pitch + k) * u, src + (i * l.src_step + j * l.src_pitch + k) * u, u);
  }
}

}  // namespace

TEST_CASE("the copy kernel's launches move the host pack's bytes in the widest units", "[nccl][pack][kernel]") {
  std::mt19937_64 rng(0x6b65726e);
  std::uint64_t checked = 0, transposes = 0;
  for (int n = 0; n < 3000; ++n) {
    redist::detail::strided_copy c;
    const std::uint64_t elem = std::uint64_t{1} << (rng() % 4);  // 1..8 bytes
    const bool many = n % 3 == 0;  // enough runs of one element for the transpose kernel
    c.count = 1 + rng() % (many ? 40 : 5);
    c.rows = 1 + rng() % (many ? 40 : 6);
    c.width = many ? 1 + rng() % 2 : 1 + rng() % 9;
    // Pitches and steps leaving the runs disjoint on each side: rows inside steps or around them.
    auto layout = [&](std::uint64_t& pitch, std::uint64_t& step) {  // each side its own order
      const bool rows_inner = rng() % 2 == 0;
      const std::uint64_t gap = rng() % 3;
      if (rows_inner) {
        pitch = c.width + gap;
        step = pitch * c.rows + rng() % 3;
      } else {
        step = c.width + gap;
        pitch = step * c.count + rng() % 3;
      }
    };
    layout(c.src_pitch, c.src_step);
    layout(c.dst_pitch, c.dst_step);
    c.src = rng() % 4;
    c.dst = rng() % 4;
    INFO(c.count << " x " << c.rows << " runs of " << c.width << " elements of " << elem << " bytes, pitches "
                 << c.src_pitch << "/" << c.dst_pitch << ", steps " << c.src_step << "/" << c.dst_step);
    const std::uint64_t ssize = c.src + (c.count - 1) * c.src_step + (c.rows - 1) * c.src_pitch + c.width;
    const std::uint64_t dsize = c.dst + (c.count - 1) * c.dst_step + (c.rows - 1) * c.dst_pitch + c.width;
    std::vector<std::uint64_t> sbuf(ssize * elem / 8 + 2), want(dsize * elem / 8 + 2), got(dsize * elem / 8 + 2);
    for (auto& x : sbuf) x = rng();
    auto* s = reinterpret_cast<std::byte*>(sbuf.data());
    auto* w = reinterpret_cast<std::byte*>(want.data());
    switch (elem) {  // the host pack, in elements of elem bytes
      case 1: redist::detail::host_strided_copy(c, reinterpret_cast<const std::uint8_t*>(s), reinterpret_cast<std::uint8_t*>(w)); break;
      case 2: redist::detail::host_strided_copy(c, reinterpret_cast<const std::uint16_t*>(s), reinterpret_cast<std::uint16_t*>(w)); break;
      case 4: redist::detail::host_strided_copy(c, reinterpret_cast<const std::uint32_t*>(s), reinterpret_cast<std::uint32_t*>(w)); break;
      default: redist::detail::host_strided_copy(c, reinterpret_cast<const std::uint64_t*>(s), reinterpret_cast<std::uint64_t*>(w)); break;
    }
    const auto* src = s + c.src * elem;
    auto* dst = reinterpret_cast<std::byte*>(got.data()) + c.dst * elem;
    const redist::detail::strided_launch l = redist::detail::plan_strided_launch(
        c, elem, reinterpret_cast<std::uintptr_t>(src), reinterpret_cast<std::uintptr_t>(dst), 1024);
    const std::uint64_t unit = redist::detail::strided_units[l.unit];
    // The unit divides every length and address, and no wider one does.
    const redist::detail::strided_copy m = c.merged();
    std::uint64_t g = m.width * elem | reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst);
    if (m.rows > 1) g |= (m.src_pitch | m.dst_pitch) * elem;
    if (m.count > 1) g |= (m.src_step | m.dst_step) * elem;
    CHECK(g % unit == 0);
    if (unit < 16) CHECK(g % (2 * unit) != 0);
    CHECK(l.total * unit == c.elements() * elem);
    CHECK_FALSE(l.wide);
    if (l.transpose) {  // dense reads along a, dense writes along b
      ++transposes;
      CHECK((l.na >= 16 && l.nb >= 16 && l.src_a < l.src_b && l.dst_b <= l.dst_a));
    }
    run_launch(l, src, dst);
    CHECK(got == want);
    ++checked;
  }
  CHECK(checked == 3000);
  CHECK(transposes > 100);
  // Indices beyond 32 bits switch to the 64-bit kernels.
  redist::detail::strided_copy big;
  big.count = 1 << 20;
  big.rows = 1 << 13;
  big.width = 1;
  big.src_step = 1;
  big.src_pitch = big.count;
  big.dst_step = big.rows;
  big.dst_pitch = 1;
  const auto wide = redist::detail::plan_strided_launch(big, 4, 0, 0, 1 << 20);
  CHECK(wide.wide);
  CHECK(wide.dst_pitch == 1);  // the index next to the run has the smaller destination stride
  big.count = 1 << 10;
  big.src_pitch = big.count;
  CHECK_FALSE(redist::detail::plan_strided_launch(big, 4, 0, 0, 1 << 20).wide);
}

TEST_CASE("NVRTC compiles the copy kernels and the converting kernel (no GPU needed)", "[nccl][kernel]") {
  for (const char* arch : {"--gpu-architecture=sm_90", "--gpu-architecture=compute_80"}) {
    INFO(arch);
    nvrtcProgram prog = nullptr;
    REQUIRE(nvrtcCreateProgram(&prog, redist::detail::strided_kernel_source, "redist_strided.cu", 0, nullptr,
                               nullptr) == NVRTC_SUCCESS);
    const char* opts[] = {arch, "-std=c++17"};
    const nvrtcResult rc = nvrtcCompileProgram(prog, 2, opts);
    std::size_t n = 0;
    std::string log;
    if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
      log.resize(n);
      (void)nvrtcGetProgramLog(prog, log.data());
    }
    INFO(log);
    CHECK(rc == NVRTC_SUCCESS);
    std::size_t ptx = 0;
    REQUIRE(nvrtcGetPTXSize(prog, &ptx) == NVRTC_SUCCESS);
    std::string code(ptx, '\0');
    REQUIRE(nvrtcGetPTX(prog, code.data()) == NVRTC_SUCCESS);
    for (const char* kind : {"redist_strided_", "redist_transpose_"})
      for (const char* unit : {"16", "8", "4", "2", "1"})
        for (const char* bits : {"_32", "_64"}) CHECK(code.find(std::string(kind) + unit + bits) != std::string::npos);
    CHECK(code.find(".entry redist_batch(") != std::string::npos);  // the batch kernel, its argument by value
    CHECK(code.find(".param .align 8 .b8 redist_batch_param_0[" + std::to_string(sizeof(redist::detail::strided_jobs)) +
                    "]") != std::string::npos);
    CHECK(code.find("ld.global.nc.v2.u64") != std::string::npos);  // 16-byte loads
    // The converting kernel: cast.hpp's conversions (detail::convert::text, compiled on the
    // device's primitives) round every float operation to nearest, fuse none and keep
    // subnormals, as the host does.
    const std::size_t cast_at = code.find(".entry redist_cast_batch(");
    REQUIRE(cast_at != std::string::npos);
    const std::string cast = code.substr(cast_at, code.find("\n}", cast_at) - cast_at);
    for (const char* op : {"add.rn.f32", "mul.rn.f32", "cvt.rn.f32.f64", "cvt.f64.f32"}) {
      INFO(op);
      CHECK(cast.find(op) != std::string::npos);
    }
    for (const char* op : {"fma.", ".ftz", "add.f32", "mul.f32"}) {
      INFO(op);
      CHECK(cast.find(op) == std::string::npos);
    }
    (void)nvrtcDestroyProgram(&prog);
  }
}
