// redist/static/fixed_string.hpp -- a string literal usable as a template argument
// (`mesh<"{x: 4}">`), after CTRE's ctll::fixed_string.
#pragma once

#include <cstddef>
#include <string_view>

#include "redist/core/error.hpp"

namespace redist {

template <std::size_t N>
struct fixed_string {
  char data[N]{};  // includes the terminating '\0'

  constexpr fixed_string() = default;
  constexpr fixed_string(const char (&s)[N]) {  // NOLINT(implicit): the literal is the point
    for (std::size_t i = 0; i < N; ++i) data[i] = s[i];
  }
  [[nodiscard]] constexpr std::string_view view() const { return {data, N ? N - 1 : 0}; }
  [[nodiscard]] constexpr std::size_t size() const { return N ? N - 1 : 0; }
};

template <std::size_t N>
fixed_string(const char (&)[N]) -> fixed_string<N>;

/// Copy run-time-built text into a fixed_string (truncated to fit), e.g. to carry an
/// error message into a template argument that the compiler prints.
template <std::size_t N>
constexpr fixed_string<N> to_fixed_string(std::string_view s) {
  fixed_string<N> f;
  for (std::size_t i = 0; i + 1 < N && i < s.size(); ++i) f.data[i] = s[i];
  return f;
}

}  // namespace redist
