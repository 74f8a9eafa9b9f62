// Fluid flows: a collective's channel groups run in SimGrid as a few capped flows, not as messages.
//
// Coupled rates. A ring, or a tree that pipelines its chunks, advances at the pace of its slowest
// edge: every edge of one channel group moves its bytes at one rate. coupled_group_rates() finds
// that rate for every group of a collective at once by progressive filling (max-min fairness) over
// the links of all the group's edge routes, a link crossed by k edges of a group carrying k times
// the group's rate. The flows then run in SimGrid capped at these rates, so the traffic of other
// collectives in flight still shares the links with them.
//
// Segments. One SimGrid flow per edge would be exact but slow: the max-min solver pays about
// 12 us per concurrent flow per event (docs/reference/simgrid.md), and a ring over 2048
// ranks with 8 rail groups has 16k edges. Because a group's edges move at one rate, consecutive
// edges (in path order, so neighbours share a host) can travel as one flow over their
// concatenated routes, capped at the group's rate: a segment (Platform::route_segment). Shorter
// segments come closer to one flow per edge; longer ones cost the solver less. segments_of() cuts
// every group into as few edges per segment as a quarter of the free segment slots allow, and
// always at least one segment per group.
//
// The slot pool (Platform::create). Platform holds a spare pool of max(512, 4 x nodes) slots plus
// a reserve: one slot per channel group (Platform's max_groups_per_collective) for every other
// collective that may be in flight at once. A collective cuts its segments from a quarter of the
// free slots minus that reserve (Platform::reserved_segments()), so collectives that overlap drain
// the spare pool geometrically, never the reserve, and none ever finds fewer free slots than it has
// groups (run_fluid() throws std::logic_error, a broken invariant, when it does: waiting for slots
// would delay flows for a reason of the model's, not the hardware's). Worked example, one ring
// AllGather over a whole DGX cluster (8 rail groups, 8 edges per node in each): on 64 nodes the
// budget is 512 / 4 = 128 segments, 16 per group, 32 edges (4 nodes) each; on 512 nodes it is
// 2048 / 4 = 512 segments, 64 per group, 64 edges (8 nodes) each.
#pragma once

