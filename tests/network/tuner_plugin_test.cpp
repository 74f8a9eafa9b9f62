// A tuner plugin's regions: aws-ofi-nccl's p5 AllReduce regions as shipped
// (calibration/nccl/plugins/aws-ofi-nccl-p5.toml), each expected choice read off the plugin's
// polygons by hand, and the point-in-region rule on a square.
#include "network/tuner_plugin.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace commbound::network {
namespace {

constexpr double kMiB = 1024.0 * 1024;

// The square from (1 KiB, 4 ranks) to (1 MiB, 64 ranks): inside, on an edge, outside.
TEST(TunerPlugin, ARegionHoldsItsInsideAndItsEdges) {
  const TunerRegion square{CollectiveOp::all_reduce, 8, {}, {{1024, 4}, {kMiB, 4}, {kMiB, 64}, {1024, 64}}};
  EXPECT_TRUE(region_holds(square, 32 * 1024, 16));
  EXPECT_TRUE(region_holds(square, kMiB, 16));   // on the right edge
  EXPECT_TRUE(region_holds(square, 1024, 4));    // a corner
  EXPECT_FALSE(region_holds(square, 2 * kMiB, 16));
  EXPECT_FALSE(region_holds(square, 32 * 1024, 128));
}

// At 64 ranks (8 nodes of 8) the Tree/LL128 region reaches 112 MiB (its vertex [117440512, 64]),
// Ring/LL128 runs from there to 2.5 GiB (the Ring/Simple region's vertex [2684354560, 64]); at 256
// ranks Tree/LL128 reaches 288 MiB and NVLSTree/Simple takes 512 MiB. On 2 nodes the plugin leaves
// the choice to NCCL, and a call of 2 GPUs a node has no region here.
TEST(TunerPlugin, AwsP5AllReduceRegions) {
  const auto plugin = testing::shipped_presets().tuner_plugin("aws-ofi-nccl-p5");
  ASSERT_TRUE(plugin) << plugin.error().message;
  const auto runs = [](const CollectiveChoice&) { return true; };
  auto choice = [&](int nodes, double bytes) {
    return plugin->choose({CollectiveOp::all_reduce, 8 * nodes, nodes, bytes}, runs);
  };
  auto is = [](const std::optional<CollectiveChoice>& c, Algorithm a, Protocol p) {
    return c && c->algorithm == a && c->protocol == p;
  };
  EXPECT_TRUE(is(choice(8, 64 * kMiB), Algorithm::tree, Protocol::ll128));
  EXPECT_TRUE(is(choice(8, 128 * kMiB), Algorithm::ring, Protocol::ll128));
  EXPECT_TRUE(is(choice(8, 2048 * kMiB), Algorithm::ring, Protocol::ll128));
  EXPECT_TRUE(is(choice(8, 4096 * kMiB), Algorithm::ring, Protocol::simple));
  EXPECT_TRUE(is(choice(32, 256 * kMiB), Algorithm::tree, Protocol::ll128));
  EXPECT_TRUE(is(choice(32, 512 * kMiB), Algorithm::nvls_tree, Protocol::simple));
  EXPECT_FALSE(choice(2, 256 * kMiB));
  EXPECT_FALSE(plugin->choose({CollectiveOp::all_reduce, 16, 8, 256 * kMiB}, runs));
  EXPECT_FALSE(plugin->choose({CollectiveOp::all_gather, 64, 8, 256 * kMiB}, runs));
  // Without NVLS the plugin passes over its NVLSTree regions: 512 MiB on 32 nodes falls to NCCL.
  const auto no_nvls = [](const CollectiveChoice& c) { return c.algorithm != Algorithm::nvls_tree; };
  EXPECT_FALSE(plugin->choose({CollectiveOp::all_reduce, 256, 32, 512 * kMiB}, no_nvls));
}

// A region naming no NCCL algorithm is refused with its file, region and key.
TEST(TunerPlugin, ABadRegionIsRefusedByName) {
  const auto dir = std::filesystem::temp_directory_path() / "commbound_tuner_plugin_test";
  std::filesystem::create_directories(dir / "nccl" / "plugins");
  std::ofstream(dir / "nccl" / "plugins" / "bad.toml")
      << "name = \"bad\"\nsource = \"test\"\nmin_nodes = 3\n[[region]]\ncollective = \"allreduce\"\n"
         "gpus_per_node = 8\nalgorithm = \"hypercube\"\nprotocol = \"Simple\"\nvertices = [[0, 1], [1, 1], [1, 2]]\n";
  const auto plugin = sim::Presets(dir).tuner_plugin("bad");
  ASSERT_FALSE(plugin);
  EXPECT_NE(plugin.error().message.find("region[0].algorithm"), std::string::npos) << plugin.error().message;
  EXPECT_NE(plugin.error().message.find("hypercube"), std::string::npos) << plugin.error().message;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace commbound::network
