// The NCCL backend on one GPU (one rank; NCCL refuses two ranks on one GPU). Exits with
// 77 (ctest: skipped) when there is no CUDA device. tests/gpu/run.sh runs it on a GPU.
//
// - The strided pack/unpack on the device (cuda_memory) against the host's pack.hpp,
//   element by element, on random tile shapes, split dimensions and element sizes; the
//   converting copies against the host's conversions, bit for bit, on every 16-bit pattern.
// - The executor with device memory on multi-rank programs: D simulated ranks whose
//   buffers share the GPU (nccl_sim_backend.hpp), random problems (partial sums too),
//   every element of every target tile checked.
// - The NCCL backend with one rank: every collective through NCCL on a one-rank
//   communicator (ncclAllGather, ncclAlltoAll and its grouped ncclSend/ncclRecv form,
//   ncclAllReduce, ncclReduceScatter), the agreement over NCCL, the group cache, and the
//   executor on one-device programs whose steps all go through NCCL.
// - Errors with a device: tiles in host memory are refused before anything moves.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backends/nccl_sim_backend.hpp"
#include "redist/backends/host.hpp"
#include "redist/backends/nccl.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/cast.hpp"
#include "redist/runtime/pack.hpp"
#include "redist/runtime/reshard_executor.hpp"
#include "redist/runtime/verify.hpp"
#include "support/memory_formula.hpp"
#include "support/random_problems.hpp"

