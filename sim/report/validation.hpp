// Validation against real nccl-tests measurements: the published points
// (calibration/reference/nccl-tests-published.csv), the collected 1-4-node points
// (calibration/reference/points-1to4-nodes.csv), the public points at 8 nodes and more kept aside
// to check the extrapolation (calibration/reference/nccl-tests-at-scale.csv) and any user's
// nccl-tests log. Each measured point
// whose GPU and GPUs per node match the scenario's node is simulated on the scenario's cluster
// (sim/validate/validation_run.hpp) and reported here beside the measurement, per point and
// summarised by band (node count x collective x size), with a figure per measured sweep. Nothing
// is fitted to these points here.
//
// Error convention: simulated busbw / measured busbw - 1. Positive: the model is optimistic
// (faster than the real fabric). A fit's residuals (calibration/fabric/*.toml) are on time
// instead, simulated / measured - 1, which has the opposite sign.
#pragma once

#include "core/expected.hpp"
#include "network/nccl_tests.hpp"
#include "network/nccl_tests_log.hpp"
#include "sim/report/format.hpp"
#include "sim/report/plot.hpp"
#include "sim/scenario/scenario.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

struct PublishedPoint {
  std::string gpu;            // "H100", "A100"; "" when unknown (a log without '#  Rank' lines)
  int gpus_per_node = 0;      // 0 when unknown
  std::string nodes_text;     // as published ("multi" is simulated at kMultiNodes)
  std::string bytes_text;     // as published ("large" is simulated at kLargeBytes)
  network::SweepPoint point;
  double busbw_bytes_per_s = 0;
  std::string published_algorithm;
  std::string platform;       // the measured system, as its source describes it
  std::string source;         // where it was published (URL or file)
  network::NcclNet nccl_net = network::NcclNet::ib;  // the transport it ran over (column nccl_net; IB when absent)
  int node_gpus = 0;          // the GPUs each measured node has, when the run used fewer (column node_gpus)
  std::string nccl_version;   // as the table gives it (column nccl_version); "" when it does not
  std::string series;         // the points of one measured sweep share it (one log, one figure)
  std::string file;           // where commbound read it, with `line`
  int line = 0;
};

inline constexpr int kMultiNodes = 8;                 // "multi": a multi-node measurement of unstated size
inline constexpr double kLargeBytes = 8589934592.0;   // "large": the top of an nccl-tests sweep (8 GiB)

// Reads a reference table in either of the shipped layouts, told apart by the header:
//   gpu,nodes,gpus_per_node,collective,algorithm,bytes,busbw_GBps,source          (published)
//   source_url,platform,nccl_version,nodes,gpus_per_node,op,bytes,busbw_GBps,...  (collected points)
// The published layout may add a column `nccl_version` (the collected one has it). Either may add a
// column `nccl_net` (`IB` or `Libfabric`, network::NcclNet; empty or absent: IB)
// and a column `node_gpus`: the GPUs each node has when the run used fewer (gpus_per_node of them,
// e.g. one GPU of each 8-GPU node); such a point is simulated on the first gpus_per_node GPUs of
// each node of a scenario whose node has node_gpus.
// Fields may be double-quoted (RFC 4180). Errors name the file, line and field.
Expected<std::vector<PublishedPoint>> read_reference(const std::string& path);

// The out-of-place rows of nccl-tests logs as measured points (one series per log).
std::vector<PublishedPoint> points_from_logs(const std::vector<network::NcclTestsLog>& logs);

// Reference points as nccl-tests logs, one per series, for fit-fabric: each row's time is size /
// algbw, algbw = busbw / nccl-tests' factor. Errors (naming the file and line): a point without
// its GPUs per node, or measured over another transport than `nccl_net` across nodes.
Expected<std::vector<network::NcclTestsLog>> logs_from_points(const std::vector<PublishedPoint>& points,
                                                              network::NcclNet nccl_net);

// The points measured on the scenario's GPU (the node's gpu preset starts with the point's gpu
// name; a point without one matches) on its node shape (node_gpus, else gpus_per_node, or neither
// given) and, across nodes,
// over its link's transport (NCCL_NET): an EFA run checks an EFA scenario, not an InfiniBand one.
std::vector<PublishedPoint> matching(const std::vector<PublishedPoint>& all, const Scenario& scenario);

