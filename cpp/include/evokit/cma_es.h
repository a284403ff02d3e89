// CMA-ES: the covariance matrix adaptation evolution strategy, full
// (CMAES) and separable / diagonal (SepCMAES), in double precision.
//
//   N. Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772
//   (2016). Equation numbers below, `Eq. (n)`, are the tutorial's.
//   R. Ros, N. Hansen, "A Simple Modification in CMA-ES Achieving Linear Time
//   and Space Complexity", PPSN X (2008): the separable variant.
//   A. Auger, N. Hansen, "A Restart CMA Evolution Strategy With Increasing
//   Population Size", CEC 2005 (IPOP); N. Hansen, "Benchmarking a
//   BI-Population CMA-ES on the BBOB-2009 Function Testbed", GECCO 2009
//   (BIPOP).
//
// Layout (as evosax): immutable options and the parameters derived from them
// (CMAParams, recomputed only when a restart changes the population size)
// are kept apart from the mutable, serialisable distribution state
// (CMAState). The base class CMABase does the bookkeeping once: the ask/tell
// contract, evaluation counting, the best solution, termination and
// restarts; CMAES and SepCMAES supply three hooks (sample, whiten, update).
//
// Sampling. Member k of generation g (counted from 0 within the current run)
// of restart r gets the key
//   key = hash_draw(seed, g, k, r) >> 2                  (in [0, 2^62))
// and z = the standard normals of stream `key`:
//   z[j] = gaussian_at(seed, key, j) = fill_gaussian(seed, key, 0, ., n)[j],
// rounded to float by the noise core and widened to double. That is exactly
// the noise eps(key) of an uncached GaussianSampler with the same seed. Then
//   y = B D z   (full; sep: y = sqrt(diag C) * z),   x = m + sigma y,
// and the solution handed out is T(x), T the bound transformation below.
// A logged key is enough to rebuild its sample: regenerate(key) == the
// solution ask() returned, given the state of that generation.
//
// Bounds (optional, per coordinate, +-inf allowed). The distribution, and so
// the mean, lives in the unbounded space; solutions are mapped into the box
// by mirror reflection, T(x) = x inside [l, u], else reflected at the bounds
// periodically (period 2 (u - l)); with one finite bound, a single
// reflection at it. T is the identity inside the box, continuous and
// piecewise linear. CMA updates use the unbounded x.
//
// Threads. Normals are drawn in parallel over members; y = B D z in parallel
// over blocks of coordinates (all members at once, so B is read once per
// generation); the rank-mu update in parallel over rows of C; the
// eigendecomposition as symmetric_eigen.h describes. Every number
// is computed by one thread with a fixed order of operations, so results are
// bit-identical for any num_threads. Small problems run on one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "evokit/symmetric_eigen.h"

namespace evokit {

enum class RestartStrategy { kIPOP, kBIPOP };

// User options. Validated by the constructors (std::invalid_argument naming
// the option and the value).
struct CMAESOptions {
  // lambda; nullopt: the tutorial's default 4 + floor(3 ln n), Eq. (48). >= 2.
  std::optional<std::size_t> population_size;
  std::uint64_t seed = 0;
  // Empty (unbounded) or n entries each; lower[i] < upper[i]; +-inf allowed.
  std::vector<double> lower;
  std::vector<double> upper;

