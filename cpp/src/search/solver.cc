// The Solver base, its state and the options every family shares; see
// evokit/solver.h. The registry of families is solver_registry.cc.
#include "evokit/solver.h"

#include <stdexcept>
#include <string>
#include <vector>
#include <utility>

#include "evokit/noise.h"
#include "evokit/population.h"
#include "common/messages.h"
#include "search/option_checks.h"

namespace evokit {

// ---- SolverState ------------------------------------------------------------

namespace {

template <class T>
const std::vector<T>& array_of(const std::map<std::string, std::vector<T>>& arrays,
                               const std::string& name, std::optional<std::size_t> size,
                               const char* type) {
  const auto it = arrays.find(name);
  if (it == arrays.end()) {
    throw std::invalid_argument("state entry '" + name + "' (" + type + ") is missing");
  }
  if (size && it->second.size() != *size) {
    throw std::invalid_argument("state entry '" + name + "' holds " +
                                std::to_string(it->second.size()) + " values, expected " +
                                std::to_string(*size));
  }
  return it->second;
}

}  // namespace

const std::vector<float>& SolverState::float_array(const std::string& name,
                                                   std::optional<std::size_t> size) const {
  return array_of(floats, name, size, "float32");
}

const std::vector<double>& SolverState::double_array(const std::string& name,
                                                     std::optional<std::size_t> size) const {
  return array_of(doubles, name, size, "float64");
}

const std::vector<std::int64_t>& SolverState::int_array(const std::string& name,
                                                        std::optional<std::size_t> size) const {
  return array_of(ints, name, size, "int64");
}

double SolverState::double_value(const std::string& name) const {
  return double_array(name, 1)[0];
}

std::int64_t SolverState::int_value(const std::string& name) const {
  return int_array(name, 1)[0];
}

// ---- OptionSet --------------------------------------------------------------

void OptionSet::set(const std::string& name, Value value) { values_[name] = std::move(value); }

bool OptionSet::has(const std::string& name) const { return values_.count(name) != 0; }

const OptionSet::Value& OptionSet::at(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) throw std::invalid_argument("solver option '" + name + "' is missing");
  return it->second;
}

namespace {

[[noreturn]] void wrong_type(const std::string& name, const char* expected) {
  throw std::invalid_argument("solver option '" + name + "' must be " + expected);
}

}  // namespace

bool OptionSet::flag(const std::string& name) const {
  const Value& v = at(name);
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  wrong_type(name, "a bool");
}

std::int64_t OptionSet::integer(const std::string& name) const {
  const Value& v = at(name);
  if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return *i;
  wrong_type(name, "an integer");
}

double OptionSet::real(const std::string& name) const {
  const Value& v = at(name);
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  wrong_type(name, "a number");
}

const std::string& OptionSet::text(const std::string& name) const {
  const Value& v = at(name);
  if (const std::string* s = std::get_if<std::string>(&v)) return *s;
  wrong_type(name, "a string");
}

const std::vector<std::int64_t>& OptionSet::integers(const std::string& name) const {
  const Value& v = at(name);
  if (const auto* list = std::get_if<std::vector<std::int64_t>>(&v)) return *list;
  wrong_type(name, "a list of integers");
}

// ---- Solver -------------------------------------------------------------------

Solver::Solver(std::string family, std::vector<float> x0)
    : center_(std::move(x0)), family_(std::move(family)) {}

Population Solver::population(const std::vector<const SamplingInfo*>& members,
                              int num_threads) const {
  const std::size_t p = num_params();
  std::vector<float> rows(members.size() * p);
  for (std::size_t i = 0; i < members.size(); ++i) {
    float* row = rows.data() + i * p;
    if (members[i] == nullptr) {
      std::copy(center_.begin(), center_.end(), row);
      continue;
    }
    try {
      rebuild(*members[i], row, num_threads);
    } catch (const std::out_of_range& e) {
      throw std::out_of_range("sampling info " + std::to_string(i) + ": " + e.what());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("sampling info " + std::to_string(i) + ": " + e.what());
    }
  }
  return Population(std::move(rows), members.size(), p);
}

