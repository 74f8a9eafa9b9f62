#include "network/internal/nvls.hpp"

#include "network/internal/algorithm.hpp"
#include "network/internal/channel_groups.hpp"
#include "network/internal/fluid_flows.hpp"
#include "network/internal/tree.hpp"

#include <simgrid/s4u/Actor.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

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

namespace {

// The in-switch part of a multi-node NVLS collective: every GPU's link up to its node's switch and
// down from it, S (g + 1)/g each way at most at nvls_efficiency x NVLink (g the node's ranks).
struct SwitchPart {
  std::vector<std::vector<int>> nodes;  // each node's ranks, in call order, nodes in order
  std::vector<Edge> up, down;
  double wire_bytes = 0;
  double cap_bytes_per_s = 0;
};

SwitchPart switch_part(const AlgorithmParams& params) {
  Platform& platform = params.platform;
  SwitchPart part;
  std::map<int, std::vector<int>> by_node;
  for (int r : params.call.ranks) by_node[platform.node_of(r)].push_back(r);
  for (auto& [node, ranks] : by_node) part.nodes.push_back(ranks);
  for (const auto& ranks : part.nodes) {
    const double g = static_cast<double>(ranks.size());
    for (int r : ranks) {
      sg4::Host* sw = platform.nvswitch(platform.node_of(r));
      part.up.emplace_back(platform.gpu(r), sw);
      part.down.emplace_back(sw, platform.gpu(r));
    }
    part.wire_bytes = params.call.size_bytes * (g + 1) / g / params.efficiency();
  }
  part.cap_bytes_per_s = params.nccl.nvls_efficiency * platform.spec().node.nvlink.effective_bw_bytes_per_s();
  return part;
}

// The GPU of a node (its ranks, sorted) whose NIC is `rail`, or the next present one: the head of
// that rail's exchange between nodes.
sg4::Host* rail_gpu(Platform& platform, const std::vector<int>& node_ranks, int rail) {
  return platform.gpu(rail_head(platform, node_ranks, rail));
}

// Waits `latency_s`, then runs every flow at once: the algorithm's result.
AlgorithmResult stream_after(Platform& platform, double latency_s, const std::vector<GroupFlow>& flows) {
  sg4::this_actor::sleep_for(latency_s);
  const FluidRun run = run_fluid(platform, flows);
  AlgorithmResult result;
  result.bandwidth_s = run.bandwidth_s;
  result.flows = run.flows;
  result.latency_s = latency_s;
  return result;
}

}  // namespace

AlgorithmResult run_nvls_tree(const AlgorithmParams& params) {
  Platform& platform = params.platform;
  const double size = params.call.size_bytes;
  const SwitchPart part = switch_part(params);
  const int n_nodes = static_cast<int>(part.nodes.size());
  const std::vector<int> rails = rails_used(platform, part.nodes);  // the rails of the GPUs present
  const int nics = static_cast<int>(rails.size());
  // Per tree of the double binary tree, its edges up and down on every rail, each group at one rate.
  std::vector<std::vector<Edge>> tree_edges(4);
  for (int tree = 0; tree < 2; ++tree) {
    for (int k : rails) {
      for (int i = 0; i < n_nodes; ++i) {
        const int parent = dtree_parent(n_nodes, tree, i);
        if (parent < 0) continue;
        sg4::Host* child = rail_gpu(platform, part.nodes[i], k);
        sg4::Host* up = rail_gpu(platform, part.nodes[parent], k);
        tree_edges[2 * tree].emplace_back(child, up);
        tree_edges[2 * tree + 1].emplace_back(up, child);
      }
    }
  }
  const double tree_bytes = size / (2.0 * nics) / params.efficiency();
  std::vector<GroupFlow> flows = {{part.up, part.wire_bytes, part.cap_bytes_per_s},
                                  {part.down, part.wire_bytes, part.cap_bytes_per_s}};
  for (const auto& edges : tree_edges) {
    if (!edges.empty()) flows.push_back({edges, tree_bytes, -1});
  }
  const FabricFit* fit = params.fit;
  const double depth = 2 * std::log2(static_cast<double>(n_nodes));
  const double hop_s = fit != nullptr ? fit->nvls_latency_s + depth * fit->net_hop_s
                                      : params.nccl.hop(Algorithm::nvls_tree, HopClass::nvlink, params.choice.protocol) +
                                            depth * params.nccl.hop(Algorithm::nvls_tree, HopClass::net, params.choice.protocol);
  return stream_after(platform, params.base_s + hop_s + params.net_messages_s(1, size / (2.0 * nics)), flows);
}

