// PolicyGraph: building (with symbolic shape checks) and running.
//
// Op semantics follow the ONNX operator specs (opset 13+):
//   Gemm     Y = alpha * A' B' + beta * C, A' = transA ? A^T : A, B' likewise,
//            C unidirectionally broadcast to (M, N)
//   MatMul   numpy matmul with a 2-D right operand: (..., m, k) x (k, n)
//   Add, Sub, Mul, Div   numpy broadcasting
//   Clip     min(max(x, min), max), min and max one-element constants (or omitted)
//   Softmax  over the last axis, exp(x - max) / sum
//   Flatten  (d0..d_{axis-1}, d_axis..) -> (prod, prod)
#include "evokit/policy_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "messages.h"

namespace evokit {

namespace {

struct OpInfo {
  const char* name;
  int min_inputs;
  int max_inputs;
};

// In the order of PolicyGraph::Op.
constexpr OpInfo kOps[] = {
    {"Gemm", 2, 3},    {"MatMul", 2, 2},  {"Add", 2, 2},      {"Relu", 1, 1},    {"Tanh", 1, 1},
    {"Sigmoid", 1, 1}, {"Softmax", 1, 1}, {"Identity", 1, 1}, {"Flatten", 1, 1},
    {"Sub", 2, 2},     {"Mul", 2, 2},     {"Div", 2, 2},      {"Clip", 1, 3},
};

// The elementwise binary ops, by PolicyGraph's Op.
struct AddOp {
  float operator()(float a, float b) const noexcept { return a + b; }
};
struct SubOp {
  float operator()(float a, float b) const noexcept { return a - b; }
};
struct MulOp {
  float operator()(float a, float b) const noexcept { return a * b; }
};
struct DivOp {
  float operator()(float a, float b) const noexcept { return a / b; }
};

std::size_t checked_mul(std::size_t a, std::size_t b, const std::string& what) {
  if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a) {
    throw std::invalid_argument(what + ": size overflows");
  }
  return a * b;
}

std::size_t product(const std::vector<std::size_t>& shape, const std::string& what) {
  std::size_t n = 1;
  for (std::size_t d : shape) n = checked_mul(n, d, what);
  return n;
}

std::vector<std::size_t> resolve(const SymbolicShape& shape, std::size_t batch) {
  std::vector<std::size_t> out;
  out.reserve(shape.size());
  for (const Dim& d : shape) out.push_back(d.resolve(batch));
  return out;
}

std::string format_dim(const Dim& d) {
  if (!d.batch) return std::to_string(d.factor);
  return d.factor == 1 ? std::string("batch") : std::to_string(d.factor) + "*batch";
}

bool is_one(const Dim& d) { return !d.batch && d.factor == 1; }

SymbolicShape concrete(const std::vector<std::size_t>& shape) {
  SymbolicShape out;
  for (std::size_t d : shape) out.push_back(Dim{d, false});
  return out;
}

// The product of dims [begin, end); throws if the batch size would appear twice.
Dim dim_product(const SymbolicShape& shape, std::size_t begin, std::size_t end,
                const std::string& label) {
  Dim out;
  for (std::size_t i = begin; i < end; ++i) {
    if (shape[i].batch && out.batch) {
      throw std::invalid_argument(label + ": flattening " + format_shape(shape) +
                                  " would multiply the batch size by itself");
    }
    out.batch = out.batch || shape[i].batch;
    out.factor = checked_mul(out.factor, shape[i].factor, label);
  }
  return out;
}

// numpy broadcasting of two symbolic shapes.
SymbolicShape broadcast(const SymbolicShape& a, const SymbolicShape& b, const std::string& label) {
  const std::size_t rank = std::max(a.size(), b.size());
  SymbolicShape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const Dim da = i < rank - a.size() ? Dim{} : a[i - (rank - a.size())];
    const Dim db = i < rank - b.size() ? Dim{} : b[i - (rank - b.size())];
    if (da == db || is_one(db)) {
      out[i] = da;
    } else if (is_one(da)) {
      out[i] = db;
    } else {
      throw std::invalid_argument(label + ": shapes " + format_shape(a) + " and " +
                                  format_shape(b) + " cannot be broadcast together (dimension " +
                                  std::to_string(i) + ": " + format_dim(da) + " vs " +
                                  format_dim(db) + ")");
    }
  }
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

// ---- kernels -----------------------------------------------------------------
//
// Every output element is computed with the same float operations in the same
// order whatever the operand's source, so a ParamView (base + scale * noise,
// perturbed on the fly) gives the bits of the materialised parameter vector.
//
// The hot kernels are built for several x86-64 instruction sets (SSE2, AVX2,
// AVX-512; GCC's target_clones) and the loader picks the best one the CPU
// has. They vectorise across independent output elements only, never across
// a sum, and nothing is contracted into FMA (-ffp-contract=off): every
// instruction set gives the same bits.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define EVOKIT_KERNEL_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#define EVOKIT_KERNEL_INLINE inline __attribute__((always_inline))
#else
#define EVOKIT_KERNEL_CLONES
#define EVOKIT_KERNEL_INLINE inline
#endif

// A read-only operand: value i is base[i] + scale * noise[i] when noise is set.
struct View {
  const float* base = nullptr;
  const float* noise = nullptr;
  float scale = 0.0f;

