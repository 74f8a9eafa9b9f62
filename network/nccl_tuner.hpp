// NcclTuner: NCCL's own choice of (algorithm, protocol) for a call, from NCCL's analytic model.
//
// NCCL predicts time = latency + bytes / algBw for every (algorithm, protocol) with the constants
// of tuning.cc and runs the cheapest. We reproduce that prediction (not our simulation's result),
// so the emulated cluster makes the same choices, and the same misjudgements, that NCCL makes.
#pragma once

#include "network/cluster_spec.hpp"
#include "network/collective.hpp"
#include "network/nccl_constants.hpp"

#include <optional>
#include <string>

namespace commbound::network {

// Where a call runs, as NCCL's tuner sees it.
struct CallShape {
  CollectiveOp op = CollectiveOp::all_gather;
  int ranks = 1;
  int nodes = 1;            // distinct nodes among the ranks
  double size_bytes = 0;
};

class NcclTuner {
public:
  NcclTuner(const NodeType& node, const FabricSpec& fabric, const NcclConstants& nccl);

  // Why `choice` cannot run `shape` (empty when it can): e.g. NVLS across nodes, Tree AllGather.
  std::string unsupported(const CallShape& shape, const CollectiveChoice& choice) const;
  // NCCL's predicted time; nullopt when unsupported.
  std::optional<double> predict_s(const CallShape& shape, const CollectiveChoice& choice) const;
  // NCCL's predicted latency part alone (base + hops).
  double predict_latency_s(const CallShape& shape, const CollectiveChoice& choice) const;
  // The supported choice with the least predicted time.
  CollectiveChoice choose(const CallShape& shape) const;

  // netOverhead of the node's host CPU (seconds), x3 for Simple; 0 on one node.
  double net_overhead_s(const CallShape& shape, Protocol p) const;

private:
  NodeType node_;
  FabricSpec fabric_;
  NcclConstants nccl_;
};

}  // namespace commbound::network