  // Termination (names as pycma's). Every criterion is checked after each
  // tell(); those that fire are reported by stop() as name -> threshold.
  std::optional<std::int64_t> max_evaluations;  // "maxfevals": total over restarts, >= 1
  double ftarget = -std::numeric_limits<double>::infinity();  // "ftarget": best f <= ftarget
  double tolfun = 1e-11;      // "tolfun": f-range of the generation and of the best-f history
  double tolfunhist = 1e-12;  // "tolfunhist": range of the best-f history
  double tolx = 1e-11;        // "tolx": sigma * max(|p_c_i|, sqrt(C_ii)) below it for all i
  // "tolstagnation": iterations before the stagnation test is active;
  // nullopt: 100 + 100 n^1.5 / lambda (pycma's default).
  std::optional<std::int64_t> tolstagnation;
  double conditioncov = 1e14;  // "conditioncov": max / min eigenvalue of C above it
  double tolupsigma = 1e20;    // "tolupsigma": sigma / sigma0 > tolupsigma * sqrt(max eig C)
  bool noeffectaxis = true;    // "noeffectaxis": m == m + 0.1 sigma D_i b_i, i = g mod n
  bool noeffectcoord = true;   // "noeffectcoord": m_i == m_i + 0.2 sigma sqrt(C_ii) for an i

  // Restarts after a stop by any criterion but maxfevals and ftarget.
  int restarts = 0;  // >= 0: the number of restarts allowed
  RestartStrategy restart_strategy = RestartStrategy::kIPOP;

  int num_threads = 1;  // >= 1
};

// The strategy parameters: the tutorial's defaults (Table 1, Eqs. (48)-(58))
// for dimension n and population size lambda; for the separable variant the
// covariance learning rates c1 and cmu are multiplied by (n + 2) / 3 (Ros &
// Hansen 2008), capped so that c1 + cmu <= 1.
struct CMAParams {
  std::size_t num_params = 0;       // n
  std::size_t population_size = 0;  // lambda
  std::size_t mu = 0;               // floor(lambda / 2)
  bool separable = false;
  std::vector<double> weights;  // lambda entries, Eq. (53): sum of the first mu = 1
  double mueff = 0;             // (sum w'_i)^2 / sum w'_i^2 over the positive weights
  double mueff_minus = 0;       // the same over the negative weights
  double cm = 1;                // Eq. (54)
  double c_sigma = 0;           // Eq. (55)
  double d_sigma = 0;           // Eq. (55)
  double cc = 0;                // Eq. (56)
  double c1 = 0;                // Eq. (57)
  double cmu = 0;               // Eq. (58)
  double chi_n = 0;             // E||N(0, I)|| ~ sqrt(n) (1 - 1/(4n) + 1/(21 n^2))
  // Generations between eigendecompositions (full only), the tutorial's lazy
  // update: C is decomposed once more than lambda / (c1 + cmu) / n / 10
  // evaluations, i.e. 1 / (10 n (c1 + cmu)) generations, have passed since the
  // last decomposition (as in Hansen's reference code and pycma), so
  // eigen_interval = floor(1 / (10 n (c1 + cmu))) + 1.
  std::int64_t eigen_interval = 1;
};

// Throws std::invalid_argument if n == 0 or lambda < 2.
CMAParams cma_default_params(std::size_t n, std::size_t lambda, bool separable);

// The default population size 4 + floor(3 ln n), Eq. (48).
std::size_t cma_default_population_size(std::size_t n);

// The distribution: everything tell() changes. Serialisable; set_state()
// takes it back.
struct CMAState {
  std::vector<double> mean;     // m, n entries, in the unbounded space
  double sigma = 1;             // step size
  std::vector<double> p_sigma;  // conjugate evolution path, n entries
  std::vector<double> p_c;      // evolution path, n entries
  // C: full, n * n row-major (symmetric); separable, its diagonal (n).
  std::vector<double> cov;
  // The decomposition C = B diag(eigenvalues) B^T used for sampling, which
  // lags C by up to eigen_interval generations (full only; separable: both
  // empty, D = sqrt(cov) at every generation). eigenvectors is B^T,
  // n * n row-major: row j is the unit eigenvector of eigenvalue j; the
  // eigenvalues ascend.
  std::vector<double> eigenvalues;
  std::vector<double> eigenvectors;
  std::int64_t generation = 0;        // g: generations told in the current run
  std::int64_t eigen_generation = 0;  // the g of the last decomposition
};

// The shared bookkeeping of CMAES and SepCMAES.
class CMABase {
 public:
  virtual ~CMABase() = default;

