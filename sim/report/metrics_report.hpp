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

}  // namespace commbound::sim
