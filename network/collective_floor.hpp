// CollectiveFloor: the least time a collective over a group of ranks can take on a cluster,
// whatever NCCL algorithm, protocol and channels run it and whatever else shares the links.
//
// Why: a layout search skips a layout whose iteration bound (sim/engine/iteration_bound.hpp)
// already loses, and a bound that prices communication at zero stays far above the layouts that
// lose by communicating (ZeRO-3 gathering every layer's weights over 2048 nodes). A floor that no
// simulated collective can beat keeps the bound a bound and brings it down to them.
//
// How: every byte the platform moves crosses links of a fixed capacity (Platform: SimGrid's
// max-min sharing never gives a link's flows more than its capacity, and protocols only add wire
// bytes). Two cuts of the platform bound any collective from below, by what must cross them:
//   - a member GPU's own links (NVLink, plus its PCIe path to a NIC when the group leaves the
//     node), one direction at a time;
//   - a node's NICs (all of them: PXN may relay over any GPU's rail), when the group spans nodes.
// What must cross, for a group of n ranks, S bytes in nccl-tests' convention (collective.hpp), m
// of the members on the node looked at:
//   AllGather      a member receives every shard but its own: (n - 1)/n S into the GPU; the node
//                  receives every shard held elsewhere, once: (n - m)/n S into its NICs.
//   ReduceScatter  the mirror image: (n - 1)/n S out of the GPU, (n - m)/n S out of the node.
//   AllReduce      every other member's result depends on each of the member's S inputs, so at
//                  least S leaves the GPU, and S leaves a node that does not hold every member
//                  (reduced there or in the switches, each element still leaves once).
//   SendRecv       S out of the sender, and out of its node when the receiver is on another.
//   AllToAll       what each member sends the others (alltoallv's matrix, else S/n to each): the
//                  busiest member's bytes out and in, and the busiest node's bytes to other nodes.
// The floor is the largest of these bytes over the cut's capacity. It leaves out every latency,
// contention and protocol overhead, so it sits below any simulated collective
// (tests/network/collective_floor_test.cpp runs each algorithm against it).
#pragma once

#include "network/cluster_spec.hpp"
#include "network/collective.hpp"

#include <span>
#include <vector>

namespace commbound::network {

class CollectiveFloor {
public:
  // The floor of collectives over `ranks` (rank r is GPU r % gpus of node r / gpus, as Platform
  // places them) on `cluster`.
  CollectiveFloor(const ClusterSpec& cluster, std::span<const int> ranks);

  // The least duration, in seconds, of `op` over the group moving `size_bytes` (nccl-tests'
  // convention; for an AllToAll with `peer_bytes`, that n x n matrix as CollectiveCall's, row-major
  // in group order). 0 for a group of one rank.
  double seconds(CollectiveOp op, double size_bytes, const std::vector<double>* peer_bytes = nullptr) const;

  // The bytes an AllGather, ReduceScatter or AllReduce of the group must move out of and into the
  // NICs of node `node` (cluster node index), as above with m the group's members there; {0, 0}
  // for the other collectives, a group within one node, or one with no member on `node`. Groups
  // whose collectives run at the same time on one node share its NICs: their bytes add up.
  struct NodeCrossing {
    double out_bytes = 0, in_bytes = 0;
  };
  NodeCrossing node_crossing(CollectiveOp op, double size_bytes, int node) const;
  double node_bytes_per_s() const { return node_bytes_per_s_; }

private:
  double all_to_all_seconds(double size_bytes, const std::vector<double>* peer_bytes) const;

  int members_ = 0;
  std::vector<int> node_index_;        // per member (group order): which of the group's nodes it is on
  std::vector<int> members_per_node_;  // per node of the group
  std::vector<int> nodes_;             // per node of the group: its cluster node index
  bool spans_nodes_ = false;
  double gpu_bytes_per_s_ = 0;   // one GPU's links, one direction
  double node_bytes_per_s_ = 0;  // one node's NICs, one direction
};

}  // namespace commbound::network
