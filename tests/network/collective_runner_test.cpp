// CollectiveRunner against analytic oracles: each test writes the expected time from first
// principles (the ring/NVLS/SendRecv cost on a known platform) before comparing.
#include "network/collective_runner.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

namespace commbound::network {
namespace {

// One GPU and one NIC per node, every node on one switch: a ring over n nodes is uniform, every
// hop crossing PCIe (51.84 GB/s), the NIC (48 GB/s) and one switch (0.13 us).
ClusterSpec uniform_ring_cluster(int nodes) { return testing::one_gpu_nodes(nodes, Topology::single_switch); }

std::vector<int> first(int n) {
  std::vector<int> r(n);
  std::iota(r.begin(), r.end(), 0);
  return r;
}

struct Oracle {
  CollectiveOp op;
  int ranks;
  double size_bytes;
};

// Ring on a uniform ring: steps * (hop latency + switch) + base + steps/n * S / B, where steps is
// n-1 (AllGather, ReduceScatter) or 2(n-1) (AllReduce, whose multi-node Simple latency NCCL scales
// by 1.4), B the NIC's 48 GB/s (below PCIe's 51.84 GB/s).
TEST(CollectiveRunner, UniformRingMatchesTheAnalyticTimeWithinOnePercent) {
  const int max_nodes = 64;
  const ClusterSpec spec = uniform_ring_cluster(max_nodes);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const NcclConstants nccl = testing::nccl_2_30_7();
  CollectiveRunner runner(**platform, nccl);
  const double bw_bytes_per_s = spec.fabric.link.effective_bw_bytes_per_s();
  ASSERT_DOUBLE_EQ(bw_bytes_per_s, 48e9);
  const double hop_s = nccl.hop(Algorithm::ring, HopClass::net, Protocol::simple);
  ASSERT_DOUBLE_EQ(hop_s, 14e-6);
  const double base_s = nccl.base(Algorithm::ring, Protocol::simple);
  std::vector<Oracle> oracles;
  for (int n : {2, 3, 8, 17, 64}) {
    for (double size : {1048576.0, 268435456.0}) {
      for (CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter, CollectiveOp::all_reduce}) {
        oracles.push_back({op, n, size});
      }
    }
  }
  std::vector<double> simulated;
  (*platform)->run([&] {
    for (const Oracle& o : oracles) {
      simulated.push_back(runner.run({o.op, first(o.ranks), o.size_bytes}, {Algorithm::ring, Protocol::simple},
                                     Fidelity::fluid).time_s);
    }
  });
  ASSERT_EQ(simulated.size(), oracles.size());
  for (std::size_t i = 0; i < oracles.size(); ++i) {
    const Oracle& o = oracles[i];
    const bool ar = o.op == CollectiveOp::all_reduce;
    const double n = o.ranks;
    const double steps = ar ? 2 * (n - 1) : n - 1;
    const double factor = ar ? 1.4 : 1.0;
    const double expected_s = factor * (base_s + steps * hop_s) + steps * spec.fabric.switch_latency_s +
                              steps / n * o.size_bytes / bw_bytes_per_s;
    EXPECT_NEAR(simulated[i], expected_s, 0.01 * expected_s) << to_string(o.op) << " n=" << o.ranks << " S=" << o.size_bytes;
  }
}

// NVLS inside a node: every GPU pushes S + S/n and receives S/n + S through its NVLink, at NCCL's
// NVLS efficiency (0.85) of the link's effective rate; latency: NVLS base (0) + hop (25 us) + none.
TEST(CollectiveRunner, NvlsMatchesTheSwitchReductionTime) {
  const ClusterSpec spec = testing::dgx_h100(1);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const NcclConstants nccl = testing::nccl_2_30_7();
  CollectiveRunner runner(**platform, nccl);
  const double size = 1073741824.0;
  double simulated_s = 0;
  (*platform)->run([&] {
    simulated_s = runner.run({CollectiveOp::all_reduce, first(8), size}, {Algorithm::nvls, Protocol::simple},
                             Fidelity::fluid).time_s;
  });
  const double rate = nccl.nvls_efficiency * spec.node.nvlink.effective_bw_bytes_per_s();
  const double expected_s = 25e-6 + size * 9.0 / 8.0 / rate;
  EXPECT_NEAR(simulated_s, expected_s, 0.01 * expected_s);
}

// NVLSTree on two nodes, 8 GiB: the switch part moves S x 9/8 through every GPU's NVLink at 0.85 x
// 370.8 GB/s (30.7 ms); the tree part is one exchange, S/16 per tree and direction on each of the 8
// NICs, S/8 per NIC and direction at 48 GB/s (22.4 ms). Both stream at once, so the switch bounds
// it; latency: base 0 + hwLat NVLink 25 us + 2 log2(2) x hwLat NET 14 us = 53 us.
TEST(CollectiveRunner, NvlsTreeOnTwoNodesIsBoundByTheSwitch) {
  const ClusterSpec spec = testing::dgx_h100(2);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const NcclConstants nccl = testing::nccl_2_30_7();
  CollectiveRunner runner(**platform, nccl);
  const double size = 8589934592.0;
  double simulated_s = 0;
  (*platform)->run([&] {
    simulated_s = runner.run({CollectiveOp::all_reduce, first(16), size}, {Algorithm::nvls_tree, Protocol::simple},
                             Fidelity::fluid).time_s;
  });
  const double switch_s = size * 9.0 / 8.0 / (nccl.nvls_efficiency * spec.node.nvlink.effective_bw_bytes_per_s());
  const double nic_s = size / 8.0 / spec.fabric.link.effective_bw_bytes_per_s();
  ASSERT_GT(switch_s, nic_s);
  const double expected_s = 53e-6 + switch_s;
  EXPECT_NEAR(simulated_s, expected_s, 0.01 * expected_s);
}

// NVLSTree across 4..32 nodes cannot beat what the NICs can move: every node must send and receive
// S (N-1)/N per phase, so busbw <= 8 x 48 GB/s x (n-1)/n x N/(N-1) (sim/fit/fabric_fitter.cpp's bound).
TEST(CollectiveRunner, NvlsTreeRespectsTheNicBound) {
  const ClusterSpec spec = testing::dgx_h100(32);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const NcclConstants nccl = testing::nccl_2_30_7();
  CollectiveRunner runner(**platform, nccl);
  const double size = 4294967296.0;
  std::vector<std::pair<int, double>> busbw;
  (*platform)->run([&] {
    for (int nodes : {4, 8, 32}) {
      const double t = runner.run({CollectiveOp::all_reduce, first(8 * nodes), size},
                                  {Algorithm::nvls_tree, Protocol::simple}, Fidelity::fluid).time_s;
      busbw.emplace_back(nodes, size / t * bus_bw_factor(CollectiveOp::all_reduce, 8 * nodes));
    }
  });
  for (const auto& [nodes, bw] : busbw) {
    const double n = 8.0 * nodes;
    const double bound = 8 * spec.fabric.link.effective_bw_bytes_per_s() * (n - 1) / n * nodes / (nodes - 1.0);
    EXPECT_LE(bw, bound) << nodes << " nodes";
    EXPECT_GT(bw, 0.5 * bound) << nodes << " nodes";  // and it does use the NICs
  }
}

// NVLS across nodes with in-network reduction ([fabric] sharp = true: NCCL's NVLS + CollNet). The
// switches reduce, so every NIC moves its rail's share S/8 once each way whatever the node count,
// and the node's switch moves S x 9/8 through every GPU's NVLink at 0.85 x 370.8 GB/s. Both
// stream at once: time = base 0 + hwLat NVLS NVLink 25 us + NVLS NET 18 us + the slower part, the
// same on 4, 8 and 32 nodes. 4 GiB on 400G NICs (48 GB/s, 11.2 ms) is bound by the switch
// (15.3 ms); on 200G NICs (24 GB/s, 22.4 ms) by the NICs: either way above what any algorithm that
// reduces in the GPUs can reach, busbw <= the NICs' 8 x 48 GB/s x (n-1)/n x N/(N-1).
TEST(CollectiveRunner, NvlsWithSharpIsBoundByTheSlowerOfSwitchAndNics) {
  for (double nic_scale : {1.0, 0.5}) {
    ClusterSpec spec = testing::dgx_h100(32);
    spec.fabric.sharp = true;
    spec.fabric.link.bw_bytes_per_s *= nic_scale;
    auto platform = Platform::create(spec);
    ASSERT_TRUE(platform) << platform.error().message;
    const NcclConstants nccl = testing::nccl_2_30_7();
    CollectiveRunner runner(**platform, nccl);
    const double size = 4294967296.0;
    const double switch_s = size * 9.0 / 8.0 / (nccl.nvls_efficiency * spec.node.nvlink.effective_bw_bytes_per_s());
    const double nic_s = size / 8.0 / spec.fabric.link.effective_bw_bytes_per_s();
    const double expected_s = 25e-6 + 18e-6 + std::max(switch_s, nic_s);
    std::vector<std::pair<int, double>> times;
    (*platform)->run([&] {
      for (int nodes : {4, 8, 32}) {
        times.emplace_back(nodes, runner.run({CollectiveOp::all_reduce, first(8 * nodes), size},
                                             {Algorithm::nvls, Protocol::simple}, Fidelity::fluid).time_s);
      }
    });
    for (const auto& [nodes, t] : times) {
      EXPECT_NEAR(t, expected_s, 0.01 * expected_s) << nodes << " nodes, NIC x " << nic_scale;
      const double n = 8.0 * nodes;
      const double ring_bound = 8 * spec.fabric.link.effective_bw_bytes_per_s() * (n - 1) / n * nodes / (nodes - 1.0);
      EXPECT_GT(size / t * bus_bw_factor(CollectiveOp::all_reduce, 8 * nodes), ring_bound) << nodes << " nodes";
    }
  }
}

// With SHARP in the fabric NCCL's tuner prefers NVLS across nodes for a large AllReduce (its
// latency does not grow with log2(nodes) as NVLSTree's does); without it NVLS stays in one node.
TEST(NcclTuner, ChoosesNvlsAcrossNodesOnlyWithSharp) {
  ClusterSpec spec = testing::dgx_h100(32);
  spec.fabric.sharp = true;
  const NcclTuner sharp(spec.node, spec.fabric, testing::nccl_2_30_7());
  EXPECT_EQ(sharp.choose({CollectiveOp::all_reduce, 256, 32, 1073741824.0}).algorithm, Algorithm::nvls);
  EXPECT_EQ(sharp.unsupported({CollectiveOp::all_gather, 256, 32, 1}, {Algorithm::nvls, Protocol::simple}),
            "this model runs NVLS for AllReduce only");
  spec.fabric.sharp = false;
  const NcclTuner plain(spec.node, spec.fabric, testing::nccl_2_30_7());
  EXPECT_NE(plain.unsupported({CollectiveOp::all_reduce, 256, 32, 1}, {Algorithm::nvls, Protocol::simple}), "");
}

// PAT on one GPU per node: AllGather in ceil(log2 n) sequential steps, step k sending
// min(2^k, n - 2^k) blocks of S/n through every NIC (48 GB/s, below PCIe's 51.84) at NCCL's 0.75 of
// it: S (n-1)/n in all, as a ring, plus base 8 us + 2.8 us x n + per step hwLat(PAT, NET) 14 us / 3.5. On 6 nodes
// the steps move 1, 2 and 2 blocks; ReduceScatter runs them in reverse, same time.
TEST(CollectiveRunner, PatTakesLogStepsOfDoublingBlocks) {
  const ClusterSpec spec = uniform_ring_cluster(8);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const NcclConstants nccl = testing::nccl_2_30_7();
  CollectiveRunner runner(**platform, nccl);
  const double size = 67108864.0;
  std::vector<std::tuple<CollectiveOp, int, double>> times;
  (*platform)->run([&] {
    for (CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
      for (int n : {8, 6}) {
        times.emplace_back(op, n, runner.run({op, first(n), size}, {Algorithm::pat, Protocol::simple}, Fidelity::fluid).time_s);
      }
    }
  });
  for (const auto& [op, n, t] : times) {
    const int steps = 3;  // ceil(log2 8) = ceil(log2 6) = 3
    const double expected_s = 8e-6 + 2.8e-6 * n + steps * 14e-6 / 3.5 +
                              size * (n - 1) / n / (0.75 * spec.fabric.link.effective_bw_bytes_per_s());
    EXPECT_NEAR(t, expected_s, 0.01 * expected_s) << to_string(op) << " on " << n << " nodes";
  }
}

// NCCL's tuner takes PAT for small and mid-size AllGathers over many one-GPU nodes (log2 n steps
// of latency against a ring's n - 1) and the ring for large ones (PAT's busBw x 0.75); PAT is not
// offered with several GPUs per node, nor for AllReduce.
TEST(NcclTuner, ChoosesPatForOneGpuNodesAtMidSizes) {
  const ClusterSpec spec = uniform_ring_cluster(64);
  const NcclTuner tuner(spec.node, spec.fabric, testing::nccl_2_30_7());
  EXPECT_EQ(tuner.choose({CollectiveOp::all_gather, 64, 64, 1048576.0}).algorithm, Algorithm::pat);
  EXPECT_EQ(tuner.choose({CollectiveOp::reduce_scatter, 64, 64, 16777216.0}).algorithm, Algorithm::pat);
  EXPECT_EQ(tuner.choose({CollectiveOp::all_gather, 64, 64, 4294967296.0}).algorithm, Algorithm::ring);
  EXPECT_NE(tuner.unsupported({CollectiveOp::all_reduce, 64, 64, 1}, {Algorithm::pat, Protocol::simple}), "");
  const ClusterSpec dgx = testing::dgx_h100(8);
  const NcclTuner eight(dgx.node, dgx.fabric, testing::nccl_2_30_7());
  EXPECT_NE(eight.unsupported({CollectiveOp::all_gather, 64, 8, 1}, {Algorithm::pat, Protocol::simple}), "");
}

// The fit the ring tests work by hand: launch 10 us, NVLink hop 1 us, network hop 20 us, 3 us per
// message, NICs at 0.9 of line rate.
const FabricFit kTestFit{.name = "test", .node_type = "dgx-h100", .link = "ib-ndr", .launch_s = 10e-6,
                         .nvlink_hop_s = 1e-6, .net_hop_s = 20e-6, .message_s = 3e-6,
                         .nic_efficiency = 0.9, .nvls_latency_s = 0};

// With a fabric fit the ring's time is built from its mechanisms. AllGather 1 GiB on 2 nodes, ring
// Simple: launch 10 us; the latency chain of 15 steps around a ring of 14 NVLink hops (1 us) and 2
// network hops (20 us + one leaf switch, 0.13 us) is all but its cheapest hop: 2 x 20.13 + 13 x 1;
// 15 steps of 4 MiB per channel (1 GiB / 16 ranks / 16 channels), each two 2 MiB chunks of two
// Simple slices (a chunk is ALLGATHER_CHUNKSTEPS / ALLGATHER_SLICESTEPS = 2 slices), at 3 us a
// slice; and the bytes: S x 15/16 through 8 NICs at 0.9 x 50 GB/s. A channel's window (4 slices of
// 1 MiB per 40 us round trip plus 1 MiB at its 22.5 GB/s share: 48 GB/s) does not bind.
TEST(CollectiveRunner, FittedRingAddsItsMechanisms) {
  ClusterSpec spec = testing::dgx_h100(2);
  spec.fabric.fit = kTestFit;
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  CollectiveRunner runner(**platform, testing::nccl_2_30_7());
  const double size = 1073741824.0;
  double simulated_s = 0;
  (*platform)->run([&] {
    simulated_s = runner.run({CollectiveOp::all_gather, first(16), size}, {Algorithm::ring, Protocol::simple},
                             Fidelity::fluid).time_s;
  });
  const double chain_s = 2 * (20e-6 + spec.fabric.switch_latency_s) + 13 * 1e-6;
  const double bytes_s = size * 15.0 / 16.0 / (8 * 0.9 * spec.fabric.link.bw_bytes_per_s);
  const double expected_s = 10e-6 + chain_s + 15 * 4 * 3e-6 + bytes_s;
  EXPECT_NEAR(simulated_s, expected_s, 0.02 * expected_s);
}

// The same mechanisms itemized, as `collective --explain` prints them: AllGather 256 MiB on 10 DGX
// H100 nodes (80 ranks), ring Simple, worked by hand. Launch 10 us. The latency chain: 79 steps, each
// a hop; the ring's 80 hops are 70 NVLink (1 us) and 10 network (20 us + one leaf switch, its rail's),
// and 79 consecutive steps pass all of them but one NVLink hop. Messages: each channel carries 256
// MiB / 80 ranks / 16 channels = 204.8 KiB a step, one chunk of two Simple slices, so 79 x 2 = 158
// messages at 3 us. Bytes: each NIC carries two of the 16 channels' network hops, S x 79/80 / 8 per
// NIC at 0.9 x 50 GB/s. So far 10 + 270 + 474 + 736 us. But a connection keeps only 4 slices in
// flight, and a slot comes back after a round trip (2 x 20 us), the slice's time on the wire (102.4
// KiB at 22.5 GB/s, its channel's half of the NIC: 4.66 us), and the receiver's message cost (3 us)
// and copy onward over NVLink (102.4 KiB at a 16th of the NVLink rate: 4.53 us): 52.19 us. Its 158
// slices need 158 / 4 x 52.19 us = 2061 us, which sets the time (10 us of launch before it); the
// difference is the term of waiting for slots.
TEST(CollectiveRunner, ExplainsAFittedRingTermByTerm) {
  ClusterSpec spec = testing::dgx_h100(10);
  spec.fabric.fit = kTestFit;
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  CollectiveRunner runner(**platform, testing::nccl_2_30_7());
  runner.set_itemize(true);
  const double size = 256.0 * (1 << 20);
  CollectiveResult r;
  (*platform)->run([&] {
    r = runner.run({CollectiveOp::all_gather, first(80), size}, {Algorithm::ring, Protocol::simple}, Fidelity::fluid);
  });
  ASSERT_EQ(r.terms.size(), 5u);  // launch, latency chain, messages, bytes, waiting for slots
  EXPECT_NEAR(r.terms[0].seconds, 10e-6, 1e-12);
  const double chain_s = 10 * (20e-6 + spec.fabric.switch_latency_s) + 69 * 1e-6;
  EXPECT_EQ(r.terms[1].count, 79);
  EXPECT_NEAR(r.terms[1].seconds, chain_s, 1e-9);
  EXPECT_EQ(r.terms[2].count, 158);
  EXPECT_NEAR(r.terms[2].seconds, 158 * 3e-6, 1e-12);
  const double bytes_s = size * 79.0 / 80.0 / (8 * 0.9 * spec.fabric.link.bw_bytes_per_s);
  EXPECT_NEAR(r.terms[3].seconds, bytes_s, 0.01 * bytes_s);
  const double slice_bytes = size / 80 / 16 / 2;
  const double cycle_s = 2 * 20e-6 + slice_bytes / (0.9 * spec.fabric.link.bw_bytes_per_s / 2) + 3e-6 +
                         slice_bytes / (spec.node.nvlink.effective_bw_bytes_per_s() / 16);
  const double window_s = 158.0 / 4 * cycle_s;
  EXPECT_NEAR(r.time_s, 10e-6 + window_s, 1e-9);
  EXPECT_NE(r.terms[4].what.find("waiting for FIFO slots: 158 messages a connection, 4 in flight"), std::string::npos)
      << r.terms[4].what;
  double sum_s = 0;
  for (const CostTerm& t : r.terms) sum_s += t.seconds;
  EXPECT_NEAR(sum_s, r.time_s, 1e-9);  // the terms add up to the time
}

// SendRecvs of 1 GiB from GPU 0 to GPU 72 of 10 DGX H100 nodes with `fit`, itemized: in
// nccl-tests' communicator of 10 ranks, one GPU a node, and the two ranks alone; nullopt (a test
// failure added) when the platform cannot be built.
std::optional<std::pair<CollectiveResult, CollectiveResult>> sends_of_1_gib(const FabricFit& fit) {
  ClusterSpec spec = testing::dgx_h100(10);
  spec.fabric.fit = fit;
  auto platform = Platform::create(spec);
  if (!platform) {
    ADD_FAILURE() << platform.error().message;
    return std::nullopt;
  }
  CollectiveRunner runner(**platform, testing::nccl_2_30_7());
  runner.set_itemize(true);
  CollectiveCall in_ten{CollectiveOp::send_recv, {0, 72}, 1024.0 * (1 << 20)};
  in_ten.comm_ranks = 10;
  in_ten.comm_gpus_per_node = 1;
  CollectiveCall alone = in_ten;
  alone.comm_ranks = alone.comm_gpus_per_node = 0;
  std::pair<CollectiveResult, CollectiveResult> results;
  (*platform)->run([&] {
    results.first = runner.run(in_ten, {Algorithm::ring, Protocol::simple}, Fidelity::fluid);
    results.second = runner.run(alone, {Algorithm::ring, Protocol::simple}, Fidelity::fluid);
  });
  return results;
}

// In the communicator of 10 ranks NCCL stripes the send over 2 channels (p2p_channels_test), 8
// slots of 128 KiB each: 1 GiB / 2 / 128 KiB = 4096 messages a channel, 8 in flight. With a fit of
// 40 us a network hop, a slot comes back every 2 x 40 us + 128 KiB at half of 0.9 x 50 GB/s (5.83
// us) + 3 us = 88.83 us: 512 x 88.83 us = 45.5 ms after the 10 us launch. That is slower than both
// the bytes at 0.9 x 50 GB/s (23.9 ms) and 2 channels at NCCL's 14 GB/s each (38.3 ms), so the
// window sets the time.
TEST(CollectiveRunner, ASendWaitsForItsChannelsSlots) {
  FabricFit fit = kTestFit;
  fit.net_hop_s = 40e-6;
  const auto sends = sends_of_1_gib(fit);
  ASSERT_TRUE(sends);
  const CollectiveResult& ten = sends->first;
  const double nic_bytes_per_s = 0.9 * testing::dgx_h100(10).fabric.link.bw_bytes_per_s;
  const double cycle_s = 2 * 40e-6 + 131072 / (nic_bytes_per_s / 2) + 3e-6;
  EXPECT_NEAR(ten.time_s, 10e-6 + 4096.0 / 8 * cycle_s, 1e-9);
  EXPECT_NE(ten.terms.back().what.find("waiting for FIFO slots: 2 channel(s), 4096 messages of 128 KiB"),
            std::string::npos)
      << ten.terms.back().what;
}

// The same send with the test fit's 20 us network hop: its window (512 slot round trips of 48.83
// us, 25.0 ms) is shorter than what its 2 channels can move at NCCL's 14 GB/s each
// (NCCL_P2P_PER_CHANNEL_NET_BW): 1 GiB / 28 GB/s = 38.35 ms, which sets the time, plus the 10 us
// launch, one 20 us network hop and the route's switches. The pair alone (a two-rank communicator)
// has 4 channels, 56 GB/s, above the NIC's 45: it runs at the NIC's rate (its window, 256 round
// trips of 40 us + 11.65 us + 3 us, 14.0 ms, is shorter than the bytes' 23.9 ms).
TEST(CollectiveRunner, ASendMovesAtMostItsChannelsRate) {
  const auto sends = sends_of_1_gib(kTestFit);
  ASSERT_TRUE(sends);
  const auto& [ten, pair] = *sends;
  const double size = 1024.0 * (1 << 20);
  const double channels_s = size / (2 * 14e9);
  EXPECT_GT(ten.time_s, 30e-6 + channels_s);
  EXPECT_LT(ten.time_s, 40e-6 + channels_s);
  const double bytes_s = size / (0.9 * testing::dgx_h100(10).fabric.link.bw_bytes_per_s);
  EXPECT_GT(pair.time_s, bytes_s);
  EXPECT_LT(pair.time_s, bytes_s + 100e-6);  // the bytes and the latency; no wait for slots
  EXPECT_NE(ten.terms[1].what.find("at most 2 channel(s) x 14 GB/s"), std::string::npos) << ten.terms[1].what;
}

// Where the window sets the time (the AllGather of ExplainsAFittedRingTermByTerm), both
// fidelities give it: the step fidelity's chunks finish sooner and then wait for the same bound.
TEST(CollectiveRunner, BothFidelitiesTakeTheWindow) {
  ClusterSpec spec = testing::dgx_h100(10);
  spec.fabric.fit = kTestFit;
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  CollectiveRunner runner(**platform, testing::nccl_2_30_7());
  const CollectiveCall call{CollectiveOp::all_gather, first(80), 256.0 * (1 << 20)};
  double fluid_s = 0, step_s = 0;
  (*platform)->run([&] {
    fluid_s = runner.run(call, {Algorithm::ring, Protocol::simple}, Fidelity::fluid).time_s;
    step_s = runner.run(call, {Algorithm::ring, Protocol::simple}, Fidelity::step).time_s;
  });
  EXPECT_NEAR(step_s, fluid_s, 1e-9);
}

// With a link spread each node's NICs run at its draw, and a ring that crosses every node moves at
// the slowest: in a NIC-bound AllGather (4 GiB on 8 nodes; a fit's NICs at 0.9 x 50 GB/s, 360 GB/s
// a node, under the 370.8 of NVLink) the bytes take their time over that node's factor; the
// latency terms do not change. The seed is the first whose slowest of the 8 nodes is below 0.8.
TEST(CollectiveRunner, ARingWaitsForItsSlowestNode) {
  auto spread = testing::shipped_presets().link_spread("xxrjun-cluster00");
  ASSERT_TRUE(spread) << spread.error().message;
  ClusterSpec even = testing::dgx_h100(8);
  even.fabric.fit = kTestFit;
  ClusterSpec uneven = even;
  uneven.fabric.spread = *spread;
  double slowest = 1;
  for (unsigned seed = 0; slowest >= 0.8 && seed < 1000; ++seed) {
    uneven.fabric.link_spread_seed = seed;
    slowest = 1e9;
    for (long n = 0; n < 8; ++n) slowest = std::min(slowest, spread->nic_factor(n, seed));
  }
  ASSERT_LT(slowest, 0.8);
  auto time_on = [&](const ClusterSpec& spec) {
    auto platform = Platform::create(spec);
    EXPECT_TRUE(platform) << platform.error().message;
    CollectiveRunner runner(**platform, testing::nccl_2_30_7());
    CollectiveResult r;
    (*platform)->run([&] {
      r = runner.run({CollectiveOp::all_gather, first(64), 4294967296.0}, {Algorithm::ring, Protocol::simple},
                     Fidelity::fluid);
    });
    return r;
  };
  const CollectiveResult even_r = time_on(even);
  const CollectiveResult uneven_r = time_on(uneven);
  EXPECT_NEAR(uneven_r.bandwidth_s / even_r.bandwidth_s, 1 / slowest, 0.01 / slowest);
  EXPECT_NEAR(uneven_r.latency_s, even_r.latency_s, 1e-12);
}

// One DGX H100, AllGather 1 GiB as NCCL's tuner picks it (ring, Simple): every GPU pushes 7/8 of
// the buffer through its NVLink at 370.8 GB/s, 2.53 ms, plus 8.4 + 7 x 3.4 us of latency, so busbw
// = 7/8 x 1 GiB / 2.566 ms = 366 GB/s: inside the 350-370 GB/s NVIDIA publishes for such nodes
// (docs/reference/hardware.md).
TEST(CollectiveRunner, SingleNodeAllGatherLiesInThePublishedRange) {
  auto platform = Platform::create(testing::dgx_h100(1));
  ASSERT_TRUE(platform) << platform.error().message;
  CollectiveRunner runner(**platform, testing::nccl_2_30_7());
  const CollectiveCall call{CollectiveOp::all_gather, first(8), 1073741824.0};
  const CollectiveChoice choice = runner.tuner().choose(runner.shape_of(call));
  double time_s = 0;
  (*platform)->run([&] { time_s = runner.run(call, choice, Fidelity::fluid).time_s; });
  const double busbw_gbps = call.size_bytes / time_s * bus_bw_factor(call.op, 8) / 1e9;
  EXPECT_GE(busbw_gbps, 350.0);
  EXPECT_LE(busbw_gbps, 370.0);
}

// Ring AllGather on one HGX H100 4-GPU node (a direct NVLink mesh, 123.6 GB/s per pair and
// direction: 450 GB/s x 0.824 / 3). NCCL's rings there are the 6 directed Hamiltonian cycles of 4
// GPUs, 2 of its 12 channels each; every pair link direction lies on 2 of them, so each ring moves
// at 123.6 / 2 = 61.8 GB/s and the 6 together at B = 370.8 GB/s, the GPU's whole NVLink. S = 1 GiB:
// 3/4 x S / B = 805.3e6 / 370.8e9 = 2.1718 ms of bandwidth, plus Ring/Simple base + 3 NVLink hops
// (no route latency inside a node). One ring alone (every channel on 0->1->2->3->0) would take 3x
// as long on the bandwidth side: the test fails if the rings do not spread over the mesh.
TEST(CollectiveRunner, MeshRingAllGatherMatchesTheHandWorkedTime) {
  const ClusterSpec spec = testing::hgx_h100_4gpu(1);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const NcclConstants nccl = testing::nccl_2_30_7();
  CollectiveRunner runner(**platform, nccl);
  ASSERT_NEAR(spec.node.nvlink_link_bw_bytes_per_s(), 123.6e9, 1e3);
  const double size = 1073741824.0;
  double fluid_s = 0;
  double step_s = 0;
  const CollectiveCall call{CollectiveOp::all_gather, first(4), size};
  (*platform)->run([&] {
    fluid_s = runner.run(call, {Algorithm::ring, Protocol::simple}, Fidelity::fluid).time_s;
    step_s = runner.run(call, {Algorithm::ring, Protocol::simple}, Fidelity::step).time_s;
  });
  const double bandwidth_s = 0.75 * size / 370.8e9;
  ASSERT_NEAR(bandwidth_s, 2.1718e-3, 1e-7);
  const double latency_s =
      nccl.base(Algorithm::ring, Protocol::simple) + 3 * nccl.hop(Algorithm::ring, HopClass::nvlink, Protocol::simple);
  const double expected_s = bandwidth_s + latency_s;
  EXPECT_NEAR(fluid_s, expected_s, 0.01 * expected_s);
  EXPECT_NEAR(step_s, expected_s, 0.01 * expected_s);
}

// Across HGX 4-GPU nodes each rail's ring crosses every node; odd rails cross it the other way round,
// so each direction of each pair link carries 2 rails' rings (2 x 48 = 96 GB/s < 123.6) and the
// NICs (48 GB/s each; PCIe 51.84) bound the ring: 4 rails x 48 = 192 GB/s per node. 2 nodes, 8 ranks,
// S = 8 GiB: 7/8 x S / 192e9 = 39.15 ms; the ~0.1 ms of hop latency is inside the 1% tolerance.
// Were all 4 rails' rings to run the same way round, each link direction would carry 4 of them
// (192 > 123.6 GB/s): NVLink-bound at 123.6 GB/s per node, 1.55x slower.
TEST(CollectiveRunner, MeshNodesRingIsNicBound) {
  const ClusterSpec spec = testing::hgx_h100_4gpu(2);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  CollectiveRunner runner(**platform, testing::nccl_2_30_7());
  const double size = 8589934592.0;
  double time_s = 0;
  (*platform)->run([&] {
    time_s = runner.run({CollectiveOp::all_gather, first(8), size}, {Algorithm::ring, Protocol::simple},
                        Fidelity::fluid).time_s;
  });
  const double expected_s = 7.0 / 8.0 * size / (4 * 48e9);
  EXPECT_NEAR(time_s, expected_s, 0.01 * expected_s);
}

// No NVSwitch, no NVLS: NCCL searches no NVLS graph on a node without one (search.cc), so the tuner
// never offers NVLS or NVLSTree on a mesh node, for any size, on one node or many, even with SHARP
// in the fabric and even if the node were (wrongly) flagged nvls.
TEST(NcclTuner, NeverChoosesNvlsOnAMeshNode) {
  ClusterSpec spec = testing::hgx_h100_4gpu(8);
  spec.fabric.sharp = true;
  spec.node.nvls = true;
  const NcclTuner tuner(spec.node, spec.fabric, testing::nccl_2_30_7());
  for (int nodes : {1, 2, 8}) {
    for (double size = 1024; size <= 8589934592.0; size *= 8) {
      const Algorithm a = tuner.choose({CollectiveOp::all_reduce, 4 * nodes, nodes, size}).algorithm;
      EXPECT_NE(a, Algorithm::nvls) << nodes << " nodes, " << size << " B";
      EXPECT_NE(a, Algorithm::nvls_tree) << nodes << " nodes, " << size << " B";
    }
  }
  EXPECT_EQ(tuner.unsupported({CollectiveOp::all_reduce, 4, 1, 1}, {Algorithm::nvls, Protocol::simple}),
            "node type hgx-h100-4gpu has a direct NVLink mesh, no NVSwitch");
  EXPECT_NE(tuner.unsupported({CollectiveOp::all_reduce, 8, 2, 1}, {Algorithm::nvls_tree, Protocol::simple}), "");
}

// SendRecv between two nodes' GPU 0: one message through PCIe, NIC, leaf switch, NIC, PCIe.
TEST(CollectiveRunner, SendRecvIsOneMessage) {
  const ClusterSpec spec = testing::dgx_h100(2);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const NcclConstants nccl = testing::nccl_2_30_7();
  CollectiveRunner runner(**platform, nccl);
  const double size = 268435456.0;
  double simulated_s = 0;
  (*platform)->run([&] {
    simulated_s = runner.run({CollectiveOp::send_recv, {0, 8}, size}, {Algorithm::ring, Protocol::simple},
                             Fidelity::fluid).time_s;
  });
  const double expected_s = 8.4e-6 + 14e-6 + spec.fabric.switch_latency_s + size / 48e9;
  EXPECT_NEAR(simulated_s, expected_s, 0.01 * expected_s);
}

// Merging the channels that share a path (rings: 16 channels on 8 rails -> 8 groups) is a
// shortcut: it must give the same time as simulating every channel on its own, to rounding.
TEST(CollectiveRunner, MergedChannelsEqualOneFlowPerChannel) {
  auto platform = Platform::create(testing::dgx_h100(4, Topology::fat_tree));
  ASSERT_TRUE(platform) << platform.error().message;
  const NcclConstants nccl = testing::nccl_2_30_7();
  CollectiveRunner merged(**platform, nccl, true);
  CollectiveRunner separate(**platform, nccl, false);
  struct Case {
    CollectiveOp op;
    int ranks;
    CollectiveChoice choice;
  };
  const std::vector<Case> cases = {
      {CollectiveOp::all_gather, 8, {Algorithm::ring, Protocol::simple}},
      {CollectiveOp::all_gather, 32, {Algorithm::ring, Protocol::simple}},
      {CollectiveOp::all_reduce, 32, {Algorithm::ring, Protocol::ll128}},
      {CollectiveOp::all_reduce, 32, {Algorithm::tree, Protocol::simple}},
  };
  std::vector<std::pair<CollectiveResult, CollectiveResult>> results;
  (*platform)->run([&] {
    for (const Case& c : cases) {
      const CollectiveCall call{c.op, first(c.ranks), 268435456.0};
      results.emplace_back(merged.run(call, c.choice, Fidelity::fluid), separate.run(call, c.choice, Fidelity::fluid));
    }
  });
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_NEAR(results[i].first.time_s, results[i].second.time_s, 1e-6 * results[i].second.time_s)
        << to_string(cases[i].op) << " ranks=" << cases[i].ranks;
  }
}

