// The noise of noise.h: ARS4x32-5 and the float32 Box-Muller transform.
//
// Five implementations give the same bits (tested), the best the CPU runs is
// used (the dispatcher below):
// - "avx512-vaes" (noise_avx512.cc): 16 counters per pass through VAES on
//   512-bit registers and the transform in AVX-512, its 32-entry tables
//   looked up with vpermi2ps (0.39 ns per normal on one Zen 4 core);
// - "avx2-vaes" / "avx2-aesni" (noise_avx2.cc): 16 counters per pass through
//   VAES on 256-bit registers or AESENC per counter, the transform in AVX2
//   with the tables looked up by vpermps and blends (0.87 / 1.1 ns on the
//   same core);
// - "aesni" (here): one counter per AESENC and the transform as a loop the
//   compiler vectorises (SSE2 / AVX2 / AVX-512 clones, tables as gathers);
// - "portable" (here): a software AES round (FIPS-197, S-box computed at
//   compile time) and the same transform loop.
// The transform is float only, each operation rounded once (-ffp-contract=off),
// so the vector and scalar paths agree bit for bit, and so does the NumPy
// reference tests/es_oracle.py. The keys, tables and declarations the files
// share are in noise_impl.h.
#include "evokit/noise.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/kernel_targets.h"
#include "noise/noise_blocks.h"
#include "noise/noise_impl.h"

#ifdef EVOKIT_NOISE_X86
#include <immintrin.h>
#endif

namespace evokit {

namespace detail {

// ---- ARS4x32 ------------------------------------------------------------------

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

// The S-box: the multiplicative inverse (x^254 by square and multiply, 15
// products rather than 254, within Clang's default constexpr step limit; 0
// for 0), then the affine map.
struct SBox {
  std::uint8_t v[256] = {};
  constexpr SBox() {
    for (int x = 0; x < 256; ++x) {
      std::uint8_t inv = 1;
      std::uint8_t power = static_cast<std::uint8_t>(x);  // x^(2^k)
      for (unsigned e = 254; e != 0; e >>= 1) {
        if (e & 1u) inv = gf_mul(inv, power);
        power = gf_mul(power, power);
      }
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

void noise_blocks_aesni(std::uint64_t seed, std::uint64_t stream, std::uint64_t first,
                        std::size_t count, float* out) noexcept {
  noise_blocks_words<ars_noise_aesni>(seed, stream, first, count, out);
}
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
    found.emplace_back("avx2-vaes", &noise_blocks_avx2_vaes);
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("aes")) {
    found.emplace_back("avx2-aesni", &noise_blocks_avx2_aesni);
  }
  if (__builtin_cpu_supports("aes")) found.emplace_back("aesni", &noise_blocks_aesni);
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
