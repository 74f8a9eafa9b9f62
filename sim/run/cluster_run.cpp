#include "sim/run/cluster_run.hpp"

#include "core/child_process.hpp"
#include "core/units.hpp"
#include "sim/run/training_run.hpp"
#include "sim/workload/layout.hpp"
#include "sim/workload/memory_model.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace commbound::sim {
namespace {

// One job, built for the engine: its programs, their prices and its memory.
struct PreparedJob {
  Scenario scenario;
  std::vector<Program> stages;
  std::vector<int> stage_of;
  CostModel cost;
  MemoryUse memory;
};

Expected<PreparedJob> prepare(const Scenario& sc, std::size_t j) {
  Scenario alone = job_scenario(sc, j);
  const TrainingSpec& t = *alone.training;
  const std::string job = sc.jobs[j].origin + ": job \"" + sc.jobs[j].name + "\"";
  if (Status size = check_training_size(alone); !size) return Error{job + ": " + size.error().message};
  MemoryUse memory = memory_per_gpu(t, alone.cluster.node.nccl_channels);
  if (!memory.fits()) {
    return Error{job + fmt::format(": needs {:.1f} GB per GPU, more than the GPU's {:.1f} GB (`commbound run` of a "
                                   "scenario with its [job.*] sections shows the breakdown)",
                                   memory.total_bytes / kBytesPerGB, memory.capacity_bytes / kBytesPerGB)};
  }
  std::vector<Program> stages = build_programs(t);
  std::vector<int> stage_of;
  const Layout layout(t.dp, t.tp, t.pp, t.cp);
  for (int r = 0; r < layout.world(); ++r) stage_of.push_back(layout.coords(r).pp);
  CostModel cost = cost_model(alone);
  cost.hold_at_power_limit(stages);
  return PreparedJob{std::move(alone), std::move(stages), std::move(stage_of), std::move(cost), std::move(memory)};
}

}  // namespace

Scenario job_scenario(const Scenario& sc, std::size_t j) {
  Scenario alone = sc;
  alone.jobs.clear();
  alone.cluster.nodes = static_cast<int>(sc.jobs[j].nodes.size());
  alone.training = sc.jobs[j].training;
  return alone;
}

Expected<std::vector<JobResult>> simulate_cluster(const Scenario& sc, const ClusterRunOptions& options) {
  COMMBOUND_CHECK(!sc.jobs.empty(), "simulate_cluster() of a scenario without [[job]] tables");
  std::vector<PreparedJob> jobs;
  for (std::size_t j = 0; j < sc.jobs.size(); ++j) {
    auto prepared = prepare(sc, j);
    if (!prepared) return prepared.error();
    jobs.push_back(std::move(*prepared));
  }
  auto on_cluster = [&](std::size_t j) {
    return JobOnCluster{&*jobs[j].scenario.training, &jobs[j].stages, &jobs[j].cost, sc.jobs[j].nodes,
                        degraded_gpu_rates(sc, sc.jobs[j].nodes)};
  };
  const EngineOptions engine = engine_options(sc);
  // Simulation 0 runs every job together; simulation 1 + j runs job j alone.
  const std::size_t count = 1 + jobs.size();
  std::size_t done = 0;
  const auto results = run_in_children(
      count, options.processes,
      [&](std::size_t k) -> Expected<std::string> {
        std::vector<JobOnCluster> running;
        if (k == 0) {
          for (std::size_t j = 0; j < jobs.size(); ++j) running.push_back(on_cluster(j));
        } else {
          running.push_back(on_cluster(k - 1));
        }
        auto timelines = simulate_jobs(sc.cluster, sc.nccl, running, engine);
        if (!timelines) return Error{sc.path + ": " + timelines.error().message};
        if (k > 0) return nlohmann::json((*timelines)[0].iteration_s()).dump();
        nlohmann::json metrics = nlohmann::json::array();
        std::vector<JobTimeline> traced;
        for (std::size_t j = 0; j < jobs.size(); ++j) {
          const PreparedJob& p = jobs[j];
          const TrainingSpec& t = *p.scenario.training;
          nlohmann::json job{{"metrics", compute_metrics(t, p.stages, p.stage_of, (*timelines)[j], p.memory, p.cost)}};
          if (options.breakdown) job["breakdown"] = break_down_iteration(t, p.stages, p.stage_of, (*timelines)[j]);
          metrics.push_back(std::move(job));
          if (options.after_run) traced.push_back({sc.jobs[j].name, p.stages, p.stage_of, std::move((*timelines)[j])});
        }
        if (options.after_run) {
          if (Status s = options.after_run(traced); !s) return s.error();
        }
        return metrics.dump();
      },
      [&](std::size_t, const Expected<std::string>&) {
        if (options.progress && !interrupted()) options.progress(++done, count);
      });
  for (const auto& r : results) {
    if (!r) return r.error();
  }
  const nlohmann::json together = nlohmann::json::parse(*results[0]);
  std::vector<JobResult> out;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const nlohmann::json& job = together.at(j);
    out.push_back({sc.jobs[j].name, sc.jobs[j].nodes, job.at("metrics").get<Metrics>(),
                   nlohmann::json::parse(*results[1 + j]).get<double>(),
                   job.contains("breakdown") ? std::optional(job.at("breakdown").get<IterationBreakdown>()) : std::nullopt});
  }
  return out;
}

}  // namespace commbound::sim
