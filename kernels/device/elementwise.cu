// The memory-bound kernels of a Llama training step. Every global access is a 16-byte vector
// (8 bf16 or 4 fp32 values) by consecutive threads, so each warp moves whole 512-byte runs; the
// kernels are sized to keep enough loads in flight to cover DRAM latency on every SM:
//   - row kernels (RMSNorm): a block keeps its row in registers between the reduction and the
//     write (x read once), up to 8 vectors a thread; the grid is one resident wave that strides
//     over rows, so w (and in the backward the dw partial sums) stay in registers across rows;
//   - elementwise kernels: one vector per thread and input over a grid-stride loop;
//   - per-token kernels (embedding, cross-entropy, RoPE): a block per token, each thread loading
//     kBatch vectors before using any of them.
// Reductions are warp shuffles plus one shared-memory step per block, never a serial loop.
#include "kernels/device/cuda_support.hpp"
#include "kernels/device/elementwise.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <type_traits>

namespace commbound::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kVector = 8;        // bf16 values per 16-byte access
constexpr int kBatch = 4;         // 16-byte loads a thread of a per-token kernel issues at once
constexpr int kMaxRowVectors = 8; // 16-byte vectors of a row a thread of a row kernel holds
constexpr float kLog2e = 1.4426950408889634f;

// 8 bf16 values (one 16-byte word) to fp32 and back (round to nearest even).
__device__ __forceinline__ void unpack(const uint4& u, float (&f)[kVector]) {
  const auto* h = reinterpret_cast<const __nv_bfloat162*>(&u);
  for (int k = 0; k < kVector / 2; ++k) {
    const float2 t = __bfloat1622float2(h[k]);
    f[2 * k] = t.x;
    f[2 * k + 1] = t.y;
  }
}

__device__ __forceinline__ uint4 pack(const float (&f)[kVector]) {
  uint4 u;
  auto* h = reinterpret_cast<__nv_bfloat162*>(&u);
  for (int k = 0; k < kVector / 2; ++k) h[k] = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
  return u;
}

// dst[0..8) += f with two 16-byte atomics on sm_90 (dst 16-byte aligned), eight before.
__device__ __forceinline__ void atomic_add8(float* dst, const float (&f)[kVector]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4*>(dst), make_float4(f[0], f[1], f[2], f[3]));
  atomicAdd(reinterpret_cast<float4*>(dst) + 1, make_float4(f[4], f[5], f[6], f[7]));
#else
  for (int k = 0; k < kVector; ++k) atomicAdd(dst + k, f[k]);
#endif
}

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sums each of v[0..N) over the block (blockDim.x a multiple of 32); every thread gets the sums.
// All threads of the block must call it.
template <class T, int N>
__device__ void block_sum(T (&v)[N]) {
  __shared__ T warp_sums[N][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int n = 0; n < N; ++n) v[n] = warp_sum(v[n]);
  if (lane == 0) {
    for (int n = 0; n < N; ++n) warp_sums[n][warp] = v[n];
  }
  __syncthreads();
  for (int n = 0; n < N; ++n) v[n] = warp_sum(lane < warps ? warp_sums[n][lane] : T(0));
  __syncthreads();  // warp_sums may be reused by the next call
}

// ---- RMSNorm ----------------------------------------------------------------------------------

// Thread t of a row kernel holds vectors t, t + blockDim.x, ... (VPT of them) of each row.
template <int VPT>
__device__ __forceinline__ void load_row(const uint4* row, int hidden_vec, uint4 (&v)[VPT]) {
  for (int k = 0; k < VPT; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    v[k] = i < hidden_vec ? row[i] : make_uint4(0, 0, 0, 0);
  }
}

template <int VPT>
__global__ void __launch_bounds__(kThreads) rmsnorm_forward_kernel(const uint4* x, const uint4* w, int rows,
                                                                    int hidden_vec, float hidden, float eps, uint4* y) {
  uint4 wv[VPT];
  load_row(w, hidden_vec, wv);
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::size_t offset = static_cast<std::size_t>(r) * hidden_vec;
    uint4 xv[VPT];
    load_row(x + offset, hidden_vec, xv);
    float sum_sq[1] = {0};
    for (int k = 0; k < VPT; ++k) {
      float f[kVector];
      unpack(xv[k], f);
      for (int j = 0; j < kVector; ++j) sum_sq[0] += f[j] * f[j];
    }
    block_sum(sum_sq);
    const float inv = rsqrtf(sum_sq[0] / hidden + eps);
    for (int k = 0; k < VPT; ++k) {
      const int i = threadIdx.x + k * blockDim.x;
      if (i >= hidden_vec) break;
      float f[kVector], g[kVector];
      unpack(xv[k], f);
      unpack(wv[k], g);
      for (int j = 0; j < kVector; ++j) f[j] = f[j] * inv * g[j];
      y[offset + i] = pack(f);
    }
  }
}