  float operator[](std::size_t i) const noexcept {
    return noise != nullptr ? base[i] + scale * noise[i] : base[i];
  }
};

// y[jj] = sum_p a[p * a_step] * B(p, jj) for jj < W, B row-major with row
// stride n, each sum taken from 0.0f in p order; B(p, j) = b[p n + j]
// (+ scale * e[p n + j] when noisy). W is a compile-time width, so the
// accumulators stay in registers and the loop over jj is vectorised.
template <std::size_t W, bool kNoisy>
EVOKIT_KERNEL_INLINE void row_block(const float* a, std::size_t a_step, std::size_t k,
                                    const float* b, const float* e, float scale, std::size_t n,
                                    float* y) noexcept {
  float acc[W];
  for (std::size_t jj = 0; jj < W; ++jj) acc[jj] = 0.0f;
  for (std::size_t p = 0; p < k; ++p) {
    const float av = a[p * a_step];
    const float* bp = b + p * n;
    const float* ep = kNoisy ? e + p * n : nullptr;
#pragma omp simd
    for (std::size_t jj = 0; jj < W; ++jj) {
      acc[jj] += av * (kNoisy ? bp[jj] + scale * ep[jj] : bp[jj]);
    }
  }
  for (std::size_t jj = 0; jj < W; ++jj) y[jj] = acc[jj];
}

// y (m, n) = A' B' with A (m, k) or, transposed, (k, m); B (k, n) or (n, k).
// Element (i, j) is summed from 0.0f over p in order, whatever the path.
template <bool kNoisy>
EVOKIT_KERNEL_INLINE void matmul(const float* a, bool trans_a, const View& b, bool trans_b,
                                 std::size_t m, std::size_t n, std::size_t k, float* y) noexcept {
  const std::size_t a_step = trans_a ? m : 1;
  const float s = b.scale;
  for (std::size_t i = 0; i < m; ++i) {
    const float* ai = trans_a ? a + i : a + i * k;  // A'(i, p) = ai[p * a_step]
    float* yi = y + i * n;
    if (!trans_b) {  // B is (k, n): its rows are contiguous in j
      // Column blocks of 64, then 32, 16, 8, 4, 2, 1 (each a fixed width).
      // 64 columns are 4 independent AVX-512 accumulators: enough to hide
      // the latency of the adds, whose order within a sum is fixed.
      std::size_t j = 0;
      const auto blocks = [&](auto width) {
        constexpr std::size_t W = decltype(width)::value;
        for (; j + W <= n; j += W) {
          row_block<W, kNoisy>(ai, a_step, k, b.base + j, kNoisy ? b.noise + j : nullptr, s, n,
                               yi + j);
        }
      };
      blocks(std::integral_constant<std::size_t, 64>{});
      blocks(std::integral_constant<std::size_t, 32>{});
      blocks(std::integral_constant<std::size_t, 16>{});
      blocks(std::integral_constant<std::size_t, 8>{});
      blocks(std::integral_constant<std::size_t, 4>{});
      blocks(std::integral_constant<std::size_t, 2>{});
      blocks(std::integral_constant<std::size_t, 1>{});
    } else {  // B is (n, k): column j of B' is row j of B, a dot product
      for (std::size_t j = 0; j < n; ++j) {
        const float* bj = b.base + j * k;
        const float* ej = kNoisy ? b.noise + j * k : nullptr;
        float acc = 0.0f;
        for (std::size_t p = 0; p < k; ++p) {
          acc += ai[p * a_step] * (kNoisy ? bj[p] + s * ej[p] : bj[p]);
        }
        yi[j] = acc;
      }
    }
  }
}

EVOKIT_KERNEL_CLONES
void matmul_noisy(const float* a, bool trans_a, const View& b, bool trans_b, std::size_t m,
                  std::size_t n, std::size_t k, float* y) noexcept {
  matmul<true>(a, trans_a, b, trans_b, m, n, k, y);
}

EVOKIT_KERNEL_CLONES
void matmul_plain(const float* a, bool trans_a, const View& b, bool trans_b, std::size_t m,
                  std::size_t n, std::size_t k, float* y) noexcept {
  matmul<false>(a, trans_a, b, trans_b, m, n, k, y);
}

void matmul(const float* a, bool trans_a, const View& b, bool trans_b, std::size_t m,
            std::size_t n, std::size_t k, float* y) noexcept {
  if (b.noise != nullptr) {
    matmul_noisy(a, trans_a, b, trans_b, m, n, k, y);
  } else {
    matmul_plain(a, trans_a, b, trans_b, m, n, k, y);
  }
}

// y = alpha * y + beta * C, C broadcast from (c_rows, c_cols) to (m, n).
void gemm_epilogue(float* y, std::size_t m, std::size_t n, float alpha, float beta,
                   const View* c, std::size_t c_rows, std::size_t c_cols) noexcept {
  for (std::size_t i = 0; i < m; ++i) {
    float* yi = y + i * n;
    if (alpha != 1.0f) {  // alpha * y is y itself when alpha is 1
      for (std::size_t j = 0; j < n; ++j) yi[j] = alpha * yi[j];
    }
    if (c == nullptr) continue;
    const std::size_t row = (c_rows == 1 ? 0 : i) * c_cols;
    const float* cb = c->base + row;
    const float* ce = c->noise != nullptr ? c->noise + row : nullptr;
    const float s = c->scale;
    if (c_cols == 1) {
      const float cv = ce != nullptr ? cb[0] + s * ce[0] : cb[0];
      for (std::size_t j = 0; j < n; ++j) yi[j] += beta * cv;
    } else if (ce != nullptr) {
      for (std::size_t j = 0; j < n; ++j) yi[j] += beta * (cb[j] + s * ce[j]);
    } else if (beta == 1.0f) {
      for (std::size_t j = 0; j < n; ++j) yi[j] += cb[j];
    } else {
      for (std::size_t j = 0; j < n; ++j) yi[j] += beta * cb[j];
    }
  }
}

// numpy broadcasting along precomputed strides (0 on broadcast dims).
template <class F>
void broadcast_binary(F f, const View& a, const std::vector<std::size_t>& sa, const View& b,
                      const std::vector<std::size_t>& sb, const std::vector<std::size_t>& out_shape,
                      std::size_t total, float* out) noexcept {
  const std::size_t rank = out_shape.size();
  std::size_t index[16] = {};  // compile() refuses ranks above 16
  std::size_t ia = 0, ib = 0;
  for (std::size_t i = 0; i < total; ++i) {
    out[i] = f(a[ia], b[ib]);
    // Advance the multi-index (last dim fastest) and both input offsets.
    for (std::size_t k = rank; k-- > 0;) {
      if (++index[k] < out_shape[k]) {
        ia += sa[k];
        ib += sb[k];
        break;
      }
      ia -= sa[k] * (out_shape[k] - 1);
      ib -= sb[k] * (out_shape[k] - 1);
      index[k] = 0;
    }
  }
}

// tanh(x) as x * P(x^2) / Q(x^2), the minimax rational approximation of
// Eigen and onnxruntime's MLAS (odd numerator of degree 13, even denominator
// of degree 6), on x clamped to +-7.905..., where tanh rounds to +-1 in
// float; tanh(x) = x below |x| = 0.0004. Absolute error < 1e-6.
EVOKIT_KERNEL_INLINE float fast_tanh(float x) noexcept {
  constexpr float kClamp = 7.90531110763549805f;
  float c = x < -kClamp ? -kClamp : x;
  c = c > kClamp ? kClamp : c;
  const float x2 = c * c;
  float p = -2.76076847742355e-16f;
  p = x2 * p + 2.00018790482477e-13f;
  p = x2 * p + -8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  p = c * p;
  float q = 1.19825839466702e-06f;
  q = x2 * q + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  const float r = p / q;
  return std::fabs(x) < 0.0004f ? x : r;
}

EVOKIT_KERNEL_CLONES
void tanh_block(const float* __restrict x, float* __restrict y, std::size_t size) noexcept {
#pragma omp simd
  for (std::size_t i = 0; i < size; ++i) y[i] = fast_tanh(x[i]);
}

float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

}  // namespace

