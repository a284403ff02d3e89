// Philox4x32-10 known answers, the documented normal construction, and the
// statistics of the normals.
#include "evokit/philox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "evokit/gaussian_sampler.h"
#include "../src/philox_lanes.h"
#include "test_util.h"

namespace evokit {
namespace {

using ::evokit::testing::SameBits;

// Known-answer vectors for philox4x32 with 10 rounds from Random123's
// tests/kat_vectors (D. E. Shaw Research; the same lines are cut and pasted
// into Random123-Boost's libs/random/test/test_philox.cpp):
//
// philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000   6627e8d5 e169c58d bc57ac4c 9b00dbd8
// philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff   408f276d 41c83b0e a20bc7c6 6d5451fd
// philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0   d16cfe09 94fdcceb 5001e420 24126ea1
//
// Columns: counter (4 words), key (2 words), expected output (4 words).
struct KnownAnswer {
  PhiloxCounter counter;
  PhiloxKey key;
  PhiloxCounter expected;
};

TEST(Philox, KnownAnswerZeros) {
  const KnownAnswer kat{{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u},
                        {0x00000000u, 0x00000000u},
                        {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}};
  EXPECT_EQ(philox4x32(kat.counter, kat.key), kat.expected);
}

TEST(Philox, KnownAnswerAllOnes) {
  const KnownAnswer kat{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                        {0xffffffffu, 0xffffffffu},
                        {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}};
  EXPECT_EQ(philox4x32(kat.counter, kat.key), kat.expected);
}

TEST(Philox, KnownAnswerPiDigits) {
  const KnownAnswer kat{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                        {0xa4093822u, 0x299f31d0u},
                        {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
  EXPECT_EQ(philox4x32(kat.counter, kat.key), kat.expected);
}

TEST(Philox, EveryInputWordMatters) {
  const PhiloxCounter ctr = {1, 2, 3, 4};
  const PhiloxKey key = {5, 6};
  const PhiloxCounter base = philox4x32(ctr, key);
  for (int w = 0; w < 4; ++w) {
    PhiloxCounter c = ctr;
    c[w] ^= 1u;
    EXPECT_NE(philox4x32(c, key), base) << "counter word " << w;
  }
  for (int w = 0; w < 2; ++w) {
    PhiloxKey k = key;
    k[w] ^= 1u;
    EXPECT_NE(philox4x32(ctr, k), base) << "key word " << w;
  }
}

// gaussian_at re-derived from philox.h's comment, on top of philox4x32 (which
// the known answers pin down).
float ReferenceGaussian(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t block = index / 4;
  const PhiloxCounter ctr = {static_cast<std::uint32_t>(block),
                             static_cast<std::uint32_t>(block >> 32),
                             static_cast<std::uint32_t>(stream),
                             static_cast<std::uint32_t>(stream >> 32)};
  const PhiloxKey key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  const PhiloxCounter w = philox4x32(ctr, key);
  const std::size_t pair = (index % 4) / 2;
  const std::uint32_t w0 = w[2 * pair], w1 = w[2 * pair + 1];
  // Radius, as philox.h specifies it, in float (frexp instead of bit fields).
  int exponent = 0;
  const float k = static_cast<float>((w0 >> 8) + 1u);
  float m = 2.0f * std::frexp(k, &exponent);  // k = m 2^(exponent - 1), m in [1, 2)
  int e = exponent - 1;
  if (m > 1.41421356f) {
    m = m / 2.0f;
    e = e + 1;
  }
  const float s = (m - 1.0f) / ((m - 1.0f) + 2.0f);
  const float s2 = s * s;
  float series = 1.0f / 9.0f;
  for (float c : {1.0f / 7.0f, 1.0f / 5.0f, 1.0f / 3.0f}) series = c + s2 * series;
  const float half_log = s + s * (s2 * series);
  const float log_u1 = static_cast<float>(e - 24) * 0.693147181f + (half_log + half_log);
  const float radius = std::sqrt(-2.0f * log_u1);
  // Angle: quadrant and Taylor polynomials in x = f pi/2.
  const float x =
      static_cast<float>((w1 >> 6) & 0xFFFFFFu) * (1.0f / 16777216.0f) * 1.57079633f;
  const float x2 = x * x;
  float sin_p = -1.0f / 39916800.0f;
  for (float c : {1.0f / 362880.0f, -1.0f / 5040.0f, 1.0f / 120.0f, -1.0f / 6.0f}) {
    sin_p = c + x2 * sin_p;
  }
  const float sin_x = x + x * (x2 * sin_p);
  float cos_p = 1.0f / 479001600.0f;
  for (float c : {-1.0f / 3628800.0f, 1.0f / 40320.0f, -1.0f / 720.0f, 1.0f / 24.0f, -0.5f}) {
    cos_p = c + x2 * cos_p;
  }
  const float cos_x = 1.0f + x2 * cos_p;
  float cos_t = 0.0f, sin_t = 0.0f;
  switch (w1 >> 30) {
    case 0: cos_t = cos_x; sin_t = sin_x; break;
    case 1: cos_t = -sin_x; sin_t = cos_x; break;
    case 2: cos_t = -cos_x; sin_t = -sin_x; break;
    default: cos_t = sin_x; sin_t = -cos_x; break;
  }
  return (index % 2 == 0) ? radius * cos_t : radius * sin_t;
}

// The textbook Box-Muller transform (double) of the same 24-bit uniforms.
double ExactGaussian(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t block = index / 4;
  const PhiloxCounter ctr = {static_cast<std::uint32_t>(block),
                             static_cast<std::uint32_t>(block >> 32),
                             static_cast<std::uint32_t>(stream),
                             static_cast<std::uint32_t>(stream >> 32)};
  const PhiloxKey key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  const PhiloxCounter w = philox4x32(ctr, key);
  const std::size_t pair = (index % 4) / 2;
  const double u1 = static_cast<double>((w[2 * pair] >> 8) + 1u) / 16777216.0;
  const double angle = 2.0 * std::acos(-1.0) * static_cast<double>(w[2 * pair + 1] >> 6) /
                       67108864.0;
  const double radius = std::sqrt(-2.0 * std::log(u1));
  return (index % 2 == 0) ? radius * std::cos(angle) : radius * std::sin(angle);
}

bool SameFloatBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(GaussianAt, MatchesTheDocumentedConstruction) {
  const std::uint64_t seeds[] = {0, 1024, 0x0123456789ABCDEFull, 0xFFFFFFFFFFFFFFFFull};
  const std::uint64_t streams[] = {0, 1, 0x0000010000000007ull, kTableStream};
  const std::uint64_t indices[] = {0,
                                   1,
                                   2,
                                   3,
                                   4,
                                   5,
                                   6,
                                   7,
                                   1001,
                                   (std::uint64_t{1} << 33) + 1,
                                   (std::uint64_t{1} << 34) + 2,
                                   (std::uint64_t{1} << 63) + 3,
                                   0xFFFFFFFFFFFFFFFFull};
  for (std::uint64_t seed : seeds) {
    for (std::uint64_t stream : streams) {
      for (std::uint64_t index : indices) {
        const float got = gaussian_at(seed, stream, index);
        const float want = ReferenceGaussian(seed, stream, index);
        EXPECT_TRUE(SameFloatBits(got, want))
            << "seed " << seed << " stream " << stream << " index " << index << ": " << got
            << " vs " << want;
      }
    }
  }
}

TEST(GaussianAt, IsWithinAMillionthOfTheExactTransform) {
  std::vector<float> out(100003);
  fill_gaussian(11, 17, 5, out.data(), out.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(out[i]) - ExactGaussian(11, 17, 5 + i)));
  }
  EXPECT_LT(worst, 1e-6);
  EXPECT_GT(worst, 0.0);  // it is an approximation: this test would notice a switch back
}

TEST(GaussianAt, IsAPureFunction) {
  for (std::uint64_t i = 0; i < 64; ++i) {
    EXPECT_TRUE(SameFloatBits(gaussian_at(7, 3, i), gaussian_at(7, 3, i)));
  }
}

TEST(FillGaussian, EqualsGaussianAtElementwise) {
  // (1 << 34) - 161: the low counter word wraps 40 blocks into a batch of the
  // vectorised generator (64 blocks), so the carry into the high word is tested.
  const std::uint64_t starts[] = {0,    1,           2,
                                  3,    5,           4096,
                                  0xFFFFFFFEull, (std::uint64_t{1} << 34) - 3,
                                  (std::uint64_t{1} << 34) - 161};
  const std::size_t lengths[] = {1, 2, 3, 4, 5, 7, 8, 17, 255, 256, 257, 1000, 5003};
  for (std::uint64_t start : starts) {
    for (std::size_t n : lengths) {
      std::vector<float> out(n + 2, 123.0f);
      fill_gaussian(99, 5, start, out.data() + 1, n);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(SameFloatBits(out[i + 1], gaussian_at(99, 5, start + i)))
            << "start " << start << " n " << n << " i " << i;
      }
      // Nothing outside [out, out + n) is written.
      EXPECT_EQ(out.front(), 123.0f);
      EXPECT_EQ(out.back(), 123.0f);
    }
  }
}

// Every Philox implementation this CPU runs (AVX-512, AVX2, portable) gives
// the bits of philox4x32 on each counter, including the carry of the low
// counter word into the high one inside a batch.
TEST(PhiloxLanes, EveryImplementationMatchesTheScalarPhilox) {
  const auto impls = detail::philox_lanes_implementations();
  ASSERT_FALSE(impls.empty());
  EXPECT_EQ(impls.back().first, "portable");
  const std::uint64_t bases[] = {0, 12345, 0xFFFFFFFFull - 20, (std::uint64_t{7} << 32) - 1,
                                 0xFFFFFFFFFFFFFFC0ull};
  for (const auto& [name, fn] : impls) {
    for (std::uint64_t base : bases) {
      detail::PhiloxLanes got;
      fn(base, 0x01234567u, 0x89ABCDEFu, 0xDEADBEEFu, 0x0BADF00Du, got);
      for (std::size_t l = 0; l < detail::kLanes; ++l) {
        const std::uint64_t b = base + l;
        const PhiloxCounter want =
            philox4x32({static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(b >> 32),
                        0x01234567u, 0x89ABCDEFu},
                       {0xDEADBEEFu, 0x0BADF00Du});
        ASSERT_EQ((PhiloxCounter{got.w0[l], got.w1[l], got.w2[l], got.w3[l]}), want)
            << name << " base " << base << " lane " << l;
      }
    }
  }
}

TEST(FillGaussian, ZeroLengthWritesNothing) {
  float sentinel = 42.0f;
  fill_gaussian(1, 2, 3, &sentinel, 0);
  EXPECT_EQ(sentinel, 42.0f);
}

// 10^6 draws. Standard errors for n = 10^6: mean 0.001, variance 0.0014,
// skewness 0.0024, kurtosis 0.0049; tolerances are about 5 of them.
TEST(FillGaussian, MomentsOfAMillionDraws) {
  const std::size_t n = 1000000;
  std::vector<float> z(n);
  fill_gaussian(1024, 7, 0, z.data(), n);
  double sum = 0.0;
  for (float x : z) sum += x;
  const double mean = sum / n;
  double m2 = 0.0, m3 = 0.0, m4 = 0.0;
  for (float x : z) {
    const double d = x - mean;
    m2 += d * d;
    m3 += d * d * d;
    m4 += d * d * d * d;
  }
  m2 /= n;
  m3 /= n;
  m4 /= n;
  EXPECT_NEAR(mean, 0.0, 0.005);
  EXPECT_NEAR(m2, 1.0, 0.007);
  EXPECT_NEAR(m3 / std::pow(m2, 1.5), 0.0, 0.012);
  EXPECT_NEAR(m4 / (m2 * m2), 3.0, 0.025);
}

// The empirical CDF against Phi(x) = erfc(-x / sqrt 2) / 2. The
// Kolmogorov-Smirnov 99.9% bound for 10^6 draws is 1.95 / 1000.
TEST(FillGaussian, EmpiricalCdfMatchesTheNormal) {
  const std::size_t n = 1000000;
  std::vector<float> z(n);
  fill_gaussian(5, 11, 0, z.data(), n);
  for (double x = -4.0; x <= 4.0; x += 0.25) {
    std::size_t below = 0;
    for (float v : z) below += (v <= x);
    const double empirical = static_cast<double>(below) / n;
    const double phi = 0.5 * std::erfc(-x / std::sqrt(2.0));
    EXPECT_NEAR(empirical, phi, 0.002) << "x = " << x;
  }
  // With 32-bit uniforms the radius is at most sqrt(2 * 32 ln 2) = 6.66.
  for (float v : z) ASSERT_LE(std::fabs(v), 6.67f);
}

// Neighbouring normals (the two halves of a Box-Muller pair, and the two
// pairs of a Philox block) are uncorrelated: lag-1..4 autocorrelation of 10^6
// draws is within 5 standard errors (0.005) of 0.
TEST(FillGaussian, NeighboursAreUncorrelated) {
  const std::size_t n = 1000000;
  std::vector<float> z(n);
  fill_gaussian(3, 0, 0, z.data(), n);
  for (std::size_t lag = 1; lag <= 4; ++lag) {
    double s = 0.0;
    for (std::size_t i = 0; i + lag < n; ++i) s += static_cast<double>(z[i]) * z[i + lag];
    EXPECT_NEAR(s / (n - lag), 0.0, 0.005) << "lag " << lag;
  }
}

double Correlation(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// Different seeds and different streams give unrelated sequences: their
// correlation over 10^4 draws is within 5 standard errors (0.05) of 0.
TEST(FillGaussian, SeedsAndStreamsDiffer) {
  const std::size_t n = 10000;
  std::vector<float> base(n), other_stream(n), other_seed(n), hi_stream(n), table(n);
  fill_gaussian(1, 0, 0, base.data(), n);
  fill_gaussian(1, 1, 0, other_stream.data(), n);
  fill_gaussian(2, 0, 0, other_seed.data(), n);
  fill_gaussian(1, std::uint64_t{1} << 32, 0, hi_stream.data(), n);
  fill_gaussian(1, kTableStream, 0, table.data(), n);
  const std::vector<float>* others[] = {&other_stream, &other_seed, &hi_stream, &table};
  for (const std::vector<float>* other : others) {
    EXPECT_FALSE(SameBits(base, *other));
    EXPECT_NEAR(Correlation(base, *other), 0.0, 0.05);
    std::size_t equal = 0;
    for (std::size_t i = 0; i < n; ++i) equal += (base[i] == (*other)[i]);
    EXPECT_LT(equal, 5u);
  }
}

TEST(HashDraw, IsAPureFunctionOfItsArguments) {
  EXPECT_EQ(hash_draw(1024, 1, 2, 3), hash_draw(1024, 1, 2, 3));
  const std::uint64_t base = hash_draw(1024, 1, 2, 3);
  EXPECT_NE(hash_draw(1025, 1, 2, 3), base);
  EXPECT_NE(hash_draw(1024 + (std::uint64_t{1} << 40), 1, 2, 3), base);  // high seed word
  EXPECT_NE(hash_draw(1024, 0, 2, 3), base);
  EXPECT_NE(hash_draw(1024, 1, 0, 3), base);
  EXPECT_NE(hash_draw(1024, 1, 2, 0), base);
  EXPECT_NE(hash_draw(1024, 2, 1, 3), base);  // argument order matters
}

TEST(HashDraw, ReadsTheLow32BitsOfABC) {
  const std::uint64_t high = std::uint64_t{1} << 32;
  EXPECT_EQ(hash_draw(9, 1 + high, 2, 3), hash_draw(9, 1, 2, 3));
  EXPECT_EQ(hash_draw(9, 1, 2 + 5 * high, 3), hash_draw(9, 1, 2, 3));
  EXPECT_EQ(hash_draw(9, 1, 2, 3 + 7 * high), hash_draw(9, 1, 2, 3));
}

// Each of the 64 output bits is set in half of 10^5 draws (standard error
// 0.0016; tolerance 0.01), and no two of the draws collide.
TEST(HashDraw, BitsAreBalanced) {
  const int n = 100000;
  std::array<int, 64> ones{};
  std::vector<std::uint64_t> values;
  values.reserve(n);
  for (int i = 0; i < n; ++i) {
    const std::uint64_t h = hash_draw(1024, static_cast<std::uint64_t>(i % 100),
                                      static_cast<std::uint64_t>(i / 100), 0);
    values.push_back(h);
    const std::bitset<64> bits(h);
    for (int b = 0; b < 64; ++b) ones[b] += bits[b];
  }
  for (int b = 0; b < 64; ++b) {
    EXPECT_NEAR(static_cast<double>(ones[b]) / n, 0.5, 0.01) << "bit " << b;
  }
  std::sort(values.begin(), values.end());
  EXPECT_EQ(std::adjacent_find(values.begin(), values.end()), values.end());
}

}  // namespace
}  // namespace evokit
