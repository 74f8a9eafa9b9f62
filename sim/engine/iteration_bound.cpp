#include "sim/engine/iteration_bound.hpp"

#include "sim/engine/engine.hpp"
#include "network/collective_floor.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace commbound::sim {
namespace {


// One stream of one simulated rank: its ops in issue order and how far the replay has got.
struct Cursor {
  int stage = 0;
  std::vector<int> ops;
  std::size_t next = 0;
  double free_s = 0;  // when its last finished op ended
};

// A simulated rank's arrival at a collective: its stage, the op, and when it could start.
struct Arrival {
  int stage = 0;
  int op = 0;
  double at_s = 0;
};

// The least energy one GPU can spend in an iteration of `b`. power_w is affine in the compute- and
// memory-bound fractions (cost_model.hpp), so over an iteration of T seconds with C seconds of
// compute it is idle x T + C x (a mean of the two slopes), at least idle x T + C x the smaller
// slope (T >= C when that slope is negative).
// When a rank's compute never overlaps itself, Metrics' busy fractions are exactly the compute- and
// memory-bound kernel times over the iteration, each at least its bare price (contention factors
// are >= 1): with both slopes >= 0 the energy is at least idle x T + each slope x its kernels' time.
double least_energy_j(const IterationBound& b, const CostModel& cost) {
  const double idle_w = cost.power_w(0, 0);
  const double compute_slope_w = cost.power_w(1, 0) - idle_w;
  const double memory_slope_w = cost.power_w(0, 1) - idle_w;
  if (b.compute_serial && compute_slope_w >= 0 && memory_slope_w >= 0) {
    return idle_w * b.iteration_s + compute_slope_w * b.compute_bound_s + memory_slope_w * b.memory_bound_s;
  }
  const double slope_w = std::min(compute_slope_w, memory_slope_w);
  return slope_w >= 0 ? idle_w * b.iteration_s + slope_w * b.compute_s : std::max(0.0, idle_w + slope_w) * b.iteration_s;
}

// Adds `op`'s bare price to `b`'s compute parts, weighted by `times` / `stages` (a mean over the
// stages), and notes a priced op off the compute stream.
void add_compute(IterationBound& b, const Op& op, double seconds, double times, int stages) {
  if (op.kind == OpKind::collective) return;
  if (op.stream != StreamId::compute) {
    b.compute_serial = b.compute_serial && seconds <= 0;
    return;
  }
  const double mean_s = seconds * times / stages;
  b.compute_s += mean_s;
  (model::is_memory_bound(op.kernel) ? b.memory_bound_s : b.compute_bound_s) += mean_s;
}

// An op's price as `commbound run` charges it: a model held at the power limit
// (CostModel::hold_at_power_limit) at its slowdown; one not yet held (the search's) at the
// slowdown the run would apply to `stages`.
auto limited(const CostModel& cost, const std::vector<Program>& stages, int micro_batches) {
  const double limit = cost.power_limit_slowdown() != 1 ? cost.power_limit_slowdown()
                                                         : cost.limit_slowdown_for(stages, micro_batches);
  return [&cost, limit](const Op& op) { return cost.price(op, limit).seconds; };
}

}  // namespace