namespace detail {
float tanh_approx(float x) noexcept { return fast_tanh(x); }
}  // namespace detail

std::string format_shape(const SymbolicShape& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += format_dim(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

std::string format_shape(const std::vector<std::size_t>& shape) {
  return format_shape(concrete(shape));
}

const std::vector<std::string>& PolicyGraph::supported_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> names;
    for (const OpInfo& op : kOps) names.emplace_back(op.name);
    return names;
  }();
  return ops;
}

int PolicyGraph::find_value(const std::string& name) const {
  const auto it = value_ids_.find(name);
  return it == value_ids_.end() ? -1 : it->second;
}

int PolicyGraph::define(Value value, const std::string& label) {
  if (value.name.empty()) throw std::invalid_argument(label + ": a value name must not be empty");
  if (value_ids_.count(value.name) != 0) {
    throw std::invalid_argument(label + ": value '" + value.name + "' is already defined");
  }
  const int id = static_cast<int>(values_.size());
  value_ids_.emplace(value.name, id);
  values_.push_back(std::move(value));
  return id;
}

void PolicyGraph::add_input(const std::string& name,
                            const std::vector<std::size_t>& feature_shape) {
  const std::string label = "input '" + name + "'";
  if (!input_name_.empty()) {
    throw std::invalid_argument(label + ": the graph already has input '" + input_name_ +
                                "'; a policy takes exactly one observation input");
  }
  for (std::size_t i = 0; i < feature_shape.size(); ++i) {
    if (feature_shape[i] == 0) {
      throw std::invalid_argument(label + ": feature dimension " + std::to_string(i) +
                                  " must be >= 1, got 0");
    }
  }
  Value v{name, Kind::kInput, {Dim{1, true}}};
  for (std::size_t d : feature_shape) v.shape.push_back(Dim{d, false});
  const std::size_t size = product(feature_shape, label);
  define(std::move(v), label);
  input_name_ = name;
  feature_shape_ = feature_shape;
  obs_size_ = size;
}

