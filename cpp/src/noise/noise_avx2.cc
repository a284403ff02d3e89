// The noise's AVX2 implementations (noise_impl.h): 16 counters per pass
// through VAES on 256-bit registers ("avx2-vaes") or AESENC per counter
// ("avx2-aesni"), the transform in AVX2 with the tables looked up by vpermps
// and blends; and the transform alone, for the tests.
#include "noise/noise_impl.h"

#ifdef EVOKIT_NOISE_X86

#include <immintrin.h>

namespace evokit::detail {

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

// box_muller16 (noise_avx512.cc) for 8 pairs, the same operations in the same order (but the
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
    noise_blocks_aesni(seed, stream, first + done, count - done, out + 4 * done);
  }
}

__attribute__((target("avx2"))) void noise_blocks_avx2_vaes(std::uint64_t seed, std::uint64_t stream,
                                                           std::uint64_t first, std::size_t count,
                                                           float* out) noexcept {
  noise_blocks_avx2<ars8_vaes>(seed, stream, first, count, out);
}

__attribute__((target("avx2"))) void noise_blocks_avx2_aesni(std::uint64_t seed, std::uint64_t stream,
                                                            std::uint64_t first, std::size_t count,
                                                            float* out) noexcept {
  noise_blocks_avx2<ars8_aesni>(seed, stream, first, count, out);
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

}  // namespace evokit::detail

#endif  // EVOKIT_NOISE_X86
