// The cluster the collective benches run on: `nodes` of a node type on a rail-optimized NDR
// InfiniBand fabric with adaptive routing, no fabric fit (the presets' own link rates).
#pragma once

#include "core/expected.hpp"
#include "network/cluster_spec.hpp"
#include "sim/scenario/presets.hpp"

#include <string>

namespace commbound::bench {

inline Expected<network::ClusterSpec> rail_cluster(const sim::Presets& presets, const std::string& node_type, int nodes) {
  auto node = presets.node(node_type);
  if (!node) return node.error();
  auto link = presets.link("ib-ndr");
  if (!link) return link.error();
  network::ClusterSpec spec;
  spec.node = *node;
  spec.nodes = nodes;
  spec.fabric.topology = network::Topology::rail_optimized;
  spec.fabric.routing = network::Routing::adaptive;
  spec.fabric.link = *link;
  spec.fabric.switch_latency_s = link->latency_s;
  return spec;
}

}  // namespace commbound::bench
