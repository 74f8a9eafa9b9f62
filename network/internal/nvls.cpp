#include "network/internal/nvls.hpp"

#include "network/internal/fluid_flows.hpp"
#include "network/internal/tree.hpp"

#include <simgrid/s4u/Actor.hpp>

#include <cmath>
#include <map>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {

AlgorithmResult run_nvls(const AlgorithmParams& params) {
  Platform& platform = params.platform;
  const int first_node = platform.node_of(params.call.ranks.front());
  for (int r : params.call.ranks) {
    if (platform.node_of(r) != first_node) return run_nvls_sharp(params);
  }
  const double n = static_cast<double>(params.call.ranks.size());
  const double wire = params.call.size_bytes * (n + 1) / n / params.efficiency();
  const double cap = params.nccl.nvls_efficiency * platform.spec().node.nvlink.effective_bw_bytes_per_s();
  std::vector<Edge> edges;  // per GPU: up to the switch, then down
  for (int r : params.call.ranks) {
    sg4::Host* sw = platform.nvswitch(platform.node_of(r));
    edges.emplace_back(platform.gpu(r), sw);
    edges.emplace_back(sw, platform.gpu(r));
  }
  std::vector<GroupFlow> flows;  // one flow up to the switch and one down, per GPU
  for (std::size_t e = 0; e < edges.size(); ++e) flows.push_back({std::span(edges).subspan(e, 1), wire, cap});
  const double hop_s = params.fit != nullptr ? params.fit->nvls_latency_s
                                             : params.nccl.hop(Algorithm::nvls, HopClass::nvlink, params.choice.protocol);
  sg4::this_actor::sleep_for(params.base_s + hop_s);
  const FluidRun run = run_fluid(platform, flows);
  const Edge& up = flows[0].edges[0];
  const Edge& down = flows[1].edges[0];
  AlgorithmResult result;
  result.bandwidth_s = run.bandwidth_s;
  result.flows = run.flows;
  result.latency_s = params.base_s + hop_s + route_latency_s(up.first, up.second) + route_latency_s(down.first, down.second);
  return result;
}

AlgorithmResult run_nvls_tree(const AlgorithmParams& params) {
  Platform& platform = params.platform;
  const double size = params.call.size_bytes;
  const double efficiency = params.efficiency();
  const double cap = params.nccl.nvls_efficiency * platform.spec().node.nvlink.effective_bw_bytes_per_s();
  std::map<int, std::vector<int>> by_node;  // node -> its ranks, in call order
  for (int r : params.call.ranks) by_node[platform.node_of(r)].push_back(r);
  std::vector<std::vector<int>> nodes;
  for (auto& [node, ranks] : by_node) nodes.push_back(ranks);
  const int n_nodes = static_cast<int>(nodes.size());
  const int nics = platform.spec().node.nics;

  // Six channel groups, each moving at one rate (symmetric parts): every GPU's link up to its switch
  // and down from it; per tree of the double binary tree, its edges up and down on every rail.
  std::vector<std::vector<Edge>> edges(6);
  std::vector<double> bytes(6);
  std::vector<double> caps(6, -1.0);
  for (const auto& ranks : nodes) {
    const double g = static_cast<double>(ranks.size());
    for (int r : ranks) {
      sg4::Host* sw = platform.nvswitch(platform.node_of(r));
      edges[0].emplace_back(platform.gpu(r), sw);
      edges[1].emplace_back(sw, platform.gpu(r));
    }
    bytes[0] = bytes[1] = size * (g + 1) / g / efficiency;
  }
  caps[0] = caps[1] = cap;
  for (int tree = 0; tree < 2; ++tree) {
    for (int k = 0; k < nics; ++k) {  // rail k: GPU k of each node (its last GPU if it has fewer)
      for (int i = 0; i < n_nodes; ++i) {
        const int parent = dtree_parent(n_nodes, tree, i);
        if (parent < 0) continue;
        sg4::Host* child = platform.gpu(nodes[i][std::min<std::size_t>(k, nodes[i].size() - 1)]);
        sg4::Host* up = platform.gpu(nodes[parent][std::min<std::size_t>(k, nodes[parent].size() - 1)]);
        edges[2 + 2 * tree].emplace_back(child, up);
        edges[3 + 2 * tree].emplace_back(up, child);
      }
    }
    bytes[2 + 2 * tree] = bytes[3 + 2 * tree] = size / (2.0 * nics) / efficiency;
  }
  std::vector<GroupFlow> flows;
  for (std::size_t g = 0; g < edges.size(); ++g) {
    if (!edges[g].empty()) flows.push_back({edges[g], bytes[g], caps[g]});
  }
  const FabricFit* fit = params.fit;
  const double depth = 2 * std::log2(static_cast<double>(n_nodes));
  const double hop_s = fit != nullptr ? fit->nvls_latency_s + depth * fit->net_hop_s
                                      : params.nccl.hop(Algorithm::nvls_tree, HopClass::nvlink, params.choice.protocol) +
                                            depth * params.nccl.hop(Algorithm::nvls_tree, HopClass::net, params.choice.protocol);
  const double latency_s = params.base_s + hop_s + params.net_messages_s(1, size / (2.0 * nics));
  sg4::this_actor::sleep_for(latency_s);
  const FluidRun run = run_fluid(platform, flows);
  AlgorithmResult result;
  result.bandwidth_s = run.bandwidth_s;
  result.flows = run.flows;
  result.latency_s = latency_s;
  return result;
}

