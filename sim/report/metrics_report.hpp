// Reports of training runs: the metrics table (table, CSV or JSON with the keys of docs/metrics.md).
// The trace of one simulated iteration is sim/report/perfetto_writer.hpp.
#pragma once

#include "sim/metrics/metrics.hpp"
#include "sim/report/format.hpp"

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace commbound::sim {

// One row per scenario (a sweep gives several): table, CSV or JSON with the keys of Metrics.
void write_metrics(std::ostream& out, const std::vector<std::pair<std::string, Metrics>>& rows, Format format,
                   const std::string& title);

// One job of several sharing a cluster: its metrics run together with the others, its nodes
// ("0-127, 256-383") and its iteration alone on the same nodes.
struct JobRow {
  std::string name;
  std::string nodes;
  Metrics metrics;
  double alone_iteration_s = 0;
};

// The metrics of jobs run together (write_metrics' rows and columns, one per job), then what each
// lost to the others: its nodes, its iteration alone and the slowdown (together / alone). CSV and
// JSON carry them as the columns `nodes`, `alone_iteration_s` and `slowdown`.
void write_job_metrics(std::ostream& out, const std::vector<JobRow>& rows, Format format, const std::string& title);

}  // namespace commbound::sim
