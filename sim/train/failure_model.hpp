// Failure model: how long W seconds of training take on a job that fails at random, checkpoints
// every tau seconds of work and restarts after each failure.
//
// Why: beyond a few thousand GPUs the time to train is set by goodput, not by one iteration: the
// Llama 3 405B run lost a job every ~3 hours on 16,384 H100s. The model is the classic one of
// Young (1974, "A first order approximation to the optimum checkpoint interval", CACM 17(9)) and
// Daly (2006, "A higher order estimate of the optimum checkpoint interval for restart dumps",
// FGCS 22(3)): failures arrive as a Poisson process of mean time between failures M; the work
// runs in segments of tau seconds, each followed by a checkpoint of delta seconds; a failure
// loses the segment in progress (and its checkpoint), then a restart of R seconds (restore
// included) runs, which a failure may interrupt too, before the segment is tried again.
//
// The expected time of one segment is then exactly M e^{R/M} (e^{(tau + delta)/M} - 1)
// (expected_segment_s); Young's interval sqrt(2 delta M) minimises it to first order in delta / M,
// Daly's higher-order form to the next orders. A seeded Monte Carlo of the same process
// (simulate_run) checks the closed form and gives its spread.
#pragma once

#include <cstdint>

namespace commbound::sim {

struct FailureProcess {
  double mtbf_s = 0;        // M: mean time between failures of the whole job; <= 0 or inf: none
  double checkpoint_s = 0;  // delta: writing one checkpoint
  double restart_s = 0;     // R: after a failure, until training resumes (reading the checkpoint included)
};

// Young's optimal interval, sqrt(2 delta M).
double young_interval_s(const FailureProcess& p);
// Daly's: sqrt(2 delta M) (1 + sqrt(delta / (2M)) / 3 + delta / (18 M)) - delta while delta < 2M,
// else M.
double daly_interval_s(const FailureProcess& p);

// The expected wall time of `work_s` seconds of training in segments of `interval_s`, each ending
// in a checkpoint (the last, shorter, one too): M e^{R/M} (e^{(tau + delta)/M} - 1) per full segment
// of tau, the same with the remainder for the last. Without failures, work + checkpoints.
double expected_wall_s(const FailureProcess& p, double work_s, double interval_s);

// The Monte Carlo of the same process: `trials` runs (seeded by `seed`), their mean wall time and
// the standard error of that mean, and the mean number of failures per run.
struct MonteCarlo {
  double mean_wall_s = 0;
  double standard_error_s = 0;
  double mean_failures = 0;
};
MonteCarlo simulate_run(const FailureProcess& p, double work_s, double interval_s, long trials, std::uint64_t seed);

}  // namespace commbound::sim
