// Engine: simulates training iterations of one representative GPU per pipeline stage (workload.hpp)
// on the emulated cluster. One SimGrid actor per stream runs that stream's ops in order, each op waiting
// for its dependencies; compute ops take their cost-model time; collectives run through NCCL's
// algorithms on the fabric over their whole group, started together with the same collective of
// the other tensor-parallel ranks' data-parallel groups (they share the NICs and the fabric).
// Warm-up iterations run first; the last iteration is reported. With jitter, a collective waits for
// its slowest member and the iteration for its slowest rank (sim/engine/order_statistics.hpp).
#pragma once

#include "network/collective_runner.hpp"
#include "network/platform.hpp"
#include "sim/engine/cost_model.hpp"
#include "sim/workload/layout.hpp"
#include "sim/scenario/training.hpp"
#include "sim/workload/workload.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace commbound::sim {

struct Span {
  int rank;
  int op;  // index into that rank's stage program
  StreamId stream;
  double start_s;
  double end_s;
  network::CollectiveChoice choice;  // collectives only
  // Compute ops: the fraction of its GPU's speed the op ran at (JobOnCluster::gpu_rates: its stage's
  // slowest GPU). Only that share of the span is work at full speed; the rest, the stage's other
  // GPUs wait for the slow one (what the power model counts as such: metrics.cpp).
  double compute_rate = 1;
};

struct IterationTimeline {
  double start_s = 0;
  double end_s = 0;
  std::vector<Span> spans;  // of every simulated rank (one per stage, or all), in completion order
  double iteration_s() const { return end_s - start_s; }
};

struct EngineOptions {
  std::optional<network::Algorithm> algorithm;  // forced for every collective, else NCCL's tuner
  std::optional<network::Protocol> protocol;
  // Simulate every rank (no symmetry shortcut) instead of one representative rank per stage.
  bool every_rank = false;
  // Run-to-run compute variability (order_statistics.hpp): every compute op deviates by the kernel
  // table's measured spread. With every_rank each rank's deviations are drawn (seeded by
  // jitter_seed); otherwise a collective starts after the expected wait for the slowest member.
  // Off: every op takes its table time (the ideal model).
  bool jitter = true;
  std::uint64_t jitter_seed = 1;
};

// The ranks the engine simulates without every_rank: one per pipeline stage, in stage order (data,
// context and tensor coordinates 0). Every other rank runs its stage's program on the same hardware.
std::vector<int> representative_ranks(const TrainingSpec& t);

// The members of `rank`'s group of `kind` in `t`'s layout, in the order a collective over them
// uses (pipeline pairs: the earlier stage first; interleaved pipelines wrap from the last stage to
// the first).
std::vector<int> group_members(const TrainingSpec& t, int rank, GroupKind kind);

// In representative mode the engine runs, beside a rank's collective, the same collective of every
// other group of that kind with a member on the rank's node: a group's traffic stays on its
// members' nodes and the fabric between them, so these are the groups that can share links with
// it. Those groups, each once, `rank`'s own first, groups of one rank left out.
std::vector<std::vector<int>> sibling_groups(const TrainingSpec& t, int rank, GroupKind kind, int gpus_per_node);

// The communicator of `rank`'s sends to a pipeline neighbour (`kind` pipeline_next or pipeline_prev),
// where the framework batches them: its ranks (pp) and its GPUs on `rank`'s node; nullopt for any
// other group, and where each pair is its own communicator. torchtitan's schedules
// (torch.distributed.pipelining, the pytorch frameworks) post every send with batch_isend_irecv,
// which PyTorch runs on the group's communicator; Megatron does too under the plain 1F1B schedule
// (batch_p2p_comm = not overlap_p2p_comm, and only the interleaved schedule overlaps, by default),
// else it sends unbatched and PyTorch makes a two-rank communicator per pair. NCCL then stripes a
// send over fewer channels the more ranks its communicator has (network/internal/p2p_channels.hpp).
std::optional<std::pair<int, int>> pipeline_communicator(const TrainingSpec& t, GroupKind kind, int rank,
                                                         int gpus_per_node);

// The most collectives `simulate` can have in flight at once on a cluster of `gpus_per_node`-GPU
// nodes (what network::Platform::create needs to size its flows): per simulated rank, one per
// communication stream its program uses, times the groups of that rank's node that run beside it
// (the same collective of the node's other ranks' groups) in representative mode.
int concurrent_collectives(const TrainingSpec& t, const std::vector<Program>& stages, int gpus_per_node,
                           const EngineOptions& options);

// One job of those sharing a cluster: its layout, its stages' programs and what prices them (none
// owned: they outlive the simulation), the cluster's nodes it runs on, in the job's node order
// (its GPU g of node k is GPU g of cluster node nodes[k]; empty: nodes 0, 1, ... in order), and
// its degraded GPUs.
//
// Degraded GPUs (a lowered clock or power limit) keep `gpu_rates[rank]` of their compute speed:
// every compute op of that rank takes its time / the rate. The ranks of a pipeline stage meet at
// its collectives (data-, tensor-, context-parallel), so a stage computes at the pace of its
// slowest GPU: in representative mode each stage's representative runs at the lowest rate of its
// stage's ranks (the others would wait for it at their next collective); with every_rank each
// rank at its own.
struct JobOnCluster {
  const TrainingSpec* training = nullptr;
  const std::vector<Program>* stages = nullptr;
  const CostModel* cost = nullptr;
  std::vector<int> nodes;
  std::map<int, double> gpu_rates;  // job rank -> fraction of its compute speed, in (0, 1]; absent: 1
};

// Simulates `jobs` together on one platform of `cluster` (sized for all of them), so that their
// collectives share the links they meet on: each job runs its warm-up iterations, the iteration it
// reports, and more while any other job has not reported yet. Returns each job's reported
// iteration, in `jobs`' order, its spans in the job's own ranks. Jobs must not share a node (the
// caller's placement checks it). Starts SimGrid's engine: once per process.
Expected<std::vector<IterationTimeline>> simulate_jobs(const network::ClusterSpec& cluster,
                                                      const network::NcclConstants& nccl,
                                                      const std::vector<JobOnCluster>& jobs,
                                                      const EngineOptions& options);

// Builds `cluster`'s platform (sized for concurrent_collectives), runs `warmup + 1` iterations on it
// and returns the last: simulate_jobs of this one job on the cluster's first nodes. `stages` holds
// each pipeline stage's program (build_programs); the iteration ends when every stage has finished. Fails when the platform cannot be built. Starts
// SimGrid's engine: once per process (run it in a child process to simulate several points).
Expected<IterationTimeline> simulate(const network::ClusterSpec& cluster, const network::NcclConstants& nccl,
                                     const TrainingSpec& t, const std::vector<Program>& stages, const CostModel& cost,
                                     const EngineOptions& options);

}  // namespace commbound::sim
