// evokit::io::ESAgent: EvoKit's agent API for C++ services, over the core's
// evokit::ESAgent with the config, the ONNX model and the solver files.
//
//   evokit::io::ESAgent agent;
//   agent.load_config("config.prototxt");
//   agent.load_inference_model("model_dir");        // a dir holding model.onnx, or a file
//   agent.init_solver();
//   std::vector<evokit::io::ESAgent> clones;
//   for (int i = 0; i < n; ++i) clones.push_back(agent.clone());
//   for (int i = 0; i < n; ++i) infos[i] = clones[i].add_noise();
//   #pragma omp parallel for
//   for (int i = 0; i < n; ++i) rewards[i] = evaluate(clones[i]);  // clones[i].predict(obs)
//   agent.update(infos, rewards);                   // clones see the new centre
//   agent.save_inference_model("out"); agent.save_solver("out");
//
// A service that resumes from saved files (PARL EvoKit's online sampling and
// offline update programs) calls load_solver() instead of init_solver():
//
//   agent.load_config("config.prototxt");
//   agent.load_inference_model("model_dir");       // the model saved with the solver
//   agent.load_solver("model_dir");                // builds the solver, restores its state
//
// or, from a warehouse, takes the iteration io::Warehouse::iteration() read
// and verified (warehouse.h):
//
//   const evokit::io::Iteration it = warehouse.iteration(k);
//   evokit::io::ESAgent agent(it);                 // nothing read or checked again
//
// The sampling family is the config's solver.sampling.type: the core's
// registry (evokit/solver.h) makes its Solver (Gaussian sampling, CMA-ES,
// the GA), and this class never asks which. add_noise() takes the member the
// solver draws for the clone; update() tells the solver the rewards (larger
// is better); the centre (the policy saved by save_inference_model) is the
// solver's. Gaussian sampling keys each clone's draws by the clone (add_noise
// may run in parallel); CMA and the GA hand a generation's members out in
// the order add_noise is called, so call it in a fixed order (as above) when
// which clone gets which member must be reproducible.
//
// The original agent owns the solver; clones share it (and the model graph)
// and own only their SamplingInfo, exactly as the core's ESAgent::clone. A
// perturbed clone's parameters are materialised on demand into a buffer of
// a pool shared by all clones (at most 256 MiB by default:
// core().set_params_pool_bytes() changes it; a clone whose buffer another
// clone took materialises again when it next predicts), so N clones cost N
// SamplingInfos plus the pool, not N parameter copies. Clones may outlive
// the original.
//
// Threads (cpp/io/tests/test_es_agent_threads.cc):
//   - predict() may run on any number of threads at once, on distinct
//     clones, on the same clone, and on the original: a perturbed clone
//     leases its parameters for the forward pass (core ESAgent::
//     lease_params: a buffer being read is never taken by another clone, and
//     a clone's parameters are materialised once however many threads ask);
//     a recurrent model's callers each pass their own state;
//   - add_noise() and set_noise() may run concurrently on distinct clones,
//     and with predict() on other clones and the original, but not with any
//     other call on the same clone (they change its noise);
//   - clone() on the original may run concurrently with clone() and with the
//     calls above;
//   - update(), and load_config, set_config, load_inference_model,
//     init_solver, load_solver and load_solver_state on the original, change
//     the solver, centre or model that every clone reads: call them only
//     while no other call runs on the original or any of its clones (an
//     update drops every clone's noise: clones then predict the new centre
//     until their next add_noise);
//   - params() of a perturbed clone is a reference into its pool buffer
//     without a lease: valid until another clone takes the buffer (use
//     predict, or core().lease_params(), while other threads use clones);
//   - anything else (shortfall, solver_state, the savers, core()'s solver):
//     not concurrently with add_noise, set_noise or the calls that change the
//     solver;
//   - an agent is not moved or destroyed while another thread uses it.
// A materialisation runs on solver.num_threads OpenMP threads: a service
// that predicts from several threads of its own keeps that at 1.
//
// Errors are exceptions (ConfigError, ModelError, SolverFileError;
// std::logic_error for a call out of order or on the wrong kind of agent).
// Agents are movable, not copyable.
#pragma once

#include "evokit/formats/warehouse.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "evokit/es_agent.h"
#include "evokit/io/evokit.pb.h"
#include "evokit/io/onnx_model.h"
#include "evokit/policy_graph.h"

