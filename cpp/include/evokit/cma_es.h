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
// by pycma's default BoundTransform, the linear-quadratic transformation T
// (detail::into_bounds, search/cma/cma_internal.h): the identity on
// [l + a_l, u - a_u] (margins a = min((u - l) / 2, max(|bound|, 1) / 20)),
// a parabola touching the bound with slope 0 at l - a_l and u + a_u,
// mirrored and periodic beyond. T is C^1, so an optimum on a bound is
// reached over a flat stretch rather than by shrinking sigma to the
// precision asked (a mirror reflection, piecewise linear, takes about twice
// pycma's evaluations on COCO's linear slope). CMA updates use the
// unbounded x.
//
// Told solutions other than the asked ones (pycma's semantics). tell_solutions
// takes the solutions that were evaluated: a row equal (bit for bit) to its
// row of ask() is updated with the sampled z and y, exactly as tell(); a row
// that differs (clipped into bounds, rounded, replaced) is taken as a point of
// the unbounded space, y = (x - m) / sigma (an integer coordinate also / A_i),
// z = D^-1 B^T y, and its step is then clipped in Mahalanobis norm:
//   ||z|| <= sqrt(n) + 2 n / (n + 2),  z, y scaled by that / ||z|| if larger,
// the rule of pycma's CMAEvolutionStrategy.repair_genotype (pycma 4.x,
// evolution_strategy.py, applied in tell to the solutions it did not hand
// out). inject() queues solutions that replace the first members of the next
// ask() (at most population_size per ask; the rest wait for the following
// ones), as pycma's inject: unless forced, y = (x - m) / sigma is kept when
// ||z|| <= sqrt(n) and otherwise rescaled to the length ||z_k|| of the
// member's own normals (pycma's CMA_injections_threshold_keep_len = 1 and
// _random_rescaling_factor_to_mahalanobis_size). In tell, injected members
// get the clipping above, and a negative recombination weight of theirs is
// set to 0 (pycma's CMA_active_injected = 0: no active update from them).
//
// Integer variables (CMA-ES with margin): R. Hamano, S. Saito, M. Nomura,
// S. Shirakawa, "CMA-ES with Margin: Lower-Bounding Marginal Probability for
// Mixed-Integer Black-Box Optimization", GECCO 2022, arXiv:2205.13482. The
// distribution N(m, sigma^2 C) stays continuous; a diagonal A (1 for the
// continuous coordinates) scales the integer ones before the encoding: the
// solution handed out has v_i = m_i + A_i sigma y_i, encoded to the integer
// whose cell (k - 1/2, k + 1/2] holds v_i, clamped to the integers within the
// bounds (no bound transformation on integer coordinates). The CMA update uses
// the continuous y; after it, the margin correction (cma_margin.cc) keeps the
// marginal probability of leaving m's integer at least alpha (default
// 1 / (n lambda)).
//
// Threads. Normals are drawn in parallel over members; y = B D z in parallel
// over blocks of coordinates (all members at once, so B is read once per
// generation), then, for n > 32, the reflectors of Q in parallel over groups
// of members (CMAState); the rank-mu update in parallel over rows of C (its
// lower triangle: state() mirrors it); the eigendecomposition as
// symmetric_eigen.h describes. Every number
// is computed by one thread with a fixed order of operations, so results are
// bit-identical for any num_threads. Small problems run on one thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evokit/ask_tell.h"
#include "evokit/solver.h"  // SolverState
#include "evokit/symmetric_eigen.h"
#include "evokit/termination.h"

