#include "network/internal/fabric_zone.hpp"

#include "core/ceil_div.hpp"
#include "core/check.hpp"
#include "core/splitmix64.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u/Host.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {
namespace {

// Fatpipe links stand for switch traversals: latency only, never a bandwidth limit.
constexpr double kFatpipeBwBytesPerS = 1e18;
// Host speed is irrelevant to communication; compute is timed by the cost model, not by SimGrid.
constexpr double kHostSpeedFlopsPerS = 1e12;

}  // namespace

TreePlan plan_tree(const ClusterSpec& spec) {
  TreePlan plan;
  TreeGeometry& g = plan.geometry;
  const FabricSpec& f = spec.fabric;
  g.endpoints = spec.nodes * spec.node.nics;
  if (f.topology == Topology::single_switch) {
    g.levels = 1;
    g.down_ports = g.endpoints;
    g.leaves = 1;
    return plan;
  }
  const int radix = f.switch_radix;
  g.up_ports = std::max(1, static_cast<int>(std::lround(radix / (1.0 + f.oversubscription))));
  g.down_ports = radix - g.up_ports;
  g.leaves = f.topology == Topology::fat_tree ? ceil_div(g.endpoints, g.down_ports)
                                              : ceil_div(spec.nodes, g.down_ports) * spec.node.nics;
  g.leaves_per_pod = radix / 2;
  g.core_per_agg = radix / 2;
  int needed = 3;
  if (g.leaves == 1) {
    needed = 1;
  } else if (g.leaves <= radix) {
    needed = 2;
  } else if (ceil_div(g.leaves, g.leaves_per_pod) > radix) {
    plan.error = "needs " + std::to_string(g.leaves) + " leaf switches of radix " + std::to_string(radix) +
                 ", more than a 3-level fat-tree holds (" + std::to_string(radix * g.leaves_per_pod) + ")";
    return plan;
  }
  if (f.levels != 0 && f.levels < needed) {
    plan.error = std::to_string(g.leaves) + " leaf switches of radix " + std::to_string(radix) + " need " +
                 std::to_string(needed) + " levels, not " + std::to_string(f.levels);
    return plan;
  }
  g.levels = f.levels != 0 ? f.levels : needed;
  if (g.levels == 3) {
    g.pods = ceil_div(g.leaves, g.leaves_per_pod);
  }
  return plan;
}

FabricZone::FabricZone(const ClusterSpec& spec, const TreeGeometry& geometry, int segment_slots)
    : NetZoneImpl("cluster"),
      spec_(spec),
      geometry_(geometry),
      mesh_(spec.node.nvlink_topology == NvlinkTopology::mesh),
      hosts_per_node_(spec.node.gpus + (mesh_ ? 0 : 1)) {
  sg4::NetZone* zone = get_iface();
  const NodeType& node = spec_.node;
  for (int n = 0; n < spec_.nodes; ++n) {
    const std::string prefix = "n" + std::to_string(n);
    for (int g = 0; g < node.gpus; ++g) {
      gpu_hosts_.push_back(zone->create_host(prefix + ".gpu" + std::to_string(g), kHostSpeedFlopsPerS));
    }
    if (!mesh_) nvswitch_hosts_.push_back(zone->create_host(prefix + ".nvswitch", kHostSpeedFlopsPerS));
  }
  segment_base_id_ = static_cast<unsigned long>(spec_.nodes) * hosts_per_node_;
  for (int j = 0; j < segment_slots; ++j) {
    segment_hosts_.push_back(zone->create_host("segment" + std::to_string(j) + ".src", kHostSpeedFlopsPerS));
    segment_hosts_.push_back(zone->create_host("segment" + std::to_string(j) + ".dst", kHostSpeedFlopsPerS));
  }
  for (int n = 0; n < spec_.nodes; ++n) {
    const std::string prefix = "n" + std::to_string(n);
    for (int g = 0; g < node.gpus; ++g) {
      const std::string gpu = prefix + ".gpu" + std::to_string(g);
      if (!mesh_) nvlink_.push_back(make_duplex(gpu + ".nvlink", node.nvlink_link_bw_bytes_per_s(), node.nvlink.latency_s));
      pcie_.push_back(make_duplex(gpu + ".pcie", node.pcie.effective_bw_bytes_per_s(), node.pcie.latency_s));
    }
    for (int a = 0; mesh_ && a < node.gpus; ++a) {  // in mesh_pair() order
      for (int b = a + 1; b < node.gpus; ++b) {
        nvlink_.push_back(make_duplex(prefix + ".nvlink" + std::to_string(a) + "-" + std::to_string(b),
                                      node.nvlink_link_bw_bytes_per_s(), node.nvlink.latency_s));
      }
    }
    for (int k = 0; k < node.nics; ++k) {
      nic_.push_back(make_duplex(prefix + ".nic" + std::to_string(k), spec_.fabric.nic_bw_bytes_per_s(n, k), 0));
    }
  }
  build_fabric();
  loopback_ = make_fatpipe("loopback", 0);
  for (int j = 0; j < segment_slots; ++j) {
    sg4::Link* cap = zone->create_link("segment" + std::to_string(j) + ".cap", kFatpipeBwBytesPerS);
    link_infos_.push_back({cap->get_name(), kFatpipeBwBytesPerS, 0, false, false, true});
    segment_cap_links_.push_back(cap);
    segment_cap_.push_back(Hop{get_link_list_impl({sg4::LinkInRoute(cap)}, false).front(), 0,
                               static_cast<int>(link_infos_.size()) - 1, 0});
  }
  segment_route_.resize(segment_slots);
  segment_latency_s_.resize(segment_slots);
  zone->seal();
}