namespace {

using redist::cuda_buffer;
using redist::cuda_memory;

/// A stream on device 0 for a test, destroyed at its end.
struct test_stream {
  cudaStream_t s = nullptr;
  test_stream() {
    REDIST_CUDA_CHECK(cudaSetDevice(0));
    REDIST_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  }
  test_stream(const test_stream&) = delete;
  test_stream& operator=(const test_stream&) = delete;
  ~test_stream() { (void)cudaStreamDestroy(s); }
};

template <class T>
cuda_buffer<T> upload(const std::vector<T>& v) {
  cuda_buffer<T> b(v.size(), 0);
  REDIST_CUDA_CHECK(cudaMemcpy(b.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  REDIST_CUDA_CHECK(cudaDeviceSynchronize());  // a pageable upload may return before it lands
  return b;
}

template <class T>
std::vector<T> download(const cuda_buffer<T>& b, cudaStream_t s) {
  REDIST_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<T> v(b.size());
  REDIST_CUDA_CHECK(cudaMemcpy(v.data(), b.data(), v.size() * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

template <class T>
std::vector<T> pattern(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_arithmetic_v<T>) x = static_cast<T>(rng() % 251);
    else
      for (auto& c : x) c = static_cast<char>(rng() % 251);
  }
  return v;
}

/// One random pack problem: every device pack against the host's, element by element.
template <class T>
void pack_case(const cuda_memory& mem, std::mt19937_64& rng, std::uint64_t max_extent, std::uint64_t& elements,
               std::uint64_t max_n = 8) {
  const int rank = 1 + static_cast<int>(rng() % 6);
  std::vector<std::uint64_t> ext(static_cast<std::size_t>(rank));
  for (auto& e : ext) e = 1 + rng() % max_extent;
  const int d = static_cast<int>(rng() % static_cast<std::uint64_t>(rank));
  const std::uint64_t n = 1 + rng() % max_n;
  ext[static_cast<std::size_t>(d)] *= n;
  std::uint64_t size = 1;
  for (auto e : ext) size *= e;
  if (size > (1u << 22)) return;
  std::vector<std::uint64_t> cext = ext;
  cext[static_cast<std::size_t>(d)] /= n;
  const std::uint64_t m = rng() % n;
  INFO(rank << "-d tile, split dimension " << d << " into " << n << ", chunk " << m << ", " << sizeof(T)
            << "-byte elements, " << size << " elements");

  const std::vector<T> tile = pattern<T>(size, rng());
  const cuda_buffer<T> dtile = upload(tile);
  cuda_buffer<T> dout(size, 0), dchunk(size / n, 0), dback(size, 0);
  const std::span<const T> ct(dtile.data(), size);

  std::vector<T> want(size);
  redist::split_all<T>(tile, ext, d, n, want);
  mem.split_all<T>(ct, ext, d, n, dout.span());
  REQUIRE(download(dout, mem.stream()) == want);

  std::vector<T> back(size);
  redist::concat_all<T>(want, cext, d, n, back);
  REQUIRE(back == tile);
  mem.concat_all<T>(std::span<const T>(dout.data(), size), cext, d, n, dback.span());
  REQUIRE(download(dback, mem.stream()) == tile);

  std::vector<T> chunk(size / n);
  redist::split_copy<T>(tile, ext, d, n, m, chunk);
  mem.split_copy<T>(ct, ext, d, n, m, dchunk.span());
  REQUIRE(download(dchunk, mem.stream()) == chunk);

  std::vector<T> placed(size, T{});
  redist::concat_copy<T>(chunk, cext, d, n, m, placed);
  REDIST_CUDA_CHECK(cudaMemsetAsync(dback.data(), 0, size * sizeof(T), mem.stream()));
  mem.concat_copy<T>(std::span<const T>(dchunk.data(), size / n), cext, d, n, m, dback.span());
  REQUIRE(download(dback, mem.stream()) == placed);
  elements += 4 * size;
}

}  // namespace

TEST_CASE("device pack/unpack equal the host's, element by element, on random problems", "[gpu][pack]") {
  test_stream s;
  for (const redist::cuda_pack engine : {redist::cuda_pack::kernel, redist::cuda_pack::copy_engine}) {
    const cuda_memory mem(0, s.s, engine);
    INFO("strided copies by " << mem.pack_engine());
    // The kernel compiles for this GPU (or the emulator's sm_90): no silent fallback.
    REQUIRE(mem.uses_kernel() == (engine == redist::cuda_pack::kernel));
    std::mt19937_64 rng(0x67707531);
    std::uint64_t elements = 0;
    for (int i = 0; i < 400; ++i) {
      switch (i % 5) {
        case 0: pack_case<float>(mem, rng, 6, elements); break;
        case 1: pack_case<double>(mem, rng, 6, elements); break;
        case 2: pack_case<std::uint8_t>(mem, rng, 9, elements); break;
        case 3: pack_case<std::array<char, 12>>(mem, rng, 5, elements); break;  // 4-byte units, 3 per element
        default: pack_case<std::int16_t>(mem, rng, 9, elements); break;
      }
    }
    for (int i = 0; i < 12; ++i) pack_case<float>(mem, rng, 40, elements);  // larger tiles
    for (int i = 0; i < 60; ++i) {  // many chunks of short runs: the transpose kernel
      if (i % 2 == 0) pack_case<float>(mem, rng, 5, elements, 64);
      else pack_case<double>(mem, rng, 4, elements, 48);
    }
    std::printf("device pack/unpack (%s): %llu elements compared with the host pack\n", mem.pack_engine().c_str(),
                static_cast<unsigned long long>(elements));
    CHECK(elements > 0);
  }
}

TEST_CASE("batched copies (a message's pieces from many tiles) equal the host's, byte by byte", "[gpu][pack]") {
  // The reshard executor's packing: random regions of random tiles (1-4 dimensions, the last
  // in bytes of 1-16-byte elements) back to back in one buffer, then unpacked into other
  // tiles; 1-150 pieces a message, so that batches of the kernel fill and flush.
  test_stream s;
  for (const redist::cuda_pack engine : {redist::cuda_pack::kernel, redist::cuda_pack::copy_engine}) {
    const cuda_memory mem(0, s.s, engine);
    INFO("strided copies by " << mem.pack_engine());
    std::mt19937_64 rng(0x62617463);
    std::uint64_t bytes = 0;
    for (int m = 0; m < 40; ++m) {
      const std::size_t tiles = 1 + rng() % 6, pieces = 1 + rng() % (m % 4 == 0 ? 150 : 20);
      std::vector<std::vector<std::byte>> host(tiles);
      std::vector<cuda_buffer<std::byte>> dev;
      std::vector<std::array<std::uint64_t, redist::max_dims>> ext(tiles);
      std::vector<int> rank(tiles);
      std::vector<std::uint64_t> elem(tiles);
      for (std::size_t t = 0; t < tiles; ++t) {
        rank[t] = 1 + static_cast<int>(rng() % 4);
        elem[t] = std::uint64_t{1} << (rng() % 5);
        std::uint64_t n = elem[t];
        for (int d = 0; d < rank[t]; ++d) {
          ext[t][static_cast<std::size_t>(d)] = 1 + rng() % 9;
          n *= ext[t][static_cast<std::size_t>(d)];
        }
        ext[t][static_cast<std::size_t>(rank[t] - 1)] *= elem[t];
        host[t].resize(n);
        for (auto& b : host[t]) b = static_cast<std::byte>(rng());
        dev.push_back(cuda_buffer<std::byte>(n, 0));
        REDIST_CUDA_CHECK(cudaMemcpy(dev.back().data(), host[t].data(), n, cudaMemcpyHostToDevice));
      }
      // Each piece: a region of a random tile, whole elements in the last dimension.
      std::vector<std::pair<std::size_t, redist::detail::byte_region>> region;
      std::vector<redist::detail::byte_region> packed;
      std::vector<std::uint64_t> at{0};  // piece k lies at [at[k], at[k + 1]) of the message
      for (std::size_t k = 0; k < pieces; ++k) {
        const std::size_t t = rng() % tiles;
        redist::detail::byte_region r, q;
        r.rank = q.rank = rank[t];
        r.ext = ext[t];
        std::uint64_t size = 1;
        for (int d = 0; d < rank[t]; ++d) {
          const auto u = static_cast<std::size_t>(d);
          const std::uint64_t e = d == rank[t] - 1 ? elem[t] : 1, n = r.ext[u] / e;
          const std::uint64_t lo = rng() % n, len = 1 + rng() % (n - lo);
          r.region.start[u] = lo * e;
          r.region.size[u] = q.ext[u] = q.region.size[u] = len * e;
          size *= len * e;
        }
        region.emplace_back(t, r);
        packed.push_back(q);
        at.push_back(at.back() + size);
      }
      const std::uint64_t total = at.back();
      std::vector<std::byte> want(total), got(total);
      cuda_buffer<std::byte> buf(total, 0);
      std::vector<redist::detail::byte_copy> copies;
      for (std::size_t k = 0; k < pieces; ++k) {
        const auto& [t, r] = region[k];
        redist::detail::copy_region(host[t].data(), r, want.data() + at[k], packed[k]);
        redist::detail::region_copies(copies, dev[t].data(), r, buf.data() + at[k], packed[k]);
      }
      mem.strided_batch(copies);
      REDIST_CUDA_CHECK(cudaStreamSynchronize(s.s));
      REDIST_CUDA_CHECK(cudaMemcpy(got.data(), buf.data(), total, cudaMemcpyDeviceToHost));
      REQUIRE(got == want);
      // Unpack the message into zeroed copies of the tiles (the pieces may overlap there, so
      // each piece goes to a tile of its own).
      std::vector<cuda_buffer<std::byte>> out;
      copies.clear();
      for (std::size_t k = 0; k < pieces; ++k) {
        const auto& [t, r] = region[k];
        out.push_back(cuda_buffer<std::byte>(host[t].size(), 0));
        REDIST_CUDA_CHECK(cudaMemset(out.back().data(), 0, host[t].size()));
        redist::detail::region_copies(copies, buf.data() + at[k], packed[k], out.back().data(), r);
      }
      mem.strided_batch(copies);
      REDIST_CUDA_CHECK(cudaStreamSynchronize(s.s));
      for (std::size_t k = 0; k < pieces; ++k) {
        const auto& [t, r] = region[k];
        std::vector<std::byte> expect(host[t].size()), back(host[t].size());
        redist::detail::copy_region(want.data() + at[k], packed[k], expect.data(), r);
        REDIST_CUDA_CHECK(cudaMemcpy(back.data(), out[k].data(), back.size(), cudaMemcpyDeviceToHost));
        REQUIRE(back == expect);
      }
      bytes += 2 * total;
    }
    std::printf("batched copies (%s): %llu bytes compared with the host's\n", mem.pack_engine().c_str(),
                static_cast<unsigned long long>(bytes));
    CHECK(bytes > 0);
  }
}

/// The bytes of n elements of type t: every pattern of a 16-bit type (n = 65536); f32 and
/// f64 from `values` (f64: each value and the double just above it, which rounds once more
/// on the way to the narrower types).
std::vector<std::byte> cast_source(redist::element_type t, const std::vector<float>& values) {
  std::vector<std::byte> v;
  auto put = [&](const auto x) {
    const std::size_t at = v.size();
    v.resize(at + sizeof x);
    std::memcpy(v.data() + at, &x, sizeof x);
  };
  if (redist::element_type_bytes(t) == 2) {
    for (std::uint32_t h = 0; h < 65536; ++h) put(static_cast<std::uint16_t>(h));
  } else if (t == redist::element_type::f32) {
    for (const float f : values) put(f);
  } else {
    for (const float f : values) {
      put(static_cast<double>(f));
      put(std::nextafter(static_cast<double>(f), HUGE_VAL));
    }
  }
  return v;
}

TEST_CASE("converting copies on the device equal the host's, bit for bit", "[gpu][cast]") {
  // The converting kernel (backends/cuda_strided.hpp) repeats runtime/cast.hpp's formulas in
  // CUDA: every pair of f64, f32, bf16 and f16, on every 16-bit pattern, the floats at and
  // beside every tie of bf16 and f16, and a sweep of f32 patterns (NaNs, infinities,
  // subnormals, overflow), at aligned and unaligned addresses; then batches of many small
  // strided converting copies (1-150 per batch: batches fill and flush), with either packing
  // engine: casts always take the kernel.
  using redist::element_type;
  test_stream s;
  std::vector<float> values;  // REDIST_TEST_SCALE (the sanitizer pass): a share of the patterns' ties
  const auto every = static_cast<std::uint32_t>(65536 / redist::testing::scaled(65536));
  for (std::uint32_t h = 0; h < 65536; h += every) {
    const auto b = std::bit_cast<std::uint32_t>(redist::bf16_bits_to_float(static_cast<std::uint16_t>(h)));
    const auto f = std::bit_cast<std::uint32_t>(redist::f16_bits_to_float(static_cast<std::uint16_t>(h)));
    for (const std::uint32_t u : {b, b + 0x7fffu, b + 0x8000u, b + 0x8001u, f, f + 0xfffu, f + 0x1000u, f + 0x1001u})
      values.push_back(std::bit_cast<float>(u));
  }
  const std::uint64_t sweep = (std::uint64_t{1} << 32) / redist::testing::scaled(std::size_t{1} << 19);
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += sweep) values.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(u)));
  const element_type types[] = {element_type::f64, element_type::f32, element_type::bf16, element_type::f16};
  for (const redist::cuda_pack engine : {redist::cuda_pack::kernel, redist::cuda_pack::copy_engine}) {
    const cuda_memory mem(0, s.s, engine);
    REQUIRE(mem.cast_unavailable().empty());
    std::uint64_t elements = 0;
    for (const element_type from : types)
      for (const element_type to : types) {
        if (engine != redist::cuda_pack::kernel) continue;  // the same kernel: the batches below suffice
        const std::vector<std::byte> src = cast_source(from, values);
        const std::uint64_t fe = redist::element_type_bytes(from), te = redist::element_type_bytes(to),
                            n = src.size() / fe;
        for (const std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{1}}) {  // unaligned: one byte on
          INFO(redist::element_type_name(from) << " -> " << redist::element_type_name(to) << " at offset " << offset
                                               << ", " << mem.pack_engine());
          cuda_buffer<std::byte> dsrc(src.size() + 1, 0), ddst(n * te + 1, 0);
          REDIST_CUDA_CHECK(cudaMemcpy(dsrc.data() + offset, src.data(), src.size(), cudaMemcpyHostToDevice));
          redist::detail::cast_copy x;
          x.c.width = x.c.src_pitch = x.c.dst_pitch = x.c.src_step = x.c.dst_step = n;
          x.src = dsrc.data() + offset;
          x.dst = ddst.data() + offset;
          x.from = from;
          x.to = to;
          mem.cast_batch(std::span<const redist::detail::cast_copy>(&x, 1));
          std::vector<std::byte> want(n * te), got(n * te);
          redist::cast_elements(src, from, want, to);
          REDIST_CUDA_CHECK(cudaStreamSynchronize(s.s));
          REDIST_CUDA_CHECK(cudaMemcpy(got.data(), ddst.data() + offset, got.size(), cudaMemcpyDeviceToHost));
          REQUIRE(got == want);
          elements += n;
        }
      }
    // Many small strided converting copies in one batch, each into a tile of its own.
    std::mt19937_64 rng(0x63617374);
    for (int m = 0; m < 30; ++m) {
      const std::size_t copies = 1 + rng() % (m % 3 == 0 ? 150 : 20);
      std::vector<std::vector<std::byte>> host_src(copies), want(copies);
      std::vector<cuda_buffer<std::byte>> dsrc, ddst;
      std::vector<redist::detail::cast_copy> batch(copies);
      for (std::size_t k = 0; k < copies; ++k) {
        redist::detail::cast_copy& x = batch[k];
        x.from = types[rng() % 4];
        x.to = types[rng() % 4];
        x.c.count = 1 + rng() % 4;
        x.c.rows = 1 + rng() % 6;
        x.c.width = 1 + rng() % 9;
        x.c.src_pitch = x.c.width + rng() % 3;
        x.c.src_step = x.c.src_pitch * x.c.rows + rng() % 3;
        x.c.dst_pitch = x.c.width + rng() % 3;
        x.c.dst_step = x.c.dst_pitch * x.c.rows + rng() % 3;
        if (rng() % 2 == 0) {  // i outermost in the destination, j in the source
          x.c.src_step = x.c.width + rng() % 2;
          x.c.src_pitch = x.c.src_step * x.c.count + rng() % 2;
        }
        x.c.src = rng() % 3;
        x.c.dst = rng() % 3;
        const std::uint64_t fe = redist::element_type_bytes(x.from), te = redist::element_type_bytes(x.to);
        const std::uint64_t last = x.c.count - 1, row = x.c.rows - 1;
        const std::uint64_t sn = x.c.src + last * x.c.src_step + row * x.c.src_pitch + x.c.width,
                            dn = x.c.dst + last * x.c.dst_step + row * x.c.dst_pitch + x.c.width;
        host_src[k].resize(sn * fe);
        for (std::uint64_t e = 0; e < sn; ++e) {  // values of the source type, NaNs and all
          const float v = values[rng() % values.size()];
          redist::detail::store_element(host_src[k].data() + e * fe, x.from, static_cast<double>(v));
        }
        want[k].assign(dn * te, std::byte{0x5a});
        redist::detail::cast_copy h = x;
        h.src = host_src[k].data();
        h.dst = want[k].data();
        redist::detail::host_cast_copy(h);
        dsrc.push_back(upload(host_src[k]));
        ddst.push_back(upload(std::vector<std::byte>(dn * te, std::byte{0x5a})));
        x.src = dsrc.back().data();
        x.dst = ddst.back().data();
      }
      mem.cast_batch(batch);
      REDIST_CUDA_CHECK(cudaStreamSynchronize(s.s));
      for (std::size_t k = 0; k < copies; ++k) {
        std::vector<std::byte> got(want[k].size());
        REDIST_CUDA_CHECK(cudaMemcpy(got.data(), ddst[k].data(), got.size(), cudaMemcpyDeviceToHost));
        REQUIRE(got == want[k]);
        elements += batch[k].c.elements();
      }
    }
    std::printf("converting copies (%s): %llu elements compared with the host's\n", mem.pack_engine().c_str(),
                static_cast<unsigned long long>(elements));
    CHECK(elements > 0);
  }
}