namespace evokit {

enum class RestartStrategy { kIPOP, kBIPOP };

// How sigma adapts. kCSA: cumulative step-size adaptation, the tutorial's
// Eq. (44). kTPA: two-point step-size adaptation (Hansen 2008, "CMA-ES with
// Two-Point Step-Size Adaptation", arXiv:0805.0231, in pycma's form,
// sigma_adaptation.py CMAAdaptSigmaTPA): after the first generation two
// members of each ask() are the mirrored pair m +- sigma y along the last
// mean shift m - m_old (y rescaled to the Mahalanobis length of the row's
// own normal vector), and with z = (#{f < f_-} - #{f < f_+}) / (lambda - 1)
// (f_+ the member along the shift, f_- against it)
//   s <- (1 - c) s + c sign(z) |z|^(1/2),  sigma <- sigma exp(s / d),
// c = 0.3, d = 0.7 + 2 ln n + 2 ln max(1, lambda - n). kAuto: TPA for
// n >= kTPADimension, CSA below (pycma's AdaptSigma=True). p_sigma is
// updated either way (h_sigma uses it). The pair is not regenerated by its
// keys, so tell_keys() refuses a TPA strategy.
enum class StepSizeAdaptation { kAuto, kCSA, kTPA };
inline constexpr std::size_t kTPADimension = 300;  // pycma's TPA_dimension

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
  double tolfun = kDefaultTolfun;          // "tolfun": f-range of the generation and of the best-f history
  double tolfunhist = kDefaultTolfunhist;  // "tolfunhist": range of the best-f history
  double tolx = kDefaultTolx;              // "tolx": sigma * max(|p_c_i|, sqrt(C_ii)) below it for all i
  // "tolstagnation": iterations before the stagnation test is active;
  // nullopt: 100 + 100 n^1.5 / lambda (pycma's default).
  std::optional<std::int64_t> tolstagnation;
  double conditioncov = kDefaultConditioncov;  // "conditioncov": max / min eigenvalue of C above it
  double tolupsigma = kDefaultTolupsigma;    // "tolupsigma": sigma / sigma0 > tolupsigma * sqrt(max eig C)
  bool noeffectaxis = true;    // "noeffectaxis": m == m + 0.1 sigma D_i b_i, i = g mod n
  bool noeffectcoord = true;   // "noeffectcoord": m_i == m_i + 0.2 sigma sqrt(C_ii) for an i

  // Restarts after a stop by any criterion but maxfevals and ftarget.
  // IPOP: the number of restarts allowed. BIPOP: the number of
  // large-population (IPOP regime) restarts, as pycma's fmin(restarts=R,
  // bipop=True): the small-population runs in between are not counted, and
  // the optimisation ends when the R-th large run stops.
  int restarts = 0;  // >= 0
  RestartStrategy restart_strategy = RestartStrategy::kIPOP;

  // Indices of the integer coordinates (CMA-ES with margin); distinct, < n.
  // A bounded integer coordinate needs an integer within its bounds.
  std::vector<std::size_t> integer_variables;
  // The margin alpha, in [0, 0.5); nullopt: 1 / (n lambda) of the current
  // run (the paper's default, kDefaultMarginRule); 0: rounding only, no
  // margin correction.
  std::optional<double> margin;

  StepSizeAdaptation step_size_adaptation = StepSizeAdaptation::kAuto;

  int num_threads = 1;  // >= 1
};

// The strategy parameters: the tutorial's defaults (Table 1, Eqs. (48)-(58))
// for dimension n and population size lambda, with pycma's two changes for
// full CMA-ES (rank-mu offset 1/4 in cmu, c_sigma = min(1/2, (mueff + 2) /
// (n + mueff + 3)); cma_params.cc); the separable variant takes pycma's
// separable rates c1_sep, cmu_sep and cc_sep (cma_params.cc), with c1 + cmu <= 1.
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
  // TPA (StepSizeAdaptation::kTPA): the smoothing c of s and the damping d.
  double tpa_c = 0.3;
  double tpa_damp = 0;  // 0.7 + 2 ln n + 2 ln max(1, lambda - n)
};

// Throws std::invalid_argument if n == 0 or lambda < 2.
CMAParams cma_default_params(std::size_t n, std::size_t lambda, bool separable);

// The default population size 4 + floor(3 ln n), Eq. (48), of every family
// whose population_size is 0 (the distribution families round it up to even
// where their members are mirrored pairs); kDefaultPopulationRule is the
// formula as signatures and documentation show it.
std::size_t cma_default_population_size(std::size_t n);
inline constexpr const char* kDefaultPopulationRule = "4 + floor(3 ln n)";
// CMAESOptions::margin's default, as signatures and documentation show it.
inline constexpr const char* kDefaultMarginRule = "1 / (n population_size)";

