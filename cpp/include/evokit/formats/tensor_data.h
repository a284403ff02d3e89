// The values of an ONNX float or integer tensor (a serialized TensorProto),
// read only after the shape it declares is checked against the data it
// holds: a model of a few hundred bytes can declare dims = [2**40], and
// nothing is allocated from them before they agree with the bytes present.
// Written once for Python's OnnxPolicy / NativePolicy and the C++ io
// library's OnnxModel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace evokit::formats {

// A tensor's dims, refusing a negative one. `what` names the tensor in
// errors ("initializer 'W'"), after `source`.
std::vector<std::size_t> tensor_dims(const std::vector<std::int64_t>& dims, const std::string& source,
                                     const std::string& what);

// The float32 values of a FLOAT tensor, flat, from raw_data (little-endian)
// or float_data. Throws std::invalid_argument for a negative dimension or a
// shape that does not match the data held, naming the tensor, the data it
// holds and what its shape needs.
std::vector<float> float_tensor_values(std::string_view tensor, const std::string& source, const std::string& what);

// The data types whose tensors int_tensor_values reads (shapes, axes,
// indices): INT64, INT32, INT16, INT8, UINT8, UINT16, UINT32, BOOL.
bool is_int_tensor_type(std::int64_t data_type);

// The values of an integer or BOOL tensor as int64, flat, from raw_data or
// its typed field (int64_data, int32_data, uint64_data), each narrowed to the
// element type, checked as float_tensor_values checks.
std::vector<std::int64_t> int_tensor_values(std::string_view tensor, const std::string& source,
                                            const std::string& what);

}  // namespace evokit::formats
