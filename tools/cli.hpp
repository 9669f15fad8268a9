// tools/cli.hpp -- pieces shared by the subcommands of the `redist` tool: the problem
// options (--mesh, --from, --to, --bytes), types in the paper, JAX or DTensor notation
// (--from-jax, --from-dtensor with --shape), printing in a notation, the planning options
// (--budget, --objective, --profile), the baselines, and errors that name the option whose
// value is wrong.
#pragma once

#include <charconv>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <initializer_list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "baselines/naive.hpp"
#include "baselines/xla.hpp"
#include "baselines/xla_2022.hpp"
#include "redist/core/dtensor.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/jax.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/placement.hpp"
#include "redist/core/shardy.hpp"
#include "redist/core/xla.hpp"
#include "redist/lower/between.hpp"
#include "redist/lower/synthesize.hpp"
#include "redist/profile_json.hpp"
#include "redist/program_json.hpp"
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

/// A distributed type given in one of three notations: the paper syntax (`--from`), a JAX
/// PartitionSpec (`--from-jax`) or PyTorch DTensor placements (`--from-dtensor`). The
/// latter two need the global shape (`--shape`, shared by the types of a command).
/// XLA HloSharding text (`--from-xla`) and Shardy's mesh and sharding (`--from-shardy`)
/// carry their device lists: they place the type's mesh themselves (DESIGN.md section 5).
struct type_option {
  std::string paper, jax, dtensor, xla, shardy, boxes;                                ///< the values given
  std::string paper_name, jax_name, dtensor_name, xla_name, shardy_name, boxes_name;  ///< the option names
  CLI::Option* paper_opt = nullptr;
  CLI::Option* jax_opt = nullptr;
  CLI::Option* dtensor_opt = nullptr;
  CLI::Option* xla_opt = nullptr;
  CLI::Option* shardy_opt = nullptr;
  CLI::Option* boxes_opt = nullptr;  ///< a box layout as JSON (plan, run); nullptr where not offered
  [[nodiscard]] bool has_boxes() const { return boxes_opt && boxes_opt->count() > 0; }
};

/// Register the spellings of a type (`name`, `name-jax`, `name-dtensor`, `name-xla`,
/// `name-shardy`, or the names given) as mutually exclusive options; all but the first need
/// `shape`. With `boxes`, also `name-boxes`, a box layout as JSON.
inline void add_type_option(CLI::App& cmd, type_option& o, CLI::Option* shape, const std::string& name,
                            const std::string& what, const std::string& jax_name = {},
                            const std::string& dtensor_name = {}, const std::string& xla_name = {},
                            const std::string& shardy_name = {}, bool boxes = false) {
  o.paper_name = name;
  o.jax_name = jax_name.empty() ? name + "-jax" : jax_name;
  o.dtensor_name = dtensor_name.empty() ? name + "-dtensor" : dtensor_name;
  o.xla_name = xla_name.empty() ? name + "-xla" : xla_name;
  o.shardy_name = shardy_name.empty() ? name + "-shardy" : shardy_name;
  o.paper_opt = cmd.add_option(o.paper_name, o.paper, what + " in the paper syntax, e.g. '[64{x}256, 1024]'");
  o.jax_opt = cmd.add_option(o.jax_name, o.jax,
                             what + " as a JAX PartitionSpec, e.g. \"P('x', None)\", or a NamedSharding as JAX prints "
                                    "it, with its mesh (with --shape)")
                  ->needs(shape)
                  ->excludes(o.paper_opt);
  o.dtensor_opt =
      cmd.add_option(o.dtensor_name, o.dtensor, what + " as DTensor placements, e.g. '[Shard(0), Replicate()]' (with --shape)")
          ->needs(shape)
          ->excludes(o.paper_opt)
          ->excludes(o.jax_opt);
  o.xla_opt = cmd.add_option(o.xla_name, o.xla,
                             what + " as XLA HloSharding text with its devices, e.g. '{devices=[2,1,2]<=[4] "
                                    "last_tile_dim_replicate}' (with --shape)")
                  ->needs(shape)
                  ->excludes(o.paper_opt)
                  ->excludes(o.jax_opt)
                  ->excludes(o.dtensor_opt);
  o.shardy_opt = cmd.add_option(o.shardy_name, o.shardy,
                                what + " as Shardy's mesh then sharding, e.g. 'sdy.mesh @mesh = <[\"x\"=2], "
                                       "device_ids=[1, 0]> #sdy.sharding<@mesh, [{\"x\"}, {}]>' (with --shape)")
                     ->needs(shape)
                     ->excludes(o.paper_opt)
                     ->excludes(o.jax_opt)
                     ->excludes(o.dtensor_opt)
                     ->excludes(o.xla_opt);
  if (!boxes) return;
  o.boxes_name = name + "-boxes";
  o.boxes_opt = cmd.add_option(o.boxes_name, o.boxes,
                               what + " as a box layout: one box ([[lo, hi], ...], a range per dimension) or null "
                                      "per world rank, as JSON, e.g. '[[[0, 3], [0, 5]], [[3, 10], [0, 5]]]' (with "
                                      "--shape); ranks with equal boxes are replicas")
                    ->needs(shape)
                    ->excludes(o.paper_opt)
                    ->excludes(o.jax_opt)
                    ->excludes(o.dtensor_opt)
                    ->excludes(o.xla_opt)
                    ->excludes(o.shardy_opt);
}

