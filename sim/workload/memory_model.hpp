// MemoryModel: bytes per GPU by category for a training layout, and whether it fits.
//
// Parameters and optimizer state follow the strategy (FSDP shards over the data-parallel group,
// ZeRO-2 keeping the gathered bf16 parameters through backward, ZeRO-3 only the units in flight;
// DDP replicates fp32 weights, gradients and Adam moments). An MoE layer's routed experts are split
// by ep and sharded over their own replicas (tp x cp x dp / ep GPUs).
//
// Activations are what a Llama layer's backward reads, counted tensor by tensor for the kernels of
// the recipe (model/llama_recipe.hpp: fused RMSNorm, fused SwiGLU, flash attention),
// the way Korthikanti et al. 2022 (arXiv 2205.05198, sec. 4.1) count a GPT layer, without its
// dropout masks (Llama has no dropout) and without its 5 a s^2 b score term (flash attention
// stores no score matrix, only the softmax's log-sum-exp). Per token of the micro-batch, bf16
// (2 bytes) unless said, h = hidden, kv = kv_heads x head_dim, f = ffn, a = heads, t = tp:
//   the two RMSNorms' inputs and outputs (the outputs are the qkv and gate_up GEMMs' inputs)   8 h
//   q, k, v after RoPE (attention's inputs)                                               2 (h + 2 kv) / t
//   attention's output (o_proj's input)                                                       2 h / t
//   attention's log-sum-exp, fp32                                                              4 a / t
//   gate and up (SwiGLU's inputs), SwiGLU's output (down's input)                             6 f / t
// (the norms' 8 h is divided by t only with sequence parallelism; q and the attention output are
// heads x head_dim wide where that is not h). An MoE layer keeps in place of the MLP's 6 f / t, per
// token: its top_k routed copies (divided by t: sequence parallelism splits the routed tokens) of
// the permuted input and the experts' output (2 h each, x expert_tp: the expert-tensor group
// gathers its ranks' tokens), gate, up and activation output (3 expert_ffn: expert_tp x the tokens
// at 1 / expert_tp of the width), the router's fp32 scores 4 E / t, and the shared experts'
// 6 S expert_ffn / t.
// Recomputation
// (training.hpp, Recompute) keeps less: `selective` drops the log-sum-exp (with flash attention
// that is all the attention core stores: Megatron's selective recompute frees the 5 a s^2 b score
// term of Korthikanti's eq. 2, which flash attention never had), `selective_op` keeps the layer's
// input 2 h, q 2 h / t, v 2 kv / t, attention's output 2 h / t and log-sum-exp 4 a / t, gate
// 2 f / t and down's output 2 h, `full` the layer's input 2 h; both of the last hold one layer's
// full activations again while that layer's backward runs.
#pragma once

#include "sim/scenario/training.hpp"

#include <string>
#include <utility>
#include <vector>

namespace commbound::sim {

struct MemoryUse {
  int stage = 0;  // the pipeline stage whose GPU this is
  std::vector<std::pair<std::string, double>> bytes;  // category -> bytes per GPU
  double total_bytes = 0;
  double capacity_bytes = 0;
  bool fits() const { return total_bytes <= capacity_bytes; }
};

// Bytes one layer (an MoE layer when `moe`) keeps from its forward for its backward, for one
// micro-batch on this rank (formulas above), under recomputation `r`.
double activation_bytes_per_layer(const TrainingSpec& t, Recompute r, bool moe = false);

// The GPU of the pipeline stage that holds the most (every stage's parameters, optimizer state,
// activations of the micro-batches 1F1B keeps in flight there, and on the last the loss's logits).
MemoryUse memory_per_gpu(const TrainingSpec& t, int nccl_channels);

}  // namespace commbound::sim
