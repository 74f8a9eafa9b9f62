// Helpers shared by the network tests: the shipped presets, loaded the way the CLI loads them.
#pragma once

#include "network/cluster_spec.hpp"
#include "network/nccl_constants.hpp"
#include "sim/scenario/presets.hpp"

#include <gtest/gtest.h>

#include <string>

namespace commbound::testing {

// Tests run from the source tree (ctest's WORKING_DIRECTORY), so the shipped data is ./calibration.
inline sim::Presets shipped_presets() { return sim::Presets("calibration"); }

inline network::NcclConstants nccl_release(const std::string& release) {
  auto c = shipped_presets().nccl(release);
  if (!c) ADD_FAILURE() << c.error().message;
  return c ? *c : network::NcclConstants{};
}
inline network::NcclConstants nccl_2_30_7() { return nccl_release("2.30.7"); }

// `nodes` nodes of the node type `node_type` (calibration/nodes.toml) on an IB NDR fabric of the given shape.
inline network::ClusterSpec preset_cluster(const std::string& node_type, int nodes,
                                           network::Topology topology = network::Topology::rail_optimized,
                                           network::Routing routing = network::Routing::adaptive) {
  const sim::Presets presets = shipped_presets();
  network::ClusterSpec spec;
  auto node = presets.node(node_type);
  auto link = presets.link("ib-ndr");
  if (!node || !link) ADD_FAILURE() << "presets missing";
  spec.node = *node;
  spec.nodes = nodes;
  spec.fabric.topology = topology;
  spec.fabric.routing = routing;
  spec.fabric.link = *link;
  spec.fabric.switch_latency_s = link->latency_s;
  return spec;
}

// `nodes` DGX H100 nodes on an IB NDR fabric of the given shape.
inline network::ClusterSpec dgx_h100(int nodes, network::Topology topology = network::Topology::rail_optimized,
                                     network::Routing routing = network::Routing::adaptive) {
  return preset_cluster("dgx-h100", nodes, topology, routing);
}

// `nodes` one-GPU nodes (one NIC, one NCCL channel, no NVLink SHARP) of a DGX H100's parts on an IB
// NDR fabric of the given shape: every rank's traffic goes over the fabric.
inline network::ClusterSpec one_gpu_nodes(int nodes, network::Topology topology) {
  network::ClusterSpec spec = dgx_h100(nodes, topology);
  spec.node.gpus = 1;
  spec.node.nics = 1;
  spec.node.nccl_channels = 1;
  spec.node.nvls = false;
  return spec;
}

// `nodes` HGX H100 4-GPU nodes (a direct NVLink mesh, no NVSwitch) on an IB NDR fabric.
inline network::ClusterSpec hgx_h100_4gpu(int nodes, network::Topology topology = network::Topology::rail_optimized) {
  return preset_cluster("hgx-h100-4gpu", nodes, topology);
}

}  // namespace commbound::testing
