// Interval arithmetic on a simulated timeline, and DiLoCo's amortised iteration: what the metrics
// (metrics.cpp) and the iteration breakdown (iteration_breakdown.cpp) both compute busy and
// exposed times from, so the two agree to the last bit.
#pragma once

#include "sim/engine/engine.hpp"
#include "sim/workload/workload.hpp"

#include <utility>
#include <vector>

namespace commbound::sim::internal {

using Interval = std::pair<double, double>;  // [start_s, end_s)

// `v` sorted, with overlapping and touching intervals merged and empty ones dropped.
std::vector<Interval> merged(std::vector<Interval> v);

// Total length of `v` (merged: no overlaps).
double length(const std::vector<Interval>& v);

// Length of `a` not covered by `b` (both merged).
double uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b);

// DiLoCo's outer step (the ops from Program::outer_step_begin on) runs once every `sync_every`
// iterations, after everything else of its iteration. The average iteration is the inner step plus
// 1/sync_every of what the outer step adds, so the timeline's time past the last inner op is
// compressed by 1/sync_every: a monotone map of times (spans keep their order and overlaps).
class OuterStepWarp {
public:
  // The identity map (every strategy but DiLoCo).
  OuterStepWarp() = default;
  // The map for `timeline`, whose inner step ends with its last span of an op before its program's
  // outer_step_begin.
  OuterStepWarp(const IterationTimeline& timeline, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                int sync_every);

  // The time `t_s` maps to in the average iteration.
  double operator()(double t_s) const {
    return !active_ || t_s <= inner_end_s_ ? t_s : inner_end_s_ + (t_s - inner_end_s_) / sync_every_;
  }

  // `timeline` with every span's start and end, and its end, mapped.
  IterationTimeline apply(const IterationTimeline& timeline) const;

private:
  bool active_ = false;
  double inner_end_s_ = 0;
  int sync_every_ = 1;
};

// The warp the metrics use for `t`: OuterStepWarp for DiLoCo, else the identity.
OuterStepWarp outer_step_warp(const TrainingSpec& t, const IterationTimeline& timeline,
                              const std::vector<Program>& stages, const std::vector<int>& stage_of);

}  // namespace commbound::sim::internal
