#include "evokit/io/state_file.h"

#include <array>
#include <cstdint>

#include "evokit/io/errors.h"
#include "evokit/io/sha256.h"
#include "file_util.h"

namespace evokit::io {

namespace {

constexpr char kTag[2] = {0x7A, 0x20};  // field 15, length-delimited; 32 bytes

std::string hex(const std::string& digest) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const char c : digest) {
    const auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::string sha256_bytes(const std::string& body) {
  Sha256 h;
  h.update(body);
  const std::array<std::uint8_t, 32> d = h.digest();
  return std::string(d.begin(), d.end());
}

}  // namespace

std::string seal_state(const std::string& body) {
  return body + std::string(kTag, 2) + sha256_bytes(body);
}

bool unseal_state(const std::string& path, const std::string& bytes, std::string& body,
                  std::string& error) {
  const std::size_t n = bytes.size();
  if (n < kStateTrailerSize || bytes.compare(n - kStateTrailerSize, 2, kTag, 2) != 0) {
    if (n == 0) {
      error = path + ": empty file, expected a state file ending with its sha256 trailer";
    } else {
      error = path + ": no sha256 trailer at its end (of " + std::to_string(n) +
              " bytes): cut short or damaged, or written by an EvoKit before state files were "
              "checksummed; if it is an intact older file, add the trailer with `evokit seal " +
              path + "`";
    }
    return false;
  }
  std::string candidate = bytes.substr(0, n - kStateTrailerSize);
  const std::string recorded = bytes.substr(n - 32);
  const std::string actual = sha256_bytes(candidate);
  if (actual != recorded) {
    error = path + ": damaged: the sha256 of its first " + std::to_string(candidate.size()) +
            " bytes is " + hex(actual) + ", its trailer records " + hex(recorded);
    return false;
  }
  body = std::move(candidate);
  return true;
}

void write_state_file(const std::string& path, const google::protobuf::MessageLite& message) {
  detail::atomic_write(path, seal_state(message.SerializeAsString()));
}

template <class E>
void read_state_file(const std::string& path, google::protobuf::MessageLite& message,
                     const std::string& what) {
  std::string bytes, body, error;
  if (!detail::read_file(path, bytes, error)) throw E(path + ": cannot read " + what + ": " + error);
  if (!unseal_state(path, bytes, body, error)) throw E(error);
  if (!message.ParseFromString(body)) {
    throw E(path + ": not a " + what + " (the bytes do not parse as " + message.GetTypeName() +
            ")");
  }
}

template void read_state_file<SolverFileError>(const std::string&, google::protobuf::MessageLite&,
                                               const std::string&);
template void read_state_file<WarehouseError>(const std::string&, google::protobuf::MessageLite&,
                                              const std::string&);

}  // namespace evokit::io
