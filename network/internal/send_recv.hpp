// SendRecv: one message of S bytes (nccl-tests' size) from the first rank to the second, as NCCL's
// point-to-point over one path (the ring's protocol latencies).
//
//   time = base + hwLat of the hop (at least netOverhead inside a node) + route latency
//               + S / (efficiency * B)
// with B the path's bottleneck bandwidth (its max-min share when other traffic runs). Always fluid.
//
// NCCL stripes the send over the channels p2p_channels.hpp counts for the pair's communicator
// (CollectiveCall::comm_ranks; the pair alone when it names none). Inside a node each channel moves
// at most its share of the GPU's NVLink (the ring's: NVLink / node.nccl_channels, ASSUMED), so a
// send on few channels runs below the NVLink rate: nccl-tests' sendrecv on 8 GPUs of a node starts
// a send on 4 channels and doubles them only past 16 MiB a channel.
//
// Across nodes, with a fit, the send also waits for FIFO slots (fifo_window.hpp): each of its
// channels has NCCL_STEPS = 8 slots of one chunk (NCCL_P2P_NET_CHUNKSIZE), so a channel moves at most
// 8 chunks per slot round trip, its share of the NIC on the wire. The time is the larger of the
// two. A communicator of many ranks leaves a peer one or two channels: nccl-tests' sendrecv on 10
// nodes then runs at a fraction of a NIC, however large the message.
//
// nccl-tests bus bandwidth: busbw = algbw (factor 1; bus_bw_factor in collective.hpp).
#pragma once

#include "network/internal/algorithm_params.hpp"

namespace commbound::network::internal {

// Runs the SendRecv (must be called from a SimGrid actor; exactly two ranks, sender first:
// CollectiveRunner::check). Simulated time advances by base, the hop latency and the flow.
AlgorithmResult run_send_recv(const AlgorithmParams& params);

}  // namespace commbound::network::internal
