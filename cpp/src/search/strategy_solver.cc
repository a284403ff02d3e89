// The adapter from an ask/tell strategy to a Solver (StrategySolver); see
// evokit/strategy_solver.h. The strategies' side of it is next to each:
// CMABase in cma/cma_solver.cc, GeneticAlgorithm in ga/ga_solver.cc,
// DistributionStrategy in distribution/distribution.cc, GaussianStrategy in
// gaussian/gaussian_solver.cc. The AskTellStrategy defaults (ask_tell.h) are
// here too.
#include "evokit/strategy_solver.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include "evokit/noise.h"
#include "evokit/population.h"
#include "search/option_checks.h"
#include "search/strategy_internal.h"

namespace evokit {

namespace detail {

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

// What every strategy family shares: no mirrored pairs, at least two members.
void validate_strategy_options(const OptionSet& o) {
  const std::string name = o.text("sampling.type");
  if (o.flag("antithetic")) {
    fail("antithetic", "must be false with " + name +
                           " (mirrored pairs are a Gaussian-sampling scheme), got true");
  }
  at_least(o, "population_size", 2);
}

}  // namespace detail

namespace {

std::string key_text(const std::vector<std::int64_t>& key) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < key.size(); ++i) out << (i ? ", " : "") << key[i];
  out << ']';
  return out.str();
}
}  // namespace

using detail::get_infos;
using detail::put_infos;

// ---- AskTellStrategy: members drawn on demand (defaults) ---------------------

namespace {

[[noreturn]] void not_on_demand(const AskTellStrategy& strategy, const char* what) {
  throw std::logic_error(std::string(what) + "(): the " + strategy.kind() +
                         " strategy hands out generations; it draws no members on demand");
}

}  // namespace

std::int64_t AskTellStrategy::sample_iteration() const { not_on_demand(*this, "sample_iteration"); }

SamplingInfo AskTellStrategy::draw_member(int /*clone*/, std::uint64_t /*stream*/) {
  not_on_demand(*this, "draw_member");
}

void AskTellStrategy::check_sample(const SamplingInfo& /*info*/) const {
  not_on_demand(*this, "check_sample");
}

void AskTellStrategy::rebuild_sample(const SamplingInfo& /*info*/, float* /*out*/,
                                     int /*num_threads*/) const {
  not_on_demand(*this, "rebuild_sample");
}

Population AskTellStrategy::sample_population(const std::vector<const SamplingInfo*>& /*members*/,
                                              int /*num_threads*/) const {
  not_on_demand(*this, "sample_population");
}

std::size_t AskTellStrategy::tell_samples(const std::vector<SamplingInfo>& /*infos*/,
                                          const std::vector<double>& /*rewards*/,
                                          const ParamsLookup& /*history*/) {
  not_on_demand(*this, "tell_samples");
}

void AskTellStrategy::load_center(const float* /*center*/, std::int64_t /*iteration*/) {
  not_on_demand(*this, "load_center");
}

void AskTellStrategy::set_center(const float* /*params*/) {
  throw std::logic_error("set_center(): the " + kind() +
                         " strategy's centre follows from its state; it cannot be replaced");
}

// ---- StrategySolver --------------------------------------------------------

namespace {

const AskTellStrategy& checked(const std::unique_ptr<AskTellStrategy>& strategy) {
  if (strategy == nullptr) throw std::invalid_argument("StrategySolver needs a strategy, got none");
  return *strategy;
}

}  // namespace

StrategySolver::StrategySolver(std::string family, std::unique_ptr<AskTellStrategy> strategy)
    : Solver(std::move(family), std::vector<float>(checked(strategy).member_size())),
      strategy_(std::move(strategy)),
      kind_(strategy_->kind()),
      on_demand_(strategy_->draws_on_demand()) {
  refresh();
}

std::int64_t StrategySolver::model_iter_id() const noexcept {
  return on_demand_ ? strategy_->sample_iteration() : model_iter_id_;
}

void StrategySolver::set_center(const std::vector<float>& params) {
  if (params.size() != center_.size()) {
    throw std::invalid_argument("set_center() got " + std::to_string(params.size()) +
                                " parameters, expected num_params " +
                                std::to_string(center_.size()));
  }
  strategy_->set_center(params.data());
  refresh();
}

std::int64_t StrategySolver::draws() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return draws_;
}

SamplingInfo StrategySolver::draw(int clone, std::uint64_t stream) {
  if (on_demand_) return strategy_->draw_member(clone, stream);
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
  if (on_demand_) return strategy_->check_sample(info);
  check_iteration(info, "");
  if (!is_member(info)) {
    throw std::invalid_argument("key " + key_text(info.key) + " is not a member of iteration " +
                                std::to_string(model_iter_id_));
  }
}

void StrategySolver::rebuild(const SamplingInfo& info, float* out, int num_threads) const {
  if (on_demand_) return strategy_->rebuild_sample(info, out, num_threads);
  check_member(info);
  if (replica_rows_.empty()) {
    std::shared_lock<std::shared_mutex> lock(generation_mutex_);
    strategy_->rebuild_member(info.key, out);
    return;
  }
  const std::size_t p = num_params();
  const auto member = std::find(members_.begin(), members_.end(), info.key) - members_.begin();
  const float* row = replica_rows_.data() + static_cast<std::size_t>(member) * p;
  std::copy(row, row + p, out);
}

