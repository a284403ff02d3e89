// The model fingerprint, version 2 (proto/evokit.proto,
// SolverState.model_fingerprint): the sha256 of a canonical encoding of what
// an ONNX policy computes, read from the serialized ModelProto's wire format
// here, once, for Python's OnnxPolicy and the C++ io library alike (neither
// protobuf runtime's serialization is hashed, so runtimes and ONNX schema
// versions agree).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace evokit::formats {

inline constexpr int kFingerprintVersion = 2;

// sha256 (hex) of the encoding of the ONNX model `model_bytes` with the
// initializers `param_names` (in graph order) as parameters. Throws
// std::invalid_argument starting with `source` for bytes that are not a
// protobuf message, a parameter that is not an initializer, or what the
// encoding does not cover (a sparse initializer, a non-tensor value type,
// external data, an attribute of type SPARSE_TENSOR or TYPE_PROTO, typed data
// of an unknown data type), naming the node.
std::string model_fingerprint(std::string_view model_bytes, const std::vector<std::string>& param_names,
                              const std::string& source);

// sha256 (hex) of the 64 hex characters of `model_fingerprint` followed by
// `params` as little-endian float32: one exact model
// (SolverState.params_fingerprint, SampleRecord.model_fingerprint).
std::string params_fingerprint(const std::string& model_fingerprint, const float* params, std::size_t n);

}  // namespace evokit::formats
