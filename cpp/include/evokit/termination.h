// Stop criteria on f-values, with pycma's names and definitions (pycma 4.x,
// evolution_strategy.py: _CMAStopDict; the stagnation test of Hansen 2009,
// "Benchmarking a BI-Population CMA-ES on the BBOB-2009 Function Testbed"),
// written once for every strategy: CMA-ES (CMABase), the distribution
// strategies and the Python ask/tell strategies (GA, OpenES, ARS) record
// their generations here and check the same criteria. What depends on a
// family's distribution (tolx, conditioncov, noeffectaxis, ...) the family
// checks itself.
//
// After generation g (counted from 1 in the current run) with f-values F_g
// (lambda of them), best f-value so far f*, e evaluations in all:
//   maxfevals      e >= max_evaluations
//   maxiter        g >= max_iterations
//   ftarget        f* <= ftarget
//   tolfun         max F_g - min F_g < tolfun and the best f-values of the
//                  last H = 10 + ceil(30 n / lambda) generations span less
//                  than tolfun (checked once H generations are recorded)
//   tolfunhist     those H best f-values span less than tolfunhist
//   tolstagnation  g > T (T = tolstagnation, default 100 + 100 n^1.5 /
//                  lambda) and, over the last W = max(120 + 30 n / lambda,
//                  0.2 g) generations, the median of the most recent 30 %
//                  of the best and of the median f-values is no better than
//                  that of the oldest 30 %.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace evokit {

struct SolverState;  // solver.h

namespace detail {

// A history of values (oldest first, at most `cap` kept) whose medians over
// two windows of consecutive entries are asked for after each push, as the
// stagnation test does. Each window is kept sorted and moved entry by entry
// (a binary-search insert or erase per entry that enters or leaves it), so a
// generation costs O(window) memmove instead of two O(window) selections.
// The medians are those of the entries, bit for bit: the middle one, or half
// the sum of the two middle ones.
class WindowedHistory {
 public:
  void push(double v, std::size_t cap);
  void clear();
  // The entries kept (oldest first) and the absolute index of the first, and
  // their restore (the sorted windows are rebuilt when next asked for).
  std::vector<double> values() const { return {values_.begin(), values_.end()}; }
  std::uint64_t base() const noexcept { return base_; }
  void restore(const std::vector<double>& values, std::uint64_t base);
  std::size_t size() const noexcept { return values_.size(); }
  // The median of entries [from, from + len) (positions in the current
  // history); `window` (0 or 1) names the cached window to move there.
  double median(int window, std::size_t from, std::size_t len);

 private:
  struct Sorted {
    std::uint64_t lo = 0, hi = 0;  // absolute indices [lo, hi) of the entries held
    std::vector<double> values;    // those entries, ascending
  };
  std::deque<double> values_;
  std::uint64_t base_ = 0;  // absolute index of values_.front()
  Sorted windows_[2];
};

}  // namespace detail

// pycma's default thresholds: the one place every strategy's defaults come
// from (CMAESOptions, FValueCriteria, the Python classes through
// _core.STOP_DEFAULTS).
inline constexpr double kDefaultTolfun = 1e-11;
inline constexpr double kDefaultTolfunhist = 1e-12;
inline constexpr double kDefaultTolx = 1e-11;
inline constexpr double kDefaultConditioncov = 1e14;
inline constexpr double kDefaultTolupsigma = 1e20;
// tolstagnation's default, computed per run (FValueHistory::check), as
// signatures and documentation show it.
inline constexpr const char* kDefaultTolstagnationRule = "100 + 100 n^1.5 / population_size";

// The thresholds (pycma's names in stop()'s keys).
struct FValueCriteria {
  std::optional<std::int64_t> max_evaluations;  // "maxfevals"
  std::optional<std::int64_t> max_iterations;   // "maxiter"
  double ftarget = -std::numeric_limits<double>::infinity();  // "ftarget"
  double tolfun = kDefaultTolfun;               // "tolfun"
  double tolfunhist = kDefaultTolfunhist;       // "tolfunhist"
  std::optional<std::int64_t> tolstagnation;    // "tolstagnation"; nullopt: 100 + 100 n^1.5 / lambda
};

// One run's f-value history: record() each generation, check() the criteria.
class FValueHistory {
 public:
  // Generation g's f-values (count of them; none NaN) for a problem of n
  // parameters and population lambda (which sets the windows above).
  void record(const double* values, std::size_t count, std::size_t n, std::size_t lambda);
  // Forgets the run (a restart).
  void clear();
  std::int64_t generations() const noexcept { return generations_; }
  // Everything check() reads, for saving a strategy whole, and its restore:
  // the same criteria, bit for bit, after restore(saved()).
  struct Saved {
    std::int64_t generations = 0;
    std::uint64_t n = 1, lambda = 1;
    double last_min = 0, last_max = 0;
    std::vector<double> best, stag_best, stag_median;
    std::uint64_t stag_base = 0;
  };
  Saved saved() const;
  void restore(const Saved& s);
  // saved() as entries "<prefix>generations", "<prefix>best", ... of a
  // SolverState (a pickled strategy's), and their reading back: every entry
  // present and consistent, else std::invalid_argument naming it.
  void save(SolverState& state, const std::string& prefix) const;
  static Saved read(const SolverState& state, const std::string& prefix);
  // The criteria met (name -> threshold) after the generations recorded,
  // with `evaluations` in all and the best f-value `best_f` so far.
  std::map<std::string, double> check(const FValueCriteria& c, std::int64_t evaluations, double best_f);

 private:
  std::size_t n_ = 1, lambda_ = 1;
  std::int64_t generations_ = 0;
  double last_min_ = 0, last_max_ = 0;
  std::deque<double> best_;            // the best f of each of the last H generations
  detail::WindowedHistory stag_best_;    // best f, up to 20000 generations
  detail::WindowedHistory stag_median_;  // median f, up to 20000 generations
  std::vector<double> sorted_;           // scratch
};

}  // namespace evokit
