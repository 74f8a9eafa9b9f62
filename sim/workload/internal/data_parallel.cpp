#include "sim/workload/internal/data_parallel.hpp"

#include "model/framework_recipe.hpp"

#include <map>
#include <optional>

namespace commbound::sim::internal {
namespace {

using network::CollectiveOp;
namespace recipe = model::recipe;

// Parameter tensors of a unit, for the kernels PyTorch's wrappers launch once per tensor: a Llama
// layer's q, k, v, o, gate, up and down weights and its two norms (torchtitan's and Hugging Face's
// modules); the routed experts' three stacked weights; the root's embedding, final norm and head.
constexpr int kLayerParamTensors = 9;
constexpr int kExpertParamTensors = 3;
constexpr int kRootParamTensors = 3;

int param_tensors(const std::string& unit, bool experts) {
  if (experts) return kExpertParamTensors;
  return unit == "root" ? kRootParamTensors : kLayerParamTensors;
}

// With PyTorch's glue (pytorch-eager, pytorch-compile): each gradient copied into its bucket as its
// layer's backward ends and copied back out after the bucket's all-reduce, at the end of backward
// (recipe::ddp_bucket_copy_in / _out), on the compute stream.
class DdpPass final : public DataParallelPass {
public:
  DdpPass(double bucket_cap_bytes, bool pytorch_glue) : bucket_cap_bytes_(bucket_cap_bytes), glue_(pytorch_glue) {}

  // Gradients join the current bucket as their layer's backward ends; a bucket is all-reduced when
  // it reaches the cap, and the last one when the chunk's backward ends.
  void reduce_layer(ProgramWriter& w, int l, bool last_of_chunk, double unit_bytes, int after, bool experts) override {
    if (!moves(experts)) return;
    const std::string unit = "layer" + std::to_string(l) + (experts ? ".experts" : "");
    after = copy_in(w, unit, unit_bytes, param_tensors(unit, experts), after);
    if (experts) {
      all_reduce(w, unit + ".allreduce", GroupKind::expert_data_parallel, unit_bytes, kExpertParamTensors, after);
      return;
    }
    bucket_bytes_ += unit_bytes;
    bucket_tensors_ += kLayerParamTensors;
    if (bucket_bytes_ < bucket_cap_bytes_ && !last_of_chunk) return;
    all_reduce(w, "bucket." + unit + ".allreduce", GroupKind::data_parallel, bucket_bytes_, bucket_tensors_, after);
    bucket_bytes_ = 0;
    bucket_tensors_ = 0;
  }
  void reduce_root(ProgramWriter& w, double root_bytes, int after) override {
    if (!moves(false)) return;
    after = copy_in(w, "root", root_bytes, kRootParamTensors, after);
    all_reduce(w, "root.allreduce", GroupKind::data_parallel, root_bytes, kRootParamTensors, after);
  }
  void finish_gradients(ProgramWriter& w, int) override {
    for (const Bucket& b : buckets_) {
      gradient_syncs_.push_back(w.run_on(StreamId::compute, b.name + ".copy_out.",
                                         recipe::ddp_bucket_copy_out(b.bytes / kBf16Bytes, b.tensors), {b.all_reduce},
                                         true));
    }
    buckets_.clear();
  }

private:
  struct Bucket {
    std::string name;
    int all_reduce = -1;
    double bytes = 0;
    int tensors = 0;
  };

  int copy_in(ProgramWriter& w, const std::string& unit, double unit_bytes, int tensors, int after) {
    if (!glue_) return after;
    return w.run_on(StreamId::compute, unit + ".bucket_copy_in.", recipe::ddp_bucket_copy_in(unit_bytes / kBf16Bytes, tensors),
                    {after}, true);
  }
  void all_reduce(ProgramWriter& w, const std::string& name, GroupKind g, double bytes, int tensors, int after) {
    const int i = w.collective(name, StreamId::reduce_scatter, CollectiveOp::all_reduce, g, bytes, {after});
    if (glue_) {
      buckets_.push_back({name, i, bytes, tensors});
    } else {
      gradient_syncs_.push_back(i);
    }
  }

