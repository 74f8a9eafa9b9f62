#include "sim/kernel_shape.hpp"

#include "kernels/memory_bound_op.hpp"

#include <cstdio>
#include <cstdlib>

namespace commbound::sim {
namespace {

constexpr double kBf16 = 2;
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

const std::vector<std::string>& memory_bound_ops() { return kernels::memory_bound_op_names(); }

// The fewest bytes the kernel moves: kernels/memory_bound_op.hpp's formulas, shared with the
// calibration tool that measured the table.
double MemoryBoundShape::bytes() const {
  const auto kind = kernels::memory_bound_op_from_string(op);
  if (!kind) {
    std::fprintf(stderr, "commbound: internal error: unknown memory-bound op \"%s\"\n", op.c_str());
    std::abort();  // broken invariant: shapes are built from memory_bound_ops() and validated tables
  }
  return static_cast<double>(
      kernels::memory_bound_min_bytes(*kind, static_cast<std::size_t>(tokens), static_cast<std::size_t>(width)));
}

}  // namespace commbound::sim