AlgorithmResult run_nvls_sharp(const AlgorithmParams& params) {
  Platform& platform = params.platform;
  const double size = params.call.size_bytes;
  const double efficiency = params.efficiency();
  const double cap = params.nccl.nvls_efficiency * platform.spec().node.nvlink.effective_bw_bytes_per_s();
  std::map<int, std::vector<int>> by_node;  // node -> its ranks, in call order
  for (int r : params.call.ranks) by_node[platform.node_of(r)].push_back(r);
  std::vector<std::vector<int>> nodes;
  for (auto& [node, ranks] : by_node) nodes.push_back(ranks);
  const std::size_t n_nodes = nodes.size();
  const int nics = platform.spec().node.nics;

  // Three channel groups, each moving at one rate: every GPU's link up to its switch and down from
  // it, and every rail's exchange with the next node (rail k: GPU k of a node, its last if fewer).
  std::vector<std::vector<Edge>> edges(3);
  std::vector<double> bytes(3);
  for (const auto& ranks : nodes) {
    const double g = static_cast<double>(ranks.size());
    for (int r : ranks) {
      sg4::Host* sw = platform.nvswitch(platform.node_of(r));
      edges[0].emplace_back(platform.gpu(r), sw);
      edges[1].emplace_back(sw, platform.gpu(r));
    }
    bytes[0] = bytes[1] = size * (g + 1) / g / efficiency;
  }
  auto rail_gpu = [&](std::size_t node, int k) {
    return platform.gpu(nodes[node][std::min<std::size_t>(k, nodes[node].size() - 1)]);
  };
  for (int k = 0; k < nics; ++k) {
    for (std::size_t i = 0; i < n_nodes; ++i) edges[2].emplace_back(rail_gpu(i, k), rail_gpu((i + 1) % n_nodes, k));
  }
  bytes[2] = size / nics / efficiency;
  const std::vector<GroupFlow> flows = {{edges[0], bytes[0], cap}, {edges[1], bytes[1], cap}, {edges[2], bytes[2], -1}};
  const FabricFit* fit = params.fit;
  const double hop_s = fit != nullptr ? fit->nvls_latency_s + fit->net_hop_s
                                      : params.nccl.hop(Algorithm::nvls, HopClass::nvlink, params.choice.protocol) +
                                            params.nccl.hop(Algorithm::nvls, HopClass::net, params.choice.protocol);
  const double latency_s = params.base_s + hop_s + params.net_messages_s(1, size / nics);
  sg4::this_actor::sleep_for(latency_s);
  const FluidRun run = run_fluid(platform, flows);
  AlgorithmResult result;
  result.bandwidth_s = run.bandwidth_s;
  result.flows = run.flows;
  result.latency_s = latency_s;
  return result;
}

}  // namespace commbound::network::internal
