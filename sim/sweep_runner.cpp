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
  std::vector<std::optional<Metrics>> kept(points.size());
  std::vector<std::size_t> todo;  // the points still to simulate
  std::vector<std::size_t> included;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (options.include && !options.include(i)) continue;
    included.push_back(i);
    if (options.finished) kept[i] = options.finished(i);
    if (!kept[i]) todo.push_back(i);
  }
  std::size_t done = included.size() - todo.size();
  Status stored = Ok{};
  const auto results = run_in_children(
      todo.size(), options.jobs,
      [&](std::size_t k) -> Expected<std::string> {
        auto run = simulate_training(points[todo[k]], options.training);
        if (!run) return run.error();
        if (options.after_run) {
          if (Status s = options.after_run(*run); !s) return s.error();
        }
        return nlohmann::json(run->metrics).dump();
      },
      [&](std::size_t k, const Expected<std::string>& result) {
        const std::size_t i = todo[k];
        if (result && options.on_point && stored) {
          stored = options.on_point(i, {file.point_name(i), nlohmann::json::parse(*result).get<Metrics>(), points[i]});
        }
        if (options.progress) options.progress(++done, included.size(), file.point_name(i));
      });
  if (!stored) return stored.error();
  for (std::size_t k = 0; k < results.size(); ++k) {
    if (!results[k]) return Error{file.point_name(todo[k]) + ": " + results[k].error().message};
    kept[todo[k]] = nlohmann::json::parse(*results[k]).get<Metrics>();
  }
  std::vector<PointResult> rows;
  for (std::size_t i : included) rows.push_back({file.point_name(i), *kept[i], points[i]});
  return rows;
}

}  // namespace commbound::sim