TEST_CASE("the device memory space accepts device memory only", "[gpu][errors]") {
  test_stream s;
  const cuda_memory mem(0, s.s);
  std::vector<float> host(16);
  CHECK(mem.check_pointer(host.data()) == "is host memory, not memory of CUDA device 0");
  const cuda_buffer<float> dev(16, 0);
  CHECK(mem.check_pointer(dev.data()).empty());
  void* pinned = nullptr;
  REDIST_CUDA_CHECK(cudaMallocHost(&pinned, 64));
  CHECK(mem.check_pointer(static_cast<const float*>(pinned)) == "is pinned host memory, not memory of CUDA device 0");
  REDIST_CUDA_CHECK(cudaFreeHost(pinned));
  // A failed call on a real device: the exception names it, and the error does not stick.
  void* huge = nullptr;
  CHECK_THROWS_WITH([&] { REDIST_CUDA_CHECK(cudaMalloc(&huge, std::size_t{1} << 60)); }(),
                    Catch::Matchers::StartsWith("cudaMalloc(&huge, std::size_t{1} << 60) failed at ") &&
                        Catch::Matchers::Contains("[cudaErrorMemoryAllocation]"));
  CHECK_THROWS_AS(cuda_buffer<float>(std::size_t{1} << 58, 0), redist::device_error);
  CHECK(mem.check_pointer(dev.data()).empty());
}

