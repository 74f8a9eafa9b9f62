// Jobs sharing a cluster: placement worked by hand, the engine's shared links against the shares a
// max-min fabric gives by hand, and jobs that meet on no link against their runs alone.
#include "sim/engine/engine.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/run/cluster_run.hpp"
#include "sim/scenario/job_placement.hpp"
#include "sim/scenario/model.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/workload.hpp"
#include "tests/network/in_child.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

namespace commbound::sim {
namespace {

const Presets kPresets("calibration");

TEST(JobPlacement, PackedTakesTheLowestFreeNodes) {
  std::vector<bool> taken(8, false);
  taken[1] = true;
  EXPECT_EQ(place_packed(3, taken).value(), (NodeList{0, 2, 3}));
  EXPECT_EQ(place_packed(4, taken).value(), (NodeList{4, 5, 6, 7}));
  EXPECT_FALSE(place_packed(1, taken));  // all 8 taken
}

// Spread over 6 free nodes {0, 2, 3, 4, 5, 7}: 3 nodes take free nodes floor(i * 6 / 3) = 0, 2, 4,
// which are nodes 0, 3, 5.
TEST(JobPlacement, SpreadSpacesTheJobOverTheFreeNodes) {
  std::vector<bool> taken(8, false);
  taken[1] = taken[6] = true;
  EXPECT_EQ(place_spread(3, taken).value(), (NodeList{0, 3, 5}));
  std::vector<bool> empty(8, false);
  EXPECT_EQ(place_spread(4, empty).value(), (NodeList{0, 2, 4, 6}));
  EXPECT_EQ(place_spread(4, empty).value(), (NodeList{1, 3, 5, 7}));  // the second spread job interleaves
}

TEST(JobPlacement, RangesRefuseOverlapsAndTakeNothingOnFailure) {
  std::vector<bool> taken(16, false);
  EXPECT_EQ(place_ranges({{0, 1}, {8, 9}}, taken).value(), (NodeList{0, 1, 8, 9}));
  const auto overlap = place_ranges({{4, 8}}, taken);
  ASSERT_FALSE(overlap);
  EXPECT_EQ(overlap.error().message, "[4, 8]: node 8 runs another job");
  EXPECT_FALSE(taken[4]);  // a failed placement takes no node
  EXPECT_FALSE(place_ranges({{3, 2}}, taken));
  EXPECT_FALSE(place_ranges({{15, 16}}, taken));
  EXPECT_EQ(node_ranges_text({0, 1, 2, 5, 7, 8}), "0-2, 5, 7-8");
  EXPECT_EQ(node_ranges_text({1, 3, 5, 7}), "1, 3, ..., 7 (stride 2)");
  EXPECT_EQ(node_ranges_text({0, 2, 4, 6, 8, 10, 12, 15}), "0, 2, 4, 6, 8, 10, ... (8 ranges, 8 nodes)");
}

// A program of one AllGather of `bytes` over the data-parallel group, on `nodes` DGX H100 nodes.
TrainingSpec all_gather_job(int nodes) {
  TrainingSpec t;
  t.dp = nodes * 8;
  t.warmup_iterations = 0;
  return t;
}
Program all_gather(double bytes) {
  Op op;
  op.name = "all-gather";
  op.kind = OpKind::collective;
  op.stream = StreamId::all_gather;
  op.collective = network::CollectiveOp::all_gather;
  op.group = GroupKind::data_parallel;
  op.size_bytes = bytes;
  return Program{{op}, {}, -1};
}

// Four DGX H100 nodes on a fat-tree of 24-port leaves at 2:1 (a leaf of radix 24 gets
// round(24 / 3) = 8 up-links and 16 down-ports: two nodes, 16 NICs). Job A runs on nodes 0 and 2,
// job B on nodes 1 and 3 (spread): each leaf holds one node of each. A job's AllGather crosses from
// one leaf to the other on its node's 8 NICs. Alone, its 8 flows spread over the leaf's 8 up-links,
// one NIC's rate each: the NIC limits. Together, the two jobs' 16 flows share the 8 up-links and
// max-min gives each half a NIC: each job runs as it would alone on a fabric of half-rate links.
// Packed (A on nodes 0-1, B on 2-3) each job stays inside its leaf: nothing is shared and each runs
// exactly as alone.
TEST(ClusterRun, JobsSharingOversubscribedUplinksGetHalfTheirRate) {
  network::ClusterSpec cluster = testing::dgx_h100(4, network::Topology::fat_tree);
  cluster.fabric.switch_radix = 24;
  cluster.fabric.oversubscription = 2;
  const TrainingSpec t = all_gather_job(2);
  const CostModel cost(t.gpu);
  const std::vector<Program> stages = {all_gather(1024.0 * (1 << 20))};
  auto first_job_s = [&](const network::ClusterSpec& on, const std::vector<NodeList>& placements) {
    return testing::in_child([&] {
      std::vector<JobOnCluster> jobs;
      for (const NodeList& nodes : placements) jobs.push_back({&t, &stages, &cost, nodes});
      return simulate_jobs(on, testing::nccl_2_30_7(), jobs, {}).value().front().iteration_s();
    });
  };
  network::ClusterSpec half_rate = cluster;
  half_rate.fabric.link.bw_bytes_per_s /= 2;
  const double alone_s = first_job_s(cluster, {{0, 2}});
  const double together_s = first_job_s(cluster, {{0, 2}, {1, 3}});
  const double alone_at_half_rate_s = first_job_s(half_rate, {{0, 2}});
  std::printf("AllGather of 1 GiB on 16 ranks: %.3f ms alone, %.3f ms beside the other job, %.3f ms alone on "
              "half-rate links\n", alone_s * 1e3, together_s * 1e3, alone_at_half_rate_s * 1e3);
  EXPECT_GT(together_s, 1.5 * alone_s);
  EXPECT_NEAR(together_s, alone_at_half_rate_s, 1e-6 * alone_at_half_rate_s);
  EXPECT_NEAR(first_job_s(cluster, {{0, 1}, {2, 3}}), first_job_s(cluster, {{0, 1}}), 1e-9 * alone_s);
}

// Two identical 7B FSDP jobs spread over both leaves of every rail of a non-blocking
// rail-optimized fabric (tests/sim/data/two_jobs.toml): each leaf's 4 nodes send at most 4 NICs'
// rate per rail through its 4 up-links, so no flow is held below its NIC's rate by the other job,
// and each job runs exactly as alone, packed or spread.
TEST(ClusterRun, JobsOnDisjointNodesOfANonBlockingFabricRunAsAlone) {
  std::ifstream in("tests/sim/data/two_jobs.toml");
  const std::string spread((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const std::string placement : {"spread", "packed"}) {
    std::string text = spread;
    for (std::size_t at = text.find("\"spread\""); at != std::string::npos; at = text.find("\"spread\"", at + 1)) {
      text.replace(at, 8, "\"" + placement + "\"");
    }
    const std::string path = ::testing::TempDir() + "two_jobs_" + placement + ".toml";
    std::ofstream(path) << text;
    auto sc = load_scenario(path, {}, kPresets);
    ASSERT_TRUE(sc) << sc.error().message;
    const auto results = simulate_cluster(*sc).value();
    ASSERT_EQ(results.size(), 2u);
    for (const JobResult& r : results) {
      EXPECT_NEAR(r.metrics.iteration_s, r.alone_iteration_s, 1e-9 * r.alone_iteration_s) << placement << " " << r.name;
    }
  }
}

// Llama-2 7B FSDP, sequence 4096, one sequence per GPU, on `world` GPUs.
TrainingSpec llama2_7b(int world) {
  TrainingSpec t;
  t.model = *load_model(kPresets, "llama2-7b");
  t.gpu = *load_gpu(kPresets, "h100-sxm5");
  t.seq_len = 4096;
  t.micro_batch = t.micro_batches = 1;
  t.dp = t.global_batch = world;
  t.warmup_iterations = 0;
  return t;
}

// The iteration of `t` alone on `cluster` with the degraded GPUs `rates` (rank -> fraction).
double degraded_iteration_s(const network::ClusterSpec& cluster, const TrainingSpec& t,
                            const std::map<int, double>& rates) {
  const std::vector<Program> stages = {build_program(t)};
  const CostModel cost(t.gpu);
  return testing::in_child([&] {
    return simulate_jobs(cluster, testing::nccl_2_30_7(), {JobOnCluster{&t, &stages, &cost, {}, rates}}, {})
        .value()
        .front()
        .iteration_s();
  });
}

// One GPU and nobody to wait for: its iteration is the sum of its compute ops. At half its speed
// every op takes twice as long, so the iteration doubles exactly.
TEST(DegradedGpu, OneGpuAtHalfSpeedTakesTwiceAsLong) {
  network::ClusterSpec cluster = testing::dgx_h100(1);
  cluster.node.gpus = 1;
  cluster.node.nics = 1;
  const TrainingSpec t = llama2_7b(1);
  const double full_s = degraded_iteration_s(cluster, t, {});
  EXPECT_NEAR(degraded_iteration_s(cluster, t, {{0, 0.5}}), 2 * full_s, 1e-9 * full_s);
}

// One GPU at half speed: the same work in twice the time. Its power counts the work as at full
// speed and the other half of the iteration as waiting; the roofline power model (no table) prices
// waiting at idle: idle + (TDP - idle) x busy fraction. So one iteration's energy is the healthy
// one's plus the healthy iteration's length at idle power, where counting every span as work
// would make it the healthy one's plus that length at full busy power.
TEST(DegradedGpu, ItsWaitingCountsAsWaitingNotWork) {
  network::ClusterSpec cluster = testing::dgx_h100(1);
  cluster.node.gpus = 1;
  cluster.node.nics = 1;
  const TrainingSpec t = llama2_7b(1);
  auto energy_and_iteration = [&](const std::map<int, double>& rates) {
    const std::vector<Program> stages = {build_program(t)};
    const CostModel cost(t.gpu);
    return testing::in_child([&] {
      const IterationTimeline timeline =
          simulate_jobs(cluster, testing::nccl_2_30_7(), {JobOnCluster{&t, &stages, &cost, {}, rates}}, {}).value().front();
      const Metrics m = compute_metrics(t, stages, {0}, timeline, MemoryUse{}, cost);
      return m.power_w_per_gpu * m.iteration_s;
    });
  };
  const double full_j = energy_and_iteration({});
  const double full_s = degraded_iteration_s(cluster, t, {});
  EXPECT_NEAR(energy_and_iteration({{0, 0.5}}), full_j + full_s * t.gpu.idle_w, 1e-9 * full_j);
}

// A stage's ranks meet at every data-parallel collective, so one slow GPU anywhere in it sets the
// stage's pace: rank 13 at 0.8 slows the representative as much as rank 0 itself at 0.8, and a
// lower fraction more.
TEST(DegradedGpu, AStageComputesAtItsSlowestGpusPace) {
  const network::ClusterSpec cluster = testing::dgx_h100(2);
  const TrainingSpec t = llama2_7b(16);
  const double healthy_s = degraded_iteration_s(cluster, t, {});
  const double rank13_s = degraded_iteration_s(cluster, t, {{13, 0.8}});
  EXPECT_GT(rank13_s, 1.1 * healthy_s);
  EXPECT_DOUBLE_EQ(rank13_s, degraded_iteration_s(cluster, t, {{0, 0.8}}));
  EXPECT_DOUBLE_EQ(rank13_s, degraded_iteration_s(cluster, t, {{13, 0.8}, {5, 0.9}}));
  EXPECT_GT(degraded_iteration_s(cluster, t, {{13, 0.6}}), rank13_s);
}

// A NIC at half its rate: the AllGather's channels through it move half as fast, and the
// collective ends with its slowest channel: as late as on a fabric whose every link runs at half
// rate, where every channel is that slow.
TEST(DegradedNic, AHalfRateNicSlowsTheCollectivesThatCrossIt) {
  network::ClusterSpec cluster = testing::dgx_h100(2);
  const TrainingSpec t = all_gather_job(2);
  const CostModel cost(t.gpu);
  const std::vector<Program> stages = {all_gather(1024.0 * (1 << 20))};
  auto iteration_s = [&](const network::ClusterSpec& on) {
    return testing::in_child([&] {
      return simulate_jobs(on, testing::nccl_2_30_7(), {JobOnCluster{&t, &stages, &cost, {}, {}}}, {})
          .value()
          .front()
          .iteration_s();
    });
  };
  network::ClusterSpec degraded = cluster;
  degraded.fabric.degraded_nics[{1, 3}] = 0.5;
  const double healthy_s = iteration_s(cluster);
  const double degraded_s = iteration_s(degraded);
  std::printf("AllGather of 1 GiB on 2 nodes: %.3f ms, %.3f ms with one NIC at half rate\n", healthy_s * 1e3,
              degraded_s * 1e3);
  EXPECT_GT(degraded_s, 1.5 * healthy_s);
  network::ClusterSpec half_rate = cluster;
  half_rate.fabric.link.bw_bytes_per_s /= 2;
  EXPECT_NEAR(degraded_s, iteration_s(half_rate), 1e-6 * degraded_s);
}

}  // namespace
}  // namespace commbound::sim
