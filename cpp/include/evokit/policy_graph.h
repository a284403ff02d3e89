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
//   - integer constants (INT64 / INT32 / BOOL tensors, add_int_constant):
//     shapes, axes and indices, known when the graph is built;
//   - nodes: Gemm, MatMul, Add, Sub, Mul, Div, Relu, Tanh, Sigmoid, Softmax,
//     Identity, Flatten, Clip, with ONNX semantics (numpy broadcasting for
//     Add, Sub, Mul, Div, MatMul with a 2-D right operand, Clip's min and max
//     given as one-element constants); the ops PyTorch exports of common
//     policies produce: LayerNormalization, Gelu, Erf,
//     LeakyRelu, Elu, Selu, Softplus, Mish, Sqrt, Pow, ReduceMean, ReduceSum,
//     Greater, Less, Where, Concat, Gather and Slice (constant indices),
//     Reshape, Squeeze, Unsqueeze, Dropout (inference only), Cast, Shape; and
//     the recurrent ops LSTM and GRU with Transpose (the op table,
//     policy_op_table.cc, lists them all). Nodes whose inputs are all integer
//     constants or shapes (Shape -> Gather -> Concat -> Reshape) are
//     evaluated when the graph is built, the batch size kept symbolic;
//   - outputs: run() returns the first.
//   - recurrent state (optional): further inputs, each paired with an output
//     that holds its next value (an LSTM's h0 -> hn). execute() reads the
//     state from a caller's buffer and writes the next one back in place,
//     so a caller carries it from step to step and zeroes it to start an
//     episode.
//
// Shapes are checked when a node is added, with the batch size kept symbolic
// ("batch", "4*batch"), so a malformed graph fails at build time with the node,
// the expected and the actual shape. run() is const and allocates its
// intermediates per call: any number of threads may run one graph at once.
// For repeated calls, compile() a Plan once and execute() it into a caller's
// workspace: nothing is allocated per call (population.h runs a whole
// population this way).
//
// Parameters are read through a ParamView: a parameter vector, optionally seen
// through a perturbation base + scale * noise that is computed on the fly
// inside the kernels, so a perturbed member needs no copy of its parameters.
//
// Accumulation is in float, in a fixed order per output element, with no
// floating-point contraction: results are deterministic, and the same for a
// ParamView (base, noise, scale) as for the materialised vector
// base + scale * noise. Tanh is the rational approximation onnxruntime (MLAS)
// and Eigen use (error < 1e-6), in plain float arithmetic, so it gives the same
// bits on every machine, unlike a libm call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
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

// A parameter vector as the graph reads it, never copied: value j is
//   base[j] + scale * noise[j]   when noise is set (rounded exactly as
//                                GaussianSampler::perturb computes it), else
//   base[j].
struct ParamView {
  const float* base = nullptr;
  const float* noise = nullptr;
  float scale = 0.0f;
};

// "(batch, 4)", "(2*batch,)", "()".
std::string format_shape(const SymbolicShape& shape);
std::string format_shape(const std::vector<std::size_t>& shape);

// Node attributes by name: integers (transA, axis, ...) and floats (alpha, ...).
// Attributes an op does not know are refused, never ignored.
struct NodeAttributes {
  std::map<std::string, std::int64_t> ints;
  std::map<std::string, float> floats;
  // INTS attributes (Transpose's perm, Squeeze's axes before opset 13).
  std::map<std::string, std::vector<std::int64_t>> int_lists;
  // STRING and STRINGS attributes (Gelu's approximate, an LSTM's direction
  // and activations); a STRING is a list of one.
  std::map<std::string, std::vector<std::string>> strings;
};

class PolicyGraph {
 public:
  class Plan;

  // The ops add_node() accepts (ONNX op_type names), in the order of the op
  // table.
  static const std::vector<std::string>& supported_ops();

  // Internal (policy_op_table.h): an op's row of the op table, the access its
  // functions have to a graph, and what a compiled step reads at run time.
  struct OpDef;
  struct Ops;
  struct RunContext;

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

  // A fixed integer tensor (ONNX INT64, INT32 or BOOL data): shapes, axes,
  // indices. data.size() must equal prod(shape). Only ops that read integers
  // (Reshape's shape, Gather's indices, Slice's bounds, ...) or integer-only
  // nodes evaluated at build time may use it.
  void add_int_constant(const std::string& name, const std::vector<std::size_t>& shape,
                        std::vector<std::int64_t> data);