struct ValidationRow {
  PublishedPoint published;
  network::SweepRow simulated;
  std::string excluded;  // why the point is kept out of the summary ("" when counted)
  double ratio() const { return simulated.bus_bw_bytes_per_s / published.busbw_bytes_per_s; }
  double error() const { return ratio() - 1; }
};

// Marks every point of a measured sweep in which one point no healthy fabric of `cluster`'s
// hardware can produce (network::measurement_issue): listed, but kept out of the summary.
void exclude_unhealthy(std::vector<ValidationRow>& rows, const network::ClusterSpec& cluster);

// The bands a summary groups by: node count, collective family and size, as FSDP and DDP see them.
std::string nodes_band(int nodes);          // "1", "2-4", "8-32", "64+"
std::string size_band(double size_bytes);   // "< 32 MiB", "32 MiB - 1 GiB", "> 1 GiB"
std::string op_family(network::CollectiveOp op);  // "AllReduce", "AllGather/ReduceScatter", "SendRecv"

struct BandSummary {
  std::string nodes, family, size;
  int points = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
  double median_error = 0;  // signed: > 0 optimistic
};

// One summary per band that holds counted points, in (nodes, family, size) order, then "all" rows.
std::vector<BandSummary> summarise(const std::vector<ValidationRow>& rows);

// Every point as a line of a table (gpu, nodes, collective, algo, bytes, published and simulated
// busbw, ratio, the simulated choice, source).
void write_validation(std::ostream& out, const std::vector<ValidationRow>& rows);
// Every point as the sheet formats write it. Columns: gpu,nodes,collective,algorithm,bytes,
// published_busbw_GBps,simulated_busbw_GBps,ratio,simulated_algorithm,simulated_protocol,source,
// error,series,excluded (bytes and nodes as the reference gives them: "large", "multi").
Sheet validation_sheet(const std::vector<ValidationRow>& rows, const std::string& title);
void write_summary(std::ostream& out, const std::vector<BandSummary>& bands);

// docs/accuracy_nccl_tests.md: how to regenerate it (`command`), the band summary, one figure per
// series (`figures`: series -> path relative to the document, "" for none) and every point.
struct SeriesFigure {
  std::string series;
  std::string path;
};
void write_accuracy_markdown(std::ostream& out, const std::vector<ValidationRow>& rows, const Scenario& scenario,
                             const std::string& command, const std::vector<SeriesFigure>& figures);

// One figure per measured sweep of three points or more: `dir`/NN-OP-Nn.png (01-allreduce-2n.png),
// numbered from 01 in the order the sweeps are first read. None when `dir` is empty.
std::vector<SeriesFigure> series_figures(const std::vector<PublishedPoint>& points, const std::string& dir);

// Refuses `dir` (when not empty) unless it is a directory, and any figure that exists unless
// `force`: checked before anything is simulated. Errors name the path.
Status check_series_figures(const std::string& dir, const std::vector<SeriesFigure>& figures, bool force);

// The figure of one measured sweep: measured and simulated busbw (GB/s) against the size (a log2
// bytes axis), titled by the series (cut to 110 characters).
LinePlot series_plot(const std::vector<ValidationRow>& rows, const std::string& series);

// Draws each figure's series_plot into its path and returns the figures with their paths as the
// document at `document` links them (relative to its folder; as given when `document` is empty).
// gnuplot's failure is an error naming the figure.
Expected<std::vector<SeriesFigure>> draw_series_figures(const std::vector<ValidationRow>& rows,
                                                        std::vector<SeriesFigure> figures,
                                                        const std::string& document, bool force);

// What `commbound validate` prints. table: a title naming the scenario, every point, then the error
// by band; csv: every point (write_validation's columns); markdown: the accuracy document
// (write_accuracy_markdown, with `command` and `figures`).
void write_validation_report(std::ostream& out, const std::vector<ValidationRow>& rows, const Scenario& scenario,
                             Format format, const std::string& command,
                             const std::vector<SeriesFigure>& figures);

}  // namespace commbound::sim