/// The name of the spelling given: `--from`, `--from-jax` or `--from-dtensor`.
inline const std::string& given_name(const type_option& o) {
  return o.has_boxes()            ? o.boxes_name
         : o.jax_opt->count()     ? o.jax_name
         : o.dtensor_opt->count() ? o.dtensor_name
         : o.xla_opt->count()     ? o.xla_name
         : o.shardy_opt->count()  ? o.shardy_name
                                  : o.paper_name;
}

/// True if the type is given as a JAX NamedSharding, which carries its mesh.
inline bool jax_sharding_given(const type_option& o) { return o.jax_opt->count() > 0 && is_jax_sharding(o.jax); }

/// True if the type is given in the XLA or Shardy notation or as a JAX NamedSharding, which
/// place its mesh.
inline bool carries_mesh(const type_option& o) {
  return o.xla_opt->count() + o.shardy_opt->count() > 0 || o.has_boxes() || jax_sharding_given(o);
}

/// True if the type is given in a notation without the global shape (which needs --shape).
inline bool needs_shape(const type_option& o) {
  return o.jax_opt->count() + o.dtensor_opt->count() > 0 || carries_mesh(o);
}

/// A usage error (exit 2) unless one of the spellings was given.
inline void require_type(const type_option& o) {
  if (o.paper_opt->count() + o.jax_opt->count() + o.dtensor_opt->count() + o.xla_opt->count() +
              o.shardy_opt->count() ==
          0 &&
      !o.has_boxes())
    throw CLI::RequiredError(o.paper_name);
}

/// The `--shape` option: the global shape that JAX and DTensor notations leave out.
inline CLI::Option* add_shape_option(CLI::App& cmd, std::string& shape) {
  return cmd.add_option("--shape", shape,
                        "global shape for the JAX and DTensor notations, e.g. '[256, 1024]', or as Python prints it: "
                        "'(256, 1024)', 'torch.Size([256, 1024])'");
}

/// A usage error (exit 2) if --shape was given but no type uses it.
inline void check_shape_used(const CLI::Option* shape, std::initializer_list<const type_option*> types) {
  for (const type_option* t : types)
    if (needs_shape(*t)) return;
  if (shape->count() > 0) {
    std::string names;
    for (const type_option* t : types)
      names += (names.empty() ? "" : ", ") + t->jax_name + ", " + t->dtensor_name + ", " + t->xla_name + ", " +
               t->shardy_name;
    throw CLI::ValidationError("--shape", "only used with " + names);
  }
}

/// Parse `--shape '[256, 1024]'` (the paper syntax with no axes), blaming --shape; also as
/// Python prints a shape, copied from JAX, NumPy or PyTorch: `(256, 1024)`, `(256,)`,
/// `torch.Size([256, 1024])`, or the bare `256, 1024`.
inline std::vector<std::uint64_t> parse_shape(const redist::device_mesh& m, const std::string& text) {
  const std::size_t b = text.find_first_not_of(" \t"), e = text.find_last_not_of(" \t");
  const std::string_view v = b == std::string::npos ? std::string_view{} : std::string_view(text).substr(b, e - b + 1);
  if (!v.starts_with('[')) {
    std::string_view list = v;
    constexpr std::string_view torch = "torch.Size([";
    if (list.starts_with(torch) && list.ends_with("])")) list = list.substr(torch.size(), list.size() - torch.size() - 2);
    else if (list.starts_with('(') && list.ends_with(')')) list = list.substr(1, list.size() - 2);
    const std::size_t last = list.find_last_not_of(' ');
    if (last != std::string_view::npos && list[last] == ',') list = list.substr(0, last);  // (256,)
    // Sizes and commas only: read in the paper syntax, whose errors name the size and its column there.
    if (!list.empty() && list.find_first_not_of("0123456789, ") == std::string_view::npos)
      return parse_shape(m, "[" + std::string(list) + "]");
    throw input_error("--shape", "expected a global shape such as '[256, 1024]', '(256, 1024)' or "
                                 "'torch.Size([256, 1024])', found '" + text + "'");
  }
  const dist_type t = for_option("--shape", [&] { return parse_type(m, text); });
  bool plain = t.nsum == 0;
  for (int d = 0; d < t.rank; ++d) plain = plain && t.dims[d].n == 0;
  if (!plain) throw input_error("--shape", "expected a global shape such as '[256, 1024]', found the distributed type '" + text + "'");
  std::vector<std::uint64_t> g;
  for (int d = 0; d < t.rank; ++d) g.push_back(t.dims[d].global);
  return g;
}

