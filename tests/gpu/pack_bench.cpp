// Bandwidth of the NCCL backend's device pack (split_all: a tile -> its n chunks back to
// back, what an all-to-all sends) and unpack (concat_all: the inverse, what an all-gather
// or all-to-all receives), by the copy kernel (the default) and by the copy engine
// (cuda_pack::copy_engine), against a plain device-to-device copy of the same bytes
// (cudaMemcpyAsync). Every result is also checked element by element against the host's
// pack (runtime/pack.hpp). Bandwidth = tile bytes / time (each byte read once and written
// once, as for the copy).
//
//   nccl_pack_bench [MiB per tile = 256] [repetitions = 20]
//   nccl_pack_bench --count        prints the number of CUDA devices and exits
//
// A second table: the reshard executor's fused messages (runtime/reshard_executor.hpp): many
// arrays' pieces packed back to back into one message and unpacked from it by one batch of
// copies (cuda_memory::strided_batch), and by one strided copy per piece, against a device
// copy of the message's bytes. A third: the same messages converted on the way, f32 tiles to
// a bf16 message and back (cuda_memory::cast_batch, a weight sync's casts).
//
// Prints Markdown tables; exits non-zero if a result is wrong (not if it is slow: the
// goal, pack and unpack at >= 80% of the copy's bandwidth, is reported per row).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "redist/backends/nccl.hpp"
#include "redist/runtime/cast.hpp"
#include "redist/runtime/memory.hpp"
#include "redist/runtime/pack.hpp"

