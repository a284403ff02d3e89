// Shared by the libFuzzer harnesses of the C++ readers (cpp/fuzz/README.md).
//
// A reader meets bytes of any content. What it may do with bad ones is
// refuse them with its documented error: every error class of
// evokit/io/errors.h (ConfigError, ModelError, SolverFileError, LogError,
// WarehouseError) and the core's std::invalid_argument derive from
// std::invalid_argument. Anything else (another exception, a crash, a leak,
// undefined behaviour, an allocation beyond -rss_limit_mb / -malloc_limit_mb,
// a hang beyond -timeout) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace evokit::fuzz {

// Runs `read`; a std::invalid_argument is the reader's refusal and ends the
// input quietly. Returns whether `read` finished without one.
template <class Read>
bool refused_or_read(Read&& read) {
  try {
    read();
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// A broken invariant of a reader's result: report it and abort (libFuzzer
// saves the input).
[[noreturn]] inline void broken(const std::string& what) {
  std::fprintf(stderr, "invariant broken: %s\n", what.c_str());
  std::abort();
}

inline std::string as_string(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace evokit::fuzz
