#include "network/internal/ring.hpp"

#include "core/size_label.hpp"
#include "core/units.hpp"
#include "network/internal/algorithm.hpp"
#include "network/internal/channel_groups.hpp"
#include "network/internal/fifo_window.hpp"
#include "network/internal/fluid_flows.hpp"
#include "network/internal/send_pipe.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {
namespace {

// One ring as it runs: its chunk, its rate and its hops' protocol latencies.
struct RingLane {
  const std::vector<int>* order = nullptr;  // ranks in ring order
  double chunk_wire_bytes = 0;      // per step, through each edge
  double rate_bytes_per_s = -1;     // the ring's coupled rate
  std::vector<double> hop_sleep_s;  // per position: protocol latency paid before each send
};

// Ring, step by step: the rank at position p sends step s once it holds step s-1's data.
void run_ring_steps(const Platform& platform, const std::vector<RingLane>& lanes, int steps) {
  std::vector<sg4::ActorPtr> actors;
  for (std::size_t g = 0; g < lanes.size(); ++g) {
    const auto& order = *lanes[g].order;
    const int n = static_cast<int>(order.size());
    std::vector<sg4::Mailbox*> mb(n);
    for (int i = 0; i < n; ++i) mb[i] = sg4::Mailbox::by_name("ring." + std::to_string(g) + "." + std::to_string(i));
    for (int i = 0; i < n; ++i) {
      sg4::Mailbox* in = mb[i];
      sg4::Mailbox* to = mb[(i + 1) % n];
      const double bytes = lanes[g].chunk_wire_bytes;
      const double cap = lanes[g].rate_bytes_per_s;
      const double sleep_s = lanes[g].hop_sleep_s[i];
      sg4::ActorPtr a = sg4::Actor::init("ring", platform.gpu(order[i]));
      in->set_receiver(a);  // eager: data flows as soon as it is sent, as into NCCL's FIFO slots
      a->start([in, to, bytes, cap, sleep_s, steps] {
        SendPipe pipe;
        double ready_s = sg4::Engine::get_clock();
        for (int s = 0; s < steps; ++s) {
          if (s > 0) ready_s = receive(in);
          wait_latency(ready_s, sleep_s);
          pipe.send(to, bytes, cap);
        }
        pipe.drain();
        receive(in);
        in->set_receiver(nullptr);
      });
      actors.push_back(a);
    }
  }
  for (auto& a : actors) a->join();
}

}  // namespace

std::vector<std::vector<int>> mesh_cycles(std::vector<int> node_ranks) {
  std::vector<std::vector<int>> cycles;
  if (node_ranks.size() < 3) return {node_ranks};
  std::sort(node_ranks.begin() + 1, node_ranks.end());
  do {
    cycles.push_back(node_ranks);
  } while (std::next_permutation(node_ranks.begin() + 1, node_ranks.end()));
  return cycles;
}

std::vector<RingGroup> build_rings(const Platform& platform, const std::vector<int>& ranks, bool merge) {
  const auto nodes = by_node(platform, ranks);
  const NodeType& node = platform.spec().node;
  const bool mesh = node.nvlink_topology == NvlinkTopology::mesh;
  const int channels = node.nccl_channels;
  std::vector<RingGroup> rings;
  if (mesh && nodes.size() == 1) {
    const auto cycles = mesh_cycles(nodes.front());
    const int groups = std::min(static_cast<int>(cycles.size()), channels);
    for (auto [g, c] : group_slots(groups, channels, merge)) rings.push_back({cycles[g], c});
    return rings;
  }
  const std::vector<int> rails = rails_used(platform, nodes);
  for (auto [g, c] : group_slots(static_cast<int>(rails.size()), channels, merge)) {
    RingGroup ring;
    ring.channels = c;
    for (const auto& n : nodes) {
      std::vector<int> order = rotate_to_rail(platform, n, rails[static_cast<std::size_t>(g)]);
      // On a mesh, odd rails cross the node the other way round, so that the rails' rings share
      // each direction of each pair's link between half of them (the way NCCL's search balances
      // its channels over the links) instead of all crowding one direction.
      if (mesh && g % 2 == 1) std::reverse(order.begin() + 1, order.end());
      ring.order.insert(ring.order.end(), order.begin(), order.end());
    }
    rings.push_back(std::move(ring));
  }
  return rings;
}