/// Parse a type given in the XLA or Shardy notation or as a JAX NamedSharding with its
/// placed mesh, blaming the option used; `replicated` is the device count of XLA's
/// `{replicated}`, which has none.
inline placed_type parse_placed_type_option(const type_option& o, const std::string& shape, std::uint64_t replicated) {
  const std::vector<std::uint64_t> g = parse_shape(redist::device_mesh{}, shape);
  if (o.xla_opt->count() > 0) return for_option(o.xla_name, [&] { return from_xla(o.xla, g, replicated); });
  if (jax_sharding_given(o)) return for_option(o.jax_name, [&] { return from_jax_sharding(o.jax, g); });
  return for_option(o.shardy_name, [&] { return from_shardy_text(o.shardy, g); });
}

/// Parse a type given in any of its notations, blaming the option used.
inline dist_type parse_type_option(const redist::device_mesh& m, const type_option& o, const std::string& shape) {
  if (o.jax_opt->count() > 0) {
    const std::vector<std::uint64_t> g = parse_shape(m, shape);
    return for_option(o.jax_name, [&] { return from_jax(m, g, o.jax); });
  }
  if (o.dtensor_opt->count() > 0) {
    const std::vector<std::uint64_t> g = parse_shape(m, shape);
    return for_option(o.dtensor_name, [&] { return from_dtensor(m, g, o.dtensor); });
  }
  return for_option(o.paper_name, [&] { return parse_type(m, o.paper); });
}

/// True iff the option gives DTensor placements that no type says (nested uneven chunks,
/// core/dtensor.hpp): they are read as a box layout (dtensor_boxes_option).
inline bool dtensor_needs_boxes(const redist::device_mesh& m, const type_option& o, const std::string& shape) {
  if (o.dtensor_opt->count() == 0) return false;
  const std::vector<std::uint64_t> g = parse_shape(m, shape);
  return !for_option(o.dtensor_name, [&] { return dtensor_type_says(m, g, o.dtensor); });
}

/// The DTensor placements of the option as a box layout on placed mesh pm in a world of W
/// ranks (redist/box.hpp), blaming the option.
inline box_layout dtensor_boxes_option(const placed_mesh& pm, const type_option& o, const std::string& shape,
                                       std::uint64_t W) {
  const std::vector<std::uint64_t> g = parse_shape(pm.mesh, shape);
  return for_option(o.dtensor_name, [&] { return dtensor_layout(pm, g, o.dtensor, W); });
}

/// True iff the option gives a Shardy sharding or an XLA named sharding that no type says
/// (sub-axes in another order than redist's prime sub-axes, core/shardy.hpp): it is read as
/// a box layout (sharding_boxes_option).
inline bool sharding_needs_boxes(const type_option& o, const std::string& shape) {
  if (o.shardy_opt->count() == 0 && o.xla_opt->count() == 0) return false;
  const std::vector<std::uint64_t> g = parse_shape(redist::device_mesh{}, shape);
  if (o.xla_opt->count() > 0) return !for_option(o.xla_name, [&] { return xla_type_says(o.xla, g); });
  return !for_option(o.shardy_name, [&] { return shardy_type_says(o.shardy, g); });
}

/// The placed mesh of the option's Shardy or XLA text (its sub-axes in the order the
/// sharding names them), blaming the option; XLA's {replicated} on one device.
inline placed_mesh sharding_mesh_option(const type_option& o, const std::string& shape) {
  if (o.xla_opt->count() > 0) {
    const std::vector<std::uint64_t> g = parse_shape(redist::device_mesh{}, shape);
    return for_option(o.xla_name, [&] { return detail::parse_xla(o.xla, g, 1, true).pm; });
  }
  return for_option(o.shardy_name, [&] { return from_shardy_mesh(detail::shardy_split(o.shardy).first); });
}

