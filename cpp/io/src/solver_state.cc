#include "evokit/io/solver_state.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "evokit/io/errors.h"
#include "evokit/io/state_file.h"
#include "file_util.h"

namespace evokit::io {

namespace {

// The unsigned integer of T's width: T's bits, shifted out byte by byte.
template <class T>
using BitsOf = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

}  // namespace

template <class T>
std::string encode_le(const std::vector<T>& values) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "4- or 8-byte elements only");
  constexpr std::size_t width = sizeof(T);
  std::string out(values.size() * width, '\0');
  for (std::size_t i = 0; i < values.size(); ++i) {
    BitsOf<T> bits;
    std::memcpy(&bits, &values[i], width);
    for (std::size_t k = 0; k < width; ++k) {
      out[width * i + k] = static_cast<char>((bits >> (8 * k)) & 0xFFu);
    }
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
    for (std::size_t k = 0; k < width; ++k) {
      bits |= static_cast<BitsOf<T>>(b[width * i + k]) << (8 * k);
    }
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

proto::SolverState read_solver_state(const std::string& path) {
  proto::SolverState state;
  read_state_file<SolverFileError>(path, state, "solver state file");
  if (!state.has_num_params()) {
    throw SolverFileError(path + ": not a solver state file (no num_params)");
  }
  return state;
}

void write_solver_state(const std::string& path, const proto::SolverState& state) {
  write_state_file(path, state);
}

namespace {

// The entry `v` decoded as T into out[key] (errors name the entry as the
// file does); with `unique`, a key already there is an error.
template <class T>
void read_entry(const proto::NamedVector& v, const std::string& key, const std::string& path,
                std::map<std::string, std::vector<T>>& out, bool unique) {
  if (unique && out.count(key) != 0) {
    throw SolverFileError(path + ": state vector '" + v.name() + "' appears twice");
  }
  constexpr std::size_t width = sizeof(T);
  if (v.data().size() % width != 0) {
    throw SolverFileError(path + ": state vector '" + v.name() + "' holds " +
                          std::to_string(v.data().size()) + " bytes, not a multiple of " +
                          std::to_string(width));
  }
  out[key] = decode_le<T>(v.data());
}

template <class T>
void write_entries(const std::map<std::string, std::vector<T>>& entries,
                   proto::NamedVector::ElementType type, proto::SolverState* out) {
  for (const auto& [name, values] : entries) {  // std::map: name order
    proto::NamedVector* v = out->add_vectors();
    v->set_name(name);
    v->set_type(type);
    v->set_data(encode_le(values));
  }
}

// The family of a version 1 state: GAUSSIAN_SAMPLING, or a refusal naming
// the CMA / GA layout the file holds.
std::string version1_family(const proto::SolverState& message, const std::string& path) {
  const std::pair<bool, const char*> strategies[] = {{message.has_cma(), "CMA_SAMPLING"},
                                                     {message.has_ga(), "GA_SAMPLING"}};
  for (const auto& [present, family] : strategies) {
    if (present) {
      throw SolverFileError(path + ": a " + family +
                            " solver state of state version 1 (an EvoKit before the one Solver "
                            "interface): its layout is not read; finish it with the EvoKit that "
                            "wrote it, or start afresh from its model with `evokit init-solver`");
    }
  }
  return "GAUSSIAN_SAMPLING";
}

}  // namespace

evokit::SolverState state_from_proto(const proto::SolverState& message, const std::string& path) {
  evokit::SolverState state;
  const int version = message.state_version();
  if (version == 1) {
    state.family = version1_family(message, path);
    for (const proto::NamedVector& v : message.vectors()) {
      // Gaussian optimizer vectors, float32 whatever their type, bare names.
      read_entry(v, "optimizer." + v.name(), path, state.floats, /*unique=*/false);
    }
    // Version 1 kept no draw counters: the clones count from 0 again.
    state.ints["draws.counters"] = {};
  } else if (version == kStateVersion) {
    state.family = message.family();
    for (const proto::NamedVector& v : message.vectors()) {
      // proto2 enums are closed: an element type this schema does not know
      // (a newer EvoKit's) parses into the unknown fields, leaving the type
      // absent; both writers always write it.
      if (!v.has_type()) {
        throw SolverFileError(path + ": state vector '" + v.name() +
                              "' has no element type this EvoKit knows (FLOAT32, FLOAT64, "
                              "INT64): a newer EvoKit wrote it?");
      }
      switch (v.type()) {
        case proto::NamedVector::FLOAT32:
          read_entry(v, v.name(), path, state.floats, /*unique=*/true);
          break;
        case proto::NamedVector::FLOAT64:
          read_entry(v, v.name(), path, state.doubles, /*unique=*/true);
          break;
        case proto::NamedVector::INT64:
          read_entry(v, v.name(), path, state.ints, /*unique=*/true);
          break;
      }
    }
  } else {
    throw SolverFileError(path + ": solver state version " + std::to_string(version) +
                          ", this EvoKit reads versions 1 and " + std::to_string(kStateVersion) +
                          " (a newer EvoKit wrote it)");
  }
  state.model_iter_id = message.steps();
  state.noise_version = message.noise_version();
  return state;
}

void state_to_proto(const evokit::SolverState& state, proto::SolverState* out) {
  out->set_state_version(kStateVersion);
  out->set_family(state.family);
  out->set_steps(state.model_iter_id);
  out->set_noise_version(state.noise_version);
  out->clear_vectors();
  write_entries(state.floats, proto::NamedVector::FLOAT32, out);
  write_entries(state.doubles, proto::NamedVector::FLOAT64, out);
  write_entries(state.ints, proto::NamedVector::INT64, out);
}

}  // namespace evokit::io
