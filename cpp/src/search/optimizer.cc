// First-order optimizers. Updates are elementwise, so splitting the vector
// into fixed blocks across threads gives the same bits for any num_threads.
#include "evokit/optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "common/kernel_targets.h"
#include "common/messages.h"
#include "common/parallel.h"

namespace evokit {

namespace detail {
namespace {

// Elements per parallel work item.
constexpr std::size_t kElementBlock = 16384;

// body(begin, end) over [0, n) in fixed blocks, on up to num_threads threads.
template <class Body>
void parallel_ranges(std::size_t n, int num_threads, const Body& body) {
  const std::size_t blocks = ceil_div(n, kElementBlock);
  parallel_items(blocks, team_size(blocks, num_threads), [&](std::size_t b) {
    const std::size_t begin = b * kElementBlock;
    body(begin, std::min(n, begin + kElementBlock));
  });
}

// The largest |x[i]| of x[0, len) (NaN if there is one; vectorised).
EVOKIT_KERNEL_TARGETS
float max_abs(const float* x, std::size_t len) {
  float top = 0.0f;
  int nan = 0;
#pragma omp simd reduction(max : top) reduction(| : nan)
  for (std::size_t i = 0; i < len; ++i) {
    const float a = std::fabs(x[i]);
    nan |= a != a;
    top = a > top ? a : top;
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : top;
}

// Index of the first value of x[0, n) that is non-finite or whose magnitude
// exceeds `limit`, or n if there is none.
std::size_t first_beyond(const float* x, std::size_t n, float limit, int num_threads) {
  const std::size_t blocks = ceil_div(n, kElementBlock);
  std::vector<std::size_t> first(blocks, n);
  parallel_items(blocks, team_size(blocks, num_threads), [&](std::size_t b) {
    const std::size_t begin = b * kElementBlock;
    const std::size_t end = std::min(n, begin + kElementBlock);
    if (max_abs(x + begin, end - begin) <= limit) return;
    for (std::size_t i = begin; i < end; ++i) {
      if (!(std::fabs(x[i]) <= limit)) {
        first[b] = i;
        return;
      }
    }
  });
  return *std::min_element(first.begin(), first.end());
}

// One fused Adam pass over [0, len): the moments and the parameter in one
// read and one write of each vector (see Adam::do_step for the constants).
EVOKIT_KERNEL_TARGETS
void adam_block(float* __restrict params, const float* __restrict grad, float* __restrict m,
                float* __restrict v, std::size_t len, float b1, float one_minus_b1, float b2,
                float one_minus_b2, float step_size, float eps_hat) {
#pragma omp simd
  for (std::size_t i = 0; i < len; ++i) {
    const float g = grad[i];
    const float mi = b1 * m[i] + one_minus_b1 * g;
    const float vi = b2 * v[i] + one_minus_b2 * (g * g);
    m[i] = mi;
    v[i] = vi;
    params[i] -= step_size * mi / (std::sqrt(vi) + eps_hat);
  }
}

void require_positive_finite(float value, const char* what) {
  if (!(value > 0.0f) || !std::isfinite(value)) {
    throw std::invalid_argument(std::string(what) + " must be > 0 and finite, got " +
                                format_number(value));
  }
}

void require_unit_interval(float value, const char* what) {
  if (!(value >= 0.0f && value < 1.0f)) {
    throw std::invalid_argument(std::string(what) + " must be in [0, 1), got " +
                                format_number(value));
  }
}

}  // namespace
}  // namespace detail

Optimizer::Optimizer(float lr, std::size_t num_params) : num_params_(num_params), lr_(lr) {
  detail::require_positive_finite(lr, "learning rate (optimizer.base_lr)");
  if (num_params == 0) throw std::invalid_argument("num_params must be > 0, got 0");
}

void Optimizer::step(float* params, const float* grad, std::size_t n, int num_threads) {
  if (n != num_params_) {
    throw std::invalid_argument("grad has " + std::to_string(n) +
                                " values but the optimizer has num_params " +
                                std::to_string(num_params_));
  }
  detail::require_non_null(params, "params");
  detail::require_non_null(grad, "grad");
  detail::require_num_threads(num_threads);
  for (std::size_t k = 0; k < states_.size(); ++k) {
    if (states_[k].size() != num_params_) {
      throw std::invalid_argument("optimizer state '" + names_[k] + "' has " +
                                  std::to_string(states_[k].size()) +
                                  " values, expected num_params " + std::to_string(num_params_));
    }
  }
  // One pass: a non-finite value, or one so large that the step would make
  // the optimizer's state or the parameters non-finite (max_gradient()).
  const float limit = max_gradient();
  const std::size_t bad = detail::first_beyond(grad, n, limit, num_threads);
  if (bad < n) {
    if (!std::isfinite(grad[bad])) {
      throw std::invalid_argument("grad[" + std::to_string(bad) + "] is " +
                                  detail::format_number(grad[bad]));
    }
    throw std::invalid_argument(
        "grad[" + std::to_string(bad) + "] is " + detail::format_number(grad[bad]) + ": beyond " +
        detail::format_number(limit) + ", " + name() +
        "'s step would overflow float32 and leave its state or the parameters non-finite; "
        "nothing was changed (shape the rewards, e.g. fitness_shaping CENTERED_RANK, or scale "
        "them down)");
  }
  ++steps_;
  do_step(params, grad, num_threads);
}

std::vector<float>& Optimizer::state(const std::string& name) {
  for (std::size_t k = 0; k < names_.size(); ++k) {
    if (names_[k] == name) return states_[k];
  }
  std::string valid;
  for (const std::string& known : names_) valid += (valid.empty() ? "'" : ", '") + known + "'";
  throw std::invalid_argument("unknown state '" + name + "' for optimizer " + this->name() +
                              (valid.empty() ? std::string("; it has no state vectors")
                                             : "; valid names: " + valid));
}

void Optimizer::set_learning_rate(float lr) {
  detail::require_positive_finite(lr, "learning rate");
  lr_ = lr;
}

void Optimizer::set_steps(std::int64_t steps) {
  if (steps < 0) throw std::invalid_argument("steps must be >= 0, got " + std::to_string(steps));
  steps_ = steps;
}

SGD::SGD(float lr, std::size_t num_params) : Optimizer(lr, num_params) {}

// |lr * g| <= FLT_MAX / 2: the step cannot overflow a finite parameter of
// magnitude up to FLT_MAX / 2.
float SGD::max_gradient() const noexcept {
  return std::numeric_limits<float>::max() / 2 / std::max(1.0f, lr_);
}

void SGD::do_step(float* params, const float* grad, int num_threads) {
  const float lr = lr_;
  detail::parallel_ranges(num_params_, num_threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) params[i] -= lr * grad[i];
  });
}

