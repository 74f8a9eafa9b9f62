// NCCL's Ring: AllGather, ReduceScatter and AllReduce over n ranks, S bytes (nccl-tests' size).
//
// Every channel group is a ring through all ranks, node by node, entering and leaving each node on
// its rail (channel_groups.hpp). A call takes `steps` steps, each moving one chunk of S/n over
// every edge of every ring at once:
//   steps = n - 1 (AllGather, ReduceScatter), 2(n - 1) (AllReduce: reduce-scatter, then all-gather)
//   time  = base + max over rings of (the longest sum of `steps` consecutive hop latencies a_i)
//               + steps/n * S / (efficiency * B)
// with a_i = hwLat of hop i (at least netOverhead inside a node) x factor + the hop's route latency,
// B the rings' summed coupled rate (fluid_flows.hpp) and factor NCCL's 1.4 (sm80+) / 1.9 multiplier
// for multi-node Ring/Simple AllReduce, also applied to base. NCCL's tuner (tuning.cc) uses the
// same form with one intra-node and one network latency: base + (steps - inter) * intra + inter *
// net, inter = nodes - 1 (or 2(nodes - 1) for AllReduce).
//
// nccl-tests bus bandwidth: busbw = algbw * (n - 1)/n for AllGather and ReduceScatter, 2(n - 1)/n
// for AllReduce (bus_bw_factor in collective.hpp), i.e. steps/n: the share of S each rank puts on
// its link, so busbw tends to efficiency * B per rank as S grows.
#pragma once

#include "network/internal/algorithm_params.hpp"

#include <vector>

namespace commbound::network::internal {

// A set of channels following one ring, merged: `channels` NCCL channels' worth of traffic.
struct RingGroup {
  std::vector<int> order;  // ranks in ring order
  double channels = 1;
};

// Every directed Hamiltonian cycle through one mesh node's ranks, each starting at the first rank:
// (m - 1)! cycles for m ranks. Each ordered pair of ranks is next to each other in the same number
// of them ((m - 2)!), so channels spread evenly over them load both directions of every pair's link
// equally: what NCCL's ring search ends with on a full NVLink mesh, where it keeps adding rings
// while any link has bandwidth left (search.cc, sameChannels = 0).
std::vector<std::vector<int>> mesh_cycles(std::vector<int> node_ranks);

// The rings NCCL builds over `ranks`: one per rail group (one per channel when !merge), each
// visiting the nodes in first-seen order and, inside a node, starting at the rail's GPU (on a mesh
// node, odd rails cross it in reverse). Inside one mesh node: one per mesh_cycles() cycle, at most
// one per channel.
std::vector<RingGroup> build_rings(const Platform& platform, const std::vector<int>& ranks, bool merge);

// The longest sum of `steps` consecutive hop latencies around a ring whose hop i costs
// `alpha_s[i]` (the chunk that crosses the most latency), in O(n) with prefix sums.
double ring_critical_latency(const std::vector<double>& alpha_s, int steps);

// Runs the ring (must be called from a SimGrid actor): fluid, one flow group per ring at its
// coupled rate; step, one actor per rank and ring sending each step once it holds the previous
// step's data (the real dependency). Simulated time advances by base plus the traffic.
AlgorithmResult run_ring(const AlgorithmParams& params);

}  // namespace commbound::network::internal
