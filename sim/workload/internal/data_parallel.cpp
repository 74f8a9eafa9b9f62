#include "sim/workload/internal/data_parallel.hpp"

namespace commbound::sim::internal {
namespace {

using network::CollectiveOp;

class DdpPass final : public DataParallelPass {
public:
  explicit DdpPass(double bucket_cap_bytes) : bucket_cap_bytes_(bucket_cap_bytes) {}

  // Gradients join the current bucket as their layer's backward ends; a bucket is all-reduced when
  // it reaches the cap, and the last one when the chunk's backward ends.
  void reduce_layer(ProgramWriter& w, int l, bool last_of_chunk, double unit_bytes, int after, bool experts) override {
    if (!moves(experts)) return;
    if (experts) {
      gradient_syncs_.push_back(w.collective("layer" + std::to_string(l) + ".experts.allreduce", StreamId::reduce_scatter,
                                             CollectiveOp::all_reduce, GroupKind::expert_data_parallel, unit_bytes,
                                             {after}));
      return;
    }
    bucket_bytes_ += unit_bytes;
    if (bucket_bytes_ < bucket_cap_bytes_ && !last_of_chunk) return;
    gradient_syncs_.push_back(w.collective("bucket.layer" + std::to_string(l) + ".allreduce", StreamId::reduce_scatter,
                                           CollectiveOp::all_reduce, GroupKind::data_parallel, bucket_bytes_, {after}));
    bucket_bytes_ = 0;
  }
  void reduce_root(ProgramWriter& w, double root_bytes, int after) override {
    if (!moves(false)) return;
    gradient_syncs_.push_back(w.collective("root.allreduce", StreamId::reduce_scatter, CollectiveOp::all_reduce,
                                           GroupKind::data_parallel, root_bytes, {after}));
  }

private:
  const double bucket_cap_bytes_;
  double bucket_bytes_ = 0;
};

// Where FSDP shards the model and what follows each reduce-scatter.
enum class Sharding {
  all_replicas,                // FSDP: one shard group of every replica
  shard_group_then_allreduce,  // HSDP: each reduced shard then all-reduced over the replica group
  shard_group_only,            // DiLoCo's inner step: nothing leaves the shard group (the island)
};

// FSDP over all replicas, or over shard groups of `shard_ranks` (HSDP, DiLoCo's islands), of which
// there are `replica_groups`. ZeRO-1 is Megatron-LM's distributed optimizer (its
// docs/source/api-guide/dist_optimizer.md: 6 + 12/d bytes per parameter). It moves the same
// collectives at the same points: each bucket's gradients reduce-scattered as the last
// micro-batch's backward produces them, the updated parameters all-gathered as the next forward
// reaches them (overlap_param_gather). A reduction in fp32 (TrainingSpec::grad_reduce_fp32:
// Megatron's main_grad buffer by default, FSDP's reduce_dtype=float32) moves twice the bf16 bytes.
class FsdpPass : public DataParallelPass {
public:
  FsdpPass(int zero_stage, bool reduce_fp32, Sharding sharding, int shard_ranks, int replica_groups)
      : zero_stage_(zero_stage),
        reduce_fp32_(reduce_fp32),
        shard_kind_(sharding == Sharding::all_replicas ? GroupKind::data_parallel : GroupKind::shard),
        hsdp_(sharding == Sharding::shard_group_then_allreduce),
        shard_ranks_(shard_ranks),
        replica_groups_(replica_groups) {}

  // ZeRO-2 keeps the gathered parameters from the first micro-batch to the end of the iteration;
  // ZeRO-3 frees them after each use.
  int gather_forward(ProgramWriter& w, const std::string& unit, const std::string& tag, int mb, double unit_bytes,
                     std::vector<int> deps, bool experts) override {
    if ((mb > 0 && zero_stage_ != 3) || !moves(experts)) return -1;
    return w.collective(unit + ".allgather" + tag, StreamId::all_gather, CollectiveOp::all_gather, group(experts),
                        unit_bytes, std::move(deps));
  }
  int gather_backward(ProgramWriter& w, const std::string& unit, const std::string& tag, double unit_bytes,
                      std::vector<int> deps, bool experts) override {
    if (zero_stage_ != 3 || !moves(experts)) return -1;
    return w.collective(unit + ".allgather_bwd" + tag, StreamId::all_gather, CollectiveOp::all_gather, group(experts),
                        unit_bytes, std::move(deps));
  }
  void reduce_layer(ProgramWriter& w, int l, bool, double unit_bytes, int after, bool experts) override {
    reduce(w, "layer" + std::to_string(l) + (experts ? ".experts" : ""), unit_bytes, after, experts);
  }
  void reduce_root(ProgramWriter& w, double root_bytes, int after) override { reduce(w, "root", root_bytes, after, false); }

private:
  // Routed experts are sharded over their own replicas (the expert-data-parallel group; HSDP and
  // DiLoCo do not run MoE models: scenario validation).
  GroupKind group(bool experts) const { return experts ? GroupKind::expert_data_parallel : shard_kind_; }

  void reduce(ProgramWriter& w, const std::string& unit, double unit_bf16_bytes, int after, bool experts) {
    if (!moves(experts)) return;
    const double unit_bytes = reduce_fp32_ ? unit_bf16_bytes * kFp32Bytes / kBf16Bytes : unit_bf16_bytes;
    const int rs = w.collective(unit + ".reducescatter", StreamId::reduce_scatter, CollectiveOp::reduce_scatter,
                                group(experts), unit_bytes, {after});
    if (experts || !hsdp_ || replica_groups_ < 2) {
      gradient_syncs_.push_back(rs);
      return;
    }
    gradient_syncs_.push_back(w.collective(unit + ".replica_allreduce", StreamId::reduce_scatter,
                                           CollectiveOp::all_reduce, GroupKind::replica, unit_bytes / shard_ranks_,
                                           {rs}));
  }

  const int zero_stage_;
  const bool reduce_fp32_;
  const GroupKind shard_kind_;
  const bool hsdp_;

protected:
  const int shard_ranks_;
  const int replica_groups_;
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
  DilocoPass(int zero_stage, bool reduce_fp32, int island_ranks, int islands)
      : FsdpPass(zero_stage, reduce_fp32, Sharding::shard_group_only, island_ranks, islands) {}

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
  std::unique_ptr<DataParallelPass> pass;
  if (t.replicas() < 2 && expert_replicas < 2) {
    pass = std::make_unique<DataParallelPass>();
  } else if (!t.sharded()) {
    pass = std::make_unique<DdpPass>(t.ddp_bucket_bytes);
  } else if (t.strategy == Strategy::diloco) {
    pass = std::make_unique<DilocoPass>(t.zero_stage, t.grad_reduce_fp32, t.shard_ranks(), t.diloco_islands);
  } else {
    const Sharding sharding = t.strategy == Strategy::hsdp ? Sharding::shard_group_then_allreduce : Sharding::all_replicas;
    pass = std::make_unique<FsdpPass>(t.zero_stage, t.grad_reduce_fp32, sharding, t.shard_ranks(), t.replicas() / t.shard_ranks());
  }
  pass->dense_replicas_ = t.replicas();
  pass->expert_replicas_ = expert_replicas;
  return pass;
}

}  // namespace commbound::sim::internal
