// The noise of noise.h: ARS4x32-5 and the float32 Box-Muller transform.
//
// Five implementations give the same bits (tested), the best the CPU runs is
// used:
// - "avx512-vaes": 16 counters per pass through VAES on 512-bit registers and
//   the transform in AVX-512, its 32-entry tables looked up with vpermi2ps
//   (0.39 ns per normal on one Zen 4 core);
// - "avx2-vaes" / "avx2-aesni": 16 counters per pass through VAES on 256-bit
//   registers or AESENC per counter, the transform in AVX2 with the tables
//   looked up by vpermps and blends (0.87 / 1.1 ns on the same core);
// - "aesni": one counter per AESENC and the transform as a loop the compiler
//   vectorises (SSE2 / AVX2 / AVX-512 clones, tables as gathers);
// - "portable": a software AES round (FIPS-197, S-box computed at compile
//   time) and the same transform loop.
// The transform is float only, each operation rounded once (-ffp-contract=off),
// so the vector and scalar paths agree bit for bit, and so does the NumPy
// reference tests/es_oracle.py.
#include "evokit/noise.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#include <immintrin.h>
#define EVOKIT_NOISE_X86 1
#endif

#include "kernel_targets.h"
#include "noise_blocks.h"

namespace evokit {

namespace detail {

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

ArsKeys ars_keys(const ArsBlock& key, int rounds) noexcept {
  ArsKeys keys{};
  const std::uint64_t lo = key[0] | (std::uint64_t{key[1]} << 32);
  const std::uint64_t hi = key[2] | (std::uint64_t{key[3]} << 32);
  for (int r = 0; r <= rounds; ++r) {
    keys.lo[r] = lo + static_cast<std::uint64_t>(r) * kArsWeylLo;  // mod 2^64
    keys.hi[r] = hi + static_cast<std::uint64_t>(r) * kArsWeylHi;
  }
  return keys;
}

// The noise key of a seed: {lo32(seed), hi32(seed), 0, 0}.
ArsKeys noise_keys(std::uint64_t seed) noexcept {
  return ars_keys({lo32(seed), hi32(seed), 0u, 0u}, kNoiseArsRounds);
}

// -- the software AES round (FIPS-197) --

// Multiplication in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1.
constexpr std::uint8_t gf_mul(std::uint8_t a, std::uint8_t b) {
  std::uint8_t p = 0;
  for (int i = 0; i < 8; ++i) {
    if (b & 1u) p = static_cast<std::uint8_t>(p ^ a);
    const bool carry = (a & 0x80u) != 0;
    a = static_cast<std::uint8_t>(a << 1);
    if (carry) a = static_cast<std::uint8_t>(a ^ 0x1Bu);
    b = static_cast<std::uint8_t>(b >> 1);
  }
  return p;
}

constexpr std::uint8_t rotl8(std::uint8_t x, int n) {
  return static_cast<std::uint8_t>((x << n) | (x >> (8 - n)));
}

// The S-box: the multiplicative inverse (x^254; 0 for 0), then the affine map.
struct SBox {
  std::uint8_t v[256] = {};
  constexpr SBox() {
    for (int x = 0; x < 256; ++x) {
      std::uint8_t inv = 1;
      const auto a = static_cast<std::uint8_t>(x);
      for (int i = 0; i < 254; ++i) inv = gf_mul(inv, a);
      if (x == 0) inv = 0;
      v[x] = static_cast<std::uint8_t>(inv ^ rotl8(inv, 1) ^ rotl8(inv, 2) ^ rotl8(inv, 3) ^
                                       rotl8(inv, 4) ^ 0x63u);
    }
  }
};
constexpr SBox kSBox{};
static_assert(kSBox.v[0x00] == 0x63 && kSBox.v[0x01] == 0x7C && kSBox.v[0x53] == 0xED,
              "FIPS-197 S-box");

constexpr std::uint8_t xtime(std::uint8_t a) { return gf_mul(a, 2); }

// AESENC (MixColumns applied) or AESENCLAST on a state of 16 bytes, byte
// 4c + r holding row r of column c (the little-endian bytes of w0..w3).
void aes_round(std::uint8_t s[16], std::uint64_t rk_lo, std::uint64_t rk_hi, bool last) noexcept {
  std::uint8_t t[16];
  for (int c = 0; c < 4; ++c) {
    for (int r = 0; r < 4; ++r) t[4 * c + r] = kSBox.v[s[4 * ((c + r) & 3) + r]];  // Sub+Shift
  }
  if (!last) {
    for (int c = 0; c < 4; ++c) {
      const std::uint8_t a0 = t[4 * c], a1 = t[4 * c + 1], a2 = t[4 * c + 2], a3 = t[4 * c + 3];
      t[4 * c + 0] = static_cast<std::uint8_t>(xtime(a0) ^ xtime(a1) ^ a1 ^ a2 ^ a3);
      t[4 * c + 1] = static_cast<std::uint8_t>(a0 ^ xtime(a1) ^ xtime(a2) ^ a2 ^ a3);
      t[4 * c + 2] = static_cast<std::uint8_t>(a0 ^ a1 ^ xtime(a2) ^ xtime(a3) ^ a3);
      t[4 * c + 3] = static_cast<std::uint8_t>(xtime(a0) ^ a0 ^ a1 ^ a2 ^ xtime(a3));
    }
  }
  for (int i = 0; i < 8; ++i) {
    s[i] = static_cast<std::uint8_t>(t[i] ^ static_cast<std::uint8_t>(rk_lo >> (8 * i)));
    s[8 + i] = static_cast<std::uint8_t>(t[8 + i] ^ static_cast<std::uint8_t>(rk_hi >> (8 * i)));
  }
}

ArsBlock ars_portable(const ArsBlock& counter, const ArsKeys& keys, int rounds) noexcept {
  std::uint8_t s[16];
  for (int w = 0; w < 4; ++w) {
    for (int b = 0; b < 4; ++b) s[4 * w + b] = static_cast<std::uint8_t>(counter[w] >> (8 * b));
  }
  for (int i = 0; i < 8; ++i) {
    s[i] = static_cast<std::uint8_t>(s[i] ^ static_cast<std::uint8_t>(keys.lo[0] >> (8 * i)));
    s[8 + i] =
        static_cast<std::uint8_t>(s[8 + i] ^ static_cast<std::uint8_t>(keys.hi[0] >> (8 * i)));
  }
  for (int r = 1; r <= rounds; ++r) aes_round(s, keys.lo[r], keys.hi[r], r == rounds);
  ArsBlock out{};
  for (int w = 0; w < 4; ++w) {
    out[w] = static_cast<std::uint32_t>(s[4 * w]) | (static_cast<std::uint32_t>(s[4 * w + 1]) << 8) |
             (static_cast<std::uint32_t>(s[4 * w + 2]) << 16) |
             (static_cast<std::uint32_t>(s[4 * w + 3]) << 24);
  }
  return out;
}

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

inline float bits_to_float(std::uint32_t bits) noexcept {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline std::uint32_t float_to_bits(float f) noexcept {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

// Two standard normals from a radius word and an angle word.
inline void box_muller(std::uint32_t wr, std::uint32_t wa, float& z0, float& z1) noexcept {
  // radius
  const auto k = static_cast<float>(static_cast<std::int32_t>((wr >> 8) + 1u));  // exact
  const std::uint32_t bits = float_to_bits(k);
  const std::uint32_t j = (bits >> 18) & 31u;
  const float m = bits_to_float((bits & 0x007FFFFFu) | 0x3F800000u);
  const float c = bits_to_float((bits & 0x007C0000u) | 0x3F800000u);
  const auto n = static_cast<std::int32_t>((bits + 0x00400000u) >> 23) - 151;
  const float t = (m - c) * bits_to_float(kRecipBits[j]);
  const float p = t + t * (t * (kLog2 + t * (kLog3 + t * kLog4)));
  const float ln_u = static_cast<float>(n) * kLn2 + (bits_to_float(kLnBits[j]) + p);
  const float y = -2.0f * ln_u;
  const float r = std::sqrt(y > 0.0f ? y : 0.0f);  // +0 for u = 1 (where y is -0), as maxps
  // angle
  const std::uint32_t s = wa >> 27;
  const float a = bits_to_float((wa & 0x007FFFFFu) | 0x3F800000u) - 1.5f;  // exact
  const float a2 = a * a;
  const float sd = a * (kSin1 + a2 * kSin3);
  const float cd = 1.0f + a2 * (kCos2 + a2 * kCos4);
  const float cj = bits_to_float(kCosBits[s]), sj = bits_to_float(kSinBits[s]);
  z0 = r * (cj * cd - sj * sd);
  z1 = r * (sj * cd + cj * sd);
}

// ---- blocks of normals --------------------------------------------------------

// Blocks per pass of the word-array implementations.
constexpr std::size_t kPassBlocks = 64;

struct NoiseWords {
  std::uint32_t w0[kPassBlocks], w1[kPassBlocks], w2[kPassBlocks], w3[kPassBlocks];
};

// The transform over the first `count` blocks of `w`: out[4 b + i] = normal i.
EVOKIT_KERNEL_TARGETS
void transform_words(const NoiseWords& w, std::size_t count, float* out) noexcept {
#pragma omp simd
  for (std::size_t b = 0; b < count; ++b) {
    float z0, z1, z2, z3;
    box_muller(w.w0[b], w.w1[b], z0, z1);
    box_muller(w.w2[b], w.w3[b], z2, z3);
    out[4 * b + 0] = z0;
    out[4 * b + 1] = z1;
    out[4 * b + 2] = z2;
    out[4 * b + 3] = z3;
  }
}

using ArsBlockFn = ArsBlock (*)(const ArsBlock& counter, const ArsKeys& keys) noexcept;

ArsBlock ars_noise_portable(const ArsBlock& counter, const ArsKeys& keys) noexcept {
  return ars_portable(counter, keys, kNoiseArsRounds);
}

// Words of `count` <= kPassBlocks blocks through `ars`, then the transform.
template <ArsBlockFn ars>
void noise_blocks_words(std::uint64_t seed, std::uint64_t stream, std::uint64_t first,
                        std::size_t count, float* out) noexcept {
  const ArsKeys keys = noise_keys(seed);
  NoiseWords w;
  for (std::size_t done = 0; done < count; done += kPassBlocks) {
    const std::size_t pass = std::min(kPassBlocks, count - done);
    for (std::size_t b = 0; b < pass; ++b) {
      const std::uint64_t block = first + done + b;
      const ArsBlock x = ars({lo32(block), hi32(block), lo32(stream), hi32(stream)}, keys);
      w.w0[b] = x[0];
      w.w1[b] = x[1];
      w.w2[b] = x[2];
      w.w3[b] = x[3];
    }
    transform_words(w, pass, out + 4 * done);
  }
}

#ifdef EVOKIT_NOISE_X86
// GCC 12 warns inside avx512fintrin.h that the undefined source of some
// intrinsics is "used uninitialized" (a false positive, GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

__attribute__((target("aes,sse4.1"))) ArsBlock ars_noise_aesni(const ArsBlock& counter,
                                                          const ArsKeys& keys) noexcept {
  __m128i v = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(counter.data())),
                            _mm_set_epi64x(static_cast<long long>(keys.hi[0]),
                                           static_cast<long long>(keys.lo[0])));
  for (int r = 1; r < kNoiseArsRounds; ++r) {
    v = _mm_aesenc_si128(v, _mm_set_epi64x(static_cast<long long>(keys.hi[r]),
                                           static_cast<long long>(keys.lo[r])));
  }
  v = _mm_aesenclast_si128(v, _mm_set_epi64x(static_cast<long long>(keys.hi[kNoiseArsRounds]),
                                             static_cast<long long>(keys.lo[kNoiseArsRounds])));
  ArsBlock out;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out.data()), v);
  return out;
}

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

