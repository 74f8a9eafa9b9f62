#include "sim/train/time_to_train.hpp"

#include "core/units.hpp"

#include <cmath>
#include <limits>

namespace commbound::sim {

TimeToTrain time_to_train(const Scenario& sc, const std::vector<PhasePace>& phases, const TrainPlan& plan) {
  const TrainingSpec& t = *sc.training;
  TimeToTrain out;
  out.gpus = t.world();
  out.nodes = sc.cluster.nodes;
  out.tokens_per_iteration = static_cast<double>(t.global_batch) * t.seq_len;
  out.iterations = std::ceil(plan.tokens / out.tokens_per_iteration);
  const PhasedRun run = phased_run(phases, out.iterations);
  out.ideal_s = run.ideal_s;
  out.iteration_s = run.mean_iteration_s;
  out.checkpoint_bytes = plan.checkpoint_bytes_per_parameter * t.model.params();
  const double failures_per_hour =
      out.gpus * plan.gpu_failures_per_gpu_hour + out.nodes * plan.node_failures_per_node_hour;
  out.failures.mtbf_s = failures_per_hour > 0 ? kSecondsPerHour / failures_per_hour : std::numeric_limits<double>::infinity();
  out.failures.checkpoint_s = out.checkpoint_bytes / plan.storage_bytes_per_s;
  out.failures.restart_s = plan.restart_s + out.failures.checkpoint_s;
  out.restart_guessed = plan.restart_s == kRestartGuessS;
  out.young_interval_s = young_interval_s(out.failures);
  out.daly_interval_s = daly_interval_s(out.failures);
  out.interval_given = plan.checkpoint_interval_s > 0;
  out.interval_s = out.interval_given ? plan.checkpoint_interval_s
                   : std::isfinite(out.daly_interval_s) && out.daly_interval_s > 0 ? out.daly_interval_s
                                                                                   : out.ideal_s;
  out.expected_s = expected_wall_s(out.failures, out.ideal_s, out.interval_s);
  out.expected_failures = std::isfinite(out.failures.mtbf_s) ? out.expected_s / out.failures.mtbf_s : 0;
  out.checkpoints_s = std::ceil(out.ideal_s / out.interval_s) * out.failures.checkpoint_s;
  out.lost_s = out.expected_s - out.ideal_s - out.checkpoints_s;
  out.monte_carlo = simulate_run(out.failures, out.ideal_s, out.interval_s, plan.trials,
                                 static_cast<std::uint64_t>(plan.seed));
  out.goodput = out.ideal_s / out.expected_s;
  out.gpu_hours = out.expected_s * out.gpus / kSecondsPerHour;
  out.energy_j = out.expected_s * out.gpus * run.mean_power_w_per_gpu;
  return out;
}

}  // namespace commbound::sim
