// bf16 GEMM through cuBLASLt (fp32 accumulation, heuristic algorithm choice, a workspace), in the
// row-major convention of GemmShape (kernels/host/reference.hpp): the three layouts of a linear layer.
#pragma once

#include "kernels/host/reference.hpp"
#include "core/expected.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

namespace commbound::kernels {

// A planned GEMM: descriptors and the heuristic's algorithm for one shape, reusable across runs.
class GemmPlan {
public:
  ~GemmPlan();
  GemmPlan(GemmPlan&&) noexcept;
  GemmPlan& operator=(GemmPlan&&) noexcept;

  // Plans `shape` (cuBLASLt's first heuristic result within `workspace_bytes`).
  static Expected<GemmPlan> create(const GemmShape& shape, std::size_t workspace_bytes);
  // C = op(A) op(B) on `stream`; A, B, C device pointers to bf16.
  Status run(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* c, cudaStream_t stream = nullptr) const;
  const GemmShape& shape() const;

private:
  struct State;
  explicit GemmPlan(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace commbound::kernels
