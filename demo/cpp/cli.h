// Minimal command-line parsing for the demo programs: "--name value" or
// "--name=value" (gflags' form, which PARL EvoKit's scripts use).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace evokit_demo {

// Bad usage: the program prints it with its usage line and exits 2.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Args {
 public:
  // Parses argv as "--name value" or "--name=value"; names must be in `known`.
  Args(int argc, char** argv, const std::set<std::string>& known) {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "-h" || arg == "--help") {
        help_ = true;
        continue;
      }
      const std::size_t equals = arg.find('=');
      const std::string name = arg.substr(0, equals);
      if (name.rfind("--", 0) != 0 || known.count(name.substr(2)) == 0) {
        throw UsageError("unknown argument " + name);
      }
      if (equals != std::string::npos) {
        values_[name.substr(2)] = arg.substr(equals + 1);
        continue;
      }
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      values_[name.substr(2)] = argv[++i];
    }
  }

  bool help() const { return help_; }
  bool has(const std::string& name) const { return values_.count(name) != 0; }

  std::string str(const std::string& name) const {
    const auto it = values_.find(name);
    if (it == values_.end()) throw UsageError("--" + name + " is required");
    return it->second;
  }

  // An integer in [low, high]; `fallback` if absent.
  std::int64_t integer(const std::string& name, std::int64_t fallback, std::int64_t low,
                       std::int64_t high = std::numeric_limits<std::int64_t>::max()) const {
    if (!has(name)) return fallback;
    const std::string text = values_.at(name);
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size()) {
      throw UsageError("--" + name + " expects an integer, got '" + text + "'");
    }
    if (value < low || value > high) {
      throw UsageError("--" + name + " must be in [" + std::to_string(low) + ", " +
                       std::to_string(high) + "], got " + text);
    }
    return value;
  }

  double real(const std::string& name, double fallback) const {
    if (!has(name)) return fallback;
    const std::string text = values_.at(name);
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size()) {
      throw UsageError("--" + name + " expects a number, got '" + text + "'");
    }
    return value;
  }

 private:
  std::map<std::string, std::string> values_;
  bool help_ = false;
};

// Runs body(); prints "<prog>: error: <message>" and returns 1 (2 for bad
// usage, with the usage text) on an exception.
template <class Body>
int run_main(const char* prog, const char* usage, Body&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << usage << "\n" << prog << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return 1;
  }
}

// A program with named arguments: parses argv against `known`, prints
// `usage` for --help, else returns body(args); errors as run_main.
template <class Body>
int run_program(int argc, char** argv, const char* prog, const char* usage,
                const std::set<std::string>& known, Body&& body) {
  return run_main(prog, usage, [&] {
    const Args args(argc, argv, known);
    if (args.help()) {
      std::cout << usage << "\n";
      return 0;
    }
    return body(args);
  });
}

}  // namespace evokit_demo
