#include "sim/engine/engine.hpp"

#include "core/check.hpp"
#include "sim/engine/order_statistics.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Mutex.hpp>
#include <simgrid/s4u/Semaphore.hpp>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include <algorithm>
#include <functional>
#include <tuple>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <memory>
#include <mutex>

namespace sg4 = simgrid::s4u;

namespace commbound::sim {
namespace {

// Work left below this is done: a compute op woken by a load change at the instant it would have
// ended has only float rounding left.
constexpr double kNegligibleWorkS = 1e-15;

// How many times a job that has reported yields to the others before it starts another iteration
// (simulate_jobs): enough for a job whose last op ended at the same instant to join its streams
// and report (each a handful of context switches), few enough to cost nothing.
constexpr int kSameInstantRounds = 64;

// A one-shot event for SimGrid actors: set once, waited by any number.
class Event {
public:
  void set() {
    std::unique_lock lock(*mutex_);
    done_ = true;
    cv_->notify_all();
  }
  void wait() {
    std::unique_lock lock(*mutex_);
    while (!done_) cv_->wait(lock);
  }

private:
  bool done_ = false;
  sg4::MutexPtr mutex_ = sg4::Mutex::create();
  sg4::ConditionVariablePtr cv_ = sg4::ConditionVariable::create();
};

// Actors that run the sibling copies of collectives (Iteration::run_collective), reused: a new
// SimGrid actor per copy maps a fresh stack, guards it (mprotect) and faults it in, 17% of the
// samples of a DeepSeek-V3-shaped run under `perf` (bench_training: 11.0-11.3 s, reused 9.3 s,
// outputs byte-identical). A worker parks on its semaphore between jobs; workers are daemons, so
// they end with the simulation.
class CopyWorkers {
public:
  // Starts `job` on an idle worker (a new one on `host` when none is idle); the event is set once
  // the job has run.
  std::shared_ptr<Event> start(sg4::Host* host, std::function<void()> job) {
    Worker* w = nullptr;
    if (idle_.empty()) {
      workers_.push_back(std::make_unique<Worker>());
      w = workers_.back().get();
      sg4::Actor::create("copy", host, [this, w] { serve(w); })->daemonize();
    } else {
      w = idle_.back();
      idle_.pop_back();
    }
    w->job = std::move(job);
    w->done = std::make_shared<Event>();
    w->go->release();
    return w->done;
  }

private:
  struct Worker {
    std::function<void()> job;
    std::shared_ptr<Event> done;
    sg4::SemaphorePtr go = sg4::Semaphore::create(0);
  };
  void serve(Worker* w) {
    for (;;) {
      w->go->acquire();
      w->job();
      const std::shared_ptr<Event> done = std::move(w->done);
      idle_.push_back(w);
      done->set();
    }
  }
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Worker*> idle_;
};

// What one simulated GPU's running collectives take from its compute (contention.hpp), and the
// signal its compute ops wait on to re-rate themselves when that changes.
struct GpuShare {
  CommLoad load;
  sg4::MutexPtr mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr changed = sg4::ConditionVariable::create();
};

// A collective of one group: members arrive; the last to arrive runs it and releases the others.
struct Rendezvous {
  int arrived = 0;
  double start_s = 0;  // when the last member arrived
  double due_s = 0;    // representative mode with jitter: when its slowest member arrives, expected
  Event done;
  network::CollectiveChoice choice;
};

class Iteration {
public:
  Iteration(network::Platform& platform, network::CollectiveRunner& runner, CopyWorkers& copy_workers,
            const JobOnCluster& job, const EngineOptions& options)
      : platform_(platform), runner_(runner), copy_workers_(copy_workers), t_(*job.training),
        layout_(t_.dp, t_.tp, t_.pp, t_.cp), stages_(*job.stages), cost_(*job.cost), nodes_(job.nodes),
        options_(options) {
    for (const auto& [rank, rate] : job.gpu_rates) {
      const int key = options_.every_rank ? rank : layout_.coords(rank).pp;
      const auto [it, fresh] = compute_rates_.try_emplace(key, rate);
      if (!fresh) it->second = std::min(it->second, rate);
    }
  }

