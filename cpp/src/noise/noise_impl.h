// The pieces of the noise (noise.h) that its implementations share
// (internal): noise.cc holds the definition as the portable and AES-NI
// implementations compute it, the dispatcher and the public functions;
// noise_avx2.cc and noise_avx512.cc the AVX2 and AVX-512 implementations.
#pragma once

#include <cstddef>
#include <cstdint>

#include "evokit/noise.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define EVOKIT_NOISE_X86 1
#endif

namespace evokit::detail {

// ---- ARS4x32 ------------------------------------------------------------------

constexpr std::uint64_t kArsWeylLo = 0x9E3779B97F4A7C15ull;  // golden ratio
constexpr std::uint64_t kArsWeylHi = 0xBB67AE8584CAA73Bull;  // sqrt(3) - 1
constexpr int kMaxArsRounds = 10;

constexpr std::uint32_t lo32(std::uint64_t x) noexcept { return static_cast<std::uint32_t>(x); }
constexpr std::uint32_t hi32(std::uint64_t x) noexcept {
  return static_cast<std::uint32_t>(x >> 32);
}

// Round keys rk_0 .. rk_rounds as 64-bit halves.
struct ArsKeys {
  std::uint64_t lo[kMaxArsRounds + 1];
  std::uint64_t hi[kMaxArsRounds + 1];
};

// The noise key of a seed, {lo32(seed), hi32(seed), 0, 0}, as round keys.
ArsKeys noise_keys(std::uint64_t seed) noexcept;

// ---- the float32 Box-Muller transform (defined in noise.h) -------------------

// The tables, as float32 bits: LN[j] = ln(1 + j/32) - (j >= 16) ln 2,
// RECIP[j] = 32 / (32 + j), COS[j] = cos((2j + 1) pi / 32), each the float32
// nearest the exact value; SIN below is COS rotated by a quarter turn.
alignas(64) constexpr std::uint32_t kLnBits[32] = {
    0x00000000u, 0x3CFC14D8u, 0x3D785186u, 0x3DB78694u, 0x3DF1383Bu, 0x3E14AA98u, 0x3E2FF984u,
    0x3E4A92D5u, 0x3E647FBEu, 0x3E7DC8C3u, 0x3E8B3AE5u, 0x3E974716u, 0x3EA30C5Eu, 0x3EAE8DEEu,
    0x3EB9CEC0u, 0x3EC4D19Cu, 0xBE934B11u, 0xBE88BC74u, 0xBE7CC8E3u, 0xBE6881C0u, 0xBE549F6Au,
    0xBE411E0Bu, 0xBE2DFA03u, 0xBE1B2FE6u, 0xBE08BC74u, 0xBDED393Bu, 0xBDC99AF3u, 0xBDA6988Bu,
    0xBD842CC6u, 0xBD44A551u, 0xBD020AECu, 0xBC8102B3u};
alignas(64) constexpr std::uint32_t kRecipBits[32] = {
    0x3F800000u, 0x3F783E10u, 0x3F70F0F1u, 0x3F6A0EA1u, 0x3F638E39u, 0x3F5D67C9u, 0x3F579436u,
    0x3F520D21u, 0x3F4CCCCDu, 0x3F47CE0Cu, 0x3F430C31u, 0x3F3E82FAu, 0x3F3A2E8Cu, 0x3F360B61u,
    0x3F321643u, 0x3F2E4C41u, 0x3F2AAAABu, 0x3F272F05u, 0x3F23D70Au, 0x3F20A0A1u, 0x3F1D89D9u,
    0x3F1A90E8u, 0x3F17B426u, 0x3F14F209u, 0x3F124925u, 0x3F0FB824u, 0x3F0D3DCBu, 0x3F0AD8F3u,
    0x3F088889u, 0x3F064B8Au, 0x3F042108u, 0x3F020821u};
alignas(64) constexpr std::uint32_t kCosBits[32] = {
    0x3F7EC46Du, 0x3F74FA0Bu, 0x3F61C598u, 0x3F45E403u, 0x3F226799u, 0x3EF15AEAu, 0x3E94A031u,
    0x3DC8BD36u, 0xBDC8BD36u, 0xBE94A031u, 0xBEF15AEAu, 0xBF226799u, 0xBF45E403u, 0xBF61C598u,
    0xBF74FA0Bu, 0xBF7EC46Du, 0xBF7EC46Du, 0xBF74FA0Bu, 0xBF61C598u, 0xBF45E403u, 0xBF226799u,
    0xBEF15AEAu, 0xBE94A031u, 0xBDC8BD36u, 0x3DC8BD36u, 0x3E94A031u, 0x3EF15AEAu, 0x3F226799u,
    0x3F45E403u, 0x3F61C598u, 0x3F74FA0Bu, 0x3F7EC46Du};
// SIN[j] = sin((2j + 1) pi / 32) = cos((2j + 1) pi / 32 - pi / 2) = COS[j - 8].
struct SinTable {
  alignas(64) std::uint32_t v[32] = {};
  constexpr SinTable() {
    for (int j = 0; j < 32; ++j) v[j] = kCosBits[(j + 24) % 32];
  }
};
constexpr SinTable kSinTable{};
constexpr const std::uint32_t* kSinBits = kSinTable.v;

constexpr float kLn2 = 0.693147181f;                    // 0x3F317218
constexpr float kLog2 = -0.5f, kLog3 = 1.0f / 3.0f, kLog4 = -0.25f;
// sin(a pi / 16) ~ a (S1 + a^2 S3) (minimax for the absolute error on
// [-1/2, 1/2]: 8e-9 with these float32 values) and cos(a pi / 16) ~ 1 + a^2
// (C2 + a^2 C4) (Taylor: C2 = -h^2 / 2, C4 = h^4 / 24 for h = pi / 16, rounded
// to float32).
constexpr float kSin1 = __builtin_bit_cast(float, 0x3E490FD7u);  // 1.963494867e-01
constexpr float kSin3 = __builtin_bit_cast(float, 0xBAA54469u);  // -1.260888856e-03
constexpr float kCos2 = __builtin_bit_cast(float, 0xBC9DE9E6u);  // -1.927657053e-02
constexpr float kCos4 = __builtin_bit_cast(float, 0x3881E0F8u);  // 6.193103036e-05

#ifdef EVOKIT_NOISE_X86


// The AVX-512 transform computes y = -2 ln u directly, every term of the
// definition scaled by -2 (scaling by a power of two is exact, so y has the
// bits of -2 * ln_u): t2 = -2 t = (m - c) * (-2 RECIP[j]); with
// q2 = 1/4 + t2 (A3 / 4 - t2 A4 / 8) = -q / 2 (A3 = 1/3, A4 = -1/4),
// p2 = t2 + t2 (t2 q2) = -2 p; y = NL2(n) + (LN2[j] + p2) with
// NL2(n) = -2 float(n LN2) and LN2[j] = -2 LN[j]. Further, m - c is exactly
// the low 18 mantissa bits times 2^-23, so t2 = float(B & 0x3FFFF) *
// (RECIP2[j] 2^-23); NL2 is indexed by the biased exponent e = (B + 2^22) >> 23
// in [127, 151] (n = e - 151) modulo 32, and vpermi2ps reads only the low five
// bits of an index, so neither index is masked. Four multiplies, conversions
// and integer steps fewer per register than the definition as written (the
// tests compare it with the scalar transform over every radius word).
struct ScaledTables {
  alignas(64) float recip2[32] = {};  // -2 RECIP[j] 2^-23
  alignas(64) float ln2[32] = {};     // -2 LN[j]
  alignas(64) float nl2[32] = {};     // at e mod 32: -2 float((e - 151) LN2)
  constexpr ScaledTables() {
    for (int j = 0; j < 32; ++j) {
      recip2[j] = -2.0f * __builtin_bit_cast(float, kRecipBits[j]) / 8388608.0f;
      ln2[j] = -2.0f * __builtin_bit_cast(float, kLnBits[j]);
    }
    for (int e = 127; e <= 151; ++e) {
      nl2[e % 32] = -2.0f * (static_cast<float>(e - 151) * kLn2);
    }
  }
};
constexpr ScaledTables kScaled{};

// ---- the x86 implementations (noise_blocks.h) -------------------------------

// "aesni" (noise.cc): one counter per AESENC, the transform as a loop the
// compiler vectorises. The vector implementations do their last blocks with it.
void noise_blocks_aesni(std::uint64_t seed, std::uint64_t stream, std::uint64_t first,
                        std::size_t count, float* out) noexcept;

// noise_avx2.cc: "avx2-vaes" and "avx2-aesni", and the AVX2 transform.
__attribute__((target("avx2"))) void noise_blocks_avx2_vaes(std::uint64_t seed, std::uint64_t stream,
                                                           std::uint64_t first, std::size_t count,
                                                           float* out) noexcept;
__attribute__((target("avx2"))) void noise_blocks_avx2_aesni(std::uint64_t seed, std::uint64_t stream,
                                                            std::uint64_t first, std::size_t count,
                                                            float* out) noexcept;
__attribute__((target("avx2"))) void transform_avx2(const std::uint32_t* wr,
                                                    const std::uint32_t* wa, std::size_t n,
                                                    float* z0, float* z1) noexcept;

// noise_avx512.cc: "avx512-vaes" and the AVX-512 transform.
__attribute__((target("avx512f,vaes"))) void noise_blocks_avx512(
    std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t count,
    float* out) noexcept;

// accumulate_gaussian over whole chunks of 16 blocks (64 normals): acc[j] +=
// coef[s] * z_s[j] for every sample s in order, the chunk of acc held in four
// registers across all the samples (four independent AES chains per sample
// keep the units busy); `first` is the block of acc[0]. Returns the number of
// floats done (a multiple of 64).
__attribute__((target("avx512f,vaes"))) std::size_t accumulate_chunks_avx512(
    std::uint64_t seed, const std::uint64_t* streams, const float* coef, std::size_t count,
    std::uint64_t first, float* acc, std::size_t len) noexcept;
__attribute__((target("avx512f"))) void transform_avx512(const std::uint32_t* wr,
                                                         const std::uint32_t* wa, std::size_t n,
                                                         float* z0, float* z1) noexcept;

#endif  // EVOKIT_NOISE_X86

}  // namespace evokit::detail
