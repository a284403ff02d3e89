// PolicyGraph's op table (policy_op_table.h): the rows, looking an op up,
// the attribute check, what an op's functions see of the graph, and the
// helpers the op groups share.
#include "policy/policy_op_table.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

namespace evokit {

namespace {

using Def = PolicyGraph::OpDef;
using namespace ops;  // NOLINT: the rows name the ops' functions
constexpr AttrKind kI = AttrKind::kInt, kF = AttrKind::kFloat, kL = AttrKind::kInts,
                   kS = AttrKind::kStrings;

// name, inputs (min, max), outputs (max), attributes, build, plan, run.
// The order is supported_ops()' (and that of the refusal listing them).
const Def kOpTable[] = {
    {"Gemm", 2, 3, 1, {{"transA", kI}, {"transB", kI}, {"alpha", kF}, {"beta", kF}},
     build_gemm, plan_gemm, run_gemm},
    {"MatMul", 2, 2, 1, {}, build_matmul, plan_matmul, run_matmul},
    {"Add", 2, 2, 1, {}, build_add, plan_binary, run_add},
    {"Relu", 1, 1, 1, {}, build_unary, plan_unary, run_relu},
    {"Tanh", 1, 1, 1, {}, build_unary, plan_unary, run_tanh},
    {"Sigmoid", 1, 1, 1, {}, build_unary, plan_unary, run_sigmoid},
    {"Softmax", 1, 1, 1, {{"axis", kI}}, build_softmax, plan_softmax, run_softmax},
    {"Identity", 1, 1, 1, {}, build_identity, plan_alias, nullptr},
    {"Flatten", 1, 1, 1, {{"axis", kI}}, build_flatten, plan_alias, nullptr},
    {"Sub", 2, 2, 1, {}, build_sub, plan_binary, run_sub},
    {"Mul", 2, 2, 1, {}, build_mul, plan_binary, run_mul},
    {"Div", 2, 2, 1, {}, build_div, plan_binary, run_div},
    {"Clip", 1, 3, 1, {}, build_clip, plan_clip, run_clip},
    {"LayerNormalization", 2, 3, 1, {{"axis", kI}, {"stash_type", kI}, {"epsilon", kF}},
     build_layer_norm, plan_layer_norm, run_layer_norm},
    {"Gelu", 1, 1, 1, {{"approximate", kS}}, build_gelu, plan_unary, run_gelu},
    {"Erf", 1, 1, 1, {}, build_unary, plan_unary, run_erf},
    {"LeakyRelu", 1, 1, 1, {{"alpha", kF, 0.01f}}, build_unary, plan_unary, run_leaky_relu},
    {"Elu", 1, 1, 1, {{"alpha", kF, 1.0f}}, build_unary, plan_unary, run_elu},
    {"Selu", 1, 1, 1,
     {{"alpha", kF, 1.67326319217681884765625f}, {"gamma", kF, 1.05070102214813232421875f}},
     build_unary, plan_unary, run_selu},
    {"Softplus", 1, 1, 1, {}, build_unary, plan_unary, run_softplus},
    {"Mish", 1, 1, 1, {}, build_unary, plan_unary, run_mish},
    {"Sqrt", 1, 1, 1, {}, build_unary, plan_unary, run_sqrt},
    {"Pow", 2, 2, 1, {}, build_pow, plan_binary, run_pow},
    {"ReduceMean", 1, 2, 1, {{"keepdims", kI}, {"noop_with_empty_axes", kI}, {"axes", kL}},
     build_reduce, plan_reduce, run_reduce_mean},
    {"Greater", 2, 2, 1, {}, build_compare, plan_binary, run_greater},
    {"Less", 2, 2, 1, {}, build_compare, plan_binary, run_less},
    {"Where", 3, 3, 1, {}, build_where, plan_where, run_where},
    {"Concat", 1, 1024, 1, {{"axis", kI}}, build_concat, plan_concat, run_concat},
    {"Gather", 2, 2, 1, {{"axis", kI}}, build_gather, plan_gather, run_gather},
    {"Slice", 1, 5, 1, {{"starts", kL}, {"ends", kL}, {"axes", kL}}, build_slice, plan_slice,
     run_slice},
    {"Reshape", 2, 2, 1, {{"allowzero", kI}}, build_reshape, plan_alias, nullptr},
    {"Squeeze", 1, 2, 1, {{"axes", kL}}, build_squeeze, plan_alias, nullptr},
    {"Unsqueeze", 1, 2, 1, {{"axes", kL}}, build_unsqueeze, plan_alias, nullptr},
    {"Dropout", 1, 3, 1, {{"seed", kI}, {"ratio", kF}}, build_dropout, plan_alias, nullptr},
    {"Cast", 1, 1, 1, {{"to", kI}, {"saturate", kI}}, build_cast, plan_alias, nullptr},
    {"Shape", 1, 1, 1, {{"start", kI}, {"end", kI}}, build_shape, plan_alias, nullptr},
    {"ReduceSum", 1, 2, 1, {{"keepdims", kI}, {"noop_with_empty_axes", kI}, {"axes", kL}},
     build_reduce, plan_reduce, run_reduce_sum},
    {"LSTM", 3, 8, 3,
     {{"hidden_size", kI}, {"layout", kI}, {"input_forget", kI}, {"direction", kS},
      {"activations", kS}},
     build_lstm, plan_recurrent, run_lstm},
    {"GRU", 3, 6, 2,
     {{"hidden_size", kI}, {"layout", kI}, {"linear_before_reset", kI}, {"direction", kS},
      {"activations", kS}},
     build_gru, plan_recurrent, run_gru},
    {"Transpose", 1, 1, 1, {{"perm", kL}}, build_transpose, plan_transpose, run_transpose},
};

}  // namespace

// ---- the table --------------------------------------------------------------

const Def* ops::table_begin() noexcept { return std::begin(kOpTable); }
const Def* ops::table_end() noexcept { return std::end(kOpTable); }

const Def* ops::find(const std::string& op_type) noexcept {
  for (const Def& def : kOpTable) {
    if (op_type == def.name) return &def;
  }
  return nullptr;
}

const OpAttr* PolicyGraph::OpDef::attr(const char* key) const noexcept {
  for (const OpAttr& a : attrs) {
    if (a.name != nullptr && std::strcmp(a.name, key) == 0) return &a;
  }
  return nullptr;
}

const std::vector<std::string>& PolicyGraph::supported_ops() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Def& def : kOpTable) out.emplace_back(def.name);
    return out;
  }();
  return names;
}

