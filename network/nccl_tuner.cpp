#include "network/nccl_tuner.hpp"

#include "core/ceil_div.hpp"
#include "network/internal/algorithm.hpp"
#include "network/internal/all_to_all.hpp"
#include "network/tuner_plugin.hpp"

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
  if (shape.op == CollectiveOp::send_recv) {
    return choice.algorithm == Algorithm::ring ? "" : "SendRecv is point to point (use ring)";
  }
  if (shape.op == CollectiveOp::all_to_all) {
    if (choice.algorithm != Algorithm::ring) return "AllToAll is point to point (use ring)";
    return choice.protocol == Protocol::ll128 ? "NCCL's point to point runs LL or Simple, not LL128" : "";
  }
  return internal::algorithm_spec(choice.algorithm).unsupported(*this, shape, choice.protocol);
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
    const int divisor = ceil_div(doubled, best.channels);
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
  return internal::algorithm_spec(a).latency_s(*this, shape, p);
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
  const int regime = nodes == 1 ? 0 : (nodes == 2 ? 1 : 2);
  // NCCL's busBw = nChannels x per-channel bandwidth of the searched graph: intra-node, the GPU's
  // NVLink; inter-node, the node's NICs (every channel leaves through its own rail). Intra is used
  // up to two nodes, inter beyond (tuning.cc). On a mesh node the GPU's NVLink too: NCCL's ring
  // search spreads its channels over rings that use every pair's links (internal/ring.cpp).
  internal::TunerBandwidth bw;
  bw.intra_bytes_per_s = node_.nvlink.effective_bw_bytes_per_s();
  // Inter-node, the NICs the communicator's GPUs own: a GPU reaches another GPU's NIC only by PXN,
  // which relays through a GPU of the same communicator, so a communicator with fewer GPUs on a node
  // than it has NICs leaves the others to other traffic (one GPU per node: one NIC, 46-47 GB/s busbw
  // for AllGather and ReduceScatter of 128 MiB-4 GiB on 10 H100 nodes, xxrjun/nccl-tests-cluster log
  // nccl_N10_G1.log).
  bw.inter_bytes_per_s = fabric_.link.effective_bw_bytes_per_s() * node_.nics_reached(n / std::max(1, nodes));
  // Inside one NVSwitch node the rings reserve what NCCL's ring graph holds (ring_graph: 360 of an
  // H100's 370.8 GB/s), as NCCL's printed tuning table shows for 2 to 8 GPUs.
  const bool in_switch_node = nodes == 1 && node_.nvlink_topology == NvlinkTopology::nvswitch;
  const SearchedGraph ring = in_switch_node ? ring_graph() : SearchedGraph{};
  bw.bus_bytes_per_s = nodes <= 2 ? (ring.channels > 0 ? ring.channels * ring.intra_bytes_per_s : bw.intra_bytes_per_s)
                                  : bw.inter_bytes_per_s;
  const bool ar = shape.op == CollectiveOp::all_reduce;
  bw.steps = shape.op == CollectiveOp::send_recv ? 1 : (ar ? 2.0 * (n - 1) : n - 1.0);
  bw.channels = node_.nccl_channels;
  bw.caps = &nccl_.caps(node_.sm_arch);
  bw.regime = regime;
  const std::optional<double> alg_bw = internal::algorithm_spec(c.algorithm).alg_bw_bytes_per_s(*this, shape, c.protocol, bw);
  if (!alg_bw) return std::nullopt;
  return predict_latency_s(shape, c) + shape.size_bytes / *alg_bw;
}

std::optional<CollectiveChoice> NcclTuner::plugin_choice(const CallShape& shape) const {
  if (!nccl_.tuner_plugin || shape.op == CollectiveOp::all_to_all) return std::nullopt;
  const auto runs = [&](const CollectiveChoice& c) { return unsupported(shape, c).empty(); };
  return nccl_.tuner_plugin->choose(shape, runs);
}

CollectiveChoice NcclTuner::choose(const CallShape& shape) const {
  if (shape.op == CollectiveOp::all_to_all) {
    const double per_peer_bytes = shape.size_bytes / std::max(1, shape.ranks);
    return {Algorithm::ring, per_peer_bytes <= kP2pLlThresholdBytes ? Protocol::ll : Protocol::simple};
  }
  if (const auto c = plugin_choice(shape)) return *c;
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