namespace {

struct sim_totals {
  std::uint64_t problems = 0, elements = 0, mismatches = 0, steps = 0;
  std::uint64_t ops[redist::op_count] = {};
};

/// Synthesize (with `exchange`: one exchange, its pieces copied tile to tile on the device),
/// run on D simulated ranks sharing the GPU, check every element, the memory formula
/// (packed pieces of at most `chunk` bytes) and that the input tiles are unchanged.
template <class T>
void run_sim(const cuda_memory& mem, const redist::testing::problem_text& pt, sim_totals& tot,
             std::uint64_t chunk = std::uint64_t{1} << 20, bool exchange = false) {
  INFO(pt.mesh << "  " << pt.from << " -> " << pt.to << "  (" << sizeof(T) << "-byte elements, pack chunk " << chunk
                << (exchange ? ", exchange" : "") << ")");
  const redist::program p = exchange ? redist::exchange_program(redist::parse_mesh(pt.mesh), pt.from, pt.to, sizeof(T))
                                     : redist::synthesize(pt.mesh, pt.from, pt.to, {.element_bytes = sizeof(T)});
  redist::testing::cuda_sim_backend sim(p.devices(), mem);
  redist::executor<T, redist::testing::cuda_sim_backend> ex(sim, p, {.pack_chunk_bytes = chunk});
  CHECK(ex.peak_bytes_held() == redist::testing::expected_bytes_held(p, sizeof(T), {false, false, false, true}, chunk));
  std::vector<cuda_buffer<T>> din, dout;
  std::vector<redist::darray<T>> in, out;
  for (redist::rank_t r = 0; r < p.devices(); ++r) {
    redist::darray<T> host(p.m, p.source, r);
    redist::fill_global_index(host);
    din.push_back(upload(std::vector<T>(host.span().begin(), host.span().end())));
    dout.emplace_back(redist::local_size(p.m, p.target), 0);
  }
  for (redist::rank_t r = 0; r < p.devices(); ++r) {
    in.emplace_back(p.m, p.source, r, din[r].span());
    out.emplace_back(p.m, p.target, r, dout[r].span());
  }
  ex.run(std::span<const redist::darray<T>>(in), std::span<redist::darray<T>>(out));
  for (redist::rank_t r = 0; r < p.devices(); ++r) {  // the inputs are as they were
    redist::darray<T> again(p.m, p.source, r, download(din[r], mem.stream()));
    if (p.source.nsum == 0) CHECK(redist::check_global_index(again).ok());
  }
  std::vector<redist::darray<T>> res;
  for (redist::rank_t r = 0; r < p.devices(); ++r) res.emplace_back(p.m, p.target, r, download(dout[r], mem.stream()));
  if (p.target.nsum > 0) redist::reduce_partials_into_roots(std::span<redist::darray<T>>(res));  // by the kind
  std::uint64_t bad = 0;
  for (const auto& t : res) {
    if (redist::sum_root(p.m, p.target, t.device()) != t.device()) continue;
    const redist::tile_check c = redist::check_global_index(t);
    tot.elements += c.checked;
    bad += c.mismatches;
  }
  CHECK(bad == 0);
  tot.mismatches += bad;
  tot.steps += p.steps.size();
  for (const auto& st : p.steps) ++tot.ops[static_cast<int>(st.kind)];
  ++tot.problems;
}

}  // namespace