  const double bucket_cap_bytes_;
  const bool glue_;
  double bucket_bytes_ = 0;
  int bucket_tensors_ = 0;
  std::vector<Bucket> buckets_;  // all-reduced, their gradients not yet copied back out
};

// Where FSDP shards the model and what follows each reduce-scatter.
enum class Sharding {
  all_replicas,                // FSDP: one shard group of every replica
  shard_group_then_allreduce,  // HSDP: each reduced shard then all-reduced over the replica group
  shard_group_only,            // DiLoCo's inner step: nothing leaves the shard group (the island)
};

// FSDP over all replicas, or over shard groups of `shard_ranks` (HSDP, DiLoCo's islands), of which
// there are `replica_groups`: each unit's gradients reduce-scattered as the last micro-batch's
// backward produces them, its parameters all-gathered as the forward reaches it, at most
// max_inflight_allgathers ahead. ZeRO-1 (Megatron-LM's distributed optimizer, its
// docs/source/api-guide/dist_optimizer.md: 6 + 12/d bytes per parameter) gathers once per
// iteration; over all replicas it is DistributedOptimizerPass, below. A reduction in fp32 (TrainingSpec::grad_reduce_fp32:
// Megatron's main_grad buffer by default, FSDP's reduce_dtype=float32) moves twice the bf16 bytes.
// With PyTorch's glue (pytorch-eager, pytorch-compile at ZeRO-2/3, which is FSDP2): the copies,
// casts and divides of recipe::fsdp2_glue around each all-gather and reduce-scatter, on the
// streams FSDP2 runs them on. The reduce-scatter stream's copy-in runs beside the backward's
// kernels without slowing them: the engine charges contention for NCCL's kernels only (NOT
// modelled: its HBM traffic is at most its own time, about 4-8 bytes per gradient).
class FsdpPass : public DataParallelPass {
public:
  FsdpPass(int zero_stage, bool reduce_fp32, Sharding sharding, int shard_ranks, int replica_groups, bool pytorch_glue)
      : zero_stage_(zero_stage),
        reduce_fp32_(reduce_fp32),
        shard_kind_(sharding == Sharding::all_replicas ? GroupKind::data_parallel : GroupKind::shard),
        hsdp_(sharding == Sharding::shard_group_then_allreduce),
        glue_(pytorch_glue && zero_stage >= 2),
        shard_ranks_(shard_ranks),
        replica_groups_(replica_groups) {}

  // ZeRO-2 keeps the gathered parameters from the first micro-batch to the end of the iteration;
  // ZeRO-3 frees them after each use.
  int gather_forward(ProgramWriter& w, const std::string& unit, const std::string& tag, int mb, double unit_bytes,
                     std::vector<int> deps, bool experts, int = -1) override {
    if ((mb > 0 && zero_stage_ != 3) || !moves(experts)) return -1;
    return gather(w, unit, ".allgather" + tag, unit_bytes, std::move(deps), experts, false);
  }
  int gather_backward(ProgramWriter& w, const std::string& unit, const std::string& tag, double unit_bytes,
                      std::vector<int> deps, bool experts) override {
    if (zero_stage_ != 3 || !moves(experts)) return -1;
    return gather(w, unit, ".allgather_bwd" + tag, unit_bytes, std::move(deps), experts, true);
  }
  void reduce_layer(ProgramWriter& w, int l, bool, double unit_bytes, int after, bool experts) override {
    reduce(w, "layer" + std::to_string(l) + (experts ? ".experts" : ""), unit_bytes, after, experts);
  }
  void reduce_root(ProgramWriter& w, double root_bytes, int after) override { reduce(w, "root", root_bytes, after, false); }

private:
  // Routed experts are sharded over their own replicas (the expert-data-parallel group; HSDP and
  // DiLoCo do not run MoE models: scenario validation).
  GroupKind group(bool experts) const { return experts ? GroupKind::expert_data_parallel : shard_kind_; }

  // FSDP2's kernels for `unit` (null without the glue): sharded over the expert replicas or the
  // shard group, divided over the expert replicas or every data-parallel replica.
  std::optional<recipe::Fsdp2Glue> glue(const std::string& unit, double unit_bf16_bytes, bool experts) const {
    if (!glue_) return std::nullopt;
    const int shard = experts ? expert_replicas() : shard_ranks_;
    const int replicas = experts ? expert_replicas() : shard_ranks_ * (hsdp_ ? replica_groups_ : 1);
    return recipe::fsdp2_glue(unit_bf16_bytes / kBf16Bytes, param_tensors(unit, experts), shard, replicas, reduce_fp32_);
  }

