// NCCL's channels for a send to a network peer, each expected count worked by hand from
// src/graph/paths.cc, src/graph/connect.cc and src/enqueue.cc of the release (see
// network/internal/p2p_channels.hpp), on DGX H100 nodes: 8 GPUs, one 400 Gb/s NIC each (NCCL reads
// 50 GB/s), 16 ring channels for a communicator of all 8.
#include "network/internal/p2p_channels.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

namespace commbound::network::internal {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kKiB = 1024;

struct Dgx {
  ClusterSpec spec = testing::dgx_h100(10);
  P2pSend send(const NcclConstants& nccl, int ranks, int gpus_per_node, double bytes) const {
    // 12 channels: the tuner's search inside a DGX H100 (6 rings at 60 GB/s, duplicated).
    return p2p_send(nccl, spec.node, spec.fabric.link.bw_bytes_per_s, 12, {ranks, gpus_per_node}, bytes);
  }
};

// 2.30.7: a peer starts at max(1 NIC, ceil(50 / 14)) = 4 channels; ceil(ranks / 8) rounds of peers
// must fit the p2p channels. The ring channels: 16 x (NICs reached / 8), doubled below 16 (Hopper,
// a 48 GB/s search channel fits the NIC).
TEST(P2pChannels, ALargeSendGetsFewerChannelsTheMoreRanks) {
  const Dgx dgx;
  const NcclConstants nccl = testing::nccl_2_30_7();
  struct Case {
    int nodes, gpus, ring, p2p, peer;
  };
  // 2 x 1: ring 2 x 2 = 4; 4 x 1 round <= 4. 10 x 1: 4 x 2 rounds > 4, 2 x 2 <= 4.
  // 10 x 2: ring 4 x 2 = 8; 4 x 3 > 8, 2 x 3 <= 8. 10 x 4: ring 16; 4 x 5 > 16, 2 x 5 <= 16.
  // 10 x 8: ring 16; 4 x 10 and 2 x 10 > 16, so 1.
  for (const Case c : {Case{2, 1, 4, 4, 4}, Case{10, 1, 4, 4, 2}, Case{10, 2, 8, 8, 2}, Case{10, 4, 16, 16, 2},
                       Case{10, 8, 16, 16, 1}}) {
    const P2pSend s = dgx.send(nccl, c.nodes * c.gpus, c.gpus, kGiB);
    EXPECT_EQ(s.ring_channels, c.ring) << c.nodes << " x " << c.gpus;
    EXPECT_EQ(s.p2p_channels, c.p2p) << c.nodes << " x " << c.gpus;
    EXPECT_EQ(s.peer_channels, c.peer) << c.nodes << " x " << c.gpus;
    EXPECT_EQ(s.send_channels, c.peer) << c.nodes << " x " << c.gpus;  // 1 GiB is many chunks a channel
    EXPECT_EQ(s.chunk_bytes, 128 * kKiB);
  }
}

// 2.20.5: two channels, halved while 2 x ranks > 4 x ring channels, at least the GPU's one NIC.
// 2 x 1: 4 <= 16, so 2. 10 x 1: 20 > 16, so 1.
TEST(P2pChannels, Release2_20_5ScalesByRanks) {
  const Dgx dgx;
  const NcclConstants nccl = testing::nccl_release("2.20.5");
  EXPECT_EQ(dgx.send(nccl, 2, 1, kGiB).send_channels, 2);
  EXPECT_EQ(dgx.send(nccl, 10, 1, kGiB).send_channels, 1);
}

// A small send starts on the channels every rank's sends fit once (10 ranks x 1 > 4 p2p channels:
// 1) and doubles while a channel's part exceeds a chunk: 100 KiB stays on 1 channel in a quarter
// chunk (below one chunk), 1 MiB goes to 2 channels of 512 KiB in whole chunks (8 chunks or more).
TEST(P2pChannels, ASmallSendStartsOnOneChannel) {
  const Dgx dgx;
  const NcclConstants nccl = testing::nccl_2_30_7();
  const P2pSend small = dgx.send(nccl, 10, 1, 100 * kKiB);
  EXPECT_EQ(small.send_channels, 1);
  EXPECT_EQ(small.chunk_bytes, 32 * kKiB);
  const P2pSend mid = dgx.send(nccl, 10, 1, 1024 * kKiB);
  EXPECT_EQ(mid.send_channels, 2);
  EXPECT_EQ(mid.chunk_bytes, 128 * kKiB);
}

// Inside one node (8 GPUs, 2.30.7): ring 2 x 12 = 24, p2p 32; an NVLink peer has 2 x 18 links =
// 36, so 32. A send starts on 32 halved while 8 ranks x it > 32: 4, and doubles while its part is
// more than 32 chunks of 512 KiB (16 MiB): 4 channels to 64 MiB, 8 at 128 MiB, 16 at 256 MiB, 32 at
// 512 MiB, the steps nccl-tests' in-node sendrecv shows (docs/accuracy.md). 4 GPUs start on 8.
TEST(P2pChannels, InsideOneNodeASendDoublesPast16MiBAChannel) {
  const Dgx dgx;
  const NcclConstants nccl = testing::nccl_2_30_7();
  const double mib = 1024 * kKiB;
  EXPECT_EQ(dgx.send(nccl, 8, 8, kGiB).p2p_channels, 32);
  EXPECT_EQ(dgx.send(nccl, 8, 8, kGiB).peer_channels, 32);
  EXPECT_EQ(dgx.send(nccl, 8, 8, 32 * mib).send_channels, 4);
  EXPECT_EQ(dgx.send(nccl, 8, 8, 64 * mib).send_channels, 4);
  EXPECT_EQ(dgx.send(nccl, 8, 8, 128 * mib).send_channels, 8);
  EXPECT_EQ(dgx.send(nccl, 8, 8, 256 * mib).send_channels, 16);
  EXPECT_EQ(dgx.send(nccl, 8, 8, 512 * mib).send_channels, 32);
  EXPECT_EQ(dgx.send(nccl, 4, 4, 32 * mib).send_channels, 8);
  EXPECT_EQ(dgx.send(nccl, 8, 8, kGiB).chunk_bytes, 512 * kKiB);
}

}  // namespace
}  // namespace commbound::network::internal
