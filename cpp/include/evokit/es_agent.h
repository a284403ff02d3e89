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
  struct Shared;
  struct ParamsBuffer;

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
  // its buffer, and refills it in place, until another clone takes it (least
  // recently used first, never one under a lease: see lease_params()) or the
  // pool drops it (set_params_pool_bytes); the reference is valid until
  // then. With params_pool_bytes below N clones' worth, callers that use
  // clones from several threads must use lease_params() instead (predict of
  // evokit::io::ESAgent does). Not noexcept: the first call may allocate a
  // buffer.
  const std::vector<float>& params() const;

  // params(), held: while the lease lives, the buffer it names is neither
  // taken by another clone nor refilled nor dropped, so the parameters stay
  // exactly as they are for as long as the caller reads them, however many
  // clones other threads use meanwhile. When every buffer of a full pool is
  // leased, a lease takes a new buffer beyond the capacity, dropped again
  // when the pool next needs a buffer or set_params_pool_bytes() runs. A
  // lease must not outlive its agent, and holds nothing for the centre.
  class ParamsLease {
   public:
    ParamsLease(ParamsLease&& other) noexcept;
    ParamsLease& operator=(ParamsLease&&) = delete;
    ParamsLease(const ParamsLease&) = delete;
    ParamsLease& operator=(const ParamsLease&) = delete;
    ~ParamsLease();
    const std::vector<float>& params() const noexcept { return *params_; }

   private:
    friend class ESAgent;
    ParamsLease(const std::vector<float>* params, ParamsBuffer* buffer) noexcept
        : params_(params), buffer_(buffer) {}
    const std::vector<float>* params_;
    ParamsBuffer* buffer_;  // null for the centre
  };
  // Threads: any number of threads may lease (and predict with) the
  // parameters of distinct clones, or of the same clone, at once; a clone's
  // parameters are materialised once however many threads ask for them (the
  // others wait). Not concurrently with add_noise()/set_noise() on that
  // clone, nor with update() or a load of the solver's state.
  ParamsLease lease_params() const;
  // How many parameter buffers the clones' pool holds now (<= capacity, but
  // for leases taken while every buffer was leased).
  std::size_t num_param_buffers() const;
  // The most buffers the pool will hold (from params_pool_bytes), leases
  // aside (see lease_params()).
  std::size_t param_buffer_capacity() const noexcept;
  // Original only: the pool's memory becomes params_pool_bytes (capacity
  // max(1, params_pool_bytes / (4 * num_params)) buffers); buffers beyond
  // it that no lease holds are dropped now (their clones materialise again
  // when asked). Thread-safe.
  void set_params_pool_bytes(std::size_t params_pool_bytes);
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
  // Read and written under the pool's mutex only.
  mutable std::shared_ptr<ParamsBuffer> buffer_;
};

}  // namespace evokit
