// GaussianSampler and NoiseTable: validation, bit-exact regeneration, thread
// count invariance, and the ES gradient against a naive double reference.
#include "evokit/gaussian_sampler.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "evokit/errors.h"
#include "evokit/noise.h"
#include "evokit/philox.h"
#include "test_util.h"

namespace evokit {
namespace {

using ::evokit::testing::Noise;
using ::evokit::testing::RandomVector;

using ::evokit::testing::MessageOf;
using ::evokit::testing::SameBits;

// Not a multiple of the 4096-float parameter block (10007 = 2 * 4096 + 1815),
// so there are several blocks and a ragged last one.
constexpr std::size_t kOddParams = 10007;
constexpr int kThreadCounts[] = {1, 2, 3, 8};

GaussianSamplerOptions Options(bool cached, std::size_t num_params, std::uint64_t seed = 1024,
                               std::size_t cache_size = 100000, float sigma = 0.02f) {
  GaussianSamplerOptions o;
  o.seed = seed;
  o.sigma = sigma;
  o.cached = cached;
  o.cache_size = cache_size;
  o.num_params = num_params;
  o.num_threads = 2;
  return o;
}

// ---------------------------------------------------------------------------
// Construction and options

TEST(GaussianSamplerOptions, RejectsBadSigma) {
  GaussianSamplerOptions o = Options(true, 10);
  o.sigma = -0.5f;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { GaussianSampler s(o); }),
            "gaussian_sampling.std must be > 0 and finite, got -0.5");
  o.sigma = 0.0f;
  EXPECT_THROW_WITH(GaussianSampler s(o), std::invalid_argument, "gaussian_sampling.std");
  o.sigma = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW_WITH(GaussianSampler s(o), std::invalid_argument, "got nan");
  o.sigma = std::numeric_limits<float>::infinity();
  EXPECT_THROW_WITH(GaussianSampler s(o), std::invalid_argument, "got inf");
}

TEST(GaussianSamplerOptions, RejectsZeroParams) {
  EXPECT_THROW_WITH(GaussianSampler s(Options(true, 0)), std::invalid_argument,
                    "num_params must be > 0");
  EXPECT_THROW_WITH(GaussianSampler s(Options(false, 0)), std::invalid_argument,
                    "num_params must be > 0");
}

TEST(GaussianSamplerOptions, RejectsBadThreadCount) {
  GaussianSamplerOptions o = Options(true, 10);
  o.num_threads = 0;
  EXPECT_THROW_WITH(GaussianSampler s(o), std::invalid_argument, "num_threads must be >= 1, got 0");
  o.num_threads = -3;
  EXPECT_THROW_WITH(GaussianSampler s(o), std::invalid_argument, "got -3");
  EXPECT_THROW_WITH(NoiseTable t(1, 100, 0), std::invalid_argument, "num_threads");
}

TEST(GaussianSamplerOptions, RejectsATableSmallerThanTheParameters) {
  EXPECT_EQ(MessageOf<std::invalid_argument>(
                [&] { GaussianSampler s(Options(true, 4162, 1024, 100)); }),
            "gaussian_sampling.cache_size (100) must be >= the number of parameters (4162); "
            "raise cache_size");
  // Uncached samplers ignore cache_size.
  EXPECT_NO_THROW(GaussianSampler s(Options(false, 4162, 1024, 100)));
  // A table exactly num_params long has one valid key.
  GaussianSampler exact(Options(true, 4162, 1024, 4162));
  EXPECT_EQ(exact.max_key(), 0);
}

TEST(GaussianSampler, ExposesItsOptions) {
  GaussianSampler cached(Options(true, 4162, 77, 100000, 0.5f));
  EXPECT_EQ(cached.num_params(), 4162u);
  EXPECT_EQ(cached.sigma(), 0.5f);
  EXPECT_TRUE(cached.cached());
  EXPECT_EQ(cached.options().seed, 77u);
  EXPECT_EQ(cached.max_key(), 100000 - 4162);
  ASSERT_NE(cached.table(), nullptr);
  EXPECT_EQ(cached.table()->size(), 100000u);
  EXPECT_EQ(cached.table()->seed(), 77u);

  GaussianSampler uncached(Options(false, 4162));
  EXPECT_FALSE(uncached.cached());
  EXPECT_EQ(uncached.max_key(), kMaxStreamKey);
  EXPECT_EQ(uncached.table(), nullptr);
}