  IterationTimeline run() {
    IterationTimeline timeline;
    timeline.start_s = sg4::Engine::get_clock();
    if (options_.every_rank) {
      for (int r = 0; r < layout_.world(); ++r) simulated_.insert(r);
    } else {
      for (int r : representative_ranks(t_)) simulated_.insert(r);
    }
    for (int r : simulated_) {
      done_[r] = std::vector<std::unique_ptr<Event>>(program_of(r).ops.size());
      for (auto& e : done_[r]) e = std::make_unique<Event>();
      end_s_[r] = std::vector<double>(program_of(r).ops.size(), 0);
      for (const Op& op : program_of(r).ops) {
        if (op.kind == OpKind::collective) kinds_[r].insert(op.group);
      }
    }
    std::vector<sg4::ActorPtr> actors;
    for (int r : simulated_) {
      const Program& program = program_of(r);
      for (int s = 0; s < kStreams; ++s) {
        std::vector<int> mine;
        for (std::size_t i = 0; i < program.ops.size(); ++i) {
          if (static_cast<int>(program.ops[i].stream) == s) mine.push_back(static_cast<int>(i));
        }
        if (mine.empty()) continue;
        actors.push_back(sg4::Actor::create(to_string(static_cast<StreamId>(s)), platform_.gpu(gpu_of(r)),
                                            [this, r, mine, &timeline] { run_stream(r, mine, timeline); }));
      }
    }
    for (auto& a : actors) a->join();
    if (const double wait_s = last_rank_due_s() - sg4::Engine::get_clock(); wait_s > 0) sg4::this_actor::sleep_for(wait_s);
    timeline.end_s = sg4::Engine::get_clock();
    return timeline;
  }

private:
  const Program& program_of(int rank) const { return stages_[static_cast<std::size_t>(layout_.coords(rank).pp)]; }

  // The cluster's GPU that the job's `rank` runs on: the GPU of the same index on the cluster node
  // that holds the job's node rank / gpus.
  int gpu_of(int rank) const {
    if (nodes_.empty()) return rank;
    const int gpus = platform_.spec().node.gpus;
    return nodes_[static_cast<std::size_t>(rank / gpus)] * gpus + rank % gpus;
  }
  std::vector<int> gpus_of(std::vector<int> ranks) const {
    for (int& r : ranks) r = gpu_of(r);
    return ranks;
  }

  // The group of `kind` that `rank` belongs to, worked out once per iteration (a data-parallel group
  // holds every replica, and every layer's collectives ask for it again). The reference stays valid.
  const std::vector<int>& group_of(int rank, GroupKind kind) {
    auto [it, fresh] = groups_.try_emplace({rank, kind});
    if (fresh) it->second = group_members(t_, rank, kind);
    return it->second;
  }

  // sibling_groups of `rank` for `kind`, worked out once per iteration.
  const std::vector<std::vector<int>>& siblings_of(int rank, GroupKind kind) {
    auto [it, fresh] = siblings_.try_emplace({rank, kind});
    if (fresh) it->second = sibling_groups(t_, rank, kind, platform_.spec().node.gpus);
    return it->second;
  }

  network::CollectiveChoice choose(const network::CallShape& shape) const {
    network::CollectiveChoice c = runner_.tuner().choose(shape);
    if (options_.algorithm || options_.protocol) {
      const network::CollectiveChoice forced{options_.algorithm.value_or(c.algorithm),
                                             options_.protocol.value_or(c.protocol)};
      if (runner_.tuner().unsupported(shape, forced).empty()) c = forced;
    }
    return c;
  }

  // A pipeline send's communicator (pipeline_communicator); the pair alone when it has none.
  void set_p2p_communicator(int rank, const Op& op, network::CollectiveCall& call) const {
    if (op.collective != network::CollectiveOp::send_recv) return;
    if (const auto comm = pipeline_communicator(t_, op.group, rank, platform_.spec().node.gpus)) {
      call.comm_ranks = comm->first;
      call.comm_gpus_per_node = comm->second;
    }
  }