// Registers capped so that several blocks share an SM (one loads while another reduces): three
// up to 2 vectors a thread (hidden 4096), two at 4 (hidden 8192); 8 vectors hold too many for two.
template <int VPT>
__global__ void __launch_bounds__(kThreads, VPT <= 2 ? 3 : (VPT == 4 ? 2 : 1)) rmsnorm_backward_kernel(const uint4* dy, const uint4* x, const uint4* w,
                                                                     int rows, int hidden_vec, float hidden, float eps,
                                                                     uint4* dx, float* dw_accum) {
  uint4 wv[VPT];
  load_row(w, hidden_vec, wv);
  float dw[VPT][kVector] = {};
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::size_t offset = static_cast<std::size_t>(r) * hidden_vec;
    uint4 xv[VPT], gv[VPT];
    load_row(x + offset, hidden_vec, xv);
    load_row(dy + offset, hidden_vec, gv);
    float sums[2] = {0, 0};  // sum x^2, sum dy w x
    for (int k = 0; k < VPT; ++k) {
      float xf[kVector], gf[kVector], wf[kVector];
      unpack(xv[k], xf);
      unpack(gv[k], gf);
      unpack(wv[k], wf);
      for (int j = 0; j < kVector; ++j) {
        sums[0] += xf[j] * xf[j];
        sums[1] += gf[j] * wf[j] * xf[j];
      }
    }
    block_sum(sums);
    const float inv = rsqrtf(sums[0] / hidden + eps);
    const float x_coeff = inv * inv * inv * (sums[1] / hidden);
    for (int k = 0; k < VPT; ++k) {
      const int i = threadIdx.x + k * blockDim.x;
      if (i >= hidden_vec) break;
      float xf[kVector], gf[kVector], wf[kVector], out[kVector];
      unpack(xv[k], xf);
      unpack(gv[k], gf);
      unpack(wv[k], wf);
      for (int j = 0; j < kVector; ++j) {
        out[j] = inv * (gf[j] * wf[j]) - xf[j] * x_coeff;
        dw[k][j] += gf[j] * xf[j] * inv;
      }
      dx[offset + i] = pack(out);
    }
  }
  for (int k = 0; k < VPT; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    if (i < hidden_vec) atomic_add8(dw_accum + static_cast<std::size_t>(i) * kVector, dw[k]);
  }
}

// A row kernel's shape: VPT vectors a thread, threads a multiple of 32, at most kThreads.
struct RowShape {
  int vectors_per_thread = 1;
  int threads = 32;
};

Expected<RowShape> row_shape(std::size_t hidden, const char* what) {
  const std::size_t max_hidden = std::size_t{kMaxRowVectors} * kThreads * kVector;
  if (hidden == 0 || hidden % kVector != 0 || hidden > max_hidden) {
    return Error{std::string(what) + ": hidden = " + std::to_string(hidden) + " must be a multiple of 8 in [8, " +
                 std::to_string(max_hidden) + "]"};
  }
  const int hidden_vec = static_cast<int>(hidden / kVector);
  RowShape s;
  while ((hidden_vec + s.vectors_per_thread - 1) / s.vectors_per_thread > kThreads) s.vectors_per_thread *= 2;
  const int threads = (hidden_vec + s.vectors_per_thread - 1) / s.vectors_per_thread;
  s.threads = (threads + 31) / 32 * 32;
  return s;
}

// Calls f(std::integral_constant<int, V>) with V = vectors_per_thread (1, 2, 4 or 8).
template <class F>
Status with_vectors_per_thread(int vectors_per_thread, F f) {
  switch (vectors_per_thread) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 4: return f(std::integral_constant<int, 4>{});
    default: return f(std::integral_constant<int, 8>{});
  }
}