// 16 normals' worth of table lookups: t[idx & 31] (vpermi2ps ignores the
// other bits of the index).
__attribute__((target("avx512f"))) inline __m512 lookup32(const float* table,
                                                         __m512i idx) noexcept {
  return _mm512_permutex2var_ps(_mm512_load_ps(table), idx, _mm512_load_ps(table + 16));
}
__attribute__((target("avx512f"))) inline __m512 lookup32(const std::uint32_t* table,
                                                         __m512i idx) noexcept {
  return lookup32(reinterpret_cast<const float*>(table), idx);
}

// The transform of 16 pairs (radius words wr, angle words wa): z0, z1.
__attribute__((target("avx512f"))) inline void box_muller16(__m512i wr, __m512i wa, __m512& z0,
                                                           __m512& z1) noexcept {
  const __m512i bits = _mm512_castps_si512(_mm512_cvtepi32_ps(
      _mm512_add_epi32(_mm512_srli_epi32(wr, 8), _mm512_set1_epi32(1))));
  const __m512i j = _mm512_srli_epi32(bits, 18);  // j in the low five bits
  const __m512i e = _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x00400000)), 23);
  const __m512 low = _mm512_cvtepi32_ps(_mm512_and_si512(bits, _mm512_set1_epi32(0x0003FFFF)));
  const __m512 t2 = _mm512_mul_ps(low, lookup32(kScaled.recip2, j));
  __m512 q2 = _mm512_add_ps(_mm512_set1_ps(kLog3 / 4.0f),
                            _mm512_mul_ps(t2, _mm512_set1_ps(kLog4 / -8.0f)));
  q2 = _mm512_add_ps(_mm512_set1_ps(kLog2 / -2.0f), _mm512_mul_ps(t2, q2));
  const __m512 p2 = _mm512_add_ps(t2, _mm512_mul_ps(t2, _mm512_mul_ps(t2, q2)));
  const __m512 y = _mm512_add_ps(lookup32(kScaled.nl2, e),
                                 _mm512_add_ps(lookup32(kScaled.ln2, j), p2));
  const __m512 r = _mm512_sqrt_ps(_mm512_max_ps(y, _mm512_setzero_ps()));
  const __m512i s = _mm512_srli_epi32(wa, 27);
  const __m512 a = _mm512_sub_ps(
      _mm512_castsi512_ps(_mm512_or_si512(_mm512_and_si512(wa, _mm512_set1_epi32(0x007FFFFF)),
                                          _mm512_set1_epi32(0x3F800000))),
      _mm512_set1_ps(1.5f));
  const __m512 a2 = _mm512_mul_ps(a, a);
  const __m512 sd = _mm512_mul_ps(
      a, _mm512_add_ps(_mm512_set1_ps(kSin1), _mm512_mul_ps(a2, _mm512_set1_ps(kSin3))));
  const __m512 cd = _mm512_add_ps(
      _mm512_set1_ps(1.0f),
      _mm512_mul_ps(a2, _mm512_add_ps(_mm512_set1_ps(kCos2), _mm512_mul_ps(a2, _mm512_set1_ps(kCos4)))));
  const __m512 cj = lookup32(kCosBits, s), sj = lookup32(kSinBits, s);
  z0 = _mm512_mul_ps(r, _mm512_sub_ps(_mm512_mul_ps(cj, cd), _mm512_mul_ps(sj, sd)));
  z1 = _mm512_mul_ps(r, _mm512_add_ps(_mm512_mul_ps(sj, cd), _mm512_mul_ps(cj, sd)));
}

