// Philox4x32-10, the Box-Muller transform on top of it, and hash_draw.
//
// Philox follows Random123 (Salmon et al., SC'11) exactly: each round
// multiplies counter words 0 and 2 by M0 and M1, swaps and XORs in the key,
// and the key is bumped by the Weyl constants (W0, W1) between rounds. The
// known-answer vectors of Random123's kat_vectors are reproduced bit for bit
// (see cpp/tests/test_philox.cc). Whole runs of blocks are generated many
// counters at a time (gaussian_blocks), vectorised across counters; the
// transform is float only, so the vector and scalar paths give equal bits.
#include "evokit/philox.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#include <immintrin.h>
#endif

#include "kernel_targets.h"
#include "philox_lanes.h"

namespace evokit {

namespace detail {

constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr std::uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
constexpr std::uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1
constexpr int kPhiloxRounds = 10;

// hash_draw domain separation.
//
// Counter word 3 of every noise block is hi32(stream): below 2^30 for an
// uncached key (< 2^62) and 0xFFFFFFFF for kTableStream. hash_draw puts
// kKeyDrawTag there instead, a value that is neither, so a key draw never
// evaluates Philox on the same counter as any noise block, whatever the keys.
// On top of that the hash_draw key is the seed XOR a fixed tag:
//   key = {lo32(seed) ^ kKeyDrawSeedTag0, hi32(seed) ^ kKeyDrawSeedTag1}.
constexpr std::uint32_t kKeyDrawTag = 0x4B455944u;       // "KEYD"
constexpr std::uint32_t kKeyDrawSeedTag0 = 0x45564F4Bu;  // "EVOK"
constexpr std::uint32_t kKeyDrawSeedTag1 = 0x44524157u;  // "DRAW"

constexpr std::uint32_t lo32(std::uint64_t x) noexcept { return static_cast<std::uint32_t>(x); }
constexpr std::uint32_t hi32(std::uint64_t x) noexcept {
  return static_cast<std::uint32_t>(x >> 32);
}

inline void philox_round(PhiloxCounter& ctr, const PhiloxKey& key) noexcept {
  const std::uint64_t p0 = static_cast<std::uint64_t>(kPhiloxM0) * ctr[0];
  const std::uint64_t p1 = static_cast<std::uint64_t>(kPhiloxM1) * ctr[2];
  ctr = {hi32(p1) ^ ctr[1] ^ key[0], lo32(p1), hi32(p0) ^ ctr[3] ^ key[1], lo32(p0)};
}

// ---- the float Box-Muller transform (documented in philox.h) -----------------
//
// Only IEEE float +, -, *, /, sqrt and exact integer <-> float conversions,
// each rounded once (no FMA: -ffp-contract=off), so the scalar and every
// vectorised build give the same bits, and so does tests/es_oracle.py.

constexpr float kTwoPowMinus24 = 1.0f / 16777216.0f;
constexpr float kSqrtTwo = 1.41421356f;   // rounds to 0x3FB504F3
constexpr float kLn2 = 0.693147181f;      // rounds to 0x3F317218
// atanh series: ln(m) = 2 (s + s^3/3 + s^5/5 + s^7/7 + s^9/9), s = (m-1)/(m+1).
constexpr float kLogC3 = 1.0f / 3.0f;
constexpr float kLogC5 = 1.0f / 5.0f;
constexpr float kLogC7 = 1.0f / 7.0f;
constexpr float kLogC9 = 1.0f / 9.0f;
// Taylor series of sin and cos at 0 in x = f * pi/2, f in [0, 1).
constexpr float kHalfPi = 1.57079633f;
constexpr float kSin3 = -1.0f / 6.0f;
constexpr float kSin5 = 1.0f / 120.0f;
constexpr float kSin7 = -1.0f / 5040.0f;
constexpr float kSin9 = 1.0f / 362880.0f;
constexpr float kSin11 = -1.0f / 39916800.0f;
constexpr float kCos2 = -1.0f / 2.0f;
constexpr float kCos4 = 1.0f / 24.0f;
constexpr float kCos6 = -1.0f / 720.0f;
constexpr float kCos8 = 1.0f / 40320.0f;
constexpr float kCos10 = -1.0f / 3628800.0f;
constexpr float kCos12 = 1.0f / 479001600.0f;

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

// Two standard normals from two uniform words.
inline void box_muller(std::uint32_t w0, std::uint32_t w1, float& z0, float& z1) noexcept {
  // Radius: r = sqrt(-2 ln u1), u1 = k 2^-24, k = (w0 >> 8) + 1 in [1, 2^24].
  const auto k = static_cast<float>(static_cast<std::int32_t>((w0 >> 8) + 1u));  // exact
  const std::uint32_t kbits = float_to_bits(k);
  auto e = static_cast<std::int32_t>(kbits >> 23) - 127;           // k = 2^e m
  float m = bits_to_float((kbits & 0x007FFFFFu) | 0x3F800000u);    // m in [1, 2)
  const bool big = m > kSqrtTwo;
  m = big ? m * 0.5f : m;                                          // m in [sqrt(1/2), sqrt(2)]
  e = big ? e + 1 : e;
  const float f = m - 1.0f;
  const float s = f / (f + 2.0f);
  const float s2 = s * s;
  const float poly = s2 * (kLogC3 + s2 * (kLogC5 + s2 * (kLogC7 + s2 * kLogC9)));
  const float half_ln_m = s + s * poly;
  const float ln_u1 = static_cast<float>(e - 24) * kLn2 + (half_ln_m + half_ln_m);
  const float r = std::sqrt(-2.0f * ln_u1);
  // Angle: theta = (q + f) pi / 2, quadrant q = w1 >> 30, f = ((w1 >> 6) & (2^24 - 1)) 2^-24.
  const std::uint32_t q = w1 >> 30;
  const float x =
      static_cast<float>(static_cast<std::int32_t>((w1 >> 6) & 0x00FFFFFFu)) * kTwoPowMinus24 *
      kHalfPi;
  const float x2 = x * x;
  const float sin_x =
      x + x * (x2 * (kSin3 + x2 * (kSin5 + x2 * (kSin7 + x2 * (kSin9 + x2 * kSin11)))));
  const float cos_x =
      1.0f + x2 * (kCos2 + x2 * (kCos4 + x2 * (kCos6 + x2 * (kCos8 + x2 * (kCos10 + x2 * kCos12)))));
  // (cos theta, sin theta) by quadrant: (c, s), (-s, c), (-c, -s), (s, -c).
  const float c = (q & 1u) ? sin_x : cos_x;
  const float d = (q & 1u) ? cos_x : sin_x;
  const float cos_t = (q == 1u || q == 2u) ? -c : c;
  const float sin_t = (q >= 2u) ? -d : d;
  z0 = r * cos_t;
  z1 = r * sin_t;
}

// The four normals of Philox output w.
inline void normals_of(const PhiloxCounter& w, float out[4]) noexcept {
  box_muller(w[0], w[1], out[0], out[1]);
  box_muller(w[2], w[3], out[2], out[3]);
}

// The four normals 4 * block .. 4 * block + 3 of (seed, stream).
inline void gaussian_block(std::uint64_t seed, std::uint64_t stream, std::uint64_t block,
                           float out[4]) noexcept {
  const PhiloxCounter ctr = {lo32(block), hi32(block), lo32(stream), hi32(stream)};
  normals_of(philox4x32(ctr, {lo32(seed), hi32(seed)}), out);
}

// Portable version, one lane at a time (the compiler may vectorise it).
void philox_lanes_portable(std::uint64_t base, std::uint32_t c2, std::uint32_t c3,
                           std::uint32_t k0, std::uint32_t k1, PhiloxLanes& out) noexcept {
  const std::uint32_t base_lo = lo32(base), base_hi = hi32(base);
  for (std::size_t l = 0; l < kLanes; ++l) {
    const std::uint32_t lo = base_lo + static_cast<std::uint32_t>(l);  // mod 2^32
    PhiloxCounter ctr = {lo, base_hi + (lo < base_lo ? 1u : 0u), c2, c3};
    ctr = philox4x32(ctr, {k0, k1});
    out.w0[l] = ctr[0];
    out.w1[l] = ctr[1];
    out.w2[l] = ctr[2];
    out.w3[l] = ctr[3];
  }
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define EVOKIT_PHILOX_SIMD 1
// GCC 12 warns inside avx512fintrin.h that _mm512_mul_epu32's internal
// undefined source is "used uninitialized" (a false positive, GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// The SIMD versions run the kLanes counters as kGroups registers side by
// side, round by round: the groups are independent, so their multiply
// latencies overlap (one group alone would wait on each round's multiply).
// mulhilo of a register: vpmuludq on the even and on the odd 32-bit lanes,
// then the low and high halves blended back into place.

// AVX-512: 16 counters per register, 4 registers.
__attribute__((target("avx512f"))) void philox_lanes_avx512(
    std::uint64_t base, std::uint32_t c2, std::uint32_t c3, std::uint32_t k0, std::uint32_t k1,
    PhiloxLanes& out) noexcept {
  constexpr std::size_t kWidth = 16;
  constexpr std::size_t kGroups = kLanes / kWidth;
  const std::uint32_t base_lo = lo32(base), base_hi = hi32(base);
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(kPhiloxM0));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(kPhiloxM1));
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i vbase_lo = _mm512_set1_epi32(static_cast<int>(base_lo));
  const __m512i vbase_hi = _mm512_set1_epi32(static_cast<int>(base_hi));
  constexpr __mmask16 kOdd = 0xAAAA;
  __m512i x0[kGroups], x1[kGroups], x2[kGroups], x3[kGroups];
  for (std::size_t g = 0; g < kGroups; ++g) {
    x0[g] = _mm512_add_epi32(
        vbase_lo, _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int>(g * kWidth))));
    // carry into the high word where the low word wrapped below base_lo
    const __mmask16 wrapped = _mm512_cmplt_epu32_mask(x0[g], vbase_lo);
    x1[g] = _mm512_mask_add_epi32(vbase_hi, wrapped, vbase_hi, _mm512_set1_epi32(1));
    x2[g] = _mm512_set1_epi32(static_cast<int>(c2));
    x3[g] = _mm512_set1_epi32(static_cast<int>(c3));
  }
  std::uint32_t key0 = k0, key1 = k1;
  for (int round = 0; round < kPhiloxRounds; ++round) {
    const __m512i vkey0 = _mm512_set1_epi32(static_cast<int>(key0));
    const __m512i vkey1 = _mm512_set1_epi32(static_cast<int>(key1));
    for (std::size_t g = 0; g < kGroups; ++g) {
      const __m512i p0_even = _mm512_mul_epu32(x0[g], m0);
      const __m512i p0_odd = _mm512_mul_epu32(_mm512_srli_epi64(x0[g], 32), m0);
      const __m512i p1_even = _mm512_mul_epu32(x2[g], m1);
      const __m512i p1_odd = _mm512_mul_epu32(_mm512_srli_epi64(x2[g], 32), m1);
      const __m512i lo0 = _mm512_mask_blend_epi32(kOdd, p0_even, _mm512_slli_epi64(p0_odd, 32));
      const __m512i hi0 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(p0_even, 32), p0_odd);
      const __m512i lo1 = _mm512_mask_blend_epi32(kOdd, p1_even, _mm512_slli_epi64(p1_odd, 32));
      const __m512i hi1 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(p1_even, 32), p1_odd);
      // x0' = hi1 ^ x1 ^ key0, x1' = lo1, x2' = hi0 ^ x3 ^ key1, x3' = lo0
      x0[g] = _mm512_ternarylogic_epi32(hi1, x1[g], vkey0, 0x96);
      x2[g] = _mm512_ternarylogic_epi32(hi0, x3[g], vkey1, 0x96);
      x1[g] = lo1;
      x3[g] = lo0;
    }
    key0 += kPhiloxW0;
    key1 += kPhiloxW1;
  }
  for (std::size_t g = 0; g < kGroups; ++g) {
    _mm512_store_si512(reinterpret_cast<__m512i*>(out.w0 + g * kWidth), x0[g]);
    _mm512_store_si512(reinterpret_cast<__m512i*>(out.w1 + g * kWidth), x1[g]);
    _mm512_store_si512(reinterpret_cast<__m512i*>(out.w2 + g * kWidth), x2[g]);
    _mm512_store_si512(reinterpret_cast<__m512i*>(out.w3 + g * kWidth), x3[g]);
  }
}

