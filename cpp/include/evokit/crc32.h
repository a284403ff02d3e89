// CRC-32 (IEEE 802.3 / zlib polynomial 0xEDB88320, reflected, initial value
// and final xor 0xFFFFFFFF): crc32("123456789") == 0xCBF43926, the same as
// Python's zlib.crc32. Table-driven (slicing by 8), no dependency. The
// checksums of the sampling-log framing (evokit/record_log.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace evokit {

// The CRC of data[0, size), continuing from `crc` (the CRC of the bytes
// before them; 0 to start), like zlib.crc32(data, crc).
std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;

inline std::uint32_t crc32(std::string_view bytes, std::uint32_t crc = 0) noexcept {
  return crc32(bytes.data(), bytes.size(), crc);
}

// The CRC of A followed by B from crc_a = crc32(A), crc_b = crc32(B) and
// size_b = |B|, like zlib's crc32_combine, in O(log size_b) without reading
// the bytes. Since crc32(AB) = crc32_combine(crc32(A), 0, |B|) ^ crc32(B),
// the CRC of any stretch of a buffer follows from the CRCs of two prefixes.
std::uint32_t crc32_combine(std::uint32_t crc_a, std::uint32_t crc_b,
                            std::uint64_t size_b) noexcept;

}  // namespace evokit
