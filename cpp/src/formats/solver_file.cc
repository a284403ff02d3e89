#include "evokit/formats/solver_file.h"

#include <algorithm>

#include <cstring>
#include <map>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "evokit/formats/fingerprint.h"

namespace evokit::formats {

namespace {

// The unsigned integer of T's width: T's bits, shifted out byte by byte.
template <class T>
using BitsOf = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

// The entry `v` decoded as T into out[key] (errors name the entry as the
// file does); with `unique`, a key already there is an error.
template <class T>
void read_entry(const StoredVector& v, const std::string& key, const std::string& path,
                std::map<std::string, std::vector<T>>& out, bool unique) {
  if (unique && out.count(key) != 0) {
    throw std::invalid_argument(path + ": state vector '" + v.name + "' appears twice");
  }
  constexpr std::size_t width = sizeof(T);
  if (v.data.size() % width != 0) {
    throw std::invalid_argument(path + ": state vector '" + v.name + "' holds " + std::to_string(v.data.size()) +
                                " bytes, not a multiple of " + std::to_string(width));
  }
  out[key] = decode_le<T>(v.data);
}

template <class T>
void write_entries(const std::map<std::string, std::vector<T>>& entries, ElementType type,
                   std::vector<StoredVector>& out) {
  for (const auto& [name, values] : entries) out.push_back({name, static_cast<int>(type), encode_le(values)});
}

// The family of a version 1 state: GAUSSIAN_SAMPLING, or a refusal naming
// the CMA / GA layout the file holds.
std::string version1_family(const StoredSolverState& stored, const std::string& path) {
  const std::pair<bool, const char*> strategies[] = {{stored.has_cma, "CMA_SAMPLING"}, {stored.has_ga, "GA_SAMPLING"}};
  for (const auto& [present, family] : strategies) {
    if (present) {
      throw std::invalid_argument(path + ": a " + family +
                                  " solver state of state version 1 (an EvoKit before the one Solver "
                                  "interface): its layout is not read; finish it with the EvoKit that "
                                  "wrote it, or start afresh from its model with `evokit init-solver`");
    }
  }
  return "GAUSSIAN_SAMPLING";
}

}  // namespace

template <class T>
std::string encode_le(const std::vector<T>& values) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "4- or 8-byte elements only");
  constexpr std::size_t width = sizeof(T);
  std::string out(values.size() * width, '\0');
  for (std::size_t i = 0; i < values.size(); ++i) {
    BitsOf<T> bits;
    std::memcpy(&bits, &values[i], width);
    for (std::size_t k = 0; k < width; ++k) out[width * i + k] = static_cast<char>((bits >> (8 * k)) & 0xFFu);
  }
  return out;
}

template <class T>
std::vector<T> decode_le(const std::string& bytes) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "4- or 8-byte elements only");
  constexpr std::size_t width = sizeof(T);
  if (bytes.size() % width != 0) {
    throw std::invalid_argument(std::to_string(bytes.size()) + " bytes are not a multiple of " +
                                std::to_string(width));
  }
  std::vector<T> out(bytes.size() / width);
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = 0; i < out.size(); ++i) {
    BitsOf<T> bits = 0;
    for (std::size_t k = 0; k < width; ++k) bits |= static_cast<BitsOf<T>>(b[width * i + k]) << (8 * k);
    std::memcpy(&out[i], &bits, width);
  }
  return out;
}

template std::string encode_le<float>(const std::vector<float>&);
template std::string encode_le<double>(const std::vector<double>&);
template std::string encode_le<std::int64_t>(const std::vector<std::int64_t>&);
template std::vector<float> decode_le<float>(const std::string&);
template std::vector<double> decode_le<double>(const std::string&);
template std::vector<std::int64_t> decode_le<std::int64_t>(const std::string&);

