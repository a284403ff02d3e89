// PolicyGraph's op table (internal): one row per ONNX op, the single list
// the graph's ops come from. A row gives the op's ONNX name, its input and
// output counts, the attributes it knows (each with its kind), and three
// functions: build (checks the inputs and attributes, gives the output
// shape), plan (places the operands of a compiled step, or says the output
// is the input's bytes) and run (the kernel a compiled step calls).
//
// Adding an op is a row in kOpTable (policy_op_table.cc) plus its
// functions, declared below and defined with the op's group:
//   policy_ops_elementwise.cc  Relu, Tanh, Sigmoid, Clip, Gelu, Erf,
//                              LeakyRelu, Elu, Selu, Softplus, Mish, Sqrt
//   policy_ops_binary.cc       Add, Sub, Mul, Div (integer values too), Pow,
//                              Greater, Less, Where
//   policy_ops_dense.cc        Gemm, MatMul
//   policy_ops_norm.cc         Softmax, LayerNormalization, ReduceMean,
//                              ReduceSum
//   policy_ops_shape.cc        Identity, Flatten, Reshape, Squeeze,
//                              Unsqueeze, Dropout, Cast, Shape
//   policy_ops_index.cc        Concat, Gather, Slice
//   policy_graph_recurrent.cc  LSTM, GRU, Transpose
// An elementwise op of one float input needs only a run function: its row
// takes build_unary and plan_unary, which read the attributes alpha and
// gamma (defaults from the row) into the step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "evokit/policy_graph.h"
#include "policy/policy_kernels.h"

namespace evokit {

// Where a compiled step finds its operands' floats.
struct PolicyGraph::RunContext {
  const float* obs;
  ParamView params;
  float* workspace;
  float* state;  // a recurrent graph's state buffer

  detail::View view(const Plan::Operand& op) const noexcept;
};

struct PolicyGraph::Ops {
  using Node = PolicyGraph::Node;
  using Value = PolicyGraph::Value;
  using Kind = PolicyGraph::Kind;
  using IntDim = PolicyGraph::IntDim;
  using Step = Plan::Step;
  using Operand = Plan::Operand;
  using Source = Plan::Source;
  using AddKind = Plan::AddKind;

  // What an op's build function sees: the graph so far, the node (its
  // fields receive what the op keeps), its attributes, and the value the
  // node defines (`folded`: an integer value or a float constant for a node
  // evaluated when the graph is built), `more` the shapes of outputs 1, 2, ...
  struct Build {
    PolicyGraph& graph;
    Node& node;
    const NodeAttributes& attributes;
    Value& folded;
    std::vector<SymbolicShape>& more;

    const std::string& label() const noexcept { return node.label; }
    const Value& value(std::size_t i) const;
    const SymbolicShape& shape_of(std::size_t i) const { return value(i).shape; }
    bool has_input(std::size_t i) const noexcept;
    std::string quoted(std::size_t i) const;  // "'name'"
    bool ints_in(std::size_t i) const { return value(i).kind == Kind::kInts; }
    const std::vector<float>& constant_of(const Value& v) const { return graph.constants_[v.constant]; }
    // The attribute's value, or `fallback` when it is not given.
    std::int64_t int_attr(const char* key, std::int64_t fallback) const;
    float float_attr(const char* key, float fallback) const;
    // Refuses an integer or boolean value among the first `inputs` inputs.
    void refuse_non_float(std::size_t inputs = 1024) const;
    // Input i's elements, which must be an integer value.
    const std::vector<IntDim>& int_input(std::size_t i, const char* what) const;
    // The integer list of input i, or of attribute `key` (older opsets),
    // every element known (no batch size); `present` says whether either was
    // given.
    std::vector<std::int64_t> int_list(std::size_t i, const char* key, const char* what,
                                       bool* present) const;
    // Refuses axis `axis` of x when it is the batch's.
    void require_not_batch(const SymbolicShape& x, std::size_t axis, const char* what) const;
    // The node evaluates to an integer value of these elements.
    SymbolicShape fold_to(SymbolicShape shape, std::vector<IntDim> ints);
    // The node evaluates to a float constant holding `data`.
    void fold_to_constant(std::vector<float> data);
  };

