#include "network/internal/tree.hpp"

#include "network/internal/algorithm.hpp"
#include "network/internal/channel_groups.hpp"
#include "network/internal/fluid_flows.hpp"
#include "network/internal/send_pipe.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {
namespace {

// One tree as it runs: its chunk, its rate and its hops' latencies.
struct TreeLane {
  const TreeGroup* tree = nullptr;
  double chunk_wire_bytes = 0;   // per chunk, through each edge
  double rate_bytes_per_s = -1;  // the tree's coupled rate
  // Per position: protocol latency paid before sending to the parent / to the children.
  std::vector<double> up_sleep_s;
  std::vector<double> down_sleep_s;
  // Per position: the same plus route latency, to the parent / to each child (tree_path_s).
  std::vector<double> up_alpha_s;
  std::vector<std::vector<double>> down_alpha_s;
};

// Tree, chunk by chunk: reduce up (a rank forwards chunk k once all children delivered it), then
// broadcast down from the root. Separate up and down actors keep the two phases pipelined.
void run_tree_steps(const Platform& platform, const std::vector<TreeLane>& lanes, int chunks) {
  std::vector<sg4::ActorPtr> actors;
  for (std::size_t g = 0; g < lanes.size(); ++g) {
    const TreeGroup& t = *lanes[g].tree;
    const int n = static_cast<int>(t.ranks.size());
    // up[i]: rank i -> its parent (the root's goes to its own down actor); down[i]: parent -> rank i.
    std::vector<sg4::Mailbox*> up(n), down(n);
    for (int i = 0; i < n; ++i) {
      up[i] = sg4::Mailbox::by_name("tree.up." + std::to_string(g) + "." + std::to_string(i));
      down[i] = sg4::Mailbox::by_name("tree.down." + std::to_string(g) + "." + std::to_string(i));
    }
    const double bytes = lanes[g].chunk_wire_bytes;
    const double cap = lanes[g].rate_bytes_per_s;
    for (int i = 0; i < n; ++i) {
      std::vector<sg4::Mailbox*> from_children;
      std::vector<sg4::Mailbox*> to_children;
      for (int c : t.children[i]) {
        from_children.push_back(up[c]);
        to_children.push_back(down[c]);
      }
      const bool root = t.parent[i] < 0;
      sg4::Mailbox* to_parent = root ? down[i] : up[i];
      const double up_bytes = root ? 0 : bytes;
      const double up_sleep = lanes[g].up_sleep_s[i];
      const double down_sleep = lanes[g].down_sleep_s[i];
      sg4::ActorPtr ua = sg4::Actor::init("tree.up", platform.gpu(t.ranks[i]));
      for (sg4::Mailbox* m : from_children) m->set_receiver(ua);
      ua->start([from_children, to_parent, up_bytes, cap, up_sleep, chunks] {
        SendPipe pipe;
        const double start_s = sg4::Engine::get_clock();
        for (int k = 0; k < chunks; ++k) {
          double ready_s = start_s;  // a leaf holds all its chunks from the start
          for (sg4::Mailbox* m : from_children) ready_s = std::max(ready_s, receive(m));
          wait_latency(ready_s, up_sleep);
          pipe.send(to_parent, up_bytes, cap);
        }
        pipe.drain();
        for (sg4::Mailbox* m : from_children) m->set_receiver(nullptr);
      });
      sg4::ActorPtr da = sg4::Actor::init("tree.down", platform.gpu(t.ranks[i]));
      down[i]->set_receiver(da);
      da->start([in = down[i], to_children, bytes, cap, down_sleep, chunks] {
        std::vector<SendPipe> pipes(to_children.size());
        for (int k = 0; k < chunks; ++k) {
          const double ready_s = receive(in);
          if (to_children.empty()) continue;
          wait_latency(ready_s, down_sleep);
          for (std::size_t c = 0; c < to_children.size(); ++c) pipes[c].send(to_children[c], bytes, cap);
        }
        for (auto& pipe : pipes) pipe.drain();
        in->set_receiver(nullptr);
      });
      actors.push_back(ua);
      actors.push_back(da);
    }
  }
  for (auto& a : actors) a->join();
}

// NCCL's per-channel tree bandwidth cap for the protocol and node count (payload bytes/s).
double tree_channel_cap(const AlgorithmParams& params) {
  const auto& caps = params.nccl.caps(params.platform.spec().node.sm_arch);
  const int regime = params.shape.nodes == 1 ? 0 : (params.shape.nodes == 2 ? 1 : 2);
  switch (params.choice.protocol) {
    case Protocol::ll128: return caps.tree_ll128_bytes_per_s[regime];
    case Protocol::ll: return caps.tree_simple_bytes_per_s[regime] / params.nccl.tree_ll_divisor;
    case Protocol::simple: return caps.tree_simple_bytes_per_s[regime];
  }
  return caps.tree_simple_bytes_per_s[regime];
}

// The tree's edges: each rank (in position order) to its parent and back.
std::vector<Edge> tree_edges(const Platform& platform, const TreeGroup& t) {
  std::vector<Edge> edges;
  for (std::size_t i = 0; i < t.ranks.size(); ++i) {
    if (t.parent[i] < 0) continue;
    sg4::Host* self = platform.gpu(t.ranks[i]);
    sg4::Host* parent = platform.gpu(t.ranks[t.parent[i]]);
    edges.emplace_back(self, parent);
    edges.emplace_back(parent, self);
  }
  return edges;
}

// Fills the per-position latencies of `lane` (whose tree is set); `routes` holds its edges'
// route latencies as group `g` (tree_edges' order).
void fill_hops(const AlgorithmParams& params, const RouteCache::Routes& routes, std::size_t g, TreeLane& lane) {
  const TreeGroup& t = *lane.tree;
  const int n = static_cast<int>(t.ranks.size());
  lane.up_sleep_s.assign(n, 0);
  lane.down_sleep_s.assign(n, 0);
  lane.up_alpha_s.assign(n, 0);
  lane.down_alpha_s.resize(n);
  for (int i = 0; i < n; ++i) {
    for (int c : t.children[i]) lane.down_sleep_s[i] = std::max(lane.down_sleep_s[i], params.hop_s(t.ranks[i], t.ranks[c]));
  }
  std::vector<std::size_t> up_edge(n);  // position -> index of its edge to the parent
  for (std::size_t i = 0, e = 0; i < t.ranks.size(); ++i) {
    if (t.parent[i] < 0) continue;
    up_edge[i] = e;
    e += 2;
  }
  for (int i = 0; i < n; ++i) {
    if (t.parent[i] >= 0) {
      lane.up_sleep_s[i] = params.hop_s(t.ranks[i], t.ranks[t.parent[i]]);
      lane.up_alpha_s[i] = lane.up_sleep_s[i] + routes.edge_latency_s(g, up_edge[i]);
    }
    for (int c : t.children[i]) {
      lane.down_alpha_s[i].push_back(lane.down_sleep_s[i] + routes.edge_latency_s(g, up_edge[c] + 1));
    }
  }
}

}  // namespace