void PolicyGraph::add_param(const std::string& name, std::size_t offset,
                            const std::vector<std::size_t>& shape) {
  const std::string label = "parameter '" + name + "'";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      throw std::invalid_argument(label + ": dimension " + std::to_string(i) +
                                  " must be >= 1, got 0");
    }
  }
  const std::size_t size = product(shape, label);
  if (offset > std::numeric_limits<std::size_t>::max() - size) {
    throw std::invalid_argument(label + ": offset + size overflows");
  }
  Value v{name, Kind::kParam, concrete(shape)};
  v.offset = offset;
  define(std::move(v), label);
  num_params_ = std::max(num_params_, offset + size);
}

void PolicyGraph::add_constant(const std::string& name, const std::vector<std::size_t>& shape,
                               std::vector<float> data) {
  const std::string label = "constant '" + name + "'";
  const std::size_t size = product(shape, label);
  if (data.size() != size) {
    throw std::invalid_argument(label + ": shape " + format_shape(shape) + " holds " +
                                std::to_string(size) + " values, got " +
                                std::to_string(data.size()));
  }
  Value v{name, Kind::kConstant, concrete(shape)};
  v.constant = constants_.size();
  define(std::move(v), label);
  constants_.push_back(std::move(data));
}

void PolicyGraph::add_output(const std::string& name) {
  if (find_value(name) < 0) {
    throw std::invalid_argument("output '" + name + "' is not a value of the graph");
  }
  outputs_.push_back(name);
}

