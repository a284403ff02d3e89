// PolicyGraph::compile: a built graph planned for a batch size, every
// intermediate given its place in one workspace and every broadcast its
// kernel (policy_graph.cc runs the plan).
#include "evokit/policy_graph.h"

#include "policy_graph_ops.h"
#include "policy_recurrent.h"

#include <stdexcept>
#include <utility>

namespace evokit {

namespace {

// `shape` with the batch size filled in.
std::vector<std::size_t> resolve(const SymbolicShape& shape, std::size_t batch) {
  std::vector<std::size_t> out;
  out.reserve(shape.size());
  for (const Dim& d : shape) out.push_back(d.resolve(batch));
  return out;
}

// Row-major strides of `shape` aligned right to `rank` dims, 0 where the dim
// is broadcast (size 1 against a larger output dim).
std::vector<std::size_t> broadcast_strides(const std::vector<std::size_t>& shape,
                                           const std::vector<std::size_t>& out_shape) {
  const std::size_t rank = out_shape.size();
  std::vector<std::size_t> strides(rank, 0);
  std::size_t stride = 1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const std::size_t i = shape.size() - 1 - k;  // dim of `shape`
    const std::size_t o = rank - 1 - k;          // dim of the output
    strides[o] = (shape[i] == 1 && out_shape[o] != 1) ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

constexpr std::size_t kSlotAlign = 16;  // floats: workspace slots start on 64-byte boundaries

std::size_t element_count(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

// `shape` without its leading 1s.
std::vector<std::size_t> squeeze_leading(const std::vector<std::size_t>& shape) {
  std::size_t first = 0;
  while (first < shape.size() && shape[first] == 1) ++first;
  return std::vector<std::size_t>(shape.begin() + static_cast<std::ptrdiff_t>(first), shape.end());
}

}  // namespace

std::vector<std::size_t> PolicyGraph::output_shape(std::size_t batch) const {
  return resolve(symbolic_output_shape(), batch);
}

PolicyGraph::Plan PolicyGraph::compile(std::size_t batch) const {
  if (input_name_.empty()) throw std::invalid_argument("the graph has no input");
  if (outputs_.empty()) throw std::invalid_argument("the graph has no output");
  if (batch == 0) throw std::invalid_argument("batch must be >= 1, got 0");

  using Source = Plan::Source;
  using Operand = Plan::Operand;
  Plan plan;
  plan.batch_ = batch;
  std::size_t work = 0;
  const auto reserve = [&work](std::size_t size) {
    const std::size_t at = work;
    work += (size + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
    return at;
  };

  const std::size_t count = values_.size();
  std::vector<Operand> where(count);
  std::vector<std::vector<std::size_t>> shapes(count);
  for (std::size_t id = 0; id < count; ++id) {
    const Value& v = values_[id];
    shapes[id] = resolve(v.shape, batch);
    switch (v.kind) {
      case Kind::kInput: where[id] = Operand{Source::kObs, 0, nullptr}; break;
      case Kind::kParam: where[id] = Operand{Source::kParam, v.offset, nullptr}; break;
      case Kind::kConstant:
        where[id] = Operand{Source::kConstant, 0, constants_[v.constant].data()};
        break;
      case Kind::kNode:
      case Kind::kInts:
      case Kind::kState: break;  // placed below; kInts read when the graph was built
    }
  }

  // The state buffer: each state tensor in turn, at this batch size.
  for (std::size_t k = 0; k < state_inputs_.size(); ++k) {
    if (state_outputs_[k].empty()) {
      throw std::invalid_argument("state input '" + state_inputs_[k] +
                                  "' has no output paired with it (add_state_output)");
    }
    const auto id = static_cast<std::size_t>(find_value(state_inputs_[k]));
    where[id] = Operand{Source::kState, plan.state_size_, nullptr};
    plan.state_size_ += element_count(shapes[id]);
  }

  // An operand read as a plain array: a parameter there is copied (perturbed)
  // into the workspace once per run, before the steps.
  const auto plain = [&](int id) {
    const Operand& op = where[static_cast<std::size_t>(id)];
    if (op.source != Source::kParam) return op;
    const std::size_t size = element_count(shapes[static_cast<std::size_t>(id)]);
    for (const Plan::Copy& c : plan.copies_) {
      if (c.param == op.offset && c.size == size) return Operand{Source::kWork, c.work, nullptr};
    }
    const Plan::Copy c{op.offset, size, reserve(size)};
    plan.copies_.push_back(c);
    return Operand{Source::kWork, c.work, nullptr};
  };

  for (const Node& node : nodes_) {
    const auto out_id = static_cast<std::size_t>(node.output);
    const std::vector<std::size_t>& out_shape = shapes[out_id];
    const auto in_id = [&](std::size_t i) { return node.inputs[i]; };
    const auto in_shape = [&](std::size_t i) -> const std::vector<std::size_t>& {
      return shapes[static_cast<std::size_t>(node.inputs[i])];
    };
    if (values_[out_id].kind != Kind::kNode) continue;  // evaluated when built
    if (node.op == Op::kIdentity || node.op == Op::kFlatten || Ops::is_alias(node.op)) {
      where[out_id] = where[static_cast<std::size_t>(in_id(0))];  // same bytes, another shape
      continue;
    }
    if (node.op == Op::kTranspose) {
      // Input strides of each output axis.
      const std::vector<std::size_t>& x = in_shape(0);
      std::vector<std::size_t> stride(x.size(), 1);
      for (std::size_t i = x.size(); i-- > 1;) stride[i - 1] = stride[i] * x[i];
      std::vector<std::size_t> strides;
      for (std::size_t p : node.perm) strides.push_back(stride[p]);
      // The same bytes when the walk is contiguous: no step.
      bool contiguous = true;
      std::size_t expect = 1;
      for (std::size_t i = out_shape.size(); i-- > 0;) {
        if (out_shape[i] == 1) continue;
        contiguous = contiguous && strides[i] == expect;
        expect *= out_shape[i];
      }
      if (contiguous) {
        where[out_id] = where[static_cast<std::size_t>(in_id(0))];
        continue;
      }
      if (out_shape.size() > 16) {
        throw std::invalid_argument(node.label + ": more than 16 dimensions are not supported");
      }
      Plan::Step step;
      step.op = node.op;
      step.size = element_count(out_shape);
      step.in[0] = where[static_cast<std::size_t>(in_id(0))];
      step.out_shape = out_shape;
      step.stride_a = strides;
      step.out = reserve(step.size);
      where[out_id] = Operand{Source::kWork, step.out, nullptr};
      plan.steps_.push_back(std::move(step));
      continue;
    }
    if (node.op == Op::kLSTM || node.op == Op::kGRU) {
      const bool lstm = node.op == Op::kLSTM;
      const auto has = [&](std::size_t i) { return node.inputs.size() > i && node.inputs[i] >= 0; };
      Plan::Step step;
      step.op = node.op;
      step.seq = in_shape(0)[0];
      step.m = in_shape(0)[1];  // batch
      step.k = in_shape(0)[2];  // input size
      step.hidden = node.hidden;
      step.linear_before_reset = node.linear_before_reset;
      step.in[0] = plain(in_id(0));
      step.in[1] = where[static_cast<std::size_t>(in_id(1))];
      step.in[2] = where[static_cast<std::size_t>(in_id(2))];
      step.has_c = has(3);  // the bias B
      if (has(3)) step.in[3] = where[static_cast<std::size_t>(in_id(3))];
      step.has_h0 = has(5);  // else zeros
      step.has_c0 = lstm && has(6);
      if (step.has_h0) step.in[4] = plain(in_id(5));
      if (step.has_c0) step.in[5] = plain(in_id(6));
      const std::size_t state = step.m * step.hidden;
      step.size = step.seq * state;
      step.out = reserve(step.size);
      step.out2 = lstm ? reserve(state) : 0;
      step.scratch = reserve(detail::recurrent_scratch_size(lstm, step.m, step.hidden));
      where[out_id] = Operand{Source::kWork, step.out, nullptr};
      // Y_h is Y's last step; Y_c the cell state.
      if (!node.more_outputs.empty() && node.more_outputs[0] >= 0) {
        where[static_cast<std::size_t>(node.more_outputs[0])] =
            Operand{Source::kWork, step.out + (step.seq - 1) * state, nullptr};
      }
      if (node.more_outputs.size() > 1 && node.more_outputs[1] >= 0) {
        where[static_cast<std::size_t>(node.more_outputs[1])] =
            Operand{Source::kWork, step.out2, nullptr};
      }
      plan.steps_.push_back(std::move(step));
      continue;
    }
    Plan::Step step;
    step.op = node.op;
    step.size = element_count(out_shape);
    switch (node.op) {
      case Op::kRelu:
      case Op::kTanh:
      case Op::kSigmoid:
        step.in[0] = plain(in_id(0));
        break;
      case Op::kSoftmax:
        step.in[0] = plain(in_id(0));
        step.n = out_shape.back();
        step.m = step.n == 0 ? 0 : step.size / step.n;
        break;
      case Op::kClip:
        step.in[0] = plain(in_id(0));
        step.lo = node.lo;
        step.hi = node.hi;
        break;
      case Op::kAdd:
      case Op::kSub:
      case Op::kMul:
      case Op::kDiv:
      case Op::kPow:
      case Op::kGreater:
      case Op::kLess: {
        step.in[0] = where[static_cast<std::size_t>(in_id(0))];
        step.in[1] = where[static_cast<std::size_t>(in_id(1))];
        const std::vector<std::size_t>& sa = in_shape(0);
        const std::vector<std::size_t>& sb = in_shape(1);
        const std::vector<std::size_t> last{out_shape.empty() ? 1 : out_shape.back()};
        if (sa == out_shape && sb == out_shape) {
          step.add = Plan::AddKind::kSame;
        } else if (!out_shape.empty() && sa == out_shape && squeeze_leading(sb) == last) {
          step.add = Plan::AddKind::kRowRight;
          step.n = last[0];
        } else if (!out_shape.empty() && sb == out_shape && squeeze_leading(sa) == last) {
          step.add = Plan::AddKind::kRowLeft;
          step.n = last[0];
        } else {
          if (out_shape.size() > 16) {
            throw std::invalid_argument(node.label + ": broadcasting over more than 16 dimensions "
                                        "is not supported");
          }
          step.add = Plan::AddKind::kGeneral;
          step.out_shape = out_shape;
          step.stride_a = broadcast_strides(sa, out_shape);
          step.stride_b = broadcast_strides(sb, out_shape);
        }
        break;
      }
      case Op::kMatMul:
        step.in[0] = plain(in_id(0));
        step.in[1] = where[static_cast<std::size_t>(in_id(1))];
        step.k = in_shape(1)[0];
        step.n = in_shape(1)[1];
        step.m = step.n == 0 ? 0 : step.size / step.n;
        break;
      case Op::kGemm: {
        step.in[0] = plain(in_id(0));
        step.in[1] = where[static_cast<std::size_t>(in_id(1))];
        step.m = out_shape[0];
        step.n = out_shape[1];
        step.k = node.trans_a ? in_shape(0)[0] : in_shape(0)[1];
        step.alpha = node.alpha;
        step.beta = node.beta;
        step.trans_a = node.trans_a;
        step.trans_b = node.trans_b;
        step.has_c = node.inputs.size() == 3 && node.inputs[2] >= 0;
        if (step.has_c) {
          step.in[2] = where[static_cast<std::size_t>(in_id(2))];
          const std::vector<std::size_t>& sc = in_shape(2);
          if (sc.size() == 2) {
            step.c_rows = sc[0];
            step.c_cols = sc[1];
          } else if (sc.size() == 1) {
            step.c_cols = sc[0];
          }
        }
        break;
      }
      default:  // the ops of policy_graph_ops.cc (aliases handled above)
        Ops::plan(node, step, shapes, where, plain);
        break;
    }
    step.out = reserve(step.size);
    where[out_id] = Operand{Source::kWork, step.out, nullptr};
    plan.steps_.push_back(std::move(step));
  }

  const auto first = static_cast<std::size_t>(find_value(outputs_[0]));
  plan.output_ = where[first];
  plan.output_shape_ = shapes[first];
  plan.output_size_ = element_count(shapes[first]);
  // The next state is staged in the workspace, then replaces the state.
  if (plan.state_size_ > 0) {
    for (const std::string& name : state_outputs_) {
      const auto id = static_cast<std::size_t>(find_value(name));
      plan.state_next_.emplace_back(where[id], element_count(shapes[id]));
    }
    plan.state_stage_ = reserve(plan.state_size_);
  }
  plan.workspace_size_ = work;
  return plan;
}

}  // namespace evokit
