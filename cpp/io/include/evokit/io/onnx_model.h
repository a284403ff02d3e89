// ONNX policy models for the native forward pass, in the C++ io library.
//
// What a model means (which initializers are parameters, the parameter
// vector's layout, the observation input, recurrent state pairing, the
// refusals, the translation into an evokit::PolicyGraph) is the core's
// (evokit/formats/onnx_model.h), which Python's OnnxPolicy and NativePolicy
// use too: a parameter vector, a noise key and an error mean the same on
// both sides. This class adds what is this runtime's own: reading the file,
// protobuf's parse, libonnx's checker, and writing a model back. The ONNX
// types stay behind this header (only a forward declaration of
// onnx::ModelProto appears here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evokit/formats/onnx_model.h"
#include "evokit/policy_graph.h"

namespace onnx {
class ModelProto;
}

namespace evokit::io {

class OnnxModel {
 public:
  // Reads an .onnx file. Throws ModelError naming the file: missing, a
  // directory, not an ONNX model (corrupt bytes), rejected by the ONNX
  // checker (IR <= 8; newer files are not checked), external data, no float
  // initializer matching param_pattern, not exactly one observation input.
  static OnnxModel load(const std::string& path, const std::string& param_pattern = ".*");
  // The same from serialized bytes; `source` names them in errors.
  static OnnxModel from_bytes(const std::string& bytes, const std::string& param_pattern = ".*",
                              const std::string& source = "<memory>");

  const std::string& source() const noexcept { return layout_.source; }
  const std::string& param_pattern() const noexcept { return layout_.param_pattern; }
  std::size_t num_params() const noexcept { return layout_.parameters.size(); }
  // The parameters' initializer names, shapes and offsets into the vector.
  const std::vector<std::string>& param_names() const noexcept { return layout_.param_names; }
  const std::vector<std::vector<std::size_t>>& param_shapes() const noexcept {
    return layout_.param_shapes;
  }
  const std::vector<std::size_t>& param_offsets() const noexcept { return layout_.param_offsets; }
  // The model's own parameter values, flat.
  const std::vector<float>& parameters() const noexcept { return layout_.parameters; }
  // Everything the core read of the model.
  const formats::OnnxLayout& layout() const noexcept { return layout_; }

  // The observation input (the first graph input that is not an
  // initializer) and the first graph output.
  const std::string& input_name() const noexcept { return layout_.input.name; }
  const std::string& output_name() const noexcept { return layout_.output_name; }
  // Recurrent state: the graph inputs after the observation, each paired
  // with the output holding its next value by the core's rule: by name
  // (h0 -> hn, x_in -> x_out), else by declared shape; empty for a
  // feed-forward policy. Loading refuses, naming it, an input that pairs
  // with no output or with several by shape.
  const std::vector<std::string>& state_names() const noexcept { return layout_.state_names; }
  const std::vector<std::string>& state_output_names() const noexcept {
    return layout_.state_output_names;
  }
  bool recurrent() const noexcept { return !layout_.state_names.empty(); }
  std::int64_t ir_version() const noexcept { return layout_.ir_version; }
  // The default-domain opset (0 if the model imports none).
  std::int64_t opset() const noexcept { return layout_.opset; }

  // The forward pass: the ops of PolicyGraph::supported_ops() with INT,
  // FLOAT, INTS, STRING and STRINGS attributes (Softmax's axis defaulting to
  // 1 before opset 13), and Constant nodes holding a FLOAT tensor (`value`),
  // `value_float` or `value_floats`, or an integer or BOOL tensor,
  // `value_int` or `value_ints` (shapes, axes, indices; integer and BOOL
  // initializers likewise); the state inputs and outputs, if any. Throws
  // ModelError naming the file and the node for another op or constant, an
  // initializer of another type as an input, a shape it cannot run, or a
  // first output that does not start with the batch dimension. (load()
  // already refused a model exported in training mode: a Dropout node with
  // training_mode a constant true and ratio > 0.)
  PolicyGraph graph() const;

  // The original model with the parameter initializers set to `params`
  // (stored as raw little-endian data), serialized.
  std::string serialize(const std::vector<float>& params) const;
  // serialize() written to `path` atomically (temporary file in the same
  // directory, fsync, rename; parent directories are created). Throws
  // std::invalid_argument for a wrong params size, ModelError if `path` is
  // a directory, std::system_error if the file cannot be written.
  void save(const std::string& path, const std::vector<float>& params) const;

  // The serialized model it was parsed from (for load(), the file's bytes).
  const std::string& bytes() const noexcept { return *bytes_; }

  // The parsed model, for callers that include the ONNX headers themselves.
  const onnx::ModelProto& proto() const noexcept { return *model_; }

 private:
  OnnxModel() = default;

  std::shared_ptr<const onnx::ModelProto> model_;  // immutable once loaded
  std::shared_ptr<const std::string> bytes_;       // the bytes it was read from
  formats::OnnxLayout layout_;
};

}  // namespace evokit::io
