#include "sim/workload/memory_model.hpp"

#include "sim/scenario/size_limits.hpp"
#include "sim/workload/internal/pipeline_schedule.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace commbound::sim {
namespace {

constexpr double kBf16 = 2;
constexpr double kFp32 = 4;
constexpr double kFp8 = 1;
// NCCL's default buffer (NCCL_BUFFSIZE 4 MiB, src/init.cc) per channel, per direction, per peer of
// a ring (send and receive side).
constexpr double kNcclBufferBytes = 4.0 * 1024 * 1024;
// Caching-allocator fragmentation and CUDA context: an assumption, stated rather than measured:
// 5% of what the model holds plus 1 GB of context (CUDA context, cuBLAS and NCCL workspaces).
constexpr double kAllocatorFraction = 0.05;
constexpr double kContextBytes = 1e9;

// The most activations stage `stage` holds at once, `kept` bytes per model chunk held from a
// forward to its backward: under plain 1F1B those of pp - s micro-batches (its warm-up forwards
// and the one in flight); interleaved, as its schedule runs, whose warm-up is longer and whose
// chunks may differ (pp_layout). A schedule past the programs' size limit (which refuse to run it
// anyway) takes the bound of its warm-up units all of the largest chunk.
double most_held(const TrainingSpec& t, int stage, const std::vector<double>& kept) {
  if (t.virtual_stages == 1) return kept.front() * std::min(t.pp - stage, t.micro_batches);
  const std::int64_t units = std::int64_t{t.micro_batches} * t.virtual_stages;
  if (units * t.pp > kMaxOpsAllStages) {
    const long warmup = internal::warmup_units(t.pp, stage, t.virtual_stages, t.micro_batches, t.microbatch_group());
    return static_cast<double>(std::min<std::int64_t>(warmup + 1, units)) * *std::max_element(kept.begin(), kept.end());
  }
  double held = 0, most = 0;
  for (const internal::ScheduleUnit& u :
       internal::one_forward_one_backward(t.pp, stage, t.virtual_stages, t.micro_batches, t.microbatch_group())) {
    held += (u.backward ? -1 : 1) * kept[static_cast<std::size_t>(u.chunk)];
    most = std::max(most, held);
  }
  return most;
}

// Pipeline stage `stage`'s GPU.
MemoryUse memory_of_stage(const TrainingSpec& t, int nccl_channels, int stage) {
  const model::ModelSpec& m = t.model;
  const bool first = stage == 0, last = stage == t.pp - 1;
  // The input embedding on the first stage, the final norm and LM head on the last (a tied head
  // shares the embedding's weights only when both are on one stage).
  const double root = ((first ? m.input_params() : 0) + (last ? m.head_params(first) : 0)) / t.tp;
  // The stage's layers (every model chunk's, interleaved): the dense parameters split by tp, an
  // MoE layer's routed experts by ep (sharded over their own replicas), and what each keeps for
  // its backward.
  double dense = 0, experts = 0, largest = 0, kept_whole = 0;
  std::vector<double> kept(static_cast<std::size_t>(t.virtual_stages), 0.0);  // per model chunk
  for (int c = 0; c < t.virtual_stages; ++c) {
    const int vs = c * t.pp + stage;
    for (int l = t.first_layer(vs); l < t.first_layer(vs) + t.chunk_layers(vs); ++l) {
      const bool moe = m.is_moe_layer(l);
      const double routed = moe ? m.routed_expert_params() : 0;
      dense += (m.layer_params(l) - routed) / t.tp;
      experts += routed / (t.ep * t.expert_tp);
      largest = std::max(largest, (m.layer_params(l) - routed) / t.tp + routed / (t.ep * t.expert_tp));
      kept[static_cast<std::size_t>(c)] += activation_bytes_per_layer(t, t.recompute, moe);
      kept_whole = std::max(kept_whole, activation_bytes_per_layer(t, Recompute::none, moe));
    }
  }
  // The last stage also holds the multi-token prediction modules: a layer each, a projection and
  // norms (ModelSpec::mtp_module_params), and each module's layer's activations.
  for (int k = 1; last && k <= m.mtp_layers; ++k) {
    const int l = m.layers + k;
    const bool moe = m.is_moe_layer(l);
    const double routed = moe ? m.routed_expert_params() : 0;
    dense += (m.mtp_module_params(k) - routed) / t.tp;
    experts += routed / (t.ep * t.expert_tp);
    kept.back() += activation_bytes_per_layer(t, t.recompute, moe);
  }
  const double layer = largest;  // the largest FSDP unit: what one gathered layer holds
  const double P = dense + experts + root;  // this GPU's slice of the parameters
  const double tokens = static_cast<double>(t.micro_batch) * t.seq_len / t.cp;  // of one micro-batch on this rank
  MemoryUse u;
  u.stage = stage;
  auto add = [&](const std::string& what, double bytes) {
    u.bytes.emplace_back(what, bytes);
    u.total_bytes += bytes;
  };
  if (t.sharded()) {
    const double shard = (dense + root) / t.shard_ranks() + experts / (experts > 0 ? t.expert_shard_ranks() : 1);
    add("params_bf16", t.zero_stage <= 2 ? kBf16 * P : kBf16 * (shard + root + (t.max_inflight_allgathers + 1) * layer));
    if (t.optimizer_state_bf16) {
      add("adam_moments_bf16", 2 * kBf16 * shard);  // no master copy: the bf16 parameters are the weights
    } else {
      add("master_fp32", kFp32 * shard);
      add("adam_moments_fp32", 2 * kFp32 * shard);
    }
    if (t.zero_stage == 1) {
      // Megatron's main_grad buffer: every parameter's gradient, in the reduction's dtype.
      if (t.grad_reduce_fp32) {
        add("grads_fp32", kFp32 * P);
      } else {
        add("grads_bf16", kBf16 * P);
      }
    } else {
      // fp32 shard + unsharded bf16 gradients of the unit in flight (and their fp32 copy when the
      // reduction is in fp32).
      add("grads", kFp32 * shard + kBf16 * 2 * layer + (t.grad_reduce_fp32 ? kFp32 * layer : 0));
    }
    // DiLoCo's outer state (arXiv 2311.08105, Algorithm 1): the anchor (the global parameters the
    // inner steps started from) and the outer Nesterov momentum, both fp32 over the island's shard;
    // the pseudo-gradient reuses the fp32 gradient shard, free during the outer step.
    if (t.strategy == Strategy::diloco) add("diloco_anchor_and_momentum_fp32", 2 * kFp32 * shard);
  } else {
    add("params_fp32", kFp32 * P);
    add("adam_moments_fp32", 2 * kFp32 * P);
    add("grads_fp32", kFp32 * P);
  }
  // Every layer keeps what its recomputation mode keeps; under selective_op and full the layer
  // whose backward runs holds its full activations again (replayed).
  double activations = most_held(t, stage, kept);
  if (t.recompute == Recompute::selective_op || t.recompute == Recompute::full) {
    activations += kept_whole * std::min(t.pp - stage, t.micro_batches);
  }
  add("activations", activations);
  // The loss on the last stage, at the start of the backward, when every layer's activations are
  // still held: the [tokens x vocab / tp] logits as the cross-entropy holds them
  // (model::CrossEntropy). PyTorch frameworks compute it on the logits cast to fp32 (torchtitan,
  // Hugging Face: `logits.float()`) as log_softmax + nll_loss; log_softmax keeps its fp32 output
  // for its backward, nll_loss's backward writes a dense fp32 gradient of that shape, and
  // log_softmax's backward a third (PyTorch tools/autograd/derivatives.yaml: _log_softmax_backward_data
  // reads the gradient and the saved result). Megatron-Core's keeps one fp32 copy, Transformer
  // Engine's the bf16 logits.
  if (last) {
    const double logits = tokens * m.vocab / t.tp;
    switch (t.cross_entropy()) {
      case model::CrossEntropy::log_softmax: add("loss_logits_fp32", 3 * kFp32 * logits); break;
      case model::CrossEntropy::vocab_parallel: add("loss_logits_fp32", kFp32 * logits); break;
      case model::CrossEntropy::te: add("loss_logits_bf16", kBf16 * logits); break;
    }
  }
  const int communicators = (t.replicas() > 1 ? 1 : 0) + (t.tp > 1 ? 1 : 0) + (t.pp > 1 ? 1 : 0) + (t.cp > 1 ? 1 : 0) +
                            (experts > 0 && t.ep > 1 ? 1 : 0) + (experts > 0 && t.expert_replicas() > 1 ? 1 : 0);
  add("nccl_buffers", communicators * nccl_channels * 2 * 2 * kNcclBufferBytes);
  add("allocator_and_context", kAllocatorFraction * u.total_bytes + kContextBytes);
  u.capacity_bytes = t.gpu.memory_bytes;
  return u;
}

}  // namespace