// ---------------------------------------------------------------------------
// Keys

TEST(CheckKey, CachedRange) {
  GaussianSampler s(Options(true, 4162));
  EXPECT_NO_THROW(s.check_key(0));
  EXPECT_NO_THROW(s.check_key(100000 - 4162));
  EXPECT_EQ(MessageOf<std::out_of_range>([&] { s.check_key(99990); }),
            "key 99990 is outside the noise table: key + num_params (4162) must be <= "
            "cache_size (100000)");
  EXPECT_THROW_WITH(s.check_key(100000 - 4162 + 1), std::out_of_range, "key 95839 ");
  EXPECT_THROW_WITH(s.check_key(-1), std::out_of_range, "key -1 is outside the noise table");
  EXPECT_THROW_WITH(s.check_key(std::numeric_limits<std::int64_t>::min()), std::out_of_range,
                    "cache_size (100000)");
}

TEST(CheckKey, UncachedRange) {
  GaussianSampler s(Options(false, 4162));
  EXPECT_NO_THROW(s.check_key(0));
  EXPECT_NO_THROW(s.check_key(kMaxStreamKey));
  const std::string negative = MessageOf<std::out_of_range>([&] { s.check_key(-1); });
  EXPECT_NE(negative.find("key -1 "), std::string::npos) << negative;
  EXPECT_NE(negative.find("4162"), std::string::npos) << negative;
  EXPECT_NE(negative.find("cache_size"), std::string::npos) << negative;
  EXPECT_THROW_WITH(s.check_key(kMaxStreamKey + 1), std::out_of_range,
                    "key 4611686018427387904 ");
}

TEST(CheckKey, EveryEntryPointChecksTheKey) {
  GaussianSampler s(Options(true, 100, 1, 1000));
  std::vector<float> theta(100, 1.0f), out(100, 5.0f);
  EXPECT_THROW(s.noise(901, out.data()), std::out_of_range);
  EXPECT_THROW(s.perturb(theta.data(), 901, 1.0f, out.data(), 1), std::out_of_range);
  EXPECT_THROW(s.perturb(theta.data(), -1, 1.0f, out.data(), 1), std::out_of_range);
  EXPECT_EQ(out, std::vector<float>(100, 5.0f));
}

TEST(DrawKey, UncachedIsTheTopBitsOfHashDraw) {
  // Multiply-shift onto [0, 2^62): the top 62 bits of the hash.
  GaussianSampler s(Options(false, 10, 1234));
  for (std::uint64_t it = 0; it < 5; ++it) {
    for (std::uint64_t pair = 0; pair < 5; ++pair) {
      const std::int64_t key = s.draw_key(it, pair, 3);
      EXPECT_EQ(static_cast<std::uint64_t>(key), hash_draw(1234, it, pair, 3) >> 2);
      EXPECT_GE(key, 0);
      EXPECT_LE(key, kMaxStreamKey);
    }
  }
}

TEST(DrawKey, CachedIsAMultiplyShiftOfHashDraw) {
  GaussianSampler s(Options(true, 4162, 99, 100000));
  const std::uint64_t range = static_cast<std::uint64_t>(s.max_key()) + 1;
  for (std::uint64_t pair = 0; pair < 50; ++pair) {
    __extension__ using u128 = unsigned __int128;
    const u128 product = static_cast<u128>(hash_draw(99, 4, pair, 0)) * range;
    EXPECT_EQ(static_cast<std::uint64_t>(s.draw_key(4, pair, 0)),
              static_cast<std::uint64_t>(product >> 64));
  }
}

