// ARS4x32 known answers, the documented normal construction (noise.h), its
// accuracy, the instruction-set implementations, and the statistics of the
// normals.
#include "evokit/noise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "evokit/gaussian_sampler.h"
#include "noise/noise_blocks.h"
#include "test_util.h"

namespace evokit {
namespace {

using ::evokit::testing::SameBits;

// Known-answer vectors for ARS4x32 with 10 rounds from Random123's
// tests/kat_vectors (counter words, key words, output words):
//
// ars4x32 10 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000   8d73ee19 506401ef 13c2dbe4 0cbe9c0d
// ars4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0 082efa98 ec4e6c89   a516e7d6 8357ad74 5b59b3ec 8763fff3
// ars4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff 00000000 00000000   bb3743b1 9f635551 ecbc87fc a19478a9
TEST(Ars, KnownAnswersOfRandom123) {
  EXPECT_EQ(ars4x32({0, 0, 0, 0}, {0, 0, 0, 0}, 10),
            (ArsBlock{0x8d73ee19u, 0x506401efu, 0x13c2dbe4u, 0x0cbe9c0du}));
  EXPECT_EQ(ars4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                    {0xa4093822u, 0x299f31d0u, 0x082efa98u, 0xec4e6c89u}, 10),
            (ArsBlock{0xa516e7d6u, 0x8357ad74u, 0x5b59b3ecu, 0x8763fff3u}));
  EXPECT_EQ(ars4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                    {0xffffffffu, 0xffffffffu, 0u, 0u}, 10),
            (ArsBlock{0xbb3743b1u, 0x9f635551u, 0xecbc87fcu, 0xa19478a9u}));
}

TEST(Ars, EveryInputWordAndTheRoundCountMatter) {
  const ArsBlock ctr = {1, 2, 3, 4}, key = {5, 6, 7, 8};
  const ArsBlock base = ars4x32(ctr, key);
  EXPECT_NE(ars4x32(ctr, key, 10), base);
  EXPECT_NE(ars4x32(ctr, key, 7), base);
  EXPECT_EQ(kNoiseArsRounds, 5);
  EXPECT_EQ(ars4x32(ctr, key, kNoiseArsRounds), base);
  for (int w = 0; w < 4; ++w) {
    ArsBlock c = ctr, k = key;
    c[w] ^= 1u;
    k[w] ^= 1u;
    EXPECT_NE(ars4x32(c, key), base) << "counter word " << w;
    EXPECT_NE(ars4x32(ctr, k), base) << "key word " << w;
  }
}

// The ARS words of block `block` of (seed, stream), as noise.h defines them.
ArsBlock NoiseWords(std::uint64_t seed, std::uint64_t stream, std::uint64_t block) {
  return ars4x32({static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                  static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)},
                 {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32), 0u, 0u},
                 5);  // noise version 4: ARS4x32-5
}

// The transform re-derived from noise.h's comment: tables from their formulas
// (in double, rounded to float), bit fields through frexp.
void ReferenceBoxMuller(std::uint32_t wr, std::uint32_t wa, float& z0, float& z1) {
  const double pi = std::acos(-1.0);
  const float k = static_cast<float>((wr >> 8) + 1u);
  int exponent = 0;
  const float m = 2.0f * std::frexp(k, &exponent);  // k = m 2^(exponent - 1), m in [1, 2)
  const int j = static_cast<int>(std::floor((m - 1.0f) * 32.0f));
  const float c = 1.0f + static_cast<float>(j) / 32.0f;
  const int n = exponent - 1 - 24 + (j >= 16 ? 1 : 0);
  const auto recip = static_cast<float>(32.0 / (32.0 + j));
  const auto ln_j = static_cast<float>(std::log1p(j / 32.0) - (j >= 16 ? std::log(2.0) : 0.0));
  const float t = (m - c) * recip;
  const float p = t + t * (t * (-0.5f + t * (1.0f / 3.0f + t * -0.25f)));
  const float ln_u = static_cast<float>(n) * static_cast<float>(std::log(2.0)) + (ln_j + p);
  const float y = -2.0f * ln_u;
  const float r = std::sqrt(y > 0.0f ? y : 0.0f);
  const int s = static_cast<int>(wa >> 27);
  const float a = static_cast<float>(wa & 0x7FFFFFu) / 8388608.0f - 0.5f;  // exact
  const double h = pi / 16.0;
  const float a2 = a * a;
  const float sd = a * (0.196349487f + a2 * -0.00126088886f);  // 0x3E490FD7, 0xBAA54469
  const float cd = 1.0f + a2 * (static_cast<float>(-h * h / 2.0) +
                                a2 * static_cast<float>(h * h * h * h / 24.0));
  const auto cj = static_cast<float>(std::cos((2 * s + 1) * pi / 32.0));
  const auto sj = static_cast<float>(std::sin((2 * s + 1) * pi / 32.0));
  z0 = r * (cj * cd - sj * sd);
  z1 = r * (sj * cd + cj * sd);
}