void PolicyGraph::add_node(const std::string& op_type, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs,
                           const NodeAttributes& attributes, const std::string& name) {
  std::string label = name.empty() ? "node #" + std::to_string(nodes_.size())
                                   : "node '" + name + "'";
  label += " (" + op_type + ")";

  std::size_t op_index = 0;
  while (op_index < std::size(kOps) && op_type != kOps[op_index].name) ++op_index;
  if (op_index == std::size(kOps)) {
    std::string supported;
    for (const std::string& op : supported_ops()) supported += (supported.empty() ? "" : ", ") + op;
    throw std::invalid_argument(label + ": unsupported op " + op_type + " (supported: " +
                                supported + ")");
  }
  const OpInfo& info = kOps[op_index];
  const int n_in = static_cast<int>(inputs.size());
  if (n_in < info.min_inputs || n_in > info.max_inputs) {
    const std::string expected =
        info.min_inputs == info.max_inputs
            ? std::to_string(info.min_inputs)
            : std::to_string(info.min_inputs) + " to " + std::to_string(info.max_inputs);
    throw std::invalid_argument(label + ": expected " + expected + " inputs, got " +
                                std::to_string(n_in));
  }
  if (outputs.size() != 1) {
    throw std::invalid_argument(label + ": expected 1 output, got " +
                                std::to_string(outputs.size()));
  }

  Node node;
  node.label = label;
  node.op = static_cast<Op>(op_index);
  for (int i = 0; i < n_in; ++i) {
    const std::string& in = inputs[static_cast<std::size_t>(i)];
    if (in.empty()) {
      if (i < info.min_inputs) {
        throw std::invalid_argument(label + ": input " + std::to_string(i) +
                                    " is required but was omitted");
      }
      node.inputs.push_back(-1);
      continue;
    }
    const int id = find_value(in);
    if (id < 0) {
      throw std::invalid_argument(label + ": input '" + in +
                                  "' is not defined (not the input, a parameter, a constant or "
                                  "the output of an earlier node)");
    }
    node.inputs.push_back(id);
  }

  SymbolicShape shape = infer_shape(node, attributes);
  Value v{outputs[0], Kind::kNode, std::move(shape)};
  v.node = nodes_.size();
  node.output = define(std::move(v), label);
  nodes_.push_back(std::move(node));
}