// Blocks of `threads` that `kernel` can keep resident on the whole device at once, at most `work`.
template <class Kernel>
Expected<unsigned> resident_grid(Kernel kernel, int threads, std::size_t work) {
  int device = 0, sms = 0, per_sm = 0;
  if (Status s = cuda_check(cudaGetDevice(&device), "cudaGetDevice"); !s) return s.error();
  if (Status s = cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count"); !s) {
    return s.error();
  }
  if (Status s = cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0), "occupancy");
      !s) {
    return s.error();
  }
  const std::size_t resident = static_cast<std::size_t>(sms) * static_cast<std::size_t>(std::max(per_sm, 1));
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(resident, work)));
}

Status check_rows(std::size_t rows, const char* what) {
  if (rows > static_cast<std::size_t>(INT_MAX)) return Error{std::string(what) + ": more than 2^31 - 1 rows"};
  return Ok{};
}

// ---- RoPE -------------------------------------------------------------------------------------

// A block per token: thread (head h, chunk c) rotates the 8 pairs (x_i, x_{i + d/2}), i in
// [8c, 8c + 8), of heads h, h + heads_per_pass, ... of q then k. The 8 (cos, sin) pairs of its
// chunk are 64 bytes of the token's table row, read once and kept for all its heads.
__global__ void __launch_bounds__(kThreads) rope_kernel(uint4* q, uint4* k, const float4* cos_sin, int seq, int heads,
                                                        int kv_heads, int chunks, float sign) {
  const int token = blockIdx.x;
  const int chunk = threadIdx.x % chunks;
  const int heads_per_pass = blockDim.x / chunks;
  const int head_vec = 2 * chunks;  // 16-byte vectors a head
  const float4* table = cos_sin + (static_cast<std::size_t>(token % seq) * chunks + chunk) * (kVector / 2);
  float c[kVector], s[kVector];
  for (int j = 0; j < kVector / 2; ++j) {
    const float4 t = table[j];
    c[2 * j] = t.x;
    s[2 * j] = sign * t.y;
    c[2 * j + 1] = t.z;
    s[2 * j + 1] = sign * t.w;
  }
  for (int h = threadIdx.x / chunks; h < heads + kv_heads; h += heads_per_pass) {
    uint4* head = h < heads ? q + (static_cast<std::size_t>(token) * heads + h) * head_vec
                            : k + (static_cast<std::size_t>(token) * kv_heads + (h - heads)) * head_vec;
    float lo[kVector], hi[kVector], out_lo[kVector], out_hi[kVector];
    unpack(head[chunk], lo);
    unpack(head[chunk + chunks], hi);
    for (int j = 0; j < kVector; ++j) {
      out_lo[j] = lo[j] * c[j] - hi[j] * s[j];
      out_hi[j] = hi[j] * c[j] + lo[j] * s[j];
    }
    head[chunk] = pack(out_lo);
    head[chunk + chunks] = pack(out_hi);
  }
}

Status rope(std::uint16_t* q, std::uint16_t* k, const float* cos_sin, const RopeShape& s, float sign,
            cudaStream_t stream, const char* what) {
  if (s.head_dim < 16 || s.head_dim % 16 != 0 || s.head_dim > 4096) {
    return Error{std::string(what) + ": head_dim = " + std::to_string(s.head_dim) +
                 " must be a multiple of 16 in [16, 4096]"};
  }
  if (s.seq == 0 || s.heads + s.kv_heads == 0 || s.tokens > static_cast<std::size_t>(INT_MAX) ||
      s.seq > static_cast<std::size_t>(INT_MAX) || s.heads + s.kv_heads > static_cast<std::size_t>(INT_MAX)) {
    return Error{std::string(what) + ": need seq >= 1, heads + kv_heads >= 1, tokens < 2^31"};
  }
  if (s.tokens == 0) return Ok{};
  const int chunks = static_cast<int>(s.head_dim / 16);
  const int total_heads = static_cast<int>(s.heads + s.kv_heads);
  const int threads = chunks * std::min(total_heads, std::max(1, kThreads / chunks));
  rope_kernel<<<static_cast<unsigned>(s.tokens), threads, 0, stream>>>(
      reinterpret_cast<uint4*>(q), reinterpret_cast<uint4*>(k), reinterpret_cast<const float4*>(cos_sin),
      static_cast<int>(s.seq), static_cast<int>(s.heads), static_cast<int>(s.kv_heads), chunks, sign);
  return cuda_check(cudaGetLastError(), what);
}