FabricZone::Duplex FabricZone::make_duplex(const std::string& name, double bw_bytes_per_s, double latency_s) {
  sg4::Link* link = get_iface()->create_split_duplex_link(name, bw_bytes_per_s)->set_latency(latency_s);
  const int info = static_cast<int>(link_infos_.size());
  link_infos_.push_back({name, bw_bytes_per_s, latency_s, true, false, false});
  auto impl = [&](sg4::LinkInRoute::Direction d) {
    return get_link_list_impl({sg4::LinkInRoute(link, d)}, false).front();
  };
  return {Hop{impl(sg4::LinkInRoute::Direction::UP), latency_s, info, 1},
          Hop{impl(sg4::LinkInRoute::Direction::DOWN), latency_s, info, 2}};
}

FabricZone::Hop FabricZone::make_fatpipe(const std::string& name, double latency_s) {
  sg4::Link* link = get_iface()
                        ->create_link(name, kFatpipeBwBytesPerS)
                        ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                        ->set_latency(latency_s);
  const int info = static_cast<int>(link_infos_.size());
  link_infos_.push_back({name, kFatpipeBwBytesPerS, latency_s, false, true, false});
  return Hop{get_link_list_impl({sg4::LinkInRoute(link)}, false).front(), latency_s, info, 0};
}

void FabricZone::build_fabric() {
  const TreeGeometry& g = geometry_;
  const double port_bw = spec_.fabric.link.effective_bw_bytes_per_s();
  const double hop_s = spec_.fabric.switch_latency_s;
  leaf_xbar_.push_back(make_fatpipe("fabric.leaf_hop", hop_s));
  if (g.levels >= 2) {
    upper_xbar_.push_back(make_fatpipe(g.levels == 2 ? "fabric.spine_hop" : "fabric.agg_hop", hop_s));
  }
  if (g.levels == 3) {
    upper_xbar_.push_back(make_fatpipe("fabric.core_hop", hop_s));
  }
  const bool ecmp = spec_.fabric.routing == Routing::ecmp;
  if (g.levels >= 2) {
    for (int l = 0; l < g.leaves; ++l) {
      const std::string leaf = "leaf" + std::to_string(l);
      if (ecmp) {
        for (int j = 0; j < g.up_ports; ++j) {
          leaf_up_.push_back(make_duplex(leaf + ".up" + std::to_string(j), port_bw, 0));
        }
      } else {
        leaf_up_.push_back(make_duplex(leaf + ".up_bundle", port_bw * g.up_ports, 0));
      }
    }
  }
  if (g.levels == 3) {
    for (int p = 0; p < g.pods; ++p) {
      const std::string pod = "pod" + std::to_string(p);
      if (ecmp) {
        for (int a = 0; a < g.up_ports; ++a) {
          for (int c = 0; c < g.core_per_agg; ++c) {
            pod_up_.push_back(make_duplex(pod + ".agg" + std::to_string(a) + ".up" + std::to_string(c), port_bw, 0));
          }
        }
      } else {
        pod_up_.push_back(make_duplex(pod + ".up_bundle", port_bw * g.up_ports * g.core_per_agg, 0));
      }
    }
  }
}