// NCCL's tuner, from NCCL's own model: a tiny AllReduce is latency-bound (LL), a 1 GiB AllGather on
// one node is bandwidth-bound (ring Simple). A 1 GiB AllReduce over 32 nodes: NVLSTree's busBw is
// min(NVLS 370.8 x 0.85 x 15/16 x 2 = 591, NICs 8 x 48 = 384) = 384 GB/s, algBw 384 x 256/510 = 193;
// the tree's min(0.92 x 384, 16 x 36) x 0.85 / 2 = 150; the ring pays 510 steps of latency. Without
// NVLink SHARP (an A100-like node) the tree is left.
TEST(NcclTuner, ChoosesLikeNccl) {
  const ClusterSpec spec = testing::dgx_h100(32);
  const NcclTuner tuner(spec.node, spec.fabric, testing::nccl_2_30_7());
  EXPECT_EQ(tuner.choose({CollectiveOp::all_reduce, 8, 1, 1024}).protocol, Protocol::ll);
  const CollectiveChoice ag = tuner.choose({CollectiveOp::all_gather, 8, 1, 1073741824.0});
  EXPECT_EQ(ag.algorithm, Algorithm::ring);
  EXPECT_EQ(ag.protocol, Protocol::simple);
  EXPECT_EQ(tuner.choose({CollectiveOp::all_reduce, 256, 32, 1073741824.0}).algorithm, Algorithm::nvls_tree);
  ClusterSpec no_sharp = spec;
  no_sharp.node.nvls = false;
  const NcclTuner plain(no_sharp.node, no_sharp.fabric, testing::nccl_2_30_7());
  EXPECT_EQ(plain.choose({CollectiveOp::all_reduce, 256, 32, 1073741824.0}).algorithm, Algorithm::tree);
  EXPECT_NE(tuner.unsupported({CollectiveOp::all_reduce, 8, 1, 1}, {Algorithm::nvls_tree, Protocol::simple}), "");
  EXPECT_NE(tuner.unsupported({CollectiveOp::all_gather, 16, 2, 1}, {Algorithm::nvls_tree, Protocol::simple}), "");
  EXPECT_EQ(tuner.choose({CollectiveOp::all_reduce, 8, 1, 1073741824.0}).algorithm, Algorithm::nvls);
  EXPECT_NE(tuner.unsupported({CollectiveOp::all_gather, 16, 2, 1}, {Algorithm::tree, Protocol::simple}), "");
  EXPECT_NE(tuner.unsupported({CollectiveOp::all_reduce, 16, 2, 1}, {Algorithm::nvls, Protocol::simple}), "");
}

