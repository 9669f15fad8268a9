// redist/runtime/darray.hpp -- a distributed array as one device sees it: its local tile
// (row-major, owned or borrowed memory) plus its distributed type and mesh.
//
//   local_tile<T>   extents + row-major storage (owned: allocated on transparent huge
//                   pages from 2 MiB on, runtime/huge_pages.hpp, or a std::vector<T> the
//                   caller gave; or a std::span<T> it borrows); knows nothing about meshes.
//   darray<T>       a local_tile<T> that is device `device()`'s tile of the distributed
//                   type `type()` over mesh `mesh()` (default device map, DESIGN.md sec. 2).
//
// `darray<T>` is `darray<T, void>`: the run-time array, whose type is a value. The
// compile-time layer (static/) defines `darray<T, Type>` for a static type `Type`; both
// names coexist because only the `void` specialization is defined here.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "redist/box.hpp"
#include "redist/core/config.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/program.hpp"
#include "redist/runtime/huge_pages.hpp"

namespace redist {

/// Extents of a row-major tile (at most max_dims dimensions).
struct extents {
  int rank = 0;
  std::array<std::uint64_t, max_dims> e{};

  [[nodiscard]] std::uint64_t operator[](int d) const { return e[static_cast<std::size_t>(d)]; }
  [[nodiscard]] std::uint64_t& operator[](int d) { return e[static_cast<std::size_t>(d)]; }
  [[nodiscard]] std::span<const std::uint64_t> span() const { return {e.data(), static_cast<std::size_t>(rank)}; }
  [[nodiscard]] std::uint64_t size() const {
    std::uint64_t s = 1;
    for (int d = 0; d < rank; ++d) s *= e[static_cast<std::size_t>(d)];
    return s;
  }
  bool operator==(const extents& o) const {
    if (rank != o.rank) return false;
    for (int d = 0; d < rank; ++d)
      if (e[static_cast<std::size_t>(d)] != o.e[static_cast<std::size_t>(d)]) return false;
    return true;
  }
};

/// The tile extents of a distributed type (one device's local shape).
inline extents tile_extents(const device_mesh& m, const dist_type& t) {
  extents x;
  x.rank = t.rank;
  for (int d = 0; d < t.rank; ++d) x[d] = tile(m, t.dims[d]);
  return x;
}

/// The padded tile extents of a box layout (redist/box.hpp: per dimension its longest box).
inline extents tile_extents(const box_layout& l) {
  extents x;
  x.rank = l.rank();
  const auto pad = l.padded();
  for (int d = 0; d < x.rank; ++d) x[d] = pad[static_cast<std::size_t>(d)];
  return x;
}

/// The global extents of a distributed type.
inline extents global_extents(const dist_type& t) {
  extents x;
  x.rank = t.rank;
  for (int d = 0; d < t.rank; ++d) x[d] = t.dims[d].global;
  return x;
}

/// "[4, 8]"
inline std::string extents_text(const extents& x) {
  std::string s = "[";
  for (int d = 0; d < x.rank; ++d) s += (d ? ", " : "") + std::to_string(x[d]);
  return s + "]";
}

/// A row-major tile: extents plus storage, owned (allocated here, on transparent huge pages
/// from huge_page_bytes on, runtime/huge_pages.hpp; or a std::vector<T> the caller gave) or
/// borrowed (a std::span<T> the caller keeps alive). Copying an owned tile copies the data;
/// copying a borrowed tile copies the view.
template <class T>
class local_tile {
  static_assert(std::is_trivially_copyable_v<T>, "redist tiles hold trivially copyable elements");

 public:
  using value_type = T;

  local_tile() = default;
  /// An owned tile, value-initialized.
  explicit local_tile(const extents& x) : ext_(x), owned_(x.size()), data_(owned_.data()), size_(owned_.size()) {}
  /// An owned tile taking `data`, which must hold exactly x.size() elements.
  local_tile(const extents& x, std::vector<T> data) : ext_(x), given_(std::move(data)) {
    check_size(given_.size());
    data_ = given_.data();
    size_ = given_.size();
  }
  /// A borrowed tile over `memory`, which must hold exactly x.size() elements.
  local_tile(const extents& x, std::span<T> memory) : ext_(x), data_(memory.data()), size_(memory.size()), borrowed_(true) {
    check_size(memory.size());
  }