// Cumulative step-size adaptation, the step-size control of CMA-ES that
// MA-ES (maes.cc) shares: Eq. (43), p_sigma <- (1 - c_sigma) p_sigma +
// sqrt(c_sigma (2 - c_sigma) mueff) white (p.num_params entries; white is
// C^-1/2 <y>_w for CMA-ES, <z>_w for MA-ES), returning ||p_sigma||; and
// Eq. (44), the new step size sigma exp(c_sigma / d_sigma (||p_sigma|| /
// chi_n - 1)).
double cma_update_sigma_path(const CMAParams& p, double* p_sigma, const double* white);
double cma_csa_step_size(const CMAParams& p, double sigma, double ps_norm);

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
  // lags C by up to eigen_interval generations (full only; separable: all
  // empty, D = sqrt(cov) at every generation). B^T = eigenvectors Q^T:
  // eigenvectors is n * n row-major, Q the orthogonal matrix of the
  // Householder reflectors `householder` (symmetric_eigen.h;
  // empty: Q = I, eigenvectors = B^T). Row j of B^T is the unit
  // eigenvector of eigenvalue j; the eigenvalues ascend. For n > 32 a
  // decomposition keeps Q factored (symmetric_eigen_factored): sampling then
  // applies the reflectors to lambda rows per generation instead of to all
  // n rows per decomposition. CMAES::eigenbasis() gives B^T explicitly.
  std::vector<double> eigenvalues;
  std::vector<double> eigenvectors;
  Householder householder;  // n (n - 1) / 2 and n - 1 entries, or empty
  std::int64_t generation = 0;        // g: generations told in the current run
  std::int64_t eigen_generation = 0;  // the g of the last decomposition
  // The diagonal of the margin's A (Hamano et al. 2022): n entries, 1 for the
  // continuous coordinates. set_state: empty means all ones.
  std::vector<double> affine;
  // TPA: its state variable s, and the last mean shift m - m_old (n
  // entries; empty before the first tell: no mirrored pair then).
  double tpa_s = 0;
  std::vector<double> mean_shift;
  // TPA: the mean shift's z = D^-1 B^T mean_shift in the current
  // decomposition, as tell() knows it without a product by B: c_m sigma <z>_w
  // (Eq. (41)'s z counterpart), kept when that tell did not decompose C and
  // no coordinate is an integer one (n entries). Empty: the next ask()
  // computes it from mean_shift (after a decomposition, and in states saved
  // before this field existed).
  std::vector<double> mean_shift_z;
};

// The shared bookkeeping of CMAES and SepCMAES. As an AskTellStrategy
// (ask_tell.h; cma/cma_solver.cc) it is the CMA_SAMPLING solver's strategy:
// the members are the population_size samples {sample_key(k)}, rebuilt by
// regenerate (or taken from a pending ask(), the same bits), tell_members
// tells them by their keys (std::logic_error once stopped), the centre is
// mean_solution(), the state entries are "cma.*" (strategy_solver.h) and a
// replica gets the member rows.
class CMABase : public AskTellStrategy {
 public:

  // Samples the population of the current generation: population_size()
  // solutions of num_params() each, row-major, in the bounded space. A pure
  // function of the state and the keys, so asking twice before a tell gives
  // the same population.
  const std::vector<double>& ask();
  // The keys of the last ask(), one per member.
  const std::vector<std::int64_t>& keys() const noexcept { return keys_; }
  bool has_pending_ask() const noexcept { return pending_; }
  // The current generation's solutions while they are materialised (after
  // ask(), until the next tell), row-major in keys() order; else nullptr.
  const std::vector<double>* sampled_population() const noexcept { return sampled_ ? &solutions_ : nullptr; }

