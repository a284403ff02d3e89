// PolicyGraph: a native forward pass for small policy networks (STL only).
//
// A graph is a DAG of float tensor ops over named values, built node by node
// in topological order (as ONNX lists them):
//
//   - one input, shape [batch, *feature_shape];
//   - parameters: (offset, shape) windows into a flat parameter vector that is
//     supplied at run time, so an agent and all its clones (each with its own
//     perturbed vector) run the same graph without copying weights;
//   - constants: tensors the graph holds;
//   - nodes: Gemm, MatMul, Add, Relu, Tanh, Sigmoid, Softmax, Identity,
//     Flatten, with ONNX semantics (numpy broadcasting for Add, MatMul with a
//     2-D right operand);
//   - outputs: run() returns the first.
//
// Shapes are checked when a node is added, with the batch size kept symbolic
// ("batch", "4*batch"), so a malformed graph fails at build time with the node,
// the expected and the actual shape. run() is const and allocates its
// intermediates per call: any number of threads may run one graph at once.
// Accumulation is in float, in a fixed order: results are deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace evokit {

// One dimension of a value's shape: factor, times the batch size if `batch`.
struct Dim {
  std::size_t factor = 1;
  bool batch = false;

  std::size_t resolve(std::size_t batch_size) const noexcept {
    return batch ? factor * batch_size : factor;
  }
  bool operator==(const Dim& other) const noexcept {
    return factor == other.factor && batch == other.batch;
  }
  bool operator!=(const Dim& other) const noexcept { return !(*this == other); }
};

using SymbolicShape = std::vector<Dim>;

// "(batch, 4)", "(2*batch,)", "()".
std::string format_shape(const SymbolicShape& shape);
std::string format_shape(const std::vector<std::size_t>& shape);

// Node attributes by name: integers (transA, axis, ...) and floats (alpha, ...).
// Attributes an op does not know are refused, never ignored.
struct NodeAttributes {
  std::map<std::string, std::int64_t> ints;
  std::map<std::string, float> floats;
};

class PolicyGraph {
 public:
  // The ops add_node() accepts (ONNX op_type names).
  static const std::vector<std::string>& supported_ops();

  // The observation input, shape [batch, *feature_shape] (every feature dim
  // >= 1). Exactly one input per graph.
  void add_input(const std::string& name, const std::vector<std::size_t>& feature_shape);

  // A window of the run-time parameter vector: params[offset, offset + size)
  // with size = prod(shape), read in C order.
  void add_param(const std::string& name, std::size_t offset,
                 const std::vector<std::size_t>& shape);

  // A fixed tensor; data.size() must equal prod(shape).
  void add_constant(const std::string& name, const std::vector<std::size_t>& shape,
                    std::vector<float> data);

  // A node computing `outputs` from `inputs` (names of values defined
  // before; "" for an omitted optional input, e.g. Gemm's C). Throws
  // std::invalid_argument naming the node for an unsupported op, a wrong
  // number of inputs or outputs, an unknown or bad attribute, an undefined
  // input, a name defined twice, or a shape mismatch (expected vs actual).
  void add_node(const std::string& op_type, const std::vector<std::string>& inputs,
                const std::vector<std::string>& outputs, const NodeAttributes& attributes = {},
                const std::string& name = "");

  // Declares a graph output (a value defined before). run() returns the first.
  void add_output(const std::string& name);

  // Values needed from the parameter vector: the largest offset + size of
  // any parameter (0 without parameters).
  std::size_t num_params() const noexcept { return num_params_; }
  const std::string& input_name() const noexcept { return input_name_; }
  // prod(feature_shape): the floats per observation.
  std::size_t obs_size() const noexcept { return obs_size_; }
  const std::vector<std::size_t>& feature_shape() const noexcept { return feature_shape_; }
  const std::vector<std::string>& output_names() const noexcept { return outputs_; }
  std::size_t num_nodes() const noexcept { return nodes_.size(); }

  // Shape of the first output for `batch` observations.
  std::vector<std::size_t> output_shape(std::size_t batch) const;
  // Its symbolic shape, e.g. (batch, 2).
  SymbolicShape symbolic_output_shape() const;

  // The first output (C order) for `batch` observations obs[batch *
  // obs_size()] and the parameter vector params[num_params]. Throws
  // std::invalid_argument if the graph has no input or output, batch == 0,
  // a pointer is null, or num_params != this->num_params().
  std::vector<float> run(const float* obs, std::size_t batch, const float* params,
                         std::size_t num_params) const;

 private:
  enum class Kind { kInput, kParam, kConstant, kNode };
  enum class Op { kGemm, kMatMul, kAdd, kRelu, kTanh, kSigmoid, kSoftmax, kIdentity, kFlatten };

  struct Value {
    std::string name;
    Kind kind;
    SymbolicShape shape;
    std::size_t offset = 0;    // kParam
    std::size_t constant = 0;  // kConstant: index into constants_
    std::size_t node = 0;      // kNode: producing node
  };
  struct Node {
    std::string label;  // for errors: "node 'fc1' (Gemm)"
    Op op;
    std::vector<int> inputs;  // value ids, -1 for an omitted optional input
    int output = 0;           // value id
    // Gemm
    float alpha = 1.0f, beta = 1.0f;
    bool trans_a = false, trans_b = false;
    // Softmax / Flatten
    std::int64_t axis = 0;
  };

  int find_value(const std::string& name) const;  // -1 if unknown
  int define(Value value, const std::string& label);
  SymbolicShape infer_shape(Node& node, const NodeAttributes& attributes) const;

  std::vector<Value> values_;
  std::map<std::string, int> value_ids_;
  std::vector<std::vector<float>> constants_;
  std::vector<Node> nodes_;
  std::vector<std::string> outputs_;
  std::string input_name_;
  std::vector<std::size_t> feature_shape_;
  std::size_t obs_size_ = 0;
  std::size_t num_params_ = 0;
};

}  // namespace evokit
