#include "evokit/formats/state_file.h"

#include <array>
#include <cstdint>
#include <stdexcept>

#include "evokit/formats/sha256.h"

namespace evokit::formats {

namespace {

constexpr char kTag[2] = {0x7A, 0x20};  // field 15, length-delimited; 32 bytes

std::string sha256_bytes(std::string_view body) {
  Sha256 h;
  h.update(body);
  const std::array<std::uint8_t, 32> d = h.digest();
  return std::string(d.begin(), d.end());
}

}  // namespace

std::string seal_state(std::string_view body) {
  std::string out(body);
  out.append(kTag, 2);
  out += sha256_bytes(body);
  return out;
}

bool has_state_trailer(std::string_view bytes) {
  const std::size_t n = bytes.size();
  return n >= kStateTrailerSize && bytes.compare(n - kStateTrailerSize, 2, std::string_view(kTag, 2)) == 0;
}

std::string unseal_state(const std::string& path, std::string_view bytes) {
  const std::size_t n = bytes.size();
  if (!has_state_trailer(bytes)) {
    if (n == 0) throw std::invalid_argument(path + ": empty file, expected a state file ending with its sha256 trailer");
    throw std::invalid_argument(path + ": no sha256 trailer at its end (of " + std::to_string(n) +
                                " bytes): cut short or damaged, or written by an EvoKit before state files were "
                                "checksummed; if it is an intact older file, add the trailer with `evokit seal " +
                                path + "`");
  }
  const std::string_view body = bytes.substr(0, n - kStateTrailerSize);
  const std::string_view recorded = bytes.substr(n - 32);
  const std::string actual = sha256_bytes(body);
  if (actual != recorded) {
    throw std::invalid_argument(path + ": damaged: the sha256 of its first " + std::to_string(body.size()) +
                                " bytes is " + to_hex(actual) + ", its trailer records " + to_hex(recorded));
  }
  return std::string(body);
}

}  // namespace evokit::formats
