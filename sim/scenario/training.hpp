// TrainingSpec: what one training iteration does: model, sequence, batch, parallel layout,
// strategy. Read from a scenario's [model], [training] and [parallel] sections and validated
// against the cluster (world size, divisibility), with errors naming file, line, key and value.
#pragma once

#include "model/llama_recipe.hpp"
#include "network/collective.hpp"
#include "sim/scenario/model.hpp"
#include "sim/scenario/moe_spec.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commbound::sim {

// A GPU's datasheet figures (calibration/gpus.toml), SI units.
struct GpuSpec {
  std::string name;
  std::string description;
  std::string device_name;  // the name CUDA reports (cudaGetDeviceProperties), e.g. "NVIDIA H100 80GB HBM3"
  double compute_capability = 0;  // CUDA's major.minor (9.0 for H100); 0: not stated
  long sm_count = 0;               // streaming multiprocessors; 0: not stated
  double sm_clock_max_hz = 0;      // maximum SM (boost) clock; 0: not stated
  std::string peak_dtype = "bf16";  // the precision of peak_flops_per_s ("fp16" for GPUs without bf16)
  double peak_flops_per_s = 0;   // dense bf16 tensor throughput
  double peak_fp8_flops_per_s = 0;  // dense fp8 tensor throughput; 0: no FP8 tensor cores
  double hbm_bytes_per_s = 0;
  double memory_bytes = 0;
  double tdp_w = 0;
  double idle_w = 0;
  // Compute slows by this factor while a communication kernel runs on the GPU (NCCL occupies SMs
  // and HBM bandwidth); from the calibration table, 1 until measured.
  double comm_contention_factor = 1;
};

// diloco: DiLoCo (Douillard et al. 2023, arXiv 2311.08105): FSDP inside each of diloco_islands
// islands, and every diloco_sync_every inner steps an outer step across the islands.
enum class Strategy { ddp, fsdp, hsdp, diloco };
const char* to_string(Strategy s);  // "ddp", "fsdp", "hsdp", "diloco": as [parallel] strategy spells it
std::optional<Strategy> parse_strategy(std::string_view name);
// How reports name a strategy: "DDP", "FSDP", "HSDP", "DiLoCo".
const char* display_name(Strategy s);

// Activation recomputation ([training] activation_checkpointing):
//   none          every layer keeps what its backward reads;
//   selective     Megatron-LM's --recompute-activations (Korthikanti et al. 2022, sec. 4.2): the
//                 attention core is replayed in backward. With flash attention the score matrices
//                 are never stored, so it frees only the softmax statistics (lse) and costs one
//                 attention forward per layer;
//   selective_op  torchtitan's "selective op" AC (torchtitan/.../activation_checkpoint.py,
//                 _apply_op_sac): a layer keeps its input, the outputs of every other matmul and
//                 of attention, and replays the rest in backward;
//   mla_up_proj   Megatron-Core's recompute module of that name (multi-head latent attention
//                 only): the up-projections' outputs (queries, keys, values, after rotary) are
//                 dropped once attention has read them and replayed in backward (q_up, kv_up, rope);
//   full          a layer keeps only its input and replays its whole forward in backward.
enum class Recompute { none, selective, selective_op, mla_up_proj, full };
const char* to_string(Recompute r);  // as [training] activation_checkpointing spells it
std::optional<Recompute> parse_recompute(std::string_view name);

// The pipeline's schedule ([parallel] pp_schedule):
//   one_f_one_b  1F1B (PipeDream-Flush, as Megatron-LM; interleaved with virtual stages): each
//                backward pass computes input and weight gradients together;
//   zb_h1        zero bubble ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR,
//                arXiv 2401.10241): a layer's backward split into B (input gradients, which the
//                previous stage waits for) and W (weight gradients, which nothing in the pipeline
//                waits for); stage s runs 1F1B's order with B in place of each backward and defers
//                each micro-batch's W by s backward passes, so that every stage holds as many
//                micro-batches in flight as 1F1B's first stage (its peak memory unchanged) and
//                returns input gradients sooner.
enum class PipelineSchedule { one_f_one_b, zb_h1 };
const char* to_string(PipelineSchedule s);  // "1f1b", "zb-h1": as [parallel] pp_schedule spells it
std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view name);

