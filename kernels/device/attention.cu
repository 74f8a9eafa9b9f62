// Flash attention forward and backward (FlashAttention-2, Dao 2023, arXiv:2307.08691) on tensor
// cores: mma.sync.m16n8k16 bf16 -> fp32, operands from (padded) shared memory by ldmatrix, tiles
// brought in by 16-byte cp.async. Why our own: the simulator's attention costs are calibrated
// on the kernel we ship, and its shapes (GQA, causal) are those of our training step.
//
// Notation: s = seq, d = head_dim, scale = 1/sqrt(d), S = scale Q K^T, P = softmax(S) (rows),
// lse = log of P's denominator. The scores are handled in base 2: exp(x) = exp2(x log2(e)), with
// scale * log2(e) folded into one FMA per score.
//
// Forward (attention_forward_kernel): a block owns 128 queries of one (batch, head); 8 warps of 16
// query rows each. Q is loaded once into registers (A fragments). For each 64-key tile of K and V
// (double-buffered: tile t+1's cp.async runs while tile t is computed):
//   S = Q K^T (16 x 64 per warp, fp32 registers), masked only on tiles that cross the diagonal or
//   the end of the sequence; online softmax: m' = max(m, rowmax S), P = exp2(S c - m' c),
//   l' = l exp2((m - m') c) + rowsum P, O' = O exp2((m - m') c) + P V, with P converted in
//   registers from the C layout of S to the A layout of P V (no shared memory round trip).
// Causal: keys past the block's last query are never loaded (fully masked tiles are skipped), and
// the blocks with most work are scheduled first (grid.y runs from the last query block down).
// Epilogue: O / l to bf16, lse = m scale + log(l).
//
// Backward (attention_backward_kernel): a block owns 128 keys of one (batch, KV head); 8 warps of 16
// key rows each, holding dK and dV (16 x d each) in fp32 registers for the whole block. It walks
// the query heads of its GQA group and, for each, the 64-query tiles from the diagonal on (causal)
// or all of them; Q, dO, lse and D = rowsum(dO o O) of the next tile are fetched by cp.async while
// the current one is computed. Per tile, in two halves of 32 queries (to stay within 255 registers
// next to dK and dV), transposed so that every product's A operand is already in registers:
//   S^T = K Q^T, dP^T = V dO^T, P^T = exp2(S^T c - lse log2(e)) (masked on diagonal and ragged
//   tiles), dS^T = P^T o (dP^T - D), dV += P^T dO, dK += dS^T Q, dS^T to shared memory (bf16);
// then dQ_tile (64 x d) = dS K split over the 8 warps (16 queries x d/2 each) and added to an fp32
// dQ accumulator in global memory with vector atomics (red.global.add.v2.f32, a 32-byte sector per
// 4 lanes). dK is scaled by `scale` when written.
// Around it: cudaMemsetAsync zeroes the dQ accumulator, attention_delta_kernel computes D, and
// attention_dq_convert_kernel writes dQ = scale * accumulator as bf16.
//
// Tiles: forward 128 queries x 64 keys (smem Q 128 x d + 2 x 2 x 64 x d: 102 KiB at d = 128,
// 54 KiB at d = 64); backward 128 keys x 64 queries (K, V 128 x d, double-buffered Q, dO 64 x d,
// dS^T 128 x 64: 155 KiB at d = 128, 91 KiB at d = 64). 256 threads, one block per SM (registers:
// forward 215 / 153, backward 253 / 198 at d = 128 / 64, no spills). Shared rows are padded by 16
// bytes (not XOR-swizzled): the 8 rows of an ldmatrix phase then start 4 banks apart (no
// conflicts), and every fragment address is a per-lane base plus a constant, which keeps ptxas from
// holding dozens of swizzled addresses in registers.
//
// FLOPs (the convention of FlashAttention's benchmarks, counting the useful half of a causal
// product): forward 4 b h s^2 d (two matrix products of 2 s^2 d each per head), halved when causal;
// backward 2.5 x the forward (five products: S recomputed, dP, dV, dK, dQ).
#include "kernels/device/attention.hpp"
#include "kernels/device/cuda_support.hpp"

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

