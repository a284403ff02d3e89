// ONNX policy models for the native forward pass.
//
// The float32 initializers of the graph are the parameters: all of them, or
// those whose whole names match `param_pattern` (formats::ParamPattern, the
// dialect Python's OnnxPolicy uses too).
// The parameter vector holds them flattened in C order and concatenated in
// graph.initializer order: the same layout as Python's OnnxPolicy, so a
// parameter vector (and a noise key) means the same on both sides.
//
// graph() translates the ONNX nodes into an evokit::PolicyGraph whose
// parameters are (offset, shape) windows of that vector; the other float
// initializers and float Constant nodes become constants. It accepts and
// refuses exactly what Python's native backend (evokit/native.py) does, so a
// policy trained with observation normalisation (Constant nodes
// obs_norm/mean, ... in front of it) is served too. The ONNX types stay
// behind this header (only a forward declaration of onnx::ModelProto
// appears here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evokit/policy_graph.h"

namespace onnx {
class ModelProto;
class ValueInfoProto;
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

  const std::string& source() const noexcept { return source_; }
  const std::string& param_pattern() const noexcept { return param_pattern_; }
  std::size_t num_params() const noexcept { return parameters_.size(); }
  // The parameters' initializer names, shapes and offsets into the vector.
  const std::vector<std::string>& param_names() const noexcept { return param_names_; }
  const std::vector<std::vector<std::size_t>>& param_shapes() const noexcept {
    return param_shapes_;
  }
  const std::vector<std::size_t>& param_offsets() const noexcept { return param_offsets_; }
  // The model's own parameter values, flat.
  const std::vector<float>& parameters() const noexcept { return parameters_; }

  // The observation input (the first graph input that is not an
  // initializer) and the first graph output.
  const std::string& input_name() const noexcept { return input_name_; }
  const std::string& output_name() const noexcept { return output_name_; }
  // Recurrent state: the graph inputs after the observation, each paired
  // with the output holding its next value by Python's rule
  // (evokit/policy/onnx_policy.py): by name (h0 -> hn, x_in -> x_out), else
  // by declared shape; empty for a feed-forward policy. setup refuses, naming
  // it, an input that pairs with no output or with several by shape.
  const std::vector<std::string>& state_names() const noexcept { return state_names_; }
  const std::vector<std::string>& state_output_names() const noexcept {
    return state_output_names_;
  }
  bool recurrent() const noexcept { return !state_names_.empty(); }
  std::int64_t ir_version() const noexcept { return ir_version_; }
  // The default-domain opset (0 if the model imports none).
  std::int64_t opset() const noexcept { return opset_; }

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

  // The parsed model, for callers that include the ONNX headers themselves.
  const onnx::ModelProto& proto() const noexcept { return *model_; }

 private:
  OnnxModel() = default;
  void setup();
  void pair_state(const std::vector<const onnx::ValueInfoProto*>& inputs);

  std::shared_ptr<const onnx::ModelProto> model_;  // immutable once loaded
  std::string source_;
  std::string param_pattern_;
  std::vector<std::string> param_names_;
  std::vector<std::vector<std::size_t>> param_shapes_;
  std::vector<std::size_t> param_offsets_;
  std::vector<float> parameters_;
  std::string input_name_;
  std::string output_name_;
  std::vector<std::string> state_names_, state_output_names_;
  std::vector<std::vector<std::size_t>> state_shapes_;  // the batch dim as 1
  std::vector<std::size_t> state_axes_;                 // the batch axis of each
  std::int64_t ir_version_ = 0;
  std::int64_t opset_ = 0;
};

}  // namespace evokit::io