  int gather(ProgramWriter& w, const std::string& unit, const std::string& name, double unit_bytes, std::vector<int> deps,
             bool experts, bool backward) {
    const auto kernels = glue(unit, unit_bytes, experts);
    if (kernels) deps = {w.run_on(StreamId::all_gather, unit + name + ".copy_in.", kernels->gather_copy_in, std::move(deps), backward)};
    const int ag = w.collective(unit + name, StreamId::all_gather, CollectiveOp::all_gather, group(experts), unit_bytes,
                                std::move(deps));
    if (!kernels) return ag;
    return w.run_on(StreamId::compute, unit + name + ".copy_out.", kernels->gather_copy_out, {ag}, backward);
  }

  void reduce(ProgramWriter& w, const std::string& unit, double unit_bf16_bytes, int after, bool experts) {
    if (!moves(experts)) return;
    const auto kernels = glue(unit, unit_bf16_bytes, experts);
    if (kernels) after = w.run_on(StreamId::reduce_scatter, unit + ".reducescatter.copy_in.", kernels->reduce_copy_in, {after}, true);
    const double unit_bytes = reduce_fp32_ ? unit_bf16_bytes * kFp32Bytes / kBf16Bytes : unit_bf16_bytes;
    int last = w.collective(unit + ".reducescatter", StreamId::reduce_scatter, CollectiveOp::reduce_scatter,
                            group(experts), unit_bytes, {after});
    if (!experts && hsdp_ && replica_groups_ >= 2) {
      last = w.collective(unit + ".replica_allreduce", StreamId::reduce_scatter, CollectiveOp::all_reduce,
                          GroupKind::replica, unit_bytes / shard_ranks_, {last});
    }
    if (kernels && !kernels->reduce_view_out.empty()) {
      last = w.run_on(StreamId::reduce_scatter, unit + ".reducescatter.view_out.", kernels->reduce_view_out, {last}, true);
    }
    gradient_syncs_.push_back(last);
  }

  const int zero_stage_;
  const bool reduce_fp32_;
  const GroupKind shard_kind_;
  const bool hsdp_;
  const bool glue_;

protected:
  const int shard_ranks_;
  const int replica_groups_;
};

// Megatron-Core's distributed optimizer (ZeRO-1; megatron/core/distributed/, its DDP wrapper and
// param_and_grad_buffer.py, and pipeline_parallel/schedules.py), FSDP's collectives in its buckets:
// - Buckets: a model chunk's parameters in backward order, a bucket closed once it holds
//   `bucket_params` (DistributedDataParallelConfig.bucket_size, max(40e6, 1e6 x dp) by default).
//   Only the first pipeline stage's first chunk is bucketed: later stages (pp rank > 0) and later
//   chunks (disable_bucketing for model_chunk_idx > 0) are one bucket each, as is every chunk
//   without overlap_grad_reduce (bucket_size = None).
// - overlap_grad_reduce: a bucket is reduce-scattered once the last micro-batch's backward has
//   produced all of its gradients (the backward post-hook's register_grad_ready); without it every
//   bucket is reduced after the stage's last backward (finish_grad_sync).
// - overlap_param_gather, one chunk per stage: bucket k's all-gather is dispatched by the forward
//   pre-hook of its first module, and bucket k + 1's (next_param_gather_bucket_group) as bucket k's
//   forward is issued. Interleaved (align_param_gather, Megatron-LM's default there): chunks 0 and
//   1 gathered whole as the schedule starts, chunk c + 1 as chunk c's first forward is issued.
//   With overlap_param_gather_with_optimizer_step (interleaved only; bucketing off, every chunk one
//   bucket): all of them as the previous step's optimizer leaves them, which in the steady state
//   one simulated iteration stands for is its start, in chunk order.
//   Without it the updated parameters are gathered inside the optimizer step, before the next
//   forward: all of them, first, with nothing to hide behind.
// Units are whole layers (Megatron splits buckets at parameters); the root (embedding, LM head) and
// the routed experts (their own buffers) keep FSDP's per-unit collectives.
class DistributedOptimizerPass final : public FsdpPass {
public:
  DistributedOptimizerPass(const TrainingSpec& t)
      : FsdpPass(1, t.grad_reduce_fp32, Sharding::all_replicas, t.shard_ranks(), 1, false),
        reduce_bytes_per_bf16_(t.grad_reduce_fp32 ? kFp32Bytes / kBf16Bytes : 1.0),
        bucket_params_(t.dp_bucket_params),
        overlap_grad_reduce_(t.overlap_grad_reduce),
        overlap_param_gather_(t.overlap_param_gather),
        gather_with_optimizer_(t.overlap_param_gather_with_optimizer_step),
        interleaved_(t.virtual_stages > 1) {}

