// CollectiveRunner against analytic oracles: each test writes the expected time from first
// principles (the ring/NVLS/SendRecv cost on a known platform) before comparing.
#include "network/collective_runner.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace commbound::network {
namespace {

// One GPU and one NIC per node, every node on one switch: a ring over n nodes is uniform, every
// hop crossing PCIe (51.84 GB/s), the NIC (48 GB/s) and one switch (0.13 us).
ClusterSpec uniform_ring_cluster(int nodes) {
  ClusterSpec spec = testing::dgx_h100(nodes, Topology::single_switch);
  spec.node.gpus = 1;
  spec.node.nics = 1;
  spec.node.nccl_channels = 1;
  spec.node.nvls = false;
  return spec;
}

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

// One DGX H100, AllGather 1 GiB as NCCL's tuner picks it (ring, Simple): every GPU pushes 7/8 of
// the buffer through its NVLink at 370.8 GB/s, 2.53 ms, plus 8.4 + 7 x 3.4 us of latency, so busbw
// = 7/8 x 1 GiB / 2.566 ms = 366 GB/s: inside the 350-370 GB/s NVIDIA publishes for such nodes
// (shared/reference/hardware.md).
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
// one node is bandwidth-bound (ring Simple), and a 1 GiB AllReduce over 32 nodes prefers the tree
// (ring latency: 510 steps; tree: 2 * (7 NVLink + 5 network) hops).
TEST(NcclTuner, ChoosesLikeNccl) {
  const ClusterSpec spec = testing::dgx_h100(32);
  const NcclTuner tuner(spec.node, spec.fabric, testing::nccl_2_30_7());
  EXPECT_EQ(tuner.choose({CollectiveOp::all_reduce, 8, 1, 1024}).protocol, Protocol::ll);
  const CollectiveChoice ag = tuner.choose({CollectiveOp::all_gather, 8, 1, 1073741824.0});
  EXPECT_EQ(ag.algorithm, Algorithm::ring);
  EXPECT_EQ(ag.protocol, Protocol::simple);
  EXPECT_EQ(tuner.choose({CollectiveOp::all_reduce, 256, 32, 1073741824.0}).algorithm, Algorithm::tree);
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
