#include "sim/sweep_runner.hpp"

#include "calibration/base/child_process.hpp"

#include <nlohmann/json.hpp>

namespace commbound::sim {

Expected<std::vector<PointResult>> run_sweep(const ScenarioFile& file, const SweepOptions& options) {
  std::vector<Scenario> points;
  for (std::size_t i = 0; i < file.points(); ++i) {
    auto sc = file.point(i, options.overrides);
    if (!sc) return sc.error();
    if (!sc->training) return Error{sc->path + ": run needs a [model] section (and optionally [training], [parallel])"};
    points.push_back(std::move(*sc));
  }
  std::size_t done = 0;
  const auto results = run_in_children(
      points.size(), options.jobs,
      [&](std::size_t i) -> Expected<std::string> {
        auto run = simulate_training(points[i], options.training);
        if (!run) return run.error();
        if (options.after_run) {
          if (Status s = options.after_run(*run); !s) return s.error();
        }
        return nlohmann::json(run->metrics).dump();
      },
      [&](std::size_t i, const Expected<std::string>&) {
        if (options.progress) options.progress(++done, points.size(), file.point_name(i));
      });
  std::vector<PointResult> rows;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i]) return Error{file.point_name(i) + ": " + results[i].error().message};
    rows.push_back({file.point_name(i), nlohmann::json::parse(*results[i]).get<Metrics>()});
  }
  return rows;
}

}  // namespace commbound::sim
