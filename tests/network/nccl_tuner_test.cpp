// NcclTuner inside one NVSwitch node, on groups of 2 to 8 GPUs (a tensor-parallel group is its own
// communicator of those GPUs). The expected values are worked out from NCCL's topology search
// (src/graph/search.cc) and tuning.cc on an H100's NVLink (18 links x 20.6 GB/s = 370.8 GB/s, the
// dgx-h100 preset's effective rate), and they are what NCCL 2.29.2 printed in its own tuning table
// on such a node (github.com/waynehacking8/nccl-collectives-bench results/scaling_attributed/
// g{2,4,6}_auto.log, NCCL_DEBUG_SUBSYS=TUNING; copied beside calibration/reference/in-node/).
#include "network/collective_runner.hpp"
#include "network/nccl_tests.hpp"
#include "network/nccl_tuner.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace commbound::network {
namespace {

constexpr double kGB = 1e9;

// NCCL's predicted algBw of a call (bytes/s): size / (predicted time - predicted latency).
double predicted_alg_bw(const NcclTuner& tuner, const CallShape& shape, const CollectiveChoice& c) {
  const auto t = tuner.predict_s(shape, c);
  EXPECT_TRUE(t) << tuner.unsupported(shape, c);
  return t ? shape.size_bytes / (*t - tuner.predict_latency_s(shape, c)) : 0;
}

// The ring graph on an H100 NVSwitch node: 6 rings at the fastest sm90 speed, 60 GB/s, fit in
// 370.8 GB/s (7 would need 420); 50 x 7 = 350 and 40 x 9 = 360 reserve no more; 30 x 12 = 360 no
// more either; 24 is below 0.49 x 60. Doubled at half the speed: 12 channels of 30 GB/s, 360 in all.
// The NVLS graph holds one channel per GPU, each GPU's link carrying (channels + 1) x the speed:
// 2 and 4 GPUs at 60 GB/s (3 x 60, 5 x 60 <= 370.8), 6 at 50 (7 x 60 = 420 > 370.8; 7 x 50 = 350),
// 8 at 40 (9 x 50 = 450; 9 x 40 = 360); bwInter is raised to 60, the fastest speed, as it stays
// below twice bwIntra. On an A100 (12 x 20 GB/s = 240) 6 rings of 40 GB/s fill the NVLink: doubled, 12 x 20.
TEST(NcclTuner, SearchedGraphsInsideANode) {
  const ClusterSpec h100 = testing::dgx_h100(1);
  const NcclTuner tuner(h100.node, h100.fabric, testing::nccl_2_30_7());
  const NcclTuner::SearchedGraph ring = tuner.ring_graph();
  EXPECT_EQ(ring.channels, 12);
  EXPECT_DOUBLE_EQ(ring.intra_bytes_per_s, 30 * kGB);
  struct Expected {
    int gpus, channels;
    double intra_GBps, inter_GBps;
  };
  for (const Expected& e : std::vector<Expected>{{2, 2, 60, 60}, {4, 4, 60, 60}, {6, 6, 50, 60}, {8, 8, 40, 60}}) {
    const NcclTuner::SearchedGraph g = tuner.nvls_graph(e.gpus);
    EXPECT_EQ(g.channels, e.channels) << e.gpus << " GPUs";
    EXPECT_DOUBLE_EQ(g.intra_bytes_per_s, e.intra_GBps * kGB) << e.gpus << " GPUs";
    EXPECT_DOUBLE_EQ(g.inter_bytes_per_s, e.inter_GBps * kGB) << e.gpus << " GPUs";
  }
  const ClusterSpec a100 = testing::preset_cluster("dgx-a100", 1);
  const NcclTuner ampere(a100.node, a100.fabric, testing::nccl_2_30_7());
  EXPECT_EQ(ampere.ring_graph().channels, 12);
  EXPECT_DOUBLE_EQ(ampere.ring_graph().intra_bytes_per_s, 20 * kGB);
}

// NCCL's busBw for those graphs (tuning.cc), as algBw = busBw x n / nsteps:
//   Ring Simple 360, LL min(llMaxBw 141, 360 / 2) = 141, LL128 min(0.92 x 360, 12 x 36.7) = 331.2;
//   NVLS AllReduce per channel min(bwIntra x 0.85 x (nCh - 1)/nCh x 2, bwInter) x nCh:
//     2 GPUs min(60 x 0.85 x 1/2 x 2 = 51, 60) x 2 = 102;  4 GPUs min(76.5, 60) x 4 = 240;
//     6 GPUs min(70.8, 60) x 6 = 360.
// Latencies: Ring base 6.6 / 14 / 8.4 us + 2(n - 1) hops of 0.6 / 1.9 / 3.4 us; NVLS 25 us.
// NCCL 2.29.2 printed (latency us / algBw GB/s) for AllReduce:
//   2 GPUs: Ring 7.8/141.0, 17.8/331.2, 15.2/360.0; NVLS 25.0/102.0
//   4 GPUs: Ring 10.2/94.0, 25.4/220.8, 28.8/240.0; NVLS 25.0/160.0
//   6 GPUs: Ring 12.6/84.6, 33.0/198.7, 42.4/216.0; NVLS 25.0/216.0
// and for AllGather on 2 GPUs: Ring 7.2/282.0, 15.9/662.4, 11.8/720.0.
TEST(NcclTuner, InNodeTableIsNcclsPrintedTable) {
  const ClusterSpec spec = testing::dgx_h100(1);
  const NcclTuner tuner(spec.node, spec.fabric, testing::nccl_2_30_7());
  struct Entry {
    CollectiveOp op;
    int gpus;
    CollectiveChoice choice;
    double latency_us, alg_bw_GBps;
  };
  const CollectiveChoice ll{Algorithm::ring, Protocol::ll}, ll128{Algorithm::ring, Protocol::ll128},
      simple{Algorithm::ring, Protocol::simple}, nvls{Algorithm::nvls, Protocol::simple};
  const std::vector<Entry> table = {
      {CollectiveOp::all_reduce, 2, ll, 7.8, 141.0},     {CollectiveOp::all_reduce, 2, ll128, 17.8, 331.2},
      {CollectiveOp::all_reduce, 2, simple, 15.2, 360.0}, {CollectiveOp::all_reduce, 2, nvls, 25.0, 102.0},
      {CollectiveOp::all_reduce, 4, ll, 10.2, 94.0},     {CollectiveOp::all_reduce, 4, ll128, 25.4, 220.8},
      {CollectiveOp::all_reduce, 4, simple, 28.8, 240.0}, {CollectiveOp::all_reduce, 4, nvls, 25.0, 160.0},
      {CollectiveOp::all_reduce, 6, ll, 12.6, 84.6},     {CollectiveOp::all_reduce, 6, ll128, 33.0, 198.7},
      {CollectiveOp::all_reduce, 6, simple, 42.4, 216.0}, {CollectiveOp::all_reduce, 6, nvls, 25.0, 216.0},
      {CollectiveOp::all_gather, 2, ll, 7.2, 282.0},     {CollectiveOp::all_gather, 2, ll128, 15.9, 662.4},
      {CollectiveOp::all_gather, 2, simple, 11.8, 720.0},
  };
  for (const Entry& e : table) {
    const CallShape shape{e.op, e.gpus, 1, 1e9};
    const std::string what = std::string(to_string(e.op)) + " " + to_string(e.choice.algorithm) + "/" +
                             to_string(e.choice.protocol) + " on " + std::to_string(e.gpus) + " GPUs";
    EXPECT_NEAR(tuner.predict_latency_s(shape, e.choice) * 1e6, e.latency_us, 0.05) << what;
    EXPECT_NEAR(predicted_alg_bw(tuner, shape, e.choice) / kGB, e.alg_bw_GBps, 0.05) << what;
  }
}

// So NCCL runs a large AllReduce as Ring on 2 and 4 GPUs of the node and as NVLS on 6 and 8, as the
// logs show at every size from 256 MiB to 8 GiB (Ring/Simple on 2 and 4 GPUs, NVLS on 6). On 6 GPUs
// NVLS and Ring Simple predict the same 216 GB/s and NVLS has the lower latency (25 us vs 42.4).
TEST(NcclTuner, RunsRingBelowSixGpusAndNvlsFromSixInAnH100Node) {
  const ClusterSpec spec = testing::dgx_h100(1);
  const NcclTuner tuner(spec.node, spec.fabric, testing::nccl_2_30_7());
  for (double size : {268435456.0, 1073741824.0, 8589934592.0}) {
    for (int gpus : {2, 4}) {
      const CollectiveChoice c = tuner.choose({CollectiveOp::all_reduce, gpus, 1, size});
      EXPECT_EQ(c.algorithm, Algorithm::ring) << gpus << " GPUs, " << size << " bytes";
      EXPECT_EQ(c.protocol, Protocol::simple) << gpus << " GPUs, " << size << " bytes";
    }
    for (int gpus : {6, 8}) {
      EXPECT_EQ(tuner.choose({CollectiveOp::all_reduce, gpus, 1, size}).algorithm, Algorithm::nvls) << gpus << " GPUs";
    }
  }
  // The tensor-parallel all-reduce of a Llama-2 7B layer at tp 2 (micro-batch 2 x 4096 tokens x
  // 4096 x 2 bytes = 64 MiB): Ring, not NVLS.
  EXPECT_EQ(tuner.choose({CollectiveOp::all_reduce, 2, 1, 67108864.0}).algorithm, Algorithm::ring);
}

// Across nodes NCCL's ring bandwidth is the NICs the communicator reaches (bwInter x channels):
// a GPU uses another GPU's NIC only by PXN through a GPU of its own communicator, so with all 8
// GPUs of a DGX H100 node the ring has 8 NICs, with one GPU per node (a data-parallel group under
// tp 8) one, and with 2 GPUs two: Ring/Simple algBw in the ratio 8 : 1 : 2 at equal rank counts
// (16 ranks: 2 nodes of 8 against 16 nodes of 1 need the same regime, so 24 nodes of 8, 1 and 2 GPUs
// are compared at 24, 192 and 48 ranks through busBw = algBw x (n - 1) / n). One NIC is 50 GB/s x
// 0.96 = 48 GB/s: a 1-GPU-per-node ring's busBw (the 10-node H100 log nccl_N10_G1 measures 46-47).
// Then PAT, NCCL's one-GPU-per-node algorithm at 0.75 of the ring's busBw with a shorter latency
// (log2(nodes) x netLat / 3.5 + 2.8 us a rank, tuning.cc), wins only while that latency saving
// outweighs its slower bytes: at 48 nodes it runs 32 MiB, Ring runs 256 MiB (16 MiB / 48 GB/s x
// (1/0.75 - 1) = 0.12 ms lost against 0.5 ms of latency saved at 32 MiB; 1.9 ms lost at 256 MiB).
TEST(NcclTuner, RingAcrossNodesRunsAtTheNicsItsGpusReach) {
  const ClusterSpec spec = testing::dgx_h100(48);
  const NcclTuner tuner(spec.node, spec.fabric, testing::nccl_2_30_7());
  const CollectiveChoice simple{Algorithm::ring, Protocol::simple};
  auto bus_bw = [&](int gpus_per_node) {
    const int n = 24 * gpus_per_node;
    return predicted_alg_bw(tuner, {CollectiveOp::all_gather, n, 24, 1e9}, simple) * (n - 1) / n;
  };
  EXPECT_NEAR(bus_bw(1) / kGB, 48.0, 1e-9);
  EXPECT_NEAR(bus_bw(2) / bus_bw(1), 2.0, 1e-9);
  EXPECT_NEAR(bus_bw(8) / bus_bw(1), 8.0, 1e-9);
  EXPECT_EQ(tuner.choose({CollectiveOp::all_gather, 48, 48, 32.0 * (1 << 20)}).algorithm, Algorithm::pat);
  EXPECT_EQ(tuner.choose({CollectiveOp::all_gather, 48, 48, 256.0 * (1 << 20)}).algorithm, Algorithm::ring);
  EXPECT_EQ(tuner.choose({CollectiveOp::reduce_scatter, 48, 48, 256.0 * (1 << 20)}).algorithm, Algorithm::ring);
}

// A 2-GPU AllReduce in a DGX H100 node as NCCL runs it (Ring/Simple, ranks 0 and 1 of the node, a
// communicator of its own): each GPU sends S/2 in each of the 2 steps through its own NVLink to the
// switch at 370.8 GB/s, so time = 8.4 us + 2 x 3.4 us + S / 370.8 GB/s and busbw = S / time tends to
// the NVLink rate (the measured 347 GB/s at 8 GiB is 94% of it). Forced to NVLS (NCCL_ALGO=NVLS)
// each GPU's link carries S (n + 1)/n = 1.5 S at 0.85 x 370.8 = 315.2 GB/s: busbw = 2/3 of it,
// 210 GB/s, where NCCL 2.29.2 measured 207 (g2_NVLS.log), + 25 us.
TEST(CollectiveRunner, TwoGpusOfAnNvswitchNodeRunRingAtTheNvlinkRate) {
  const ClusterSpec spec = testing::dgx_h100(1);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const NcclConstants nccl = testing::nccl_2_30_7();
  const double size = 1073741824.0;
  const double nvlink = spec.node.nvlink.effective_bw_bytes_per_s();
  ASSERT_NEAR(nvlink, 370.8e9, 1e6);
  std::vector<network::SweepPoint> points = {
      {CollectiveOp::all_reduce, 1, size, std::nullopt, std::nullopt, 2},
      {CollectiveOp::all_reduce, 1, size, Algorithm::nvls, std::nullopt, 2},
  };
  auto rows = run_points(**platform, nccl, points, Fidelity::fluid, {});
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  const SweepRow& ring = (*rows)[0];
  EXPECT_EQ(ring.ranks, 2);
  EXPECT_EQ(ring.result.choice.algorithm, Algorithm::ring);
  EXPECT_EQ(ring.result.choice.protocol, Protocol::simple);
  const double ring_s = 8.4e-6 + 2 * 3.4e-6 + size / nvlink;
  EXPECT_NEAR(ring.result.time_s, ring_s, 0.01 * ring_s);
  EXPECT_NEAR(ring.bus_bw_bytes_per_s, size / ring_s, 0.01 * size / ring_s);
  const SweepRow& forced = (*rows)[1];
  EXPECT_EQ(forced.result.choice.algorithm, Algorithm::nvls);
  const double nvls_s = 25e-6 + size * 1.5 / (0.85 * nvlink);
  EXPECT_NEAR(forced.result.time_s, nvls_s, 0.01 * nvls_s);
  EXPECT_NEAR(forced.bus_bw_bytes_per_s / 1e9, 2.0 / 3.0 * 0.85 * 370.8, 2.0);
}

// K of the 8 GPUs of each of 4 DGX H100 nodes move an AllGather through K NICs, the ones their own
// GPUs own (rail k to GPU k): channels go round the rails of the GPUs present, never a rail whose
// GPU is not in the communicator. A ring's busbw is then K x one NIC's 48 GB/s (50 GB/s x 0.96) at
// a size where latency is negligible (8 GiB: at most 15 ring steps of tens of us against
// 0.05-0.13 s of bytes), so 1, 2 and 4 GPUs a node give busbw in the ratio 1 : 2 : 4, as the 10-node H100
// logs with 1, 2 and 4 GPUs a node measure (46-48, 97-98 and 193-195 GB/s from 1 GiB on). With one
// GPU a node there is no NVLS at all: NCCL sets it up only with 2 or more GPUs of the communicator
// on a node (src/transport/nvls.cc).
TEST(CollectiveRunner, PartOfEachNodeUsesItsOwnGpusNics) {
  const ClusterSpec spec = testing::dgx_h100(4);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const double size = 8589934592.0;
  std::vector<network::SweepPoint> points;
  for (int k : {1, 2, 4}) points.push_back({CollectiveOp::all_gather, 4, size, Algorithm::ring, Protocol::simple, k});
  auto rows = run_points(**platform, testing::nccl_2_30_7(), points, Fidelity::fluid, {});
  ASSERT_TRUE(rows) << rows.error().message;
  const double one = (*rows)[0].bus_bw_bytes_per_s;
  EXPECT_NEAR(one / 1e9, 48.0, 0.05 * 48.0);
  EXPECT_NEAR((*rows)[1].bus_bw_bytes_per_s / one, 2.0, 0.02);
  EXPECT_NEAR((*rows)[2].bus_bw_bytes_per_s / one, 4.0, 0.04);
  const NcclTuner tuner(spec.node, spec.fabric, testing::nccl_2_30_7());
  EXPECT_NE(tuner.unsupported({CollectiveOp::all_reduce, 4, 4, size}, {Algorithm::nvls_tree, Protocol::simple}), "");
  EXPECT_EQ(tuner.unsupported({CollectiveOp::all_reduce, 8, 4, size}, {Algorithm::nvls_tree, Protocol::simple}), "");
}

// The first K GPUs of each node, node-major, as nccl-tests orders its ranks.
TEST(NcclTests, SweepRanksTakeTheFirstGpusOfEachNode) {
  const ClusterSpec spec = testing::dgx_h100(2);
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  EXPECT_EQ(sweep_ranks(**platform, CollectiveOp::all_reduce, 1, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(sweep_ranks(**platform, CollectiveOp::all_gather, 2, 2), (std::vector<int>{0, 1, 8, 9}));
  EXPECT_EQ(sweep_ranks(**platform, CollectiveOp::all_gather, 2, 0).size(), 16u);
  EXPECT_EQ(sweep_ranks(**platform, CollectiveOp::send_recv, 2, 4), (std::vector<int>{0, 8}));
  auto bad = run_points(**platform, testing::nccl_2_30_7(), {{CollectiveOp::all_reduce, 1, 1e6, std::nullopt, std::nullopt, 9}},
                        Fidelity::fluid, {});
  EXPECT_FALSE(bad);
}

}  // namespace
}  // namespace commbound::network
