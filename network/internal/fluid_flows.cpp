#include "network/internal/fluid_flows.hpp"

#include "calibration/base/check.hpp"
#include "network/internal/fabric_zone.hpp"

#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Semaphore.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

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

namespace {

// The segments' routes and the links they cross, each once, in first-crossed order.
std::shared_ptr<const SegmentRouteMemo::Routes> route_segments(const Platform& platform,
                                                               const std::vector<Segment>& segments) {
  auto out = std::make_shared<SegmentRouteMemo::Routes>();
  std::unordered_set<LinkOccupancy::LinkId> seen;
  for (const Segment& seg : segments) {
    out->segments.push_back(platform.segment_route(seg.edges));
    for (const auto* link : out->segments.back()->links) {
      if (seen.insert(link).second) out->links.push_back(link);
    }
  }
  return out;
}

// What makes two calls over one memo's edges and cut identical: each group's bytes and rate.
std::vector<double> replay_key(const std::vector<GroupFlow>& groups) {
  std::vector<double> key;
  for (const GroupFlow& g : groups) {
    key.push_back(g.wire_bytes);
    key.push_back(g.rate_bytes_per_s);
  }
  return key;
}

SegmentRouteMemo::Cut* find_cut(SegmentRouteMemo* memo, std::size_t per) {
  if (memo == nullptr) return nullptr;
  const auto it = std::find_if(memo->by_cut.begin(), memo->by_cut.end(),
                               [per](const SegmentRouteMemo::Cut& cut) { return cut.edges_per_segment == per; });
  return it != memo->by_cut.end() ? &*it : nullptr;
}

}  // namespace

