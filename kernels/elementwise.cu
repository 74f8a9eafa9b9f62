#include "kernels/cuda_support.hpp"
#include "kernels/elementwise.hpp"

#include <cuda_bf16.h>

namespace commbound::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kVector = 8;  // bf16 values per 16-byte access

// 8 bf16 values moved as one 16-byte word.
struct alignas(16) Vec8 {
  __nv_bfloat16 v[kVector];
};

__global__ void rmsnorm_kernel(const Vec8* x, const Vec8* w, int hidden_vec, float hidden, float eps, Vec8* y) {
  const Vec8* row = x + static_cast<std::size_t>(blockIdx.x) * hidden_vec;
  float sum_sq = 0;
  for (int i = threadIdx.x; i < hidden_vec; i += blockDim.x) {
    const Vec8 a = row[i];
    for (int k = 0; k < kVector; ++k) {
      const float f = __bfloat162float(a.v[k]);
      sum_sq += f * f;
    }
  }
  __shared__ float partial[kThreads];
  partial[threadIdx.x] = sum_sq;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv = rsqrtf(partial[0] / hidden + eps);
  Vec8* out = y + static_cast<std::size_t>(blockIdx.x) * hidden_vec;
  for (int i = threadIdx.x; i < hidden_vec; i += blockDim.x) {
    const Vec8 a = row[i];
    const Vec8 g = w[i];
    Vec8 r;
    for (int k = 0; k < kVector; ++k) {
      r.v[k] = __float2bfloat16(__bfloat162float(a.v[k]) * inv * __bfloat162float(g.v[k]));
    }
    out[i] = r;
  }
}

__global__ void swiglu_kernel(const Vec8* gate, const Vec8* up, std::size_t count_vec, Vec8* out) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count_vec;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const Vec8 g = gate[i];
    const Vec8 u = up[i];
    Vec8 r;
    for (int k = 0; k < kVector; ++k) {
      const float gf = __bfloat162float(g.v[k]);
      r.v[k] = __float2bfloat16(gf / (1.0f + __expf(-gf)) * __bfloat162float(u.v[k]));
    }
    out[i] = r;
  }
}

__global__ void adamw_kernel(float4* param, const float4* grad, float4* m, float4* v, __nv_bfloat162* param_bf16,
                             std::size_t count4, AdamWParams p, float c1, float c2) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float4 pp = param[i];
    const float4 gg = grad[i];
    float4 mm = m[i];
    float4 vv = v[i];
    float* pf = &pp.x;
    const float* gf = &gg.x;
    float* mf = &mm.x;
    float* vf = &vv.x;
    for (int k = 0; k < 4; ++k) {
      mf[k] = p.beta1 * mf[k] + (1 - p.beta1) * gf[k];
      vf[k] = p.beta2 * vf[k] + (1 - p.beta2) * gf[k] * gf[k];
      const float update = (mf[k] / c1) / (sqrtf(vf[k] / c2) + p.eps);
      pf[k] = pf[k] * (1 - p.lr * p.weight_decay) - p.lr * update;
    }
    param[i] = pp;
    m[i] = mm;
    v[i] = vv;
    param_bf16[2 * i] = __floats2bfloat162_rn(pp.x, pp.y);
    param_bf16[2 * i + 1] = __floats2bfloat162_rn(pp.z, pp.w);
  }
}

unsigned grid_for(std::size_t work_items) {
  const std::size_t blocks = (work_items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks == 0 ? 1 : blocks) : 65535 * 16);
}

}  // namespace

Status rmsnorm_forward(const std::uint16_t* x, const std::uint16_t* w, std::size_t rows, std::size_t hidden, float eps,
                       std::uint16_t* y) {
  if (hidden % kVector != 0) return Error{"rmsnorm_forward: hidden must be a multiple of 8"};
  rmsnorm_kernel<<<static_cast<unsigned>(rows), kThreads>>>(reinterpret_cast<const Vec8*>(x),
                                                            reinterpret_cast<const Vec8*>(w),
                                                            static_cast<int>(hidden / kVector),
                                                            static_cast<float>(hidden), eps, reinterpret_cast<Vec8*>(y));
  return cuda_check(cudaGetLastError(), "rmsnorm_forward launch");
}

Status swiglu_forward(const std::uint16_t* gate, const std::uint16_t* up, std::size_t count, std::uint16_t* out) {
  if (count % kVector != 0) return Error{"swiglu_forward: count must be a multiple of 8"};
  const std::size_t vecs = count / kVector;
  swiglu_kernel<<<grid_for(vecs), kThreads>>>(reinterpret_cast<const Vec8*>(gate), reinterpret_cast<const Vec8*>(up),
                                               vecs, reinterpret_cast<Vec8*>(out));
  return cuda_check(cudaGetLastError(), "swiglu_forward launch");
}

Status adamw_step(float* param, const float* grad, float* m, float* v, std::uint16_t* param_bf16, std::size_t count,
                  const AdamWParams& p) {
  if (count % 4 != 0) return Error{"adamw_step: count must be a multiple of 4"};
  const float c1 = 1.0f - powf(p.beta1, static_cast<float>(p.step));
  const float c2 = 1.0f - powf(p.beta2, static_cast<float>(p.step));
  const std::size_t vecs = count / 4;
  adamw_kernel<<<grid_for(vecs), kThreads>>>(reinterpret_cast<float4*>(param), reinterpret_cast<const float4*>(grad),
                                              reinterpret_cast<float4*>(m), reinterpret_cast<float4*>(v),
                                              reinterpret_cast<__nv_bfloat162*>(param_bf16), vecs, p, c1, c2);
  return cuda_check(cudaGetLastError(), "adamw_step launch");
}

}  // namespace commbound::kernels
