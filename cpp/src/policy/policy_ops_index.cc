// Concat, Gather and Slice (policy_op_table.h), with the ONNX operator
// specs' semantics, by constants known when the graph is built:
//
//   Concat   along any axis but the batch's
//   Gather   constant indices, along any axis but the batch's
//   Slice    constant starts / ends / axes / steps (inputs, or attributes
//            before opset 10); the batch dim whole
//
// On 1-D integer values (shape arithmetic) each is evaluated when the graph
// is built.
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include "policy/policy_op_table.h"

namespace evokit {

namespace {

using IntDim = PolicyGraph::Ops::IntDim;

}  // namespace

SymbolicShape ops::build_concat(Build& b) {
  const std::string& label = b.label();
  bool all_ints = true;
  for (std::size_t i = 0; i < b.node.inputs.size(); ++i) {
    all_ints = all_ints && b.ints_in(i);
  }
  if (!b.attributes.ints.count("axis")) {
    throw std::invalid_argument(label + ": attribute axis is required");
  }
  if (all_ints) {
    std::vector<IntDim> out;
    for (std::size_t i = 0; i < b.node.inputs.size(); ++i) {
      if (b.shape_of(i).size() != 1) {
        throw std::invalid_argument(label + ": integer input " + b.quoted(i) + " has shape " +
                                    format_shape(b.shape_of(i)) + "; only 1-D integer tensors "
                                    "can be concatenated");
      }
      out.insert(out.end(), b.value(i).ints.begin(), b.value(i).ints.end());
    }
    const std::size_t n = out.size();
    return b.fold_to({Dim{n, false}}, std::move(out));
  }
  b.refuse_non_float();
  const SymbolicShape& first = b.shape_of(0);
  if (first.empty()) throw std::invalid_argument(label + ": input " + b.quoted(0) + " is a scalar");
  const auto axis = static_cast<std::size_t>(normalise_axis(b.int_attr("axis", 0), first.size(), label));
  SymbolicShape out = first;
  out[axis] = Dim{0, false};
  for (std::size_t i = 0; i < b.node.inputs.size(); ++i) {
    const SymbolicShape& s = b.shape_of(i);
    bool ok = s.size() == first.size();
    for (std::size_t d = 0; ok && d < s.size(); ++d) ok = d == axis || s[d] == first[d];
    if (!ok) {
      throw std::invalid_argument(label + ": input " + b.quoted(i) + " has shape " +
                                  format_shape(s) + ", expected " + format_shape(first) +
                                  " but for axis " + std::to_string(axis));
    }
    if (s[axis].batch) b.require_not_batch(s, axis, "concatenation");
    out[axis].factor += s[axis].factor;
  }
  b.node.axis = static_cast<std::int64_t>(axis);
  return out;
}

bool ops::plan_concat(Planner& p, Step& step) {
  const auto axis = static_cast<std::size_t>(p.node.axis);
  step.m = count(p.out_shape(), 0, axis);
  for (std::size_t i = 0; i < p.node.inputs.size(); ++i) {
    const std::vector<std::size_t>& s = p.in_shape(i);
    step.more.push_back(p.at(i));
    step.stride_b.push_back(count(s, axis, s.size()));  // each input's chunk per row
  }
  return true;
}

// Row r of the output: each input's row r in turn.
void ops::run_concat(const Step& step, const Ctx& ctx, float* y) noexcept {
  float* dst = y;
  for (std::size_t r = 0; r < step.m; ++r) {
    for (std::size_t i = 0; i < step.more.size(); ++i) {
      const detail::View v = ctx.view(step.more[i]);
      const std::size_t chunk = step.stride_b[i];
      const std::size_t from = r * chunk;
      if (v.noise == nullptr) {
        std::copy(v.base + from, v.base + from + chunk, dst);
      } else {
        for (std::size_t j = 0; j < chunk; ++j) dst[j] = v[from + j];
      }
      dst += chunk;
    }
  }
}

SymbolicShape ops::build_gather(Build& b) {
  const std::string& label = b.label();
  const std::vector<IntDim>& idx = b.int_input(1, "indices");
  const SymbolicShape& x = b.shape_of(0);
  const SymbolicShape& idx_shape = b.shape_of(1);
  if (x.empty()) throw std::invalid_argument(label + ": data " + b.quoted(0) + " is a scalar");
  const auto axis = static_cast<std::size_t>(normalise_axis(b.int_attr("axis", 0), x.size(), label));
  b.require_not_batch(x, axis, "gathered");
  const auto n = static_cast<std::int64_t>(x[axis].factor);
  std::vector<std::int64_t> norm;
  for (const IntDim& d : idx) {
    if (d.batch || d.factor < -n || d.factor >= n) {
      throw std::invalid_argument(label + ": index " + int_dim_text(d.factor, d.batch) +
                                  " is out of range [" + std::to_string(-n) + ", " +
                                  std::to_string(n - 1) + "] for axis " + std::to_string(axis) +
                                  " of " + b.quoted(0) + " " + format_shape(x));
    }
    norm.push_back(d.factor < 0 ? d.factor + n : d.factor);
  }
  SymbolicShape out(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), idx_shape.begin(), idx_shape.end());
  out.insert(out.end(), x.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.end());
  if (b.ints_in(0)) {
    if (x.size() != 1) {
      throw std::invalid_argument(label + ": integer data " + b.quoted(0) + " has shape " +
                                  format_shape(x) + "; only 1-D integer data can be gathered");
    }
    std::vector<IntDim> ints;
    for (std::int64_t i : norm) ints.push_back(b.value(0).ints[static_cast<std::size_t>(i)]);
    return b.fold_to(out, std::move(ints));
  }
  if (b.value(0).boolean) b.refuse_non_float(1);
  b.node.axis = static_cast<std::int64_t>(axis);
  b.node.index = std::move(norm);
  return out;
}

