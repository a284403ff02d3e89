// CMA-ES and the GA as solvers of a policy agent; see
// evokit/strategy_solver.h.
#include "evokit/strategy_solver.h"

#include "evokit/noise.h"
#include "evokit/population.h"
#include "option_checks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

namespace evokit {

namespace {

std::string key_text(const std::vector<std::int64_t>& key) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < key.size(); ++i) out << (i ? ", " : "") << key[i];
  out << ']';
  return out.str();
}

void put_infos(SolverState& state, const std::string& name, const std::vector<SamplingInfo>& infos) {
  auto& keys = state.ints[name];
  auto& lengths = state.ints[name + ".lengths"];
  auto& iterations = state.ints[name + ".iterations"];
  for (const SamplingInfo& info : infos) {
    keys.insert(keys.end(), info.key.begin(), info.key.end());
    lengths.push_back(static_cast<std::int64_t>(info.key.size()));
    iterations.push_back(info.model_iter_id);
  }
}

std::vector<SamplingInfo> get_infos(const SolverState& state, const std::string& name) {
  const auto& keys = state.int_array(name);
  const auto& lengths = state.int_array(name + ".lengths");
  const auto& iterations = state.int_array(name + ".iterations", lengths.size());
  std::vector<SamplingInfo> infos(lengths.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    if (lengths[i] < 0 || static_cast<std::uint64_t>(lengths[i]) > keys.size() - at) {
      throw std::invalid_argument(name + ".lengths[" + std::to_string(i) + "] = " +
                                  std::to_string(lengths[i]) + " runs past the " +
                                  std::to_string(keys.size()) + " keys of " + name);
    }
    infos[i].key.assign(keys.begin() + static_cast<std::ptrdiff_t>(at),
                        keys.begin() + static_cast<std::ptrdiff_t>(at + lengths[i]));
    infos[i].model_iter_id = iterations[i];
    at += static_cast<std::size_t>(lengths[i]);
  }
  if (at != keys.size()) {
    throw std::invalid_argument(name + " holds " + std::to_string(keys.size()) + " keys, its " +
                                name + ".lengths add up to " + std::to_string(at));
  }
  return infos;
}

}  // namespace

// ---- StrategySolver --------------------------------------------------------

StrategySolver::StrategySolver(std::string family, std::string kind, std::vector<float> x0)
    : Solver(std::move(family), std::move(x0)), kind_(std::move(kind)) {}

std::int64_t StrategySolver::draws() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return draws_;
}

SamplingInfo StrategySolver::draw(int /*clone*/, std::uint64_t /*stream*/) {
  SamplingInfo info;
  std::lock_guard<std::mutex> lock(mutex_);
  info.key = members_[static_cast<std::size_t>(draws_) % members_.size()];
  info.model_iter_id = model_iter_id_;
  ++draws_;
  return info;
}

void StrategySolver::check_iteration(const SamplingInfo& info, const std::string& where) const {
  if (info.model_iter_id != model_iter_id_) {
    throw std::invalid_argument(where + "a " + kind_ + " sample of iteration " +
                                std::to_string(info.model_iter_id) + " cannot be rebuilt at iteration " +
                                std::to_string(model_iter_id_) +
                                ": its distribution is gone (only samples of the current iteration "
                                "are usable)");
  }
}

void StrategySolver::check_member(const SamplingInfo& info) const {
  check_iteration(info, "");
  if (!is_member(info)) {
    throw std::invalid_argument("key " + key_text(info.key) + " is not a member of iteration " +
                                std::to_string(model_iter_id_));
  }
}

void StrategySolver::rebuild(const SamplingInfo& info, float* out, int /*num_threads*/) const {
  check_member(info);
  if (replica_rows_.empty()) {
    rebuild_member(info.key, out);
    return;
  }
  const std::size_t p = num_params();
  const auto member = std::find(members_.begin(), members_.end(), info.key) - members_.begin();
  const float* row = replica_rows_.data() + static_cast<std::size_t>(member) * p;
  std::copy(row, row + p, out);
}

SolverState StrategySolver::member_rows_state() const {
  SolverState state;
  state.family = family();
  state.model_iter_id = model_iter_id_;
  state.noise_version = kNoiseVersion;
  std::vector<SamplingInfo> infos(members_.size());
  std::vector<float>& rows = state.floats["members.rows"];
  rows.resize(members_.size() * num_params());
  for (std::size_t m = 0; m < members_.size(); ++m) {
    infos[m].key = members_[m];
    infos[m].model_iter_id = model_iter_id_;
    rebuild_member(members_[m], rows.data() + m * num_params());
  }
  put_infos(state, "members", infos);
  state.floats["center"] = center_;
  return state;
}