  // Runs the collective of `group` (`rank`'s group of op.group). In representative mode the same
  // collective of each of its sibling groups (sibling_groups) runs beside it, as a copy.
  network::CollectiveChoice run_collective(int rank, const Op& op, const std::vector<int>& group) {
    // SendRecv sends from the group's first rank; pipeline gradients go to the earlier stage. The
    // fabric runs it on the cluster's GPUs.
    auto directed = [this, &op](const std::vector<int>& group_ranks) {
      std::vector<int> g = gpus_of(group_ranks);
      if (op.toward_lower_rank) std::reverse(g.begin(), g.end());
      return g;
    };
    network::CollectiveCall call{op.collective, directed(group), op.size_bytes, op.peer_bytes, t_.dispatcher};
    set_p2p_communicator(rank, op, call);
    const network::CallShape shape = runner_.shape_of(call);
    const network::CollectiveChoice choice = choose(shape);
    std::vector<std::shared_ptr<Event>> copies;
    if (!options_.every_rank) {
      const std::vector<std::vector<int>>& siblings = siblings_of(rank, op.group);
      for (std::size_t k = 1; k < siblings.size(); ++k) {
        network::CollectiveCall copy = call;
        copy.ranks = directed(siblings[k]);
        copies.push_back(copy_workers_.start(platform_.gpu(gpu_of(siblings[k].front())), [this, copy, choice] {
          runner_.run(copy, choice, network::Fidelity::fluid);
        }));
      }
    }
    // While it runs it takes from every member its CTAs' SMs (one per channel) and, for its data
    // path, HBM bandwidth at the bus rate NCCL's tuner expects of it (the duration is only known
    // after). From when the last member arrives: a kernel waiting for late peers would hold its
    // SMs too, but the programs post a pipeline's receives long before their data comes, which
    // frameworks do not, so waiting is not charged.
    const double predicted_s = runner_.tuner().predict_s(shape, choice).value_or(0);
    CommLoad moving = cost_.contention().sm_load(platform_.spec().node.nccl_channels);
    if (predicted_s > 0) {
      moving += cost_.contention().hbm_load(op.size_bytes * network::bus_bw_factor(op.collective, shape.ranks) / predicted_s);
    }
    for (int m : group) {
      if (simulated_.count(m) > 0) change_load(m, moving, +1);
    }
    runner_.run(call, choice, network::Fidelity::fluid);
    for (int m : group) {
      if (simulated_.count(m) > 0) change_load(m, moving, -1);
    }
    for (auto& done : copies) done->wait();
    return choice;
  }

  // The op before `index` on its stream (stream order is a dependency too), or -1.
  int stream_predecessor(int rank, int index) const {
    const auto& ops = program_of(rank).ops;
    int before = index - 1;
    while (before >= 0 && ops[static_cast<std::size_t>(before)].stream != ops[static_cast<std::size_t>(index)].stream) {
      --before;
    }
    return before;
  }

  // Whether `rank`'s op `d` is a collective that its members meet at (not a measured one).
  bool is_meeting(int rank, int d) {
    const Op& op = program_of(rank).ops[static_cast<std::size_t>(d)];
    return op.kind == OpKind::collective && !op.fixed_s && group_of(rank, op.group).size() > 1;
  }

  // Representative mode with jitter: when the slowest member of `rank`'s collective `index` arrives,
  // on average, or 0 when it waits for no compute. A member arrives once its compute dependencies
  // (the op before it on its stream included) are done, late by the deviations it accumulated since
  // its compute last started together with the group's (compute_synced); the last of the members
  // that wait for compute arrives the order statistic of those deviations after the mean. A
  // collective queued behind another (a prefetched AllGather) starts when its stream reaches it on
  // every rank; a point-to-point transfer waits for its sender alone (the receiver posts it without
  // waiting for compute), and so does a ring-attention step.
  double slowest_member_due_s(int rank, int index, const std::vector<int>& group) {
    const auto& ops = program_of(rank).ops;
    const Op& op = ops[static_cast<std::size_t>(index)];
    if (!options_.jitter || options_.every_rank) return 0;
    std::vector<int> deps = op.deps;
    if (const int before = stream_predecessor(rank, index); before >= 0) deps.push_back(before);
    double ready_s = -1;
    for (int d : deps) {
      if (ops[static_cast<std::size_t>(d)].kind != OpKind::collective) {
        ready_s = std::max(ready_s, end_s_[rank][static_cast<std::size_t>(d)]);
      }
    }
    if (ready_s < 0) return 0;
    const bool one_sender = op.collective == network::CollectiveOp::send_recv || op.group == GroupKind::context_next;
    const double since_s2 = late_variance_s2_[rank] - met_variance_s2_[{rank, op.group}];
    return ready_s + expected_wait_s(since_s2, one_sender ? 1 : static_cast<int>(group.size()));
  }

