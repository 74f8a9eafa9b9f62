#include "sim/run/group_calls_alone.hpp"

#include "network/nccl_tests.hpp"
#include "network/platform.hpp"
#include "sim/engine/engine.hpp"

#include <set>

namespace commbound::sim {
namespace {

// The workload's group kind whose calls a breakdown row of `group` and `op` sums.
GroupKind group_kind_of(CommGroup group, network::CollectiveOp op) {
  const bool pair = op == network::CollectiveOp::send_recv;
  switch (group) {
    case CommGroup::tp:
    case CommGroup::sp: return GroupKind::tensor_parallel;
    case CommGroup::cp: return pair ? GroupKind::context_next : GroupKind::context_parallel;
    case CommGroup::pp: return GroupKind::pipeline_next;
    case CommGroup::ep: return GroupKind::expert_parallel;
    case CommGroup::etp: return GroupKind::expert_tensor_parallel;
    case CommGroup::dp: return GroupKind::data_parallel;
    case CommGroup::dp_shard: return GroupKind::shard;
    case CommGroup::dp_replica: return GroupKind::replica;
    case CommGroup::edp: return GroupKind::expert_data_parallel;
  }
  return GroupKind::data_parallel;
}

// The first simulated rank that has a row of `group` and `op` (the breakdown keeps a rank per
// pipeline stage, and only some stages send to a next one).
int rank_with(const IterationBreakdown& b, CommGroup group, network::CollectiveOp op) {
  for (const RankBreakdown& r : b.ranks) {
    for (const BreakdownRow& row : r.rows) {
      if (row.group == group && row.collective == op) return r.rank;
    }
  }
  return b.ranks.empty() ? 0 : b.ranks.front().rank;
}

}  // namespace

Expected<std::vector<GroupCallAlone>> price_group_calls_alone(const Scenario& scenario,
                                                              const IterationBreakdown& breakdown) {
  if (!scenario.training) return Error{scenario.path + ": no training to explain"};
  const TrainingSpec& t = *scenario.training;
  std::vector<GroupCallAlone> out;
  std::vector<network::SweepPoint> points;
  const int gpus = scenario.cluster.node.gpus;
  for (const BreakdownRow& row : breakdown.mean.rows) {
    if (row.choices.empty() || row.count <= 0) continue;  // nothing ran on the fabric
    const int rank = rank_with(breakdown, row.group, row.collective);
    const GroupKind kind = group_kind_of(row.group, row.collective);
    std::vector<int> ranks = group_members(t, rank, kind);
    if (ranks.size() < 2) continue;
    if (row.collective == network::CollectiveOp::send_recv) ranks.resize(2);
    std::set<int> nodes;
    for (int r : ranks) nodes.insert(r / gpus);
    const network::CollectiveChoice& used = row.choices.front().choice;  // most used first
    network::SweepPoint p;
    p.op = row.collective;
    p.nodes = static_cast<int>(nodes.size());
    p.size_bytes = row.bytes / row.count;
    p.ranks = std::move(ranks);
    if (const auto comm = pipeline_communicator(t, kind, rank, gpus)) {
      std::tie(p.comm_ranks, p.comm_gpus_per_node) = *comm;
    }
    if (row.collective != network::CollectiveOp::send_recv && row.collective != network::CollectiveOp::all_to_all) {
      p.algorithm = used.algorithm;
    }
    p.protocol = used.protocol;
    points.push_back(std::move(p));
    out.push_back({row.group, row.collective, {}});
  }
  if (points.empty()) return out;
  auto platform = network::Platform::create(scenario.cluster);
  if (!platform) return Error{scenario.path + ": " + platform.error().message};
  auto rows = network::run_points(**platform, scenario.nccl, points, network::Fidelity::fluid, nullptr);
  if (!rows) return rows.error();
  for (std::size_t i = 0; i < out.size(); ++i) out[i].row = (*rows)[i];
  return out;
}

}  // namespace commbound::sim