AlgorithmResult run_nvls_sharp(const AlgorithmParams& params) {
  Platform& platform = params.platform;
  const double size = params.call.size_bytes;
  const SwitchPart part = switch_part(params);
  const std::size_t n_nodes = part.nodes.size();
  const std::vector<int> used = rails_used(platform, part.nodes);  // the rails of the GPUs present
  const int nics = static_cast<int>(used.size());
  std::vector<Edge> rails;  // every rail's exchange with the next node
  for (int k : used) {
    for (std::size_t i = 0; i < n_nodes; ++i) {
      rails.emplace_back(rail_gpu(platform, part.nodes[i], k), rail_gpu(platform, part.nodes[(i + 1) % n_nodes], k));
    }
  }
  const std::vector<GroupFlow> flows = {{part.up, part.wire_bytes, part.cap_bytes_per_s},
                                        {part.down, part.wire_bytes, part.cap_bytes_per_s},
                                        {rails, size / nics / params.efficiency(), -1}};
  const FabricFit* fit = params.fit;
  const double hop_s = fit != nullptr ? fit->nvls_latency_s + fit->net_hop_s
                                      : params.nccl.hop(Algorithm::nvls, HopClass::nvlink, params.choice.protocol) +
                                            params.nccl.hop(Algorithm::nvls, HopClass::net, params.choice.protocol);
  return stream_after(platform, params.base_s + hop_s + params.net_messages_s(1, size / nics), flows);
}

