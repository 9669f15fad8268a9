// tools/cli.hpp -- pieces shared by the subcommands of the `redist` tool: the problem
// options (--mesh, --from, --to, --bytes), the baselines, and errors that name the option
// whose value is wrong.
#pragma once

#include <charconv>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "baselines/naive.hpp"
#include "baselines/xla.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/program.hpp"
#include "redist/search/weak_graph.hpp"

namespace redist::tools {

/// Bad input: what() is one line, "--from: <message>". main prints it and exits 1.
class input_error : public std::runtime_error {
 public:
  input_error(std::string_view option, const std::string& message)
      : std::runtime_error(std::string(option) + ": " + message) {}
};

/// Run f(); a redist_error it throws becomes an input_error naming `option`.
template <class F>
auto for_option(std::string_view option, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const redist_error& e) {
    throw input_error(option, e.what());
  }
}

/// The options that state a redistribution problem.
struct problem_options {
  std::string mesh, from, to;
  std::string bytes = "4";  ///< checked by parse_problem, so that a bad value is an input error
};

inline void add_problem_options(CLI::App& cmd, problem_options& o) {
  cmd.add_option("--mesh", o.mesh, "device mesh, e.g. '{x: 4, y: 8}' (row-major device order)")->required();
  cmd.add_option("--from", o.from, "source type, e.g. '[64{x}256, 1024]'")->required();
  cmd.add_option("--to", o.to, "target type, e.g. '[256, 128{y}1024]'")->required();
  cmd.add_option("--bytes", o.bytes, "bytes per element")->type_name("UINT")->capture_default_str();
}

/// A parsed, checked problem.
struct problem {
  redist::device_mesh m;
  dist_type from, to;
  std::uint64_t bytes = 4;
};

/// Parse and check the problem options, blaming the option whose value is wrong.
inline problem parse_problem(const problem_options& o) {
  problem p;
  p.m = for_option("--mesh", [&] { return parse_mesh(o.mesh); });
  p.from = for_option("--from", [&] { return parse_type(p.m, o.from); });
  p.to = for_option("--to", [&] { return parse_type(p.m, o.to); });
  // Whether the target can be reached from the source at all (same global shape, no
  // pending sums created) is the search problem's to say.
  for_option("--to", [&] { return make_weak_problem(p.m, p.from, p.to).get(); });
  const char* end = o.bytes.data() + o.bytes.size();
  auto [ptr, ec] = std::from_chars(o.bytes.data(), end, p.bytes);
  if (ec != std::errc{} || ptr != end || o.bytes.empty())
    throw input_error("--bytes", "expected a number of bytes per element, found '" + o.bytes + "'");
  if (p.bytes == 0) throw input_error("--bytes", "element size must be at least 1 byte");
  return p;
}

/// Comparison baselines (DESIGN.md section 6), selected by name with --baseline.
struct baseline {
  std::string_view name;
  program (*make)(const redist::device_mesh&, const dist_type&, const dist_type&, std::uint64_t element_bytes);
};

inline std::span<const baseline> baselines() {
  static constexpr baseline all[] = {
      {"naive", &baselines::naive_program},
      {"xla", &baselines::xla_program},
  };
  return all;
}

}  // namespace redist::tools
