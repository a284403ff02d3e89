// The distribution strategies' base (its AskTellStrategy side included),
// their shared helpers, the registry and the policy solver's options; see
// evokit/distribution.h. The families are in their own
// files (snes.cc, xnes.cc, ...) and listed in distribution_registry.cc.
#include "evokit/distribution.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "evokit/noise.h"
#include "evokit/philox.h"
#include "common/messages.h"
#include "common/parallel.h"
#include "linalg/dense_kernels.h"
#include "search/distribution/distribution_internal.h"
#include "search/option_checks.h"
#include "search/strategy_internal.h"

namespace evokit {

// ---- DistributionStrategy ---------------------------------------------------------

DistributionStrategy::DistributionStrategy(std::string family, std::size_t num_params,
                                           std::size_t population_size, std::uint64_t seed,
                                           int num_threads, bool mirrored)
    : family_(std::move(family)),
      num_params_(num_params),
      population_size_(population_size),
      seed_(seed),
      num_threads_(num_threads),
      mirrored_(mirrored) {
  if (num_params == 0) throw std::invalid_argument(family_ + ": x0 must hold at least one value");
  if (population_size < 2) {
    throw std::invalid_argument(family_ + ": population_size must be >= 2, got " +
                                std::to_string(population_size));
  }
  if (mirrored && population_size % 2 != 0) {
    throw std::invalid_argument(family_ + ": population_size must be even (mirrored pairs), got " +
                                std::to_string(population_size));
  }
  if (num_threads < 1) {
    throw std::invalid_argument(family_ + ": num_threads must be >= 1, got " +
                                std::to_string(num_threads));
  }
}

double DistributionStrategy::condition() const {
  const std::vector<double> s = stds();
  double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
  for (double x : s) {
    if (!std::isfinite(x) || !(x > 0.0)) return std::numeric_limits<double>::infinity();
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  if (s.empty()) return 1.0;
  const double r = hi / lo;
  return r * r;
}

std::int64_t DistributionStrategy::member_key(std::size_t k) const {
  if (k >= population_size_) {
    throw std::out_of_range(family_ + ": member " + std::to_string(k) + " of a population of " +
                            std::to_string(population_size_));
  }
  const std::size_t stream = mirrored_ ? k / 2 : k;
  return static_cast<std::int64_t>(
      hash_draw(seed_, static_cast<std::uint64_t>(generation_), stream, kDistributionTag) >> 2);
}

int DistributionStrategy::threads_for(double work) const noexcept {
  return work < detail::kParallelWork ? 1 : num_threads_;
}

void DistributionStrategy::member_z(std::size_t k, double* z) const {
  const std::size_t n = num_params_;
  std::vector<float> f(n);
  fill_gaussian(seed_, static_cast<std::uint64_t>(member_key(k)), 0, f.data(), n);
  const double sign = mirrored_ && k % 2 == 1 ? -1.0 : 1.0;
  for (std::size_t j = 0; j < n; ++j) z[j] = sign * static_cast<double>(f[j]);
}

void DistributionStrategy::materialize() {
  const std::size_t n = num_params_;
  const std::size_t lambda = population_size_;
  z_.resize(lambda * n);
  x_.resize(lambda * n);
  const int threads = threads_for(static_cast<double>(lambda * n) * 12.0);
  // Each member's row is checked while it is in cache (a pass of about 1 %
  // of the sampling's time).
  std::vector<unsigned char> finite(lambda, 1);
  detail::parallel_items(lambda, detail::team_size(lambda, threads), [&](std::size_t k) {
    member_z(k, z_.data() + k * n);
    transform(z_.data() + k * n, x_.data() + k * n);
    finite[k] = detail::all_finite(x_.data() + k * n, n) ? 1 : 0;
  });
  // An update that overflowed, or turned a scale negative, makes the
  // distribution sample inf or NaN: say so, by name, rather than hand such
  // solutions to the objective (or an update).
  for (std::size_t k = 0; k < lambda; ++k) {
    if (finite[k]) continue;
    std::size_t j = 0;
    while (std::isfinite(x_[k * n + j])) ++j;
    // Generation 0 has had no update: x0 + sigma0 z itself overflowed.
    const std::string why = generation_ == 0
                                ? ": x0 + sigma0 z overflows before any update; choose a smaller sigma0"
                                : ": an update left the distribution non-finite. Resume from a saved state, or "
                                  "restart with another sigma0 or seed";
    throw std::runtime_error(family_ + ": generation " + std::to_string(generation_) + "'s member " +
                             std::to_string(k) + " has coordinate " + std::to_string(j) + " = " +
                             detail::format_number(x_[k * n + j]) + why);
  }
  sampled_ = true;
}

const std::vector<double>& DistributionStrategy::ask() {
  if (!sampled_) materialize();
  return x_;
}

void DistributionStrategy::regenerate(std::size_t k, double* out) const {
  const std::size_t n = num_params_;
  if (sampled_ && k < population_size_) {
    std::copy(x_.begin() + static_cast<std::ptrdiff_t>(k * n),
              x_.begin() + static_cast<std::ptrdiff_t>((k + 1) * n), out);
    return;
  }
  std::vector<double> z(n);
  member_z(k, z.data());  // range-checks k
  transform(z.data(), out);
}

void DistributionStrategy::tell(const double* values, std::size_t count) {
  if (count != population_size_) {
    throw std::invalid_argument("#f-values = " + std::to_string(count) +
                                " must equal population_size = " + std::to_string(population_size_));
  }
  detail::require_non_null(values, "values");
  for (std::size_t k = 0; k < count; ++k) {
    if (std::isnan(values[k])) throw std::invalid_argument("values[" + std::to_string(k) + "] is NaN");
  }
  if (!sampled_) materialize();
  update(z_, x_, std::vector<double>(values, values + count));
  ++generation_;
  sampled_ = false;
}

std::string DistributionStrategy::prefix() const {
  std::string p = family_;
  for (char& c : p) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return p + ".";
}

SolverState DistributionStrategy::save() const {
  SolverState state;
  state.family = family_;
  state.model_iter_id = generation_;
  state.noise_version = kNoiseVersion;
  state.ints[prefix() + "generation"] = {generation_};
  save_state(state, prefix());
  return state;
}

void DistributionStrategy::load(const SolverState& state) {
  const std::int64_t g = state.int_value(prefix() + "generation");
  if (g < 0) {
    throw std::invalid_argument("state entry '" + prefix() + "generation' must be >= 0, got " +
                                std::to_string(g));
  }
  load_state(state, prefix());  // validates, then replaces
  generation_ = g;
  sampled_ = false;
}

// ---- shared helpers ------------------------------------------------------------

namespace distribution {

std::vector<std::size_t> ranking(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  return order;
}

std::vector<double> nes_utilities(std::size_t lambda) {
  std::vector<double> u(lambda);
  const double top = std::log(static_cast<double>(lambda) / 2.0 + 1.0);
  double sum = 0.0;
  for (std::size_t i = 0; i < lambda; ++i) {
    u[i] = std::max(0.0, top - std::log(static_cast<double>(i + 1)));
    sum += u[i];
  }
  for (double& v : u) v = v / sum - 1.0 / static_cast<double>(lambda);
  return u;
}

}  // namespace distribution

namespace detail {

CommonDistributionOptions common_distribution_options(const OptionSet& o, const std::string& prefix,
                                                      std::size_t default_population, bool mirrored) {
  const double sigma0 = o.real("sigma0");
  if (!(std::isfinite(sigma0) && sigma0 > 0)) {
    throw std::invalid_argument(prefix + "sigma0 must be > 0 and finite, got " + format_g(sigma0));
  }
  const std::int64_t lambda = o.integer("population_size");
  if (lambda != 0 && lambda < 2) {
    throw std::invalid_argument(prefix + "population_size must be >= 2 (or 0: the default), got " +
                                std::to_string(lambda));
  }
  if (lambda != 0 && mirrored && lambda % 2 != 0) {
    throw std::invalid_argument(prefix + "population_size must be even (mirrored pairs), got " +
                                std::to_string(lambda));
  }
  const std::int64_t threads = o.integer("num_threads");
  if (threads < 1) {
    throw std::invalid_argument(prefix + "num_threads must be >= 1, got " + std::to_string(threads));
  }
  CommonDistributionOptions c;
  c.sigma0 = sigma0;
  c.population_size = lambda == 0 ? default_population : static_cast<std::size_t>(lambda);
  if (mirrored && c.population_size % 2 != 0) ++c.population_size;
  c.seed = static_cast<std::uint64_t>(o.integer("seed"));
  c.num_threads = static_cast<int>(threads);
  return c;
}

double option_in(const OptionSet& o, const std::string& prefix, const std::string& name,
                 double low, double high, bool low_open, bool high_open, bool zero_default) {
  const double v = o.real(name);
  if (zero_default && v == 0.0) return v;
  const bool ok = std::isfinite(v) && (low_open ? v > low : v >= low) &&
                  (high_open ? v < high : v <= high);
  if (!ok) {
    std::string range = std::string(low_open ? "(" : "[") + format_g(low) + ", " +
                        format_g(high) + (high_open ? ")" : "]");
    throw std::invalid_argument(prefix + name + " must be in " + range +
                                (zero_default ? " (or 0: the default)" : "") + ", got " +
                                format_g(v));
  }
  return v;
}

void require_finite_entries(const std::vector<double>& values, const std::string& name) {
  for (std::size_t j = 0; j < values.size(); ++j) {
    if (!std::isfinite(values[j])) {
      throw std::invalid_argument("state entry '" + name + "'[" + std::to_string(j) + "] is " +
                                  format_g(values[j]));
    }
  }
}

void require_positive_entries(const std::vector<double>& values, const std::string& name) {
  for (std::size_t j = 0; j < values.size(); ++j) {
    if (!(std::isfinite(values[j]) && values[j] > 0)) {
      throw std::invalid_argument("state entry '" + name + "'[" + std::to_string(j) +
                                  "] must be > 0 and finite, got " + format_g(values[j]));
    }
  }
}

const std::vector<double>& finite_entry(const SolverState& state, const std::string& prefix,
                                        const std::string& name, std::size_t n, bool positive) {
  const std::vector<double>& v = state.double_array(prefix + name, n);
  if (positive) {
    require_positive_entries(v, prefix + name);
  } else {
    require_finite_entries(v, prefix + name);
  }
  return v;
}

}  // namespace detail

void DistributionStrategy::save_state(SolverState& state, const std::string& prefix) const {
  // state_entries() hands out pointers to write through; saving only reads them.
  for (const StateEntry& e : const_cast<DistributionStrategy*>(this)->state_entries()) {
    state.doubles[prefix + e.name] = e.values != nullptr ? *e.values : std::vector<double>{*e.scalar};
  }
}

void DistributionStrategy::load_state(const SolverState& state, const std::string& prefix) {
  const std::vector<StateEntry> entries = state_entries();
  std::vector<const std::vector<double>*> checked;
  for (const StateEntry& e : entries) {
    checked.push_back(&detail::finite_entry(state, prefix, e.name, e.n, e.positive));
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].values != nullptr) {
      *entries[i].values = *checked[i];
    } else {
      *entries[i].scalar = (*checked[i])[0];
    }
  }
}