// ---- Elementwise ------------------------------------------------------------------------------

__global__ void swiglu_forward_kernel(const uint4* gate, const uint4* up, std::size_t count_vec, uint4* out) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count_vec;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float g[kVector], u[kVector];
    unpack(gate[i], g);
    unpack(up[i], u);
    for (int j = 0; j < kVector; ++j) g[j] = g[j] / (1.0f + __expf(-g[j])) * u[j];
    out[i] = pack(g);
  }
}

__global__ void swiglu_backward_kernel(const uint4* dout, const uint4* gate, const uint4* up, std::size_t count_vec,
                                       uint4* dgate, uint4* dup) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count_vec;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float d[kVector], g[kVector], u[kVector], dg[kVector], du[kVector];
    unpack(dout[i], d);
    unpack(gate[i], g);
    unpack(up[i], u);
    for (int j = 0; j < kVector; ++j) {
      const float sig = 1.0f / (1.0f + __expf(-g[j]));
      dg[j] = d[j] * u[j] * (sig * (1.0f + g[j] * (1.0f - sig)));
      du[j] = d[j] * (g[j] * sig);
    }
    dgate[i] = pack(dg);
    dup[i] = pack(du);
  }
}

__global__ void residual_add_kernel(const uint4* a, const uint4* b, std::size_t count_vec, uint4* out) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count_vec;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float x[kVector], y[kVector];
    unpack(a[i], x);
    unpack(b[i], y);
    for (int j = 0; j < kVector; ++j) x[j] += y[j];
    out[i] = pack(x);
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

// Blocks of kThreads for one work item a thread, capped (the kernels stride over the rest).
unsigned grid_for(std::size_t work_items) {
  const std::size_t blocks = (work_items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks == 0 ? 1 : blocks) : 65535 * 16);
}

// ---- Embedding --------------------------------------------------------------------------------

// Threads of a per-token block: enough for kBatch vectors each over a row of `row_vec` vectors.
int per_token_threads(std::size_t row_vec) {
  const std::size_t threads = (row_vec + kBatch - 1) / kBatch;
  return static_cast<int>(std::min<std::size_t>(kThreads, (threads + 31) / 32 * 32));
}

__global__ void __launch_bounds__(kThreads) embedding_forward_kernel(const int* __restrict__ ids,
                                                                     const uint4* __restrict__ table, int vocab,
                                                                     int hidden_vec, uint4* __restrict__ out) {
  const int id = ids[blockIdx.x];
  const bool valid = id >= 0 && id < vocab;
  const uint4* src = table + static_cast<std::size_t>(valid ? id : 0) * hidden_vec;
  uint4* dst = out + static_cast<std::size_t>(blockIdx.x) * hidden_vec;
  const uint4 nan = make_uint4(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu);
  for (int base = threadIdx.x; base < hidden_vec; base += kBatch * blockDim.x) {
    uint4 v[kBatch];
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * blockDim.x;
      if (i < hidden_vec) v[u] = valid ? src[i] : nan;
    }
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * blockDim.x;
      if (i < hidden_vec) dst[i] = v[u];
    }
  }
}

__global__ void __launch_bounds__(kThreads) embedding_backward_kernel(const uint4* __restrict__ dout,
                                                                      const int* __restrict__ ids, int vocab,
                                                                      int hidden_vec, float* dtable_accum) {
  const int id = ids[blockIdx.x];
  if (id < 0 || id >= vocab) return;
  const uint4* src = dout + static_cast<std::size_t>(blockIdx.x) * hidden_vec;
  float* dst = dtable_accum + static_cast<std::size_t>(id) * hidden_vec * kVector;
  for (int base = threadIdx.x; base < hidden_vec; base += kBatch * blockDim.x) {
    uint4 v[kBatch];
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * blockDim.x;
      if (i < hidden_vec) v[u] = src[i];
    }
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * blockDim.x;
      if (i >= hidden_vec) break;
      float f[kVector];
      unpack(v[u], f);
      atomic_add8(dst + static_cast<std::size_t>(i) * kVector, f);
    }
  }
}

