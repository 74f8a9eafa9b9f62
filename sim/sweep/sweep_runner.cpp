#include "sim/sweep/sweep_runner.hpp"

#include "core/child_process.hpp"

#include <nlohmann/json.hpp>

namespace commbound::sim {
namespace {

// What a child sends back for one point: its metrics and, when asked, its breakdown.
struct PointOutcome {
  Metrics metrics;
  std::optional<IterationBreakdown> breakdown;
};

std::string outcome_json(const TrainingSpec& t, const TrainingRun& run, bool breakdown) {
  nlohmann::json j{{"metrics", run.metrics}};
  if (breakdown && run.timeline) j["breakdown"] = break_down_iteration(t, run.stages, run.stage_of, *run.timeline);
  return j.dump();
}

PointOutcome parse_outcome(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  PointOutcome out{j.at("metrics").get<Metrics>(), std::nullopt};
  if (j.contains("breakdown")) out.breakdown = j.at("breakdown").get<IterationBreakdown>();
  return out;
}

// run_points, keeping each point's whole outcome.
Expected<std::vector<std::optional<PointOutcome>>> run_point_outcomes(const std::vector<PointToRun>& points,
                                                                      const SweepOptions& options) {
  std::vector<std::optional<PointOutcome>> kept(points.size());
  std::vector<std::size_t> todo;  // the points still to simulate
  std::vector<std::size_t> included;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (options.include && !options.include(i)) continue;
    included.push_back(i);
    if (options.finished) {
      if (auto metrics = options.finished(i)) kept[i] = PointOutcome{std::move(*metrics), std::nullopt};
    }
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
        return outcome_json(*points[todo[k]].scenario.training, *run, options.breakdown);
      },
      [&](std::size_t k, const Expected<std::string>& result) {
        const std::size_t i = todo[k];
        if (result && options.on_point && stored) {
          PointOutcome outcome = parse_outcome(*result);
          stored = options.on_point(
              i, {points[i].name, std::move(outcome.metrics), points[i].scenario, std::move(outcome.breakdown)});
        }
        if (options.progress && !interrupted()) options.progress(++done, included.size(), points[i].name);
      },
      [&](std::size_t k) {
        skipped[k] = options.skip && options.skip(todo[k]);
        return !skipped[k];
      });
  if (!stored) return stored.error();
  for (std::size_t k = 0; k < results.size(); ++k) {
    if (skipped[k]) continue;
    if (!results[k]) return Error{points[todo[k]].name + ": " + results[k].error().message};
    kept[todo[k]] = parse_outcome(*results[k]);
  }
  return kept;
}

}  // namespace

Expected<std::vector<PointResult>> run_sweep(const ScenarioFile& file, const SweepOptions& options) {
  std::vector<PointToRun> points;
  for (std::size_t i = 0; i < file.points(); ++i) {
    auto sc = file.point(i, options.overrides);
    if (!sc) return sc.error();
    if (!sc->training) return Error{sc->path + ": run needs a [model] section (and optionally [training], [parallel])"};
    if (Status size = check_training_size(*sc); !size) return size.error();
    points.push_back({file.point_name(i), std::move(*sc)});
  }
  auto outcomes = run_point_outcomes(points, options);
  if (!outcomes) return outcomes.error();
  std::vector<PointResult> rows;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (options.include && !options.include(i)) continue;
    COMMBOUND_CHECK((*outcomes)[i].has_value(), "a sweep point was skipped");
    PointOutcome& o = *(*outcomes)[i];
    rows.push_back({points[i].name, std::move(o.metrics), points[i].scenario, std::move(o.breakdown)});
  }
  return rows;
}

Expected<std::vector<std::optional<Metrics>>> run_points(const std::vector<PointToRun>& points,
                                                         const SweepOptions& options) {
  auto outcomes = run_point_outcomes(points, options);
  if (!outcomes) return outcomes.error();
  std::vector<std::optional<Metrics>> metrics;
  for (auto& o : *outcomes) metrics.push_back(o ? std::optional<Metrics>(std::move(o->metrics)) : std::nullopt);
  return metrics;
}

}  // namespace commbound::sim