// ---- the registry ----------------------------------------------------------------

const DistributionFamily& distribution_family(const std::string& name) {
  std::string known;
  for (const DistributionFamily& f : distribution_families()) {
    if (name == f.name || (f.sampling_type != nullptr && name == f.sampling_type)) return f;
    known += (known.empty() ? "" : ", ") + std::string(f.name);
  }
  throw std::invalid_argument("unknown distribution strategy '" + name + "', expected one of " +
                              known);
}

std::unique_ptr<DistributionStrategy> make_distribution(const std::string& name,
                                                        std::vector<double> x0,
                                                        const OptionSet& options) {
  const DistributionFamily& family = distribution_family(name);
  if (x0.empty()) throw std::invalid_argument("x0 must hold at least one value");
  for (std::size_t j = 0; j < x0.size(); ++j) {
    if (!std::isfinite(x0[j])) {
      throw std::invalid_argument("x0[" + std::to_string(j) + "] is " + detail::format_g(x0[j]));
    }
  }
  family.validate(options, "");
  return family.make(std::move(x0), options);
}

// ---- DistributionStrategy as an AskTellStrategy ----------------------------------

std::vector<std::vector<std::int64_t>> DistributionStrategy::member_keys() const {
  std::vector<std::vector<std::int64_t>> keys(population_size_);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    keys[k] = {member_key(k), static_cast<std::int64_t>(k)};
  }
  return keys;
}