Status check_embedding(std::size_t tokens, std::size_t vocab, std::size_t hidden, const char* what) {
  if (hidden == 0 || hidden % kVector != 0 || tokens > static_cast<std::size_t>(INT_MAX) ||
      vocab > static_cast<std::size_t>(INT_MAX) || hidden / kVector > static_cast<std::size_t>(INT_MAX)) {
    return Error{std::string(what) + ": hidden must be a positive multiple of 8, tokens and vocab < 2^31"};
  }
  return Ok{};
}

// ---- Cross-entropy ----------------------------------------------------------------------------

// (m, s) <- the pair of m' = max(m, m2) and s e^(m - m') + s2 e^(m2 - m'): running sums of
// exp(x - m) merged. An empty side is (-inf, 0).
__device__ __forceinline__ void merge_lse(float& m, float& s, float m2, float s2) {
  const float top = fmaxf(m, m2);
  if (top == -INFINITY) return;
  s = s * exp2f((m - top) * kLog2e) + s2 * exp2f((m2 - top) * kLog2e);
  m = top;
}

__global__ void __launch_bounds__(kThreads) cross_entropy_forward_kernel(const uint4* logits, const int* targets,
                                                                         int vocab, float* loss, float* lse) {
  const int vocab_vec = vocab / kVector;
  const uint4* row = logits + static_cast<std::size_t>(blockIdx.x) * vocab_vec;
  float m = -INFINITY, s = 0;
  for (int base = threadIdx.x; base < vocab_vec; base += kBatch * blockDim.x) {
    float f[kBatch][kVector];
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * blockDim.x;
      if (i < vocab_vec) {
        unpack(row[i], f[u]);
      } else {
        for (int j = 0; j < kVector; ++j) f[u][j] = -INFINITY;
      }
    }
    float top = m;
    for (int u = 0; u < kBatch; ++u) {
      for (int j = 0; j < kVector; ++j) top = fmaxf(top, f[u][j]);
    }
    if (top == -INFINITY) continue;
    const float top_log2 = top * kLog2e;
    float add = 0;
    for (int u = 0; u < kBatch; ++u) {
      for (int j = 0; j < kVector; ++j) add += exp2f(fmaf(f[u][j], kLog2e, -top_log2));
    }
    s = s * exp2f(fmaf(m, kLog2e, -top_log2)) + add;
    m = top;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    merge_lse(m, s, __shfl_xor_sync(0xffffffffu, m, offset), __shfl_xor_sync(0xffffffffu, s, offset));
  }
  __shared__ float warp_m[32], warp_s[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    warp_m[warp] = m;
    warp_s[warp] = s;
  }
  __syncthreads();
  if (warp != 0) return;
  const bool has = lane < static_cast<int>(blockDim.x / 32);
  m = has ? warp_m[lane] : -INFINITY;
  s = has ? warp_s[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) {
    merge_lse(m, s, __shfl_xor_sync(0xffffffffu, m, offset), __shfl_xor_sync(0xffffffffu, s, offset));
  }
  if (lane != 0) return;
  const float l = m + logf(s);
  lse[blockIdx.x] = l;
  const int target = targets[blockIdx.x];
  const auto* raw = reinterpret_cast<const __nv_bfloat16*>(logits);
  loss[blockIdx.x] = target >= 0 && target < vocab
                         ? l - __bfloat162float(raw[static_cast<std::size_t>(blockIdx.x) * vocab + target])
                         : 0.0f;
}

// In place is safe: a thread reads each vector of its batch before writing any.
__global__ void __launch_bounds__(kThreads) cross_entropy_backward_kernel(const uint4* logits, const int* targets,
                                                                          const float* lse, int vocab,
                                                                          float grad_scale, uint4* dlogits) {
  const int vocab_vec = vocab / kVector;
  const std::size_t offset = static_cast<std::size_t>(blockIdx.x) * vocab_vec;
  const int target = targets[blockIdx.x];
  const bool counted = target >= 0 && target < vocab;
  const float lse_log2 = lse[blockIdx.x] * kLog2e;
  for (int base = threadIdx.x; base < vocab_vec; base += kBatch * blockDim.x) {
    uint4 v[kBatch];
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * blockDim.x;
      if (counted && i < vocab_vec) v[u] = logits[offset + i];
    }
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * blockDim.x;
      if (i >= vocab_vec) break;
      float f[kVector];
      if (counted) {
        unpack(v[u], f);
        for (int j = 0; j < kVector; ++j) {
          const float p = exp2f(fmaf(f[j], kLog2e, -lse_log2));
          f[j] = (p - (i * kVector + j == target ? 1.0f : 0.0f)) * grad_scale;
        }
      } else {
        for (int j = 0; j < kVector; ++j) f[j] = 0.0f;
      }
      dlogits[offset + i] = pack(f);
    }
  }
}