int btree_parent(int n, int rank) {
  if (rank == 0) return -1;
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  const int up = (rank ^ bit) | (bit << 1);
  return up >= n ? (rank ^ bit) : up;
}

int dtree_parent(int n, int tree, int rank) {
  if (tree == 0) return btree_parent(n, rank);
  if (n % 2 == 1) {
    const int up = btree_parent(n, (rank - 1 + n) % n);
    return up < 0 ? -1 : (up + 1) % n;
  }
  const int up = btree_parent(n, n - 1 - rank);
  return up < 0 ? -1 : n - 1 - up;
}

std::vector<TreeGroup> build_trees(const Platform& platform, const std::vector<int>& ranks, bool merge) {
  const auto nodes = by_node(platform, ranks);
  const int n_nodes = static_cast<int>(nodes.size());
  const std::vector<int> rail_list = rails_used(platform, nodes);
  const int rails = static_cast<int>(rail_list.size());
  const int trees = n_nodes == 1 ? 1 : 2;
  std::vector<TreeGroup> out;
  for (auto [g, channels] : group_slots(rails * trees, platform.spec().node.nccl_channels, merge)) {
    const int rail = rail_list[static_cast<std::size_t>(g % rails)];
    const int tree = g / rails;
    TreeGroup t;
    t.channels = channels;
    std::vector<int> head(n_nodes);
    for (int i = 0; i < n_nodes; ++i) {
      const auto chain = rotate_to_rail(platform, nodes[i], rail);
      head[i] = static_cast<int>(t.ranks.size());
      for (std::size_t k = 0; k < chain.size(); ++k) {
        t.ranks.push_back(chain[k]);
        t.parent.push_back(k == 0 ? -1 : static_cast<int>(t.ranks.size()) - 2);  // chain towards the head
      }
    }
    for (int i = 0; i < n_nodes; ++i) {
      const int up = dtree_parent(n_nodes, tree, i);
      if (up < 0) {
        t.root = head[i];
      } else {
        t.parent[head[i]] = head[up];
      }
    }
    t.children.resize(t.ranks.size());
    for (std::size_t i = 0; i < t.ranks.size(); ++i) {
      if (t.parent[i] >= 0) t.children[t.parent[i]].push_back(static_cast<int>(i));
    }
    out.push_back(std::move(t));
  }
  return out;
}

