// PolicyGraph::compile: a built graph planned for a batch size, every
// intermediate given its place in one workspace; each node's op row plans
// its step (policy_graph.cc runs the plan).
#include "evokit/policy_graph.h"

#include "policy/policy_op_table.h"

#include <functional>
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

constexpr std::size_t kSlotAlign = 16;  // floats: workspace slots start on 64-byte boundaries

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
    plan.state_size_ += ops::count(shapes[id]);
  }

  // An operand read as a plain array: a parameter there is copied (perturbed)
  // into the workspace once per run, before the steps.
  const auto plain = [&](int id) {
    const Operand& op = where[static_cast<std::size_t>(id)];
    if (op.source != Source::kParam) return op;
    const std::size_t size = ops::count(shapes[static_cast<std::size_t>(id)]);
    for (const Plan::Copy& c : plan.copies_) {
      if (c.param == op.offset && c.size == size) return Operand{Source::kWork, c.work, nullptr};
    }
    const Plan::Copy c{op.offset, size, reserve(size)};
    plan.copies_.push_back(c);
    return Operand{Source::kWork, c.work, nullptr};
  };

  const std::function<std::size_t(std::size_t)> reserve_fn = reserve;
  const std::function<Operand(int)> plain_fn = plain;
  for (const Node& node : nodes_) {
    const auto out_id = static_cast<std::size_t>(node.output);
    if (values_[out_id].kind != Kind::kNode) continue;  // evaluated when built
    Ops::Planner planner{node, shapes, where, plain_fn, reserve_fn};
    Plan::Step step;
    step.run = node.op->run;
    step.size = ops::count(shapes[out_id]);
    if (!node.op->plan(planner, step)) {
      where[out_id] = where[static_cast<std::size_t>(node.inputs[0])];  // same bytes, another shape
      continue;
    }
    if (!planner.placed) planner.place_output(step);
    plan.steps_.push_back(std::move(step));
  }

  const auto first = static_cast<std::size_t>(find_value(outputs_[0]));
  plan.output_ = where[first];
  plan.output_shape_ = shapes[first];
  plan.output_size_ = ops::count(shapes[first]);
  // The next state is staged in the workspace, then replaces the state.
  if (plan.state_size_ > 0) {
    for (const std::string& name : state_outputs_) {
      const auto id = static_cast<std::size_t>(find_value(name));
      plan.state_next_.emplace_back(where[id], ops::count(shapes[id]));
    }
    plan.state_stage_ = reserve(plan.state_size_);
  }
  plan.workspace_size_ = work;
  return plan;
}

}  // namespace evokit
