// redist/runtime/huge_pages.hpp -- host memory on transparent huge pages, for tiles and the
// executors' buffers.
//
// A single-copy exchange between the ranks of one node (backends/mpi.hpp) reads or writes
// the other rank's tile by cross-memory attach, and the kernel pins that tile's pages as it
// goes, page by page; Open MPI's own copies between processes (its CMA path for large
// contiguous messages) do the same. With the tiles on 2 MiB transparent huge pages instead of
// 4 KiB pages, the 2-D grid problems of float64 on 8 ranks of one node ran their single-copy
// exchange 1.3-2.1x faster (geomean 1.5x and 1.7x over two runs) and the packed exchange
// 1.5-1.6x (docs/benchmarks.md, "Tiles on huge pages"); the page size of the tile the other
// rank reads (or writes) is what counts.
//
// huge_page_allocator<T> (a standard allocator; host_vector<T> is a std::vector with it)
// gives every allocation of at least huge_page_bytes a mapping of its own, starting on a
// huge page boundary, and asks the kernel for huge pages there (madvise(MADV_HUGEPAGE),
// Linux) before any page is touched: where transparent huge pages are "always" or
// "madvise" (the common default), its pages are faulted in as huge pages while the kernel
// has them free. Smaller allocations, and systems without madvise, get operator new. The
// memory holds the same values either way; only the page size differs, and such an
// allocation costs an mmap and a munmap. redist allocates its own host tiles and buffers
// this way (darray's owned tiles, reshard_tiles, the executors' scratch and message
// buffers). A caller's own tiles come from the caller: allocate them with this allocator,
// or run with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which has glibc's malloc advise
// huge pages for its large blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace redist {

/// The page size of transparent huge pages on x86-64 and of aarch64's 4 KiB-granule kernels,
/// and the least allocation that huge_page_allocator places on them.
inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

namespace detail {
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool address_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool address_sanitizer = true;
#else
inline constexpr bool address_sanitizer = false;
#endif
#else
inline constexpr bool address_sanitizer = false;
#endif

#if defined(__linux__) && defined(MADV_HUGEPAGE)
/// Whether huge_page_allocator maps an allocation of `bytes` itself.
constexpr bool maps_itself(std::size_t bytes) { return bytes >= huge_page_bytes; }
/// The length of its mapping: whole pages of the system's page size (4 KiB on x86-64, up to
/// 64 KiB on aarch64), so that the tail unmapped after it starts on a page boundary.
inline std::size_t mapped_length(std::size_t bytes) {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}
#else
constexpr bool maps_itself(std::size_t) { return false; }
#endif

/// `bytes` of host memory aligned for `align`, on transparent huge pages where they may be
/// (huge_page_allocator). From huge_page_bytes on: a mapping of its own (so that its pages
/// are untouched when the advice is given, whatever the process freed before), starting on
/// a huge page boundary; under AddressSanitizer, posix_memalign instead (which it checks).
inline void* allocate_host(std::size_t bytes, std::size_t align) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (maps_itself(bytes)) {
    if (bytes > SIZE_MAX - 2 * huge_page_bytes) throw std::bad_alloc();
    const std::size_t len = mapped_length(bytes);
    void* p = nullptr;
    if constexpr (address_sanitizer) {
      if (posix_memalign(&p, huge_page_bytes, len) != 0) throw std::bad_alloc();
    } else {
      // Map a huge page more than asked, then unmap what lies before the first boundary and
      // after the length.
      void* m = mmap(nullptr, len + huge_page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) throw std::bad_alloc();
      const auto at = reinterpret_cast<std::uintptr_t>(m);
      const std::uintptr_t start = (at + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
      if (start > at) munmap(m, start - at);
      munmap(reinterpret_cast<void*>(start + len), at + huge_page_bytes - start);  // at least a page
      p = reinterpret_cast<void*>(start);
    }
    // Advice only: where the kernel has no transparent huge pages this fails and the memory
    // stays on small pages.
    (void)madvise(p, len, MADV_HUGEPAGE);
    return p;
  }
#endif
  return align > __STDCPP_DEFAULT_NEW_ALIGNMENT__ ? ::operator new(bytes, std::align_val_t(align))
                                                   : ::operator new(bytes);
}
inline void free_host(void* p, std::size_t bytes, std::size_t align) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (maps_itself(bytes)) {
    if constexpr (address_sanitizer) std::free(p);
    else munmap(p, mapped_length(bytes));
    return;
  }
#endif
  if (align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) ::operator delete(p, std::align_val_t(align));
  else ::operator delete(p);
}
}  // namespace detail

/// A standard allocator whose allocations of at least huge_page_bytes start on a huge page
/// boundary and are advised onto transparent huge pages (see the header comment). Stateless:
/// all instances are equal.
template <class T>
struct huge_page_allocator {
  using value_type = T;
  huge_page_allocator() noexcept = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {}  // NOLINT: converting, as std::allocator

  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(detail::allocate_host(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { detail::free_host(p, n * sizeof(T), alignof(T)); }

  template <class U>
  friend bool operator==(const huge_page_allocator&, const huge_page_allocator<U>&) noexcept {
    return true;
  }
};

/// A std::vector whose storage is on transparent huge pages from huge_page_bytes on.
template <class T>
using host_vector = std::vector<T, huge_page_allocator<T>>;

}  // namespace redist
