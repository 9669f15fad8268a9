// tools/convert_command.cpp -- `redist convert`: a type in the paper syntax, as a JAX
// PartitionSpec and as PyTorch DTensor placements (core/jax.hpp, core/dtensor.hpp), and with
// --to xla,xla-named,shardy as XLA HloSharding, XLA's named sharding and Shardy text with the
// mesh's devices (core/xla.hpp, core/shardy.hpp).
//
//   redist convert --mesh '{x: 2, y: 2}' --type '[64{x}128, 32{y}64]'
//   redist       [64{x}128, 32{y}64]
//   jax          PartitionSpec('x', 'y')
//   dtensor      [Shard(0), Shard(1)]
//
//   redist convert --mesh '{x: 2, y: 2}' --jax "P(('x', 'y'))" --shape '[128]' --to redist
//   [32{y, x}128]
//
//   redist convert --xla '{devices=[2,2]<=[2,2]T(1,0)}' --shape '[8, 8]'
//   mesh         {d0: 2, d1: 2} @ [0, 2, 1, 3]
//   redist       [4{d0}8, 4{d1}8]
//   jax          PartitionSpec('d0', 'd1')
//   dtensor      [Shard(0), Shard(1)]
//
// With one notation in --to only the type is printed, and a type that notation cannot
// write is an error (exit 1); with several, one labelled line each, saying so instead.
// `mesh` is the mesh in redist's syntax (with its device list), the line `--mesh` takes; by
// default it comes first where the type's notation placed its own mesh (XLA, Shardy, a JAX
// NamedSharding), whose device order the other default lines do not say.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"

namespace redist::tools {

namespace {

struct convert_options {
  one_type_options in;
  std::vector<std::string> to;  ///< empty: the default lines
};

void run_convert(const convert_options& o) {
  const one_type in = parse_one_type(o.in);
  const dist_type& t = in.t;
  std::vector<std::string> to = o.to;
  if (to.empty()) {
    to = {"redist", "jax", "dtensor"};
    if (carries_mesh(o.in.type)) to.insert(to.begin(), "mesh");
  }
  auto line = [&](const std::string& name) {
    return name == "mesh" ? notated{placed_mesh_text(in.pm), {}} : in_notation(in.pm, t, name);
  };
  if (to.size() == 1) {
    const notated n = line(to[0]);
    if (!n.why_not.empty()) throw input_error("--to", fmt::format("the type has no {}: {}", notation_title(to[0]), n.why_not));
    fmt::print("{}\n", n.text);
    return;
  }
  for (const std::string& name : to) {
    const notated n = line(name);
    fmt::print("{:<12} {}\n", name, n.why_not.empty() ? n.text : "none: " + n.why_not);
  }
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto opts = std::make_shared<convert_options>();
  CLI::App* cmd = app.add_subcommand("convert", "write a type in the redist, JAX, DTensor, XLA and Shardy notations");
  add_one_type_options(*cmd, opts->in);
  std::vector<std::string> names = notation_names();
  names.emplace_back("mesh");
  cmd->add_option("--to", opts->to,
                  "the notations to print: redist, jax, dtensor (the default, after the mesh where the type's notation "
                  "places it), xla, xla-named, shardy; mesh: the mesh with its devices, as --mesh takes it")
      ->check(CLI::IsMember(names))
      ->delimiter(',');
  cmd->callback([opts] { run_convert(*opts); });
}

}  // namespace redist::tools
