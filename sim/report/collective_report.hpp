// CollectiveReport: the nccl-tests-style output of `commbound collective`.
// CSV columns (stable, documented in docs/collective.md):
//   op,nodes,ranks,bytes,time_us,algbw_GBps,busbw_GBps,algorithm,protocol,fidelity
// GB/s are 1e9 bytes per second, as nccl-tests prints them.
#pragma once

#include "network/nccl_tests.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

enum class Format { table, csv, json };

// A size as people read it: "64 MiB", "1 GiB", "1.50 GiB" (binary units, as nccl-tests' sizes).
std::string size_label(double bytes);

void write_collective_report(std::ostream& out, const std::vector<network::SweepRow>& rows, Format format,
                             const std::string& title);

}  // namespace commbound::sim