Status check_cross_entropy(std::size_t tokens, std::size_t vocab, const char* what) {
  if (vocab == 0 || vocab % kVector != 0 || vocab > static_cast<std::size_t>(INT_MAX) ||
      tokens > static_cast<std::size_t>(INT_MAX)) {
    return Error{std::string(what) + ": vocab = " + std::to_string(vocab) +
                 " must be a positive multiple of 8 below 2^31, tokens below 2^31"};
  }
  return Ok{};
}

// ---- Gradient norm ----------------------------------------------------------------------------

__device__ __forceinline__ double sum_sq(const float4& v, double acc) {
  acc = fma(static_cast<double>(v.x), static_cast<double>(v.x), acc);
  acc = fma(static_cast<double>(v.y), static_cast<double>(v.y), acc);
  acc = fma(static_cast<double>(v.z), static_cast<double>(v.z), acc);
  return fma(static_cast<double>(v.w), static_cast<double>(v.w), acc);
}

// partials[block] = the block's sum of squares over a grid-stride walk, kBatch loads in flight.
__global__ void __launch_bounds__(kThreads) sum_squares_kernel(const float4* grad, std::size_t count4,
                                                               double* partials) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  double acc[1] = {0};
  for (; i + (kBatch - 1) * stride < count4; i += kBatch * stride) {
    float4 v[kBatch];
    for (int u = 0; u < kBatch; ++u) v[u] = grad[i + u * stride];
    for (int u = 0; u < kBatch; ++u) acc[0] = sum_sq(v[u], acc[0]);
  }
  for (; i < count4; i += stride) acc[0] = sum_sq(grad[i], acc[0]);
  block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc[0];
}

__global__ void __launch_bounds__(kThreads) sum_partials_kernel(const double* partials, int count, double* sum_sq) {
  double acc[1] = {0};
  for (int i = threadIdx.x; i < count; i += blockDim.x) acc[0] += partials[i];
  block_sum(acc);
  if (threadIdx.x == 0) *sum_sq = acc[0];
}

}  // namespace

Status rmsnorm_forward(const std::uint16_t* x, const std::uint16_t* w, std::size_t rows, std::size_t hidden, float eps,
                       std::uint16_t* y, cudaStream_t stream) {
  auto shape = row_shape(hidden, "rmsnorm_forward");
  if (!shape) return shape.error();
  if (Status s = check_rows(rows, "rmsnorm_forward"); !s) return s;
  if (rows == 0) return Ok{};
  return with_vectors_per_thread(shape->vectors_per_thread, [&](auto vpt) -> Status {
    const auto kernel = rmsnorm_forward_kernel<decltype(vpt)::value>;
    auto grid = resident_grid(kernel, shape->threads, rows);
    if (!grid) return grid.error();
    kernel<<<*grid, shape->threads, 0, stream>>>(reinterpret_cast<const uint4*>(x), reinterpret_cast<const uint4*>(w),
                                                 static_cast<int>(rows), static_cast<int>(hidden / kVector),
                                                 static_cast<float>(hidden), eps, reinterpret_cast<uint4*>(y));
    return cuda_check(cudaGetLastError(), "rmsnorm_forward launch");
  });
}

Status rmsnorm_backward(const std::uint16_t* dy, const std::uint16_t* x, const std::uint16_t* w, std::size_t rows,
                        std::size_t hidden, float eps, std::uint16_t* dx, float* dw_accum, cudaStream_t stream) {
  auto shape = row_shape(hidden, "rmsnorm_backward");
  if (!shape) return shape.error();
  if (Status s = check_rows(rows, "rmsnorm_backward"); !s) return s;
  if (rows == 0) return Ok{};
  return with_vectors_per_thread(shape->vectors_per_thread, [&](auto vpt) -> Status {
    const auto kernel = rmsnorm_backward_kernel<decltype(vpt)::value>;
    auto grid = resident_grid(kernel, shape->threads, rows);
    if (!grid) return grid.error();
    kernel<<<*grid, shape->threads, 0, stream>>>(
        reinterpret_cast<const uint4*>(dy), reinterpret_cast<const uint4*>(x), reinterpret_cast<const uint4*>(w),
        static_cast<int>(rows), static_cast<int>(hidden / kVector), static_cast<float>(hidden), eps,
        reinterpret_cast<uint4*>(dx), dw_accum);
    return cuda_check(cudaGetLastError(), "rmsnorm_backward launch");
  });
}