namespace {

struct shape_case {
  std::vector<std::uint64_t> ext;  // scaled to the tile size along dimension 0
  int d;
  std::uint64_t n;
};

std::string ext_text(const std::vector<std::uint64_t>& e) {
  std::string s = "[";
  for (std::size_t i = 0; i < e.size(); ++i) s += (i ? ", " : "") + std::to_string(e[i]);
  return s + "]";
}

/// Milliseconds per call of f, over `reps` calls after two warm-up calls.
template <class F>
float time_ms(cudaStream_t s, int reps, F f) {
  cudaEvent_t a, b;
  REDIST_CUDA_CHECK(cudaEventCreate(&a));
  REDIST_CUDA_CHECK(cudaEventCreate(&b));
  f();
  f();
  REDIST_CUDA_CHECK(cudaEventRecord(a, s));
  for (int i = 0; i < reps; ++i) f();
  REDIST_CUDA_CHECK(cudaEventRecord(b, s));
  REDIST_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  REDIST_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  REDIST_CUDA_CHECK(cudaEventDestroy(a));
  REDIST_CUDA_CHECK(cudaEventDestroy(b));
  return ms / static_cast<float>(reps);
}

/// One piece of a message: the block of columns [lo, lo + n) of a row-major rows x cols
/// float32 tile.
struct piece_spec {
  std::uint64_t rows, cols, lo, n;
};

struct message_case {
  const char* what;
  std::vector<piece_spec> pieces;
};

/// The messages of the fused tables: float32 pieces of tiles of `elements` floats in all.
std::vector<message_case> message_cases(std::uint64_t elements) {
  std::vector<message_case> cases;
  {  // a GPT-style layer stack, TP 2 -> TP 4: each rank sends half the columns it holds of
     // 4 matrices and 2 norms per layer (150 pieces), the matrices scaled to the buffer
    message_case m{"150 arrays: half the columns of 4 matrices and 2 norms a layer", {}};
    const std::uint64_t layers = 25, h = 256;
    std::uint64_t per_layer = 2 * h;
    const std::uint64_t cols[4] = {3 * h / 2, h / 2, 2 * h, 2 * h};
    for (std::uint64_t x : cols) per_layer += x * h;
    const std::uint64_t scale = std::max<std::uint64_t>(1, elements / (layers * per_layer));
    for (std::uint64_t l = 0; l < layers; ++l) {
      for (std::uint64_t x : cols) m.pieces.push_back({h * scale, x, x / 2, x / 2});
      m.pieces.push_back({1, h, 0, h / 2});
      m.pieces.push_back({1, h, h / 2, h / 2});
    }
    cases.push_back(m);
  }
  {  // many small arrays: 1536 contiguous pieces of 16 KiB and 2 KiB rows
    message_case m{"1536 arrays of 16 KiB, whole tiles", {}};
    for (int i = 0; i < 1536; ++i) m.pieces.push_back({8, 512, 0, 512});
    cases.push_back(m);
  }
  {  // one array's pieces for 8 ranks: 8 column blocks of one tile, runs of 512 B
    message_case m{"8 column blocks of one array, runs of 512 B", {}};
    const std::uint64_t cols = 1024, rows = elements / (8 * cols);
    for (std::uint64_t k = 0; k < 8; ++k) m.pieces.push_back({rows, cols, k * cols / 8, cols / 8});
    cases.push_back(m);
  }
  return cases;
}

/// The reshard executor's messages (runtime/reshard_executor.hpp): many arrays' pieces packed
/// back to back into one buffer and unpacked from it, as one batch of copies
/// (cuda_memory::strided_batch, the batch kernel) and one strided copy per piece, against a
/// device copy of the message's bytes. Tiles lie back to back in a, the message in b, the
/// unpacked tiles in c. Prints a table; returns the number of wrong results.
int fused_messages(const redist::cuda_memory& mem, cudaStream_t stream, int reps, std::uint64_t elements,
                   redist::cuda_buffer<float>& a, redist::cuda_buffer<float>& b, redist::cuda_buffer<float>& c,
                   const std::vector<float>& host) {
  using T = float;
  const std::vector<message_case> cases = message_cases(elements);
  std::printf("\n# fused messages: many arrays' pieces packed into one message and unpacked, one batch of copies "
              "(%s) against one strided copy per piece, against a device copy of the message's bytes\n\n",
              mem.pack_engine().c_str());
  std::printf("| message | pieces | MiB | copy GB/s | fused pack GB/s | / copy | fused unpack GB/s | / copy | "
              "per-piece pack / copy | per-piece unpack / copy | checked |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  int wrong = 0;
  double worst = 1e9;
  for (const message_case& m : cases) {
    // The pieces' copies: tile t at offset ta in a (and c), its piece at offset at in b.
    std::vector<redist::detail::byte_copy> pack, unpack;
    std::uint64_t ta = 0, at = 0;
    bool fits = true;
    for (const piece_spec& p : m.pieces) {
      if (ta + p.rows * p.cols > elements) {
        fits = false;
        break;
      }
      redist::detail::strided_copy k;  // bytes: rows runs of n floats
      k.count = 1;
      k.rows = p.rows;
      k.width = p.n * sizeof(T);
      k.src = (ta + p.lo) * sizeof(T);
      k.src_pitch = p.cols * sizeof(T);
      k.src_step = p.rows * k.src_pitch;
      k.dst = at * sizeof(T);
      k.dst_pitch = k.width;
      k.dst_step = p.rows * k.width;
      const auto* A = reinterpret_cast<const std::byte*>(a.data());
      auto* B = reinterpret_cast<std::byte*>(b.data());
      auto* C = reinterpret_cast<std::byte*>(c.data());
      pack.push_back({k, A, B});
      redist::detail::strided_copy u = k;
      std::swap(u.src, u.dst);
      std::swap(u.src_pitch, u.dst_pitch);
      std::swap(u.src_step, u.dst_step);
      unpack.push_back({u, B, C});
      ta += p.rows * p.cols;
      at += p.rows * p.n;
    }
    if (!fits) continue;
    const double bytes = static_cast<double>(at * sizeof(T));
    auto gbs = [&](float ms) { return bytes / (static_cast<double>(ms) * 1e6); };
    const double copy = gbs(time_ms(stream, reps, [&] {
      REDIST_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), at * sizeof(T), cudaMemcpyDeviceToDevice, stream));
    }));
    const double fp = gbs(time_ms(stream, reps, [&] { mem.strided_batch(pack); }));
    const double fu = gbs(time_ms(stream, reps, [&] { mem.strided_batch(unpack); }));
    const double pp = gbs(time_ms(stream, reps, [&] {
      for (const auto& x : pack) mem.strided(x.c, x.src, x.dst);
    }));
    const double pu = gbs(time_ms(stream, reps, [&] {
      for (const auto& x : unpack) mem.strided(x.c, x.src, x.dst);
    }));
    // Check: b = the pieces of a back to back; c = a on every piece.
    REDIST_CUDA_CHECK(cudaMemset(b.data(), 0, at * sizeof(T)));
    REDIST_CUDA_CHECK(cudaMemset(c.data(), 0, ta * sizeof(T)));
    mem.strided_batch(pack);
    mem.strided_batch(unpack);
    REDIST_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<T> gb(at), gc(ta);
    REDIST_CUDA_CHECK(cudaMemcpy(gb.data(), b.data(), at * sizeof(T), cudaMemcpyDeviceToHost));
    REDIST_CUDA_CHECK(cudaMemcpy(gc.data(), c.data(), ta * sizeof(T), cudaMemcpyDeviceToHost));
    bool ok = true;
    std::uint64_t t0 = 0, p0 = 0;
    for (const piece_spec& p : m.pieces) {
      for (std::uint64_t r = 0; r < p.rows && ok; ++r)
        for (std::uint64_t j = 0; j < p.n && ok; ++j) {
          const T want = host[t0 + r * p.cols + p.lo + j];
          ok = gb[p0 + r * p.n + j] == want && gc[t0 + r * p.cols + p.lo + j] == want;
        }
      t0 += p.rows * p.cols;
      p0 += p.rows * p.n;
    }
    wrong += ok ? 0 : 1;
    worst = std::min(worst, std::min(fp, fu) / copy);
    std::printf("| %s | %zu | %.1f | %.0f | %.0f | %.0f%% | %.0f | %.0f%% | %.0f%% | %.0f%% | %s |\n", m.what,
                m.pieces.size(), bytes / (1 << 20), copy, fp, 100 * fp / copy, fu, 100 * fu / copy, 100 * pp / copy,
                100 * pu / copy, ok ? "yes" : "WRONG");
  }
  std::printf("\nworst fused pack or unpack / copy: %.0f%% (goal: >= 80%%); %d wrong results\n", 100 * worst, wrong);
  return wrong;
}

