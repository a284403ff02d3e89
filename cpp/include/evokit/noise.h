// The noise: standard normals that are a pure function of (seed, stream,
// index), from the counter-based generator ARS4x32-5 (Salmon et al., "Parallel
// Random Numbers: As Easy as 1, 2, 3", SC'11) and a float32 Box-Muller
// transform made of a fixed sequence of IEEE operations.
//
// No global state, no std::normal_distribution: the same (seed, stream, index)
// gives the same bits in any thread, process or run, on every instruction set
// (AES-NI / VAES or the portable software AES, AVX-512 or scalar transform),
// and in the NumPy reference tests/es_oracle.py.
//
// Definition (noise version 4; versions 1 and 2 used Philox4x32-10, version 3
// ARS4x32-7 and the angle d = float(bits 26..3 of w, signed) * float(pi) 2^-28):
//
// Generator. ARS4x32-R (Random123's ars.h) on a 128-bit counter c and key k,
// both four little-endian 32-bit words: the round keys are
//   rk_r = k + r * (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B),
// added per 64-bit half (words 0-1 and 2-3) modulo 2^64; then
//   v = c XOR rk_0;  v = AESENC(v, rk_r) for r = 1 .. R-1;  v = AESENCLAST(v, rk_R)
// with AESENC / AESENCLAST the AES round (FIPS-197: SubBytes, ShiftRows,
// MixColumns except in the last, AddRoundKey) as x86's AESENC instructions
// compute it. The noise uses R = 5, the rounds of Intel oneMKL's ARS5
// generator; Random123's default, 7, adds a safety margin that costs 10% of
// the uncached gradient's time.
//
// Blocks. Normal `index` is word (index mod 4) of block b = index / 4:
// ARS4x32-5 of the counter {lo32(b), hi32(b), lo32(stream), hi32(stream)}
// under the key {lo32(seed), hi32(seed), 0, 0} gives words w0..w3; the
// Box-Muller pairs (w0, w1) -> normals 4b + 0, 4b + 1 and (w2, w3) -> 4b + 2,
// 4b + 3, the first word of a pair giving the radius and the second the angle.
//
// Transform, in float32, each operation rounded once (no FMA), with the
// 32-entry tables of noise_impl.h (their values are the float32 roundings of
// the formulas given there):
//   radius: k = (w >> 8) + 1 in [1, 2^24] (exact as a float), u = k 2^-24.
//     With B the bits of float(k): j = (B >> 18) & 31 (the top five mantissa
//     bits), m = float(B & 0x7FFFFF | 0x3F800000) in [1, 2),
//     c = float(B & 0x7C0000 | 0x3F800000) = 1 + j/32, and
//     n = ((B + 2^22) >> 23) - 151 (the exponent minus 24, plus one when j >= 16);
//     t = (m - c) * RECIP[j]                      [RECIP[j] = 32 / (32 + j)]
//     p = t + t * (t * (-1/2 + t * (1/3 + t * (-1/4))))     [ln(1 + t)]
//     ln u = float(n) * LN2 + (LN[j] + p)   [LN[j] = ln(1 + j/32) - (j >= 16) ln 2]
//     y = -2 * ln u;  r = sqrt(y if y > 0 else +0)   [u = 1 gives y = -0, r = +0]
//   angle: j = w >> 27 (one of 32 equal segments of the circle) and
//     a = float(w & 0x7FFFFF | 0x3F800000) - 1.5 in [-1/2, 1/2) (exact: the low
//     23 bits of w as a fraction; bits 23..26 are not used);
//     a2 = a * a;  sd = a * (S1 + a2 * S3);  cd = 1 + a2 * (C2 + a2 * C4)
//                  [sin and cos of a pi / 16: S1, S3 the float32 bits 0x3E490FD7,
//                   0xBAA54469 (minimax on [-1/2, 1/2], error 8e-9); C2 = -h^2/2,
//                   C4 = h^4/24 for h = pi / 16, rounded to float32]
//     cos = COS[j] * cd - SIN[j] * sd;  sin = SIN[j] * cd + COS[j] * sd
//                                    [COS[j], SIN[j] of the segment centre (2j + 1) pi / 32]
//   z0 = r * cos, z1 = r * sin.
// So theta = (2j + 1) pi / 32 + a pi / 16 is uniform on [0, 2 pi) in 2^28
// steps, u uniform on (0, 1] in 2^24 steps, |z| <= sqrt(48 ln 2) = 5.77, and
// each normal is within 1e-6 of the exact Box-Muller of the same u and theta
// (the tests check every k, each with a random angle).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace evokit {

using ArsBlock = std::array<std::uint32_t, 4>;

// The version of this definition, written into solver and warehouse files
// (SolverState / WarehouseInfo.noise_version) so that keys recorded under
// another definition are refused instead of rebuilt into different noise.
constexpr int kNoiseVersion = 4;

// What noise version `version` is, for messages that refuse files of another
// one: "Philox4x32-10, EvoKit before noise version 3" (1, 2), "ARS4x32-7,
// EvoKit before noise version 4" (3), "ARS4x32-5" (this one), "a newer EvoKit"
// (above this one), "not a noise version" (below 1).
const char* noise_version_name(int version) noexcept;

// The number of ARS rounds the noise uses.
constexpr int kNoiseArsRounds = 5;

// ARS4x32-`rounds` (1 <= rounds <= 10) of one counter under one key, as
// defined above. Computed in portable C++ (a software AES round); the noise
// kernels use the AES instructions where the CPU has them, with equal bits.
ArsBlock ars4x32(ArsBlock counter, ArsBlock key, int rounds = kNoiseArsRounds) noexcept;

// The standard normal number `index` of stream `stream` under `seed`.
float gaussian_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) noexcept;

// out[i] = gaussian_at(seed, stream, start + i) for i in [0, n). Serial;
// callers parallelise over blocks.
void fill_gaussian(std::uint64_t seed, std::uint64_t stream, std::uint64_t start, float* out,
                   std::size_t n) noexcept;

// acc[j] = acc[j] + coef[s] * gaussian_at(seed, streams[s], start + j) for
// s = 0 .. count - 1 in that order (the product rounded, then the sum), for j
// in [0, len): what fill_gaussian into a buffer and that loop give, bit for
// bit, without the buffer (the AVX-512 kernel keeps acc in registers across
// all the samples). Serial; callers parallelise over blocks of j.
void accumulate_gaussian(std::uint64_t seed, const std::uint64_t* streams, const float* coef,
                         std::size_t count, std::uint64_t start, float* acc,
                         std::size_t len) noexcept;

}  // namespace evokit
