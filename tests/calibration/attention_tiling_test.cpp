// The drain time of a flash-attention grid, worked by hand on grids small enough to schedule on
// paper, and the table pricing a FlashAttention-2 shape it lacks by that time instead of by FLOPs.
#include "calibration/table/attention_tiling.hpp"
#include "calibration/table/kernel_table.hpp"

#include <gtest/gtest.h>

namespace commbound::calibration {
namespace {

using namespace commbound::model;

constexpr double kMs = 1e-3;

AttentionShape shape(Direction d, std::int64_t batch, std::int64_t heads, std::int64_t seq, bool causal = true) {
  return {d, batch, heads, heads, seq, 128, causal};
}

TEST(AttentionTiling, Flash2TilesAsPyTorchLaunchesIt) {
  const auto fwd = flash2_tiling(128, Direction::forward);
  const auto bwd = flash2_tiling(128, Direction::backward);
  ASSERT_TRUE(fwd && bwd);
  EXPECT_EQ(fwd->block_m, 128);
  EXPECT_EQ(fwd->block_n, 64);
  EXPECT_EQ(fwd->ctas_per_sm, 2);
  EXPECT_EQ(bwd->block_m, 64);
  EXPECT_EQ(bwd->block_n, 128);
  EXPECT_EQ(bwd->ctas_per_sm, 1);
  EXPECT_FALSE(flash2_tiling(96, Direction::forward));
}

// cuDNN's H100 kernels at head_dim 128: 128 query rows a CTA forward, 128 key rows backward, one
// CTA an SM; no tiling for a head_dim its rows do not measure.
TEST(AttentionTiling, CudnnTilesAsItsH100RowsDrain) {
  const auto fwd = cudnn_tiling(128, Direction::forward);
  const auto bwd = cudnn_tiling(128, Direction::backward);
  ASSERT_TRUE(fwd && bwd);
  EXPECT_EQ(fwd->block_m, 128);
  EXPECT_EQ(fwd->ctas_per_sm, 1);
  EXPECT_EQ(bwd->block_n, 128);
  EXPECT_EQ(bwd->ctas_per_sm, 1);
  EXPECT_FALSE(cudnn_tiling(192, Direction::backward));
}

// Forward, 128 x 64 tiles, sequence 512: 4 query tiles reading 2, 4, 6 and 8 key tiles (the causal
// diagonal). With a slot each the longest sets the time: 8. On 2 slots in launch order: 2 and 4
// start, 6 takes the slot free at 2 (done at 8), 8 the one free at 4 (done at 12). Without the mask
// every query tile reads all 8: 4 x 8 tiles over 2 slots, 16.
TEST(AttentionTiling, ForwardDrainsQueryTilesInLaunchOrder) {
  const AttentionTiling t{128, 64, 2};
  EXPECT_DOUBLE_EQ(attention_drain_tiles(shape(Direction::forward, 1, 1, 512), t, 264), 8);
  EXPECT_DOUBLE_EQ(attention_drain_tiles(shape(Direction::forward, 1, 1, 512), t, 2), 12);
  EXPECT_DOUBLE_EQ(attention_drain_tiles(shape(Direction::forward, 1, 1, 512, false), t, 2), 16);
  // Two heads: the second head's 2, 4, 6, 8 follow on the same two slots, each CTA on the slot free
  // first: A 2, B 4, A 8, B 12, then A 10, A 14, B 18, A 22: 22.
  EXPECT_DOUBLE_EQ(attention_drain_tiles(shape(Direction::forward, 1, 2, 512), t, 2), 22);
}

// Backward, 64 x 128 tiles, sequence 512: 4 key tiles meeting the query tiles from 2n on, of 8:
// 8, 6, 4, 2. One slot: all of them, 20; two slots: 8 and 6, then 4 after the 6 (10), 2 after the
// 8 (10).
TEST(AttentionTiling, BackwardDrainsKeyTiles) {
  const AttentionTiling t{64, 128, 1};
  EXPECT_DOUBLE_EQ(attention_drain_tiles(shape(Direction::backward, 1, 1, 512), t, 1), 20);
  EXPECT_DOUBLE_EQ(attention_drain_tiles(shape(Direction::backward, 1, 1, 512), t, 2), 10);
}

// A window of 128 keys, sequence 512, 128 x 64 forward tiles: query tile m starts at the key tile
// holding key 128 m - 127 (0, 0, 2, 4) and ends at the diagonal (2, 4, 6, 8): 2, 4, 4, 4 tiles,
// 14 of the full mask's 20. Backward, 64 x 128 tiles: key tile n runs from query tile 2n to the one
// holding query 128 (n + 1) - 1 + 127 (up to tiles 4, 6, 8, 8 of 8): 4, 4, 4, 2, again 14.
TEST(AttentionTiling, AWindowRunsOnlyTheTilesInsideIt) {
  AttentionShape fwd = shape(Direction::forward, 1, 1, 512);
  fwd.window = 128;
  EXPECT_DOUBLE_EQ(attention_drain_tiles(fwd, {128, 64, 2}, 1), 14);     // one slot: every tile
  EXPECT_DOUBLE_EQ(attention_drain_tiles(fwd, {128, 64, 2}, 264), 4);    // the longest CTA
  AttentionShape bwd = shape(Direction::backward, 1, 1, 512);
  bwd.window = 128;
  EXPECT_DOUBLE_EQ(attention_drain_tiles(bwd, {64, 128, 1}, 1), 14);
  // A window as long as the sequence is the causal mask; FLOPs count the pairs kept: s w - w^2 / 2.
  fwd.window = 512;
  EXPECT_DOUBLE_EQ(attention_drain_tiles(fwd, {128, 64, 2}, 1), 20);
  EXPECT_DOUBLE_EQ(fwd.flops(), shape(Direction::forward, 1, 1, 512).flops());
  fwd.window = 128;
  EXPECT_DOUBLE_EQ(fwd.flops(), 4.0 * (512 * 128 - 128 * 128 / 2) * 128);
}

// Past 2^18 CTAs the grid is fluid: batch 64 x 64 heads x 512 query tiles of sequence 65536 is 2^21
// CTAs, each (batch, head) 2 (1 + 2 + ... + 512) = 262,656 tiles, over 264 slots.
TEST(AttentionTiling, LargeGridsAreFluid) {
  const AttentionTiling t{128, 64, 2};
  EXPECT_DOUBLE_EQ(attention_drain_tiles(shape(Direction::forward, 64, 64, 65536), t, 264),
                   262656.0 * 64 * 64 / 264);
}

// A FlashAttention-2 row of one (batch, head), sequence 4096: 32 query tiles, the last reading 64
// key tiles. Twice the heads are 64 CTAs, still one wave on 132 SMs x 2: the same longest CTA, so
// the same time, where FLOPs would double it. Without the table's SM count, FLOPs it is.
TEST(AttentionTiling, TablePricesAMissingFlash2ShapeByItsDrainTime) {
  KernelTable t;
  TableProvenance p;
  p.gpu = "Test GPU";
  p.date = "2026-01-02";
  p.tool_commit = "abc1234";
  p.sm_count = 132;
  t.set_provenance(p);
  t.set_device({1e12, 1e14});
  const KernelTiming row{0.1 * kMs, 0.1 * kMs, 0.1 * kMs};
  t.add(AttentionRow{"flash2", shape(Direction::forward, 1, 1, 4096), row});
  t.add(AttentionRow{"commbound", shape(Direction::forward, 1, 1, 4096), row});
  const Priced flash2 = t.price(shape(Direction::forward, 1, 2, 4096), "flash2");
  EXPECT_EQ(flash2.match, Match::nearest);
  EXPECT_DOUBLE_EQ(flash2.seconds, 0.1 * kMs);
  // Our own kernel's tiling is not described: its row's FLOP rate, twice the time.
  EXPECT_DOUBLE_EQ(t.price(shape(Direction::forward, 1, 2, 4096), "commbound").seconds, 0.2 * kMs);
  // A window of 128 keys: every query tile past the first reads 4 key tiles (it starts at tile
  // 2m - 2 and ends at 2m + 2), 4 of the row's longest 64; by FLOPs, (4096 x 128 - 128^2 / 2) of
  // 4096^2 / 2 pairs.
  AttentionShape windowed = shape(Direction::forward, 1, 1, 4096);
  windowed.window = 128;
  EXPECT_DOUBLE_EQ(t.price(windowed, "flash2").seconds, 0.1 * kMs * 4 / 64);
  EXPECT_DOUBLE_EQ(t.price(windowed, "commbound").seconds, 0.1 * kMs * (4096.0 * 128 - 8192) / (4096.0 * 2048));
  p.sm_count.reset();
  t.set_provenance(p);
  EXPECT_DOUBLE_EQ(t.price(shape(Direction::forward, 1, 2, 4096), "flash2").seconds, 0.2 * kMs);
}

}  // namespace
}  // namespace commbound::calibration
