// redist/lower/synthesize.hpp -- the run-time entry point: types in, collective program
// out (search with Boost.Graph, then lowering).
#pragma once

#include <cstdint>
#include <string_view>

#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/lower/lower.hpp"
#include "redist/program.hpp"
#include "redist/search/bgl_search.hpp"
#include "redist/search/weak_graph.hpp"

namespace redist {

struct synth_options {
  std::uint64_t element_bytes = 4;  ///< bytes per element, for cost_bytes
  double memory_budget = 1.0;       ///< factor over max(localsize(source), localsize(target))
};

/// Synthesize the program that redistributes `a` to `b`. Throws redist_error on
/// ill-formed types, differing global shapes, or a budget below 1.
inline program synthesize(const device_mesh& m, const dist_type& a, const dist_type& b, synth_options opt = {}) {
  if (opt.element_bytes == 0) throw redist_error(errc::bad_size, "element size must be at least 1 byte");
  if (error e = detail::check_program_devices(m)) throw redist_error(e);
  weak_problem p = make_weak_problem(m, a, b, search_options{opt.memory_budget}).get();
  weak_plan wp = search_bgl(p);
  return lower(m, a, b, p, wp, opt.element_bytes).get();
}

/// Convenience: parse the mesh and both types, then synthesize.
inline program synthesize(std::string_view mesh_text, std::string_view from, std::string_view to,
                          synth_options opt = {}) {
  device_mesh m = parse_mesh(mesh_text);
  return synthesize(m, parse_type(m, from), parse_type(m, to), opt);
}

}  // namespace redist
