// The numpy operations gymnasium's environments compute their observations
// and rewards with, reproduced bit for bit (STL only; no MuJoCo needed).
#pragma once

#include <cmath>
#include <cstddef>

namespace evokit {

// np.sum of a contiguous 1-D array a[n] of float or double, in its dtype:
// numpy's pairwise summation (loops_utils.h). Under 8 values a running sum
// from -0.0; up to 128, eight running sums over the blocks of 8, combined as
// ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the remainder
// added one by one; beyond, the two halves (the first a multiple of 8) summed
// so and added. np.sum(np.square(x)) of a float32 action stays float32.
template <class T>
T numpy_sum(const T* a, std::size_t n) noexcept {
  if (n < 8) {
    T res = static_cast<T>(-0.0);
    for (std::size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    T r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - n % 8; i += 8) {
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t half = n / 2;
  half -= half % 8;
  return numpy_sum(a, half) + numpy_sum(a + half, n - half);
}

// np.clip(x, lo, hi) of one value: max with lo, then min with hi, a NaN
// staying NaN (numpy's _NPY_CLIP).
template <class T>
T numpy_clip(T x, T lo, T hi) noexcept {
  if (std::isnan(x)) return x;
  const T above = x > lo ? x : lo;
  return above < hi ? above : hi;
}

}  // namespace evokit
