// Platform: the routes of the emulated cluster, link by link, against what a DGX cluster does.
#include "network/internal/fabric_zone.hpp"
#include "network/platform.hpp"

#include "core/child_process.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace commbound::network {
namespace {

using Links = std::vector<std::string>;

// Inside a node a message crosses the sender's NVLink up to the NVSwitch and the receiver's down.
TEST(Platform, IntraNodeRouteIsTwoNvlinkHops) {
  auto p = Platform::create(testing::dgx_h100(2));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ((*p)->route_links(1, 6), (Links{"n0.gpu1.nvlink:UP", "n0.gpu6.nvlink:DOWN"}));
}

// PXN: GPU 3 of node 0 sending to GPU 5 of node 1 relays over NVLink to GPU 5 of its own node,
// whose NIC (rail 5) carries it to rail 5 of node 1. Both nodes share rail 5's leaf switch.
TEST(Platform, InterNodeRouteRelaysToTheDestinationRail) {
  auto p = Platform::create(testing::dgx_h100(2));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ((*p)->route_links(3, 8 + 5),
            (Links{"n0.gpu3.nvlink:UP", "n0.gpu5.nvlink:DOWN", "n0.gpu5.pcie:UP", "n0.nic5:UP", "fabric.leaf_hop",
                   "n1.nic5:DOWN", "n1.gpu5.pcie:DOWN"}));
  // Same rail: no relay.
  EXPECT_EQ((*p)->route_links(2, 8 + 2).front(), "n0.gpu2.pcie:UP");
}

// 64-port switches with 1:1 split: 32 NICs per leaf. 64 DGX nodes = 512 NICs = 16 leaves (2 levels);
// 512 nodes = 4096 NICs = 128 leaves > 64 (3 levels).
TEST(Platform, TreeLevelsFollowRadix) {
  ClusterSpec spec = testing::dgx_h100(64, Topology::fat_tree);
  auto plan = internal::plan_tree(spec);
  EXPECT_EQ(plan.geometry.levels, 2);
  EXPECT_EQ(plan.geometry.leaves, 16);
  EXPECT_EQ(plan.geometry.down_ports, 32);
  spec.nodes = 512;
  plan = internal::plan_tree(spec);
  EXPECT_EQ(plan.geometry.levels, 3);
  EXPECT_EQ(plan.geometry.leaves, 128);
  EXPECT_EQ(plan.geometry.pods, 4);
  spec.fabric.levels = 2;
  EXPECT_NE(internal::plan_tree(spec).error, "");
  // Oversubscription 3:1 on a 64-port leaf: 16 up, 48 down.
  spec = testing::dgx_h100(8, Topology::fat_tree);
  spec.fabric.oversubscription = 3;
  plan = internal::plan_tree(spec);
  EXPECT_EQ(plan.geometry.up_ports, 16);
  EXPECT_EQ(plan.geometry.down_ports, 48);
}

// Adaptive routing crosses one bundle per leaf (all up-links); ECMP picks one spine link.
TEST(Platform, AdaptiveUsesBundlesAndEcmpSingleLinks) {
  ClusterSpec spec = testing::dgx_h100(8, Topology::fat_tree, Routing::adaptive);
  spec.fabric.switch_radix = 16;  // 8 NICs per leaf: one node per leaf
  auto p = Platform::create(spec);
  ASSERT_TRUE(p) << p.error().message;
  const Links r = (*p)->route_links(0, 8);
  EXPECT_NE(std::find(r.begin(), r.end(), "leaf0.up_bundle:UP"), r.end());
  EXPECT_NE(std::find(r.begin(), r.end(), "leaf1.up_bundle:DOWN"), r.end());
}

TEST(Platform, EcmpRoutesThroughOneSpine) {
  ClusterSpec spec = testing::dgx_h100(8, Topology::fat_tree, Routing::ecmp);
  spec.fabric.switch_radix = 16;
  auto p = Platform::create(spec);
  ASSERT_TRUE(p) << p.error().message;
  const Links r = (*p)->route_links(0, 8);
  int up = 0;
  int down = 0;
  std::string up_spine, down_spine;
  for (const auto& l : r) {
    if (l.rfind("leaf0.up", 0) == 0) ++up, up_spine = l.substr(8, l.find(':') - 8);
    if (l.rfind("leaf1.up", 0) == 0) ++down, down_spine = l.substr(8, l.find(':') - 8);
  }
  EXPECT_EQ(up, 1);
  EXPECT_EQ(down, 1);
  EXPECT_EQ(up_spine, down_spine);  // up to spine j, down from the same spine j
}

// The route latency counts switch traversals: 1 inside a leaf, 3 through a spine, 5 through a core.
TEST(Platform, RouteLatencyCountsSwitchHops) {
  ClusterSpec spec = testing::dgx_h100(512, Topology::fat_tree);
  auto p = Platform::create(spec);
  ASSERT_TRUE(p) << p.error().message;
  const double hop_s = spec.fabric.switch_latency_s;
  EXPECT_NEAR((*p)->route_latency_s(0, 8), 1 * hop_s, 1e-15);             // nodes 0, 1: same leaf
  EXPECT_NEAR((*p)->route_latency_s(0, 8 * 4), 3 * hop_s, 1e-15);         // node 4: next leaf, same pod
  EXPECT_NEAR((*p)->route_latency_s(0, 8 * 200), 5 * hop_s, 1e-15);       // another pod
  EXPECT_EQ((*p)->fabric_levels(), 3);
}

TEST(Platform, RefusesAFabricTooSmall) {
  ClusterSpec spec = testing::dgx_h100(4096, Topology::fat_tree);
  spec.fabric.switch_radix = 16;
  auto p = Platform::create(spec);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("do not fit"), std::string::npos) << p.error().message;
}

