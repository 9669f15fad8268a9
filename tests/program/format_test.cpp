// Tests of redist/format.hpp: the fmt formatters and ostream operators.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>

#include "baselines/naive.hpp"
#include "redist/format.hpp"
#include "redist/lower/exchange.hpp"
#include "redist/lower/synthesize.hpp"
#include "support/random_problems.hpp"

// A namespace of its own: the folder's tests compile as one unit (tests/CMakeLists.txt).
namespace format_test {

using namespace redist;

/// The paper's objective (fewest Fig. 11 bytes): the fixed cases below name its programs.
constexpr synth_options paper{.goal = objective::bytes};

TEST_CASE("meshes, ops and types print in the paper syntax") {
  device_mesh m = parse_mesh("{x: 4, \"my axis\": 8}");
  CHECK(fmt::format("{}", m) == "{x: 4, \"my axis\": 8}");
  CHECK(fmt::format("[{:>20}]", parse_mesh("{x: 4}")) == "[              {x: 4}]");  // string specs apply
  CHECK(fmt::format("{} {}", op::alltoall, op::allpermute) == "alltoall allpermute");
  dist_type t = parse_type(m, "[{x}256, 1024]");
  CHECK(fmt::format("{}", typed{m, t}) == "[64{x}256, 1024]");
  std::ostringstream os;
  os << m << ' ' << op::dynslice << ' ' << typed{m, t};
  CHECK(os.str() == "{x: 4, \"my axis\": 8} dynslice [64{x}256, 1024]");
}

TEST_CASE("the plan of seed 000 Listing 3 prints as a table") {
  program p = synthesize("{devs: 32}", "[32, 64{devs}2048]", "[1{devs}32, 2048]", paper);
  const std::string s = fmt::format("{}", p);
  CHECK(s ==
        "redist program on {devs: 32}: [32, 64{devs}2048] -> [1{devs}32, 2048], 4-byte elements\n"
        "   #  op        concat  split   n  groups  cost (B)  local  type after\n"
        "   1  alltoall       1      0  32       1      8192   2048  [1{devs}32, 2048]\n"
        "total 8192 B per device (2048 elements) | peak 2048 | bound 2048 | memory-efficient");
  std::ostringstream os;
  os << p;
  CHECK(os.str() == s);
}

TEST_CASE("columns align across steps; dynslice and allgather show their parts") {
  program p = synthesize("{x: 4, y: 8}", "[64{x}256, 1024]", "[256, 128{y}1024]", {.element_bytes = 2, .goal = objective::bytes});
  CHECK(fmt::format("{}", p) ==
        "redist program on {x: 4, y: 8}: [64{x}256, 1024] -> [256, 128{y}1024], 2-byte elements\n"
        "   #  op         concat  split  n  groups  cost (B)  local  type after\n"
        "   1  dynslice        -      1  8       -         0   8192  [64{x}256, 128{y}1024]\n"
        "   2  allgather       0      -  4       8     65536  32768  [256, 128{y}1024]\n"
        "total 65536 B per device (32768 elements) | peak 65536 | bound 65536 | memory-efficient");
}

TEST_CASE("a step prints on one line") {
  const program p = synthesize("{x: 4, y: 8}", "[64{x}256, 1024]", "[256, 128{y}1024]", paper);
  REQUIRE(p.steps.size() == 2);
  CHECK(fmt::format("{}", p.steps[0]) == "dynslice split 1 in 8 | cost 0 | local 8192");
  CHECK(fmt::format("{}", p.steps[1]) == "allgather concat 0, 8 groups of 4 | cost 32768 | local 32768");
  const program l3 = synthesize("{devs: 32}", "[32, 64{devs}2048]", "[1{devs}32, 2048]", paper);
  std::ostringstream os;
  os << l3.steps.at(0);
  CHECK(os.str() == "alltoall concat 1 split 0, 1 group of 32 | cost 2048 | local 2048");
  const program perm = synthesize("{x: 2, y: 2}", "[{x}4]", "[{y}4]", paper);
  CHECK(fmt::format("{}", perm.steps.at(0)) == "allpermute, 2 of 4 tiles move | cost 2 | local 2");
}

TEST_CASE("an allpermute, an empty program and a program above the bound") {
  program perm = synthesize("{x: 2, y: 2}", "[{x}4]", "[{y}4]", paper);
  CHECK(fmt::format("{}", perm).find("   1  allpermute       -      -  -       -         8      2  [2{y}4]\n") !=
        std::string::npos);
  program none = synthesize("{x: 2}", "[{x}4]", "[2{x}4]", paper);
  CHECK(fmt::format("{}", none) ==
        "redist program on {x: 2}: [2{x}4] -> [2{x}4], 4-byte elements\n"
        "  (no steps: every device already holds its target tile)\n"
        "total 0 B per device (0 elements) | peak 2 | bound 2 | memory-efficient");
  device_mesh m = parse_mesh("{x: 4, y: 8}");
  program naive = baselines::naive_program(m, parse_type(m, "[64{x}256, 1024]"), parse_type(m, "[256, 128{y}1024]"));
  CHECK(fmt::format("{}", naive).ends_with("| peak 262144 | bound 65536 | NOT memory-efficient"));
}

TEST_CASE("types that hold only up to a device permutation are marked with ~") {
  // Find synthesized programs with inexact intermediate types; their rows carry `~`.
  std::mt19937_64 rng(7);
  int inexact = 0;
  for (const auto& w : testing::mixed_workloads()) {
    for (const auto& pt : testing::random_problems(w, 40, rng())) {
      program p = synthesize(pt.mesh, pt.from, pt.to, paper);
      const std::string s = fmt::format("{}", p);
      for (const step& st : p.steps) {
        const std::string type = type_text(p.m, st.type_after).str();
        CHECK(s.find((st.type_exact ? "  " : "  ~") + type + "\n") != std::string::npos);
        inexact += !st.type_exact;
      }
    }
  }
  CHECK(inexact > 0);
}

TEST_CASE("text cut at the core's fixed capacity is marked") {
  // Two long-named axes of 2^20 devices, every prime sub-axis written on its own.
  const std::string a(31, 'a'), b(31, 'b');
  std::string subs;
  for (const std::string* n : {&a, &b})
    for (std::uint64_t pre = 1; pre < (1u << 20); pre *= 2) subs += (subs.empty() ? "" : ", ") + *n + ":(" + std::to_string(pre) + ")2";
  const device_mesh m = parse_mesh("{" + a + ": 1048576, " + b + ": 1048576}");
  const dist_type t = parse_type(m, "[{" + subs + "}1099511627776]");
  const std::string s = fmt::format("{}", typed{m, t});
  CHECK(s.size() == static_cast<std::size_t>(text::capacity) + 3);
  CHECK(s.ends_with("..."));
  CHECK(fmt::format("{}", parse_mesh("{x: 4}")) == "{x: 4}");
}

TEST_CASE("an exchange prints on one line: its boxes' shape, what one device receives", "[exchange]") {
  const device_mesh m = parse_mesh("{x: 2, y: 3}");
  const program p = exchange_program(m, parse_type(m, "[3{x}6, 2{y}6]"), parse_type(m, "[2{y}6, 3{x}6]"));
  REQUIRE(p.steps.size() == 1);
  CHECK(fmt::format("{}", p.steps[0]) == "exchange to 6 boxes of [2, 3] | cost 6 | local 6");
  CHECK(fmt::format("{}", p) ==
        "redist program on {x: 2, y: 3}: [3{x}6, 2{y}6] -> [2{y}6, 3{x}6], 4-byte elements\n"
        "   #  op        concat  split  n  groups  cost (B)  local  type after\n"
        "   1  exchange       -      -  -       -        24      6  [2{y}6, 3{x}6]  (receives at most 6 elements from "
        "up to 3 ranks)\n"
        "total 24 B per device (6 elements) | peak 6 | bound 6 | memory-efficient");
  // A large mesh still prints one line per step, no list of boxes.
  const device_mesh big = parse_mesh("{x: 64, y: 64}");
  const program q = exchange_program(big, parse_type(big, "[{x}256, {y}256]"), parse_type(big, "[{y}256, {x}256]"), 2);
  const std::string s = fmt::format("{}", q);
  CHECK(std::count(s.begin(), s.end(), '\n') == 3);
  CHECK(s.find("  1  exchange       -      -  -       -        32     16  [4{y}256, 4{x}256]  (receives at most 16 "
               "elements from up to 1 rank)\n") != std::string::npos);
  // A malformed exchange still prints (without what it cannot plan).
  program bad = p;
  bad.steps[0].boxes.resize(3);
  CHECK(fmt::format("{}", bad).find("   1  exchange       -      -  -       -        24      6  [2{y}6, 3{x}6]\n") !=
        std::string::npos);
}

}  // namespace format_test