void DistributionStrategy::rebuild_member(const std::vector<std::int64_t>& key, float* out) const {
  if (key.size() != 2 || key[1] < 0 || static_cast<std::uint64_t>(key[1]) >= population_size_ ||
      member_key(static_cast<std::size_t>(key[1])) != key[0]) {
    throw std::invalid_argument("sampling info: not a member of the current " + family_ +
                                " generation");
  }
  std::vector<double> x(num_params_);
  regenerate(static_cast<std::size_t>(key[1]), x.data());
  for (std::size_t j = 0; j < x.size(); ++j) out[j] = static_cast<float>(x[j]);
}

void DistributionStrategy::tell_members(const std::vector<double>& values) {
  ask();
  tell(values.data(), values.size());
}

void DistributionStrategy::center_params(float* out) const {
  const std::vector<double> c = center();
  for (std::size_t j = 0; j < c.size(); ++j) out[j] = static_cast<float>(c[j]);
}

void DistributionStrategy::save_entries(SolverState& state) const {
  SolverState s = save();
  for (auto& [name, v] : s.doubles) state.doubles[name] = std::move(v);
  for (auto& [name, v] : s.floats) state.floats[name] = std::move(v);
  for (auto& [name, v] : s.ints) state.ints[name] = std::move(v);
}

