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
  AllToAllMethod all_to_all_method = AllToAllMethod::nccl;  // AllToAll only
};

class NcclTuner {
public:
  NcclTuner(const NodeType& node, const FabricSpec& fabric, const NcclConstants& nccl);

  // Why `choice` cannot run `shape` (empty when it can): e.g. NVLS across nodes, Tree AllGather.
  // An all-to-all is point to point: ring (which names no ring here) with LL or Simple.
  std::string unsupported(const CallShape& shape, const CollectiveChoice& choice) const;
  // NCCL's predicted time; nullopt when unsupported. NCCL's tuner has no model of point to point;
  // for an all-to-all this is the closed form of our own (internal/all_to_all.hpp): latency plus the
  // uniform call's busiest NVLink or NIC bytes over its bandwidth, per-peer bytes size / ranks.
  std::optional<double> predict_s(const CallShape& shape, const CollectiveChoice& choice) const;
  // NCCL's predicted latency part alone (base + hops).
  double predict_latency_s(const CallShape& shape, const CollectiveChoice& choice) const;
  // The supported choice with the least predicted time; for an all-to-all NCCL's own p2p rule
  // instead: LL up to NCCL_P2P_LL_THRESHOLD bytes per peer, Simple above.
  // A tuner plugin's region (NcclConstants::tuner_plugin) decides first where one holds the call.
  CollectiveChoice choose(const CallShape& shape) const;
  // What the tuner plugin picks for the call, if there is a plugin and a region of it holds the call.
  std::optional<CollectiveChoice> plugin_choice(const CallShape& shape) const;

  // netOverhead of the node's host CPU (seconds), x3 for Simple; 0 on one node.
  double net_overhead_s(const CallShape& shape, Protocol p) const;

  // What the tuner prices with: the node, the fabric, the release's constants.
  const NodeType& node() const { return node_; }
  const FabricSpec& fabric() const { return fabric_; }
  const NcclConstants& nccl() const { return nccl_; }

  // The graphs NCCL's topology search finds inside one NVSwitch node (src/graph/search.cc), whose
  // nChannels x per-channel bandwidth is the tuner's busBw there (tuning.cc).
  struct SearchedGraph {
    int channels = 0;
    double intra_bytes_per_s = 0;  // bwIntra, per channel
    double inter_bytes_per_s = 0;  // bwInter, per channel (the NVLS graph's second pass raises it)
  };
  // The ring graph: as many channels at the fastest speed the GPU's NVLink holds, slower speeds kept
  // only where they reserve more in total, then doubled at half the speed (ncclTopoDupChannels),
  // which keeps the total: 12 x 30 GB/s = 360 GB/s of an H100's 370.8.
  SearchedGraph ring_graph() const;
  // The NVLS graph of a node whose call holds `gpus` GPUs: one channel per GPU (its head; at most
  // nvls_max_channels), which pulls from every GPU and pushes its share back, so each GPU's link
  // carries (channels + 1) x the per-channel speed each way: the fastest speed that fits. On 2
  // H100s 60 GB/s (3 x 60 <= 370.8), on 8 H100s 40 GB/s (9 x 40).
  SearchedGraph nvls_graph(int gpus) const;

private:
  NodeType node_;
  FabricSpec fabric_;
  NcclConstants nccl_;
};

}  // namespace commbound::network