// A table 10 floats longer than the parameters has 11 keys; 22000 draws hit
// each about 2000 times (standard deviation 43; tolerance 250).
TEST(DrawKey, CoversTheKeyRangeUniformly) {
  GaussianSampler s(Options(true, 100, 5, 110));
  ASSERT_EQ(s.max_key(), 10);
  std::vector<int> counts(11, 0);
  for (std::uint64_t it = 0; it < 22; ++it) {
    for (std::uint64_t pair = 0; pair < 1000; ++pair) {
      const std::int64_t key = s.draw_key(it, pair, 0);
      ASSERT_GE(key, 0);
      ASSERT_LE(key, 10);
      ++counts[static_cast<std::size_t>(key)];
    }
  }
  for (int c : counts) EXPECT_NEAR(c, 2000, 250);
}

TEST(DrawKey, IsAPureFunctionOfSeedAndArguments) {
  GaussianSampler a(Options(false, 10, 1024));
  GaussianSampler b(Options(false, 10, 1024));
  GaussianSampler other_seed(Options(false, 10, 1025));
  int same_seed_differs = 0, stream_differs = 0;
  for (std::uint64_t pair = 0; pair < 100; ++pair) {
    EXPECT_EQ(a.draw_key(3, pair, 1), b.draw_key(3, pair, 1));
    EXPECT_EQ(a.draw_key(3, pair, 1), a.draw_key(3, pair, 1, 0));  // default stream is 0
    same_seed_differs += a.draw_key(3, pair, 1) != other_seed.draw_key(3, pair, 1);
    stream_differs += a.draw_key(3, pair, 1, 1) != a.draw_key(3, pair, 1, 0);
    EXPECT_NE(a.draw_key(3, pair, 1), a.draw_key(3, pair, 2));
    EXPECT_NE(a.draw_key(3, pair, 1), a.draw_key(4, pair, 1));
  }
  EXPECT_EQ(same_seed_differs, 100);
  EXPECT_EQ(stream_differs, 100);
}

// ---------------------------------------------------------------------------
// Noise: bit-exact regeneration

TEST(NoiseTable, EntriesAreGaussianAtOfTheTableStream) {
  NoiseTable table(1024, 100003, 2);
  ASSERT_EQ(table.size(), 100003u);
  for (std::size_t i = 0; i < table.size(); ++i) {
    const float want = gaussian_at(1024, kTableStream, i);
    ASSERT_EQ(std::memcmp(&table.data()[i], &want, sizeof(float)), 0) << "entry " << i;
  }
}

TEST(NoiseTable, SameBitsForAnyThreadCount) {
  // 100003 is not a multiple of the build chunk or of 4.
  const NoiseTable reference(7, 100003, 1);
  const std::vector<float> want(reference.data(), reference.data() + reference.size());
  for (int threads : kThreadCounts) {
    const NoiseTable table(7, 100003, threads);
    const std::vector<float> got(table.data(), table.data() + table.size());
    EXPECT_TRUE(SameBits(got, want)) << threads << " threads";
  }
}

TEST(Noise, CachedIsAWindowOfTheTable) {
  GaussianSampler s(Options(true, 4162));
  for (std::int64_t key : {std::int64_t{0}, std::int64_t{12345}, s.max_key()}) {
    const std::vector<float> eps = Noise(s, key);
    const std::vector<float> window(s.table()->data() + key, s.table()->data() + key + 4162);
    EXPECT_TRUE(SameBits(eps, window)) << "key " << key;
    for (std::size_t j = 0; j < eps.size(); j += 97) {
      EXPECT_EQ(eps[j], gaussian_at(1024, kTableStream, static_cast<std::uint64_t>(key) + j));
    }
  }
}

TEST(Noise, UncachedIsTheKeysStream) {
  GaussianSampler s(Options(false, 4162));
  const std::int64_t keys[] = {0, 1, 987654321, kMaxStreamKey};
  for (std::int64_t key : keys) {
    const std::vector<float> eps = Noise(s, key);
    std::vector<float> want(4162);
    fill_gaussian(1024, static_cast<std::uint64_t>(key), 0, want.data(), want.size());
    EXPECT_TRUE(SameBits(eps, want)) << "key " << key;
    EXPECT_EQ(eps[4161], gaussian_at(1024, static_cast<std::uint64_t>(key), 4161));
  }
}

