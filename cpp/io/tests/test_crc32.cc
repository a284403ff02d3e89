#include "evokit/io/crc32.h"

#include <gtest/gtest.h>

#include <string>

namespace evokit::io {
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

}  // namespace
}  // namespace evokit::io