  // Updates the distribution with the f-values (minimised) of the last
  // ask(), in its order. Ranks are stable: ties keep the order of the
  // members. values may hold +-inf, never NaN. Throws std::logic_error when
  // there is no pending ask (tell without ask, or twice), and
  // std::invalid_argument for a wrong count or a NaN (naming the index);
  // the state is unchanged then.
  void tell(const double* values, std::size_t count);
  // The same with the solutions that were evaluated (row-major, count rows of
  // num_params()): rows that differ from ask()'s are used as described in the
  // header comment (pycma's repaired solutions). Throws as tell(), and
  // std::invalid_argument for a non-finite entry of x (naming it).
  void tell_solutions(const double* x, const double* values, std::size_t count);
  // Queues solutions (bounded space, row-major, count rows) for the next
  // ask()s; force: use them as they are, without pycma's rescaling of long
  // steps. Throws std::invalid_argument for a non-finite entry.
  void inject(const double* x, std::size_t count, bool force = false);
  // Injected solutions still waiting for an ask().
  std::size_t pending_injections() const noexcept { return injections_.size(); }
  // The first num_injected() rows of the last ask() were injected: their
  // keys do not regenerate them (tell_keys cannot replay them).
  std::size_t num_injected() const noexcept { return num_injected_; }
  // Whether sigma adapts by TPA (StepSizeAdaptation, kAuto resolved).
  bool tpa() const noexcept { return tpa_; }
  // TPA's mirrored pair in the last ask(): rows tpa_row() (along the mean
  // shift) and tpa_row() + 1 (against it), right after the injected rows;
  // population_size() when the last ask() had none (the first generation,
  // CSA, a zero mean shift, or fewer than 2 rows left by injections). Their
  // keys do not regenerate them.
  std::size_t tpa_row() const noexcept { return tpa_row_; }
  // The same for members given by their keys (e.g. read from a log): the
  // samples are regenerated from the keys with the current state. Needs no
  // pending ask; count must equal population_size(). Throws
  // std::logic_error for a TPA strategy (its mirrored pair has no keys).
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
  int restarts_done() const noexcept { return restart_; }  // all restarts
  // BIPOP: restarts in the large (IPOP) regime and in the small one
  // (IPOP: all restarts are large).
  int large_restarts() const noexcept { return large_runs_; }
  int small_restarts() const noexcept { return restart_ - large_runs_; }
  // The margin alpha of the current run (0 without integer variables).
  double margin() const noexcept { return margin_; }
  std::vector<double> mean_solution() const;  // T(m)
  // sigma * sqrt(C_ii) (integer coordinates: sigma A_i sqrt(C_ii), the std of
  // v_i before the encoding), unbounded space.
  std::vector<double> stds() const;

  std::size_t num_params() const noexcept { return params_.num_params; }
  std::size_t population_size() const noexcept { return params_.population_size; }
  const CMAParams& params() const noexcept { return params_; }
  const CMAESOptions& options() const noexcept { return options_; }
  // Switches the stagnation test (tolstagnation) off for the rest of the
  // run, restarts included: for f-values that are not the objective's, e.g.
  // an augmented Lagrangian whose multipliers still move.
  void disable_stagnation() noexcept;
  // Switches every criterion that judges the told values' spread off for
  // the rest of the run, restarts included: tolfun, tolfunhist and
  // tolstagnation. For values whose spread is not the objective's precision:
  // near a constrained optimum an augmented Lagrangian's spread is set by
  // its penalty factors, and tolfun on it ends runs long before f converges.
  void disable_value_criteria() noexcept;
  // Counts n >= 0 evaluations made outside the generations (the centre's,
  // which a constrained run evaluates each generation) toward evaluations()
  // and maxfevals (checked at the next tell). std::invalid_argument if n < 0.
  void count_evaluations(std::int64_t n);
  const std::vector<double>& x0() const noexcept { return x0_; }
  double sigma0() const noexcept { return sigma0_; }
  // sigma0 of the current run (BIPOP's small regime scales it).
  double run_sigma0() const noexcept { return run_sigma0_; }

  double sigma() const noexcept { return state_.sigma; }  // the current step size
  const CMAState& state() const noexcept {
    complete_state();
    return state_;
  }
  // The whole strategy as named arrays, for saving an optimisation mid-run
  // (pickling): the distribution, the run and restart bookkeeping, the
  // f-value history, the best solution, queued injections and a pending
  // ask. import_state(export_state()) on a strategy constructed with the same
  // arguments continues bit for bit; it checks every entry's presence and
  // size before it changes anything (std::invalid_argument naming it).
  SolverState export_state() const;
  void import_state(const SolverState& state);

  // Replaces the distribution (checkpoint restore, tests). Validates sizes,
  // sigma > 0, finiteness and positive definiteness (std::invalid_argument);
  // an empty eigenvalues/eigenvectors pair is recomputed from cov, with
  // eigen_generation = generation. Drops a pending ask.
  void set_state(const CMAState& state);

