// LlamaRecipe: the kernels of a Llama training step, in the order one GPU runs them, at the shapes
// a parallel layout gives them. The one list of a layer's ops: the simulator's workload wraps each
// kernel into an op with its stream and dependencies (sim/workload/workload.cpp), the calibration
// tool measures their shapes (kernels/host/model_grid.cpp) and replays them on the GPU
// (kernels/device/replay.cu).
//
// A layer (pre-norm, RMSNorm, rotary embeddings, causal attention, SwiGLU MLP), forward:
//   rmsnorm, qkv, rope, attention, o_proj | attn, residual, rmsnorm2, gate_up, swiglu, down | mlp,
//   residual2
// backward:
//   down.dgrad, down.wgrad, swiglu, gate_up.dgrad, gate_up.wgrad | mlp, rmsnorm2, residual2,
//   o_proj.dgrad, o_proj.wgrad, attention, rope, qkv.dgrad, qkv.wgrad | attn, rmsnorm, residual
// ("| attn": Megatron tensor parallelism reduces the partial sums after this kernel; moe_layer()
// says what an MoE layer runs in place of the MLP). The GPT
// family's variants (model_spec.hpp): a GELU or squared-ReLU MLP runs "up" (ffn outputs) and its
// activation in place of gate_up and swiglu; learned positions drop rope and add a "position"
// kernel to the embedding; LayerNorm is priced as RMSNorm. Each
// residual's backward adds the gradient of the skip path to the branch's, after the norm's backward.
// The embedding: embedding (forward: gather; backward: scatter-add). The LM head, forward:
// rmsnorm_final, logits, cross_entropy; backward: cross_entropy, logits.dgrad, logits.wgrad,
// rmsnorm_final. The optimizer over a flat fp32 shard: grad_norm, adamw.
//
// Shapes, T = micro_batch x seq / cp tokens per rank: linear layers forward {T, out, in}, dgrad
// {T, in, out}, wgrad {out, in, T} (qkv out = (heads + 2 kv_heads) x head_dim / tp, o_proj in =
// hidden / tp, gate_up out = 2 ffn / tp, down in = ffn / tp, logits out = vocab / tp); attention
// batch = micro_batch, heads / tp, kv_heads / tp, seq / cp, causal (under context parallelism ring
// attention runs it once per KV block, cp times: each block a causal attention over seq / cp
// tokens, whose FLOPs equal the block's share); rmsnorm and residual width hidden; rope width
// (heads + kv_heads) / tp x head_dim; swiglu width ffn / tp; cross-entropy width vocab / tp;
// embedding width hidden. A size the degrees do not divide is rounded up (the padding frameworks
// add, e.g. Megatron's vocabulary). Sequence parallelism changes the tensor-parallel collectives,
// not these kernels.
//
// Frameworks: the list above is `fused`, our own kernels (one per box above). A framework runs the
// same layer with other kernels (framework_recipe.hpp says which, from each framework's source):
// PyTorch eager splits the norms, rotary embeddings, SwiGLU and their backward into many small
// elementwise kernels; torch.compile (Inductor) and Megatron-LM + Transformer Engine fuse them as
// `fused` does. Each kernel also says how many framework ops the host runs to issue it.
//
// Host-only and C++17 (kernels/ includes it).
#pragma once

#include "core/expected.hpp"
#include "model/framework.hpp"
#include "model/kernel_shape.hpp"
#include "model/model_spec.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace commbound::model {