TEST(Noise, RegeneratesTheSameBits) {
  for (bool cached : {true, false}) {
    GaussianSampler s(Options(cached, kOddParams));
    GaussianSampler fresh(Options(cached, kOddParams));
    for (std::int64_t key : {std::int64_t{0}, std::int64_t{4242}, std::int64_t{77777}}) {
      const std::vector<float> first = Noise(s, key);
      EXPECT_TRUE(SameBits(first, Noise(s, key))) << "cached " << cached;
      EXPECT_TRUE(SameBits(first, Noise(fresh, key))) << "cached " << cached;
    }
    GaussianSampler other_seed(Options(cached, kOddParams, 1025));
    EXPECT_FALSE(SameBits(Noise(s, 5), Noise(other_seed, 5)));
    EXPECT_FALSE(SameBits(Noise(s, 5), Noise(s, 6)));
  }
}

// ---------------------------------------------------------------------------
// perturb

TEST(Perturb, IsThetaPlusSignSigmaEps) {
  for (bool cached : {true, false}) {
    GaussianSampler s(Options(cached, kOddParams, 1024, 100000, 0.05f));
    const std::vector<float> theta = RandomVector(kOddParams, 1);
    const std::vector<float> eps = Noise(s, 321);
    for (float sign : {1.0f, -1.0f}) {
      std::vector<float> out(kOddParams);
      s.perturb(theta.data(), 321, sign, out.data(), 2);
      for (std::size_t j = 0; j < kOddParams; ++j) {
        ASSERT_FLOAT_EQ(out[j], theta[j] + sign * 0.05f * eps[j])
            << "cached " << cached << " sign " << sign << " j " << j;
      }
    }
  }
}

TEST(Perturb, InPlaceEqualsOutOfPlace) {
  for (bool cached : {true, false}) {
    GaussianSampler s(Options(cached, kOddParams));
    std::vector<float> theta = RandomVector(kOddParams, 2);
    std::vector<float> out(kOddParams);
    s.perturb(theta.data(), 99, -1.0f, out.data(), 3);
    s.perturb(theta.data(), 99, -1.0f, theta.data(), 3);
    EXPECT_TRUE(SameBits(theta, out)) << "cached " << cached;
  }
}

TEST(Perturb, SameBitsForAnyThreadCount) {
  for (bool cached : {true, false}) {
    GaussianSampler s(Options(cached, kOddParams));
    const std::vector<float> theta = RandomVector(kOddParams, 3);
    std::vector<float> want(kOddParams);
    s.perturb(theta.data(), 4321, 1.0f, want.data(), 1);
    for (int threads : kThreadCounts) {
      std::vector<float> got(kOddParams);
      s.perturb(theta.data(), 4321, 1.0f, got.data(), threads);
      EXPECT_TRUE(SameBits(got, want)) << "cached " << cached << ", " << threads << " threads";
    }
  }
}

TEST(Perturb, RejectsBadArgumentsWithoutWriting) {
  GaussianSampler s(Options(true, 100, 1, 1000));
  const std::vector<float> theta(100, 1.0f);
  std::vector<float> out(100, 5.0f);
  for (float bad : {0.0f, 0.5f, 2.0f, -2.0f, std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity()}) {
    EXPECT_THROW_WITH(s.perturb(theta.data(), 0, bad, out.data(), 1), std::invalid_argument,
                      "sign must be +1 or -1");
  }
  EXPECT_EQ(MessageOf<std::invalid_argument>(
                [&] { s.perturb(theta.data(), 0, 0.5f, out.data(), 1); }),
            "sign must be +1 or -1, got 0.5");
  EXPECT_THROW_WITH(s.perturb(theta.data(), 0, 1.0f, out.data(), 0), std::invalid_argument,
                    "num_threads must be >= 1");
  EXPECT_THROW_WITH(s.perturb(nullptr, 0, 1.0f, out.data(), 1), std::invalid_argument, "theta");
  EXPECT_THROW_WITH(s.perturb(theta.data(), 0, 1.0f, nullptr, 1), std::invalid_argument, "out");
  EXPECT_EQ(out, std::vector<float>(100, 5.0f));
}

