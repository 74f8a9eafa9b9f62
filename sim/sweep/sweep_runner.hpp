// SweepRunner: every point of a scenario file's [sweep] (or an explicit list of points), each
// simulated in a child process (SimGrid allows one engine per process), at most `jobs` at once,
// with typed overrides applied once.
//
// All points are validated in the parent before any simulation starts, so a bad [sweep] value is
// reported at once, with its file and line. Children inherit the parsed scenario and the kernel
// table by fork (nothing is read again) and send back their metrics as JSON.
#pragma once

#include "core/expected.hpp"
#include "sim/metrics/iteration_breakdown.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/run/training_run.hpp"
#include "sim/scenario/scenario.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

struct PointResult {
  std::string name;  // the [sweep] point's "key=value ..." (the file's stem without a [sweep])
  Metrics metrics;
  Scenario scenario;  // the point's validated scenario (resolved_scenario.hpp writes it back)
  // Its iteration's breakdown, when SweepOptions::breakdown asked for it and the point was
  // simulated (not out of memory).
  std::optional<IterationBreakdown> breakdown;
};

struct SweepOptions {
  int jobs = 1;                        // child processes at once
  std::vector<std::string> overrides;  // applied to every point after its sweep values (--set)
  TrainingOptions training;
  // Also break each simulated iteration down (iteration_breakdown.hpp), in the child, into
  // PointResult::breakdown (what `run --explain` prints).
  bool breakdown = false;
  // Runs in the child after each point's simulation, e.g. to write its trace; an error fails it.
  std::function<Status(const TrainingRun&)> after_run;
  // Called in the parent as each point finishes (completion order): progress output.
  std::function<void(std::size_t done, std::size_t total, const std::string& name)> progress;
  // A point already simulated (a resumed sweep): its metrics, not simulated again. Unset: none.
  std::function<std::optional<Metrics>(std::size_t index)> finished;
  // Called in the parent as each point is simulated, before any later one: keep it (on disk).
  std::function<Status(std::size_t index, const PointResult& point)> on_point;
  // The points this run simulates or keeps, e.g. one slice of a job array. Unset: every point.
  std::function<bool(std::size_t index)> include;
  // Asked in the parent just before point `index` would start (points start in index order, after
  // on_point of every point finished so far): true leaves it unsimulated. Unset: none skipped.
  // The point itself is read after this call, so skip may exchange it with a later one (points
  // the caller owns: a search picking what runs next).
  std::function<bool(std::size_t index)> skip;
};

// A point given explicitly rather than by a [sweep]: its row name and its validated scenario.
struct PointToRun {
  std::string name;
  Scenario scenario;
};

// Simulates every point of `file` (those `include`d) and returns them in [sweep] order. Every point
// is validated, included or not. The first failing point's error (validation, platform, or a
// crashed child) fails the whole sweep.
Expected<std::vector<PointResult>> run_sweep(const ScenarioFile& file, const SweepOptions& options);

// Simulates `points` (each with a [model]), at most options.jobs at once, and returns their metrics
// in the given order; a point options.skip left out has none. `overrides` do not apply (the points
// are already validated). The first failing point's error fails the whole run.
Expected<std::vector<std::optional<Metrics>>> run_points(const std::vector<PointToRun>& points,
                                                         const SweepOptions& options);

}  // namespace commbound::sim