float ReferenceGaussian(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const ArsBlock w = NoiseWords(seed, stream, index / 4);
  const std::size_t pair = (index % 4) / 2;
  float z0, z1;
  ReferenceBoxMuller(w[2 * pair], w[2 * pair + 1], z0, z1);
  return (index % 2 == 0) ? z0 : z1;
}

// The textbook Box-Muller transform (double) of the same u and theta.
void ExactBoxMuller(std::uint32_t wr, std::uint32_t wa, double& z0, double& z1) {
  const double pi = std::acos(-1.0);
  const double u = static_cast<double>((wr >> 8) + 1u) / 16777216.0;
  const double a = static_cast<double>(wa & 0x7FFFFFu) / 8388608.0 - 0.5;
  const double theta = (2 * static_cast<int>(wa >> 27) + 1) * pi / 32.0 + a * pi / 16.0;
  const double r = std::sqrt(-2.0 * std::log(u));
  z0 = r * std::cos(theta);
  z1 = r * std::sin(theta);
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

// Every radius word (all 2^24 values of k) and 10^6 angle words: the float
// transform stays within 1e-6 of the exact Box-Muller of the same u, theta.
TEST(GaussianAt, IsWithinAMillionthOfTheExactTransform) {
  double worst = 0.0;
  std::uint32_t wa = 0x9E3779B9u;
  for (std::uint32_t k = 0; k < (1u << 24); ++k) {
    wa = wa * 1664525u + 1013904223u;  // any angle; the radius sweeps every k
    const std::uint32_t wr = (k << 8) | (wa & 0xFFu);
    float z0, z1;
    double e0, e1;
    ReferenceBoxMuller(wr, wa, z0, z1);
    ExactBoxMuller(wr, wa, e0, e1);
    worst = std::max({worst, std::abs(z0 - e0), std::abs(z1 - e1)});
  }
  EXPECT_LT(worst, 1e-6) << worst;  // measured: 8.4e-7 (noise version 4)
  EXPECT_GT(worst, 0.0);  // it is an approximation: this test would notice a switch back
  // u = 1 gives 0; the smallest u the largest radius, sqrt(48 ln 2).
  float z0, z1;
  ReferenceBoxMuller(0xFFFFFFFFu, 0u, z0, z1);
  EXPECT_EQ(z0, 0.0f);
  ReferenceBoxMuller(0x000000FFu, 0x08000000u, z0, z1);  // theta = 3 pi / 32 - pi / 32
  EXPECT_NEAR(std::hypot(z0, z1), std::sqrt(48.0 * std::log(2.0)), 2e-6);
}

// Every implementation this CPU runs (AVX-512 + VAES, AVX2 + VAES, AVX2 +
// AES-NI, AES-NI, portable) gives the bits of gaussian_at, at any start and
// length (whole passes, partial passes, a block counter whose low word wraps).
TEST(NoiseBlocks, EveryImplementationMatchesGaussianAt) {
  const auto impls = detail::noise_blocks_implementations();
  ASSERT_FALSE(impls.empty());
  EXPECT_EQ(impls.back().first, "portable");
  const std::uint64_t firsts[] = {0, 12345, 0xFFFFFFFFull - 20, (std::uint64_t{7} << 32) - 1};
  const std::size_t counts[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 49, 64, 100};
  for (const auto& [name, fn] : impls) {
    for (std::uint64_t first : firsts) {
      for (std::size_t count : counts) {
        std::vector<float> got(4 * count + 1, 42.0f);
        fn(0xDEADBEEF0BADF00Dull, 0x89ABCDEF01234567ull, first, count, got.data());
        for (std::size_t i = 0; i < 4 * count; ++i) {
          ASSERT_TRUE(SameFloatBits(got[i], gaussian_at(0xDEADBEEF0BADF00Dull,
                                                        0x89ABCDEF01234567ull, 4 * first + i)))
              << name << " first " << first << " count " << count << " i " << i;
        }
        EXPECT_EQ(got.back(), 42.0f) << name;  // nothing beyond the blocks is written
      }
    }
  }
}

// The vector transforms against the scalar one, bit for bit, over every
// radius word k (2^24 of them, each with a pseudo-random angle word): every
// table entry and exponent is reached.
TEST(NoiseTransform, EveryImplementationMatchesTheScalarOnEveryRadiusWord) {
  const auto impls = detail::noise_transform_implementations();
  ASSERT_EQ(impls.back().first, "scalar");
  constexpr std::size_t kPiece = 1 << 16;
  std::vector<std::uint32_t> wr(kPiece), wa(kPiece);
  std::vector<float> want0(kPiece), want1(kPiece), got0(kPiece), got1(kPiece);
  std::uint32_t x = 0x9E3779B9u;
  for (std::uint32_t k0 = 0; k0 < (1u << 24); k0 += kPiece) {
    for (std::size_t i = 0; i < kPiece; ++i) {
      x = x * 1664525u + 1013904223u;
      wr[i] = ((k0 + static_cast<std::uint32_t>(i)) << 8) | (x >> 24);
      wa[i] = x;
    }
    impls.back().second(wr.data(), wa.data(), kPiece, want0.data(), want1.data());
    for (std::size_t m = 0; m + 1 < impls.size(); ++m) {
      impls[m].second(wr.data(), wa.data(), kPiece, got0.data(), got1.data());
      ASSERT_TRUE(SameBits(got0, want0) && SameBits(got1, want1))
          << impls[m].first << " from k = " << k0;
    }
  }
}

// u = 1 (radius word 0xFFFFFFxx, once in 2^24 pairs) gives r = +0 on every
// path, so the pair is (+-0, +-0) with the signs of cos and sin, bit for bit:
// normals 21105006 and 21105007 of (seed 3, stream 6), words 2 and 3 of
// their block, are such a pair.
TEST(NoiseBlocks, TheZeroRadiusHasTheSameBitsOnEveryPath) {
  constexpr std::uint64_t kFirst = 21105006;
  const std::uint64_t block = kFirst / 4;
  ASSERT_EQ(gaussian_at(3, 6, kFirst), 0.0f);
  ASSERT_EQ(gaussian_at(3, 6, kFirst + 1), 0.0f);
  for (const auto& [name, fn] : detail::noise_blocks_implementations()) {
    std::vector<float> got(4 * 32);
    fn(3, 6, block - 16, 32, got.data());  // inside a whole pass of every implementation
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(SameFloatBits(got[i], gaussian_at(3, 6, 4 * (block - 16) + i))) << name << " " << i;
    }
  }
  float z0, z1;
  const ArsBlock w = NoiseWords(3, 6, block);
  ReferenceBoxMuller(w[2], w[3], z0, z1);
  EXPECT_TRUE(SameFloatBits(z0, gaussian_at(3, 6, kFirst)));
  EXPECT_TRUE(SameFloatBits(z1, gaussian_at(3, 6, kFirst + 1)));
  EXPECT_FALSE(std::signbit(z0));  // +0 * cos(theta) with cos(theta) > 0
  EXPECT_TRUE(std::signbit(z1));   // +0 * sin(theta) with sin(theta) < 0
}

