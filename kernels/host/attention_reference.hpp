// Attention shapes and the fp64 CPU reference of causal (or full) scaled-dot-product attention,
// forward (O and the log-sum-exp of each softmax row) and backward (dQ, dK, dV), with grouped
// KV heads (GQA). The reference the flash-attention kernels (kernels/device/attention.hpp) are checked
// against. Host-only: builds and tests without CUDA.
//
// Layouts, all row-major and contiguous: q and o [batch, seq, heads, head_dim]; k and v
// [batch, seq, kv_heads, head_dim]; lse [batch, heads, seq]. Query head h reads KV head
// h / (heads / kv_heads). Scores S = Q K^T / sqrt(head_dim); causal: query i sees keys j <= i.
#pragma once

#include "core/expected.hpp"
#include "model/kernel_shape.hpp"

#include <vector>

namespace commbound::kernels {

// The sizes of one attention call: model/'s AttentionShape (its `direction` names
// the pass a calibration row times; the functions here take both passes by name). seq is both the
// query and the key length.
using model::AttentionShape;
using model::Direction;

// Whether the GPU kernels take `s`: positive sizes below 2^31, head_dim 64 or 128, heads a
// multiple of kv_heads. The error names the offending field and value.
Status check_attention_shape(const AttentionShape& s);

// The softmax scale of the scores, 1 / sqrt(head_dim).
double attention_softmax_scale(const AttentionShape& s);

// Forward in fp64: o = softmax(S) V per (batch, head), lse = log(sum_j exp(S_ij)) (natural log,
// masked keys left out). Any positive sizes with heads % kv_heads == 0 (asserted); inputs must
// have the sizes of their layouts (asserted). Resizes the outputs.
void attention_forward_reference(const AttentionShape& s, const std::vector<double>& q, const std::vector<double>& k,
                                 const std::vector<double>& v, std::vector<double>& o, std::vector<double>& lse);

// Backward in fp64 for the output gradient `dout` (layout of o): with P the softmax of S,
// dV = P^T dO, dP = dO V^T, dS = P o (dP - rowsum(dO o O)), dQ = scale dS K, dK = scale dS^T Q;
// dK and dV of a KV head sum over the query heads of its group. Same preconditions as the forward;
// resizes the outputs.
void attention_backward_reference(const AttentionShape& s, const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, const std::vector<double>& dout, std::vector<double>& dq,
                                  std::vector<double>& dk, std::vector<double>& dv);

}  // namespace commbound::kernels