  // Samples the population of the current generation: population_size()
  // solutions of num_params() each, row-major, in the bounded space. A pure
  // function of the state and the keys, so asking twice before a tell gives
  // the same population.
  const std::vector<double>& ask();
  // The keys of the last ask(), one per member.
  const std::vector<std::int64_t>& keys() const noexcept { return keys_; }
  bool has_pending_ask() const noexcept { return pending_; }

  // Updates the distribution with the f-values (minimised) of the last
  // ask(), in its order. Ranks are stable: ties keep the order of the
  // members. values may hold +-inf, never NaN. Throws std::logic_error when
  // there is no pending ask (tell without ask, or twice), and
  // std::invalid_argument for a wrong count or a NaN (naming the index);
  // the state is unchanged then.
  void tell(const double* values, std::size_t count);
  // The same for members given by their keys (e.g. read from a log): the
  // samples are regenerated from the keys with the current state. Needs no
  // pending ask; count must equal population_size().
  void tell_keys(const std::int64_t* keys, const double* values, std::size_t count);

  // The key of member k of the current generation.
  std::int64_t sample_key(std::size_t member) const noexcept;
  // The solution (bounded space) of `key` under the current state: for a key
  // of this generation, the row of ask() it came from.
  std::vector<double> regenerate(std::int64_t key) const;

  // name -> threshold of the criteria that ended the optimisation (empty
  // while it runs; a stop followed by a restart is in restart_history()).
  const std::map<std::string, double>& stop() const noexcept { return stop_; }
  bool stopped() const noexcept { return !stop_.empty(); }
  const std::vector<std::map<std::string, double>>& restart_history() const noexcept {
    return restart_history_;
  }

  // Results.
  const std::vector<double>& best_solution() const noexcept { return best_x_; }  // bounded space
  double best_value() const noexcept { return best_f_; }  // +inf before the first tell
  std::int64_t evaluations() const noexcept { return evaluations_; }  // total over restarts
  std::int64_t iterations() const noexcept { return iterations_; }    // generations, total
  int restarts_done() const noexcept { return restart_; }
  std::vector<double> mean_solution() const;  // T(m)
  std::vector<double> stds() const;           // sigma * sqrt(C_ii), unbounded space

  std::size_t num_params() const noexcept { return params_.num_params; }
  std::size_t population_size() const noexcept { return params_.population_size; }
  const CMAParams& params() const noexcept { return params_; }
  const CMAESOptions& options() const noexcept { return options_; }
  const std::vector<double>& x0() const noexcept { return x0_; }
  double sigma0() const noexcept { return sigma0_; }
  // sigma0 of the current run (BIPOP's small regime scales it).
  double run_sigma0() const noexcept { return run_sigma0_; }

  const CMAState& state() const noexcept { return state_; }
  // Replaces the distribution (checkpoint restore, tests). Validates sizes,
  // sigma > 0, finiteness and positive definiteness (std::invalid_argument);
  // an empty eigenvalues/eigenvectors pair is recomputed from cov, with
  // eigen_generation = generation. Drops a pending ask.
  void set_state(const CMAState& state);

  // The bound transformation T (identity when unbounded), in place.
  void to_bounds(double* x) const noexcept;

 protected:
  CMABase(std::vector<double> x0, double sigma0, CMAESOptions options, bool separable);
  // Called by the derived constructors once the object is complete.
  void start();

