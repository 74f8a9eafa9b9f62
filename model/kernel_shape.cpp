#include "model/kernel_shape.hpp"

#include "core/check.hpp"
#include "core/enum_names.hpp"
#include "model/memory_bound_op.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace commbound::model {
namespace {

constexpr double kBf16 = 2;

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

std::optional<GemmLayout> parse_gemm_layout(std::string_view s) {
  if (s == "forward") return GemmLayout::forward;
  if (s == "dgrad") return GemmLayout::dgrad;
  if (s == "wgrad") return GemmLayout::wgrad;
  return std::nullopt;
}

std::optional<Direction> parse_direction(std::string_view s) {
  if (s == "forward") return Direction::forward;
  if (s == "backward") return Direction::backward;
  return std::nullopt;
}

std::int64_t GemmShape::token_rows() const {
  if (group.empty()) return layout == GemmLayout::wgrad ? k : m;
  std::int64_t sum = 0;
  for (std::int64_t rows : group) sum += rows;
  return sum;
}

double GemmShape::flops() const {
  const double tokens = static_cast<double>(token_rows());
  const double other = layout == GemmLayout::wgrad ? static_cast<double>(m) : static_cast<double>(k);
  return 2.0 * tokens * static_cast<double>(n) * other;
}

double GemmShape::bytes() const {
  const double operand = precision == Precision::fp8 ? 1 : kBf16;
  const auto one = [&](double M, double N, double K) { return operand * (M * K + K * N) + kBf16 * M * N; };
  const double N = static_cast<double>(n);
  if (group.empty()) return one(static_cast<double>(m), N, static_cast<double>(k));
  double sum = 0;
  for (std::int64_t rows : group) {
    const double r = static_cast<double>(rows);
    sum += layout == GemmLayout::wgrad ? one(static_cast<double>(m), N, r) : one(r, N, static_cast<double>(k));
  }
  return sum;
}

const char* to_string(Precision p) { return p == Precision::bf16 ? "bf16" : "fp8"; }

std::optional<Precision> parse_precision(std::string_view s) { return parse_named(s, {Precision::bf16, Precision::fp8}); }

double AttentionShape::pairs() const {
  const double s = static_cast<double>(seq);
  if (!causal) return s * s;
  if (window <= 0 || window >= seq) return s * s * 0.5;
  const double w = static_cast<double>(window);
  return s * w - w * w * 0.5;
}

double AttentionShape::flops() const {
  const double forward = 4.0 * static_cast<double>(batch) * pairs() * static_cast<double>(heads) * static_cast<double>(head_dim);
  return direction == Direction::forward ? forward : kAttentionBackwardFlopRatio * forward;
}

double AttentionShape::bytes() const {
  const double per_head = kBf16 * static_cast<double>(batch) * static_cast<double>(seq) * static_cast<double>(head_dim);
  const double q = per_head * static_cast<double>(heads);
  const double kv = per_head * static_cast<double>(kv_heads);
  // forward: q, k, v in, o out; backward: q, k, v, o, dout in, dq, dk, dv out.
  return direction == Direction::forward ? 2 * q + 2 * kv : 4 * q + 4 * kv;
}

const std::vector<std::string>& memory_bound_ops() { return memory_bound_op_names(); }

double MemoryBoundShape::bytes() const {
  const auto kind = memory_bound_op_from_string(op);
  COMMBOUND_CHECK(kind.has_value(), "a memory-bound shape with an unknown op name");
  return static_cast<double>(
      memory_bound_min_bytes(*kind, static_cast<std::size_t>(tokens), static_cast<std::size_t>(width)));
}

const char* to_string(ElementwiseKind k) {
  switch (k) {
    case ElementwiseKind::streaming: return "streaming";
    case ElementwiseKind::cast: return "cast";
    case ElementwiseKind::reduction: return "reduction";
    case ElementwiseKind::indexed: return "indexed";
    case ElementwiseKind::column_reduction: return "column_reduction";
  }
  return "streaming";
}

bool is_memory_bound(const KernelShape& shape) {
  return std::holds_alternative<MemoryBoundShape>(shape) || std::holds_alternative<ElementwiseShape>(shape);
}

double flops(const KernelShape& shape) {
  if (const auto* g = std::get_if<GemmShape>(&shape)) return g->flops();
  if (const auto* a = std::get_if<AttentionShape>(&shape)) return a->flops();
  return 0;
}

double bytes(const KernelShape& shape) {
  if (const auto* g = std::get_if<GemmShape>(&shape)) return g->bytes();
  if (const auto* a = std::get_if<AttentionShape>(&shape)) return a->bytes();
  if (const auto* m = std::get_if<MemoryBoundShape>(&shape)) return m->bytes();
  if (const auto* e = std::get_if<ElementwiseShape>(&shape)) return e->bytes;
  return 0;
}

std::string describe(const KernelShape& shape) {
  char buf[160];
  if (const auto* g = std::get_if<GemmShape>(&shape)) {
    const int n = std::snprintf(buf, sizeof buf, "gemm %s %lldx%lldx%lld%s", to_string(g->layout),
                                static_cast<long long>(g->m), static_cast<long long>(g->n),
                                static_cast<long long>(g->k), g->precision == Precision::fp8 ? " fp8" : "");
    if (!g->group.empty()) {
      std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n), " grouped x%zu", g->group.size());
    }
  } else if (const auto* a = std::get_if<AttentionShape>(&shape)) {
    const int n = std::snprintf(buf, sizeof buf, "attention %s b%lld h%lld/%lld s%lld d%lld%s", to_string(a->direction),
                                static_cast<long long>(a->batch), static_cast<long long>(a->heads),
                                static_cast<long long>(a->kv_heads), static_cast<long long>(a->seq),
                                static_cast<long long>(a->head_dim), a->causal ? "" : " full");
    if (a->causal && a->window > 0) {
      std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n), " window %lld", static_cast<long long>(a->window));
    }
  } else if (const auto* m = std::get_if<MemoryBoundShape>(&shape)) {
    std::snprintf(buf, sizeof buf, "%s %lldx%lld", m->op.c_str(), static_cast<long long>(m->tokens),
                  static_cast<long long>(m->width));
  } else if (const auto* e = std::get_if<ElementwiseShape>(&shape)) {
    const int n = std::snprintf(buf, sizeof buf, "%s %s %lld elements %.1f MB", to_string(e->kind), e->op.c_str(),
                                static_cast<long long>(e->elements), e->bytes / 1e6);
    std::string out(buf, static_cast<std::size_t>(std::max(0, n)));
    if (e->width > 0) out += ", width " + std::to_string(e->width);
    if (e->fresh_bytes > 0) {
      char fresh[48];
      std::snprintf(fresh, sizeof fresh, ", %.1f MB just written", e->fresh_bytes / 1e6);
      out += fresh;
    }
    return out;
  } else {
    return "";
  }
  return buf;
}

}  // namespace commbound::model
