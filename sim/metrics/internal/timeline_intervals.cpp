#include "sim/metrics/internal/timeline_intervals.hpp"

#include <algorithm>

namespace commbound::sim::internal {

std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double s = 0;
  for (const auto& i : v) s += i.second - i.first;
  return s;
}

double uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double s = 0;
  for (const auto& i : a) {
    double covered = 0;
    for (const auto& j : b) covered += std::max(0.0, std::min(i.second, j.second) - std::max(i.first, j.first));
    s += (i.second - i.first) - covered;
  }
  return s;
}

OuterStepWarp::OuterStepWarp(const IterationTimeline& timeline, const std::vector<Program>& stages,
                             const std::vector<int>& stage_of, int sync_every)
    : active_(true), inner_end_s_(timeline.start_s), sync_every_(sync_every) {
  for (const Span& s : timeline.spans) {
    const Program& program = stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(s.rank)])];
    if (program.outer_step_begin < 0 || s.op < program.outer_step_begin) inner_end_s_ = std::max(inner_end_s_, s.end_s);
  }
}

IterationTimeline OuterStepWarp::apply(const IterationTimeline& timeline) const {
  IterationTimeline out = timeline;
  for (Span& s : out.spans) {
    s.start_s = (*this)(s.start_s);
    s.end_s = (*this)(s.end_s);
  }
  out.end_s = (*this)(timeline.end_s);
  return out;
}

OuterStepWarp outer_step_warp(const TrainingSpec& t, const IterationTimeline& timeline,
                              const std::vector<Program>& stages, const std::vector<int>& stage_of) {
  if (t.strategy != Strategy::diloco) return {};
  return OuterStepWarp(timeline, stages, stage_of, t.diloco_sync_every);
}

}  // namespace commbound::sim::internal
