#include "network/internal/fluid_flows.hpp"

#include "core/ceil_div.hpp"
#include "core/check.hpp"
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
  return ceil_div(longest, per_group);
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

// The segments' routes, the links they cross (each once, in first-crossed order), and which
// segments cross each link.
std::shared_ptr<const SegmentRouteMemo::Routes> route_segments(const Platform& platform,
                                                               const std::vector<Segment>& segments) {
  auto out = std::make_shared<SegmentRouteMemo::Routes>();
  std::unordered_map<LinkOccupancy::LinkId, int> index;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    out->segments.push_back(platform.segment_route(segments[i].edges));
    std::vector<int>& hop_links = out->hop_links.emplace_back();
    hop_links.reserve(out->segments.back()->links.size());
    for (const RouteHop& hop : out->segments.back()->hops) {
      const auto [it, fresh] = index.try_emplace(hop.impl, static_cast<int>(out->links.size()));
      if (fresh) {
        out->links.push_back(hop.impl);
        out->link_segments.emplace_back();
        out->capacities_bytes_per_s.push_back(platform.link_bandwidth_bytes_per_s(hop.info));
      }
      hop_links.push_back(it->second);
      std::vector<int>& crossing = out->link_segments[static_cast<std::size_t>(it->second)];
      if (crossing.empty() || crossing.back() != static_cast<int>(i)) crossing.push_back(static_cast<int>(i));
    }
  }
  return out;
}

SegmentRouteMemo::Cut* find_cut(SegmentRouteMemo* memo, std::size_t per) {
  if (memo == nullptr) return nullptr;
  const auto it = std::find_if(memo->by_cut.begin(), memo->by_cut.end(),
                               [per](const SegmentRouteMemo::Cut& cut) { return cut.edges_per_segment == per; });
  return it != memo->by_cut.end() ? &*it : nullptr;
}

// What the segments put on each link at their caps, when every link can carry them all at once:
// then, alone, each segment moves at its cap from start to end. Checked, not assumed, before a
// call is priced without flows; the callers cap at coupled max-min rates (coupled_group_rates),
// which are. Null when some link cannot.
std::shared_ptr<const std::vector<double>> loads_at_caps(const SegmentRouteMemo::Routes& routed,
                                                 const std::vector<Segment>& segments) {
  std::vector<double> load_bytes_per_s(routed.links.size(), 0.0);
  for (std::size_t i = 0; i < segments.size(); ++i) {
    for (int k : routed.hop_links[i]) {
      double& load = load_bytes_per_s[static_cast<std::size_t>(k)];
      load += segments[i].rate_bytes_per_s;
      if (LinkOccupancy::exceeds(load, routed.capacities_bytes_per_s[static_cast<std::size_t>(k)])) return nullptr;
    }
  }
  return std::make_shared<const std::vector<double>>(std::move(load_bytes_per_s));
}

// Segment i's route less the links not `carried`: the whole route when it carries all of them.
std::shared_ptr<const SegmentRoute> carried_route(const SegmentRouteMemo::Routes& routed, std::size_t i,
                                                  const std::vector<char>& carried) {
  const std::vector<int>& hop_links = routed.hop_links[i];
  const std::shared_ptr<const SegmentRoute>& whole = routed.segments[i];
  if (std::all_of(hop_links.begin(), hop_links.end(), [&carried](int k) { return carried[static_cast<std::size_t>(k)]; })) {
    return whole;
  }
  auto trimmed = std::make_shared<SegmentRoute>();
  trimmed->latency_s = whole->latency_s;
  for (std::size_t h = 0; h < hop_links.size(); ++h) {
    if (carried[static_cast<std::size_t>(hop_links[h])]) trimmed->links.push_back(whole->links[h]);
  }
  return trimmed;
}

// The per-group caps of `groups`: what decides, with the cut, whether they are feasible.
std::vector<double> group_caps(const std::vector<GroupFlow>& groups) {
  std::vector<double> caps;
  for (const GroupFlow& g : groups) caps.push_back(g.rate_bytes_per_s);
  return caps;
}

}  // namespace