Status rope_forward(std::uint16_t* q, std::uint16_t* k, const float* cos_sin, const RopeShape& s,
                    cudaStream_t stream) {
  return rope(q, k, cos_sin, s, 1.0f, stream, "rope_forward");
}

Status rope_backward(std::uint16_t* dq, std::uint16_t* dk, const float* cos_sin, const RopeShape& s,
                     cudaStream_t stream) {
  return rope(dq, dk, cos_sin, s, -1.0f, stream, "rope_backward");
}

Status swiglu_forward(const std::uint16_t* gate, const std::uint16_t* up, std::size_t count, std::uint16_t* out,
                      cudaStream_t stream) {
  if (count % kVector != 0) return Error{"swiglu_forward: count must be a multiple of 8"};
  const std::size_t vecs = count / kVector;
  swiglu_forward_kernel<<<grid_for(vecs), kThreads, 0, stream>>>(
      reinterpret_cast<const uint4*>(gate), reinterpret_cast<const uint4*>(up), vecs, reinterpret_cast<uint4*>(out));
  return cuda_check(cudaGetLastError(), "swiglu_forward launch");
}

Status swiglu_backward(const std::uint16_t* dout, const std::uint16_t* gate, const std::uint16_t* up,
                       std::size_t count, std::uint16_t* dgate, std::uint16_t* dup, cudaStream_t stream) {
  if (count % kVector != 0) return Error{"swiglu_backward: count must be a multiple of 8"};
  const std::size_t vecs = count / kVector;
  swiglu_backward_kernel<<<grid_for(vecs), kThreads, 0, stream>>>(
      reinterpret_cast<const uint4*>(dout), reinterpret_cast<const uint4*>(gate), reinterpret_cast<const uint4*>(up),
      vecs, reinterpret_cast<uint4*>(dgate), reinterpret_cast<uint4*>(dup));
  return cuda_check(cudaGetLastError(), "swiglu_backward launch");
}

Status residual_add(const std::uint16_t* a, const std::uint16_t* b, std::size_t count, std::uint16_t* out,
                    cudaStream_t stream) {
  if (count % kVector != 0) return Error{"residual_add: count must be a multiple of 8"};
  const std::size_t vecs = count / kVector;
  residual_add_kernel<<<grid_for(vecs), kThreads, 0, stream>>>(
      reinterpret_cast<const uint4*>(a), reinterpret_cast<const uint4*>(b), vecs, reinterpret_cast<uint4*>(out));
  return cuda_check(cudaGetLastError(), "residual_add launch");
}

Status embedding_forward(const std::int32_t* ids, const std::uint16_t* table, std::size_t tokens, std::size_t vocab,
                         std::size_t hidden, std::uint16_t* out, cudaStream_t stream) {
  if (Status s = check_embedding(tokens, vocab, hidden, "embedding_forward"); !s) return s;
  if (tokens == 0) return Ok{};
  const std::size_t hidden_vec = hidden / kVector;
  embedding_forward_kernel<<<static_cast<unsigned>(tokens), per_token_threads(hidden_vec), 0, stream>>>(
      ids, reinterpret_cast<const uint4*>(table), static_cast<int>(vocab), static_cast<int>(hidden_vec),
      reinterpret_cast<uint4*>(out));
  return cuda_check(cudaGetLastError(), "embedding_forward launch");
}

Status embedding_backward(const std::uint16_t* dout, const std::int32_t* ids, std::size_t tokens, std::size_t vocab,
                          std::size_t hidden, float* dtable_accum, cudaStream_t stream) {
  if (Status s = check_embedding(tokens, vocab, hidden, "embedding_backward"); !s) return s;
  if (tokens == 0) return Ok{};
  const std::size_t hidden_vec = hidden / kVector;
  embedding_backward_kernel<<<static_cast<unsigned>(tokens), per_token_threads(hidden_vec), 0, stream>>>(
      reinterpret_cast<const uint4*>(dout), ids, static_cast<int>(vocab), static_cast<int>(hidden_vec), dtable_accum);
  return cuda_check(cudaGetLastError(), "embedding_backward launch");
}