/// The option's Shardy sharding or XLA named sharding as a box layout in a world of W ranks
/// (0: its mesh's), blaming the option.
inline box_layout sharding_boxes_option(const type_option& o, const std::string& shape, std::uint64_t W) {
  const std::vector<std::uint64_t> g = parse_shape(redist::device_mesh{}, shape);
  if (o.xla_opt->count() > 0) return for_option(o.xla_name, [&] { return xla_layout(o.xla, g, 1, W); });
  return for_option(o.shardy_name, [&] { return shardy_layout(o.shardy, g, W); });
}

/// A box layout given as JSON (`show --boxes`, `--from-boxes`, `--to-boxes`) for an array of
/// --shape, checked, blaming `option`.
inline box_layout boxes_json_option(std::string_view option, const std::string& json, const std::string& shape) {
  const std::vector<std::uint64_t> g = parse_shape(redist::device_mesh{}, shape);
  return for_option(option, [&] {
    return detail::box_layout_from_json(detail::parse_json_text(json, max_json_depth, "not JSON"), g);
  });
}

/// The options of a command about one type (show, convert): --mesh, --shape and the type
/// as --type, --jax, --dtensor, --xla or --shardy (the last two place their own mesh).
struct one_type_options {
  std::string mesh, shape;
  CLI::Option* mesh_opt = nullptr;
  CLI::Option* shape_opt = nullptr;
  type_option type;
};

inline void add_one_type_options(CLI::App& cmd, one_type_options& o) {
  o.mesh_opt = cmd.add_option("--mesh", o.mesh,
                              "device mesh, e.g. '{x: 2, y: 2}' (row-major device order), or on listed ranks: "
                              "'{x: 2, y: 2} @ [4, 6, 5, 7]'");
  o.shape_opt = add_shape_option(cmd, o.shape);
  add_type_option(cmd, o.type, o.shape_opt, "--type", "the type", "--jax", "--dtensor", "--xla", "--shardy");
  o.type.xla_opt->excludes(o.mesh_opt);
  o.type.shardy_opt->excludes(o.mesh_opt);
}

/// A parsed, checked mesh and type.
struct one_type {
  redist::device_mesh m;
  dist_type t;
  placed_mesh pm;  ///< m on its ranks
};

/// Parse and check one_type_options: a missing type or mesh, or an unused --shape, is a
/// usage error (exit 2), a bad value an input error naming its option.
inline one_type parse_one_type(const one_type_options& o) {
  require_type(o.type);
  check_shape_used(o.shape_opt, {&o.type});
  one_type r;
  if (carries_mesh(o.type)) {
    if (o.mesh_opt->count() > 0) throw CLI::ValidationError("--mesh", given_name(o.type) + " places its mesh itself");
    placed_type x = parse_placed_type_option(o.type, o.shape, 1);
    r.pm = std::move(x.pm);
    r.t = x.type;
  } else {
    if (o.mesh_opt->count() == 0) throw CLI::RequiredError("--mesh");
    r.pm = for_option("--mesh", [&] { return parse_placed_mesh(o.mesh); });
    r.t = parse_type_option(r.pm.mesh, o.type, o.shape);
  }
  r.m = r.pm.mesh;
  return r;
}

/// The notations the tool prints types in (--notation, convert --to).
inline const std::vector<std::string>& notation_names() {
  static const std::vector<std::string> names{"redist", "jax", "dtensor", "xla", "xla-named", "shardy"};
  return names;
}

/// The notation's name for people: "JAX PartitionSpec", "DTensor placements".
inline std::string_view notation_title(std::string_view notation) {
  return notation == "jax"         ? "JAX PartitionSpec"
         : notation == "dtensor"   ? "DTensor placements"
         : notation == "xla"       ? "XLA HloSharding"
         : notation == "xla-named" ? "XLA named sharding"
         : notation == "shardy"    ? "Shardy sharding"
                                   : "redist";
}

/// A type written in a notation, or why that notation cannot write it.
struct notated {
  std::string text;     ///< the type in the notation (empty if it has none)
  std::string why_not;  ///< why it has none (empty if it has one)
};

