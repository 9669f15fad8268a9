// redist/json_read.hpp -- what the JSON readers (program_json.hpp, profile_json.hpp) share:
// parsing untrusted text into nlohmann::json with a bound on nesting, every nlohmann error
// as a redist_error, and bounded excerpts of values for error messages.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "redist/core/error.hpp"

namespace redist::detail {

/// Appends a bounded rendering of `v` (nlohmann's compact dump() for small values): at
/// most `depth` levels of nesting and about 80 characters. Error messages quote input with
/// it, so a hostile document (100,000 levels deep, megabytes long) can neither exhaust the
/// stack nor flood a message, as a plain dump() would. Strings that are not UTF-8 (possible
/// in a document built in memory) print with U+FFFD instead of throwing.
inline void json_excerpt_into(const nlohmann::json& v, int depth, std::string& out) {
  constexpr std::size_t width = 80;
  if (!v.is_structured()) {
    std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (s.size() > width / 2) s = s.substr(0, width / 2 - 3) + "...";
    out += s;
    return;
  }
  const bool object = v.is_object();
  out += object ? '{' : '[';
  if (!v.empty() && depth == 0) out += "...";
  if (depth > 0) {
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += ',';
      first = false;
      if (out.size() > width) {
        out += "...";
        break;
      }
      if (object) {
        json_excerpt_into(nlohmann::json(it.key()), 0, out);
        out += ':';
      }
      json_excerpt_into(it.value(), depth - 1, out);
    }
  }
  out += object ? '}' : ']';
}

inline std::string json_excerpt(const nlohmann::json& v) {
  std::string out;
  json_excerpt_into(v, 3, out);
  return out;
}

/// The path of `key` inside the value at `where` ("" is the document): "steps[2].op".
inline std::string json_join(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

/// Refuse text whose arrays and objects nest deeper than `max_depth` (a scan that skips
/// strings; the parser reports any other malformation). `doc` names the document in the
/// message ("program JSON").
inline void check_json_nesting(std::string_view text, int max_depth, std::string_view doc) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw redist_error(errc::capacity, std::string(doc) + ": arrays and objects nested deeper than " +
                                               std::to_string(max_depth) + " levels (at byte " + std::to_string(i) +
                                               ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

/// Parse untrusted JSON text: nesting deeper than max_depth, malformed JSON and numbers
/// JSON cannot hold (1e400) are redist_errors naming `doc`.
inline nlohmann::json parse_json_text(std::string_view text, int max_depth, std::string_view doc) {
  check_json_nesting(text, max_depth, doc);
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e400
    // what() is "[json.exception.parse_error.101] parse error at line 1, ...": keep the words.
    std::string_view what = e.what();
    if (what.starts_with("[json.exception.")) what.remove_prefix(std::min(what.size(), what.find("] ") + 2));
    throw redist_error(errc::syntax, std::string(doc) + ": " + std::string(what));
  }
}

}  // namespace redist::detail
