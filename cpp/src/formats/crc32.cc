#include "evokit/crc32.h"

#include <array>

namespace evokit {

namespace {

constexpr std::uint32_t kPolynomial = 0xEDB88320u;  // reflected

// Slicing-by-8 tables: kTables[0] is the byte-at-a-time table, and
// kTables[k][b] the CRC register contribution of byte b followed by k zero
// bytes, so eight bytes are folded in with eight lookups at once.
using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables tables{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? kPolynomial ^ (c >> 1) : c >> 1;
    tables[0][i] = c;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (std::size_t i = 0; i < 256; ++i) {
      const std::uint32_t prev = tables[k - 1][i];
      tables[k][i] = (prev >> 8) ^ tables[0][prev & 0xFFu];
    }
  }
  return tables;
}

constexpr Tables kTables = make_tables();

std::uint32_t load_le32(const unsigned char* p) noexcept {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

// a * b modulo the CRC polynomial, both in the reflected bit order of the
// CRC register (zlib's multmodp).
constexpr std::uint32_t multiply_mod_p(std::uint32_t a, std::uint32_t b) noexcept {
  std::uint32_t product = 0;
  for (std::uint32_t bit = 1u << 31; bit != 0; bit >>= 1) {
    if (a & bit) product ^= b;
    b = (b & 1u) ? (b >> 1) ^ kPolynomial : b >> 1;
  }
  return product;
}

// x^(2^k) modulo the polynomial, k = 0..63 (x^1 is 1 << 30 in reflected order).
constexpr std::array<std::uint32_t, 64> make_powers() {
  std::array<std::uint32_t, 64> powers{};
  std::uint32_t p = 1u << 30;
  for (auto& power : powers) {
    power = p;
    p = multiply_mod_p(p, p);
  }
  return powers;
}

constexpr std::array<std::uint32_t, 64> kPowers = make_powers();

}  // namespace

std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc) noexcept {
  const auto* bytes = static_cast<const unsigned char*>(data);
  const auto& t = kTables;
  std::uint32_t c = crc ^ 0xFFFFFFFFu;
  for (; size >= 8; bytes += 8, size -= 8) {
    const std::uint32_t lo = load_le32(bytes) ^ c;
    const std::uint32_t hi = load_le32(bytes + 4);
    c = t[7][lo & 0xFFu] ^ t[6][(lo >> 8) & 0xFFu] ^ t[5][(lo >> 16) & 0xFFu] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFFu] ^ t[2][(hi >> 8) & 0xFFu] ^ t[1][(hi >> 16) & 0xFFu] ^ t[0][hi >> 24];
  }
  for (; size > 0; ++bytes, --size) c = t[0][(c ^ *bytes) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::uint32_t crc32_combine(std::uint32_t crc_a, std::uint32_t crc_b,
                            std::uint64_t size_b) noexcept {
  // crc_a times x^(8 * size_b): A shifted past the size_b bytes of B.
  std::uint32_t shift = 1u << 31;  // x^0
  for (int k = 3; size_b != 0; size_b >>= 1, ++k) {
    if (size_b & 1u) shift = multiply_mod_p(kPowers[static_cast<std::size_t>(k) & 63u], shift);
  }
  return multiply_mod_p(shift, crc_a) ^ crc_b;
}

}  // namespace evokit