inline notated in_notation(const placed_mesh& pm, const dist_type& t, std::string_view notation) {
  const redist::device_mesh& m = pm.mesh;
  try {
    if (notation == "jax") return {to_jax(m, t), {}};
    if (notation == "dtensor") return {to_dtensor(m, t), {}};
    if (notation == "xla") return {to_xla(pm, t), {}};
    if (notation == "xla-named") return {to_xla_named(pm, t), {}};
    if (notation == "shardy") return {to_shardy_mesh(pm) + " " + to_shardy(pm, t), {}};
  } catch (const redist_error& e) {
    return {{}, e.what()};
  }
  return {type_text(m, t).str(), {}};
}
inline notated in_notation(const redist::device_mesh& m, const dist_type& t, std::string_view notation) {
  return in_notation(placed_mesh{m, {}}, t, notation);
}

/// One line for a type that a notation cannot write: why, and the type in ours.
inline std::string not_expressible(const redist::device_mesh& m, const dist_type& t, std::string_view notation,
                                   const std::string& why) {
  return fmt::format("{} (no {}: {})", type_text(m, t).str(), notation_title(notation), why);
}

/// The type in `notation`, or (one line) ours and why that notation cannot write it.
inline std::string type_in(const placed_mesh& pm, const dist_type& t, std::string_view notation) {
  const notated n = in_notation(pm, t, notation);
  return n.why_not.empty() ? n.text : not_expressible(pm.mesh, t, notation, n.why_not);
}

/// Write `content` to the file `path`, blaming `option` if it cannot.
inline void write_file(std::string_view option, const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary);
  if (f) f << content;
  if (!f || !f.flush()) throw input_error(option, "cannot write the file '" + path + "'");
}

/// The options that state a redistribution problem.
struct problem_options {
  std::string mesh, to_mesh, shape;
  std::uint64_t world = 0;
  CLI::Option* mesh_opt = nullptr;
  CLI::Option* shape_opt = nullptr;
  CLI::Option* to_mesh_opt = nullptr;
  CLI::Option* world_opt = nullptr;
  type_option from, to;
  std::string bytes = "4";  ///< checked by parse_problem, so that a bad value is an input error
};

inline void add_problem_options(CLI::App& cmd, problem_options& o) {
  o.mesh_opt = cmd.add_option("--mesh", o.mesh,
                              "device mesh, e.g. '{x: 4, y: 8}' (row-major device order), or on listed ranks: "
                              "'{x: 2, y: 2} @ [4, 6, 5, 7]' (not with --from-xla, --from-shardy)");
  o.to_mesh_opt = cmd.add_option("--to-mesh", o.to_mesh,
                                 "the target's mesh when it is not --mesh (other ranks, size or shape), e.g. "
                                 "'{a: 4} @ [4, 5, 6, 7]'");
  o.world_opt = cmd.add_option("--world", o.world,
                               "ranks of the communicator (default: the smallest that holds both meshes)")
                    ->type_name("UINT");
  o.shape_opt = add_shape_option(cmd, o.shape);
  add_type_option(cmd, o.from, o.shape_opt, "--from", "source type", {}, {}, {}, {}, true);
  add_type_option(cmd, o.to, o.shape_opt, "--to", "target type (on --to-mesh when given)", {}, {}, {}, {}, true);
  cmd.add_option("--bytes", o.bytes, "bytes per element")->type_name("UINT")->capture_default_str();
}

/// A parsed, checked problem. Meshes on device sets (DESIGN.md section 2): `src` and `dst`
/// place the source and target meshes on ranks of a world of `world` ranks; `m` is the
/// source's mesh.
struct problem {
  redist::device_mesh m;
  dist_type from, to;
  std::uint64_t bytes = 4;
  placed_mesh src, dst;
  std::uint64_t world = 0;
  /// DTensor placements (nested uneven chunks) and Shardy shardings (sub-axes in another
  /// order) that no type says, read as box layouts (then `from` / `to` is the replicated
  /// type of the global shape).
  std::optional<box_layout> from_boxes, to_boxes;
  /// The problem needs a program on device sets (format 2): a device list, another target
  /// mesh, a larger world, or a box layout.
  [[nodiscard]] bool placed() const {
    return !src.identity() || !(src == dst) || world != src.mesh.devices || from_boxes || to_boxes;
  }
  /// The source (target) as lower/between.hpp plans it.
  [[nodiscard]] array_layout source() const {
    return from_boxes ? array_layout{*from_boxes} : array_layout{placed_layout{src, from}};
  }
  [[nodiscard]] array_layout target() const {
    return to_boxes ? array_layout{*to_boxes} : array_layout{placed_layout{dst, to}};
  }
};

