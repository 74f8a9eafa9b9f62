// How NCCL's channels map onto a node's rails, shared by the ring and the tree (ring.cpp, tree.cpp).
//
// On DGX nodes channel c enters and leaves every node through the c-th rail of the GPUs present
// (rail c % nics with whole nodes; PXN relays over NVLink to the rail's GPU, which is one of
// them), so channels on the same rail follow the same path. Those channels
// are merged into one channel group carrying their summed traffic: exact under max-min, where
// they would receive equal shares on every link they cross (tests/network/collective_runner_test.cpp
// checks it against one flow per channel).
#pragma once

#include "network/platform.hpp"

#include <vector>

namespace commbound::network::internal {

// `ranks` grouped by node (nodes in first-seen order), each node's ranks sorted by local index.
std::vector<std::vector<int>> by_node(const Platform& platform, const std::vector<int>& ranks);

// The rank of `node_ranks` (one node's, sorted) whose GPU owns rail `rail`, or the next one
// present; the first rank when none is.
int rail_head(const Platform& platform, const std::vector<int>& node_ranks, int rail);

// `node_ranks` rotated to start at rail_head.
std::vector<int> rotate_to_rail(const Platform& platform, std::vector<int> node_ranks, int rail);

// The rails the channels use across `nodes` (by_node's): those whose NIC belongs to a GPU present
// on a node (rail r to local GPU r x gpus / nics), at most one per channel: every NIC with whole
// nodes, one with one GPU per node (a GPU reaches another's NIC only by PXN through a GPU of its
// own communicator, as NCCL's ring search keeps to). Rail 0 alone inside one node, where every
// rail's ring is the same ring (the NVSwitch is symmetric).
std::vector<int> rails_used(const Platform& platform, const std::vector<std::vector<int>>& nodes);

// One channel group as simulated: group `group` of the path set, carrying `channels` NCCL channels.
struct GroupSlot {
  int group;
  double channels;
};

// Channel c follows group c % groups. Merged: one slot per group carrying its channels, split as
// evenly as NCCL's round-robin; unmerged: one slot per channel (only to show in a test that
// merging changes nothing).
std::vector<GroupSlot> group_slots(int groups, int channels, bool merge);

}  // namespace commbound::network::internal