// The parallel layout as one rank's kernels see it.
struct StepLayout {
  int micro_batch = 1;  // sequences per forward/backward pass
  int seq = 2048;       // sequence length
  int tp = 1;           // tensor parallelism: divides heads, FFN and vocabulary
  int cp = 1;           // context parallelism: divides the sequence
  int expert_tp = 1;    // expert tensor parallelism: divides each expert's inner size
  // Megatron sequence parallelism beside tp: what runs outside the tensor-parallel region (MLA's
  // down-projections) runs on tokens() / tp tokens.
  bool sequence_parallel = false;
  // Transformer Engine's tensor-parallel comm-GEMM overlap: the GEMMs that read a gathered input
  // or produce a reduce-scattered output run in tp chunks of tokens / tp rows, one per piece in
  // flight (LlamaRecipe::with_attention).
  bool tp_overlap = false;
  // Context parallelism as DeepSpeed Ulysses (Megatron's cp_comm_type "a2a"): attention runs on
  // heads / cp over the whole sequence; otherwise once per KV block (cp runs over seq / cp).
  bool cp_heads = false;
  // Megatron-Core's moe_shared_expert_overlap: an MoE layer's shared experts run while the
  // dispatch all-to-all is in flight (LlamaRecipe::moe_layer).
  bool shared_expert_overlap = false;
  // Tokens of one micro-batch on this rank.
  double tokens() const { return static_cast<double>(micro_batch) * seq / cp; }
};

struct RecipeKernel {
  std::string name;  // within its part: "qkv", "qkv.dgrad", "attention", "rmsnorm2", "logits.wgrad", ...
  KernelShape shape;
  int runs = 1;  // back-to-back runs: attention runs once per KV block under context parallelism (cp)
  // "attn" or "mlp": Megatron tensor parallelism reduces this sublayer's partial sums after this
  // kernel when tp > 1; empty for none.
  std::string tp_reduction;
  // Framework ops (kernel launches, views, autograd nodes) the host runs to issue this kernel, the
  // views and bookkeeping before it included; 0 for `fused`, whose host is not modelled.
  int host_ops = 0;
  // Expert parallelism's all-to-all after this kernel (ep > 1): "to_experts" sends each token (its
  // activation forward, its output's gradient backward) to the ranks of its experts, "from_experts"
  // brings the results back; empty for none.
  std::string ep_exchange = "";
  // With the shared experts overlapped: this kernel's exchange runs in flight beside the kernels
  // after it (exchange_in_flight), up to the kernel that reads what it brought (joins_exchange).
  bool exchange_in_flight = false;
  bool joins_exchange = false;
};

// The causal attention of one rank: `heads` and `kv_heads` of `head_dim` (the rank's tensor-parallel
// share) over its tokens. Under context parallelism it runs once per KV block, cp times, each a
// causal attention over seq / cp tokens (whose FLOPs equal the block's share); with cp_heads
// (Ulysses) once over the whole sequence on heads / cp.
RecipeKernel core_attention(const StepLayout& layout, Direction direction, std::int64_t heads, std::int64_t kv_heads,
                            std::int64_t head_dim);

// `kernels` with every attention's window set to `window` (ModelSpec::attention_window): a
// sliding-window layer's kernels are its full layer's with the window on its core attention.
std::vector<RecipeKernel> with_attention_window(std::vector<RecipeKernel> kernels, std::int64_t window);

class LlamaRecipe {
public:
  // `precision`: fp8 runs each layer's matrix products in FP8, each after the cast of its input
  // (forward: the activation; dgrad: the output gradient) to FP8 with its transpose and amax, as
  // Transformer Engine's cast_transpose does (read bf16, write two fp8 copies: 4 B an element);
  // the wgrad reuses both casts. The LM head stays bf16 (Megatron's output layer is not a TE
  // module).
  LlamaRecipe(ModelSpec model, StepLayout layout, Framework framework = Framework::fused,
              Precision precision = Precision::bf16)
      : model_(std::move(model)), layout_(layout), framework_(framework), precision_(precision) {}

  const ModelSpec& model() const { return model_; }
  const StepLayout& layout() const { return layout_; }
  Framework framework() const { return framework_; }

