// Counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel Random
// Numbers: As Easy as 1, 2, 3", SC'11) and a Box-Muller normal transform.
//
// Everything here is a pure function of its arguments: no global state, no
// std::normal_distribution. The same (seed, stream, index) gives the same bits
// in any thread, process or run.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace evokit {

using PhiloxCounter = std::array<std::uint32_t, 4>;
using PhiloxKey = std::array<std::uint32_t, 2>;

// Ten rounds of Philox4x32 on one 128-bit counter.
PhiloxCounter philox4x32(PhiloxCounter counter, PhiloxKey key) noexcept;

// The standard normal variate number `index` of stream `stream` under `seed`.
// Normals are made four at a time: block b = index / 4 runs Philox on the
// counter {lo32(b), hi32(b), lo32(stream), hi32(stream)} with the key
// {lo32(seed), hi32(seed)}; its four words w0..w3 give two Box-Muller pairs
// (w0, w1) -> normals 4b+0, 4b+1 and (w2, w3) -> normals 4b+2, 4b+3, where
// u1 = (w0 + 1) * 2^-32 in (0, 1], u2 = w1 * 2^-32 in [0, 1),
// z0 = sqrt(-2 ln u1) cos(2 pi u2), z1 = sqrt(-2 ln u1) sin(2 pi u2),
// computed in double and rounded to float.
float gaussian_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) noexcept;

// out[i] = gaussian_at(seed, stream, start + i) for i in [0, n). Serial;
// callers parallelise over blocks.
void fill_gaussian(std::uint64_t seed, std::uint64_t stream, std::uint64_t start, float* out,
                   std::size_t n) noexcept;

// A 64-bit value that is a pure function of (seed, a, b, c): Philox on the
// counter {lo32(a), lo32(b), lo32(c), kKeyDrawTag} with the key derived from
// seed, the first two output words joined. Used to draw sampling keys.
std::uint64_t hash_draw(std::uint64_t seed, std::uint64_t a, std::uint64_t b,
                        std::uint64_t c) noexcept;

}  // namespace evokit
