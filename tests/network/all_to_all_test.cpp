// AllToAll against hand-worked bounds: each test states the bytes the busiest link must carry and
// the time they take at its rate before running the collective.
//
// DGX H100 (calibration/nodes.toml): 8 GPUs on an NVSwitch at 370.8 GB/s effective per GPU and
// direction, one 400 Gb/s NDR NIC per GPU at 48 GB/s effective, PCIe to the NIC 51.84 GB/s.
#include "network/collective_runner.hpp"
#include "network/internal/all_to_all.hpp"
#include "network/internal/link_occupancy.hpp"
#include "tests/network/in_child.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

namespace commbound::network {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::vector<int> first(int n) {
  std::vector<int> r(n);
  std::iota(r.begin(), r.end(), 0);
  return r;
}

// Runs one call with ring/Simple on a fresh platform of `spec`.
CollectiveResult run_one(const ClusterSpec& spec, const CollectiveCall& call, bool merge = true) {
  auto platform = Platform::create(spec);
  EXPECT_TRUE(platform) << platform.error().message;
  CollectiveRunner runner(**platform, testing::nccl_2_30_7(), merge);
  const CollectiveChoice simple{Algorithm::ring, Protocol::simple};
  const Status ok = runner.check(call, simple);
  EXPECT_TRUE(ok) << ok.error().message;
  CollectiveResult result;
  (*platform)->run([&] { result = runner.run(call, simple, Fidelity::fluid); });
  return result;
}

CollectiveCall all_to_all(int ranks, double size_bytes, AllToAllMethod method = AllToAllMethod::nccl) {
  CollectiveCall call{CollectiveOp::all_to_all, first(ranks), size_bytes};
  call.all_to_all_method = method;
  return call;
}

TEST(AllToAll, NamesAndBusBandwidthFollowNcclTests) {
  EXPECT_STREQ(to_string(CollectiveOp::all_to_all), "alltoall");
  EXPECT_EQ(parse_collective_op("alltoall"), CollectiveOp::all_to_all);
  EXPECT_EQ(parse_collective_op("All_To_All"), CollectiveOp::all_to_all);
  EXPECT_EQ(parse_all_to_all_method("hierarchical"), AllToAllMethod::hierarchical);
  EXPECT_EQ(parse_all_to_all_method("deepep"), std::nullopt);
  // src/alltoall.cu: busbw = algbw x (n-1)/n.
  EXPECT_DOUBLE_EQ(bus_bw_factor(CollectiveOp::all_to_all, 8), 7.0 / 8.0);
  // NCCL's send/recv has no algorithm (the tuner's choice is not consulted): reports say "p2p".
  EXPECT_STREQ(algorithm_label(CollectiveOp::all_to_all, Algorithm::ring), "p2p");
  EXPECT_STREQ(algorithm_label(CollectiveOp::send_recv, Algorithm::ring), "p2p");
  EXPECT_STREQ(algorithm_label(CollectiveOp::all_gather, Algorithm::nvls), "nvls");
}

// One node: each GPU sends 7/8 of its buffer to its 7 peers through its own NVLink to the switch
// (and receives as much), so the flows take 7/8 S / 370.8 GB/s; busbw = algbw x 7/8 = 370.8 GB/s.
TEST(AllToAll, OneNodeIsNvlinkBound) {
  const ClusterSpec spec = testing::dgx_h100(1);
  const double nvlink = spec.node.nvlink.effective_bw_bytes_per_s();
  ASSERT_NEAR(nvlink, 370.8e9, 1e6);
  const double size = kGiB;
  const double expected_bw_s = 7.0 / 8.0 * size / nvlink;
  const CollectiveResult r = run_one(spec, all_to_all(8, size));
  EXPECT_NEAR(r.bandwidth_s, expected_bw_s, 0.01 * expected_bw_s);
  // Latency: base 8.4 us + the NVLink hop's 3.4 us (Simple) + two NVLink link latencies; no proxy.
  const double hop_s = 8.4e-6 + 3.4e-6 + 2 * spec.node.nvlink.latency_s;
  EXPECT_NEAR(r.time_s, expected_bw_s + hop_s, 0.01 * expected_bw_s);
  // The balanced merged run is 56 NVLink flows, one per ordered GPU pair.
  EXPECT_EQ(r.flows, 56);
}

// k nodes: each GPU sends (k-1)/k of its buffer off-node. PXN sends a peer's bytes through the NIC
// of the peer's rail, so a node's 8 x 8(k-1) off-node pairs spread evenly over its 8 NICs: each NIC
// carries 8(k-1) x S/(8k) = (k-1)/k S at 48 GB/s. NVLink carries 7/8 S per GPU at 370.8 GB/s, far
// less time: the call is NIC-bound.
TEST(AllToAll, TwoAndFourNodesAreNicBound) {
  for (int k : {2, 4}) {
    const ClusterSpec spec = testing::dgx_h100(k);
    const double nic = spec.fabric.nic_bw_bytes_per_s();
    ASSERT_DOUBLE_EQ(nic, 48e9);
    const double size = kGiB;
    const double expected_bw_s = (k - 1.0) / k * size / nic;
    ASSERT_GT(expected_bw_s, 7.0 / 8.0 * size / spec.node.nvlink.effective_bw_bytes_per_s());
    const double r = testing::in_child([&] { return run_one(spec, all_to_all(8 * k, size)).bandwidth_s; });
    EXPECT_NEAR(r, expected_bw_s, 0.01 * expected_bw_s) << k << " nodes";
    // The hierarchical method moves the same bytes per NIC (one rail per local index both ways).
    const double h = testing::in_child(
        [&] { return run_one(spec, all_to_all(8 * k, size, AllToAllMethod::hierarchical)).bandwidth_s; });
    EXPECT_NEAR(h, expected_bw_s, 0.01 * expected_bw_s) << k << " nodes, hierarchical";
  }
}

// The NCCL latency on 2 nodes: base 8.4 us + the network hop (Simple 14 us) + its route, and the
// proxy's netOverhead (1 us on Intel hosts, x3 for Simple) for each of a rank's 8 off-node peers.
TEST(AllToAll, NcclLatencyCountsEveryOffNodePeer) {
  const ClusterSpec spec = testing::dgx_h100(2);
  ASSERT_EQ(spec.node.host_cpu, HostCpu::intel);
  const CollectiveResult r = run_one(spec, all_to_all(16, 1024));
  const double without_route_s = 8.4e-6 + 14e-6 + 8 * 3e-6;
  EXPECT_GE(r.latency_s, without_route_s);
  EXPECT_LT(r.latency_s, without_route_s + 5e-6);  // a route's links and switches: a few us at most
}

// Imbalance, one node: every GPU sends b to each peer but 4b to GPU 3. GPU 3's NVLink from the
// switch receives 7 x 4b = 28b; every other link carries at most 6b + 4b = 10b. The flows take as
// long as GPU 3's 28b at 370.8 GB/s, four times the balanced 7b.
TEST(AllToAll, BusiestReceiverSetsTheTime) {
  const ClusterSpec spec = testing::dgx_h100(1);
  const double nvlink = spec.node.nvlink.effective_bw_bytes_per_s();
  const double b = 16.0 * 1024 * 1024;
  auto bytes = std::make_shared<std::vector<double>>(64, b);
  for (int i = 0; i < 8; ++i) {
    (*bytes)[i * 8 + i] = 0;
    if (i != 3) (*bytes)[i * 8 + 3] = 4 * b;
  }
  CollectiveCall call = all_to_all(8, 8 * b);
  call.peer_bytes = bytes;
  const double expected_bw_s = 28 * b / nvlink;
  const CollectiveResult r = run_one(spec, call);
  EXPECT_NEAR(r.bandwidth_s, expected_bw_s, 0.01 * expected_bw_s);
}

// Imbalance the other way: GPU 0 sends 4b to each peer, the others b. GPU 0's NVLink to the switch
// must carry 7 x 4b = 28b; no other link carries more than 4b + 6b = 10b. Max-min first gives GPU
// 0's flows the same share as the rest; once those drain, GPU 0's flows take its whole link, so the
// flows end at 28b / 370.8 GB/s, as the busiest sender's bytes over its link.
TEST(AllToAll, BusiestSenderSetsTheTime) {
  const ClusterSpec spec = testing::dgx_h100(1);
  const double nvlink = spec.node.nvlink.effective_bw_bytes_per_s();
  const double b = 16.0 * 1024 * 1024;
  auto bytes = std::make_shared<std::vector<double>>(64, b);
  for (int j = 0; j < 8; ++j) {
    (*bytes)[j * 8 + j] = 0;
    if (j != 0) (*bytes)[j] = 4 * b;
  }
  CollectiveCall call = all_to_all(8, 8 * b);
  call.peer_bytes = bytes;
  const double expected_bw_s = 28 * b / nvlink;
  const CollectiveResult r = run_one(spec, call);
  EXPECT_NEAR(r.bandwidth_s, expected_bw_s, 0.01 * expected_bw_s);
}

// Hierarchical bytes per link, by hand. Two nodes; only GPU 0 of node 0 sends, X to each of the 8
// GPUs of node 1. NCCL's PXN: peer j's X leaves through NIC j (GPU 0's NVLink carries the 7 X bound
// for the other rails to their GPUs), so each NIC carries X: X / 48 GB/s (7X / 370.8 GB/s on NVLink
// is less). DeepEP's hierarchical: all 8X go by RDMA on GPU 0's own rail to GPU 0 of node 1, which
// forwards 7X over NVLink: NIC 0 carries 8X, 8X / 48 GB/s, eight times longer.
TEST(AllToAll, HierarchicalSendsEachNodePairOverTheSendersRail) {
  const ClusterSpec spec = testing::dgx_h100(2);
  const double nic = spec.fabric.nic_bw_bytes_per_s();
  const double x = 64.0 * 1024 * 1024;
  auto bytes = std::make_shared<std::vector<double>>(256, 0.0);
  for (int j = 8; j < 16; ++j) (*bytes)[j] = x;
  auto call_of = [&](AllToAllMethod m) {
    CollectiveCall call = all_to_all(16, 16 * x, m);
    call.peer_bytes = bytes;
    return call;
  };
  const double nccl_s = testing::in_child([&] { return run_one(spec, call_of(AllToAllMethod::nccl)).bandwidth_s; });
  const double hier_s =
      testing::in_child([&] { return run_one(spec, call_of(AllToAllMethod::hierarchical)).bandwidth_s; });
  EXPECT_NEAR(nccl_s, x / nic, 0.01 * x / nic);
  EXPECT_NEAR(hier_s, 8 * x / nic, 0.01 * 8 * x / nic);
}

// DeepEP sends a token once per destination node. The same call as above, with node_bytes saying
// GPU 0 puts 2X on its NIC for node 1 (tokens that each go to several of node 1's GPUs): NIC 0
// carries 2X (2X / 48 GB/s), then GPU 8 forwards X to each of the 7 others over NVLink
// (7X / 370.8 GB/s: less). Without node_bytes the RDMA leg carried the 8X of the pairs.
TEST(AllToAll, HierarchicalSendsATokenOncePerNode) {
  const ClusterSpec spec = testing::dgx_h100(2);
  const double nic = spec.fabric.nic_bw_bytes_per_s();
  const double x = 64.0 * 1024 * 1024;
  auto bytes = std::make_shared<std::vector<double>>(256, 0.0);
  for (int j = 8; j < 16; ++j) (*bytes)[j] = x;
  CollectiveCall call = all_to_all(16, 16 * x, AllToAllMethod::hierarchical);
  call.peer_bytes = bytes;
  auto per_node = std::make_shared<std::vector<double>>(32, 0.0);  // 16 ranks x 2 nodes
  (*per_node)[1] = 2 * x;                                           // rank 0 -> node 1
  call.node_bytes = per_node;
  {
    auto platform = Platform::create(spec);
    ASSERT_TRUE(platform) << platform.error().message;
    const auto transfers = internal::all_to_all_transfers(**platform, call, true);
    ASSERT_EQ(transfers.size(), 8u);  // the RDMA leg 0 -> 8, then 8 -> 9 .. 15
    EXPECT_EQ(transfers[0].src_rank, 0);
    EXPECT_EQ(transfers[0].dst_rank, 8);
    EXPECT_EQ(transfers[0].bytes, 2 * x);
    for (std::size_t t = 1; t < 8; ++t) {
      EXPECT_EQ(transfers[t].src_rank, 8);
      EXPECT_EQ(transfers[t].bytes, x);
    }
  }
  const double s = testing::in_child([&] { return run_one(spec, call).bandwidth_s; });
  EXPECT_NEAR(s, 2 * x / nic, 0.01 * 2 * x / nic);
  // --explain's busiest links, each alone: GPU 8's NVLink out 7X, GPU 9's in X, NIC 0 sending and
  // GPU 8's NIC receiving 2X (the bytes' term equals the NICs': they bound the call).
  auto load_s = [&](std::size_t k) {  // the k-th busiest link's time, or -2 when there are fewer
    return testing::in_child([&] {
      auto platform = Platform::create(spec);
      CollectiveRunner runner(**platform, testing::nccl_2_30_7());
      runner.set_itemize(true);
      CollectiveResult r;
      (*platform)->run([&] { r = runner.run(call, {Algorithm::ring, Protocol::simple}, Fidelity::fluid); });
      return k < r.loads.size() ? r.loads[k].seconds : -2.0;
    });
  };
  const double nvlink = spec.node.nvlink.effective_bw_bytes_per_s();
  EXPECT_NEAR(load_s(0), 7 * x / nvlink, 1e-9 * 7 * x / nvlink);
  EXPECT_NEAR(load_s(1), x / nvlink, 1e-9 * x / nvlink);
  EXPECT_NEAR(load_s(2), 2 * x / nic, 1e-9 * 2 * x / nic);
  EXPECT_NEAR(load_s(3), 2 * x / nic, 1e-9 * 2 * x / nic);
  EXPECT_EQ(load_s(4), -2.0);  // four: NVLink out, NVLink in, NIC sending, NIC receiving
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform);
  CollectiveRunner runner(**platform, testing::nccl_2_30_7());
  const CollectiveChoice simple{Algorithm::ring, Protocol::simple};
  call.node_bytes = std::make_shared<std::vector<double>>(16, x);  // one column short
  Status bad = runner.check(call, simple);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("need 32"), std::string::npos) << bad.error().message;
  call.node_bytes = per_node;
  call.all_to_all_method = AllToAllMethod::nccl;
  EXPECT_FALSE(runner.check(call, simple));  // NCCL sends per peer: no node_bytes
}

