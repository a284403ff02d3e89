// evokit::io::ESAgent: EvoKit's agent API for C++ services, over the core's
// evokit::ESAgent with the config, the ONNX model and the solver files.
//
//   evokit::io::ESAgent agent;
//   agent.load_config("config.prototxt");
//   agent.load_inference_model("model_dir");        // a dir holding model.onnx, or a file
//   agent.init_solver();
//   std::vector<evokit::io::ESAgent> clones;
//   for (int i = 0; i < n; ++i) clones.push_back(agent.clone());
//   #pragma omp parallel for
//   for (int i = 0; i < n; ++i) {
//     proto::SamplingInfo info;
//     clones[i].add_noise(&info);
//     rewards[i] = evaluate(clones[i]);            // clones[i].predict(obs) inside
//     infos[i] = info;
//   }
//   agent.update(infos, rewards);                   // clones see the new centre
//   agent.save_inference_model("out"); agent.save_solver("out");
//
// The original agent owns the centre parameters and the solver; clones share
// them (and the model graph) and own only their perturbed parameters, exactly
// as the core's ESAgent::clone. Errors are exceptions (ConfigError,
// ModelError, SolverFileError; std::logic_error for a call out of order or
// on the wrong kind of agent). Agents are movable, not copyable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evokit/es_agent.h"
#include "evokit/io/evokit.pb.h"
#include "evokit/io/onnx_model.h"
#include "evokit/policy_graph.h"

namespace evokit::io {

inline constexpr char kModelFile[] = "model.onnx";
inline constexpr char kSolverFile[] = "solver.pb";

// SamplingInfo between the file format and the core.
evokit::SamplingInfo to_core(const proto::SamplingInfo& info);
proto::SamplingInfo to_proto(const evokit::SamplingInfo& info);

class ESAgent {
 public:
  ESAgent();
  ~ESAgent();
  ESAgent(ESAgent&&) noexcept;
  ESAgent& operator=(ESAgent&&) noexcept;
  ESAgent(const ESAgent&) = delete;
  ESAgent& operator=(const ESAgent&) = delete;

  // ---- setup (original agent only) ----
  // Loads a .prototxt config (ConfigError naming the file and line).
  const proto::EvoKitConfig& load_config(const std::string& path);
  // Uses `config`; `source` names it in errors.
  const proto::EvoKitConfig& set_config(const proto::EvoKitConfig& config,
                                        const std::string& source = "<config>");
  // An .onnx file, or a directory holding model.onnx. Uses the config's
  // solver.param_pattern if a config is loaded (".*" otherwise). Drops the
  // solver: call init_solver() again.
  void load_inference_model(const std::string& path);
  // Builds the core agent (sampler, noise table, optimizer) from the config
  // and the model's parameters. Invalid options throw ConfigError naming the
  // config source and the option.
  void init_solver();

  // ---- sampling ----
  // A sampling agent sharing the model graph and the solver state.
  ESAgent clone();
  // Clones only: perturb with the next key, write its info (EvoKit's
  // signature) / return it.
  void add_noise(proto::SamplingInfo* info);
  proto::SamplingInfo add_noise();
  // Clones only: perturb with the noise `info` names.
  void set_noise(const proto::SamplingInfo& info);
  // Salt for the keys of clones made afterwards (the sampler's id).
  void set_sampling_stream(std::uint64_t stream);
  std::uint64_t sampling_stream() const;

  // ---- inference ----
  // The first model output for `batch` observations (obs.size() must be
  // batch * obs_size()), computed natively with this agent's parameters:
  // the perturbed ones for a clone with current noise, else the centre.
  std::vector<float> predict(const std::vector<float>& obs, std::size_t batch = 1) const;
  std::size_t obs_size() const;

  // ---- update (original agent only) ----
  UpdateStats update(const std::vector<proto::SamplingInfo>& infos,
                     const std::vector<float>& rewards, const ParamsLookup& history = nullptr);

  // ---- files (original agent only) ----
  // dir/model.onnx with the centre parameters; returns the path.
  std::string save_inference_model(const std::string& dir) const;
  // dir/solver.pb: optimizer vectors, steps, config text, and the
  // fingerprints of the graph (model_fingerprint) and of the centre model
  // (params_fingerprint), version kFingerprintVersion: the same digests the
  // Python package computes (evokit/io/fingerprint.h).
  std::string save_solver(const std::string& dir) const;
  // Restores dir/solver.pb (SolverFileError naming the file: missing,
  // corrupt, another parameter count, fingerprint version, model graph
  // (model_fingerprint) or optimizer type).
  void load_solver(const std::string& dir);

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
  // The core agent (std::logic_error before init_solver()).
  evokit::ESAgent& core();
  const evokit::ESAgent& core() const;

 private:
  void require_original(const char* what) const;
  void require_solver(const char* what) const;

  std::shared_ptr<const proto::EvoKitConfig> config_;
  std::string config_source_;
  std::shared_ptr<const OnnxModel> model_;
  std::shared_ptr<const PolicyGraph> graph_;
  std::vector<float> initial_params_;       // the model's, until init_solver()
  std::unique_ptr<evokit::ESAgent> core_;   // the original or a clone
  bool is_clone_ = false;
};

}  // namespace evokit::io
