// The model fingerprints, version 2: the core's (evokit/formats/fingerprint.h),
// which the Python package computes too. The encoding that is hashed is specified in
// proto/evokit.proto (SolverState.model_fingerprint): a canonical encoding of
// the opset imports, the nodes with their attributes, the graph inputs and
// outputs, the parameters (names, dims) and the fixed initializers, not a
// protobuf serialization, so ONNX 1.12 here and the onnx release of the
// Python package agree.
#pragma once

#include <string>
#include <vector>

#include "evokit/formats/fingerprint.h"
#include "evokit/io/onnx_model.h"

namespace evokit::io {

// The version this library writes (SolverState.fingerprint_version) and the
// only one it can verify.
inline constexpr int kFingerprintVersion = formats::kFingerprintVersion;

// sha256 (hex) of the graph of `model` with its parameters (param_names(),
// in graph order) but not their values. Throws ModelError naming the model
// and the node for what the encoding does not cover (a sparse initializer, a
// non-tensor value type, external data, an attribute of type SPARSE_TENSOR or
// TYPE_PROTO).
std::string model_fingerprint(const OnnxModel& model);

// sha256 (hex) of the 64 hex characters of `model_fingerprint` followed by
// `params` as little-endian float32: one exact model
// (SolverState.params_fingerprint, SampleRecord.model_fingerprint).
std::string params_fingerprint(const std::string& model_fingerprint,
                               const std::vector<float>& params);

}  // namespace evokit::io