int FabricZone::mesh_pair(int node, int a, int b) const {
  const int gpus = spec_.node.gpus;
  const int lo = std::min(a, b);
  const int hi = std::max(a, b);
  // Pairs (lo, hi) in row order: rows 0..lo-1 hold (gpus - 1) + ... + (gpus - lo) pairs.
  return node * gpus * (gpus - 1) / 2 + lo * (2 * gpus - lo - 1) / 2 + (hi - lo - 1);
}

template <class Visit>
void FabricZone::walk_nvlink(int node, int a, int b, Visit&& visit) const {
  const int gpus = spec_.node.gpus;
  if (mesh_) {
    const Duplex& link = nvlink_[mesh_pair(node, a, b)];
    visit(a < b ? link.up : link.down);
    return;
  }
  if (a != gpus) visit(nvlink_[node * gpus + a].up);
  if (b != gpus) visit(nvlink_[node * gpus + b].down);
}

int FabricZone::leaf_of(int nic) const {
  const TreeGeometry& g = geometry_;
  if (g.levels == 1) {
    return 0;
  }
  if (spec_.fabric.topology == Topology::rail_optimized) {
    const int nics = spec_.node.nics;
    return (nic / nics / g.down_ports) * nics + nic % nics;
  }
  return nic / g.down_ports;
}

template <class Visit>
void FabricZone::walk_fabric(int src_nic, int dst_nic, Visit&& visit) const {
  const TreeGeometry& g = geometry_;
  const bool ecmp = spec_.fabric.routing == Routing::ecmp;
  visit(nic_[src_nic].up);
  const int ls = leaf_of(src_nic);
  const int ld = leaf_of(dst_nic);
  visit(leaf_xbar_[0]);
  if (ls != ld) {
    const std::uint64_t h = splitmix64((static_cast<std::uint64_t>(src_nic) << 32) ^ static_cast<std::uint64_t>(dst_nic) ^
                                (static_cast<std::uint64_t>(spec_.fabric.ecmp_seed) << 48));
    const int u = g.up_ports;
    const int a = ecmp ? static_cast<int>(h % static_cast<std::uint64_t>(u)) : 0;
    const int ps = g.levels == 3 ? ls / g.leaves_per_pod : 0;
    const int pd = g.levels == 3 ? ld / g.leaves_per_pod : 0;
    visit(ecmp ? leaf_up_[ls * u + a].up : leaf_up_[ls].up);
    visit(upper_xbar_[0]);
    if (ps != pd) {
      const int cpa = g.core_per_agg;
      const int c = ecmp ? static_cast<int>((h / static_cast<std::uint64_t>(u)) % static_cast<std::uint64_t>(cpa)) : 0;
      visit(ecmp ? pod_up_[(ps * u + a) * cpa + c].up : pod_up_[ps].up);
      visit(upper_xbar_[1]);
      visit(ecmp ? pod_up_[(pd * u + a) * cpa + c].down : pod_up_[pd].down);
      visit(upper_xbar_[0]);
    }
    visit(ecmp ? leaf_up_[ld * u + a].down : leaf_up_[ld].down);
    visit(leaf_xbar_[0]);
  }
  visit(nic_[dst_nic].down);
}