  // Representative mode with jitter: compute op `index` of `rank` starts when the collective that
  // gates it ends (the dependency, stream order included, that finished last), at the same time on
  // every member of that collective's group: from then on, deviations accumulate afresh against
  // that group and every group of `rank` inside it.
  void compute_synced(int rank, int index) {
    const auto& ops = program_of(rank).ops;
    std::vector<int> deps = ops[static_cast<std::size_t>(index)].deps;
    if (const int before = stream_predecessor(rank, index); before >= 0) deps.push_back(before);
    int gate = -1;
    for (int d : deps) {
      if (gate < 0 || end_s_[rank][static_cast<std::size_t>(d)] > end_s_[rank][static_cast<std::size_t>(gate)]) gate = d;
    }
    if (gate < 0 || !is_meeting(rank, gate)) return;
    const GroupKind met = ops[static_cast<std::size_t>(gate)].group;
    for (GroupKind kind : kinds_[rank]) {
      if (group_inside(rank, kind, met)) met_variance_s2_[{rank, kind}] = late_variance_s2_[rank];
    }
  }

  // Whether every member of `rank`'s group of `inner` is in its group of `outer`: fixed for the
  // iteration, so worked out once (a data-parallel group of 16384 ranks is compared with itself
  // after every layer's collective).
  bool group_inside(int rank, GroupKind inner, GroupKind outer) {
    auto [it, fresh] = inside_.try_emplace({rank, inner, outer});
    if (fresh) {
      std::vector<int> g = group_of(rank, inner), met = group_of(rank, outer);
      std::sort(g.begin(), g.end());
      std::sort(met.begin(), met.end());
      it->second = std::includes(met.begin(), met.end(), g.begin(), g.end());
    }
    return it->second;
  }

  // Representative mode with jitter: when the last rank of the cluster finishes, on average. Each
  // stage's ranks finish their program late by the deviations accumulated since their compute last
  // started with any of its groups; the iteration ends with the latest stage's slowest rank.
  double last_rank_due_s() {
    if (!options_.jitter || options_.every_rank) return 0;
    double due_s = 0;
    for (int r : simulated_) {
      double since_s2 = late_variance_s2_[r];
      for (GroupKind kind : kinds_[r]) since_s2 = std::min(since_s2, late_variance_s2_[r] - met_variance_s2_[{r, kind}]);
      const double end_s = *std::max_element(end_s_[r].begin(), end_s_[r].end());
      due_s = std::max(due_s, end_s + expected_wait_s(since_s2, layout_.world() / t_.pp));
    }
    return due_s;
  }

  // The load and its signal change under the GPU's mutex: a compute op reads the load and starts
  // waiting under it, so no change falls between the two (SimGrid's lock yields to other actors).
  void change_load(int rank, const CommLoad& delta, int sign) {
    GpuShare& gpu = gpus_[rank];
    std::unique_lock lock(*gpu.mutex);
    if (sign > 0) {
      gpu.load += delta;
    } else {
      gpu.load -= delta;
    }
    gpu.changed->notify_all();
  }

  // Runs `seconds` of a compute op's work on `rank`'s GPU at the rate the collectives beside it
  // leave: re-rated whenever one starts or ends, so only the overlapped interval is slowed.
  void compute(int rank, const Op& op, double seconds) {
    GpuShare& gpu = gpus_[rank];
    double left_s = seconds;  // of work at full speed
    std::unique_lock lock(*gpu.mutex);
    while (left_s > kNegligibleWorkS) {
      const double factor = cost_.slowdown(op, gpu.load);
      const double from_s = sg4::Engine::get_clock();
      if (gpu.changed->wait_for(lock, left_s * factor) == std::cv_status::timeout) return;
      left_s -= (sg4::Engine::get_clock() - from_s) / factor;
    }
  }

  // The fraction of its compute speed `rank` runs at (JobOnCluster::gpu_rates): its own with
  // every_rank, else its stage's slowest GPU's.
  double compute_rate(int rank) const {
    if (compute_rates_.empty()) return 1;
    const auto it = compute_rates_.find(options_.every_rank ? rank : layout_.coords(rank).pp);
    return it != compute_rates_.end() ? it->second : 1;
  }