  void plan(int stage, const std::vector<std::vector<ChunkUnit>>& chunks) override {
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      const bool bucketed = overlap_grad_reduce_ && !gather_with_optimizer_ && stage == 0 && c == 0;
      std::vector<Bucket> buckets;
      for (auto u = chunks[c].rbegin(); u != chunks[c].rend(); ++u) {
        if (buckets.empty() || (bucketed && buckets.back().bytes / kBf16Bytes >= bucket_params_)) {
          buckets.push_back({"chunk" + std::to_string(c) + ".bucket" + std::to_string(buckets.size())});
        }
        Bucket& b = buckets.back();
        b.bytes += u->bytes;
        ++b.units_left;
        where_[u->unit] = {static_cast<int>(c), static_cast<int>(buckets.size() - 1), false};
      }
      // A bucket's first unit in forward order is its last in backward order.
      for (auto u = chunks[c].begin(); u != chunks[c].end(); ++u) {
        Place& p = where_[u->unit];
        p.first_forward = u == chunks[c].begin() || where_[(u - 1)->unit].bucket != p.bucket;
      }
      chunks_.push_back(std::move(buckets));
    }
  }

  int gather_forward(ProgramWriter& w, const std::string& unit, const std::string& tag, int mb, double unit_bytes,
                     std::vector<int> deps, bool experts, int issued_after) override {
    const auto p = where_.find(unit);
    if (p == where_.end()) return FsdpPass::gather_forward(w, unit, tag, mb, unit_bytes, std::move(deps), experts);
    if (mb > 0 || !moves(false)) return -1;
    const auto [c, b, first_forward] = p->second;
    const std::vector<int> after = issued_after < 0 ? std::vector<int>{} : std::vector<int>{issued_after};
    if (!overlap_param_gather_ || gather_with_optimizer_) {
      for (std::size_t k = 0; k < chunks_.size(); ++k) gather_chunk(w, k, {});
    } else if (interleaved_) {
      gather_chunk(w, 0, {});
      if (chunks_.size() > 1) gather_chunk(w, 1, {});
      if (first_forward && b + 1 == static_cast<int>(chunks_[c].size()) && c + 1 < static_cast<int>(chunks_.size())) {
        gather_chunk(w, c + 1, after);
      }
    } else {
      gather_bucket(w, c, b, after);
      if (first_forward && b > 0) gather_bucket(w, c, b - 1, after);
    }
    return chunks_[c][b].gather;
  }

  void reduce_layer(ProgramWriter& w, int l, bool last_of_chunk, double unit_bytes, int after, bool experts) override {
    const std::string unit = "layer" + std::to_string(l);
    const auto p = where_.find(unit);
    if (experts || p == where_.end()) return FsdpPass::reduce_layer(w, l, last_of_chunk, unit_bytes, after, experts);
    Bucket& b = chunks_[p->second.chunk][p->second.bucket];
    if (--b.units_left == 0 && overlap_grad_reduce_) reduce_bucket(w, b, after);
  }

  void finish_gradients(ProgramWriter& w, int after) override {
    if (overlap_grad_reduce_) return;
    for (auto& chunk : chunks_) {
      for (Bucket& b : chunk) reduce_bucket(w, b, after);
    }
  }

private:
  struct Bucket {
    std::string name;
    double bytes = 0;  // bf16 parameters
    int units_left = 0;
    int gather = -1;
  };
  struct Place {
    int chunk = 0;
    int bucket = 0;
    bool first_forward = false;  // the bucket's first unit in forward order
  };