// accumulate_gaussian gives the bits of "fill a buffer, then acc += c * z"
// sample by sample, for any start (heads before a whole block), length
// (tails after whole chunks) and number of samples.
TEST(AccumulateGaussian, EqualsBufferThenMultiplyAdd) {
  const std::uint64_t streams[] = {5, 0x0000010000000007ull, 3, 1ull << 61, 9, 11, 13};
  const float coef[] = {0.5f, -1.25f, 3.0f, 1e-3f, -7.0f, 0.1f, 2.5f};
  const std::uint64_t starts[] = {0, 1, 2, 3, 4096, 4099};
  const std::size_t lengths[] = {1, 3, 31, 32, 33, 100, 4096};
  for (std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{7}}) {
    for (std::uint64_t start : starts) {
      for (std::size_t len : lengths) {
        std::vector<float> want(len + 1), got(len + 1), z(len);
        for (std::size_t j = 0; j < len; ++j) want[j] = got[j] = 0.01f * static_cast<float>(j);
        want[len] = got[len] = 42.0f;
        for (std::size_t s = 0; s < count; ++s) {
          fill_gaussian(77, streams[s], start, z.data(), len);
          for (std::size_t j = 0; j < len; ++j) want[j] += coef[s] * z[j];
        }
        accumulate_gaussian(77, streams, coef, count, start, got.data(), len);
        ASSERT_TRUE(SameBits(got, want)) << "count " << count << " start " << start << " len " << len;
      }
    }
  }
}

TEST(GaussianAt, IsAPureFunction) {
  for (std::uint64_t i = 0; i < 64; ++i) {
    EXPECT_TRUE(SameFloatBits(gaussian_at(7, 3, i), gaussian_at(7, 3, i)));
  }
}

TEST(FillGaussian, EqualsGaussianAtElementwise) {
  // (1 << 34) - 161: the low counter word wraps 40 blocks into a run of the
  // vectorised generator, so the carry into the high word is tested.
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
  // With 24-bit uniforms the radius is at most sqrt(48 ln 2) = 5.77.
  for (float v : z) ASSERT_LE(std::fabs(v), 5.78f);
}

// Neighbouring normals (the two halves of a Box-Muller pair, and the two
// pairs of an ARS block) are uncorrelated: lag-1..4 autocorrelation of 10^6
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


}  // namespace
}  // namespace evokit
