#include "network/internal/all_to_all.hpp"

#include "core/check.hpp"
#include "core/size_label.hpp"
#include "core/units.hpp"
#include "network/internal/fluid_flows.hpp"
#include "network/internal/link_occupancy.hpp"

#include <fmt/format.h>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {
namespace {

// The local GPU that owns the NIC on `local`'s rail (the PXN relay for data bound to `local`), as
// Platform routes it (internal/fabric_zone.cpp).
int rail_owner(const NodeType& node, int local) {
  const int rail = local * node.nics / node.gpus;
  return rail * node.gpus / node.nics;
}

// The nodes `ranks` span, in the order they first appear (CollectiveCall::node_bytes' columns).
std::vector<int> nodes_of(const Platform& platform, const std::vector<int>& ranks) {
  std::vector<int> nodes;
  for (int r : ranks) {
    const int node = platform.node_of(r);
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  }
  return nodes;
}

// Merged legs: bytes per (source rank, destination rank), in first-added order.
class Legs {
public:
  explicit Legs(int platform_ranks) : platform_ranks_(platform_ranks) {}
  void add(int src, int dst, double bytes) {
    if (src == dst || bytes <= 0) return;
    const long long key = static_cast<long long>(src) * platform_ranks_ + dst;
    auto [it, fresh] = index_.try_emplace(key, out_.size());
    if (fresh) out_.push_back({src, dst, 0});
    out_[it->second].bytes += bytes;
  }
  std::vector<Transfer> take() { return std::move(out_); }

private:
  int platform_ranks_;
  std::unordered_map<long long, std::size_t> index_;
  std::vector<Transfer> out_;
};

// The latency of the path pair (i, j) crosses: the protocol hop latency and the route's switches of
// each transfer it rides (two for a forwarded hierarchical pair).
double path_latency_s(const AlgorithmParams& params, int src, int dst) {
  const Platform& platform = params.platform;
  auto hop = [&](int a, int b) { return params.hop_s(a, b) + route_latency_s(platform.gpu(a), platform.gpu(b)); };
  if (params.call.all_to_all_method == AllToAllMethod::nccl || platform.node_of(src) == platform.node_of(dst)) {
    return hop(src, dst);
  }
  const int forwarder = platform.node_of(dst) * platform.spec().node.gpus + platform.local_of(src);
  return hop(src, forwarder) + (forwarder != dst ? hop(forwarder, dst) : 0.0);
}

// The merged transfers as coupled groups (the file comment): those of one kind (inside a node or
// across nodes) and the same wire bytes move at one rate, their group's max-min fair share over the
// links of all its edges (coupled_group_rates).
void plan_coupled_groups(const Platform& platform, AllToAllPlan& plan, double efficiency) {
  std::map<std::pair<bool, std::uint64_t>, std::vector<Edge>> by_kind_and_bytes;
  for (const Transfer& t : plan.transfers) {
    const auto wire = static_cast<std::uint64_t>(std::llround(t.bytes / efficiency));
    if (wire == 0) continue;
    const bool across = platform.node_of(t.src_rank) != platform.node_of(t.dst_rank);
    by_kind_and_bytes[{across, wire}].emplace_back(platform.gpu(t.src_rank), platform.gpu(t.dst_rank));
  }
  for (auto& [key, group] : by_kind_and_bytes) {
    plan.wire_bytes.push_back(static_cast<double>(key.second));
    plan.edges.push_back(std::move(group));
  }
  if (!plan.edges.empty()) {
    plan.rates_bytes_per_s =
        coupled_group_rates(group_links(plan.edges), std::vector<double>(plan.edges.size(), -1));
  }
}

// The busiest GPU's NVLink and the busiest NIC, each way, under `transfers` (wire bytes at
// `efficiency`), and their times at the links' rates alone (CollectiveResult::loads). A transfer
// inside a node is NVLink out of its source and into its destination; one across nodes leaves by
// its source GPU's NIC (the rail it owns a share of) and arrives by its destination's.
std::vector<CostTerm> busiest_links(const Platform& platform, const std::vector<Transfer>& transfers, double efficiency) {
  const NodeType& node = platform.spec().node;
  const auto gpus = static_cast<std::size_t>(platform.ranks());
  const auto nics = static_cast<std::size_t>(platform.spec().nodes) * static_cast<std::size_t>(node.nics);
  std::vector<double> nvlink_out(gpus), nvlink_in(gpus), nic_out(nics), nic_in(nics);
  auto nic_of = [&](int rank) {
    return static_cast<std::size_t>(platform.node_of(rank)) * static_cast<std::size_t>(node.nics) +
           static_cast<std::size_t>(platform.local_of(rank) * node.nics / node.gpus);
  };
  for (const Transfer& t : transfers) {
    const double wire = t.bytes / efficiency;
    if (platform.node_of(t.src_rank) == platform.node_of(t.dst_rank)) {
      nvlink_out[static_cast<std::size_t>(t.src_rank)] += wire;
      nvlink_in[static_cast<std::size_t>(t.dst_rank)] += wire;
    } else {
      nic_out[nic_of(t.src_rank)] += wire;
      nic_in[nic_of(t.dst_rank)] += wire;
    }
  }
  std::vector<CostTerm> loads;
  auto add = [&](const char* what, const std::vector<double>& bytes, double rate_bytes_per_s) {
    const double most = bytes.empty() ? 0 : *std::max_element(bytes.begin(), bytes.end());
    if (most <= 0) return;
    loads.push_back({fmt::format("{}: {} at {:.1f} GB/s", what, size_label(most), rate_bytes_per_s / kBytesPerGB), 0, 0,
                     most / rate_bytes_per_s});
  };
  const double nvlink = node.nvlink.effective_bw_bytes_per_s();
  add("NVLink out of the busiest GPU", nvlink_out, nvlink);
  add("NVLink into the busiest GPU", nvlink_in, nvlink);
  add("the busiest NIC sending", nic_out, platform.spec().fabric.nic_bw_bytes_per_s());
  add("the busiest NIC receiving", nic_in, platform.spec().fabric.nic_bw_bytes_per_s());
  return loads;
}

// The call's plan: its latency (the worst pair's path and, for nccl, the CPU proxy posting one
// network operation per off-node peer of the rank with the most), its transfers and, merged, their
// coupled groups.
AllToAllPlan make_plan(const AlgorithmParams& params, bool merge) {
  const Platform& platform = params.platform;
  const CollectiveCall& call = params.call;
  const int n = static_cast<int>(call.ranks.size());
  const bool nccl = call.all_to_all_method == AllToAllMethod::nccl;
  AllToAllPlan plan;
  double worst_path_s = 0;
  int most_off_node_peers = 0;
  for (int i = 0; i < n; ++i) {
    const int src = call.ranks[static_cast<std::size_t>(i)];
    int off_node_peers = 0;
    for (int j = 0; j < n; ++j) {
      if (pair_bytes(call, i, j) <= 0) continue;
      const int dst = call.ranks[static_cast<std::size_t>(j)];
      worst_path_s = std::max(worst_path_s, path_latency_s(params, src, dst));
      if (platform.node_of(src) != platform.node_of(dst)) ++off_node_peers;
    }
    most_off_node_peers = std::max(most_off_node_peers, off_node_peers);
  }
  const double proxy_s = nccl ? most_off_node_peers * params.net_overhead_s * params.latency_factor : 0.0;
  plan.path_latency_s = worst_path_s + proxy_s;
  plan.transfers = all_to_all_transfers(platform, call, merge);
  if (merge) plan_coupled_groups(platform, plan, params.efficiency());
  return plan;
}

}  // namespace

