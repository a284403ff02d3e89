// The numpy operations of the core (cpp/include/evokit/
// numpy_ops.h), which need no MuJoCo: np.sum's pairwise order and
// np.clip, against values numpy 2.4 computed.
#include "evokit/numpy_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace evokit {
namespace {

// v_i = ((i * 7919) % 1000 / 37 - 13)^3 in T, as numpy computes
// (a / T(37) - T(13)) and then (a * a) * a.
template <class T>
std::vector<T> cubes(std::size_t n) {
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const T a = static_cast<T>((i * 7919) % 1000) / static_cast<T>(37) - static_cast<T>(13);
    out[i] = a * a * a;
  }
  return out;
}

template <class T>
T running_sum(const std::vector<T>& v) {
  T s = 0;
  for (T x : v) s += x;
  return s;
}

template <class T>
struct SumCase {
  std::size_t n;
  T want;  // np.sum(cubes(n)), numpy 2.4
};

// numpy_sum of cubes(n) is `want` for every case, and differs from a running
// sum from n = differs_from on (the sizes where numpy's order matters here).
template <class T, std::size_t N>
void ExpectNumpySums(const SumCase<T> (&cases)[N], std::size_t differs_from) {
  for (const SumCase<T>& c : cases) {
    const std::vector<T> v = cubes<T>(c.n);
    EXPECT_EQ(numpy_sum(v.data(), v.size()), c.want) << c.n;
    if (c.n >= differs_from) EXPECT_NE(running_sum(v), c.want) << c.n;
  }
}

TEST(NumpyOps, Float32SumIsNumpysPairwiseSum) {
  const SumCase<float> cases[] = {
      {5, 0x1.ccccbp+9f},   {8, 0x1.daafe6p+9f},   {13, -0x1.46bb72p+11f},
      {84, 0x1.f8667cp+11f}, {200, 0x1.a9282ap+13f}, {300, 0x1.a68044p+14f}};
  ExpectNumpySums(cases, 8);
}

TEST(NumpyOps, Float64SumIsNumpysPairwiseSum) {
  const SumCase<double> cases[] = {
      {5, 0x1.ccccb985a48dfp+9},   {8, 0x1.daafedf7a404dp+9},   {13, -0x1.46bb7029ce804p+11},
      {84, 0x1.f86678e6d3782p+11}, {200, 0x1.a92825cdcb2a5p+13}, {300, 0x1.a68044547b8a2p+14}};
  ExpectNumpySums(cases, 84);
}

TEST(NumpyOps, SumOfNothingAndOfZeros) {
  EXPECT_EQ(numpy_sum<float>(nullptr, 0), 0.0f);
  EXPECT_TRUE(std::signbit(numpy_sum<float>(nullptr, 0)));  // numpy starts from -0.0
  const double zeros[3] = {0.0, 0.0, 0.0};
  EXPECT_FALSE(std::signbit(numpy_sum(zeros, 3)));
}

TEST(NumpyOps, ClipKeepsNanAndInfinity) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(numpy_clip(12.5, -10.0, 10.0), 10.0);
  EXPECT_EQ(numpy_clip(-inf, -10.0, 10.0), -10.0);
  EXPECT_EQ(numpy_clip(0.25, -10.0, 10.0), 0.25);
  EXPECT_TRUE(std::isnan(numpy_clip(std::nan(""), -1.0, 1.0)));
  EXPECT_TRUE(std::signbit(numpy_clip(-0.0, -1.0, 1.0)));
  const float finf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(numpy_clip(3e38f, -finf, finf), 3e38f);
}

}  // namespace
}  // namespace evokit
