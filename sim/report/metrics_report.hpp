// Reports of training runs: the metrics table (table, CSV or JSON with the keys of docs/metrics.md)
// and the Chrome/Perfetto trace of one simulated iteration.
#pragma once

#include "sim/engine/engine.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/workload/workload.hpp"

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace commbound::sim {

// One row per scenario (a sweep gives several): table, CSV or JSON with the keys of Metrics.
void write_metrics(std::ostream& out, const std::vector<std::pair<std::string, Metrics>>& rows, const std::string& format,
                   const std::string& title);

// Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev): a process per simulated rank (one per
// pipeline stage), a track per stream. `stages` are the programs by pipeline stage, `stage_of`
// maps a rank to its stage.
void write_trace(std::ostream& out, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                 const IterationTimeline& timeline);

}  // namespace commbound::sim
