// PyTorch eager's recipe: the kernels of a layer counted, and their bytes and FLOPs worked out by
// hand from the reference code's tensors (bf16 = 2 B, fp32 = 4 B).
#include "model/framework_recipe.hpp"
#include "model/llama_recipe.hpp"

#include <gtest/gtest.h>

#include <string>
#include <variant>

namespace {

using namespace commbound::model;

const ModelSpec kLlama7b{"llama2-7b", 32, 4096, 32, 32, 11008, 32000};

double bytes_of(const std::vector<RecipeKernel>& kernels, const std::string& prefix) {
  double total = 0;
  for (const RecipeKernel& k : kernels) {
    if (k.name.rfind(prefix, 0) == 0) total += bytes(k.shape);
  }
  return total;
}

double flops_of(const std::vector<RecipeKernel>& kernels) {
  double total = 0;
  for (const RecipeKernel& k : kernels) total += flops(k.shape) * k.runs;
  return total;
}

TEST(EagerRecipe, RmsNormForwardMovesWhatItsNineKernelsReadAndWrite) {
  const StepLayout layout{1, 4096, 1, 1};
  const auto forward = recipe::eager_layer(kLlama7b, layout, Direction::forward);
  const double T = 4096, h = 4096, th = T * h;
  // to_fp32 6, pow 8, mean 4 (+4 per row), add and rsqrt 8 per row each, to_fp32 6, mul 8 (+4 per
  // row), to_bf16 6, mul by the weight 4 (+2 per weight element): 42 bytes an element.
  const double expected = 42 * th + (4 + 8 + 8 + 4) * T + 2 * h;
  EXPECT_DOUBLE_EQ(bytes_of(forward, "rmsnorm."), expected);
  EXPECT_DOUBLE_EQ(bytes_of(forward, "rmsnorm2."), expected);
}

TEST(EagerRecipe, RopeOfOneTensorMovesTwentyFourBytesAnElementForward) {
  // Per element of the bf16 tensor: four strided products (the whole tensor read, 2 B, and half
  // of it written, 1 B: 3 B each), the subtraction and the addition (two halves read, one written:
  // 3 B each), the stack's two copies (a half read, 1 B, and the whole output's sectors written by
  // a strided write, 2 B: 3 B each): 4 x 3 + 2 x 3 + 2 x 3 = 24 B.
  // Backward: the negation and four products (3, 3, 2, 3, 3 B), two sums (3 B each), each
  // slice's zeros and strided copy (2 + 3 B, twice) and their sum (6 B): 36 B.
  const StepLayout layout{1, 4096, 1, 1};
  const double E = 4096.0 * 4096;  // q: tokens x heads x head_dim
  const auto forward = recipe::eager_layer(kLlama7b, layout, Direction::forward);
  EXPECT_DOUBLE_EQ(bytes_of(forward, "rope_q."), 2 * 12 * E);
  const auto backward = recipe::eager_layer(kLlama7b, layout, Direction::backward);
  EXPECT_DOUBLE_EQ(bytes_of(backward, "rope_q."), 2 * 18 * E);
}

TEST(EagerRecipe, SameMatrixProductsAsTheFusedLayerAndManyMoreKernels) {
  const StepLayout layout{2, 4096, 2, 1};
  for (Direction d : {Direction::forward, Direction::backward}) {
    const auto fused = LlamaRecipe(kLlama7b, layout).layer(d);
    const auto eager = LlamaRecipe(kLlama7b, layout, Framework::pytorch_eager).layer(d);
    // GEMMs and attention are the same work; only the memory-bound kernels split.
    EXPECT_DOUBLE_EQ(flops_of(eager), flops_of(fused));
    EXPECT_GT(eager.size(), 3 * fused.size());
  }
  // Forward: 9 + 9 norm kernels, 8 + 8 rope kernels, 4 GEMMs, attention and the copy of its
  // output, 2 swiglu, 2 residuals.
  EXPECT_EQ(LlamaRecipe(kLlama7b, layout, Framework::pytorch_eager).layer(Direction::forward).size(), 44u);
}

// SDPA's output is laid out like q, which the rotary embedding's stack leaves as [b, h, s, d]:
// transposing it back to [b, s, h * d] copies it, 2 B read and 2 B written an element (T = 8192
// tokens x 4096: 134 MB). Which kernels take PyTorch's indexed path (an operand strided or
// broadcast): per RMSNorm the products with rsqrt and with the weight (2); per rotary embedding
// the four products with cos or sin and the stack's two strided copies (6); that copy; silu of the
// gate chunk and its product with the up chunk: 2 x 2 + 2 x 6 + 1 + 2 = 19 of the 44 forward
// kernels, as many as the real layer's profile shows on that path. Which take the unrolled cast
// path: each RMSNorm's two x.float() (4).
TEST(EagerRecipe, AttentionOutputIsCopiedAndStridedOperandsTakeTheIndexedPath) {
  const StepLayout layout{2, 4096, 1, 1};
  const auto forward = recipe::eager_layer(kLlama7b, layout, Direction::forward);
  EXPECT_DOUBLE_EQ(bytes_of(forward, "attention.reshape_copy"), 4.0 * 8192 * 4096);
  int indexed = 0, cast = 0;
  for (const RecipeKernel& k : forward) {
    const auto* e = std::get_if<ElementwiseShape>(&k.shape);
    indexed += e != nullptr && e->kind == ElementwiseKind::indexed;
    cast += e != nullptr && e->kind == ElementwiseKind::cast;
  }
  EXPECT_EQ(indexed, 19);
  EXPECT_EQ(cast, 4);
}

// The reductions of a layer name the width each row reduces: RMSNorm's mean and its backward's
// sum over rsqrt's gradient reduce rows of the hidden size (4096); the norm weight's gradient sums
// [T, 4096] over the T tokens, a column reduction of 4096 outputs. The forward's kernels read what
// the kernel before wrote: RMSNorm's pow reads x.float()'s 4 B an element of its 8, the residual
// sum the projection's 2 B of its 6 (the residual itself is older), SwiGLU's product both chunks,
// 4 B of 6; the second x.float() reads x again after three kernels' traffic: none. The backward's
// are priced cold.
TEST(EagerRecipe, ReductionsNameTheirWidthAndTheForwardReadsWhatItJustWrote) {
  const StepLayout layout{1, 2048, 1, 1};
  const double th = 2048.0 * 4096, tf = 2048.0 * 11008;
  const auto forward = recipe::eager_layer(kLlama7b, layout, Direction::forward);
  const auto backward = recipe::eager_layer(kLlama7b, layout, Direction::backward);
  const auto fresh = [&](const std::string& name) {
    for (const RecipeKernel& k : forward) {
      const auto* e = std::get_if<ElementwiseShape>(&k.shape);
      if (e != nullptr && k.name == name) return e->fresh_bytes;
    }
    ADD_FAILURE() << name;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(fresh("rmsnorm.pow"), 4 * th);
  EXPECT_DOUBLE_EQ(fresh("residual"), 2 * th);
  EXPECT_DOUBLE_EQ(fresh("swiglu.mul"), 4 * tf);
  int reductions = 0, second_cast = 0;
  for (const RecipeKernel& k : forward) {
    const auto* e = std::get_if<ElementwiseShape>(&k.shape);
    if (e == nullptr) continue;
    if (e->kind == ElementwiseKind::reduction) {
      ++reductions;
      EXPECT_EQ(e->width, 4096) << k.name;
    }
    if (k.name == "rmsnorm.to_fp32" && second_cast++ == 1) {
      EXPECT_EQ(e->fresh_bytes, 0);
    }
  }
  EXPECT_EQ(reductions, 2);  // one mean per RMSNorm
  EXPECT_EQ(second_cast, 2);
  for (const RecipeKernel& k : backward) {
    const auto* e = std::get_if<ElementwiseShape>(&k.shape);
    if (e == nullptr) continue;
    EXPECT_EQ(e->fresh_bytes, 0) << k.name;
    if (k.name == "rmsnorm.sum_weight_grad") {
      EXPECT_EQ(e->kind, ElementwiseKind::column_reduction);
      EXPECT_EQ(e->width, 4096);
    }
    if (k.name == "rmsnorm.sum_rsqrt_grad") {
      EXPECT_EQ(e->width, 4096);
    }
  }
}

TEST(EagerRecipe, ForeachAdamWMovesEightyBytesAParameter) {
  // lerp_ 12, mul_ 8, addcmul_ 12, sqrt 8, div_ 8, add_ 8, addcdiv_ 16, weight decay 8; clipping:
  // foreach_norm 4 and the clip product 8.
  const double P = 1e6;
  EXPECT_DOUBLE_EQ(bytes_of(LlamaRecipe::optimizer(P, Framework::pytorch_eager, true), "adamw."), 80 * P);
  EXPECT_DOUBLE_EQ(bytes_of(LlamaRecipe::optimizer(P, Framework::pytorch_eager, true), "clip."), 12 * P);
  // fused=True instead: the gradient norm and one AdamW kernel, issued one host op each.
  const auto fused = LlamaRecipe::optimizer(P, Framework::pytorch_eager, false);
  ASSERT_EQ(fused.size(), 2u);
  EXPECT_EQ(fused[0].name, "grad_norm");
  EXPECT_EQ(fused[1].name, "adamw");
}

TEST(FrameworkRecipe, CompiledAndMegatronRunTheFusedKernelsOneHostOpEach) {
  const StepLayout layout{1, 4096, 1, 1};
  const auto fused = LlamaRecipe(kLlama7b, layout).layer(Direction::forward);
  for (Framework f : {Framework::pytorch_compile, Framework::megatron_te}) {
    const auto k = LlamaRecipe(kLlama7b, layout, f).layer(Direction::forward);
    ASSERT_EQ(k.size(), fused.size());
    for (std::size_t i = 0; i < k.size(); ++i) {
      EXPECT_EQ(k[i].shape, fused[i].shape);
      EXPECT_EQ(k[i].host_ops, 1);
      EXPECT_EQ(fused[i].host_ops, 0);
    }
  }
}

// FP8 layers: each forward and dgrad product follows the cast of its input (the activation X [T x
// in], the output gradient dY [T x out]) to two fp8 copies, 4 B an element; wgrad reuses them.
TEST(FrameworkRecipe, Fp8LayersCastBeforeEveryForwardAndDgradProduct) {
  const StepLayout layout{1, 4096, 1, 1};
  const double T = 4096, h = 4096;
  for (Direction d : {Direction::forward, Direction::backward}) {
    const auto bf16 = LlamaRecipe(kLlama7b, layout, Framework::megatron_te).layer(d);
    const auto fp8 = LlamaRecipe(kLlama7b, layout, Framework::megatron_te, Precision::fp8).layer(d);
    const int casts = 4;  // qkv, o_proj, gate_up, down: forward or dgrad each
    EXPECT_EQ(fp8.size(), bf16.size() + casts);
    EXPECT_DOUBLE_EQ(flops_of(fp8), flops_of(bf16));
    for (const RecipeKernel& k : fp8) {
      if (const auto* g = std::get_if<GemmShape>(&k.shape)) {
        EXPECT_EQ(g->precision, Precision::fp8) << k.name;
      }
    }
  }
  const auto forward = LlamaRecipe(kLlama7b, layout, Framework::megatron_te, Precision::fp8).layer(Direction::forward);
  // Inputs of qkv, o_proj, gate_up (h wide each but o_proj's, h too at tp 1) and down (ffn wide).
  EXPECT_DOUBLE_EQ(bytes_of(forward, "qkv.fp8_cast"), 4 * T * h);
  EXPECT_DOUBLE_EQ(bytes_of(forward, "down.fp8_cast"), 4 * T * 11008);
  const auto backward = LlamaRecipe(kLlama7b, layout, Framework::megatron_te, Precision::fp8).layer(Direction::backward);
  // dgrad of down: dY is [T x h]; of gate_up: [T x 2 ffn].
  EXPECT_DOUBLE_EQ(bytes_of(backward, "down.dgrad.fp8_cast"), 4 * T * h);
  EXPECT_DOUBLE_EQ(bytes_of(backward, "gate_up.dgrad.fp8_cast"), 4 * T * 2 * 11008);
}

// FSDP2 divides a bf16 reduction by about sqrt(ranks) before and after: the factor doubles from 1
// while it divides the ranks and ranks / factor exceeds it. 8 ranks: 1 -> 2 -> 4 (8 / 4 = 2 stops
// it), post 2; 2 ranks: 1 -> 2, post 1 (none); 6 ranks: 1 -> 2 -> 4 (4 does not divide 6), post 1.5.
TEST(Fsdp2Glue, DividesByAboutTheRootOfTheRanksBeforeAndAfter) {
  const double P = 1000, S8 = P / 8;
  auto names = [](const std::vector<RecipeKernel>& ks) {
    std::string s;
    for (const RecipeKernel& k : ks) s += k.name + " ";
    return s;
  };
  const recipe::Fsdp2Glue g8 = recipe::fsdp2_glue(P, 9, 8, 8, false);
  EXPECT_EQ(names(g8.reduce_copy_in), "fsdp.chunk_cat fsdp.predivide ");
  EXPECT_EQ(names(g8.reduce_view_out), "fsdp.postdivide fsdp.to_fp32 ");
  EXPECT_DOUBLE_EQ(bytes_of(g8.reduce_copy_in, "fsdp.chunk_cat"), 4 * P);   // bf16 read, bf16 written
  EXPECT_DOUBLE_EQ(bytes_of(g8.reduce_view_out, "fsdp.to_fp32"), 6 * S8);   // bf16 read, fp32 written
  EXPECT_DOUBLE_EQ(bytes_of(g8.gather_copy_out, "fsdp.split_with_sizes_copy"), 4 * P);
  EXPECT_EQ(g8.gather_copy_in.front().host_ops, 9);  // one cast per parameter tensor
  EXPECT_EQ(names(recipe::fsdp2_glue(P, 9, 2, 2, false).reduce_view_out), "fsdp.to_fp32 ");
  EXPECT_EQ(names(recipe::fsdp2_glue(P, 9, 6, 6, false).reduce_view_out), "fsdp.postdivide fsdp.to_fp32 ");
  const recipe::Fsdp2Glue fp32 = recipe::fsdp2_glue(P, 9, 8, 8, true);
  EXPECT_EQ(names(fp32.reduce_copy_in), "fsdp.chunk_cat ");
  EXPECT_TRUE(fp32.reduce_view_out.empty());
  EXPECT_DOUBLE_EQ(bytes_of(fp32.reduce_copy_in, "fsdp.chunk_cat"), 6 * P);  // bf16 read, fp32 written
}

TEST(FrameworkRecipe, NamesRoundTrip) {
  for (const std::string& name : framework_names()) EXPECT_EQ(to_string(*parse_framework(name)), name);
  EXPECT_FALSE(parse_framework("pytorch").has_value());
}

// The rows state what each framework's source does: only `fused` has no host model; only eager
// writes the layer op by op and takes torch.optim's foreach AdamW by default; the PyTorch wrappers'
// copies belong to both PyTorch frameworks; Megatron batches pipeline sends only for plain 1F1B.
TEST(FrameworkRecipe, EachFrameworkRowSaysHowItRuns) {
  EXPECT_FALSE(traits(Framework::fused).host_model);
  EXPECT_TRUE(traits(Framework::megatron_te).host_model);
  EXPECT_TRUE(traits(Framework::pytorch_eager).eager_layers);
  EXPECT_FALSE(traits(Framework::pytorch_compile).eager_layers);
  EXPECT_TRUE(traits(Framework::pytorch_eager).foreach_adamw);
  EXPECT_FALSE(traits(Framework::pytorch_compile).foreach_adamw);
  EXPECT_TRUE(traits(Framework::pytorch_compile).pytorch_wrappers);
  EXPECT_FALSE(traits(Framework::megatron_te).pytorch_wrappers);
  EXPECT_EQ(traits(Framework::megatron_te).pipeline_sends, PipelineSends::batched_unless_interleaved);
  EXPECT_EQ(traits(Framework::megatron_te).attention, FrameworkAttention::cudnn);
  for (const std::string& name : framework_names()) EXPECT_EQ(traits(*parse_framework(name)).name, name);
  EXPECT_EQ(frameworks_with(&FrameworkTraits::runs_fp8), "\"fused\", \"pytorch-compile\" or \"megatron-te\"");
}

}  // namespace
