#include "sim/run/training_run.hpp"

#include "sim/trace/trace_program.hpp"
#include "sim/workload/layout.hpp"
#include "sim/workload/memory_model.hpp"

#include <algorithm>

namespace commbound::sim {

CostModel cost_model(const Scenario& sc) {
  const TrainingSpec& t = *sc.training;
  if (sc.kernel_table) return CostModel(t.gpu, sc.kernel_table, t.attention_kernel);
  return CostModel(t.gpu, sc.roofline_reason);
}

Status check_training_size(const Scenario& sc) {
  if (!sc.training || sc.workload) return Ok{};
  const Status size = check_program_size(*sc.training);
  if (size || !memory_per_gpu(*sc.training, sc.cluster.node.nccl_channels).fits()) return Ok{};
  return Error{sc.path + ": " + size.error().message};
}

EngineOptions engine_options(const Scenario& sc, const TrainingOptions& options) {
  EngineOptions engine;
  engine.algorithm = sc.nccl_options.algorithm;
  engine.protocol = sc.nccl_options.protocol;
  engine.every_rank = options.every_rank;
  engine.jitter = sc.nccl_options.jitter;
  return engine;
}

std::map<int, double> degraded_gpu_rates(const Scenario& sc, const NodeList& nodes) {
  std::map<int, double> rates;
  const int gpus = sc.cluster.node.gpus;
  for (const DegradedPart& part : sc.degraded) {
    if (part.kind != DegradedPart::Kind::gpu) continue;
    int job_node = part.node;
    if (!nodes.empty()) {
      const auto at = std::find(nodes.begin(), nodes.end(), part.node);
      if (at == nodes.end()) continue;  // another job's node
      job_node = static_cast<int>(at - nodes.begin());
    }
    rates[job_node * gpus + part.index] = part.speed_fraction;
  }
  return rates;
}

Expected<TrainingRun> simulate_training(const Scenario& sc, const TrainingOptions& options) {
  if (!sc.training) return Error{sc.path + ": a training run needs a [model] section (and optionally [training], [parallel])"};
  const TrainingSpec& t = *sc.training;
  TrainingRun run;
  std::string trace_description;
  if (sc.workload) {
    auto traced = load_trace_program(*sc.workload);
    if (!traced) return traced.error();
    run.stages = {std::move(traced->program)};
    trace_description = traced->description;
  }
  const MemoryUse memory = memory_per_gpu(t, sc.cluster.node.nccl_channels);
  if (Status size = check_training_size(sc); !size) return size.error();
  // A layout that does not fit in memory is reported by its memory alone: its program is built
  // only within the size limits.
  if (!sc.workload && (memory.fits() || check_program_size(t))) run.stages = build_programs(t);
  const Layout layout(t.dp, t.tp, t.pp, t.cp);
  for (int r = 0; r < layout.world(); ++r) run.stage_of.push_back(layout.coords(r).pp);
  CostModel cost = cost_model(sc);
  cost.hold_at_power_limit(run.stages);
  if (!memory.fits()) {
    run.metrics.gpus = t.world();
    run.metrics.memory = memory;
    run.metrics.memory_bytes_per_gpu = memory.total_bytes;
    run.metrics.oom = true;
    describe_cost_model(run.metrics, cost, run.stages);
    return run;
  }
  auto timelines = simulate_jobs(sc.cluster, sc.nccl, {JobOnCluster{&t, &run.stages, &cost, {}, degraded_gpu_rates(sc, {})}},
                                 engine_options(sc, options));
  if (!timelines) return Error{sc.path + ": " + timelines.error().message};
  IterationTimeline& timeline = timelines->front();
  run.metrics = compute_metrics(t, run.stages, run.stage_of, timeline, memory, cost);
  if (sc.workload) {
    run.metrics.cost_model_source = "trace";
    run.metrics.cost_model_table = sc.workload->path;
    run.metrics.cost_model_description = trace_description;
  }
  run.timeline = std::move(timeline);
  return run;
}

}  // namespace commbound::sim