  // One transformer layer's kernels, forward or backward.
  std::vector<RecipeKernel> layer(Direction direction) const;
  // One MoE layer's kernels (model().is_moe_layer): attention as layer()'s, then in place of the
  // MLP, on the rank's tokens()/tp tokens (sequence parallelism keeps them split over tp):
  //   forward   rmsnorm2, router (a linear layer h -> experts), router_topk (softmax and top-k over
  //             the experts' scores), permute (each token copied once per chosen expert, grouped by
  //             expert) | to_experts, the local experts' gate_up, activation and down, each
  //             product one grouped GEMM over the experts, `expert_tokens` the rows of each
  //             (GemmShape::group) | from_experts, unpermute (the k outputs of a token weighted and summed),
  //             the shared experts as one MLP shared_experts x expert_ffn wide (tensor-parallel
  //             like a dense MLP, its reduction "mlp"), residual2;
  //   backward  the shared experts', unpermute's (the output gradient copied to the k slots)
  //             | to_experts, the experts' down, activation and gate_up | from_experts, permute's
  //             (the k gradients of a token summed), router_topk's, the router's, rmsnorm2,
  //             residual2; then attention's.
  // Each expert's inner size is split over layout().expert_tp ranks (`expert_tokens` count the
  // tokens of the whole expert-tensor-parallel group, which gathers them). Every framework issues these fused kernels one host op each (PyTorch eager's
  // own expansion covers dense layers only).
  std::vector<RecipeKernel> moe_layer(Direction direction, const std::vector<std::int64_t>& expert_tokens) const;
  // The input embedding's kernel.
  std::vector<RecipeKernel> embedding(Direction direction) const;
  // The final norm, the LM head and the loss (backward: the loss's gradient first).
  std::vector<RecipeKernel> lm_head(Direction direction) const;
  // A multi-token prediction module's entry (ModelSpec::mtp_layers): the previous hidden state's
  // and the shifted tokens' embedding's RMSNorms, and the projection of their concatenation
  // (2h -> h, its output split by tp: Megatron's column-parallel eh_proj); backward in reverse.
  // Its embedding lookup, layer and head are embedding(), the layer's and lm_head().
  std::vector<RecipeKernel> mtp_entry(Direction direction) const;
  // The optimizer step over `parameters` fp32 parameters held as one flat buffer (tokens = 1,
  // width = the parameters, rounded up): the gradient norm, then AdamW, as `framework` issues them:
  // torch.optim.AdamW's foreach kernels (framework_recipe.hpp) or one fused kernel each.
  static std::vector<RecipeKernel> optimizer(double parameters, Framework framework = Framework::fused,
                                             bool foreach = false);

private:
  // The attention block of a layer (rmsnorm .. residual) and a whole layer around an MLP side.
  // Under multi-head latent attention (model().mla(), Megatron-Core's MLASelfAttention): q_down
  // (h -> q_lora_rank) and q_norm, q_up (-> the rank's heads x qk_head_dim), kv_down (h ->
  // kv_lora_rank + rope_head_dim) and kv_norm, kv_up (-> the rank's heads x (head_dim +
  // v_head_dim)), rope on the rotary parts, attention, o_proj. The down-projections are not split
  // by tp (every rank holds them whole) and run on the rank's sequence shard under sequence
  // parallelism; attention is priced as heads of (qk_head_dim + value_head_dim) / 2, its FLOPs.
  std::vector<RecipeKernel> attention_block(Direction direction) const;
  std::vector<RecipeKernel> latent_attention_block(Direction direction) const;
  std::vector<RecipeKernel> with_attention(Direction direction, std::vector<RecipeKernel> mlp_side) const;

  ModelSpec model_;
  StepLayout layout_;
  Framework framework_ = Framework::fused;
  Precision precision_ = Precision::bf16;
};

// Why `model` cannot run at `layout` with every size exact: the degrees must be positive, tp must
// divide heads, KV heads, FFN and vocabulary, cp the sequence. Ok otherwise.
Status check_exact(const ModelSpec& model, const StepLayout& layout);

}  // namespace commbound::model
