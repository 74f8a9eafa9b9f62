// Platform: the emulated cluster inside SimGrid (one per process: SimGrid runs one Engine per process).
//
// Creating a Platform starts the SimGrid engine with the pure max-min network model (CM02, no
// TCP factors: see docs/reference/simgrid.md) and builds the cluster described by a
// ClusterSpec: per node, GPUs on an NVSwitch (split-duplex NVLink at the preset's effective rate)
// or, on a mesh node, one split-duplex NVLink per GPU pair (NodeType::nvlink_link_bw_bytes_per_s),
// a PCIe path from each GPU to its rail's NIC, and the scale-out fabric (single switch, fat-tree
// or rail-optimized; ECMP or adaptive routing). Rank r is GPU r % gpus of node r / gpus.
#pragma once

#include "network/cluster_spec.hpp"
#include "core/expected.hpp"
#include "network/nccl_constants.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace simgrid::s4u {
class Engine;
class Host;
}  // namespace simgrid::s4u

namespace commbound::network {

namespace internal {
class FabricZone;
class LinkOccupancy;
struct SegmentRoute;
struct SegmentPoster;
}

// What SimGrid's max-min solver re-solves when a flow starts, ends or is re-rated. Both give the
// same rates (a component's solution does not depend on flows it shares no link with); they differ
// in cost. `whole`: every flow in flight, cheapest when they all share links (one data-parallel
// ring over the cluster). `connected`: only the flows linked to the change through shared links,
// cheapest when the flows in flight fall apart into independent sets (tensor-parallel rings on
// NVLink inside nodes beside data-parallel rings across them: a tensor-parallel collective then
// re-solves its node, not the whole fabric). Measured by bench/bench_training: docs/performance.md.
enum class MaxMinScope { whole, connected };

class Platform {
public:
  // Builds the platform; fails when the fabric cannot hold the nodes (radix, levels) or the spec
  // is inconsistent. `concurrent_collectives` bounds how many collectives will ever be in flight at
  // once (the segment pool keeps a reserve for them); `scope` only changes the solver's speed.
  // Only one Platform may ever exist in a process.
  static Expected<std::unique_ptr<Platform>> create(const ClusterSpec& spec, int concurrent_collectives = 1,
                                                    MaxMinScope scope = MaxMinScope::whole);
  ~Platform();
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  const ClusterSpec& spec() const { return spec_; }
  int ranks() const { return spec_.gpus(); }
  int node_of(int rank) const { return rank / spec_.node.gpus; }
  int local_of(int rank) const { return rank % spec_.node.gpus; }
  simgrid::s4u::Host* gpu(int rank) const;
  // The node's NVSwitch as NVLS's endpoint; nullptr on a mesh node (NvlinkTopology::mesh).
  simgrid::s4u::Host* nvswitch(int node) const;

  // NCCL's class of the hop between two ranks: NVLink inside a node, network across nodes.
  HopClass hop_class(int src_rank, int dst_rank) const {
    return node_of(src_rank) == node_of(dst_rank) ? HopClass::nvlink : HopClass::net;
  }
  // The physical latency (switch traversals) of the route between two ranks.
  double route_latency_s(int src_rank, int dst_rank) const;
  // The route as link names ("n0.gpu1.nvlink:UP", ...), for tests and --export.
  std::vector<std::string> route_links(int src_rank, int dst_rank) const;
  // The fabric as built: tree levels (1, 2 or 3), leaf switches and their port split.
  int fabric_levels() const;
  int leaf_switches() const;
  int leaf_down_ports() const;
  int leaf_up_ports() const;

  // Segment flows (see internal/fabric_zone.hpp): one SimGrid flow over the routes of many edges,
  // capped at a rate. acquire_segment() returns a free slot or -1; segment_route() works out the
  // route over some edges, once, for as many uses as wanted; cap_segment() sets a slot's cap (<= 0:
  // none; a simcall: other actors may run before it returns); route_segment() then sets its route
  // (no simcall) and returns the route's latency; start_segment() starts the slot's flow of `bytes`
  // now and calls `done(finish_s)` when it has completed (from another actor, at the simulated time
  // finish_s); release_segment() frees the slot once it completed.
  //
  // Why a flow is posted by an actor of its slot and not sent actor-less (Comm::sendto): SimGrid
  // 3.32 keeps every actor-less comm in one list and removes each finished one by scanning it, so a
  // collective's completions cost the number of flows in flight (with thousands of data-parallel
  // flows beside tensor-parallel rings, most of a 16384-GPU run). A comm an actor posts through a
  // mailbox sits in that actor's own list instead: the slot's actor (on the slot's host, which
  // names its route) receives its own message, so its list holds one comm. Same route, bytes, cap
  // and start time: the same flow for the max-min solver.
  int acquire_segment();
  std::shared_ptr<const internal::SegmentRoute> segment_route(
      std::span<const std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>> edges) const;
  void cap_segment(int slot, double cap_bytes_per_s);
  // `latency_s`, when given, replaces the route's latency for the slot's flows (an unsimulated
  // segment turned into a flow partway through: internal/link_occupancy.hpp).
  double route_segment(int slot, std::shared_ptr<const internal::SegmentRoute> route,
                       std::optional<double> latency_s = std::nullopt);
  void start_segment(int slot, double bytes, std::function<void(double finish_s)> done);
  // Moves the slot's flow, started and not completed, onto `route` (same cap) from now: what it has
  // left (SimGrid's remaining bytes) after `latency_s` (what is left of its latency); `done` is
  // then called once, when that completes. Returns false, changing nothing, when the flow has
  // nothing left (it is completing at this instant).
  bool reroute_segment(int slot, std::shared_ptr<const internal::SegmentRoute> route, double latency_s);
  void release_segment(int slot);
  // The bandwidth of the link a segment route's hop crosses (internal::RouteHop::info).
  double link_bandwidth_bytes_per_s(int link_info) const;
  // Which collectives' segment flows are on which links (internal/link_occupancy.hpp).
  internal::LinkOccupancy& occupancy() { return *occupancy_; }
  int free_segments() const { return static_cast<int>(free_segments_.size()); }
  // Throws std::logic_error (a broken invariant, not bad input) when fewer than `n` slots are free:
  // the caller started more collectives at once than create() was told.
  void check_free_segments(int n) const;
  // Slots a collective leaves free for the other collectives that may be in flight with it.
  int reserved_segments() const { return reserved_segments_; }

  // Runs `body` as a SimGrid actor on rank 0's host until the simulation has nothing left to do.
  // May be called once per process.
  void run(std::function<void()> body);

  // Writes the platform as SimGrid XML (platform DTD v4.1, Full routing): every host, link and
  // host-to-host route. The route table grows as hosts^2, so export refuses more than `max_hosts`.
  Status export_xml(std::ostream& out, int max_hosts) const;

private:
  Platform(const ClusterSpec& spec, std::unique_ptr<simgrid::s4u::Engine> engine);

  ClusterSpec spec_;
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  internal::FabricZone* zone_ = nullptr;  // owned by SimGrid's engine (it is the root zone)
  std::vector<int> free_segments_;
  int reserved_segments_ = 0;
  // Per slot: the actor that posts its flows (start_segment), created on the slot's first flow.
  std::vector<std::unique_ptr<internal::SegmentPoster>> posters_;
  std::unique_ptr<internal::LinkOccupancy> occupancy_;
};

}  // namespace commbound::network
