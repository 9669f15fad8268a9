// tests/support/subprograms.hpp -- one test executable that holds several programs, each
// compiled in the same translation unit so that the library's headers compile once
// (backends_mpi_test, backends_nccl_emulated_test, docs_programs): its first argument names
// the program, which then sees argv[0] and the arguments after the name.
#pragma once

#include <cstdio>
#include <span>
#include <string_view>

namespace redist::testing {

/// One program of a test executable: its name and its main.
struct subprogram {
  std::string_view name;
  int (*run)(int argc, char** argv);
};

/// Run the program of `programs` that argv[1] names; otherwise print `usage` (one line) and
/// return 2.
inline int run_subprogram(int argc, char** argv, std::span<const subprogram> programs, const char* usage) {
  const std::string_view what = argc > 1 ? argv[1] : "";
  for (const subprogram& p : programs)
    if (p.name == what) {
      argv[1] = argv[0];
      return p.run(argc - 1, argv + 1);
    }
  std::fprintf(stderr, "%s\n", usage);
  return 2;
}

}  // namespace redist::testing