  /// A copy of an owned tile is allocated here, whichever memory the original owns.
  local_tile(const local_tile& o) : ext_(o.ext_), borrowed_(o.borrowed_) {
    if (!borrowed_) owned_.assign(o.data_, o.data_ + o.size_);
    data_ = borrowed_ ? o.data_ : owned_.data();
    size_ = o.size_;
  }
  local_tile(local_tile&& o) noexcept
      : ext_(o.ext_),
        owned_(std::move(o.owned_)),
        given_(std::move(o.given_)),
        data_(o.data_),
        size_(o.size_),
        borrowed_(o.borrowed_) {
    o.release();
  }
  local_tile& operator=(const local_tile& o) {
    if (this != &o) *this = local_tile(o);
    return *this;
  }
  local_tile& operator=(local_tile&& o) noexcept {
    ext_ = o.ext_;
    owned_ = std::move(o.owned_);
    given_ = std::move(o.given_);
    data_ = o.data_;
    size_ = o.size_;
    borrowed_ = o.borrowed_;
    o.release();
    return *this;
  }
  ~local_tile() = default;

  [[nodiscard]] const extents& shape() const { return ext_; }
  [[nodiscard]] int rank() const { return ext_.rank; }
  [[nodiscard]] std::uint64_t extent(int d) const { return ext_[d]; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] T* data() { return data_; }
  [[nodiscard]] const T* data() const { return data_; }
  [[nodiscard]] std::span<T> span() { return {data_, size_}; }
  [[nodiscard]] std::span<const T> span() const { return {data_, size_}; }
  [[nodiscard]] bool owns_memory() const { return !borrowed_; }

  /// Element at a multi-index (row-major).
  [[nodiscard]] const T& at(std::span<const std::uint64_t> idx) const { return data_[linear(idx)]; }
  [[nodiscard]] T& at(std::span<const std::uint64_t> idx) { return data_[linear(idx)]; }

 private:
  void check_size(std::size_t n) const {
    if (n != ext_.size())
      throw redist_error(errc::runtime, "wrong buffer size: a tile of shape " + extents_text(ext_) + " needs " +
                                            std::to_string(ext_.size()) + " elements, the buffer holds " +
                                            std::to_string(n));
  }
  [[nodiscard]] std::size_t linear(std::span<const std::uint64_t> idx) const {
    std::uint64_t l = 0;
    for (int d = 0; d < ext_.rank; ++d) l = l * ext_[d] + idx[static_cast<std::size_t>(d)];
    return static_cast<std::size_t>(l);
  }
  void release() noexcept {
    owned_.clear();
    given_.clear();
    data_ = nullptr;
    size_ = 0;
    borrowed_ = false;
  }

  extents ext_{};
  host_vector<T> owned_;  // allocated here
  std::vector<T> given_;  // or taken from the caller
  T* data_ = nullptr;
  std::size_t size_ = 0;
  bool borrowed_ = false;
};

/// The distributed array. Only `darray<T, void>` (the run-time one) is defined here; see
/// the header comment.
template <class T, class Type = void>
class darray;

/// One device's view of a distributed array of run-time type: the tile of device
/// `device()` (a rank under the default device map) of type `type()` over `mesh()`.
template <class T>
class darray<T, void> {
 public:
  using value_type = T;

  darray() = default;
  /// An owned, value-initialized tile.
  darray(const redist::device_mesh& m, const dist_type& t, rank_t device) : darray(m, t, device, checked_extents(m, t, device)) {}
  /// An owned tile taking `data` (exactly localsize(t) elements).
  darray(const redist::device_mesh& m, const dist_type& t, rank_t device, std::vector<T> data)
      : m_(m), t_(t), device_(device), tile_(checked_extents(m, t, device), std::move(data)) {}
  /// A tile borrowing `memory` (exactly localsize(t) elements), which the caller keeps alive.
  darray(const redist::device_mesh& m, const dist_type& t, rank_t device, std::span<T> memory)
      : m_(m), t_(t), device_(device), tile_(checked_extents(m, t, device), memory) {}

