// redist/runtime/memory.hpp -- where the executor's buffers live and how it copies and
// packs them: the memory-space customization point of a backend.
//
// The executor (runtime/executor.hpp) reads the caller's input tiles, writes the caller's
// output tiles, owns at most one scratch buffer and two small pack buffers per local rank,
// and packs and unpacks blocks between them (runtime/pack.hpp). By default all of that is host memory and std::memcpy
// (`host_memory`). A backend whose collectives work on other memory -- NCCL: memory of
// one CUDA device, with every operation ordered on a CUDA stream -- names its memory
// space with a member `b.memory()`; memory_of(b) returns it, or host_memory{} when the
// backend has none (the host and MPI backends).
//
// Contract of a memory space M for element type T (concept memory_space_for<M, T>); `mem`
// is what b.memory() returns, a small handle that the executor may call b.memory() for
// again at any time:
//
//   M::host_accessible    constexpr bool: the memory is ordinary host memory, so the
//                         executor may hand out tiles it allocates itself (the run()
//                         overloads returning owned darrays exist only then).
//   mem.template allocate<T>(n)
//                         an owning buffer of n elements, with .data() -> T*; freed by
//                         its destructor; movable. Called when the executor is built,
//                         never during a run. May throw redist_error (out of memory).
//   mem.copy(dst, src, n) copy n elements from src to dst (T*, const T*; no overlap).
//   mem.fill(dst, n, v)   store the value v (const T&) in n elements from dst (a partial
//                         step's identity, lower/partial.hpp).
//   mem.split_copy(tile, ext, d, n, m, chunk)
//   mem.concat_copy(chunk, chunk_ext, d, n, m, tile)
//   mem.split_all(tile, ext, d, n, chunks)
//   mem.concat_all(chunks, chunk_ext, d, n, tile)
//                         pack.hpp's functions of the same names, with the same arguments
//                         (spans over this memory), checks and postconditions.
//   mem.strided(c, src, dst)
//                         execute the strided copy c (pack.hpp's detail::strided_copy) from
//                         src to dst (const T*, T*; no overlap): the executor's chunked
//                         packing and unpacking of blocks (block_piece_copies).
//   mem.strided_batch(copies)
//                         optional: execute the byte copies `copies` (detail::byte_copy,
//                         none writing where another reads or writes) in any order, as
//                         few operations as it can (the NCCL backend: one kernel launch
//                         per 48); without it, detail::strided_copies makes one
//                         mem.strided each. The reshard executor packs and unpacks its
//                         messages with it (runtime/reshard_executor.hpp).
//   mem.cast_batch(copies)
//                         optional: execute the converting copies `copies`
//                         (runtime/cast.hpp detail::cast_copy, none writing where another
//                         reads or writes) with cast.hpp's conversions, bit for bit: a
//                         reshard that changes an array's element type
//                         (reshard_array::target_dtype) needs it, and is refused before
//                         anything moves on a backend whose memory has none. Host memory
//                         converts on the CPU, the NCCL backend's with a kernel.
//   mem.cast_unavailable()
//                         optional, with cast_batch: "" if cast_batch can run, otherwise a
//                         phrase saying why not ("cannot run on CUDA device 0: NVRTC could
//                         not compile ..."); the reshard executor refuses a cast with it.
//   mem.check_pointer(p)  for a user's tile p (const T*): "" if the executor may read and
//                         write it through this memory space, otherwise a phrase saying
//                         why not ("is host memory, not memory of CUDA device 0"); called
//                         on every tile before the agreement, so a misplaced tile is
//                         refused on every rank before anything moves.
//
// Ordering: the calls may return before their copies are done (asynchronous, e.g. on a
// CUDA stream), provided that every copy and every data-moving call of the backend is
// executed in the order the executor makes them (one stream). The executor never waits:
// when run() returns, the output tiles are complete in that order -- at once for host
// memory, for a stream once it gets there (the caller synchronizes or keeps working on
// that stream). Step times (executor::stats) then measure the host time spent issuing.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "redist/runtime/cast.hpp"
#include "redist/runtime/huge_pages.hpp"
#include "redist/runtime/pack.hpp"

