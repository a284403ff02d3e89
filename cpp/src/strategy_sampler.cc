// CMA-ES and the GA as samplers of a policy agent; see
// evokit/strategy_sampler.h.
#include "evokit/strategy_sampler.h"

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

}  // namespace

// ---- StrategySampler ------------------------------------------------------

StrategySampler::StrategySampler(std::string kind, std::size_t num_params)
    : kind_(std::move(kind)), center_(num_params, 0.0f) {}

void StrategySampler::set_progress(std::int64_t model_iter_id, std::int64_t draws) {
  if (model_iter_id < 0 || draws < 0) {
    throw std::invalid_argument("model_iter_id and draws must be >= 0, got " +
                                std::to_string(model_iter_id) + " and " + std::to_string(draws));
  }
  model_iter_id_ = model_iter_id;
  draws_ = draws;
}

const std::vector<std::vector<std::int64_t>>& StrategySampler::member_keys() const {
  if (members_.empty()) members_ = members();
  return members_;
}

SamplingInfo StrategySampler::next_member() {
  const auto& keys = member_keys();
  SamplingInfo info;
  info.key = keys[static_cast<std::size_t>(draws_) % keys.size()];
  info.model_iter_id = model_iter_id_;
  ++draws_;
  return info;
}

void StrategySampler::check_iteration(const SamplingInfo& info, const std::string& where) const {
  if (info.model_iter_id != model_iter_id_) {
    throw std::invalid_argument(where + "a " + kind_ + " sample of iteration " +
                                std::to_string(info.model_iter_id) + " cannot be rebuilt at iteration " +
                                std::to_string(model_iter_id_) +
                                ": its distribution is gone (only samples of the current iteration "
                                "are usable)");
  }
}

void StrategySampler::rebuild(const SamplingInfo& info, float* out) const {
  check_iteration(info, "");
  if (!is_member(info)) {
    throw std::invalid_argument("key " + key_text(info.key) + " is not a member of iteration " +
                                std::to_string(model_iter_id_));
  }
  rebuild_member(info.key, out);
}

bool StrategySampler::is_member(const SamplingInfo& info) const noexcept {
  if (info.model_iter_id != model_iter_id_) return false;
  for (const auto& k : member_keys()) {
    if (k == info.key) return true;
  }
  return false;
}

std::vector<std::vector<double>> StrategySampler::group(const std::vector<SamplingInfo>& infos,
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
  const auto& keys = member_keys();
  std::map<std::vector<std::int64_t>, std::size_t> index;
  for (std::size_t m = 0; m < keys.size(); ++m) index.emplace(keys[m], m);
  std::vector<std::vector<double>> per_member(keys.size());
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

std::string StrategySampler::shortfall_of(const std::vector<std::vector<double>>& per_member) const {
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

std::string StrategySampler::shortfall(const std::vector<SamplingInfo>& infos,
                                       const std::vector<double>& rewards) const {
  return shortfall_of(group(infos, rewards));
}

std::int64_t StrategySampler::update(const std::vector<SamplingInfo>& infos,
                                     const std::vector<double>& rewards) {
  const auto per_member = group(infos, rewards);
  const std::string missing = shortfall_of(per_member);
  if (!missing.empty()) throw std::invalid_argument(missing);
  tell(per_member);
  ++model_iter_id_;
  draws_ = 0;
  refresh();
  return model_iter_id_;
}

void StrategySampler::refresh() {
  members_.clear();
  compute_center(center_.data());
}

// ---- CMASampler -----------------------------------------------------------

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

CMASampler::CMASampler(const std::vector<float>& x0, double sigma0, std::size_t population_size,
                       bool separable, std::uint64_t seed, int num_threads)
    : StrategySampler("CMA", x0.size()) {
  std::vector<double> mean(x0.begin(), x0.end());
  const CMAESOptions o = policy_cma_options(population_size, seed, num_threads);
  if (separable) {
    cma_ = std::make_unique<SepCMAES>(std::move(mean), sigma0, o);
  } else {
    cma_ = std::make_unique<CMAES>(std::move(mean), sigma0, o);
  }
  refresh();
}

std::vector<std::vector<std::int64_t>> CMASampler::members() const {
  std::vector<std::vector<std::int64_t>> keys(cma_->population_size());
  for (std::size_t k = 0; k < keys.size(); ++k) keys[k] = {cma_->sample_key(k)};
  return keys;
}

void CMASampler::rebuild_member(const std::vector<std::int64_t>& key, float* out) const {
  const std::vector<double> x = cma_->regenerate(key.at(0));
  for (std::size_t j = 0; j < x.size(); ++j) out[j] = static_cast<float>(x[j]);
}

std::pair<std::size_t, std::string> CMASampler::requirement() const { return {1, "members"}; }

void CMASampler::tell(const std::vector<std::vector<double>>& per_member) {
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

void CMASampler::compute_center(float* out) const {
  const std::vector<double> m = cma_->mean_solution();
  for (std::size_t j = 0; j < m.size(); ++j) out[j] = static_cast<float>(m[j]);
}

// ---- GASampler ------------------------------------------------------------

GASampler::GASampler(const GeneticAlgorithmOptions& options, std::vector<float> x0)
    : StrategySampler("GA", x0.size()),
      ga_(std::make_unique<GeneticAlgorithm>(options, std::move(x0))) {
  refresh();
}

void GASampler::reset(std::vector<float> x0) {
  if (x0.size() != num_params()) {
    throw std::invalid_argument("x0 holds " + std::to_string(x0.size()) + " values, expected " +
                                std::to_string(num_params()));
  }
  ga_ = std::make_unique<GeneticAlgorithm>(ga_->options(), std::move(x0));
  refresh();
}

std::vector<std::vector<std::int64_t>> GASampler::members() const {
  const auto& infos = ga_->phase() == GeneticAlgorithm::Phase::kFitness ? ga_->ask()
                                                                         : ga_->ask_elite_candidates();
  std::vector<std::vector<std::int64_t>> keys;
  keys.reserve(infos.size());
  for (const SamplingInfo& info : infos) keys.push_back(info.key);
  return keys;
}

void GASampler::rebuild_member(const std::vector<std::int64_t>& key, float* out) const {
  ga_->rebuild(key, out, ga_->options().num_threads);
}

std::pair<std::size_t, std::string> GASampler::requirement() const {
  if (ga_->phase() == GeneticAlgorithm::Phase::kFitness) return {1, "individuals"};
  return {ga_->options().elite_evaluations, "elite candidates"};
}

void GASampler::tell(const std::vector<std::vector<double>>& per_member) {
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

void GASampler::compute_center(float* out) const {
  const auto& elites = ga_->elites();
  if (elites.empty()) {
    std::copy(ga_->x0().begin(), ga_->x0().end(), out);
  } else {
    ga_->rebuild(elites[0].key, out, ga_->options().num_threads);
  }
}

}  // namespace evokit
