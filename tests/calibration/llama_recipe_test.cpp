// The Llama step recipe: a layer's FLOPs against the hand derivation, the order and names of its
// kernels, their shapes under tensor and context parallelism, and the layouts it refuses.
//
// FLOPs of one layer, forward and backward, on T tokens (T = micro_batch x seq / cp per rank):
//   GEMMs: each weight w of the layer's matrix products costs 2 T FLOPs forward and twice that
//   backward (input and weight gradients): 6 x P_layer x T / tp, P_layer = 2 h^2 + 2 h kv + 3 h ffn
//   (q and o, k and v, gate, up and down; norms are not products), split over tp ranks;
//   attention: causal forward 4 b s^2 h / 2 (QK^T and PV over the unmasked half), backward 2.5 x
//   the forward: 3.5 x 2 b s^2 h / (tp cp) on a rank, cp ring blocks of seq / cp each.
#include "calibration/table/llama_recipe.hpp"

#include <gtest/gtest.h>

#include <set>

namespace commbound::calibration {
namespace {

ModelSpec llama2_7b() { return {"llama2-7b", 32, 4096, 32, 32, 11008, 32000}; }

StepLayout layout(int micro_batch, int seq, int tp, int cp) {
  StepLayout l;
  l.micro_batch = micro_batch;
  l.seq = seq;
  l.tp = tp;
  l.cp = cp;
  return l;
}

double total_flops(const std::vector<RecipeKernel>& kernels) {
  double sum = 0;
  for (const RecipeKernel& k : kernels) sum += flops(k.shape) * k.runs;
  return sum;
}

double layer_flops(const LlamaRecipe& r) {
  return total_flops(r.layer(Direction::forward)) + total_flops(r.layer(Direction::backward));
}

TEST(LlamaRecipe, LayerFlopsAreSixTimesItsWeightsPerTokenPlusAttention) {
  const double h = 4096, ffn = 11008;
  const double p_layer = 2 * h * h + 2 * h * h + 3 * h * ffn;  // 202,375,168 weights in products
  EXPECT_DOUBLE_EQ(p_layer, 202375168.0);
  // Micro-batch 2 x seq 4096 on one GPU: T = 8192.
  const LlamaRecipe one(llama2_7b(), layout(2, 4096, 1, 1));
  EXPECT_DOUBLE_EQ(layer_flops(one), 6 * p_layer * 8192 + 3.5 * 2 * 2 * 4096.0 * 4096 * h);
  // tp 2, cp 2, micro-batch 1 x seq 8192: T = 4096 tokens a rank, half the heads and FFN; ring
  // attention runs 2 blocks of seq 4096.
  const LlamaRecipe split(llama2_7b(), layout(1, 8192, 2, 2));
  EXPECT_DOUBLE_EQ(layer_flops(split), 6 * p_layer * 4096 / 2 + 3.5 * 2 * 1 * 8192.0 * 8192 * h / (2 * 2));
  // The LM head: 6 x vocab x h x T / tp; the embedding and the norms are not products.
  EXPECT_DOUBLE_EQ(total_flops(split.lm_head(Direction::forward)) + total_flops(split.lm_head(Direction::backward)),
                   6 * 32000 * h * 4096 / 2);
  EXPECT_EQ(total_flops(split.embedding(Direction::forward)), 0);
}

TEST(LlamaRecipe, KernelsInTheOrderALayerRunsThem) {
  const LlamaRecipe r(llama2_7b(), layout(2, 4096, 2, 1));
  std::vector<std::string> names;
  for (const RecipeKernel& k : r.layer(Direction::forward)) names.push_back(k.name + (k.tp_reduction.empty() ? "" : "|" + k.tp_reduction));
  EXPECT_EQ(names, (std::vector<std::string>{"rmsnorm", "qkv", "rope", "attention", "o_proj|attn", "residual",
                                             "rmsnorm2", "gate_up", "swiglu", "down|mlp", "residual2"}));
  names.clear();
  for (const RecipeKernel& k : r.layer(Direction::backward)) names.push_back(k.name + (k.tp_reduction.empty() ? "" : "|" + k.tp_reduction));
  EXPECT_EQ(names, (std::vector<std::string>{"down.dgrad", "down.wgrad", "swiglu", "gate_up.dgrad",
                                             "gate_up.wgrad|mlp", "rmsnorm2", "residual2", "o_proj.dgrad", "o_proj.wgrad",
                                             "attention", "rope", "qkv.dgrad", "qkv.wgrad|attn", "rmsnorm", "residual"}));
  names.clear();
  for (const RecipeKernel& k : r.lm_head(Direction::backward)) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"cross_entropy", "logits.dgrad", "logits.wgrad", "rmsnorm_final"}));
}

