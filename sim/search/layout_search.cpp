#include "sim/search/layout_search.hpp"

#include "core/units.hpp"
#include "sim/run/training_run.hpp"
#include "sim/sweep/sweep_runner.hpp"
#include "sim/workload/memory_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>

namespace commbound::sim {
namespace {

std::vector<int> divisors_up_to(int n, int limit) {
  std::vector<int> out;
  for (int d = 1; d <= std::min(n, limit); ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// The objective's upper bound from a layout's bound: tokens per iteration over its shortest
// iteration, or over its least energy.
double objective_bound_of(const TrainingSpec& t, const IterationBound& b, Objective objective) {
  if (objective == Objective::tokens_per_s) return t.tokens_per_iteration() / b.iteration_s / t.world();
  return t.tokens_per_iteration() / (b.energy_j_per_gpu * t.world());
}

// "k-th best" kept as the search runs: the `k` best objectives simulated so far.
class TopK {
public:
  explicit TopK(std::size_t k) : k_(k) {}
  void add(double value) {
    best_.insert(std::upper_bound(best_.begin(), best_.end(), value, std::greater<>()), value);
    if (best_.size() > k_) best_.pop_back();
  }
  // Every layout whose objective is below this is outside the top k; none until k are known.
  std::optional<double> threshold() const {
    return best_.size() < k_ ? std::nullopt : std::optional<double>(best_.back());
  }

private:
  std::size_t k_;
  std::vector<double> best_;  // descending
};

std::string objective_unit(Objective objective) {
  return objective == Objective::tokens_per_s ? "tokens/s/GPU" : "tokens/J";
}

}  // namespace

const char* to_string(DataParallel d) {
  switch (d) {
    case DataParallel::ddp: return "ddp";
    case DataParallel::zero1: return "zero1";
    case DataParallel::zero2: return "zero2";
    case DataParallel::zero3: return "zero3";
    case DataParallel::hsdp: return "hsdp";
  }
  return "?";
}

std::optional<DataParallel> parse_data_parallel(const std::string& name) {
  for (DataParallel d :
       {DataParallel::ddp, DataParallel::zero1, DataParallel::zero2, DataParallel::zero3, DataParallel::hsdp}) {
    if (name == to_string(d)) return d;
  }
  return std::nullopt;
}

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::simulated: return "simulated";
    case Verdict::pruned: return "pruned";
    case Verdict::out_of_memory: return "out_of_memory";
    case Verdict::invalid: return "invalid";
  }
  return "?";
}

std::vector<ScenarioEdit> LayoutChoice::edits() const {
  const Strategy data_parallel = strategy == DataParallel::ddp    ? Strategy::ddp
                                 : strategy == DataParallel::hsdp ? Strategy::hsdp
                                                                  : Strategy::fsdp;
  std::vector<ScenarioEdit> e = {{"parallel.tp", long{tp}},
          {"parallel.cp", long{cp}},
          {"parallel.pp", long{pp}},
          {"parallel.virtual_stages", long{virtual_stages}},
          {"parallel.pp_schedule", std::string(to_string(schedule))},
          {"parallel.strategy", std::string(to_string(data_parallel))},
          {"parallel.zero_stage", long{strategy == DataParallel::zero3   ? 3
                                       : strategy == DataParallel::zero1 ? 1
                                                                         : 2}},
          {"training.micro_batch", long{micro_batch}},
          {"training.activation_checkpointing", std::string(to_string(recompute))}};
  if (ends_lighter_chunk_layers > 0) {
    // Megatron-Core's layout syntax: E and k - 1 layers, (k layers) x the stages between, k - 1 and L.
    const int k = ends_lighter_chunk_layers, stages = pp * virtual_stages;
    const std::string middle = stages > 2 ? fmt::format("(t*{}|)*{}", k, stages - 2) : "";
    e.push_back({"parallel.pp_layout", fmt::format("Et*{}|{}t*{}L", k - 1, middle, k - 1)});
    e.push_back({"parallel.pp_first_stage_layers", long{0}});
    e.push_back({"parallel.pp_last_stage_layers", long{0}});
  } else {
    e.push_back({"parallel.pp_layout", std::string()});  // the candidate's own even split, not the file's layout
  }
  if (cp_comm) e.push_back({"parallel.cp_comm", std::string(to_string(*cp_comm))});
  if (tp_overlap) {
    e.push_back({"parallel.tp_overlap", *tp_overlap});
    if (*tp_overlap) e.push_back({"parallel.sequence_parallel", true});
  }
  if (ep > 0) {
    e.push_back({"parallel.ep", long{ep}});
    e.push_back({"parallel.sequence_parallel", tp > 1});
  }
  return e;
}

std::string LayoutChoice::name() const {
  return fmt::format("tp{} cp{} pp{} v{}{}{} dp{}{} mb{} {}{}{}{}", tp, cp, pp, virtual_stages,
                     schedule == PipelineSchedule::zb_h1 ? " zb-h1" : "", ends_lighter_chunk_layers > 0 ? " ends-1" : "", dp,
                     ep > 0 ? fmt::format(" ep{}", ep) : "", micro_batch, to_string(strategy),
                     recompute == Recompute::none   ? std::string()
                     : recompute == Recompute::full ? std::string(" ckpt")
                                                    : std::string(" ") + to_string(recompute),
                     cp_comm ? std::string(" cp-") + to_string(*cp_comm) : std::string(),
                     tp_overlap && *tp_overlap ? " tp-overlap" : "");
}

std::vector<LayoutChoice> enumerate_layouts(int gpus, int gpus_per_node, int global_batch, const SearchSpace& space,
                                            int experts, int layers) {
  const int max_tp = space.max_tp > 0 ? space.max_tp : gpus_per_node;
  const int max_cp = space.max_cp > 0 ? space.max_cp : gpus_per_node;
  const int max_model_parallel = space.max_model_parallel > 0 ? space.max_model_parallel : std::max(max_tp, max_cp);
  const int max_pp = space.max_pp > 0 ? space.max_pp : kDefaultMaxPp;
  const int max_v = space.max_virtual_stages > 0 ? space.max_virtual_stages : kDefaultMaxVirtualStages;
  const int max_mb = space.max_micro_batch > 0 ? space.max_micro_batch : kDefaultMaxMicroBatch;
  std::vector<LayoutChoice> out;
  for (int tp : divisors_up_to(gpus, max_tp)) {
    for (int cp : divisors_up_to(gpus / tp, max_cp)) {
      if (tp * cp > max_model_parallel) continue;
      for (int pp : divisors_up_to(gpus / (tp * cp), max_pp)) {
        if (pp < space.min_pp) continue;
        const int dp = gpus / (tp * cp * pp);
        auto asked = [&space](PipelineSchedule s) {
          return std::find(space.schedules.begin(), space.schedules.end(), s) != space.schedules.end();
        };
        // (virtual stages, schedule, lighter ends' chunk): no pipeline; plain and interleaved 1F1B,
        // each also with lighter ends where they split; ZB-H1 (dense).
        std::vector<std::tuple<int, PipelineSchedule, int>> pipelines;
        auto one_f_one_b = [&](int v) {
          pipelines.emplace_back(v, PipelineSchedule::one_f_one_b, 0);
          const int stages = pp * v;
          if (space.ends_lighter && pp > 1 && layers > 0 && (layers + 2) % stages == 0 && (layers + 2) / stages >= 2) {
            pipelines.emplace_back(v, PipelineSchedule::one_f_one_b, (layers + 2) / stages);
          }
        };
        if (pp == 1 || asked(PipelineSchedule::one_f_one_b)) one_f_one_b(1);
        if (pp > 1 && experts == 0 && asked(PipelineSchedule::zb_h1)) pipelines.emplace_back(1, PipelineSchedule::zb_h1, 0);
        for (int v = 2; pp > 1 && v <= max_v && asked(PipelineSchedule::one_f_one_b); v *= 2) one_f_one_b(v);
        const std::vector<int> micro_batches =
            global_batch % dp == 0 ? divisors_up_to(global_batch / dp, max_mb) : std::vector<int>{1};
        // MoE: every ep dividing both the experts and the stage's tp x cp x dp ranks.
        std::vector<int> eps = {0};
        if (experts > 0) {
          eps = divisors_up_to(std::gcd(experts, tp * cp * dp), space.max_ep > 0 ? space.max_ep : experts);
        }
        std::vector<std::optional<CpComm>> cp_comms = {std::nullopt};
        if (cp > 1 && !space.cp_comms.empty()) cp_comms.assign(space.cp_comms.begin(), space.cp_comms.end());
        std::vector<std::optional<bool>> tp_overlaps = {std::nullopt};
        if (tp > 1 && !space.tp_overlap.empty()) tp_overlaps.assign(space.tp_overlap.begin(), space.tp_overlap.end());
        for (const auto& [v, schedule, ends] : pipelines) {
          for (int mb : micro_batches) {
            for (int ep : eps) {
              for (DataParallel strategy : space.strategies) {
                for (Recompute r : space.recompute) {
                  for (std::optional<CpComm> cc : cp_comms) {
                    for (std::optional<bool> overlap : tp_overlaps) {
                      out.push_back({tp, cp, pp, v, dp, mb, schedule, ep, strategy, r, cc, overlap, ends});
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

double objective_of(const Metrics& m, Objective objective) {
  return objective == Objective::tokens_per_s ? m.tokens_per_s_per_gpu : m.tokens_per_joule;
}

Expected<SearchResult> search_layouts(const ScenarioFile& file, const SearchOptions& options) {
  const Scenario& base = file.scenario();
  if (!base.training) return Error{base.path + ": search needs a [model] section (and [training] global_batch)"};
  if (const std::string at = file.origin("training.local_batch"); !at.empty()) {
    return Error{at + ": training.local_batch: search keeps the global batch fixed across layouts; give "
                      "training.global_batch instead (here " + std::to_string(base.training->global_batch) + ")"};
  }
  // One cost model prices every layout: the GPU, kernel table and attention kernel are the
  // scenario's, not the layout's; its memo of prices then serves them all.
  const CostModel cost = cost_model(base);
  // Validate, fit and bound (compute alone) every candidate in the parent; no engine runs here.
  std::vector<Candidate> all;
  std::vector<Scenario> fitting;    // the scenario of every layout that fits
  std::vector<std::size_t> fit_of;  // ... and its index in `all`
  const std::vector<LayoutChoice> layouts = enumerate_layouts(base.cluster.gpus(), base.cluster.node.gpus,
                                                              base.training->global_batch, options.space,
                                                              base.training->model.experts,
                                                              base.training->model.mtp_layers > 0 ? 0 : base.training->model.layers);
  for (const LayoutChoice& layout : layouts) {
    if (options.bounding) options.bounding(all.size(), layouts.size());
    Candidate c;
    c.layout = layout;
    auto sc = file.unswept(layout.edits(), "search layout " + layout.name());
    if (!sc) {
      c.verdict = Verdict::invalid;
      c.reason = sc.error().message;
      all.push_back(std::move(c));
      continue;
    }
    const TrainingSpec& t = *sc->training;
    c.memory = memory_per_gpu(t, sc->cluster.node.nccl_channels);
    if (!c.memory.fits()) {
      c.verdict = Verdict::out_of_memory;
      c.reason = fmt::format("needs {:.1f} GB of {:.1f} GB", c.memory.total_bytes / kBytesPerGB, c.memory.capacity_bytes / kBytesPerGB);
      all.push_back(std::move(c));
      continue;
    }
    if (Status size = check_program_size(t); !size) {
      c.verdict = Verdict::invalid;
      c.reason = size.error().message;
      all.push_back(std::move(c));
      continue;
    }
    c.bound = compute_only_bound(t, cost);
    c.objective_bound = objective_bound_of(t, c.bound, options.objective);
    c.verdict = Verdict::pruned;  // until simulated
    fit_of.push_back(all.size());
    fitting.push_back(std::move(*sc));
    all.push_back(std::move(c));
  }
  if (options.bounded) options.bounded(all);
  // Points start in compute-bound order; skip() below moves the best-bounded layout left into
  // each slot as it comes up, so `order` (slot -> layout that fits) changes as the search runs.
  std::vector<std::size_t> order(fitting.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return all[fit_of[a]].objective_bound > all[fit_of[b]].objective_bound;
  });
  std::vector<std::size_t> slot_of(fitting.size());
  std::vector<PointToRun> points;
  // Layouts not yet started: (bound, -(compute-bound rank), layout), the best bound on top.
  std::priority_queue<std::tuple<double, long, std::size_t>> waiting;
  for (std::size_t slot = 0; slot < order.size(); ++slot) {
    const std::size_t k = order[slot];
    slot_of[k] = slot;
    points.push_back({all[fit_of[k]].layout.name(), std::move(fitting[k])});
    waiting.emplace(all[fit_of[k]].objective_bound, -static_cast<long>(slot), k);
  }
  auto candidate = [&](std::size_t slot) -> Candidate& { return all[fit_of[order[slot]]]; };

  TopK top(static_cast<std::size_t>(std::max(1, options.top)));
  std::size_t simulated = 0, pruned = 0;
  SweepOptions sweep;
  sweep.jobs = options.jobs;
  sweep.on_point = [&](std::size_t i, const PointResult& p) -> Status {
    Candidate& c = candidate(i);
    c.metrics = p.metrics;
    c.verdict = Verdict::simulated;
    top.add(objective_of(p.metrics, options.objective));
    ++simulated;
    if (options.progress) options.progress(simulated, pruned, points.size(), c);
    return Ok{};
  };
  // Just before slot i starts, the layout left with the best bound takes it. The replay
  // (iteration_lower_bound) runs lazily: while the best bound left is a compute bound, that layout
  // is replayed and queued again at its replayed bound, never higher. The one that takes the slot
  // is pruned when its bound is below the bar the simulated layouts have set; so is every layout
  // left then, each as its slot comes up.
  sweep.skip = [&](std::size_t i) {
    // No bar yet, or no pruning: -infinity, below which no bound lies.
    constexpr double kNoBar = -std::numeric_limits<double>::infinity();
    const double bar = options.prune ? top.threshold().value_or(kNoBar) : kNoBar;
    for (;;) {
      const auto [bound, rank, k] = waiting.top();
      waiting.pop();
      Candidate& c = all[fit_of[k]];
      const bool below_bar = c.objective_bound < bar;
      if (!below_bar && !c.replayed) {
        const Scenario& sc = points[slot_of[k]].scenario;
        c.bound = iteration_lower_bound(*sc.training, build_programs(*sc.training), cost, sc.cluster);
        c.replayed = true;
        c.objective_bound = objective_bound_of(*sc.training, c.bound, options.objective);
        waiting.emplace(c.objective_bound, rank, k);
        continue;
      }
      const std::size_t from = slot_of[k], displaced = order[i];
      std::swap(points[i], points[from]);
      order[from] = displaced;
      slot_of[displaced] = from;
      order[i] = k;
      slot_of[k] = i;
      if (!below_bar) return false;
      c.reason = fmt::format("{} bound {:.5g} {} < {:.5g}, the top-{} bar then", c.replayed ? "iteration" : "compute",
                             c.objective_bound, objective_unit(options.objective), bar, options.top);
      ++pruned;
      return true;
    }
  };
  auto ran = run_points(points, sweep);
  if (!ran) return ran.error();

  SearchResult result;
  result.kth_best = top.threshold().value_or(0);
  auto rank_of = [&](const Candidate& c) {
    return c.verdict == Verdict::simulated ? objective_of(*c.metrics, options.objective) : c.objective_bound;
  };
  std::stable_sort(all.begin(), all.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.verdict != b.verdict) return a.verdict < b.verdict;
    if (a.verdict == Verdict::simulated || a.verdict == Verdict::pruned) return rank_of(a) > rank_of(b);
    return false;
  });
  result.candidates = std::move(all);
  return result;
}

std::string loss_reason(const Metrics& m, const Metrics& best) {
  auto idle_s = [](const Metrics& x) { return x.iteration_s - x.compute_s - x.exposed_comm_s; };
  const double exposed = m.exposed_comm_s - best.exposed_comm_s;
  const double bubble = idle_s(m) - idle_s(best);
  const double compute = m.compute_s - best.compute_s;
  if (exposed >= bubble && exposed >= compute) return "exposed communication";
  return bubble >= compute ? "pipeline bubble" : "compute";
}

}  // namespace commbound::sim