// ---------------------------------------------------------------------------
// descent_direction

struct Batch {
  std::vector<std::int64_t> keys;
  std::vector<float> signs;
  std::vector<float> weights;
};

// Antithetic pairs: sample 2k and 2k + 1 share a key with signs +1 / -1.
Batch AntitheticBatch(const GaussianSampler& s, std::size_t pairs, std::uint32_t seed) {
  Batch b;
  const std::vector<float> w = RandomVector(2 * pairs, seed, 0.5f);
  for (std::size_t k = 0; k < pairs; ++k) {
    const std::int64_t key = s.draw_key(7, k, 0);
    for (float sign : {1.0f, -1.0f}) {
      b.keys.push_back(key);
      b.signs.push_back(sign);
    }
  }
  b.weights = w;
  return b;
}

std::vector<float> Descent(const GaussianSampler& s, const Batch& b, const float* theta,
                           float weight_decay, int threads) {
  std::vector<float> out(s.num_params());
  s.descent_direction(b.keys.data(), b.signs.data(), b.weights.data(), b.keys.size(), theta,
                      weight_decay, out.data(), threads);
  return out;
}

// The naive reference, in double, from noise():
//   out[j] = -1 / (n sigma) sum_i w_i s_i eps_i[j] + weight_decay theta[j].
// Also returns, per j, the sum of the magnitudes of the terms, which bounds
// the rounding error of a float evaluation.
void Reference(const GaussianSampler& s, const Batch& b, const float* theta, float weight_decay,
               std::vector<double>& value, std::vector<double>& magnitude) {
  const std::size_t p = s.num_params();
  const double scale = 1.0 / (static_cast<double>(b.keys.size()) * s.sigma());
  value.assign(p, 0.0);
  magnitude.assign(p, 0.0);
  for (std::size_t i = 0; i < b.keys.size(); ++i) {
    const std::vector<float> eps = Noise(s, b.keys[i]);
    for (std::size_t j = 0; j < p; ++j) {
      const double term = static_cast<double>(b.weights[i]) * b.signs[i] * eps[j];
      value[j] -= scale * term;
      magnitude[j] += scale * std::fabs(term);
    }
  }
  if (weight_decay != 0.0f) {
    for (std::size_t j = 0; j < p; ++j) {
      value[j] += static_cast<double>(weight_decay) * theta[j];
      magnitude[j] += std::fabs(static_cast<double>(weight_decay) * theta[j]);
    }
  }
}

void ExpectMatchesReference(const GaussianSampler& s, const Batch& b, const float* theta,
                            float weight_decay) {
  std::vector<double> want, magnitude;
  Reference(s, b, theta, weight_decay, want, magnitude);
  const std::vector<float> got = Descent(s, b, theta, weight_decay, 2);
  double err2 = 0.0, ref2 = 0.0;
  for (std::size_t j = 0; j < got.size(); ++j) {
    ASSERT_LE(std::fabs(got[j] - want[j]), 1e-5 * magnitude[j] + 1e-30)
        << "j " << j << ": " << got[j] << " vs " << want[j];
    err2 += (got[j] - want[j]) * (got[j] - want[j]);
    ref2 += want[j] * want[j];
  }
  EXPECT_LT(std::sqrt(err2 / ref2), 1e-5);
}

TEST(DescentDirection, MatchesANaiveDoubleReference) {
  for (bool cached : {true, false}) {
    SCOPED_TRACE(cached ? "cached" : "uncached");
    GaussianSampler s(Options(cached, kOddParams, 31, 100000, 0.1f));
    ExpectMatchesReference(s, AntitheticBatch(s, 6, 1), nullptr, 0.0f);
  }
}

TEST(DescentDirection, MatchesTheReferenceWithWeightDecay) {
  for (bool cached : {true, false}) {
    SCOPED_TRACE(cached ? "cached" : "uncached");
    GaussianSampler s(Options(cached, kOddParams, 32, 100000, 0.02f));
    const std::vector<float> theta = RandomVector(kOddParams, 9, 3.0f);
    ExpectMatchesReference(s, AntitheticBatch(s, 5, 2), theta.data(), 0.01f);
  }
}