std::string Solver::shortfall(const std::vector<SamplingInfo>& infos,
                              const std::vector<double>& rewards) const {
  if (infos.size() != rewards.size()) {
    throw std::invalid_argument("got " + std::to_string(infos.size()) + " sampling infos and " +
                                std::to_string(rewards.size()) + " rewards");
  }
  return infos.empty() ? "an update needs at least one sample" : "";
}

SolverState Solver::state_header() const {
  SolverState state;
  state.family = family_;
  state.model_iter_id = model_iter_id();
  state.noise_version = kNoiseVersion;
  return state;
}

void Solver::check_state(const SolverState& state, bool needs_noise_version) const {
  if (state.family != family_) {
    throw std::invalid_argument("the state is of " +
                                (state.family.empty() ? std::string("no family") : state.family) +
                                ", this solver is " + family_);
  }
  if (state.model_iter_id < 0) {
    throw std::invalid_argument("model_iter_id must be >= 0, got " +
                                std::to_string(state.model_iter_id));
  }
  if (needs_noise_version && state.noise_version != kNoiseVersion) {
    throw std::invalid_argument(
        std::string("the state refers to noise version ") + std::to_string(state.noise_version) +
        " (" + noise_version_name(state.noise_version) + "), this EvoKit rebuilds noise version " +
        std::to_string(kNoiseVersion) + " (" + noise_version_name(kNoiseVersion) +
        "): its keys would give different noise; finish it with the EvoKit that wrote it, or "
        "start afresh from its model with `evokit init-solver`");
  }
}

// ---- options shared by the families ---------------------------------------

namespace detail {

void validate_common_options(const OptionSet& o) {
  at_least(o, "population_size", 1);
  non_negative(o, "weight_decay");
  at_least(o, "num_threads", 1);
  fitness_shaping(o);
  optimizer_options(o);
  positive(o, "optimizer.base_lr");
  unit_interval(o, "optimizer.momentum.momentum");
  unit_interval(o, "optimizer.adam.beta1");
  unit_interval(o, "optimizer.adam.beta2");
  positive(o, "optimizer.adam.epsilon");
}

OptimizerOptions optimizer_options(const OptionSet& o) {
  OptimizerOptions opt;
  const std::string& type = o.text("optimizer.type");
  if (type == "SGD") {
    opt.type = OptimizerOptions::Type::kSGD;
  } else if (type == "MOMENTUM") {
    opt.type = OptimizerOptions::Type::kMomentum;
  } else if (type == "ADAM") {
    opt.type = OptimizerOptions::Type::kAdam;
  } else {
    fail("optimizer.type", "must be one of SGD, MOMENTUM, ADAM, got " + type);
  }
  opt.learning_rate = static_cast<float>(o.real("optimizer.base_lr"));
  opt.momentum = static_cast<float>(o.real("optimizer.momentum.momentum"));
  opt.beta1 = static_cast<float>(o.real("optimizer.adam.beta1"));
  opt.beta2 = static_cast<float>(o.real("optimizer.adam.beta2"));
  opt.epsilon = static_cast<float>(o.real("optimizer.adam.epsilon"));
  return opt;
}

FitnessShaping fitness_shaping(const OptionSet& o) {
  const std::string& name = o.text("fitness_shaping");
  if (name == "CENTERED_RANK") return FitnessShaping::kCenteredRank;
  if (name == "Z_SCORE") return FitnessShaping::kZScore;
  if (name == "RAW") return FitnessShaping::kRaw;
  fail("fitness_shaping", "must be one of CENTERED_RANK, Z_SCORE, RAW, got " + name);
}

}  // namespace detail

}  // namespace evokit
