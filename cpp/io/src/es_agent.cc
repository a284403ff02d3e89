#include "evokit/io/es_agent.h"

#include "evokit/formats/solver_file.h"

#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "evokit/io/config.h"
#include "evokit/io/errors.h"
#include "evokit/io/fingerprint.h"
#include "evokit/io/sha256.h"
#include "evokit/io/solver_state.h"
#include "evokit/io/warehouse.h"
#include "file_util.h"

namespace evokit::io {

evokit::SamplingInfo to_core(const proto::SamplingInfo& info) {
  evokit::SamplingInfo out;
  out.key.assign(info.key().begin(), info.key().end());
  out.model_iter_id = info.model_iter_id();
  out.mirrored = info.mirrored();
  return out;
}

proto::SamplingInfo to_proto(const evokit::SamplingInfo& info) {
  proto::SamplingInfo out;
  for (const std::int64_t key : info.key) out.add_key(key);
  out.set_model_iter_id(info.model_iter_id);
  out.set_mirrored(info.mirrored);
  return out;
}

ESAgent::ESAgent() = default;

ESAgent::ESAgent(const Iteration& iteration) {
  if (!iteration.model || !iteration.graph) {
    throw std::logic_error("ESAgent(iteration): the iteration holds no model: take one that "
                           "Warehouse::iteration() returned");
  }
  config_ = std::make_shared<const proto::EvoKitConfig>(iteration.config);
  config_source_ = iteration.solver_path();
  model_ = iteration.model;
  set_graph(iteration.graph);
  initial_params_ = model_->parameters();
  restore_solver_state(iteration.state, config_source_);
}

ESAgent::~ESAgent() = default;
ESAgent::ESAgent(ESAgent&&) noexcept = default;
ESAgent& ESAgent::operator=(ESAgent&&) noexcept = default;

void ESAgent::require_original(const char* what) const {
  if (is_clone_) {
    throw std::logic_error(std::string(what) +
                           "() must be called on the original agent, not on a clone");
  }
}

void ESAgent::require_solver(const char* what) const {
  if (!core_) {
    throw std::logic_error(std::string(what) +
                           "() needs the solver: call init_solver() or load_solver() first");
  }
}

void ESAgent::require_config_and_model(const char* what) const {
  if (!config_) {
    throw std::logic_error(std::string(what) + "() needs a config: call load_config() first");
  }
  if (!model_) {
    throw std::logic_error(std::string(what) +
                           "() needs a model: call load_inference_model() first");
  }
}

std::unique_ptr<evokit::ESAgent> ESAgent::new_core() const {
  validate_config(*config_, config_source_, model_->num_params(), config_text_);
  const proto::SolverConfig& solver = config_->solver();
  const int num_threads = solver.num_threads();
  return std::make_unique<evokit::ESAgent>(
      make_solver(solver_options(solver), initial_params_, num_threads), num_threads);
}

const proto::EvoKitConfig& ESAgent::load_config(const std::string& path) {
  require_original("load_config");
  std::string text;
  proto::EvoKitConfig config = io::load_config(path, true, &text);
  set_config(config, path);
  config_text_ = std::move(text);
  return *config_;
}

const proto::EvoKitConfig& ESAgent::set_config(const proto::EvoKitConfig& config,
                                               const std::string& source) {
  require_original("set_config");
  config_ = std::make_shared<const proto::EvoKitConfig>(config);
  config_source_ = source;
  config_text_.clear();
  return *config_;
}

void ESAgent::load_inference_model(const std::string& path) {
  require_original("load_inference_model");
  std::string file = path;
  std::error_code ec;
  const std::string inside = detail::join_path(path, kModelFile);
  if (std::filesystem::is_directory(path, ec) && std::filesystem::exists(inside, ec)) file = inside;
  const std::string pattern = config_ ? config_->solver().param_pattern() : std::string(".*");
  auto model = std::make_shared<const OnnxModel>(OnnxModel::load(file, pattern));
  auto graph = std::make_shared<const PolicyGraph>(model->graph());
  model_ = std::move(model);
  set_graph(std::move(graph));
  initial_params_ = model_->parameters();
  core_.reset();
}

void ESAgent::init_solver() {
  require_original("init_solver");
  require_config_and_model("init_solver");
  core_ = new_core();
}

ESAgent ESAgent::clone() {
  require_solver("clone");
  ESAgent c;
  c.config_ = config_;
  c.config_source_ = config_source_;
  c.model_ = model_;
  c.graph_ = graph_;
  c.plan1_ = plan1_;
  c.core_ = core_->clone();
  c.is_clone_ = true;
  return c;
}

void ESAgent::add_noise(proto::SamplingInfo* info) {
  if (info == nullptr) throw std::invalid_argument("add_noise(): info must not be null");
  *info = add_noise();
}

proto::SamplingInfo ESAgent::add_noise() {
  require_solver("add_noise");
  return to_proto(core_->add_noise());
}

void ESAgent::set_noise(const proto::SamplingInfo& info) {
  require_solver("set_noise");
  core_->set_noise(to_core(info));
}

void ESAgent::set_sampling_stream(std::uint64_t stream) {
  require_solver("set_sampling_stream");
  core_->set_sampling_stream(stream);
}

std::uint64_t ESAgent::sampling_stream() const {
  require_solver("sampling_stream");
  return core_->sampling_stream();
}

std::size_t ESAgent::obs_size() const { return graph().obs_size(); }

namespace {

// Throws std::invalid_argument unless obs holds batch >= 1 observations.
void check_obs(const PolicyGraph& g, const std::vector<float>& obs, std::size_t batch) {
  if (batch == 0) throw std::invalid_argument("predict(): batch must be >= 1, got 0");
  if (obs.size() != batch * g.obs_size()) {
    throw std::invalid_argument("predict(): obs holds " + std::to_string(obs.size()) +
                                " values, expected batch * obs_size = " + std::to_string(batch) +
                                " * " + std::to_string(g.obs_size()) + " = " +
                                std::to_string(batch * g.obs_size()));
  }
}

}  // namespace

void ESAgent::set_graph(std::shared_ptr<const PolicyGraph> graph) {
  std::shared_ptr<const PolicyGraph::Plan> plan;
  try {
    plan = std::make_shared<const PolicyGraph::Plan>(graph->compile(1));
  } catch (const std::invalid_argument&) {
    // predict() then runs the graph, which reports the problem.
  }
  graph_ = std::move(graph);
  plan1_ = std::move(plan);
}

std::vector<float> ESAgent::forward(const float* obs, std::size_t batch,
                                    const std::vector<float>& params, float* state) const {
  const PolicyGraph& g = *graph_;
  if (batch != 1 || !plan1_) return g.run(obs, batch, params.data(), params.size(), state);
  // What run() does, without compiling the plan again: the same execute().
  if (params.size() != g.num_params()) {
    return g.run(obs, batch, params.data(), params.size(), state);  // throws
  }
  std::vector<float> workspace(plan1_->workspace_size());
  std::vector<float> out(plan1_->output_size());
  g.execute(*plan1_, obs, ParamView{params.data(), nullptr, 0.0f}, workspace.data(), out.data(),
            state);
  return out;
}

std::vector<float> ESAgent::predict(const std::vector<float>& obs, std::size_t batch) const {
  const PolicyGraph& g = graph();
  check_obs(g, obs, batch);
  if (g.recurrent()) {
    throw std::invalid_argument("predict(): the model is recurrent (state input '" +
                                g.state_inputs()[0] +
                                "'): call predict(obs, state, batch) with "
                                "state = initial_state(batch) at each episode start");
  }
  if (!core_) return forward(obs.data(), batch, params(), nullptr);
  // Leased: no clone of another thread takes the buffer while the graph reads it.
  const evokit::ESAgent::ParamsLease lease = core_->lease_params();
  return forward(obs.data(), batch, lease.params(), nullptr);
}

std::vector<float> ESAgent::predict(const std::vector<float>& obs, std::vector<float>& state,
                                    std::size_t batch) const {
  const PolicyGraph& g = graph();
  if (!g.recurrent()) {
    if (!state.empty()) {
      throw std::invalid_argument("predict(): state holds " + std::to_string(state.size()) +
                                  " values but the model is not recurrent (expected none)");
    }
    return predict(obs, batch);
  }
  check_obs(g, obs, batch);
  if (state.size() != batch * g.state_size()) {
    throw std::invalid_argument("predict(): state holds " + std::to_string(state.size()) +
                                " values, expected batch * state_size = " + std::to_string(batch) +
                                " * " + std::to_string(g.state_size()) + " = " +
                                std::to_string(batch * g.state_size()));
  }
  if (!core_) return forward(obs.data(), batch, params(), state.data());
  const evokit::ESAgent::ParamsLease lease = core_->lease_params();
  return forward(obs.data(), batch, lease.params(), state.data());
}

std::vector<float> ESAgent::initial_state(std::size_t batch) const {
  return std::vector<float>(batch * graph().state_size(), 0.0f);
}

namespace {

std::vector<evokit::SamplingInfo> to_core_infos(const std::vector<proto::SamplingInfo>& infos) {
  std::vector<evokit::SamplingInfo> out;
  out.reserve(infos.size());
  for (const auto& info : infos) out.push_back(to_core(info));
  return out;
}

}  // namespace

UpdateStats ESAgent::update(const std::vector<proto::SamplingInfo>& infos,
                            const std::vector<double>& rewards, const ParamsLookup& history) {
  require_original("update");
  require_solver("update");
  return core_->update(to_core_infos(infos), rewards, history);
}

std::string ESAgent::shortfall(const std::vector<proto::SamplingInfo>& infos,
                               const std::vector<double>& rewards) const {
  require_solver("shortfall");
  return core_->shortfall(to_core_infos(infos), rewards);
}

std::string ESAgent::save_inference_model(const std::string& dir) const {
  require_original("save_inference_model");
  const std::string path = detail::join_path(dir, kModelFile);
  model().save(path, params());
  return path;
}

proto::SolverState ESAgent::solver_state() const {
  require_original("solver_state");
  require_solver("solver_state");
  proto::SolverState state;
  state.set_num_params(static_cast<std::int64_t>(num_params()));
  state.set_optimizer(config_->solver().optimizer().type());
  const std::string graph_fingerprint = model_fingerprint(model());
  state.set_model_fingerprint(graph_fingerprint);
  state.set_config(config_to_text(*config_));
  state.set_params_fingerprint(params_fingerprint(graph_fingerprint, core_->center()));
  state.set_fingerprint_version(kFingerprintVersion);
  state_to_proto(core_->solver().save(), &state);
  return state;
}

proto::SolverState ESAgent::solver_file_state() const {
  proto::SolverState state = solver_state();
  state.set_model_sha256(sha256_hex(model().serialize(params())));
  return state;
}

std::string ESAgent::save_solver(const std::string& dir) const {
  require_original("save_solver");
  require_solver("save_solver");
  const std::string path = detail::join_path(dir, kSolverFile);
  write_solver_state(path, solver_file_state());
  return path;
}

void ESAgent::load_solver(const std::string& dir) {
  require_original("load_solver");
  require_config_and_model("load_solver");
  const std::string path = detail::join_path(dir, kSolverFile);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw SolverFileError(path + ": no such solver file");
  }
  load_solver_state(read_solver_state(path), path, /*exact_model=*/true);
}

