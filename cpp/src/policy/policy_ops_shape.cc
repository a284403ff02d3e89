// The ops that give their input's bytes in another shape, or an integer
// value known when the graph is built (policy_op_table.h), with the ONNX
// operator specs' semantics:
//
//   Identity            the identity; of an integer value, that value
//   Flatten             (d0..d_{axis-1}, d_axis..) -> (prod, prod)
//   Reshape             a shape known when built (0 copies a dim unless
//                       allowzero, one -1 inferred), the batch size symbolic
//   Squeeze, Unsqueeze  axes an input (opset 13+) or an attribute
//   Dropout             the identity; refused when training_mode is true and
//                       the ratio > 0 (a model exported in training mode)
//   Cast                to FLOAT of a float (the identity), between integer
//                       types, or integer constants to FLOAT
//   Shape               the input's shape (start, end), an integer value
//
// Integer values (add_int_constant, Shape, and any node of integer values
// only) are evaluated when the graph is built, each element a factor times
// the batch size or not, so PyTorch's Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape chains give the symbolic shape (batch, 12). No step
// runs for these ops: their rows plan them as aliases.
#include <algorithm>
#include <stdexcept>
#include <utility>

#include "common/messages.h"
#include "policy/policy_op_table.h"

namespace evokit {

namespace {

using IntDim = PolicyGraph::Ops::IntDim;
using Kind = PolicyGraph::Ops::Kind;

// ONNX's Squeeze / Unsqueeze / Reshape of an integer value: same elements,
// a shape without the batch size.
const SymbolicShape& concrete_shape(const SymbolicShape& shape, const std::string& label) {
  for (const Dim& d : shape) {
    if (d.batch) {
      throw std::invalid_argument(label + ": an integer tensor cannot take the shape " +
                                  format_shape(shape));
    }
  }
  return shape;
}

SymbolicShape squeeze_or_unsqueeze(ops::Build& b, bool squeeze) {
  using namespace ops;  // NOLINT
  const std::string& label = b.label();
  const SymbolicShape& x = b.shape_of(0);
  bool given = false;
  std::vector<std::int64_t> axes = b.int_list(1, "axes", "axes", &given);
  SymbolicShape out;
  if (squeeze) {
    std::vector<bool> drop(x.size(), false);
    if (!given) {
      for (std::size_t d = 0; d < x.size(); ++d) drop[d] = !x[d].batch && x[d].factor == 1;
    }
    for (std::int64_t a : axes) {
      const auto d = static_cast<std::size_t>(normalise_axis(a, x.size(), label));
      if (x[d].batch || x[d].factor != 1) {
        throw std::invalid_argument(label + ": cannot squeeze axis " + std::to_string(d) +
                                    " of " + b.quoted(0) + " " + format_shape(x) +
                                    ": its size is " + format_dim(x[d]) + ", not 1");
      }
      drop[d] = true;
    }
    for (std::size_t d = 0; d < x.size(); ++d) {
      if (!drop[d]) out.push_back(x[d]);
    }
  } else {
    if (!given) throw std::invalid_argument(label + ": axes are required");
    const std::size_t rank = x.size() + axes.size();
    std::vector<bool> insert(rank, false);
    for (std::int64_t a : axes) {
      const auto d = static_cast<std::size_t>(normalise_axis(a, rank, label));
      if (insert[d]) throw std::invalid_argument(label + ": axis " + std::to_string(d) + " is given twice");
      insert[d] = true;
    }
    std::size_t next = 0;
    for (std::size_t d = 0; d < rank; ++d) out.push_back(insert[d] ? Dim{1, false} : x[next++]);
  }
  if (b.ints_in(0)) return b.fold_to(out, b.value(0).ints);
  b.refuse_non_float(1);
  return out;
}

}  // namespace

SymbolicShape ops::build_identity(Build& b) {
  if (b.ints_in(0)) return b.fold_to(b.shape_of(0), b.value(0).ints);
  b.refuse_non_float();
  return b.shape_of(0);
}

SymbolicShape ops::build_flatten(Build& b) {
  b.refuse_non_float();
  const SymbolicShape& x = b.shape_of(0);
  const auto rank = static_cast<std::int64_t>(x.size());
  std::int64_t axis = b.int_attr("axis", 1);
  if (axis < -rank || axis > rank) {
    throw std::invalid_argument(b.label() + ": axis " + std::to_string(axis) + " is out of range [" +
                                std::to_string(-rank) + ", " + std::to_string(rank) +
                                "] for input of shape " + format_shape(x));
  }
  if (axis < 0) axis += rank;
  b.node.axis = axis;
  const auto split = static_cast<std::size_t>(axis);
  return {shape_product(x, 0, split, b.label()), shape_product(x, split, x.size(), b.label())};
}

SymbolicShape ops::build_reshape(Build& b) {
  const std::string& label = b.label();
  const std::vector<IntDim>& target = b.int_input(1, "shape");
  const SymbolicShape& x = b.shape_of(0);
  const bool allow_zero = b.int_attr("allowzero", 0) != 0;
  const Dim total = shape_product(x, 0, x.size(), label);
  SymbolicShape out(target.size());
  int infer = -1;
  Dim known;  // the product of the dims given
  const auto fail = [&](const std::string& why) {
    std::string t = "[";
    for (std::size_t i = 0; i < target.size(); ++i) t += (i ? ", " : "") + int_dim_text(target[i].factor, target[i].batch);
    return std::invalid_argument(label + ": cannot reshape " + b.quoted(0) + " " +
                                 format_shape(x) + " to " + t + "]: " + why);
  };
  for (std::size_t i = 0; i < target.size(); ++i) {
    const IntDim& d = target[i];
    if (!d.batch && d.factor == -1) {
      if (infer >= 0) throw fail("more than one -1");
      infer = static_cast<int>(i);
      continue;
    }
    if (!d.batch && d.factor == 0 && !allow_zero) {
      if (i >= x.size()) throw fail("0 copies dimension " + std::to_string(i) + ", which the input lacks");
      out[i] = x[i];
    } else if (d.factor <= 0) {
      throw fail("dimension " + std::to_string(i) + " is " + int_dim_text(d.factor, d.batch));
    } else {
      out[i] = Dim{static_cast<std::size_t>(d.factor), d.batch};
    }
    if (out[i].batch && known.batch) throw fail("the batch size appears twice");
    known.batch = known.batch || out[i].batch;
    known.factor *= out[i].factor;
  }
  if (infer >= 0) {
    if (known.batch && !total.batch) throw fail("the batch size appears in the shape only");
    if (known.factor == 0 || total.factor % known.factor != 0) {
      throw fail(std::to_string(total.factor) + " is not a multiple of " + std::to_string(known.factor));
    }
    out[static_cast<std::size_t>(infer)] = Dim{total.factor / known.factor, total.batch && !known.batch};
  } else if (!(known == total)) {
    throw fail("it holds " + format_dim(known) + " elements, the input " +
               format_dim(total));
  }
  if (b.ints_in(0)) return b.fold_to(concrete_shape(out, label), b.value(0).ints);
  b.refuse_non_float(1);
  return out;
}

SymbolicShape ops::build_squeeze(Build& b) { return squeeze_or_unsqueeze(b, true); }
SymbolicShape ops::build_unsqueeze(Build& b) { return squeeze_or_unsqueeze(b, false); }

SymbolicShape ops::build_dropout(Build& b) {
  const std::string& label = b.label();
  if (b.value(0).kind == Kind::kInts || b.value(0).boolean) b.refuse_non_float(1);
  // training_mode: an input (opset 12+), false when omitted (always
  // before opset 12); ratio: an input (opset 12+) or an attribute.
  bool training = false;
  if (b.has_input(2)) {
    const PolicyGraph::Ops::Value& t = b.value(2);
    if (t.kind != Kind::kInts || t.ints.size() != 1 || t.ints[0].batch) {
      throw std::invalid_argument(label + ": training_mode " + b.quoted(2) +
                                  " must be a one-element boolean constant");
    }
    training = t.ints[0].factor != 0;
  }
  if (!training) return b.shape_of(0);
  float ratio = b.float_attr("ratio", 0.5f);
  std::string ratio_text;
  if (b.has_input(1)) {
    const PolicyGraph::Ops::Value& r = b.value(1);
    if (r.kind != Kind::kConstant || b.constant_of(r).size() != 1) {
      ratio_text = b.quoted(1);  // a parameter: its value is not fixed
    } else {
      ratio = b.constant_of(r)[0];
    }
  }
  if (ratio_text.empty()) {
    if (ratio <= 0.0f) return b.shape_of(0);  // nothing is dropped
    ratio_text = detail::format_number(ratio);
  }
  throw std::invalid_argument(
      label + ": dropout is active (training_mode true, ratio " + ratio_text +
      "): the model was exported in training mode and would drop random activations at "
      "every call; export it after model.eval()");
}

SymbolicShape ops::build_cast(Build& b) {
  const std::string& label = b.label();
  if (!b.attributes.ints.count("to")) throw std::invalid_argument(label + ": attribute to is required");
  const std::int64_t to = b.int_attr("to", 0);
  constexpr std::int64_t kFloat = 1, kInt32 = 6, kInt64 = 7, kBool = 9;
  if (to != kFloat && to != kInt32 && to != kInt64 && to != kBool) {
    throw std::invalid_argument(label + ": cast to ONNX type " + std::to_string(to) +
                                " is not supported (only FLOAT, INT32, INT64 and BOOL)");
  }
  if (b.ints_in(0)) {
    const std::vector<IntDim>& in = b.value(0).ints;
    if (to != kFloat) {
      std::vector<IntDim> out = in;
      if (to == kBool) {
        for (IntDim& d : out) d = IntDim{d.factor != 0 || d.batch ? 1 : 0, false};
      }
      return b.fold_to(b.shape_of(0), std::move(out));
    }
    std::vector<float> data;
    for (const IntDim& d : in) {
      if (d.batch) {
        throw std::invalid_argument(label + ": casting " + b.quoted(0) +
                                    " to FLOAT: it depends on the batch size");
      }
      data.push_back(static_cast<float>(d.factor));
    }
    b.fold_to_constant(std::move(data));
    return b.shape_of(0);
  }
  if (to != kFloat) {
    throw std::invalid_argument(label + ": casts the float tensor " + b.quoted(0) +
                                " to an integer type; the native policy computes on FLOAT "
                                "tensors only");
  }
  b.refuse_non_float(1);
  return b.shape_of(0);
}

SymbolicShape ops::build_shape(Build& b) {
  const SymbolicShape& x = b.shape_of(0);
  const auto rank = static_cast<std::int64_t>(x.size());
  const auto clamp = [&](std::int64_t v) {
    if (v < 0) v += rank;
    return std::clamp<std::int64_t>(v, 0, rank);
  };
  const std::int64_t start = clamp(b.int_attr("start", 0));
  const std::int64_t end = clamp(b.int_attr("end", rank));
  std::vector<IntDim> dims;
  for (std::int64_t d = start; d < end; ++d) {
    const Dim& dim = x[static_cast<std::size_t>(d)];
    dims.push_back(IntDim{static_cast<std::int64_t>(dim.factor), dim.batch});
  }
  const std::size_t n = dims.size();
  return b.fold_to({Dim{n, false}}, std::move(dims));
}

}  // namespace evokit
