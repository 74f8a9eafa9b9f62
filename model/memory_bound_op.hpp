// MemoryBoundOp: the memory-bound kernels of a Llama training step, by the names the calibration
// tables use (docs/calibration.md), and the fewest bytes each must move at a (tokens x width)
// shape. The one home of these byte formulas: the calibration tool divides a measured time by them
// to give a bandwidth, the simulator divides them by a bandwidth to price a shape it has no
// measurement for (and, without a table, by the datasheet bandwidth). Host-only, C++17 (the CUDA
// sources of kernels/ include it).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commbound::model {

// Widths as docs/calibration.md defines them: hidden for rmsnorm, residual_add and embedding;
// (heads + kv_heads) * head_dim for rope; ffn for swiglu; vocab for cross_entropy; the parameter
// count (tokens = 1) for adamw and grad_norm. Kernels: kernels/device/elementwise.hpp.
enum class MemoryBoundOp {
  rmsnorm_forward,
  rmsnorm_backward,
  rope_forward,
  rope_backward,
  swiglu_forward,
  swiglu_backward,
  residual_add,
  embedding_forward,
  embedding_backward,
  cross_entropy_forward,
  cross_entropy_backward,
  adamw,
  grad_norm,
};

// The op's name in the calibration tables ("rmsnorm_forward", ..., "grad_norm").
const char* to_string(MemoryBoundOp op);
// The op of a table name; nullopt for any other text.
std::optional<MemoryBoundOp> memory_bound_op_from_string(std::string_view name);
// Every op's table name, in enum order (the values a table's `op` key may take).
const std::vector<std::string>& memory_bound_op_names();

// Head dimension the rope byte count assumes (Llama's): the width alone does not give it.
inline constexpr std::size_t kRopeHeadDim = 128;

// The fewest bytes `op` moves at (tokens T x width W): each input read once, each output written
// once, accumulators (fp32, `+=`) read and written once; bf16 = 2 B, fp32 and int32 = 4 B.
//   rmsnorm_forward         4TW + 2W       x read, y written; weight read
//   rmsnorm_backward        6TW + 10W      dy, x read, dx written; weight read, fp32 dw accumulated
//   rope_forward/backward   4TW + 4T*128   q and k rotated in place; each token's fp32 cos/sin row
//                                          (head_dim/2 pairs of 8 B, head_dim = kRopeHeadDim)
//   swiglu_forward          6TW            gate, up read, out written
//   swiglu_backward         10TW           dout, gate, up read, dgate, dup written
//   residual_add            6TW            a, b read, out written
//   embedding_forward       4TW + 4T       ids read, one table row read and one row written a token
//   embedding_backward      10TW + 4T      ids, dout read; one fp32 table row accumulated a token
//                                          (as if the tokens' ids are distinct: an upper bound)
//   cross_entropy_forward   2TW + 12T      bf16 logits, targets read; fp32 loss and lse written
//   cross_entropy_backward  4TW + 8T       bf16 logits, targets, lse read; bf16 dlogits written
//   adamw                   30TW           fp32 param, grad, m, v read; param, m, v, bf16 copy written
//   grad_norm               4TW            fp32 gradient read (the one-value result not counted)
std::size_t memory_bound_min_bytes(MemoryBoundOp op, std::size_t tokens, std::size_t width);

}  // namespace commbound::model