// NCCL's tuner on NVLS and NVLSTree (tuning.cc). NCCL searches an NVLS graph only where the
// topology holds an NVSwitch (search.cc, ncclTopoCompute: "if (graph->pattern ==
// NCCL_TOPO_PATTERN_NVLS && (system->nodes[NVS].count == 0 || ...)) return").
namespace {

std::string no_nvls_switch(const NcclTuner& tuner) {
  const NodeType& node = tuner.node();
  if (node.nvlink_topology == NvlinkTopology::mesh) return "node type " + node.name + " has a direct NVLink mesh, no NVSwitch";
  if (!node.nvls) return "node type " + node.name + " has no NVLink SHARP switch";
  return "";
}

// NCCL sets NVLS up only for a communicator with at least 2 GPUs on a node (src/transport/nvls.cc,
// ncclNvlsInit: gpuCount < 2 returns without it): a multicast group of one GPU reduces nothing.
std::string one_gpu_a_node(const CallShape& shape) {
  return shape.ranks < 2 * std::max(1, shape.nodes) ? "NCCL sets NVLS up only with 2 or more GPUs of the communicator on a node"
                                                     : "";
}

std::string nvls_unsupported(const NcclTuner& tuner, const CallShape& shape, Protocol p) {
  if (shape.op != CollectiveOp::all_reduce) return "this model runs NVLS for AllReduce only";
  if (std::string why = no_nvls_switch(tuner); !why.empty()) return why;
  if (std::string why = one_gpu_a_node(shape); !why.empty()) return why;
  if (shape.nodes != 1 && !tuner.fabric().sharp) {
    return "NVLS across nodes needs in-network reduction in the fabric (NCCL's CollNet: [fabric] sharp = true)";
  }
  if (p != Protocol::simple) return "NVLS runs the Simple protocol only";
  return "";
}

std::string nvls_tree_unsupported(const NcclTuner& tuner, const CallShape& shape, Protocol p) {
  if (shape.op != CollectiveOp::all_reduce) return "NVLSTree runs AllReduce only";
  if (std::string why = no_nvls_switch(tuner); !why.empty()) return why;
  if (std::string why = one_gpu_a_node(shape); !why.empty()) return why;
  if (shape.nodes < 2) return "NVLSTree spans nodes (NVLS inside one)";
  if (p != Protocol::simple) return "NVLSTree runs the Simple protocol only";
  return "";
}

// intraLat, + interLat across nodes (CollNet).
double nvls_latency_s(const NcclTuner& tuner, const CallShape& shape, Protocol p) {
  const NcclConstants& nccl = tuner.nccl();
  return nccl.base(Algorithm::nvls, p) + nccl.hop(Algorithm::nvls, HopClass::nvlink, p) +
         (shape.nodes > 1 ? nccl.hop(Algorithm::nvls, HopClass::net, p) : 0);
}

// intraLat + 2 log2(nNodes) interLat.
double nvls_tree_latency_s(const NcclTuner& tuner, const CallShape& shape, Protocol p) {
  const NcclConstants& nccl = tuner.nccl();
  return nccl.base(Algorithm::nvls_tree, p) + nccl.hop(Algorithm::nvls_tree, HopClass::nvlink, p) +
         2 * std::log2(shape.nodes) * nccl.hop(Algorithm::nvls_tree, HopClass::net, p);
}

// The in-switch reduction's bound: the GPU's NVLink x NVLS efficiency x (nCh - 1)/nCh x 2. NCCL
// searches the multi-node graph with the NICs (one head per rail), which this model does not
// reproduce: the node's channel count stands in for its channels.
double in_switch_bus_bw(const NcclTuner& tuner, const TunerBandwidth& bw) {
  return bw.intra_bytes_per_s * tuner.nccl().nvls_efficiency * (bw.channels - 1) / bw.channels * 2;
}

// NCCL 2.20.5's form: nChannels x min(bwIntra, bwInter) as busBw, x 5/6 to algBw (tuning.cc of that
// tag). `inter_divisor` halves the NICs for NVLSTree beyond two nodes.
double min_intra_inter_alg_bw(const NcclTuner& tuner, const CallShape& shape, const TunerBandwidth& bw,
                              double inter_divisor) {
  constexpr double kNvlsAlgPerBusBw = 5.0 / 6.0;
  if (shape.nodes == 1) {
    const NcclTuner::SearchedGraph g = tuner.nvls_graph(shape.ranks);
    return g.channels * std::min(g.intra_bytes_per_s, g.inter_bytes_per_s) * kNvlsAlgPerBusBw;
  }
  return std::min(bw.intra_bytes_per_s, bw.inter_bytes_per_s / inter_divisor) * kNvlsAlgPerBusBw;
}

std::optional<double> nvls_alg_bw(const NcclTuner& tuner, const CallShape& shape, Protocol, const TunerBandwidth& bw) {
  const int n = shape.ranks;
  if (tuner.nccl().rules.nvls_bw_min_intra_inter) return min_intra_inter_alg_bw(tuner, shape, bw, 1);
  if (shape.nodes == 1) {
    // NCCL's NVLS graph inside the node (nvls_graph): per channel min(bwIntra x efficiency x
    // (nCh - 1)/nCh x 2, bwInter), times nCh. It grows with the GPUs in the call: 102 GB/s on 2
    // H100s, 240 on 4, 476 on 8, so NCCL runs Ring below 6 GPUs.
    const NcclTuner::SearchedGraph g = tuner.nvls_graph(n);
    if (g.channels < 2) return std::nullopt;  // tuning.cc: "NVLS/NVLStree needs at least 2 channels"
    const double per_channel = g.intra_bytes_per_s * tuner.nccl().nvls_efficiency * (g.channels - 1) / g.channels * 2;
    return g.channels * std::min(per_channel, g.inter_bytes_per_s) * n / bw.steps;
  }
  // Across nodes with CollNet: also the NICs.
  return std::min(in_switch_bus_bw(tuner, bw), bw.inter_bytes_per_s) * n / bw.steps;
}

// Also the NICs, doubled on two nodes where the tree is one exchange (tuning.cc since NCCL 2.28).
std::optional<double> nvls_tree_alg_bw(const NcclTuner& tuner, const CallShape& shape, Protocol, const TunerBandwidth& bw) {
  if (tuner.nccl().rules.nvls_bw_min_intra_inter) {
    return min_intra_inter_alg_bw(tuner, shape, bw, shape.nodes <= 2 ? 1 : 2);
  }
  const double bus_bw = std::min(in_switch_bus_bw(tuner, bw), bw.inter_bytes_per_s * (shape.nodes <= 2 ? 2 : 1));
  return bus_bw * shape.ranks / bw.steps;
}

}  // namespace

extern const AlgorithmSpec kNvlsAlgorithm{
    Algorithm::nvls, "nvls", "nvls",
    nvls_unsupported, nvls_latency_s, nvls_alg_bw,
    run_nvls};
extern const AlgorithmSpec kNvlsTreeAlgorithm{
    Algorithm::nvls_tree, "nvlstree", "nvls_tree",
    nvls_tree_unsupported, nvls_tree_latency_s, nvls_tree_alg_bw,
    run_nvls_tree};

}  // namespace commbound::network::internal
