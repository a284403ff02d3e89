// Fitness shaping: average ranks with ties, centered ranks, z-scores, raw.
#include "evokit/fitness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "test_util.h"

namespace evokit {
namespace {

using ::evokit::testing::MessageOf;

std::vector<double> Ranks(const std::vector<float>& r) { return average_ranks(r.data(), r.size()); }

std::vector<float> Shape(const std::vector<float>& r, FitnessShaping method) {
  return shape_fitness(r.data(), r.size(), method);
}

// O(n^2) definition: rank_i = #{j : r_j < r_i} + (#{j : r_j == r_i} - 1) / 2.
std::vector<double> NaiveRanks(const std::vector<float>& r) {
  std::vector<double> ranks(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    double less = 0.0, equal = 0.0;
    for (float x : r) {
      less += (x < r[i]);
      equal += (x == r[i]);
    }
    ranks[i] = less + (equal - 1.0) / 2.0;
  }
  return ranks;
}

TEST(AverageRanks, TiesGetTheMeanRank) {
  EXPECT_EQ(Ranks({1.0f, 3.0f, 3.0f, 2.0f}), (std::vector<double>{0.0, 2.5, 2.5, 1.0}));
  EXPECT_EQ(Ranks({5.0f, 5.0f, 5.0f, 5.0f}), (std::vector<double>{1.5, 1.5, 1.5, 1.5}));
  EXPECT_EQ(Ranks({4.0f, 3.0f, 2.0f, 1.0f}), (std::vector<double>{3.0, 2.0, 1.0, 0.0}));
  EXPECT_EQ(Ranks({2.0f, 1.0f, 2.0f, 1.0f, 2.0f}),
            (std::vector<double>{3.0, 0.5, 3.0, 0.5, 3.0}));
  EXPECT_EQ(Ranks({-0.0f, 0.0f, -1.0f}), (std::vector<double>{1.5, 1.5, 0.0}));
  EXPECT_EQ(Ranks({7.0f}), (std::vector<double>{0.0}));
  EXPECT_TRUE(Ranks({}).empty());
}

TEST(AverageRanks, MatchesTheQuadraticDefinition) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> value(0, 9);  // many ties
  std::vector<float> r(1000);
  for (float& x : r) x = static_cast<float>(value(rng)) * 0.5f - 2.0f;
  EXPECT_EQ(Ranks(r), NaiveRanks(r));
  // Ranks sum to 0 + 1 + ... + (n - 1) whatever the ties.
  double sum = 0.0;
  for (double k : Ranks(r)) sum += k;
  EXPECT_EQ(sum, 999.0 * 1000.0 / 2.0);
}

TEST(AverageRanks, RejectsNan) {
  EXPECT_EQ(MessageOf<std::invalid_argument>(
                [] { Ranks({1.0f, 2.0f, 3.0f, std::numeric_limits<float>::quiet_NaN()}); }),
            "reward of sample 3 is nan");
}

TEST(ShapeFitness, CenteredRanks) {
  const std::vector<float> w = Shape({1.0f, 3.0f, 3.0f, 2.0f}, FitnessShaping::kCenteredRank);
  // ranks 0, 2.5, 2.5, 1 over n - 1 = 3, minus 0.5.
  ASSERT_EQ(w.size(), 4u);
  EXPECT_FLOAT_EQ(w[0], -0.5f);
  EXPECT_FLOAT_EQ(w[1], 2.5f / 3.0f - 0.5f);
  EXPECT_FLOAT_EQ(w[2], 2.5f / 3.0f - 0.5f);
  EXPECT_FLOAT_EQ(w[3], 1.0f / 3.0f - 0.5f);

  EXPECT_EQ(Shape({10.0f, -3.0f, 0.5f}, FitnessShaping::kCenteredRank),
            (std::vector<float>{0.5f, -0.5f, 0.0f}));
}

TEST(ShapeFitness, CenteredRanksLieInMinusHalfToHalf) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(100.0f, 50.0f);
  std::vector<float> r(501);
  for (float& x : r) x = dist(rng);
  const std::vector<float> w = Shape(r, FitnessShaping::kCenteredRank);
  double sum = 0.0;
  for (float x : w) {
    EXPECT_GE(x, -0.5f);
    EXPECT_LE(x, 0.5f);
    sum += x;
  }
  EXPECT_EQ(*std::min_element(w.begin(), w.end()), -0.5f);
  EXPECT_EQ(*std::max_element(w.begin(), w.end()), 0.5f);
  EXPECT_NEAR(sum, 0.0, 1e-5);
  // Only the order matters: a monotone transform of the rewards changes nothing.
  std::vector<float> transformed(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) transformed[i] = std::cbrt(r[i]) * 3.0f - 7.0f;
  EXPECT_EQ(Shape(transformed, FitnessShaping::kCenteredRank), w);
}

