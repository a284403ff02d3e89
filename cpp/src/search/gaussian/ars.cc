// ARS's update (Mania, Guy, Recht 2018, Algorithm 2; see gaussian_solver.h):
// the mirrored pairs of a batch, the top b directions by max(r+, r-), sigma_R,
// and the weights GaussianStrategy's descent direction takes for them.
#include "evokit/gaussian_solver.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace evokit {

ArsSelection ars_select(const std::vector<double>& r_plus, const std::vector<double>& r_minus,
                        std::size_t b) {
  const std::size_t k = r_plus.size();
  b = std::min(b, k);
  std::vector<std::size_t> order(k);
  for (std::size_t j = 0; j < k; ++j) order[j] = j;
  auto score = [&](std::size_t j) { return std::max(r_plus[j], r_minus[j]); };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t c) { return score(a) > score(c); });
  order.resize(b);
  // sigma_R: the (population) standard deviation of the 2b rewards used.
  double mean = 0.0;
  for (std::size_t j = 0; j < b; ++j) mean += r_plus[order[j]] + r_minus[order[j]];
  mean /= static_cast<double>(2 * b);
  double var = 0.0;
  for (std::size_t j = 0; j < b; ++j) {
    const double dp = r_plus[order[j]] - mean, dm = r_minus[order[j]] - mean;
    var += dp * dp + dm * dm;
  }
  ArsSelection out;
  out.sigma_r = std::sqrt(var / static_cast<double>(2 * b));
  if (!(out.sigma_r > 0.0)) out.sigma_r = 1.0;  // every reward equal: every difference is 0
  out.top = std::move(order);
  return out;
}

std::vector<float> ars_weights(const std::vector<SamplingInfo>& infos,
                               const std::vector<std::int64_t>& keys, const std::vector<float>& r,
                               int top_directions, double sigma, std::size_t* num_pairs) {
  const std::size_t n = infos.size();
  // Pair each unmirrored sample with the first unpaired mirrored one of the
  // same key and iteration, in sample order.
  struct Pair {
    std::size_t plus, minus;
  };
  std::vector<Pair> pairs;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::size_t>> open[2];
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = std::make_pair(keys[i], infos[i].model_iter_id);
    const int side = infos[i].mirrored ? 1 : 0;
    auto& waiting = open[1 - side][id];
    if (waiting.empty()) {
      open[side][id].push_back(i);
      continue;
    }
    const std::size_t other = waiting.front();
    waiting.erase(waiting.begin());
    pairs.push_back(side == 0 ? Pair{i, other} : Pair{other, i});
  }
  // Pairs in the order of their first sample, so ties go to the earlier one.
  std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) {
    return std::min(a.plus, a.minus) < std::min(b.plus, b.minus);
  });
  if (num_pairs != nullptr) *num_pairs = pairs.size();
  if (pairs.empty()) {
    throw std::invalid_argument("ARS needs both samples of a mirrored pair (the same key drawn "
                                "at the same iteration, once mirrored); none of the " +
                                std::to_string(n) + " samples has its partner");
  }
  const std::size_t k = pairs.size();
  const std::size_t b = top_directions <= 0 ? k
                                            : std::min(k, static_cast<std::size_t>(top_directions));
  std::vector<double> r_plus(k), r_minus(k);
  for (std::size_t j = 0; j < k; ++j) {
    r_plus[j] = static_cast<double>(r[pairs[j].plus]);
    r_minus[j] = static_cast<double>(r[pairs[j].minus]);
  }
  const ArsSelection selected = ars_select(r_plus, r_minus, b);
  const std::vector<std::size_t>& order = selected.top;
  const double sigma_r = selected.sigma_r;
  // descent_direction divides by n * sigma and multiplies by the sign, so a
  // pair's two weights +-h with h = (r+ - r-) * n * sigma / (2 b sigma_R)
  // contribute (r+ - r-) / (b sigma_R) * eps.
  const double scale = static_cast<double>(n) * sigma / (2.0 * static_cast<double>(b) * sigma_r);
  std::vector<float> weights(n, 0.0f);
  for (std::size_t j = 0; j < b; ++j) {
    const Pair& p = pairs[order[j]];
    const double h = (static_cast<double>(r[p.plus]) - r[p.minus]) * scale;
    weights[p.plus] = static_cast<float>(h);
    weights[p.minus] = static_cast<float>(-h);
  }
  return weights;
}

}  // namespace evokit
