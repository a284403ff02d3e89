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
// add_noise/set_noise on distinct clones may run concurrently with each
// other and with params()/lease_params() of other clones; lease_params() may
// run on any clones, the same one too, from any number of threads (the
// pool's tags, its pins and every clone's buffer_ are guarded by the pool's
// mutex; materialisation runs outside it into a buffer tagged for the caller
// and pinned; a second thread asking for the same clone's parameters waits
// for the first to finish materialising them). None of these may run
// concurrently with update() or a load of the solver's state, which change
// the centre, and add_noise/set_noise not with anything else on the same
// clone. A moved-from agent may only be destroyed or assigned to.
//
// Pins. A lease pins its buffer (pins > 0): no clone takes, refills or
// drops a pinned buffer. pins only grows under the pool's mutex, and a
// lease's end decrements it without the mutex (release order): a thread
// that reads 0 under the mutex knows every reader of the data has finished.
// A buffer is unpinned and not ready only before its filler pins it, so a
// clone's own buffer that is current, not ready and pinned is being filled
// by another thread of the same clone: the caller waits on pool_cv, which
// the filler notifies once the buffer is ready (or, on failure, unpinned).
#include "evokit/es_agent.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
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

  std::mutex pool_mutex;  // guards pool, use_clock, pool_capacity's writes, every buffer's tags
  std::condition_variable pool_cv;  // a buffer became ready, or its filler gave up
  std::atomic<std::size_t> pool_capacity{1};
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
  std::atomic<int> pins{0};  // leases held on it (see "Pins" above)
};

namespace {

// The pool's capacity for params_pool_bytes (at least one buffer).
std::size_t capacity_for(std::size_t params_pool_bytes, std::size_t num_params) {
  const std::size_t buffer_bytes = std::max<std::size_t>(1, num_params * sizeof(float));
  return std::max<std::size_t>(1, params_pool_bytes / buffer_bytes);
}

}  // namespace

ESAgent::ESAgent(std::unique_ptr<Solver> solver, int num_threads, std::size_t params_pool_bytes) {
  detail::require_non_null(solver.get(), "solver");
  detail::require_num_threads(num_threads);
  shared_ = std::make_shared<Shared>(std::move(solver), num_threads);
  shared_->pool_capacity = capacity_for(params_pool_bytes, shared_->solver->num_params());
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

ESAgent::ParamsLease::ParamsLease(ParamsLease&& other) noexcept
    : params_(other.params_), buffer_(other.buffer_) {
  other.buffer_ = nullptr;
}

ESAgent::ParamsLease::~ParamsLease() {
  if (buffer_ != nullptr) buffer_->pins.fetch_sub(1, std::memory_order_release);
}

namespace {

// Drops unpinned buffers, least recently used first, while the pool holds
// more than its capacity (under the pool's mutex). A dropped buffer's data
// is freed; the clone that last used it finds it no longer its own.
template <class Pool>
void trim_pool(Pool& pool, std::size_t capacity) {
  while (pool.size() > capacity) {
    auto victim = pool.end();
    for (auto it = pool.begin(); it != pool.end(); ++it) {
      if ((*it)->pins.load(std::memory_order_acquire) == 0 &&
          (victim == pool.end() || (*it)->last_use < (*victim)->last_use)) {
        victim = it;
      }
    }
    if (victim == pool.end()) return;  // all leased
    (*victim)->owner = -1;
    (*victim)->ready = false;
    std::vector<float>().swap((*victim)->data);
    pool.erase(victim);
  }
}

}  // namespace

const std::vector<float>& ESAgent::params() const { return lease_params().params(); }

ESAgent::ParamsLease ESAgent::lease_params() const {
  if (!has_noise()) return ParamsLease(&center(), nullptr);
  Shared& s = *shared_;
  const std::uint64_t center_version = s.solver->center_version();
  std::unique_lock<std::mutex> lock(s.pool_mutex);
  const auto is_current = [&](const ParamsBuffer& b) {
    return b.owner == clone_id_ && b.noise_version == noise_version_ &&
           b.center_version == center_version;
  };
  while (buffer_ != nullptr && is_current(*buffer_)) {
    if (buffer_->ready) {
      buffer_->pins.fetch_add(1, std::memory_order_relaxed);
      buffer_->last_use = ++s.use_clock;
      return ParamsLease(&buffer_->data, buffer_.get());
    }
    if (buffer_->pins.load(std::memory_order_acquire) == 0) break;  // a filler gave up
    s.pool_cv.wait(lock);  // another thread fills this clone's buffer
  }
  std::shared_ptr<ParamsBuffer> buffer;
  if (buffer_ != nullptr && buffer_->owner == clone_id_ &&
      buffer_->pins.load(std::memory_order_acquire) == 0) {
    buffer = buffer_;  // refill this clone's own buffer in place
  } else {
    trim_pool(s.pool, s.pool_capacity.load());
    // Unpinned before pinned, then least recently used.
    const auto lru =
        std::min_element(s.pool.begin(), s.pool.end(), [](const auto& a, const auto& b) {
          const bool a_free = a->pins.load(std::memory_order_acquire) == 0;
          const bool b_free = b->pins.load(std::memory_order_acquire) == 0;
          return a_free != b_free ? a_free : a->last_use < b->last_use;
        });
    const bool free_one = lru != s.pool.end() && (*lru)->pins.load(std::memory_order_acquire) == 0;
    if (s.pool.size() < s.pool_capacity.load() || !free_one) {
      s.pool.push_back(std::make_shared<ParamsBuffer>(num_params()));  // may throw: no tag changed
      buffer = s.pool.back();
    } else {
      buffer = *lru;
    }
  }
  buffer->owner = clone_id_;
  buffer->noise_version = noise_version_;
  buffer->center_version = center_version;
  buffer->ready = false;
  buffer->last_use = ++s.use_clock;
  buffer->pins.fetch_add(1, std::memory_order_relaxed);
  buffer_ = buffer;
  lock.unlock();
  // Outside the lock: the buffer is pinned, so no other clone takes it
  // meanwhile, and tagged for this clone, so this clone's other threads wait.
  try {
    s.solver->rebuild(info_, buffer->data.data(), s.num_threads);
  } catch (...) {
    lock.lock();
    buffer->pins.fetch_sub(1, std::memory_order_release);
    lock.unlock();
    s.pool_cv.notify_all();
    throw;
  }
  lock.lock();
  buffer->ready = true;
  lock.unlock();
  s.pool_cv.notify_all();
  return ParamsLease(&buffer->data, buffer.get());
}

std::size_t ESAgent::num_param_buffers() const {
  std::lock_guard<std::mutex> lock(shared_->pool_mutex);
  return shared_->pool.size();
}

std::size_t ESAgent::param_buffer_capacity() const noexcept {
  return shared_->pool_capacity.load();
}

void ESAgent::set_params_pool_bytes(std::size_t params_pool_bytes) {
  require_original("set_params_pool_bytes");
  std::lock_guard<std::mutex> lock(shared_->pool_mutex);
  shared_->pool_capacity = capacity_for(params_pool_bytes, num_params());
  trim_pool(shared_->pool, shared_->pool_capacity.load());
}

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
