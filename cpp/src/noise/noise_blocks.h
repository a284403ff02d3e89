// The noise kernels' instruction-set implementations (internal; see noise.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace evokit::detail {

// out[4 j + i] = normal i of block first + j of (seed, stream), j < count (the
// normals 4 first .. 4 (first + count) - 1, as noise.h defines them).
using NoiseBlocksFn = void (*)(std::uint64_t seed, std::uint64_t stream, std::uint64_t first,
                               std::size_t count, float* out) noexcept;

// The implementations this CPU can run, named, best first; "portable" (a
// software AES round and the scalar transform) is always last. fill_gaussian
// uses the first. All give the same bits.
std::vector<std::pair<std::string, NoiseBlocksFn>> noise_blocks_implementations();

// The transform alone, for the tests: (z0[i], z1[i]) of the radius word
// wr[i] and the angle word wa[i], i < n (n a multiple of 16).
using NoiseTransformFn = void (*)(const std::uint32_t* wr, const std::uint32_t* wa,
                                  std::size_t n, float* z0, float* z1) noexcept;

// "avx512" and "avx2" where the CPU has them, then "scalar" (the definition
// as gaussian_at computes it).
std::vector<std::pair<std::string, NoiseTransformFn>> noise_transform_implementations();

}  // namespace evokit::detail