void ops::check_attributes(const Def& def, const std::string& label,
                           const NodeAttributes& attributes) {
  const auto check = [&](const auto& map, AttrKind kind, const char* kind_name) {
    for (const auto& entry : map) {
      const OpAttr* known = def.attr(entry.first.c_str());
      if (known == nullptr || known->kind != kind) {
        throw std::invalid_argument(label + ": unknown " + kind_name + " attribute '" +
                                    entry.first + "'");
      }
    }
  };
  check(attributes.ints, AttrKind::kInt, "integer");
  check(attributes.floats, AttrKind::kFloat, "float");
  check(attributes.int_lists, AttrKind::kInts, "integer list");
  check(attributes.strings, AttrKind::kStrings, "string");
}

// ---- what an op's functions see -------------------------------------------

const PolicyGraph::Value& PolicyGraph::Ops::Build::value(std::size_t i) const {
  return graph.values_[static_cast<std::size_t>(node.inputs[i])];
}

bool PolicyGraph::Ops::Build::has_input(std::size_t i) const noexcept {
  return i < node.inputs.size() && node.inputs[i] >= 0;
}

std::string PolicyGraph::Ops::Build::quoted(std::size_t i) const { return "'" + value(i).name + "'"; }

std::int64_t PolicyGraph::Ops::Build::int_attr(const char* key, std::int64_t fallback) const {
  const auto it = attributes.ints.find(key);
  return it == attributes.ints.end() ? fallback : it->second;
}

float PolicyGraph::Ops::Build::float_attr(const char* key, float fallback) const {
  const auto it = attributes.floats.find(key);
  return it == attributes.floats.end() ? fallback : it->second;
}

void PolicyGraph::Ops::Build::refuse_non_float(std::size_t inputs) const {
  for (std::size_t i = 0; i < node.inputs.size() && i < inputs; ++i) {
    if (node.inputs[i] < 0) continue;
    const Value& v = value(i);
    if (v.kind == Kind::kInts) {
      throw std::invalid_argument(node.label + ": input '" + v.name +
                                  "' is an integer tensor (shapes, axes and indices only); the "
                                  "native policy computes on FLOAT tensors only");
    }
    if (v.boolean) {
      throw std::invalid_argument(node.label + ": input '" + v.name +
                                  "' is a boolean tensor; only Where's condition may be one");
    }
  }
}

const std::vector<PolicyGraph::IntDim>& PolicyGraph::Ops::Build::int_input(
    std::size_t i, const char* what) const {
  const Value& v = value(i);
  if (v.kind != Kind::kInts) {
    throw std::invalid_argument(node.label + ": " + what + " '" + v.name +
                                "' must be an integer tensor known when the graph is built (a "
                                "constant or computed from shapes), got a " +
                                (v.kind == Kind::kConstant ? "float constant" : "float tensor") +
                                " of shape " + format_shape(v.shape));
  }
  return v.ints;
}

