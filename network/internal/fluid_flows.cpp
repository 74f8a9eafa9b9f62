#include "network/internal/fluid_flows.hpp"

#include "calibration/base/check.hpp"

#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <unordered_map>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {
namespace {

// The links the groups' edges cross (fatpipes left out), in first-crossed order.
struct GroupLinks {
  std::vector<double> capacity_bytes_per_s;
  std::vector<std::vector<std::pair<int, int>>> users;  // per link: (group, edges of it crossing)
};

GroupLinks group_links(const std::vector<std::vector<Edge>>& edges) {
  GroupLinks out;
  std::unordered_map<sg4::Link*, int> index;
  std::vector<sg4::Link*> route;
  for (std::size_t g = 0; g < edges.size(); ++g) {
    for (const auto& [src, dst] : edges[g]) {
      route.clear();
      double latency_s = 0;
      src->route_to(dst, route, &latency_s);
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

}  // namespace

double route_latency_s(sg4::Host* src, sg4::Host* dst) {
  if (src == dst) return 0;
  std::vector<sg4::Link*> links;
  double latency_s = 0;
  src->route_to(dst, links, &latency_s);
  return latency_s;
}

std::vector<Segment> segments_of(const std::vector<GroupFlow>& groups, SegmentSlots slots) {
  std::size_t longest = 1;
  for (const GroupFlow& g : groups) longest = std::max(longest, g.edges.size());
  const std::size_t spare = static_cast<std::size_t>(std::max(0, slots.free - slots.reserved));
  const std::size_t budget = std::max<std::size_t>(groups.size(), spare / 4);
  const std::size_t per_group = std::max<std::size_t>(1, budget / std::max<std::size_t>(1, groups.size()));
  const std::size_t per = (longest + per_group - 1) / per_group;  // edges per segment
  std::vector<Segment> out;
  for (const GroupFlow& g : groups) {
    for (std::size_t i = 0; i < g.edges.size(); i += per) {
      const auto begin = g.edges.begin() + static_cast<long>(i);
      const auto end = g.edges.begin() + static_cast<long>(std::min(g.edges.size(), i + per));
      out.push_back({std::vector<Edge>(begin, end), g.wire_bytes, g.rate_bytes_per_s});
    }
  }
  return out;
}

std::vector<double> coupled_group_rates(const std::vector<std::vector<Edge>>& edges,
                                        const std::vector<double>& cap_bytes_per_s) {
  const std::size_t groups = edges.size();
  const GroupLinks links = group_links(edges);
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

FluidRun run_fluid(Platform& platform, const std::vector<GroupFlow>& groups) {
  platform.check_free_segments(static_cast<int>(groups.size()));
  const std::vector<Segment> segments =
      segments_of(groups, {platform.free_segments(), platform.reserved_segments()});
  const double start_s = sg4::Engine::get_clock();
  // Take every slot before the first simcall (routing a slot sets its cap link's bandwidth, and a
  // simcall lets other actors run); segments_of fits them in the free slots.
  std::vector<int> slots;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    slots.push_back(platform.acquire_segment());
    COMMBOUND_CHECK(slots.back() >= 0, "segments_of fits the free slots");
  }
  std::vector<sg4::CommPtr> comms;
  std::vector<double> latency_s;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const Segment& seg = segments[i];
    latency_s.push_back(platform.route_segment(slots[i], seg.edges, seg.rate_bytes_per_s));
    comms.push_back(sg4::Comm::sendto_async(platform.segment_src(slots[i]), platform.segment_dst(slots[i]),
                                            static_cast<uint64_t>(std::llround(seg.wire_bytes))));
  }
  sg4::Comm::wait_all(comms);
  FluidRun run;
  for (std::size_t i = 0; i < comms.size(); ++i) {
    run.bandwidth_s = std::max(run.bandwidth_s, comms[i]->get_finish_time() - start_s - latency_s[i]);
    platform.release_segment(slots[i]);
  }
  run.flows = static_cast<long>(segments.size());
  return run;
}

}  // namespace commbound::network::internal