/// Parse and check the problem options, blaming the option whose value is wrong. A
/// missing type or an unused --shape is a usage error (CLI::ParseError, exit 2).
inline problem parse_problem(const problem_options& o) {
  require_type(o.from);
  require_type(o.to);
  check_shape_used(o.shape_opt, {&o.from, &o.to});
  problem p;
  // The meshes: XLA's and Shardy's notations place their own; --mesh the source's (and the
  // target's unless --to-mesh or the target's notation places it).
  const bool from_placed = carries_mesh(o.from), to_placed = carries_mesh(o.to);
  bool from_nested = false, to_nested = false;  // DTensor placements read as box layouts
  const bool from_sub = sharding_needs_boxes(o.from, o.shape), to_sub = sharding_needs_boxes(o.to, o.shape);  // sub-axes
  if (!from_placed && o.mesh_opt->count() == 0) throw CLI::RequiredError("--mesh");
  if (from_placed && o.mesh_opt->count() > 0)
    throw CLI::ValidationError("--mesh", given_name(o.from) + " places the source's mesh itself");
  if (to_placed && o.to_mesh_opt->count() > 0)
    throw CLI::ValidationError("--to-mesh", given_name(o.to) + " places the target's mesh itself");
  std::optional<placed_mesh> given;
  if (o.mesh_opt->count()) given = for_option("--mesh", [&] { return parse_placed_mesh(o.mesh); });
  if (o.to_mesh_opt->count()) p.dst = for_option("--to-mesh", [&] { return parse_placed_mesh(o.to_mesh); });
  // XLA's {replicated} names no devices: like XLA's, it holds the array on every device of
  // the computation, the world: --world, else the least that every other mesh given fits in
  // (found only where a side is XLA's: it reads the other side's text once more).
  std::uint64_t replicated = o.world_opt->count() ? o.world : 1;
  if (!o.world_opt->count() && o.from.xla_opt->count() + o.to.xla_opt->count() > 0) {
    if (given) replicated = std::max(replicated, given->min_world());
    if (o.to_mesh_opt->count()) replicated = std::max(replicated, p.dst.min_world());
    for (const type_option* t : {&o.from, &o.to}) {
      if (t->xla_opt->count() + t->shardy_opt->count() > 0)
        replicated = std::max(replicated, sharding_mesh_option(*t, o.shape).min_world());
      else if (jax_sharding_given(*t))
        replicated = std::max(replicated, parse_placed_type_option(*t, o.shape, 1).pm.min_world());
      else if (t->has_boxes()) replicated = std::max(replicated, boxes_json_option(t->boxes_name, t->boxes, o.shape).world());
    }
  }
  if (o.from.has_boxes()) {  // its carrier: the target's mesh (set below), else one device on rank 0
    p.from_boxes = boxes_json_option(o.from.boxes_name, o.from.boxes, o.shape);
    p.from = detail::shape_type(p.from_boxes->shape);
    p.src = {};
  } else if (from_sub) {  // the boxes once the world is known (below)
    p.src = sharding_mesh_option(o.from, o.shape);
    p.from = detail::shape_type(parse_shape(p.src.mesh, o.shape));
  } else if (from_placed) {
    placed_type x = parse_placed_type_option(o.from, o.shape, replicated);
    p.src = std::move(x.pm);
    p.from = x.type;
  } else {
    p.src = *given;
    from_nested = dtensor_needs_boxes(p.src.mesh, o.from, o.shape);
    p.from = from_nested ? detail::shape_type(parse_shape(p.src.mesh, o.shape)) : parse_type_option(p.src.mesh, o.from, o.shape);
  }
  if (o.to.has_boxes()) {
    p.to_boxes = boxes_json_option(o.to.boxes_name, o.to.boxes, o.shape);
    p.to = detail::shape_type(p.to_boxes->shape);
    p.dst = p.src;
  } else if (to_sub) {
    p.dst = sharding_mesh_option(o.to, o.shape);
    p.to = detail::shape_type(parse_shape(p.dst.mesh, o.shape));
  } else if (to_placed) {
    placed_type x = parse_placed_type_option(o.to, o.shape, replicated);
    p.dst = std::move(x.pm);
    p.to = x.type;
  } else {
    if (!o.to_mesh_opt->count()) p.dst = p.src;
    to_nested = dtensor_needs_boxes(p.dst.mesh, o.to, o.shape);
    p.to = to_nested ? detail::shape_type(parse_shape(p.dst.mesh, o.shape)) : parse_type_option(p.dst.mesh, o.to, o.shape);
  }
  if (o.from.has_boxes() && !o.to.has_boxes()) p.src = p.dst;
  p.m = p.src.mesh;
  p.world = o.world_opt->count() ? o.world : std::max(p.src.min_world(), p.dst.min_world());
  for (const auto& b : {p.from_boxes, p.to_boxes})  // explicit box layouts list every world rank
    if (b && !o.world_opt->count()) p.world = std::max(p.world, b->world());
  for (const auto& [b, t] : {std::pair{&p.from_boxes, &o.from}, std::pair{&p.to_boxes, &o.to}})
    if (t->has_boxes())
      if (std::string e = box_layout_problem(**b, p.world); !e.empty()) throw input_error(given_name(*t), e);
  if (error e = check_placement(p.src, p.world))
    throw input_error(o.world_opt->count() ? "--world" : given_name(o.from) == o.from.paper_name ? "--mesh" : given_name(o.from), e.message.str());
  if (error e = check_placement(p.dst, p.world))
    throw input_error(o.world_opt->count() ? "--world" : o.to_mesh_opt->count() ? "--to-mesh" : given_name(o.to), e.message.str());
  if (from_nested) p.from_boxes = dtensor_boxes_option(p.src, o.from, o.shape, p.world);
  if (to_nested) p.to_boxes = dtensor_boxes_option(p.dst, o.to, o.shape, p.world);
  if (from_sub) p.from_boxes = sharding_boxes_option(o.from, o.shape, p.world);
  if (to_sub) p.to_boxes = sharding_boxes_option(o.to, o.shape, p.world);
  // Whether the target can be reached from the source at all (same global shape, no
  // pending sums created) is the search problem's to say (for even types on one mesh;
  // uneven ones and meshes on device sets need the same global shape, lower/synthesize.hpp
  // and lower/between.hpp say the rest).
  for_option(given_name(o.to), [&] {
    if (!p.placed() && !from_nested && !to_nested && even(p.m, p.from) && even(p.m, p.to)) make_weak_problem(p.m, p.from, p.to).get();
    else if (error e = check_same_global(p.from, p.to)) throw redist_error(e);
  });
  const char* end = o.bytes.data() + o.bytes.size();
  auto [ptr, ec] = std::from_chars(o.bytes.data(), end, p.bytes);
  if (ec != std::errc{} || ptr != end || o.bytes.empty())
    throw input_error("--bytes", "expected a number of bytes per element, found '" + o.bytes + "'");
  if (p.bytes == 0) throw input_error("--bytes", "element size must be at least 1 byte");
  return p;
}