TEST_CASE("the executor on device memory: multi-rank programs on one GPU, every element checked", "[gpu][executor]") {
  test_stream s;
  // Strided copies by the kernel, and by the copy engine for every fifth problem.
  const cuda_memory by_kernel(0, s.s), by_copies(0, s.s, redist::cuda_pack::copy_engine);
  REQUIRE(by_kernel.uses_kernel());
  sim_totals tot;
  std::size_t i = 0;
  auto paper = redist::testing::paper_workload(1 << 16);
  paper.max_multiplier = 8;
  for (const auto& pt : redist::testing::random_problems(paper, 300, 0x67707532)) {
    const cuda_memory& mem = i % 5 == 4 ? by_copies : by_kernel;
    if (i++ % 2 == 0) run_sim<float>(mem, pt, tot, i % 4 == 1 ? 96 : std::uint64_t{1} << 20);
    else run_sim<std::uint16_t>(mem, pt, tot);
    if (i % 3 == 0) run_sim<float>(mem, pt, tot, std::uint64_t{1} << 20, true);
  }
  const cuda_memory& mem = by_kernel;
  for (auto w : redist::testing::mixed_workloads(1 << 14))
    for (const auto& pt : redist::testing::random_problems(w, 20, 0x67707533 + i++)) run_sim<double>(mem, pt, tot);
  auto sums = redist::testing::paper_workload(1 << 14);
  sums.partial_sums = true;
  for (const auto& pt : redist::testing::random_problems(sums, 80, 0x67707534)) run_sim<std::int32_t>(mem, pt, tot);
  for (const char* kind : {"max", "min", "prod", "avg"}) {  // every other reduction
    sums.reduction = kind;
    for (const auto& pt : redist::testing::random_problems(sums, 20, 0x67707536 + i++)) {
      run_sim<std::int32_t>(mem, pt, tot);
      run_sim<double>(mem, pt, tot);
    }
  }
  const std::uint64_t even_problems = tot.problems;
  for (auto w : redist::testing::mixed_workloads(1 << 12)) {  // uneven dimensions, sums in half
    std::mt19937_64 rng(0x67707535 + i++);
    for (int k = 0; k < 20; ++k) {
      w.partial_sums = k % 2 == 1;
      run_sim<std::int32_t>(k % 3 == 0 ? by_copies : mem, redist::testing::random_uneven_problem(rng, w), tot);
    }
  }
  CHECK(tot.problems - even_problems == 20 * redist::testing::mixed_workloads().size());
  // Creating pending values (lower/partial.hpp): the identity written by memset (sum) and by
  // doubling device copies (prod, min), and padded steps (concat_copy on the device).
  const char* created[][2] = {{"[{a}8, 4]", "[{a}8, 4] prod{b}"},     {"[{a}8, {b}4]", "[{a}8, 4] max{b}"},
                              {"[{a}8, {b}4]", "[{a}8, 4] sum{b}"},     {"[8, 4]", "[8, 4] min{a, c}"},
                              {"[{c, b}8, {a}4]", "[{b}8, 4] min{a, c}"}, {"[{a}8, 4] sum{c}", "[8, {a}4] prod{b}"}};
  for (const auto& c : created) {
    const redist::testing::problem_text pt{"{a: 2, b: 2, c: 2}", c[0], c[1], 32};
    run_sim<float>(mem, pt, tot);
    run_sim<std::int32_t>(by_copies, pt, tot);
  }
  CHECK(tot.ops[static_cast<int>(redist::op::partial)] >= 12);
  std::printf("device executor (simulated ranks): %llu problems, %llu steps (%llu allgather, %llu alltoall, %llu "
              "dynslice, %llu allpermute, %llu allreduce, %llu reducescatter, %llu exchange, %llu partial), %llu elements "
              "verified, %llu wrong\n",
              static_cast<unsigned long long>(tot.problems), static_cast<unsigned long long>(tot.steps),
              static_cast<unsigned long long>(tot.ops[0]), static_cast<unsigned long long>(tot.ops[1]),
              static_cast<unsigned long long>(tot.ops[2]), static_cast<unsigned long long>(tot.ops[3]),
              static_cast<unsigned long long>(tot.ops[4]), static_cast<unsigned long long>(tot.ops[5]),
              static_cast<unsigned long long>(tot.ops[6]), static_cast<unsigned long long>(tot.ops[7]),
              static_cast<unsigned long long>(tot.elements),
              static_cast<unsigned long long>(tot.mismatches));
  CHECK(tot.mismatches == 0);
  CHECK(tot.ops[static_cast<int>(redist::op::alltoall)] > 0);
  CHECK(tot.ops[static_cast<int>(redist::op::exchange)] > 0);
  CHECK(tot.ops[static_cast<int>(redist::op::reducescatter)] + tot.ops[static_cast<int>(redist::op::allreduce)] > 0);
}

