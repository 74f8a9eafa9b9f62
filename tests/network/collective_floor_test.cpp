// CollectiveFloor: hand-worked floors on DGX H100 nodes, and every algorithm and protocol the
// runner can choose simulated at or above its floor (label unit).
#include "network/collective_floor.hpp"
#include "network/collective_runner.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace commbound::network {
namespace {

std::vector<int> range(int from, int count, int stride = 1) {
  std::vector<int> r;
  for (int i = 0; i < count; ++i) r.push_back(from + i * stride);
  return r;
}

// Two DGX H100: a GPU's links are its NVLink (370.8 GB/s) and, toward another node, its PCIe path
// (51.84 GB/s); a node's are its 8 NICs (8 x 48 GB/s = 384 GB/s).
TEST(CollectiveFloor, HandWorkedOnTwoDgxNodes) {
  const ClusterSpec spec = testing::dgx_h100(2);
  const double nvlink = spec.node.nvlink.effective_bw_bytes_per_s();
  const double pcie = spec.node.pcie.effective_bw_bytes_per_s();
  const double nics = spec.node.nics * spec.fabric.nic_bw_bytes_per_s();
  ASSERT_NEAR(nvlink, 370.8e9, 1e6);
  ASSERT_NEAR(pcie, 51.84e9, 1e6);
  ASSERT_NEAR(nics, 384e9, 1e6);
  const double s = 1 << 30;

  // Tensor parallel, 8 GPUs of node 0: a member receives (AllGather) or sends (ReduceScatter) the
  // 7 shards not its own, S x 7/8, over its NVLink alone; AllReduce sends all S.
  const CollectiveFloor tp(spec, range(0, 8));
  EXPECT_DOUBLE_EQ(tp.seconds(CollectiveOp::all_gather, s), s * 7 / 8 / nvlink);
  EXPECT_DOUBLE_EQ(tp.seconds(CollectiveOp::reduce_scatter, s), s * 7 / 8 / nvlink);
  EXPECT_DOUBLE_EQ(tp.seconds(CollectiveOp::all_reduce, s), s / nvlink);

  // Data parallel, one rank per node (ranks 0 and 8): half of S crosses each node's NICs (the GPU
  // could take 370.8 + 51.84 GB/s, the node only 384); AllReduce sends all of S out of the node.
  const CollectiveFloor dp(spec, std::vector<int>{0, 8});
  EXPECT_DOUBLE_EQ(dp.seconds(CollectiveOp::all_gather, s), s / 2 / nics);
  EXPECT_DOUBLE_EQ(dp.seconds(CollectiveOp::all_reduce, s), s / nics);
  EXPECT_DOUBLE_EQ(dp.seconds(CollectiveOp::send_recv, s), s / nics);

  // All 16 GPUs: a member still moves 15/16 of S through its own links (370.8 + 51.84 GB/s), a
  // node only the half held on the other node: the GPU is the tighter cut.
  const CollectiveFloor all(spec, range(0, 16));
  EXPECT_DOUBLE_EQ(all.seconds(CollectiveOp::reduce_scatter, s), s * 15 / 16 / (nvlink + pcie));

  // AllToAll over the 16: a member sends S/16 to each of 15 peers (15/16 S through its links);
  // each node's 8 members send S/16 to each of the 8 on the other node, 4 S through 384 GB/s.
  EXPECT_DOUBLE_EQ(all.seconds(CollectiveOp::all_to_all, s), std::max(s * 15 / 16 / (nvlink + pcie), 4 * s / nics));
  // alltoallv: only rank 0 sends, S to rank 8: the node's NICs, 1/384 GB/s.
  std::vector<double> peer(16 * 16, 0.0);
  peer[8] = s;
  EXPECT_DOUBLE_EQ(all.seconds(CollectiveOp::all_to_all, s, &peer), s / nics);

  // One rank: nothing moves.
  EXPECT_EQ(CollectiveFloor(spec, std::vector<int>{3}).seconds(CollectiveOp::all_reduce, s), 0.0);
}

// Every algorithm and protocol the runner accepts, for each collective, over groups inside a node,
// across two nodes and one rank per node, at 64 MiB and 1 GiB: no simulated time below the floor.
// And the floor is tight where one cut binds: a ring AllGather of 1 GiB over the 8 GPUs of a node
// moves 7/8 of it through every NVLink, so it runs within 5% of its floor.
// What a group moves through one node's NICs, for groups that share them: the data-parallel pair
// {0, 8} sends S/2 out of node 1 in a ReduceScatter (the shard held on node 0), takes S/2 in on an
// AllGather, sends S out on an AllReduce; the 12 ranks 0-3 and 8-15 (4 on node 0) take 8/12 S
// into node 0 on an AllGather. Nothing for a node without members, a group inside one node, or a
// SendRecv and AllToAll (left out).
TEST(CollectiveFloor, WhatCrossesOneNodesNics) {
  const ClusterSpec spec = testing::dgx_h100(3);
  const double s = 1 << 30;
  const CollectiveFloor dp(spec, std::vector<int>{0, 8});
  EXPECT_DOUBLE_EQ(dp.node_crossing(CollectiveOp::reduce_scatter, s, 1).out_bytes, s / 2);
  EXPECT_DOUBLE_EQ(dp.node_crossing(CollectiveOp::reduce_scatter, s, 1).in_bytes, 0);
  EXPECT_DOUBLE_EQ(dp.node_crossing(CollectiveOp::all_gather, s, 0).in_bytes, s / 2);
  EXPECT_DOUBLE_EQ(dp.node_crossing(CollectiveOp::all_reduce, s, 0).out_bytes, s);
  EXPECT_DOUBLE_EQ(dp.node_crossing(CollectiveOp::all_reduce, s, 2).out_bytes, 0);
  EXPECT_DOUBLE_EQ(dp.node_crossing(CollectiveOp::send_recv, s, 0).out_bytes, 0);
  std::vector<int> twelve = range(0, 4);
  for (int r : range(8, 8)) twelve.push_back(r);
  EXPECT_DOUBLE_EQ(CollectiveFloor(spec, twelve).node_crossing(CollectiveOp::all_gather, s, 0).in_bytes, s * 8 / 12);
  EXPECT_DOUBLE_EQ(CollectiveFloor(spec, range(0, 8)).node_crossing(CollectiveOp::all_gather, s, 0).in_bytes, 0);
  EXPECT_DOUBLE_EQ(dp.node_bytes_per_s(), spec.node.nics * spec.fabric.nic_bw_bytes_per_s());
}

TEST(CollectiveFloor, NoAlgorithmRunsBelowIt) {
  const ClusterSpec spec = testing::dgx_h100(2);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const NcclConstants nccl = testing::nccl_2_30_7();
  CollectiveRunner runner(**platform, nccl);
  struct Case {
    CollectiveCall call;
    CollectiveChoice choice;
    double floor_s = 0;
    double simulated_s = 0;
  };
  std::vector<Case> cases;
  for (const std::vector<int>& group : {range(0, 8), range(0, 16), std::vector<int>{0, 8}, range(0, 4)}) {
    for (CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter, CollectiveOp::all_reduce,
                            CollectiveOp::all_to_all}) {
      for (double size : {67108864.0, 1073741824.0}) {
        const CollectiveCall call{op, group, size};
        const double floor_s = CollectiveFloor(spec, group).seconds(op, size);
        for (Algorithm a : kAllAlgorithms) {
          for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
            if (runner.check(call, {a, p})) cases.push_back({call, {a, p}, floor_s});
          }
        }
      }
    }
  }
  for (const std::vector<int>& pair : {std::vector<int>{0, 1}, std::vector<int>{0, 8}}) {
    const CollectiveCall call{CollectiveOp::send_recv, pair, 1073741824.0};
    cases.push_back({call, {Algorithm::ring, Protocol::simple}, CollectiveFloor(spec, pair).seconds(call.op, call.size_bytes)});
  }
  ASSERT_GT(cases.size(), 40u);
  (*platform)->run([&] {
    for (Case& c : cases) c.simulated_s = runner.run(c.call, c.choice, Fidelity::fluid).time_s;
  });
  bool tight_case_ran = false;
  for (const Case& c : cases) {
    EXPECT_GT(c.floor_s, 0);
    EXPECT_GE(c.simulated_s, c.floor_s) << to_string(c.call.op) << " " << to_string(c.choice.algorithm) << "/"
                                        << to_string(c.choice.protocol) << " over " << c.call.ranks.size()
                                        << " ranks from " << c.call.ranks.front() << ", " << c.call.size_bytes << " B";
    if (c.call.op == CollectiveOp::all_gather && c.call.ranks.size() == 8 && c.call.size_bytes > 1e9 &&
        c.choice.algorithm == Algorithm::ring && c.choice.protocol == Protocol::simple) {
      EXPECT_LT(c.simulated_s, 1.05 * c.floor_s);
      tight_case_ran = true;
    }
  }
  EXPECT_TRUE(tight_case_ran);
}

}  // namespace
}  // namespace commbound::network
