// CollectiveReport: the nccl-tests-style output of `commbound collective`.
// CSV columns (stable, documented in docs/collective.md):
//   op,nodes,ranks,bytes,time_us,algbw_GBps,busbw_GBps,algorithm,protocol,fidelity
// GB/s are 1e9 bytes per second, as nccl-tests prints them.
#pragma once

#include "core/expected.hpp"
#include "core/size_label.hpp"
#include "network/nccl_tests.hpp"
#include "sim/report/csv_table.hpp"
#include "sim/report/format.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

// table: ours (sizes in binary units, the algorithm and protocol NCCL's tuner picked); csv, json;
// nccl_tests: nccl-tests' own columns and footer, one run per node count, so that a simulated
// table sits beside a real log line for line (and network/'s nccl-tests reader reads it back).

void write_collective_report(std::ostream& out, const std::vector<network::SweepRow>& rows, Format format,
                             const std::string& title);

// The title of a collective sweep's report on `cluster` with NCCL `nccl_release`'s model: the op,
// the GPUs (K of each node's when the sweep runs on part of each node), the node type, the largest
// node count, the fabric. "commbound collective: allgather on dgx-h100 x up to 2 nodes,
// rail-optimized ib-ndr (adaptive, 1:1), NCCL 2.30.7 model", then the link spread if any.
std::string collective_title(const network::CollectiveSweep& sweep, const network::ClusterSpec& cluster,
                             const std::string& nccl_release);

// The CSV's columns, in order: its header line, by which a collective CSV is recognised.
const std::vector<std::string>& collective_csv_columns();
bool is_collective_csv(const CsvTable& table);

// One row of a collective CSV read back: what its figures need.
struct CollectiveCsvRow {
  std::string op;        // allgather, reducescatter, allreduce, sendrecv
  int nodes = 0;
  int ranks = 0;
  double size_bytes = 0;
  double busbw_bytes_per_s = 0;
  std::string algorithm;
};

// The rows of a collective CSV (is_collective_csv(table)); a field that is not a positive number
// is an error naming the file, line, column and value.
Expected<std::vector<CollectiveCsvRow>> read_collective_csv(const CsvTable& table);

}  // namespace commbound::sim