namespace commbound::kernels {
namespace {

using bits16 = std::uint16_t;  // one bf16 value

constexpr int kThreads = 256;  // 8 warps in every attention kernel
constexpr int kWarpRows = 16;  // rows of an mma tile (m16n8k16): one per warp
constexpr float kLog2e = 1.4426950408889634f;

constexpr int kFwdBlockM = 128;  // forward: queries per block (8 warps x 16)
constexpr int kFwdBlockN = 64;   // forward: keys per tile
constexpr int kBwdBlockN = 128;  // backward: keys per block (8 warps x 16)
constexpr int kBwdBlockM = 64;   // backward: queries per tile
static_assert(kFwdBlockM == kWarpRows * kThreads / 32 && kBwdBlockN == kWarpRows * kThreads / 32);

// Shared tiles keep their rows kPad elements (16 bytes) longer than the data: consecutive rows then
// start 4 banks apart (row bytes = 16 mod 128), so the 8 rows of each ldmatrix phase and the
// 4-byte stores of a C fragment hit distinct banks, and every fragment address is a per-lane base
// plus a compile-time offset.
constexpr int kPad = 8;
template <int kRowElems>
__host__ __device__ constexpr int padded() {
  return kRowElems + kPad;
}

template <int D>
constexpr int forward_smem_bytes() {
  return (kFwdBlockM + 2 * 2 * kFwdBlockN) * padded<D>() * 2;  // Q, K x 2 buffers, V x 2 buffers
}
template <int D>
constexpr int backward_smem_bytes() {
  // K, V; Q and dO x 2 buffers; dS^T; lse and D x 2 buffers (fp32).
  return (2 * kBwdBlockN + 2 * 2 * kBwdBlockM) * padded<D>() * 2 + kBwdBlockN * padded<kBwdBlockM>() * 2 +
         2 * 2 * kBwdBlockM * 4;
}
static_assert(backward_smem_bytes<128>() <= 227 * 1024, "beyond the H100's 227 KiB of shared memory per block");

// ---- PTX wrappers -------------------------------------------------------------------------------

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronous; zero-filled (nothing read) when !valid.
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
// 4 bytes global -> shared, asynchronous; zero-filled when !valid.
__device__ __forceinline__ void cp_async_4(std::uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, register i receives
// matrix i: lane l holds row l/4, columns 2(l%4), 2(l%4)+1 (with .trans: rows 2(l%4), 2(l%4)+1 of
// column l/4).
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a b for a 16x16 bf16 A (row-major fragments a0..a3: rows g, g+8 x columns 2t.., 2t+8..),
// a 16x8 bf16 B (b0: k 2t, 2t+1 of column g; b1: k 2t+8, 2t+9) and a 16x8 fp32 C/D (d0, d1: row g,
// columns 2t, 2t+1; d2, d3: row g+8), where g = lane / 4 and t = lane % 4.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float fast_exp2(float x) {  // exp2(-inf) = +0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Two floats as bf16x2 (round to nearest even), `lo` in the low half (the lower column).
__device__ __forceinline__ std::uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

// ---- Shared-memory tiles ------------------------------------------------------------------------

// Issues the cp.async copies of rows [row0, row0 + kRows) of a bf16 matrix with D contiguous
// columns at `src` (row r at src + r * stride) into a padded [kRows x D] tile; rows at or past
// `rows` are zero-filled. All kThreads threads call it.
template <int kRows, int D>
__device__ __forceinline__ void load_tile(bits16* tile, const bits16* src, int row0, int rows, std::size_t stride,
                                          int tid) {
  constexpr int kChunksPerRow = D / 8;
  static_assert(kRows * kChunksPerRow % kThreads == 0);
#pragma unroll
  for (int i = 0; i < kRows * kChunksPerRow / kThreads; ++i) {
    const int c = tid + i * kThreads;
    const int r = c / kChunksPerRow;
    const int chunk = c % kChunksPerRow;
    const bool valid = row0 + r < rows;
    const bits16* from = valid ? src + static_cast<std::size_t>(row0 + r) * stride + chunk * 8 : src;
    cp_async_16(smem_addr(tile + r * padded<D>() + chunk * 8), from, valid);
  }
}

// ldmatrix addressing. A lane gives the address of row `rl` (0..15) and 8-column chunk `cl` (0 or 1)
// of a 16x16 block; which (rl, cl) depends on the operand:
//   Pattern::a:  rl = lane % 16, cl = lane / 16: A fragments of a tile stored [m][k];
//   Pattern::nk: rl = lane % 8 + 8 (lane / 16), cl = (lane / 8) % 2: B fragments of two n-tiles of
//                a tile stored [n][k] (K in Q K^T), and with .trans A fragments of a tile stored [k][m];
//   Pattern::kn: rl = lane % 8 + 8 ((lane / 8) % 2), cl = lane / 16: with .trans, B fragments of two
//                n-tiles of a tile stored [k][n] (V in P V).
// frag_base() is the lane's address at block (0, 0); frag_at() moves it to block (row0, col0).
enum class Pattern { a, nk, kn };

template <int kRowElems, Pattern kPattern>
__device__ __forceinline__ std::uint32_t frag_base(const bits16* tile, int lane) {
  const int rl = kPattern == Pattern::a    ? lane % 16
                 : kPattern == Pattern::nk ? lane % 8 + 8 * (lane / 16)
                                           : lane % 8 + 8 * ((lane / 8) % 2);
  const int cl = kPattern == Pattern::nk ? (lane / 8) % 2 : lane / 16;
  return smem_addr(tile + rl * padded<kRowElems>() + cl * 8);
}
template <int kRowElems>
__device__ __forceinline__ std::uint32_t frag_at(std::uint32_t base, int row0, int col0) {
  return base + static_cast<std::uint32_t>((row0 * padded<kRowElems>() + col0) * 2);
}

// The A fragment of a 16x16 product step taken from two fp32 C tiles (columns 16j..16j+15 of a
// 16-row result): C tile 2j gives columns 0..7, 2j+1 columns 8..15.
__device__ __forceinline__ void c_to_a(std::uint32_t (&a)[4], const float (&c0)[4], const float (&c1)[4]) {
  a[0] = pack_bf16(c0[0], c0[1]);
  a[1] = pack_bf16(c0[2], c0[3]);
  a[2] = pack_bf16(c1[0], c1[1]);
  a[3] = pack_bf16(c1[2], c1[3]);
}

// ---- Forward ------------------------------------------------------------------------------------

struct ForwardParams {
  const bits16* q;
  const bits16* k;
  const bits16* v;
  bits16* o;
  float* lse;
  int seq;
  int heads;
  int kv_heads;
  int group;     // heads / kv_heads
  int m_blocks;  // query blocks per (batch, head)
  bool causal;
  float scale;       // 1 / sqrt(d)
  float scale_log2;  // scale * log2(e)
};

// grid (batch * heads, m_blocks); block kThreads.
template <int D>
__global__ void __launch_bounds__(kThreads, 1) attention_forward_kernel(const ForwardParams p) {
  constexpr int kKSteps = D / 16;          // k-steps of Q K^T
  constexpr int kOTiles = D / 8;           // n-tiles of O
  constexpr int kSTiles = kFwdBlockN / 8;  // n-tiles of S
  extern __shared__ __align__(128) unsigned char smem[];
  bits16* sq = reinterpret_cast<bits16*>(smem);
  constexpr int kKvTileElems = kFwdBlockN * padded<D>();
  bits16* sk = sq + kFwdBlockM * padded<D>();  // 2 buffers
  bits16* sv = sk + 2 * kKvTileElems;          // 2 buffers

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int b = static_cast<int>(blockIdx.x) / p.heads;
  const int h = static_cast<int>(blockIdx.x) % p.heads;
  const int m0 = (p.m_blocks - 1 - static_cast<int>(blockIdx.y)) * kFwdBlockM;  // longest blocks first
  const std::size_t q_stride = static_cast<std::size_t>(p.heads) * D;
  const std::size_t kv_stride = static_cast<std::size_t>(p.kv_heads) * D;
  const bits16* q = p.q + static_cast<std::size_t>(b) * p.seq * q_stride + static_cast<std::size_t>(h) * D;
  const std::size_t kv_offset = static_cast<std::size_t>(b) * p.seq * kv_stride + static_cast<std::size_t>(h / p.group) * D;
  const bits16* k = p.k + kv_offset;
  const bits16* v = p.v + kv_offset;
  const int key_end = p.causal ? min(p.seq, m0 + kFwdBlockM) : p.seq;
  const int n_tiles = (key_end + kFwdBlockN - 1) / kFwdBlockN;

  load_tile<kFwdBlockM, D>(sq, q, m0, p.seq, q_stride, tid);
  load_tile<kFwdBlockN, D>(sk, k, 0, p.seq, kv_stride, tid);
  load_tile<kFwdBlockN, D>(sv, v, 0, p.seq, kv_stride, tid);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();

  constexpr std::uint32_t kKvTileBytes = kKvTileElems * 2;
  const std::uint32_t k_frag = frag_base<D, Pattern::nk>(sk, lane);
  const std::uint32_t v_frag = frag_base<D, Pattern::kn>(sv, lane);
  // Q's A fragments stay in registers for the whole block.
  std::uint32_t qa[kKSteps][4];
  {
    const std::uint32_t q_frag = frag_at<D>(frag_base<D, Pattern::a>(sq, lane), warp * kWarpRows, 0);
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) ldmatrix_x4(qa[kk], frag_at<D>(q_frag, 0, kk * 16));
  }

  float acc[kOTiles][4];
#pragma unroll
  for (int i = 0; i < kOTiles; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY};  // raw scores; rows g and g + 8 of the warp
  float row_sum[2] = {0.f, 0.f};              // this thread's partial sums (its columns only)
  const int row_g = m0 + warp * kWarpRows + lane / 4;
  const int col_t = 2 * (lane % 4);

  for (int t = 0; t < n_tiles; ++t) {
    const int buf = t & 1;
    if (t + 1 < n_tiles) {
      load_tile<kFwdBlockN, D>(sk + (buf ^ 1) * kKvTileElems, k, (t + 1) * kFwdBlockN, p.seq, kv_stride, tid);
      load_tile<kFwdBlockN, D>(sv + (buf ^ 1) * kKvTileElems, v, (t + 1) * kFwdBlockN, p.seq, kv_stride, tid);
      cp_async_commit();
    }
    const std::uint32_t tk = k_frag + buf * kKvTileBytes;
    const std::uint32_t tv = v_frag + buf * kKvTileBytes;

    float s[kSTiles][4];
#pragma unroll
    for (int i = 0; i < kSTiles; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
#pragma unroll
      for (int np = 0; np < kSTiles / 2; ++np) {
        std::uint32_t kb[4];
        ldmatrix_x4(kb, frag_at<D>(tk, np * 16, kk * 16));
        mma_bf16(s[2 * np], qa[kk], kb[0], kb[1]);
        mma_bf16(s[2 * np + 1], qa[kk], kb[2], kb[3]);
      }
    }

    const int n0 = t * kFwdBlockN;
    if ((p.causal && n0 + kFwdBlockN - 1 > m0) || n0 + kFwdBlockN > p.seq) {
#pragma unroll
      for (int nt = 0; nt < kSTiles; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = row_g + (e / 2) * 8;
          const int col = n0 + nt * 8 + col_t + (e % 2);
          if (col >= p.seq || (p.causal && col > row)) s[nt][e] = -INFINITY;
        }
      }
    }

#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = row_max[r];
#pragma unroll
      for (int nt = 0; nt < kSTiles; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // A row with no visible key yet keeps max -inf: shift by 0 so that exp2 gives 0, not NaN.
      const float mx_scaled = mx == -INFINITY ? 0.f : mx * p.scale_log2;
      const float alpha = fast_exp2(row_max[r] * p.scale_log2 - mx_scaled);
      row_max[r] = mx;
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < kSTiles; ++nt) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          s[nt][2 * r + c] = fast_exp2(fmaf(s[nt][2 * r + c], p.scale_log2, -mx_scaled));
          sum += s[nt][2 * r + c];
        }
      }
      row_sum[r] = row_sum[r] * alpha + sum;
#pragma unroll
      for (int dt = 0; dt < kOTiles; ++dt) {
        acc[dt][2 * r] *= alpha;
        acc[dt][2 * r + 1] *= alpha;
      }
    }

