// CPU references of the elementwise kernels of a Llama training step (CUTLASS style: each kernel is
// checked against a plain implementation). fp32 arithmetic, bf16 storage where the kernels store
// bf16. Host-only: builds and tests without CUDA.
#pragma once

#include "model/kernel_shape.hpp"
#include "kernels/host/bf16.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace commbound::kernels {

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, for `rows` rows of `hidden` values.
void rmsnorm_forward_reference(const std::vector<bf16_bits>& x, const std::vector<bf16_bits>& w, std::size_t rows,
                               std::size_t hidden, float eps, std::vector<bf16_bits>& y);

// RMSNorm backward, y = x r w with r = 1/sqrt(mean(x^2) + eps) recomputed from x (no saved r):
// dx[r, :] = r (dy w) - x r^3 mean(dy w x); dw_accum[:] += sum over rows of dy x r (fp32, `hidden`
// values, accumulated: the caller zeroes it once per step).
void rmsnorm_backward_reference(const std::vector<bf16_bits>& dy, const std::vector<bf16_bits>& x,
                                const std::vector<bf16_bits>& w, std::size_t rows, std::size_t hidden, float eps,
                                std::vector<bf16_bits>& dx, std::vector<float>& dw_accum);

// Rotary embedding of q [tokens, heads, head_dim] and k [tokens, kv_heads, head_dim], tokens =
// batch * seq, token t at position t % seq. head_dim must be a multiple of 16.
struct RopeShape {
  std::size_t tokens = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
};

// The cos/sin table the rope kernels read: [seq][head_dim / 2] pairs (cos a, sin a), fp32, of
// a = pos * theta^(-2i / head_dim), computed in double (the angle of a late position keeps its
// digits) and rounded once to fp32.
std::vector<float> rope_table(std::size_t seq, std::size_t head_dim, double theta = 10000.0);

// In place, Llama/HF "rotate half": for i < head_dim / 2 the pair (x_i, x_{i + head_dim/2}) ->
// (x_i cos a - x_{i+d/2} sin a, x_{i+d/2} cos a + x_i sin a), a from `table` (rope_table).
void rope_forward_reference(std::vector<bf16_bits>& q, std::vector<bf16_bits>& k, const std::vector<float>& table,
                            const RopeShape& s);

// The backward: the inverse rotation (angle -a) of the gradients dq, dk, in place.
void rope_backward_reference(std::vector<bf16_bits>& dq, std::vector<bf16_bits>& dk, const std::vector<float>& table,
                             const RopeShape& s);

// out = silu(gate) * up, silu(g) = g / (1 + exp(-g)).
void swiglu_forward_reference(const std::vector<bf16_bits>& gate, const std::vector<bf16_bits>& up,
                              std::vector<bf16_bits>& out);

// SwiGLU backward: dgate = dout up silu'(gate), dup = dout silu(gate), where with s the sigmoid
// silu'(g) = s(g) (1 + g (1 - s(g))).
void swiglu_backward_reference(const std::vector<bf16_bits>& dout, const std::vector<bf16_bits>& gate,
                               const std::vector<bf16_bits>& up, std::vector<bf16_bits>& dgate,
                               std::vector<bf16_bits>& dup);

// out = a + b (the residual connection).
void residual_add_reference(const std::vector<bf16_bits>& a, const std::vector<bf16_bits>& b,
                            std::vector<bf16_bits>& out);

// out[t, :] = table[ids[t], :], table [vocab x hidden] (ids must lie in [0, vocab)).
void embedding_forward_reference(const std::vector<std::int32_t>& ids, const std::vector<bf16_bits>& table,
                                 std::size_t hidden, std::vector<bf16_bits>& out);

// dtable_accum[ids[t], :] += dout[t, :] (fp32 [vocab x hidden], zeroed by the caller).
void embedding_backward_reference(const std::vector<bf16_bits>& dout, const std::vector<std::int32_t>& ids,
                                  std::size_t hidden, std::vector<float>& dtable_accum);

// Per token (row of `vocab` bf16 logits): lse = log sum exp(row), loss = lse - row[target].
// A target outside [0, vocab) (HF's ignore index -100) marks an ignored token: loss 0 (lse still
// written). Sums in double.
void cross_entropy_forward_reference(const std::vector<bf16_bits>& logits, const std::vector<std::int32_t>& targets,
                                     std::size_t vocab, std::vector<float>& loss, std::vector<float>& lse);

// dlogits[t, j] = (exp(logits[t, j] - lse[t]) - [j == target[t]]) * grad_scale; an ignored token's
// row (target outside [0, vocab)) is zero.
void cross_entropy_backward_reference(const std::vector<bf16_bits>& logits, const std::vector<std::int32_t>& targets,
                                      const std::vector<float>& lse, std::size_t vocab, float grad_scale,
                                      std::vector<bf16_bits>& dlogits);

// Sum of squares of an fp32 gradient, accumulated in long double (each square exact).
double grad_norm_squared_reference(const std::vector<float>& grad);

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

// A row-major GEMM C[m x n] = op(A) op(B) in one of a linear layer's three layouts (model/'s
// room's GemmShape, model/kernel_shape.hpp): A stored [m x k], or [k x m] when
// transposed (wgrad); B stored [k x n], or [n x k] when transposed (forward).
using model::GemmLayout;
using model::GemmShape;
inline bool a_transposed(GemmLayout layout) { return layout == GemmLayout::wgrad; }
inline bool b_transposed(GemmLayout layout) { return layout == GemmLayout::forward; }

// fp32 accumulation of bf16 inputs, bf16 output.
void gemm_reference(const GemmShape& s, const std::vector<bf16_bits>& a, const std::vector<bf16_bits>& b,
                    std::vector<bf16_bits>& c);

}  // namespace commbound::kernels