  /// No tile: the part of an array typed on mesh m that a rank outside the mesh holds (a
  /// program on device sets, DESIGN.md section 2). Empty; holds() is false.
  static darray none(const redist::device_mesh& m, const dist_type& t) {
    if (error e = check(m, t)) throw redist_error(e);
    extents x;  // zero along every dimension
    x.rank = t.rank;
    return darray(m, t, no_device, x);
  }
  /// Device (mesh position) of a rank outside the mesh.
  static constexpr rank_t no_device = UINT32_MAX;

  /// World rank r's tile of box layout l (redist/box.hpp): an owned, value-initialized padded
  /// tile holding r's box at its start, or, for a rank with no box, no tile (holds() false).
  /// Its type is the replicated type of the global shape; device() is the world rank.
  static darray of_layout(const box_layout& l, rank_t r) {
    darray a = boxed(l, r);
    a.tile_ = local_tile<T>(a.tile_.shape());
    return a;
  }
  /// The same tile borrowing `memory` (exactly the padded tile's elements; none for a rank
  /// with no box), which the caller keeps alive.
  static darray of_layout(const box_layout& l, rank_t r, std::span<T> memory) {
    darray a = boxed(l, r);
    if (memory.size() != a.tile_.shape().size())
      throw redist_error(errc::runtime, "rank " + std::to_string(r) + "'s tile of the box layout has " +
                                            std::to_string(a.tile_.shape().size()) + " elements, the memory " +
                                            std::to_string(memory.size()));
    a.tile_ = local_tile<T>(a.tile_.shape(), memory);
    return a;
  }
  /// A tile of a box layout (of_layout).
  [[nodiscard]] bool of_box_layout() const { return boxed_; }
  /// The box of global indices the tile holds (of a box layout, or of its type).
  [[nodiscard]] box held_box() const {
    box b;
    b.rank = rank();
    for (int d = 0; d < b.rank; ++d) {
      b.lo[static_cast<std::size_t>(d)] = holds() ? offset(d) : 0;
      b.hi[static_cast<std::size_t>(d)] = b.lo[static_cast<std::size_t>(d)] + (holds() ? held_extent(d) : 0);
    }
    return b;
  }

  [[nodiscard]] const redist::device_mesh& mesh() const { return m_; }
  [[nodiscard]] const dist_type& type() const { return t_; }
  /// The mesh position (a rank under the default device map) whose tile this is.
  [[nodiscard]] rank_t device() const { return device_; }
  /// False for none(): the rank is not on the array's mesh.
  [[nodiscard]] bool holds() const { return device_ != no_device; }
  [[nodiscard]] int rank() const { return t_.rank; }

  [[nodiscard]] const local_tile<T>& tile() const { return tile_; }
  [[nodiscard]] local_tile<T>& tile() { return tile_; }
  [[nodiscard]] const extents& local_shape() const { return tile_.shape(); }
  [[nodiscard]] std::uint64_t local_extent(int d) const { return tile_.extent(d); }
  [[nodiscard]] std::uint64_t global_extent(int d) const { return t_.dims[d].global; }
  /// Global index of this tile's first element along d (base offset, Fig. 7a).
  [[nodiscard]] std::uint64_t offset(int d) const {
    return boxed_ ? box_.lo[static_cast<std::size_t>(d)] : base_offset(m_, t_.dims[d], device_);
  }
  /// Indices of dimension d the tile holds: local_extent(d), or fewer on a short or empty
  /// tile of an uneven dimension (DESIGN.md section 2); the rest of the tile is padding.
  [[nodiscard]] std::uint64_t held_extent(int d) const {
    if (boxed_) return box_.extent(d);
    return range_hi(m_, t_.dims[d], device_) - range_lo(m_, t_.dims[d], device_);
  }

  [[nodiscard]] std::size_t size() const { return tile_.size(); }
  [[nodiscard]] T* data() { return tile_.data(); }
  [[nodiscard]] const T* data() const { return tile_.data(); }
  [[nodiscard]] std::span<T> span() { return tile_.span(); }
  [[nodiscard]] std::span<const T> span() const { return tile_.span(); }
  [[nodiscard]] bool owns_memory() const { return tile_.owns_memory(); }

