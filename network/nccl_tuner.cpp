#include "network/nccl_tuner.hpp"

#include "network/internal/all_to_all.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace commbound::network {
namespace {

// ncclTopoCompute (src/graph/search.cc): after a graph is found, slower speeds are tried only while
// they are above this fraction of its speed.
constexpr double kSlowerSpeedMinRatio = 0.49;
// ncclTopoDupChannels (search.cc): no doubling below 25 GB/s per channel, nor on sm90 and newer
// below 50 GB/s when the graph already has more than 4 channels.
constexpr double kDupMinBytesPerS = 25e9;
constexpr double kDupMinManyChannelsBytesPerS = 50e9;
constexpr int kDupManyChannels = 4;
// NCCL_P2P_LL_THRESHOLD's default (src/enqueue.cc): point-to-point operations of at most this many
// bytes per peer run the LL protocol, larger ones Simple.
constexpr double kP2pLlThresholdBytes = 16384;

}  // namespace

NcclTuner::NcclTuner(const NodeType& node, const FabricSpec& fabric, const NcclConstants& nccl)
    : node_(node), fabric_(fabric), nccl_(nccl) {}

std::string NcclTuner::unsupported(const CallShape& shape, const CollectiveChoice& choice) const {
  // NCCL searches an NVLS graph only where the topology holds an NVSwitch (search.cc, ncclTopoCompute:
  // "if (graph->pattern == NCCL_TOPO_PATTERN_NVLS && (system->nodes[NVS].count == 0 || ...)) return").
  auto no_nvswitch = [&] { return "node type " + node_.name + " has a direct NVLink mesh, no NVSwitch"; };
  if (shape.op == CollectiveOp::send_recv) {
    return choice.algorithm == Algorithm::ring ? "" : "SendRecv is point to point (use ring)";
  }
  if (shape.op == CollectiveOp::all_to_all) {
    if (choice.algorithm != Algorithm::ring) return "AllToAll is point to point (use ring)";
    return choice.protocol == Protocol::ll128 ? "NCCL's point to point runs LL or Simple, not LL128" : "";
  }
  switch (choice.algorithm) {
    case Algorithm::ring:
      return "";
    case Algorithm::tree:
      return shape.op == CollectiveOp::all_reduce ? "" : "NCCL's Tree runs AllReduce only";
    case Algorithm::nvls:
      if (shape.op != CollectiveOp::all_reduce) return "this model runs NVLS for AllReduce only";
      if (node_.nvlink_topology == NvlinkTopology::mesh) return no_nvswitch();
      if (!node_.nvls) return "node type " + node_.name + " has no NVLink SHARP switch";
      if (shape.nodes != 1 && !fabric_.sharp) {
        return "NVLS across nodes needs in-network reduction in the fabric (NCCL's CollNet: [fabric] sharp = true)";
      }
      if (choice.protocol != Protocol::simple) return "NVLS runs the Simple protocol only";
      return "";
    case Algorithm::nvls_tree:
      if (shape.op != CollectiveOp::all_reduce) return "NVLSTree runs AllReduce only";
      if (node_.nvlink_topology == NvlinkTopology::mesh) return no_nvswitch();
      if (!node_.nvls) return "node type " + node_.name + " has no NVLink SHARP switch";
      if (shape.nodes < 2) return "NVLSTree spans nodes (NVLS inside one)";
      if (choice.protocol != Protocol::simple) return "NVLSTree runs the Simple protocol only";
      return "";
    case Algorithm::pat:  // ncclPatEnable: AllGather / ReduceScatter with one GPU per node (tuning.cc)
      if (shape.op != CollectiveOp::all_gather && shape.op != CollectiveOp::reduce_scatter) {
        return "PAT runs AllGather and ReduceScatter only";
      }
      if (shape.nodes < 2 || shape.ranks != shape.nodes) return "NCCL runs PAT with one GPU per node only";
      if (choice.protocol != Protocol::simple) return "PAT runs the Simple protocol only";
      return "";
  }
  return "unknown algorithm";
}

double NcclTuner::net_overhead_s(const CallShape& shape, Protocol p) const {
  if (shape.nodes <= 1) return 0;
  const double base = node_.host_cpu == HostCpu::amd ? nccl_.net_overhead_amd_s : nccl_.net_overhead_intel_s;
  return p == Protocol::simple ? base * nccl_.simple_net_overhead_factor : base;
}