FluidRun run_fluid(Platform& platform, const std::vector<GroupFlow>& groups, SegmentRouteMemo* memo) {
  platform.check_free_segments(static_cast<int>(groups.size()));
  const SegmentSlots free = {platform.free_segments(), platform.reserved_segments()};
  const std::vector<Segment> segments = segments_of(groups, free);
  // The segments' routes and the links they cross: from the memo when this cut was seen before,
  // else worked out (and kept). Held here, not looked up again: the simcalls below let other
  // collectives run, and one over the same groups may add to the memo.
  std::shared_ptr<const SegmentRouteMemo::Routes> routed;
  const std::size_t per = edges_per_segment(groups, free);
  // Only capped groups are replayed: alone, each of their segments moves at its cap throughout (the
  // caps are coupled max-min rates, feasible together), so a replay can say what any of them has
  // left at any instant. An uncapped segment speeds up as others finish.
  const bool replayable = memo != nullptr && std::all_of(groups.begin(), groups.end(), [](const GroupFlow& g) {
                            return g.rate_bytes_per_s > 0;
                          });
  const std::vector<double> key = replayable ? replay_key(groups) : std::vector<double>{};
  std::shared_ptr<const SegmentRouteMemo::Replay> replay;
  SegmentRouteMemo::Cut* cut = find_cut(memo, per);  // valid until the first simcall
  if (cut != nullptr) {
    routed = cut->routes;
    for (const auto& r : cut->replays) {
      if (replayable && r->key == key) replay = r;
    }
  }
  if (routed == nullptr) {  // a cut not seen before
    routed = route_segments(platform, segments);
    if (memo != nullptr) cut = &memo->by_cut.emplace_back(SegmentRouteMemo::Cut{per, routed, {}, {}});
  }
  const std::vector<std::shared_ptr<const SegmentRoute>>& routes = routed->segments;
  LinkOccupancy& occupancy = platform.occupancy();
  LinkOccupancy::Job job;
  job.links = &routed->links;
  if (cut != nullptr) {  // its links' user lists, hashed once per cut
    if (cut->user_lists.size() != routed->links.size()) cut->user_lists = occupancy.user_lists(routed->links);
    job.user_lists = cut->user_lists;
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
  // Register on the links, also before the first simcall; a call that meets no other job and has
  // run alone before replays that run (link_occupancy.hpp); the replays it meets turn into flows.
  const std::vector<LinkOccupancy::Job*> met = occupancy.add(job);
  const bool replayed = replay != nullptr && met.empty() && occupancy.enabled();
  std::vector<double> latency_s(segments.size());
  for (std::size_t i = 0; i < segments.size(); ++i) latency_s[i] = routes[i]->latency_s;
  std::vector<double> finish_s(segments.size());
  std::size_t running = segments.size();
  bool materialized = false;
  const sg4::SemaphorePtr all_done = sg4::Semaphore::create(0);
  // Starts segment i's flow now with `bytes` left and `left_latency_s` of its latency (all of it:
  // nullopt); the last to complete wakes this actor.
  auto start = [&](std::size_t i, double bytes, std::optional<double> left_latency_s) {
    platform.route_segment(slots[i], routes[i], segments[i].rate_bytes_per_s, left_latency_s);
    platform.start_segment(slots[i], bytes, [&, i](double at_s) {
      finish_s[i] = at_s;
      if (--running == 0) all_done->release();
    });
  };
  if (replayed) {
    // Each segment would move as in the replayed run: latency, then its bytes at a constant rate
    // (alone, each runs at its cap), finishing finish_offset_s after the start. Met now: the
    // unfinished ones become flows with what they have left.
    job.materialize = [&] {
      materialized = true;
      const double now_s = sg4::Engine::get_clock();
      std::vector<std::size_t> unfinished;
      for (std::size_t i = 0; i < segments.size(); ++i) {
        if (start_s + replay->finish_offset_s[i] > now_s) {
          unfinished.push_back(i);
        } else {
          finish_s[i] = start_s + replay->finish_offset_s[i];
        }
      }
      running = unfinished.size();
      for (std::size_t i : unfinished) {
        const double moved_s = now_s - start_s - latency_s[i];  // time spent moving bytes so far
        const double moving_s = replay->finish_offset_s[i] - latency_s[i];
        const double bytes = std::round(segments[i].wire_bytes);
        if (moved_s <= 0) {
          start(i, bytes, -moved_s);
        } else {
          start(i, bytes * (1 - moved_s / moving_s), 0.0);
        }
      }
    };
  }
  for (LinkOccupancy::Job* other : met) {
    if (std::function<void()> materialize = LinkOccupancy::take_materialize(*other)) materialize();
  }
  FluidRun run;
  run.flows = static_cast<long>(segments.size());
  if (replayed) {
    // Woken early only by materialized flows that all completed; at the replay's end, wait for
    // those still running.
    all_done->acquire_timeout(replay->duration_s);
    LinkOccupancy::take_materialize(job);
    if (materialized && running > 0) all_done->acquire();
    if (!materialized) run.bandwidth_s = replay->bandwidth_s;
  } else {
    for (std::size_t i = 0; i < segments.size(); ++i) start(i, std::round(segments[i].wire_bytes), std::nullopt);
    all_done->acquire();
  }
  occupancy.remove(job);
  if (!replayed || materialized) {
    for (std::size_t i = 0; i < segments.size(); ++i) {
      run.bandwidth_s = std::max(run.bandwidth_s, finish_s[i] - start_s - latency_s[i]);
    }
  }
  for (int slot : slots) platform.release_segment(slot);
  // A simulated run that met no other job ran alone: the next identical call may replay it. (The
  // cut is looked up again: other collectives may have added to the memo meanwhile.)
  cut = find_cut(memo, per);
  if (replayable && !replayed && !job.shared && occupancy.enabled() && cut != nullptr) {
    const bool known = std::any_of(cut->replays.begin(), cut->replays.end(), [&](const auto& r) { return r->key == key; });
    if (!known) {
      auto r = std::make_shared<SegmentRouteMemo::Replay>();
      r->key = key;
      for (std::size_t i = 0; i < segments.size(); ++i) r->finish_offset_s.push_back(finish_s[i] - start_s);
      r->duration_s = sg4::Engine::get_clock() - start_s;
      r->bandwidth_s = run.bandwidth_s;
      cut->replays.push_back(std::move(r));
    }
  }
  return run;
}

}  // namespace commbound::network::internal