Momentum::Momentum(float lr, float momentum, std::size_t num_params)
    : Optimizer(lr, num_params), momentum_(momentum) {
  detail::require_unit_interval(momentum, "momentum (optimizer.momentum.momentum)");
  names_ = state_names();
  states_.assign(names_.size(), std::vector<float>(num_params_, 0.0f));
}

// The velocity stays within |g|max / (1 - momentum): keep it and lr times it
// below FLT_MAX / 2.
float Momentum::max_gradient() const noexcept {
  return std::numeric_limits<float>::max() / 2 * (1.0f - momentum_) / std::max(1.0f, lr_);
}

void Momentum::do_step(float* params, const float* grad, int num_threads) {
  const float lr = lr_;
  const float mu = momentum_;
  float* velocity = states_[0].data();
  detail::parallel_ranges(num_params_, num_threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      velocity[i] = mu * velocity[i] + grad[i];
      params[i] -= lr * velocity[i];
    }
  });
}

Adam::Adam(float lr, float beta1, float beta2, float epsilon, std::size_t num_params)
    : Optimizer(lr, num_params), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {
  detail::require_unit_interval(beta1, "beta1 (optimizer.adam.beta1)");
  detail::require_unit_interval(beta2, "beta2 (optimizer.adam.beta2)");
  detail::require_positive_finite(epsilon, "epsilon (optimizer.adam.epsilon)");
  names_ = state_names();
  states_.assign(names_.size(), std::vector<float>(num_params_, 0.0f));
}

// v = b2 v + (1 - b2) g^2 holds g^2: |g| <= sqrt(FLT_MAX) / 2 keeps it
// finite (the step itself is bounded by lr / sqrt(1 - b2) per element).
float Adam::max_gradient() const noexcept {
  return std::sqrt(std::numeric_limits<float>::max()) / 2;
}

void Adam::do_step(float* params, const float* grad, int num_threads) {
  // Kingma & Ba's efficient form of Algorithm 1 (end of their Sec. 2): with
  // c1 = 1 - b1^t and c2 = 1 - b2^t,
  //   lr * (m / c1) / (sqrt(v / c2) + eps) = step_size * m / (sqrt(v) + eps_hat),
  //   step_size = lr * sqrt(c2) / c1,  eps_hat = eps * sqrt(c2),
  // so the per-element work is float only. t = steps_ (already incremented by
  // step()) is shared by every parameter; the constants are computed in double.
  const double t = static_cast<double>(steps_);
  const double correction1 = 1.0 - std::pow(static_cast<double>(beta1_), t);
  const double sqrt_correction2 = std::sqrt(1.0 - std::pow(static_cast<double>(beta2_), t));
  const auto step_size =
      static_cast<float>(static_cast<double>(lr_) * sqrt_correction2 / correction1);
  const auto eps_hat = static_cast<float>(static_cast<double>(epsilon_) * sqrt_correction2);
  const float b1 = beta1_;
  const float b2 = beta2_;
  const float one_minus_b1 = 1.0f - beta1_;
  const float one_minus_b2 = 1.0f - beta2_;
  float* m = states_[0].data();
  float* v = states_[1].data();
  detail::parallel_ranges(num_params_, num_threads, [&](std::size_t begin, std::size_t end) {
    detail::adam_block(params + begin, grad + begin, m + begin, v + begin, end - begin, b1,
                       one_minus_b1, b2, one_minus_b2, step_size, eps_hat);
  });
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options,
                                          std::size_t num_params) {
  switch (options.type) {
    case OptimizerOptions::Type::kSGD:
      return std::make_unique<SGD>(options.learning_rate, num_params);
    case OptimizerOptions::Type::kMomentum:
      return std::make_unique<Momentum>(options.learning_rate, options.momentum, num_params);
    case OptimizerOptions::Type::kAdam:
      return std::make_unique<Adam>(options.learning_rate, options.beta1, options.beta2,
                                    options.epsilon, num_params);
  }
  throw std::invalid_argument("optimizer.type: unknown value " +
                              std::to_string(static_cast<int>(options.type)) +
                              ", expected one of SGD, MOMENTUM, ADAM");
}

}  // namespace evokit
