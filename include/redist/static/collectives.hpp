// redist/static/collectives.hpp -- typed collectives: each is one collective whose result
// type the compiler computes from the typing rules of Fig. 8 (core/rules.hpp), acting on
// whole axes as a user writes them (the minor-most axis of a dimension is the first one
// inside its braces):
//   all_gather<Dim>(comm, x)        T-AllGather: drop the minor-most axis of Dim
//   all_to_all<From, To>(comm, x)   T-AllToAll: move the minor-most axis of From to the
//                                   minor-most position of To
//   dyn_slice<Dim, "axis">(x)       T-DynSlice: split Dim further over an unused axis
//                                   (local: every device keeps its own chunk)
//   all_permute<B>(comm, x)         T-Permute: any B with the same local shape
// A call that a rule does not type is rejected by a constraint named after the rule
// (t_allgather, t_alltoall, t_dynslice, t_permute) whose failing clause says why.
// Each call runs a one-step program lowered by lower/lower.hpp; with a backend driving
// several ranks (host) pass all their tiles.
#pragma once

#include <span>
#include <vector>

#include "redist/core/rules.hpp"
#include "redist/lower/lower.hpp"
#include "redist/runtime/pack.hpp"
#include "redist/static/plan.hpp"
#include "redist/static/redistribute.hpp"

