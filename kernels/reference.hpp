// CPU references of the elementwise kernels of a Llama training step (CUTLASS style: each kernel is
// checked against a plain implementation). fp32 arithmetic, bf16 storage where the kernels store
// bf16. Host-only: builds and tests without CUDA.
#pragma once

#include "kernels/bf16.hpp"

#include <cstddef>
#include <vector>

namespace commbound::kernels {

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, for `rows` rows of `hidden` values.
void rmsnorm_forward_reference(const std::vector<bf16_bits>& x, const std::vector<bf16_bits>& w, std::size_t rows,
                               std::size_t hidden, float eps, std::vector<bf16_bits>& y);

// out = silu(gate) * up, silu(g) = g / (1 + exp(-g)).
void swiglu_forward_reference(const std::vector<bf16_bits>& gate, const std::vector<bf16_bits>& up,
                              std::vector<bf16_bits>& out);

struct AdamWParams {
  float lr = 3e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
  int step = 1;  // 1-based, for bias correction
};

// One AdamW step (Loshchilov & Hutter) on an fp32 shard: updates param, m, v in place and writes
// the bf16 copy used by the next forward.
void adamw_reference(std::vector<float>& param, const std::vector<float>& grad, std::vector<float>& m,
                     std::vector<float>& v, const AdamWParams& p, std::vector<bf16_bits>& param_bf16);


// A row-major GEMM C[m x n] = op(A) op(B): A stored [m x k] (or [k x m] when trans_a), B stored
// [k x n] (or [n x k] when trans_b). A linear layer Y = X W^T with X [T x in], W [out x in]:
// forward {T, out, in, false, true}; input gradient dX = dY W: {T, in, out, false, false};
// weight gradient dW = dY^T X: {out, in, T, true, false}.
struct GemmShape {
  std::size_t m = 0, n = 0, k = 0;
  bool trans_a = false;
  bool trans_b = false;
};

// fp32 accumulation of bf16 inputs, bf16 output.
void gemm_reference(const GemmShape& s, const std::vector<bf16_bits>& a, const std::vector<bf16_bits>& b,
                    std::vector<bf16_bits>& c);

}  // namespace commbound::kernels