double ring_critical_latency(const std::vector<double>& alpha_s, int steps) {
  const int n = static_cast<int>(alpha_s.size());
  std::vector<double> prefix(2 * n + 1, 0);
  for (int i = 0; i < 2 * n; ++i) prefix[i + 1] = prefix[i] + alpha_s[i % n];
  const double total = prefix[n];
  const int laps = steps / n;
  const int rest = steps % n;
  double best = 0;
  for (int j = 0; j < n; ++j) best = std::max(best, laps * total + prefix[j + rest] - prefix[j]);
  return best;
}

namespace {

// The ring's latency as --explain itemizes it: launch, the latency chain, the messages.
std::vector<CostTerm> ring_terms(const AlgorithmParams& params, const std::vector<int>& order, int steps,
                                 double chain_s, double step_payload_bytes) {
  const int n = static_cast<int>(order.size());
  // The cost of the first hop of class `hc` around the ring, in us.
  auto hop_us = [&](HopClass hc) {
    for (int i = 0; i < n; ++i) {
      const int from = order[i];
      const int to = order[(i + 1) % n];
      if (params.platform.hop_class(from, to) == hc) return params.hop_s(from, to) * kUsPerS;
    }
    return 0.0;
  };
  const std::string hops = params.shape.nodes > 1
                               ? fmt::format("NVLink {:.2f} us, network {:.2f} us + switches", hop_us(HopClass::nvlink),
                                             hop_us(HopClass::net))
                               : fmt::format("NVLink {:.2f} us", hop_us(HopClass::nvlink));
  std::vector<CostTerm> terms;
  terms.push_back({params.fit != nullptr ? "launch (the fit's)" : "base latency (NCCL's baseLat)", 1, params.base_s,
                   params.base_s});
  terms.push_back({fmt::format("latency chain: {} steps, a hop each ({})", steps, hops), static_cast<double>(steps),
                   chain_s / steps, chain_s});
  if (params.fit != nullptr) {
    const double per_step = params.fifo_messages(step_payload_bytes);
    const double messages_s = params.messages_s(steps, step_payload_bytes);
    terms.push_back({fmt::format("messages: {} steps x {:g} per connection ({} of {} each, per channel)", steps, per_step,
                                 params.choice.protocol == Protocol::simple ? "slices" : "FIFO steps",
                                 size_label(step_payload_bytes / per_step)),
                     steps * per_step, params.fit->message_s, messages_s});
  }
  return terms;
}

// The ring's FIFO window (fifo_window.hpp): a Simple slice takes SLICESTEPS = 2 slots, so 4 slices
// are in flight, an LL or LL128 step one, so 8 (src/include/collectives.h). The receiver copies the
// slice onward over NVLink before it frees the slot, so that copy is part of the cycle. Nullopt on
// one node or without a fit.
std::optional<Window> fifo_window(const AlgorithmParams& params, int steps, double step_payload_bytes) {
  constexpr double kRingSimpleSliceSteps = 2;
  if (params.fit == nullptr || params.shape.nodes <= 1 || step_payload_bytes <= 0) return std::nullopt;
  Window w;
  w.in_flight = params.choice.protocol == Protocol::simple ? kNcclSteps / kRingSimpleSliceSteps : kNcclSteps;
  const double per_step = params.fifo_messages(step_payload_bytes);
  w.message_bytes = step_payload_bytes / per_step;
  w.messages = steps * per_step;
  const NodeType& node = params.platform.spec().node;
  const double channels_per_nic = static_cast<double>(node.nccl_channels) / node.nics;
  const double share_bytes_per_s = params.platform.spec().fabric.nic_bw_bytes_per_s() / channels_per_nic;
  const double wire_bytes = w.message_bytes / params.efficiency();
  w.cycle_s = slot_round_trip_s(*params.fit, wire_bytes, share_bytes_per_s) +
              wire_bytes / (node.nvlink.effective_bw_bytes_per_s() / node.nccl_channels);
  return w;
}

}  // namespace

