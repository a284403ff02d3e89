#include "evokit/io/fingerprint.h"

#include <onnx/onnx_pb.h>

#include <stdexcept>

#include "evokit/formats/fingerprint.h"
#include "evokit/io/errors.h"

namespace evokit::io {

std::string model_fingerprint(const OnnxModel& model) {
  try {
    return formats::model_fingerprint(model.proto().SerializeAsString(), model.param_names(), model.source());
  } catch (const std::invalid_argument& e) {
    throw ModelError(e.what());
  }
}

std::string params_fingerprint(const std::string& model_fingerprint, const std::vector<float>& params) {
  return formats::params_fingerprint(model_fingerprint, params.data(), params.size());
}

}  // namespace evokit::io
