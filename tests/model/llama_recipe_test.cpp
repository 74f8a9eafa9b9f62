// The Llama step recipe: a layer's FLOPs against the hand derivation, the order and names of its
// kernels, their shapes under tensor and context parallelism, and the layouts it refuses.
//
// FLOPs of one layer, forward and backward, on T tokens (T = micro_batch x seq / cp per rank):
//   GEMMs: each weight w of the layer's matrix products costs 2 T FLOPs forward and twice that
//   backward (input and weight gradients): 6 x P_layer x T / tp, P_layer = 2 h^2 + 2 h kv + 3 h ffn
//   (q and o, k and v, gate, up and down; norms are not products), split over tp ranks;
//   attention: causal forward 4 b s^2 h / 2 (QK^T and PV over the unmasked half), backward 2.5 x
//   the forward: 3.5 x 2 b s^2 h / (tp cp) on a rank, cp ring blocks of seq / cp each.
#include "model/llama_recipe.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace commbound::model {
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

// A small latent-attention model (8 heads over hidden 256; q latent 64, kv latent 32; query/key
// heads 16 + 8 rotary, value heads 16) at tp 2 with sequence parallelism, micro-batch 1 x seq 128:
// T = 128 tokens, the down-projections on the rank's 64. Its products' FLOPs are still 6 x the
// attention's weights x T / tp: the down-projections' whole weights (256 x 64 and 256 x 40) on
// T / tp tokens, the up-projections' and o's halves (64 x 4 x 24, 32 x 4 x 32, 4 x 16 x 256) on T.
// Attention: 4 heads a rank priced as (24 + 16) / 2 = 20 wide, 3.5 x 2 x 1 x 128^2 x 4 x 20.
TEST(LlamaRecipe, LatentAttentionRunsDownAndUpProjections) {
  ModelSpec m{"tiny-mla", 2, 256, 8, 8, 512, 1000};
  m.attention_head_dim = 16;
  m.rope_head_dim = 8;
  m.v_head_dim = 16;
  m.q_lora_rank = 64;
  m.kv_lora_rank = 32;
  StepLayout l = layout(1, 128, 2, 1);
  l.sequence_parallel = true;
  const LlamaRecipe r(m, l);
  const auto fwd = r.layer(Direction::forward);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < 11; ++i) names.push_back(fwd[i].name + (fwd[i].tp_reduction.empty() ? "" : "|" + fwd[i].tp_reduction));
  EXPECT_EQ(names, (std::vector<std::string>{"rmsnorm", "q_down", "q_norm", "q_up", "kv_down", "kv_norm", "kv_up",
                                             "rope", "attention", "o_proj|attn", "residual"}));
  EXPECT_EQ(std::get<GemmShape>(fwd[1].shape), (GemmShape{64, 64, 256, GemmLayout::forward}));
  EXPECT_EQ(std::get<GemmShape>(fwd[3].shape), (GemmShape{128, 96, 64, GemmLayout::forward}));
  EXPECT_EQ(std::get<GemmShape>(fwd[4].shape), (GemmShape{64, 40, 256, GemmLayout::forward}));
  EXPECT_EQ(std::get<GemmShape>(fwd[6].shape), (GemmShape{128, 128, 32, GemmLayout::forward}));
  EXPECT_EQ(std::get<GemmShape>(fwd[9].shape), (GemmShape{128, 256, 64, GemmLayout::forward}));
  EXPECT_EQ(std::get<AttentionShape>(fwd[8].shape), (AttentionShape{Direction::forward, 1, 4, 4, 128, 20, true}));
  const double weights = 256.0 * 64 + 64 * 8 * 24 + 256 * 40 + 32 * 8 * 32 + 8 * 16 * 256;
  EXPECT_DOUBLE_EQ(weights, m.attention_matmul_params());
  double attention_side = 0;
  for (Direction d : {Direction::forward, Direction::backward}) {
    for (const RecipeKernel& k : r.layer(d)) {
      const bool mlp = k.name == "gate_up" || k.name.rfind("gate_up.", 0) == 0 || k.name == "down" ||
                       k.name.rfind("down.", 0) == 0;
      if (!mlp) attention_side += flops(k.shape) * k.runs;
    }
  }
  EXPECT_DOUBLE_EQ(attention_side, 6 * weights * 128 / 2 + 3.5 * 2 * 128.0 * 128 * 4 * 20);
  // Backward ends with the queries' down-projection, whose input gradient tensor parallelism reduces.
  const auto bwd = r.layer(Direction::backward);
  const auto last = std::find_if(bwd.begin(), bwd.end(), [](const RecipeKernel& k) { return k.tp_reduction == "attn"; });
  ASSERT_NE(last, bwd.end());
  EXPECT_EQ(last->name, "q_down.wgrad");
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
}  // namespace commbound::model
