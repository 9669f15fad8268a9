// redist/static/darray.hpp -- a distributed array whose type is known at compile time:
// `redist::darray<float, Y>` is one device's tile of an array of static type Y. It wraps
// the run-time darray<T> (runtime/darray.hpp) and converts to it for free.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "redist/runtime/darray.hpp"
#include "redist/static/dtype.hpp"

namespace redist {

template <class T, class A>
  requires static_type<A>
class darray<T, A> {
 public:
  using value_type = T;
  using type = A;

  darray() = default;
  /// An owned, value-initialized tile of device `device`.
  explicit darray(rank_t device) : a_(A::mesh_type::value, A::value, device) {}
  /// An owned tile taking `data` (exactly localsize(A) elements).
  darray(rank_t device, std::vector<T> data) : a_(A::mesh_type::value, A::value, device, std::move(data)) {}
  /// A tile borrowing `memory` (exactly localsize(A) elements).
  darray(rank_t device, std::span<T> memory) : a_(A::mesh_type::value, A::value, device, memory) {}
  /// From a run-time array; throws redist_error unless its mesh and type are A's.
  explicit darray(darray<T> a) : a_(std::move(a)) {
    if (!(a_.mesh() == A::mesh_type::value) || !(a_.type() == A::value))
      throw redist_error(errc::runtime, "the array's type " + type_text(a_.mesh(), a_.type()).str() +
                                            " is not the static type " + type_string<A>().str());
  }
  /// From an array of another static type that denotes the same distributed type.
  template <class B>
    requires(static_type<B> && same_type_v<A, B>)
  darray(darray<T, B> b) : a_(std::move(b).dynamic()) {}  // NOLINT(implicit): same type

  static constexpr const device_mesh& mesh() { return A::mesh_type::value; }
  static constexpr const dist_type& dist() { return A::value; }
  /// Elements of a tile: localsize(A).
  static constexpr std::uint64_t local_size() { return local_size_v<A>; }

  [[nodiscard]] rank_t device() const { return a_.device(); }
  [[nodiscard]] std::uint64_t offset(int d) const { return a_.offset(d); }
  [[nodiscard]] std::uint64_t local_extent(int d) const { return a_.local_extent(d); }
  [[nodiscard]] std::size_t size() const { return a_.size(); }
  [[nodiscard]] T* data() { return a_.data(); }
  [[nodiscard]] const T* data() const { return a_.data(); }
  [[nodiscard]] std::span<T> span() { return a_.span(); }
  [[nodiscard]] std::span<const T> span() const { return a_.span(); }

  /// The run-time view (mesh and type as values).
  [[nodiscard]] const darray<T>& dynamic() const& { return a_; }
  [[nodiscard]] darray<T>& dynamic() & { return a_; }
  [[nodiscard]] darray<T> dynamic() && { return std::move(a_); }

 private:
  darray<T> a_;
};

/// The tiles of all devices of a static type (for the host backend, which simulates
/// every device in this process): device r's tile at index r.
template <class T, class A>
  requires static_type<A>
std::vector<darray<T, A>> make_tiles() {
  std::vector<darray<T, A>> v;
  v.reserve(A::mesh_type::value.devices);
  for (std::uint64_t r = 0; r < A::mesh_type::value.devices; ++r) v.emplace_back(static_cast<rank_t>(r));
  return v;
}

}  // namespace redist