namespace redist {

/// The default memory space: host memory (buffers on transparent huge pages from 2 MiB on,
/// runtime/huge_pages.hpp: MPI and single copy move them faster), pack.hpp's copies.
struct host_memory {
  static constexpr bool host_accessible = true;

  template <class T>
  [[nodiscard]] host_vector<T> allocate(std::size_t n) const {
    return host_vector<T>(n);
  }
  template <class T>
  void copy(T* dst, const T* src, std::size_t n) const {
    if (n != 0) std::memcpy(dst, src, n * sizeof(T));
  }
  template <class T>
  void fill(T* dst, std::size_t n, const T& v) const {
    std::fill_n(dst, n, v);
  }
  template <class T>
  void split_copy(std::span<const T> tile, std::span<const std::uint64_t> ext, int d, std::uint64_t n, std::uint64_t m,
                  std::span<T> chunk) const {
    redist::split_copy<T>(tile, ext, d, n, m, chunk);
  }
  template <class T>
  void concat_copy(std::span<const T> chunk, std::span<const std::uint64_t> chunk_ext, int d, std::uint64_t n,
                   std::uint64_t m, std::span<T> tile) const {
    redist::concat_copy<T>(chunk, chunk_ext, d, n, m, tile);
  }
  template <class T>
  void split_all(std::span<const T> tile, std::span<const std::uint64_t> ext, int d, std::uint64_t n,
                 std::span<T> chunks) const {
    redist::split_all<T>(tile, ext, d, n, chunks);
  }
  template <class T>
  void concat_all(std::span<const T> chunks, std::span<const std::uint64_t> chunk_ext, int d, std::uint64_t n,
                  std::span<T> tile) const {
    redist::concat_all<T>(chunks, chunk_ext, d, n, tile);
  }
  template <class T>
  void strided(const detail::strided_copy& c, const T* src, T* dst) const {
    detail::host_strided_copy(c, src, dst);
  }
  void cast_batch(std::span<const detail::cast_copy> copies) const {
    for (const detail::cast_copy& c : copies) detail::host_cast_copy(c);
  }
  template <class T>
  [[nodiscard]] std::string check_pointer(const T* /*p*/) const {
    return {};
  }
};

template <class M, class T>
concept memory_space_for =
    std::is_trivially_copyable_v<T> && std::same_as<std::remove_cvref_t<decltype(M::host_accessible)>, bool> &&
    requires(M& mem, T* p, const T* cp, std::size_t n, std::span<const T> in, std::span<T> out,
             std::span<const std::uint64_t> ext, int d, std::uint64_t parts) {
      { mem.template allocate<T>(n).data() } -> std::same_as<T*>;
      mem.copy(p, cp, n);
      mem.fill(p, n, *cp);
      mem.split_copy(in, ext, d, parts, parts, out);
      mem.concat_copy(in, ext, d, parts, parts, out);
      mem.split_all(in, ext, d, parts, out);
      mem.concat_all(in, ext, d, parts, out);
      mem.strided(detail::strided_copy{}, cp, p);
      { mem.check_pointer(cp) } -> std::convertible_to<std::string>;
    };

namespace detail {
/// One strided copy of bytes (pack.hpp's strided_copy of 1-byte elements) from src to dst.
struct byte_copy {
  strided_copy c;
  const std::byte* src = nullptr;
  std::byte* dst = nullptr;
};

/// Execute `copies` in memory space `mem` (none writing where another reads or writes): all
/// at once where the space has strided_batch, otherwise one mem.strided each.
template <class M>
void strided_copies(const M& mem, std::span<const byte_copy> copies) {
  if constexpr (requires { mem.strided_batch(copies); }) {
    mem.strided_batch(copies);
  } else {
    for (const byte_copy& b : copies) mem.strided(b.c, b.src, b.dst);
  }
}
}  // namespace detail

/// The memory space of a backend: b.memory() if it has one, otherwise host_memory{}.
template <class B>
decltype(auto) memory_of(B& b) {
  if constexpr (requires { b.memory(); }) return b.memory();
  else return host_memory{};
}

/// The memory space type of backend B.
template <class B>
using memory_space_t = std::remove_cvref_t<decltype(memory_of(std::declval<B&>()))>;

static_assert(memory_space_for<host_memory, float>);

}  // namespace redist