void StrategySolver::load_member_rows(const SolverState& state) {
  check_state(state, /*needs_noise_version=*/false);  // rows, not keys, travel
  const std::vector<SamplingInfo> infos = get_infos(state, "members");
  if (infos.empty()) throw std::invalid_argument("state entry 'members' holds no member");
  const std::size_t p = num_params();
  const std::vector<float>& rows = state.float_array("members.rows", infos.size() * p);
  const std::vector<float>& centre = state.float_array("center", p);
  std::vector<std::vector<std::int64_t>> keys;
  for (const SamplingInfo& info : infos) keys.push_back(info.key);
  members_ = std::move(keys);
  replica_rows_ = rows;
  std::copy(centre.begin(), centre.end(), center_.begin());
  model_iter_id_ = state.model_iter_id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draws_ = 0;
  }
  center_changed();
}

bool StrategySolver::is_member(const SamplingInfo& info) const noexcept {
  if (info.model_iter_id != model_iter_id_) return false;
  for (const auto& k : members_) {
    if (k == info.key) return true;
  }
  return false;
}

std::vector<std::vector<double>> StrategySolver::group(const std::vector<SamplingInfo>& infos,
                                                       const std::vector<double>& rewards) const {
  if (infos.size() != rewards.size()) {
    throw std::invalid_argument("got " + std::to_string(infos.size()) + " sampling infos and " +
                                std::to_string(rewards.size()) + " rewards");
  }
  for (std::size_t i = 0; i < rewards.size(); ++i) {
    if (!std::isfinite(rewards[i])) {
      std::ostringstream v;
      v << rewards[i];
      throw std::invalid_argument("reward " + std::to_string(i) + " is " + v.str() +
                                  ", expected a finite value");
    }
  }
  std::map<std::vector<std::int64_t>, std::size_t> index;
  for (std::size_t m = 0; m < members_.size(); ++m) index.emplace(members_[m], m);
  std::vector<std::vector<double>> per_member(members_.size());
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const std::string where = "sampling info " + std::to_string(i) + ": ";
    check_iteration(infos[i], where);
    const auto it = index.find(infos[i].key);
    if (it == index.end()) {
      throw std::invalid_argument(where + "key " + key_text(infos[i].key) +
                                  " is not a member of iteration " + std::to_string(model_iter_id_));
    }
    per_member[it->second].push_back(rewards[i]);
  }
  return per_member;
}

std::string StrategySolver::shortfall_of(const std::vector<std::vector<double>>& per_member) const {
  const auto [need, what] = requirement();
  std::size_t short_count = 0, first = 0;
  for (std::size_t m = per_member.size(); m-- > 0;) {
    if (per_member[m].size() < need) {
      ++short_count;
      first = m;
    }
  }
  if (short_count == 0) return {};
  return kind_ + " update needs " + std::to_string(need) + " reward(s) for each of the " +
         std::to_string(per_member.size()) + " " + what + " of iteration " +
         std::to_string(model_iter_id_) + "; " + std::to_string(short_count) +
         " have fewer (first: member " + std::to_string(first) + " with " +
         std::to_string(per_member[first].size()) + ")";
}

std::string StrategySolver::shortfall(const std::vector<SamplingInfo>& infos,
                                      const std::vector<double>& rewards) const {
  return shortfall_of(group(infos, rewards));
}

UpdateStats StrategySolver::update(const std::vector<SamplingInfo>& infos,
                                   const std::vector<double>& rewards,
                                   const ParamsLookup& /*history*/) {
  if (!replica_rows_.empty()) {
    throw std::logic_error(kind_ + " replica (loaded from a sampling state) rebuilds members "
                           "only; updates belong to the solver that owns the state");
  }
  const auto per_member = group(infos, rewards);
  const std::string missing = shortfall_of(per_member);
  if (!missing.empty()) throw std::invalid_argument(missing);
  tell(per_member);
  ++model_iter_id_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draws_ = 0;
  }
  refresh();
  UpdateStats stats;
  stats.num_samples = infos.size();
  stats.model_iter_id = model_iter_id_;
  return stats;
}

