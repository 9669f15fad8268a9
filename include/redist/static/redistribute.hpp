// redist/static/redistribute.hpp -- execute a compile-time plan:
//   auto z = redist::redistribute<Z>(comm, y);   // y: darray<float, Y>, z: darray<float, Z>
// through any backend (runtime/backend.hpp). With a backend that drives one rank (MPI,
// NCCL) pass that rank's tile; with one that drives several (the host backend drives all
// D simulated devices) pass their tiles, in local_ranks() order.
#pragma once

#include <span>
#include <vector>

#include "redist/runtime/backend.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/static/darray.hpp"
#include "redist/static/plan.hpp"

namespace redist {

namespace detail {
/// Run-time views borrowing static tiles' memory (the executor only reads its input).
template <class T, class A>
std::vector<darray<T>> borrow(std::span<const darray<T, A>> xs) {
  std::vector<darray<T>> v;
  v.reserve(xs.size());
  for (const auto& x : xs)
    v.emplace_back(A::mesh_type::value, A::value, x.device(), std::span<T>(const_cast<T*>(x.data()), x.size()));
  return v;
}
template <class T, class A>
std::vector<darray<T>> borrow(std::span<darray<T, A>> xs) {
  std::vector<darray<T>> v;
  v.reserve(xs.size());
  for (auto& x : xs) v.emplace_back(A::mesh_type::value, A::value, x.device(), x.span());
  return v;
}

/// Run a program from tiles of static type A to new tiles of static type B.
template <class B, class T, class A, class Backend>
std::vector<darray<T, B>> run_static(executor<T, Backend>& ex, std::span<const rank_t> local,
                                     std::span<const darray<T, A>> xs) {
  if (xs.size() != local.size())
    throw redist_error(errc::runtime, "the backend drives " + std::to_string(local.size()) + " ranks but " +
                                          std::to_string(xs.size()) + " tiles were given");
  std::vector<darray<T, B>> out;
  out.reserve(local.size());
  for (std::size_t i = 0; i < local.size(); ++i) {
    if (xs[i].device() != local[i])
      throw redist_error(errc::runtime, "tile " + std::to_string(i) + " belongs to device " +
                                            std::to_string(xs[i].device()) + ", the backend's rank there is " +
                                            std::to_string(local[i]));
    out.emplace_back(local[i]);
  }
  std::vector<darray<T>> in = borrow(xs), res = borrow(std::span<darray<T, B>>(out));
  ex.run(std::span<const darray<T>>(in), std::span<darray<T>>(res));
  return out;
}
}  // namespace detail

/// Redistributes arrays of static type A to static type B with one compile-time plan,
/// keeping the executor (and its buffers) for repeated use.
template <class A, class B, class T, class Backend>
  requires redistributable<A, B> && backend_for<Backend, T>
class redistributor {
 public:
  static constexpr auto plan = plan_for<A, B, plan_budget{}, plan_options{objective::time, sizeof(T)}>();

  explicit redistributor(Backend& comm) : comm_(comm), ex_(comm, plan.to_program(sizeof(T))) {}

  /// The tiles of all ranks the backend drives, in local_ranks() order.
  std::vector<darray<T, B>> operator()(std::span<const darray<T, A>> xs) {
    return detail::run_static<B>(ex_, comm_.local_ranks(), xs);
  }
  /// The tile of the one rank the backend drives.
  darray<T, B> operator()(const darray<T, A>& x) {
    return std::move(detail::run_static<B>(ex_, comm_.local_ranks(), std::span<const darray<T, A>>(&x, 1)).front());
  }
  [[nodiscard]] const executor<T, Backend>& exec() const { return ex_; }

 private:
  Backend& comm_;
  executor<T, Backend> ex_;
};

/// Redistribute the tile of the one rank `comm` drives (MPI, NCCL).
template <class B, class T, class A, class Backend>
  requires redistributable<A, B> && backend_for<Backend, T>
darray<T, B> redistribute(Backend& comm, const darray<T, A>& x) {
  return redistributor<A, B, T, Backend>(comm)(x);
}

/// Redistribute the tiles of every rank `comm` drives (the host backend: all devices).
template <class B, class T, class A, class Backend>
  requires redistributable<A, B> && backend_for<Backend, T>
std::vector<darray<T, B>> redistribute(Backend& comm, std::span<const darray<T, A>> xs) {
  return redistributor<A, B, T, Backend>(comm)(xs);
}
template <class B, class T, class A, class Backend>
  requires redistributable<A, B> && backend_for<Backend, T>
std::vector<darray<T, B>> redistribute(Backend& comm, const std::vector<darray<T, A>>& xs) {
  return redistributor<A, B, T, Backend>(comm)(std::span<const darray<T, A>>(xs));
}

}  // namespace redist
