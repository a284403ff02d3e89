// ESAgent: the original agent (a Solver) and its sampling clones, over flat
// parameter vectors; see evokit/es_agent.h.
//
// Ownership. The original and every clone hold a std::shared_ptr to one
// Shared: the solver (and whatever it shares, e.g. a noise table) lives as
// long as the last agent that uses it. A clone owns only its SamplingInfo.
// Its parameters are materialised on demand into a buffer of Shared's pool,
// which holds at most `pool_capacity` buffers of num_params floats: N clones
// cost N infos plus the pool, not N parameter copies. A buffer is tagged
// with the clone, noise version and centre version it holds; a clone finds
// its parameters still there, refills its own buffer, takes a new one while
// the pool has room, or else takes the least recently used buffer from
// another clone (which will refill one when asked again).
//
// Threading. clone() is thread-safe (the clone counter and the per-clone
// sampling streams are guarded by a mutex), and so is the solver's draw();
// add_noise/set_noise/params() on distinct clones may run concurrently with
// each other (the pool's tags are guarded by a mutex, materialisation runs
// outside it into a buffer tagged for the caller), but not with update() or
// a load of the solver's state, which change the centre. A moved-from agent
// may only be destroyed or assigned to.
#include "evokit/es_agent.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "evokit/gaussian_solver.h"
#include "evokit/strategy_solver.h"
#include "common/messages.h"

namespace evokit {

struct ESAgent::Shared {
  Shared(std::unique_ptr<Solver> s, int threads) : solver(std::move(s)), num_threads(threads) {}

  std::unique_ptr<Solver> solver;
  const int num_threads;

  std::atomic<std::uint64_t> sampling_stream{0};  // for clones made from now on
  std::mutex mutex;                                // guards the members below
  int num_clones = 0;
  std::vector<std::uint64_t> clone_streams;  // clone_streams[c]: the stream of clone c

  std::mutex pool_mutex;  // guards pool, use_clock and every buffer's tags
  std::size_t pool_capacity = 1;
  std::vector<std::shared_ptr<ParamsBuffer>> pool;
  std::uint64_t use_clock = 0;
};

struct ESAgent::ParamsBuffer {
  explicit ParamsBuffer(std::size_t n) : data(n) {}
  std::vector<float> data;
  int owner = -1;  // clone id, -1 for none
  std::uint64_t noise_version = 0;
  std::uint64_t center_version = 0;
  bool ready = false;  // data holds the tagged parameters
  std::uint64_t last_use = 0;
};

ESAgent::ESAgent(std::unique_ptr<Solver> solver, int num_threads, std::size_t params_pool_bytes) {
  detail::require_non_null(solver.get(), "solver");
  detail::require_num_threads(num_threads);
  shared_ = std::make_shared<Shared>(std::move(solver), num_threads);
  const std::size_t buffer_bytes = shared_->solver->num_params() * sizeof(float);
  shared_->pool_capacity = std::max<std::size_t>(1, params_pool_bytes / buffer_bytes);
}

ESAgent::ESAgent(const GaussianSolverOptions& options, std::vector<float> params)
    : ESAgent(std::make_unique<StrategySolver>(
                  options.ars ? "ARS_SAMPLING" : "GAUSSIAN_SAMPLING",
                  std::make_unique<GaussianStrategy>(options, std::move(params))),
              options.num_threads, options.params_pool_bytes) {}

ESAgent::ESAgent(std::shared_ptr<Shared> shared, int clone_id)
    : shared_(std::move(shared)), clone_id_(clone_id) {}

ESAgent::ESAgent(ESAgent&&) noexcept = default;
ESAgent& ESAgent::operator=(ESAgent&&) noexcept = default;
ESAgent::~ESAgent() = default;

void ESAgent::require_original(const char* what) const {
  if (is_clone()) {
    throw std::logic_error(std::string(what) +
                           "() must be called on the agent that owns the solver, not on a clone");
  }
}

void ESAgent::require_clone(const char* what) const {
  if (!is_clone()) {
    throw std::logic_error(std::string(what) +
                           "() is for sampling agents: call it on a clone, not on the agent that "
                           "owns the solver");
  }
}

std::unique_ptr<ESAgent> ESAgent::clone() {
  int id;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (shared_->num_clones == INT_MAX) {
      throw std::length_error("clone(): an agent can make at most " + std::to_string(INT_MAX) +
                              " clones");
    }
    // May throw (bad_alloc) before anything changed.
    shared_->clone_streams.push_back(shared_->sampling_stream.load());
    id = shared_->num_clones++;
  }
  // Not make_unique: the constructor is private.
  return std::unique_ptr<ESAgent>(new ESAgent(shared_, id));
}

bool ESAgent::is_clone() const noexcept { return clone_id_ >= 0; }