  // What an op's plan function sees: the node, every value's shape and
  // place at the plan's batch size, `plain` (an operand as a plain array: a
  // parameter copied into the workspace once per run) and `reserve` (floats
  // of workspace).
  struct Planner {
    const Node& node;
    const std::vector<std::vector<std::size_t>>& shapes;
    std::vector<Operand>& where;
    const std::function<Operand(int)>& plain;
    const std::function<std::size_t(std::size_t)>& reserve;
    bool placed = false;

    const std::vector<std::size_t>& in_shape(std::size_t i) const {
      return shapes[static_cast<std::size_t>(node.inputs[i])];
    }
    const std::vector<std::size_t>& out_shape() const {
      return shapes[static_cast<std::size_t>(node.output)];
    }
    Operand at(std::size_t i) const { return where[static_cast<std::size_t>(node.inputs[i])]; }
    Operand plain_in(std::size_t i) const { return plain(node.inputs[i]); }
    // Reserves the step's output (step.size floats) and makes it the node's
    // value; compile() does it after plan unless plan did.
    void place_output(Step& step);
  };

  using BuildFn = SymbolicShape (*)(Build&);
  // Fills `step` (its size and run function are set); false when the node's
  // output is its input's bytes in another shape (no step runs).
  using PlanFn = bool (*)(Planner&, Step&);
  using RunFn = void (*)(const Step&, const RunContext&, float*) noexcept;
};

// The kinds of node attributes (NodeAttributes' maps).
enum class AttrKind : unsigned char { kInt, kFloat, kInts, kStrings };

// An attribute an op knows; `fallback` is the value build_unary uses when a
// float attribute is not given.
struct OpAttr {
  const char* name = nullptr;
  AttrKind kind = AttrKind::kInt;
  float fallback = 0.0f;
};

struct PolicyGraph::OpDef {
  const char* name;      // the ONNX op_type
  int min_inputs;        // inputs below min_inputs must not be omitted
  int max_inputs;
  int max_outputs;
  OpAttr attrs[5];       // the attributes it knows (any others are refused)
  Ops::BuildFn build;
  Ops::PlanFn plan;
  Ops::RunFn run;        // null when plan never gives a step

