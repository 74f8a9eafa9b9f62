// A training framework, described once: its name and, as one row of data, every way commbound runs
// it differently from the others. Code that depends on the framework asks its row, never which
// framework it is, so a new framework is a new enumerator and a new row (framework.cpp), plus its
// host costs in calibration/frameworks.toml when it has a host model.
//
// The rows, each from the framework's public source:
//   fused            our own fused kernels, no host model: the ideal the others are measured from.
//   pytorch-eager    the Llama layer as plain PyTorch writes it (framework_recipe.hpp), launched op
//                    by op; torch.optim.AdamW's default foreach path; FSDP2's, DDP's and DTensor's
//                    copies around the collectives; pipeline sends batched (torchtitan's
//                    batch_isend_irecv); attention through SDPA.
//   pytorch-compile  Inductor's fused kernels launched from its wrapper; fused AdamW (torchtitan's
//                    default); the same wrappers, pipeline sends and SDPA as eager.
//   megatron-te      Transformer Engine's fused kernels; the distributed optimizer's fused Adam, its
//                    buffers the parameters themselves (no copies); cuDNN's fused attention;
//                    pipeline sends batched for plain 1F1B (batch_p2p_comm = not overlap_p2p_comm),
//                    one pair at a time under the interleaved schedule; Megatron-Core's
//                    vocab-parallel cross-entropy (cross_entropy_loss_fusion off by default); under
//                    FP8 each product keeps its input for the weight gradient in FP8 (below); an
//                    MoE layer's router probabilities weigh the experts' activation (below).
//
// Host-only and C++17 (kernels/ includes it through llama_recipe.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commbound::model {

enum class Framework { fused, pytorch_eager, pytorch_compile, megatron_te };

// How a framework sends a pipeline stage's activations and gradients: on the pair's own two-rank
// communicator, or batched on the pipeline group's (NCCL then gives each peer fewer channels).
enum class PipelineSends { per_pair, batched, batched_unless_interleaved };

// The attention a framework runs when the scenario names none: ours, PyTorch's SDPA (its backend
// chosen by the GPU and the table's rows), or Transformer Engine's cuDNN fused attention.
enum class FrameworkAttention { commbound, sdpa, cudnn };

// How the loss's cross-entropy holds the logits [tokens x vocab / tp] at the start of the backward:
//   log_softmax     PyTorch's on `logits.float()`: log_softmax's saved fp32 output, nll_loss's fp32
//                   gradient and log_softmax's (tools/autograd/derivatives.yaml): 3 fp32 copies.
//   vocab_parallel  Megatron-Core's (tensor_parallel/cross_entropy.py, fused or not): one fp32 copy,
//                   the softmax computed and saved in place, the gradient written over it.
//   te              Transformer Engine's (pytorch/triton/cross_entropy.py, Megatron-Core's
//                   cross_entropy_fusion_impl "te"): the gradient written over the bf16 logits.
enum class CrossEntropy { log_softmax, vocab_parallel, te };

// Where a mixture-of-experts layer weighs each routed token by its router probability, which
// decides what the layer keeps for the probability's gradient:
//   output      the experts' output, at the unpermute: that output (hidden wide, a routed token)
//               kept. Megatron-Core up to 0.12 (token_dispatcher.py passes the probs to unpermute;
//               Transformer Engine's fused unpermute with merging probs saves its input);
//               torchtitan (the scores multiply the experts' input or output, which is kept).
//   activation  inside the experts' activation: the probabilities only. Megatron-Core from 0.13
//               (moe/experts.py hands permuted_probs to activation_func_with_probs).
enum class MoeProbs { output, activation };

struct FrameworkTraits {
  Framework id;
  const char* name;                  // the scenario's spelling
  bool host_model;                   // each kernel issued by host ops priced from frameworks.toml
  bool eager_layers;                 // layers, embedding and LM head as plain PyTorch writes them
  bool foreach_adamw;                // AdamW as torch.optim's foreach kernels by default
  bool pytorch_wrappers;             // FSDP2 / DDP copy kernels and DTensor's cats around collectives
  bool runs_fp8;                     // FP8 matrix products (Transformer Engine, torchao, ours)
  // Under FP8, a product keeps its input for the weight gradient as the FP8 copy it cast, one byte
  // an element, not the bf16 tensor: Transformer Engine's Linear, LayerNormLinear and GroupedLinear
  // (module/linear.py and siblings: on Hopper only the transposed FP8 copy is kept,
  // Float8TensorBase.update_usage). torchao's float8 and ours keep the bf16 input (not checked
  // against their sources: the bf16 bytes, as before FP8).
  bool fp8_keeps_fp8_inputs;
  bool llama_architecture_only;      // its recipe is the Llama architecture's only
  PipelineSends pipeline_sends;
  FrameworkAttention attention;
  CrossEntropy cross_entropy;
  MoeProbs moe_probs;
};

// The row of `f`.
const FrameworkTraits& traits(Framework f);
// "fused", "pytorch-eager", "pytorch-compile", "megatron-te".
const char* to_string(Framework f);
std::optional<Framework> parse_framework(std::string_view name);
// Every framework's name, in enum order.
const std::vector<std::string>& framework_names();
// The frameworks whose row has `flag` set, in enum order, quoted and joined: "a", "b" or "c".
std::string frameworks_with(bool FrameworkTraits::*flag);
// "log-softmax", "vocab-parallel", "te".
const char* to_string(CrossEntropy c);
std::optional<CrossEntropy> parse_cross_entropy(std::string_view name);
// "output", "activation".
const char* to_string(MoeProbs p);
std::optional<MoeProbs> parse_moe_probs(std::string_view name);

}  // namespace commbound::model