template <class Visit>
void FabricZone::walk(unsigned long src_id, unsigned long dst_id, Visit&& visit) const {
  COMMBOUND_CHECK(src_id < segment_base_id_ && dst_id < segment_base_id_,
                  "segment hosts are routed by get_local_route() alone");
  if (src_id == dst_id) {
    visit(loopback_);  // SimGrid needs a non-empty route, even from a host to itself
    return;
  }
  const int gpus = spec_.node.gpus;
  const int nics = spec_.node.nics;
  const int sn = static_cast<int>(src_id) / hosts_per_node_;
  const int sl = static_cast<int>(src_id) % hosts_per_node_;
  const int dn = static_cast<int>(dst_id) / hosts_per_node_;
  const int dl = static_cast<int>(dst_id) % hosts_per_node_;
  const bool src_is_switch = sl == gpus;  // never on a mesh node, whose hosts are its GPUs
  const bool dst_is_switch = dl == gpus;
  if (sn == dn) {
    walk_nvlink(sn, sl, dl, visit);
    return;
  }
  COMMBOUND_CHECK(!src_is_switch && !dst_is_switch, "NVLS endpoints talk to their own node only");
  // PXN: the message leaves through the NIC on the destination GPU's rail; the GPU that owns
  // that NIC relays it over NVLink when the sender sits on another rail.
  const int rail = dl * nics / gpus;
  const int relay = rail * gpus / nics;
  if (relay != sl) walk_nvlink(sn, sl, relay, visit);
  visit(pcie_[sn * gpus + relay].up);
  walk_fabric(sn * nics + rail, dn * nics + rail, visit);
  visit(pcie_[dn * gpus + relay].down);
  if (relay != dl) walk_nvlink(dn, relay, dl, visit);
}

std::shared_ptr<const SegmentRoute> FabricZone::segment_route(
    std::span<const std::pair<sg4::Host*, sg4::Host*>> edges) const {
  auto route = std::make_shared<SegmentRoute>();
  for (const auto& [src, dst] : edges) {
    walk(src->get_netpoint()->id(), dst->get_netpoint()->id(), [&](const Hop& hop) {
      if (hop.direction == 0) return;  // fatpipes (switch traversals) never constrain bandwidth
      route->hops.push_back(hop);
      route->links.push_back(hop.impl);
      route->latency_s += hop.latency_s;
    });
  }
  return route;
}

double FabricZone::set_segment(int slot, std::shared_ptr<const SegmentRoute> route, std::optional<double> latency_s) {
  segment_route_[slot] = std::move(route);
  segment_latency_s_[slot] = latency_s;
  return segment_route_[slot]->latency_s;
}

void FabricZone::get_local_route(const simgrid::kernel::routing::NetPoint* src,
                                 const simgrid::kernel::routing::NetPoint* dst,
                                 simgrid::kernel::routing::Route* into, double* latency) {
  if (src->id() >= segment_base_id_) {  // a segment flow: its cap link, then its route's links
    const std::size_t slot = (src->id() - segment_base_id_) / 2;
    const SegmentRoute* route = segment_route_[slot].get();
    std::vector<simgrid::kernel::resource::StandardLinkImpl*>& links = into->link_list_;
    links.reserve(links.size() + 1 + (route != nullptr ? route->links.size() : 0));
    links.push_back(segment_cap_[slot].impl);
    // A latency set with the route stands for the whole route's (an unsimulated segment resumed).
    const std::optional<double>& set_latency_s = segment_latency_s_[slot];
    if (latency != nullptr) *latency += set_latency_s ? *set_latency_s : segment_cap_[slot].latency_s;
    if (route == nullptr) return;
    links.insert(links.end(), route->links.begin(), route->links.end());
    if (latency != nullptr && !set_latency_s) *latency += route->latency_s;  // a trimmed route's too
    return;
  }
  walk(src->id(), dst->id(), [&](const Hop& hop) {
    into->link_list_.push_back(hop.impl);
    if (latency != nullptr) {
      *latency += hop.latency_s;
    }
  });
}

FabricZone::NamedRoute FabricZone::named_route(sg4::Host* src, sg4::Host* dst) const {
  NamedRoute route;
  walk(src->get_netpoint()->id(), dst->get_netpoint()->id(), [&](const Hop& hop) {
    const LinkInfo& info = link_infos_[hop.info];
    route.links.push_back(hop.direction == 0 ? info.name : info.name + (hop.direction == 1 ? ":UP" : ":DOWN"));
    route.latency_s += hop.latency_s;
  });
  return route;
}

}  // namespace commbound::network::internal
