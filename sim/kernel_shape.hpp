// KernelShape: the shape of the real kernel behind a compute op, the key under which a measured
// calibration table (calibration/<gpu>.toml, docs/calibration.md) stores its time.
//
// Three kinds, as the table has three kinds of rows:
//   GemmShape        row-major C[m x n] = op(A) op(B), bf16, layout forward / dgrad / wgrad
//   AttentionShape   flash attention of one direction, q [batch, seq, heads, head_dim],
//                    k and v [batch, seq, kv_heads, head_dim]
//   MemoryBoundShape one of the memory-bound kernels by name (rmsnorm_forward, ..., grad_norm),
//                    over [tokens x width]
// Each shape knows its FLOPs and its fewest HBM bytes (each input read once, each output written
// once: the convention of docs/calibration.md), which the cost model uses to scale a measured
// neighbour to a missing shape and for the roofline of a table's [device] figures.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace commbound::sim {

// Linear layer Y = X W^T, X [T x in], W [out x in]:
//   forward  Y = X W^T      {m = T,   n = out, k = in}
//   dgrad    dX = dY W      {m = T,   n = in,  k = out}
//   wgrad    dW = dY^T X    {m = out, n = in,  k = T}
enum class GemmLayout { forward, dgrad, wgrad };
enum class Direction { forward, backward };

const char* to_string(GemmLayout l);
const char* to_string(Direction d);
std::optional<GemmLayout> parse_gemm_layout(const std::string& s);
std::optional<Direction> parse_direction(const std::string& s);

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  GemmLayout layout = GemmLayout::forward;
  auto operator<=>(const GemmShape&) const = default;
  double flops() const;  // 2 m n k
  double bytes() const;  // bf16 A, B read and C written: 2 (mk + kn + mn)
};

struct AttentionShape {
  Direction direction = Direction::forward;
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  auto operator<=>(const AttentionShape&) const = default;
  // Forward: QK^T and PV, 4 b s^2 heads d, halved when causal (the unmasked half); backward:
  // 2.5x the forward (FlashAttention-2: five matrix products to the forward's two).
  double flops() const;
  // bf16; forward reads q, k, v and writes o; backward reads q, k, v, o, dout, writes dq, dk, dv.
  double bytes() const;
};

// The memory-bound kernels of docs/calibration.md, by the table's names.
const std::vector<std::string>& memory_bound_ops();

struct MemoryBoundShape {
  std::string op;  // one of memory_bound_ops()
  std::int64_t tokens = 0, width = 0;
  auto operator<=>(const MemoryBoundShape&) const = default;
  // Fewest bytes by op (bf16 = 2, fp32 = 4 bytes, token ids int32), T = tokens, w = width, the
  // convention of docs/calibration.md (the same formulas as kernels/memory_bound_op.hpp, which the
  // calibration tool divides by; sim/ does not link kernels/):
  //   rmsnorm_forward 4Tw + 2w, rmsnorm_backward 6Tw + 10w, rope_* 4Tw + 4T x 128,
  //   swiglu_forward 6Tw, swiglu_backward 10Tw, residual_add 6Tw, embedding_forward 4Tw + 4T,
  //   embedding_backward 10Tw + 4T, cross_entropy_forward 2Tw + 12T,
  //   cross_entropy_backward 4Tw + 8T, adamw 30Tw, grad_norm 4Tw.
  double bytes() const;
};

// What a compute op runs; std::monostate for the zero-cost synchronisation points and collectives.
using KernelShape = std::variant<std::monostate, GemmShape, AttentionShape, MemoryBoundShape>;

}  // namespace commbound::sim