Population StrategySolver::population(const std::vector<const SamplingInfo*>& members,
                                      int num_threads) const {
  if (on_demand_) return strategy_->sample_population(members, num_threads);
  if (replica_rows_.empty()) {
    std::size_t count = 0;
    for (const SamplingInfo* info : members) count += info != nullptr;
    if (count >= members_.size()) {
      std::unique_lock<std::shared_mutex> lock(generation_mutex_);
      strategy_->prepare_members();
    }
  }
  return Solver::population(members, num_threads);
}

SolverState StrategySolver::member_rows_state() const {
  SolverState state = state_header();
  std::vector<SamplingInfo> infos(members_.size());
  std::vector<float>& rows = state.floats["members.rows"];
  rows.resize(members_.size() * num_params());
  for (std::size_t m = 0; m < members_.size(); ++m) {
    infos[m].key = members_[m];
    infos[m].model_iter_id = model_iter_id_;
    strategy_->rebuild_member(members_[m], rows.data() + m * num_params());
  }
  put_infos(state, "members", infos);
  state.floats["center"] = center_;
  return state;
}

SolverState StrategySolver::sampling_state() const {
  switch (strategy_->replica_state()) {
    case AskTellStrategy::ReplicaState::kFullState:
      return save();
    case AskTellStrategy::ReplicaState::kMemberRows:
      return member_rows_state();
    case AskTellStrategy::ReplicaState::kCenter:
      return center_state();
    case AskTellStrategy::ReplicaState::kSmaller:
      break;
  }
  SolverState full = save();
  std::size_t size = 0;
  for (const auto& [name, v] : full.doubles) size += v.size();
  for (const auto& [name, v] : full.floats) size += v.size();
  for (const auto& [name, v] : full.ints) size += v.size();
  if (size <= members_.size() * num_params()) return full;
  return member_rows_state();
}

void StrategySolver::load_sampling_state(const SolverState& state) {
  switch (strategy_->replica_state()) {
    case AskTellStrategy::ReplicaState::kFullState:
      return load(state);
    case AskTellStrategy::ReplicaState::kMemberRows:
      return load_member_rows(state);
    case AskTellStrategy::ReplicaState::kCenter:
      return load_center_state(state);
    case AskTellStrategy::ReplicaState::kSmaller:
      break;
  }
  if (state.ints.count("members") != 0) {
    load_member_rows(state);
  } else {
    load(state);
  }
}

SolverState StrategySolver::center_state() const {
  SolverState state = state_header();
  state.floats["center"] = center_;
  return state;
}

void StrategySolver::load_center_state(const SolverState& state) {
  check_state(state, /*needs_noise_version=*/false);
  const std::vector<float>& centre = state.float_array("center", num_params());
  strategy_->load_center(centre.data(), state.model_iter_id);  // checks, then replaces
  refresh();
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
  const auto [need, what] = strategy_->member_requirement();
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
  if (on_demand_) return Solver::shortfall(infos, rewards);
  return shortfall_of(group(infos, rewards));
}

UpdateStats StrategySolver::update(const std::vector<SamplingInfo>& infos,
                                   const std::vector<double>& rewards,
                                   const ParamsLookup& history) {
  if (on_demand_) {
    UpdateStats stats;
    stats.num_corrected = strategy_->tell_samples(infos, rewards, history);
    refresh();
    stats.num_samples = infos.size();
    stats.model_iter_id = model_iter_id();
    return stats;
  }
  if (!replica_rows_.empty()) {
    throw std::logic_error(kind_ + " replica (loaded from a sampling state) rebuilds members "
                           "only; updates belong to the solver that owns the state");
  }
  const auto per_member = group(infos, rewards);
  const std::string missing = shortfall_of(per_member);
  if (!missing.empty()) throw std::invalid_argument(missing);
  // Each member's value, once for every family: minus the mean of its rewards.
  const std::size_t averaged = strategy_->rewards_averaged();
  std::vector<double> values(per_member.size());
  for (std::size_t m = 0; m < per_member.size(); ++m) {
    const std::size_t n = averaged != 0 ? averaged : per_member[m].size();
    double sum = 0.0;
    for (std::size_t k = 0; k < n; ++k) sum += per_member[m][k];
    values[m] = -(sum / static_cast<double>(n));
  }
  strategy_->tell_members(values);
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
  if (!on_demand_) members_ = strategy_->member_keys();
  strategy_->center_params(center_.data());
  center_changed();
}

SolverState StrategySolver::save() const {
  SolverState state = state_header();
  if (!on_demand_) state.ints["draws"] = {draws()};  // on demand: the strategy's counters
  strategy_->save_entries(state);
  return state;
}

void StrategySolver::load(const SolverState& state) {
  if (on_demand_) {
    // The layout of every release's solver.pb: no "draws", any noise version.
    check_state(state, /*needs_noise_version=*/false);
    strategy_->load_entries(state);  // validates, then replaces; the centre stays
    return;
  }
  check_state(state, /*needs_noise_version=*/true);
  const std::int64_t draws = state.int_value("draws");
  if (draws < 0) throw std::invalid_argument("draws must be >= 0, got " + std::to_string(draws));
  strategy_->load_entries(state);  // validates, then replaces
  replica_rows_.clear();
  model_iter_id_ = state.model_iter_id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draws_ = draws;
  }
  refresh();
}

}  // namespace evokit