int ESAgent::clone_id() const noexcept { return clone_id_; }

SamplingInfo ESAgent::add_noise() {
  require_clone("add_noise");
  std::uint64_t stream;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    stream = shared_->clone_streams[static_cast<std::size_t>(clone_id_)];
  }
  SamplingInfo info = shared_->solver->draw(clone_id_, stream);
  // The member is valid by construction; params() materialises it.
  info_ = info;
  has_info_ = true;
  ++noise_version_;
  return info;
}

void ESAgent::set_noise(const SamplingInfo& info) {
  require_clone("set_noise");
  shared_->solver->check_member(info);
  SamplingInfo recorded = info;
  recorded.model_iter_id = model_iter_id();
  info_ = std::move(recorded);
  has_info_ = true;
  ++noise_version_;
}

bool ESAgent::has_noise() const noexcept {
  return has_info_ && info_.model_iter_id == model_iter_id();
}

const std::vector<float>& ESAgent::params() const {
  if (!has_noise()) return center();
  Shared& s = *shared_;
  const std::uint64_t center_version = s.solver->center_version();
  std::shared_ptr<ParamsBuffer> buffer;
  {
    std::lock_guard<std::mutex> lock(s.pool_mutex);
    const bool mine = buffer_ != nullptr && buffer_->owner == clone_id_;
    if (mine && buffer_->ready && buffer_->noise_version == noise_version_ &&
        buffer_->center_version == center_version) {
      buffer_->last_use = ++s.use_clock;
      return buffer_->data;
    }
    if (mine) {
      buffer = buffer_;  // refill this clone's own buffer in place
    } else if (s.pool.size() < s.pool_capacity) {
      s.pool.push_back(std::make_shared<ParamsBuffer>(num_params()));  // may throw: no change
      buffer = s.pool.back();
    } else {
      buffer = *std::min_element(s.pool.begin(), s.pool.end(),
                                 [](const auto& a, const auto& b) {
                                   return a->last_use < b->last_use;
                                 });
    }
    buffer->owner = clone_id_;
    buffer->noise_version = noise_version_;
    buffer->center_version = center_version;
    buffer->ready = false;
    buffer->last_use = ++s.use_clock;
  }
  // Outside the lock: the buffer is tagged for this clone and most recently
  // used, so no other clone takes it meanwhile (see the header).
  s.solver->rebuild(info_, buffer->data.data(), s.num_threads);
  {
    std::lock_guard<std::mutex> lock(s.pool_mutex);
    if (buffer->owner == clone_id_ && buffer->noise_version == noise_version_) buffer->ready = true;
  }
  buffer_ = std::move(buffer);
  return buffer_->data;
}

std::size_t ESAgent::num_param_buffers() const {
  std::lock_guard<std::mutex> lock(shared_->pool_mutex);
  return shared_->pool.size();
}

std::size_t ESAgent::param_buffer_capacity() const noexcept { return shared_->pool_capacity; }

const std::vector<float>& ESAgent::center() const noexcept { return shared_->solver->center(); }

std::size_t ESAgent::num_params() const noexcept { return shared_->solver->num_params(); }

std::int64_t ESAgent::model_iter_id() const noexcept { return shared_->solver->model_iter_id(); }

UpdateStats ESAgent::update(const std::vector<SamplingInfo>& infos,
                            const std::vector<double>& rewards, const ParamsLookup& history) {
  require_original("update");
  return shared_->solver->update(infos, rewards, history);
}

std::string ESAgent::shortfall(const std::vector<SamplingInfo>& infos,
                               const std::vector<double>& rewards) const {
  return shared_->solver->shortfall(infos, rewards);
}

std::vector<SamplingInfo> ESAgent::draw_members(std::size_t count, std::size_t first) {
  require_original("draw_members");
  if (count > static_cast<std::size_t>(INT_MAX) || first > static_cast<std::size_t>(INT_MAX) - count) {
    throw std::invalid_argument("draw_members(): first + count must be at most " + std::to_string(INT_MAX) +
                                ", got " + std::to_string(first) + " + " + std::to_string(count));
  }
  const std::uint64_t stream = sampling_stream();
  std::vector<SamplingInfo> infos;
  infos.reserve(count);
  for (std::size_t c = first; c < first + count; ++c) {
    infos.push_back(shared_->solver->draw(static_cast<int>(c), stream));
  }
  return infos;
}

void ESAgent::set_sampling_stream(std::uint64_t stream) noexcept {
  shared_->sampling_stream.store(stream);
}

std::uint64_t ESAgent::sampling_stream() const noexcept { return shared_->sampling_stream.load(); }

Solver& ESAgent::solver() noexcept { return *shared_->solver; }

const Solver& ESAgent::solver() const noexcept { return *shared_->solver; }

}  // namespace evokit