SymbolicShape PolicyGraph::infer_shape(Node& node, const NodeAttributes& attributes) const {
  const std::string& label = node.label;
  // Refuse attributes the op does not know rather than ignore them.
  std::vector<std::string> known_ints, known_floats;
  switch (node.op) {
    case Op::kGemm:
      known_ints = {"transA", "transB"};
      known_floats = {"alpha", "beta"};
      break;
    case Op::kSoftmax:
    case Op::kFlatten:
      known_ints = {"axis"};
      break;
    default:
      break;
  }
  for (const auto& [key, value] : attributes.ints) {
    (void)value;
    if (std::find(known_ints.begin(), known_ints.end(), key) == known_ints.end()) {
      throw std::invalid_argument(label + ": unknown integer attribute '" + key + "'");
    }
  }
  for (const auto& [key, value] : attributes.floats) {
    (void)value;
    if (std::find(known_floats.begin(), known_floats.end(), key) == known_floats.end()) {
      throw std::invalid_argument(label + ": unknown float attribute '" + key + "'");
    }
  }
  const auto int_attr = [&](const char* key, std::int64_t fallback) {
    const auto it = attributes.ints.find(key);
    return it == attributes.ints.end() ? fallback : it->second;
  };
  const auto float_attr = [&](const char* key, float fallback) {
    const auto it = attributes.floats.find(key);
    return it == attributes.floats.end() ? fallback : it->second;
  };
  const auto shape_of = [&](std::size_t i) -> const SymbolicShape& {
    return values_[static_cast<std::size_t>(node.inputs[i])].shape;
  };
  const auto input_name = [&](std::size_t i) {
    return "'" + values_[static_cast<std::size_t>(node.inputs[i])].name + "'";
  };

  switch (node.op) {
    case Op::kRelu:
    case Op::kTanh:
    case Op::kSigmoid:
    case Op::kIdentity:
      return shape_of(0);

    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kDiv:
      return broadcast(shape_of(0), shape_of(1), label);

    case Op::kClip: {
      // min and max (opset 11+ inputs) must be known when the graph is built.
      node.lo = -std::numeric_limits<float>::infinity();
      node.hi = std::numeric_limits<float>::infinity();
      for (std::size_t i = 1; i < node.inputs.size(); ++i) {
        if (node.inputs[i] < 0) continue;
        const Value& bound = values_[static_cast<std::size_t>(node.inputs[i])];
        if (bound.kind != Kind::kConstant || constants_[bound.constant].size() != 1) {
          throw std::invalid_argument(label + ": " + (i == 1 ? "min " : "max ") + input_name(i) +
                                      " must be a constant with one element, got a " +
                                      (bound.kind == Kind::kConstant ? "constant" : "non-constant") +
                                      " of shape " + format_shape(bound.shape));
        }
        (i == 1 ? node.lo : node.hi) = constants_[bound.constant][0];
      }
      if (node.lo > node.hi) {
        throw std::invalid_argument(label + ": min " + std::to_string(node.lo) + " > max " +
                                    std::to_string(node.hi));
      }
      return shape_of(0);
    }

    case Op::kSoftmax: {
      const SymbolicShape& x = shape_of(0);
      const auto rank = static_cast<std::int64_t>(x.size());
      const std::int64_t axis = int_attr("axis", -1);
      if (rank == 0) throw std::invalid_argument(label + ": input must have rank >= 1, got ()");
      if (axis != -1 && axis != rank - 1) {
        throw std::invalid_argument(label + ": axis " + std::to_string(axis) +
                                    " is not supported for input " + input_name(0) + " of shape " +
                                    format_shape(x) + "; only the last axis (-1 or " +
                                    std::to_string(rank - 1) + ")");
      }
      node.axis = rank - 1;
      return x;
    }

    case Op::kFlatten: {
      const SymbolicShape& x = shape_of(0);
      const auto rank = static_cast<std::int64_t>(x.size());
      std::int64_t axis = int_attr("axis", 1);
      if (axis < -rank || axis > rank) {
        throw std::invalid_argument(label + ": axis " + std::to_string(axis) +
                                    " is out of range [" + std::to_string(-rank) + ", " +
                                    std::to_string(rank) + "] for input of shape " +
                                    format_shape(x));
      }
      if (axis < 0) axis += rank;
      node.axis = axis;
      const auto split = static_cast<std::size_t>(axis);
      return {dim_product(x, 0, split, label), dim_product(x, split, x.size(), label)};
    }

    case Op::kMatMul: {
      const SymbolicShape& a = shape_of(0);
      const SymbolicShape& b = shape_of(1);
      if (b.size() != 2) {
        throw std::invalid_argument(label + ": the right operand " + input_name(1) +
                                    " must be 2-D (k, n), got shape " + format_shape(b));
      }
      if (a.empty()) {
        throw std::invalid_argument(label + ": the left operand " + input_name(0) +
                                    " must have rank >= 1, got shape ()");
      }
      if (a.back() != b[0]) {
        throw std::invalid_argument(label + ": inner dimensions differ: " + input_name(0) + " " +
                                    format_shape(a) + " x " + input_name(1) + " " +
                                    format_shape(b) + " (expected " + input_name(1) +
                                    " to have " + format_dim(a.back()) + " rows, got " +
                                    format_dim(b[0]) + ")");
      }
      SymbolicShape out(a.begin(), a.end() - 1);
      out.push_back(b[1]);
      return out;
    }

    case Op::kGemm: {
      const std::int64_t trans_a = int_attr("transA", 0);
      const std::int64_t trans_b = int_attr("transB", 0);
      for (const auto& [key, v] : {std::pair<const char*, std::int64_t>{"transA", trans_a},
                                   std::pair<const char*, std::int64_t>{"transB", trans_b}}) {
        if (v != 0 && v != 1) {
          throw std::invalid_argument(label + ": attribute " + key + " must be 0 or 1, got " +
                                      std::to_string(v));
        }
      }
      node.trans_a = trans_a == 1;
      node.trans_b = trans_b == 1;
      node.alpha = float_attr("alpha", 1.0f);
      node.beta = float_attr("beta", 1.0f);
      const SymbolicShape& a = shape_of(0);
      const SymbolicShape& b = shape_of(1);
      if (a.size() != 2) {
        throw std::invalid_argument(label + ": input A " + input_name(0) +
                                    " must be 2-D, got shape " + format_shape(a));
      }
      if (b.size() != 2) {
        throw std::invalid_argument(label + ": input B " + input_name(1) +
                                    " must be 2-D, got shape " + format_shape(b));
      }
      const Dim m = node.trans_a ? a[1] : a[0];
      const Dim k_a = node.trans_a ? a[0] : a[1];
      const Dim k_b = node.trans_b ? b[1] : b[0];
      const Dim n = node.trans_b ? b[0] : b[1];
      if (k_a != k_b) {
        throw std::invalid_argument(
            label + ": inner dimensions differ: A " + input_name(0) + " " + format_shape(a) +
            (node.trans_a ? " (transposed)" : "") + " x B " + input_name(1) + " " +
            format_shape(b) + (node.trans_b ? " (transposed)" : "") + ": expected B to have " +
            format_dim(k_a) + (node.trans_b ? " columns" : " rows") + ", got " + format_dim(k_b));
      }
      const SymbolicShape out{m, n};
      if (node.inputs.size() == 3 && node.inputs[2] >= 0) {
        const SymbolicShape& c = shape_of(2);
        bool ok = c.size() <= 2;
        for (std::size_t i = 0; ok && i < c.size(); ++i) {
          const Dim& want = out[2 - c.size() + i];
          ok = c[i] == want || is_one(c[i]);
        }
        if (!ok) {
          throw std::invalid_argument(label + ": input C " + input_name(2) + " of shape " +
                                      format_shape(c) + " cannot be broadcast to the output " +
                                      format_shape(out));
        }
      }
      return out;
    }
  }
  throw std::logic_error(label + ": unhandled op");  // unreachable
}

