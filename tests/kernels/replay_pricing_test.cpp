// Pricing a replayed sequence from a calibration table (no GPU needed), by the table's one rule
// (calibration::KernelTable::price): exact rows, the nearest row's rate, the table's roofline.
#include "kernels/device/replay.hpp"

#include <gtest/gtest.h>

namespace commbound::kernels {
namespace {

using model::AttentionShape;
using model::Direction;
using model::GemmLayout;
using model::GemmShape;
using calibration::KernelTable;
using calibration::KernelTiming;
using model::MemoryBoundShape;

TEST(ReplayPricing, ExactNearestAndRooflineOps) {
  // [device] 1000 GB/s copy, 100 TFLOP/s GEMM.
  KernelTable table;
  table.set_device({1e12, 1e14});
  const GemmShape qkv{8192, 12288, 4096, GemmLayout::forward};
  table.add(calibration::GemmRow{qkv, KernelTiming{1.0e-3, 1.1e-3, 1.2e-3}});
  table.add(calibration::MemoryBoundRow{{"adamw", 1, 1 << 20}, 30.0 * (1 << 20), KernelTiming{0.5e-3, 0.5e-3, 0.5e-3}});
  table.add(calibration::MemoryBoundRow{{"adamw", 1, 1 << 30}, 30.0 * (1 << 30), KernelTiming{0.4, 0.4, 0.4}});

  ReplayResult r;
  r.ops.push_back({"layer0.fwd.qkv", qkv, 0});
  // 3 x 2^28 parameters: ln(3 x 2^28 / 2^30) = ln 0.75 from the 2^30 row, ln 768 from the 2^20 one.
  r.ops.push_back({"optimizer.adamw", MemoryBoundShape{"adamw", 1, 3 << 28}, 0});
  r.ops.push_back({"layer0.fwd.attention", AttentionShape{Direction::forward, 1, 8, 8, 1024, 128, true}, 0});

  const TablePricing p = price_with_table(r, table);
  EXPECT_EQ(p.exact, 1);
  EXPECT_EQ(p.nearest, 1);
  EXPECT_EQ(p.roofline, 1);
  // qkv: its row's 1.1 ms. AdamW moves 30 bytes a parameter: 400 ms x (3 x 2^28 / 2^30) = 300 ms.
  // Attention, no row: causal 4 x 1024^2 x 8 x 128 / 2 = 2.147483648e9 FLOPs at 1e14 FLOP/s
  // = 0.02147483648 ms, above its 4 x 2 x 1024 x 8 x 128 = 8.4 MB at 1e12 B/s (0.0084 ms).
  EXPECT_NEAR(p.sum_ms, 1.1 + 300.0 + 0.02147483648, 1e-9);
}

TEST(ReplayReport, GroupsALayersOpsAcrossLayers) {
  ReplayOptions o;
  o.model = {"llama2-7b", 32, 4096, 32, 32, 11008, 32000};
  o.layers = 2;
  ReplayResult r;
  const GemmShape qkv{8192, 12288, 4096, GemmLayout::forward};
  r.ops = {{"layer0.fwd.qkv", qkv, 1.0}, {"layer1.fwd.qkv", qkv, 1.5}};
  r.sum_isolated_ms = 2.5;
  r.replay = {2.0, 2.0, 2.0};
  const std::string text = format_replay(o, r);
  // Both layers' qkv on one line: count 2, 1.0 + 1.5 ms; the sum is 25% over the 2 ms replay.
  EXPECT_NE(text.find("layer*.fwd.qkv                         2       2.5000  gemm forward 8192x12288x4096"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("off by +25.0%"), std::string::npos) << text;
}

}  // namespace
}  // namespace commbound::kernels