 private:
  darray(const redist::device_mesh& m, const dist_type& t, rank_t device, const extents& x)
      : m_(m), t_(t), device_(device), tile_(x) {}

  static extents checked_extents(const redist::device_mesh& m, const dist_type& t, rank_t device) {
    if (error e = check(m, t)) throw redist_error(e);
    if (device >= m.devices)
      throw redist_error(errc::runtime, "device " + std::to_string(device) + " is not in the mesh " +
                                            std::string(mesh_text(m).view()) + " of " + std::to_string(m.devices) +
                                            " devices");
    return tile_extents(m, t);
  }

  /// The tile of box layout l on rank r, without storage (of_layout).
  static darray boxed(const box_layout& l, rank_t r) {
    if (std::string e = box_layout_problem(l); !e.empty()) throw redist_error(errc::rule, "box layout: " + e);
    if (r >= l.world())
      throw redist_error(errc::runtime, "rank " + std::to_string(r) + " is not in the box layout's world of " +
                                            std::to_string(l.world()) + " ranks");
    dist_type t;
    t.rank = l.rank();
    for (int d = 0; d < t.rank; ++d) t.dims[d].global = l.shape[static_cast<std::size_t>(d)];
    extents x;  // zero along every dimension for a rank with no box
    x.rank = t.rank;
    const auto pad = l.padded();
    if (l.boxes[r])
      for (int d = 0; d < t.rank; ++d) x[d] = pad[static_cast<std::size_t>(d)];
    darray a(redist::device_mesh{}, t, l.boxes[r] ? r : no_device, x);
    a.boxed_ = true;
    if (l.boxes[r]) a.box_ = *l.boxes[r];
    return a;
  }

  redist::device_mesh m_{};
  dist_type t_{};
  rank_t device_ = 0;
  local_tile<T> tile_{};
  bool boxed_ = false;  ///< a tile of a box layout, holding box_
  box box_{};
};

namespace detail {
template <class T, class P, class F>
void for_each_global_impl(const darray<T>& a, P p, F& f) {
  const int r = a.rank();
  if (a.size() == 0) return;
  if (r == 0) {
    f(std::uint64_t{0}, *p);
    return;
  }
  std::array<std::uint64_t, max_dims> gstride{}, lstride{}, off{}, held{}, idx{};
  std::uint64_t s = 1, l = 1;
  for (int d = r - 1; d >= 0; --d) {
    const auto k = static_cast<std::size_t>(d);
    gstride[k] = s;
    s *= a.global_extent(d);
    lstride[k] = l;
    l *= a.local_extent(d);
    off[k] = a.offset(d);
    held[k] = a.held_extent(d);
    if (held[k] == 0) return;  // an empty tile (uneven dimension)
  }
  const std::uint64_t inner = held[static_cast<std::size_t>(r - 1)];
  while (true) {
    std::uint64_t base = 0, at = 0;
    for (int d = 0; d < r; ++d) {
      const auto k = static_cast<std::size_t>(d);
      base += (off[k] + idx[k]) * gstride[k];
      at += idx[k] * lstride[k];
    }
    for (std::uint64_t i = 0; i < inner; ++i) f(base + i, p[at + i]);
    int d = r - 2;
    for (; d >= 0; --d) {  // advance the row counter
      const auto k = static_cast<std::size_t>(d);
      if (++idx[k] < held[k]) break;
      idx[k] = 0;
    }
    if (d < 0) return;
  }
}
}  // namespace detail

/// Call f(global_linear_index, element) for every element the tile holds, in row-major
/// order; global_linear_index is the element's row-major position in the global array.
/// On uneven dimensions only the held box is visited (its elements sit at the start of
/// the padded tile, with the padded tile's strides); padding is never touched.
template <class T, class F>
void for_each_global(darray<T>& a, F&& f) {
  detail::for_each_global_impl(a, a.data(), f);
}
template <class T, class F>
void for_each_global(const darray<T>& a, F&& f) {
  detail::for_each_global_impl(a, a.data(), f);
}

}  // namespace redist
