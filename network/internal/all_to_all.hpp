// AllToAll (MoE token dispatch and combine): every rank sends its own bytes to every other rank.
//
// Why its own model: an all-to-all is no ring and no tree. NCCL runs it as one group of
// point-to-point operations (nccl-tests src/alltoall.cu: ncclGroupStart, then ncclSend and ncclRecv
// to every peer, ncclGroupEnd), so every (sender, receiver) pair is a transfer of its own and all of
// them are in flight together; the step ends when the busiest sender, receiver or link has drained.
// That comes out of the flows: each transfer is a SimGrid flow on the fabric, all started at once,
// sharing links max-min fairly and re-sharing as others complete, so incast, rails, ECMP collisions
// and oversubscription act on it as on any other traffic.
//
// Bytes. Pair (i, j) moves B_ij: call.peer_bytes[i * n + j] (alltoallv), else nccl-tests' size/n.
// The diagonal stays on the GPU. Wire bytes are B_ij / efficiency of the protocol (NCCL's p2p runs
// LL below NCCL_P2P_LL_THRESHOLD = 16 KiB per peer, Simple above: src/enqueue.cc).
//
// Paths, AllToAllMethod::nccl. Inside a node a pair's bytes cross the NVSwitch (or the pair's mesh
// link). Across nodes NCCL's PXN (src/graph/paths.cc, "PXN: use NVLink to reach the NIC of the
// destination's rail") sends through the NIC on the destination GPU's rail, first over NVLink to the
// local GPU that owns it: exactly the route Platform builds between two GPUs of different nodes
// (internal/fabric_zone.cpp), so an unmerged transfer is one flow over that route.
// Merged (the default), each inter-node transfer is cut at the relay GPU into its two legs, which
// NCCL pipelines chunk by chunk (NCCL_P2P_NET_CHUNKSIZE) and so run at once: the NVLink leg
// sender -> relay and the network leg relay -> receiver. Legs with the same two endpoints have the
// same route and are merged into one flow with their summed bytes: per node, one NVLink flow per
// ordered GPU pair (its direct bytes plus what it relays for the other rails), and one network flow
// per (source node, destination GPU), i.e. per (source node, destination node, rail) on DGX nodes
// where each GPU owns a rail. That is nodes^2 x nics + nodes x g(g-1) transfers instead of n^2.
// They then run as coupled groups, as a ring's channel groups do (fluid_flows.hpp): transfers of
// one kind (inside a node, across nodes) with the same bytes form a group that moves at one rate,
// the group's max-min fair share over the links of all its edges, carried by a few segment flows.
// A balanced call has two groups (its NVLink legs and its network legs, each transfer of a group
// draining at the same pace on a symmetric fabric), so it costs the solver a handful of flows where
// one flow per transfer cost it about a thousand at 64 ranks (and every completion a re-solve of
// them all). Exact for balanced calls, close otherwise (a group moves at its slowest member's
// pace); tests/network/all_to_all_test.cpp compares both with the unmerged run. When the groups
// outnumber the segment slots free (an uneven call of many distinct byte counts), the transfers run
// one flow each.
//
// Paths, AllToAllMethod::hierarchical: DeepEP's normal kernels (github.com/deepseek-ai/DeepEP,
// csrc/kernels/internode.cu: an RDMA sender role, then an RDMA-and-NVLink forwarder role). A token
// for another node first goes by RDMA on the sender's own rail to the GPU of the same local index
// on the destination node (one transfer per (source node, destination node, rail)), which forwards
// it over NVLink to its destination GPU; tokens for the sender's own node go over NVLink directly.
// With call.node_bytes the RDMA leg to a node carries those bytes (DeepEP sends a token once per
// destination node, however many of its GPUs the token goes to), the NVLink forward the pair's;
// without, each pair's bytes ride both legs. Flows are merged as above (one per (node, rail) pair;
// one per NVLink GPU pair).
//
// Latency. NCCL's base latency once (the ring's, the table p2p shares), then the worst pair's path:
// its protocol hop latency (hwLat of the hop's class; AlgorithmParams::hop_s) plus its route's
// switch latencies, counted once because all pairs run at once. Then, for nccl, the CPU proxy:
// NCCL's proxy thread drives every network connection of its GPU in turn (src/proxy.cc), and
// NCCL's tuner prices each network operation at netOverhead (src/graph/tuning.cc); an all-to-all
// posts at least one per off-node peer, so nccl adds off-node peers x netOverhead of the rank with
// the most (0 inside one node). DeepEP posts its RDMA writes from the GPU (NVSHMEM), with no CPU
// proxy: hierarchical adds none, and its path latency is the RDMA hop plus the NVLink forward.
//
// Rates are not capped per peer. One peer's send runs on few channels (p2p_channels.hpp counts them;
// send_recv.hpp caps and windows a lone send by them), but an all-to-all has every peer's sends in
// flight at once, up to 8 a channel, so a rank's channels together keep its NIC and NVLink busy.
// The per-peer FIFO window is not modelled here.
//
// nccl-tests bus bandwidth: busbw = algbw x (n-1)/n (src/alltoall.cu, AlltoAllGetBw).
#pragma once

#include "network/internal/algorithm_params.hpp"

#include <vector>

namespace commbound::network::internal {

// The bytes ranks[i] sends ranks[j] in `call` (its peer_bytes, else size_bytes / n); 0 when i == j.
double pair_bytes(const CollectiveCall& call, int i, int j);

// The transfers `call` puts on the fabric (see the file comment): one per pair with bytes when
// !merge (nccl only: the hierarchical method has no per-pair route), else the merged legs, in a
// deterministic order. Pairs with no bytes put nothing on the fabric.
std::vector<Transfer> all_to_all_transfers(const Platform& platform, const CollectiveCall& call, bool merge);

// What a uniform all-to-all of `size_bytes` over `ranks` ranks on `nodes` nodes (ranks / nodes per
// node, `rails` NICs used per node) loads most: bytes through one GPU's NVLink in one direction and
// through one NIC in one direction. The same for both methods: PXN relays on the source node what
// DeepEP forwards on the destination node.
struct AllToAllLoad {
  double nvlink_bytes = 0;
  double nic_bytes = 0;
};
AllToAllLoad uniform_all_to_all_load(int ranks, int nodes, int rails, double size_bytes);

// Runs the all-to-all (must be called from a SimGrid actor; `params.call` passed
// CollectiveRunner::check). Always fluid: `params.fidelity` is ignored. Simulated time advances by
// the base latency and the flows; the runner adds the rest of the latency.
AlgorithmResult run_all_to_all(const AlgorithmParams& params);

}  // namespace commbound::network::internal
