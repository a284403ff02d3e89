#include "evokit/formats/warehouse.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "evokit/noise.h"

namespace evokit::formats {

namespace fs = std::filesystem;

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool is_empty_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_empty(p, ec) && !ec;
}

std::string join(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

[[noreturn]] void refuse(const std::string& message) { throw std::invalid_argument(message); }

}  // namespace

std::optional<std::int64_t> iteration_of(const std::string& name) {
  const std::string prefix = kIterationPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const std::string digits = name.substr(prefix.size());
  if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  return std::stoll(digits);
}

std::string iteration_dir(const std::string& path, std::int64_t k) {
  return join(path, kIterationPrefix + std::to_string(k));
}

std::string check_warehouse_dir(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) refuse(path + ": no such warehouse (create one with `evokit init-solver`)");
  if (!fs::is_directory(path, ec)) refuse(path + ": is not a directory, expected a model warehouse");
  const std::string info = join(path, kWarehouseInfoFile);
  if (!is_file(info)) {
    if (is_empty_dir(path)) refuse(path + ": empty directory, not a warehouse (create one with `evokit init-solver`)");
    refuse(path + ": not a warehouse (" + kWarehouseInfoFile + " is missing)");
  }
  return info;
}

IterationScan scan_iterations(const std::string& path) {
  IterationScan scan;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(path, ec)) {
    const std::optional<std::int64_t> k = iteration_of(entry.path().filename().string());
    if (!k) continue;
    std::string missing;
    for (const char* f : {kWarehouseModelFile, kWarehouseSolverFile}) {
      if (!is_file(entry.path() / f)) missing += (missing.empty() ? "" : ", ") + std::string(f);
    }
    if (!missing.empty()) {
      scan.problems.push_back("ignoring half-written iteration " + entry.path().string() + " (" + missing + " missing)");
      continue;
    }
    scan.iterations.push_back(*k);
  }
  if (ec) refuse(path + ": cannot list the warehouse: " + ec.message());
  std::sort(scan.iterations.begin(), scan.iterations.end());
  std::sort(scan.problems.begin(), scan.problems.end());
  return scan;
}

std::vector<std::int64_t> require_iterations(const std::string& path) {
  IterationScan scan = scan_iterations(path);
  if (scan.iterations.empty()) {
    std::string detail;
    for (const std::string& p : scan.problems) detail += "; " + p;
    refuse(path + ": no complete iteration in the warehouse" + detail);
  }
  return scan.iterations;
}

std::string require_iteration(const std::string& path, std::int64_t k) {
  const std::string dir = iteration_dir(path, k);
  if (!is_file(join(dir, kWarehouseModelFile)) || !is_file(join(dir, kWarehouseSolverFile))) {
    std::string kept;
    for (const std::int64_t i : scan_iterations(path).iterations) kept += (kept.empty() ? "" : ", ") + std::to_string(i);
    refuse(path + ": iteration " + std::to_string(k) + " is not in the warehouse (kept: " +
           (kept.empty() ? "none" : kept) + ")");
  }
  return dir;
}

void check_noise_version(const std::string& path, const std::string& what, std::int64_t version) {
  if (version == kNoiseVersion) return;
  refuse(path + ": " + what + " refers to noise version " + std::to_string(version) + " (" +
         noise_version_name(static_cast<int>(version)) + "), this EvoKit rebuilds noise version " +
         std::to_string(kNoiseVersion) + " (" + noise_version_name(kNoiseVersion) +
         "): its keys would give different noise; finish it with the EvoKit that wrote it, or start afresh "
         "from its model with `evokit init-solver`");
}

void check_iteration_matches(const std::string& dir, std::int64_t state_iteration, std::int64_t k) {
  if (state_iteration == k) return;
  refuse(dir + ": solver state is at iteration " + std::to_string(state_iteration) + ", the directory says " +
         std::to_string(k));
}

void check_new_warehouse_path(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec) && (!fs::is_directory(path, ec) || !is_empty_dir(path))) {
    refuse(path + ": already exists and is not an empty directory; refusing to overwrite it");
  }
}

}  // namespace evokit::formats
