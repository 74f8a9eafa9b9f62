// Metrics of one simulated training iteration (keys documented in docs/metrics.md):
// throughput, model FLOP rate and MFU, compute / communication / exposed communication time,
// power, energy per token, memory per GPU, and how compute was priced.
#pragma once

#include "sim/engine/engine.hpp"
#include "sim/workload/memory_model.hpp"
#include "sim/scenario/training.hpp"

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

struct Metrics {
  int gpus = 0;
  double iteration_s = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double compute_s = 0;         // time the compute stream was busy (mean over simulated ranks)
  double comm_s = 0;            // time any communication stream was busy (mean)
  double exposed_comm_s = 0;    // communication busy while compute idle (mean)
  double exposed_comm_fraction = 0;
  double power_w_per_gpu = 0;   // power model: see power_model_description
  double tokens_per_joule = 0;
  double memory_bytes_per_gpu = 0;
  bool oom = false;
  MemoryUse memory;
  // How compute was priced (CostModel): "roofline", "measured" or "derived"; the table's file;
  // the one-line statement; ops priced by their exact table row and by a fallback.
  std::string cost_model_source;
  std::string cost_model_table;
  std::string cost_model_description;
  CostSummary cost_summary;
  std::string power_model_description;
  // The board's power limit: the slowdown of GEMMs and attention, and their share of compute time.
  double power_limit_slowdown = 1;
  double compute_bound_share = 0;
};

// Busy and exposed times are averaged over the simulated ranks (one per pipeline stage). DiLoCo's
// outer step (Program::outer_step_begin) counts 1/diloco_sync_every: the metrics are those of the
// average iteration, the simulated `timeline` (the iteration with the outer step) is left as it is. `stages`
// are the programs by pipeline stage; `stage_of` maps a rank to its stage; `cost` priced them
// (its source, fallback counts and power model go into the metrics).
Metrics compute_metrics(const TrainingSpec& t, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                        const IterationTimeline& timeline, const MemoryUse& memory, const CostModel& cost);

// The cost-model fields of `m` (source, table, description, summary, power description) from
// `cost` and `stages`: for rows that are not simulated (out of memory) as for those that are.
void describe_cost_model(Metrics& m, const CostModel& cost, const std::vector<Program>& stages);

// JSON of the structs above, generated (field names as keys): how a child process sends its metrics
// back to the sweep runner.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MemoryUse, bytes, total_bytes, capacity_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CostSummary, exact_ops, fallback_ops, fallbacks)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Metrics, gpus, iteration_s, tokens_per_s, tokens_per_s_per_gpu, model_tflops_per_gpu,
                                   mfu, compute_s, comm_s, exposed_comm_s, exposed_comm_fraction, power_w_per_gpu,
                                   tokens_per_joule, memory_bytes_per_gpu, oom, memory, cost_model_source,
                                   cost_model_table, cost_model_description, cost_summary, power_model_description,
                                   power_limit_slowdown, compute_bound_share)

}  // namespace commbound::sim