AlgorithmResult run_ring(const AlgorithmParams& params) {
  const Platform& platform = params.platform;
  const Protocol proto = params.choice.protocol;
  const auto& caps = params.nccl.caps(platform.spec().node.sm_arch);
  const double nch = platform.spec().node.nccl_channels;
  const double efficiency = params.efficiency();
  const int n = static_cast<int>(params.call.ranks.size());
  const int steps = params.call.op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
  double per_channel_cap = -1;  // payload bytes/s
  if (proto == Protocol::ll128) per_channel_cap = caps.ring_ll128_bytes_per_s;
  if (proto == Protocol::ll && params.shape.nodes == 1) per_channel_cap = caps.ll_max_bytes_per_s / nch;
  const double step_payload_bytes = params.call.size_bytes / n / nch;
  const std::optional<Window> window = fifo_window(params, steps, step_payload_bytes);

  RouteCache::Routes& routes = params.routes.routes({Algorithm::ring, params.merge_channels, params.call.ranks}, [&] {
    RouteCache::Groups groups;
    for (RingGroup& ring : build_rings(platform, params.call.ranks, params.merge_channels)) {
      std::vector<Edge> edges;
      for (int i = 0; i < n; ++i) edges.emplace_back(platform.gpu(ring.order[i]), platform.gpu(ring.order[(i + 1) % n]));
      groups.members.push_back(std::move(ring.order));
      groups.channels.push_back(ring.channels);
      groups.edges.push_back(std::move(edges));
    }
    return groups;
  });
  const std::size_t groups = routes.size();
  // Per position: the protocol latency paid before each send (hop_s).
  auto hop_sleep_s = [&](std::size_t g) {
    const std::vector<int>& order = routes.members(g);
    std::vector<double> sleep_s(n);
    for (int i = 0; i < n; ++i) sleep_s[i] = params.hop_s(order[i], order[(i + 1) % n]);
    return sleep_s;
  };

  AlgorithmResult result;
  // The latency chain depends on the groups and on what hop_s() reads.
  const double chain_s = routes.value({static_cast<double>(proto), params.latency_factor, params.net_overhead_s,
                                   static_cast<double>(steps)},
                                  [&] {
                                    double worst_s = 0;
                                    for (std::size_t g = 0; g < groups; ++g) {
                                      std::vector<double> alpha = hop_sleep_s(g);
                                      for (int i = 0; i < n; ++i) alpha[i] += routes.edge_latency_s(g, i);
                                      worst_s = std::max(worst_s, ring_critical_latency(alpha, steps));
                                    }
                                    return worst_s;
                                  });
  // Each connection's messages, a step's slices on NVLink as on the network: serialized sync work.
  const double messages_s = params.messages_s(steps, step_payload_bytes);
  result.latency_s = params.base_s + chain_s + messages_s;
  if (params.itemize) {
    result.terms = ring_terms(params, routes.members(0), steps, chain_s, step_payload_bytes);
    if (window) {
      result.schedule_note = fmt::format(
          "waiting for FIFO slots: {:g} messages a connection, {:g} in flight, a slot back every {:.2f} us "
          "(round trip + {} on the wire)",
          window->messages, window->in_flight, window->cycle_s * kUsPerS, size_label(window->message_bytes));
    }
  }
  std::vector<double> chunk_wire_bytes(groups);  // per step, through each edge
  std::vector<double> cap(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    chunk_wire_bytes[g] = params.call.size_bytes / n / nch * routes.channels(g) / efficiency;
    cap[g] = per_channel_cap > 0 ? per_channel_cap * routes.channels(g) / efficiency : -1;
  }
  const std::vector<double> rate = routes.rates(cap);
  const double start_s = sg4::Engine::get_clock();
  sg4::this_actor::sleep_for(params.base_s);
  if (params.fidelity == Fidelity::step) {
    std::vector<RingLane> lanes(groups);
    for (std::size_t g = 0; g < groups; ++g) {
      lanes[g] = {&routes.members(g), chunk_wire_bytes[g], rate[g], hop_sleep_s(g)};
    }
    run_ring_steps(platform, lanes, steps);
    // The steps are whole chunks, not slices: the window's bound is taken as the fluid one takes it.
    if (window) {
      const double elapsed_s = sg4::Engine::get_clock() - start_s;
      if (params.base_s + window->bound_s() > elapsed_s) sg4::this_actor::sleep_for(params.base_s + window->bound_s() - elapsed_s);
    }
    result.stepped = true;
    result.flows = static_cast<long>(groups) * n * steps;
    return result;
  }
  // Every step's message waits for its data and for the previous message on its edge, so the
  // schedule's longest path is the bandwidth time plus the latency chain (see run_ring_steps).
  std::vector<GroupFlow> flows(groups);
  for (std::size_t g = 0; g < groups; ++g) flows[g] = {routes.edges()[g], chunk_wire_bytes[g] * steps, rate[g]};
  const FluidRun run = run_fluid(params.platform, flows, &routes.segment_routes());
  result.bandwidth_s = run.bandwidth_s;
  result.flows = run.flows;
  if (window && params.base_s + window->bound_s() > result.latency_s + result.bandwidth_s) {
    result.schedule_s = params.base_s + window->bound_s();
  }
  return result;
}

