// The drain time of a grouped matrix product (an MoE layer's local experts in one launch), worked
// by hand on grids small enough to schedule on paper, and the table pricing a grouped product by
// that time instead of by FLOPs.
#include "calibration/table/gemm_tiling.hpp"
#include "calibration/table/kernel_table.hpp"

#include <gtest/gtest.h>

namespace commbound::calibration {
namespace {

using namespace commbound::model;

constexpr double kMs = 1e-3;
constexpr GemmTiling kTiling{128, 256, 64, 1};

GemmShape grouped(GemmLayout layout, std::int64_t m, std::int64_t n, std::int64_t k, std::vector<std::int64_t> rows) {
  GemmShape s{m, n, k, layout};
  s.group = std::move(rows);
  return s;
}

// Forward, n = 256 (one column of tiles), k = 640 (10 steps of 64): experts of 100, 129 and 300
// tokens run 1 + 2 + 3 = 6 tiles of 10 steps. On 4 slots: 4 tiles, then 2: 20 steps, where their
// 529 rows at full tiles would take 529 / 128 x 10 / 4 = 10.3.
TEST(GemmTiling, RaggedExpertsPayWholeTilesInWaves) {
  EXPECT_DOUBLE_EQ(gemm_drain_steps(grouped(GemmLayout::forward, 177, 256, 640, {100, 129, 300}), kTiling, 4), 20);
  // Four experts of 64 tokens on 2 slots: 4 tiles, 2 waves, 20 steps; one product of their 256
  // rows is 2 tiles, one wave: 10.
  EXPECT_DOUBLE_EQ(gemm_drain_steps(grouped(GemmLayout::forward, 64, 256, 640, {64, 64, 64, 64}), kTiling, 2), 20);
  EXPECT_DOUBLE_EQ(gemm_drain_steps(GemmShape{256, 256, 640, GemmLayout::forward}, kTiling, 2), 10);
  // dgrad is tiled as forward: n = 512 is 2 columns, so 100 tokens are 2 tiles; k = 100 rounds up
  // to 2 steps. Experts of 100 and 0 tokens (the empty one launches nothing) on 1 slot: 4 steps.
  EXPECT_DOUBLE_EQ(gemm_drain_steps(grouped(GemmLayout::dgrad, 50, 512, 100, {100, 0}), kTiling, 1), 4);
}

// wgrad, dW [128 x 256]: one tile per expert, reducing over its tokens: 100 tokens are 2 steps,
// 129 are 3. One slot runs them one after the other (5 steps); two at once, the longer sets it (3).
TEST(GemmTiling, AWeightGradientTileReducesOverItsExpertsTokens) {
  const GemmShape s = grouped(GemmLayout::wgrad, 128, 256, 115, {100, 129});
  EXPECT_DOUBLE_EQ(gemm_drain_steps(s, kTiling, 1), 5);
  EXPECT_DOUBLE_EQ(gemm_drain_steps(s, kTiling, 2), 3);
}

// A group's merged product has its tiles were its experts equal: forward, their 100 + 129 + 300
// tokens as one product's rows; wgrad, the 3 experts' dW stacked (3 x 128 rows) over their mean
// tokens, rounded up (177).
TEST(GemmTiling, AGroupsMergedProductHasItsTiles) {
  const GemmShape fwd = merged_product(grouped(GemmLayout::forward, 177, 256, 640, {100, 129, 300}));
  EXPECT_EQ(fwd.m, 529);
  EXPECT_EQ(fwd.k, 640);
  EXPECT_TRUE(fwd.group.empty());
  const GemmShape wgrad = merged_product(grouped(GemmLayout::wgrad, 128, 256, 177, {100, 129, 300}));
  EXPECT_EQ(wgrad.m, 3 * 128);
  EXPECT_EQ(wgrad.k, 177);
}

// The table prices a group as its merged product, by FLOPs from the nearest row, times the two
// drain times on its SMs. Row 1024^3 forward at 0.04 ms. Four experts of 64 tokens (n = k = 1024):
// merged, 256 x 1024 x 1024, a quarter of the row's FLOPs: 0.01 ms; on 2 SMs the group's 4 x 4
// tiles of 16 steps drain in 8 waves (128 steps), the merged product's 2 x 4 in 4 (64): 0.02 ms,
// each expert padding its 64 rows to a 128-row tile. Without sm_count, the FLOPs.

TEST(GemmTiling, TheTablePricesAGroupByItsDrainTime) {
  KernelTable t;
  TableProvenance p;
  p.gpu = "Test GPU";
  p.sm_count = 2;
  t.set_provenance(p);
  t.set_device({1e12, 1e14});
  t.add(GemmRow{{1024, 1024, 1024, GemmLayout::forward}, KernelTiming{0.04 * kMs, 0.04 * kMs, 0.04 * kMs}});
  const GemmShape experts = grouped(GemmLayout::forward, 64, 1024, 1024, {64, 64, 64, 64});
  EXPECT_DOUBLE_EQ(experts.flops(), 2.0 * 256 * 1024 * 1024);
  const Priced priced = t.price(experts);
  EXPECT_EQ(priced.match, Match::nearest);
  EXPECT_DOUBLE_EQ(priced.seconds, 0.02 * kMs);
  p.sm_count.reset();
  t.set_provenance(p);
  EXPECT_DOUBLE_EQ(t.price(experts).seconds, 0.01 * kMs);
}

}  // namespace
}  // namespace commbound::calibration
