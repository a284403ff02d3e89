// numpy's SeedSequence and PCG64 (see numpy_random.h).
#include "evokit/numpy_random.h"

#include <cstddef>

namespace evokit {

namespace {

// ---- numpy's SeedSequence (numpy/random/bit_generator.pyx) -------------------
constexpr std::uint32_t kInitA = 0x43b0d7e5u;
constexpr std::uint32_t kMultA = 0x931e8875u;
constexpr std::uint32_t kInitB = 0x8b51f9ddu;
constexpr std::uint32_t kMultB = 0x58f38dedu;
constexpr std::uint32_t kMixMultL = 0xca01f9ddu;
constexpr std::uint32_t kMixMultR = 0x4973f715u;
constexpr int kXShift = 16;
constexpr std::size_t kPoolSize = 4;

std::uint32_t hashmix(std::uint32_t value, std::uint32_t& hash_const) noexcept {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

std::uint32_t mix(std::uint32_t x, std::uint32_t y) noexcept {
  std::uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

// ---- numpy's PCG64 (numpy/random/src/pcg64/pcg64.h), XSL-RR output ------------
__extension__ typedef unsigned __int128 u128;
constexpr u128 kPcgMult = (static_cast<u128>(2549297995355413924ull) << 64) |
                          static_cast<u128>(4865540595714422341ull);

}  // namespace

namespace detail {

std::array<std::uint64_t, 4> seed_sequence_state(std::uint64_t seed) noexcept {
  // The seed as little-endian 32-bit words (0 is one word), pool of 4.
  std::uint32_t entropy[2] = {static_cast<std::uint32_t>(seed),
                              static_cast<std::uint32_t>(seed >> 32)};
  const std::size_t n_entropy = (seed >> 32) != 0 ? 2 : 1;
  std::uint32_t pool[kPoolSize];
  std::uint32_t hash_const = kInitA;
  for (std::size_t i = 0; i < kPoolSize; ++i) {
    pool[i] = hashmix(i < n_entropy ? entropy[i] : 0u, hash_const);
  }
  for (std::size_t src = 0; src < kPoolSize; ++src) {
    for (std::size_t dst = 0; dst < kPoolSize; ++dst) {
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], hash_const));
    }
  }
  // generate_state(4, uint64): 8 words cycling over the pool, paired low/high.
  std::uint32_t words[8];
  std::uint32_t h = kInitB;
  for (std::size_t i = 0; i < 8; ++i) {
    std::uint32_t v = pool[i % kPoolSize];
    v ^= h;
    h *= kMultB;
    v *= h;
    v ^= v >> kXShift;
    words[i] = v;
  }
  std::array<std::uint64_t, 4> out{};
  for (std::size_t i = 0; i < 4; ++i) {
    out[i] = static_cast<std::uint64_t>(words[2 * i]) |
             (static_cast<std::uint64_t>(words[2 * i + 1]) << 32);
  }
  return out;
}

}  // namespace detail

NumpyGenerator::NumpyGenerator(std::uint64_t seed) noexcept {
  const std::array<std::uint64_t, 4> s = detail::seed_sequence_state(seed);
  const u128 init_state = (static_cast<u128>(s[0]) << 64) | s[1];
  const u128 init_seq = (static_cast<u128>(s[2]) << 64) | s[3];
  inc_ = (init_seq << 1u) | 1u;
  advance();
  state_ += init_state;
  advance();
}

void NumpyGenerator::advance() noexcept { state_ = state_ * kPcgMult + inc_; }

std::uint64_t NumpyGenerator::next_uint64() noexcept {
  advance();
  const auto hi = static_cast<std::uint64_t>(state_ >> 64u);
  const auto lo = static_cast<std::uint64_t>(state_);
  const auto rot = static_cast<unsigned>(state_ >> 122u);
  const std::uint64_t v = hi ^ lo;
  return (v >> rot) | (v << ((-rot) & 63u));
}

double NumpyGenerator::random() noexcept {
  return static_cast<double>(next_uint64() >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace evokit