TEST_CASE("the executor's memory formula, as cudaMemGetInfo sees it", "[gpu][memory]") {
  test_stream s;
  const cuda_memory mem(0, s.s);
  // 8 simulated ranks on the GPU, 32 MiB tiles: every byte the executor allocates is in the
  // formula (runtime/executor.hpp), summed over the ranks, and nothing is allocated during
  // a run. The device hands out memory in 2 MiB pages, so each allocation may round up.
  struct problem {
    const char *from, *to;
  };
  const problem problems[] = {
      {"[{x}8192, {y}8192]", "[{y, x}8192, 8192]"},    // one all-to-all, contiguous blocks
      {"[{x}8192, {y}8192]", "[{y}8192, {x}8192]"},    // several steps
      {"[{x, y}8192, 8192]", "[{y}8192, {x}8192]"},    // a split chain
      {"[8192, {x, y}8192]", "[{y, x}8192, 8192]"},    // strided all-to-all blocks
  };
  const std::uint64_t page = std::uint64_t{2} << 20;
  std::uint64_t most = 0;
  for (const problem& q : problems) {
    const redist::program p =
        redist::synthesize("{x: 2, y: 4}", q.from, q.to, {.element_bytes = 4, .goal = redist::objective::bytes});
    INFO(q.from << " -> " << q.to << ": " << p.steps.size() << " steps");
    redist::testing::cuda_sim_backend sim(p.devices(), mem);
    std::vector<cuda_buffer<float>> din, dout;
    std::vector<redist::darray<float>> in, out;
    for (redist::rank_t r = 0; r < p.devices(); ++r) {
      din.emplace_back(redist::local_size(p.m, p.source), 0);
      dout.emplace_back(redist::local_size(p.m, p.target), 0);
      in.emplace_back(p.m, p.source, r, din[r].span());
      out.emplace_back(p.m, p.target, r, dout[r].span());
    }
    std::uint64_t formula = 0;
    for (redist::rank_t r = 0; r < p.devices(); ++r)
      formula += redist::testing::expected_bytes_held(p, 4, {false, false, false, true}, std::uint64_t{1} << 20, r);
    {  // a first run loads what the device loads lazily (the kernel's code)
      redist::executor<float, redist::testing::cuda_sim_backend> warm(sim, p);
      warm.run(std::span<const redist::darray<float>>(in), std::span<redist::darray<float>>(out));
      REDIST_CUDA_CHECK(cudaStreamSynchronize(s.s));
    }
    std::size_t before = 0, built = 0, ran = 0, total = 0;
    REDIST_CUDA_CHECK(cudaMemGetInfo(&before, &total));
    redist::executor<float, redist::testing::cuda_sim_backend> ex(sim, p);
    REDIST_CUDA_CHECK(cudaMemGetInfo(&built, &total));
    ex.run(std::span<const redist::darray<float>>(in), std::span<redist::darray<float>>(out));
    REDIST_CUDA_CHECK(cudaStreamSynchronize(s.s));
    REDIST_CUDA_CHECK(cudaMemGetInfo(&ran, &total));
    const std::uint64_t taken = before - built;
    std::printf("memory: %s -> %s on {x: 2, y: 4}: formula %llu bytes over 8 ranks, cudaMemGetInfo: %llu taken "
                "by the executor, %lld more during the run\n",
                q.from, q.to, static_cast<unsigned long long>(formula), static_cast<unsigned long long>(taken),
                static_cast<long long>(built) - static_cast<long long>(ran));
    CHECK(ex.peak_bytes_held() == redist::testing::expected_bytes_held(p, 4, {false, false, false, true}));
    // Each of the at most 3 buffers per rank rounds up to at most one more page.
    CHECK(taken + page * 3 * p.devices() >= formula);
    CHECK(taken <= formula + page * 3 * p.devices());
    CHECK(ran == built);
    most = std::max(most, formula);
  }
  CHECK(most >= (std::uint64_t{32} << 20));  // the problems need scratch
}