  // The attribute named `key` the row lists, or null.
  const OpAttr* attr(const char* key) const noexcept;
};

namespace ops {

using Build = PolicyGraph::Ops::Build;
using Planner = PolicyGraph::Ops::Planner;
using Step = PolicyGraph::Ops::Step;
using Ctx = PolicyGraph::RunContext;

// The op table, in the order PolicyGraph::supported_ops() lists it.
const PolicyGraph::OpDef* table_begin() noexcept;
const PolicyGraph::OpDef* table_end() noexcept;
// The row of `op_type`, or null.
const PolicyGraph::OpDef* find(const std::string& op_type) noexcept;
// Refuses an attribute `def` does not list, or one of another kind.
void check_attributes(const PolicyGraph::OpDef& def, const std::string& label,
                      const NodeAttributes& attributes);

// Shared by several rows: no step (the output is the input's bytes), and
// the elementwise ops of one float input (alpha and gamma from the
// attributes, their defaults from the row).
bool plan_alias(Planner&, Step&);
SymbolicShape build_unary(Build&);
bool plan_unary(Planner&, Step&);

// policy_ops_elementwise.cc
void run_relu(const Step&, const Ctx&, float*) noexcept;
void run_tanh(const Step&, const Ctx&, float*) noexcept;
void run_sigmoid(const Step&, const Ctx&, float*) noexcept;
SymbolicShape build_clip(Build&);
bool plan_clip(Planner&, Step&);
void run_clip(const Step&, const Ctx&, float*) noexcept;
SymbolicShape build_gelu(Build&);
void run_gelu(const Step&, const Ctx&, float*) noexcept;
void run_erf(const Step&, const Ctx&, float*) noexcept;
void run_leaky_relu(const Step&, const Ctx&, float*) noexcept;
void run_elu(const Step&, const Ctx&, float*) noexcept;
void run_selu(const Step&, const Ctx&, float*) noexcept;
void run_softplus(const Step&, const Ctx&, float*) noexcept;
void run_mish(const Step&, const Ctx&, float*) noexcept;
void run_sqrt(const Step&, const Ctx&, float*) noexcept;

// policy_ops_binary.cc
SymbolicShape build_add(Build&);
SymbolicShape build_sub(Build&);
SymbolicShape build_mul(Build&);
SymbolicShape build_div(Build&);
SymbolicShape build_pow(Build&);
SymbolicShape build_compare(Build&);  // Greater, Less: a boolean value
bool plan_binary(Planner&, Step&);
void run_add(const Step&, const Ctx&, float*) noexcept;
void run_sub(const Step&, const Ctx&, float*) noexcept;
void run_mul(const Step&, const Ctx&, float*) noexcept;
void run_div(const Step&, const Ctx&, float*) noexcept;
void run_pow(const Step&, const Ctx&, float*) noexcept;
void run_greater(const Step&, const Ctx&, float*) noexcept;
void run_less(const Step&, const Ctx&, float*) noexcept;
SymbolicShape build_where(Build&);
bool plan_where(Planner&, Step&);
void run_where(const Step&, const Ctx&, float*) noexcept;

// policy_ops_dense.cc
SymbolicShape build_gemm(Build&);
bool plan_gemm(Planner&, Step&);
void run_gemm(const Step&, const Ctx&, float*) noexcept;
SymbolicShape build_matmul(Build&);
bool plan_matmul(Planner&, Step&);
void run_matmul(const Step&, const Ctx&, float*) noexcept;

// policy_ops_norm.cc
SymbolicShape build_softmax(Build&);
bool plan_softmax(Planner&, Step&);
void run_softmax(const Step&, const Ctx&, float*) noexcept;
SymbolicShape build_layer_norm(Build&);
bool plan_layer_norm(Planner&, Step&);
void run_layer_norm(const Step&, const Ctx&, float*) noexcept;
SymbolicShape build_reduce(Build&);
bool plan_reduce(Planner&, Step&);
void run_reduce_mean(const Step&, const Ctx&, float*) noexcept;
void run_reduce_sum(const Step&, const Ctx&, float*) noexcept;

// policy_ops_shape.cc
SymbolicShape build_identity(Build&);
SymbolicShape build_flatten(Build&);
SymbolicShape build_reshape(Build&);
SymbolicShape build_squeeze(Build&);
SymbolicShape build_unsqueeze(Build&);
SymbolicShape build_dropout(Build&);
SymbolicShape build_cast(Build&);
SymbolicShape build_shape(Build&);

// policy_ops_index.cc
SymbolicShape build_concat(Build&);
bool plan_concat(Planner&, Step&);
void run_concat(const Step&, const Ctx&, float*) noexcept;
SymbolicShape build_gather(Build&);
bool plan_gather(Planner&, Step&);
void run_gather(const Step&, const Ctx&, float*) noexcept;
SymbolicShape build_slice(Build&);
bool plan_slice(Planner&, Step&);
void run_slice(const Step&, const Ctx&, float*) noexcept;

// policy_graph_recurrent.cc
SymbolicShape build_lstm(Build&);
SymbolicShape build_gru(Build&);
bool plan_recurrent(Planner&, Step&);
void run_lstm(const Step&, const Ctx&, float*) noexcept;
void run_gru(const Step&, const Ctx&, float*) noexcept;
SymbolicShape build_transpose(Build&);
bool plan_transpose(Planner&, Step&);
void run_transpose(const Step&, const Ctx&, float*) noexcept;

// Helpers the groups share (policy_op_table.cc).
// numpy broadcasting of two symbolic shapes.
SymbolicShape broadcast_shapes(const SymbolicShape& a, const SymbolicShape& b,
                               const std::string& label);
// The product of dims [begin, end); throws if the batch size would appear twice.
Dim shape_product(const SymbolicShape& shape, std::size_t begin, std::size_t end,
                  const std::string& label);
std::string format_dim(const Dim& d);  // "3", "batch", "4*batch"
std::string int_dim_text(std::int64_t factor, bool batch);  // the same for an integer element
std::string ints_text(const std::vector<std::int64_t>& v);  // "[1, -2, 3]"
std::int64_t normalise_axis(std::int64_t axis, std::size_t rank, const std::string& label,
                            const char* what = "axis");
std::size_t count(const std::vector<std::size_t>& shape);
// The product of shape[begin, end).
std::size_t count(const std::vector<std::size_t>& shape, std::size_t begin, std::size_t end);
// Row-major strides of `shape` aligned right to `out`, 0 on broadcast dims.
std::vector<std::size_t> broadcast_strides(const std::vector<std::size_t>& shape,
                                           const std::vector<std::size_t>& out);

}  // namespace ops

}  // namespace evokit