  // Every-rank mode with jitter: this rank's own seeded stream of deviations.
  gsl_rng* rng_of(int rank) {
    auto [it, fresh] = rngs_.try_emplace(rank, nullptr, gsl_rng_free);
    if (fresh) {
      it->second.reset(gsl_rng_alloc(gsl_rng_mt19937));
      gsl_rng_set(it->second.get(), static_cast<unsigned long>(options_.jitter_seed * 1000003u + rank));
    }
    return it->second.get();
  }

  void run_stream(int rank, const std::vector<int>& ops, IterationTimeline& timeline) {
    const Program& program = program_of(rank);
    for (int i : ops) {
      const Op& op = program.ops[static_cast<std::size_t>(i)];
      for (int d : op.deps) done_[rank][static_cast<std::size_t>(d)]->wait();
      // The GPU cannot run what its host has not issued yet.
      if (const double wait_s = timeline.start_s + op.issue_s - sg4::Engine::get_clock(); wait_s > 0) {
        sg4::this_actor::sleep_for(wait_s);
      }
      double start_s = sg4::Engine::get_clock();
      network::CollectiveChoice choice;
      if (op.kind == OpKind::collective && !op.fixed_s) {
        const std::vector<int>& group = group_of(rank, op.group);
        if (group.size() > 1) {
          // A ring-attention step is one op per sender (every rank sends to the next and, in the same
          // step, receives from the previous): only its sender arrives. Other collectives wait for
          // every simulated member.
          const int expected = op.group == GroupKind::context_next
                                   ? 1
                                   : static_cast<int>(std::count_if(group.begin(), group.end(),
                                                                    [this](int r) { return simulated_.count(r) > 0; }));
          Rendezvous& rv = rendezvous_[{op.name, op.group == GroupKind::context_next ? rank : group.front()}];
          rv.due_s = std::max(rv.due_s, slowest_member_due_s(rank, i, group));
          if (++rv.arrived == expected) {
            if (const double wait_s = rv.due_s - sg4::Engine::get_clock(); wait_s > 0) {
              sg4::this_actor::sleep_for(wait_s);
            }
            rv.start_s = sg4::Engine::get_clock();
            rv.choice = run_collective(rank, op, group);
            rv.done.set();
          } else {
            rv.done.wait();
          }
          start_s = rv.start_s;  // the collective began when its last member arrived
          choice = rv.choice;
        }
      } else {
        // A measured op (a collective or host gap too) takes its measured time; a priced one runs
        // slower while collectives share the GPU (compute()).
        const calibration::Priced priced = cost_.price(op);
        double seconds = priced.seconds / compute_rate(rank);
        if (options_.jitter) {
          const double sigma_s = seconds * priced.relative_spread / (2 * kNormalZ90);
          if (options_.every_rank) {
            seconds = std::max(0.0, seconds + gsl_ran_gaussian_ziggurat(rng_of(rank), sigma_s));
          } else {
            compute_synced(rank, i);
            late_variance_s2_[rank] += sigma_s * sigma_s;
          }
        }
        if (seconds > 0) compute(rank, op, seconds);
      }
      end_s_[rank][static_cast<std::size_t>(i)] = sg4::Engine::get_clock();
      timeline.spans.push_back({rank, i, op.stream, start_s, sg4::Engine::get_clock(), choice,
                                op.kind == OpKind::collective || op.kind == OpKind::host ? 1.0 : compute_rate(rank)});
      done_[rank][static_cast<std::size_t>(i)]->set();
    }
  }