// Merged legs against one flow per pair over its whole PXN route. Balanced on 2 and 4 nodes (NIC
// bound, every pair's share equal: merging is exact) and an uneven matrix on 2 nodes, where merged
// legs may differ from per-pair flows by how max-min re-shares: within 2%.
TEST(AllToAll, MergedFlowsAgreeWithOneFlowPerPair) {
  for (int k : {2, 4}) {
    const ClusterSpec spec = testing::dgx_h100(k);
    const CollectiveCall call = all_to_all(8 * k, 256.0 * 1024 * 1024);
    const double merged = testing::in_child([&] { return run_one(spec, call, true).bandwidth_s; });
    const double unmerged = testing::in_child([&] { return run_one(spec, call, false).bandwidth_s; });
    EXPECT_NEAR(merged, unmerged, 1e-6 * unmerged) << k << " nodes";
  }
  const ClusterSpec spec = testing::dgx_h100(2);
  auto bytes = std::make_shared<std::vector<double>>(256);
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) (*bytes)[i * 16 + j] = i == j ? 0 : 1e6 * (1 + (i * 7 + j * 3) % 5);
  }
  CollectiveCall call = all_to_all(16, 0);
  call.peer_bytes = bytes;
  const double merged = testing::in_child([&] { return run_one(spec, call, true).bandwidth_s; });
  const double unmerged = testing::in_child([&] { return run_one(spec, call, false).bandwidth_s; });
  EXPECT_NEAR(merged, unmerged, 0.02 * unmerged);
}