// AVX2: 8 counters per register, 8 registers.
__attribute__((target("avx2"))) void philox_lanes_avx2(std::uint64_t base, std::uint32_t c2,
                                                       std::uint32_t c3, std::uint32_t k0,
                                                       std::uint32_t k1,
                                                       PhiloxLanes& out) noexcept {
  constexpr std::size_t kWidth = 8;
  constexpr std::size_t kGroups = kLanes / kWidth;
  const std::uint32_t base_lo = lo32(base), base_hi = hi32(base);
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(kPhiloxM0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(kPhiloxM1));
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i sign = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256i vbase_lo = _mm256_set1_epi32(static_cast<int>(base_lo));
  __m256i x0[kGroups], x1[kGroups], x2[kGroups], x3[kGroups];
  for (std::size_t g = 0; g < kGroups; ++g) {
    x0[g] = _mm256_add_epi32(
        vbase_lo, _mm256_add_epi32(iota, _mm256_set1_epi32(static_cast<int>(g * kWidth))));
    // unsigned x0 < base_lo via a signed compare of the sign-flipped values
    const __m256i wrapped =
        _mm256_cmpgt_epi32(_mm256_xor_si256(vbase_lo, sign), _mm256_xor_si256(x0[g], sign));
    x1[g] = _mm256_sub_epi32(_mm256_set1_epi32(static_cast<int>(base_hi)), wrapped);
    x2[g] = _mm256_set1_epi32(static_cast<int>(c2));
    x3[g] = _mm256_set1_epi32(static_cast<int>(c3));
  }
  std::uint32_t key0 = k0, key1 = k1;
  for (int round = 0; round < kPhiloxRounds; ++round) {
    const __m256i vkey0 = _mm256_set1_epi32(static_cast<int>(key0));
    const __m256i vkey1 = _mm256_set1_epi32(static_cast<int>(key1));
    for (std::size_t g = 0; g < kGroups; ++g) {
      const __m256i p0_even = _mm256_mul_epu32(x0[g], m0);
      const __m256i p0_odd = _mm256_mul_epu32(_mm256_srli_epi64(x0[g], 32), m0);
      const __m256i p1_even = _mm256_mul_epu32(x2[g], m1);
      const __m256i p1_odd = _mm256_mul_epu32(_mm256_srli_epi64(x2[g], 32), m1);
      const __m256i lo0 = _mm256_blend_epi32(p0_even, _mm256_slli_epi64(p0_odd, 32), 0xAA);
      const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(p0_even, 32), p0_odd, 0xAA);
      const __m256i lo1 = _mm256_blend_epi32(p1_even, _mm256_slli_epi64(p1_odd, 32), 0xAA);
      const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(p1_even, 32), p1_odd, 0xAA);
      x0[g] = _mm256_xor_si256(_mm256_xor_si256(hi1, x1[g]), vkey0);
      x2[g] = _mm256_xor_si256(_mm256_xor_si256(hi0, x3[g]), vkey1);
      x1[g] = lo1;
      x3[g] = lo0;
    }
    key0 += kPhiloxW0;
    key1 += kPhiloxW1;
  }
  for (std::size_t g = 0; g < kGroups; ++g) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.w0 + g * kWidth), x0[g]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.w1 + g * kWidth), x1[g]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.w2 + g * kWidth), x2[g]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.w3 + g * kWidth), x3[g]);
  }
}
#pragma GCC diagnostic pop
#endif

