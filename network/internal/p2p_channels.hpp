// How NCCL runs one point-to-point send (ncclSend/ncclRecv): over how many channels it is striped
// and what one FIFO slot of those channels holds.
//
// A communicator's p2p channels are its ring channels rounded up to a power of two
// (ncclTopoComputeP2pChannels, src/graph/paths.cc). Its ring channels: the search's, duplicated
// once more by ncclTopoPostset (src/graph/connect.cc). Across nodes the search finds one channel per
// NIC its GPUs reach and connect.cc doubles Hopper's below 16 when a search channel runs above
// 45 GB/s ("4 compute channels per search channel"); the node type's nccl_channels is that count for
// a communicator of all its GPUs, and one on k of each node's GPUs gets its share by the NICs they
// reach. Inside one node the search is the tuner's (NcclTuner::ring_graph), doubled.
//
// A peer's channels (ncclTopoGetNchannels): an NVLink peer 2 x its NVLinks (path bandwidth / one
// link's, SM90_NVLINK_BW = 20.6 GB/s in src/graph/topo.h), more than the p2p channels on an NVSwitch
// node. A network peer, by release:
//   2.29 and later  max(the GPU's NICs, ceil(their GB/s / NCCL_P2P_PER_CHANNEL_NET_BW = 14)), rounded up
//                   to a power of two, then halved until ceil(ranks / 8) rounds of peers
//                   (NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8) fit the p2p channels.
//   2.20.5          two, halved while 2 x ranks > 4 x p2p channels, at least the GPU's NICs.
// A peer takes the fewest of any of its communicator's peers, at most the p2p channels.
// A send then starts on the channels every rank's sends fit once (halved while x ranks > the p2p
// channels) and doubles them while a channel's part exceeds the largest part, up to the peer's
// (scheduleP2pTasksToPlan, addP2pToPlan in src/enqueue.cc). Parts: across nodes chunk / 2 to one
// chunk of NCCL_P2P_NET_CHUNKSIZE; inside one node chunk / 8 to 32 chunks of NCCL_P2P_NVL_CHUNKSIZE.
// Every channel of a network peer goes through the same NIC. A network slot holds a chunk, a half
// below 8 chunks and a quarter below one (2.30.7's addP2pToPlan; 2.20.5 sizes it to the channel's
// part, at most a chunk: the same for a send of 8 chunks a channel).
//
// Worked on DGX H100 nodes (8 GPUs, one 400 Gb/s NIC each, 16 ring channels), NCCL 2.30.7:
//   2 nodes x 1 GPU:   ring 2 x 2 = 4 channels, p2p 4; a peer max(1, ceil(50 / 14)) = 4, 4 x 1 round fits: 4
//   10 nodes x 1 GPU:  p2p 4; 4 x ceil(10 / 8) = 8 > 4, so 2
//   10 nodes x 8 GPUs: p2p 16; 4 x 10 > 16, 2 x 10 > 16, so 1
//   1 node x 8 GPUs:   ring 2 x 12 = 24, p2p 32; a send starts on 32 / 8 = 4 channels and doubles past
//                      16 MiB a channel: 4 up to 64 MiB, 8 at 128 MiB, 16 at 256 MiB, 32 from 512 MiB
#pragma once

#include "network/cluster_spec.hpp"
#include "network/nccl_constants.hpp"

namespace commbound::network::internal {

// The communicator of a send: its ranks and its GPUs on each node it spans.
struct P2pComm {
  int ranks = 2;
  int gpus_per_node = 1;
  bool one_node() const { return ranks <= gpus_per_node; }
};

struct P2pSend {
  int ring_channels = 0;   // the communicator's (comm->nChannels)
  int p2p_channels = 0;    // comm->p2pnChannels
  int peer_channels = 0;   // comm->p2pnChannelsPerPeer
  int send_channels = 0;   // this send's
  double chunk_bytes = 0;  // one slot's payload
};

// `nic_bytes_per_s` is one NIC's nominal rate (what NCCL reads from the device, not a measured one);
// `one_node_ring_channels` the tuner's search inside one node (NcclTuner::ring_graph), read when
// the communicator is on one node.
P2pSend p2p_send(const NcclConstants& nccl, const NodeType& node, double nic_bytes_per_s, int one_node_ring_channels,
                 P2pComm comm, double bytes);

}  // namespace commbound::network::internal
