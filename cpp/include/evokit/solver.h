// Solver: the one interface every sampling family implements (STL + OpenMP).
//
// A solver owns the search distribution of one family and everything about
// its members:
//   - drawing a member for a sampling agent: draw() returns its SamplingInfo
//     (the keys the member is rebuilt from), a pure function of the solver's
//     state, the clone it is drawn for and that clone's stream salt;
//   - rebuilding a member's parameters from (state, info) alone: rebuild(),
//     or a whole Population for batched forward passes;
//   - validating an info (iteration, key count and range, membership);
//   - telling rewards (larger is better): update();
//   - its full state, the key-draw counters included: save() / load(), as a
//     protobuf-free SolverState that the layers above write to solver.pb.
// ESAgent (es_agent.h) drives any Solver and never asks which family it is;
// so do the Python package and the C++ io component. Every family is a
// StrategySolver (strategy_solver.h), the one adapter from an ask/tell
// strategy (AskTellStrategy, ask_tell.h), over:
//   GAUSSIAN_SAMPLING  GaussianStrategy (gaussian_solver.h): OpenAI-ES with
//                      SGD, momentum or Adam, members drawn on demand,
//                      EvoKit's correction for older samples
//   ARS_SAMPLING       GaussianStrategy with ARS's options (Mania et al. 2018)
//   CMA_SAMPLING       CMA-ES / sep-CMA-ES (cma_es.h)
//   GA_SAMPLING        the GA of Such et al. (ga.h)
//   SNES_SAMPLING ...  a distribution family (distribution.h: SNES, xNES,
//   MAES_SAMPLING      CR-FM-NES, LM-MA-ES, PGPE, CEM, MA-ES)
// A family is made from its options (SolverConfig of proto/evokit.proto,
// flattened to dotted names: OptionSet) by the registry declared at the end
// of this file (cpp/src/search/solver_registry.cc, the one file that knows every
// family); adding a family is its own files and one entry there (a
// distribution family: one line in cpp/src/search/distribution/distribution_registry.cc).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "evokit/sample_key.h"

namespace evokit {

class Population;

// The core's view of the SamplingInfo message in proto/evokit.proto.
struct SamplingInfo {
  SampleKey key;
  std::int64_t model_iter_id = 0;
  bool mirrored = false;
};

struct UpdateStats {
  std::size_t num_samples = 0;
  std::size_t num_corrected = 0;   // samples from older iterations
  std::int64_t model_iter_id = 0;  // after the update
};

// The centre parameters of an older iteration, or null if unknown.
using ParamsLookup = std::function<const std::vector<float>*(std::int64_t iteration)>;

// A solver's state, protobuf-free: named arrays of three element types. The
// names are the family's own ("optimizer.m", "cma.mean", "ga.population",
// ...); solver.pb stores each as a typed NamedVector (proto/evokit.proto),
// so the file layers need no family-specific code.
struct SolverState {
  std::string family;              // e.g. "GAUSSIAN_SAMPLING"
  std::int64_t model_iter_id = 0;  // updates so far
  int noise_version = 0;           // the noise definition keys refer to (noise.h)
  std::map<std::string, std::vector<float>> floats;
  std::map<std::string, std::vector<double>> doubles;
  std::map<std::string, std::vector<std::int64_t>> ints;

  // Lookups for load(): std::invalid_argument naming the entry when it is
  // missing or (size given) holds another number of values.
  const std::vector<float>& float_array(const std::string& name,
                                        std::optional<std::size_t> size = std::nullopt) const;
  const std::vector<double>& double_array(const std::string& name,
                                          std::optional<std::size_t> size = std::nullopt) const;
  const std::vector<std::int64_t>& int_array(const std::string& name,
                                             std::optional<std::size_t> size = std::nullopt) const;
  double double_value(const std::string& name) const;
  std::int64_t int_value(const std::string& name) const;
};

// Solver options by name: the fields of proto SolverConfig flattened to
// dotted paths below `solver` ("population_size", "sampling.type",
// "sampling.gaussian_sampling.std", "optimizer.adam.beta1", ...), enums as
// their value names. Both Python and the C++ io component build it by
// walking the message (unset fields with their defaults), so every option
// is named once, in the .proto. A missing name or a value of another type
// is a std::invalid_argument naming it.
class OptionSet {
 public:
  // A message's repeated integer field is a list (no solver option is one).
  using Value = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>>;
  void set(const std::string& name, Value value);
  bool has(const std::string& name) const;
  bool flag(const std::string& name) const;
  std::int64_t integer(const std::string& name) const;
  double real(const std::string& name) const;  // an integer is widened
  const std::string& text(const std::string& name) const;
  const std::vector<std::int64_t>& integers(const std::string& name) const;
  const std::map<std::string, Value>& values() const noexcept { return values_; }

