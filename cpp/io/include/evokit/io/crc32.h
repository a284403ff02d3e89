// CRC-32 (IEEE 802.3 / zlib polynomial 0xEDB88320, reflected, initial value
// and final xor 0xFFFFFFFF): crc32("123456789") == 0xCBF43926, the same as
// Python's zlib.crc32. Table-driven, no dependency.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace evokit::io {

// The CRC of data[0, size), continuing from `crc` (the CRC of the bytes
// before them; 0 to start), like zlib.crc32(data, crc).
std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;

inline std::uint32_t crc32(std::string_view bytes, std::uint32_t crc = 0) noexcept {
  return crc32(bytes.data(), bytes.size(), crc);
}

}  // namespace evokit::io