NcclTuner::SearchedGraph NcclTuner::ring_graph() const {
  // ncclTopoCompute: start at the fastest speed the path allows, fit as many rings as the links
  // hold, stop when they reserve the whole NVLink; else try slower speeds while they are above
  // 0.49 x the found one, keeping a graph only when nChannels x speed grows. Then
  // ncclTopoDupChannels doubles the channels at half the speed (not below 25 GB/s, nor on sm90+
  // below 50 GB/s with more than 4 channels).
  const double link = node_.nvlink.effective_bw_bytes_per_s();
  const std::vector<double>& speeds = nccl_.intra_search_speeds(node_.sm_arch);
  SearchedGraph best;
  for (double s : speeds) {
    if (s > link) continue;
    if (best.channels > 0 && s / best.intra_bytes_per_s <= kSlowerSpeedMinRatio) break;
    // Clamped before the cast: an ideal link (a test's) holds more rings than an int counts.
    const int channels = static_cast<int>(std::min(link / s, static_cast<double>(nccl_.ring_max_channels)));
    if (channels * s > best.channels * best.intra_bytes_per_s) best = {channels, s, s};
    if (best.channels * best.intra_bytes_per_s >= link) break;
  }
  if (best.channels == 0) return best;
  const bool dup = best.intra_bytes_per_s >= kDupMinBytesPerS &&
                   !(node_.sm_arch > 80 && best.intra_bytes_per_s < kDupMinManyChannelsBytesPerS &&
                     best.channels > kDupManyChannels);
  if (dup) {
    const int doubled = std::min(2 * best.channels, nccl_.ring_max_channels);
    const int divisor = (doubled + best.channels - 1) / best.channels;
    best = {doubled, best.intra_bytes_per_s / divisor, best.inter_bytes_per_s / divisor};
  }
  return best;
}

NcclTuner::SearchedGraph NcclTuner::nvls_graph(int gpus) const {
  // Inside one node the NVLS search forces one channel per GPU (minChannels = maxChannels) and
  // decreases the speed until every head fits (ncclTopoSearchTryNvls: each GPU's link to and from
  // the switch carries 1 unit per channel, 2 for the channel it heads). Its second pass then raises
  // bwInter speed by speed while it is below twice bwIntra: no NIC limits it inside one node.
  const double link = node_.nvlink.effective_bw_bytes_per_s();
  const std::vector<double>& speeds = nccl_.intra_search_speeds(node_.sm_arch);
  const int channels = std::min(gpus, nccl_.nvls_max_channels);
  std::size_t i = 0;
  while (i + 1 < speeds.size() && (speeds[i] > link || (channels + 1) * speeds[i] > link)) ++i;
  if (speeds.empty() || (channels + 1) * speeds[i] > link) return {};
  std::size_t j = i;
  while (j > 0 && speeds[j] < 2 * speeds[i]) --j;
  return {channels, speeds[i], speeds[j]};
}

