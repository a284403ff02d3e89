// Gaussian sampling: the shared noise table, perturbations and the ES
// gradient, threaded over parameter blocks.
//
// Determinism. Parameters are cut into fixed blocks of kParamBlock floats that
// do not depend on the thread count. OpenMP hands whole blocks to threads
// (static schedule); inside a block the samples are summed in index order.
// Every parameter is therefore computed by exactly one thread with exactly
// the same operations, and results are bit-identical for any num_threads.
#include "evokit/gaussian_sampler.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "evokit/noise.h"
#include "evokit/philox.h"
#include "common/kernel_targets.h"
#include "common/messages.h"
#include "common/parallel.h"

namespace evokit {

namespace detail {
namespace {

// Floats per parallel work item of perturb and descent_direction: 16 KiB, so a
// thread's accumulator and (uncached) noise buffer stay in L1/L2.
constexpr std::size_t kParamBlock = 4096;
// Floats per work item when building the table. A multiple of 4, so every
// noise block (4 normals) lies in a single work item and is computed once.
constexpr std::size_t kTableChunk = 16384;
static_assert(kTableChunk % 4 == 0, "table chunks must hold whole noise blocks");

// draw_key folds `stream` into the seed handed to hash_draw:
//   draw seed = seed + stream * kStreamSalt  (mod 2^64).
// kStreamSalt is odd, so for one seed distinct streams give distinct draw
// seeds, and stream 0 is the plain seed.
constexpr std::uint64_t kStreamSalt = 0x9E3779B97F4A7C15ull;

// The high 64 bits of the 128-bit product a * b (portable multiply-shift).
std::uint64_t mul_hi64(std::uint64_t a, std::uint64_t b) noexcept {
  const std::uint64_t a_lo = a & 0xFFFFFFFFull;
  const std::uint64_t a_hi = a >> 32;
  const std::uint64_t b_lo = b & 0xFFFFFFFFull;
  const std::uint64_t b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo;
  const std::uint64_t hi_lo = a_hi * b_lo;
  const std::uint64_t lo_hi = a_lo * b_hi;
  const std::uint64_t hi_hi = a_hi * b_hi;
  // Cannot overflow: (2^32 - 1) * 3 + (2^32 - 1)^2 < 2^64.
  const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFull) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (cross >> 32);
}

// The calling thread's slot of `stride` floats in a scratch buffer that holds
// one slot per thread of the team (allocated before the parallel region, so
// that no allocation happens, or fails, inside it).
float* thread_slot(std::vector<float>& scratch, std::size_t stride) {
  return scratch.data() + static_cast<std::size_t>(omp_get_thread_num()) * stride;
}

bool is_unit_sign(float sign) { return sign == 1.0f || sign == -1.0f; }

// out[j] = x[j] + scale * eps[j]; out may be x itself.
EVOKIT_KERNEL_TARGETS
void axpy_block(const float* x, const float* eps, float scale, float* out, std::size_t len) {
#pragma omp simd
  for (std::size_t j = 0; j < len; ++j) out[j] = x[j] + scale * eps[j];
}

// Samples per pass of the gradient kernel: the accumulator is loaded and
// stored once per kSampleGroup samples instead of once per sample.
constexpr std::size_t kSampleGroup = 8;

// acc[j] += c[0] * e[0][j]; acc[j] += c[1] * e[1][j]; ... for the
// kSampleGroup samples in order: the same float operations in the same order
// as kSampleGroup calls of accumulate_one, with the sum kept in a register.
EVOKIT_KERNEL_TARGETS
void accumulate_group(float* __restrict acc, const float* const* e, const float* c,
                      std::size_t len) {
  const float *e0 = e[0], *e1 = e[1], *e2 = e[2], *e3 = e[3];
  const float *e4 = e[4], *e5 = e[5], *e6 = e[6], *e7 = e[7];
  const float c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
  const float c4 = c[4], c5 = c[5], c6 = c[6], c7 = c[7];
#pragma omp simd
  for (std::size_t j = 0; j < len; ++j) {
    float a = acc[j];
    a += c0 * e0[j];
    a += c1 * e1[j];
    a += c2 * e2[j];
    a += c3 * e3[j];
    a += c4 * e4[j];
    a += c5 * e5[j];
    a += c6 * e6[j];
    a += c7 * e7[j];
    acc[j] = a;
  }
}
static_assert(kSampleGroup == 8, "accumulate_group is written out for 8 samples");

// acc[j] += c * eps[j].
EVOKIT_KERNEL_TARGETS
void accumulate_one(float* __restrict acc, const float* eps, float c, std::size_t len) {
#pragma omp simd
  for (std::size_t j = 0; j < len; ++j) acc[j] += c * eps[j];
}

// Sum of x[0, len) with 16 interleaved float lanes (a plain read: the loop
// is bound by memory, not by the adds).
EVOKIT_KERNEL_TARGETS
double sum_block(const float* x, std::size_t len) {
  float lanes[16] = {};
  std::size_t j = 0;
  for (; j + 16 <= len; j += 16) {
#pragma omp simd
    for (std::size_t l = 0; l < 16; ++l) lanes[l] += x[j + l];
  }
  double total = 0.0;
  for (float lane : lanes) total += lane;
  for (; j < len; ++j) total += x[j];
  return total;
}

}  // namespace

void* allocate_large(std::size_t bytes) {
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  if (bytes < kHugePage) {
    void* pointer = std::malloc(bytes == 0 ? 1 : bytes);
    if (pointer == nullptr) throw std::bad_alloc();
    return pointer;
  }
  const std::size_t rounded = ceil_div(bytes, kHugePage) * kHugePage;
  void* pointer = std::aligned_alloc(kHugePage, rounded);
  if (pointer == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(pointer, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return pointer;
}

void free_large(void* pointer) noexcept { std::free(pointer); }

}  // namespace detail

NoiseTable::NoiseTable(std::uint64_t seed, std::size_t size, int num_threads) : seed_(seed) {
  detail::require_num_threads(num_threads);
  data_.resize(size);
  const std::size_t chunks = detail::ceil_div(size, detail::kTableChunk);
  float* data = data_.data();
  detail::parallel_items(chunks, detail::team_size(chunks, num_threads), [&](std::size_t c) {
    const std::size_t begin = c * detail::kTableChunk;
    const std::size_t len = std::min(detail::kTableChunk, size - begin);
    fill_gaussian(seed, kTableStream, begin, data + begin, len);
  });
}

GaussianSampler::GaussianSampler(const GaussianSamplerOptions& options) : options_(options) {
  const float sigma = options_.sigma;
  if (!(sigma > 0.0f) || !std::isfinite(sigma)) {
    throw std::invalid_argument("gaussian_sampling.std must be > 0 and finite, got " +
                                detail::format_number(sigma));
  }
  if (options_.num_params == 0) {
    throw std::invalid_argument("num_params must be > 0, got 0");
  }
  detail::require_num_threads(options_.num_threads);
  if (options_.cached) {
    if (options_.cache_size < options_.num_params) {
      throw std::invalid_argument("gaussian_sampling.cache_size (" +
                                  std::to_string(options_.cache_size) +
                                  ") must be >= the number of parameters (" +
                                  std::to_string(options_.num_params) + "); raise cache_size");
    }
    const std::size_t largest = std::vector<float>().max_size();
    if (options_.cache_size > largest) {
      throw std::invalid_argument("gaussian_sampling.cache_size (" +
                                  std::to_string(options_.cache_size) +
                                  ") is larger than the largest possible table (" +
                                  std::to_string(largest) + ")");
    }
    table_ = std::make_shared<const NoiseTable>(options_.seed, options_.cache_size,
                                                options_.num_threads);
  }
}

std::int64_t GaussianSampler::max_key() const noexcept {
  if (options_.cached) return static_cast<std::int64_t>(options_.cache_size - options_.num_params);
  return kMaxStreamKey;
}

void GaussianSampler::check_key(std::int64_t key) const {
  if (key >= 0 && key <= max_key()) return;
  const std::string num_params = std::to_string(options_.num_params);
  const std::string cache_size = std::to_string(options_.cache_size);
  if (options_.cached) {
    throw std::out_of_range("key " + std::to_string(key) + " is outside the noise table: " +
                            (key < 0 ? "key must be >= 0 and " : "") + "key + num_params (" +
                            num_params + ") must be <= cache_size (" + cache_size + ")");
  }
  throw std::out_of_range("key " + std::to_string(key) +
                          " is not a valid noise stream: uncached keys must be in [0, " +
                          std::to_string(kMaxStreamKey) + "] (num_params " + num_params +
                          "; cache_size " + cache_size + " is unused when uncached)");
}

// Mapping onto [0, max_key()]: with R = max_key() + 1 and h the 64-bit
// hash_draw value, key = floor(h * R / 2^64) (multiply-shift). For uncached
// samplers R = 2^62, so the key is h >> 2. `stream` is folded into the seed,
// see kStreamSalt. hash_draw reads the low 32 bits of iteration, pair_id and
// counter, so these repeat with period 2^32.
std::int64_t GaussianSampler::draw_key(std::uint64_t iteration, std::uint64_t pair_id,
                                       std::uint64_t counter, std::uint64_t stream) const noexcept {
  const std::uint64_t draw_seed = options_.seed + stream * detail::kStreamSalt;
  const std::uint64_t h = hash_draw(draw_seed, iteration, pair_id, counter);
  const std::uint64_t range = static_cast<std::uint64_t>(max_key()) + 1;
  return static_cast<std::int64_t>(detail::mul_hi64(h, range));
}

void GaussianSampler::noise(std::int64_t key, float* out) const {
  check_key(key);
  detail::require_non_null(out, "out");
  const std::size_t n = options_.num_params;
  if (options_.cached) {
    const float* window = table_->data() + key;
    std::copy(window, window + n, out);
  } else {
    fill_gaussian(options_.seed, static_cast<std::uint64_t>(key), 0, out, n);
  }
}

void GaussianSampler::perturb(const float* theta, std::int64_t key, float sign, float* out,
                              int num_threads) const {
  detail::require_non_null(theta, "theta");
  detail::require_non_null(out, "out");
  detail::require_num_threads(num_threads);
  check_key(key);
  if (!detail::is_unit_sign(sign)) {
    throw std::invalid_argument("sign must be +1 or -1, got " + detail::format_number(sign));
  }

  const float scale = sign * options_.sigma;
  const std::size_t n = options_.num_params;
  const std::size_t blocks = detail::ceil_div(n, detail::kParamBlock);
  const int threads = detail::team_size(blocks, num_threads);

  if (options_.cached) {
    const float* window = table_->data() + key;  // read in place
    detail::parallel_items(blocks, threads, [&](std::size_t b) {
      const std::size_t begin = b * detail::kParamBlock;
      const std::size_t len = std::min(detail::kParamBlock, n - begin);
      detail::axpy_block(theta + begin, window + begin, scale, out + begin, len);
    });
    return;
  }

  // Uncached: each thread regenerates the block's noise into its own buffer.
  std::vector<float> scratch(static_cast<std::size_t>(threads) * detail::kParamBlock);
  const auto stream = static_cast<std::uint64_t>(key);
  detail::parallel_items(blocks, threads, [&](std::size_t b) {
    const std::size_t begin = b * detail::kParamBlock;
    const std::size_t len = std::min(detail::kParamBlock, n - begin);
    float* eps = detail::thread_slot(scratch, detail::kParamBlock);
    fill_gaussian(options_.seed, stream, begin, eps, len);
    detail::axpy_block(theta + begin, eps, scale, out + begin, len);
  });
}

void GaussianSampler::descent_direction(const std::int64_t* keys, const float* signs,
                                        const float* weights, std::size_t n, const float* theta,
                                        float weight_decay, float* out, int num_threads) const {
  // Everything is validated before `out` is touched.
  if (n == 0) throw std::invalid_argument("descent_direction needs at least one sample, got 0");
  detail::require_non_null(keys, "keys");
  detail::require_non_null(signs, "signs");
  detail::require_non_null(weights, "weights");
  detail::require_non_null(out, "out");
  detail::require_num_threads(num_threads);
  if (!std::isfinite(weight_decay)) {
    throw std::invalid_argument("weight_decay must be finite, got " +
                                detail::format_number(weight_decay));
  }
  if (weight_decay != 0.0f && theta == nullptr) {
    throw std::invalid_argument("theta is required when weight_decay != 0");
  }
  std::vector<float> coef(n);
  for (std::size_t i = 0; i < n; ++i) {
    try {
      check_key(keys[i]);
    } catch (const std::out_of_range& e) {
      throw std::out_of_range("sample " + std::to_string(i) + ": " + e.what());
    }
    if (!detail::is_unit_sign(signs[i])) {
      throw std::invalid_argument("sign of sample " + std::to_string(i) +
                                  " must be +1 or -1, got " + detail::format_number(signs[i]));
    }
    if (!std::isfinite(weights[i])) {
      throw std::invalid_argument("weight of sample " + std::to_string(i) + " is " +
                                  detail::format_number(weights[i]));
    }
    coef[i] = weights[i] * signs[i];  // exact: signs are +-1
  }

  // g = scale * sum_i coef[i] * eps(keys[i]); out = -g + weight_decay * theta.
  const double scale = 1.0 / (static_cast<double>(n) * static_cast<double>(options_.sigma));
  const double decay = weight_decay;
  const std::size_t p = options_.num_params;
  std::size_t blocks = detail::ceil_div(p, detail::kParamBlock);
  const int threads = detail::team_size(blocks, num_threads);
  const bool cached = options_.cached;
  const float* table = cached ? table_->data() : nullptr;
  // Block b is [edge(b), edge(b + 1)). Cached: kParamBlock floats each.
  // Uncached (compute-bound): a multiple of `threads` blocks of nearly equal
  // length, their edges on the kernel's 64-float chunks, so every thread gets
  // the same work to within a chunk per block (P = 1e5 on 2 threads: 50,048
  // and 49,952 floats rather than 53,248 and 46,752).
  constexpr std::size_t kChunk = 64;
  if (!cached) blocks = detail::ceil_div(blocks, threads) * static_cast<std::size_t>(threads);
  const auto edge = [&](std::size_t b) {
    if (cached) return std::min(p, b * detail::kParamBlock);
    return std::min(p, detail::ceil_div(b * p / blocks, kChunk) * kChunk);  // edge(blocks) = p
  };

  // Per thread: an accumulator block. Uncached keys are noise streams.
  const std::size_t stride = detail::kParamBlock + kChunk;
  std::vector<float> scratch(static_cast<std::size_t>(threads) * stride);
  std::vector<std::uint64_t> streams;
  if (!cached) streams.assign(keys, keys + n);

  detail::parallel_items(blocks, threads, [&](std::size_t b) {
    const std::size_t begin = edge(b);
    const std::size_t len = edge(b + 1) - begin;
    float* acc = detail::thread_slot(scratch, stride);
    std::fill(acc, acc + len, 0.0f);
    if (cached) {
      std::size_t i = 0;
      // Groups of kSampleGroup samples, each window read in place.
      const float* group[detail::kSampleGroup];
      for (; i + detail::kSampleGroup <= n; i += detail::kSampleGroup) {
        for (std::size_t k = 0; k < detail::kSampleGroup; ++k) {
          group[k] = table + keys[i + k] + begin;
        }
        detail::accumulate_group(acc, group, coef.data() + i, len);
      }
      for (; i < n; ++i) {
        detail::accumulate_one(acc, table + keys[i] + begin, coef[i], len);  // in place
      }
    } else {
      // The noise regenerated and summed in registers, samples in index order.
      accumulate_gaussian(options_.seed, streams.data(), coef.data(), n, begin, acc, len);
    }
    float* dst = out + begin;
    if (weight_decay != 0.0f) {
      const float* src = theta + begin;
      for (std::size_t j = 0; j < len; ++j) {
        dst[j] = static_cast<float>(-static_cast<double>(acc[j]) * scale +
                                    decay * static_cast<double>(src[j]));
      }
    } else {
      for (std::size_t j = 0; j < len; ++j) {
        dst[j] = static_cast<float>(-static_cast<double>(acc[j]) * scale);
      }
    }
  });
}

double sum_floats(const float* x, std::size_t n, int num_threads) {
  detail::require_num_threads(num_threads);
  if (n == 0) return 0.0;
  detail::require_non_null(x, "x");
  constexpr std::size_t kSumBlock = std::size_t{1} << 16;
  const std::size_t blocks = detail::ceil_div(n, kSumBlock);
  std::vector<double> partial(blocks);
  detail::parallel_items(blocks, detail::team_size(blocks, num_threads), [&](std::size_t b) {
    const std::size_t begin = b * kSumBlock;
    partial[b] = detail::sum_block(x + begin, std::min(kSumBlock, n - begin));
  });
  double total = 0.0;
  for (double value : partial) total += value;
  return total;
}

}  // namespace evokit
