#include "sim/kernel_shape.hpp"

#include <cstdio>
#include <cstdlib>

namespace commbound::sim {
namespace {

constexpr double kBf16 = 2;
constexpr double kFp32 = 4;
constexpr double kTokenId = 4;  // int32 token ids
// The head dimension the rope byte count assumes (Llama's), as kernels/memory_bound_op.hpp does:
// the width alone does not give it.
constexpr double kRopeHeadDim = 128;
// FlashAttention-2 backward does 5 matrix products to the forward's 2 (Dao 2023).
constexpr double kAttentionBackwardFlopRatio = 2.5;

}  // namespace

const char* to_string(GemmLayout l) {
  switch (l) {
    case GemmLayout::forward: return "forward";
    case GemmLayout::dgrad: return "dgrad";
    case GemmLayout::wgrad: return "wgrad";
  }
  return "?";
}

const char* to_string(Direction d) { return d == Direction::forward ? "forward" : "backward"; }

std::optional<GemmLayout> parse_gemm_layout(const std::string& s) {
  if (s == "forward") return GemmLayout::forward;
  if (s == "dgrad") return GemmLayout::dgrad;
  if (s == "wgrad") return GemmLayout::wgrad;
  return std::nullopt;
}

std::optional<Direction> parse_direction(const std::string& s) {
  if (s == "forward") return Direction::forward;
  if (s == "backward") return Direction::backward;
  return std::nullopt;
}

double GemmShape::flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }

double GemmShape::bytes() const {
  const double M = static_cast<double>(m), N = static_cast<double>(n), K = static_cast<double>(k);
  return kBf16 * (M * K + K * N + M * N);
}

double AttentionShape::flops() const {
  const double s = static_cast<double>(seq);
  const double forward = 4.0 * static_cast<double>(batch) * s * s * static_cast<double>(heads) *
                         static_cast<double>(head_dim) * (causal ? 0.5 : 1.0);
  return direction == Direction::forward ? forward : kAttentionBackwardFlopRatio * forward;
}

double AttentionShape::bytes() const {
  const double per_head = kBf16 * static_cast<double>(batch) * static_cast<double>(seq) * static_cast<double>(head_dim);
  const double q = per_head * static_cast<double>(heads);
  const double kv = per_head * static_cast<double>(kv_heads);
  // forward: q, k, v in, o out; backward: q, k, v, o, dout in, dq, dk, dv out.
  return direction == Direction::forward ? 2 * q + 2 * kv : 4 * q + 4 * kv;
}

const std::vector<std::string>& memory_bound_ops() {
  static const std::vector<std::string> ops = {
      "rmsnorm_forward",     "rmsnorm_backward",      "rope_forward",           "rope_backward", "swiglu_forward",
      "swiglu_backward",     "residual_add",          "embedding_forward",      "embedding_backward",
      "cross_entropy_forward", "cross_entropy_backward", "adamw",                "grad_norm"};
  return ops;
}

double MemoryBoundShape::bytes() const {
  const double T = static_cast<double>(tokens);
  const double w = static_cast<double>(width);
  const double Tw = T * w;
  if (op == "rmsnorm_forward") return 2 * kBf16 * Tw + kBf16 * w;
  // fp32 dweight accumulated: read and written.
  if (op == "rmsnorm_backward") return 3 * kBf16 * Tw + kBf16 * w + 2 * kFp32 * w;
  // q and k rotated in place; each token's fp32 cos/sin row (head_dim / 2 pairs of 8 B).
  if (op == "rope_forward" || op == "rope_backward") return 2 * kBf16 * Tw + 2 * kFp32 * T * kRopeHeadDim;
  if (op == "swiglu_forward") return 3 * kBf16 * Tw;
  if (op == "swiglu_backward") return 5 * kBf16 * Tw;
  if (op == "residual_add") return 3 * kBf16 * Tw;
  if (op == "embedding_forward") return 2 * kBf16 * Tw + kTokenId * T;
  if (op == "embedding_backward") return kBf16 * Tw + 2 * kFp32 * Tw + kTokenId * T;
  // bf16 logits (the LM head's output) and targets in; fp32 loss and lse out.
  if (op == "cross_entropy_forward") return kBf16 * Tw + kTokenId * T + 2 * kFp32 * T;
  // bf16 logits, targets and fp32 lse in; bf16 dlogits out.
  if (op == "cross_entropy_backward") return 2 * kBf16 * Tw + kTokenId * T + kFp32 * T;
  // AdamW on fp32: read param, grad, m, v (16 B), write param, m, v (12 B) and the bf16 copy (2 B).
  if (op == "adamw") return 30 * Tw;
  if (op == "grad_norm") return kFp32 * Tw;
  std::fprintf(stderr, "commbound: internal error: unknown memory-bound op \"%s\"\n", op.c_str());
  std::abort();  // broken invariant: shapes are built from memory_bound_ops() and validated tables
}

}  // namespace commbound::sim
