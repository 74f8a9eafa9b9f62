#include "sim/workload/memory_model.hpp"

#include <algorithm>

namespace commbound::sim {
namespace {

constexpr double kBf16 = 2;
constexpr double kFp32 = 4;
// NCCL's default buffer (NCCL_BUFFSIZE 4 MiB, src/init.cc) per channel, per direction, per peer of
// a ring (send and receive side).
constexpr double kNcclBufferBytes = 4.0 * 1024 * 1024;
// Caching-allocator fragmentation and CUDA context: an assumption, stated rather than measured:
// 5% of what the model holds plus 1 GB of context and workspace.
constexpr double kAllocatorFraction = 0.05;
constexpr double kContextBytes = 1e9;

}  // namespace

MemoryUse memory_per_gpu(const TrainingSpec& t, int nccl_channels) {
  const calibration::ModelSpec& m = t.model;
  // The first pipeline stage (its layers and the input embedding) holds the most activations
  // (1F1B keeps up to `pp` micro-batches in flight there); count its layers, and conservatively
  // both embedding matrices (all of them on one stage).
  const int layers = m.layers / t.pp;
  const double root = ((t.pp == 1 ? 2 : 1) * m.embedding_params() + m.hidden) / t.tp;
  const double layer = m.layer_params() / t.tp;
  const double P = layers * layer + root;  // this GPU's slice of the parameters
  const double s = static_cast<double>(t.seq_len) / t.cp;  // this rank's share of the sequence
  const double b = t.micro_batch;
  const double h = m.hidden;
  MemoryUse u;
  auto add = [&](const std::string& what, double bytes) {
    u.bytes.emplace_back(what, bytes);
    u.total_bytes += bytes;
  };
  if (t.sharded()) {
    const double shard = P / t.shard_ranks();
    add("params_bf16", t.zero_stage == 2 ? kBf16 * P : kBf16 * (shard + root + (t.max_inflight_allgathers + 1) * layer));
    add("master_fp32", kFp32 * shard);
    add("adam_moments_fp32", 2 * kFp32 * shard);
    add("grads", kFp32 * shard + kBf16 * 2 * layer);  // fp32 shard + unsharded bf16 gradients of the unit in flight
    // DiLoCo's outer state (arXiv 2311.08105, Algorithm 1): the anchor (the global parameters the
    // inner steps started from) and the outer Nesterov momentum, both fp32 over the island's shard;
    // the pseudo-gradient reuses the fp32 gradient shard, free during the outer step.
    if (t.strategy == Strategy::diloco) add("diloco_anchor_and_momentum_fp32", 2 * kFp32 * shard);
  } else {
    add("params_fp32", kFp32 * P);
    add("adam_moments_fp32", 2 * kFp32 * P);
    add("grads_fp32", kFp32 * P);
  }
  double per_layer = 34 * s * b * h;
  if (t.tp > 1) per_layer = t.sequence_parallel ? 34 * s * b * h / t.tp : 10 * s * b * h + 24 * s * b * h / t.tp;
  double activations = layers * per_layer;
  if (t.activation_checkpointing) activations = layers * 2 * s * b * h + per_layer;
  activations *= std::min(t.pp, t.micro_batches);    // micro-batches in flight on the first stage
  if (t.pp == 1) activations += 2 * s * b * m.vocab / t.tp * kFp32;  // fp32 logits and their gradient
  add("activations", activations);
  const int communicators = (t.replicas() > 1 ? 1 : 0) + (t.tp > 1 ? 1 : 0) + (t.pp > 1 ? 1 : 0) + (t.cp > 1 ? 1 : 0);
  add("nccl_buffers", communicators * nccl_channels * 2 * 2 * kNcclBufferBytes);
  add("allocator_and_context", kAllocatorFraction * u.total_bytes + kContextBytes);
  u.capacity_bytes = t.gpu.memory_bytes;
  return u;
}

}  // namespace commbound::sim
