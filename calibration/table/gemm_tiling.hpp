// GemmTiling: how cuBLAS cuts a matrix product into output tiles and how many run on an SM at
// once, so that a grouped product (the local experts' GEMMs of an MoE layer, one launch or a few
// concurrent ones) is priced by what sets its length: the waves of its experts' tiles.
//
// Why not by FLOPs: each expert's product is cut into tiles of block_m token rows; an expert with
// 70 tokens runs a whole 128-row tile, and one with 129 runs two. Priced by FLOPs from a large
// measured product, ragged and small experts cost only their rows, as if the SMs stayed full. Here
// a tile of a forward or dgrad product costs its k (the depth it loops over) and a wgrad tile its
// expert's tokens (the depth it reduces over); the tiles of all the group's products go, in launch
// order, to the first of sm_count x ctas_per_sm slots to fall free, and the group takes as long as
// the last slot. The group is priced as its merged product (below: one product with the same tiles
// were its experts equal), carried from the table's rows by FLOPs as any product is, times the
// ratio of the two drain times (kernel_table.hpp). Only that ratio rests on the tile size: carried
// between the table's own H100 rows by a fixed tile's drain time, a product comes out worse than by
// FLOPs (mean |error| 5.0% against 2.8% forward, over 720 rows; cuBLAS picks its tile per shape;
// bench/gemm_tiling_loo.py), so single products keep their FLOPs.
//
// Host-only and C++17.
#pragma once

#include "model/kernel_shape.hpp"

#include <cstdint>

namespace commbound::calibration {

struct GemmTiling {
  std::int64_t block_m = 0;  // token rows an output tile covers
  std::int64_t block_n = 0;  // output columns it covers
  std::int64_t block_k = 0;  // the depth of one step of its main loop
  int ctas_per_sm = 1;
};

// cuBLAS's bf16 tensor-core kernels on H100 as our profiled layers launched them
// (docs/reference/pytorch-h100-profiled/layer_kernels.csv): the most launched is
// sm90_tst_256x128_64x4 (178 of the 385 GEMM launches; others 320x128, 192x192, 128x256), a
// 256 x 128 output tile stepping 64 deep, 4 stages of (256 + 128) x 64 bf16 operands in shared
// memory (196 KB of an SM's 228 KB): one CTA per SM. Which side runs along the tokens is not in
// the name; the 128 side is taken (DERIVED), the smaller padding of a small expert.
inline constexpr GemmTiling kCublasH100Tiling{128, 256, 64, 1};

// The one product with a group's tiles were its experts equal: forward and dgrad, the experts'
// summed tokens x n x k; wgrad, the experts' stacked m x n over their mean tokens (rounded up).
// A product that is not grouped is itself.
model::GemmShape merged_product(const model::GemmShape& s);

// The time, in tile steps (block_k deep), that `slots` concurrent CTA slots take to run every
// output tile of `s` (each product of a group, or the one product) in launch order; a product's
// depth rounds up to whole steps. Groups of more than 2^18 tiles are taken as fluid: their steps
// over the slots. `slots` must be positive.
double gemm_drain_steps(const model::GemmShape& s, const GemmTiling& tiling, long slots);

}  // namespace commbound::calibration
