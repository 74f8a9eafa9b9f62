// Degraded windows: a whole run whose [[degraded]] parts are slow only for a while (a GPU that
// fails slow after some hours, a link repaired after two days).
//
// A window is placed on the run's failure-free timeline (hours of training, interruptions left
// out): a part is degraded from `from_hour` for `hours` (to the end when not given). The timeline
// falls into phases, each with the set of parts degraded in it; every distinct set is one simulated
// iteration, and a phase trains at its iteration's pace:
//
//   iterations done by time t = sum over phases of (the phase's time before t) / its iteration
//   ideal = the time at which they reach the run's iterations
//
// so a window the run ends before costs nothing, and one that covers the whole run costs as if its
// part were slow throughout (what `commbound run` shows for one iteration). Failures then act on
// that ideal time as on any other (time_to_train.hpp).
#pragma once

#include "sim/scenario/scenario.hpp"

#include <cstddef>
#include <vector>

namespace commbound::sim {

// A stretch of the failure-free timeline and the parts (indices into the scenario's degraded)
// slow in it. Phases start at 0, each lasts until the next's from_s, the last to the end.
struct DegradedPhase {
  double from_s = 0;
  std::vector<std::size_t> parts;
};

// The phases `parts` make, consecutive phases with the same parts merged.
std::vector<DegradedPhase> degraded_phases(const std::vector<DegradedPart>& parts);

// A phase as simulated: its start, its iteration and power per GPU.
struct PhasePace {
  double from_s = 0;
  double iteration_s = 0;
  double power_w_per_gpu = 0;
};

// The failure-free time `iterations` iterations take over `phases` (from 0, in order), and the
// mean iteration and power per GPU over that time (a run that ends in its first phase: that
// phase's own, exactly).
struct PhasedRun {
  double ideal_s = 0;
  double mean_iteration_s = 0;
  double mean_power_w_per_gpu = 0;
};
PhasedRun phased_run(const std::vector<PhasePace>& phases, double iterations);

}  // namespace commbound::sim