// Lane indices: the even / odd 32-bit lanes of two registers.
__attribute__((target("avx512f"))) inline __m512i kEven512() noexcept {
  return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}
__attribute__((target("avx512f"))) inline __m512i kOdd512() noexcept {
  return _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

// The transform of the 8 blocks whose ARS words are in a (blocks 0-3) and b
// (blocks 4-7): radius words are the even lanes, angle words the odd ones.
__attribute__((target("avx512f"))) inline void box_muller_8_blocks(__m512i a, __m512i b,
                                                                  __m512& z0, __m512& z1) noexcept {
  box_muller16(_mm512_permutex2var_epi32(a, kEven512(), b),
               _mm512_permutex2var_epi32(a, kOdd512(), b), z0, z1);
}

// out[2 p] = z0[p], out[2 p + 1] = z1[p] for p < 16: the 32 normals in order.
__attribute__((target("avx512f"))) inline void store_interleaved(__m512 z0, __m512 z1,
                                                                float* out) noexcept {
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  _mm512_storeu_ps(out, _mm512_permutex2var_ps(z0, lo, z1));
  _mm512_storeu_ps(out + 16, _mm512_permutex2var_ps(z0, hi, z1));
}

// The ARS round keys broadcast to every 128-bit lane, and the rounds after
// the whitening (v = counter XOR rk[0]) on four registers at once.
struct ArsKeys512 {
  __m512i rk[kNoiseArsRounds + 1];
  __attribute__((target("avx512f"))) explicit ArsKeys512(const ArsKeys& keys) noexcept {
    for (int r = 0; r <= kNoiseArsRounds; ++r) {
      rk[r] = _mm512_broadcast_i32x4(_mm_set_epi64x(static_cast<long long>(keys.hi[r]),
                                                    static_cast<long long>(keys.lo[r])));
    }
  }
  __attribute__((target("avx512f"))) __m512i operator[](int r) const noexcept { return rk[r]; }
  __attribute__((target("avx512f,vaes"))) void encrypt4(__m512i* v) const noexcept {
    for (int r = 1; r < kNoiseArsRounds; ++r) {
      for (int g = 0; g < 4; ++g) v[g] = _mm512_aesenc_epi128(v[g], rk[r]);
    }
    for (int g = 0; g < 4; ++g) v[g] = _mm512_aesenclast_epi128(v[g], rk[kNoiseArsRounds]);
  }
};

// One pass of 4 G blocks: G registers of four counters each (from ctr, which
// moves on) through VAES, then the transform of two registers (8 blocks, 32
// normals) at a time, stored in order.
template <int G>
__attribute__((target("avx512f,vaes"))) inline void noise_pass_avx512(const ArsKeys512& rk,
                                                                    __m512i& ctr,
                                                                    float* out) noexcept {
  const __m512i step4 = _mm512_set_epi64(0, 4, 0, 4, 0, 4, 0, 4);
  __m512i v[G];
  for (int g = 0; g < G; ++g) {
    v[g] = _mm512_xor_si512(ctr, rk[0]);
    ctr = _mm512_add_epi64(ctr, step4);
  }
  for (int g = 0; g < G; g += 4) rk.encrypt4(v + g);
  for (int h = 0; h < G / 2; ++h) {
    __m512 z0, z1;
    box_muller_8_blocks(v[2 * h], v[2 * h + 1], z0, z1);
    store_interleaved(z0, z1, out + 32 * h);
  }
}

// 32 blocks per pass (two independent groups of 16, which the core overlaps:
// 6% faster than 16 on Zen 4), then one of 16, then the rest by AES-NI.
__attribute__((target("avx512f,vaes"))) void noise_blocks_avx512(
    std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t count,
    float* out) noexcept {
  const ArsKeys512 rk(noise_keys(seed));
  const auto st = static_cast<long long>(stream);
  // counters {block, stream} as 64-bit halves, blocks first + 0..3 in a register
  __m512i ctr = _mm512_add_epi64(
      _mm512_set_epi64(st, static_cast<long long>(first), st, static_cast<long long>(first), st,
                       static_cast<long long>(first), st, static_cast<long long>(first)),
      _mm512_set_epi64(0, 3, 0, 2, 0, 1, 0, 0));
  std::size_t done = 0;
  for (; done + 32 <= count; done += 32) noise_pass_avx512<8>(rk, ctr, out + 4 * done);
  if (done + 16 <= count) {
    noise_pass_avx512<4>(rk, ctr, out + 4 * done);
    done += 16;
  }
  if (done < count) {
    noise_blocks_words<ars_noise_aesni>(seed, stream, first + done, count - done, out + 4 * done);
  }
}

// accumulate_gaussian over whole chunks of 16 blocks (64 normals): acc[j] +=
// coef[s] * z_s[j] for every sample s in order, the chunk of acc held in four
// registers across all the samples (four independent AES chains per sample
// keep the units busy); `first` is the block of acc[0]. Returns the number of
// floats done (a multiple of 64).
__attribute__((target("avx512f,vaes"))) std::size_t accumulate_chunks_avx512(
    std::uint64_t seed, const std::uint64_t* streams, const float* coef, std::size_t count,
    std::uint64_t first, float* acc, std::size_t len) noexcept {
  constexpr std::size_t kChunk = 64;
  const std::size_t chunks = len / kChunk;
  if (chunks == 0 || count == 0) return 0;
  const ArsKeys512 rk(noise_keys(seed));
  constexpr __mmask8 kHigh = 0xAA;  // the stream halves of the counters
  for (std::size_t c = 0; c < chunks; ++c) {
    // counter low halves (blocks 16 c + 0..15) XOR rk_0, four counters per register
    __m512i lo[4];
    for (int g = 0; g < 4; ++g) {
      const auto block = static_cast<long long>(first + 16 * c + 4 * static_cast<std::size_t>(g));
      lo[g] = _mm512_xor_si512(
          _mm512_add_epi64(_mm512_set1_epi64(block), _mm512_set_epi64(0, 3, 0, 2, 0, 1, 0, 0)),
          rk[0]);
    }
    // The accumulators in the transform's order: e[h] the even and o[h] the
    // odd floats of acc[32 h, 32 h + 32), which the z0 and z1 of the h-th
    // transform add to; interleaved back once after the last sample.
    float* dst = acc + kChunk * c;
    __m512 e[2], o[2];
    for (int h = 0; h < 2; ++h) {
      const __m512 lo = _mm512_loadu_ps(dst + 32 * h), hi = _mm512_loadu_ps(dst + 32 * h + 16);
      e[h] = _mm512_permutex2var_ps(lo, kEven512(), hi);
      o[h] = _mm512_permutex2var_ps(lo, kOdd512(), hi);
    }
    // Samples in pairs: the two samples' AES rounds and transforms are
    // independent, so the core overlaps them (7% faster than one at a time
    // on Zen 4); their products are added in sample order.
    std::size_t s = 0;
    for (; s < count; s += 2) {
      const std::size_t m = std::min<std::size_t>(2, count - s);
      __m512i v[8];
      for (std::size_t k = 0; k < m; ++k) {
        const __m512i st =
            _mm512_xor_si512(_mm512_set1_epi64(static_cast<long long>(streams[s + k])), rk[0]);
        for (int g = 0; g < 4; ++g) v[4 * k + g] = _mm512_mask_blend_epi64(kHigh, lo[g], st);
        rk.encrypt4(v + 4 * k);
      }
      __m512 z[8];
      for (std::size_t k = 0; k < m; ++k) {
        for (int h = 0; h < 2; ++h) {
          box_muller_8_blocks(v[4 * k + 2 * h], v[4 * k + 2 * h + 1], z[4 * k + 2 * h],
                              z[4 * k + 2 * h + 1]);
        }
      }
      for (std::size_t k = 0; k < m; ++k) {
        const __m512 cs = _mm512_set1_ps(coef[s + k]);
        for (int h = 0; h < 2; ++h) {
          e[h] = _mm512_add_ps(e[h], _mm512_mul_ps(cs, z[4 * k + 2 * h]));
          o[h] = _mm512_add_ps(o[h], _mm512_mul_ps(cs, z[4 * k + 2 * h + 1]));
        }
      }
    }
    for (int h = 0; h < 2; ++h) store_interleaved(e[h], o[h], dst + 32 * h);
  }
  return chunks * kChunk;
}

// ---- AVX2: 8 pairs per register --------------------------------------------

// t[idx & 31] for 8 lanes: vpermps on each quarter of the table, then blends
// on index bits 3 and 4 (moved to the sign bit, which blendv reads).
__attribute__((target("avx2"))) inline __m256 lookup32_avx2(const float* table,
                                                          __m256i idx) noexcept {
  const auto* t = reinterpret_cast<const __m256*>(table);
  const __m256 q0 = _mm256_permutevar8x32_ps(_mm256_load_ps(reinterpret_cast<const float*>(t)), idx);
  const __m256 q1 = _mm256_permutevar8x32_ps(_mm256_load_ps(reinterpret_cast<const float*>(t + 1)), idx);
  const __m256 q2 = _mm256_permutevar8x32_ps(_mm256_load_ps(reinterpret_cast<const float*>(t + 2)), idx);
  const __m256 q3 = _mm256_permutevar8x32_ps(_mm256_load_ps(reinterpret_cast<const float*>(t + 3)), idx);
  const __m256 bit3 = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));
  const __m256 bit4 = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 27));
  return _mm256_blendv_ps(_mm256_blendv_ps(q0, q1, bit3), _mm256_blendv_ps(q2, q3, bit3), bit4);
}
__attribute__((target("avx2"))) inline __m256 lookup32_avx2(const std::uint32_t* table,
                                                          __m256i idx) noexcept {
  return lookup32_avx2(reinterpret_cast<const float*>(table), idx);
}

