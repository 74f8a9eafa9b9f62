#include "network/collective_runner.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cassert>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace commbound::network {
namespace {

int token;  // payload pointer of every simulated message: only sizes matter

double route_latency(sg4::Host* src, sg4::Host* dst) {
  if (src == dst) return 0;
  std::vector<sg4::Link*> links;
  double latency_s = 0;
  src->route_to(dst, links, &latency_s);
  return latency_s;
}

sg4::CommPtr start_send(sg4::Mailbox* to, double bytes, double rate_cap) {
  sg4::CommPtr c = to->put_init(&token, static_cast<uint64_t>(std::llround(bytes)));
  if (rate_cap > 0) c->set_rate(rate_cap);
  c->start();
  return c;
}

// Receives the next message of `in` and returns when its data arrived (it may have arrived, on an
// eager mailbox, while this actor was busy).
double receive(sg4::Mailbox* in) {
  int* payload = nullptr;
  sg4::CommPtr c = in->get_async<int>(&payload);
  c->wait();
  return c->get_finish_time();
}

// Waits until `ready_s` + `latency_s`: a message's protocol latency is paid per message, not per
// actor, so latencies of consecutive steps overlap (pipelined), as in NCCL's cost model.
void wait_latency(double ready_s, double latency_s) {
  const double at = ready_s + latency_s;
  if (at > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(at);
}

// The sends of one edge, one after another: a message starts once the previous one on the same
// edge has been delivered (the link serialises them; latencies still overlap, see wait_latency).
class SendPipe {
public:
  void send(sg4::Mailbox* to, double bytes, double rate_cap) {
    if (last_) last_->wait();
    last_ = start_send(to, bytes, rate_cap);
  }
  void drain() {
    if (last_) last_->wait();
    last_ = nullptr;
  }

private:
  sg4::CommPtr last_;
};

// A set of channels following one path, merged: `channels` NCCL channels' worth of traffic.
struct RingGroup {
  std::vector<int> order;  // ranks in ring order
  double channels = 1;
};

struct TreeGroup {
  std::vector<int> ranks;
  std::vector<int> parent;  // position of the parent, -1 at the root
  std::vector<std::vector<int>> children;
  int root = 0;
  double channels = 1;
};

using Edge = std::pair<sg4::Host*, sg4::Host*>;

// Edges that move together at one rate, simulated as one segment flow (see Platform::route_segment).
struct Segment {
  std::vector<Edge> edges;
  double wire_bytes;  // through each edge
  double rate_cap;    // <= 0: none
};

// Cuts every group's edges (in order, so neighbours share a node) into segments: as few edges per
// segment as a quarter of the free slots allow, not counting the slots reserved for the collectives
// that may start meanwhile (Platform::reserved_segments), and at least one segment per group.
std::vector<Segment> segments_of(const std::vector<std::vector<Edge>>& edges, const std::vector<double>& wire_bytes,
                                 const std::vector<double>& rate, int free_slots, int reserved_slots) {
  std::size_t longest = 1;
  for (const auto& e : edges) longest = std::max(longest, e.size());
  const std::size_t spare = static_cast<std::size_t>(std::max(0, free_slots - reserved_slots));
  const std::size_t budget = std::max<std::size_t>(edges.size(), spare / 4);
  const std::size_t per_group = std::max<std::size_t>(1, budget / std::max<std::size_t>(1, edges.size()));
  const std::size_t per = (longest + per_group - 1) / per_group;  // edges per segment
  std::vector<Segment> out;
  for (std::size_t g = 0; g < edges.size(); ++g) {
    for (std::size_t i = 0; i < edges[g].size(); i += per) {
      const auto end = edges[g].begin() + static_cast<long>(std::min(edges[g].size(), i + per));
      out.push_back({std::vector<Edge>(edges[g].begin() + static_cast<long>(i), end), wire_bytes[g], rate[g]});
    }
  }
  return out;
}

// Splits `total` channels over `groups` groups as evenly as NCCL's round-robin would.
double channels_of(int group, int groups, int total) {
  return total / groups + (group < total % groups ? 1 : 0);
}

// Ranks grouped by node (in first-seen node order), each node's ranks by local index.
std::vector<std::vector<int>> by_node(const Platform& p, const std::vector<int>& ranks) {
  std::map<int, int> slot;
  std::vector<std::vector<int>> nodes;
  for (int r : ranks) {
    auto [it, fresh] = slot.try_emplace(p.node_of(r), static_cast<int>(nodes.size()));
    if (fresh) nodes.emplace_back();
    nodes[it->second].push_back(r);
  }
  for (auto& n : nodes) std::sort(n.begin(), n.end());
  return nodes;
}

// The node's ranks rotated to start at the GPU that owns rail `rail` (or the next one present).
std::vector<int> rotate_to_rail(const Platform& p, std::vector<int> node_ranks, int rail) {
  const NodeType& node = p.spec().node;
  const int head_local = rail * node.gpus / node.nics;
  auto it = std::find_if(node_ranks.begin(), node_ranks.end(), [&](int r) { return p.local_of(r) >= head_local; });
  std::rotate(node_ranks.begin(), it == node_ranks.end() ? node_ranks.begin() : it, node_ranks.end());
  return node_ranks;
}

// Distinct rails the channels use: channel c uses rail c % nics; inside one node every rail's ring
// is the same ring (the NVSwitch is symmetric), so one suffices.
int rail_groups(const Platform& p, int nodes) {
  return nodes == 1 ? 1 : std::min(p.spec().node.nics, p.spec().node.nccl_channels);
}

// Channel c follows group c % groups. Merged: one entry per group carrying its channels;
// unmerged: one entry per channel (only to show in a test that merging changes nothing).
struct GroupSlot {
  int group;
  double channels;
};
std::vector<GroupSlot> slots(int groups, int channels, bool merge) {
  std::vector<GroupSlot> out;
  for (int c = 0; c < (merge ? groups : channels); ++c) {
    out.push_back({c % groups, merge ? channels_of(c, groups, channels) : 1.0});
  }
  return out;
}

std::vector<RingGroup> build_rings(const Platform& p, const std::vector<int>& ranks, bool merge) {
  const auto nodes = by_node(p, ranks);
  const int groups = rail_groups(p, static_cast<int>(nodes.size()));
  std::vector<RingGroup> rings;
  for (auto [g, channels] : slots(groups, p.spec().node.nccl_channels, merge)) {
    RingGroup ring;
    ring.channels = channels;
    for (const auto& n : nodes) {
      for (int r : rotate_to_rail(p, n, g)) ring.order.push_back(r);
    }
    rings.push_back(std::move(ring));
  }
  return rings;
}

// NCCL's binary tree over n nodes (src/graph/trees.cc, ncclGetBtree): parent of `rank`, or -1.
int btree_parent(int n, int rank) {
  if (rank == 0) return -1;
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  const int up = (rank ^ bit) | (bit << 1);
  return up >= n ? (rank ^ bit) : up;
}

// The double binary tree's second tree: shifted by one for odd n, mirrored for even n (ncclGetDtree).
int dtree_parent(int n, int tree, int rank) {
  if (tree == 0) return btree_parent(n, rank);
  if (n % 2 == 1) {
    const int up = btree_parent(n, (rank - 1 + n) % n);
    return up < 0 ? -1 : (up + 1) % n;
  }
  const int up = btree_parent(n, n - 1 - rank);
  return up < 0 ? -1 : n - 1 - up;
}

std::vector<TreeGroup> build_trees(const Platform& p, const std::vector<int>& ranks, bool merge) {
  const auto nodes = by_node(p, ranks);
  const int n_nodes = static_cast<int>(nodes.size());
  const int rails = rail_groups(p, n_nodes);
  const int trees = n_nodes == 1 ? 1 : 2;
  std::vector<TreeGroup> out;
  for (auto [g, channels] : slots(rails * trees, p.spec().node.nccl_channels, merge)) {
    const int rail = g % rails;
    const int tree = g / rails;
    TreeGroup t;
    t.channels = channels;
    std::vector<int> head(n_nodes);
    for (int i = 0; i < n_nodes; ++i) {
      const auto chain = rotate_to_rail(p, nodes[i], rail);
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

// A channel group's edges progress together: a ring or a pipelined tree moves every edge's data at
// the pace of its slowest edge. Computes, by progressive filling over the links of every edge's
// route (a link crossed by k edges of a group carries k times the group's rate), the max-min fair
// rate of each group, capped by `cap_bytes_per_s` (<= 0: none). The fluid flows then run in SimGrid
// with these rates as caps, so other traffic still shares the links with them.
std::vector<double> coupled_rates(const std::vector<std::vector<std::pair<sg4::Host*, sg4::Host*>>>& edges,
                                  const std::vector<double>& cap_bytes_per_s) {
  const std::size_t groups = edges.size();
  std::unordered_map<sg4::Link*, int> index;
  std::vector<double> capacity;
  std::vector<std::vector<std::pair<int, int>>> users;  // per link: (group, edges of it crossing)
  std::vector<sg4::Link*> route;
  for (std::size_t g = 0; g < groups; ++g) {
    for (const auto& [src, dst] : edges[g]) {
      route.clear();
      double latency_s = 0;
      src->route_to(dst, route, &latency_s);
      for (sg4::Link* l : route) {
        if (l->get_sharing_policy() == sg4::Link::SharingPolicy::FATPIPE) continue;
        auto [it, fresh] = index.try_emplace(l, static_cast<int>(capacity.size()));
        if (fresh) {
          capacity.push_back(l->get_bandwidth());
          users.emplace_back();
        }
        auto& u = users[it->second];
        if (!u.empty() && u.back().first == static_cast<int>(g)) {
          ++u.back().second;
        } else {
          u.emplace_back(static_cast<int>(g), 1);
        }
      }
    }
  }
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
      for (auto [g, k] : users[l]) {
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
        for (auto [g, k] : users[l]) {
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

// Runs the channel groups' flows all at once: group g moves `wire_bytes[g]` through each of its
// `edges[g]` at `rate[g]` (<= 0: uncapped), cut into segment flows (segments_of). Returns the longest
// time any segment spent moving bytes (its route latency excluded), i.e. the bandwidth part of a
// fluid collective, and the number of segment flows in `flows`.
double run_fluid(Platform& p, const std::vector<std::vector<Edge>>& edges, const std::vector<double>& wire_bytes,
                 const std::vector<double>& rate, long& flows) {
  p.check_free_segments(static_cast<int>(edges.size()));
  const std::vector<Segment> segments = segments_of(edges, wire_bytes, rate, p.free_segments(), p.reserved_segments());
  const double start_s = sg4::Engine::get_clock();
  // Take every slot before the first simcall (routing a slot sets its cap link's bandwidth, and a
  // simcall lets other actors run); segments_of fits them in the free slots.
  std::vector<int> slots;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    slots.push_back(p.acquire_segment());
    assert(slots.back() >= 0 && "segments_of fits the free slots");
  }
  std::vector<sg4::CommPtr> comms;
  std::vector<double> latency_s;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const Segment& seg = segments[i];
    latency_s.push_back(p.route_segment(slots[i], seg.edges, seg.rate_cap));
    comms.push_back(sg4::Comm::sendto_async(p.segment_src(slots[i]), p.segment_dst(slots[i]),
                                            static_cast<uint64_t>(std::llround(seg.wire_bytes))));
  }
  sg4::Comm::wait_all(comms);
  double bw_s = 0;
  for (std::size_t i = 0; i < comms.size(); ++i) {
    bw_s = std::max(bw_s, comms[i]->get_finish_time() - start_s - latency_s[i]);
    p.release_segment(slots[i]);
  }
  flows = static_cast<long>(segments.size());
  return bw_s;
}

// Ring, step by step: rank at position p sends step s once it holds step s-1's data.
void run_ring_steps(const std::vector<RingGroup>& rings, int steps, const std::vector<double>& chunk_wire_bytes,
                    const std::vector<double>& caps, const std::vector<std::vector<double>>& hop_sleep_s,
                    const Platform& p) {
  std::vector<sg4::ActorPtr> actors;
  for (std::size_t g = 0; g < rings.size(); ++g) {
    const auto& order = rings[g].order;
    const int n = static_cast<int>(order.size());
    std::vector<sg4::Mailbox*> mb(n);
    for (int i = 0; i < n; ++i) mb[i] = sg4::Mailbox::by_name("ring." + std::to_string(g) + "." + std::to_string(i));
    for (int i = 0; i < n; ++i) {
      sg4::Mailbox* in = mb[i];
      sg4::Mailbox* to = mb[(i + 1) % n];
      const double bytes = chunk_wire_bytes[g];
      const double cap = caps[g];
      const double sleep_s = hop_sleep_s[g][i];
      sg4::ActorPtr a = sg4::Actor::init("ring", p.gpu(order[i]));
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

// Tree, chunk by chunk: reduce up (a rank forwards chunk k once all children delivered it), then
// broadcast down from the root. Separate up and down actors keep the two phases pipelined.
void run_tree_steps(const std::vector<TreeGroup>& trees, int chunks, const std::vector<double>& chunk_wire_bytes,
                    const std::vector<double>& caps, const std::vector<std::vector<double>>& up_sleep_s,
                    const std::vector<std::vector<double>>& down_sleep_s, const Platform& p) {
  std::vector<sg4::ActorPtr> actors;
  for (std::size_t g = 0; g < trees.size(); ++g) {
    const TreeGroup& t = trees[g];
    const int n = static_cast<int>(t.ranks.size());
    // up[i]: rank i -> its parent (the root's goes to its own down actor); down[i]: parent -> rank i.
    std::vector<sg4::Mailbox*> up(n), down(n);
    for (int i = 0; i < n; ++i) {
      up[i] = sg4::Mailbox::by_name("tree.up." + std::to_string(g) + "." + std::to_string(i));
      down[i] = sg4::Mailbox::by_name("tree.down." + std::to_string(g) + "." + std::to_string(i));
    }
    const double bytes = chunk_wire_bytes[g];
    const double cap = caps[g];
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
      const double up_sleep = up_sleep_s[g][i];
      const double down_sleep = down_sleep_s[g][i];
      sg4::ActorPtr ua = sg4::Actor::init("tree.up", p.gpu(t.ranks[i]));
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
      sg4::ActorPtr da = sg4::Actor::init("tree.down", p.gpu(t.ranks[i]));
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

// Longest sum of `steps` consecutive hop latencies around a ring (the chunk that crosses the most
// latency), in O(n) with prefix sums.
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

// The latest arrival of a chunk at any rank of tree `t` after it left the leaves: up to the root
// (a rank forwards once all its children delivered), then down. A hop costs its latency plus
// `chunk_s`. up_s[i]: latency of rank i's hop to its parent; down_s[i][k]: of rank i's hop to its
// k-th child.
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

}  // namespace

CollectiveRunner::CollectiveRunner(Platform& platform, const NcclConstants& nccl, bool merge_channels)
    : platform_(platform),
      nccl_(nccl),
      tuner_(platform.spec().node, platform.spec().fabric, nccl),
      merge_channels_(merge_channels) {}

CallShape CollectiveRunner::shape_of(const CollectiveCall& call) const {
  std::vector<int> nodes;
  for (int r : call.ranks) nodes.push_back(platform_.node_of(r));
  std::sort(nodes.begin(), nodes.end());
  const auto n_nodes = std::unique(nodes.begin(), nodes.end()) - nodes.begin();
  return {call.op, static_cast<int>(call.ranks.size()), static_cast<int>(n_nodes), call.size_bytes};
}

Status CollectiveRunner::check(const CollectiveCall& call, const CollectiveChoice& choice) const {
  if (call.ranks.size() < 2) return Error{"a collective needs at least 2 ranks"};
  if (call.op == CollectiveOp::send_recv && call.ranks.size() != 2) return Error{"SendRecv takes exactly 2 ranks"};
  std::vector<int> sorted = call.ranks;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return Error{"a rank appears twice"};
  if (sorted.front() < 0 || sorted.back() >= platform_.ranks()) {
    return Error{"rank out of range (the platform has " + std::to_string(platform_.ranks()) + " GPUs)"};
  }
  if (!(call.size_bytes >= 0)) return Error{"size must be >= 0 bytes"};
  if (std::string why = tuner_.unsupported(shape_of(call), choice); !why.empty()) {
    return Error{std::string(to_string(choice.algorithm)) + "/" + to_string(choice.protocol) + " cannot run " +
                 to_string(call.op) + ": " + why};
  }
  return Ok{};
}

CollectiveResult CollectiveRunner::run(const CollectiveCall& call, const CollectiveChoice& choice,
                                       Fidelity fidelity) const {
  const double start_s = sg4::Engine::get_clock();
  const CallShape shape = shape_of(call);
  const NodeType& node = platform_.spec().node;
  const Algorithm algo = choice.algorithm;
  const Protocol proto = choice.protocol;
  const double efficiency = nccl_.data_efficiency[int(proto)];
  const auto& caps = nccl_.caps(node.sm_arch);
  const int regime = shape.nodes == 1 ? 0 : (shape.nodes == 2 ? 1 : 2);
  const double nch = node.nccl_channels;
  const bool ar = call.op == CollectiveOp::all_reduce;
  // NCCL's multi-node Ring/Simple AllReduce latency multiplier applies to base and hop latencies.
  double latency_factor = 1;
  if (algo == Algorithm::ring && ar && shape.nodes > 1 && proto == Protocol::simple) {
    latency_factor = node.sm_arch >= 80 ? nccl_.ring_simple_allreduce_latency_factor
                                        : nccl_.ring_simple_allreduce_latency_factor_pre_sm80;
  }
  const double base_s = nccl_.base(algo, proto) * latency_factor;
  CollectiveResult result;
  result.choice = choice;
  result.fidelity = fidelity;
  double latency_s = 0;
  double bw_s = 0;
  double fluid_total_s = -1;  // the fluid schedule's length, where it is not bandwidth + latency

  auto proto_hop_s = [&](int src, int dst) {
    const HopClass hc = platform_.hop_class(src, dst);
    double h = nccl_.hop(algo, hc, proto);
    if (algo == Algorithm::ring && hc != HopClass::net) h = std::max(h, tuner_.net_overhead_s(shape, proto));
    return h * latency_factor;
  };

  if (call.op == CollectiveOp::send_recv) {
    const int src = call.ranks[0];
    const int dst = call.ranks[1];
    const double sleep_s = proto_hop_s(src, dst);
    sg4::this_actor::sleep_for(base_s + sleep_s);
    bw_s = run_fluid(platform_, {{{platform_.gpu(src), platform_.gpu(dst)}}}, {call.size_bytes / efficiency}, {-1},
                     result.flows);
    latency_s = base_s + sleep_s + route_latency(platform_.gpu(src), platform_.gpu(dst));
  } else if (algo == Algorithm::nvls) {
    // One pass through the switch: each GPU pushes all its data and its reduced share (S + S/n)
    // and receives its reduced share and everyone's broadcast (S/n + S).
    const double n = static_cast<double>(call.ranks.size());
    const double wire = call.size_bytes * (n + 1) / n / efficiency;
    const double cap = nccl_.nvls_efficiency * node.nvlink.effective_bw_bytes_per_s();
    std::vector<std::vector<Edge>> edges;  // one flow up to the switch and one down, per GPU
    for (int r : call.ranks) {
      sg4::Host* sw = platform_.nvswitch(platform_.node_of(r));
      edges.push_back({{platform_.gpu(r), sw}});
      edges.push_back({{sw, platform_.gpu(r)}});
    }
    const double hop_s = nccl_.hop(algo, HopClass::nvlink, proto);
    sg4::this_actor::sleep_for(base_s + hop_s);
    bw_s = run_fluid(platform_, edges, std::vector<double>(edges.size(), wire), std::vector<double>(edges.size(), cap),
                     result.flows);
    const Edge& up = edges[0][0];
    const Edge& down = edges[1][0];
    latency_s = base_s + hop_s + route_latency(up.first, up.second) + route_latency(down.first, down.second);
  } else if (algo == Algorithm::ring) {
    const auto rings = build_rings(platform_, call.ranks, merge_channels_);
    const int n = static_cast<int>(call.ranks.size());
    const int steps = ar ? 2 * (n - 1) : n - 1;
    double per_channel_cap = -1;  // payload bytes/s
    if (proto == Protocol::ll128) per_channel_cap = caps.ring_ll128_bytes_per_s;
    if (proto == Protocol::ll && shape.nodes == 1) per_channel_cap = caps.ll_max_bytes_per_s / nch;
    const std::size_t groups = rings.size();
    std::vector<double> chunk(groups), cap(groups);
    std::vector<std::vector<double>> sleep(groups);
    std::vector<std::vector<Edge>> edges(groups);
    for (std::size_t g = 0; g < groups; ++g) {
      const auto& order = rings[g].order;
      chunk[g] = call.size_bytes / n / nch * rings[g].channels / efficiency;
      cap[g] = per_channel_cap > 0 ? per_channel_cap * rings[g].channels / efficiency : -1;
      std::vector<double> alpha(n);
      for (int i = 0; i < n; ++i) {
        sg4::Host* src = platform_.gpu(order[i]);
        sg4::Host* dst = platform_.gpu(order[(i + 1) % n]);
        edges[g].emplace_back(src, dst);
        sleep[g].push_back(proto_hop_s(order[i], order[(i + 1) % n]));
        alpha[i] = sleep[g][i] + route_latency(src, dst);
      }
      latency_s = std::max(latency_s, ring_critical_latency(alpha, steps));
    }
    latency_s += base_s;
    const std::vector<double> rate = coupled_rates(edges, cap);
    sg4::this_actor::sleep_for(base_s);
    if (fidelity == Fidelity::step) {
      run_ring_steps(rings, steps, chunk, rate, sleep, platform_);
      result.flows = static_cast<long>(groups) * n * steps;
    } else {
      std::vector<double> bytes(groups);
      for (std::size_t g = 0; g < groups; ++g) bytes[g] = chunk[g] * steps;
      bw_s = run_fluid(platform_, edges, bytes, rate, result.flows);
      // Every step's message waits for its data and for the previous message on its edge, so the
      // schedule's longest path is the bandwidth time plus the latency chain (see run_ring_steps).
    }
  } else {  // tree
    const auto trees = build_trees(platform_, call.ranks, merge_channels_);
    double per_channel_cap = caps.tree_simple_bytes_per_s[regime];
    if (proto == Protocol::ll128) per_channel_cap = caps.tree_ll128_bytes_per_s[regime];
    if (proto == Protocol::ll) per_channel_cap = caps.tree_simple_bytes_per_s[regime] / nccl_.tree_ll_divisor;
    const int chunks = std::max(1, static_cast<int>(std::ceil(call.size_bytes / nch / nccl_.step_bytes[int(proto)])));
    const std::size_t groups = trees.size();
    std::vector<double> chunk(groups), cap(groups);
    std::vector<std::vector<double>> up_sleep(groups), down_sleep(groups);
    std::vector<std::vector<double>> up_alpha(groups);
    std::vector<std::vector<std::vector<double>>> down_alpha(groups);
    std::vector<std::vector<Edge>> edges(groups);
    for (std::size_t g = 0; g < groups; ++g) {
      const TreeGroup& t = trees[g];
      const int n = static_cast<int>(t.ranks.size());
      chunk[g] = call.size_bytes / nch / chunks * t.channels / efficiency;
      cap[g] = per_channel_cap * t.channels / efficiency;
      up_sleep[g].assign(n, 0);
      down_sleep[g].assign(n, 0);
      up_alpha[g].assign(n, 0);
      down_alpha[g].resize(n);
      for (int i = 0; i < n; ++i) {
        for (int c : t.children[i]) down_sleep[g][i] = std::max(down_sleep[g][i], proto_hop_s(t.ranks[i], t.ranks[c]));
      }
      for (int i = 0; i < n; ++i) {
        sg4::Host* self = platform_.gpu(t.ranks[i]);
        if (t.parent[i] >= 0) {
          sg4::Host* parent = platform_.gpu(t.ranks[t.parent[i]]);
          up_sleep[g][i] = proto_hop_s(t.ranks[i], t.ranks[t.parent[i]]);
          up_alpha[g][i] = up_sleep[g][i] + route_latency(self, parent);
          edges[g].emplace_back(self, parent);
          edges[g].emplace_back(parent, self);
        }
        for (int c : t.children[i]) down_alpha[g][i].push_back(down_sleep[g][i] + route_latency(self, platform_.gpu(t.ranks[c])));
      }
      latency_s = std::max(latency_s, tree_path_s(t, up_alpha[g], down_alpha[g], 0));
    }
    latency_s += base_s;
    const std::vector<double> rate = coupled_rates(edges, cap);
    sg4::this_actor::sleep_for(base_s);
    if (fidelity == Fidelity::step) {
      run_tree_steps(trees, chunks, chunk, rate, up_sleep, down_sleep, platform_);
      long n_edges = 0;
      for (const auto& e : edges) n_edges += static_cast<long>(e.size());
      result.flows = n_edges * chunks;
    } else {
      std::vector<double> bytes(groups);
      for (std::size_t g = 0; g < groups; ++g) bytes[g] = chunk[g] * chunks;
      bw_s = run_fluid(platform_, edges, bytes, rate, result.flows);
      // Chunks stream through the tree: the schedule's longest path is the slowest leaf-root-leaf
      // path for the first chunk (latency plus one chunk time per hop), then chunks - 1 chunk times.
      const double chunk_s = bw_s / chunks;
      double path_s = 0;
      for (std::size_t g = 0; g < groups; ++g) {
        path_s = std::max(path_s, tree_path_s(trees[g], up_alpha[g], down_alpha[g], chunk_s));
      }
      fluid_total_s = base_s + path_s + (chunks - 1) * chunk_s;
    }
  }

  if (fidelity == Fidelity::fluid || call.op == CollectiveOp::send_recv || algo == Algorithm::nvls) {
    // Fluid: flows ran for bw_s (+ one route latency); finish the latency terms in simulated time.
    const double total_s = fluid_total_s >= 0 ? fluid_total_s : bw_s + latency_s;
    const double elapsed_s = sg4::Engine::get_clock() - start_s;
    if (total_s > elapsed_s) sg4::this_actor::sleep_for(total_s - elapsed_s);
    result.time_s = std::max(total_s, elapsed_s);
    result.bandwidth_s = bw_s;
    result.latency_s = latency_s;
  } else {
    result.time_s = sg4::Engine::get_clock() - start_s;
    result.latency_s = latency_s;
    result.bandwidth_s = std::max(0.0, result.time_s - latency_s);
  }
  return result;
}

}  // namespace commbound::network