  // A recurrent state input: shape `shape` with the batch size at
  // `batch_axis` (the value given there is ignored), e.g. an LSTM's h0 of
  // shape (1, batch, hidden). Pair it with add_state_output() once the nodes
  // are added.
  void add_state_input(const std::string& name, const std::vector<std::size_t>& shape,
                       std::size_t batch_axis);
  // Declares value `output` (of the state input's shape) the next value of
  // state input `input`. Throws std::invalid_argument naming both for an
  // unknown name, a state paired twice or a shape mismatch.
  void add_state_output(const std::string& input, const std::string& output);

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

  // The recurrent state: its inputs in the order added and the output paired
  // with each ("" until paired). A graph without them is feed-forward.
  const std::vector<std::string>& state_inputs() const noexcept { return state_inputs_; }
  const std::vector<std::string>& state_outputs() const noexcept { return state_outputs_; }
  bool recurrent() const noexcept { return !state_inputs_.empty(); }
  // Floats of state per observation (batch 1): every state tensor, in
  // state_inputs() order, each in C order. For a batch of b the buffer holds
  // each tensor with the batch size b, in the same order.
  std::size_t state_size() const;
  // The shapes of the state tensors for `batch` observations.
  std::vector<std::vector<std::size_t>> state_shapes(std::size_t batch) const;

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
  // The same for a recurrent graph: state[state_size() * batch] is read and
  // replaced by the next state (a feed-forward graph ignores it; a recurrent
  // one needs it: std::invalid_argument if null).
  std::vector<float> run(const float* obs, std::size_t batch, const float* params,
                         std::size_t num_params, float* state) const;

  // The graph compiled for `batch` observations: every intermediate's place in
  // one workspace. Throws std::invalid_argument like run() (no input, no
  // output, batch == 0). The plan points into this graph (its constants): it
  // must not outlive it, and the graph must not change while it is used.
  Plan compile(std::size_t batch) const;

  // The first output for plan.batch() observations obs[batch * obs_size()]
  // and the parameters `params` (covering num_params() values, noise too when
  // set), written to out[plan.output_size()], with workspace[plan.
  // workspace_size()] for the intermediates. Allocates nothing and checks
  // nothing (compile() and the caller did): `plan` must come from this graph.
  // Gives the same bits as run() with the parameters the view describes.
  // A recurrent graph reads its state from state[plan.state_size()] and
  // writes the next state there (non-null for a recurrent graph).
  void execute(const Plan& plan, const float* obs, const ParamView& params, float* workspace,
               float* out, float* state = nullptr) const noexcept;

 private:
  enum class Kind { kInput, kParam, kConstant, kNode, kInts, kState };
  // An element of an integer value: factor, times the batch size if `batch`.
  struct IntDim {
    std::int64_t factor = 0;
    bool batch = false;
    bool operator==(const IntDim& o) const noexcept { return factor == o.factor && batch == o.batch; }
  };

  struct Value {
    std::string name;
    Kind kind;
    SymbolicShape shape;
    std::size_t offset = 0;    // kParam
    std::size_t constant = 0;  // kConstant: index into constants_
    std::size_t node = 0;      // kNode: producing node
    std::size_t state = 0;     // kState: index into state_inputs_
    std::vector<IntDim> ints{};  // kInts: the elements, C order
    bool boolean = false;      // a kNode of Greater / Less: 1.0f true, 0.0f false
  };
  struct Node {
    std::string label;  // for errors: "node 'fc1' (Gemm)"
    const OpDef* op = nullptr;
    std::vector<int> inputs;  // value ids, -1 for an omitted optional input
    int output = 0;           // value id
    // Gemm
    float alpha = 1.0f, beta = 1.0f;
    bool trans_a = false, trans_b = false;
    // Softmax / Flatten
    std::int64_t axis = 0;
    // Clip
    float lo = 0.0f, hi = 0.0f;
    // LayerNorm epsilon (alpha), the elementwise ops' alpha and gamma, Gelu
    // tanh (trans_a); Gather indices, Slice starts and steps per output dim,
    // the reduced axes' first and last.
    float gamma = 0.0f;
    std::vector<std::int64_t> index;
    // LSTM / GRU's further outputs (Y_h, Y_c; -1
    // if omitted), hidden size and GRU's linear_before_reset; Transpose's
    // perm.
    std::vector<int> more_outputs;
    std::size_t hidden = 0;
    bool linear_before_reset = false;
    std::vector<std::size_t> perm;
  };