// box_muller16 for 8 pairs, the same operations in the same order (but the
// exponent term as float(n) * (-2 LN2): a 32-entry lookup costs more here).
__attribute__((target("avx2"))) inline void box_muller8(__m256i wr, __m256i wa, __m256& z0,
                                                       __m256& z1) noexcept {
  const __m256i bits = _mm256_castps_si256(_mm256_cvtepi32_ps(
      _mm256_add_epi32(_mm256_srli_epi32(wr, 8), _mm256_set1_epi32(1))));
  const __m256i j = _mm256_srli_epi32(bits, 18);  // lookup32_avx2 reads its low five bits
  const __m256i n = _mm256_sub_epi32(
      _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x00400000)), 23),
      _mm256_set1_epi32(151));
  const __m256 low = _mm256_cvtepi32_ps(_mm256_and_si256(bits, _mm256_set1_epi32(0x0003FFFF)));
  const __m256 t2 = _mm256_mul_ps(low, lookup32_avx2(kScaled.recip2, j));
  __m256 q2 = _mm256_add_ps(_mm256_set1_ps(kLog3 / 4.0f),
                            _mm256_mul_ps(t2, _mm256_set1_ps(kLog4 / -8.0f)));
  q2 = _mm256_add_ps(_mm256_set1_ps(kLog2 / -2.0f), _mm256_mul_ps(t2, q2));
  const __m256 p2 = _mm256_add_ps(t2, _mm256_mul_ps(t2, _mm256_mul_ps(t2, q2)));
  const __m256 y = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(n), _mm256_set1_ps(-2.0f * kLn2)),
                                 _mm256_add_ps(lookup32_avx2(kScaled.ln2, j), p2));
  const __m256 r = _mm256_sqrt_ps(_mm256_max_ps(y, _mm256_setzero_ps()));
  const __m256i s = _mm256_srli_epi32(wa, 27);
  const __m256 a = _mm256_sub_ps(
      _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(wa, _mm256_set1_epi32(0x007FFFFF)),
                                          _mm256_set1_epi32(0x3F800000))),
      _mm256_set1_ps(1.5f));
  const __m256 a2 = _mm256_mul_ps(a, a);
  const __m256 sd = _mm256_mul_ps(
      a, _mm256_add_ps(_mm256_set1_ps(kSin1), _mm256_mul_ps(a2, _mm256_set1_ps(kSin3))));
  const __m256 cd = _mm256_add_ps(
      _mm256_set1_ps(1.0f),
      _mm256_mul_ps(a2, _mm256_add_ps(_mm256_set1_ps(kCos2), _mm256_mul_ps(a2, _mm256_set1_ps(kCos4)))));
  const __m256 cj = lookup32_avx2(kCosBits, s), sj = lookup32_avx2(kSinBits, s);
  z0 = _mm256_mul_ps(r, _mm256_sub_ps(_mm256_mul_ps(cj, cd), _mm256_mul_ps(sj, sd)));
  z1 = _mm256_mul_ps(r, _mm256_add_ps(_mm256_mul_ps(sj, cd), _mm256_mul_ps(cj, sd)));
}

