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
// (w0, w1) -> normals 4b+0, 4b+1 and (w2, w3) -> normals 4b+2, 4b+3.
// The transform is computed in float32 with a fixed sequence of IEEE
// operations (each rounded once, no FMA), so it vectorises and a NumPy
// reference reproduces it bit for bit (tests/es_oracle.py):
//   radius: k = (w0 >> 8) + 1 in [1, 2^24], u1 = k 2^-24 in (0, 1];
//     k = 2^e m with m in [1, 2); if m > sqrt(2): m /= 2, e += 1;
//     s = (m - 1) / ((m - 1) + 2), s2 = s s,
//     h = s + s (s2 (1/3 + s2 (1/5 + s2 (1/7 + s2 / 9))))   [ln m / 2]
//     ln u1 = float(e - 24) ln2 + (h + h);  r = sqrt(-2 ln u1)
//   angle: q = w1 >> 30, x = float((w1 >> 6) & (2^24 - 1)) 2^-24 pi/2,
//     sin x, cos x by their Taylor polynomials to x^11 and x^12 (Horner);
//     (cos, sin) of q pi/2 + x: q = 0 (c, s), 1 (-s, c), 2 (-c, -s), 3 (s, -c)
//   z0 = r cos, z1 = r sin.
// The uniforms carry 24 bits, so |z| <= sqrt(48 ln 2) = 5.77; the transform
// is within 1e-6 of the exact Box-Muller of the same uniforms.
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
