// redist/core/lex.hpp -- the small constexpr scanner shared by the mesh and type parsers.
#pragma once

#include <cstdint>
#include <string_view>

#include "redist/core/config.hpp"
#include "redist/core/error.hpp"

namespace redist::detail {

constexpr bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
constexpr bool is_ident(char c) { return is_ident_start(c) || is_digit(c); }

/// The error for a text longer than the parsers read (max_text_input), else ok: columns
/// are ints, and no real mesh or type comes near the limit.
constexpr error check_text_length(std::string_view s) {
  if (s.size() <= static_cast<std::size_t>(max_text_input)) return {};
  text t("the text has ");
  t.append_uint(s.size()).append(" characters, more than the ").append_uint(max_text_input).append(" the parser reads");
  return error::make(errc::capacity, t.view());
}

/// A cursor over the input that remembers the first error.
struct scanner {
  std::string_view s;
  int pos = 0;
  error err{};

  constexpr bool failed() const { return !err.ok(); }
  constexpr bool at_end() { skip(); return pos >= static_cast<int>(s.size()); }
  constexpr char peek() { skip(); return pos < static_cast<int>(s.size()) ? s[static_cast<std::size_t>(pos)] : '\0'; }
  constexpr void skip() {
    while (pos < static_cast<int>(s.size()) && is_space(s[static_cast<std::size_t>(pos)])) ++pos;
  }
  constexpr void fail(errc c, std::string_view msg, int col) {
    if (err.ok()) err = error::make(c, msg, col);
  }
  constexpr void fail_expected(std::string_view what) {
    skip();
    text t("expected ");
    t.append(what);
    if (pos >= static_cast<int>(s.size())) {
      t.append(" but the text ended");
    } else {
      t.append(" but found '").append(s[static_cast<std::size_t>(pos)]).append("'");
    }
    if (err.ok()) { err.code = errc::syntax; err.column = pos; err.message = t; }
  }
  constexpr bool accept(char c) {
    if (peek() == c) { ++pos; return true; }
    return false;
  }
  constexpr bool expect(char c, std::string_view what) {
    if (accept(c)) return true;
    fail_expected(what);
    return false;
  }
  /// An unsigned decimal integer (no sign, at least one digit); overflow is an error.
  constexpr bool integer(std::uint64_t& out) {
    skip();
    int start = pos;
    if (!is_digit(peek())) { fail_expected("a number"); return false; }
    std::uint64_t v = 0;
    while (pos < static_cast<int>(s.size()) && is_digit(s[static_cast<std::size_t>(pos)])) {
      std::uint64_t d = static_cast<std::uint64_t>(s[static_cast<std::size_t>(pos)] - '0');
      if (v > (UINT64_MAX - d) / 10) {
        fail(errc::overflow, "number does not fit in 64 bits", start);
        return false;
      }
      v = v * 10 + d;
      ++pos;
    }
    out = v;
    return true;
  }
  /// An integer below 2^32 that names a device (`what`: "a device id", "a rank"), at column
  /// `col`; a larger one is an error there.
  constexpr bool device_id(std::uint64_t& out, int& col, std::string_view what = "a device id") {
    skip();
    col = pos;
    if (!integer(out)) return false;
    if (out <= UINT32_MAX) return true;
    text t(what);
    t.append(" must be below 2^32");
    fail(errc::overflow, t.view(), col);
    return false;
  }
  /// An axis name: an identifier, or a name in double or single quotes.
  /// Writes the name's view into `out`.
  constexpr bool name(std::string_view& out) {
    skip();
    int start = pos;
    char c = peek();
    if (c == '"' || c == '\'') {
      ++pos;
      int b = pos;
      while (pos < static_cast<int>(s.size()) && s[static_cast<std::size_t>(pos)] != c) ++pos;
      if (pos >= static_cast<int>(s.size())) {
        fail(errc::syntax, "unterminated quoted axis name", start);
        return false;
      }
      out = s.substr(static_cast<std::size_t>(b), static_cast<std::size_t>(pos - b));
      ++pos;
      if (out.empty()) { fail(errc::syntax, "empty axis name", start); return false; }
    } else if (is_ident_start(c)) {
      int b = pos;
      while (pos < static_cast<int>(s.size()) && is_ident(s[static_cast<std::size_t>(pos)])) ++pos;
      out = s.substr(static_cast<std::size_t>(b), static_cast<std::size_t>(pos - b));
    } else {
      fail_expected("an axis name");
      return false;
    }
    if (static_cast<int>(out.size()) > max_name) {
      fail(errc::capacity, "axis name longer than 31 characters", start);
      return false;
    }
    return true;
  }
};

}  // namespace redist::detail