IterationBound iteration_lower_bound(const TrainingSpec& t, const std::vector<Program>& stages, const CostModel& cost,
                                     const network::ClusterSpec& cluster) {
  const auto seconds = limited(cost, stages, 1);
  const std::vector<int> ranks = representative_ranks(t);
  COMMBOUND_CHECK(ranks.size() == stages.size(), "one program per pipeline stage");
  const std::set<int> simulated(ranks.begin(), ranks.end());
  IterationBound bound;
  std::vector<std::vector<double>> finish(stages.size());
  std::vector<std::vector<bool>> arrived(stages.size());
  // Per stage and group kind: the group's first rank, how many simulated ranks it holds, and the
  // floor of its collectives on the cluster.
  // Sibling groups (engine.cpp, run_collective): the engine runs a collective of a group with one
  // simulated member beside a copy of it in every other group of its kind with a member on that
  // rank's node, all started at once, and ends it when all have ended; together their bytes cross
  // that node's NICs, so none ends before their sum has.
  struct Group {
    int first_rank = 0;
    int simulated = 1;
    int node = 0;
    std::optional<network::CollectiveFloor> floor;
    std::vector<network::CollectiveFloor> siblings;  // this group's included; empty unless they share
  };
  const auto siblings_s = [](const Group& g, const Op& op) {
    double out_bytes = 0, in_bytes = 0;
    for (const network::CollectiveFloor& f : g.siblings) {
      const auto crossing = f.node_crossing(op.collective, op.size_bytes, g.node);
      out_bytes += crossing.out_bytes, in_bytes += crossing.in_bytes;
    }
    return g.siblings.empty() ? 0.0 : std::max(out_bytes, in_bytes) / g.siblings.front().node_bytes_per_s();
  };
  std::vector<std::array<Group, std::size(kGroupKinds)>> groups(stages.size());
  std::vector<Cursor> cursors;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const std::vector<Op>& ops = stages[s].ops;
    finish[s].assign(ops.size(), NAN);
    arrived[s].assign(ops.size(), false);
    for (int k = 0; k < static_cast<int>(std::size(kGroupKinds)); ++k) {
      const std::vector<int> g = group_members(t, ranks[s], static_cast<GroupKind>(k));
      // A ring-attention step is one op per sender: only its sender arrives (engine.cpp).
      const int members = static_cast<GroupKind>(k) == GroupKind::context_next || g.size() < 2
                              ? 1
                              : static_cast<int>(std::count_if(g.begin(), g.end(), [&](int r) { return simulated.count(r) > 0; }));
      const int node = ranks[s] / cluster.node.gpus;
      Group group{g.front(), members, node, network::CollectiveFloor(cluster, g), {}};
      if (members == 1 && g.size() > 1) {
        const auto siblings = sibling_groups(t, ranks[s], static_cast<GroupKind>(k), cluster.node.gpus);
        if (siblings.size() > 1) {
          for (const std::vector<int>& sibling : siblings) group.siblings.emplace_back(cluster, sibling);
        }
      }
      groups[s][static_cast<std::size_t>(k)] = std::move(group);
    }
    const double before_s = bound.compute_s;
    for (const Op& op : ops) add_compute(bound, op, seconds(op), 1, t.pp);
    bound.busiest_compute_s = std::max(bound.busiest_compute_s, (bound.compute_s - before_s) * t.pp);
    for (int stream = 0; stream < kStreams; ++stream) {
      Cursor c;
      c.stage = static_cast<int>(s);
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (static_cast<int>(ops[i].stream) == stream) c.ops.push_back(static_cast<int>(i));
      }
      if (!c.ops.empty()) cursors.push_back(std::move(c));
    }
  }
  // The engine's rendezvous (engine.cpp): a collective whose group holds several simulated ranks
  // starts when the last of them arrives; keyed by its name and its group's first rank.
  std::map<std::pair<std::string, int>, std::vector<Arrival>> waiting;
  bool progress = true;
  while (progress) {
    progress = false;
    for (Cursor& c : cursors) {
      const std::size_t s = static_cast<std::size_t>(c.stage);
      const std::vector<Op>& ops = stages[s].ops;
      while (c.next < c.ops.size()) {
        const int i = c.ops[c.next];
        const Op& op = ops[static_cast<std::size_t>(i)];
        if (!std::isnan(finish[s][static_cast<std::size_t>(i)])) {  // a rendezvous completed it
          c.free_s = finish[s][static_cast<std::size_t>(i)];
          ++c.next;
          progress = true;
          continue;
        }
        if (arrived[s][static_cast<std::size_t>(i)]) break;  // waiting for the other members
        double ready_s = c.free_s;
        bool blocked = false;
        for (int d : op.deps) {
          const double f = finish[s][static_cast<std::size_t>(d)];
          if (std::isnan(f)) {
            blocked = true;
            break;
          }
          ready_s = std::max(ready_s, f);
        }
        if (blocked) break;
        ready_s = std::max(ready_s, op.issue_s);  // the GPU cannot run what its host has not issued
        if (op.kind == OpKind::collective && !op.fixed_s) {
          const Group& group = groups[s][static_cast<std::size_t>(op.group)];
          const double floor_s = std::max(group.floor->seconds(op.collective, op.size_bytes, op.peer_bytes.get()),
                                          siblings_s(group, op));
          if (group.simulated > 1) {
            std::vector<Arrival>& members = waiting[{op.name, group.first_rank}];
            members.push_back({c.stage, i, ready_s});
            arrived[s][static_cast<std::size_t>(i)] = true;
            progress = true;
            if (static_cast<int>(members.size()) < group.simulated) break;
            double start_s = 0;
            for (const Arrival& m : members) start_s = std::max(start_s, m.at_s);
            for (const Arrival& m : members) {
              finish[static_cast<std::size_t>(m.stage)][static_cast<std::size_t>(m.op)] = start_s + floor_s;
            }
            continue;  // the top of the loop sees it finished
          }
          finish[s][static_cast<std::size_t>(i)] = ready_s + floor_s;
        } else {
          finish[s][static_cast<std::size_t>(i)] = ready_s + seconds(op);
        }
        c.free_s = finish[s][static_cast<std::size_t>(i)];
        ++c.next;
        progress = true;
      }
    }
  }
  for (const Cursor& c : cursors) {
    COMMBOUND_CHECK(c.next == c.ops.size(), "the stage programs wait on each other in a cycle");
    bound.iteration_s = std::max(bound.iteration_s, c.free_s);
  }
  bound.energy_j_per_gpu = least_energy_j(bound, cost);
  return bound;
}

IterationBound compute_only_bound(const TrainingSpec& t, const CostModel& cost) {
  TrainingSpec one = t;
  one.micro_batches = 1;
  one.virtual_stages = 1;
  one.pp_microbatch_group = 0;
  if (!t.vstage_layers.empty()) {  // a free-form layout, folded to each stage's layers
    one.vstage_layers.clear();
    for (int s = 0; s < t.pp; ++s) one.vstage_layers.push_back(t.stage_layers(s));
  }
  IterationBound bound;
  const std::vector<Program> stages = build_programs(one);
  // The power limit's slowdown at the compute-bound share of these programs with every op but the
  // optimizer's counted micro_batches times: no more than the run's (what the full programs run
  // once an iteration and these count per micro-batch, FSDP's copies, is memory-bound).
  const auto seconds = limited(cost, stages, t.micro_batches);
  for (const Program& stage : stages) {
    const double before_s = bound.compute_s;
    for (const Op& op : stage.ops) add_compute(bound, op, seconds(op), op.kind == OpKind::optimizer ? 1 : t.micro_batches, t.pp);
    bound.busiest_compute_s = std::max(bound.busiest_compute_s, (bound.compute_s - before_s) * t.pp);
  }
  bound.iteration_s = bound.busiest_compute_s;
  bound.energy_j_per_gpu = least_energy_j(bound, cost);
  return bound;
}

}  // namespace commbound::sim
