// Tests of redist/profile_json.hpp: round trips of time profiles and one clear line for
// every malformed profile.
#include "redist/profile_json.hpp"

#include <catch2/catch.hpp>

#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

// A namespace of its own: the folder's tests compile as one unit (tests/CMakeLists.txt).
namespace profile_json_test {

namespace {

std::string error_of(const std::string& text) {
  try {
    (void)redist::profile_from_json_text(text);
  } catch (const redist::redist_error& e) {
    return e.what();
  }
  return "(no error)";
}

/// The built-in profile's JSON with one edit.
std::string edited(void (*edit)(nlohmann::json&)) {
  nlohmann::json j = nlohmann::json::parse(redist::profile_json_text(redist::builtin_profile));
  edit(j);
  return j.dump();
}

}  // namespace

TEST_CASE("time profiles round-trip through JSON", "[profile_json]") {
  const redist::time_profile& b = redist::builtin_profile;
  const std::string text = redist::profile_json_text(b);
  const redist::time_profile back = redist::profile_from_json_text(text);
  CHECK(back.name_view() == "built-in");
  CHECK(back.devices == b.devices);
  for (redist::op o : redist::all_ops) CHECK(back[o] == b[o]);
  CHECK(back.pass_per_byte == b.pass_per_byte);
  CHECK(b.pass_per_byte > 0);

  redist::time_profile odd;
  odd.set_name("mpi \"node\" 7");
  odd.devices = 6;
  odd[redist::op::exchange] = {1.0 / 3.0, 1e-300, 123456.789};
  odd.pass_per_byte = 1.0 / 7.0;
  odd.overlap = 2.0 / 3.0;
  const redist::time_profile o2 = redist::profile_from_json_text(redist::profile_json_text(odd));
  CHECK(o2.name_view() == odd.name_view());
  CHECK(o2.pass_per_byte == odd.pass_per_byte);
  CHECK(o2.overlap == odd.overlap);
  CHECK(o2 == odd);
  for (redist::op o : redist::all_ops) CHECK(o2[o] == odd[o]);

  // The layout: the format first, one line per op.
  CHECK(text.starts_with("{\n  \"format\": \"redist-time-profile/2\",\n  \"name\": \"built-in\",\n  \"devices\": 8,\n"
                         "  \"pass_per_byte_s\": "));
  CHECK(text.find(",\n  \"overlap\": 0.0,\n  \"ops\": {\n") != std::string::npos);
  CHECK(text.find("\n    \"allgather\": {\"latency_s\":") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(text);
  CHECK(j["ops"].size() == 7);
  CHECK(j["ops"]["alltoall"]["per_byte_s"].get<double>() == b[redist::op::alltoall].per_byte);
  // A profile written before the pass reads with pass 0, the rest unchanged.
  const redist::time_profile old =
      redist::profile_from_json_text(edited([](nlohmann::json& x) { x.erase("pass_per_byte_s"); }));
  CHECK(old.pass_per_byte == 0);
  CHECK(redist::profile_from_json_text(edited([](nlohmann::json& x) { x.erase("overlap"); })) == b);
  CHECK(old[redist::op::alltoall] == b[redist::op::alltoall]);
  // Ranks on several nodes: "nodes", written only where set.
  CHECK(text.find("\"nodes\"") == std::string::npos);
  CHECK(j.find("nodes") == j.end());
  redist::time_profile two = b;
  two.node_ranks = 4;
  two.node_per_byte = 1.0 / 3e9;
  const std::string two_text = redist::profile_json_text(two);
  CHECK(two_text.find(",\n  \"nodes\": {\"per_byte_s\":") == std::string::npos);
  CHECK(two_text.find(",\n  \"nodes\": {\"ranks\":4,\"per_byte_s\":") != std::string::npos);
  CHECK(redist::profile_from_json_text(two_text) == two);
  CHECK(redist::profile_from_json_text(edited([](nlohmann::json& x) { x["nodes"] = {{"ranks", 8}, {"per_byte_s", 2e-11}}; }))
            .node_ranks == 8);
  // Fields it does not know are ignored.
  CHECK_NOTHROW(redist::profile_from_json_text(edited([](nlohmann::json& x) { x["measured_on"] = "today"; })));
}

TEST_CASE("malformed time profiles are one clear line naming the JSON path", "[profile_json]") {
  CHECK(error_of("{") .starts_with("time profile JSON: parse error"));
  CHECK(error_of("[1]") == "time profile JSON: expected an object, found [1]");
  CHECK(error_of(std::string(100, '[')) .find("nested deeper than 8 levels") != std::string::npos);
  CHECK(error_of(edited([](nlohmann::json& j) { j["format"] = "redist-program/1"; })) ==
        "time profile JSON: format: expected \"redist-time-profile/2\", found \"redist-program/1\"");
  // A profile priced per peer, before collectives were priced per round: recalibrate.
  CHECK(error_of(edited([](nlohmann::json& j) { j["format"] = "redist-time-profile/1"; })) ==
        "time profile JSON: format: \"redist-time-profile/1\" priced a collective per peer, this redist per round "
        "(\"redist-time-profile/2\"): run redist calibrate again");
  CHECK(error_of(edited([](nlohmann::json& j) { j.erase("format"); })) ==
        "time profile JSON: missing field 'format'");
  CHECK(error_of(edited([](nlohmann::json& j) { j["name"] = 3; })) ==
        "time profile JSON: name: expected a string, found 3");
  CHECK(error_of(edited([](nlohmann::json& j) { j["name"] = std::string(40, 'n'); })) ==
        "time profile JSON: name: expected at most 31 bytes and no NUL, found 40 bytes");
  CHECK(error_of(edited([](nlohmann::json& j) { j["devices"] = -2; })) ==
        "time profile JSON: devices: expected an unsigned integer, found -2");
  CHECK(error_of(edited([](nlohmann::json& j) { j["ops"]["alltoall"]["per_byte_s"] = -1; })) ==
        "time profile JSON: ops.alltoall.per_byte_s: expected a finite number >= 0 (seconds), found -1");
  CHECK(error_of(edited([](nlohmann::json& j) { j["pass_per_byte_s"] = -1e-9; })) ==
        "time profile JSON: pass_per_byte_s: expected a finite number >= 0 (seconds), found -1e-09");
  CHECK(error_of(edited([](nlohmann::json& j) { j["overlap"] = 1.5; })) ==
        "time profile JSON: overlap: expected a number from 0 to 1, found 1.5");
  CHECK(error_of(edited([](nlohmann::json& j) { j["overlap"] = "some"; })) ==
        "time profile JSON: overlap: expected a number from 0 to 1, found \"some\"");
  CHECK(error_of(edited([](nlohmann::json& j) { j["nodes"] = 4; })) ==
        "time profile JSON: nodes: expected an object, found 4");
  CHECK(error_of(edited([](nlohmann::json& j) { j["nodes"] = {{"ranks", 0}, {"per_byte_s", 1e-9}}; })) ==
        "time profile JSON: nodes.ranks: expected an integer >= 1 (world ranks per node), found 0");
  CHECK(error_of(edited([](nlohmann::json& j) { j["nodes"] = {{"ranks", 2.5}, {"per_byte_s", 1e-9}}; })) ==
        "time profile JSON: nodes.ranks: expected an integer >= 1 (world ranks per node), found 2.5");
  CHECK(error_of(edited([](nlohmann::json& j) { j["nodes"] = {{"per_byte_s", 1e-9}}; })) ==
        "time profile JSON: nodes: missing field 'ranks'");
  CHECK(error_of(edited([](nlohmann::json& j) { j["nodes"] = {{"ranks", 8}, {"per_byte_s", -1}}; })) ==
        "time profile JSON: nodes.per_byte_s: expected a finite number >= 0 (seconds), found -1");
  CHECK(error_of(edited([](nlohmann::json& j) { j["ops"]["allreduce"]["latency_s"] = "fast"; })) ==
        "time profile JSON: ops.allreduce.latency_s: expected a finite number >= 0 (seconds), found \"fast\"");
  CHECK(error_of(edited([](nlohmann::json& j) { j["ops"]["exchange"].erase("per_peer_s"); })) ==
        "time profile JSON: ops.exchange: missing field 'per_peer_s'");
  CHECK(error_of(edited([](nlohmann::json& j) { j["ops"].erase("dynslice"); })) ==
        "time profile JSON: ops: missing the kind of step 'dynslice'");
  CHECK(error_of(edited([](nlohmann::json& j) { j["ops"]["broadcast"] = j["ops"]["allgather"]; })) ==
        "time profile JSON: ops: unknown kind of step \"broadcast\" (known: allgather, alltoall, dynslice, "
        "allpermute, allreduce, reducescatter, exchange)");
  CHECK(error_of(edited([](nlohmann::json& j) { j["ops"]["allgather"] = 1; })) ==
        "time profile JSON: ops.allgather: expected an object, found 1");
  // Non-finite numbers: JSON has none, and 1e400 does not fit a double.
  const std::string big = edited([](nlohmann::json& j) { j["ops"]["allgather"]["latency_s"] = 12345; });
  std::string text = big;
  text.replace(text.find("12345"), 5, "1e400");
  CHECK(error_of(text).starts_with("time profile JSON: "));
  text = big;
  text.replace(text.find("12345"), 5, "NaN");
  CHECK(error_of(text).starts_with("time profile JSON: parse error"));
  // In memory, a NaN or an infinity is refused too.
  nlohmann::json j = nlohmann::json::parse(redist::profile_json_text(redist::builtin_profile));
  j["ops"]["allgather"]["per_peer_s"] = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(redist::profile_from_json(j),
                    "time profile JSON: ops.allgather.per_peer_s: expected a finite number >= 0 (seconds), found null");
}

TEST_CASE("a profile's \"mpi\" object: the way of exchanging calibrate chose, round trip and errors",
          "[profile_json]") {
  redist::mpi_exchange_choice c;
  c.exchange = redist::mpi_exchange::alltoallw;
  c.geomean_s = {2.5e-4, 1.25e-4, -1};  // packed not measured
  const std::string text = redist::profile_json_text(redist::builtin_profile, c);
  const nlohmann::json j = nlohmann::json::parse(text);
  CHECK(j["mpi"].dump() == R"({"exchange":"alltoallw","geomean_s":{"alltoallw":0.000125,"single-copy":0.00025}})");
  const std::optional<redist::mpi_exchange_choice> back = redist::mpi_exchange_from_profile_json_text(text);
  REQUIRE(back);
  CHECK(back->exchange == redist::mpi_exchange::alltoallw);
  CHECK(back->geomean_s == c.geomean_s);
  CHECK(redist::profile_from_json_text(text) == redist::builtin_profile);
  // A profile without one (host, or written before it): none, and profile_json_text writes none.
  CHECK_FALSE(redist::mpi_exchange_from_profile_json_text(redist::profile_json_text(redist::builtin_profile)));
  CHECK(redist::profile_json_text(redist::builtin_profile).find("\"mpi\"") == std::string::npos);
  for (redist::mpi_exchange m : redist::all_mpi_exchanges) {
    CHECK(redist::mpi_exchange_from_name(redist::mpi_exchange_name(m)) == m);
    // The MPI backend's options for each way (mpi_options::set_exchange) say it back.
    c.exchange = m;
    CHECK(redist::mpi_exchange_from_profile_json_text(redist::profile_json_text(redist::builtin_profile, c))->exchange ==
          m);
  }
  CHECK_FALSE(redist::mpi_exchange_from_name("Packed"));
  // Errors: one line naming the path, from profile_from_json_text too (a profile is read whole).
  auto mpi_error = [](const char* mpi) {
    nlohmann::json x = nlohmann::json::parse(redist::profile_json_text(redist::builtin_profile));
    x["mpi"] = nlohmann::json::parse(mpi);
    return error_of(x.dump());
  };
  CHECK(mpi_error(R"({"exchange": "fast"})") ==
        "time profile JSON: mpi.exchange: expected one of single-copy, alltoallw, packed, found \"fast\"");
  CHECK(mpi_error(R"({"exchange": 1})") ==
        "time profile JSON: mpi.exchange: expected one of single-copy, alltoallw, packed, found 1");
  CHECK(mpi_error(R"({})") == "time profile JSON: mpi: missing field 'exchange'");
  CHECK(mpi_error(R"("packed")") == "time profile JSON: mpi: expected an object, found \"packed\"");
  CHECK(mpi_error(R"({"exchange": "packed", "geomean_s": {"packed": -1}})") ==
        "time profile JSON: mpi.geomean_s.packed: expected a finite number >= 0 (seconds), found -1");
  CHECK(mpi_error(R"({"exchange": "packed", "geomean_s": {"rdma": 1}})") ==
        "time profile JSON: mpi.geomean_s: unknown way of exchanging \"rdma\" (known: single-copy, alltoallw, "
        "packed)");
  CHECK(mpi_error(R"({"exchange": "packed", "geomean_s": [1]})") ==
        "time profile JSON: mpi.geomean_s: expected an object, found [1]");
  CHECK(mpi_error(R"({"exchange": "packed", "note": "other fields are ignored"})") == "(no error)");
}

}  // namespace profile_json_test