std::vector<std::int64_t> PolicyGraph::Ops::Build::int_list(std::size_t i, const char* key,
                                                            const char* what,
                                                            bool* present) const {
  std::vector<std::int64_t> out;
  const auto it = attributes.int_lists.find(key);
  if (has_input(i)) {
    for (const IntDim& d : int_input(i, what)) {
      if (d.batch) {
        throw std::invalid_argument(node.label + ": " + what + " " + quoted(i) +
                                    " depends on the batch size");
      }
      out.push_back(d.factor);
    }
    if (present) *present = true;
  } else if (it != attributes.int_lists.end()) {
    out = it->second;
    if (present) *present = true;
  } else if (present) {
    *present = false;
  }
  return out;
}

void PolicyGraph::Ops::Build::require_not_batch(const SymbolicShape& x, std::size_t axis,
                                                const char* what) const {
  if (x[axis].batch) {
    throw std::invalid_argument(node.label + ": " + what + " axis " + std::to_string(axis) +
                                " of input " + quoted(0) + " " + format_shape(x) +
                                " is the batch dimension, which a policy never mixes");
  }
}

SymbolicShape PolicyGraph::Ops::Build::fold_to(SymbolicShape shape, std::vector<IntDim> ints) {
  folded.kind = Kind::kInts;
  folded.ints = std::move(ints);
  return shape;
}

void PolicyGraph::Ops::Build::fold_to_constant(std::vector<float> data) {
  folded.kind = Kind::kConstant;
  folded.constant = graph.constants_.size();
  graph.constants_.push_back(std::move(data));
}

void PolicyGraph::Ops::Planner::place_output(Step& step) {
  step.out = reserve(step.size);
  where[static_cast<std::size_t>(node.output)] = Operand{Source::kWork, step.out, nullptr};
  placed = true;
}

detail::View PolicyGraph::RunContext::view(const Plan::Operand& op) const noexcept {
  using Source = Plan::Source;
  switch (op.source) {
    case Source::kObs: return detail::View{obs + op.offset, nullptr, 0.0f};
    case Source::kParam:
      return detail::View{params.base + op.offset,
                          params.noise != nullptr ? params.noise + op.offset : nullptr,
                          params.scale};
    case Source::kConstant: return detail::View{op.constant, nullptr, 0.0f};
    case Source::kState: return detail::View{state + op.offset, nullptr, 0.0f};
    case Source::kWork: break;
  }
  return detail::View{workspace + op.offset, nullptr, 0.0f};
}

// ---- rows several ops share -----------------------------------------------

bool ops::plan_alias(Planner&, Step&) { return false; }

SymbolicShape ops::build_unary(Build& b) {
  b.refuse_non_float();
  if (const OpAttr* a = b.node.op->attr("alpha")) b.node.alpha = b.float_attr("alpha", a->fallback);
  if (const OpAttr* g = b.node.op->attr("gamma")) b.node.gamma = b.float_attr("gamma", g->fallback);
  return b.shape_of(0);
}

bool ops::plan_unary(Planner& p, Step& step) {
  step.in[0] = p.plain_in(0);
  step.lo = p.node.alpha;
  step.hi = p.node.gamma;
  step.trans_a = p.node.trans_a;
  return true;
}

// ---- shared helpers ---------------------------------------------------------

std::string ops::format_dim(const Dim& d) { return int_dim_text(static_cast<std::int64_t>(d.factor), d.batch); }

std::string ops::int_dim_text(std::int64_t factor, bool batch) {
  if (!batch) return std::to_string(factor);
  return factor == 1 ? std::string("batch") : std::to_string(factor) + "*batch";
}

std::string ops::ints_text(const std::vector<std::int64_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

std::int64_t ops::normalise_axis(std::int64_t axis, std::size_t rank, const std::string& label,
                                 const char* what) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw std::invalid_argument(label + ": " + what + " " + std::to_string(axis) +
                                " is out of range [" + std::to_string(-r) + ", " +
                                std::to_string(r - 1) + "] for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + r : axis;
}

std::size_t ops::count(const std::vector<std::size_t>& shape) { return count(shape, 0, shape.size()); }

std::size_t ops::count(const std::vector<std::size_t>& shape, std::size_t begin, std::size_t end) {
  std::size_t n = 1;
  for (std::size_t i = begin; i < end; ++i) n *= shape[i];
  return n;
}

std::vector<std::size_t> ops::broadcast_strides(const std::vector<std::size_t>& shape,
                                                const std::vector<std::size_t>& out) {
  std::vector<std::size_t> strides(out.size(), 0);
  std::size_t stride = 1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const std::size_t i = shape.size() - 1 - k, o = out.size() - 1 - k;
    strides[o] = (shape[i] == 1 && out[o] != 1) ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

}  // namespace evokit
