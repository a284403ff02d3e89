// Kernels of PolicyGraph's recurrent ops and Transpose (internal;
// policy_graph_recurrent.cc defines them, policy_graph.cc runs them). Like
// the dense kernels, each output element is computed with the same float
// operations in the same order whatever the operands' sources.
#pragma once

#include <cstddef>
#include <vector>

#include "policy/policy_kernels.h"

namespace evokit::detail {

// out[i] for i < total: in[sum_k index_k * strides[k]], the output's
// multi-index walked in C order over out_shape (Transpose).
void strided_copy(const View& in, const std::vector<std::size_t>& out_shape,
                  const std::vector<std::size_t>& strides, std::size_t total, float* out) noexcept;

// The shapes and operands of one LSTM or GRU node (ONNX layout 0, one
// forward direction): x (seq, batch, input); w (gates * hidden, input), r
// (gates * hidden, hidden), b (2 * gates * hidden) or null; h0, c0 (batch,
// hidden) or null for zeros. y receives (seq, batch, hidden), c (batch,
// hidden) the last cell state (LSTM). scratch holds
// recurrent_scratch_size(...) floats.
struct RecurrentArgs {
  const float* x = nullptr;
  View w, r, b;
  bool has_b = false;
  const float* h0 = nullptr;
  const float* c0 = nullptr;
  std::size_t seq = 0, batch = 0, input = 0, hidden = 0;
  bool linear_before_reset = false;  // GRU
  float* y = nullptr;
  float* c = nullptr;  // LSTM
  float* scratch = nullptr;
};

std::size_t recurrent_scratch_size(bool lstm, std::size_t batch, std::size_t hidden) noexcept;

// ONNX LSTM, gates i, o, f, c (sigmoid, tanh, tanh), no peepholes.
void lstm_forward(const RecurrentArgs& a) noexcept;
// ONNX GRU, gates z, r, h (sigmoid, tanh), linear_before_reset 0 or 1.
void gru_forward(const RecurrentArgs& a) noexcept;

}  // namespace evokit::detail
