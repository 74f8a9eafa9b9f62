// ExplainReport: `commbound run --explain`, where a simulated iteration's time went, per
// communication group and collective kind, in one table per point (table, CSV or JSON). The data
// and its definitions are IterationBreakdown's (sim/metrics/iteration_breakdown.hpp); the columns
// are documented in docs/metrics.md ("Explaining an iteration") and in `commbound run --help`.
//
// CSV columns (one line per rank, or "mean", and per part of its iteration):
//   scenario,rank,stage,part,group,collective,group_ranks,calls,bytes,nccl,time_s,busbw_GBps,exposed_s,wait_s
// part "collective" lines fill every column; parts "compute", "host", "tail" and "other" only
// time_s. A rank's iteration is the sum of its exposed_s and wait_s (collective lines) and time_s
// (the other parts). GB/s are 1e9 bytes per second, as nccl-tests prints them.
#pragma once

#include "network/nccl_tests.hpp"
#include "sim/metrics/iteration_breakdown.hpp"
#include "sim/workload/memory_model.hpp"
#include "sim/report/collective_report.hpp"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

// One call of a breakdown row, priced alone on an idle copy of the cluster and itemized term by
// term (sim/run/group_calls_alone.hpp makes them).
struct GroupCallAlone {
  CommGroup group = CommGroup::dp;
  network::CollectiveOp collective = network::CollectiveOp::all_reduce;
  network::SweepRow row;  // its ranks, size, choice, time and CollectiveResult::terms
};

// One point's breakdown, by its row name; unset when the point was not simulated (out of memory).
struct ExplainedPoint {
  std::string name;
  std::optional<IterationBreakdown> breakdown;  // none: out of memory, not simulated
  MemoryUse memory;                              // of the GPU that holds the most
  std::vector<GroupCallAlone> alone;             // the rows' calls alone (table and JSON show them)
};

// The report of `points` in `format`, under `title` (the scenario and its setting).
void write_explain_report(std::ostream& out, const std::vector<ExplainedPoint>& points, Format format,
                          const std::string& title);

// What the columns and parts mean: the text `commbound run --help` prints for --explain.
const char* explain_columns_help();

}  // namespace commbound::sim