/// What --profile gives: the time profile and, from `redist calibrate --backend mpi`, the
/// way the MPI backend moves exchanges fastest.
struct profile_file {
  time_profile profile = builtin_profile;
  std::optional<mpi_exchange_choice> mpi;
};

/// The profile of --profile: `built-in`, or a file from `redist calibrate`.
inline profile_file read_profile(const std::string& path) {
  if (path == "built-in") return {};
  std::ifstream f(path, std::ios::binary);
  std::ostringstream text;
  if (f) text << f.rdbuf();
  if (!f) throw input_error("--profile", "cannot read the file '" + path + "'");
  return for_option("--profile", [&] {
    return profile_file{profile_from_json_text(text.str()), mpi_exchange_from_profile_json_text(text.str())};
  });
}

/// --exchange (run, reshard run): how the MPI backend moves exchanges.
struct exchange_option {
  std::string name;  ///< empty: the profile's choice, else single-copy
};

inline void add_exchange_option(CLI::App& cmd, exchange_option& o) {
  std::vector<std::string> ways;
  for (mpi_exchange m : all_mpi_exchanges) ways.emplace_back(mpi_exchange_name(m));
  cmd.add_option("--exchange", o.name,
                 "mpi: how exchanges move: single-copy (cross-memory attach within a node), alltoallw "
                 "(MPI_Alltoallw of subarrays) or packed (MPI_Alltoallv); default: what the --profile "
                 "of `redist calibrate --backend mpi` found fastest, else single-copy")
      ->check(CLI::IsMember(ways))
      ->type_name("WAY");
}

/// The MPI backend's way of exchanging: --exchange, else the profile's, else the default.
/// `backend` is the command's --backend: --exchange is refused for any other than mpi.
inline mpi_exchange exchange_of(const exchange_option& o, const std::optional<mpi_exchange_choice>& profile,
                                const std::string& backend) {
  if (!o.name.empty()) {
    if (backend != "mpi") throw input_error("--exchange", "only for --backend mpi");
    return *mpi_exchange_from_name(o.name);
  }
  return profile ? profile->exchange : mpi_exchange::single_copy;
}

