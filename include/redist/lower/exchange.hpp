// redist/lower/exchange.hpp -- the one-step program that redistributes by a direct exchange
// (DESIGN.md section 4, extension): every rank receives exactly the part of its target tile
// that it does not hold, from a rank that holds it (the sender rule of redist/exchange.hpp).
//
// Its cost is the data-movement lower bound (core/offsets.hpp movement_lower_bound); its
// peak local size is max(localsize(source), localsize(target)), so it always keeps the
// memory bound. It moves many small pieces instead of whole chunks along mesh axes, which
// pays where bandwidth dominates and costs where latency does: synthesize's time model
// (core/time_model.hpp) chooses between it and the collective program.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/lower.hpp"
#include "redist/program.hpp"

namespace redist {

namespace detail {
/// exchange_program, with the sizes of its exchange (plan_detail::sizes) in `x` (left as it
/// is when a == b): what pricing it needs (lower/synthesize.hpp), so it is not planned twice.
inline program exchange_program(const device_mesh& m, const dist_type& a, const dist_type& b,
                                std::uint64_t element_bytes, exchange_plan& x) {
  if (element_bytes == 0) throw redist_error(errc::bad_size, "element size must be at least 1 byte");
  if (error e = check(m, a)) throw redist_error(e);
  if (error e = check(m, b)) throw redist_error(e);
  if (error e = check_same_global(a, b)) throw redist_error(e);
  if (error e = detail::check_program_devices(m)) throw redist_error(e);
  for (const dist_type* t : {&a, &b})
    if (t->nsum > 0)
      throw redist_error(errc::rule, "an exchange does not add partial sums, and the type " +
                                         std::string(type_text(m, *t).view()) +
                                         " has pending sums: only a collective program (allreduce, reducescatter) "
                                         "can redistribute it");
  program p;
  p.m = m;
  p.source = a;
  p.target = b;
  p.element_bytes = element_bytes;
  const std::uint64_t in = local_size(m, a), out = local_size(m, b);
  p.peak_local_elements = std::max(in, out);
  p.memory_bound_elements = p.peak_local_elements;
  if (a == b) return p;
  const std::vector<box> before = tile_boxes(m, a), after = tile_boxes(m, b);
  x = plan_exchange(before, after, plan_detail::sizes);
  if (!x.error.empty())  // for tilings only the size limit
    throw redist_error(x.too_large ? errc::capacity : errc::runtime, "exchange: " + x.error);
  step s;
  s.kind = op::exchange;
  s.boxes = flatten_boxes(after);
  s.after = shape_of(m, b);
  s.local_after = out;
  s.cost = x.max_received;
  s.type_after = b;
  s.type_exact = true;
  p.cost_elements = s.cost;
  p.steps.push_back(std::move(s));
  return p;
}
}  // namespace detail

/// The exchange program from `a` to `b` (no steps when a == b). Throws redist_error for
/// ill-formed types, differing global shapes, and types with pending sums (an exchange
/// moves data, it does not add partial values).
inline program exchange_program(const device_mesh& m, const dist_type& a, const dist_type& b,
                                std::uint64_t element_bytes = 4) {
  exchange_plan x;
  return detail::exchange_program(m, a, b, element_bytes, x);
}

/// Convenience: parse both types on mesh m, then build the exchange program.
inline program exchange_program(const device_mesh& m, std::string_view from, std::string_view to,
                                std::uint64_t element_bytes = 4) {
  return exchange_program(m, parse_type(m, from), parse_type(m, to), element_bytes);
}

}  // namespace redist