void StrategySolver::refresh() {
  members_ = members();
  compute_center(center_.data());
  center_changed();
}

SolverState StrategySolver::save() const {
  SolverState state;
  state.family = family();
  state.model_iter_id = model_iter_id_;
  state.noise_version = kNoiseVersion;
  state.ints["draws"] = {draws()};
  save_strategy(state);
  return state;
}

void StrategySolver::load(const SolverState& state) {
  check_state(state, /*needs_noise_version=*/true);
  const std::int64_t draws = state.int_value("draws");
  if (draws < 0) throw std::invalid_argument("draws must be >= 0, got " + std::to_string(draws));
  load_strategy(state);  // validates, then replaces
  replica_rows_.clear();
  model_iter_id_ = state.model_iter_id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draws_ = draws;
  }
  refresh();
}

// ---- CMASolver --------------------------------------------------------------

namespace {

CMAESOptions policy_cma_options(std::size_t population_size, std::uint64_t seed, int num_threads) {
  CMAESOptions o;
  o.population_size = population_size;
  o.seed = seed;
  o.num_threads = num_threads;
  o.tolfun = 0.0;  // the criteria compare with <: 0 never fires
  o.tolfunhist = 0.0;
  o.tolx = 0.0;
  o.tolstagnation = std::numeric_limits<std::int64_t>::max() / 4;
  o.conditioncov = std::numeric_limits<double>::max();
  o.tolupsigma = std::numeric_limits<double>::max();
  o.noeffectaxis = false;
  o.noeffectcoord = false;
  o.restarts = 0;
  return o;
}

}  // namespace

CMASolver::CMASolver(const std::vector<float>& x0, double sigma0, std::size_t population_size,
                     bool separable, std::uint64_t seed, int num_threads)
    : StrategySolver("CMA_SAMPLING", "CMA", x0) {
  std::vector<double> mean(x0.begin(), x0.end());
  const CMAESOptions o = policy_cma_options(population_size, seed, num_threads);
  if (separable) {
    cma_ = std::make_unique<SepCMAES>(std::move(mean), sigma0, o);
  } else {
    cma_ = std::make_unique<CMAES>(std::move(mean), sigma0, o);
  }
  refresh();
}

std::vector<std::vector<std::int64_t>> CMASolver::members() const {
  std::vector<std::vector<std::int64_t>> keys(cma_->population_size());
  for (std::size_t k = 0; k < keys.size(); ++k) keys[k] = {cma_->sample_key(k)};
  return keys;
}

void CMASolver::rebuild_member(const std::vector<std::int64_t>& key, float* out) const {
  const std::vector<double> x = cma_->regenerate(key.at(0));
  for (std::size_t j = 0; j < x.size(); ++j) out[j] = static_cast<float>(x[j]);
}

std::pair<std::size_t, std::string> CMASolver::requirement() const { return {1, "members"}; }

void CMASolver::tell(const std::vector<std::vector<double>>& per_member) {
  if (cma_->stopped()) {
    std::string names;
    for (const auto& [name, threshold] : cma_->stop()) names += (names.empty() ? "" : ", ") + name;
    throw std::logic_error("CMA-ES has stopped (" + names + "): no further updates");
  }
  const auto& keys = member_keys();
  std::vector<std::int64_t> k(keys.size());
  std::vector<double> values(keys.size());
  for (std::size_t m = 0; m < keys.size(); ++m) {
    k[m] = keys[m][0];
    double sum = 0.0;
    for (double r : per_member[m]) sum += r;
    values[m] = -(sum / static_cast<double>(per_member[m].size()));  // CMA minimises
  }
  cma_->tell_keys(k.data(), values.data(), k.size());
}

void CMASolver::compute_center(float* out) const {
  const std::vector<double> m = cma_->mean_solution();
  for (std::size_t j = 0; j < m.size(); ++j) out[j] = static_cast<float>(m[j]);
}

void CMASolver::save_strategy(SolverState& state) const {
  const CMAState& s = cma_->state();
  state.doubles["cma.mean"] = s.mean;
  state.doubles["cma.p_sigma"] = s.p_sigma;
  state.doubles["cma.p_c"] = s.p_c;
  state.doubles["cma.cov"] = s.cov;
  state.doubles["cma.eigenvalues"] = s.eigenvalues;
  state.doubles["cma.eigenvectors"] = s.eigenvectors;
  state.doubles["cma.sigma"] = {s.sigma};
  state.ints["cma.generation"] = {s.generation};
  state.ints["cma.eigen_generation"] = {s.eigen_generation};
}