double tree_path_s(const TreeGroup& t, const std::vector<double>& up_s, const std::vector<std::vector<double>>& down_s,
                   double chunk_s) {
  const int n = static_cast<int>(t.ranks.size());
  std::vector<int> order = {t.root};  // parents before children
  for (std::size_t k = 0; k < order.size(); ++k) {
    for (int c : t.children[order[k]]) order.push_back(c);
  }
  std::vector<double> arrive(n, 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (t.parent[*it] >= 0) arrive[t.parent[*it]] = std::max(arrive[t.parent[*it]], arrive[*it] + up_s[*it] + chunk_s);
  }
  double last = arrive[t.root];
  for (int i : order) {
    for (std::size_t k = 0; k < t.children[i].size(); ++k) {
      const int c = t.children[i][k];
      arrive[c] = arrive[i] + down_s[i][k] + chunk_s;
      last = std::max(last, arrive[c]);
    }
  }
  return last;
}

AlgorithmResult run_tree(const AlgorithmParams& params) {
  const Platform& platform = params.platform;
  const double nch = platform.spec().node.nccl_channels;
  const double efficiency = params.efficiency();
  const auto trees = build_trees(platform, params.call.ranks, params.merge_channels);
  const double per_channel_cap = tree_channel_cap(params);
  const double step_bytes = params.nccl.step_bytes[int(params.choice.protocol)];
  const int chunks = std::max(1, static_cast<int>(std::ceil(params.call.size_bytes / nch / step_bytes)));

  AlgorithmResult result;
  const std::size_t groups = trees.size();
  RouteCache::Routes& routes = params.routes.routes({Algorithm::tree, params.merge_channels, params.call.ranks}, [&] {
    RouteCache::Groups groups;
    for (const TreeGroup& t : trees) {
      groups.members.push_back(t.ranks);
      groups.channels.push_back(t.channels);
      groups.edges.push_back(tree_edges(platform, t));
    }
    return groups;
  });
  const std::vector<std::vector<Edge>>& edges = routes.edges();
  std::vector<TreeLane> lanes(groups);
  std::vector<double> cap(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    const TreeGroup& t = trees[g];
    TreeLane& lane = lanes[g];
    lane.tree = &t;
    lane.chunk_wire_bytes = params.call.size_bytes / nch / chunks * t.channels / efficiency;
    cap[g] = per_channel_cap * t.channels / efficiency;
    fill_hops(params, routes, g, lane);
    result.latency_s = std::max(result.latency_s, tree_path_s(t, lane.up_alpha_s, lane.down_alpha_s, 0));
  }
  // Each connection sends one message per chunk: serialized proxy work (zero without a fit).
  const double messages_s = params.net_messages_s(chunks, params.call.size_bytes / nch / chunks);
  result.latency_s += params.base_s + messages_s;
  const std::vector<double> rate = routes.rates(cap);
  sg4::this_actor::sleep_for(params.base_s);
  if (params.fidelity == Fidelity::step) {
    for (std::size_t g = 0; g < groups; ++g) lanes[g].rate_bytes_per_s = rate[g];
    run_tree_steps(platform, lanes, chunks);
    long n_edges = 0;
    for (const auto& e : edges) n_edges += static_cast<long>(e.size());
    result.stepped = true;
    result.flows = n_edges * chunks;
    return result;
  }
  std::vector<GroupFlow> flows(groups);
  for (std::size_t g = 0; g < groups; ++g) flows[g] = {edges[g], lanes[g].chunk_wire_bytes * chunks, rate[g]};
  const FluidRun run = run_fluid(params.platform, flows, &routes.segment_routes());
  result.bandwidth_s = run.bandwidth_s;
  result.flows = run.flows;
  // Chunks stream through the tree: the schedule's longest path is the slowest leaf-root-leaf
  // path for the first chunk (latency plus one chunk time per hop), then chunks - 1 chunk times.
  const double chunk_s = run.bandwidth_s / chunks;
  double path_s = 0;
  for (const TreeLane& lane : lanes) {
    path_s = std::max(path_s, tree_path_s(*lane.tree, lane.up_alpha_s, lane.down_alpha_s, chunk_s));
  }
  result.schedule_s = params.base_s + messages_s + path_s + (chunks - 1) * chunk_s;
  return result;
}