/// A weight sync's messages, f32 on the trainer and bf16 on the wire and the engine
/// (reshard_array::target_dtype): the same pieces packed from float32 tiles into a bf16
/// message and unpacked from it into float32 tiles (the widening direction), each as one
/// batch of converting copies (cuda_memory::cast_batch, the converting kernel), against a
/// device copy of the float32 message and against the batch kernel's plain fused pack.
/// Bandwidth = float32 bytes / time for all (a conversion reads or writes half of them as
/// bf16). Checked against the host's conversions, bit for bit. Returns the wrong results.
int converting_messages(const redist::cuda_memory& mem, cudaStream_t stream, int reps, std::uint64_t elements,
                        redist::cuda_buffer<float>& a, redist::cuda_buffer<float>& b, redist::cuda_buffer<float>& c,
                        const std::vector<float>& host) {
  using T = float;
  using redist::element_type;
  std::printf("\n# converting messages: the same pieces packed from f32 tiles into a bf16 message and unpacked "
              "into f32 tiles, one batch of converting copies, against a device copy of the f32 message and the "
              "plain fused pack (GB/s of f32 bytes)\n\n");
  std::printf("| message | pieces | f32 MiB | copy GB/s | fused pack GB/s | f32 -> bf16 pack GB/s | / copy | "
              "bf16 -> f32 unpack GB/s | / copy | checked |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  int wrong = 0;
  double worst = 1e9;
  for (const message_case& m : message_cases(elements)) {
    std::vector<redist::detail::cast_copy> pack, unpack;
    std::vector<redist::detail::byte_copy> plain;
    std::uint64_t ta = 0, at = 0;  // in elements
    bool fits = true;
    auto* A = reinterpret_cast<std::byte*>(a.data());
    auto* B = reinterpret_cast<std::byte*>(b.data());
    auto* C = reinterpret_cast<std::byte*>(c.data());
    for (const piece_spec& p : m.pieces) {
      if (ta + p.rows * p.cols > elements) {
        fits = false;
        break;
      }
      redist::detail::strided_copy k;  // elements: rows runs of n
      k.rows = p.rows;
      k.width = p.n;
      k.src = ta + p.lo;
      k.src_pitch = p.cols;
      k.src_step = p.rows * p.cols;
      k.dst = at;
      k.dst_pitch = p.n;
      k.dst_step = p.rows * p.n;
      pack.push_back({k, A, element_type::f32, B, element_type::bf16});
      redist::detail::strided_copy u = k;
      std::swap(u.src, u.dst);
      std::swap(u.src_pitch, u.dst_pitch);
      std::swap(u.src_step, u.dst_step);
      unpack.push_back({u, B, element_type::bf16, C, element_type::f32});
      redist::detail::strided_copy kb = k;  // the same pack in bytes, without converting
      for (std::uint64_t* x : {&kb.width, &kb.src, &kb.src_pitch, &kb.src_step, &kb.dst, &kb.dst_pitch, &kb.dst_step})
        *x *= sizeof(T);
      plain.push_back({kb, A, C});
      ta += p.rows * p.cols;
      at += p.rows * p.n;
    }
    if (!fits) continue;
    const double bytes = static_cast<double>(at * sizeof(T));
    auto gbs = [&](float ms) { return bytes / (static_cast<double>(ms) * 1e6); };
    const double copy = gbs(time_ms(stream, reps, [&] {
      REDIST_CUDA_CHECK(cudaMemcpyAsync(c.data(), a.data(), at * sizeof(T), cudaMemcpyDeviceToDevice, stream));
    }));
    const double fp = gbs(time_ms(stream, reps, [&] { mem.strided_batch(plain); }));
    const double cp = gbs(time_ms(stream, reps, [&] { mem.cast_batch(pack); }));
    const double cu = gbs(time_ms(stream, reps, [&] { mem.cast_batch(unpack); }));
    // Check: b = the pieces of a in bf16; c = them widened again, on every piece.
    REDIST_CUDA_CHECK(cudaMemset(b.data(), 0, at * 2));
    REDIST_CUDA_CHECK(cudaMemset(c.data(), 0, ta * sizeof(T)));
    mem.cast_batch(pack);
    mem.cast_batch(unpack);
    REDIST_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<std::uint16_t> gb(at);
    std::vector<T> gc(ta);
    REDIST_CUDA_CHECK(cudaMemcpy(gb.data(), b.data(), at * 2, cudaMemcpyDeviceToHost));
    REDIST_CUDA_CHECK(cudaMemcpy(gc.data(), c.data(), ta * sizeof(T), cudaMemcpyDeviceToHost));
    bool ok = true;
    std::uint64_t t0 = 0, p0 = 0;
    for (const piece_spec& p : m.pieces) {
      for (std::uint64_t r = 0; r < p.rows && ok; ++r)
        for (std::uint64_t j = 0; j < p.n && ok; ++j) {
          const std::uint16_t want = redist::float_to_bf16_bits(host[t0 + r * p.cols + p.lo + j]);
          ok = gb[p0 + r * p.n + j] == want && gc[t0 + r * p.cols + p.lo + j] == redist::bf16_bits_to_float(want);
        }
      t0 += p.rows * p.cols;
      p0 += p.rows * p.n;
    }
    wrong += ok ? 0 : 1;
    worst = std::min(worst, std::min(cp, cu) / copy);
    std::printf("| %s | %zu | %.1f | %.0f | %.0f | %.0f | %.0f%% | %.0f | %.0f%% | %s |\n", m.what, m.pieces.size(),
                bytes / (1 << 20), copy, fp, cp, 100 * cp / copy, cu, 100 * cu / copy, ok ? "yes" : "WRONG");
  }
  std::printf("\nworst converting pack or unpack / copy: %.0f%% (goal: >= 80%%); %d wrong results\n", 100 * worst,
              wrong);
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--count") == 0) {
    std::printf("%d\n", redist::detail::cuda_device_count());
    return 0;
  }
  const std::uint64_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
  try {
    redist::detail::require_cuda_device("nccl_pack_bench");
    REDIST_CUDA_CHECK(cudaSetDevice(0));
    cudaDeviceProp prop{};
    REDIST_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    cudaStream_t stream = nullptr;
    REDIST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const redist::cuda_memory mem(0, stream);
    using T = float;
    const std::uint64_t elements = mib * (1u << 20) / sizeof(T);
    // Tile shapes of `elements` floats (dimension 0 absorbs the size) and the split:
    // runs (contiguous pieces of a chunk) from the whole chunk down to 16 bytes.
    const std::vector<shape_case> cases = {
        {{0, 8192}, 0, 8},           // contiguous chunks: one copy
        {{0, 64, 1024}, 1, 4},       // runs of 64 KiB
        {{0, 8192}, 1, 8},           // runs of 4 KiB
        {{0, 8192}, 1, 64},          // runs of 512 B
        {{0, 256, 256}, 2, 8},       // runs of 128 B
        {{0, 16, 512}, 1, 2},        // runs of 16 KiB, split in the middle dimension
        {{0, 1024}, 1, 256},         // runs of 16 B
        {{0, 256}, 1, 256},          // runs of 4 B: one element
        {{0, 4, 4, 4, 256}, 3, 4},   // 5-d, runs of 1 KiB
    };
    const redist::cuda_memory engine(0, stream, redist::cuda_pack::copy_engine);
    std::printf("# device pack/unpack bandwidth: %s, %llu MiB float32 tiles, %d repetitions; strided copies by %s "
                "(default) and by the copy engine\n\n",
                prop.name, static_cast<unsigned long long>(mib), reps, mem.pack_engine().c_str());
    std::printf("| tile | split dim | n | run bytes | copy GB/s | pack GB/s | pack / copy | unpack GB/s | unpack / copy | "
                "2-D copies | copy engine pack / copy | copy engine unpack / copy | checked |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    redist::cuda_buffer<T> a(elements, 0), b(elements, 0), c(elements, 0);
    std::vector<T> host(elements), want(elements), got(elements);
    for (std::uint64_t i = 0; i < elements; ++i) host[i] = static_cast<T>(i % 16777216);
    REDIST_CUDA_CHECK(cudaMemcpy(a.data(), host.data(), elements * sizeof(T), cudaMemcpyHostToDevice));
    REDIST_CUDA_CHECK(cudaDeviceSynchronize());
    const double bytes = static_cast<double>(elements * sizeof(T));
    int wrong = 0;
    double worst = 1e9, worst_engine = 1e9;
    for (shape_case k : cases) {
      std::uint64_t rest = 1;
      for (std::size_t i = 1; i < k.ext.size(); ++i) rest *= k.ext[i];
      k.ext[0] = elements / rest;
      if (k.ext[0] == 0 || k.ext[static_cast<std::size_t>(k.d)] % k.n != 0) continue;
      std::vector<std::uint64_t> cext = k.ext;
      cext[static_cast<std::size_t>(k.d)] /= k.n;
      const std::uint64_t size = k.ext[0] * rest;
      const auto plan = redist::detail::split_all_plan(k.ext, k.d, k.n, size, size);
      const auto shape = redist::detail::device_copy(plan, sizeof(T), SIZE_MAX);
      const std::span<const T> src(a.data(), size);
      const double sz = static_cast<double>(size * sizeof(T)) / bytes;  // share of the nominal tile
      auto gbs = [&](float ms) { return bytes * sz / (static_cast<double>(ms) * 1e6); };
      const double copy_gbs = gbs(time_ms(stream, reps, [&] {
        REDIST_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), size * sizeof(T), cudaMemcpyDeviceToDevice, stream));
      }));
      double pack[2], unpack[2];
      bool ok = true;
      for (int e = 0; e < 2; ++e) {
        const redist::cuda_memory& m = e == 0 ? mem : engine;
        pack[e] = gbs(time_ms(stream, reps, [&] { m.split_all<T>(src, k.ext, k.d, k.n, b.span().first(size)); }));
        unpack[e] = gbs(time_ms(stream, reps, [&] {
          m.concat_all<T>(std::span<const T>(b.data(), size), cext, k.d, k.n, c.span().first(size));
        }));
        // Check: b = split_all(a) and c = concat_all(b) = a, element by element.
        REDIST_CUDA_CHECK(cudaStreamSynchronize(stream));
        redist::split_all<T>(std::span<const T>(host.data(), size), k.ext, k.d, k.n, std::span<T>(want.data(), size));
        REDIST_CUDA_CHECK(cudaMemcpy(got.data(), b.data(), size * sizeof(T), cudaMemcpyDeviceToHost));
        ok = ok && std::memcmp(got.data(), want.data(), size * sizeof(T)) == 0;
        REDIST_CUDA_CHECK(cudaMemcpy(got.data(), c.data(), size * sizeof(T), cudaMemcpyDeviceToHost));
        ok = ok && std::memcmp(got.data(), host.data(), size * sizeof(T)) == 0;
        REDIST_CUDA_CHECK(cudaMemset(b.data(), 0, size * sizeof(T)));
        REDIST_CUDA_CHECK(cudaMemset(c.data(), 0, size * sizeof(T)));
      }
      wrong += ok ? 0 : 1;
      worst = std::min(worst, std::min(pack[0], unpack[0]) / copy_gbs);
      worst_engine = std::min(worst_engine, std::min(pack[1], unpack[1]) / copy_gbs);
      std::printf("| %s | %d | %llu | %llu | %.0f | %.0f | %.0f%% | %.0f | %.0f%% | %llu | %.0f%% | %.0f%% | %s |\n",
                  ext_text(k.ext).c_str(), k.d, static_cast<unsigned long long>(k.n),
                  static_cast<unsigned long long>(plan.width * sizeof(T)), copy_gbs, pack[0], 100 * pack[0] / copy_gbs,
                  unpack[0], 100 * unpack[0] / copy_gbs,
                  static_cast<unsigned long long>(shape.per_run ? plan.count * plan.rows : shape.copy.count),
                  100 * pack[1] / copy_gbs, 100 * unpack[1] / copy_gbs, ok ? "yes" : "WRONG");
    }
    std::printf("\nworst pack or unpack / copy: %.0f%% by %s (goal: >= 80%%), %.0f%% by the copy engine; %d wrong "
                "results\n",
                100 * worst, mem.pack_engine().c_str(), 100 * worst_engine, wrong);
    wrong += fused_messages(mem, stream, reps, elements, a, b, c, host);
    wrong += converting_messages(mem, stream, reps, elements, a, b, c, host);
    REDIST_CUDA_CHECK(cudaStreamDestroy(stream));
    return wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nccl_pack_bench: %s\n", e.what());
    return 1;
  }
}
