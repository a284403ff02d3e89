#include "evokit/crc32.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

namespace evokit {
namespace {

TEST(Crc32, KnownValues) {
  // The CRC-32 check value and zlib.crc32 results.
  EXPECT_EQ(crc32(std::string("123456789")), 0xCBF43926u);
  EXPECT_EQ(crc32(std::string()), 0u);
  EXPECT_EQ(crc32(std::string("a")), 0xE8B7BE43u);
  EXPECT_EQ(crc32(std::string("The quick brown fox jumps over the lazy dog")), 0x414FA339u);
  EXPECT_EQ(crc32(std::string(4, '\0')), 0x2144DF1Cu);
}

TEST(Crc32, ContinuesLikeZlib) {
  const std::string all = "123456789";
  EXPECT_EQ(crc32(all.substr(4), crc32(all.substr(0, 4))), crc32(all));
}

TEST(Crc32, EightBytesAtOnceEqualsByteAtATime) {
  // Every length and alignment around the 8-byte steps, against the CRC fed
  // one byte at a time (each call below 8 bytes runs the byte loop only).
  std::mt19937 rng(3);
  std::string bytes(100, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  for (std::size_t start = 0; start < 9; ++start) {
    for (std::size_t n = 0; start + n <= bytes.size(); ++n) {
      std::uint32_t one_by_one = 0;
      for (std::size_t i = start; i < start + n; ++i) one_by_one = crc32(&bytes[i], 1, one_by_one);
      ASSERT_EQ(crc32(bytes.data() + start, n), one_by_one) << start << " " << n;
    }
  }
}

TEST(Crc32, CombineEqualsTheCrcOfTheConcatenation) {
  // zlib.crc32(b"56789") == 0x131DA070
  EXPECT_EQ(crc32_combine(crc32(std::string("1234")), 0x131DA070u, 5), 0xCBF43926u);
  EXPECT_EQ(crc32_combine(0x1234u, 0x5678u, 0), 0x1234u ^ 0x5678u);
  std::mt19937 rng(5);
  std::string bytes(70000, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  for (const std::size_t split : {0u, 1u, 7u, 4096u, 65535u, 69999u, 70000u}) {
    const std::string a = bytes.substr(0, split), b = bytes.substr(split);
    EXPECT_EQ(crc32_combine(crc32(a), crc32(b), b.size()), crc32(bytes)) << "split " << split;
    // The CRC of a stretch from two prefix CRCs.
    EXPECT_EQ(crc32(bytes) ^ crc32_combine(crc32(a), 0, b.size()), crc32(b)) << "split " << split;
  }
}

}  // namespace
}  // namespace evokit
