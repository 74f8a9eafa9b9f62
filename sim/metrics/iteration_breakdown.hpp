// IterationBreakdown: where one simulated iteration's time went on each simulated rank, per
// communication group and collective kind, and what the compute stream did the rest of the time:
// the data behind `commbound run --explain` (docs/metrics.md, "Explaining an iteration").
//
// Every second of a rank's iteration falls in exactly one of these parts:
//   compute     the union of its compute spans (Metrics::compute_s);
//   exposed     communication running while no compute runs (Metrics::exposed_comm_s), split over
//               the rows: at each instant equally among the collectives then running;
//   wait        nothing running while a collective had been launched (its dependencies done and
//               the host had issued it) and waited for the other members of its group: pipeline
//               SendRecv for the neighbour stage, other collectives for the slowest member
//               (the jitter model's expected wait, or a late rank when every rank is simulated);
//   host        nothing running while the next op had not been issued by the host yet (eager
//               frameworks' dispatch cost, a replayed trace's launch gaps and host spans);
//   tail        nothing running after the rank's last op, until the slowest simulated rank ends;
//   other       nothing running for any other reason (0 in practice; kept so the parts add up).
// An idle gap (no compute and no collective span) is charged to the op that ends it: the span that
// starts at its end (a pipeline collective before another collective before compute when several
// start together). The part of the gap before that op was ready is host (other for an op that was
// not waiting for the host), the rest its row's wait.
//
// The pipeline bubble is the pipeline rows' wait plus, with pipeline parallelism, the tail: the
// time a stage has nothing to run because its neighbours have not sent it work yet or it finished
// before the others. For 1F1B with uniform stages and negligible communication it is
// (p - 1) / (m + p - 1) of the pipelined part of the iteration on every stage.
#pragma once

#include "network/collective.hpp"
#include "sim/engine/engine.hpp"
#include "sim/scenario/training.hpp"
#include "sim/workload/workload.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

// A communication group as a user names it. tp: tensor-parallel collectives (Megatron's
// all-reduces); sp: the tensor-parallel all-gathers and reduce-scatters of sequence parallelism;
// cp: the context-parallel ring; pp: pipeline SendRecv (both neighbours, both directions); dp: the
// data-parallel group of FSDP / DDP; dp_shard, dp_replica: HSDP's and DiLoCo's inner (shard) and
// outer (replica) levels; ep: expert parallelism's token all-to-all; etp: expert tensor
// parallelism's gathers and reductions of the routed tokens; edp: the expert replicas' gradient
// reduction (and FSDP's gathers of the experts).
enum class CommGroup { tp, sp, cp, pp, ep, etp, dp, dp_shard, dp_replica, edp };
inline constexpr CommGroup kCommGroups[] = {CommGroup::tp,       CommGroup::sp,       CommGroup::cp,
                                            CommGroup::pp,       CommGroup::ep,       CommGroup::etp,
                                            CommGroup::dp,       CommGroup::dp_shard, CommGroup::dp_replica,
                                            CommGroup::edp};
// "TP", "SP", "CP", "PP", "EP", "ETP", "DP", "DP-shard", "DP-replica", "EDP".
const char* to_string(CommGroup g);
std::optional<CommGroup> parse_comm_group(const std::string& name);

// The group a collective op of `t`'s program serves.
CommGroup comm_group_of(const TrainingSpec& t, const Op& op);

// How many of a row's calls NCCL ran with one (algorithm, protocol).
struct ChoiceCount {
  network::CollectiveChoice choice;
  double count = 0;
};

// One (group, collective kind) on one rank, per iteration; times in seconds of that rank.
struct BreakdownRow {
  CommGroup group = CommGroup::dp;
  network::CollectiveOp collective = network::CollectiveOp::all_reduce;
  int group_ranks = 0;     // members of the group (the nccl-tests bus bandwidth factor's n)
  double count = 0;        // calls (DiLoCo's outer step counts 1 / diloco_sync_every)
  double bytes = 0;        // sum of the calls' Op::size_bytes (nccl-tests convention)
  double time_s = 0;       // sum of the calls' span durations (concurrent calls each count)
  double exposed_s = 0;    // its share of the exposed communication
  double wait_s = 0;       // idle before its calls started, waiting for the group
  std::vector<ChoiceCount> choices;  // NCCL's (algorithm, protocol) mix, most used first

  // nccl-tests' bus bandwidth over the row: sum(bytes x factor) / sum(time), bytes per second; 0
  // without time.
  double bus_bw_bytes_per_s() const;
};

// One simulated rank's iteration: its rows (in kCommGroups order, then collective kind) and the
// parts its iteration splits into (header comment); compute_s + exposed_comm_s + wait_s + host_s
// + tail_s + other_s = iteration_s.
struct RankBreakdown {
  int rank = 0;
  int stage = 0;
  std::vector<BreakdownRow> rows;
  double compute_s = 0;
  double exposed_comm_s = 0;  // sum of the rows' exposed_s
  double wait_s = 0;          // sum of the rows' wait_s
  double host_s = 0;
  double tail_s = 0;
  double other_s = 0;
  double pipeline_wait_s = 0;  // the pipeline rows' wait_s
  double bubble_s = 0;         // pipeline_wait_s, plus tail_s with pipeline parallelism
};

// A simulated iteration's breakdown: each simulated rank's (one per pipeline stage, or every
// rank), and their mean (what the metrics report: busy and exposed times are means over the
// simulated ranks), whose rows are the per-rank rows averaged (a row a rank lacks counts as 0).
struct IterationBreakdown {
  double iteration_s = 0;
  int pipeline_stages = 1;
  int micro_batches = 1;
  bool sequence_parallel = false;
  std::vector<RankBreakdown> ranks;  // by rank
  RankBreakdown mean;                // rank and stage -1
};

// The breakdown of `timeline` (what simulate returned for `t`, whose programs by pipeline stage are
// `stages`, `stage_of` mapping a rank to its stage). DiLoCo's outer step is amortised as the
// metrics do (metrics.hpp). Its mean's compute_s and exposed_comm_s equal compute_metrics'
// compute_s and exposed_comm_s for the same timeline.
IterationBreakdown break_down_iteration(const TrainingSpec& t, const std::vector<Program>& stages,
                                        const std::vector<int>& stage_of, const IterationTimeline& timeline);

// JSON, field names as keys; enums as their to_string names ("TP", "allreduce", "nvls", "simple").
// How a child process sends a breakdown back to the sweep runner, and `run --explain --format json`.
void to_json(nlohmann::json& j, const ChoiceCount& c);
void from_json(const nlohmann::json& j, ChoiceCount& c);
void to_json(nlohmann::json& j, const BreakdownRow& r);
void from_json(const nlohmann::json& j, BreakdownRow& r);
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RankBreakdown, rank, stage, rows, compute_s, exposed_comm_s, wait_s, host_s, tail_s,
                                   other_s, pipeline_wait_s, bubble_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(IterationBreakdown, iteration_s, pipeline_stages, micro_batches, sequence_parallel,
                                   ranks, mean)

}  // namespace commbound::sim
