// Training run: one training point, from its scenario to its metrics, as one library call.
//
//   Scenario --> workload (build_programs, or a replayed profiler trace: sim/trace/)
//            --> memory model --> cost model --> engine --> metrics
//
// `commbound run`, the sweep runner, the benches and the tests all call simulate_training; a
// layout that does not fit in GPU memory is not simulated (its metrics say oom, with the breakdown).
#pragma once

#include "core/expected.hpp"
#include "sim/engine/cost_model.hpp"
#include "sim/engine/engine.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/workload.hpp"

#include <map>
#include <optional>
#include <vector>

namespace commbound::sim {

// The cost model of `sc`'s training iteration (sc.training must be set): its kernel table with the
// chosen attention kernel, or the datasheet roofline with the reason.
CostModel cost_model(const Scenario& sc);

struct TrainingOptions {
  // Simulate every rank instead of one representative rank per pipeline stage (tests, small runs).
  bool every_rank = false;
};

// What one simulated training point gives: its metrics, and what a trace needs.
struct TrainingRun {
  Metrics metrics;
  std::vector<Program> stages;     // each pipeline stage's program
  std::vector<int> stage_of;       // pipeline stage of every rank
  std::optional<IterationTimeline> timeline;  // unset when the layout does not fit in memory
};

// Whether `sc`'s iteration can be built within the size limits (check_program_size), asked before
// any work: a layout that does not fit in GPU memory passes, as it is reported by its memory alone
// and its program never built. Errors name the scenario's file.
Status check_training_size(const Scenario& sc);

// What the engine takes from `sc`'s [nccl] choices and from `options`.
EngineOptions engine_options(const Scenario& sc, const TrainingOptions& options = {});

// The degraded GPUs of `sc` (its [[degraded]] tables) that a job on the cluster's `nodes` (empty:
// nodes 0, 1, ... of a job as large as the cluster) runs on, by the job's rank: each one's
// fraction of its compute speed (engine.hpp's JobOnCluster::gpu_rates).
std::map<int, double> degraded_gpu_rates(const Scenario& sc, const NodeList& nodes);

// Simulates one training iteration of `sc` (which must have a [model]). Starts SimGrid's engine:
// once per process (the sweep runner gives every point a child process). Fails when the platform
// cannot be built.
Expected<TrainingRun> simulate_training(const Scenario& sc, const TrainingOptions& options = {});

}  // namespace commbound::sim