TEST(DescentDirection, MatchesTheReferenceWithoutAntitheticPairs) {
  GaussianSampler s(Options(true, kOddParams, 33));
  Batch b;
  for (std::uint64_t i = 0; i < 9; ++i) {
    b.keys.push_back(s.draw_key(1, i, 0));
    b.signs.push_back(i % 3 == 0 ? -1.0f : 1.0f);
  }
  b.weights = {-0.5f, -0.375f, -0.25f, -0.125f, 0.0f, 0.125f, 0.25f, 0.375f, 0.5f};
  ExpectMatchesReference(s, b, nullptr, 0.0f);
}

TEST(DescentDirection, AntitheticPairWithEqualWeightsCancelsExactly) {
  for (bool cached : {true, false}) {
    GaussianSampler s(Options(cached, kOddParams));
    const Batch b{{123, 123}, {1.0f, -1.0f}, {0.3f, 0.3f}};
    for (float x : Descent(s, b, nullptr, 0.0f, 2)) ASSERT_EQ(x, 0.0f);
  }
}

// One antithetic pair (+eps, w_plus), (-eps, w_minus):
//   out = -(w_plus - w_minus) / (2 sigma) * eps.
TEST(DescentDirection, AntitheticPairIsAFiniteDifference) {
  for (bool cached : {true, false}) {
    GaussianSampler s(Options(cached, kOddParams, 8, 100000, 0.25f));
    const Batch b{{777, 777}, {1.0f, -1.0f}, {0.5f, -0.5f}};
    const std::vector<float> eps = Noise(s, 777);
    const std::vector<float> got = Descent(s, b, nullptr, 0.0f, 3);
    for (std::size_t j = 0; j < eps.size(); ++j) {
      ASSERT_NEAR(got[j], -1.0 / (2 * 0.25) * eps[j], 1e-6 * std::fabs(eps[j]) + 1e-30);
    }
  }
}

TEST(DescentDirection, IgnoresThetaWithoutWeightDecay) {
  GaussianSampler s(Options(true, kOddParams));
  const Batch b = AntitheticBatch(s, 2, 3);
  const std::vector<float> theta(kOddParams, std::numeric_limits<float>::infinity());
  EXPECT_TRUE(SameBits(Descent(s, b, theta.data(), 0.0f, 2), Descent(s, b, nullptr, 0.0f, 2)));
}

TEST(DescentDirection, SameBitsForAnyThreadCount) {
  for (bool cached : {true, false}) {
    GaussianSampler s(Options(cached, kOddParams));
    const Batch b = AntitheticBatch(s, 4, 5);
    const std::vector<float> theta = RandomVector(kOddParams, 6);
    for (float decay : {0.0f, 0.005f}) {
      const std::vector<float> want = Descent(s, b, theta.data(), decay, 1);
      for (int threads : kThreadCounts) {
        EXPECT_TRUE(SameBits(Descent(s, b, theta.data(), decay, threads), want))
            << "cached " << cached << ", decay " << decay << ", " << threads << " threads";
      }
    }
  }
}

