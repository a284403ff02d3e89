// Philox4x32-10 and hash_draw, which draws sampling keys with it. (The noise
// itself is ARS4x32-7: noise.cc.)
//
// Philox follows Random123 (Salmon et al., SC'11) exactly: each round
// multiplies counter words 0 and 2 by M0 and M1, swaps and XORs in the key,
// and the key is bumped by the Weyl constants (W0, W1) between rounds. The
// known-answer vectors of Random123's kat_vectors are reproduced bit for bit
// (see cpp/tests/test_philox.cc).
#include "evokit/philox.h"

namespace evokit {

namespace detail {

constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr std::uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
constexpr std::uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1
constexpr int kPhiloxRounds = 10;

// hash_draw's counter and key: counter word 3 is the fixed kKeyDrawTag and
// the key is the seed XOR a fixed tag:
//   key = {lo32(seed) ^ kKeyDrawSeedTag0, hi32(seed) ^ kKeyDrawSeedTag1}.
// (Noise versions 1 and 2 drew normals from Philox too; the tags kept key
// draws off every noise counter. Version 3's noise is ARS, a different
// function, and the tags stay so that drawn keys are unchanged.)
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
