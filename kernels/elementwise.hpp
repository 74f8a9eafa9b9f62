// Elementwise kernels of a Llama training step (bf16 storage, fp32 math), launched on the default
// stream. Each returns the launch's error as a value. References: kernels/reference.hpp.
#pragma once

#include "kernels/reference.hpp"
#include "network/expected.hpp"

#include <cstddef>
#include <cstdint>

namespace commbound::kernels {

// One block per row; `hidden` must be a multiple of 8 (16-byte vector accesses).
Status rmsnorm_forward(const std::uint16_t* x, const std::uint16_t* w, std::size_t rows, std::size_t hidden, float eps,
                       std::uint16_t* y);

// `count` must be a multiple of 8 (16-byte vector accesses).
Status swiglu_forward(const std::uint16_t* gate, const std::uint16_t* up, std::size_t count, std::uint16_t* out);

// Fused AdamW over an fp32 shard (param, m, v updated in place) with the bf16 copy written out.
Status adamw_step(float* param, const float* grad, float* m, float* v, std::uint16_t* param_bf16, std::size_t count,
                  const AdamWParams& p);

}  // namespace commbound::kernels