#include "network/internal/link_occupancy.hpp"
#include "network/platform.hpp"

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace commbound::network::internal {

// One hop of a collective: a message's source and destination hosts.
using Edge = std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>;

// The physical latency (switch traversals) of the route from `src` to `dst`; 0 when they are equal.
double route_latency_s(simgrid::s4u::Host* src, simgrid::s4u::Host* dst);

// One channel group's traffic: `wire_bytes` through each of `edges` (in path order), at most at
// `rate_bytes_per_s` (<= 0: uncapped). The edges are viewed, not owned: their storage must outlive
// the GroupFlow and what is cut from it.
struct GroupFlow {
  std::span<const Edge> edges;
  double wire_bytes = 0;
  double rate_bytes_per_s = -1;
};

// Edges that move together at one rate, simulated as one segment flow (Platform::route_segment).
struct Segment {
  std::span<const Edge> edges;  // a run of one GroupFlow's edges
  double wire_bytes = 0;        // through each edge
  double rate_bytes_per_s = -1; // <= 0: uncapped
};

// The segment slots a collective may cut its flows from.
struct SegmentSlots {
  int free = 0;      // Platform::free_segments()
  int reserved = 0;  // Platform::reserved_segments(): left to the other collectives in flight
};

// Cuts every group's edges, in order, into segments: as few edges per segment as a quarter of the
// free slots not reserved allow, and at least one segment per group (so at most
// max(groups, (free - reserved) / 4) segments in all).
std::vector<Segment> segments_of(const std::vector<GroupFlow>& groups, SegmentSlots slots);
// The edges per segment segments_of(groups, slots) cuts (the last segment of a group may hold fewer).
std::size_t edges_per_segment(const std::vector<GroupFlow>& groups, SegmentSlots slots);

// The routes of the segments run_fluid() cut from one set of groups, kept for the next call over
// the same groups' edges (RouteCache): a cut is decided by its edges per segment, so routes are
// kept per edges_per_segment(), one per segment in segments_of()'s order, with the links they
// cross, and per distinct caps of the groups what they put on each link (if its links carry them
// all at once).
struct SegmentRouteMemo {
  struct Routes {
    std::vector<std::shared_ptr<const SegmentRoute>> segments;  // one per segment
    std::vector<LinkOccupancy::LinkId> links;                   // every link they cross, once
    std::vector<std::vector<int>> link_segments;                // per link: the segments crossing it
    std::vector<std::vector<int>> hop_links;                    // per segment, per hop: its link's index
    std::vector<double> capacities_bytes_per_s;                 // per link
  };
  // Per-group caps, and each link's load with every segment at its cap; null when a link cannot
  // carry them all (the call is then simulated whole).
  struct CheckedCaps {
    std::vector<double> caps;
    std::shared_ptr<const std::vector<double>> loads_bytes_per_s;
  };
  struct Cut {
    std::size_t edges_per_segment = 0;
    std::shared_ptr<const Routes> routes;
    // The platform's LinkOccupancy::link_states(routes->links), resolved on the first call.
    std::vector<LinkOccupancy::LinkState*> link_states;
    std::vector<CheckedCaps> checked_caps;
  };
  std::vector<Cut> by_cut;
};

// The links the channel groups' edges cross (fatpipes, which never limit bandwidth, left out), in
// first-crossed order, with the route latency of every edge: what coupled_group_rates() and the
// latency terms need from the routes.
struct GroupLinks {
  std::vector<double> capacity_bytes_per_s;             // per link
  std::vector<std::vector<std::pair<int, int>>> users;  // per link: (group, edges of it crossing)
  std::vector<std::vector<double>> edge_latency_s;      // per group, per edge: route_latency_s
};

// Routes every edge of `edges` (one entry per group). Reads routes only: no simulated time passes.
GroupLinks group_links(const std::vector<std::vector<Edge>>& edges);

// The max-min fair rate (bytes/s) of every channel group when each group's edges move at one rate,
// by progressive filling over `links` (group_links() of the groups' edges; fatpipes, which never
// limit bandwidth, left out). Group g is capped at `cap_bytes_per_s[g]` (<= 0: no cap), one entry
// per group. Reads routes only: no simulated time passes.
std::vector<double> coupled_group_rates(const GroupLinks& links, const std::vector<double>& cap_bytes_per_s);

// What run_fluid() simulated.
struct FluidRun {
  double bandwidth_s = 0;  // the longest time any segment spent moving bytes (route latency excluded)
  long flows = 0;          // segment flows created
};

// Runs every group's flow at once, cut into segments (segments_of), and returns when all have
// completed. Must be called from a SimGrid actor; simulated time advances by the bandwidth time
// plus a segment's route latency. Throws std::logic_error when fewer slots are free than there are
// groups (more collectives in flight than the Platform was created for). `memo`, when given, must
// only ever see groups with the same edges (rates and bytes may differ): segment routes are then
// worked out once per cut.
//
// Segments go unsimulated where they can. When every group is capped and the links carry all the
// caps at once, a segment none of whose links is contended (link_occupancy.hpp: the calls on it,
// each at its caps, load it beyond its capacity, or one is uncapped) moves at its cap from start to
// end: it ends its latency plus its bytes over its cap after the start, which is what SimGrid's
// max-min solver gives (RunFluid.AnUnsimulatedCallEndsAsItsFlowsWould,
// RunFluid.CallsWhoseCapsFitASharedLinkAreNotSimulated), so no flow is started for it. Only
// segments that cross a contended link start as flows; when a link of an unsimulated segment
// becomes contended, the segment becomes a flow with what it has left. From then on everything
// shares those links as if simulated from the start.
//
// Links that cannot bind go unsimulated too. Such a call's flows cross only its contended links
// (and their cap): on any other link the caps of every flow there fit, so no rate the max-min
// solver gives them could fill it: left out, the solution is the same, and the solver's work
// follows the links that are contended, not every link of every route (two spread 2048-GPU jobs on
// a fat-tree: about a hundred links per segment flow, a few contended). When a link left out
// becomes contended, the flows crossing it are rerouted over it from that instant with what they
// have left (Platform::reroute_segment).
FluidRun run_fluid(Platform& platform, const std::vector<GroupFlow>& groups, SegmentRouteMemo* memo = nullptr);

}  // namespace commbound::network::internal
