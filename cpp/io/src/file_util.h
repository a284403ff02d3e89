// File helpers shared by the io sources (internal).
#pragma once

#include <stdexcept>
#include <string>

namespace evokit::io::detail {

// f(), a refusal of the core's file rules (std::invalid_argument, one line
// naming the file) rethrown as the io library's error E.
template <class E, class F>
auto core_checked(F&& f) {
  try {
    return f();
  } catch (const E&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw E(e.what());
  }
}

// Reads the whole regular file at `path` into `out`. On failure returns
// false and sets `error` to why ("no such file", "is a directory", or the
// system's message).
bool read_file(const std::string& path, std::string& out, std::string& error);

// Writes `data` to `path` so that a crash leaves the old file or the new
// one, never half of one: a temporary file in the same directory, write,
// fsync, rename over `path`, fsync the directory. Creates missing parent
// directories. Throws std::system_error naming the path.
void atomic_write(const std::string& path, const std::string& data);

// fsync a directory, so that a rename or a new entry in it is durable.
void fsync_dir(const std::string& dir);

// a/b (b alone if a is empty).
std::string join_path(const std::string& a, const std::string& b);

// The system's message for errno value `err`.
std::string errno_message(int err);

}  // namespace evokit::io::detail