void CMASolver::load_strategy(const SolverState& state) {
  const std::size_t n = num_params();
  const bool full = !cma_->params().separable;
  CMAState s;
  s.mean = state.double_array("cma.mean", n);
  s.p_sigma = state.double_array("cma.p_sigma", n);
  s.p_c = state.double_array("cma.p_c", n);
  s.cov = state.double_array("cma.cov", full ? n * n : n);
  s.eigenvalues = state.double_array("cma.eigenvalues", full ? n : 0);
  s.eigenvectors = state.double_array("cma.eigenvectors", full ? n * n : 0);
  s.sigma = state.double_value("cma.sigma");
  s.generation = state.int_value("cma.generation");
  s.eigen_generation = full ? state.int_value("cma.eigen_generation") : s.generation;
  cma_->set_state(s);  // validates first
}

// ---- GASolver ---------------------------------------------------------------

GASolver::GASolver(const GeneticAlgorithmOptions& options, std::vector<float> x0)
    : StrategySolver("GA_SAMPLING", "GA", x0),
      ga_(std::make_unique<GeneticAlgorithm>(options, std::move(x0))) {
  refresh();
}

std::vector<std::vector<std::int64_t>> GASolver::members() const {
  const auto& infos = ga_->phase() == GeneticAlgorithm::Phase::kFitness ? ga_->ask()
                                                                         : ga_->ask_elite_candidates();
  std::vector<std::vector<std::int64_t>> keys;
  keys.reserve(infos.size());
  for (const SamplingInfo& info : infos) keys.push_back(info.key);
  return keys;
}

void GASolver::rebuild_member(const std::vector<std::int64_t>& key, float* out) const {
  ga_->rebuild(key, out, ga_->options().num_threads);
}

std::pair<std::size_t, std::string> GASolver::requirement() const {
  if (ga_->phase() == GeneticAlgorithm::Phase::kFitness) return {1, "individuals"};
  return {ga_->options().elite_evaluations, "elite candidates"};
}

void GASolver::tell(const std::vector<std::vector<double>>& per_member) {
  if (ga_->phase() == GeneticAlgorithm::Phase::kFitness) {
    std::vector<double> fitness(per_member.size());
    for (std::size_t m = 0; m < per_member.size(); ++m) {
      double sum = 0.0;
      for (double r : per_member[m]) sum += r;
      fitness[m] = sum / static_cast<double>(per_member[m].size());
    }
    ga_->tell(fitness);
    return;
  }
  const std::size_t k = ga_->options().elite_evaluations;
  std::vector<double> scores;  // candidate-major: the first k rewards of each
  scores.reserve(per_member.size() * k);
  for (const auto& r : per_member) scores.insert(scores.end(), r.begin(), r.begin() + k);
  ga_->tell_elite_candidates(scores);
}

void GASolver::compute_center(float* out) const {
  const auto& elites = ga_->elites();
  if (elites.empty()) {
    std::copy(ga_->x0().begin(), ga_->x0().end(), out);
  } else {
    ga_->rebuild(elites[0].key, out, ga_->options().num_threads);
  }
}

void GASolver::save_strategy(SolverState& state) const {
  state.floats["ga.x0"] = ga_->x0();
  state.ints["ga.generation"] = {ga_->generation()};
  put_infos(state, "ga.population", ga_->ask());
  put_infos(state, "ga.elites", ga_->elites());
  state.doubles["ga.elite_scores"] = ga_->elite_scores();
  const auto order = ga_->pending_order();
  state.ints["ga.order"].assign(order.begin(), order.end());
}

void GASolver::load_strategy(const SolverState& state) {
  const std::vector<float>& x0 = state.float_array("ga.x0", num_params());
  const auto& order = state.int_array("ga.order");
  std::vector<std::size_t> positions;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i] < 0) {
      throw std::invalid_argument("ga.order[" + std::to_string(i) + "] must be >= 0, got " +
                                  std::to_string(order[i]));
    }
    positions.push_back(static_cast<std::size_t>(order[i]));
  }
  // A fresh GA around the saved x0 (the individuals are rebuilt from it),
  // given the saved generation; the current one is replaced only if it holds.
  auto ga = std::make_unique<GeneticAlgorithm>(ga_->options(), x0);
  ga->set_state(state.int_value("ga.generation"), get_infos(state, "ga.population"),
                get_infos(state, "ga.elites"), state.double_array("ga.elite_scores"),
                std::move(positions));
  ga_ = std::move(ga);
}

