#include "model/memory_bound_op.hpp"

#include "core/check.hpp"

namespace commbound::model {

const char* to_string(MemoryBoundOp op) {
  switch (op) {
    case MemoryBoundOp::rmsnorm_forward: return "rmsnorm_forward";
    case MemoryBoundOp::rmsnorm_backward: return "rmsnorm_backward";
    case MemoryBoundOp::rope_forward: return "rope_forward";
    case MemoryBoundOp::rope_backward: return "rope_backward";
    case MemoryBoundOp::swiglu_forward: return "swiglu_forward";
    case MemoryBoundOp::swiglu_backward: return "swiglu_backward";
    case MemoryBoundOp::residual_add: return "residual_add";
    case MemoryBoundOp::embedding_forward: return "embedding_forward";
    case MemoryBoundOp::embedding_backward: return "embedding_backward";
    case MemoryBoundOp::cross_entropy_forward: return "cross_entropy_forward";
    case MemoryBoundOp::cross_entropy_backward: return "cross_entropy_backward";
    case MemoryBoundOp::adamw: return "adamw";
    case MemoryBoundOp::grad_norm: return "grad_norm";
  }
  COMMBOUND_CHECK(false, "unknown MemoryBoundOp");
  return "";
}

const std::vector<std::string>& memory_bound_op_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (int i = 0; i <= static_cast<int>(MemoryBoundOp::grad_norm); ++i) n.emplace_back(to_string(static_cast<MemoryBoundOp>(i)));
    return n;
  }();
  return names;
}

std::optional<MemoryBoundOp> memory_bound_op_from_string(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(MemoryBoundOp::grad_norm); ++i) {
    const auto op = static_cast<MemoryBoundOp>(i);
    if (name == to_string(op)) return op;
  }
  return std::nullopt;
}

std::size_t memory_bound_min_bytes(MemoryBoundOp op, std::size_t tokens, std::size_t width) {
  const std::size_t t = tokens, w = width, tw = tokens * width;
  switch (op) {
    case MemoryBoundOp::rmsnorm_forward: return 4 * tw + 2 * w;
    case MemoryBoundOp::rmsnorm_backward: return 6 * tw + 10 * w;
    case MemoryBoundOp::rope_forward:
    case MemoryBoundOp::rope_backward: return 4 * tw + 4 * t * kRopeHeadDim;
    case MemoryBoundOp::swiglu_forward: return 6 * tw;
    case MemoryBoundOp::swiglu_backward: return 10 * tw;
    case MemoryBoundOp::residual_add: return 6 * tw;
    case MemoryBoundOp::embedding_forward: return 4 * tw + 4 * t;
    case MemoryBoundOp::embedding_backward: return 10 * tw + 4 * t;
    case MemoryBoundOp::cross_entropy_forward: return 2 * tw + 12 * t;
    case MemoryBoundOp::cross_entropy_backward: return 4 * tw + 8 * t;
    case MemoryBoundOp::adamw: return 30 * tw;
    case MemoryBoundOp::grad_norm: return 4 * tw;
  }
  COMMBOUND_CHECK(false, "unknown MemoryBoundOp");
  return 0;
}

}  // namespace commbound::model
