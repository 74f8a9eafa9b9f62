// The model zoo's one reader: the shipped calibration/models.toml, parameter counts against the
// published ones, and errors that name the file, line, key and value.
#include "model/model_zoo.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

namespace commbound::model {
namespace {

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ModelZoo, ReadsTheShippedZoo) {
  auto zoo = read_model_zoo("calibration/models.toml");
  ASSERT_TRUE(zoo) << zoo.error().message;
  std::vector<std::string> names;
  for (const ModelSpec& m : *zoo) names.push_back(m.name);
  for (const char* want : {"llama2-1b", "llama2-7b", "llama2-13b", "llama2-70b"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  // Llama-2 7B: 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32000 x 4096 + 4096
  // = 6,738,415,616 parameters (its published count).
  auto m = load_model("calibration/models.toml", "llama2-7b");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_DOUBLE_EQ(m->params(), 6738415616.0);
  EXPECT_EQ(m->head_dim(), 128);
}

TEST(ModelZoo, ErrorsNameTheFileLineKeyAndValue) {
  auto unknown = load_model("calibration/models.toml", "llama2-9b");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("no model named \"llama2-9b\" (known: "), std::string::npos);
  const std::string path = temp_file("bad_zoo.toml",
                                     "[tiny]\nlayers = 2\nhidden = 64\nheads = 3\nkv_heads = 1\nffn = 128\nvocab = 10\n");
  auto bad = read_model_zoo(path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, path + ":4: tiny.heads = 3: must divide hidden (64) unless head_dim is given");
  const std::string typo = temp_file("typo_zoo.toml",
                                     "[tiny]\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 1\nffn = 128\nvocab = 10\nvocabs = 1\n");
  auto t = read_model_zoo(typo);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find(typo + ":8: tiny.vocabs = 1: unknown key in [tiny]"), std::string::npos)
      << t.error().message;
}

// Mixtral 8x7B, every layer MoE: attention 2 x 4096 x 4096 + 2 x 4096 x 1024 = 41,943,040; eight
// SwiGLU experts 8 x 3 x 4096 x 14336 = 1,409,286,144; the router 4096 x 8 = 32,768; two norms
// 8,192: 1,451,270,144 a layer, x 32 = 46,440,644,608; plus the untied embedding and head
// 2 x 32000 x 4096 = 262,144,000 and the final norm 4,096: 46,702,792,704 (published: 46.7 B).
// Active matmul weights: attention, 2 of the experts (352,321,536) and the router a layer,
// 394,297,344 x 32 = 12,617,515,008, plus the LM head 131,072,000: 12,748,587,008.
TEST(ModelZoo, MixtureOfExpertsCountsEveryAndTheActiveParameters) {
  auto m = load_model("calibration/models.toml", "mixtral-8x7b");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->is_moe_layer(1));
  EXPECT_EQ(m->moe_layers(), 32);
  EXPECT_DOUBLE_EQ(m->params(), 46702792704.0);
  EXPECT_DOUBLE_EQ(m->active_matmul_params(), 12748587008.0);
  // DeepSeek-V3's first three layers are dense, Llama 4 Maverick's MoE layers every other one.
  auto deepseek = load_model("calibration/models.toml", "deepseek-v3");
  ASSERT_TRUE(deepseek) << deepseek.error().message;
  EXPECT_FALSE(deepseek->is_moe_layer(3));
  EXPECT_TRUE(deepseek->is_moe_layer(4));
  EXPECT_EQ(deepseek->moe_layers(), 58);
  auto maverick = load_model("calibration/models.toml", "llama4-maverick");
  ASSERT_TRUE(maverick) << maverick.error().message;
  EXPECT_FALSE(maverick->is_moe_layer(1));
  EXPECT_TRUE(maverick->is_moe_layer(2));
  EXPECT_EQ(maverick->moe_layers(), 24);
}

// Qwen3's heads are 128 wide though 2048 / 32 = 64: q is 32 x 128 = 4096 wide.
TEST(ModelZoo, HeadDimWhereItIsNotHiddenOverHeads) {
  auto m = load_model("calibration/models.toml", "qwen3-30b-a3b");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->head_dim(), 128);
  EXPECT_DOUBLE_EQ(m->q_dim(), 4096.0);
}

// DeepSeek-V3's multi-head latent attention (128 heads; q latent 1536, kv latent 512, query/key
// heads 128 + 64 rotary, value heads 128), a layer's attention:
//   q_down 7168 x 1536 = 11,010,048      q_up 1536 x 128 x 192 = 37,748,736
//   kv_down 7168 x 576 = 4,128,768       kv_up 512 x 128 x 256 = 16,777,216
//   o 128 x 128 x 7168 = 117,440,512     total 187,105,280, plus latent norms 1536 + 512
// Dense layers (3): + SwiGLU 3 x 7168 x 18432 = 396,361,728 + two norms 14,336 = 583,483,392.
// MoE layers (58): + router 7168 x 256 = 1,835,008 + 257 experts x 3 x 7168 x 2048
// = 11,318,329,344 + norms: 11,507,286,016. Embedding and head 2 x 129280 x 7168 = 1,853,358,080
// + final norm 7168. Total 1,750,450,176 + 667,422,588,928 + 1,853,365,248 = 671,026,404,352
// (published: 671 B). Attention's FLOPs width: 128 x (192 + 128) / 2 = 20,480 per layer, for
// 12 x 61 x 20,480 x seq FLOPs per token.
TEST(ModelZoo, LatentAttentionCountsDeepSeekV3) {
  auto m = load_model("calibration/models.toml", "deepseek-v3");
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE(m->mla());
  EXPECT_DOUBLE_EQ(m->attention_matmul_params(), 187105280.0);
  EXPECT_DOUBLE_EQ(m->params(), 671026404352.0);
  EXPECT_EQ(m->qk_head_dim(), 192);
  EXPECT_DOUBLE_EQ(m->attention_out_dim(), 16384.0);
  EXPECT_DOUBLE_EQ(m->attention_input_width(), 1536.0 + 512 + 64);
  const double attention_flops = 12.0 * 61 * 20480 * 4096;
  EXPECT_DOUBLE_EQ(m->flops_per_token(4096) - 6 * m->active_matmul_params(), attention_flops);
}