 private:
  const Value& at(const std::string& name) const;
  std::map<std::string, Value> values_;
};

class Solver {
 public:
  virtual ~Solver() = default;
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  // The family's name: the SamplingConfig.Type value ("GAUSSIAN_SAMPLING").
  const std::string& family() const noexcept { return family_; }
  // The centre (the policy to deploy): its storage never moves, a reference
  // stays valid and sees every update.
  const std::vector<float>& center() const noexcept { return center_; }
  std::size_t num_params() const noexcept { return center_.size(); }
  // Updates so far (Gaussian: the optimizer's step count, which is what
  // Adam's bias correction uses).
  virtual std::int64_t model_iter_id() const noexcept { return model_iter_id_; }
  // Bumped by every change of the centre (update, load, set_center): what a
  // buffer of parameters materialised from an older centre is stale by.
  std::uint64_t center_version() const noexcept { return center_version_.load(); }

  // The next member for sampling agent `clone` (>= 0) whose keys are salted
  // by `stream`; advances that clone's draw counter. Thread-safe.
  virtual SamplingInfo draw(int clone, std::uint64_t stream) = 0;
  // Throws (std::invalid_argument or std::out_of_range, "sampling info: ...")
  // unless `info` can be rebuilt now; set_noise() takes it at the current
  // iteration after this check.
  virtual void check_member(const SamplingInfo& info) const = 0;
  // out = the parameters of member `info` (num_params floats), checked.
  virtual void rebuild(const SamplingInfo& info, float* out, int num_threads) const = 0;
  // The members for a batched forward pass; a null entry is the centre.
  // Default: explicit rows from rebuild(). Errors name the member.
  virtual Population population(const std::vector<const SamplingInfo*>& members,
                                int num_threads) const;

  // Why these samples are not yet enough for an update ("" when they are);
  // throws like update() for a sample that cannot be told.
  virtual std::string shortfall(const std::vector<SamplingInfo>& infos,
                                const std::vector<double>& rewards) const;
  // Whether samples drawn at older iterations can be told (given the
  // centres of their iterations as history), or only the current one's.
  virtual bool corrects_older_samples() const noexcept { return false; }
  // Whether members 2p and 2p + 1 of a generation are a mirrored pair (one
  // noise, opposite signs), which the training loop and the online sampler
  // then evaluate on the same episodes.
  virtual bool mirrored_pairs() const noexcept { return false; }
  // Tells the rewards (larger is better) of `infos`. Everything is checked
  // first (errors name the sample); the state is unchanged on error.
  virtual UpdateStats update(const std::vector<SamplingInfo>& infos,
                             const std::vector<double>& rewards,
                             const ParamsLookup& history = nullptr) = 0;

  // The full state (draw counters included): load(save()) continues bit for
  // bit. load() checks everything before it changes anything.
  virtual SolverState save() const = 0;
  virtual void load(const SolverState& state) = 0;
  // What a replica needs to rebuild members (an evaluation worker): by
  // default the full state; a family whose members need less (Gaussian: the
  // centre and the iteration) overrides both.
  virtual SolverState sampling_state() const { return save(); }
  virtual void load_sampling_state(const SolverState& state) { load(state); }

 protected:
  Solver(std::string family, std::vector<float> x0);
  // Checks the family, the iteration (>= 0) and the noise version of a
  // state given to load().
  void check_state(const SolverState& state, bool needs_noise_version) const;
  // A state naming this solver: its family, iteration and noise version.
  SolverState state_header() const;
  void center_changed() noexcept { center_version_.fetch_add(1); }

  std::vector<float> center_;  // sized once, never reallocated
  std::int64_t model_iter_id_ = 0;

 private:
  std::string family_;
  std::atomic<std::uint64_t> center_version_{0};
};

// ---- the registry -----------------------------------------------------------

// The family names, in SamplingConfig.Type order.
std::vector<std::string> solver_families();
// Checks every option the family of options.text("sampling.type") reads
// (std::invalid_argument "solver.<name> <what>, got <value>": the message
// starts with the option's full name). With num_params, also the checks that
// need the model's size.
void validate_solver_options(const OptionSet& options,
                             std::optional<std::size_t> num_params = std::nullopt);
// The options whose change between iterations of one run would give keys
// in existing logs another meaning: what a warehouse fingerprints. In a
// fixed order, per family.
std::vector<std::string> solver_key_options(const OptionSet& options);
// The solver the options describe, starting from x0 (the model's
// parameters), its kernels on num_threads threads (>= 1). Validates first.
std::unique_ptr<Solver> make_solver(const OptionSet& options, std::vector<float> x0,
                                    int num_threads);

}  // namespace evokit