// NCCL's tuner on Tree (tuning.cc).
namespace {

std::string tree_unsupported(const NcclTuner&, const CallShape& shape, Protocol) {
  return shape.op == CollectiveOp::all_reduce ? "" : "NCCL's Tree runs AllReduce only";
}

// base + 2 x (the chain inside the node + log2(nodes) network hops): up the tree and down.
double tree_latency_s(const NcclTuner& tuner, const CallShape& shape, Protocol p) {
  const NcclConstants& nccl = tuner.nccl();
  const int ppn = shape.ranks / shape.nodes;
  return nccl.base(Algorithm::tree, p) + 2 * ((ppn - 1) * nccl.hop(Algorithm::tree, HopClass::nvlink, p) +
                                              std::log2(shape.nodes) * nccl.hop(Algorithm::tree, HopClass::net, p));
}

// Simple: 0.92 of the bus, at most the per-channel cap of its regime; LL: the bus / 3.8, at most
// llMaxBw; LL128: 7/9 of the bus on one node, 120/128 across, at most its cap; then the tree
// pattern's 0.85 and algBw = busBw / 2.
std::optional<double> tree_alg_bw(const NcclTuner& tuner, const CallShape& shape, Protocol p, const TunerBandwidth& bw) {
  const double bus = bw.bus_bytes_per_s;
  double bus_bw = bus;
  const auto regime = static_cast<std::size_t>(bw.regime);
  if (p == Protocol::simple) bus_bw = std::min(0.92 * bus, bw.channels * bw.caps->tree_simple_bytes_per_s[regime]);
  if (p == Protocol::ll) bus_bw = std::min(bus / tuner.nccl().tree_ll_divisor, bw.caps->ll_max_bytes_per_s);
  if (p == Protocol::ll128) {
    bus_bw = std::min(bus * (shape.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), bw.channels * bw.caps->tree_ll128_bytes_per_s[regime]);
  }
  return bus_bw * 0.85 * 0.5;
}

}  // namespace

extern const AlgorithmSpec kTreeAlgorithm{
    Algorithm::tree, "tree", "tree",
    tree_unsupported, tree_latency_s, tree_alg_bw,
    run_tree};

}  // namespace commbound::network::internal
