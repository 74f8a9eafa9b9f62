// NCCL's Tree AllReduce over n ranks on `nodes` nodes, S bytes (nccl-tests' size).
//
// Every channel group is a tree: inside each node a chain from the rail's GPU (channel_groups.hpp),
// across nodes NCCL's double binary tree (src/graph/trees.cc): half the channels on the binary
// tree (btree_parent), half on its shifted or mirrored twin (dtree_parent), so that for an even
// node count no node is inside both. S is cut per channel into chunks = ceil(S / channels /
// stepBytes[protocol]) chunks; each is reduced up to the root (a rank forwards it once all its
// children delivered it), then broadcast down, the two phases pipelined. Every edge carries S (x
// its share of channels) / efficiency each way, so
//   time    = base + P + (chunks - 1) * c
//   latency = base + max over trees of the slowest leaf-root-leaf sum of hop latencies a_i
// with c the time of one chunk at the group's coupled rate (fluid_flows.hpp), a_i = hwLat x factor
// + the hop's route latency, and P the slowest leaf-root-leaf path of the first chunk, each hop
// costing a_i + c (tree_path_s). NCCL's tuner (tuning.cc) writes the latency as
// base + 2 ((ppn - 1) * intra + log2(nodes) * net), ppn the ranks per node.
//
// nccl-tests bus bandwidth: busbw = algbw * 2(n - 1)/n (AllReduce; bus_bw_factor in
// collective.hpp). Each edge moves S once up and once down, so algbw tends to the edge rate and
// busbw to about twice it: NCCL's tuner likewise takes algBw = busBw / 2 for the tree.
#pragma once

#include "network/internal/algorithm_params.hpp"

#include <vector>

namespace commbound::network::internal {

// NCCL's binary tree over `n` nodes (ncclGetBtree): the parent of `rank`, -1 at the root (0).
int btree_parent(int n, int rank);

// The double binary tree's `tree` (0 or 1) over `n` nodes (ncclGetDtree): tree 0 is the binary
// tree; tree 1 is it shifted by one for odd n, mirrored for even n. The parent of `rank`, or -1.
int dtree_parent(int n, int tree, int rank);

// A set of channels following one tree, merged: `channels` NCCL channels' worth of traffic.
// Positions index `ranks`; a node's chain is contiguous, its head first.
struct TreeGroup {
  std::vector<int> ranks;
  std::vector<int> parent;  // position of the parent, -1 at the root
  std::vector<std::vector<int>> children;
  int root = 0;             // position of the root
  double channels = 1;
};

// The trees NCCL builds over `ranks`: per rail group one per tree of the double binary tree (one
// tree on a single node); one per channel when !merge.
std::vector<TreeGroup> build_trees(const Platform& platform, const std::vector<int>& ranks, bool merge);

// The latest arrival of a chunk at any rank of tree `t` after it left the leaves: up to the root
// (a rank forwards once all its children delivered), then down. A hop costs its latency plus
// `chunk_s`. up_s[i]: latency of position i's hop to its parent; down_s[i][k]: of position i's
// hop to its k-th child. Seconds.
double tree_path_s(const TreeGroup& t, const std::vector<double>& up_s, const std::vector<std::vector<double>>& down_s,
                   double chunk_s);

// Runs the tree AllReduce (must be called from a SimGrid actor): fluid, one flow group per tree
// at its coupled rate; step, an up and a down actor per rank and tree moving chunk by chunk.
// Simulated time advances by base plus the traffic.
AlgorithmResult run_tree(const AlgorithmParams& params);

}  // namespace commbound::network::internal