Status cross_entropy_forward(const std::uint16_t* logits, const std::int32_t* targets, std::size_t tokens,
                             std::size_t vocab, float* loss, float* lse, cudaStream_t stream) {
  if (Status s = check_cross_entropy(tokens, vocab, "cross_entropy_forward"); !s) return s;
  if (tokens == 0) return Ok{};
  cross_entropy_forward_kernel<<<static_cast<unsigned>(tokens), per_token_threads(vocab / kVector), 0, stream>>>(
      reinterpret_cast<const uint4*>(logits), targets, static_cast<int>(vocab), loss, lse);
  return cuda_check(cudaGetLastError(), "cross_entropy_forward launch");
}

Status cross_entropy_backward(const std::uint16_t* logits, const std::int32_t* targets, const float* lse,
                              std::size_t tokens, std::size_t vocab, float grad_scale, std::uint16_t* dlogits,
                              cudaStream_t stream) {
  if (Status s = check_cross_entropy(tokens, vocab, "cross_entropy_backward"); !s) return s;
  if (tokens == 0) return Ok{};
  cross_entropy_backward_kernel<<<static_cast<unsigned>(tokens), per_token_threads(vocab / kVector), 0, stream>>>(
      reinterpret_cast<const uint4*>(logits), targets, lse, static_cast<int>(vocab), grad_scale,
      reinterpret_cast<uint4*>(dlogits));
  return cuda_check(cudaGetLastError(), "cross_entropy_backward launch");
}

Status grad_norm_squared(const float* grad, std::size_t count, double* partials, double* sum_sq,
                         cudaStream_t stream) {
  if (count % 4 != 0) return Error{"grad_norm_squared: count must be a multiple of 4"};
  const std::size_t count4 = count / 4;
  auto grid = resident_grid(sum_squares_kernel, kThreads, std::min<std::size_t>(kGradNormPartials, grid_for(count4)));
  if (!grid) return grid.error();
  sum_squares_kernel<<<*grid, kThreads, 0, stream>>>(reinterpret_cast<const float4*>(grad), count4, partials);
  if (Status s = cuda_check(cudaGetLastError(), "grad_norm_squared launch"); !s) return s;
  sum_partials_kernel<<<1, kThreads, 0, stream>>>(partials, static_cast<int>(*grid), sum_sq);
  return cuda_check(cudaGetLastError(), "grad_norm_squared launch");
}

Expected<double> grad_norm(const float* grad, std::size_t count, double* partials, double* sum_sq,
                           cudaStream_t stream) {
  if (Status s = grad_norm_squared(grad, count, partials, sum_sq, stream); !s) return s.error();
  double host = 0;
  if (Status s = cuda_check(cudaMemcpyAsync(&host, sum_sq, sizeof host, cudaMemcpyDeviceToHost, stream), "grad_norm copy");
      !s) {
    return s.error();
  }
  if (Status s = cuda_check(cudaStreamSynchronize(stream), "grad_norm synchronize"); !s) return s.error();
  return std::sqrt(host);
}

Status adamw_step(float* param, const float* grad, float* m, float* v, std::uint16_t* param_bf16, std::size_t count,
                  const AdamWParams& p, cudaStream_t stream) {
  if (count % 4 != 0) return Error{"adamw_step: count must be a multiple of 4"};
  const float c1 = 1.0f - powf(p.beta1, static_cast<float>(p.step));
  const float c2 = 1.0f - powf(p.beta2, static_cast<float>(p.step));
  const std::size_t vecs = count / 4;
  adamw_kernel<<<grid_for(vecs), kThreads, 0, stream>>>(reinterpret_cast<float4*>(param),
                                                         reinterpret_cast<const float4*>(grad),
                                                         reinterpret_cast<float4*>(m), reinterpret_cast<float4*>(v),
                                                         reinterpret_cast<__nv_bfloat162*>(param_bf16), vecs, p, c1, c2);
  return cuda_check(cudaGetLastError(), "adamw_step launch");
}

}  // namespace commbound::kernels