std::vector<std::pair<std::string, PhiloxLanesFn>> philox_lanes_implementations() {
  std::vector<std::pair<std::string, PhiloxLanesFn>> found;
#ifdef EVOKIT_PHILOX_SIMD
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) found.emplace_back("avx512f", &philox_lanes_avx512);
  if (__builtin_cpu_supports("avx2")) found.emplace_back("avx2", &philox_lanes_avx2);
#endif
  found.emplace_back("portable", &philox_lanes_portable);
  return found;
}

namespace {
// The best implementation this CPU runs, chosen once.
PhiloxLanesFn philox_lanes_impl() {
  static const PhiloxLanesFn best = philox_lanes_implementations().front().second;
  return best;
}
}  // namespace

// The float transform over the first `lanes` lanes: out[4 l + i] = normal i
// of lane l, written in place (a full batch interleaves in registers).
EVOKIT_KERNEL_TARGETS
void box_muller_lanes(const PhiloxLanes& w, std::size_t lanes, float* out) noexcept {
  if (lanes == kLanes) {
#pragma omp simd
    for (std::size_t l = 0; l < kLanes; ++l) {
      float z0, z1, z2, z3;
      box_muller(w.w0[l], w.w1[l], z0, z1);
      box_muller(w.w2[l], w.w3[l], z2, z3);
      out[4 * l + 0] = z0;
      out[4 * l + 1] = z1;
      out[4 * l + 2] = z2;
      out[4 * l + 3] = z3;
    }
    return;
  }
  for (std::size_t l = 0; l < lanes; ++l) {
    box_muller(w.w0[l], w.w1[l], out[4 * l + 0], out[4 * l + 1]);
    box_muller(w.w2[l], w.w3[l], out[4 * l + 2], out[4 * l + 3]);
  }
}

