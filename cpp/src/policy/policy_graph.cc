// PolicyGraph: running a compiled plan (execute), the one-call run(), and
// the recurrent state. Each step calls its op's run function (the op
// table's, policy_op_table.h). Every output element is computed with the
// same float operations in the same order whatever the operand's source, so
// a ParamView (base + scale * noise, perturbed on the fly) gives the bits of
// the materialised parameter vector.
//
// Recurrent state: add_state_input() declares an input holding state,
// add_state_output() the value that holds its next value; compile() places
// the state in a caller's buffer and execute() replaces it in place.
#include "evokit/policy_graph.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "common/messages.h"
#include "policy/policy_op_table.h"

namespace evokit {

void PolicyGraph::execute(const Plan& plan, const float* obs, const ParamView& params,
                          float* workspace, float* out, float* state) const noexcept {
  using Source = Plan::Source;
  using View = detail::View;
  const RunContext ctx{obs, params, workspace, state};
  const auto view = [&](const Plan::Operand& op) -> View { return ctx.view(op); };

  for (const Plan::Copy& c : plan.copies_) {
    const View v = view(Plan::Operand{Source::kParam, c.param, nullptr});
    float* dst = workspace + c.work;
    for (std::size_t j = 0; j < c.size; ++j) dst[j] = v[j];
  }

  for (const Plan::Step& step : plan.steps_) step.run(step, ctx, workspace + step.out);

  const View result = view(plan.output_);
  for (std::size_t i = 0; i < plan.output_size_; ++i) out[i] = result[i];
  if (plan.state_size_ > 0) {  // staged first: a state output may read the state itself
    float* stage = workspace + plan.state_stage_;
    std::size_t at = 0;
    for (const auto& [operand, size] : plan.state_next_) {
      const View next = view(operand);
      for (std::size_t i = 0; i < size; ++i) stage[at + i] = next[i];
      at += size;
    }
    std::copy(stage, stage + plan.state_size_, state);
  }
}

// ---- state --------------------------------------------------------------

void PolicyGraph::add_state_input(const std::string& name, const std::vector<std::size_t>& shape,
                                  std::size_t batch_axis) {
  const std::string label = "state input '" + name + "'";
  if (batch_axis >= shape.size()) {
    throw std::invalid_argument(label + ": batch axis " + std::to_string(batch_axis) +
                                " is out of range for shape " + format_shape(shape));
  }
  Value v{name, Kind::kState, {}};
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != batch_axis && shape[i] == 0) {
      throw std::invalid_argument(label + ": dimension " + std::to_string(i) +
                                  " must be >= 1, got 0");
    }
    v.shape.push_back(i == batch_axis ? Dim{1, true} : Dim{shape[i], false});
  }
  v.state = state_inputs_.size();
  define(std::move(v), label);
  state_inputs_.push_back(name);
  state_outputs_.emplace_back();
}

void PolicyGraph::add_state_output(const std::string& input, const std::string& output) {
  const int in = find_value(input);
  if (in < 0 || values_[static_cast<std::size_t>(in)].kind != Kind::kState) {
    throw std::invalid_argument("state output '" + output + "': '" + input +
                                "' is not a state input of the graph");
  }
  const Value& state = values_[static_cast<std::size_t>(in)];
  if (!state_outputs_[state.state].empty()) {
    throw std::invalid_argument("state input '" + input + "' is already paired with output '" +
                                state_outputs_[state.state] + "'");
  }
  const int out = find_value(output);
  if (out < 0) {
    throw std::invalid_argument("state output '" + output + "' is not a value of the graph");
  }
  const SymbolicShape& shape = values_[static_cast<std::size_t>(out)].shape;
  if (shape != state.shape) {
    throw std::invalid_argument("state output '" + output + "' has shape " + format_shape(shape) +
                                ", its state input '" + input + "' has shape " +
                                format_shape(state.shape));
  }
  state_outputs_[state.state] = output;
}

std::vector<std::vector<std::size_t>> PolicyGraph::state_shapes(std::size_t batch) const {
  std::vector<std::vector<std::size_t>> out;
  for (const std::string& name : state_inputs_) {
    std::vector<std::size_t> dims;
    for (const Dim& d : values_[static_cast<std::size_t>(find_value(name))].shape) {
      dims.push_back(d.resolve(batch));
    }
    out.push_back(std::move(dims));
  }
  return out;
}

std::size_t PolicyGraph::state_size() const {
  std::size_t total = 0;
  for (const std::vector<std::size_t>& shape : state_shapes(1)) {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;
    total += n;
  }
  return total;
}

// ---- running -----------------------------------------------------------------

std::vector<float> PolicyGraph::run(const float* obs, std::size_t batch, const float* params,
                                    std::size_t num_params) const {
  if (recurrent()) {
    throw std::invalid_argument("the graph is recurrent (state input '" + state_inputs_[0] +
                                "'): run it with a state buffer");
  }
  return run(obs, batch, params, num_params, nullptr);
}

std::vector<float> PolicyGraph::run(const float* obs, std::size_t batch, const float* params,
                                    std::size_t num_params, float* state) const {
  if (input_name_.empty()) throw std::invalid_argument("the graph has no input");
  if (outputs_.empty()) throw std::invalid_argument("the graph has no output");
  if (batch == 0) throw std::invalid_argument("batch must be >= 1, got 0");
  detail::require_non_null(obs, "obs");
  if (num_params != num_params_) {
    throw std::invalid_argument("params holds " + std::to_string(num_params) +
                                " values, the graph expects num_params = " +
                                std::to_string(num_params_));
  }
  if (num_params_ > 0) detail::require_non_null(params, "params");

  const Plan plan = compile(batch);
  std::vector<float> workspace(plan.workspace_size());
  std::vector<float> out(plan.output_size());
  if (recurrent()) detail::require_non_null(state, "state");
  execute(plan, obs, ParamView{params, nullptr, 0.0f}, workspace.data(), out.data(), state);
  return out;
}

}  // namespace evokit