#pragma unroll
    for (int kq = 0; kq < kFwdBlockN / 16; ++kq) {
      std::uint32_t pa[4];
      c_to_a(pa, s[2 * kq], s[2 * kq + 1]);
#pragma unroll
      for (int dp = 0; dp < kOTiles / 2; ++dp) {
        std::uint32_t vb[4];
        ldmatrix_x4_trans(vb, frag_at<D>(tv, kq * 16, dp * 16));
        mma_bf16(acc[2 * dp], pa, vb[0], vb[1]);
        mma_bf16(acc[2 * dp + 1], pa, vb[2], vb[3]);
      }
    }

    cp_async_wait_all();  // tile t + 1 has landed
    __syncthreads();      // ... for every thread, and nobody reads buffer `buf` any more
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = row_sum[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int row = row_g + r * 8;
    if (row < p.seq) {
      const float inv = 1.f / sum;
      bits16* out = p.o + (static_cast<std::size_t>(b) * p.seq + row) * q_stride + static_cast<std::size_t>(h) * D + col_t;
#pragma unroll
      for (int dt = 0; dt < kOTiles; ++dt) {
        *reinterpret_cast<std::uint32_t*>(out + dt * 8) = pack_bf16(acc[dt][2 * r] * inv, acc[dt][2 * r + 1] * inv);
      }
      if (lane % 4 == 0) {
        p.lse[(static_cast<std::size_t>(b) * p.heads + h) * p.seq + row] = row_max[r] * p.scale + logf(sum);
      }
    }
  }
}

