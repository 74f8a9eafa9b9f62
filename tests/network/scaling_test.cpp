// The mechanisms the emulator exists to show, as tests:
//  - ring AllGather loses bus bandwidth as nodes grow (its latency grows with every rank: n-1
//    hops), while tree AllReduce (2 log2(nodes) network hops) holds up;
//  - ECMP hashing on a leaf-spine fabric collides flows on up-links that adaptive routing would
//    spread, so the same line rate delivers less.
#include "network/nccl_tests.hpp"
#include "tests/network/in_child.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace commbound::network {
namespace {

constexpr double kGiB = 1073741824.0;

std::vector<SweepRow> sweep(const ClusterSpec& spec, const std::vector<SweepPoint>& points) {
  auto platform = Platform::create(spec);
  EXPECT_TRUE(platform) << platform.error().message;
  auto rows = run_points(**platform, testing::nccl_2_30_7(), points, Fidelity::fluid, {});
  EXPECT_TRUE(rows) << rows.error().message;
  for (const auto& r : *rows) {
    std::printf("%-10s %4s %4d nodes  %8.1f GB/s busbw\n", to_string(r.op), to_string(r.result.choice.algorithm),
                r.nodes, r.bus_bw_bytes_per_s / 1e9);
  }
  return *rows;
}

// Bus bandwidth of one point, simulated in a child process (SimGrid allows one platform per
// process, and a comparison needs two).
double busbw_in_child(const ClusterSpec& spec, const SweepPoint& point) {
  return testing::in_child([&] {
    auto platform = Platform::create(spec);
    if (!platform) return -1.0;
    auto rows = run_points(**platform, testing::nccl_2_30_7(), {point}, Fidelity::fluid, {});
    return rows ? (*rows)[0].bus_bw_bytes_per_s : -1.0;
  });
}

// 1 GiB on 1..512 DGX H100 nodes. AllGather (ring, NCCL's choice) at 512 nodes: the ring's latency
// alone is 4095 hops (LL128: 3584 NVLink hops of 1.9 us, 511 network hops of 4 us), about 9 ms
// against about 3 ms of transfer, so its busbw must fall below half of the one-node value. Tree
// AllReduce crosses 2 * 9 network hops at 512 nodes: it must keep at least 90% of its 8-node busbw.
TEST(Scaling, AllGatherFallsWhileTreeAllReduceHoldsUp) {
  std::vector<SweepPoint> points;
  const std::vector<int> nodes = {1, 8, 64, 512};
  for (int n : nodes) points.push_back({CollectiveOp::all_gather, n, kGiB, std::nullopt, std::nullopt});
  for (int n : {8, 64, 512}) points.push_back({CollectiveOp::all_reduce, n, kGiB, Algorithm::tree, std::nullopt});
  const auto rows = sweep(testing::dgx_h100(512), points);
  ASSERT_EQ(rows.size(), 7u);
  for (std::size_t i = 1; i < nodes.size(); ++i) EXPECT_LT(rows[i].bus_bw_bytes_per_s, rows[i - 1].bus_bw_bytes_per_s);
  EXPECT_LT(rows[3].bus_bw_bytes_per_s, 0.5 * rows[0].bus_bw_bytes_per_s);
  EXPECT_GT(rows[6].bus_bw_bytes_per_s, 0.9 * rows[4].bus_bw_bytes_per_s);
  EXPECT_GT(rows[6].bus_bw_bytes_per_s, 2 * rows[3].bus_bw_bytes_per_s);
}

// Same RoCE 400G links, same 2:1 oversubscribed leaf-spine (16-port leaves: one node per leaf, so
// every ring hop between nodes crosses the spine). Adaptive spreading keeps every up-link busy;
// ECMP hashes each NIC pair onto one of 5 up-links, and collisions cut AllGather busbw by more
// than 20%.
TEST(Fabric, EcmpCollisionsCostBandwidthAdaptiveRoutingKeeps) {
  ClusterSpec spec = testing::dgx_h100(8, Topology::fat_tree, Routing::ecmp);
  spec.fabric.switch_radix = 16;
  spec.fabric.oversubscription = 2;
  const sim::Presets presets = testing::shipped_presets();
  spec.fabric.link = *presets.link("roce-400g");
  spec.fabric.switch_latency_s = spec.fabric.link.latency_s;
  const SweepPoint point{CollectiveOp::all_gather, 8, kGiB, Algorithm::ring, Protocol::simple};
  const double ecmp = busbw_in_child(spec, point);
  spec.fabric.routing = Routing::adaptive;
  const double adaptive = busbw_in_child(spec, point);
  std::printf("RoCE 400G, 2:1 leaf-spine, 8 nodes, AllGather 1 GiB busbw: ECMP %.1f GB/s, adaptive %.1f GB/s\n",
              ecmp / 1e9, adaptive / 1e9);
  ASSERT_GT(ecmp, 0);
  ASSERT_GT(adaptive, 0);
  EXPECT_LT(ecmp, 0.8 * adaptive);
}

}  // namespace
}  // namespace commbound::network
