// RouteCache: the routes of a collective's channel groups, worked out on the first call over a
// group of ranks and reused by every later call over the same ranks ("cached routes").
//
// Why: FSDP runs the same AllGather and ReduceScatter over the same data-parallel group at every
// layer, and the engine runs the same collective of each sibling group beside it. Routing every
// edge of a 16k-rank ring through SimGrid, and filling the coupled max-min rates over the links it
// crosses, took most of a training run's wall time, each call redoing the last one's work.
//
// What a memo is keyed on. A group's members, channels and edges follow from the algorithm's group
// construction, the call's ranks in order, whether channels are merged and, for an algorithm whose
// steps move over different edges, which step's (the platform and NCCL's
// constants are fixed for the cache's life); routes follow from the edges; the links' bandwidths
// never change during a run (only the segment cap links do, and no edge crosses one). The coupled
// rates follow from the links and the groups' caps, so they are memoized per distinct caps; other
// derived values (value()) under a key their caller states. An all-to-all's plan (its transfers,
// coupled groups, their rates and its latency: all_to_all.cpp) is keyed on the call itself: ranks,
// method, merge flag, protocol, size and per-peer matrix (by identity: the engine shares one matrix
// among the calls of a layer, and the key holds it alive). Nothing but work is saved: every value
// is the one the first call computed, bit for bit.
#pragma once

#include "network/collective.hpp"
#include "network/internal/fluid_flows.hpp"

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace commbound::network::internal {

// One transfer between two GPUs, as a flow: `bytes` of payload from `src_rank` to `dst_rank`.
struct Transfer {
  int src_rank = 0;
  int dst_rank = 0;
  double bytes = 0;
};

// What an all-to-all call puts on the fabric, worked out once (all_to_all.cpp).
struct AllToAllPlan {
  double path_latency_s = 0;                // the worst pair's path and NCCL's proxy (base latency excluded)
  std::vector<Transfer> transfers;          // the merged (or per-pair) transfers
  std::vector<std::vector<Edge>> edges;     // coupled groups: their edges,
  std::vector<double> wire_bytes;           // the wire bytes through each edge,
  std::vector<double> rates_bytes_per_s;    // and each group's coupled max-min rate
  SegmentRouteMemo segment_routes;          // run_fluid()'s cut routes of these groups
};

class RouteCache {
public:
  // Which groups: those `algorithm` builds over `ranks` (in call order), channels merged or not.
  struct Key {
    Algorithm algorithm = Algorithm::ring;
    bool merge = true;
    std::vector<int> ranks;
    int part = 0;  // which of the call's edge sets, where its steps move over different ones (PAT: the distance)
    bool operator==(const Key&) const = default;
  };

  // One collective's channel groups as its algorithm builds them: per group, its members (ranks in
  // path order), the NCCL channels it carries and its edges (in path order).
  struct Groups {
    std::vector<std::vector<int>> members;
    std::vector<double> channels;
    std::vector<std::vector<Edge>> edges;
  };

  // The groups of one collective with their routes.
  class Routes {
  public:
    explicit Routes(Groups groups);
    std::size_t size() const { return groups_.edges.size(); }
    const std::vector<int>& members(std::size_t g) const { return groups_.members[g]; }
    double channels(std::size_t g) const { return groups_.channels[g]; }
    const std::vector<std::vector<Edge>>& edges() const { return groups_.edges; }
    // The route latency of edge `e` of group `g` (route_latency_s).
    double edge_latency_s(std::size_t g, std::size_t e) const { return links_.edge_latency_s[g][e]; }
    // coupled_group_rates(edges(), cap_bytes_per_s), computed once per distinct caps (one per group).
    std::vector<double> rates(const std::vector<double>& cap_bytes_per_s);
    // A value that depends on these groups and on `key` alone: compute() the first time `key` is seen.
    double value(const std::vector<double>& key, const std::function<double()>& compute);
    // For run_fluid() over these edges.
    SegmentRouteMemo& segment_routes() { return segment_routes_; }

  private:
    Groups groups_;
    GroupLinks links_;
    std::vector<std::pair<std::vector<double>, std::vector<double>>> rates_;  // (caps, rates): a few
    std::vector<std::pair<std::vector<double>, double>> values_;              // (key, value): a few
    SegmentRouteMemo segment_routes_;
  };

  // The groups `key` names with their routes; `groups_of()` builds the groups the first time the key
  // is seen. The reference stays valid for the cache's life.
  Routes& routes(const Key& key, const std::function<Groups()>& groups_of);

  // Which all-to-all call (the file comment).
  struct AllToAllKey {
    std::vector<int> ranks;
    AllToAllMethod method = AllToAllMethod::nccl;
    bool merge = true;
    Protocol protocol = Protocol::simple;
    double size_bytes = 0;
    std::shared_ptr<const std::vector<double>> peer_bytes;
    std::shared_ptr<const std::vector<double>> node_bytes;
    bool operator<(const AllToAllKey& o) const {
      return std::tie(ranks, method, merge, protocol, size_bytes, peer_bytes, node_bytes) <
             std::tie(o.ranks, o.method, o.merge, o.protocol, o.size_bytes, o.peer_bytes, o.node_bytes);
    }
  };
  // The plan of the all-to-all `key` names; `make()` works it out the first time. The reference
  // stays valid for the cache's life.
  AllToAllPlan& all_to_all_plan(const AllToAllKey& key, const std::function<AllToAllPlan()>& make);

private:
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  std::unordered_map<Key, std::unique_ptr<Routes>, KeyHash> routes_;
  std::map<AllToAllKey, std::unique_ptr<AllToAllPlan>> all_to_all_plans_;
};

}  // namespace commbound::network::internal
