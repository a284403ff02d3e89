// Fitness shaping: turns raw rewards into the weights of the ES gradient.
#pragma once

#include <cstddef>
#include <vector>

namespace evokit {

enum class FitnessShaping {
  kRaw,           // w_i = r_i
  kCenteredRank,  // w_i = rank_i / (n - 1) - 0.5, ranks 0..n-1, ties get the mean rank
  kZScore,        // w_i = (r_i - mean) / std (population std); all equal -> all 0
};

// Average ranks (0-based, ascending) with ties given the mean of their ranks.
std::vector<double> average_ranks(const float* rewards, std::size_t n);

// Throws std::invalid_argument "reward of sample i is nan" (or inf / -inf)
// for a non-finite reward and "no rewards" for n == 0. For n == 1 the
// centered rank and the z-score are 0.
std::vector<float> shape_fitness(const float* rewards, std::size_t n, FitnessShaping method);

}  // namespace evokit
