#include "network/internal/fluid_flows.hpp"

#include "calibration/base/check.hpp"

#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Semaphore.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <unordered_map>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {
GroupLinks group_links(const std::vector<std::vector<Edge>>& edges) {
  GroupLinks out;
  std::unordered_map<sg4::Link*, int> index;
  std::vector<sg4::Link*> route;
  out.edge_latency_s.resize(edges.size());
  for (std::size_t g = 0; g < edges.size(); ++g) {
    out.edge_latency_s[g].reserve(edges[g].size());
    for (const auto& [src, dst] : edges[g]) {
      route.clear();
      double latency_s = 0;
      src->route_to(dst, route, &latency_s);
      out.edge_latency_s[g].push_back(src == dst ? 0 : latency_s);
      for (sg4::Link* l : route) {
        if (l->get_sharing_policy() == sg4::Link::SharingPolicy::FATPIPE) continue;
        auto [it, fresh] = index.try_emplace(l, static_cast<int>(out.capacity_bytes_per_s.size()));
        if (fresh) {
          out.capacity_bytes_per_s.push_back(l->get_bandwidth());
          out.users.emplace_back();
        }
        auto& u = out.users[it->second];
        if (!u.empty() && u.back().first == static_cast<int>(g)) {
          ++u.back().second;
        } else {
          u.emplace_back(static_cast<int>(g), 1);
        }
      }
    }
  }
  return out;
}

double route_latency_s(sg4::Host* src, sg4::Host* dst) {
  if (src == dst) return 0;
  std::vector<sg4::Link*> links;
  double latency_s = 0;
  src->route_to(dst, links, &latency_s);
  return latency_s;
}

std::size_t edges_per_segment(const std::vector<GroupFlow>& groups, SegmentSlots slots) {
  std::size_t longest = 1;
  for (const GroupFlow& g : groups) longest = std::max(longest, g.edges.size());
  const std::size_t spare = static_cast<std::size_t>(std::max(0, slots.free - slots.reserved));
  const std::size_t budget = std::max<std::size_t>(groups.size(), spare / 4);
  const std::size_t per_group = std::max<std::size_t>(1, budget / std::max<std::size_t>(1, groups.size()));
  return (longest + per_group - 1) / per_group;
}

std::vector<Segment> segments_of(const std::vector<GroupFlow>& groups, SegmentSlots slots) {
  const std::size_t per = edges_per_segment(groups, slots);
  std::vector<Segment> out;
  for (const GroupFlow& g : groups) {
    for (std::size_t i = 0; i < g.edges.size(); i += per) {
      out.push_back({g.edges.subspan(i, std::min(per, g.edges.size() - i)), g.wire_bytes, g.rate_bytes_per_s});
    }
  }
  return out;
}

std::vector<double> coupled_group_rates(const GroupLinks& links, const std::vector<double>& cap_bytes_per_s) {
  const std::size_t groups = cap_bytes_per_s.size();
  COMMBOUND_CHECK(links.edge_latency_s.size() == groups, "one cap per group");
  const std::vector<double>& capacity = links.capacity_bytes_per_s;
  std::vector<double> rate(groups, 0);
  std::vector<bool> frozen(groups, false);
  std::vector<double> used(capacity.size(), 0);
  std::size_t active = groups;
  while (active > 0) {
    double delta = std::numeric_limits<double>::infinity();
    for (std::size_t g = 0; g < groups; ++g) {
      if (!frozen[g] && cap_bytes_per_s[g] > 0) delta = std::min(delta, cap_bytes_per_s[g] - rate[g]);
    }
    std::vector<double> weight(capacity.size(), 0);
    for (std::size_t l = 0; l < capacity.size(); ++l) {
      for (auto [g, k] : links.users[l]) {
        if (!frozen[g]) weight[l] += k;
      }
      if (weight[l] > 0) delta = std::min(delta, (capacity[l] - used[l]) / weight[l]);
    }
    if (!std::isfinite(delta)) break;  // no constraint left (cannot happen with real routes)
    for (std::size_t g = 0; g < groups; ++g) {
      if (!frozen[g]) rate[g] += delta;
    }
    for (std::size_t l = 0; l < capacity.size(); ++l) used[l] += weight[l] * delta;
    constexpr double kSaturated = 1e-9;  // relative slack below which a link or cap is full
    for (std::size_t g = 0; g < groups; ++g) {
      if (!frozen[g] && cap_bytes_per_s[g] > 0 && rate[g] >= cap_bytes_per_s[g] * (1 - kSaturated)) {
        frozen[g] = true;
        --active;
      }
    }
    for (std::size_t l = 0; l < capacity.size(); ++l) {
      if (weight[l] > 0 && used[l] >= capacity[l] * (1 - kSaturated)) {
        for (auto [g, k] : links.users[l]) {
          if (!frozen[g]) {
            frozen[g] = true;
            --active;
          }
        }
      }
    }
  }
  return rate;
}

FluidRun run_fluid(Platform& platform, const std::vector<GroupFlow>& groups, SegmentRouteMemo* memo) {
  platform.check_free_segments(static_cast<int>(groups.size()));
  const SegmentSlots free = {platform.free_segments(), platform.reserved_segments()};
  const std::vector<Segment> segments = segments_of(groups, free);
  // The segments' routes: from the memo when this cut was seen before, else worked out (and kept).
  // A copy, not a reference into the memo: the simcalls below let other collectives run, and one
  // over the same groups may add to it.
  std::vector<std::shared_ptr<const SegmentRoute>> routes;
  const std::size_t per = edges_per_segment(groups, free);
  if (memo != nullptr) {
    const auto kept = std::find_if(memo->by_cut.begin(), memo->by_cut.end(),
                                   [per](const auto& cut) { return cut.first == per; });
    if (kept != memo->by_cut.end()) routes = kept->second;
  }
  if (routes.empty()) {  // a cut not seen before (every cut has at least one segment per group)
    for (const Segment& seg : segments) routes.push_back(platform.segment_route(seg.edges));
    if (memo != nullptr) memo->by_cut.emplace_back(per, routes);
  }
  COMMBOUND_CHECK(routes.size() == segments.size(), "a memo sees the same groups' edges on every call");
  const double start_s = sg4::Engine::get_clock();
  // Take every slot before the first simcall (routing a slot sets its cap link's bandwidth, and a
  // simcall lets other actors run); segments_of fits them in the free slots.
  std::vector<int> slots;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    slots.push_back(platform.acquire_segment());
    COMMBOUND_CHECK(slots.back() >= 0, "segments_of fits the free slots");
  }
  // Every flow starts now (Platform::start_segment); the last to complete wakes this actor.
  std::vector<double> latency_s(segments.size());
  std::vector<double> finish_s(segments.size());
  std::size_t running = segments.size();
  const sg4::SemaphorePtr all_done = sg4::Semaphore::create(0);
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const Segment& seg = segments[i];
    latency_s[i] = platform.route_segment(slots[i], routes[i], seg.rate_bytes_per_s);
    platform.start_segment(slots[i], seg.wire_bytes, [&, i](double at_s) {
      finish_s[i] = at_s;
      if (--running == 0) all_done->release();
    });
  }
  all_done->acquire();
  FluidRun run;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    run.bandwidth_s = std::max(run.bandwidth_s, finish_s[i] - start_s - latency_s[i]);
    platform.release_segment(slots[i]);
  }
  run.flows = static_cast<long>(segments.size());
  return run;
}

}  // namespace commbound::network::internal
