// Framework recipes: the kernels a framework launches for the parts of a Llama training step, where
// they differ from our fused kernels (llama_recipe.hpp), read from each framework's public source.
//
// pytorch-eager  A Llama layer written in plain PyTorch as the reference implementations write it
//                (Meta's llama/model.py, Hugging Face's modeling_llama.py): RMSNorm as separate
//                cast, pow, mean, add, rsqrt, mul and cast kernels; rotary embeddings on q and k
//                by strided slices (x[..., ::2], x[..., 1::2]), four multiplies, a subtraction,
//                an addition and a stack; F.scaled_dot_product_attention (FlashAttention-2, the
//                first backend of PyTorch's default SDPA priority order); silu(gate) * up as two
//                kernels; autograd's backward of each (aten/src/ATen/native and
//                tools/autograd/derivatives.yaml: every elementwise op's derivative is its own
//                kernel, a slice's backward is zeros then a strided copy, a split's is a cat);
//                cross-entropy on logits cast to fp32 (log_softmax, nll_loss); AdamW as
//                torch.optim.AdamW runs it by default on CUDA (foreach=True: _multi_tensor_adamw,
//                one multi-tensor kernel per _foreach op) after clip_grad_norm_'s foreach norm.
// pytorch-compile
//                torch.compile's Inductor fuses every chain of pointwise ops and reductions
//                between two matrix products into one Triton kernel and calls cuBLAS and SDPA as
//                extern kernels: the fused list, issued from Inductor's generated wrapper; AdamW
//                fused (torchtitan's default, optimizer not compiled).
// megatron-te    Megatron-LM with Transformer Engine: LayerNormLinear and LayerNormMLP run TE's
//                fused RMSNorm kernel before their GEMM, fused RoPE, cuDNN fused attention, fused
//                SwiGLU, fused bias-dropout-add, fused cross-entropy; the distributed optimizer's
//                fused Adam. The fused list, its attention priced by the cuDNN rows.
//
// Byte counts follow kernel_shape.hpp (each operand read once, each output written once), with
// two rules of the hardware: a strided read of every other bf16 element moves every 32-byte
// sector it touches (the whole tensor), and a broadcast operand much smaller than the output
// (a norm's weight, the rotary cos/sin table) is read from cache, counted once.
//
// Host-only and C++17 (kernels/ includes llama_recipe.hpp).
#pragma once

#include "model/llama_recipe.hpp"

#include <vector>

namespace commbound::model::recipe {

// PyTorch eager's kernels of one layer, the embedding, the LM head and the optimizer.
std::vector<RecipeKernel> eager_layer(const ModelSpec& m, const StepLayout& layout, Direction direction);
std::vector<RecipeKernel> eager_embedding(const ModelSpec& m, const StepLayout& layout, Direction direction);
std::vector<RecipeKernel> eager_lm_head(const ModelSpec& m, const StepLayout& layout, Direction direction);
std::vector<RecipeKernel> eager_optimizer(double parameters);

// What PyTorch's parallel wrappers launch around their collectives, on top of the layer kernels.
//
// FSDP2 (torch.distributed._composable.fsdp, fully_shard; _fsdp_collectives.py and
// _fsdp_param_group.py from PyTorch 2.3 on), bf16 compute over fp32 sharded parameters
// (MixedPrecisionPolicy(param_dtype=bfloat16)), for one unit of `unit_params` parameters in
// `param_tensors` tensors sharded over `shard_ranks` ranks of `dp_ranks` data-parallel ranks:
//   gather_copy_in   (all-gather copy-in stream) each shard cast to bf16 (one kernel per tensor),
//                    then _foreach_copy_ into the all-gather's flat input;
//   gather_copy_out  (compute stream, wait_for_unshard) split_with_sizes_copy of the gathered
//                    buffer into the unit's parameters: every gathered byte read and written;
//   reduce_copy_in   (reduce-scatter stream) cat of the unsharded gradients into the reduction's
//                    buffer in the reduce dtype, then the pre-divide;
//   reduce_view_out  (reduce-scatter stream) the post-divide and the cast of the reduced shard to
//                    the fp32 parameters' dtype.
// A bf16 reduction divides by about sqrt(dp_ranks) before and after (_init_grad_divide_factors:
// factor doubled while it divides dp_ranks and dp_ranks / factor > factor); an fp32 one uses
// NCCL's average and divides nothing, casts nothing.
struct Fsdp2Glue {
  std::vector<RecipeKernel> gather_copy_in, gather_copy_out, reduce_copy_in, reduce_view_out;
};
Fsdp2Glue fsdp2_glue(double unit_params, int param_tensors, int shard_ranks, int dp_ranks, bool reduce_fp32);

// DDP (torch/csrc/distributed/c10d/reducer.cpp, default gradient_as_bucket_view=False), for
// `params` bf16 gradients:
//   bucket_copy_in   as each gradient is ready, at::mul_out into its bucket, divided by the world
//                    size while copied (mark_variable_ready_dense), one kernel per tensor;
//   bucket_copy_out  after the bucket's all-reduce, at the end of backward, each gradient copied
//                    back out of the bucket (finalize_bucket_dense).
std::vector<RecipeKernel> ddp_bucket_copy_in(double params, int param_tensors);
std::vector<RecipeKernel> ddp_bucket_copy_out(double params, int param_tensors);

// PyTorch tensor parallelism with sequence parallelism (DTensor; torchtitan's Llama plan:
// SequenceParallel norms, PrepareModuleInput Shard(1) -> Replicate, RowwiseParallel output
// Shard(1)) on [batch, seq, hidden] activations: sharding the sequence (dim 1), not dim 0, makes
// the functional collectives reorder every buffer (torch/distributed/_functional_collectives.py:
// all_gather_tensor concatenates the gathered chunks along gather_dim, reduce_scatter_tensor
// concatenates the chunks along scatter_dim before reducing): one cat kernel reading and writing
// the whole buffer of `bf16_bytes`, after each all-gather and before each reduce-scatter.
// Megatron lays activations out [seq, batch, hidden], so its gathers need no such copy.
RecipeKernel dtensor_cat(double bf16_bytes);

// The fused list as another framework issues it: one host op per kernel.
std::vector<RecipeKernel> issued_one_op_each(std::vector<RecipeKernel> kernels);

}  // namespace commbound::model::recipe
