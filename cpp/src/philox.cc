// Philox4x32-10, the Box-Muller transform on top of it, and hash_draw.
//
// Philox follows Random123 (Salmon et al., SC'11) exactly: each round
// multiplies counter words 0 and 2 by M0 and M1, swaps and XORs in the key,
// and the key is bumped by the Weyl constants (W0, W1) between rounds. The
// known-answer vectors of Random123's kat_vectors are reproduced bit for bit
// (see cpp/tests/test_philox.cc).
#include "evokit/philox.h"

#include <algorithm>
#include <cmath>

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

// 2 pi rounded to double.
constexpr double kTwoPi = 6.283185307179586;
// 2^-32.
constexpr double kTwoPowMinus32 = 1.0 / 4294967296.0;

constexpr std::uint32_t lo32(std::uint64_t x) noexcept { return static_cast<std::uint32_t>(x); }
constexpr std::uint32_t hi32(std::uint64_t x) noexcept {
  return static_cast<std::uint32_t>(x >> 32);
}

inline void philox_round(PhiloxCounter& ctr, const PhiloxKey& key) noexcept {
  const std::uint64_t p0 = static_cast<std::uint64_t>(kPhiloxM0) * ctr[0];
  const std::uint64_t p1 = static_cast<std::uint64_t>(kPhiloxM1) * ctr[2];
  ctr = {hi32(p1) ^ ctr[1] ^ key[0], lo32(p1), hi32(p0) ^ ctr[3] ^ key[1], lo32(p0)};
}

// Two standard normals from two uniform words, as documented in philox.h.
inline void box_muller(std::uint32_t w0, std::uint32_t w1, float& z0, float& z1) noexcept {
  const double u1 = (static_cast<double>(w0) + 1.0) * kTwoPowMinus32;  // (0, 1]
  const double u2 = static_cast<double>(w1) * kTwoPowMinus32;          // [0, 1)
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = kTwoPi * u2;
  z0 = static_cast<float>(r * std::cos(theta));
  z1 = static_cast<float>(r * std::sin(theta));
}

// The four normals 4 * block .. 4 * block + 3 of (seed, stream).
inline void gaussian_block(std::uint64_t seed, std::uint64_t stream, std::uint64_t block,
                           float out[4]) noexcept {
  const PhiloxCounter ctr = {lo32(block), hi32(block), lo32(stream), hi32(stream)};
  const PhiloxCounter w = philox4x32(ctr, {lo32(seed), hi32(seed)});
  box_muller(w[0], w[1], out[0], out[1]);
  box_muller(w[2], w[3], out[2], out[3]);
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
  // Whole blocks, written directly.
  for (; n - done >= 4; done += 4, index += 4) {
    detail::gaussian_block(seed, stream, index / 4, out + done);
  }
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