// How context parallelism exchanges the sequence for attention ([parallel] cp_comm; Megatron-Core's
// cp_comm_type, Transformer Engine's DotProductAttention):
//   p2p         ring attention: each rank's K and V travel around the CP ring in cp - 1 steps,
//               each step beside the attention of the block before (backward: with their gradients);
//   all_gather  K and V of the whole sequence gathered before attention, which waits for them
//               (backward: gathered again, their gradients reduce-scattered after);
//   a2a         DeepSpeed Ulysses: q, k and v all-to-all'd from sequence shards to head shards,
//               attention over the whole sequence on heads / cp, the output back (backward mirrors).
enum class CpComm { p2p, all_gather, a2a };
const char* to_string(CpComm c);  // as [parallel] cp_comm spells it
std::optional<CpComm> parse_cp_comm(std::string_view name);

// The host side of a framework (calibration/frameworks.toml): the CPU time it takes to issue one
// framework op (a kernel launch, a view, an autograd node: RecipeKernel::host_ops counts them)
// in the forward pass and in autograd's backward. One CPU thread issues a rank's ops in program
// order, so an op's kernel starts no earlier than the sum of the host costs of every op up to it;
// a GPU faster than its host waits (an eager small shard). Zero for `fused` (host not modelled).
struct HostCosts {
  double forward_op_s = 0;
  double backward_op_s = 0;
  std::string source;  // where the figures come from (frameworks.toml's source line)
};