// 64 ranks on 8 nodes, merged: per node 56 NVLink pair transfers, and per (source node,
// destination GPU on another node) one network transfer, 8 x 56 = 448: 8 x 56 + 448 = 896
// transfers instead of 64 x 63. Balanced, they are two coupled groups (NVLink legs, network legs),
// cut into segment flows from a quarter of the free slots at most: of the pool of
// max(512, 4 x 8 nodes) = 512, at most 128 flows, and at least one a group.
TEST(AllToAll, MergedFlowCountOnEightNodes) {
  const CollectiveCall call = all_to_all(64, 64.0 * 1024 * 1024);
  auto platform = Platform::create(testing::dgx_h100(8));  // one SimGrid engine a process
  ASSERT_TRUE(platform) << platform.error().message;
  EXPECT_EQ(internal::all_to_all_transfers(**platform, call, true).size(), 896u);
  CollectiveRunner runner(**platform, testing::nccl_2_30_7());
  CollectiveResult r;
  (*platform)->run([&] { r = runner.run(call, {Algorithm::ring, Protocol::simple}, Fidelity::fluid); });
  EXPECT_GE(r.flows, 2);
  EXPECT_LE(r.flows, 128);
}

TEST(AllToAll, CheckRefusesABadPeerMatrix) {
  auto platform = Platform::create(testing::dgx_h100(1));
  ASSERT_TRUE(platform);
  CollectiveRunner runner(**platform, testing::nccl_2_30_7());
  const CollectiveChoice simple{Algorithm::ring, Protocol::simple};
  CollectiveCall call = all_to_all(4, 1024);
  call.peer_bytes = std::make_shared<std::vector<double>>(15, 1.0);
  Status s = runner.check(call, simple);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("need 16"), std::string::npos) << s.error().message;
  auto negative = std::make_shared<std::vector<double>>(16, 1.0);
  (*negative)[6] = -1;
  call.peer_bytes = negative;
  s = runner.check(call, simple);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("peer_bytes[1][2]"), std::string::npos) << s.error().message;
  auto nan = std::make_shared<std::vector<double>>(16, std::numeric_limits<double>::quiet_NaN());
  call.peer_bytes = nan;
  EXPECT_FALSE(runner.check(call, simple));
  CollectiveCall gather{CollectiveOp::all_gather, first(4), 1024};
  gather.peer_bytes = std::make_shared<std::vector<double>>(16, 1.0);
  EXPECT_FALSE(runner.check(gather, simple));
  EXPECT_FALSE(runner.check(all_to_all(4, 1024), {Algorithm::tree, Protocol::simple}));
  EXPECT_FALSE(runner.check(all_to_all(4, 1024), {Algorithm::ring, Protocol::ll128}));
}