  // Hooks.
  // C = I, its decomposition the identity.
  virtual void reset_covariance() = 0;
  // y[k] = B D z[k] (sep: sqrt(diag C) z[k]) for `count` members, row-major.
  virtual void sample_y(const double* z, double* y, std::size_t count) const = 0;
  // out = C^{-1/2} y_w given z_w = sum w_i z_{i:lambda}: B z_w (sep: z_w).
  virtual void whiten(const double* z_w, double* out) const = 0;
  // Eq. (47): C <- a C + c1 p_c p_c^T + cmu sum_k w°_k y_k y_k^T over the
  // members with w°_k != 0 (rows of `y`, in rank order), then the lazy
  // decomposition.
  virtual void update_covariance(double a, const std::vector<const double*>& y,
                                 const std::vector<double>& coef) = 0;
  // Validates and decomposes a state given to set_state (sizes are checked).
  virtual void check_and_decompose(CMAState& state) const = 0;
  // Termination criteria that need the decomposition: conditioncov,
  // noeffectaxis, tolupsigma. Adds name -> threshold to `stop`.
  virtual void check_axes(std::map<std::string, double>& stop) const = 0;
  // sqrt(C_ii).
  virtual double coord_std(std::size_t i) const noexcept = 0;

  int threads_for(double work) const noexcept;

  CMAESOptions options_;
  CMAParams params_;
  CMAState state_;

 private:
  void sample_z(const std::int64_t* keys, double* z, std::size_t count) const;
  void sample_population();
  void materialize_population();
  void update(const double* z, const double* y, const double* values);
  void check_termination();
  void restart();

  std::vector<double> x0_;
  double sigma0_;
  double run_sigma0_;
  bool separable_;
  bool bounded_ = false;

  // The last ask: keys, z, y (unbounded, y = (x - m) / sigma), solutions.
  std::vector<std::int64_t> keys_;
  std::vector<double> z_;
  std::vector<double> y_;
  std::vector<double> solutions_;
  bool pending_ = false;
  bool sampled_ = false;  // z_/y_/solutions_ hold the current generation

  std::int64_t evaluations_ = 0;
  std::int64_t iterations_ = 0;
  std::vector<double> best_x_;
  double best_f_;

  // Per-run histories (oldest first), for tolfun / tolfunhist / tolstagnation.
  std::deque<double> best_history_;      // best f of each of the last generations
  std::deque<double> stag_best_;         // best f, up to 20000 generations
  std::deque<double> stag_median_;       // median f, up to 20000 generations
  std::vector<double> last_values_;      // the f-values of the last generation

  std::map<std::string, double> stop_;
  std::vector<std::map<std::string, double>> restart_history_;
  int restart_ = 0;
  // BIPOP bookkeeping.
  int large_runs_ = 0;  // large-regime restarts done
  std::int64_t budget_large_ = 0;
  std::int64_t budget_small_ = 0;
  bool run_is_small_ = false;
  std::int64_t run_start_evaluations_ = 0;
};

// Full-covariance CMA-ES: O(n^2) time per sample and memory.
class CMAES final : public CMABase {
 public:
  CMAES(std::vector<double> x0, double sigma0, CMAESOptions options = {});

 private:
  void reset_covariance() override;
  void sample_y(const double* z, double* y, std::size_t count) const override;
  void whiten(const double* z_w, double* out) const override;
  void update_covariance(double a, const std::vector<const double*>& y,
                         const std::vector<double>& coef) override;
  void check_and_decompose(CMAState& state) const override;
  void check_axes(std::map<std::string, double>& stop) const override;
  double coord_std(std::size_t i) const noexcept override;
  void decompose(CMAState& state) const;
};

// Separable CMA-ES: C is diagonal; O(n) time per sample and memory.
class SepCMAES final : public CMABase {
 public:
  SepCMAES(std::vector<double> x0, double sigma0, CMAESOptions options = {});

 private:
  void reset_covariance() override;
  void sample_y(const double* z, double* y, std::size_t count) const override;
  void whiten(const double* z_w, double* out) const override;
  void update_covariance(double a, const std::vector<const double*>& y,
                         const std::vector<double>& coef) override;
  void check_and_decompose(CMAState& state) const override;
  void check_axes(std::map<std::string, double>& stop) const override;
  double coord_std(std::size_t i) const noexcept override;
};

}  // namespace evokit