void check_solver_state(const proto::SolverState& state, const OnnxModel& model,
                        const std::vector<float>& params, const proto::EvoKitConfig& config,
                        const std::string& path, bool exact_model) {
  formats::ModelForState loaded;
  loaded.source = model.source();
  loaded.num_params = static_cast<std::int64_t>(model.num_params());
  loaded.versions = {kFingerprintVersion};
  loaded.fingerprint = [&model](int) { return model_fingerprint(model); };
  loaded.params = params.data();
  loaded.size = params.size();
  detail::core_checked<SolverFileError>([&] {
    formats::check_state_matches(state_header(state), loaded,
                                 proto::OptimizerConfig::Type_Name(config.solver().optimizer().type()),
                                 exact_model, path);
  });
}

void ESAgent::load_solver_state(const proto::SolverState& state, const std::string& path,
                                bool exact_model) {
  require_original("load_solver_state");
  require_config_and_model("load_solver_state");
  check_solver_state(state, model(), core_ ? core_->center() : initial_params_, *config_, path,
                     exact_model);
  restore_solver_state(state, path);
}

void ESAgent::restore_solver_state(const proto::SolverState& state, const std::string& path) {
  const auto invalid = [&path](const std::exception& e) {
    const std::string message = e.what();
    if (message.rfind(path, 0) == 0) return SolverFileError(message);
    return SolverFileError(path + ": invalid solver state: " + message);
  };
  // The calling-order rule: a state is restored into the agent's solver, or,
  // without one (no init_solver() before), into a new solver built from the
  // config, which the agent keeps once the state has loaded.
  std::unique_ptr<evokit::ESAgent> built = core_ ? nullptr : new_core();
  evokit::ESAgent& core = built ? *built : *core_;
  try {
    core.solver().load(state_from_proto(state, path));
  } catch (const SolverFileError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw invalid(e);
  } catch (const std::out_of_range& e) {
    throw invalid(e);
  }
  if (built) core_ = std::move(built);
}

bool ESAgent::is_clone() const noexcept { return is_clone_; }

std::int64_t ESAgent::model_iter_id() const { return core_ ? core_->model_iter_id() : 0; }

std::size_t ESAgent::num_params() const { return model().num_params(); }

const std::vector<float>& ESAgent::params() const {
  if (core_) return core_->params();
  if (!model_) throw std::logic_error("no model loaded: call load_inference_model() first");
  return initial_params_;
}

const proto::EvoKitConfig& ESAgent::config() const {
  if (!config_) throw std::logic_error("no config loaded: call load_config() first");
  return *config_;
}

const OnnxModel& ESAgent::model() const {
  if (!model_) throw std::logic_error("no model loaded: call load_inference_model() first");
  return *model_;
}

const PolicyGraph& ESAgent::graph() const {
  if (!graph_) throw std::logic_error("no model loaded: call load_inference_model() first");
  return *graph_;
}

evokit::ESAgent& ESAgent::core() {
  require_solver("core");
  return *core_;
}

const evokit::ESAgent& ESAgent::core() const {
  require_solver("core");
  return *core_;
}

}  // namespace evokit::io