  // The bound transformation T (identity when unbounded) and the integer
  // encoding (integer coordinates: the nearest integer within the bounds),
  // in place.
  void to_bounds(double* x) const noexcept;

  // AskTellStrategy.
  std::string kind() const override { return "CMA"; }
  std::size_t member_size() const override { return num_params(); }
  std::vector<std::vector<std::int64_t>> member_keys() const override;
  void prepare_members() override;
  void rebuild_member(const std::vector<std::int64_t>& key, float* out) const override;
  std::pair<std::size_t, std::string> member_requirement() const override;
  void tell_members(const std::vector<double>& values) override;
  void center_params(float* out) const override;
  void save_entries(SolverState& state) const override;
  void load_entries(const SolverState& state) override;
  // A worker gets the generation's member rows (lambda * n floats), not the
  // distribution (2 n^2 doubles for full CMA).
  ReplicaState replica_state() const override { return ReplicaState::kMemberRows; }

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
  // Called after set_state replaced the state (and its decomposition).
  virtual void state_replaced() {}
  // Brings state_ up to date before state() hands it out (CMAES mirrors C's
  // upper triangle, which tell() leaves stale).
  virtual void complete_state() const noexcept {}
  // Termination criteria that need the decomposition: conditioncov,
  // noeffectaxis, tolupsigma. Adds name -> threshold to `stop`.
  virtual void check_axes(std::map<std::string, double>& stop) const = 0;
  // sqrt(C_ii).
  virtual double coord_std(std::size_t i) const noexcept = 0;
  // z = D^-1 B^T y (sep: y / sqrt(diag C)) with the decomposition used for
  // sampling: the inverse of sample_y, for one member.
  virtual void to_z(const double* y, double* z) const = 0;

  int threads_for(double work) const noexcept;

  CMAESOptions options_;
  CMAParams params_;
  CMAState state_;

 private:
  void sample_z(const std::int64_t* keys, double* z, std::size_t count) const;
  void sample_population();
  void materialize_population(std::size_t first_row = 0);
  void place_injections();
  void place_tpa_pair();
  // Whether the next ask() places TPA's pair, after `injected` injected rows.
  bool tpa_pair_due(std::size_t injected) const noexcept;
  // x = the solution of step y (the bound transformation, A and the encoding).
  void solution_of(const double* y, double* x) const;
  // y = the step of solution x (bounded space), z = D^-1 B^T y, clipped.
  void step_of(const double* x, double* y, double* z) const;
  // Scales z and y so that ||z|| <= sqrt(n) + 2 n / (n + 2) (pycma's repair_genotype).
  void clip_step(double* y, double* z) const;
  void tell_rows(const double* x, const double* values);
  void update(const double* z, const double* y, const double* x, const double* values,
              const std::vector<bool>& no_active);
  void margin_correction();  // cma_margin.cc
  void check_termination();
  void restart();
  void set_margin();

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
  std::size_t num_injected_ = 0;  // the first rows of the last ask() that were injected
  bool tpa_ = false;
  std::size_t tpa_row_ = 0;  // see tpa_row()
  struct Injection {
    std::vector<double> x;
    bool force;
  };
  std::deque<Injection> injections_;
  std::vector<bool> is_integer_;        // n entries
  std::vector<double> int_lo_, int_hi_;  // the integer range of an integer coordinate (+-inf)
  double margin_ = 0;
  bool pending_ = false;
  bool sampled_ = false;  // z_/y_/solutions_ hold the current generation

  std::int64_t evaluations_ = 0;
  std::int64_t iterations_ = 0;
  std::vector<double> best_x_;
  double best_f_;

  // The run's f-value history, for maxfevals, ftarget, tolfun, tolfunhist
  // and tolstagnation (termination.h: the criteria every strategy shares).
  FValueHistory history_;
  std::vector<double> last_values_;      // the f-values of the last generation
  struct UpdateScratch {                 // update()'s and tell_rows()' buffers, kept between generations
    std::vector<std::size_t> order;
    std::vector<double> y_w, z_w, white, coef;
    std::vector<const double*> rows;
    std::vector<bool> no_active;
  } scratch_;