namespace redist {

namespace detail {
constexpr int minor_axis_count(const device_mesh& m, const dist_type& t, int d) {
  return d >= 0 && d < t.rank && t.dims[d].n > 0 ? axis_run(m, t.dims[d], 0) : 0;
}
constexpr std::uint64_t minor_axis_size(const device_mesh& m, const dist_type& t, int d) {
  std::uint64_t s = 1;
  for (int i = 0; i < minor_axis_count(m, t, d); ++i) s *= m.sub[t.dims[d].axes[i]].size;
  return s;
}
/// The sub-axes an axis reference (`x` or `x:(pre)size`) names, if it parses and none
/// of them is used by t.
struct axis_ref {
  bool ok = false;
  bool unused = false;
  dim axes{};
};
constexpr axis_ref resolve_axis(const device_mesh& m, const dist_type& t, std::string_view s) {
  axis_ref r;
  scanner sc{s};
  std::uint64_t seen = 0;
  r.ok = parse_axis_ref(sc, m, r.axes, seen) && sc.at_end() && r.axes.n > 0;
  r.unused = r.ok && (seen & used_mask(t)) == 0;
  return r;
}
}  // namespace detail

// ---- The rules as constraints ----------------------------------------------------------

template <class A, int Dim>
inline constexpr bool dimension_exists = Dim >= 0 && Dim < A::value.rank;
template <class A, int Dim>
inline constexpr bool dimension_is_partitioned = dimension_exists<A, Dim> && A::value.dims[Dim].n > 0;
template <class A, int From, int To>
inline constexpr bool target_tile_divisible_by_moved_axis =
    dimension_is_partitioned<A, From> && dimension_exists<A, To> &&
    tile(A::mesh_type::value, A::value.dims[To]) % detail::minor_axis_size(A::mesh_type::value, A::value, From) == 0;
template <class A, fixed_string Axis>
inline constexpr bool axis_is_in_mesh = detail::resolve_axis(A::mesh_type::value, A::value, Axis.view()).ok;
template <class A, fixed_string Axis>
inline constexpr bool axis_is_unused = detail::resolve_axis(A::mesh_type::value, A::value, Axis.view()).unused;
template <class A, int Dim, fixed_string Axis>
inline constexpr bool tile_divisible_by_axis =
    axis_is_unused<A, Axis> && dimension_exists<A, Dim> &&
    tile(A::mesh_type::value, A::value.dims[Dim]) %
            parts(A::mesh_type::value, detail::resolve_axis(A::mesh_type::value, A::value, Axis.view()).axes) ==
        0;

/// T-AllGather applies to dimension Dim of A.
template <class A, int Dim>
concept t_allgather = static_type<A> && dimension_exists<A, Dim> && dimension_is_partitioned<A, Dim>;
/// T-AllToAll applies from dimension From to dimension To of A.
template <class A, int From, int To>
concept t_alltoall = static_type<A> && dimension_exists<A, From> && dimension_exists<A, To> && (From != To) &&
                     dimension_is_partitioned<A, From> && target_tile_divisible_by_moved_axis<A, From, To>;
/// T-DynSlice applies to dimension Dim of A with the axis Axis.
template <class A, int Dim, fixed_string Axis>
concept t_dynslice = static_type<A> && dimension_exists<A, Dim> && axis_is_in_mesh<A, Axis> &&
                     axis_is_unused<A, Axis> && tile_divisible_by_axis<A, Dim, Axis>;
/// T-Permute applies from A to B.
template <class A, class B>
concept t_permute = static_type<A> && static_type<B> && same_mesh_v<A, B> && same_global(A::value, B::value) &&
                    same_local(A::mesh_type::value, A::value, B::value);

// ---- Result types ----------------------------------------------------------------------

template <class A, int Dim>
  requires t_allgather<A, Dim>
using all_gather_t = type_value<typename A::mesh_type,
                                rule_allgather(A::mesh_type::value, A::value, Dim,
                                               detail::minor_axis_count(A::mesh_type::value, A::value, Dim))
                                    .value>;

template <class A, int From, int To>
  requires t_alltoall<A, From, To>
using all_to_all_t = type_value<typename A::mesh_type,
                                rule_alltoall(A::mesh_type::value, A::value, From, To,
                                              detail::minor_axis_count(A::mesh_type::value, A::value, From))
                                    .value>;

template <class A, int Dim, fixed_string Axis>
  requires t_dynslice<A, Dim, Axis>
using dyn_slice_t = type_value<typename A::mesh_type,
                               rule_dynslice(A::mesh_type::value, A::value, Dim,
                                             detail::resolve_axis(A::mesh_type::value, A::value, Axis.view()).axes.axes,
                                             detail::resolve_axis(A::mesh_type::value, A::value, Axis.view()).axes.n)
                                   .value>;

// ---- Execution --------------------------------------------------------------------------

namespace detail {
/// The one-collective program from A to B (the strong rule's exact result, so the
/// lowering needs no permutation except for T-Permute itself).
template <class A, class B, op Kind>
constexpr result<program> collective_program() {
  const device_mesh& m = A::mesh_type::value;
  result<weak_problem> p = make_weak_problem(m, A::value, B::value);
  std::vector<weak_step> path;
  const shape sa = shape_of(m, A::value), sb = shape_of(m, B::value);
  if constexpr (Kind == op::allgather || Kind == op::alltoall || Kind == op::dynslice) {
    weak_edge e{Kind, -1, -1, 1};
    for (int d = 0; d < sa.rank; ++d) {
      if (sa.parts[d] > sb.parts[d]) { e.from = static_cast<std::int8_t>(d); e.factor = sa.parts[d] / sb.parts[d]; }
      if (sa.parts[d] < sb.parts[d]) { e.to = static_cast<std::int8_t>(d); e.factor = sb.parts[d] / sa.parts[d]; }
    }
    path.push_back(weak_step{e, sb, {}});
  }
  return lower_path(m, A::value, B::value, p.value, path, 1, true);
}
template <class A, class B, op Kind>
struct collective_holder {
  static constexpr std::size_t devices = A::mesh_type::value.devices;
  static constexpr std::size_t nsteps = collective_program<A, B, Kind>().value.steps.size();
  static constexpr static_program<nsteps, devices> value = freeze<nsteps, devices>(collective_program<A, B, Kind>().value);
  static_assert(Kind == op::allpermute || (nsteps == 1 && value.step(0).kind == Kind),
                "redist: internal error: a typed collective did not lower to exactly that collective");
};

template <class B, op Kind, class T, class A, class Backend>
std::vector<darray<T, B>> run_collective(Backend& comm, std::span<const darray<T, A>> xs) {
  executor<T, Backend> ex(comm, collective_holder<A, B, Kind>::value.to_program(sizeof(T)));
  return run_static<B>(ex, comm.local_ranks(), xs);
}
}  // namespace detail

/// T-AllGather on dimension Dim, for the tiles of every rank `comm` drives.
template <int Dim, class T, class A, class Backend>
  requires t_allgather<A, Dim> && backend_for<Backend, T>
auto all_gather(Backend& comm, std::span<const darray<T, A>> xs) {
  return detail::run_collective<all_gather_t<A, Dim>, op::allgather>(comm, xs);
}
/// T-AllGather on dimension Dim, for the one rank `comm` drives.
template <int Dim, class T, class A, class Backend>
  requires t_allgather<A, Dim> && backend_for<Backend, T>
auto all_gather(Backend& comm, const darray<T, A>& x) {
  return std::move(all_gather<Dim>(comm, std::span<const darray<T, A>>(&x, 1)).front());
}

/// T-AllToAll from dimension From to To, for the tiles of every rank `comm` drives.
template <int From, int To, class T, class A, class Backend>
  requires t_alltoall<A, From, To> && backend_for<Backend, T>
auto all_to_all(Backend& comm, std::span<const darray<T, A>> xs) {
  return detail::run_collective<all_to_all_t<A, From, To>, op::alltoall>(comm, xs);
}
/// T-AllToAll from dimension From to To, for the one rank `comm` drives.
template <int From, int To, class T, class A, class Backend>
  requires t_alltoall<A, From, To> && backend_for<Backend, T>
auto all_to_all(Backend& comm, const darray<T, A>& x) {
  return std::move(all_to_all<From, To>(comm, std::span<const darray<T, A>>(&x, 1)).front());
}

/// T-DynSlice: dimension Dim split further over Axis; local, no communication.
template <int Dim, fixed_string Axis, class T, class A>
  requires t_dynslice<A, Dim, Axis>
auto dyn_slice(const darray<T, A>& x) {
  using B = dyn_slice_t<A, Dim, Axis>;
  constexpr auto& prog = detail::collective_holder<A, B, op::dynslice>::value;
  const auto& s = prog.step(0);
  darray<T, B> out(x.device());
  std::vector<std::uint64_t> ext(static_cast<std::size_t>(A::value.rank));
  for (int d = 0; d < A::value.rank; ++d) ext[static_cast<std::size_t>(d)] = x.local_extent(d);
  split_copy(x.span(), std::span<const std::uint64_t>(ext), s.split_dim, s.parts, s.ranks[x.device()], out.span());
  return out;
}

/// T-Permute to B (same local shape), for the tiles of every rank `comm` drives.
template <class B, class T, class A, class Backend>
  requires t_permute<A, B> && backend_for<Backend, T>
auto all_permute(Backend& comm, std::span<const darray<T, A>> xs) {
  return detail::run_collective<B, op::allpermute>(comm, xs);
}
/// T-Permute to B (same local shape), for the one rank `comm` drives.
template <class B, class T, class A, class Backend>
  requires t_permute<A, B> && backend_for<Backend, T>
auto all_permute(Backend& comm, const darray<T, A>& x) {
  return std::move(all_permute<B>(comm, std::span<const darray<T, A>>(&x, 1)).front());
}

}  // namespace redist
