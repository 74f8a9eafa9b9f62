// NVLS AllReduce inside one NVSwitch node (NVLink SHARP: the switch reduces and multicasts), over
// n ranks, S bytes (nccl-tests' size).
//
// One pass through the switch: each GPU pushes all its data and its reduced share (S + S/n) and
// receives its reduced share and everyone's broadcast (S/n + S), so each GPU's link carries
// S (n + 1)/n / efficiency each way, at most at nvls_efficiency x the NVLink rate:
//   time = base + hwLat(NVLS, NVLink) + route latency up + route latency down
//               + S (n + 1)/n / (efficiency * r)
// with r that cap or the link's max-min share if lower (coupled_group_rates, fluid_flows.hpp).
// NCCL's tuner writes the latency as base + hwLat(NVLS, NVLink). Always fluid (no step fidelity).
//
// nccl-tests bus bandwidth: busbw = algbw * 2(n - 1)/n (AllReduce; bus_bw_factor in
// collective.hpp), so here busbw tends to 2(n - 1)/(n + 1) * r: 14/9 r on 8 GPUs.
#pragma once

#include "network/internal/algorithm_params.hpp"

namespace commbound::network::internal {

// Runs the NVLS AllReduce (must be called from a SimGrid actor; every rank on NVLS-capable nodes:
// CollectiveRunner::check). Simulated time advances by base, the hop latency and the flows.
// Across nodes it runs as NVLS with CollNet (run_nvls_sharp).
AlgorithmResult run_nvls(const AlgorithmParams& params);

// NVLS across nodes with in-network reduction in the fabric (NCCL's NVLS + CollNet, on a
// [fabric] sharp = true cluster; tuning.cc: NVLS with nNodes > 1 needs collnetEnable): inside each
// node the switch reduces and multicasts (every GPU's link S (g + 1)/g each way); each rail k sends
// its node-reduced share S / nics once up into the fabric's aggregation tree and receives the
// reduced share once back (the switches reduce). The fabric has no host at a switch, so the
// in-network part runs as an exchange with the next node on the same rail: it puts exactly that
// load on every NIC link, S / nics each way, and about one rail stream on each leaf up-link, as an
// aggregation tree rooted above the leaves does. Both parts stream at once:
//   time = latency + the slower of the two (one fluid run of all flows)
//   latency = base + hwLat(NVLS, NVLink) + hwLat(NVLS, NET)        (tuner: intraLat + interLat)
//           = launch + nvls_latency + net_hop + the messages' cost  (fit)
// so busbw tends to 2 x min(0.85 x NVLink x g/(g + 1), nics x NIC rate): twice a ring's NIC bound.
AlgorithmResult run_nvls_sharp(const AlgorithmParams& params);

// NVLSTree AllReduce across nodes (NCCL_ALGO_NVLS_TREE, src/graph/tuning.cc): inside each node the
// switch reduces and multicasts as above (every GPU's link S (g + 1)/g each way, g the node's ranks),
// and across nodes each rail k carries the node-reduced data over NCCL's double binary tree
// (trees.cc; dtree_parent in tree.hpp), half of it on each tree: S / (2 nics) up and down every
// tree edge, from GPU k of a node to GPU k of its parent. Both parts stream chunk by chunk at once,
// so
//   time = latency + the slower of the two traffic patterns (one fluid run of all flows)
//   latency = base + hwLat(NVLSTree, NVLink) + 2 log2(nodes) hwLat(NVLSTree, NET)   (tuner)
//           = launch + nvls_latency + 2 log2(nodes) net_hop + the messages' cost      (fit)
// On two nodes the tree is one exchange: each NIC moves S / nics each way; the in-switch part then
// bounds it, as the 467-469 GB/s of real 2-node logs (calibration/fabric/logs/s2a, s2d) show.
AlgorithmResult run_nvls_tree(const AlgorithmParams& params);

}  // namespace commbound::network::internal
