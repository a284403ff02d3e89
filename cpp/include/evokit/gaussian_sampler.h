// Gaussian sampling for ES: perturbation theta + sign * sigma * eps(key) and
// the gradient estimate, threaded over parameter blocks.
//
// Noise is a pure function of (seed, key, index):
// - uncached: eps(key)[j] = gaussian_at(seed, key, j); the key names a stream
//   and lies in [0, 2^62).
// - cached: a table T of cache_size floats, T[i] = gaussian_at(seed,
//   kTableStream, i), built once in parallel; eps(key)[j] = T[key + j], the key
//   is an offset in [0, cache_size - num_params]. The table is read in place.
//
// Threading never changes results: every parameter is computed by exactly one
// thread, summing over samples in index order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace evokit {

// The stream id of the cached noise table; uncached keys are < 2^62 so never
// collide with it.
inline constexpr std::uint64_t kTableStream = 0xFFFFFFFFFFFFFFFFull;
inline constexpr std::int64_t kMaxStreamKey = (std::int64_t{1} << 62) - 1;

struct GaussianSamplerOptions {
  std::uint64_t seed = 1024;
  float sigma = 0.02f;           // std of the perturbation; > 0 and finite
  bool cached = true;
  std::size_t cache_size = 100000;  // only used when cached; >= num_params
  std::size_t num_params = 0;       // > 0
  int num_threads = 1;              // >= 1; used to build the table
};

namespace detail {
// Storage for large read-mostly float arrays: blocks of 2 MiB and more are
// 2 MiB aligned and (on Linux) advised to use transparent huge pages, so a
// gradient that reads hundreds of windows at random offsets does not miss in
// the TLB on every 4 KiB page. Elements are default-initialised (not zeroed):
// the table is written once, in parallel, by the threads that build it.
void* allocate_large(std::size_t bytes);
void free_large(void* pointer) noexcept;

template <class T>
struct LargeArrayAllocator {
  using value_type = T;
  LargeArrayAllocator() noexcept = default;
  template <class U>
  LargeArrayAllocator(const LargeArrayAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_large(n * sizeof(T))); }
  void deallocate(T* pointer, std::size_t) noexcept { free_large(pointer); }
  template <class U>
  void construct(U* pointer) noexcept {
    ::new (static_cast<void*>(pointer)) U;  // default-initialise: no zero pass
  }
  template <class U, class... Args>
  void construct(U* pointer, Args&&... args) {
    ::new (static_cast<void*>(pointer)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const LargeArrayAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const LargeArrayAllocator<U>&) const noexcept { return false; }
};
}  // namespace detail

// The shared, immutable noise table (cached mode). Built once, in parallel.
class NoiseTable {
 public:
  NoiseTable(std::uint64_t seed, std::size_t size, int num_threads);
  const float* data() const noexcept { return data_.data(); }
  std::size_t size() const noexcept { return data_.size(); }
  std::uint64_t seed() const noexcept { return seed_; }

 private:
  std::uint64_t seed_;
  std::vector<float, detail::LargeArrayAllocator<float>> data_;
};

class GaussianSampler {
 public:
  // Throws std::invalid_argument naming the option when an option is out of
  // range (sigma <= 0 or not finite, num_params == 0, cache_size < num_params
  // when cached, num_threads < 1).
  explicit GaussianSampler(const GaussianSamplerOptions& options);

  const GaussianSamplerOptions& options() const noexcept { return options_; }
  std::size_t num_params() const noexcept { return options_.num_params; }
  float sigma() const noexcept { return options_.sigma; }
  bool cached() const noexcept { return options_.cached; }
  // Largest valid key: cache_size - num_params when cached, kMaxStreamKey otherwise.
  std::int64_t max_key() const noexcept;
  // Throws std::out_of_range with key, num_params and cache_size in the message.
  void check_key(std::int64_t key) const;

  // The key for the `counter`-th draw of pair `pair_id` at iteration
  // `iteration` (optionally salted by `stream`): hash_draw mapped onto
  // [0, max_key()]. A pure function of its arguments and the seed.
  std::int64_t draw_key(std::uint64_t iteration, std::uint64_t pair_id, std::uint64_t counter,
                        std::uint64_t stream = 0) const noexcept;

  // out[j] = eps(key)[j], j < num_params.
  void noise(std::int64_t key, float* out) const;

  // out[j] = theta[j] + sign * sigma * eps(key)[j]; sign is +1 or -1.
  // `out` may alias `theta`.
  void perturb(const float* theta, std::int64_t key, float sign, float* out,
               int num_threads) const;

  // The descent direction handed to an optimizer (which minimises):
  //   g      = 1 / (n * sigma) * sum_i weights[i] * signs[i] * eps(keys[i])
  //   out[j] = -g[j] + weight_decay * theta[j]
  // weights are the shaped fitness values (larger is better). Validates every
  // key and sign before touching `out`. theta may be null when weight_decay == 0.
  void descent_direction(const std::int64_t* keys, const float* signs, const float* weights,
                         std::size_t n, const float* theta, float weight_decay, float* out,
                         int num_threads) const;

  // The shared table (null when uncached).
  const std::shared_ptr<const NoiseTable>& table() const noexcept { return table_; }

 private:
  GaussianSamplerOptions options_;
  std::shared_ptr<const NoiseTable> table_;
};

// The sum of x[0, n), in double: a plain read of n floats, threaded over fixed
// blocks and summed in block order (bit-identical for any num_threads).
// bench/kernels.py times it as the memory-read yardstick for the kernels above.
// Throws std::invalid_argument for a null x (n > 0) or num_threads < 1.
double sum_floats(const float* x, std::size_t n, int num_threads);

}  // namespace evokit
