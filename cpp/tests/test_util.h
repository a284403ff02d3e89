// Helpers shared by the core's unit tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "evokit/gaussian_sampler.h"
#include "evokit/solver.h"

namespace evokit::testing {

// Every field of a default SolverConfig (proto/evokit.proto) by dotted name,
// as Python's solver_options() and the io component give them, for sampling
// family `type` (test_solver.cc).
OptionSet DefaultOptions(const std::string& type);

// Success iff f() throws an E whose what() contains `needle`.
template <class E, class F>
::testing::AssertionResult ThrowsWithMessage(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const E& e) {
    const std::string what = e.what();
    if (what.find(needle) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "message \"" << what << "\" does not contain \"" << needle << "\"";
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw another exception type: " << e.what();
  } catch (...) {
    return ::testing::AssertionFailure() << "threw a non-std exception";
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// The message of the E that f() throws ("" if it throws nothing or another type).
template <class E, class F>
std::string MessageOf(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (...) {
  }
  return "";
}

// Byte-for-byte equality of two float vectors (NaN-safe, -0 != +0).
inline bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// n floats uniform in [-scale, scale] from a seeded generator.
inline std::vector<float> RandomVector(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The sampler's noise vector for `key`.
inline std::vector<float> Noise(const GaussianSampler& sampler, std::int64_t key) {
  std::vector<float> out(sampler.num_params());
  sampler.noise(key, out.data());
  return out;
}

}  // namespace evokit::testing

#define EXPECT_THROW_WITH(statement, exception_type, needle) \
  EXPECT_TRUE(::evokit::testing::ThrowsWithMessage<exception_type>([&] { statement; }, needle))
