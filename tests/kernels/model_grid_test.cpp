// The calibration tool's grid: the distinct shapes of a Llama step at a layout, worked out by hand
// from the model's dimensions, and one row per shape across layouts.
#include "kernels/host/model_grid.hpp"

#include <gtest/gtest.h>

#include <string>

namespace commbound::kernels {
namespace {

using model::AttentionShape;
using model::Direction;
using model::GemmLayout;
using model::GemmShape;
using model::ModelSpec;
using model::StepLayout;

ModelSpec llama2_7b() { return {"llama2-7b", 32, 4096, 32, 32, 11008, 32000}; }

StepLayout layout(int micro_batch, int seq, int tp) {
  StepLayout l;
  l.micro_batch = micro_batch;
  l.seq = seq;
  l.tp = tp;
  return l;
}

TEST(StepShapes, SevenBAtTensorParallelTwo) {
  const calibration::KernelTable t = step_shapes(llama2_7b(), layout(2, 4096, 2));
  // T = 2 x 4096 = 8192 tokens; per tp rank: qkv out = 3 x 4096 / 2 = 6144, ffn 5504, vocab 16000.
  // Five linear layers (qkv, o_proj, gate_up, down, logits), three products each, in the order a
  // step first runs them: the layer's forwards, the LM head's forward and backward, the layer's
  // backward products (last layer first).
  ASSERT_EQ(t.gemms().size(), 15u);
  EXPECT_EQ(t.gemms()[0].shape, (GemmShape{8192, 6144, 4096, GemmLayout::forward}));   // qkv
  EXPECT_EQ(t.gemms()[1].shape, (GemmShape{8192, 4096, 2048, GemmLayout::forward}));   // o_proj: in = 4096 / 2
  EXPECT_EQ(t.gemms()[2].shape, (GemmShape{8192, 11008, 4096, GemmLayout::forward}));  // gate_up: 2 x 5504
  EXPECT_EQ(t.gemms()[4].shape, (GemmShape{8192, 16000, 4096, GemmLayout::forward}));  // logits
  // The qkv projection's input gradient dX [8192 x 4096] = dY [8192 x 6144] W [6144 x 4096] and
  // weight gradient dW [6144 x 4096] = dY^T X over the 8192 tokens come last.
  EXPECT_EQ(t.gemms()[13].shape, (GemmShape{8192, 4096, 6144, GemmLayout::dgrad}));
  EXPECT_EQ(t.gemms()[14].shape, (GemmShape{6144, 4096, 8192, GemmLayout::wgrad}));
  ASSERT_EQ(t.attentions().size(), 2u);
  EXPECT_EQ(t.attentions()[0].shape, (AttentionShape{Direction::forward, 2, 16, 16, 4096, 128, true}));
  EXPECT_EQ(t.attentions()[1].shape.direction, Direction::backward);
  EXPECT_EQ(t.attentions()[0].implementation, "commbound");
  // rmsnorm, rope, swiglu, embedding, cross-entropy forward and backward, and residual_add.
  EXPECT_EQ(t.memory_bounds().size(), 11u);
  for (const auto& r : t.gemms()) EXPECT_FALSE(r.time.has_value());
}

TEST(StepShapes, OneRowPerShapeAcrossLayouts) {
  calibration::KernelTable a = step_shapes(llama2_7b(), layout(1, 4096, 1));
  const std::size_t n = a.size();
  a.add_rows(step_shapes(llama2_7b(), layout(1, 4096, 1)));
  EXPECT_EQ(a.size(), n);
  // Micro-batch 2 at seq 2048 has the same 4096 tokens: the GEMMs and memory-bound rows repeat,
  // the attention rows (batch 2, seq 2048) are new.
  a.add_rows(step_shapes(llama2_7b(), layout(2, 2048, 1)));
  EXPECT_EQ(a.size(), n + 2);
}

TEST(DefaultGrid, SkipsLayoutsTheModelCannotSplitAndAddsTheOptimizer) {
  GridOptions o;
  o.models = {"llama2-7b"};
  o.seqs = {4096};
  o.micro_batches = {1};
  o.tps = {1, 3};  // 3 divides neither the 32 heads nor the vocabulary: skipped
  auto grid = default_grid({llama2_7b()}, o);
  ASSERT_TRUE(grid) << grid.error().message;
  // One step's 15 + 2 + 11 shapes, and grad_norm and adamw at 11 sizes 2^20 .. 2^30.
  EXPECT_EQ(grid->size(), 15u + 2 + 11 + 22);
  o.models = {"llama2-9b"};
  EXPECT_FALSE(default_grid({llama2_7b()}, o));
}

}  // namespace
}  // namespace commbound::kernels