double pair_bytes(const CollectiveCall& call, int i, int j) {
  if (i == j) return 0;
  const std::size_t n = call.ranks.size();
  if (call.peer_bytes) return (*call.peer_bytes)[static_cast<std::size_t>(i) * n + static_cast<std::size_t>(j)];
  return call.size_bytes / static_cast<double>(n);
}

std::vector<Transfer> all_to_all_transfers(const Platform& platform, const CollectiveCall& call, bool merge) {
  const int n = static_cast<int>(call.ranks.size());
  const NodeType& node = platform.spec().node;
  const bool hierarchical = call.all_to_all_method == AllToAllMethod::hierarchical;
  COMMBOUND_CHECK(merge || !hierarchical, "the hierarchical all-to-all runs merged only");
  const bool per_node = hierarchical && call.node_bytes;  // RDMA legs from node_bytes
  const std::vector<int> nodes = per_node ? nodes_of(platform, call.ranks) : std::vector<int>{};
  const auto m = nodes.size();
  Legs legs(platform.ranks());
  for (int i = 0; i < n; ++i) {
    const int src = call.ranks[static_cast<std::size_t>(i)];
    const int src_node = platform.node_of(src);
    if (per_node) {  // one RDMA leg per destination node, its bytes given
      for (std::size_t k = 0; k < m; ++k) {
        if (nodes[k] == src_node) continue;
        legs.add(src, nodes[k] * node.gpus + platform.local_of(src), (*call.node_bytes)[static_cast<std::size_t>(i) * m + k]);
      }
    }
    for (int j = 0; j < n; ++j) {
      const double bytes = pair_bytes(call, i, j);
      if (bytes <= 0) continue;
      const int dst = call.ranks[static_cast<std::size_t>(j)];
      const int dst_node = platform.node_of(dst);
      if (!merge || src_node == dst_node) {
        legs.add(src, dst, bytes);
      } else if (hierarchical) {  // RDMA on the sender's rail, then NVLink inside the destination node
        const int forwarder = dst_node * node.gpus + platform.local_of(src);
        if (!per_node) legs.add(src, forwarder, bytes);
        legs.add(forwarder, dst, bytes);
      } else {  // PXN: NVLink to the GPU on the destination's rail, then its NIC
        const int relay = src_node * node.gpus + rail_owner(node, platform.local_of(dst));
        legs.add(src, relay, bytes);
        legs.add(relay, dst, bytes);
      }
    }
  }
  return legs.take();
}