double NcclTuner::predict_latency_s(const CallShape& shape, const CollectiveChoice& c) const {
  const Algorithm a = c.algorithm;
  const Protocol p = c.protocol;
  const int n = shape.ranks;
  const int nodes = shape.nodes;
  if (shape.op == CollectiveOp::all_to_all) {
    // base + the worst hop (network across nodes, NVLink inside one) + for NCCL one netOverhead per
    // off-node peer (internal/all_to_all.hpp); no route latency, which NCCL's tuner does not see.
    const int per_node = n / std::max(1, nodes);
    const bool nccl_method = shape.all_to_all_method == AllToAllMethod::nccl;
    double hop = nccl_.hop(a, nodes > 1 ? HopClass::net : HopClass::nvlink, p);
    if (!nccl_method && nodes > 1) hop += nccl_.hop(a, HopClass::nvlink, p);  // DeepEP's NVLink forward
    const double proxy = nccl_method ? (n - per_node) * net_overhead_s(shape, p) : 0.0;
    return nccl_.base(a, p) + hop + proxy;
  }
  switch (a) {
    case Algorithm::ring: {
      const bool ar = shape.op == CollectiveOp::all_reduce;
      const int steps = shape.op == CollectiveOp::send_recv ? 1 : (ar ? 2 * (n - 1) : n - 1);
      const int inter = nodes > 1 ? (ar ? 2 * (nodes - 1) : nodes - 1) : 0;
      const double intra = std::max(nccl_.hop(a, HopClass::nvlink, p), net_overhead_s(shape, p));
      // One rank per node exposes every network hop: NCCL prices it at Tree's (tuning.cc).
      const double net = nccl_.hop(n == nodes ? Algorithm::tree : a, HopClass::net, p);
      double lat = nccl_.base(a, p) + (steps - inter) * intra + inter * net;
      if (ar && nodes > 1 && p == Protocol::simple) {
        lat *= node_.sm_arch >= 80 ? nccl_.ring_simple_allreduce_latency_factor
                                   : nccl_.ring_simple_allreduce_latency_factor_pre_sm80;
      }
      return lat;
    }
    case Algorithm::tree: {
      const int ppn = n / nodes;
      return nccl_.base(a, p) +
             2 * ((ppn - 1) * nccl_.hop(a, HopClass::nvlink, p) + std::log2(nodes) * nccl_.hop(a, HopClass::net, p));
    }
    case Algorithm::nvls:  // intraLat, + interLat across nodes (CollNet; tuning.cc)
      return nccl_.base(a, p) + nccl_.hop(a, HopClass::nvlink, p) + (nodes > 1 ? nccl_.hop(a, HopClass::net, p) : 0);
    case Algorithm::nvls_tree:  // intraLat + 2 log2(nNodes) interLat (tuning.cc)
      return nccl_.base(a, p) + nccl_.hop(a, HopClass::nvlink, p) + 2 * std::log2(nodes) * nccl_.hop(a, HopClass::net, p);
    case Algorithm::pat:  // log2(nNodes) interLat / 3.5 + 2.8 us x nRanks (tuning.cc)
      return nccl_.base(a, p) + std::log2(nodes) * nccl_.hop(a, HopClass::net, p) / 3.5 + n * nccl_.pat_rank_latency_s;
  }
  return 0;
}

