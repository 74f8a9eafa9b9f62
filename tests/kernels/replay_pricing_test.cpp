// Pricing a replayed sequence from a calibration table (no GPU needed): exact rows, memory-bound
// rows scaled from the nearest size by the bytes they move, and ops the table lacks.
#include "kernels/memory_bound_op.hpp"
#include "kernels/replay.hpp"

#include <gtest/gtest.h>

namespace commbound::kernels {
namespace {

TEST(ReplayPricing, ExactRowsScaledMemoryBoundRowsAndMissingOps) {
  OpTable table;
  table.gemm.push_back({8192, 12288, 4096, GemmLayout::forward, {1.0, 1.1, 1.2}});
  table.memory_bound.push_back({"adamw", 1, 1 << 20, 0, {0.0, 0.5, 0.0}});
  table.memory_bound.push_back({"adamw", 1, 1 << 30, 0, {0.0, 400.0, 0.0}});

  ReplayResult r;
  GemmRow g{8192, 12288, 4096, GemmLayout::forward, {}};
  r.ops.push_back({"layer0.fwd.qkv", describe(g), 0, std::nullopt});
  MemoryBoundRow adam{"adamw", 1, 3 << 28, 0, {}};  // 3 x 2^28: nearest by bytes is 2^30 (log distance)
  r.ops.push_back({"optimizer.adamw", describe(adam), 0, adam});
  AttentionRow a;
  a.batch = 1;
  a.heads = a.kv_heads = 8;
  a.seq = 1024;
  a.head_dim = 128;
  r.ops.push_back({"layer0.fwd.attention", describe(a), 0, std::nullopt});

  const TablePricing p = price_with_table(r, table);
  // AdamW moves 30 bytes a parameter: 3 x 2^28 parameters cost 400 ms x (3 x 2^28 / 2^30) = 300 ms.
  EXPECT_EQ(p.exact, 1);
  EXPECT_EQ(p.scaled, 1);
  EXPECT_EQ(p.missing, 1);
  EXPECT_DOUBLE_EQ(p.sum_ms, 1.1 + 300.0);
}

TEST(ReplayReport, GroupsALayersOpsAcrossLayers) {
  ReplayOptions o;
  o.model = {"llama2-7b", 32, 4096, 32, 32, 11008, 32000};
  o.layers = 2;
  ReplayResult r;
  r.ops = {{"layer0.fwd.qkv", "gemm forward 8192x12288x4096", 1.0, std::nullopt},
           {"layer1.fwd.qkv", "gemm forward 8192x12288x4096", 1.5, std::nullopt}};
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