  network::Platform& platform_;
  network::CollectiveRunner& runner_;
  CopyWorkers& copy_workers_;
  const TrainingSpec& t_;
  Layout layout_;
  const std::vector<Program>& stages_;
  const CostModel& cost_;
  const std::vector<int>& nodes_;  // the cluster's node of each of the job's nodes (empty: the same)
  const EngineOptions& options_;
  std::map<int, double> compute_rates_;  // per stage (per rank with every_rank): the slowest GPU's rate
  std::set<int> simulated_;
  std::map<int, std::vector<std::unique_ptr<Event>>> done_;
  std::map<int, std::vector<double>> end_s_;  // per simulated rank and op: when it finished
  std::map<int, std::set<GroupKind>> kinds_;  // per simulated rank: the group kinds its collectives use
  std::map<std::pair<std::string, int>, Rendezvous> rendezvous_;
  std::map<int, GpuShare> gpus_;  // per simulated rank
  std::map<std::pair<int, GroupKind>, std::vector<int>> groups_;  // group_of's memo
  std::map<std::pair<int, GroupKind>, std::vector<std::vector<int>>> siblings_;  // siblings_of's memo
  std::map<std::tuple<int, GroupKind, GroupKind>, bool> inside_;  // group_inside's memo
  std::map<int, double> late_variance_s2_;  // per rank: variance of its compute deviations so far
  std::map<std::pair<int, GroupKind>, double> met_variance_s2_;  // ... when its compute last started with each group
  std::map<int, std::unique_ptr<gsl_rng, decltype(&gsl_rng_free)>> rngs_;
};

}  // namespace

std::vector<int> representative_ranks(const TrainingSpec& t) {
  const Layout layout(t.dp, t.tp, t.pp, t.cp);
  std::vector<int> ranks;
  for (int stage = 0; stage < t.pp; ++stage) ranks.push_back(layout.rank({0, stage, 0, 0}));
  return ranks;
}

std::vector<int> group_members(const TrainingSpec& t, int rank, GroupKind kind) {
  const Layout layout(t.dp, t.tp, t.pp, t.cp, t.ep, t.expert_tp);
  switch (kind) {
    case GroupKind::data_parallel: return layout.dp_group(rank);
    case GroupKind::shard: return layout.shard_group(rank, t.shard_ranks());
    case GroupKind::replica: return layout.replica_group(rank, t.shard_ranks());
    case GroupKind::tensor_parallel: return layout.tp_group(rank);
    case GroupKind::pipeline_next: return layout.pipeline_pair(rank, true, t.virtual_stages > 1);
    case GroupKind::pipeline_prev: return layout.pipeline_pair(rank, false, t.virtual_stages > 1);
    case GroupKind::context_next: return layout.cp_ring_pair(rank);
    case GroupKind::context_parallel: return layout.cp_group(rank);
    case GroupKind::expert_parallel: return layout.ep_group(rank);
    case GroupKind::expert_tensor_parallel: return layout.etp_group(rank);
    case GroupKind::expert_data_parallel: return layout.expert_dp_group(rank);
  }
  return {rank};
}

std::optional<std::pair<int, int>> pipeline_communicator(const TrainingSpec& t, GroupKind kind, int rank,
                                                         int gpus_per_node) {
  if (kind != GroupKind::pipeline_next && kind != GroupKind::pipeline_prev) return std::nullopt;
  const model::PipelineSends sends = model::traits(t.framework).pipeline_sends;
  const bool batched = sends == model::PipelineSends::batched ||
                       (sends == model::PipelineSends::batched_unless_interleaved && t.virtual_stages == 1);
  if (!batched || t.pp < 2 || gpus_per_node < 1) return std::nullopt;
  const Layout layout(t.dp, t.tp, t.pp, t.cp);
  Coords c = layout.coords(rank);
  int on_node = 0;
  for (c.pp = 0; c.pp < t.pp; ++c.pp) on_node += layout.rank(c) / gpus_per_node == rank / gpus_per_node ? 1 : 0;
  return std::pair{t.pp, std::max(1, on_node)};
}

std::vector<std::vector<int>> sibling_groups(const TrainingSpec& t, int rank, GroupKind kind, int gpus_per_node) {
  std::vector<std::vector<int>> out;
  std::vector<int> own = group_members(t, rank, kind);
  if (own.size() > 1) out.push_back(std::move(own));
  const int first = rank / gpus_per_node * gpus_per_node;
  for (int r = first; r < std::min(first + gpus_per_node, t.world()); ++r) {
    std::vector<int> g = group_members(t, r, kind);
    if (g.size() > 1 && std::find(out.begin(), out.end(), g) == out.end()) out.push_back(std::move(g));
  }
  return out;
}

int concurrent_collectives(const TrainingSpec& t, const std::vector<Program>& stages, int gpus_per_node,
                           const EngineOptions& options) {
  const Layout layout(t.dp, t.tp, t.pp, t.cp);
  const int ranks_per_stage = options.every_rank ? layout.world() / t.pp : 1;
  const int beside = options.every_rank ? 1 : gpus_per_node;
  int total = 0;
  for (const Program& p : stages) {
    std::set<StreamId> streams;
    for (const Op& op : p.ops) {
      if (op.kind == OpKind::collective) streams.insert(op.stream);
    }
    total += ranks_per_stage * static_cast<int>(streams.size()) * beside;
  }
  return std::max(1, total);
}

Expected<std::vector<IterationTimeline>> simulate_jobs(const network::ClusterSpec& cluster,
                                                      const network::NcclConstants& nccl,
                                                      const std::vector<JobOnCluster>& jobs,
                                                      const EngineOptions& options) {
  COMMBOUND_CHECK(!jobs.empty(), "simulate_jobs() of no job");
  // Tensor- and context-parallel collectives run on NVLink inside a node while data-parallel ones
  // run across nodes: the flows in flight fall apart into independent sets, and SimGrid re-solves
  // only the set a change touches (the same rates, cheaper: network::MaxMinScope). Without them
  // every flow shares the NICs with every other, and solving the whole system is cheaper. Several
  // jobs, whose rings meet in the spine, gain nothing either way: two spread 2048-GPU FSDP jobs on
  // a 2:1 fat-tree run in 1.8-2.1 s whole and 1.8-2.0 s connected (`commbound run
  // scenarios/studies/two_jobs.toml` with both jobs spread, -j 1, three simulations; 2.7 s and
  // 5.0 s before flows left out the links only their own call uses), to the same iteration times.
  int concurrent = 0;
  bool apart = false;
  for (const JobOnCluster& job : jobs) {
    concurrent += concurrent_collectives(*job.training, *job.stages, cluster.node.gpus, options);
    apart = apart || job.training->tp * job.training->cp > 1;
  }
  const network::MaxMinScope scope = apart ? network::MaxMinScope::connected : network::MaxMinScope::whole;
  auto created = network::Platform::create(cluster, concurrent, scope);
  if (!created) return created.error();
  network::Platform& platform = **created;
  network::CollectiveRunner runner(platform, nccl);
  CopyWorkers copy_workers;  // outlives the simulation: its daemon actors wait on it until it ends
  std::vector<IterationTimeline> measured(jobs.size());
  // Each job runs its warm-up iterations, then the one it reports, then more, as long as another
  // job still has its reported iteration to run: every reported iteration meets the other jobs'
  // traffic as a cluster that keeps running them would.
  std::size_t measuring = jobs.size();
  auto run_job = [&](std::size_t j) {
    const JobOnCluster& job = jobs[j];
    for (int it = 0;; ++it) {
      Iteration iteration(platform, runner, copy_workers, job, options);
      IterationTimeline timeline = iteration.run();
      if (it == job.training->warmup_iterations) {
        measured[j] = std::move(timeline);
        --measuring;
      }
      // Jobs that report at this same instant (identical jobs do) finish their bookkeeping in a few
      // scheduling rounds without advancing the clock: let them, rather than start an iteration
      // that no job is waiting for.
      for (int round = 0; round < kSameInstantRounds && measuring > 0; ++round) sg4::this_actor::yield();
      if (it >= job.training->warmup_iterations && measuring == 0) return;
    }
  };
  platform.run([&] {
    if (jobs.size() == 1) return run_job(0);
    std::vector<sg4::ActorPtr> actors;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      actors.push_back(sg4::Actor::create("job" + std::to_string(j), platform.gpu(0), [&run_job, j] { run_job(j); }));
    }
    for (auto& a : actors) a->join();
  });
  return measured;
}

Expected<IterationTimeline> simulate(const network::ClusterSpec& cluster, const network::NcclConstants& nccl,
                                     const TrainingSpec& t, const std::vector<Program>& stages, const CostModel& cost,
                                     const EngineOptions& options) {
  auto timelines = simulate_jobs(cluster, nccl, {JobOnCluster{&t, &stages, &cost, {}}}, options);
  if (!timelines) return timelines.error();
  return std::move(timelines->front());
}

}  // namespace commbound::sim
