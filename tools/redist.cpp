// tools/redist.cpp -- the `redist` command-line tool.
//
// Exit status: 0 on success, 1 on bad input (one line on stderr naming the option and,
// for text, the column: `redist: error: --from: ...`), 2 on a command-line usage error, 3 on an
// internal error (a bug: please report it).
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "redist/core/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"redist: memory-efficient array redistribution through portable collectives", "redist"};
  app.require_subcommand(1);
  redist::tools::add_plan_command(app);
  // Further subcommands register here, one source file each (see commands.hpp):
  redist::tools::add_run_command(app);   // `redist run`, tools/run_command.cpp
  redist::tools::add_show_command(app);     // `redist show`, tools/show_command.cpp
  redist::tools::add_convert_command(app);  // `redist convert`, tools/convert_command.cpp
  redist::tools::add_calibrate_command(app);  // `redist calibrate`, tools/calibrate_command.cpp
  redist::tools::add_reshard_command(app);    // `redist reshard plan|run`, tools/reshard_command.cpp

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, or the usage error
    return rc == 0 ? 0 : 2;
  } catch (const redist::tools::input_error& e) {
    fmt::print(stderr, "redist: error: {}\n", e.what());
    return 1;
  } catch (const redist::redist_error& e) {
    fmt::print(stderr, "redist: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "redist: internal error: {}\n", e.what());
    return 3;
  }
  return 0;
}
