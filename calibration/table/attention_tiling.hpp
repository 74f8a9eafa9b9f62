// AttentionTiling: how a flash-attention kernel cuts one call into thread blocks (CTAs) and how
// many of them an SM runs at once, so that a measured time can be carried to a shape the table
// lacks by what really sets its length: the time the GPU's SMs take to drain that shape's CTAs.
//
// Why not by FLOPs alone: a causal flash attention launches one CTA per tile of query rows (forward)
// or of key rows (backward) for every (batch, head), and the CTAs are unequal (the causal mask gives
// the last query tile the whole row of key tiles, the first one tile). With few (batch, head) pairs
// (a tensor-parallel shard's 4 heads, a micro-batch of 1) the grid is one or two waves and the
// longest CTAs set the time; FLOPs scaling assumes the SMs stay full to the end. On H100, PyTorch's
// FlashAttention-2 at 8 heads takes 1.44x what 32 heads' rate predicts by FLOPs, while the drain
// time of each grid (below) is within 3% of every forward row measured (b 1-2, 8-64 heads,
// sequence 4096-8192; docs/reference/pytorch-h100) and within 7% of every backward row.
//
// The drain time counts work in score tiles (block_m x block_n of QK^T), hands CTAs out in launch
// order (blockIdx.x fastest: the tile index, then batch, then head) to the first of sm_count x
// ctas_per_sm slots to fall free, and returns when the last slot finishes. Ratios of it between
// two shapes of the same tiling are what the table uses (kernel_table.hpp). A sliding window
// (AttentionShape::window) leaves each CTA the tiles FlashAttention-2's local attention runs: a
// windowed shape is priced from a full row of the same sizes by the tiles inside its window.
//
// Host-only and C++17.
#pragma once

#include "model/kernel_shape.hpp"

#include <cstdint>
#include <optional>

namespace commbound::calibration {

struct AttentionTiling {
  std::int64_t block_m = 0;  // query rows a tile covers
  std::int64_t block_n = 0;  // key rows a tile covers
  int ctas_per_sm = 1;       // CTAs of this kernel resident on one SM at once
};

// FlashAttention-2 as PyTorch's SDPA flash backend launches it on an H100 or A100 (shared memory
// per block of 144 KB or more): pytorch/pytorch aten/src/ATen/native/transformers/cuda/flash_attn/
// flash_fwd_launch_template.h run_mha_fwd_hdim64/128 and flash_bwd_launch_template.h
// run_mha_bwd_hdim64/128. Forward: one CTA per block_m query rows, looping over key tiles;
// backward: one CTA per block_n key rows, looping over query tiles.
//   head_dim 128  forward 128 x 64, 4 warps; backward 64 x 128, 8 warps ("144KB, 1 CTAs ... in H100")
//   head_dim 64   forward 128 x 128, 4 warps; backward 128 x 128, 8 warps
// CTAs per SM, DERIVED from the kernels' resources (not stated in the source): a 4-warp forward
// CTA holds 48-64 KB of shared memory and up to 255 registers a thread (32,640 of an SM's 65,536),
// so two run on one SM; the 8-warp backward CTA one. nullopt for other head dimensions.
std::optional<AttentionTiling> flash2_tiling(std::int64_t head_dim, model::Direction direction);

// cuDNN's fused attention on H100 (Transformer Engine's FusedAttention, PyTorch SDPA's cuDNN
// backend) at head_dim 128. Our H200 traces name its kernels sm90_flash_fprop_wgmma_f16_knob_7_
// 64x128x128_4x1x1 and sm90_flash_bprop_wgmma_f16_knob_26_64x64x128_1x4x1
// (scenarios/traces/h200/llama2-7b-4layers-eager.json.gz): warpgroup tiles of 64 rows, how many a
// CTA holds not stated. DERIVED from the table's own cuDNN rows: of the tilings those names allow
// (64-256 query rows forward, 64-256 key rows backward, one or two CTAs an SM), the one whose drain
// times carry each H100 row from its nearest other row best (leave-one-out over the 146 causal
// rows of each direction): forward 128 query rows a CTA, backward 128 key rows, one CTA an SM
// (FlashAttention-3's hdim-128 tiles), mean error 5.4% forward and 6.0% backward where FLOPs
// carry them at 18% and 17% (bench/attention_tiling_loo.py). nullopt for other head dimensions.
std::optional<AttentionTiling> cudnn_tiling(std::int64_t head_dim, model::Direction direction);

// The time, in score tiles, that `slots` concurrent CTA slots take to run every CTA of `s` (its
// direction picks the grid above) in launch order. Grids of more than 2^18 CTAs (over a thousand
// waves on an H100, where the tail is under 0.2% of the time) are taken as fluid: their tiles over
// the slots. `slots` must be positive.
double attention_drain_tiles(const model::AttentionShape& s, const AttentionTiling& tiling, long slots);

}  // namespace commbound::calibration