// ---- options ----------------------------------------------------------------

namespace {

// What CMA and the GA share: no mirrored pairs, at least two members.
void validate_strategy_options(const OptionSet& o) {
  const std::string name = o.text("sampling.type");
  if (o.flag("antithetic")) {
    detail::fail("antithetic", "must be false with " + name +
                                   " (mirrored pairs are a Gaussian-sampling scheme), got true");
  }
  detail::at_least(o, "population_size", 2);
}

}  // namespace

void validate_cma_options(const OptionSet& o, std::optional<std::size_t> /*num_params*/) {
  validate_strategy_options(o);
  detail::positive(o, "sampling.cma_sampling.sigma0");
}

std::unique_ptr<Solver> make_cma_solver(const OptionSet& o, std::vector<float> x0,
                                        int num_threads) {
  const std::string c = "sampling.cma_sampling.";
  return std::make_unique<CMASolver>(x0, o.real(c + "sigma0"),
                                     static_cast<std::size_t>(o.integer("population_size")),
                                     o.flag(c + "separable"),
                                     static_cast<std::uint64_t>(o.integer(c + "seed")), num_threads);
}

void validate_ga_options(const OptionSet& o, std::optional<std::size_t> /*num_params*/) {
  using detail::fail;
  validate_strategy_options(o);
  const std::string f = "sampling.ga_sampling.";
  const std::int64_t n = o.integer("population_size");
  const std::int64_t truncation = o.integer(f + "truncation_size");
  if (!(1 <= truncation && truncation <= n)) {
    fail(f + "truncation_size", "must be in [1, " + std::to_string(n) +
                                    "] (solver.population_size), got " + std::to_string(truncation));
  }
  const std::int64_t elites = o.integer(f + "num_elites");
  if (!(1 <= elites && elites <= n - 1)) {
    fail(f + "num_elites", "must be in [1, " + std::to_string(n - 1) +
                               "] (solver.population_size - 1), got " + std::to_string(elites));
  }
  detail::positive(o, f + "mutation_power");
  detail::non_negative(o, f + "init_sigma");
  detail::at_least(o, f + "elite_evaluations", 0);
  const std::int64_t evaluations = o.integer(f + "elite_evaluations");
  if (evaluations > 0) {
    const std::int64_t candidates = o.integer(f + "elite_candidates");
    if (!(elites <= candidates && candidates <= n)) {
      fail(f + "elite_candidates", "must be in [" + std::to_string(elites) + ", " +
                                       std::to_string(n) +
                                       "] (num_elites to solver.population_size), got " +
                                       std::to_string(candidates));
    }
    const std::int64_t need = (candidates + elites) * evaluations;
    if (need > n) {
      fail(f + "elite_evaluations",
           "(" + std::to_string(evaluations) + ") times the at most " +
               std::to_string(candidates + elites) +
               " candidates (elite_candidates + num_elites) is " + std::to_string(need) +
               ", more than the " + std::to_string(n) +
               " samples of a generation (solver.population_size)");
    }
  }
}

std::unique_ptr<Solver> make_ga_solver(const OptionSet& o, std::vector<float> x0,
                                       int num_threads) {
  const std::string f = "sampling.ga_sampling.";
  GeneticAlgorithmOptions g;
  g.population_size = static_cast<std::size_t>(o.integer("population_size"));
  g.truncation_size = static_cast<std::size_t>(o.integer(f + "truncation_size"));
  g.num_elites = static_cast<std::size_t>(o.integer(f + "num_elites"));
  g.mutation_power = static_cast<float>(o.real(f + "mutation_power"));
  g.init_sigma = static_cast<float>(o.real(f + "init_sigma"));
  g.elite_candidates = static_cast<std::size_t>(o.integer(f + "elite_candidates"));
  g.elite_evaluations = static_cast<std::size_t>(o.integer(f + "elite_evaluations"));
  g.seed = static_cast<std::uint64_t>(o.integer(f + "seed"));
  g.num_threads = num_threads;
  return std::make_unique<GASolver>(g, std::move(x0));
}

}  // namespace evokit