std::optional<double> NcclTuner::predict_s(const CallShape& shape, const CollectiveChoice& c) const {
  if (!unsupported(shape, c).empty()) {
    return std::nullopt;
  }
  const int n = shape.ranks;
  const int nodes = shape.nodes;
  if (shape.op == CollectiveOp::all_to_all) {
    const internal::AllToAllLoad load = internal::uniform_all_to_all_load(n, nodes, node_.nics, shape.size_bytes);
    const double bw_s = std::max(load.nvlink_bytes / node_.nvlink.effective_bw_bytes_per_s(),
                                 load.nic_bytes / fabric_.nic_bw_bytes_per_s());
    return predict_latency_s(shape, c) + bw_s / nccl_.data_efficiency[int(c.protocol)];
  }
  const double nch = node_.nccl_channels;
  const auto& caps = nccl_.caps(node_.sm_arch);
  const int regime = nodes == 1 ? 0 : (nodes == 2 ? 1 : 2);
  // NCCL's busBw = nChannels x per-channel bandwidth of the searched graph: intra-node, the GPU's
  // NVLink; inter-node, the node's NICs (every channel leaves through its own rail). Intra is used
  // up to two nodes, inter beyond (tuning.cc). On a mesh node the GPU's NVLink too: NCCL's ring
  // search spreads its channels over rings that use every pair's links (internal/ring.cpp).
  const double bw_intra = node_.nvlink.effective_bw_bytes_per_s();
  const double bw_inter = fabric_.link.effective_bw_bytes_per_s() * node_.nics;
  // Inside one NVSwitch node the rings reserve what NCCL's ring graph holds (ring_graph: 360 of an
  // H100's 370.8 GB/s), as NCCL's printed tuning table shows for 2 to 8 GPUs.
  const bool in_switch_node = nodes == 1 && node_.nvlink_topology == NvlinkTopology::nvswitch;
  const SearchedGraph ring = in_switch_node ? ring_graph() : SearchedGraph{};
  const double bus = nodes <= 2 ? (ring.channels > 0 ? ring.channels * ring.intra_bytes_per_s : bw_intra) : bw_inter;
  const bool ar = shape.op == CollectiveOp::all_reduce;
  const double steps = shape.op == CollectiveOp::send_recv ? 1 : (ar ? 2.0 * (n - 1) : n - 1.0);
  double bus_bw = bus;
  double alg_bw = 0;
  switch (c.algorithm) {
    case Algorithm::ring:
      if (c.protocol == Protocol::ll) bus_bw = std::min(caps.ll_max_bytes_per_s, 0.5 * bus);
      if (c.protocol == Protocol::ll128) bus_bw = std::min(0.92 * bus, nch * caps.ring_ll128_bytes_per_s);
      alg_bw = shape.op == CollectiveOp::send_recv ? bus_bw : bus_bw * n / steps;
      break;
    case Algorithm::tree:
      if (c.protocol == Protocol::simple) bus_bw = std::min(0.92 * bus, nch * caps.tree_simple_bytes_per_s[regime]);
      if (c.protocol == Protocol::ll) bus_bw = std::min(bus / nccl_.tree_ll_divisor, caps.ll_max_bytes_per_s);
      if (c.protocol == Protocol::ll128) {
        bus_bw = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nch * caps.tree_ll128_bytes_per_s[regime]);
      }
      alg_bw = bus_bw * 0.85 * 0.5;  // Tree pattern x0.85; algBw = busBw / 2
      break;
    case Algorithm::nvls:
    case Algorithm::nvls_tree:
      if (c.algorithm == Algorithm::nvls && nodes == 1) {
        // NCCL's NVLS graph inside the node (nvls_graph): per channel min(bwIntra x efficiency x
        // (nCh - 1)/nCh x 2, bwInter), times nCh (tuning.cc). It grows with the GPUs in the call:
        // 102 GB/s on 2 H100s, 240 on 4, 476 on 8, so NCCL runs Ring below 6 GPUs.
        const SearchedGraph g = nvls_graph(n);
        if (g.channels < 2) return std::nullopt;  // tuning.cc: "NVLS/NVLStree needs at least 2 channels"
        const double per_channel = g.intra_bytes_per_s * nccl_.nvls_efficiency * (g.channels - 1) / g.channels * 2;
        bus_bw = g.channels * std::min(per_channel, g.inter_bytes_per_s);
        alg_bw = bus_bw * n / steps;
        break;
      }
      // The in-switch reduction's bound; across nodes (NVLS with CollNet, NVLSTree) also the NICs,
      // doubled for NVLSTree on two nodes where the tree is one exchange (tuning.cc since NCCL 2.28).
      // NCCL searches this graph with the NICs (one head per rail), which this model does not
      // reproduce: the node's channel count stands in for its channels.
      bus_bw = bw_intra * nccl_.nvls_efficiency * (nch - 1) / nch * 2;
      if (c.algorithm == Algorithm::nvls_tree) bus_bw = std::min(bus_bw, bw_inter * (nodes <= 2 ? 2 : 1));
      if (c.algorithm == Algorithm::nvls && nodes > 1) bus_bw = std::min(bus_bw, bw_inter);
      alg_bw = bus_bw * n / steps;
      break;
    case Algorithm::pat:  // busBw x 0.75, not converted to algBw for AllGather / ReduceScatter (tuning.cc)
      alg_bw = bus * nccl_.pat_bw_factor;
      break;
  }
  return predict_latency_s(shape, c) + shape.size_bytes / alg_bw;
}

CollectiveChoice NcclTuner::choose(const CallShape& shape) const {
  if (shape.op == CollectiveOp::all_to_all) {
    const double per_peer_bytes = shape.size_bytes / std::max(1, shape.ranks);
    return {Algorithm::ring, per_peer_bytes <= kP2pLlThresholdBytes ? Protocol::ll : Protocol::simple};
  }
  CollectiveChoice best{Algorithm::ring, Protocol::simple};
  double best_s = std::numeric_limits<double>::infinity();
  for (Algorithm a : kAllAlgorithms) {
    for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
      const auto t = predict_s(shape, {a, p});
      if (t && *t < best_s) {
        best_s = *t;
        best = {a, p};
      }
    }
  }
  return best;
}

}  // namespace commbound::network
