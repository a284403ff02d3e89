// ONNX policy models: what a model file means to EvoKit, read from the
// model's serialized bytes (ONNX's wire format) without a protobuf runtime.
// Written once for Python's OnnxPolicy / NativePolicy and the C++ io
// library's OnnxModel; each runtime only reads the file, runs its own ONNX
// checker and writes models back.
//
// The layout (read_onnx_layout). The float32 initializers whose whole names
// match `param_pattern` (formats/param_pattern.h) are the parameters, in
// graph.initializer order, each flattened in C order into one flat vector.
// The observation input is the first graph input that is not an
// initializer; the first graph output is the policy's output. Graph inputs
// after the observation are recurrent state, each paired with the graph
// output holding its next value:
//   1. by name: the same stem once one suffix is removed, "_in", ".in",
//      "in", "_0", "0" from the input and "_out", ".out", "out", "_n", "n"
//      from the output (h0 -> hn, state_in -> state_out); the two must
//      declare the same shape and type;
//   2. else by shape: the one output after the first whose declared shape
//      and type equal the input's.
// A state is FLOAT with a declared shape; its batch axis is its one
// symbolic dimension, or with fixed shapes the last size-1 dimension before
// the final one. A Dropout node with training_mode a constant true and a
// ratio above 0 (a model exported in training mode) is refused.
//
// The native graph (onnx_policy_graph): the nodes translated into the
// core's PolicyGraph, parameters as windows of the flat vector, the other
// float initializers and Constant nodes as constants, integer and BOOL
// ones for shapes, axes and indices.
//
// Errors name the model (`source`) first. std::invalid_argument: the model
// is broken or cannot be a policy (no graph nodes, duplicate initializer,
// a tensor whose shape disagrees with its data, no parameter matching,
// unpaired state, active dropout, ...). UnsupportedModel (an
// invalid_argument too): the model may be sound, but the native forward
// pass cannot run it (an op, attribute, constant or shape it does not
// know); the message starts "<source>: native backend: " and names the
// node and op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "evokit/policy_graph.h"

namespace evokit::formats {

class UnsupportedModel : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A graph input's declared type: its element type (ONNX TensorProto data
// type, 0 if not a tensor) and its shape, -1 for a symbolic or unknown
// dimension (`dim_params` holds the symbol, "" where none).
struct DeclaredValue {
  std::string name;
  std::int64_t elem_type = 0;
  bool has_shape = false;
  std::vector<std::int64_t> dims;
  std::vector<std::string> dim_params;
};

struct OnnxLayout {
  std::string source;
  std::string param_pattern;
  std::int64_t ir_version = 0;
  std::int64_t opset = 0;  // the default domain's (0 if the model imports none)
  std::vector<std::string> param_names;
  std::vector<std::vector<std::size_t>> param_shapes;
  std::vector<std::size_t> param_offsets;
  std::vector<float> parameters;  // the model's own values, flat
  DeclaredValue input;            // the observation
  std::string output_name;
  std::vector<std::string> state_names, state_output_names;
  std::vector<std::vector<std::size_t>> state_shapes;  // each with the batch dimension as 1
  std::vector<std::size_t> state_axes;                 // the batch axis of each
};

// The layout of the serialized ModelProto `model`. `check`, when set, is
// called with the model's IR version once the model is known to have graph
// nodes and outputs and before anything else is read: each runtime runs its
// own ONNX checker there (what it throws propagates).
OnnxLayout read_onnx_layout(std::string_view model, const std::string& param_pattern, const std::string& source,
                            const std::function<void(std::int64_t ir_version)>& check = {});

// The native forward pass of `model`, whose layout is `layout`.
PolicyGraph onnx_policy_graph(std::string_view model, const OnnxLayout& layout);

// An ONNX TensorProto data type's name ("FLOAT", "DOUBLE", ...; "UNKNOWN(n)").
std::string onnx_data_type_name(std::int64_t type);

}  // namespace evokit::formats
