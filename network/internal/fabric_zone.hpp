// FabricZone: a SimGrid routing zone that computes a cluster's routes from its geometry.
//
// Why a zone of our own: SimGrid's stock zones route by (source, destination) tables or by
// one fixed tree algorithm. A DGX cluster needs routes that depend on the node's rails and on
// the fabric's routing policy: NCCL's PXN sends inter-node data through the NIC on the
// destination GPU's rail (an NVLink hop first when the sender sits on another rail), ECMP picks
// one up-link per flow by a hash (so flows collide, as on RoCE), and adaptive routing spreads a
// flow over all up-links (modelled as one bundle link of their summed capacity). Computing the
// route on demand keeps memory linear in the cluster size (no N^2 table) and costs a few
// arithmetic operations per communication.
#pragma once

#include "network/cluster_spec.hpp"

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Link.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace commbound::network::internal {

// The switch tree above the NICs: how many leaves, pods, up-links, and where each NIC plugs in.
struct TreeGeometry {
  int endpoints = 0;     // NICs on the fabric
  int levels = 1;        // 1: one switch; 2: leaf-spine; 3: leaf-aggregation-core
  int down_ports = 0;    // per leaf, towards NICs
  int up_ports = 0;      // per leaf, towards the next level
  int leaves = 0;
  int leaves_per_pod = 0;  // 3 levels only
  int pods = 1;
  int core_per_agg = 0;    // 3 levels only: up-links of an aggregation switch
};

// One direction of one link, as a route needs it.
struct RouteHop {
  simgrid::kernel::resource::StandardLinkImpl* impl;
  double latency_s;
  int info;       // index into FabricZone::links()
  int direction;  // 0 none (shared or fatpipe), 1 up, 2 down
};

// A segment's route (FabricZone::segment_route): the concatenated routes of its edges less their
// fatpipes (switch traversals, never a bandwidth limit), and the summed latency of what is left.
// Immutable once built, so one route may be set on any number of slots, any number of times.
// A flow may also run over a trimmed route (run_fluid: links that cannot bind it left out): its
// `links` are then a subset of its full route's and its `hops` empty; `latency_s` stays the full
// route's, and it is what the flow's latency is (FabricZone::get_local_route).
struct SegmentRoute {
  std::vector<RouteHop> hops;
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> links;  // hops[i].impl, as SimGrid takes a route
  double latency_s = 0;
};

class FabricZone : public simgrid::kernel::routing::NetZoneImpl {
public:
  // Creates the zone (the first zone created becomes SimGrid's root), its hosts and links.
  // `geometry` must come from plan_tree() for the same spec.
  FabricZone(const ClusterSpec& spec, const TreeGeometry& geometry, int segment_slots);

  simgrid::s4u::Host* gpu_host(int node, int local) const { return gpu_hosts_[node * spec_.node.gpus + local]; }
  // The node's NVSwitch (NVLS's reduction endpoint); nullptr on a mesh node, which has none.
  simgrid::s4u::Host* nvswitch_host(int node) const {
    return nvswitch_hosts_.empty() ? nullptr : nvswitch_hosts_[node];
  }

  // A segment flow runs from its slot's src host (to itself: Platform::start_segment); the route
  // get_local_route() gives any flow from that host is the slot's.
  simgrid::s4u::Host* segment_src(int slot) const { return segment_hosts_[2 * slot]; }
  simgrid::s4u::Host* segment_dst(int slot) const { return segment_hosts_[2 * slot + 1]; }
  simgrid::s4u::Link* segment_cap_link(int slot) const { return segment_cap_links_[slot]; }
  int segment_slots() const { return static_cast<int>(segment_cap_links_.size()); }
  // The route of a segment over `edges` (see SegmentRoute).
  std::shared_ptr<const SegmentRoute> segment_route(
      std::span<const std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>> edges) const;
  // Sets the route of `slot` (held until the slot is routed again); returns its summed latency.
  // `latency_s`, when given, is the latency the slot's flows get instead of the route's.
  double set_segment(int slot, std::shared_ptr<const SegmentRoute> route, std::optional<double> latency_s = std::nullopt);
  const TreeGeometry& geometry() const { return geometry_; }

  // The links a message from `src` to `dst` crosses, by name with direction, and the summed latency.
  struct NamedRoute {
    std::vector<std::string> links;  // "name" or "name:UP"/"name:DOWN" for split-duplex links
    double latency_s = 0;
  };
  NamedRoute named_route(simgrid::s4u::Host* src, simgrid::s4u::Host* dst) const;

  // Every link of the platform, for the XML export.
  struct LinkInfo {
    std::string name;
    double bw_bytes_per_s;
    double latency_s;
    bool split_duplex;
    bool fatpipe;
    bool internal;  // a segment cap link: a modelling device, not hardware (not exported)
  };
  const std::vector<LinkInfo>& links() const { return link_infos_; }

protected:
  void get_local_route(const simgrid::kernel::routing::NetPoint* src, const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* latency) override;

private:
  using Hop = RouteHop;
  struct Duplex {
    Hop up;
    Hop down;
  };

  Duplex make_duplex(const std::string& name, double bw_bytes_per_s, double latency_s);
  Hop make_fatpipe(const std::string& name, double latency_s);
  void build_fabric();
  template <class Visit>
  void walk(unsigned long src_id, unsigned long dst_id, Visit&& visit) const;
  template <class Visit>
  void walk_fabric(int src_nic, int dst_nic, Visit&& visit) const;
  // NVLink from local host `a` to local host `b` of `node` (either may be the NVSwitch host).
  template <class Visit>
  void walk_nvlink(int node, int a, int b, Visit&& visit) const;
  int leaf_of(int nic) const;
  // Index in nvlink_ of the mesh link between local GPUs a != b of `node`.
  int mesh_pair(int node, int a, int b) const;

  ClusterSpec spec_;
  TreeGeometry geometry_;
  bool mesh_;            // the nodes' GPUs are wired pairwise (NvlinkTopology::mesh), with no NVSwitch host
  int hosts_per_node_;
  std::vector<simgrid::s4u::Host*> gpu_hosts_;
  std::vector<simgrid::s4u::Host*> nvswitch_hosts_;
  std::vector<Duplex> nvlink_;   // NVSwitch: per GPU, UP = GPU -> NVSwitch. Mesh: per node, per GPU pair
                                 // a < b in mesh_pair() order, UP = a -> b
  std::vector<Duplex> pcie_;     // per GPU: UP = GPU -> NIC
  std::vector<Duplex> nic_;      // per NIC: UP = NIC -> leaf switch
  std::vector<Hop> leaf_xbar_;   // per leaf: the switch traversal (latency only)
  Hop loopback_{};                // a host's messages to itself
  unsigned long segment_base_id_ = 0;  // NetPoint id of the first segment host
  std::vector<simgrid::s4u::Host*> segment_hosts_;     // src, dst per slot
  std::vector<simgrid::s4u::Link*> segment_cap_links_;
  std::vector<Hop> segment_cap_;
  std::vector<std::shared_ptr<const SegmentRoute>> segment_route_;  // per slot; null before first use
  std::vector<std::optional<double>> segment_latency_s_;             // per slot: set_segment's latency_s
  std::vector<Hop> upper_xbar_;  // per upper level (1 or 2 entries): a traversal of that layer
  std::vector<Duplex> leaf_up_;  // ECMP: leaf x up_ports (to spine/agg j); adaptive: one bundle per leaf
  std::vector<Duplex> pod_up_;   // 3 levels. ECMP: pod x agg x core; adaptive: one bundle per pod
  std::vector<LinkInfo> link_infos_;
};

// Sizes the switch tree for `spec`, or explains why it cannot be built.
struct TreePlan {
  TreeGeometry geometry;
  std::string error;  // empty when the plan is valid
};
TreePlan plan_tree(const ClusterSpec& spec);

}  // namespace commbound::network::internal
