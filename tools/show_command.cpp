// tools/show_command.cpp -- `redist show`: draw which device holds which box of a
// distributed array (redist/draw.hpp), in the terminal and, with --svg FILE, as SVG.
//
//   redist show --mesh '{x: 2, y: 2}' --type '[64{x}128, 32{y}64]'
//   redist show --mesh '{x: 2, y: 2}' --jax "P('x', 'y')" --shape '[128, 64]' --svg a.svg
//   redist show --mesh '{x: 2, y: 2}' --dtensor '[Shard(0), Partial()]' --shape '[128, 64]'
//   redist show --mesh '{x: 2, y: 2}' --dtensor '[Shard(0), Shard(0)]' --shape '[10, 5]'
//
// DTensor placements that no type says (nested uneven chunks, core/dtensor.hpp) are drawn
// as the box layout they are (redist/box.hpp): the array cut at every box's edges, each
// piece labelled with the world rank holding it. So is a box layout given as JSON, one box
// ([lo, hi] per dimension) or null per world rank, with its global shape:
//
//   redist show --boxes '[[[0, 3], [0, 4]], null, [[3, 8], [0, 4]]]' --shape '[8, 4]'
//
// Colour: --color auto (the default) colours the boxes when stdout is a terminal and the
// NO_COLOR environment variable is unset or empty; always and never force it.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "redist/draw.hpp"
#include "redist/program_json.hpp"

namespace redist::tools {

namespace {

struct show_options {
  one_type_options in;
  std::string svg;
  std::string color = "auto";
  std::string notation = "redist";
  std::string boxes;  ///< --boxes: a box layout as JSON
  CLI::Option* boxes_opt = nullptr;
};

bool use_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  return isatty(fileno(stdout)) != 0;
}

/// Draw box layout l (given by `option`).
void draw_layout(const show_options& o, const box_layout& l, std::string_view option) {
  const std::string text = for_option(option, [&] {
    if (!o.svg.empty()) write_file("--svg", o.svg, show_svg(l));
    draw_options d;
    d.color = use_color(o.color);
    return show_text(l, d);
  });
  fmt::print("{}", text);
}

/// --boxes (with --shape): the box layout, one box or null per world rank, checked.
box_layout boxes_option(const show_options& o) {
  if (o.in.shape_opt->count() == 0) throw CLI::RequiredError("--shape");
  return boxes_json_option("--boxes", o.boxes, o.in.shape);
}

/// A box layout: --boxes, DTensor placements or a Shardy sharding no type says; false for
/// every other type.
bool show_boxes(const show_options& o) {
  if (o.boxes_opt->count() > 0) {
    draw_layout(o, boxes_option(o), "--boxes");
    return true;
  }
  if (sharding_needs_boxes(o.in.type, o.in.shape)) {
    draw_layout(o, sharding_boxes_option(o.in.type, o.in.shape, 0), given_name(o.in.type));
    return true;
  }
  if (o.in.type.dtensor_opt->count() == 0 || o.in.mesh_opt->count() == 0) return false;
  const placed_mesh pm = for_option("--mesh", [&] { return parse_placed_mesh(o.in.mesh); });
  if (!dtensor_needs_boxes(pm.mesh, o.in.type, o.in.shape)) return false;
  draw_layout(o, dtensor_boxes_option(pm, o.in.type, o.in.shape, 0), given_name(o.in.type));
  return true;
}

void run_show(const show_options& o) {
  if (show_boxes(o)) return;
  const one_type in = parse_one_type(o.in);
  const device_mesh& m = in.m;
  const dist_type& t = in.t;
  draw_options d;
  d.devices = in.pm.devices;  // boxes labelled with world ranks on a mesh on device sets
  std::string note;  // the one line saying the notation cannot write the type
  if (o.notation != "redist") {
    const notated n = in_notation(in.pm, t, o.notation);
    if (n.why_not.empty()) d.type_label = n.text;
    else note = fmt::format("no {}: {}; the type is shown in redist notation\n", notation_title(o.notation), n.why_not);
  }
  // Too large to draw is the type's problem (or the mesh's).
  const std::string text = for_option(given_name(o.in.type), [&] {
    draw_options plain = d;
    if (!o.svg.empty()) write_file("--svg", o.svg, show_svg(m, t, plain));
    d.color = use_color(o.color);
    return show_text(m, t, d);
  });
  fmt::print("{}{}", note, text);
}

}  // namespace

void add_show_command(CLI::App& app) {
  auto opts = std::make_shared<show_options>();
  CLI::App* cmd = app.add_subcommand("show", "draw which device holds which tile of a distributed array");
  add_one_type_options(*cmd, opts->in);
  cmd->add_option("--svg", opts->svg, "also draw the picture into this SVG file")->type_name("FILE");
  cmd->add_option("--color", opts->color, "colour the boxes: auto (a terminal, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  cmd->add_option("--notation", opts->notation, "write the type in the header in this notation")
      ->check(CLI::IsMember(notation_names()))
      ->capture_default_str();
  opts->boxes_opt = cmd->add_option("--boxes", opts->boxes,
                                    "a box layout as JSON, one box ([lo, hi] per dimension) or null per world rank, "
                                    "e.g. '[[[0, 3], [0, 4]], null, [[3, 8], [0, 4]]]' (with --shape)")
                         ->excludes(opts->in.mesh_opt)
                         ->excludes(opts->in.type.paper_opt)
                         ->excludes(opts->in.type.jax_opt)
                         ->excludes(opts->in.type.dtensor_opt)
                         ->excludes(opts->in.type.xla_opt)
                         ->excludes(opts->in.type.shardy_opt);
  cmd->callback([opts] { run_show(*opts); });
}

}  // namespace redist::tools