// The tuner: NCCL's p2p protocol rule (LL up to 16 KiB per peer) and a closed form that matches the
// simulation where the hand bound holds (2 nodes, NIC-bound: (k-1)/k S / 48 GB/s plus latency).
TEST(AllToAll, TunerFollowsNcclsP2pRuleAndTheSimulation) {
  const ClusterSpec spec = testing::dgx_h100(2);
  const NcclTuner tuner(spec.node, spec.fabric, testing::nccl_2_30_7());
  EXPECT_EQ(tuner.choose({CollectiveOp::all_to_all, 16, 2, 16 * 16384.0}).protocol, Protocol::ll);
  EXPECT_EQ(tuner.choose({CollectiveOp::all_to_all, 16, 2, 16 * 16385.0}).protocol, Protocol::simple);
  const double size = kGiB;
  const auto predicted = tuner.predict_s({CollectiveOp::all_to_all, 16, 2, size}, {Algorithm::ring, Protocol::simple});
  ASSERT_TRUE(predicted);
  const double simulated = run_one(spec, all_to_all(16, size)).time_s;
  EXPECT_NEAR(*predicted, simulated, 0.01 * simulated);
  EXPECT_FALSE(tuner.predict_s({CollectiveOp::all_to_all, 16, 2, size}, {Algorithm::tree, Protocol::simple}));
}

