// Calibration-table rows: the shapes a Llama step needs (hand-derived from the model's
// dimensions), the TOML round trip, and errors that name file, line, key and value.
#include "kernels/model_grid.hpp"
#include "kernels/op_table.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace commbound::kernels {
namespace {

ModelDims llama2_7b() { return {"llama2-7b", 32, 4096, 32, 32, 11008, 32000}; }

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path;
}

TEST(ModelDims, Llama2SevenBHasItsPublishedParameterCount) {
  // 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32000 x 4096 + 4096 = 6,738,415,616.
  EXPECT_DOUBLE_EQ(llama2_7b().params(), 6738415616.0);
}

TEST(StepShapes, SevenBLayerAtTensorParallelTwo) {
  const OpTable t = step_shapes(llama2_7b(), {2, 4096, 2});
  // T = 2 x 4096 = 8192 tokens; per tp rank: qkv out = 3 x 4096 / 2 = 6144, ffn 5504, vocab 16000.
  ASSERT_EQ(t.gemm.size(), 15u);
  EXPECT_EQ(t.gemm[0].m, 8192);
  EXPECT_EQ(t.gemm[0].n, 6144);
  EXPECT_EQ(t.gemm[0].k, 4096);
  EXPECT_EQ(t.gemm[0].layout, GemmLayout::forward);
  // dgrad of the qkv projection: dX [8192 x 4096] = dY [8192 x 6144] W [6144 x 4096].
  EXPECT_EQ(t.gemm[1].n, 4096);
  EXPECT_EQ(t.gemm[1].k, 6144);
  // wgrad: dW [6144 x 4096] = dY^T X, reducing over the 8192 tokens.
  EXPECT_EQ(t.gemm[2].m, 6144);
  EXPECT_EQ(t.gemm[2].k, 8192);
  EXPECT_EQ(t.gemm[6].n, 2 * 5504);   // gate_up forward
  EXPECT_EQ(t.gemm[12].n, 16000);     // LM head forward
  ASSERT_EQ(t.attention.size(), 2u);
  EXPECT_EQ(t.attention[0].heads, 16);
  EXPECT_EQ(t.attention[0].head_dim, 128);
  // Causal forward FLOPs: 4 b h s^2 d / 2 = 4 x 2 x 16 x 4096^2 x 128 / 2.
  EXPECT_DOUBLE_EQ(t.attention[0].flops(), 4.0 * 2 * 16 * 4096.0 * 4096 * 128 / 2);
  EXPECT_DOUBLE_EQ(t.attention[1].flops(), 2.5 * t.attention[0].flops());
}

TEST(StepShapes, TensorParallelMustDivideTheKvHeads) {
  const ModelDims m{"llama2-70b", 80, 8192, 64, 8, 28672, 32000};
  EXPECT_TRUE(check_step(m, {1, 4096, 8}).has_value());
  const Status s = check_step(m, {1, 4096, 16});
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("KV heads"), std::string::npos);
}

TEST(OpTable, MergeKeepsOneRowPerShape) {
  OpTable a = step_shapes(llama2_7b(), {1, 4096, 1});
  const std::size_t n = a.size();
  a.merge(step_shapes(llama2_7b(), {1, 4096, 1}));
  EXPECT_EQ(a.size(), n);
  // Micro-batch 2 at seq 2048 has the same 4096 tokens: the GEMMs and memory-bound rows repeat,
  // the attention rows (batch 2, seq 2048) are new.
  a.merge(step_shapes(llama2_7b(), {2, 2048, 1}));
  EXPECT_EQ(a.size(), n + 2);
}

TEST(OpTable, RoundTripsThroughToml) {
  OpTable t = step_shapes(llama2_7b(), {1, 2048, 4});
  t.gemm[0].timing = {0.25, 0.5, 0.75};
  t.memory_bound[0].bytes = 1234;
  t.memory_bound[0].timing = {1.0 / 3, 0.4, 0.5};
  const auto path = write_temp("commbound_op_table_test.toml", format_op_rows(t, true));
  auto back = read_op_table(path);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  ASSERT_EQ(back->size(), t.size());
  EXPECT_EQ(back->gemm[0].timing.p50_ms, 0.5);
  EXPECT_EQ(back->memory_bound[0].timing.p10_ms, 1.0 / 3);  // shortest round-trip text, exact
  EXPECT_EQ(back->memory_bound[0].bytes, 1234);
  EXPECT_EQ(back->attention[1].backward, true);
  std::filesystem::remove(path);
}

TEST(OpTable, UnknownKeyNamesFileLineKeyAndValue) {
  const auto path = write_temp("commbound_op_table_bad.toml",
                               "[[gemm]]\nm = 1\nn = 2\nk = 3\nlayout = \"forward\"\nmm = 7\n");
  auto t = read_op_table(path);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().message, path.string() + ":6: mm = 7: unknown key");
  std::filesystem::remove(path);
}

TEST(OpTable, BadValueNamesFileLineKeyAndValue) {
  const auto path = write_temp("commbound_op_table_bad2.toml",
                               "[[gemm]]\nm = 1\nn = 2\nk = 3\nlayout = \"sideways\"\n");
  auto t = read_op_table(path);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().message, path.string() + ":5: layout = \"sideways\": must be one of forward, dgrad, wgrad");
  std::filesystem::remove(path);
}

TEST(TableName, ShippedPresetNamesTheTableElseTheDeviceName) {
  // calibration/gpus.toml: h100-sxm5 has device_name "NVIDIA H100 80GB HBM3".
  EXPECT_EQ(table_name_for_device("calibration/gpus.toml", "NVIDIA H100 80GB HBM3"), "h100-sxm5");
  EXPECT_EQ(table_name_for_device("calibration/gpus.toml", "NVIDIA GeForce RTX 4090"), "nvidia-geforce-rtx-4090");
  EXPECT_EQ(table_name_for_device("no/such/gpus.toml", "NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
}

}  // namespace
}  // namespace commbound::kernels
