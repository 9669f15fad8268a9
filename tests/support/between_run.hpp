// tests/support/between_run.hpp -- a redistribution between meshes on device sets
// (lower/between.hpp; DESIGN.md section 2, "Meshes on device sets") checked and run on the
// host backend over the whole world with every element checked: the tests of
// lower/between.hpp and of box layouts (tests/lower/test_between.cpp, test_box_layout.cpp)
// and the between fuzzer (tests/fuzz/between_fuzzer.cpp) share it.
//
// Either end is a type on a placed mesh or a box layout (redist/box.hpp). Every source
// element holds expected_value of its global index (tests/support/between_problems.hpp; a
// source with pending sums: the value on each sum group's root, zero on the others), and
// every rank must end with exactly its target box of those values, or nothing off the
// target.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/box.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/between.hpp"
#include "redist/program.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/program_check.hpp"
#include "redist/runtime/verify.hpp"
#include "support/between_problems.hpp"
#include "support/test_boxes.hpp"

namespace redist::testing {

/// Every world rank's source tile of layout a in a world of W ranks (none() where it
/// holds nothing).
template <class T>
std::vector<darray<T>> between_inputs(const array_layout& a, std::uint64_t W) {
  std::vector<darray<T>> in;
  for (std::uint64_t r = 0; r < W; ++r)
    if (const auto* t = std::get_if<placed_layout>(&a))
      in.push_back(source_tile<T>(*t, W, r));
    else
      in.push_back(layout_tile<T>(std::get<box_layout>(a), r));
  return in;
}

/// Run p on host_backend(W) from layout a and check every rank's target tile; "" if right.
/// A target with pending sums: the partials of every sum group added into its root, which
/// is checked; a box-layout target: every rank exactly its box.
template <class T>
std::string run_between_and_check(const program& p, const array_layout& a) {
  const std::uint64_t W = p.world_size();
  host_backend host(W);
  executor<T, host_backend> ex(host, p);
  std::vector<darray<T>> out;
  try {
    out = ex.run(between_inputs<T>(a, W));
  } catch (const redist_error& e) {
    return std::string("executor: ") + e.what();
  }
  if (out.size() != W) return "expected " + std::to_string(W) + " output tiles, got " + std::to_string(out.size());
  if (p.boxed_target()) {
    for (std::uint64_t r = 0; r < W; ++r)
      if (std::string e = check_layout_tile(p.target_layout, r, out[r]); !e.empty()) return e;
    return {};
  }
  const std::vector<std::int64_t> pos = target_positions(p);
  if (p.target.nsum == 0) {
    for (std::uint64_t r = 0; r < W; ++r)
      if (std::string e = check_target_tile(p, r, pos[r], out[r]); !e.empty()) return e;
    return {};
  }
  // Pending sums kept: order the tiles by target position, add the partials into the roots.
  std::vector<darray<T>> by_pos(p.target_mesh().devices);
  for (std::uint64_t r = 0; r < W; ++r) {
    if (pos[r] < 0) {
      if (out[r].holds() || out[r].size() != 0)
        return "rank " + std::to_string(r) + " holds a tile off the target mesh";
      continue;
    }
    by_pos[static_cast<std::size_t>(pos[r])] = out[r];
  }
  sum_partials_into_roots(std::span<darray<T>>(by_pos));
  for (std::uint64_t q = 0; q < by_pos.size(); ++q)
    if (sum_root(p.target_mesh(), p.target, static_cast<rank_t>(q)) == q) {
      program unsummed = p;
      unsummed.target = without_pending(p.target);
      darray<T> t(p.target_mesh(), unsummed.target, static_cast<rank_t>(q),
                  std::vector<T>(by_pos[q].span().begin(), by_pos[q].span().end()));
      if (std::string e = check_target_tile(unsummed, q, static_cast<std::int64_t>(q), t); !e.empty())
        return "position " + std::to_string(q) + " (summed): " + e;
    }
  return {};
}

/// The checks of one program from layout a to layout b: well-formed
/// (detail::check_program), memory-efficient, its target b's type and mesh (or b's box
/// layout), the JSON round trip (written to `jsonl` when given), and the run on the host
/// backend with every element checked. "" if all hold, else the first that does not.
template <class T>
std::string check_between_program(const program& p, const array_layout& a, const array_layout& b,
                                  std::ofstream* jsonl = nullptr) {
  const auto shapes = detail::check_program(p);
  if (!shapes.error.empty()) return "check_program: " + shapes.error;
  std::uint64_t bound = 0;  // max(local source, local target): the largest tile of either end
  for (const array_layout* l : {&a, &b})
    for (std::uint64_t n : layout_tile_elements(*l, p.world_size())) bound = std::max(bound, n);
  if (p.peak_local_elements > bound)
    return "peak " + std::to_string(p.peak_local_elements) + " elements above max(local source, local target) = " +
           std::to_string(bound);
  if (const auto* tb = std::get_if<placed_layout>(&b)) {
    if (p.boxed_target() || !(p.target == tb->type) || !(p.target_mesh() == tb->pm.mesh))
      return "the program's target is not the problem's";
  } else if (!p.boxed_target() || !(p.target_layout == std::get<box_layout>(b))) {
    return "the program's target is not the problem's box layout";
  }
  if (std::string e = json_round_trip(p, jsonl); !e.empty()) return e;
  return run_between_and_check<T>(p, a);
}

/// Every rank of the target receives exactly its box minus what it held before the
/// exchange (the source's boxes, with pending sums reduced), and where the source has no
/// pending sums the run receives the most of those on one rank (run_received_elements):
/// "" if so. A program without an exchange step passes.
inline std::string check_between_exchange_bound(const program& p, const array_layout& a) {
  std::size_t at = p.steps.size();
  for (std::size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].kind == op::exchange) at = i;
  if (at == p.steps.size()) return {};  // every rank already holds its box: no step
  const std::uint64_t W = p.world_size();
  std::vector<box> before;
  bool sums = false;
  if (const auto* t = std::get_if<placed_layout>(&a)) {
    const dist_type reduced = without_pending(t->type);
    sums = t->type.nsum > 0;
    const std::vector<rank_t> devs(t->pm.devices.begin(), t->pm.devices.end());
    before = placed_boxes(t->pm.mesh, reduced, devs, W);
  } else {
    before = std::get<box_layout>(a).all_boxes();
  }
  const exchange_plan x = plan_exchange(p, at);
  if (!x.error.empty()) return "plan_exchange: " + x.error;
  std::uint64_t most = 0;
  for (std::uint64_t r = 0; r < W; ++r) {
    const box after = step_box(p.steps[at], p.source.rank, r);
    const std::uint64_t bound = p.steps[at].holds_after(r) ? after.size() - intersect(after, before[r]).size() : 0;
    most = std::max(most, bound);
    if (x.received[r] != bound)
      return "rank " + std::to_string(r) + " receives " + std::to_string(x.received[r]) +
             " elements, the lower bound is " + std::to_string(bound);
  }
  if (!sums && run_received_elements(p) != most)
    return "run_received_elements " + std::to_string(run_received_elements(p)) + ", the lower bound is " +
           std::to_string(most);
  return {};
}

/// Whether plan choice c has a candidate named `name`.
inline bool has_between_candidate(const plan_choice& c, const std::string& name) {
  return std::any_of(c.candidates.begin(), c.candidates.end(), [&](const plan_candidate& k) { return k.name == name; });
}

}  // namespace redist::testing