TEST(Platform, ExportsSimgridXml) {
  auto p = Platform::create(testing::dgx_h100(2));
  ASSERT_TRUE(p) << p.error().message;
  std::ostringstream xml;
  ASSERT_TRUE((*p)->export_xml(xml, 100));
  const std::string s = xml.str();
  EXPECT_NE(s.find("<platform version=\"4.1\">"), std::string::npos);
  EXPECT_NE(s.find("<route src=\"n0.gpu3\" dst=\"n1.gpu5\""), std::string::npos);
  std::ostringstream big;
  EXPECT_FALSE((*p)->export_xml(big, 10));
}

// What SimGrid's own parser makes of the XML that `spec`'s platform exports (loaded in this process
// after a child wrote it: one engine per process): the route from host `src` to host `dst` by link
// name, and the number of hosts.
struct LoadedExport {
  Links route;
  std::size_t hosts = 0;
};
LoadedExport load_exported(const ClusterSpec& spec, const std::string& src, const std::string& dst) {
  const std::string path = ::testing::TempDir() + "commbound_export_test.xml";
  const auto exported = run_in_child([&]() -> Expected<std::string> {
    auto p = Platform::create(spec);
    if (!p) return p.error();
    std::ofstream out(path);
    if (Status s = (*p)->export_xml(out, 100); !s) return s.error();
    out.close();
    if (!out.good()) return Error{"cannot write " + path};
    return std::string();
  });
  EXPECT_TRUE(exported) << exported.error().message;
  int argc = 1;
  char name[] = "test";
  char* argv[] = {name, nullptr};
  simgrid::s4u::Engine engine(&argc, argv);
  engine.load_platform(path);
  std::vector<simgrid::s4u::Link*> links;
  double latency_s = 0;
  engine.host_by_name(src)->route_to(engine.host_by_name(dst), links, &latency_s);
  LoadedExport loaded;
  for (auto* l : links) loaded.route.push_back(l->get_name());
  loaded.hosts = engine.get_host_count();
  std::remove(path.c_str());
  return loaded;
}

// The exported XML routes n0.gpu3 -> n1.gpu5 over the same links as our zone.
TEST(Platform, ExportedXmlLoadsWithTheSameRoutes) {
  const Links expected = {"n0.gpu3.nvlink_UP", "n0.gpu5.nvlink_DOWN", "n0.gpu5.pcie_UP", "n0.nic5_UP",
                          "fabric.leaf_hop", "n1.nic5_DOWN", "n1.gpu5.pcie_DOWN"};
  EXPECT_EQ(load_exported(testing::dgx_h100(2), "n0.gpu3", "n1.gpu5").route, expected);
}

// HGX H100 4-GPU: no NVSwitch. GPUs 1 and 3 talk over the one link of their pair, each way on its
// own direction; across nodes PXN relays over the pair link to the destination rail's GPU.
TEST(Platform, MeshNodeRoutesEachPairOverItsOwnLink) {
  auto p = Platform::create(testing::hgx_h100_4gpu(2));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ((*p)->route_links(1, 3), (Links{"n0.nvlink1-3:UP"}));
  EXPECT_EQ((*p)->route_links(3, 1), (Links{"n0.nvlink1-3:DOWN"}));
  EXPECT_EQ((*p)->route_links(0, 2), (Links{"n0.nvlink0-2:UP"}));
  EXPECT_EQ((*p)->route_links(3, 4 + 1),
            (Links{"n0.nvlink1-3:DOWN", "n0.gpu1.pcie:UP", "n0.nic1:UP", "fabric.leaf_hop", "n1.nic1:DOWN",
                   "n1.gpu1.pcie:DOWN"}));
  EXPECT_EQ((*p)->nvswitch(0), nullptr);
}

// Per pair: 450 GB/s x 0.824 (NCCL's H100 NVLink efficiency) / 3 peers = 123.6 GB/s per direction.
TEST(Platform, MeshPairLinkCarriesAThirdOfTheGpusNvlink) {
  auto p = Platform::create(testing::hgx_h100_4gpu(1));
  ASSERT_TRUE(p) << p.error().message;
  simgrid::s4u::Link* pair = simgrid::s4u::Link::by_name("n0.nvlink0-3_UP");
  ASSERT_NE(pair, nullptr);
  EXPECT_NEAR(pair->get_bandwidth(), 123.6e9, 1e3);
}

// The mesh exported as XML (no NVSwitch host, six pair links per node) loads in SimGrid's own
// parser and routes n0.gpu3 -> n1.gpu1 as our zone does.
TEST(Platform, MeshExportedXmlLoadsWithTheSameRoutes) {
  const Links expected = {"n0.nvlink1-3_DOWN", "n0.gpu1.pcie_UP", "n0.nic1_UP", "fabric.leaf_hop", "n1.nic1_DOWN",
                          "n1.gpu1.pcie_DOWN"};
  const LoadedExport loaded = load_exported(testing::hgx_h100_4gpu(2), "n0.gpu3", "n1.gpu1");
  EXPECT_EQ(loaded.route, expected);
  EXPECT_EQ(loaded.hosts, 8u);  // 2 nodes x 4 GPUs, no NVSwitch host
}

}  // namespace
}  // namespace commbound::network
