// redist/core/error.hpp -- error values usable in constant evaluation, and the
// exception the run-time API throws.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace redist {

/// What went wrong. Every parse and rule check reports one of these.
enum class errc : std::uint8_t {
  ok = 0,
  syntax,            ///< malformed text
  unknown_axis,      ///< an axis name that the mesh does not declare
  repeated_axis,     ///< an axis used twice (in a mesh or a type)
  not_divisible,     ///< a size that does not divide (DTensor nested chunks that are not ceil tiles)
  tile_mismatch,     ///< a written tile size that is not global / prod(axis sizes)
  overflow,          ///< a product that does not fit in 64 bits
  bad_size,          ///< zero, or otherwise invalid size
  global_mismatch,   ///< two types with different global shapes
  capacity,          ///< more axes / dimensions than the library's fixed capacity
  rule,              ///< a collective whose typing rule does not apply
  no_plan,           ///< the search found no program within the memory budget
  runtime,           ///< execution-time misuse (buffer sizes, communicator sizes...)
};

constexpr std::string_view errc_name(errc e) {
  switch (e) {
    case errc::ok: return "ok";
    case errc::syntax: return "syntax error";
    case errc::unknown_axis: return "unknown axis";
    case errc::repeated_axis: return "repeated axis";
    case errc::not_divisible: return "size does not divide";
    case errc::tile_mismatch: return "tile size mismatch";
    case errc::overflow: return "integer overflow";
    case errc::bad_size: return "bad size";
    case errc::global_mismatch: return "global shapes differ";
    case errc::capacity: return "capacity exceeded";
    case errc::rule: return "ill-typed collective";
    case errc::no_plan: return "no plan";
    case errc::runtime: return "runtime error";
  }
  return "error";
}

/// A fixed-capacity string builder that works in constant evaluation.
/// Text beyond the capacity is dropped (messages stay readable, never overflow).
struct text {
  /// Enough for any type of max_dims dimensions with long axis names.
  static constexpr int capacity = 1000;
  char data[capacity + 1]{};
  int len = 0;

  constexpr text() = default;
  constexpr text(std::string_view s) { append(s); }  // NOLINT(implicit)

  constexpr text& append(std::string_view s) {
    for (char ch : s) {
      if (len < capacity) data[len++] = ch;
    }
    data[len] = '\0';
    return *this;
  }
  constexpr text& append(char ch) { return append(std::string_view(&ch, 1)); }
  constexpr text& append_uint(std::uint64_t v) {
    char buf[24]{};
    int n = 0;
    do {
      buf[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) append(buf[--n]);
    return *this;
  }
  constexpr text& append_int(std::int64_t v) {
    if (v < 0) {
      append('-');
      return append_uint(static_cast<std::uint64_t>(-(v + 1)) + 1);
    }
    return append_uint(static_cast<std::uint64_t>(v));
  }
  [[nodiscard]] constexpr std::string_view view() const { return {data, static_cast<std::size_t>(len)}; }
  [[nodiscard]] std::string str() const { return std::string(view()); }
  constexpr bool operator==(const text& o) const { return view() == o.view(); }
};

/// An error value: a code, the 0-based column in the input text when the error
/// comes from parsing (-1 otherwise), and a message in plain words.
struct error {
  errc code = errc::ok;
  int column = -1;
  text message{};

  [[nodiscard]] constexpr bool ok() const { return code == errc::ok; }
  constexpr explicit operator bool() const { return code != errc::ok; }

  static constexpr error make(errc c, std::string_view msg, int col = -1) {
    error e;
    e.code = c;
    e.column = col;
    e.message.append(msg);
    return e;
  }
};

/// The exception thrown by the run-time API. what() is one line:
/// "<message>" or "<message> (at column N of '<input>')".
class redist_error : public std::runtime_error {
 public:
  redist_error(errc code, const std::string& what, int column = -1)
      : std::runtime_error(what), code_(code), column_(column) {}
  explicit redist_error(const error& e, std::string_view input = {})
      : std::runtime_error(describe(e, input)), code_(e.code), column_(e.column) {}

  [[nodiscard]] errc code() const noexcept { return code_; }
  /// 0-based column in the parsed text, or -1.
  [[nodiscard]] int column() const noexcept { return column_; }

  /// The message, and where in `input` when it has a column. A long input is quoted only
  /// around the column (`...` marks what is left out), so a message stays one short line.
  static std::string describe(const error& e, std::string_view input) {
    std::string s(e.message.view());
    if (e.column >= 0 && !input.empty()) {
      constexpr std::size_t shown = 100;
      std::string quoted(input);
      if (input.size() > shown) {
        const std::size_t col = std::min(static_cast<std::size_t>(e.column), input.size());
        const std::size_t from = col > shown / 2 ? std::min(col - shown / 2, input.size() - shown) : 0;
        quoted = (from > 0 ? "..." : "") + std::string(input.substr(from, shown)) +
                 (from + shown < input.size() ? "..." : "");
      }
      s += " (at column " + std::to_string(e.column + 1) + " of '" + quoted + "')";
    }
    return s;
  }

 private:
  errc code_;
  int column_;
};

/// A value or an error; usable in constant evaluation.
template <class T>
struct result {
  T value{};
  error err{};
  [[nodiscard]] constexpr bool ok() const { return err.ok(); }
  /// The value, or throw redist_error (run time only).
  T get(std::string_view input = {}) const {
    if (!err.ok()) throw redist_error(err, input);
    return value;
  }
};

namespace detail {
/// Overflow-checked multiply; returns false on overflow.
constexpr bool mul_ok(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  if (a != 0 && b > UINT64_MAX / a) return false;
  out = a * b;
  return true;
}
}  // namespace detail

}  // namespace redist
