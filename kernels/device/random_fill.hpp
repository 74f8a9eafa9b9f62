// Pseudo-random device data for kernel tests, timing and calibration: kernels are never timed on
// zeros (a bf16 GEMM ran 13% faster on zeros than on random data on an H200 here). Values are a
// counter-based hash of (seed, index), so a buffer's contents do not depend on the launch shape.
#pragma once

#include "core/expected.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace commbound::kernels {

// bf16 values, approximately normal with standard deviation `scale` (a sum of 4 uniforms).
Status fill_random_bf16(std::uint16_t* out, std::size_t count, std::uint64_t seed, float scale,
                        cudaStream_t stream = nullptr);
// fp32 values, approximately normal (scale) or, when `non_negative`, their absolute values.
Status fill_random_f32(float* out, std::size_t count, std::uint64_t seed, float scale, bool non_negative = false,
                       cudaStream_t stream = nullptr);
// int32 values uniform in [0, bound) (token ids, targets).
Status fill_random_ids(std::int32_t* out, std::size_t count, std::uint64_t seed, std::int32_t bound,
                       cudaStream_t stream = nullptr);

}  // namespace commbound::kernels
