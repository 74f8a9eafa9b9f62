// Results figures: which figures a results CSV gets, chosen by what the file holds, as plot data
// (sim/report/plot.hpp draws them). `commbound plot` is this and draw_figures; tests check the
// choice without gnuplot.
//
// A `commbound run --format csv` file:
//   several scaling sweeps (cluster.nodes beside other keys, a series per other setting): per_gpu,
//     mfu and exposed, a line per series against GPUs, and the breakdown at each series' largest scale;
//   one scaling sweep (one point per GPU count): throughput (beside the ideal line, linear from the
//     smallest run), per_gpu, mfu, power, energy, against GPUs, and the breakdown;
//   points of one scale (layouts, models, sizes): per_gpu bars and the breakdown.
// Out-of-memory rows are left out and counted. A `commbound collective --format csv` file
// (recognised by its header) gets nccl-tests' bus bandwidth against nodes and against size. A
// `commbound train --format csv` file (recognised by its goodput column) gets goodput (closed form
// and Monte Carlo) and the time to train (ideal and with failures) against GPUs.
#pragma once

#include "core/expected.hpp"
#include "sim/report/collective_report.hpp"
#include "sim/report/csv_table.hpp"
#include "sim/report/plot.hpp"

#include <string>
#include <vector>

namespace commbound::sim {

// One simulated point of a run results file, in the file's units: seconds, watts, tokens per
// second; mfu a fraction.
struct RunPoint {
  std::string name;  // the scenario column ("cluster.nodes=4 fabric.link=ib-ndr")
  double gpus = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double power_w = 0;       // power_w_per_gpu
  double tokens_per_j = 0;  // tokens_per_joule
  double iteration_s = 0;
  double compute_s = 0;
  double comm_s = 0;
  double exposed_s = 0;     // exposed_comm_s
};

// The points of a run results file: the rows simulated, and how many were out of memory.
struct RunPoints {
  std::vector<RunPoint> points;  // in the file's order
  int oom_rows = 0;              // rows with oom != 0, not read further
};

// The rows of `table` whose oom is 0, as points. A field that is not a number (or a column that
// is missing) is an error naming the file, line, column and value.
Expected<RunPoints> read_run_points(const CsvTable& table);

// The figures of run points (not empty), titled `title`, in the order listed above.
std::vector<Figure> run_figures(const std::vector<RunPoint>& points, const std::string& title);

// The figures of a collective CSV's rows, in nccl-tests' bus bandwidth (GB/s): busbw_vs_nodes (a
// line per op and size, log2 node axis) when they hold several node counts, busbw_vs_size (a line
// per op and node count, log2 size axis) when they hold several sizes; none otherwise.
std::vector<Figure> collective_figures(const std::vector<CollectiveCsvRow>& rows, const std::string& title);

struct ResultsFigures {
  std::vector<Figure> figures;
  int oom_rows = 0;  // run results: the out-of-memory rows left out
};

// The figures of `table`, a run, a collective or a train results file. Errors name the file: a column a
// run file needs is missing, a number is not one, every row is out of memory, or a collective file
// holds one node count and one size (nothing to draw a line through).
Expected<ResultsFigures> results_figures(const CsvTable& table, const std::string& title);

}  // namespace commbound::sim
