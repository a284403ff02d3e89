// The exceptions of evokit::io. Each names the file (and where known the
// line, the byte offset or the field) and gives expected and actual values.
// All are std::invalid_argument: a bad file is bad input, as in Python
// (where they are ValueError). Failures of the operating system while
// writing (disk full, permissions) are std::system_error naming the path.
// Every message is one line: a control character taken from a file (a name
// in a damaged model, say) is written escaped: \n, \x1b.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

namespace evokit::io {

namespace detail {

// `message` with its control characters escaped: one line.
inline std::string one_line(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  for (const char c : message) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b != 0x7F) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      out += hex;
    }
  }
  return out;
}

}  // namespace detail

// The base of the exceptions below: std::invalid_argument with a one-line message.
class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& message) : std::invalid_argument(detail::one_line(message)) {}
};

// A config that cannot be read, does not parse, or holds a value out of
// range: "configs/bad.prototxt:3:21: ...".
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A model file that is missing, corrupt, or uses what the native policy
// cannot run (an unsupported op names the op and the node).
class ModelError : public Error {
 public:
  using Error::Error;
};

// A solver state file (solver.pb) that is missing, corrupt, or belongs to
// another model or optimizer.
class SolverFileError : public Error {
 public:
  using Error::Error;
};

// A sampling log that cannot be used at all (missing, a directory, not
// readable or writable). Bad records inside a log are not errors: read_log
// skips and reports them.
class LogError : public Error {
 public:
  using Error::Error;
};

// A model warehouse that is missing, empty, half-written or inconsistent.
class WarehouseError : public Error {
 public:
  using Error::Error;
};

}  // namespace evokit::io
