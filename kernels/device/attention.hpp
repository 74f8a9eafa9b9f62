// Flash attention (FlashAttention-2, Dao 2023) forward and backward for H100 (sm_90): bf16 inputs
// on tensor cores (mma.sync m16n8k16, fp32 accumulation), online softmax, causal (fully masked
// tiles skipped) or full, head_dim 64 or 128, grouped KV heads (GQA). The algorithm, tile sizes
// and FLOP counts are in attention.cu's header; the fp64 reference is kernels/host/attention_reference.hpp.
//
// Layouts (row-major, contiguous, bf16 as std::uint16_t bits): q, o, dout, dq [batch, seq, heads,
// head_dim]; k, v, dk, dv [batch, seq, kv_heads, head_dim]; lse fp32 [batch, heads, seq], the
// natural log of each row's softmax denominator of the scaled scores S = Q K^T / sqrt(head_dim).
// Query head h reads KV head h / (heads / kv_heads); causal: query i sees keys j <= i.
// Device pointers must be 16-byte aligned (cudaMalloc's are). Failures are values: a bad shape or
// pointer is an Error before anything is launched, a launch error is an Error after.
#pragma once

#include "kernels/host/attention_reference.hpp"
#include "core/expected.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace commbound::kernels {

// o = softmax(S) V and lse, on `stream`. Writes every element of o and lse.
Status attention_forward(const AttentionShape& s, const std::uint16_t* q, const std::uint16_t* k,
                         const std::uint16_t* v, std::uint16_t* o, float* lse, cudaStream_t stream = nullptr);

// Bytes of the workspace attention_backward needs: the fp32 dQ accumulator [batch, seq, heads,
// head_dim] and D = rowsum(dO o O) fp32 [batch, heads, seq]. 0 for a shape check_attention_shape
// refuses.
std::size_t attention_backward_workspace_bytes(const AttentionShape& s);

// dq, dk, dv for the output gradient `dout`, given the forward's o and lse, on `stream`.
// `workspace`: attention_backward_workspace_bytes(s) bytes, 16-byte aligned, uninitialised (the
// backward zeroes what it accumulates into). Writes every element of dq, dk and dv. dq's rows
// accumulate over KV blocks with fp32 atomic adds, so the low bits of dq may differ run to run.
Status attention_backward(const AttentionShape& s, const std::uint16_t* q, const std::uint16_t* k,
                          const std::uint16_t* v, const std::uint16_t* o, const std::uint16_t* dout, const float* lse,
                          std::uint16_t* dq, std::uint16_t* dk, std::uint16_t* dv, void* workspace,
                          cudaStream_t stream = nullptr);

}  // namespace commbound::kernels