bool ops::plan_gather(Planner& p, Step& step) {
  const std::vector<std::size_t>& x = p.in_shape(0);
  const auto axis = static_cast<std::size_t>(p.node.axis);
  step.in[0] = p.at(0);
  step.m = count(x, 0, axis);
  step.k = x[axis];
  step.n = count(x, axis + 1, x.size());
  step.index = p.node.index;
  return true;
}

void ops::run_gather(const Step& step, const Ctx& ctx, float* y) noexcept {
  const detail::View v = ctx.view(step.in[0]);
  float* dst = y;
  for (std::size_t o = 0; o < step.m; ++o) {
    for (const std::int64_t idx : step.index) {
      const std::size_t from = (o * step.k + static_cast<std::size_t>(idx)) * step.n;
      for (std::size_t j = 0; j < step.n; ++j) dst[j] = v[from + j];
      dst += step.n;
    }
  }
}

// Starts then steps per input dim, kept as node.index.
SymbolicShape ops::build_slice(Build& b) {
  const std::string& label = b.label();
  const SymbolicShape& x = b.shape_of(0);
  bool has_starts = false, has_ends = false, has_axes = false, has_steps = false;
  const std::vector<std::int64_t> starts = b.int_list(1, "starts", "starts", &has_starts);
  const std::vector<std::int64_t> ends = b.int_list(2, "ends", "ends", &has_ends);
  std::vector<std::int64_t> axes = b.int_list(3, "axes", "axes", &has_axes);
  std::vector<std::int64_t> steps = b.int_list(4, "", "steps", &has_steps);
  if (!has_starts || !has_ends) {
    throw std::invalid_argument(label + ": starts and ends are required");
  }
  if (!has_axes) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  }
  if (!has_steps) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    throw std::invalid_argument(label + ": starts " + ints_text(starts) + ", ends " +
                                ints_text(ends) + ", axes " + ints_text(axes) + " and steps " +
                                ints_text(steps) + " differ in length");
  }
  const std::size_t rank = x.size();
  std::vector<std::int64_t> first(rank, 0), step(rank, 1);
  SymbolicShape out = x;
  std::vector<bool> seen(rank, false);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<std::size_t>(normalise_axis(axes[i], rank, label));
    if (seen[a]) throw std::invalid_argument(label + ": axis " + std::to_string(a) + " is sliced twice");
    seen[a] = true;
    if (steps[i] == 0) throw std::invalid_argument(label + ": steps must not be 0");
    if (x[a].batch) {  // only the whole batch
      if (starts[i] != 0 || steps[i] != 1 || ends[i] < std::numeric_limits<std::int32_t>::max()) {
        throw std::invalid_argument(label + ": slicing axis " + std::to_string(a) +
                                    " of input " + b.quoted(0) + " " + format_shape(x) +
                                    " (the batch dimension) from " + std::to_string(starts[i]) +
                                    " to " + std::to_string(ends[i]) +
                                    "; only the whole batch is supported");
      }
      continue;
    }
    const auto d = static_cast<std::int64_t>(x[a].factor);
    std::int64_t s = starts[i], e = ends[i];
    const std::int64_t st = steps[i];
    if (s < 0) s += d;
    if (e < 0) e += d;
    if (st > 0) {
      s = std::clamp<std::int64_t>(s, 0, d);
      e = std::clamp<std::int64_t>(e, 0, d);
    } else {
      s = std::clamp<std::int64_t>(s, 0, d - 1);
      e = std::clamp<std::int64_t>(e, -1, d - 1);
    }
    const std::int64_t n = st > 0 ? (e - s + st - 1) / st : (s - e + (-st) - 1) / (-st);
    if (n <= 0) {
      throw std::invalid_argument(label + ": slicing axis " + std::to_string(a) + " of " +
                                  b.quoted(0) + " " + format_shape(x) + " from " +
                                  std::to_string(starts[i]) + " to " + std::to_string(ends[i]) +
                                  " step " + std::to_string(st) + " leaves no elements");
    }
    first[a] = s;
    step[a] = st;
    out[a] = Dim{static_cast<std::size_t>(n), false};
  }
  if (b.ints_in(0)) {
    if (rank != 1) {
      throw std::invalid_argument(label + ": integer data " + b.quoted(0) + " has shape " +
                                  format_shape(x) + "; only 1-D integer data can be sliced");
    }
    std::vector<IntDim> ints;
    for (std::size_t i = 0; i < out[0].factor; ++i) {
      ints.push_back(b.value(0).ints[static_cast<std::size_t>(first[0] + static_cast<std::int64_t>(i) * step[0])]);
    }
    return b.fold_to(out, std::move(ints));
  }
  b.refuse_non_float(1);
  b.node.index = first;
  b.node.index.insert(b.node.index.end(), step.begin(), step.end());
  return out;
}