struct TrainingSpec {
  model::ModelSpec model;
  GpuSpec gpu;
  int seq_len = 4096;
  int global_batch = 0;       // sequences per iteration, all replicas together
  int micro_batch = 1;        // sequences per forward/backward pass of one replica
  int micro_batches = 1;      // gradient accumulation steps
  Recompute recompute = Recompute::none;
  Strategy strategy = Strategy::fsdp;
  // FSDP/HSDP: 1 is Megatron-LM's distributed optimizer (ZeRO-1: whole bf16 parameters and fp32
  // gradients on every rank, the optimizer state sharded), 2 keeps gathered parameters for
  // backward, 3 reshards after forward.
  int zero_stage = 2;
  // The data-parallel gradient reduction and the gradients it reduces in fp32 or in bf16 (FSDP and
  // ZeRO-1; [training] grad_reduce_dtype). Megatron-LM reduces in fp32 for bf16 parameters unless
  // told otherwise (Megatron-Core's grad_reduce_in_fp32, NeMo's ddp.grad_reduce_in_fp32); PyTorch
  // FSDP reduces in the parameters' dtype unless its MixedPrecision says reduce_dtype=float32.
  bool grad_reduce_fp32 = false;
  // The optimizer's state ([training] optimizer_dtype): false keeps fp32 master weights and fp32
  // Adam moments (PyTorch's and Megatron-Core's distributed optimizer); true is Apex's
  // distributed_fused_adam with dtype=bf16 under bf16 parameters, as NeMo 1.0's Megatron recipes
  // ran it (apex/contrib/optimizers/distributed_fused_adam.py: `dtype` is the state's; NeMo's
  // megatron_base_model.py keeps no fp32 copy, store_params=False, when it equals the parameters'):
  // no master weights, bf16 moments. Sharded ZeRO-1 only.
  bool optimizer_state_bf16 = false;
  int hsdp_shard = 8;         // HSDP: data-parallel ranks that shard the model (one node's worth)
  int diloco_islands = 8;     // DiLoCo: islands (the paper's k workers), each an FSDP group of replicas() / islands
  int diloco_sync_every = 500;  // DiLoCo: inner steps per outer step (the paper's H = 500)
  int dp = 1, tp = 1, pp = 1, cp = 1;
  CpComm cp_comm = CpComm::p2p;  // how context parallelism exchanges the sequence for attention
  // Expert parallelism: an MoE layer's routed experts sharded over ep ranks of each stage's
  // tp x cp x dp (sim/workload/layout.hpp), each rank holding experts / ep experts, each expert's
  // MLP split over expert_tp ranks (expert tensor parallelism; 1: whole).
  int ep = 1;
  int expert_tp = 1;
  bool sequence_parallel = false;
  // Transformer Engine's tensor-parallel comm-GEMM overlap (Megatron's --tp-comm-overlap,
  // torchtitan's async TP; needs sequence parallelism): each reduce-scatter runs beside the GEMM
  // producing its input, each all-gather beside the kernels up to the GEMM reading it.
  bool tp_overlap = false;
  int virtual_stages = 1;     // interleaved 1F1B: model chunks per pipeline stage (1: plain 1F1B)
  PipelineSchedule pp_schedule = PipelineSchedule::one_f_one_b;
  // Uneven pipelines (Megatron-LM's --decoder-first-pipeline-num-layers and
  // --decoder-last-pipeline-num-layers): the layers of the first and of the last stage; 0: an even
  // share. The stages not set split the rest evenly.
  int pp_first_stage_layers = 0;
  int pp_last_stage_layers = 0;
  // A free-form pipeline ([parallel] pp_layout, Megatron-Core's --pipeline-model-parallel-layout,
  // sim/scenario/pp_layout.hpp): the text as given ("" for none) and the decoder layers of each
  // virtual stage (chunk x pp + stage) it sets; empty: the split above.
  std::string pp_layout;
  std::vector<int> vstage_layers;
  // Interleaved 1F1B: contiguous micro-batches per model chunk (Megatron-Core's
  // microbatch_group_size_per_vp_stage, the Llama 3 paper's N); 0: pp, Megatron-Core's default.
  int pp_microbatch_group = 0;
  int microbatch_group() const { return pp_microbatch_group > 0 ? pp_microbatch_group : pp; }
  int max_inflight_allgathers = 2;  // FSDP forward prefetch limit (the current unit and the next)
  double ddp_bucket_bytes = 25e6;   // PyTorch DDP default bucket_cap_mb = 25
  // Megatron-Core's distributed optimizer (zero_stage 1 over all replicas; DataParallelPass):
  // parameters per gradient bucket (DistributedDataParallelConfig.bucket_size; the resolver's
  // default is Megatron-Core's, max(40e6, 1e6 x dp)); each bucket's reduce-scatter under the last
  // micro-batch's backward (--overlap-grad-reduce) and its all-gather under the forward
  // (--overlap-param-gather), else after backward and before the forward. On by default: NeMo's
  // and Megatron-Bridge's recipes turn both on (Megatron-LM's own command line leaves them off).
  double dp_bucket_params = 40e6;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  // ... and the gathers dispatched as the optimizer step leaves each chunk's parameters, every chunk
  // one bucket (Megatron's --overlap-param-gather-with-optimizer-step; interleaved pipelines only).
  bool overlap_param_gather_with_optimizer_step = false;
  // Iterations simulated before the measured one. The engine joins every stream at the end of an
  // iteration, so nothing carries into the next: a warm-up reproduces the measured iteration to
  // float rounding (tests/sim/engine/engine_test.cpp) and only costs time; hence 0.
  int warmup_iterations = 0;
  // Which attention kernel's rows of a calibration table price attention: "commbound" (our
  // FlashAttention-2-style kernel), "cudnn" (cuDNN's fused attention, Transformer Engine's) or
  // "flash2" (FlashAttention-2 itself, PyTorch SDPA's flash backend).
  std::string attention_kernel = "commbound";
  // Whose kernels a step runs (model/framework_recipe.hpp) and its host's costs.
  model::Framework framework = model::Framework::fused;
  HostCosts host;
  // AdamW as torch.optim.AdamW's foreach path runs it (a multi-tensor kernel per _foreach op) or
  // one fused kernel ([training] adamw); unset: the framework's default, foreach under
  // pytorch-eager (PyTorch's default on CUDA), fused otherwise.
  std::optional<bool> adamw_foreach;
  bool foreach_adamw() const { return adamw_foreach.value_or(model::traits(framework).foreach_adamw); }
  // How the loss's cross-entropy holds the logits ([training] cross_entropy); unset: the framework's.
  std::optional<model::CrossEntropy> cross_entropy_choice;
  model::CrossEntropy cross_entropy() const {
    return cross_entropy_choice.value_or(model::traits(framework).cross_entropy);
  }
  // The layers' matrix products in bf16 or fp8 (model/llama_recipe.hpp).
  model::Precision precision = model::Precision::bf16;
  // Under FP8, whether each product keeps its input for the weight gradient in FP8 (the framework's
  // row: Transformer Engine's modules do).
  bool keeps_fp8_inputs() const {
    return precision == model::Precision::fp8 && model::traits(framework).fp8_keeps_fp8_inputs;
  }
  // Where an MoE layer weighs its routed tokens by the router's probabilities ([moe] probs); unset:
  // the framework's.
  std::optional<model::MoeProbs> moe_probs_choice;
  model::MoeProbs moe_probs() const { return moe_probs_choice.value_or(model::traits(framework).moe_probs); }
  // Mixture of experts ([moe]): the router's load over the experts (sim/workload/moe_routing.hpp),
  // the file a histogram of it came from (absolute; "" for none), and how expert parallelism's
  // all-to-all moves tokens (network/collective.hpp).
  moe::Routing routing;
  std::string routing_histogram;
  network::AllToAllMethod dispatcher = network::AllToAllMethod::nccl;
  // Megatron-Core's moe_shared_expert_overlap: the shared experts compute while the dispatcher's
  // all-to-all moves the routed tokens ([moe] shared_expert_overlap).
  bool shared_expert_overlap = false;

