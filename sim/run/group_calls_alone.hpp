// One call of each communication group of a simulated iteration, priced alone: `run --explain`'s
// term-by-term view of a group's collective, as `collective --explain` gives it for one call.
//
// In the iteration a group's calls share links with other groups' calls and overlap compute, and
// their sizes vary; the row of the breakdown sums them. Here one call of the row's mean size runs
// on an idle copy of the cluster, over the ranks of the group of the first simulated rank that has
// the row, with the algorithm and protocol that the run used most for it, and comes back itemized
// (launch, latency chain, messages, bytes, FIFO window: CollectiveResult::terms). An all-to-all is
// priced uniform (size / n to every peer), as a routed MoE step's skew is the run's, not the
// call's. The time it gives against the row's time per call is what sharing and skew added.
#pragma once

#include "core/expected.hpp"
#include "sim/metrics/iteration_breakdown.hpp"
#include "sim/report/explain_report.hpp"
#include "sim/scenario/scenario.hpp"

#include <vector>

namespace commbound::sim {

// The rows of `breakdown`'s mean that ran on the fabric (a choice was recorded), each priced alone
// on `scenario`'s cluster (the point's scenario, with its training). Errors: a scenario without
// training, or a platform that cannot be built.
Expected<std::vector<GroupCallAlone>> price_group_calls_alone(const Scenario& scenario,
                                                              const IterationBreakdown& breakdown);

}  // namespace commbound::sim