  int find_value(const std::string& name) const;  // -1 if unknown
  int define(Value value, const std::string& label);

  std::vector<Value> values_;
  std::map<std::string, int> value_ids_;
  std::vector<std::vector<float>> constants_;
  std::vector<std::string> state_inputs_, state_outputs_;
  std::vector<Node> nodes_;
  std::vector<std::string> outputs_;
  std::string input_name_;
  std::vector<std::size_t> feature_shape_;
  std::size_t obs_size_ = 0;
  std::size_t num_params_ = 0;
};

class PolicyGraph::Plan {
 public:
  std::size_t batch() const noexcept { return batch_; }
  // Floats of scratch execute() needs.
  std::size_t workspace_size() const noexcept { return workspace_size_; }
  // Floats of the first output, and its shape.
  std::size_t output_size() const noexcept { return output_size_; }
  const std::vector<std::size_t>& output_shape() const noexcept { return output_shape_; }
  // Floats of recurrent state for batch() observations (0 if feed-forward).
  std::size_t state_size() const noexcept { return state_size_; }

 private:
  friend class PolicyGraph;
  friend struct PolicyGraph::Ops;
  friend struct PolicyGraph::RunContext;

  // Where an operand lives: the observations, the parameter vector (read
  // through the ParamView), a constant of the graph, or the workspace.
  enum class Source : unsigned char { kObs, kParam, kConstant, kWork, kState };
  struct Operand {
    Source source = Source::kWork;
    std::size_t offset = 0;             // into obs, params or the workspace
    const float* constant = nullptr;    // kConstant
  };
  // How Add broadcasts: equal shapes, the right operand repeated over rows
  // (x + bias), the left one, or the general strided walk.
  enum class AddKind : unsigned char { kSame, kRowRight, kRowLeft, kGeneral };
  struct Step {
    // The op's kernel (its row's run function).
    void (*run)(const Step&, const RunContext&, float*) noexcept = nullptr;
    Operand in[6];
    bool has_c = false;
    std::size_t out = 0;   // workspace offset of the output
    std::size_t size = 0;  // output elements
    // Gemm / MatMul: rows m, columns n, inner k. Softmax: m rows of n.
    std::size_t m = 0, n = 0, k = 0;
    float alpha = 1.0f, beta = 1.0f;
    bool trans_a = false, trans_b = false;
    std::size_t c_rows = 1, c_cols = 1;  // Gemm's C as broadcast
    AddKind add = AddKind::kSame;  // also Sub, Mul, Div
    float lo = 0.0f, hi = 0.0f;    // Clip
    std::vector<std::size_t> out_shape, stride_a, stride_b;  // kGeneral; Transpose
    // LSTM / GRU: sequence length, hidden size, GRU's linear_before_reset,
    // the gate scratch, and where Y_c goes (the output holds Y then Y_h
    // aliases its last step).
    std::size_t seq = 0, hidden = 0, scratch = 0, out2 = 0;
    bool linear_before_reset = false, has_h0 = false, has_c0 = false;
    // The elementwise ops' alpha (lo), gamma (hi); LayerNorm epsilon (alpha); Where's third operand strides; Concat's inputs (their
    // chunk sizes in `stride_b`); Gather's indices and Slice's starts / steps.
    std::vector<std::size_t> stride_c;
    std::vector<Operand> more;
    std::vector<std::int64_t> index;
  };
  // A parameter window copied (perturbed) into the workspace before the
  // steps run, for the few places that do not read a ParamView directly.
  struct Copy {
    std::size_t param = 0, size = 0, work = 0;
  };

  std::size_t batch_ = 0;
  std::size_t workspace_size_ = 0;
  std::size_t output_size_ = 0;
  std::vector<std::size_t> output_shape_;
  std::vector<Copy> copies_;
  std::vector<Step> steps_;
  Operand output_;
  // The next state: each state output's operand and size, staged in the
  // workspace at `state_stage_` before it replaces the state buffer.
  std::size_t state_size_ = 0;
  std::size_t state_stage_ = 0;
  std::vector<std::pair<Operand, std::size_t>> state_next_;
};

namespace detail {
// The Tanh of PolicyGraph: onnxruntime's (MLAS) rational approximation,
// absolute error < 1e-6, the same bits on every machine.
float tanh_approx(float x) noexcept;
}  // namespace detail

}  // namespace evokit