namespace {

/// A one-rank NCCL communicator on device 0, destroyed after the backends that use it.
struct one_rank_comm {
  ncclComm_t comm = nullptr;
  one_rank_comm() {
    int dev = 0;
    REDIST_NCCL_CHECK(ncclCommInitAll(&comm, 1, &dev));
  }
  one_rank_comm(const one_rank_comm&) = delete;
  one_rank_comm& operator=(const one_rank_comm&) = delete;
  ~one_rank_comm() { (void)ncclCommDestroy(comm); }
};

template <class T>
redist::block_io<T> io_of(T* const* send, T* const* recv) {
  return {std::span<T* const>(send, 1), std::span<T* const>(recv, 1)};
}

}  // namespace

TEST_CASE("the NCCL backend on one rank: every collective through NCCL", "[gpu][nccl]") {
  one_rank_comm c;
  for (const bool grouped : {false, true}) {
    INFO((grouped ? "grouped ncclSend/ncclRecv all-to-all" : "ncclAlltoAll"));
    redist::nccl_backend b(c.comm, {.grouped_alltoall = grouped});
    CHECK(b.devices() == 1);
    CHECK(b.rank() == 0);
    CHECK(b.device() == 0);
    CHECK(b.native_alltoall() == (!grouped && NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)));
    const std::vector<redist::rank_t> all = {0};
    b.prepare_groups(all, 1);
    b.prepare_groups(all, 1);
    CHECK(b.cached_groups() == 1);
    CHECK_THROWS_WITH(b.prepare_groups(std::vector<redist::rank_t>{0, 1}, 1),
                      "nccl backend: 2 ranks cannot form groups of 1 over 1 ranks");

    const std::vector<double> v = pattern<double>(1000, 42);
    const cuda_buffer<double> send = upload(v);
    cuda_buffer<double> recv(1000, 0);
    double* sp[1] = {send.data()};
    double* rp[1] = {recv.data()};
    auto check = [&](const char* what) {
      INFO(what);
      CHECK(download(recv, b.stream()) == v);
      REDIST_CUDA_CHECK(cudaMemsetAsync(recv.data(), 0, 1000 * sizeof(double), b.stream()));
    };
    b.allgather<double>(all, io_of(sp, rp), 1000);
    check("allgather");
    b.alltoall<double>(all, io_of(sp, rp), 1000);
    check("alltoall");
    b.permute<double>(all, io_of(sp, rp), 1000);
    check("permute");
    b.allreduce<double>(all, io_of(sp, rp), 1000);
    check("allreduce");
    b.reducescatter<double>(all, io_of(sp, rp), 1000);
    check("reducescatter");
    CHECK_THROWS_WITH(b.allgather<double>(std::vector<redist::rank_t>{0, 0}, io_of(sp, rp), 1),
                      "nccl backend: a collective on a group that prepare_groups did not build");
    // The agreement over NCCL (no MPI here).
    const redist::agreement yes = b.agree(0x1234, true), no = b.agree(0x1234, false);
    CHECK(yes.same);
    CHECK(yes.all_ok);
    CHECK(no.same);
    CHECK_FALSE(no.all_ok);
  }
}

