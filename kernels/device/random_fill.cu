#include "kernels/device/cuda_support.hpp"
#include "kernels/device/random_fill.hpp"

#include <cuda_bf16.h>

namespace commbound::kernels {
namespace {

constexpr int kThreads = 256;

// SplitMix64's finaliser: a well-mixed 64-bit hash of the counter.
__device__ std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Sum of four uniforms on [0, 1), centred and scaled to unit variance (variance of each is 1/12).
__device__ float normalish(std::uint64_t seed, std::size_t i) {
  const std::uint64_t h = mix(seed * 0x100000001b3ull ^ i);
  float sum = 0;
  for (int k = 0; k < 4; ++k) sum += static_cast<float>((h >> (16 * k)) & 0xffff) * (1.0f / 65536.0f);
  return (sum - 2.0f) * 1.7320508f;  // sqrt(12 / 4)
}

__global__ void fill_bf16_kernel(__nv_bfloat16* out, std::size_t count, std::uint64_t seed, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = __float2bfloat16(scale * normalish(seed, i));
  }
}

__global__ void fill_f32_kernel(float* out, std::size_t count, std::uint64_t seed, float scale, bool non_negative) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float x = scale * normalish(seed, i);
    out[i] = non_negative ? fabsf(x) : x;
  }
}

__global__ void fill_ids_kernel(std::int32_t* out, std::size_t count, std::uint64_t seed, std::int32_t bound) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = static_cast<std::int32_t>(mix(seed ^ (i * 0x2545f4914f6cdd1dull)) % static_cast<std::uint64_t>(bound));
  }
}

unsigned grid_for(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks == 0 ? 1 : (blocks < 4096 ? blocks : 4096));
}

}  // namespace

Status fill_random_bf16(std::uint16_t* out, std::size_t count, std::uint64_t seed, float scale, cudaStream_t stream) {
  fill_bf16_kernel<<<grid_for(count), kThreads, 0, stream>>>(reinterpret_cast<__nv_bfloat16*>(out), count, seed,
                                                              scale);
  return cuda_check(cudaGetLastError(), "fill_random_bf16 launch");
}

Status fill_random_f32(float* out, std::size_t count, std::uint64_t seed, float scale, bool non_negative,
                       cudaStream_t stream) {
  fill_f32_kernel<<<grid_for(count), kThreads, 0, stream>>>(out, count, seed, scale, non_negative);
  return cuda_check(cudaGetLastError(), "fill_random_f32 launch");
}

Status fill_random_ids(std::int32_t* out, std::size_t count, std::uint64_t seed, std::int32_t bound,
                       cudaStream_t stream) {
  if (bound <= 0) return Error{"fill_random_ids: bound must be positive"};
  fill_ids_kernel<<<grid_for(count), kThreads, 0, stream>>>(out, count, seed, bound);
  return cuda_check(cudaGetLastError(), "fill_random_ids launch");
}

}  // namespace commbound::kernels