TEST(Collective, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bw_factor(CollectiveOp::all_gather, 8), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_bw_factor(CollectiveOp::reduce_scatter, 16), 15.0 / 16.0);
  EXPECT_DOUBLE_EQ(bus_bw_factor(CollectiveOp::all_reduce, 8), 2.0 * 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(bus_bw_factor(CollectiveOp::send_recv, 2), 1.0);
}

// The runner keeps each group's routes, coupled rates and latency chain from its first call over
// those ranks (internal/route_cache.hpp). Two groups of 16 ranks with different routes (two whole
// nodes; one GPU on each of 16 nodes), called in turn on one runner, must each take exactly what
// a fresh runner's first call takes (to float rounding): a cache keyed on less than the ranks would
// hand one group the other's routes.
TEST(CollectiveRunner, ReusedRoutesGiveTheFirstCallsTime) {
  const ClusterSpec spec = testing::dgx_h100(16);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const NcclConstants nccl = testing::nccl_2_30_7();
  std::vector<int> spread;
  for (int node = 0; node < 16; ++node) spread.push_back(8 * node);
  const std::vector<std::vector<int>> groups = {first(16), spread};
  const std::vector<CollectiveChoice> choices = {{Algorithm::ring, Protocol::simple}, {Algorithm::tree, Protocol::simple}};
  std::vector<double> fresh_s, reused_s;
  (*platform)->run([&] {
    for (const CollectiveChoice& choice : choices) {
      for (const auto& ranks : groups) {
        CollectiveRunner fresh(**platform, nccl);
        fresh_s.push_back(fresh.run({CollectiveOp::all_reduce, ranks, 64e6}, choice, Fidelity::fluid).time_s);
      }
    }
    CollectiveRunner runner(**platform, nccl);
    for (int round = 0; round < 2; ++round) {
      for (const CollectiveChoice& choice : choices) {
        for (const auto& ranks : groups) {
          reused_s.push_back(runner.run({CollectiveOp::all_reduce, ranks, 64e6}, choice, Fidelity::fluid).time_s);
        }
      }
    }
  });
  ASSERT_EQ(fresh_s.size(), 4u);
  ASSERT_EQ(reused_s.size(), 8u);
  EXPECT_GT(std::abs(fresh_s[0] - fresh_s[1]), 0.01 * fresh_s[0]) << "the two groups' routes differ";
  // Equal but for the rounding of time_s = clock - start at later clocks (a few ulps).
  for (std::size_t i = 0; i < reused_s.size(); ++i) {
    EXPECT_NEAR(reused_s[i], fresh_s[i % 4], 1e-12 * fresh_s[i % 4]) << "call " << i;
  }
}

}  // namespace
}  // namespace commbound::network
