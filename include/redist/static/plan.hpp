// redist/static/plan.hpp -- plans found by the compiler:
//   constexpr auto plan = redist::plan_for<Y, Z>();
//   static_assert(plan.memory_efficient());
//   static_assert(plan.count(redist::op::allgather) == 0);
// The search is the constexpr Dijkstra (search/constexpr_search.hpp) over the same weak
// graph as the run-time search, and the lowering is the same constexpr code
// (lower/lower.hpp); the result is copied into fixed-size storage so that it can be a
// constexpr value.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/lower/lower.hpp"
#include "redist/program.hpp"
#include "redist/search/constexpr_search.hpp"
#include "redist/static/diagnostics.hpp"
#include "redist/static/dtype.hpp"

namespace redist {

/// Memory budget of a compile-time plan as a fraction num/den >= 1 of
/// max(localsize(source), localsize(target)).
struct plan_budget {
  std::uint64_t num = 1;
  std::uint64_t den = 1;
};

/// What a compile-time plan minimizes (search/weak_graph.hpp objective): by default the
/// predicted time under the built-in profile (core/time_model.hpp builtin_profile, constexpr
/// data) for elements of `element_bytes`, the same objective as redist::synthesize's
/// default; objective::bytes gives the paper's fewest-bytes program.
struct plan_options {
  objective goal = objective::time;
  std::uint64_t element_bytes = 4;
};

/// Largest mesh a compile-time plan is made for (every step stores one rank per device).
inline constexpr std::uint64_t max_static_devices = 4096;

/// A program as a constexpr value: NSteps steps over D devices.
template <std::size_t NSteps, std::size_t D>
struct static_program {
  struct fixed_step {
    op kind = op::dynslice;
    int concat_dim = -1;
    int split_dim = -1;
    std::uint64_t parts = 1;
    /// allgather/alltoall: the groups, flattened; dynslice: the chunk each rank keeps;
    /// allpermute: the rank receiving each rank's tile (as in program.hpp).
    std::array<rank_t, D> ranks{};
    step_grid concat_grid{}, split_grid{};  ///< fused steps (program.hpp)
    shape after{};
    std::uint64_t local_after = 0;
    std::uint64_t cost = 0;  ///< elements per device
    dist_type type_after{};
    bool type_exact = false;
    reduction reduce = reduction::sum;  ///< allreduce, reducescatter, partial (program.hpp)
  };

  device_mesh m{};
  dist_type source{};
  dist_type target{};
  std::array<fixed_step, NSteps> steps_{};
  std::uint64_t cost_elements = 0;
  std::uint64_t peak_local_elements = 0;
  std::uint64_t memory_bound_elements = 0;