FluidRun run_fluid(Platform& platform, const std::vector<GroupFlow>& groups, SegmentRouteMemo* memo) {
  platform.check_free_segments(static_cast<int>(groups.size()));
  const SegmentSlots free = {platform.free_segments(), platform.reserved_segments()};
  const std::vector<Segment> segments = segments_of(groups, free);
  const std::size_t per = edges_per_segment(groups, free);
  // The segments' routes and the links they cross: from the memo when this cut was seen before,
  // else worked out (and kept). Held here, not looked up again: the simcalls below let other
  // collectives run, and one over the same groups may add to the memo.
  std::shared_ptr<const SegmentRouteMemo::Routes> routed;
  SegmentRouteMemo::Cut* cut = find_cut(memo, per);  // valid until the first simcall
  if (cut != nullptr) {
    routed = cut->routes;
  } else {
    routed = route_segments(platform, segments);
    if (memo != nullptr) cut = &memo->by_cut.emplace_back(SegmentRouteMemo::Cut{per, routed, {}, {}});
  }
  const std::vector<std::shared_ptr<const SegmentRoute>>& routes = routed->segments;
  COMMBOUND_CHECK(routes.size() == segments.size(), "a memo sees the same groups' edges on every call");
  // Capped segments whose caps their links carry all at once: alone, each moves at its cap from
  // start to end, so what it has left at any instant is known without simulating it. An uncapped
  // segment speeds up as others finish.
  bool steady = std::all_of(groups.begin(), groups.end(), [](const GroupFlow& g) { return g.rate_bytes_per_s > 0; });
  // Held here for the call's length (a memo's list may grow meanwhile): its loads on its links.
  std::shared_ptr<const std::vector<double>> loads;
  if (steady && cut != nullptr) {
    const std::vector<double> caps = group_caps(groups);
    auto known = std::find_if(cut->checked_caps.begin(), cut->checked_caps.end(),
                              [&caps](const SegmentRouteMemo::CheckedCaps& checked) { return checked.caps == caps; });
    if (known == cut->checked_caps.end()) {
      known = cut->checked_caps.insert(cut->checked_caps.end(), {caps, loads_at_caps(*routed, segments)});
    }
    loads = known->loads_bytes_per_s;
  } else if (steady) {
    loads = loads_at_caps(*routed, segments);
  }
  steady = loads != nullptr;
  LinkOccupancy& occupancy = platform.occupancy();
  LinkOccupancy::Job job;
  job.links = &routed->links;
  job.capacities_bytes_per_s = &routed->capacities_bytes_per_s;
  job.loads_bytes_per_s = loads.get();
  if (cut != nullptr) {  // its links' user lists, hashed once per cut
    if (cut->link_states.size() != routed->links.size()) cut->link_states = occupancy.link_states(routed->links);
    job.link_states = cut->link_states;
  }
  const double start_s = sg4::Engine::get_clock();
  // Take every slot before the first simcall (routing a slot sets its cap link's bandwidth, and a
  // simcall lets other actors run); segments_of fits them in the free slots.
  std::vector<int> slots;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    slots.push_back(platform.acquire_segment());
    COMMBOUND_CHECK(slots.back() >= 0, "segments_of fits the free slots");
  }
  // Register on the links, also before the first simcall: the segments that cross a contended link
  // are simulated, and so are those of the other calls there.
  std::vector<int> shared_links;
  const std::vector<LinkOccupancy::Meeting> met = occupancy.add(job, shared_links);
  steady = steady && occupancy.enabled();
  std::vector<char> simulated(segments.size(), steady ? 0 : 1);
  // Which of the call's links its flows cross: all of them, or (steady) the contended ones, per link
  // (sized on first use: most calls never start a flow).
  std::vector<char> carried;
  auto carry = [&carried, &routed](int k) {
    if (carried.empty()) carried.assign(routed->links.size(), 0);
    carried[static_cast<std::size_t>(k)] = 1;
  };
  if (steady) {
    for (int k : shared_links) {
      carry(k);
      for (int i : routed->link_segments[static_cast<std::size_t>(k)]) simulated[static_cast<std::size_t>(i)] = 1;
    }
  }
  std::vector<double> latency_s(segments.size());
  std::vector<double> bytes(segments.size());
  std::vector<double> finish_s(segments.size());
  for (std::size_t i = 0; i < segments.size(); ++i) {
    latency_s[i] = routes[i]->latency_s;
    bytes[i] = std::round(segments[i].wire_bytes);
    // Unsimulated: its latency, then its bytes at its cap.
    if (steady) finish_s[i] = start_s + latency_s[i] + bytes[i] / segments[i].rate_bytes_per_s;
  }
  std::size_t running = 0;  // flows started (or marked to start) and not completed
  const sg4::SemaphorePtr all_done = sg4::Semaphore::create(0);
  // Per segment (sized at the first flow): whether a flow of it is in flight, when that flow
  // started and the latency it started with, and whether it is listed to be rerouted.
  struct Flow {
    bool in_flight = false;
    bool rerouting = false;
    double start_s = 0;
    double latency_s = 0;
  };
  std::vector<Flow> flows;
  // Starts segment i's flow now with `left_bytes` and `left_latency_s` of its latency (all of it:
  // nullopt); the last running to complete wakes this actor. The cap is set first: a simcall,
  // during which other calls may carry more of our links; the route, set after it, has them. From
  // then on a call that meets it reroutes it.
  auto start = [&](std::size_t i, double left_bytes, std::optional<double> left_latency_s) {
    if (flows.empty()) flows.resize(segments.size());
    platform.cap_segment(slots[i], segments[i].rate_bytes_per_s);
    platform.route_segment(slots[i], steady ? carried_route(*routed, i, carried) : routes[i], left_latency_s);
    flows[i] = {true, false, sg4::Engine::get_clock(), left_latency_s.value_or(latency_s[i])};
    platform.start_segment(slots[i], left_bytes, [&, i](double at_s) {
      flows[i].in_flight = false;
      finish_s[i] = at_s;
      if (--running == 0) all_done->release();
    });
  };
  std::vector<std::size_t> marked;    // unsimulated segments met by another call, to start as flows
  std::vector<std::size_t> rerouted;  // flows met on a link they leave out, to reroute over it
  if (steady) {
    job.mark = [&](const std::vector<int>& links) {
      const double now_s = sg4::Engine::get_clock();
      const std::size_t before = marked.size() + rerouted.size();
      for (int k : links) {
        // A carried link's segments are all simulated, their flows over it.
        if (!carried.empty() && carried[static_cast<std::size_t>(k)]) continue;
        carry(k);
        for (int seg : routed->link_segments[static_cast<std::size_t>(k)]) {
          const auto i = static_cast<std::size_t>(seg);
          if (simulated[i]) {
            if (!flows.empty() && flows[i].in_flight && !flows[i].rerouting) {
              flows[i].rerouting = true;
              rerouted.push_back(i);
            }
            continue;
          }
          simulated[i] = 1;
          if (finish_s[i] > now_s) {
            marked.push_back(i);
            ++running;
          }
        }
      }
      return marked.size() + rerouted.size() > before;
    };
    // What the marked segments have left at their caps; the rerouted flows over the links now carried.
    job.start_marked = [&] {
      const double now_s = sg4::Engine::get_clock();
      std::vector<std::size_t> now_marked;
      now_marked.swap(marked);
      std::vector<std::size_t> now_rerouted;
      now_rerouted.swap(rerouted);
      for (std::size_t i : now_marked) {
        const double moved_s = now_s - start_s - latency_s[i];  // time spent moving bytes so far
        if (moved_s <= 0) {
          start(i, bytes[i], -moved_s);
        } else {
          start(i, bytes[i] - moved_s * segments[i].rate_bytes_per_s, 0.0);
        }
      }
      for (std::size_t i : now_rerouted) {
        Flow& flow = flows[i];
        flow.rerouting = false;
        if (!flow.in_flight) continue;
        const double left_latency_s = std::max(0.0, flow.start_s + flow.latency_s - now_s);
        if (platform.reroute_segment(slots[i], carried_route(*routed, i, carried), left_latency_s)) {
          flow.start_s = now_s;
          flow.latency_s = left_latency_s;
        }
      }
    };
  }
  // Tell every call met, then start their flows and ours.
  std::vector<LinkOccupancy::Job*> to_start;
  for (const LinkOccupancy::Meeting& m : met) {
    if (m.job->mark && m.job->mark(m.links)) to_start.push_back(m.job);
  }
  std::vector<std::size_t> own;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    if (simulated[i]) own.push_back(i);
  }
  running += own.size();
  for (LinkOccupancy::Job* other : to_start) other->start_marked();
  for (std::size_t i : own) start(i, bytes[i], std::nullopt);
  // Until every flow has completed and the last unsimulated segment has ended (woken early when the
  // running flows complete; segments may become flows meanwhile).
  for (;;) {
    const double now_s = sg4::Engine::get_clock();
    double last_s = now_s;
    for (std::size_t i = 0; i < segments.size(); ++i) {
      if (!simulated[i]) last_s = std::max(last_s, finish_s[i]);
    }
    if (last_s > now_s) {
      all_done->acquire_timeout(last_s - now_s);
    } else if (running > 0) {
      all_done->acquire();
    } else {
      break;
    }
  }
  job.mark = nullptr;
  job.start_marked = nullptr;
  occupancy.remove(job);
  FluidRun run;
  run.flows = static_cast<long>(segments.size());
  for (std::size_t i = 0; i < segments.size(); ++i) {
    run.bandwidth_s = std::max(run.bandwidth_s, finish_s[i] - start_s - latency_s[i]);
  }
  for (int slot : slots) platform.release_segment(slot);
  return run;
}

}  // namespace commbound::network::internal