TEST(ShapeFitness, ZScore) {
  // mean 2.5, population std sqrt(1.25) = 1.118033989.
  const std::vector<float> w = Shape({1.0f, 2.0f, 3.0f, 4.0f}, FitnessShaping::kZScore);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_FLOAT_EQ(w[0], -1.3416408f);
  EXPECT_FLOAT_EQ(w[1], -0.4472136f);
  EXPECT_FLOAT_EQ(w[2], 0.4472136f);
  EXPECT_FLOAT_EQ(w[3], 1.3416408f);
}

TEST(ShapeFitness, ZScoreHasMeanZeroAndUnitPopulationStd) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> dist(-1000.0f, 3000.0f);
  std::vector<float> r(777);
  for (float& x : r) x = dist(rng);
  const std::vector<float> w = Shape(r, FitnessShaping::kZScore);
  double sum = 0.0, squares = 0.0;
  for (float x : w) {
    sum += x;
    squares += static_cast<double>(x) * x;
  }
  EXPECT_NEAR(sum / w.size(), 0.0, 1e-6);
  EXPECT_NEAR(squares / w.size(), 1.0, 1e-6);
}

TEST(ShapeFitness, ZScoreOfEqualRewardsIsZero) {
  EXPECT_EQ(Shape({3.5f, 3.5f, 3.5f}, FitnessShaping::kZScore),
            (std::vector<float>{0.0f, 0.0f, 0.0f}));
}

TEST(ShapeFitness, Raw) {
  const std::vector<float> r = {1.5f, -2.25f, 1e30f, -0.0f};
  const std::vector<float> w = Shape(r, FitnessShaping::kRaw);
  EXPECT_TRUE(::evokit::testing::SameBits(w, r));
}

TEST(ShapeFitness, SingleSample) {
  EXPECT_EQ(Shape({42.0f}, FitnessShaping::kCenteredRank), (std::vector<float>{0.0f}));
  EXPECT_EQ(Shape({42.0f}, FitnessShaping::kZScore), (std::vector<float>{0.0f}));
  EXPECT_EQ(Shape({42.0f}, FitnessShaping::kRaw), (std::vector<float>{42.0f}));
}

TEST(ShapeFitness, RejectsNoRewards) {
  for (FitnessShaping m :
       {FitnessShaping::kRaw, FitnessShaping::kCenteredRank, FitnessShaping::kZScore}) {
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { shape_fitness(nullptr, 0, m); }),
              "no rewards");
  }
}

TEST(ShapeFitness, RejectsNonFiniteRewardsNamingTheSample) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (FitnessShaping m :
       {FitnessShaping::kRaw, FitnessShaping::kCenteredRank, FitnessShaping::kZScore}) {
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { Shape({0.0f, 1.0f, 2.0f, nan}, m); }),
              "reward of sample 3 is nan");
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { Shape({inf, 1.0f}, m); }),
              "reward of sample 0 is inf");
    EXPECT_EQ(MessageOf<std::invalid_argument>([&] { Shape({1.0f, -inf}, m); }),
              "reward of sample 1 is -inf");
  }
}

TEST(ShapeFitness, RejectsAnUnknownMethod) {
  const std::vector<float> r = {1.0f, 2.0f};
  EXPECT_THROW_WITH(shape_fitness(r.data(), r.size(), static_cast<FitnessShaping>(99)),
                    std::invalid_argument, "unknown fitness shaping");
}

}  // namespace
}  // namespace evokit
