// Error-message helpers shared by the core's sources (internal).
#pragma once

#include <charconv>
#include <stdexcept>
#include <string>

namespace evokit::detail {

// The shortest decimal that round-trips `value` ("0.02", "-0.5", "nan", "inf",
// "-inf", "42"), independent of the locale.
template <class T>
std::string format_number(T value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

// Throws std::invalid_argument "<what> must not be null".
inline void require_non_null(const void* pointer, const char* what) {
  if (pointer == nullptr) throw std::invalid_argument(std::string(what) + " must not be null");
}

// Throws std::invalid_argument unless num_threads >= 1.
inline void require_num_threads(int num_threads) {
  if (num_threads < 1) {
    throw std::invalid_argument("num_threads must be >= 1, got " + std::to_string(num_threads));
  }
}

}  // namespace evokit::detail