TEST_CASE("the executor with the NCCL backend on one-device meshes", "[gpu][nccl][executor]") {
  one_rank_comm c;
  redist::nccl_backend b(c.comm);
  std::uint64_t runs = 0;
  // Synthesized programs on a mesh of one device (nothing to move), and a program whose
  // every step is a collective of the one rank, so that the executor drives each NCCL call.
  std::vector<redist::program> programs;
  programs.push_back(redist::synthesize("{x: 1}", "[{x}64, 48]", "[64, {x}48]", {.element_bytes = 4}));
  programs.push_back(redist::synthesize("{x: 1, y: 1}", "[{x}6, 10, {y}12]", "[6, {y, x}10, 12]", {.element_bytes = 4}));
  {
    redist::program p = programs.front();
    auto add = [&](redist::op k, int concat, int split) {
      redist::step s;
      s.kind = k;
      s.concat_dim = concat;
      s.split_dim = split;
      s.parts = 1;
      if (k == redist::op::allpermute) s.dest = {0};
      else if (k == redist::op::dynslice) s.index = {0};
      else s.members = {0};
      p.steps.push_back(s);
    };
    add(redist::op::allgather, 1, -1);
    add(redist::op::alltoall, 1, 0);
    add(redist::op::allpermute, -1, -1);
    add(redist::op::dynslice, -1, 1);
    add(redist::op::allreduce, -1, -1);
    add(redist::op::reducescatter, -1, 1);
    programs.push_back(p);
  }
  for (const redist::program& p : programs) {
    INFO(p.steps.size() << " steps on " << redist::mesh_text(p.m).view());
    redist::executor<float, redist::nccl_backend> ex(b, p);
    redist::darray<float> host(p.m, p.source, 0);
    redist::fill_global_index(host);
    const cuda_buffer<float> din = upload(std::vector<float>(host.span().begin(), host.span().end()));
    cuda_buffer<float> dout(redist::local_size(p.m, p.target), 0);
    const redist::darray<float> in(p.m, p.source, 0, din.span());
    redist::darray<float> out(p.m, p.target, 0, dout.span());
    for (int k = 0; k < 2; ++k) {  // the second run reuses buffers and communicators
      ex.run(in, out);
      const redist::darray<float> res(p.m, p.target, 0, download(dout, b.stream()));
      CHECK(redist::check_global_index(res).ok());
      ++runs;
    }
    // A tile in host memory is refused before anything moves.
    redist::darray<float> host_out(p.m, p.target, 0);
    CHECK_THROWS_WITH(ex.run(in, host_out), "output tile of rank 0 is host memory, not memory of CUDA device 0");
    CHECK_THROWS_WITH(ex.run(host, out), "input tile of rank 0 is host memory, not memory of CUDA device 0");
  }
  CHECK(runs == 2 * programs.size());
  CHECK(b.cached_groups() == 1);
}

// On the CPU stand-in it compiles in one unit with nccl_mpi_test.cpp (nccl_emulated_main.cpp).
namespace nccl_gpu_test {
int run(int argc, char** argv) {
  std::string why;
  const int devices = redist::detail::cuda_device_count(&why);
  if (devices == 0) {
    std::printf("SKIPPED: no CUDA device (%s); the NCCL backend's GPU tests need one\n", why.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
}  // namespace nccl_gpu_test

#if !defined(REDIST_NCCL_EMULATED_TESTS)
int main(int argc, char** argv) { return nccl_gpu_test::run(argc, argv); }
#endif
