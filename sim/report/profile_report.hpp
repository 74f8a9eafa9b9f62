// The report of `commbound profile`: a ComputeProfile (sim/engine/compute_profile.hpp) as a table
// (one decoder layer's kernels, forward, backward and recompute, then every part's totals), or
// every kernel of every part as CSV or JSON, to put beside a torch.profiler table.
#pragma once

#include "sim/engine/compute_profile.hpp"
#include "sim/report/format.hpp"

#include <ostream>
#include <string>

namespace commbound::sim {

// `format`: table, csv or json; `title` heads the table (its lines "\n# " apart) and the
// JSON (on one line).
void write_profile(std::ostream& out, const ComputeProfile& profile, Format format,
                   const std::string& title);

}  // namespace commbound::sim
