#include "evokit/io/solver_state.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

#include "evokit/io/errors.h"
#include "file_util.h"

namespace evokit::io {

std::string encode_floats(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    for (std::size_t k = 0; k < 4; ++k) {
      out[4 * i + k] = static_cast<char>((bits >> (8 * k)) & 0xFFu);
    }
  }
  return out;
}

std::vector<float> decode_floats(const std::string& bytes) {
  if (bytes.size() % 4 != 0) {
    throw std::invalid_argument("float32 data of " + std::to_string(bytes.size()) +
                                " bytes is not a multiple of 4");
  }
  std::vector<float> out(bytes.size() / 4);
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(b[4 * i]) |
                               (static_cast<std::uint32_t>(b[4 * i + 1]) << 8) |
                               (static_cast<std::uint32_t>(b[4 * i + 2]) << 16) |
                               (static_cast<std::uint32_t>(b[4 * i + 3]) << 24);
    std::memcpy(&out[i], &bits, 4);
  }
  return out;
}

proto::SolverState read_solver_state(const std::string& path) {
  std::string bytes, error;
  if (!detail::read_file(path, bytes, error)) {
    throw SolverFileError(path + ": cannot read solver state: " + error);
  }
  proto::SolverState state;
  if (!state.ParseFromString(bytes)) {
    throw SolverFileError(path + ": not a solver state file (the bytes do not parse as "
                                 "evokit.proto.SolverState)");
  }
  if (!state.has_num_params()) {
    throw SolverFileError(path + ": not a solver state file (no num_params)");
  }
  return state;
}

void write_solver_state(const std::string& path, const proto::SolverState& state) {
  std::string bytes;
  if (!state.SerializeToString(&bytes)) {
    throw SolverFileError(path + ": cannot serialize the solver state");
  }
  detail::atomic_write(path, bytes);
}

proto::OptimizerConfig::Type optimizer_type(const Optimizer& optimizer) {
  proto::OptimizerConfig::Type type;
  if (!proto::OptimizerConfig::Type_Parse(optimizer.name(), &type)) {
    throw std::invalid_argument("optimizer " + optimizer.name() +
                                " has no type in evokit.proto.OptimizerConfig.Type");
  }
  return type;
}

proto::SolverState capture_solver_state(Optimizer& optimizer) {
  proto::SolverState state;
  state.set_num_params(static_cast<std::int64_t>(optimizer.num_params()));
  state.set_optimizer(optimizer_type(optimizer));
  state.set_steps(optimizer.steps());
  for (const std::string& name : optimizer.state_names()) {
    proto::NamedVector* v = state.add_vectors();
    v->set_name(name);
    v->set_data(encode_floats(optimizer.state(name)));
  }
  return state;
}

void restore_solver_state(const proto::SolverState& state, Optimizer& optimizer,
                          const std::string& path) {
  const auto n = static_cast<std::int64_t>(optimizer.num_params());
  if (state.num_params() != n) {
    throw SolverFileError(path + ": solver state is for a model with " +
                          std::to_string(state.num_params()) +
                          " parameters, the loaded model has " + std::to_string(n));
  }
  const proto::OptimizerConfig::Type want = optimizer_type(optimizer);
  if (state.optimizer() != want) {
    throw SolverFileError(path + ": solver state is for optimizer " +
                          proto::OptimizerConfig::Type_Name(state.optimizer()) +
                          ", the config asks for " + proto::OptimizerConfig::Type_Name(want));
  }
  if (state.steps() < 0) {
    throw SolverFileError(path + ": solver state has steps " + std::to_string(state.steps()) +
                          ", expected >= 0");
  }
  const std::vector<std::string> names = optimizer.state_names();
  std::map<std::string, std::vector<float>> vectors;
  for (const proto::NamedVector& v : state.vectors()) {
    if (std::find(names.begin(), names.end(), v.name()) == names.end()) {
      std::string expected;
      for (const std::string& name : names) expected += (expected.empty() ? "'" : ", '") + name + "'";
      throw SolverFileError(path + ": state vector '" + v.name() + "' is not a state of optimizer " +
                            optimizer.name() + " (it keeps " +
                            (expected.empty() ? std::string("none") : expected) + ")");
    }
    if (v.data().size() != static_cast<std::size_t>(n) * 4) {
      throw SolverFileError(path + ": state vector '" + v.name() + "' holds " +
                            std::to_string(v.data().size()) + " bytes, expected " +
                            std::to_string(n) + " float32 values (" + std::to_string(n * 4) +
                            " bytes)");
    }
    vectors[v.name()] = decode_floats(v.data());
  }
  for (const std::string& name : names) {
    if (vectors.count(name) == 0) {
      throw SolverFileError(path + ": state vector '" + name + "' of optimizer " +
                            optimizer.name() + " is missing");
    }
  }
  // Everything checked: now change the optimizer.
  for (const auto& [name, values] : vectors) {
    std::vector<float>& target = optimizer.state(name);
    std::copy(values.begin(), values.end(), target.begin());  // same size, no reallocation
  }
  optimizer.set_steps(state.steps());
}

}  // namespace evokit::io