  void gather_bucket(ProgramWriter& w, std::size_t c, std::size_t b, std::vector<int> deps) {
    Bucket& k = chunks_[c][b];
    if (k.gather >= 0 || !moves(false)) return;
    k.gather = w.collective(k.name + ".allgather", StreamId::all_gather, CollectiveOp::all_gather, GroupKind::data_parallel,
                            k.bytes, std::move(deps));
  }
  // start_param_sync of a chunk: its buckets in their order (backward order).
  void gather_chunk(ProgramWriter& w, std::size_t c, const std::vector<int>& deps) {
    for (std::size_t b = 0; b < chunks_[c].size(); ++b) gather_bucket(w, c, b, deps);
  }
  void reduce_bucket(ProgramWriter& w, const Bucket& b, int after) {
    if (!moves(false)) return;
    gradient_syncs_.push_back(w.collective(b.name + ".reducescatter", StreamId::reduce_scatter,
                                           CollectiveOp::reduce_scatter, GroupKind::data_parallel,
                                           b.bytes * reduce_bytes_per_bf16_, {after}));
  }

  const double reduce_bytes_per_bf16_;
  const double bucket_params_;
  const bool overlap_grad_reduce_;
  const bool overlap_param_gather_;
  const bool gather_with_optimizer_;
  const bool interleaved_;
  std::vector<std::vector<Bucket>> chunks_;  // each chunk's buckets, in backward order
  std::map<std::string, Place> where_;
};

// DiLoCo (Douillard et al. 2023, arXiv 2311.08105, Algorithm 1): each island runs FSDP on its own
// data for H inner steps; then every rank forms the pseudo-gradient of its shard (anchor minus
// local parameters), the islands average it with one all-reduce over the replica group (the ranks
// holding the same shard in every island), and the outer optimizer (Nesterov momentum) updates the
// anchor, which becomes the next inner start. The pseudo-gradient travels in fp32: it is the
// difference of two fp32 copies of the weights, averaged into fp32 weights; bf16 (8 significant
// bits) would round each island's part before the sum (docs/studies.md, study 7).
class DilocoPass final : public FsdpPass {
public:
  DilocoPass(int zero_stage, bool reduce_fp32, int island_ranks, int islands, bool pytorch_glue)
      : FsdpPass(zero_stage, reduce_fp32, Sharding::shard_group_only, island_ranks, islands, pytorch_glue) {}

  void outer_step(ProgramWriter& w, double local_params, int after) override {
    int start = after;
    if (replica_groups_ > 1) {
      start = w.collective("outer.pseudo_gradient.allreduce", StreamId::reduce_scatter, CollectiveOp::all_reduce,
                           GroupKind::replica, local_params * kFp32Bytes, {after});
    }
    // The outer Nesterov update reads the averaged pseudo-gradient, the momentum and the anchor and
    // writes the momentum, the anchor and the local parameters: a fused fp32 elementwise pass over
    // the shard like AdamW's (which reads gradient, parameters and two moments and writes three),
    // so it is priced as the recipe's optimizer over the same shard.
    w.optimizer("outer.optimizer.", local_params, {start});
  }
};

}  // namespace

std::unique_ptr<DataParallelPass> make_data_parallel_pass(const TrainingSpec& t) {
  const int expert_replicas = t.model.moe() ? t.expert_replicas() : 1;
  // PyTorch's wrappers launch their own kernels around the collectives; Megatron-LM's buffers are
  // the parameters and gradients themselves (views), and `fused` is the ideal without either.
  const bool glue = model::traits(t.framework).pytorch_wrappers;
  std::unique_ptr<DataParallelPass> pass;
  if (t.replicas() < 2 && expert_replicas < 2) {
    pass = std::make_unique<DataParallelPass>();
  } else if (!t.sharded()) {
    pass = std::make_unique<DdpPass>(t.ddp_bucket_bytes, glue);
  } else if (t.strategy == Strategy::diloco) {
    pass = std::make_unique<DilocoPass>(t.zero_stage, t.grad_reduce_fp32, t.shard_ranks(), t.diloco_islands, glue);
  } else if (t.strategy == Strategy::fsdp && t.zero_stage == 1) {
    pass = std::make_unique<DistributedOptimizerPass>(t);
  } else {
    const Sharding sharding = t.strategy == Strategy::hsdp ? Sharding::shard_group_then_allreduce : Sharding::all_replicas;
    pass = std::make_unique<FsdpPass>(t.zero_stage, t.grad_reduce_fp32, sharding, t.shard_ranks(),
                                      t.replicas() / t.shard_ranks(), glue);
  }
  pass->dense_replicas_ = t.replicas();
  pass->expert_replicas_ = expert_replicas;
  return pass;
}

}  // namespace commbound::sim::internal