double activation_bytes_per_layer(const TrainingSpec& t, Recompute r, bool moe) {
  const model::ModelSpec& m = t.model;
  const double tokens = static_cast<double>(t.micro_batch) * t.seq_len / t.cp;
  const double tp = t.tp;
  const double h = m.hidden, kv = m.kv_dim(), f = m.ffn, a = m.heads;
  // A [tokens x h] tensor outside the tensor-parallel region: every rank holds all of it unless
  // sequence parallelism splits it.
  const double replicated = t.sequence_parallel ? 1 / tp : 1.0;
  const double lse = kFp32 * a / tp;
  // A product's input kept for its weight gradient: bf16, or under FP8 as the framework keeps it
  // (TrainingSpec::keeps_fp8_inputs: Transformer Engine's FP8 copy, one byte an element;
  // docs/reference/activation-memory.md).
  const bool fp8_inputs = t.keeps_fp8_inputs();
  const double in = fp8_inputs ? kFp8 : kBf16;
  // The MLP's inputs to its activation and second product: its first product's outputs, bf16
  // (mlp_in_width(f) / tp a token: SwiGLU's gate and up, GELU's or squared ReLU's up), and the
  // activation's output (f / tp), the second product's input.
  const auto kept_mlp = [&](double width) { return kBf16 * m.mlp_in_width(width) + in * width; };
  // An MoE layer keeps, per routed token (tokens / tp under sequence parallelism, top_k copies
  // each): the permuted tokens, the experts' first product's input; the MLP's; and where the
  // router's probabilities weigh the experts' output (model::MoeProbs), that output before the
  // unpermute. Besides: the router's fp32 scores, the shared experts' MLP and, when shared
  // experts take the FP8 copy of the norm's output their own product casts, that copy.
  const double routed_width = h * t.expert_tp;
  const double routed_copy = in * routed_width + kept_mlp(m.expert_ffn) +
                             (t.moe_probs() == model::MoeProbs::output ? kBf16 * routed_width : 0);
  const double shared_width = static_cast<double>(m.shared_experts) * m.expert_ffn;
  const double mlp = moe ? m.top_k / tp * routed_copy + kFp32 * m.experts / tp + kept_mlp(shared_width) / tp
                         : kept_mlp(f) / tp;
  // Both norms' inputs (bf16) and outputs: the attention norm's output is the q, k, v products'
  // input; the MLP norm's the first MLP product's, but an MoE layer's router keeps it in bf16
  // (Megatron-Core's RouterGatingLinearFunction) and its shared experts cast a copy of their own.
  const double norm_out_mlp = moe ? kBf16 + (fp8_inputs && shared_width > 0 ? kFp8 : 0) : in;
  const double norms = (2 * kBf16 + in + norm_out_mlp) * h * replicated;
  // Attention keeps its products' inputs: q, k and v (under MLA also the latents before and after
  // their norms: the q latent on the rank's sequence shard, the kv latent and the rotary key on
  // every token, as Megatron-Core gathers them), its output and the softmax statistics (lse). Under
  // FP8 its output projection keeps the FP8 copy it casts of that output, besides.
  const double qkv = m.qkv_dim() / tp;
  const double latents = m.mla() ? (kBf16 + in) * (m.q_lora_rank * replicated + m.kv_lora_rank) + kBf16 * m.rope_head_dim : 0;
  const double attention_out = m.attention_out_dim() / tp;
  const double all = norms + latents + kBf16 * (qkv + attention_out) + (fp8_inputs ? kFp8 * attention_out : 0) + lse + mlp;
  double per_token = 0;
  switch (r) {
    case Recompute::none: per_token = all; break;
    case Recompute::selective: per_token = all - lse; break;
    case Recompute::mla_up_proj: per_token = all - kBf16 * qkv; break;
    case Recompute::selective_op:
      per_token = kBf16 * h * replicated + kBf16 * (m.q_dim() + kv) / tp + kBf16 * m.q_dim() / tp + lse + mlp / 3 + kBf16 * h;
      break;
    case Recompute::full: per_token = kBf16 * h * replicated; break;
  }
  return per_token * tokens;
}

MemoryUse memory_per_gpu(const TrainingSpec& t, int nccl_channels) {
  MemoryUse most = memory_of_stage(t, nccl_channels, 0);
  for (int stage = 1; stage < t.pp; ++stage) {
    MemoryUse u = memory_of_stage(t, nccl_channels, stage);
    if (u.total_bytes > most.total_bytes) most = std::move(u);
  }
  return most;
}

}  // namespace commbound::sim