SolverState decode_solver_state(const StoredSolverState& stored, const std::string& path) {
  SolverState state;
  if (stored.state_version == 1) {
    state.family = version1_family(stored, path);
    for (const StoredVector& v : stored.vectors) {
      // Gaussian optimizer vectors, float32 whatever their type, bare names.
      read_entry(v, "optimizer." + v.name, path, state.floats, /*unique=*/false);
    }
    // Version 1 kept no draw counters: the clones count from 0 again.
    state.ints["draws.counters"] = {};
  } else if (stored.state_version == kSolverStateVersion) {
    state.family = stored.family;
    for (const StoredVector& v : stored.vectors) {
      // proto2 enums are closed: an element type the reader's schema does
      // not know (a newer EvoKit's) parses as absent; EvoKit always writes it.
      if (!v.type || *v.type < kFloat32 || *v.type > kInt64) {
        throw std::invalid_argument(path + ": state vector '" + v.name +
                                    "' has no element type this EvoKit knows (FLOAT32, FLOAT64, INT64): a "
                                    "newer EvoKit wrote it?");
      }
      switch (*v.type) {
        case kFloat32:
          read_entry(v, v.name, path, state.floats, /*unique=*/true);
          break;
        case kFloat64:
          read_entry(v, v.name, path, state.doubles, /*unique=*/true);
          break;
        default:
          read_entry(v, v.name, path, state.ints, /*unique=*/true);
          break;
      }
    }
  } else {
    throw std::invalid_argument(path + ": solver state version " + std::to_string(stored.state_version) +
                                ", this EvoKit reads versions 1 and " + std::to_string(kSolverStateVersion) +
                                " (a newer EvoKit wrote it)");
  }
  state.model_iter_id = stored.steps;
  state.noise_version = static_cast<decltype(state.noise_version)>(stored.noise_version);
  return state;
}

StoredSolverState encode_solver_state(const SolverState& state) {
  StoredSolverState out;
  out.state_version = kSolverStateVersion;
  out.family = state.family;
  out.steps = state.model_iter_id;
  out.noise_version = state.noise_version;
  write_entries(state.floats, kFloat32, out.vectors);
  write_entries(state.doubles, kFloat64, out.vectors);
  write_entries(state.ints, kInt64, out.vectors);
  return out;
}

void check_params_fingerprint(const std::string& recorded, const std::string& model_fingerprint,
                              const float* params, std::size_t size, const std::string& source,
                              const std::string& path) {
  if (recorded.empty()) return;
  const std::string actual = params_fingerprint(model_fingerprint, params, size);
  if (actual == recorded) return;
  const std::string name = path.substr(path.find_last_of('/') + 1);
  throw std::invalid_argument(source + ": its parameters are not those of the model " + path +
                              " was saved with (params fingerprint " + actual.substr(0, 16) + ", " + name +
                              " records " + recorded.substr(0, 16) + ")");
}

void check_state_matches(const StoredStateHeader& state, const ModelForState& model, const std::string& optimizer,
                         bool exact_model, const std::string& path) {
  const auto refuse = [](const std::string& message) { throw std::invalid_argument(message); };
  if (!state.has_num_params) refuse(path + ": not a solver state file (no num_params)");
  if (state.num_params != model.num_params) {
    refuse(path + ": solver state is for a model with " + std::to_string(state.num_params) +
           " parameters, the loaded model has " + std::to_string(model.num_params));
  }
  const std::int64_t version = state.fingerprint_version;
  if (std::find(model.versions.begin(), model.versions.end(), version) == model.versions.end()) {
    const bool reads_v1 = std::find(model.versions.begin(), model.versions.end(), 1) != model.versions.end();
    std::string message = path + ": solver state has fingerprint version " + std::to_string(version) + ", this ";
    if (reads_v1) {
      message += "EvoKit reads versions 1 and " + std::to_string(kFingerprintVersion) + " (a newer EvoKit wrote it)";
    } else {
      message += "library verifies only version " + std::to_string(kFingerprintVersion) +
                 (version < kFingerprintVersion
                      ? " (version 1 files come from an older EvoKit: load and save them once with the Python "
                        "package, which still verifies version 1)"
                      : " (a newer EvoKit wrote it)");
    }
    refuse(message);
  }
  const std::string expect = model.fingerprint(static_cast<int>(version));
  if (state.model_fingerprint != expect) {
    refuse(path + ": solver state belongs to another model than " + model.source + " (graph fingerprint " +
           state.model_fingerprint.substr(0, 12) + ", loaded model " + expect.substr(0, 12) +
           ", fingerprint version " + std::to_string(version) + ")");
  }
  if (exact_model) {
    check_params_fingerprint(state.params_fingerprint, expect, model.params, model.size, model.source, path);
  }
  if (state.optimizer != optimizer) {
    refuse(path + ": solver state is for optimizer " + state.optimizer + ", the config asks for " + optimizer);
  }
}

}  // namespace evokit::formats
