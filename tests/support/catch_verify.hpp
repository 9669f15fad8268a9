// tests/support/catch_verify.hpp -- Catch2 glue for support/verify.hpp.
#pragma once

#include <catch2/catch.hpp>

#include "support/verify.hpp"

/// REQUIRE that a program verifies (support/verify.hpp); on failure the message names the
/// problem, the program's ops, the step and the rank. Evaluates to the verify_result.
#define REDIST_REQUIRE_VERIFIED(prog)                            \
  ([&]() {                                                       \
    const ::redist::program& redist_p_ = (prog);                 \
    const auto redist_v_ = ::redist::testing::verify(redist_p_); \
    INFO("program: " << ::redist::testing::describe(redist_p_)); \
    INFO("verifier: " << redist_v_.message);                     \
    REQUIRE(redist_v_.ok);                                       \
    return redist_v_;                                            \
  }())