// ---- the policy solver's strategy ---------------------------------------------------

namespace {

// The plain options of the family from the policy options.
OptionSet plain_options(const DistributionFamily& family, const OptionSet& o, int num_threads) {
  const std::string prefix = std::string("sampling.") + family.config_field + ".";
  OptionSet plain;
  for (const auto& [name, value] : o.values()) {
    if (name.compare(0, prefix.size(), prefix) == 0) plain.set(name.substr(prefix.size()), value);
  }
  plain.set("population_size", o.integer("population_size"));
  plain.set("num_threads", static_cast<std::int64_t>(num_threads));
  return plain;
}

}  // namespace

void validate_distribution_solver_options(const OptionSet& o,
                                          std::optional<std::size_t> /*num_params*/) {
  const DistributionFamily& family = distribution_family(o.text("sampling.type"));
  detail::validate_strategy_options(o);
  family.validate(plain_options(family, o, 1),
                  std::string("solver.sampling.") + family.config_field + ".");
}

std::unique_ptr<AskTellStrategy> make_distribution_strategy(const OptionSet& o,
                                                            const std::vector<float>& x0,
                                                            int num_threads) {
  const DistributionFamily& family = distribution_family(o.text("sampling.type"));
  std::vector<double> start(x0.begin(), x0.end());
  return family.make(std::move(start), plain_options(family, o, num_threads));
}

}  // namespace evokit
