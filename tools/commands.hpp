// tools/commands.hpp -- the subcommands of the `redist` tool, one source file each.
#pragma once

#include <CLI/CLI.hpp>

namespace redist::tools {

void add_plan_command(CLI::App& app);  // plan_command.cpp
void add_run_command(CLI::App& app);   // run_command.cpp: `redist run`
void add_show_command(CLI::App& app);     // show_command.cpp: `redist show`
void add_convert_command(CLI::App& app);  // convert_command.cpp: `redist convert`
void add_calibrate_command(CLI::App& app);  // calibrate_command.cpp: `redist calibrate`
void add_reshard_command(CLI::App& app);    // reshard_command.cpp: `redist reshard plan|run`

}  // namespace redist::tools
