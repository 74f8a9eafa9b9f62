#include "sim/sweep/sweep_runner.hpp"

#include "calibration/base/child_process.hpp"

#include <nlohmann/json.hpp>

namespace commbound::sim {

Expected<std::vector<PointResult>> run_sweep(const ScenarioFile& file, const SweepOptions& options) {
  std::vector<PointToRun> points;
  for (std::size_t i = 0; i < file.points(); ++i) {
    auto sc = file.point(i, options.overrides);
    if (!sc) return sc.error();
    if (!sc->training) return Error{sc->path + ": run needs a [model] section (and optionally [training], [parallel])"};
    points.push_back({file.point_name(i), std::move(*sc)});
  }
  auto metrics = run_points(points, options);
  if (!metrics) return metrics.error();
  std::vector<PointResult> rows;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (options.include && !options.include(i)) continue;
    COMMBOUND_CHECK((*metrics)[i].has_value(), "a sweep point was skipped");
    rows.push_back({points[i].name, *(*metrics)[i], points[i].scenario});
  }
  return rows;
}

Expected<std::vector<std::optional<Metrics>>> run_points(const std::vector<PointToRun>& points,
                                                         const SweepOptions& options) {
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
  std::vector<bool> skipped(todo.size(), false);
  Status stored = Ok{};
  const auto results = run_in_children(
      todo.size(), options.jobs,
      [&](std::size_t k) -> Expected<std::string> {
        auto run = simulate_training(points[todo[k]].scenario, options.training);
        if (!run) return run.error();
        if (options.after_run) {
          if (Status s = options.after_run(*run); !s) return s.error();
        }
        return nlohmann::json(run->metrics).dump();
      },
      [&](std::size_t k, const Expected<std::string>& result) {
        const std::size_t i = todo[k];
        if (result && options.on_point && stored) {
          stored = options.on_point(
              i, {points[i].name, nlohmann::json::parse(*result).get<Metrics>(), points[i].scenario});
        }
        if (options.progress) options.progress(++done, included.size(), points[i].name);
      },
      [&](std::size_t k) {
        skipped[k] = options.skip && options.skip(todo[k]);
        return !skipped[k];
      });
  if (!stored) return stored.error();
  for (std::size_t k = 0; k < results.size(); ++k) {
    if (skipped[k]) continue;
    if (!results[k]) return Error{points[todo[k]].name + ": " + results[k].error().message};
    kept[todo[k]] = nlohmann::json::parse(*results[k]).get<Metrics>();
  }
  return kept;
}

}  // namespace commbound::sim
