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

}  // namespace
}  // namespace commbound::kernels
