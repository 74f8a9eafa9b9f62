// Data-parallel strategy passes: how parameters reach a stage's compute and how its gradients
// leave it, one class per strategy. The stage builder (workload.cpp) calls a pass's hooks where
// those collectives are issued; a hook appends its collectives through the ProgramWriter and
// returns the op the compute waits for (-1: none).
//   none: a single replica, nothing to move;
//   DDP:  gradients all-reduced in buckets during the last micro-batch's backward (PyTorch DDP);
//   FSDP: parameters all-gathered per unit before use and gradients reduce-scattered (ZeRO-2
//         gathers once per iteration, ZeRO-3 before every forward and backward);
//   distributed optimizer (ZeRO-1, Megatron-Core's): FSDP's collectives in Megatron's buckets,
//         issued where its hooks and pipeline schedule issue them;
//   HSDP: FSDP within a shard group, then each reduced shard all-reduced across the replicas;
//   DiLoCo: FSDP within an island (HSDP's shard group) with nothing crossing islands in an inner
//         step; the outer step, once every H inner steps, all-reduces the fp32 pseudo-gradients
//         of the rank's shard across the islands and applies the outer optimizer.
#pragma once

#include "sim/workload/internal/program_writer.hpp"

#include <memory>
#include <string>
#include <vector>

namespace commbound::sim::internal {

// A unit of a model chunk's parameters: its name ("layer7") and its bf16 bytes on this rank.
struct ChunkUnit {
  std::string unit;
  double bytes = 0;
};

class DataParallelPass {
public:
  virtual ~DataParallelPass() = default;

  // Before anything is written: the dense units of each of the stage's model chunks, in forward
  // order (the root aside).
  virtual void plan(int /*stage*/, const std::vector<std::vector<ChunkUnit>>& /*chunks*/) {}

  // Before the forward of micro-batch `mb` through a unit (a layer, a layer's routed experts, or
  // "root": the embedding and LM head) of `unit_bytes` parameters, after `deps`; `tag` names the
  // micro-batch (".mb3"). `experts`: the unit is an MoE layer's routed experts, whose replicas are
  // the expert-data-parallel group (layout.hpp), not the data-parallel one. `issued_after`: the op
  // after which the host issues the unit's forward (-1: none).
  virtual int gather_forward(ProgramWriter&, const std::string& /*unit*/, const std::string& /*tag*/, int /*mb*/,
                             double /*unit_bytes*/, std::vector<int> /*deps*/, bool /*experts*/ = false,
                             int /*issued_after*/ = -1) {
    return -1;
  }
  // Before a layer's backward, after `deps`.
  virtual int gather_backward(ProgramWriter&, const std::string& /*unit*/, const std::string& /*tag*/,
                              double /*unit_bytes*/, std::vector<int> /*deps*/, bool /*experts*/ = false) {
    return -1;
  }
  // After layer `l`'s backward (op `after`) on the last micro-batch; `last_of_chunk`: the lowest
  // layer of the model chunk, the last whose gradients this backward produces. `experts`: the
  // layer's routed experts (reduced over their own replicas, not bucketed with the rest).
  virtual void reduce_layer(ProgramWriter&, int /*l*/, bool /*last_of_chunk*/, double /*unit_bytes*/, int /*after*/,
                            bool /*experts*/ = false) {}
  // After the stage's last backward (op `after`): the root's gradients.
  virtual void reduce_root(ProgramWriter&, double /*root_bytes*/, int /*after*/) {}
  // Before the optimizer step, after the stage's last backward (op `after`): what the strategy
  // does at the end of backward (DDP's copies out of its buckets, reductions not overlapped).
  virtual void finish_gradients(ProgramWriter&, int /*after*/) {}

  // After the optimizer step (op `after`) over the rank's `local_params` parameters: the strategy's
  // outer step (DiLoCo), which the program marks as such (Program::outer_step_begin).
  virtual void outer_step(ProgramWriter& /*w*/, double /*local_params*/, int /*after*/) {}

  // The ops the optimizer step waits for: every gradient reduction.
  const std::vector<int>& gradient_syncs() const { return gradient_syncs_; }

protected:
  // Whether `experts` units move anything: the dense units when there are parameter replicas, the
  // experts when they have replicas of their own (tp x cp x dp / ep > 1, even with dp = cp = 1).
  bool moves(bool experts) const { return experts ? expert_replicas_ > 1 : dense_replicas_ > 1; }
  int expert_replicas() const { return expert_replicas_; }

  std::vector<int> gradient_syncs_;

private:
  friend std::unique_ptr<DataParallelPass> make_data_parallel_pass(const TrainingSpec& t);
  int dense_replicas_ = 1;
  int expert_replicas_ = 1;
};

// The pass of `t`'s strategy (none when there is a single replica).
std::unique_ptr<DataParallelPass> make_data_parallel_pass(const TrainingSpec& t);

}  // namespace commbound::sim::internal