TEST(DescentDirection, ValidatesEverythingBeforeWriting) {
  GaussianSampler s(Options(true, 100, 1, 1000));
  const std::vector<float> theta(100, 1.0f);
  std::vector<float> out(100, 5.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto call = [&](std::vector<std::int64_t> keys, std::vector<float> signs,
                  std::vector<float> weights, const float* th = nullptr, float decay = 0.0f,
                  int threads = 2) {
    s.descent_direction(keys.data(), signs.data(), weights.data(), keys.size(), th, decay,
                        out.data(), threads);
  };
  EXPECT_EQ(MessageOf<std::invalid_argument>(
                [&] { call({1, 2, 3}, {1.0f, -1.0f, 0.0f}, {0.1f, 0.2f, 0.3f}); }),
            "sign of sample 2 must be +1 or -1, got 0");
  EXPECT_THROW_WITH(call({1, 2}, {1.0f, nan}, {0.1f, 0.2f}), std::invalid_argument,
                    "sign of sample 1 must be +1 or -1, got nan");
  EXPECT_THROW_WITH(call({1, 901, 3}, {1.0f, 1.0f, 1.0f}, {0.1f, 0.2f, 0.3f}), std::out_of_range,
                    "sample 1: key 901 is outside the noise table");
  EXPECT_THROW_WITH(call({1, 2, -4}, {1.0f, 1.0f, 1.0f}, {0.1f, 0.2f, 0.3f}), std::out_of_range,
                    "sample 2: key -4");
  EXPECT_EQ(MessageOf<std::invalid_argument>(
                [&] { call({1, 2, 3, 4}, {1.0f, 1.0f, 1.0f, 1.0f}, {0.1f, 0.2f, 0.3f, nan}); }),
            "weight of sample 3 is nan");
  EXPECT_THROW_WITH(call({1}, {1.0f}, {inf}), std::invalid_argument, "weight of sample 0 is inf");
  EXPECT_THROW_WITH(call({1}, {1.0f}, {-inf}), std::invalid_argument,
                    "weight of sample 0 is -inf");
  EXPECT_THROW_WITH(call({}, {}, {}), std::invalid_argument, "at least one sample");
  EXPECT_THROW_WITH(call({1}, {1.0f}, {0.1f}, nullptr, 0.1f), std::invalid_argument,
                    "theta is required when weight_decay != 0");
  EXPECT_THROW_WITH(call({1}, {1.0f}, {0.1f}, theta.data(), nan), std::invalid_argument,
                    "weight_decay must be finite");
  EXPECT_THROW_WITH(call({1}, {1.0f}, {0.1f}, nullptr, 0.0f, 0), std::invalid_argument,
                    "num_threads must be >= 1");
  EXPECT_EQ(out, std::vector<float>(100, 5.0f));
  // Uncached: keys outside [0, kMaxStreamKey] are rejected the same way.
  GaussianSampler u(Options(false, 100));
  const std::int64_t bad = kMaxStreamKey + 1;
  const float sign = 1.0f, weight = 0.5f;
  EXPECT_THROW_WITH(u.descent_direction(&bad, &sign, &weight, 1, nullptr, 0.0f, out.data(), 1),
                    std::out_of_range, "sample 0: key 4611686018427387904");
  EXPECT_EQ(out, std::vector<float>(100, 5.0f));
}

// ---------------------------------------------------------------------------
// Exceptions inside OpenMP regions

TEST(ExceptionCollector, RethrowsAnExceptionFromAParallelRegion) {
  detail::ExceptionCollector errors;
  std::atomic<int> completed{0};
#pragma omp parallel for num_threads(4) schedule(static)
  for (int i = 0; i < 1000; ++i) {
    errors.run([&] {
      if (i == 537) throw std::runtime_error("iteration 537 failed");
      ++completed;
    });
  }
  EXPECT_EQ(completed.load(), 999);
  EXPECT_THROW_WITH(errors.rethrow_if_any(), std::runtime_error, "iteration 537 failed");
}

TEST(ExceptionCollector, KeepsOneOfSeveralExceptionsAndItsType) {
  detail::ExceptionCollector errors;
#pragma omp parallel for num_threads(4) schedule(static)
  for (int i = 0; i < 64; ++i) {
    errors.run([&] { throw std::out_of_range("index " + std::to_string(i)); });
  }
  EXPECT_THROW_WITH(errors.rethrow_if_any(), std::out_of_range, "index ");
}

TEST(ExceptionCollector, DoesNothingWithoutAnException) {
  detail::ExceptionCollector errors;
  int sum = 0;
#pragma omp parallel for num_threads(4) reduction(+ : sum)
  for (int i = 0; i < 100; ++i) {
    errors.run([&] { sum += i; });
  }
  EXPECT_NO_THROW(errors.rethrow_if_any());
  EXPECT_EQ(sum, 4950);
}

}  // namespace
}  // namespace evokit