/// How a command plans: --budget, --objective, --profile (plan and run).
struct planning_options {
  double budget = 1.0;
  bool relabel = false;
  std::string objective = "time";
  std::string profile;  ///< a file from `redist calibrate`, `built-in`, or empty (the built-in one)
  CLI::Option* budget_opt = nullptr;
  CLI::Option* objective_opt = nullptr;
  CLI::Option* profile_opt = nullptr;
};

inline void add_planning_options(CLI::App& cmd, planning_options& o) {
  o.budget_opt = cmd.add_option("--budget", o.budget,
                                "memory budget: intermediates may hold this factor times max(local source, local target)")
                     ->capture_default_str();
  o.objective_opt = cmd.add_option("--objective", o.objective,
                                   "what the search minimizes: time (predicted, under the profile) or bytes (the "
                                   "paper's fewest-bytes collective program)")
                        ->check(CLI::IsMember({"time", "bytes"}))
                        ->capture_default_str();
  o.profile_opt = cmd.add_option("--profile", o.profile,
                                 "the time profile plans are predicted with: a file from `redist calibrate`, or "
                                 "built-in (the default); with --objective bytes it also chooses between the "
                                 "collective program and the exchange")
                      ->type_name("FILE");
  cmd.add_flag("--relabel", o.relabel,
               "let the planner choose the order of the target mesh's ranks (COSTA's relabelling) and print it");
}

/// Planning options checked and resolved: the synth_options of a problem, with the profile
/// they point to.
struct planning {
  time_profile profile = builtin_profile;
  bool profile_given = false;
  std::optional<mpi_exchange_choice> mpi;  ///< the profile's way of exchanging on MPI
  objective goal = objective::time;
  double budget = 1.0;
  bool relabel = false;
  /// The synth_options (pointing into this object: keep it alive).
  [[nodiscard]] synth_options options(std::uint64_t element_bytes) const {
    return synth_options{element_bytes, budget, profile_given ? &profile : nullptr, goal};
  }
};

inline planning parse_planning(const planning_options& o) {
  planning p;
  if (error e = check_budget(o.budget)) throw input_error("--budget", e.message.str());
  p.budget = o.budget;
  p.goal = o.objective == "bytes" ? objective::bytes : objective::time;
  p.relabel = o.relabel;
  if (!o.profile.empty()) {
    profile_file f = read_profile(o.profile);
    p.profile = f.profile;
    p.mpi = f.mpi;
    p.profile_given = true;
  }
  return p;
}

/// The candidates and the choice for a problem: between placed meshes (lower/between.hpp)
/// when it needs a program on device sets or --relabel is given, else on one mesh
/// (choose_plan).
inline plan_choice choose_for(const problem& pr, const planning& pl) {
  const synth_options so = pl.options(pr.bytes);
  if (!pr.placed() && !pl.relabel) return choose_plan(pr.m, pr.from, pr.to, so);
  if (pr.from_boxes || pr.to_boxes) return plan_between(pr.source(), pr.target(), pr.world, between_options{so, false});
  return plan_between(placed_layout{pr.src, pr.from}, placed_layout{pr.dst, pr.to}, pr.world,
                      between_options{so, pl.relabel});
}

/// The program a command runs: the one synthesize returns, or plan_between's choice.
inline program program_for(const problem& pr, const planning& pl) {
  if (!pr.placed() && !pl.relabel) return synthesize(pr.m, pr.from, pr.to, pl.options(pr.bytes));
  plan_choice c = choose_for(pr, pl);
  return std::move(c.candidates[c.chosen].prog);
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
      {"xla-2022", &baselines::xla_2022_program},
  };
  return all;
}

/// The program of the baseline named `name` (one of baselines()); they model XLA's and the
/// naive resharding of even types on one mesh, so an uneven problem, or one on device sets,
/// is refused.
inline program baseline_program(const std::string& name, const problem& pr) {
  if (pr.placed())
    throw input_error("--baseline", "the " + name + " baseline models resharding on one mesh of ranks 0..D-1");
  if (!even(pr.m, pr.from) || !even(pr.m, pr.to))
    throw input_error("--baseline", "the " + name +
                                        " baseline models the resharding of even types, and this problem has an "
                                        "uneven dimension");
  for (const baseline& b : baselines())
    if (b.name == name) return b.make(pr.m, pr.from, pr.to, pr.bytes);
  throw input_error("--baseline", "unknown baseline '" + name + "'");
}

}  // namespace redist::tools
