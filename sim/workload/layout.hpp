// Layout: how a world of GPUs is cut into data, tensor, pipeline and context parallel groups.
//
// world = dp x pp x cp x tp, tp innermost (tensor-parallel ranks are neighbours inside a node, as
// Megatron places them), then cp, then dp, pp outermost:
//   rank = ((pp_i * dp + dp_i) * cp + cp_i) * tp + tp_i
// A process group is the set of ranks that differ only in one coordinate. Data and context
// parallel ranks both hold full parameter replicas, so gradients are reduced (and FSDP shards)
// over their product: replica index q = dp_i * cp + cp_i, contiguous in rank order.
//
// Expert parallelism folds over the same ranks (Megatron-Core's MoE parallel folding, its expert
// rank generator's order etp-ep-dp-pp): the tp x cp x dp ranks of one pipeline stage, in rank
// order, are cut into expert-tensor-parallel groups of etp consecutive ranks (they split each of
// their experts' MLPs), those into expert-parallel groups of ep such groups (ep ranks etp apart:
// they share the experts of an MoE layer); the ranks at the same place of every run of ep x etp
// form the expert-data-parallel group that reduces (and shards) those experts' gradients.
#pragma once

#include "core/expected.hpp"

#include <string>
#include <vector>

namespace commbound::sim {

struct Coords {
  int dp = 0, pp = 0, cp = 0, tp = 0;
};

class Layout {
public:
  Layout(int dp, int tp, int pp, int cp, int ep = 1, int etp = 1)
      : dp_(dp), tp_(tp), pp_(pp), cp_(cp), ep_(ep), etp_(etp) {}
  int world() const { return dp_ * tp_ * pp_ * cp_; }
  int dp() const { return dp_; }
  int tp() const { return tp_; }
  int pp() const { return pp_; }
  int cp() const { return cp_; }
  int ep() const { return ep_; }

  Coords coords(int rank) const;
  int rank(const Coords& c) const { return ((c.pp * dp_ + c.dp) * cp_ + c.cp) * tp_ + c.tp; }
  // The ranks of `rank`'s group along one dimension, in coordinate order. dp_group: all parameter
  // replicas (data x context parallel); cp_group: the context-parallel ring.
  std::vector<int> dp_group(int rank) const;
  std::vector<int> tp_group(int rank) const;
  std::vector<int> cp_group(int rank) const;
  // `rank` (the sender) and the next rank of its context-parallel ring.
  std::vector<int> cp_ring_pair(int rank) const;
  // HSDP splits the replicas into shard groups of `shard` consecutive replica indices (the GPUs of
  // one node when tp x shard = GPUs per node) and replica groups across them.
  std::vector<int> shard_group(int rank, int shard) const;
  std::vector<int> replica_group(int rank, int shard) const;
  // `rank` and its peer in the next (or previous) pipeline stage, the earlier stage first; {rank}
  // past the ends, unless `wrap` (interleaved schedules pass the last stage's output to the first).
  std::vector<int> pipeline_pair(int rank, bool next, bool wrap = false) const;
  // The expert-parallel group of `rank` (ep ranks of its stage, etp apart), its
  // expert-tensor-parallel group (etp consecutive ranks) and its expert-data-parallel group
  // (tp x cp x dp / (ep x etp) ranks, ep x etp apart), in rank order.
  std::vector<int> ep_group(int rank) const;
  std::vector<int> etp_group(int rank) const;
  std::vector<int> expert_dp_group(int rank) const;

private:
  int dp_, tp_, pp_, cp_, ep_, etp_;
};

}  // namespace commbound::sim