SymbolicShape PolicyGraph::symbolic_output_shape() const {
  if (outputs_.empty()) throw std::invalid_argument("the graph has no output");
  return values_[static_cast<std::size_t>(find_value(outputs_[0]))].shape;
}

std::vector<std::size_t> PolicyGraph::output_shape(std::size_t batch) const {
  return resolve(symbolic_output_shape(), batch);
}

namespace {

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
      case Kind::kNode: break;  // placed below
    }
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
    if (node.op == Op::kIdentity || node.op == Op::kFlatten) {
      where[out_id] = where[static_cast<std::size_t>(in_id(0))];  // same bytes, another shape
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
      case Op::kDiv: {
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
      case Op::kIdentity:
      case Op::kFlatten:
        break;  // handled above
    }
    step.out = reserve(step.size);
    where[out_id] = Operand{Source::kWork, step.out, nullptr};
    plan.steps_.push_back(std::move(step));
  }

  const auto first = static_cast<std::size_t>(find_value(outputs_[0]));
  plan.output_ = where[first];
  plan.output_shape_ = shapes[first];
  plan.output_size_ = element_count(shapes[first]);
  plan.workspace_size_ = work;
  return plan;
}

void PolicyGraph::execute(const Plan& plan, const float* obs, const ParamView& params,
                          float* workspace, float* out) const noexcept {
  using Source = Plan::Source;
  const auto view = [&](const Plan::Operand& op) -> View {
    switch (op.source) {
      case Source::kObs: return View{obs + op.offset, nullptr, 0.0f};
      case Source::kParam:
        return View{params.base + op.offset,
                    params.noise != nullptr ? params.noise + op.offset : nullptr, params.scale};
      case Source::kConstant: return View{op.constant, nullptr, 0.0f};
      case Source::kWork: break;
    }
    return View{workspace + op.offset, nullptr, 0.0f};
  };

  for (const Plan::Copy& c : plan.copies_) {
    const View v = view(Plan::Operand{Source::kParam, c.param, nullptr});
    float* dst = workspace + c.work;
    for (std::size_t j = 0; j < c.size; ++j) dst[j] = v[j];
  }

  // y = f(a, b) with numpy broadcasting as compile() planned it (Add, Sub, Mul, Div).
  const auto binary = [&](auto f, const Plan::Step& step, const View& a, const View& b, float* y) {
    const std::size_t size = step.size;
    switch (step.add) {
      case Plan::AddKind::kSame:
        for (std::size_t i = 0; i < size; ++i) y[i] = f(a[i], b[i]);
        break;
      case Plan::AddKind::kRowRight:
        for (std::size_t r = 0; r * step.n < size; ++r) {
          for (std::size_t j = 0; j < step.n; ++j) y[r * step.n + j] = f(a[r * step.n + j], b[j]);
        }
        break;
      case Plan::AddKind::kRowLeft:
        for (std::size_t r = 0; r * step.n < size; ++r) {
          for (std::size_t j = 0; j < step.n; ++j) y[r * step.n + j] = f(a[j], b[r * step.n + j]);
        }
        break;
      case Plan::AddKind::kGeneral:
        broadcast_binary(f, a, step.stride_a, b, step.stride_b, step.out_shape, size, y);
        break;
    }
  };

  for (const Plan::Step& step : plan.steps_) {
    float* y = workspace + step.out;
    const std::size_t size = step.size;
    switch (step.op) {
      case Op::kRelu: {
        const float* x = view(step.in[0]).base;
        for (std::size_t i = 0; i < size; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
      }
      case Op::kTanh: {
        const float* x = view(step.in[0]).base;
        tanh_block(x, y, size);
        break;
      }
      case Op::kSigmoid: {
        const float* x = view(step.in[0]).base;
        for (std::size_t i = 0; i < size; ++i) y[i] = sigmoid(x[i]);
        break;
      }
      case Op::kSoftmax: {
        const float* x = view(step.in[0]).base;
        const std::size_t n = step.n;
        for (std::size_t r = 0; r < step.m; ++r) {
          const float* xr = x + r * n;
          float* yr = y + r * n;
          const float top = *std::max_element(xr, xr + n);
          float sum = 0.0f;
          for (std::size_t j = 0; j < n; ++j) {
            yr[j] = std::exp(xr[j] - top);
            sum += yr[j];
          }
          for (std::size_t j = 0; j < n; ++j) yr[j] /= sum;
        }
        break;
      }
      case Op::kAdd:
        binary(AddOp{}, step, view(step.in[0]), view(step.in[1]), y);
        break;
      case Op::kSub:
        binary(SubOp{}, step, view(step.in[0]), view(step.in[1]), y);
        break;
      case Op::kMul:
        binary(MulOp{}, step, view(step.in[0]), view(step.in[1]), y);
        break;
      case Op::kDiv:
        binary(DivOp{}, step, view(step.in[0]), view(step.in[1]), y);
        break;
      case Op::kClip: {
        const float* x = view(step.in[0]).base;
        for (std::size_t i = 0; i < size; ++i) {
          const float v = x[i] < step.lo ? step.lo : x[i];
          y[i] = v > step.hi ? step.hi : v;
        }
        break;
      }
      case Op::kMatMul:
        matmul(view(step.in[0]).base, false, view(step.in[1]), false, step.m, step.n, step.k, y);
        break;
      case Op::kGemm: {
        matmul(view(step.in[0]).base, step.trans_a, view(step.in[1]), step.trans_b, step.m,
               step.n, step.k, y);
        const View c = step.has_c ? view(step.in[2]) : View{};
        gemm_epilogue(y, step.m, step.n, step.alpha, step.beta, step.has_c ? &c : nullptr,
                      step.c_rows, step.c_cols);
        break;
      }
      case Op::kIdentity:
      case Op::kFlatten:
        break;  // never a step
    }
  }

  const View result = view(plan.output_);
  for (std::size_t i = 0; i < plan.output_size_; ++i) out[i] = result[i];
}

std::vector<float> PolicyGraph::run(const float* obs, std::size_t batch, const float* params,
                                    std::size_t num_params) const {
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
  execute(plan, obs, ParamView{params, nullptr, 0.0f}, workspace.data(), out.data());
  return out;
}

}  // namespace evokit
