// The ops PyTorch exports of common policies add to PolicyGraph (internal):
// planning and running them (policy_graph_ops.cc), and their kernels
// (policy_op_kernels.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "evokit/policy_graph.h"
#include "policy_kernels.h"

namespace evokit {

namespace detail {
// The elementwise ops of unary_block.
enum class Unary : unsigned char { kGelu, kGeluTanh, kErf, kLeakyRelu, kElu, kSelu, kSoftplus, kMish, kSqrt };

// The value of attribute `key`, or `fallback` when it is not given.
template <class Map, class T>
T attribute_or(const Map& map, const char* key, T fallback) {
  const auto it = map.find(key);
  return it == map.end() ? fallback : static_cast<T>(it->second);
}
}  // namespace detail

struct PolicyGraph::Ops {
  // Where execute() finds an operand's floats.
  struct Context {
    const float* obs;
    ParamView params;
    float* workspace;
    float* state;  // a recurrent graph's state buffer
  };
  static detail::View view(const Plan::Operand& op, const Context& ctx) noexcept;

  // The step of an extended node that runs (not an alias, not evaluated at
  // build time): its operands and sizes. `plain` gives an operand as a plain
  // array (a parameter copied into the workspace once per run).
  static void plan(const Node& node, Plan::Step& step,
                   const std::vector<std::vector<std::size_t>>& shapes,
                   const std::vector<Plan::Operand>& where,
                   const std::function<Plan::Operand(int)>& plain);

  // Runs one planned step of an extended op into y.
  static void run(const Plan::Step& step, const Context& ctx, float* y) noexcept;

  // True for the ops whose output is their input's bytes in another shape.
  static bool is_alias(Op op) noexcept;
  // The elementwise kernel of `op` (Gelu's tanh form when `tanh_form`), if
  // it is one.
  static bool unary_of(Op op, bool tanh_form, detail::Unary& out) noexcept;
};

namespace detail {

// policy_graph_build.cc's shape helpers: numpy broadcasting of two symbolic
// shapes, the product of dims [begin, end) (the batch size at most once),
// "4*batch".
SymbolicShape broadcast_shapes(const SymbolicShape& a, const SymbolicShape& b,
                               const std::string& label);
Dim shape_product(const SymbolicShape& shape, std::size_t begin, std::size_t end,
                  const std::string& label);
std::string format_dim_of(const Dim& d);

// "[1, -2, 3]": integer lists (axes, perm, starts) in errors.
std::string ints_text(const std::vector<std::int64_t>& v);

// y[i] = f(x[i]) for the elementwise ops (`op` one of PolicyGraph's unary
// ops: Gelu (tanh form when `tanh_form`), Erf, LeakyRelu, Elu, Selu,
// Softplus, Mish, Sqrt), alpha and gamma their attributes.
void unary_block(Unary op, float alpha, float gamma, const float* __restrict x,
                 float* __restrict y, std::size_t size) noexcept;

// LayerNormalization over rows of n: y = (x - mean) / sqrt(var + epsilon) *
// scale + bias (bias optional), mean and variance in two passes.
void layer_norm(const float* x, std::size_t rows, std::size_t n, float epsilon, const View& scale,
                const View* bias, float* y) noexcept;

// y (outer, inner) = the sum over r of x (outer, r, inner), in order from
// 0.0f; divided by r when `mean`.
void reduce(const float* x, std::size_t outer, std::size_t r, std::size_t inner, bool mean,
            float* y) noexcept;

}  // namespace detail

}  // namespace evokit