// ---- Backward -----------------------------------------------------------------------------------

struct BackwardParams {
  const bits16* q;
  const bits16* k;
  const bits16* v;
  const bits16* dout;
  const float* lse;
  const float* delta;  // rowsum(dO o O) [batch, heads, seq]
  float* dq_accum;     // [batch, seq, heads, d], zeroed
  bits16* dk;
  bits16* dv;
  int seq;
  int heads;
  int kv_heads;
  int group;    // heads / kv_heads
  int m_tiles;  // query tiles of kBwdBlockM per (batch, head)
  bool causal;
  float scale;
  float scale_log2;
};

// D[b, h, i] = sum_d dO[b, i, h, d] O[b, i, h, d]; D / 8 lanes per row, 16 bytes each.
template <int D>
__global__ void __launch_bounds__(kThreads) attention_delta_kernel(const bits16* o, const bits16* dout, float* delta,
                                                                   long long rows, int seq, int heads) {
  constexpr int kLanesPerRow = D / 8;
  constexpr int kRowsPerBlock = kThreads / kLanesPerRow;
  const long long row = static_cast<long long>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kLanesPerRow;
  const int part = static_cast<int>(threadIdx.x) % kLanesPerRow;
  float sum = 0.f;
  if (row < rows) {
    const uint4 a = *reinterpret_cast<const uint4*>(o + row * D + part * 8);
    const uint4 g = *reinterpret_cast<const uint4*>(dout + row * D + part * 8);
    const std::uint32_t av[4] = {a.x, a.y, a.z, a.w};
    const std::uint32_t gv[4] = {g.x, g.y, g.z, g.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      sum += __uint_as_float(av[i] << 16) * __uint_as_float(gv[i] << 16);
      sum += __uint_as_float(av[i] & 0xffff0000u) * __uint_as_float(gv[i] & 0xffff0000u);
    }
  }
#pragma unroll
  for (int offset = kLanesPerRow / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (row < rows && part == 0) {
    const long long token = row / heads;  // b * seq + i
    const int h = static_cast<int>(row % heads);
    const long long b = token / seq;
    const int i = static_cast<int>(token % seq);
    delta[(b * heads + h) * seq + i] = sum;
  }
}

// grid (batch * kv_heads, key blocks); block kThreads.
template <int D>
__global__ void __launch_bounds__(kThreads, 1) attention_backward_kernel(const BackwardParams p) {
  constexpr int kKSteps = D / 16;            // k-steps over d (S^T, dP^T)
  constexpr int kDTiles = D / 8;             // n-tiles of dK, dV
  constexpr int kSubM = 32;                  // queries per half tile
  constexpr int kSubTiles = kSubM / 8;       // n-tiles of S^T over a half's queries
  constexpr int kKeySteps = kBwdBlockN / 16; // k-steps over keys (dQ)
  constexpr int kDqTiles = D / 16;           // n-tiles of a warp's dQ slice (d / 2 columns)
  extern __shared__ __align__(128) unsigned char smem[];
  bits16* sk = reinterpret_cast<bits16*>(smem);
  constexpr int kQTileElems = kBwdBlockM * padded<D>();
  bits16* sv = sk + kBwdBlockN * padded<D>();
  bits16* sq = sv + kBwdBlockN * padded<D>();  // 2 buffers
  bits16* sdo = sq + 2 * kQTileElems;          // 2 buffers
  bits16* sds = sdo + 2 * kQTileElems;         // dS^T [key][query]
  float* slse = reinterpret_cast<float*>(sds + kBwdBlockN * padded<kBwdBlockM>());  // 2 buffers
  float* sdelta = slse + 2 * kBwdBlockM;                                   // 2 buffers

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int b = static_cast<int>(blockIdx.x) / p.kv_heads;
  const int hk = static_cast<int>(blockIdx.x) % p.kv_heads;
  const int n0 = static_cast<int>(blockIdx.y) * kBwdBlockN;  // longest blocks (low keys) first
  const std::size_t q_stride = static_cast<std::size_t>(p.heads) * D;
  const std::size_t kv_stride = static_cast<std::size_t>(p.kv_heads) * D;
  const std::size_t kv_offset = static_cast<std::size_t>(b) * p.seq * kv_stride + static_cast<std::size_t>(hk) * D;
  // Causal: queries before n0 see none of these keys. n0 < seq, so at least one tile per head.
  const int m_first = p.causal ? n0 / kBwdBlockM : 0;
  const int tiles_per_head = p.m_tiles - m_first;
  const int steps = tiles_per_head * p.group;

  // Issues the copies of step `step`'s Q, dO, lse and D into buffer `buf`.
  auto load_step = [&](int step, int buf) {
    const int h = hk * p.group + step / tiles_per_head;
    const int m0 = (m_first + step % tiles_per_head) * kBwdBlockM;
    const std::size_t q_offset = static_cast<std::size_t>(b) * p.seq * q_stride + static_cast<std::size_t>(h) * D;
    load_tile<kBwdBlockM, D>(sq + buf * kQTileElems, p.q + q_offset, m0, p.seq, q_stride, tid);
    load_tile<kBwdBlockM, D>(sdo + buf * kQTileElems, p.dout + q_offset, m0, p.seq, q_stride, tid);
    if (tid < 2 * kBwdBlockM) {
      const int i = tid % kBwdBlockM;
      const bool is_lse = tid < kBwdBlockM;
      const float* src = (is_lse ? p.lse : p.delta) + (static_cast<std::size_t>(b) * p.heads + h) * p.seq;
      float* dst = (is_lse ? slse : sdelta) + buf * kBwdBlockM + i;
      const bool valid = m0 + i < p.seq;
      cp_async_4(smem_addr(dst), valid ? src + m0 + i : src, valid);
    }
  };

  load_tile<kBwdBlockN, D>(sk, p.k + kv_offset, n0, p.seq, kv_stride, tid);
  load_tile<kBwdBlockN, D>(sv, p.v + kv_offset, n0, p.seq, kv_stride, tid);
  load_step(0, 0);
  cp_async_commit();

  float dk_acc[kDTiles][4];
  float dv_acc[kDTiles][4];
#pragma unroll
  for (int i = 0; i < kDTiles; ++i) {
    dk_acc[i][0] = dk_acc[i][1] = dk_acc[i][2] = dk_acc[i][3] = 0.f;
    dv_acc[i][0] = dv_acc[i][1] = dv_acc[i][2] = dv_acc[i][3] = 0.f;
  }
  const int key_g = warp * kWarpRows + lane / 4;  // in-block key of C rows g (and g + 8)
  const int col_t = 2 * (lane % 4);
  const int dq_warp_m = (warp % 4) * 16;        // dQ: this warp's 16 queries of the tile ...
  const int dq_warp_d = (warp / 4) * (D / 2);   // ... and its half of d
  constexpr std::uint32_t kQTileBytes = kQTileElems * 2;
  const std::uint32_t k_a = frag_at<D>(frag_base<D, Pattern::a>(sk, lane), warp * kWarpRows, 0);
  const std::uint32_t v_a = frag_at<D>(frag_base<D, Pattern::a>(sv, lane), warp * kWarpRows, 0);
  const std::uint32_t q_nk = frag_base<D, Pattern::nk>(sq, lane);
  const std::uint32_t q_kn = frag_base<D, Pattern::kn>(sq, lane);
  const std::uint32_t do_nk = frag_base<D, Pattern::nk>(sdo, lane);
  const std::uint32_t do_kn = frag_base<D, Pattern::kn>(sdo, lane);
  const std::uint32_t ds_km = frag_at<kBwdBlockM>(frag_base<kBwdBlockM, Pattern::nk>(sds, lane), 0, dq_warp_m);
  const std::uint32_t k_kn = frag_at<D>(frag_base<D, Pattern::kn>(sk, lane), 0, dq_warp_d);

  for (int step = 0; step < steps; ++step) {
    const int buf = step & 1;
    cp_async_wait_all();  // this step's tiles (and K, V at step 0) have landed
    __syncthreads();      // ... for every thread; step - 1's buffers and dS^T are no longer read
    if (step + 1 < steps) {
      load_step(step + 1, buf ^ 1);
      cp_async_commit();
    }
    const int h = hk * p.group + step / tiles_per_head;
    const int m0 = (m_first + step % tiles_per_head) * kBwdBlockM;
    const std::uint32_t tq_nk = q_nk + buf * kQTileBytes;
    const std::uint32_t tq_kn = q_kn + buf * kQTileBytes;
    const std::uint32_t tdo_nk = do_nk + buf * kQTileBytes;
    const std::uint32_t tdo_kn = do_kn + buf * kQTileBytes;
    const float* tlse = slse + buf * kBwdBlockM;
    const float* tdelta = sdelta + buf * kBwdBlockM;
    const bool need_mask =
        (p.causal && n0 + kBwdBlockN - 1 > m0) || m0 + kBwdBlockM > p.seq || n0 + kBwdBlockN > p.seq;

    // Two halves of kSubM queries, one after the other, so that S^T, P^T, dP^T and dS^T take 16
    // registers each next to the 128 of dK and dV.
#pragma unroll 1
    for (int q0 = 0; q0 < kBwdBlockM; q0 += kSubM) {
      // S^T = K Q^T (this warp's 16 keys x kSubM queries), and dP^T = V dO^T.
      float st[kSubTiles][4];
      float ds[kSubTiles][4];
#pragma unroll
      for (int i = 0; i < kSubTiles; ++i) {
        st[i][0] = st[i][1] = st[i][2] = st[i][3] = 0.f;
        ds[i][0] = ds[i][1] = ds[i][2] = ds[i][3] = 0.f;
      }
#pragma unroll
      for (int kk = 0; kk < kKSteps; ++kk) {
        std::uint32_t ka[4];
        ldmatrix_x4(ka, frag_at<D>(k_a, 0, kk * 16));
#pragma unroll
        for (int np = 0; np < kSubTiles / 2; ++np) {
          std::uint32_t qb[4];
          ldmatrix_x4(qb, frag_at<D>(tq_nk, q0 + np * 16, kk * 16));
          mma_bf16(st[2 * np], ka, qb[0], qb[1]);
          mma_bf16(st[2 * np + 1], ka, qb[2], qb[3]);
        }
      }
#pragma unroll
      for (int kk = 0; kk < kKSteps; ++kk) {
        std::uint32_t va[4];
        ldmatrix_x4(va, frag_at<D>(v_a, 0, kk * 16));
#pragma unroll
        for (int np = 0; np < kSubTiles / 2; ++np) {
          std::uint32_t ob[4];
          ldmatrix_x4(ob, frag_at<D>(tdo_nk, q0 + np * 16, kk * 16));
          mma_bf16(ds[2 * np], va, ob[0], ob[1]);
          mma_bf16(ds[2 * np + 1], va, ob[2], ob[3]);
        }
      }

      // P^T = exp(S^T scale - lse), zero where masked (a select: a masked exponent may overflow),
      // then dS^T = P^T o (dP^T - D).
#pragma unroll
      for (int nt = 0; nt < kSubTiles; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int qi = q0 + nt * 8 + col_t + (e % 2);
          float pr = fast_exp2(fmaf(st[nt][e], p.scale_log2, -tlse[qi] * kLog2e));
          if (need_mask) {
            const int key = n0 + key_g + (e / 2) * 8;
            const int query = m0 + qi;
            if (query >= p.seq || key >= p.seq || (p.causal && key > query)) pr = 0.f;
          }
          st[nt][e] = pr;
          ds[nt][e] = pr * (ds[nt][e] - tdelta[qi]);
        }
      }

      // dV += P^T dO and dK += dS^T Q (dK scaled at the end), P^T and dS^T as bf16 A fragments.
#pragma unroll
      for (int kq = 0; kq < kSubTiles / 2; ++kq) {
        std::uint32_t pa[4];
        c_to_a(pa, st[2 * kq], st[2 * kq + 1]);
#pragma unroll
        for (int dp = 0; dp < kDTiles / 2; ++dp) {
          std::uint32_t ob[4];
          ldmatrix_x4_trans(ob, frag_at<D>(tdo_kn, q0 + kq * 16, dp * 16));
          mma_bf16(dv_acc[2 * dp], pa, ob[0], ob[1]);
          mma_bf16(dv_acc[2 * dp + 1], pa, ob[2], ob[3]);
        }
      }
#pragma unroll
      for (int kq = 0; kq < kSubTiles / 2; ++kq) {
        std::uint32_t da[4];
        c_to_a(da, ds[2 * kq], ds[2 * kq + 1]);
#pragma unroll
        for (int dp = 0; dp < kDTiles / 2; ++dp) {
          std::uint32_t qb[4];
          ldmatrix_x4_trans(qb, frag_at<D>(tq_kn, q0 + kq * 16, dp * 16));
          mma_bf16(dk_acc[2 * dp], da, qb[0], qb[1]);
          mma_bf16(dk_acc[2 * dp + 1], da, qb[2], qb[3]);
        }
      }

      // dS^T to shared memory ([key][query], bf16) for dQ.
#pragma unroll
      for (int nt = 0; nt < kSubTiles; ++nt) {
        const int col = q0 + nt * 8 + col_t;
        *reinterpret_cast<std::uint32_t*>(sds + key_g * padded<kBwdBlockM>() + col) = pack_bf16(ds[nt][0], ds[nt][1]);
        *reinterpret_cast<std::uint32_t*>(sds + (key_g + 8) * padded<kBwdBlockM>() + col) = pack_bf16(ds[nt][2], ds[nt][3]);
      }
    }
    __syncthreads();

    // dQ tile += dS K: this warp's 16 queries x d/2, summed over the block's 128 keys.
    float dq[kDqTiles][4];
#pragma unroll
    for (int i = 0; i < kDqTiles; ++i) dq[i][0] = dq[i][1] = dq[i][2] = dq[i][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kKeySteps; ++kk) {
      std::uint32_t da[4];
      ldmatrix_x4_trans(da, frag_at<kBwdBlockM>(ds_km, kk * 16, 0));
#pragma unroll
      for (int dp = 0; dp < kDqTiles / 2; ++dp) {
        std::uint32_t kb[4];
        ldmatrix_x4_trans(kb, frag_at<D>(k_kn, kk * 16, dp * 16));
        mma_bf16(dq[2 * dp], da, kb[0], kb[1]);
        mma_bf16(dq[2 * dp + 1], da, kb[2], kb[3]);
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int query = m0 + dq_warp_m + lane / 4 + r * 8;
      if (query < p.seq) {
        float* dst = p.dq_accum + (static_cast<std::size_t>(b) * p.seq + query) * q_stride +
                     static_cast<std::size_t>(h) * D + dq_warp_d + col_t;
#pragma unroll
        for (int nt = 0; nt < kDqTiles; ++nt) {
          atomicAdd(reinterpret_cast<float2*>(dst + nt * 8), make_float2(dq[nt][2 * r], dq[nt][2 * r + 1]));
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = n0 + key_g + r * 8;
    if (key < p.seq) {
      const std::size_t offset = (static_cast<std::size_t>(b) * p.seq + key) * kv_stride + static_cast<std::size_t>(hk) * D + col_t;
#pragma unroll
      for (int dt = 0; dt < kDTiles; ++dt) {
        *reinterpret_cast<std::uint32_t*>(p.dk + offset + dt * 8) =
            pack_bf16(dk_acc[dt][2 * r] * p.scale, dk_acc[dt][2 * r + 1] * p.scale);
        *reinterpret_cast<std::uint32_t*>(p.dv + offset + dt * 8) = pack_bf16(dv_acc[dt][2 * r], dv_acc[dt][2 * r + 1]);
      }
    }
  }
}

// dq = bf16(scale * accumulator), 4 values per thread and step.
__global__ void __launch_bounds__(kThreads) attention_dq_convert_kernel(const float4* accum, uint2* dq, std::size_t count4,
                                                                        float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 a = accum[i];
    dq[i] = make_uint2(pack_bf16(a.x * scale, a.y * scale), pack_bf16(a.z * scale, a.w * scale));
  }
}

// ---- Host side ----------------------------------------------------------------------------------

// Raises each kernel's dynamic shared memory limit once per process (first call's result kept).
template <int D>
Status configure_forward() {
  static const Status once = cuda_check(
      cudaFuncSetAttribute(attention_forward_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, forward_smem_bytes<D>()),
      "cudaFuncSetAttribute(attention_forward_kernel)");
  return once;
}
template <int D>
Status configure_backward() {
  static const Status once = cuda_check(cudaFuncSetAttribute(attention_backward_kernel<D>,
                                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                             backward_smem_bytes<D>()),
                                        "cudaFuncSetAttribute(attention_backward_kernel)");
  return once;
}

constexpr int kMaxGridY = 65535;

int ceil_div(int a, int b) { return (a + b - 1) / b; }

Status check_pointer(const void* p, std::size_t alignment, const char* what) {
  if (p == nullptr) return Error{std::string("attention: ") + what + " is null"};
  if (reinterpret_cast<std::uintptr_t>(p) % alignment != 0) {
    return Error{std::string("attention: ") + what + " is not " + std::to_string(alignment) + "-byte aligned"};
  }
  return Ok{};
}

std::size_t token_elements(const AttentionShape& s, int heads) {
  return static_cast<std::size_t>(s.batch) * s.seq * heads * s.head_dim;
}

template <int D>
Status launch_forward(const AttentionShape& s, const ForwardParams& p, cudaStream_t stream) {
  if (Status st = configure_forward<D>(); !st) return st;
  const dim3 grid(static_cast<unsigned>(s.batch * s.heads), static_cast<unsigned>(p.m_blocks));
  attention_forward_kernel<D><<<grid, kThreads, forward_smem_bytes<D>(), stream>>>(p);
  return cuda_check(cudaGetLastError(), "attention_forward launch");
}

// The backward's three launches after the zeroing: D, the main kernel, dQ's conversion.
template <int D>
Status launch_backward(const AttentionShape& s, const BackwardParams& p, const bits16* o, bits16* dq,
                       cudaStream_t stream) {
  if (Status st = configure_backward<D>(); !st) return st;
  const long long rows = static_cast<long long>(s.batch) * s.seq * s.heads;
  constexpr int kRowsPerBlock = kThreads / (D / 8);
  attention_delta_kernel<D><<<static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock), kThreads, 0, stream>>>(
      o, p.dout, const_cast<float*>(p.delta), rows, s.seq, s.heads);
  if (Status st = cuda_check(cudaGetLastError(), "attention_delta_kernel launch"); !st) return st;

  const dim3 grid(static_cast<unsigned>(s.batch * s.kv_heads), static_cast<unsigned>(ceil_div(s.seq, kBwdBlockN)));
  attention_backward_kernel<D><<<grid, kThreads, backward_smem_bytes<D>(), stream>>>(p);
  if (Status st = cuda_check(cudaGetLastError(), "attention_backward_kernel launch"); !st) return st;

  const std::size_t count4 = token_elements(s, s.heads) / 4;
  const std::size_t blocks = (count4 + kThreads - 1) / kThreads;
  attention_dq_convert_kernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), kThreads, 0, stream>>>(
      reinterpret_cast<const float4*>(p.dq_accum), reinterpret_cast<uint2*>(dq), count4, p.scale);
  return cuda_check(cudaGetLastError(), "attention_dq_convert_kernel launch");
}

}  // namespace