// The 16 normals of 4 blocks, words in a (blocks 0, 1) and b (blocks 2, 3):
// the radius and angle words of the 8 pairs (in the lane order of
// shufps), then unpck puts each block's four normals back in place.
__attribute__((target("avx2"))) inline void normals_of_4_blocks(__m256i a, __m256i b,
                                                               float* out) noexcept {
  const __m256 fa = _mm256_castsi256_ps(a), fb = _mm256_castsi256_ps(b);
  __m256 z0, z1;
  box_muller8(_mm256_castps_si256(_mm256_shuffle_ps(fa, fb, _MM_SHUFFLE(2, 0, 2, 0))),
              _mm256_castps_si256(_mm256_shuffle_ps(fa, fb, _MM_SHUFFLE(3, 1, 3, 1))), z0, z1);
  _mm256_storeu_ps(out, _mm256_unpacklo_ps(z0, z1));      // blocks 0 | 1
  _mm256_storeu_ps(out + 8, _mm256_unpackhi_ps(z0, z1));  // blocks 2 | 3
}

// ARS4x32-5 of the counters in v[0..7] (two per register), in place: by
// VAES on 256-bit registers, or by AESENC on each 128-bit half.
__attribute__((target("avx2,aes,vaes"))) void ars8_vaes(__m256i* v, const ArsKeys& keys) noexcept {
  __m256i rk[kNoiseArsRounds + 1];
  for (int r = 0; r <= kNoiseArsRounds; ++r) {
    rk[r] = _mm256_broadcastsi128_si256(_mm_set_epi64x(static_cast<long long>(keys.hi[r]),
                                                       static_cast<long long>(keys.lo[r])));
  }
  for (int g = 0; g < 8; ++g) v[g] = _mm256_xor_si256(v[g], rk[0]);
  for (int r = 1; r < kNoiseArsRounds; ++r) {
    for (int g = 0; g < 8; ++g) v[g] = _mm256_aesenc_epi128(v[g], rk[r]);
  }
  for (int g = 0; g < 8; ++g) v[g] = _mm256_aesenclast_epi128(v[g], rk[kNoiseArsRounds]);
}

