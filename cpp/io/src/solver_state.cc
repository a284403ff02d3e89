#include "evokit/io/solver_state.h"

#include <cstdint>
#include <optional>
#include <stdexcept>

#include "evokit/io/errors.h"
#include "evokit/io/state_file.h"
#include "file_util.h"

namespace evokit::io {

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

evokit::SolverState state_from_proto(const proto::SolverState& message, const std::string& path) {
  formats::StoredSolverState stored;
  stored.state_version = message.state_version();
  stored.family = message.family();
  stored.steps = message.steps();
  stored.noise_version = message.noise_version();
  stored.has_cma = message.has_cma();
  stored.has_ga = message.has_ga();
  for (const proto::NamedVector& v : message.vectors()) {
    stored.vectors.push_back({v.name(), v.has_type() ? std::optional<int>(v.type()) : std::nullopt, v.data()});
  }
  return detail::core_checked<SolverFileError>([&] { return formats::decode_solver_state(stored, path); });
}

formats::StoredStateHeader state_header(const proto::SolverState& message) {
  formats::StoredStateHeader header;
  header.has_num_params = message.has_num_params();
  header.num_params = message.num_params();
  header.fingerprint_version = message.fingerprint_version();
  header.model_fingerprint = message.model_fingerprint();
  header.params_fingerprint = message.params_fingerprint();
  header.optimizer = proto::OptimizerConfig::Type_Name(message.optimizer());
  return header;
}

void state_to_proto(const evokit::SolverState& state, proto::SolverState* out) {
  const formats::StoredSolverState stored = formats::encode_solver_state(state);
  out->set_state_version(stored.state_version);
  out->set_family(stored.family);
  out->set_steps(stored.steps);
  out->set_noise_version(static_cast<std::int32_t>(stored.noise_version));
  out->clear_vectors();
  for (const formats::StoredVector& v : stored.vectors) {
    proto::NamedVector* n = out->add_vectors();
    n->set_name(v.name);
    n->set_type(static_cast<proto::NamedVector::ElementType>(*v.type));
    n->set_data(v.data);
  }
}

}  // namespace evokit::io
