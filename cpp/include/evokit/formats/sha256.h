// SHA-256 (FIPS 180-4), self-contained: sha256_hex("abc") ==
// "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", the
// same as Python's hashlib.sha256(b"abc").hexdigest(). Used for the model
// fingerprints and the state files' trailers (no dependency beyond the
// standard library).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace evokit::formats {

class Sha256 {
 public:
  Sha256() noexcept;
  // Appends data[0, size) to the message.
  void update(const void* data, std::size_t size) noexcept;
  void update(std::string_view bytes) noexcept { update(bytes.data(), bytes.size()); }
  // The digest of everything appended, as 32 bytes / 64 lowercase hex
  // characters. Either ends the hash: call it once.
  std::array<std::uint8_t, 32> digest() noexcept;
  std::string hex_digest();

 private:
  void compress(const std::uint8_t* block) noexcept;

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;  // bytes appended
};

// `bytes` as lowercase hex, two characters a byte.
std::string to_hex(std::string_view bytes);

// sha256 of `bytes`, as 64 lowercase hex characters.
std::string sha256_hex(std::string_view bytes);

}  // namespace evokit::formats