AllToAllLoad uniform_all_to_all_load(int ranks, int nodes, int rails, double size_bytes) {
  const double n = ranks;
  const double p = static_cast<double>(ranks) / nodes;  // ranks per node
  const double per_peer = size_bytes / n;
  // A GPU's NVLink carries its p - 1 local peers' bytes and, of its n - p off-node peers, the
  // (p - 1)/p that sit on another rail than its own (relayed out by PXN, or forwarded in by DeepEP).
  const double off_rail = std::max(1.0, std::min(p, static_cast<double>(rails)));
  const double nvlink = per_peer * ((p - 1) + (n - p) * (off_rail - 1) / off_rail);
  // A node's p x (n - p) off-node pairs share its rails evenly.
  const double nic = nodes > 1 ? per_peer * p * (n - p) / off_rail : 0.0;
  return {nvlink, nic};
}

AlgorithmResult run_all_to_all(const AlgorithmParams& params) {
  const CollectiveCall& call = params.call;
  const bool merge = params.merge_channels || call.all_to_all_method != AllToAllMethod::nccl;
  const RouteCache::AllToAllKey key{call.ranks,         call.all_to_all_method, merge, params.choice.protocol,
                                    call.size_bytes,    call.peer_bytes,        call.node_bytes};
  AllToAllPlan& plan = params.routes.all_to_all_plan(key, [&] { return make_plan(params, merge); });
  AlgorithmResult result;
  result.latency_s = params.base_s + plan.path_latency_s;
  if (params.itemize) result.loads = busiest_links(params.platform, plan.transfers, params.efficiency());
  sg4::this_actor::sleep_for(params.base_s);
  const Platform& platform = params.platform;
  const double efficiency = params.efficiency();
  // Merged: the coupled groups as segment flows, when this collective may take a slot for each.
  const int groups = static_cast<int>(plan.edges.size());
  if (merge && groups == 0) return result;  // nothing leaves any GPU
  if (merge && groups <= platform.free_segments() - platform.reserved_segments()) {
    std::vector<GroupFlow> flows;
    for (int g = 0; g < groups; ++g) flows.push_back({plan.edges[g], plan.wire_bytes[g], plan.rates_bytes_per_s[g]});
    const FluidRun run = run_fluid(params.platform, flows, &plan.segment_routes);
    result.bandwidth_s = run.bandwidth_s;
    result.flows = run.flows;
    return result;
  }
  const std::vector<Transfer>& transfers = plan.transfers;
  // One SimGrid flow per transfer, all at once, uncapped: the max-min solver shares every link
  // between them (and whatever else is in flight) and re-shares as they complete. Flows between GPU
  // hosts take no segment slot (fluid_flows.hpp), so n^2 of them may run.
  // They are not tracked by LinkOccupancy: every collective is simulated from now on.
  params.platform.occupancy().disable();
  const double start_s = sg4::Engine::get_clock();
  std::vector<sg4::CommPtr> comms;
  std::vector<double> latency_s;
  comms.reserve(transfers.size());
  latency_s.reserve(transfers.size());
  for (const Transfer& t : transfers) {
    const auto wire = static_cast<std::uint64_t>(std::llround(t.bytes / efficiency));
    if (wire == 0) continue;
    sg4::Host* src = platform.gpu(t.src_rank);
    sg4::Host* dst = platform.gpu(t.dst_rank);
    latency_s.push_back(route_latency_s(src, dst));
    comms.push_back(sg4::Comm::sendto_async(src, dst, wire));
  }
  sg4::Comm::wait_all(comms);
  for (std::size_t k = 0; k < comms.size(); ++k) {
    result.bandwidth_s = std::max(result.bandwidth_s, comms[k]->get_finish_time() - start_s - latency_s[k]);
  }
  result.flows = static_cast<long>(comms.size());
  return result;
}

}  // namespace commbound::network::internal
