// NCCL's tuner per release: 2.20.5 (the NCCL of PyTorch 2.3.1 / CUDA 12.1) beside 2.30.7, each
// expected value worked out by hand from that tag's src/graph/tuning.cc (calibration/nccl/
// nccl-<release>.toml, [rules]; docs/reference/nccl-pipeline.md section 6), on DGX H100 nodes with
// an Intel host (netOverhead 1 us, x3 for Simple).
#include "network/nccl_tuner.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

namespace commbound::network {
namespace {

constexpr double kUs = 1e-6;

// NCCL's predicted algBw of a call: size / (predicted time - predicted latency).
double alg_bw(const NcclTuner& tuner, const CallShape& shape, const CollectiveChoice& c) {
  const auto t = tuner.predict_s(shape, c);
  EXPECT_TRUE(t) << tuner.unsupported(shape, c);
  return t ? shape.size_bytes / (*t - tuner.predict_latency_s(shape, c)) : 0;
}

struct Tuners {
  ClusterSpec dgx = testing::dgx_h100(64);
  NcclTuner old_release{dgx.node, dgx.fabric, testing::nccl_release("2.20.5")};
  NcclTuner new_release{dgx.node, dgx.fabric, testing::nccl_2_30_7()};
};

// PAT came in 2.23: with one GPU per node 2.30.7 may pick it, 2.20.5 cannot.
TEST(NcclRelease, PatExistsFrom2_23Only) {
  const Tuners t;
  const CallShape one_per_node{CollectiveOp::reduce_scatter, 64, 64, 16777216.0};
  EXPECT_EQ(t.new_release.choose(one_per_node).algorithm, Algorithm::pat);
  EXPECT_EQ(t.old_release.unsupported(one_per_node, {Algorithm::pat, Protocol::simple}),
            "NCCL 2.20.5 has no PAT (it came in 2.23)");
  EXPECT_EQ(t.old_release.choose(one_per_node).algorithm, Algorithm::ring);
}

// Ring AllGather over 48 nodes of one GPU each, LL128: 47 steps, all of them network hops. 2.30.7
// prices them at Tree's network hwLat (8.5 us, "with ppn=1 latencies are fully exposed"), 2.20.5 at
// Ring's (4.0 us): 14 + 47 x 8.5 = 413.5 us against 14 + 47 x 4.0 = 202 us. Its LL128 bandwidth is
// 0.92 of the bus in 2.30.7 and 0.7 in 2.20.5 (ppn < 2).
TEST(NcclRelease, OneGpuPerNodeRingLatencyAndLl128Share) {
  const Tuners t;
  const CallShape shape{CollectiveOp::all_gather, 48, 48, 268435456.0};
  const CollectiveChoice ll128{Algorithm::ring, Protocol::ll128};
  EXPECT_NEAR(t.new_release.predict_latency_s(shape, ll128), 413.5 * kUs, 1e-9);
  EXPECT_NEAR(t.old_release.predict_latency_s(shape, ll128), 202.0 * kUs, 1e-9);
  EXPECT_NEAR(alg_bw(t.old_release, shape, ll128) / alg_bw(t.new_release, shape, ll128), 0.7 / 0.92, 1e-6);
}

// Ring AllReduce, Simple, 2 nodes of 8: 30 steps, of which 2 (nodes - 1) = 2 cross the network in
// 2.30.7 and 2 x nodes = 4 in 2.20.5 (nInterSteps), the rest at max(NVLink 3.4, netOverhead 3) us,
// then NCCL's x1.4 for a multi-node Ring/Simple AllReduce:
// 2.30.7 (8.4 + 28 x 3.4 + 2 x 14) x 1.4 = 184.24 us; 2.20.5 (8.4 + 26 x 3.4 + 4 x 14) x 1.4 = 213.92 us.
TEST(NcclRelease, RingAllReduceNetworkSteps) {
  const Tuners t;
  const CallShape shape{CollectiveOp::all_reduce, 16, 2, 1073741824.0};
  const CollectiveChoice simple{Algorithm::ring, Protocol::simple};
  EXPECT_NEAR(t.new_release.predict_latency_s(shape, simple), 184.24 * kUs, 1e-9);
  EXPECT_NEAR(t.old_release.predict_latency_s(shape, simple), 213.92 * kUs, 1e-9);
}

// Tree AllReduce, Simple, 2 nodes of 8: base + 2 x (7 NVLink hops + log2(2) network hops). 2.20.5
// prices every Tree/Simple hop at 28 us with no base: 2 x 8 x 28 = 448 us; 2.30.7 8.4 + 2 x (7 x 4
// + 14) = 92.4 us.
TEST(NcclRelease, TreeSimpleHops) {
  const Tuners t;
  const CallShape shape{CollectiveOp::all_reduce, 16, 2, 1073741824.0};
  const CollectiveChoice tree{Algorithm::tree, Protocol::simple};
  EXPECT_NEAR(t.old_release.predict_latency_s(shape, tree), 448.0 * kUs, 1e-9);
  EXPECT_NEAR(t.new_release.predict_latency_s(shape, tree), 92.4 * kUs, 1e-9);
}

// NVLS on one node of 8 H100s. Both releases search the same graph, 8 channels of 40 GB/s (9 x 40 =
// 360 <= 370.8 GB/s of NVLink; bwInter raised to 60). 2.20.5 prices nChannels x min(bwIntra,
// bwInter) x 5/6 as algBw: 8 x 40 x 5/6 = 266.7 GB/s.
TEST(NcclRelease, NvlsBandwidthIn2_20_5) {
  const Tuners t;
  const CallShape shape{CollectiveOp::all_reduce, 8, 1, 8589934592.0};
  const CollectiveChoice nvls{Algorithm::nvls, Protocol::simple};
  EXPECT_NEAR(alg_bw(t.old_release, shape, nvls), 8 * 40e9 * 5.0 / 6.0, 1e6);
}

}  // namespace
}  // namespace commbound::network