  std::map<std::string, double> stop_;
  std::vector<std::map<std::string, double>> restart_history_;
  int restart_ = 0;
  // BIPOP bookkeeping.
  int large_runs_ = 0;  // large-regime restarts done
  std::int64_t budget_large_ = 0;
  std::int64_t budget_small_ = 0;
  bool run_is_small_ = false;
  std::int64_t run_start_evaluations_ = 0;
  // A small run's iteration limit, 0.5 budget_large / lambda (pycma's fmin
  // with bipop); 0: none.
  std::int64_t run_max_iterations_ = 0;
};

// Full-covariance CMA-ES: O(n^2) time per sample and memory.
class CMAES final : public CMABase {
 public:
  CMAES(std::vector<double> x0, double sigma0, CMAESOptions options = {});
  // B^T of the current decomposition, n * n row-major (row j: the unit
  // eigenvector of state().eigenvalues[j]): state().eigenvectors times Q^T.
  std::vector<double> eigenbasis() const;

 private:
  void reset_covariance() override;
  void sample_y(const double* z, double* y, std::size_t count) const override;
  void whiten(const double* z_w, double* out) const override;
  void update_covariance(double a, const std::vector<const double*>& y,
                         const std::vector<double>& coef) override;
  void check_and_decompose(CMAState& state) const override;
  void check_axes(std::map<std::string, double>& stop) const override;
  double coord_std(std::size_t i) const noexcept override;
  void to_z(const double* y, double* z) const override;
  void state_replaced() override {
    upper_stale_.store(false);  // set_state's C is symmetric
    pack_eigenvectors();
  }
  // tell() updates C's lower triangle only (the eigensolver reads no more);
  // state() mirrors it into the upper one first, under mirror_mutex_.
  void complete_state() const noexcept override;
  void mirror_cov(int threads) const noexcept;
  mutable std::mutex mirror_mutex_;
  mutable std::atomic<bool> upper_stale_{false};
  void decompose(CMAState& state) const;
  // For n >= kPackedProducts: the eigenvector matrix in matmul_packed's panels,
  // refreshed with every decomposition, so that sampling and whitening run
  // as packed matrix products (the same sums in the same order as times_b)
  // and to_z reads it too (the same bits as from state.eigenvectors); and
  // the reflectors' blocks.
  void pack_eigenvectors();
  // out = v B^T for `count` rows v (n entries each): y = (D z) B^T samples,
  // z_w B^T whitens.
  void times_bt(const double* v, double* out, std::size_t count) const;
  std::vector<double> packed_eigenvectors_;
  HouseholderProduct q_;
  // Row i of B^T (eigenbasis()'s row i) into out.
  void basis_row(std::size_t i, double* out) const;
  // The lower triangle of Eq. (47) row by row (n < kPackedProducts: four
  // terms per pass), or by blocks of rows as one packed product.
  void update_covariance_rows(double a, const std::vector<const double*>& y, const std::vector<double>& coef,
                              int threads);
  void update_covariance_blocked(double a, const std::vector<const double*>& y, const std::vector<double>& coef,
                                 int threads);
  struct {  // update_covariance_blocked's buffers, kept between generations
    std::vector<const double*> rows;
    std::vector<double> packed, ut;
  } blocked_;
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
  void to_z(const double* y, double* z) const override;
};

// ---- the policy solver's CMA (CMA_SAMPLING) ----------------------------------

// CMA-ES over policy parameters x0 (double precision inside, float32
// parameters out): CSA, and the restarts and the termination criteria meant
// for functions (tolfun, tolx, stagnation, no-effect tests) off: a reward
// plateau is not convergence, and training stops by its own budget.
std::unique_ptr<CMABase> make_policy_cma(const std::vector<float>& x0, double sigma0,
                                         std::size_t population_size, bool separable,
                                         std::uint64_t seed, int num_threads);
// The registry's hooks (solver.h, solver_registry.cc) for CMA_SAMPLING.
void validate_cma_options(const OptionSet& options, std::optional<std::size_t> num_params);
std::unique_ptr<AskTellStrategy> make_cma_strategy(const OptionSet& options,
                                                   const std::vector<float>& x0, int num_threads);

}  // namespace evokit
