// ESAgent: EvoKit's agent API over any Solver (solver.h), on flat parameter
// vectors (STL + OpenMP).
//
// The original agent owns a Solver (Gaussian, CMA-ES, GA, ...): the centre
// parameters and the search distribution. clone() makes sampling agents that
// share it and own only their SamplingInfo. add_noise() asks the solver to
// draw a member for the clone; the clone's parameters are then the member's,
// materialised lazily, when params() asks for them, by the solver's
// rebuild() into a buffer from a pool shared by all clones and bounded by
// params_pool_bytes (see params()). update() tells the solver the rewards.
// The agent never asks which family its solver is. The model (ONNX), the
// config file and the logs are the business of the layers above (Python, or
// the evokit::io component); this class sees numbers only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evokit/solver.h"

namespace evokit {

struct GaussianSolverOptions;  // evokit/gaussian_solver.h

inline constexpr std::size_t kDefaultParamsPoolBytes = std::size_t{256} << 20;

class ESAgent {
 public:
  // The original agent over `solver`: num_threads (>= 1) for materialising
  // clones' parameters; the pool holds at most
  // max(1, params_pool_bytes / (4 * num_params)) buffers.
  explicit ESAgent(std::unique_ptr<Solver> solver, int num_threads = 1,
                   std::size_t params_pool_bytes = kDefaultParamsPoolBytes);
  // The original agent over a StrategySolver over GaussianStrategy(options,
  // params) (family ARS_SAMPLING when options.ars, else GAUSSIAN_SAMPLING),
  // with the options' num_threads and params_pool_bytes (the options are
  // defined by evokit/gaussian_solver.h, which this header does not include).
  ESAgent(const GaussianSolverOptions& options, std::vector<float> params);

  ESAgent(const ESAgent&) = delete;
  ESAgent& operator=(const ESAgent&) = delete;
  ESAgent(ESAgent&&) noexcept;
  ESAgent& operator=(ESAgent&&) noexcept;
  ~ESAgent();

  // A sampling agent sharing this agent's solver (thread-safe). Clone ids
  // count up from 0 in the order clones are made; the solver's keys depend
  // on them (e.g. mirrored pairs of Gaussian sampling).
  std::unique_ptr<ESAgent> clone();
  bool is_clone() const noexcept;
  int clone_id() const noexcept;  // -1 for the original

  // Clones only (std::logic_error on the original): the solver draws the
  // next member for this clone; the clone's parameters become the member's.
  SamplingInfo add_noise();
  // Clones only: take the member `info` names (checked by the solver first),
  // at the current iteration.
  void set_noise(const SamplingInfo& info);
  // Whether this clone holds noise drawn at the current iteration (an update
  // drops every clone's noise: clones then predict with the new centre).
  bool has_noise() const noexcept;
  // The info of this clone's current noise (empty key when it has none).
  const SamplingInfo& sampling_info() const noexcept { return info_; }

  // The parameters to predict with: for a clone with current noise, the
  // member's (the solver's rebuild of its info against the current state),
  // else the centre.
  //
  // The centre's storage never moves: a reference to it stays valid and sees
  // updates for the agent's lifetime. A clone's parameters live in a buffer
  // of the shared pool: params() materialises them there (once per noise and
  // centre) unless the clone's last buffer still holds them. A clone keeps
  // its buffer, and refills it in place, until the pool is full and another
  // clone takes it (least recently used first); the reference is valid until
  // then. With params_pool_bytes below N clones' worth, callers must use the
  // reference before asking another clone for its parameters, and concurrent
  // params() calls must number at most the pool's capacity. Not noexcept:
  // the first call may allocate a buffer.
  const std::vector<float>& params() const;
  // How many parameter buffers the clones' pool holds now (<= capacity).
  std::size_t num_param_buffers() const;
  // The most buffers the pool will hold (from params_pool_bytes).
  std::size_t param_buffer_capacity() const noexcept;
  const std::vector<float>& center() const noexcept;
  std::size_t num_params() const noexcept;
  std::int64_t model_iter_id() const noexcept;  // number of updates so far

  // Original only (std::logic_error on a clone): the solver's update, which
  // validates everything before changing anything (errors name the sample).
  UpdateStats update(const std::vector<SamplingInfo>& infos, const std::vector<double>& rewards,
                     const ParamsLookup& history = nullptr);
  // Why these samples are not yet enough for an update ("" when they are).
  std::string shortfall(const std::vector<SamplingInfo>& infos,
                        const std::vector<double>& rewards) const;

  // The next `count` members for clones first .. first+count-1 of this
  // agent, drawn as those clones' add_noise() would (original only): a
  // generation of a training loop, or a chunk of the online sampler's
  // samples, evaluated without making clones.
  std::vector<SamplingInfo> draw_members(std::size_t count, std::size_t first = 0);

  // Salt for the keys of clones made afterwards (see the solver's draw()).
  void set_sampling_stream(std::uint64_t stream) noexcept;
  std::uint64_t sampling_stream() const noexcept;

  // The solver (shared by the original and its clones). Its state is
  // save() / load(): the original's load must not run while clones sample.
  Solver& solver() noexcept;
  const Solver& solver() const noexcept;

 private:
  struct Shared;
  struct ParamsBuffer;
  ESAgent(std::shared_ptr<Shared> shared, int clone_id);
  void require_original(const char* what) const;
  void require_clone(const char* what) const;
  std::shared_ptr<Shared> shared_;
  int clone_id_ = -1;
  SamplingInfo info_;
  bool has_info_ = false;
  std::uint64_t noise_version_ = 0;  // bumped whenever info_ changes
  // The pool buffer this clone used last; it holds this clone's parameters
  // while its owner tag says so (another clone may have taken it since).
  mutable std::shared_ptr<ParamsBuffer> buffer_;
};

}  // namespace evokit