  int world() const { return dp * tp * pp * cp; }
  // The layers of pipeline stage `stage` (0 .. pp - 1), every chunk's, as above. Assumes a validated split.
  int stage_layers(int stage) const;
  // The first layer (1-based) of virtual stage `vstage` = chunk x pp + stage (interleaved 1F1B):
  // each stage's layers split evenly over its virtual_stages chunks, the model's layers dealt out
  // in virtual-stage order.
  int first_layer(int vstage) const;
  int chunk_layers(int vstage) const {
    return vstage_layers.empty() ? stage_layers(vstage % pp) / virtual_stages
                                 : vstage_layers[static_cast<std::size_t>(vstage)];
  }
  bool sharded() const { return strategy != Strategy::ddp; }
  // Ranks holding a full copy of the parameters (data x context parallel).
  int replicas() const { return dp * cp; }
  // GPUs one copy of the parameters and optimizer state is sharded over (HSDP's shard group,
  // a DiLoCo island).
  int shard_ranks() const {
    switch (strategy) {
      case Strategy::ddp: return 1;
      case Strategy::fsdp: return replicas();
      case Strategy::hsdp: return hsdp_shard;
      case Strategy::diloco: return replicas() / diloco_islands;
    }
    return 1;
  }
  double tokens_per_iteration() const { return static_cast<double>(global_batch) * seq_len; }
  // Tokens one rank routes through an MoE layer per micro-batch: its context shard of the
  // micro-batch, split over tp (an MoE model with tp > 1 runs sequence parallelism), and the
  // routing problem they pose (experts, top_k, over ep ranks).
  double routed_tokens() const { return static_cast<double>(micro_batch) * seq_len / cp / tp; }
  moe::LayerShape moe_layer_shape() const { return {model.experts, model.top_k, ep, routed_tokens()}; }
  // Ranks holding a copy of an MoE layer's experts: the stage's tp x cp x dp ranks over
  // ep x expert_tp; and, sharded, the GPUs they are sharded over.
  int expert_replicas() const { return tp * replicas() / (ep * expert_tp); }
  int expert_shard_ranks() const { return sharded() ? expert_replicas() : 1; }
};

Expected<GpuSpec> load_gpu(const Presets& presets, const std::string& name);
// The host costs of `framework` from calibration/frameworks.toml (fused: zero, not read).
Expected<HostCosts> load_host_costs(const Presets& presets, model::Framework framework);

}  // namespace commbound::sim