// Unsimulated calls (network/internal/link_occupancy.hpp): two identical all-to-alls over 2 nodes,
// one after the other. Alone on their links, neither starts a flow: each moves its segments at
// their coupled rates, which is what SimGrid does simulating them (occupancy disabled), to
// rounding. With a SendRecv over rank 0's NIC (rank 0 -> rank 8, PXN's rail-0 path, which the
// all-to-all's network legs also cross) starting halfway through the second, its unfinished
// segments become flows with what they have left at that instant, and both collectives end as when
// every call is simulated, to rounding. What `what` picks: 0 the first call's time, 1 the
// second's, 2 the SendRecv's, 3 the flows started in all (the SendRecv's included).
double unsimulated_case(bool unsimulated, bool meet, int what) {
  const ClusterSpec spec = testing::dgx_h100(2);
  auto platform = Platform::create(spec, 2);
  EXPECT_TRUE(platform) << platform.error().message;
  CollectiveRunner runner(**platform, testing::nccl_2_30_7());
  const CollectiveChoice simple{Algorithm::ring, Protocol::simple};
  const CollectiveCall call = all_to_all(16, kGiB);
  const CollectiveCall send{CollectiveOp::send_recv, {0, 8}, 256.0 * 1024 * 1024};
  double first_s = 0, second_s = 0, send_s = 0;
  long flows = 0;
  simgrid::s4u::Comm::on_send_cb([&flows](const simgrid::s4u::Comm&) { ++flows; });
  (*platform)->run([&] {
    if (!unsimulated) (*platform)->occupancy().disable();
    first_s = runner.run(call, simple, Fidelity::fluid).time_s;
    simgrid::s4u::ActorPtr sender;
    if (meet) {
      sender = simgrid::s4u::Actor::create("send", (*platform)->gpu(0), [&] {
        simgrid::s4u::this_actor::sleep_for(first_s / 2);
        send_s = runner.run(send, simple, Fidelity::fluid).time_s;
      });
    }
    second_s = runner.run(call, simple, Fidelity::fluid).time_s;
    if (sender) sender->join();
  });
  const double out[] = {first_s, second_s, send_s, static_cast<double>(flows)};
  return out[what];
}

