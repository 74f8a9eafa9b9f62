// Cluster run: several training jobs on one cluster (a scenario's [[job]] tables), simulated
// together on one fabric so that their collectives share the links they meet on, and each alone on
// the same nodes with the rest of the cluster idle: what each job loses to the others.
//
//   Scenario.jobs --> per job: workload, memory, cost model (as simulate_training)
//                 --> engine: simulate_jobs(all jobs)  and  simulate_jobs(job) per job
//                 --> per job: metrics together, iteration alone, slowdown
//
// Each simulation runs in a child process (SimGrid runs one engine per process), at most
// `processes` at once.
#pragma once

#include "core/expected.hpp"
#include "sim/engine/engine.hpp"
#include "sim/metrics/iteration_breakdown.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/scenario/scenario.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

// One job of a cluster run, as it ran beside the others.
struct JobResult {
  std::string name;
  NodeList nodes;
  Metrics metrics;               // together with the other jobs
  double alone_iteration_s = 0;  // the same job on the same nodes, the rest of the cluster idle
  // Its iteration together with the others, broken down (ClusterRunOptions::breakdown).
  std::optional<IterationBreakdown> breakdown;
  double slowdown() const { return metrics.iteration_s / alone_iteration_s; }
};

// What a trace of the jobs together needs: per job its stages' programs, the stage of each rank,
// and the reported iteration (its spans in the job's ranks).
struct JobTimeline {
  std::string name;
  std::vector<Program> stages;
  std::vector<int> stage_of;
  IterationTimeline timeline;
};

struct ClusterRunOptions {
  int processes = 1;  // child processes at once
  bool breakdown = false;  // also break each job's iteration together down (`run --explain`)
  // Runs in the child that simulated the jobs together, with their timelines (a trace).
  std::function<Status(const std::vector<JobTimeline>&)> after_run;
  // Called in the parent as each simulation finishes: progress output.
  std::function<void(std::size_t done, std::size_t total)> progress;
};

// The scenario of job `j` of `sc` on its own: the cluster cut to the job's node count, its training.
Scenario job_scenario(const Scenario& sc, std::size_t j);

// Simulates `sc`'s jobs (sc.jobs, at least one) together and each alone. Fails, naming the job,
// when one does not fit in GPU memory or exceeds the size limits, or when the platform cannot be
// built.
Expected<std::vector<JobResult>> simulate_cluster(const Scenario& sc, const ClusterRunOptions& options = {});

}  // namespace commbound::sim