namespace evokit::io {

inline constexpr const char* kModelFile = formats::kWarehouseModelFile;
inline constexpr const char* kSolverFile = formats::kWarehouseSolverFile;

struct Iteration;  // a verified warehouse iteration (warehouse.h)

// SamplingInfo between the file format and the core.
evokit::SamplingInfo to_core(const proto::SamplingInfo& info);
proto::SamplingInfo to_proto(const evokit::SamplingInfo& info);

// Refuses a solver state (named `path` in errors) that does not belong to
// `model` at `params` under `config`: the checks of
// ESAgent::load_solver_state, in its order (num_params, fingerprint version,
// model fingerprint, with `exact_model` the params_fingerprint where the
// state records one, the config's optimizer type). SolverFileError starting
// with `path`.
void check_solver_state(const proto::SolverState& state, const OnnxModel& model,
                        const std::vector<float>& params, const proto::EvoKitConfig& config,
                        const std::string& path, bool exact_model);

class ESAgent {
 public:
  ESAgent();
  // The agent at a warehouse iteration (Warehouse::iteration, which read and
  // verified its files): its config, model and graph (shared with
  // `iteration`), and the solver the config describes (validate_config with
  // the model's num_params, then make_solver, as init_solver()) with the
  // iteration's solver state restored (as load_solver() restores it, without
  // reading or checking anything again). Throws ConfigError for a config the
  // solver refuses, SolverFileError "<solver.pb>: invalid solver state: ...",
  // std::logic_error for an Iteration without a model (not one
  // Warehouse::iteration returned).
  explicit ESAgent(const Iteration& iteration);
  ~ESAgent();
  ESAgent(ESAgent&&) noexcept;
  ESAgent& operator=(ESAgent&&) noexcept;
  ESAgent(const ESAgent&) = delete;
  ESAgent& operator=(const ESAgent&) = delete;

  // ---- setup (original agent only) ----
  // Loads and validates a .prototxt config, in EvoKit's layout or PARL
  // EvoKit's (io::load_config; ConfigError naming the file, line and field).
  const proto::EvoKitConfig& load_config(const std::string& path);
  // Uses `config`; `source` names it in errors.
  const proto::EvoKitConfig& set_config(const proto::EvoKitConfig& config,
                                        const std::string& source = "<config>");
  // An .onnx file, or a directory holding model.onnx. Uses the config's
  // solver.param_pattern if a config is loaded (".*" otherwise). Drops the
  // solver: call init_solver() or load_solver() again.
  void load_inference_model(const std::string& path);
  // Builds the solver the config's `solver` section describes, starting from
  // the model's parameters: validate_config (ConfigError "<source>:
  // solver.<option> ..."), then the core's make_solver on
  // solver.num_threads threads. Not needed before load_solver(), which
  // builds the solver too.
  void init_solver();

  // ---- sampling ----
  // A sampling agent sharing the model graph and the solver state.
  ESAgent clone();
  // Clones only: take the next member the solver draws for this clone,
  // write its info (EvoKit's signature) / return it: the keys it is rebuilt
  // from.
  void add_noise(proto::SamplingInfo* info);
  proto::SamplingInfo add_noise();
  // Clones only: take the member `info` names (checked by the solver), at
  // the current iteration.
  void set_noise(const proto::SamplingInfo& info);
  // Salt for the keys of clones made afterwards (the sampler's id).
  void set_sampling_stream(std::uint64_t stream);
  std::uint64_t sampling_stream() const;

  // ---- inference ----
  // The first model output for `batch` observations (obs.size() must be
  // batch * obs_size()), computed natively with this agent's parameters:
  // the member's for a clone with current noise, else the centre. The same
  // bits as graph().run() with params(); one observation runs a plan
  // compiled once when the model was loaded (shared by the clones), a batch
  // compiles one per call. Thread-safe as the header says ("Threads").
  // A recurrent model (model().recurrent()) is refused here: use the
  // overload with a state.
  std::vector<float> predict(const std::vector<float>& obs, std::size_t batch = 1) const;
  // Recurrent models: the same, reading the state of the `batch`
  // observations from `state` and replacing it by the next state. The
  // caller owns the state (one per episode, a service one per session):
  // start every episode from initial_state(batch) and pass it back at each
  // step. Its layout: each state tensor in turn (model().state_names()
  // order), C order, with the batch size filled in. Throws
  // std::invalid_argument for a state of another size.
  std::vector<float> predict(const std::vector<float>& obs, std::vector<float>& state,
                             std::size_t batch = 1) const;
  // A zero state for `batch` observations (empty for a feed-forward model).
  std::vector<float> initial_state(std::size_t batch = 1) const;
  std::size_t obs_size() const;

  // ---- update ----
  // Original only: tells the solver the rewards (larger is better) of the
  // samples `infos`; everything is checked first (errors name the sample),
  // nothing changes on error. `history` gives the centres of older
  // iterations (Gaussian sampling's correction for older samples).
  UpdateStats update(const std::vector<proto::SamplingInfo>& infos,
                     const std::vector<double>& rewards, const ParamsLookup& history = nullptr);
  // The same for a std::vector<float> of rewards (widened exactly), for
  // callers written when rewards were float (cpp/io/tests/test_fingerprint.cc).
  // A template so that a braced list of rewards still picks the double
  // overload.
  template <class Reward, class = std::enable_if_t<std::is_same_v<Reward, float>>>
  UpdateStats update(const std::vector<proto::SamplingInfo>& infos,
                     const std::vector<Reward>& rewards, const ParamsLookup& history = nullptr) {
    return update(infos, std::vector<double>(rewards.begin(), rewards.end()), history);
  }
  // Why these samples are not yet enough for an update ("" when they are,
  // e.g. CMA needs a reward for every member); throws like update() for a
  // sample that cannot be told.
  std::string shortfall(const std::vector<proto::SamplingInfo>& infos,
                        const std::vector<double>& rewards) const;

