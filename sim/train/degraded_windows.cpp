#include "sim/train/degraded_windows.hpp"

#include "core/check.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <limits>

namespace commbound::sim {

std::vector<DegradedPhase> degraded_phases(const std::vector<DegradedPart>& parts) {
  constexpr double kEnd = std::numeric_limits<double>::infinity();
  auto window = [](const DegradedPart& part) {
    const double from_s = part.from_hour * kSecondsPerHour;
    return std::pair{from_s, part.hours > 0 ? from_s + part.hours * kSecondsPerHour : kEnd};
  };
  std::vector<double> edges_s = {0};
  for (const DegradedPart& part : parts) {
    const auto [from_s, until_s] = window(part);
    edges_s.push_back(from_s);
    if (until_s < kEnd) edges_s.push_back(until_s);
  }
  std::sort(edges_s.begin(), edges_s.end());
  edges_s.erase(std::unique(edges_s.begin(), edges_s.end()), edges_s.end());
  std::vector<DegradedPhase> phases;
  for (double from_s : edges_s) {
    DegradedPhase phase{from_s, {}};
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const auto [start_s, until_s] = window(parts[k]);
      if (start_s <= from_s && from_s < until_s) phase.parts.push_back(k);
    }
    if (phases.empty() || phases.back().parts != phase.parts) phases.push_back(std::move(phase));
  }
  return phases;
}

PhasedRun phased_run(const std::vector<PhasePace>& phases, double iterations) {
  COMMBOUND_CHECK(!phases.empty() && phases.front().from_s == 0, "phases start at 0");
  PhasedRun out;
  double energy_per_gpu_j = 0;
  double left = iterations;
  std::size_t k = 0;
  for (; k < phases.size() && left > 0; ++k) {
    const PhasePace& phase = phases[k];
    const double length_s = k + 1 < phases.size() ? phases[k + 1].from_s - phase.from_s
                                                  : std::numeric_limits<double>::infinity();
    const bool ends_here = left * phase.iteration_s <= length_s;
    const double spent_s = ends_here ? left * phase.iteration_s : length_s;
    left = ends_here ? 0 : left - length_s / phase.iteration_s;
    out.ideal_s += spent_s;
    energy_per_gpu_j += spent_s * phase.power_w_per_gpu;
  }
  const bool first_only = k <= 1;  // the run ended in its first phase
  out.mean_iteration_s = first_only ? phases.front().iteration_s : out.ideal_s / iterations;
  out.mean_power_w_per_gpu = first_only ? phases.front().power_w_per_gpu : energy_per_gpu_j / out.ideal_s;
  return out;
}

}  // namespace commbound::sim
