// The noise's AVX-512 implementation, "avx512-vaes" (noise_impl.h): 16
// counters per pass through VAES on 512-bit registers and the transform in
// AVX-512, its 32-entry tables looked up with vpermi2ps; accumulate_gaussian's
// fused chunks; and the transform alone, for the tests.
#include "noise/noise_impl.h"

#ifdef EVOKIT_NOISE_X86

#include <immintrin.h>

#include <algorithm>

namespace evokit::detail {

// GCC 12 warns inside avx512fintrin.h that the undefined source of some
// intrinsics is "used uninitialized" (a false positive, GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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
    noise_blocks_aesni(seed, stream, first + done, count - done, out + 4 * done);
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

#pragma GCC diagnostic pop

}  // namespace evokit::detail

#endif  // EVOKIT_NOISE_X86