  // ---- files (original agent only) ----
  // dir/model.onnx with the centre parameters; returns the path.
  std::string save_inference_model(const std::string& dir) const;
  // The solver state as saved in solver.pb: the solver's full state (draw
  // counters included; state version 2, see solver_state.h), num_params,
  // the config's optimizer type, the config text, and the fingerprints of
  // the graph (model_fingerprint) and of the centre model
  // (params_fingerprint), version kFingerprintVersion: the same digests the
  // Python package computes (evokit/io/fingerprint.h).
  proto::SolverState solver_state() const;
  // What solver.pb holds: solver_state() and model_sha256, the sha256 of the
  // model save_inference_model() writes for the centre (a warehouse checks it
  // against its iteration's model.onnx). The same file as Python's
  // ESAgent.solver_file_state(), byte for byte.
  proto::SolverState solver_file_state() const;
  // solver_file_state() to dir/solver.pb, atomically; returns the path.
  std::string save_solver(const std::string& dir) const;
  // Restores dir/solver.pb as Python's ESAgent.load_solver does; a reloaded
  // agent continues as the saved one would have, bit for bit. Call it after
  // load_config() and load_inference_model() (std::logic_error naming the
  // missing one otherwise); init_solver() is not needed: see
  // load_solver_state(). Throws SolverFileError starting with the path: no
  // such file, its sha256 trailer missing or wrong (state_file.h), not a
  // solver state, then load_solver_state's checks with exact_model.
  void load_solver(const std::string& dir);
  // Restores a solver_state() message, checking in this order: num_params
  // present and equal to the model's, fingerprint version (only
  // kFingerprintVersion can be verified here), model fingerprint, with
  // `exact_model` the params_fingerprint where the state records one (the
  // centre, the loaded model's parameters until an update, must be the model
  // the state was saved with, not just one of the same graph: a refusal
  // names the model file), optimizer type equal to the config's;
  // then the solver's load() of state_from_proto(state, path), whose errors
  // become SolverFileError "<path>: invalid solver state: ...". Without a
  // solver (no init_solver() before), the one the config describes is built
  // first, as init_solver() builds it, and kept only if the state loads: on
  // any error the agent is left as it was. `path` names the state in errors.
  // Not while clones sample.
  void load_solver_state(const proto::SolverState& state,
                         const std::string& path = "<solver state>", bool exact_model = false);

  // ---- state ----
  bool is_clone() const noexcept;
  bool has_solver() const noexcept { return core_ != nullptr; }
  std::int64_t model_iter_id() const;
  std::size_t num_params() const;
  // The parameters predict() uses.
  const std::vector<float>& params() const;
  const proto::EvoKitConfig& config() const;
  const OnnxModel& model() const;
  const PolicyGraph& graph() const;
  // The core agent (std::logic_error before init_solver() or load_solver());
  // its solver() is the family's Solver, shared with the clones.
  evokit::ESAgent& core();
  const evokit::ESAgent& core() const;

 private:
  void require_original(const char* what) const;
  void require_solver(const char* what) const;
  void require_config_and_model(const char* what) const;
  // A core agent with the solver the config describes, at the model's
  // parameters (config and model loaded).
  std::unique_ptr<evokit::ESAgent> new_core() const;
  // Restores a state check_solver_state() accepted for this agent: into the
  // agent's solver, or into a new one kept only if the state loads.
  void restore_solver_state(const proto::SolverState& state, const std::string& path);
  // Sets graph_ and compiles plan1_ for it.
  void set_graph(std::shared_ptr<const PolicyGraph> graph);
  // The forward pass of predict(): plan1_ for one observation, else run().
  std::vector<float> forward(const float* obs, std::size_t batch, const std::vector<float>& params,
                             float* state) const;

  std::shared_ptr<const proto::EvoKitConfig> config_;
  std::string config_source_;
  std::string config_text_;  // the loaded file's text (validate_config's line numbers)
  std::shared_ptr<const OnnxModel> model_;
  std::shared_ptr<const PolicyGraph> graph_;
  // graph_ compiled for one observation (null if it does not compile):
  // predict() of one observation executes it instead of compiling a plan per
  // call. Immutable, shared by the clones.
  std::shared_ptr<const PolicyGraph::Plan> plan1_;
  std::vector<float> initial_params_;       // the model's, until the solver is built
  std::unique_ptr<evokit::ESAgent> core_;   // the original or a clone
  bool is_clone_ = false;
};

}  // namespace evokit::io
