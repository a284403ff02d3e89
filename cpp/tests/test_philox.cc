// Philox4x32-10 known answers and hash_draw, which draws sampling keys with it.
#include "evokit/philox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdint>
#include <vector>

namespace evokit {
namespace {

// Known-answer vectors for philox4x32 with 10 rounds from Random123's
// tests/kat_vectors (D. E. Shaw Research; the same lines are cut and pasted
// into Random123-Boost's libs/random/test/test_philox.cpp):
//
// philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000   6627e8d5 e169c58d bc57ac4c 9b00dbd8
// philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff   408f276d 41c83b0e a20bc7c6 6d5451fd
// philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0   d16cfe09 94fdcceb 5001e420 24126ea1
//
// Columns: counter (4 words), key (2 words), expected output (4 words).
struct KnownAnswer {
  PhiloxCounter counter;
  PhiloxKey key;
  PhiloxCounter expected;
};

TEST(Philox, KnownAnswerZeros) {
  const KnownAnswer kat{{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u},
                        {0x00000000u, 0x00000000u},
                        {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}};
  EXPECT_EQ(philox4x32(kat.counter, kat.key), kat.expected);
}

TEST(Philox, KnownAnswerAllOnes) {
  const KnownAnswer kat{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                        {0xffffffffu, 0xffffffffu},
                        {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}};
  EXPECT_EQ(philox4x32(kat.counter, kat.key), kat.expected);
}

TEST(Philox, KnownAnswerPiDigits) {
  const KnownAnswer kat{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                        {0xa4093822u, 0x299f31d0u},
                        {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
  EXPECT_EQ(philox4x32(kat.counter, kat.key), kat.expected);
}

TEST(Philox, EveryInputWordMatters) {
  const PhiloxCounter ctr = {1, 2, 3, 4};
  const PhiloxKey key = {5, 6};
  const PhiloxCounter base = philox4x32(ctr, key);
  for (int w = 0; w < 4; ++w) {
    PhiloxCounter c = ctr;
    c[w] ^= 1u;
    EXPECT_NE(philox4x32(c, key), base) << "counter word " << w;
  }
  for (int w = 0; w < 2; ++w) {
    PhiloxKey k = key;
    k[w] ^= 1u;
    EXPECT_NE(philox4x32(ctr, k), base) << "key word " << w;
  }
}

TEST(HashDraw, IsAPureFunctionOfItsArguments) {
  EXPECT_EQ(hash_draw(1024, 1, 2, 3), hash_draw(1024, 1, 2, 3));
  const std::uint64_t base = hash_draw(1024, 1, 2, 3);
  EXPECT_NE(hash_draw(1025, 1, 2, 3), base);
  EXPECT_NE(hash_draw(1024 + (std::uint64_t{1} << 40), 1, 2, 3), base);  // high seed word
  EXPECT_NE(hash_draw(1024, 0, 2, 3), base);
  EXPECT_NE(hash_draw(1024, 1, 0, 3), base);
  EXPECT_NE(hash_draw(1024, 1, 2, 0), base);
  EXPECT_NE(hash_draw(1024, 2, 1, 3), base);  // argument order matters
}

TEST(HashDraw, ReadsTheLow32BitsOfABC) {
  const std::uint64_t high = std::uint64_t{1} << 32;
  EXPECT_EQ(hash_draw(9, 1 + high, 2, 3), hash_draw(9, 1, 2, 3));
  EXPECT_EQ(hash_draw(9, 1, 2 + 5 * high, 3), hash_draw(9, 1, 2, 3));
  EXPECT_EQ(hash_draw(9, 1, 2, 3 + 7 * high), hash_draw(9, 1, 2, 3));
}

// Each of the 64 output bits is set in half of 10^5 draws (standard error
// 0.0016; tolerance 0.01), and no two of the draws collide.
TEST(HashDraw, BitsAreBalanced) {
  const int n = 100000;
  std::array<int, 64> ones{};
  std::vector<std::uint64_t> values;
  values.reserve(n);
  for (int i = 0; i < n; ++i) {
    const std::uint64_t h = hash_draw(1024, static_cast<std::uint64_t>(i % 100),
                                      static_cast<std::uint64_t>(i / 100), 0);
    values.push_back(h);
    const std::bitset<64> bits(h);
    for (int b = 0; b < 64; ++b) ones[b] += bits[b];
  }
  for (int b = 0; b < 64; ++b) {
    EXPECT_NEAR(static_cast<double>(ones[b]) / n, 0.5, 0.01) << "bit " << b;
  }
  std::sort(values.begin(), values.end());
  EXPECT_EQ(std::adjacent_find(values.begin(), values.end()), values.end());
}

}  // namespace
}  // namespace evokit