// DeepSeek-V3's multi-token prediction module, by hand: an MoE layer (MLA 187,105,280 + its
// latent norms 1536 + 512, two RMSNorms 2 x 7168, router 256 x 7168, 256 routed and 1 shared
// SwiGLU experts 3 x 7168 x 2048 each), the 2h -> h projection 2 x 7168^2 and its two RMSNorms
// 2 x 7168: 11,610,060,800, the report's "14 B" less the embedding and head HF stores again.
TEST(ModelZoo, DeepSeekV3PredictsOneMoreToken) {
  auto m = load_model("calibration/models.toml", "deepseek-v3");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->mtp_layers, 1);
  const double moe_layer = 187105280.0 + 2048 + 2 * 7168 + 256 * 7168 + 257 * 3.0 * 7168 * 2048;
  EXPECT_DOUBLE_EQ(m->layer_params(61), moe_layer);
  EXPECT_DOUBLE_EQ(m->mtp_module_params(1), moe_layer + 2.0 * 7168 * 7168 + 2 * 7168);
  EXPECT_DOUBLE_EQ(m->params(), 671026404352.0);  // the module is not counted
}

// GPT-OSS-120B alternates 128-token sliding-window and full layers, the first windowed (HF
// layer_types): layers 1, 3, ..., 35 windowed, 2, 4, ..., 36 full. Attention's model FLOPs a token at
// 4096 tokens count the keys each layer's queries see: 12 x 64 heads x 64 x (18 x 128 + 18 x 4096).
TEST(ModelZoo, SlidingWindowLayersAlternateAndCountTheirKeys) {
  auto m = load_model("calibration/models.toml", "gpt-oss-120b");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->attention_window(1), 128);
  EXPECT_EQ(m->attention_window(2), 0);
  EXPECT_EQ(m->attention_window(35), 128);
  EXPECT_EQ(m->attention_window(36), 0);
  EXPECT_DOUBLE_EQ(m->flops_per_token(4096) - 6 * m->active_matmul_params(), 12.0 * 64 * 64 * (18 * 128 + 18 * 4096));
  // A window no shorter than the sequence is the causal mask.
  EXPECT_DOUBLE_EQ(m->flops_per_token(128) - 6 * m->active_matmul_params(), 12.0 * 64 * 64 * 36 * 128);
  const std::string dense = "[tiny]\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 4\nffn = 128\nvocab = 10\n";
  auto orphan = read_model_zoo(temp_file("window_orphan.toml", dense + "full_attention_every = 2\n"));
  ASSERT_FALSE(orphan);
  EXPECT_NE(orphan.error().message.find(":8: tiny.full_attention_every = 2: without `sliding_window`"), std::string::npos)
      << orphan.error().message;
}

TEST(ModelZoo, LatentAttentionKeysAgree) {
  const std::string dense = "[tiny]\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 4\nffn = 128\nvocab = 10\n";
  auto orphan = read_model_zoo(temp_file("mla_orphan.toml", dense + "v_head_dim = 16\n"));
  ASSERT_FALSE(orphan);
  EXPECT_NE(orphan.error().message.find(":8: tiny.v_head_dim = 16: an MLA key without `kv_lora_rank`"),
            std::string::npos)
      << orphan.error().message;
  auto no_v = read_model_zoo(temp_file("mla_no_v.toml", dense + "kv_lora_rank = 32\n"));
  ASSERT_FALSE(no_v);
  EXPECT_NE(no_v.error().message.find("v_head_dim"), std::string::npos) << no_v.error().message;
  auto grouped = read_model_zoo(temp_file(
      "mla_gqa.toml", "[tiny]\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 2\nffn = 128\nvocab = 10\n"
                      "kv_lora_rank = 32\nv_head_dim = 16\n"));
  ASSERT_FALSE(grouped);
  EXPECT_NE(grouped.error().message.find(":5: tiny.kv_heads = 2: must equal heads (4)"), std::string::npos)
      << grouped.error().message;
}

TEST(ModelZoo, MixtureOfExpertsKeysAgree) {
  const std::string dense = "[tiny]\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 1\nffn = 128\nvocab = 10\n";
  auto top_k = read_model_zoo(temp_file("topk_zoo.toml", dense + "experts = 4\ntop_k = 5\nexpert_ffn = 32\n"));
  ASSERT_FALSE(top_k);
  EXPECT_NE(top_k.error().message.find(":9: tiny.top_k = 5: must be 1 .. experts (4)"), std::string::npos)
      << top_k.error().message;
  auto orphan = read_model_zoo(temp_file("orphan_zoo.toml", dense + "top_k = 2\n"));
  ASSERT_FALSE(orphan);
  EXPECT_NE(orphan.error().message.find("tiny.top_k = 2: an MoE key without `experts`"), std::string::npos)
      << orphan.error().message;
  auto no_width = read_model_zoo(temp_file("width_zoo.toml", dense + "experts = 4\ntop_k = 2\n"));
  ASSERT_FALSE(no_width);
  EXPECT_NE(no_width.error().message.find("expert_ffn"), std::string::npos) << no_width.error().message;
}

}  // namespace
}  // namespace commbound::model