__attribute__((target("avx2,aes"))) void ars8_aesni(__m256i* v, const ArsKeys& keys) noexcept {
  __m128i rk[kNoiseArsRounds + 1];
  for (int r = 0; r <= kNoiseArsRounds; ++r) {
    rk[r] = _mm_set_epi64x(static_cast<long long>(keys.hi[r]), static_cast<long long>(keys.lo[r]));
  }
  __m128i x[16];
  for (int g = 0; g < 8; ++g) {
    x[2 * g] = _mm_xor_si128(_mm256_castsi256_si128(v[g]), rk[0]);
    x[2 * g + 1] = _mm_xor_si128(_mm256_extracti128_si256(v[g], 1), rk[0]);
  }
  for (int r = 1; r < kNoiseArsRounds; ++r) {
    for (int g = 0; g < 16; ++g) x[g] = _mm_aesenc_si128(x[g], rk[r]);
  }
  for (int g = 0; g < 16; ++g) x[g] = _mm_aesenclast_si128(x[g], rk[kNoiseArsRounds]);
  for (int g = 0; g < 8; ++g) v[g] = _mm256_set_m128i(x[2 * g + 1], x[2 * g]);
}

// 16 blocks per pass: the counters of two blocks per 256-bit register
// through Ars8, then the transform of four blocks at a time.
template <void (*Ars8)(__m256i*, const ArsKeys&) noexcept>
__attribute__((target("avx2"))) void noise_blocks_avx2(std::uint64_t seed, std::uint64_t stream,
                                                     std::uint64_t first, std::size_t count,
                                                     float* out) noexcept {
  constexpr std::size_t kPass = 16;
  const ArsKeys keys = noise_keys(seed);
  const auto st = static_cast<long long>(stream);
  std::size_t done = 0;
  for (; done + kPass <= count; done += kPass) {
    __m256i v[8];
    for (int g = 0; g < 8; ++g) {
      const auto b = static_cast<long long>(first + done + 2 * static_cast<std::size_t>(g));
      v[g] = _mm256_set_epi64x(st, b + 1, st, b);  // counters {block, stream}
    }
    Ars8(v, keys);
    for (int h = 0; h < 4; ++h) normals_of_4_blocks(v[2 * h], v[2 * h + 1], out + 4 * done + 16 * h);
  }
  if (done < count) {
    noise_blocks_words<ars_noise_aesni>(seed, stream, first + done, count - done, out + 4 * done);
  }
}