// NCCL's tuner on Ring (tuning.cc).
namespace {

std::string ring_unsupported(const NcclTuner&, const CallShape&, Protocol) { return ""; }

// base + the intra-node steps at max(NVLink hop, netOverhead) + the inter-node steps at the
// network hop (Tree's when every rank is on its own node, as tuning.cc prices it); a multi-node
// Ring/Simple AllReduce x NCCL's latency factor.
double ring_latency_s(const NcclTuner& tuner, const CallShape& shape, Protocol p) {
  const NcclConstants& nccl = tuner.nccl();
  const int n = shape.ranks;
  const int nodes = shape.nodes;
  const bool ar = shape.op == CollectiveOp::all_reduce;
  const int steps = shape.op == CollectiveOp::send_recv ? 1 : (ar ? 2 * (n - 1) : n - 1);
  const int ar_inter = nccl.rules.ring_allreduce_net_steps_per_gap ? 2 * (nodes - 1) : 2 * nodes;
  const int inter = nodes > 1 ? (ar ? ar_inter : nodes - 1) : 0;
  const double intra = std::max(nccl.hop(Algorithm::ring, HopClass::nvlink, p), tuner.net_overhead_s(shape, p));
  const bool tree_net = n == nodes && nccl.rules.one_per_node_tree_net_latency;
  const double net = nccl.hop(tree_net ? Algorithm::tree : Algorithm::ring, HopClass::net, p);
  double lat = nccl.base(Algorithm::ring, p) + (steps - inter) * intra + inter * net;
  if (ar && nodes > 1 && p == Protocol::simple) {
    lat *= tuner.node().sm_arch >= 80 ? nccl.ring_simple_allreduce_latency_factor
                                      : nccl.ring_simple_allreduce_latency_factor_pre_sm80;
  }
  return lat;
}

// LL: at most llMaxBw and the release's share of the bus (2.30.7 half of it); LL128: the release's
// share (0.92; 2.20.5 0.7 with one GPU per node), at most the per-channel cap; algBw = busBw x n /
// steps (SendRecv: busBw).
std::optional<double> ring_alg_bw(const NcclTuner& tuner, const CallShape& shape, Protocol p, const TunerBandwidth& bw) {
  const NcclConstants::Rules& rules = tuner.nccl().rules;
  double bus_bw = bw.bus_bytes_per_s;
  if (p == Protocol::ll) {
    const bool gather_on_one_node = shape.nodes == 1 && shape.op != CollectiveOp::all_reduce;
    const double share = gather_on_one_node ? rules.ring_ll_bus_factor_one_node_gather : rules.ring_ll_bus_factor;
    bus_bw = std::min(bw.caps->ll_max_bytes_per_s, share * bw.bus_bytes_per_s);
  }
  if (p == Protocol::ll128) {
    const double share = shape.ranks < 2 * shape.nodes ? rules.ring_ll128_bus_factor_one_per_node : rules.ring_ll128_bus_factor;
    bus_bw = std::min(share * bw.bus_bytes_per_s, bw.channels * bw.caps->ring_ll128_bytes_per_s);
  }
  return shape.op == CollectiveOp::send_recv ? bus_bw : bus_bw * shape.ranks / bw.steps;
}

}  // namespace

extern const AlgorithmSpec kRingAlgorithm{
    Algorithm::ring, "ring", "ring",
    ring_unsupported, ring_latency_s, ring_alg_bw,
    run_ring};

}  // namespace commbound::network::internal
