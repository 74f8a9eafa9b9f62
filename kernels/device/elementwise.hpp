// The memory-bound kernels of a Llama training step (bf16 storage as std::uint16_t bits, fp32
// math), each launched on `stream` and returning the launch's error as a value (a bad argument is
// an Error before anything is launched). CPU references: kernels/host/reference.hpp; the bytes each
// must move: model/memory_bound_op.hpp. Device pointers must be 16-byte aligned (cudaMalloc's
// are), and sizes the multiples stated: every access is a 16-byte vector.
#pragma once

#include "kernels/host/reference.hpp"
#include "core/expected.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace commbound::kernels {

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w. `hidden` a multiple of 8, at most 16384.
// Each block keeps a whole row in registers (x read once) and w for all its rows.
Status rmsnorm_forward(const std::uint16_t* x, const std::uint16_t* w, std::size_t rows, std::size_t hidden, float eps,
                       std::uint16_t* y, cudaStream_t stream = nullptr);

// RMSNorm backward: dx [rows x hidden] bf16, and dw_accum [hidden] fp32 += this call's weight
// gradient (the caller zeroes it; a block adds its rows' partial sums with one atomic per column).
// The inverse rms is recomputed from x, which the backward reads anyway. Sizes as the forward.
Status rmsnorm_backward(const std::uint16_t* dy, const std::uint16_t* x, const std::uint16_t* w, std::size_t rows,
                        std::size_t hidden, float eps, std::uint16_t* dx, float* dw_accum,
                        cudaStream_t stream = nullptr);

// Rotary embedding of q [tokens, heads, head_dim] and k [tokens, kv_heads, head_dim] in place
// (rope_forward_reference's convention), with cos/sin read from `cos_sin`, the device copy of
// rope_table(s.seq, s.head_dim) ([seq][head_dim / 2] fp32 pairs: computed once per run, not per
// step). head_dim a multiple of 16, at most 4096; tokens, seq at least 1.
Status rope_forward(std::uint16_t* q, std::uint16_t* k, const float* cos_sin, const RopeShape& s,
                    cudaStream_t stream = nullptr);
// The backward: gradients dq, dk rotated back (angle negated), in place.
Status rope_backward(std::uint16_t* dq, std::uint16_t* dk, const float* cos_sin, const RopeShape& s,
                     cudaStream_t stream = nullptr);

// out = silu(gate) * up. `count` a multiple of 8.
Status swiglu_forward(const std::uint16_t* gate, const std::uint16_t* up, std::size_t count, std::uint16_t* out,
                      cudaStream_t stream = nullptr);

// dgate = dout up silu'(gate), dup = dout silu(gate). `count` a multiple of 8.
Status swiglu_backward(const std::uint16_t* dout, const std::uint16_t* gate, const std::uint16_t* up,
                       std::size_t count, std::uint16_t* dgate, std::uint16_t* dup, cudaStream_t stream = nullptr);

// out = a + b. `count` a multiple of 8; out may be a or b.
Status residual_add(const std::uint16_t* a, const std::uint16_t* b, std::size_t count, std::uint16_t* out,
                    cudaStream_t stream = nullptr);

// out[t, :] = table[ids[t], :] for `tokens` ids, table [vocab x hidden]; `hidden` a multiple of 8.
// An id outside [0, vocab) gets a row of NaN (0xffff), never a read outside the table.
Status embedding_forward(const std::int32_t* ids, const std::uint16_t* table, std::size_t tokens, std::size_t vocab,
                         std::size_t hidden, std::uint16_t* out, cudaStream_t stream = nullptr);

// dtable_accum[ids[t], :] += dout[t, :] (fp32 [vocab x hidden], zeroed by the caller; atomic adds,
// so repeated ids accumulate in an unspecified order). An id outside [0, vocab) is skipped.
Status embedding_backward(const std::uint16_t* dout, const std::int32_t* ids, std::size_t tokens, std::size_t vocab,
                          std::size_t hidden, float* dtable_accum, cudaStream_t stream = nullptr);

// Per token, one block per row of `vocab` bf16 logits (single pass, online max and sum): lse[t] =
// log sum exp(row) and loss[t] = lse[t] - row[targets[t]], fp32. A target outside [0, vocab) (HF's
// ignore index -100) marks an ignored token: loss 0. `vocab` a multiple of 8.
Status cross_entropy_forward(const std::uint16_t* logits, const std::int32_t* targets, std::size_t tokens,
                             std::size_t vocab, float* loss, float* lse, cudaStream_t stream = nullptr);

// dlogits[t, j] = (exp(logits[t, j] - lse[t]) - [j == targets[t]]) * grad_scale (typically
// 1 / counted tokens), bf16; an ignored token's row is zero. dlogits may be logits (in place).
Status cross_entropy_backward(const std::uint16_t* logits, const std::int32_t* targets, const float* lse,
                              std::size_t tokens, std::size_t vocab, float grad_scale, std::uint16_t* dlogits,
                              cudaStream_t stream = nullptr);

// Blocks of grad_norm_squared's first stage: its `partials` workspace holds this many doubles.
inline constexpr std::size_t kGradNormPartials = 1024;

// *sum_sq (device, one double) = sum of grad[i]^2 over `count` fp32 values (a multiple of 4), in
// two stages (a fixed grid's per-block sums into `partials`, then one block), each square exact
// and summed in double in a fixed order: the same inputs give the same bits on a given GPU.
Status grad_norm_squared(const float* grad, std::size_t count, double* partials, double* sum_sq,
                         cudaStream_t stream = nullptr);

// The L2 norm sqrt(sum grad[i]^2) on the host: grad_norm_squared, then a copy back that waits
// for `stream`.
Expected<double> grad_norm(const float* grad, std::size_t count, double* partials, double* sum_sq,
                           cudaStream_t stream = nullptr);

// Fused AdamW over an fp32 shard (param, m, v updated in place) with the bf16 copy written out.
// `count` a multiple of 4.
Status adamw_step(float* param, const float* grad, float* m, float* v, std::uint16_t* param_bf16, std::size_t count,
                  const AdamWParams& p, cudaStream_t stream = nullptr);

}  // namespace commbound::kernels