  /// Number of collectives.
  [[nodiscard]] constexpr std::size_t steps() const { return NSteps; }
  [[nodiscard]] constexpr const fixed_step& step(std::size_t i) const { return steps_[i]; }
  /// How many steps are this collective.
  [[nodiscard]] constexpr std::size_t count(op o) const {
    std::size_t n = 0;
    for (const auto& s : steps_) n += s.kind == o;
    return n;
  }
  /// Bytes per device for elements of this size (Fig. 11).
  [[nodiscard]] constexpr std::uint64_t cost_bytes(std::uint64_t element_bytes) const { return cost_elements * element_bytes; }
  /// Height (Def. 4.4): the largest local size along the program, in elements.
  [[nodiscard]] constexpr std::uint64_t height() const { return peak_local_elements; }
  /// Eq. (4): height <= max(localsize(source), localsize(target)).
  [[nodiscard]] constexpr bool memory_efficient() const {
    const std::uint64_t a = local_size(m, source), b = local_size(m, target);
    return peak_local_elements <= (a > b ? a : b);
  }
  /// The run-time program (for the executor, printing, JSON).
  [[nodiscard]] constexpr program to_program(std::uint64_t element_bytes = 4) const {
    program p;
    p.m = m;
    p.source = source;
    p.target = target;
    p.element_bytes = element_bytes;
    p.cost_elements = cost_elements;
    p.peak_local_elements = peak_local_elements;
    p.memory_bound_elements = memory_bound_elements;
    for (const auto& f : steps_) {
      redist::step s;
      s.kind = f.kind;
      s.concat_dim = f.concat_dim;
      s.split_dim = f.split_dim;
      s.parts = f.parts;
      std::vector<rank_t> ranks(f.ranks.begin(), f.ranks.end());
      if (f.kind == op::dynslice) s.index = ranks;
      else if (f.kind == op::allpermute) s.dest = ranks;
      else s.members = ranks;
      s.concat_grid = f.concat_grid;
      s.split_grid = f.split_grid;
      s.after = f.after;
      s.local_after = f.local_after;
      s.cost = f.cost;
      s.type_after = f.type_after;
      s.type_exact = f.type_exact;
      s.reduce = f.reduce;
      p.steps.push_back(s);
    }
    return p;
  }
};

namespace detail {

template <std::size_t NSteps, std::size_t D>
constexpr static_program<NSteps, D> freeze(const program& p) {
  static_program<NSteps, D> s;
  s.m = p.m;
  s.source = p.source;
  s.target = p.target;
  s.cost_elements = p.cost_elements;
  s.peak_local_elements = p.peak_local_elements;
  s.memory_bound_elements = p.memory_bound_elements;
  for (std::size_t i = 0; i < NSteps; ++i) {
    const step& x = p.steps[i];
    auto& f = s.steps_[i];
    f.kind = x.kind;
    f.concat_dim = x.concat_dim;
    f.split_dim = x.split_dim;
    f.parts = x.parts;
    const std::vector<rank_t>& ranks = x.kind == op::dynslice ? x.index : x.kind == op::allpermute ? x.dest : x.members;
    for (std::size_t r = 0; r < D && r < ranks.size(); ++r) f.ranks[r] = ranks[r];
    f.concat_grid = x.concat_grid;
    f.split_grid = x.split_grid;
    f.after = x.after;
    f.local_after = x.local_after;
    f.cost = x.cost;
    f.type_after = x.type_after;
    f.type_exact = x.type_exact;
    f.reduce = x.reduce;
  }
  return s;
}

template <static_type A, static_type B, plan_budget Budget, plan_options Opt>
constexpr result<weak_problem> plan_problem(bool pad_pending = false) {
  const double budget = static_cast<double>(Budget.num) / static_cast<double>(Budget.den == 0 ? 1 : Budget.den);
  return make_weak_problem(A::mesh_type::value, A::value, B::value,
                           search_options{budget, Opt.goal, builtin_profile, Opt.element_bytes, pad_pending});
}

/// Longest weak path a compile-time plan stores (a path changes one factor of the
/// partitioning per step; twice the sub-axes a mesh can have, and some).
inline constexpr std::size_t max_static_path = 2 * max_subaxes + 8;

/// What choose_lowering found, in fixed-size storage so that it can be a constexpr value:
/// the search and the choice among candidate paths run once per plan, and only the chosen
/// path is lowered again to size and fill the static_program.
struct frozen_choice {
  std::array<weak_step, max_static_path> path{};
  std::size_t length = 0;
  std::array<std::uint8_t, max_subaxes> sum_order{};
  bool pad_pending = false;  ///< the route that creates the target's new pending axes (lower/partial.hpp)
  error err{};
};

template <static_type A, static_type B, plan_budget Budget, plan_options Opt>
constexpr frozen_choice choose_route(bool pad_pending) {
  frozen_choice f;
  f.pad_pending = pad_pending;
  const result<weak_problem> wp = plan_problem<A, B, Budget, Opt>(pad_pending);
  if (!wp.ok()) {
    f.err = wp.err;
    return f;
  }
  const lowering_choice c = choose_lowering(A::mesh_type::value, A::value, B::value, wp.value,
                                            search_constexpr(wp.value), 1);
  f.err = c.err;
  f.sum_order = c.sum_order;
  if (c.path.size() > max_static_path) {
    f.err = error::make(errc::capacity, "the plan is longer than a compile-time plan can store");
    return f;
  }
  f.length = c.path.size();
  for (std::size_t i = 0; i < c.path.size(); ++i) f.path[i] = c.path[i];
  return f;
}

template <static_type A, static_type B, plan_budget Budget, plan_options Opt>
constexpr result<program> lower_choice(const frozen_choice& f) {
  if (f.err) return result<program>{{}, f.err};
  const std::vector<weak_step> path(f.path.begin(), f.path.begin() + f.length);
  return lower_and_fuse(A::mesh_type::value, A::value, B::value, plan_problem<A, B, Budget, Opt>(f.pad_pending).value,
                        path, 1, true, f.sum_order.data());
}

/// The choice of the search and the lowering; where the target creates pending axes from
/// dimensions the source partitions, of both routes the better program (as search_program).
template <static_type A, static_type B, plan_budget Budget, plan_options Opt>
constexpr frozen_choice choose_plan() {
  const frozen_choice plain = choose_route<A, B, Budget, Opt>(false);
  if (plain.err || !pads_pending(A::mesh_type::value, A::value, B::value)) return plain;
  const frozen_choice padded = choose_route<A, B, Budget, Opt>(true);
  if (padded.err) return plain;
  const result<program> x = lower_choice<A, B, Budget, Opt>(padded), y = lower_choice<A, B, Budget, Opt>(plain);
  if (x.ok() && y.ok() &&
      ranks_before(plan_problem<A, B, Budget, Opt>(true).value, x.value, plan_problem<A, B, Budget, Opt>(false).value,
                   y.value))
    return padded;
  return plain;
}

template <static_type A, static_type B, plan_budget Budget, plan_options Opt>
struct plan_holder {
  static constexpr std::size_t devices = A::mesh_type::value.devices;
  static constexpr frozen_choice choice = choose_plan<A, B, Budget, Opt>();
  static constexpr result<program> lowered() { return lower_choice<A, B, Budget, Opt>(choice); }
  static constexpr std::size_t nsteps = lowered().value.steps.size();
  static constexpr static_program<nsteps, devices> value = freeze<nsteps, devices>(lowered().value);
};

constexpr text global_text(const dist_type& t) {
  std::uint64_t g[max_dims]{};
  for (int d = 0; d < t.rank; ++d) g[d] = t.dims[d].global;
  return shape_text(g, t.rank);
}

template <static_type A, static_type B>
constexpr bool report_global_mismatch() {
  if constexpr (!same_global(A::value, B::value)) {
    return sizeof(global_shapes_differ<to_fixed_string<64>(global_text(A::value).view()),
                                       to_fixed_string<64>(global_text(B::value).view())>) > 0;
  } else {
    return true;
  }
}

}  // namespace detail

/// Both types over the same mesh, describing the same global array: a redistribution
/// from A to B exists.
template <class A, class B>
concept redistributable = static_type<A> && static_type<B> && same_mesh_v<A, B> && same_global(A::value, B::value);

/// The program that redistributes A to B, found at compile time: by default the one of
/// least predicted time under the built-in profile (plan_options), the same program
/// redist::synthesize's search returns for the same options. Costs are in elements; ask
/// `cost_bytes(element_bytes)` for bytes.
template <static_type A, static_type B, plan_budget Budget = plan_budget{}, plan_options Opt = plan_options{}>
constexpr auto plan_for() {
  static_assert(same_mesh_v<A, B>, "redist::plan_for: the source and target types must be over the same mesh");
  static_assert(same_global(A::value, B::value),
                "redist::plan_for: the source and target types describe different global arrays, and a "
                "redistribution cannot change the global shape; the error below names both shapes");
  static_assert(detail::report_global_mismatch<A, B>());
  static_assert(A::mesh_type::value.devices <= max_static_devices,
                "redist::plan_for: compile-time plans are made for meshes of up to 4096 devices; call "
                "redist::synthesize at run time for larger meshes");
  static_assert(Budget.den > 0 && Budget.num >= Budget.den,
                "redist::plan_for: the memory budget must be a fraction num/den of at least 1");
  static_assert(even(A::mesh_type::value, A::value) && even(B::mesh_type::value, B::value),
                "redist::plan_for: a dimension is split unevenly (its tiles do not divide it); compile-time plans "
                "cover even types: call redist::synthesize at run time, which plans uneven types as an exchange");
  if constexpr (redistributable<A, B> && A::mesh_type::value.devices <= max_static_devices && Budget.den > 0 &&
                Budget.num >= Budget.den && even(A::mesh_type::value, A::value) &&
                even(B::mesh_type::value, B::value)) {
    return detail::plan_holder<A, B, Budget, Opt>::value;
  } else {
    return static_program<0, 1>{};
  }
}

}  // namespace redist