TEST(LlamaRecipe, ShapesFollowTheLayout) {
  // tp 2, cp 2, micro-batch 2 x seq 4096: T = 4096 tokens a rank.
  const LlamaRecipe r(llama2_7b(), layout(2, 4096, 2, 2));
  const auto fwd = r.layer(Direction::forward);
  // qkv: out (32 + 2 x 32) x 128 / 2 = 6144; o_proj in 2048; gate_up out 2 x 5504; down in 5504.
  EXPECT_EQ(std::get<GemmShape>(fwd[1].shape), (GemmShape{4096, 6144, 4096, GemmLayout::forward}));
  EXPECT_EQ(std::get<GemmShape>(fwd[4].shape), (GemmShape{4096, 4096, 2048, GemmLayout::forward}));
  EXPECT_EQ(std::get<GemmShape>(fwd[7].shape), (GemmShape{4096, 11008, 4096, GemmLayout::forward}));
  EXPECT_EQ(std::get<GemmShape>(fwd[9].shape), (GemmShape{4096, 4096, 5504, GemmLayout::forward}));
  // rope rotates q and k: (32 + 32) / 2 x 128; swiglu over the rank's FFN.
  EXPECT_EQ(std::get<MemoryBoundShape>(fwd[2].shape), (MemoryBoundShape{"rope_forward", 4096, 4096}));
  EXPECT_EQ(std::get<MemoryBoundShape>(fwd[8].shape), (MemoryBoundShape{"swiglu_forward", 4096, 5504}));
  // Ring attention: 2 blocks, each causal over seq / cp = 2048 of the rank's 16 heads.
  EXPECT_EQ(std::get<AttentionShape>(fwd[3].shape), (AttentionShape{Direction::forward, 2, 16, 16, 2048, 128, true}));
  EXPECT_EQ(fwd[3].runs, 2);
  // Backward: dgrad {T, in, out}, wgrad {out, in, T}.
  const auto bwd = r.layer(Direction::backward);
  EXPECT_EQ(std::get<GemmShape>(bwd[11].shape), (GemmShape{4096, 4096, 6144, GemmLayout::dgrad}));
  EXPECT_EQ(std::get<GemmShape>(bwd[12].shape), (GemmShape{6144, 4096, 4096, GemmLayout::wgrad}));
  // Cross-entropy over the rank's vocabulary shard.
  EXPECT_EQ(std::get<MemoryBoundShape>(r.lm_head(Direction::forward)[2].shape),
            (MemoryBoundShape{"cross_entropy_forward", 4096, 16000}));
  // The optimizer over a flat shard, rounded up to whole parameters.
  const auto opt = LlamaRecipe::optimizer(1000.5);
  ASSERT_EQ(opt.size(), 2u);
  EXPECT_EQ(std::get<MemoryBoundShape>(opt[0].shape), (MemoryBoundShape{"grad_norm", 1, 1001}));
  EXPECT_EQ(std::get<MemoryBoundShape>(opt[1].shape), (MemoryBoundShape{"adamw", 1, 1001}));
}

TEST(LlamaRecipe, SizesTheDegreesDoNotDivideRoundUp) {
  // tp 3 of 32 heads: 10.67 -> 11 heads, FFN 11008 / 3 = 3669.3 -> 3670; check_exact says why.
  const LlamaRecipe r(llama2_7b(), layout(1, 4096, 3, 1));
  const auto fwd = r.layer(Direction::forward);
  EXPECT_EQ(std::get<AttentionShape>(fwd[3].shape).heads, 11);
  EXPECT_EQ(std::get<MemoryBoundShape>(fwd[8].shape).width, 3670);
  const Status s = check_exact(llama2_7b(), layout(1, 4096, 3, 1));
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("tp must divide the 32 heads"), std::string::npos) << s.error().message;
  const ModelSpec llama70b{"llama2-70b", 80, 8192, 64, 8, 28672, 32000};
  EXPECT_TRUE(check_exact(llama70b, layout(1, 4096, 8, 1)).has_value());
  const Status kv = check_exact(llama70b, layout(1, 4096, 16, 1));
  ASSERT_FALSE(kv.has_value());
  EXPECT_NE(kv.error().message.find("KV heads"), std::string::npos);
  EXPECT_FALSE(check_exact(llama70b, layout(1, 4096, 8, 3)).has_value());  // cp 3 does not divide 4096
}

}  // namespace
}  // namespace commbound::calibration