__attribute__((target("avx512f"))) void transform_avx512(const std::uint32_t* wr,
                                                         const std::uint32_t* wa, std::size_t n,
                                                         float* z0, float* z1) noexcept {
  for (std::size_t i = 0; i + 16 <= n; i += 16) {
    __m512 a, b;
    box_muller16(_mm512_loadu_si512(wr + i), _mm512_loadu_si512(wa + i), a, b);
    _mm512_storeu_ps(z0 + i, a);
    _mm512_storeu_ps(z1 + i, b);
  }
}

__attribute__((target("avx2"))) void transform_avx2(const std::uint32_t* wr,
                                                    const std::uint32_t* wa, std::size_t n,
                                                    float* z0, float* z1) noexcept {
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    __m256 a, b;
    box_muller8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr + i)),
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wa + i)), a, b);
    _mm256_storeu_ps(z0 + i, a);
    _mm256_storeu_ps(z1 + i, b);
  }
}

#pragma GCC diagnostic pop
#endif  // EVOKIT_NOISE_X86

}  // namespace detail

namespace {

detail::ArsBlockFn best_ars_block() {
#ifdef EVOKIT_NOISE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("aes")) return &detail::ars_noise_aesni;
#endif
  return &detail::ars_noise_portable;
}

// The best single-counter ARS and block implementation this CPU runs, chosen once.
detail::ArsBlockFn ars_block_impl() {
  static const detail::ArsBlockFn best = best_ars_block();
  return best;
}

detail::NoiseBlocksFn noise_blocks_impl() {
  static const detail::NoiseBlocksFn best = detail::noise_blocks_implementations().front().second;
  return best;
}

// The four normals 4 * block .. 4 * block + 3 of (seed, stream).
void gaussian_block(std::uint64_t seed, std::uint64_t stream, std::uint64_t block,
                    float out[4]) noexcept {
  const detail::ArsKeys keys = detail::noise_keys(seed);
  const ArsBlock w = ars_block_impl()(
      {detail::lo32(block), detail::hi32(block), detail::lo32(stream), detail::hi32(stream)}, keys);
  detail::box_muller(w[0], w[1], out[0], out[1]);
  detail::box_muller(w[2], w[3], out[2], out[3]);
}

}  // namespace