Status attention_forward(const AttentionShape& s, const std::uint16_t* q, const std::uint16_t* k,
                         const std::uint16_t* v, std::uint16_t* o, float* lse, cudaStream_t stream) {
  if (Status st = check_attention_shape(s); !st) return st;
  for (const auto& [ptr, name] : {std::pair<const void*, const char*>{q, "q"}, {k, "k"}, {v, "v"}, {o, "o"}}) {
    if (Status st = check_pointer(ptr, 16, name); !st) return st;
  }
  if (Status st = check_pointer(lse, 4, "lse"); !st) return st;
  ForwardParams p{};
  p.q = q;
  p.k = k;
  p.v = v;
  p.o = o;
  p.lse = lse;
  p.seq = s.seq;
  p.heads = s.heads;
  p.kv_heads = s.kv_heads;
  p.group = s.heads / s.kv_heads;
  p.m_blocks = ceil_div(s.seq, kFwdBlockM);
  p.causal = s.causal;
  p.scale = static_cast<float>(attention_softmax_scale(s));
  p.scale_log2 = p.scale * kLog2e;
  if (p.m_blocks > kMaxGridY) return Error{"attention_forward: seq " + std::to_string(s.seq) + " too long"};
  return s.head_dim == 64 ? launch_forward<64>(s, p, stream) : launch_forward<128>(s, p, stream);
}

