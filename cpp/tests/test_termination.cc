// The stop criteria on f-values every strategy shares (evokit/termination.h).
#include "evokit/termination.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace evokit {
namespace {

TEST(FValueHistory, BudgetsAndTargetAreCheckedAtOnce) {
  FValueHistory h;
  const std::vector<double> v = {3.0, 1.0, 2.0, 5.0};
  h.record(v.data(), v.size(), 2, 4);
  FValueCriteria c;
  c.max_evaluations = 4;
  c.max_iterations = 1;
  c.ftarget = 1.0;
  const auto stop = h.check(c, 4, 1.0);
  EXPECT_EQ(stop.size(), 3u);
  EXPECT_EQ(stop.at("maxfevals"), 4.0);
  EXPECT_EQ(stop.at("maxiter"), 1.0);
  EXPECT_EQ(stop.at("ftarget"), 1.0);
}

TEST(FValueHistory, TolfunWaitsForTenPlusThirtyNOverLambdaGenerations) {
  // n = 5, lambda = 6: H = 10 + ceil(25) = 35 generations of flat values.
  FValueHistory h;
  const std::vector<double> flat(6, 1.0);
  FValueCriteria c;
  for (int g = 1; g <= 35; ++g) {
    h.record(flat.data(), flat.size(), 5, 6);
    const auto stop = h.check(c, 6 * g, 1.0);
    EXPECT_EQ(stop.count("tolfun"), g == 35 ? 1u : 0u) << g;
    EXPECT_EQ(stop.count("tolfunhist"), g == 35 ? 1u : 0u) << g;
  }
  h.clear();
  EXPECT_EQ(h.generations(), 0);
  EXPECT_TRUE(h.check(c, 0, 1.0).empty());
}

TEST(FValueHistory, TolstagnationComparesRecentAndOldMedians) {
  // Values that only grow: the recent best and median are worse than the
  // oldest. Past T = 4, the window max(120 + 30 n / lambda, 0.2 g) = 145
  // generations (n = 5, lambda = 6) must be recorded.
  FValueHistory h;
  FValueCriteria c;
  c.tolstagnation = 4;
  for (int g = 1; g <= 145; ++g) {
    const std::vector<double> v = {double(g), double(g) + 1, double(g) + 2};
    h.record(v.data(), v.size(), 5, 6);
    EXPECT_EQ(h.check(c, 3 * g, 1.0).count("tolstagnation"), g == 145 ? 1u : 0u) << g;
  }
  // Values that keep falling never stagnate.
  FValueHistory falling;
  for (int g = 1; g <= 400; ++g) {
    const std::vector<double> v = {-double(g), 1.0 - g};
    falling.record(v.data(), v.size(), 5, 6);
    ASSERT_EQ(falling.check(c, 2 * g, -g).count("tolstagnation"), 0u) << g;
  }
}

TEST(FValueHistory, HugeValuesOfOppositeSignsDoNotStop) {
  FValueHistory h;
  const std::vector<double> v = {1e308, -1e308};
  FValueCriteria c;
  for (int g = 0; g < 40; ++g) h.record(v.data(), v.size(), 1, 2);
  const auto stop = h.check(c, 80, -1e308);
  EXPECT_EQ(stop.count("tolfun"), 0u);  // their range is inf
}

}  // namespace
}  // namespace evokit
