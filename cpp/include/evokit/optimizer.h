// First-order optimizers. step() minimises: params -= lr * f(grad, state).
//
// SGD:       theta <- theta - lr * g
// Momentum:  v <- mu * v + g;  theta <- theta - lr * v   (classical momentum)
// Adam:      t <- t + 1 (once per step, for all parameters together)
//            m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2
//            m_hat = m / (1 - b1^t);   v_hat = v / (1 - b2^t)
//            theta <- theta - lr * m_hat / (sqrt(v_hat) + eps)
//            (computed in the equivalent form of Kingma & Ba, Sec. 2:
//            theta <- theta - lr_t * m / (sqrt(v) + eps_t) with
//            lr_t = lr sqrt(1 - b2^t) / (1 - b1^t), eps_t = eps sqrt(1 - b2^t);
//            one fused, vectorised float pass)
// Elementwise and threaded with OpenMP; results do not depend on threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace evokit {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Throws std::invalid_argument if n != num_params() or grad holds a
  // non-finite value, or one beyond max_gradient() (whose step would make the
  // state or the parameters non-finite), naming its index; params and state
  // are left unchanged then.
  void step(float* params, const float* grad, std::size_t n, int num_threads = 1);
  // The largest |grad[i]| a step takes.
  virtual float max_gradient() const noexcept = 0;

  std::size_t num_params() const noexcept { return num_params_; }
  float learning_rate() const noexcept { return lr_; }
  // A new learning rate for the next steps (> 0 and finite), e.g. a decay.
  void set_learning_rate(float lr);
  std::int64_t steps() const noexcept { return steps_; }
  virtual std::string name() const = 0;

  // Named state vectors (e.g. "m", "v" for Adam, "velocity" for Momentum),
  // each of num_params() floats, and the step counter, for save/load.
  virtual std::vector<std::string> state_names() const = 0;
  std::vector<float>& state(const std::string& name);  // throws std::invalid_argument
  void set_steps(std::int64_t steps);                  // throws if < 0

 protected:
  Optimizer(float lr, std::size_t num_params);  // throws if lr <= 0 / not finite, n == 0
  virtual void do_step(float* params, const float* grad, int num_threads) = 0;
  std::vector<std::string> names_;
  std::vector<std::vector<float>> states_;
  std::size_t num_params_;
  float lr_;
  std::int64_t steps_ = 0;
};

class SGD final : public Optimizer {
 public:
  SGD(float lr, std::size_t num_params);
  std::string name() const override { return "SGD"; }
  std::vector<std::string> state_names() const override { return {}; }
  float max_gradient() const noexcept override;

 private:
  void do_step(float* params, const float* grad, int num_threads) override;
};

class Momentum final : public Optimizer {
 public:
  Momentum(float lr, float momentum, std::size_t num_params);  // momentum in [0, 1)
  std::string name() const override { return "MOMENTUM"; }
  float max_gradient() const noexcept override;
  std::vector<std::string> state_names() const override { return {"velocity"}; }
  float momentum() const noexcept { return momentum_; }

 private:
  void do_step(float* params, const float* grad, int num_threads) override;
  float momentum_;
};

class Adam final : public Optimizer {
 public:
  // beta1, beta2 in [0, 1); epsilon > 0.
  Adam(float lr, float beta1, float beta2, float epsilon, std::size_t num_params);
  std::string name() const override { return "ADAM"; }
  float max_gradient() const noexcept override;
  std::vector<std::string> state_names() const override { return {"m", "v"}; }
  float beta1() const noexcept { return beta1_; }
  float beta2() const noexcept { return beta2_; }
  float epsilon() const noexcept { return epsilon_; }

 private:
  void do_step(float* params, const float* grad, int num_threads) override;
  float beta1_, beta2_, epsilon_;
};

struct OptimizerOptions {
  enum class Type { kSGD, kMomentum, kAdam };
  Type type = Type::kSGD;
  float learning_rate = 0.01f;
  float momentum = 0.9f;  // kMomentum
  float beta1 = 0.9f;     // kAdam
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
};

// Makes the optimizer the options describe; throws std::invalid_argument.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options, std::size_t num_params);

}  // namespace evokit
