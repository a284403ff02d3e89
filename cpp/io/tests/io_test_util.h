// Helpers shared by the evokit_io tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace evokit::io::testing {

inline std::string data_path(const std::string& name) {
  return std::string(EVOKIT_IO_TEST_DATA) + "/" + name;
}

// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "evokit-io-test-XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The lines of the text file at `path`, but comments and blank lines: each
// as its first word and the rest.
inline std::vector<std::pair<std::string, std::string>> file_lines(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.find(' ');
    const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    out.emplace_back(line.substr(0, space), rest);
  }
  return out;
}

// The lines of a fixture file of make_fixtures.py in cpp/io/tests/data (file_lines).
inline std::vector<std::pair<std::string, std::string>> fixture_lines(const std::string& name) {
  return file_lines(data_path(name));
}

// cpp/io/tests/data/expected.txt: "name v1 v2 ..." per line (see make_fixtures.py).
inline const std::map<std::string, std::vector<double>>& expected() {
  static const std::map<std::string, std::vector<double>> values = [] {
    std::map<std::string, std::vector<double>> out;
    for (const auto& [name, rest] : fixture_lines("expected.txt")) {
      std::istringstream fields(rest);
      double v;
      while (fields >> v) out[name].push_back(v);
    }
    return out;
  }();
  return values;
}

inline std::vector<float> expected_floats(const std::string& name) {
  const auto& all = expected();
  const auto it = all.find(name);
  if (it == all.end()) throw std::runtime_error("expected.txt has no " + name);
  return std::vector<float>(it->second.begin(), it->second.end());
}

}  // namespace evokit::io::testing
