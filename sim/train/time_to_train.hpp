// Time to train: one simulated iteration and a [train] plan -> the whole run, with failures,
// checkpoints and restarts (failure_model.hpp).
//
//   iterations = tokens / (global batch x sequence)     ideal = iterations x iteration
//   M = 1 / (GPUs x GPU rate + nodes x node rate)       delta = checkpoint bytes / storage rate
//   R = restart + delta (reading it back)               tau = the plan's, or Daly's optimum
//   expected = expected_wall_s(ideal)                   goodput = ideal / expected
// beside a Monte Carlo of the same run. Energy counts every wall second at the iteration's power
// per GPU (restarts and checkpoints included: an upper bound for them). With [[degraded]] windows
// the ideal time is the phases' (degraded_windows.hpp).
#pragma once

#include "sim/metrics/metrics.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/train/degraded_windows.hpp"
#include "sim/train/failure_model.hpp"

#include <vector>

namespace commbound::sim {

struct TimeToTrain {
  int gpus = 0;
  int nodes = 0;
  double iteration_s = 0;
  double tokens_per_iteration = 0;
  double iterations = 0;
  double ideal_s = 0;              // iterations x iteration, nothing failing
  double checkpoint_bytes = 0;
  FailureProcess failures;         // M, delta, R
  double young_interval_s = 0;
  double daly_interval_s = 0;
  double interval_s = 0;           // the one used: the plan's, or Daly's
  bool interval_given = false;
  double expected_s = 0;           // closed form
  double expected_failures = 0;    // expected_s / M
  double lost_s = 0;               // expected - ideal - checkpoints: work redone and restarts
  double checkpoints_s = 0;        // writing the checkpoints
  MonteCarlo monte_carlo;
  double goodput = 0;              // ideal / expected
  double gpu_hours = 0;            // expected x GPUs
  double energy_j = 0;             // expected x GPUs x power per GPU
  bool restart_guessed = false;    // restart_s is the default guess
};

// The projection of `plan` (tokens > 0) for `sc`'s training: its iteration simulated in each phase
// of its degraded windows (degraded_windows.hpp; one phase from 0 without windows). iteration_s is
// then the mean over the run, and energy counts each phase at its own power.
TimeToTrain time_to_train(const Scenario& sc, const std::vector<PhasePace>& phases, const TrainPlan& plan);

}  // namespace commbound::sim