bool ops::plan_slice(Planner& p, Step& step) {
  const std::vector<std::size_t>& x = p.in_shape(0);
  if (p.out_shape().size() > 16) {
    throw std::invalid_argument(p.node.label + ": slicing more than 16 dimensions is not supported");
  }
  step.in[0] = p.at(0);
  step.out_shape = p.out_shape();
  step.stride_a = broadcast_strides(x, x);
  step.index = p.node.index;  // starts, then steps
  return true;
}

void ops::run_slice(const Step& step, const Ctx& ctx, float* y) noexcept {
  const detail::View v = ctx.view(step.in[0]);
  const std::size_t rank = step.out_shape.size();
  const std::int64_t* first = step.index.data();
  const std::int64_t* stride = step.index.data() + rank;
  std::size_t index[16] = {};
  std::int64_t from = 0;
  for (std::size_t k = 0; k < rank; ++k) from += first[k] * static_cast<std::int64_t>(step.stride_a[k]);
  for (std::size_t i = 0; i < step.size; ++i) {
    y[i] = v[static_cast<std::size_t>(from)];
    for (std::size_t k = rank; k-- > 0;) {
      const auto s = stride[k] * static_cast<std::int64_t>(step.stride_a[k]);
      if (++index[k] < step.out_shape[k]) {
        from += s;
        break;
      }
      from -= s * static_cast<std::int64_t>(step.out_shape[k] - 1);
      index[k] = 0;
    }
  }
}

}  // namespace evokit
