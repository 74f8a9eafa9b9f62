#include "network/collective_floor.hpp"

#include <algorithm>
#include <map>

namespace commbound::network {

CollectiveFloor::CollectiveFloor(const ClusterSpec& cluster, std::span<const int> ranks)
    : members_(static_cast<int>(ranks.size())) {
  std::map<int, int> index_of_node;
  for (int r : ranks) {
    const auto [it, fresh] = index_of_node.try_emplace(r / cluster.node.gpus, static_cast<int>(index_of_node.size()));
    if (fresh) {
      members_per_node_.push_back(0);
      nodes_.push_back(r / cluster.node.gpus);
    }
    ++members_per_node_[static_cast<std::size_t>(it->second)];
    node_index_.push_back(it->second);
  }
  spans_nodes_ = members_per_node_.size() > 1;
  // Platform's links: one NVLink to the switch at the GPU's whole rate, or gpus - 1 mesh links at
  // an even share of it; a PCIe path to the rail's NIC; each NIC at the fabric's payload rate, at
  // the fastest draw of a link spread where there is one (a floor must hold for every NIC).
  gpu_bytes_per_s_ = cluster.node.nvlink.effective_bw_bytes_per_s() +
                     (spans_nodes_ ? cluster.node.pcie.effective_bw_bytes_per_s() : 0.0);
  const double fastest = cluster.fabric.spread && !cluster.fabric.spread->pair_factors.empty()
                             ? cluster.fabric.spread->pair_factors.back()
                             : 1.0;
  node_bytes_per_s_ = cluster.node.nics * cluster.fabric.nic_bw_bytes_per_s() * fastest;
}

double CollectiveFloor::seconds(CollectiveOp op, double size_bytes, const std::vector<double>* peer_bytes) const {
  if (members_ < 2) return 0.0;
  if (op == CollectiveOp::all_to_all) return all_to_all_seconds(size_bytes, peer_bytes);
  const double n = members_;
  const int fewest_on_a_node = *std::min_element(members_per_node_.begin(), members_per_node_.end());
  double gpu_bytes = 0, node_bytes = 0;
  switch (op) {
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
      gpu_bytes = (n - 1) / n * size_bytes;
      node_bytes = spans_nodes_ ? (n - fewest_on_a_node) / n * size_bytes : 0.0;
      break;
    case CollectiveOp::all_reduce:
      gpu_bytes = size_bytes;
      node_bytes = spans_nodes_ ? size_bytes : 0.0;
      break;
    case CollectiveOp::send_recv:
      gpu_bytes = size_bytes;
      node_bytes = spans_nodes_ ? size_bytes : 0.0;
      break;
    case CollectiveOp::all_to_all:
      break;  // above
  }
  return std::max(gpu_bytes / gpu_bytes_per_s_, node_bytes / node_bytes_per_s_);
}

CollectiveFloor::NodeCrossing CollectiveFloor::node_crossing(CollectiveOp op, double size_bytes, int node) const {
  const auto at = std::find(nodes_.begin(), nodes_.end(), node);
  if (!spans_nodes_ || at == nodes_.end()) return {};
  const double n = members_;
  const double m = members_per_node_[static_cast<std::size_t>(at - nodes_.begin())];
  switch (op) {
    case CollectiveOp::all_gather: return {0, (n - m) / n * size_bytes};
    case CollectiveOp::reduce_scatter: return {(n - m) / n * size_bytes, 0};
    case CollectiveOp::all_reduce: return {size_bytes, 0};
    case CollectiveOp::send_recv:
    case CollectiveOp::all_to_all: return {};
  }
  return {};
}

double CollectiveFloor::all_to_all_seconds(double size_bytes, const std::vector<double>* peer_bytes) const {
  const std::size_t n = static_cast<std::size_t>(members_);
  auto bytes = [&](std::size_t i, std::size_t j) {
    return i == j ? 0.0 : peer_bytes ? (*peer_bytes)[i * n + j] : size_bytes / static_cast<double>(n);
  };
  std::vector<double> received(n, 0.0);
  std::vector<double> leaving_node(members_per_node_.size(), 0.0);
  double busiest_gpu = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double sent = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const double b = bytes(i, j);
      sent += b;
      received[j] += b;
      if (node_index_[i] != node_index_[j]) leaving_node[static_cast<std::size_t>(node_index_[i])] += b;
    }
    busiest_gpu = std::max(busiest_gpu, sent);
  }
  busiest_gpu = std::max(busiest_gpu, *std::max_element(received.begin(), received.end()));
  const double busiest_node = *std::max_element(leaving_node.begin(), leaving_node.end());
  return std::max(busiest_gpu / gpu_bytes_per_s_, busiest_node / node_bytes_per_s_);
}

}  // namespace commbound::network