std::size_t attention_backward_workspace_bytes(const AttentionShape& s) {
  if (!check_attention_shape(s)) return 0;
  return token_elements(s, s.heads) * sizeof(float) + static_cast<std::size_t>(s.batch) * s.heads * s.seq * sizeof(float);
}

Status attention_backward(const AttentionShape& s, const std::uint16_t* q, const std::uint16_t* k,
                          const std::uint16_t* v, const std::uint16_t* o, const std::uint16_t* dout, const float* lse,
                          std::uint16_t* dq, std::uint16_t* dk, std::uint16_t* dv, void* workspace,
                          cudaStream_t stream) {
  if (Status st = check_attention_shape(s); !st) return st;
  for (const auto& [ptr, name] : {std::pair<const void*, const char*>{q, "q"}, {k, "k"}, {v, "v"}, {o, "o"},
                                  {dout, "dout"}, {dq, "dq"}, {dk, "dk"}, {dv, "dv"}, {workspace, "workspace"}}) {
    if (Status st = check_pointer(ptr, 16, name); !st) return st;
  }
  if (Status st = check_pointer(lse, 4, "lse"); !st) return st;
  if (ceil_div(s.seq, kBwdBlockN) > kMaxGridY) return Error{"attention_backward: seq " + std::to_string(s.seq) + " too long"};
  float* dq_accum = static_cast<float*>(workspace);
  const std::size_t dq_accum_bytes = token_elements(s, s.heads) * sizeof(float);
  BackwardParams p{};
  p.q = q;
  p.k = k;
  p.v = v;
  p.dout = dout;
  p.lse = lse;
  p.delta = dq_accum + token_elements(s, s.heads);
  p.dq_accum = dq_accum;
  p.dk = dk;
  p.dv = dv;
  p.seq = s.seq;
  p.heads = s.heads;
  p.kv_heads = s.kv_heads;
  p.group = s.heads / s.kv_heads;
  p.m_tiles = ceil_div(s.seq, kBwdBlockM);
  p.causal = s.causal;
  p.scale = static_cast<float>(attention_softmax_scale(s));
  p.scale_log2 = p.scale * kLog2e;
  if (Status st = cuda_check(cudaMemsetAsync(dq_accum, 0, dq_accum_bytes, stream), "attention_backward: zero dQ");
      !st) {
    return st;
  }
  return s.head_dim == 64 ? launch_backward<64>(s, p, o, dq, stream) : launch_backward<128>(s, p, o, dq, stream);
}

}  // namespace commbound::kernels