std::vector<std::pair<std::string, detail::NoiseBlocksFn>> detail::noise_blocks_implementations() {
  std::vector<std::pair<std::string, NoiseBlocksFn>> found;
#ifdef EVOKIT_NOISE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vaes") &&
      __builtin_cpu_supports("aes")) {
    found.emplace_back("avx512-vaes", &noise_blocks_avx512);
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("vaes") &&
      __builtin_cpu_supports("aes")) {
    found.emplace_back("avx2-vaes", &noise_blocks_avx2<ars8_vaes>);
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("aes")) {
    found.emplace_back("avx2-aesni", &noise_blocks_avx2<ars8_aesni>);
  }
  if (__builtin_cpu_supports("aes")) found.emplace_back("aesni", &noise_blocks_words<ars_noise_aesni>);
#endif
  found.emplace_back("portable", &noise_blocks_words<ars_noise_portable>);
  return found;
}

namespace {

// accumulate_gaussian over acc[from, to): each sample's noise into a buffer,
// then acc += coef * noise.
void accumulate_buffered(std::uint64_t seed, const std::uint64_t* streams, const float* coef,
                         std::size_t count, std::uint64_t start, float* acc, std::size_t from,
                         std::size_t to) noexcept {
  constexpr std::size_t kPiece = 1024;
  float buffer[kPiece];
  for (std::size_t begin = from; begin < to; begin += kPiece) {
    const std::size_t piece = std::min(kPiece, to - begin);
    for (std::size_t s = 0; s < count; ++s) {
      fill_gaussian(seed, streams[s], start + begin, buffer, piece);
      const float c = coef[s];
      for (std::size_t j = 0; j < piece; ++j) acc[begin + j] += c * buffer[j];
    }
  }
}

}  // namespace

void accumulate_gaussian(std::uint64_t seed, const std::uint64_t* streams, const float* coef,
                         std::size_t count, std::uint64_t start, float* acc,
                         std::size_t len) noexcept {
  std::size_t from = 0, to = 0;  // [from, to): whole chunks in registers
#ifdef EVOKIT_NOISE_X86
  static const bool fused = noise_blocks_impl() == &detail::noise_blocks_avx512;
  if (fused) {
    from = std::min<std::size_t>(len, (4 - start % 4) % 4);  // up to the first whole block
    to = from + detail::accumulate_chunks_avx512(seed, streams, coef, count, (start + from) / 4,
                                                 acc + from, len - from);
  }
#endif
  accumulate_buffered(seed, streams, coef, count, start, acc, 0, from);
  accumulate_buffered(seed, streams, coef, count, start, acc, std::max(from, to), len);
}

namespace {
void transform_scalar(const std::uint32_t* wr, const std::uint32_t* wa, std::size_t n, float* z0,
                      float* z1) noexcept {
  for (std::size_t i = 0; i < n; ++i) detail::box_muller(wr[i], wa[i], z0[i], z1[i]);
}
}  // namespace

std::vector<std::pair<std::string, detail::NoiseTransformFn>>
detail::noise_transform_implementations() {
  std::vector<std::pair<std::string, NoiseTransformFn>> found;
#ifdef EVOKIT_NOISE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) found.emplace_back("avx512", &transform_avx512);
  if (__builtin_cpu_supports("avx2")) found.emplace_back("avx2", &transform_avx2);
#endif
  found.emplace_back("scalar", &transform_scalar);
  return found;
}

const char* noise_version_name(int version) noexcept {
  static_assert(kNoiseVersion == 4, "name the new version and the one it replaces");
  if (version < 1) return "not a noise version";
  if (version <= 2) return "Philox4x32-10, EvoKit before noise version 3";
  if (version == 3) return "ARS4x32-7, EvoKit before noise version 4";
  if (version == kNoiseVersion) return "ARS4x32-5";
  return "a newer EvoKit";
}

ArsBlock ars4x32(ArsBlock counter, ArsBlock key, int rounds) noexcept {
  rounds = std::clamp(rounds, 1, detail::kMaxArsRounds);
  return detail::ars_portable(counter, detail::ars_keys(key, rounds), rounds);
}

float gaussian_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) noexcept {
  float block[4];
  gaussian_block(seed, stream, index / 4, block);
  return block[index % 4];
}

void fill_gaussian(std::uint64_t seed, std::uint64_t stream, std::uint64_t start, float* out,
                   std::size_t n) noexcept {
  std::uint64_t index = start;
  std::size_t done = 0;
  float block[4];
  // Leading partial block when start is not a multiple of 4.
  if (n > 0 && index % 4 != 0) {
    gaussian_block(seed, stream, index / 4, block);
    const std::size_t offset = static_cast<std::size_t>(index % 4);
    const std::size_t count = std::min<std::size_t>(4 - offset, n);
    std::copy(block + offset, block + offset + count, out);
    done += count;
    index += count;
  }
  // Whole blocks, written directly by the vectorised generator.
  const std::size_t whole = (n - done) / 4;
  if (whole > 0) noise_blocks_impl()(seed, stream, index / 4, whole, out + done);
  done += 4 * whole;
  index += 4 * whole;
  // Trailing partial block.
  if (done < n) {
    gaussian_block(seed, stream, index / 4, block);
    std::copy(block, block + (n - done), out + done);
  }
}

}  // namespace evokit
