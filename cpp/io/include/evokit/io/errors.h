// The exceptions of evokit::io. Each names the file (and where known the
// line, the byte offset or the field) and gives expected and actual values.
// All are std::invalid_argument: a bad file is bad input, as in Python
// (where they are ValueError). Failures of the operating system while
// writing (disk full, permissions) are std::system_error naming the path.
#pragma once

#include <stdexcept>

namespace evokit::io {

// A config that cannot be read, does not parse, or holds a value out of
// range: "configs/bad.prototxt:3:21: ...".
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A model file that is missing, corrupt, or uses what the native policy
// cannot run (an unsupported op names the op and the node).
class ModelError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A solver state file (solver.pb) that is missing, corrupt, or belongs to
// another model or optimizer.
class SolverFileError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A sampling log that cannot be used at all (missing, a directory, not
// readable or writable). Bad records inside a log are not errors: read_log
// skips and reports them.
class LogError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A model warehouse that is missing, empty, half-written or inconsistent.
class WarehouseError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace evokit::io