TEST(AllToAll, CallsAloneStartNoFlowAndEndAsSimulated) {
  const double first_s = testing::in_child([] { return unsimulated_case(true, false, 0); });
  EXPECT_NEAR(testing::in_child([] { return unsimulated_case(true, false, 1); }), first_s, 1e-12 * first_s);
  EXPECT_EQ(testing::in_child([] { return unsimulated_case(true, false, 3); }), 0);
  // Simulated, each takes the same time, with flows.
  EXPECT_NEAR(testing::in_child([] { return unsimulated_case(false, false, 0); }), first_s, 1e-12 * first_s);
  EXPECT_NEAR(testing::in_child([] { return unsimulated_case(false, false, 1); }), first_s, 1e-12 * first_s);
  EXPECT_GT(testing::in_child([] { return unsimulated_case(false, false, 3); }), 0);
}

TEST(AllToAll, AnUnsimulatedCallMetMidwayEndsAsIfSimulated) {
  const double alone_s = testing::in_child([] { return unsimulated_case(true, false, 1); });
  const double simulated_s = testing::in_child([] { return unsimulated_case(false, true, 1); });
  const double met_s = testing::in_child([] { return unsimulated_case(true, true, 1); });
  EXPECT_GT(simulated_s, alone_s * 1.01);  // the SendRecv takes from the all-to-all's NIC
  EXPECT_NEAR(met_s, simulated_s, 1e-12 * simulated_s);
  const double send_simulated_s = testing::in_child([] { return unsimulated_case(false, true, 2); });
  const double send_met_s = testing::in_child([] { return unsimulated_case(true, true, 2); });
  EXPECT_GT(send_simulated_s, 0);
  EXPECT_NEAR(send_met_s, send_simulated_s, 1e-12 * send_simulated_s);
  // The met call turned into flows besides the SendRecv's.
  EXPECT_GT(testing::in_child([] { return unsimulated_case(true, true, 3); }), 1);
}

}  // namespace
}  // namespace commbound::network
