// Fitness shaping. All statistics are computed in double and rounded to float
// once at the end.
#include "evokit/fitness.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "common/messages.h"

namespace evokit {

namespace detail {
namespace {

// Rewards must be finite: a NaN has no rank and an infinity would make every
// weight non-finite. Both functions below reject them with the same message.
void check_rewards(const float* rewards, std::size_t n) {
  if (n > 0 && rewards == nullptr) throw std::invalid_argument("rewards must not be null");
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(rewards[i])) {
      throw std::invalid_argument("reward of sample " + std::to_string(i) + " is " +
                                  format_number(rewards[i]));
    }
  }
}

// Index is the type of a position in the sort: 4 bytes where n allows (the
// sort of ten million rewards then moves half the bytes; the same order).
template <class Index>
std::vector<double> ranks_in_order(const float* rewards, std::size_t n) {
  std::vector<Index> order(n);
  std::iota(order.begin(), order.end(), Index{0});
  std::stable_sort(order.begin(), order.end(), [rewards](Index a, Index b) { return rewards[a] < rewards[b]; });
  std::vector<double> ranks(n);
  std::size_t first = 0;
  while (first < n) {
    // [first, last) is a run of equal rewards: ranks first .. last - 1.
    std::size_t last = first + 1;
    while (last < n && rewards[order[last]] == rewards[order[first]]) ++last;
    const double mean_rank = 0.5 * static_cast<double>(first + last - 1);
    for (std::size_t k = first; k < last; ++k) ranks[order[k]] = mean_rank;
    first = last;
  }
  return ranks;
}

std::vector<double> ranks_of_checked(const float* rewards, std::size_t n) {
  if (n <= std::numeric_limits<std::uint32_t>::max()) return ranks_in_order<std::uint32_t>(rewards, n);
  return ranks_in_order<std::size_t>(rewards, n);
}

}  // namespace
}  // namespace detail

// An empty input gives an empty result; a non-finite reward throws.
std::vector<double> average_ranks(const float* rewards, std::size_t n) {
  detail::check_rewards(rewards, n);
  return detail::ranks_of_checked(rewards, n);
}

std::vector<float> shape_fitness(const float* rewards, std::size_t n, FitnessShaping method) {
  if (n == 0) throw std::invalid_argument("no rewards");
  detail::check_rewards(rewards, n);
  std::vector<float> weights(n, 0.0f);
  switch (method) {
    case FitnessShaping::kRaw:
      std::copy(rewards, rewards + n, weights.begin());
      return weights;
    case FitnessShaping::kCenteredRank: {
      if (n == 1) return weights;
      const std::vector<double> ranks = detail::ranks_of_checked(rewards, n);
      const double denominator = static_cast<double>(n - 1);
      for (std::size_t i = 0; i < n; ++i) {
        weights[i] = static_cast<float>(ranks[i] / denominator - 0.5);
      }
      return weights;
    }
    case FitnessShaping::kZScore: {
      const auto [lowest, highest] = std::minmax_element(rewards, rewards + n);
      if (*lowest == *highest) return weights;  // all equal (includes n == 1)
      double sum = 0.0;
      for (std::size_t i = 0; i < n; ++i) sum += rewards[i];
      const double mean = sum / static_cast<double>(n);
      double squares = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        const double d = rewards[i] - mean;
        squares += d * d;
      }
      const double std_dev = std::sqrt(squares / static_cast<double>(n));  // population std
      if (!(std_dev > 0.0)) return weights;
      for (std::size_t i = 0; i < n; ++i) {
        weights[i] = static_cast<float>((rewards[i] - mean) / std_dev);
      }
      return weights;
    }
  }
  throw std::invalid_argument("unknown fitness shaping method " +
                              std::to_string(static_cast<int>(method)));
}

}  // namespace evokit