// out[4 j + i] = normal i of block first + j, for j < count: Philox over
// kLanes counters at a time, then the transform over the lanes. The same
// bits as gaussian_block per block.
void gaussian_blocks(std::uint64_t seed, std::uint64_t stream, std::uint64_t first,
                     std::size_t count, float* out) noexcept {
  const PhiloxLanesFn philox_lanes = philox_lanes_impl();
  PhiloxLanes words;
  for (std::size_t done = 0; done < count; done += kLanes) {
    philox_lanes(first + done, lo32(stream), hi32(stream), lo32(seed), hi32(seed), words);
    box_muller_lanes(words, std::min(kLanes, count - done), out + 4 * done);
  }
}

}  // namespace detail

PhiloxCounter philox4x32(PhiloxCounter counter, PhiloxKey key) noexcept {
  for (int round = 0; round < detail::kPhiloxRounds; ++round) {
    if (round > 0) {
      key[0] += detail::kPhiloxW0;
      key[1] += detail::kPhiloxW1;
    }
    detail::philox_round(counter, key);
  }
  return counter;
}

float gaussian_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) noexcept {
  float block[4];
  detail::gaussian_block(seed, stream, index / 4, block);
  return block[index % 4];
}

void fill_gaussian(std::uint64_t seed, std::uint64_t stream, std::uint64_t start, float* out,
                   std::size_t n) noexcept {
  std::uint64_t index = start;
  std::size_t done = 0;
  float block[4];
  // Leading partial block when start is not a multiple of 4.
  if (n > 0 && index % 4 != 0) {
    detail::gaussian_block(seed, stream, index / 4, block);
    const std::size_t offset = static_cast<std::size_t>(index % 4);
    const std::size_t count = std::min<std::size_t>(4 - offset, n);
    std::copy(block + offset, block + offset + count, out);
    done += count;
    index += count;
  }
  // Whole blocks, written directly by the vectorised generator.
  const std::size_t whole = (n - done) / 4;
  detail::gaussian_blocks(seed, stream, index / 4, whole, out + done);
  done += 4 * whole;
  index += 4 * whole;
  // Trailing partial block.
  if (done < n) {
    detail::gaussian_block(seed, stream, index / 4, block);
    std::copy(block, block + (n - done), out + done);
  }
}

std::uint64_t hash_draw(std::uint64_t seed, std::uint64_t a, std::uint64_t b,
                        std::uint64_t c) noexcept {
  const PhiloxCounter ctr = {detail::lo32(a), detail::lo32(b), detail::lo32(c),
                             detail::kKeyDrawTag};
  const PhiloxKey key = {detail::lo32(seed) ^ detail::kKeyDrawSeedTag0,
                         detail::hi32(seed) ^ detail::kKeyDrawSeedTag1};
  const PhiloxCounter w = philox4x32(ctr, key);
  // Word 0 is the low half, word 1 the high half.
  return static_cast<std::uint64_t>(w[0]) | (static_cast<std::uint64_t>(w[1]) << 32);
}

}  // namespace evokit
