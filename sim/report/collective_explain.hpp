// CollectiveExplanation: `commbound collective --explain`, one simulated collective taken apart.
// For every (node count, size) of the sweep: what NCCL's tuner estimates for each algorithm and
// protocol (the least wins, as in its tuning.cc), and the simulated time term by term as the
// model builds it (network/collective.hpp's CostTerm: for a ring, the launch, the latency chain of
// its steps, the FIFO messages each connection serializes, the bytes at the rate the fabric gives
// them), with the term that limits it.
#pragma once

#include "network/nccl_tests.hpp"
#include "network/nccl_tuner.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

// One (algorithm, protocol) as NCCL's tuner sees a call: its estimate, or why it cannot run it.
struct TunerEstimate {
  network::CollectiveChoice choice;
  std::string unsupported;  // empty when it can run
  double latency_s = 0;
  double time_s = 0;
};

// Every (algorithm, protocol) NCCL's tuner weighs for `shape`, in the registry's order.
std::vector<TunerEstimate> tuner_estimates(const network::NcclTuner& tuner, const network::CallShape& shape);

// What limits a simulated call, as --explain says it: the FIFO window where a term says the call
// waited for slots, else its largest term; empty without terms.
std::string limiting_term(const network::CollectiveResult& result);

// An all-to-all's busiest links (CollectiveResult::loads), each line after `indent`; nothing when
// the result has none.
void write_loads(std::ostream& out, const network::CollectiveResult& result, const std::string& indent);

void write_collective_explanation(std::ostream& out, const std::vector<network::SweepRow>& rows,
                                  const network::NcclTuner& tuner, const std::string& title);

}  // namespace commbound::sim
