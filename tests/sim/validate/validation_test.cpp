// Validation against measurements (sim/report/validation.hpp, sim/validate/validation_run.hpp),
// on hand-made points: the error's sign (positive: the model is optimistic), the band summary's
// medians and maximum worked out by hand, the band edges, which sweeps get a figure, a reference
// table's special words, and the refusal when no point matches the scenario's GPU.
#include "sim/report/validation.hpp"
#include "sim/validate/validation_run.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace commbound::sim {
namespace {

namespace fs = std::filesystem;
constexpr double kMiB = 1 << 20;
constexpr double kGB = 1e9;

// A measured point of `series` and its simulation: measured 100 GB/s, simulated `ratio` times that.
ValidationRow row(const std::string& series, network::CollectiveOp op, int nodes, double size_bytes, double ratio,
                  const std::string& excluded = "") {
  ValidationRow r;
  r.published.series = series;
  r.published.point.op = op;
  r.published.point.nodes = nodes;
  r.published.point.size_bytes = size_bytes;
  r.published.busbw_bytes_per_s = 100 * kGB;
  r.simulated = network::SweepRow{};
  r.simulated.bus_bw_bytes_per_s = ratio * 100 * kGB;
  r.excluded = excluded;
  return r;
}

// Simulated 110 GB/s where 100 GB/s was measured: the model is 10% optimistic, error +0.10; the
// other way round 90 GB/s is -0.10.
TEST(ValidationRow, ErrorIsSimulatedOverMeasuredMinusOne) {
  const ValidationRow fast = row("s", network::CollectiveOp::all_reduce, 1, 64 * kMiB, 1.10);
  EXPECT_NEAR(fast.ratio(), 1.10, 1e-12);
  EXPECT_NEAR(fast.error(), +0.10, 1e-12);
  EXPECT_NEAR(row("s", network::CollectiveOp::all_reduce, 1, 64 * kMiB, 0.90).error(), -0.10, 1e-12);
}

// Three 1-node AllReduce points of 64 MiB at errors +0.10, -0.20, +0.05: median error +0.05
// (the middle of -0.20, +0.05, +0.10), median |error| 0.10 (of 0.05, 0.10, 0.20), max 0.20. One
// 8-node AllGather of 8 MiB at -0.30 is a band of its own. An excluded point at +2.00 is in no
// band. Then a row per node band, and "all" over the four counted errors: median |error| the mean
// of the middle two of 0.05, 0.10, 0.20, 0.30 = 0.15, median error the mean of -0.20 and +0.05 =
// -0.075, max 0.30.
TEST(Summarise, TakesMediansPerBandThenPerNodeCountThenOverAll) {
  using network::CollectiveOp;
  const std::vector<ValidationRow> rows = {
      row("a", CollectiveOp::all_reduce, 1, 64 * kMiB, 1.10), row("a", CollectiveOp::all_reduce, 1, 64 * kMiB, 0.80),
      row("a", CollectiveOp::all_reduce, 1, 64 * kMiB, 1.05), row("b", CollectiveOp::all_gather, 8, 8 * kMiB, 0.70),
      row("c", CollectiveOp::all_reduce, 1, 64 * kMiB, 3.00, "a busbw no healthy fabric reaches")};
  const std::vector<BandSummary> bands = summarise(rows);
  ASSERT_EQ(bands.size(), 5u);
  auto expect_band = [](const BandSummary& b, const std::string& nodes, const std::string& family,
                        const std::string& size, int points, double median_abs, double max_abs, double median) {
    EXPECT_EQ(b.nodes, nodes);
    EXPECT_EQ(b.family, family);
    EXPECT_EQ(b.size, size);
    EXPECT_EQ(b.points, points);
    EXPECT_NEAR(b.median_abs_error, median_abs, 1e-12) << nodes << " " << family;
    EXPECT_NEAR(b.max_abs_error, max_abs, 1e-12) << nodes << " " << family;
    EXPECT_NEAR(b.median_error, median, 1e-12) << nodes << " " << family;
  };
  expect_band(bands[0], "1", "AllReduce", "32 MiB - 1 GiB", 3, 0.10, 0.20, +0.05);
  expect_band(bands[1], "8-32", "AllGather/ReduceScatter", "< 32 MiB", 1, 0.30, 0.30, -0.30);
  expect_band(bands[2], "1", "all", "all", 3, 0.10, 0.20, +0.05);
  expect_band(bands[3], "8-32", "all", "all", 1, 0.30, 0.30, -0.30);
  expect_band(bands[4], "all", "all", "all", 4, 0.15, 0.30, -0.075);
}

// The band edges: 1 node alone; 2 to 4; 8 to 32 (5 included, a count between the published ones);
// 64 and up. Sizes below 32 MiB, 32 MiB to 1 GiB both included, above 1 GiB.
TEST(Bands, SplitAtTheirEdges) {
  const std::vector<std::pair<int, std::string>> nodes = {{1, "1"},    {2, "2-4"},   {4, "2-4"}, {5, "8-32"},
                                                          {32, "8-32"}, {33, "64+"}, {512, "64+"}};
  for (const auto& [n, band] : nodes) EXPECT_EQ(nodes_band(n), band) << n;
  const std::vector<std::pair<double, std::string>> sizes = {{32 * kMiB - 1, "< 32 MiB"},
                                                             {32 * kMiB, "32 MiB - 1 GiB"},
                                                             {1024 * kMiB, "32 MiB - 1 GiB"},
                                                             {1024 * kMiB + 1, "> 1 GiB"}};
  for (const auto& [s, band] : sizes) EXPECT_EQ(size_band(s), band) << s;
  EXPECT_EQ(op_family(network::CollectiveOp::reduce_scatter), "AllGather/ReduceScatter");
}

// A figure per measured sweep of three points or more, numbered in the order the sweeps are first
// read: sweep a (3 points) is 01, b (2 points) gets none, c (4 points, AllReduce on 2 nodes) is 02.
// Without a folder, no figure.
TEST(SeriesFigures, NumberTheSweepsOfThreePointsOrMore) {
  std::vector<PublishedPoint> points;
  auto add = [&](const std::string& series, network::CollectiveOp op, int nodes, int n) {
    for (int i = 0; i < n; ++i) {
      PublishedPoint p;
      p.series = series;
      p.point.op = op;
      p.point.nodes = nodes;
      points.push_back(p);
    }
  };
  add("a", network::CollectiveOp::all_gather, 1, 3);
  add("b", network::CollectiveOp::all_gather, 1, 2);
  add("c", network::CollectiveOp::all_reduce, 2, 4);
  const std::vector<SeriesFigure> figures = series_figures(points, "figs");
  ASSERT_EQ(figures.size(), 2u);
  EXPECT_EQ(figures[0].series, "a");
  EXPECT_EQ(figures[0].path, (fs::path("figs") / "01-allgather-1n.png").string());
  EXPECT_EQ(figures[1].series, "c");
  EXPECT_EQ(figures[1].path, (fs::path("figs") / "02-allreduce-2n.png").string());
  EXPECT_TRUE(series_figures(points, "").empty());
}

// A sweep's figure: measured and simulated busbw in GB/s against the size, only that sweep's points.
TEST(SeriesPlot, DrawsMeasuredBesideSimulatedOfOneSweep) {
  std::vector<ValidationRow> rows = {row("a", network::CollectiveOp::all_reduce, 1, 64 * kMiB, 1.10),
                                     row("b", network::CollectiveOp::all_reduce, 1, 64 * kMiB, 0.50),
                                     row("a", network::CollectiveOp::all_reduce, 1, 128 * kMiB, 0.90)};
  const LinePlot plot = series_plot(rows, "a");
  EXPECT_TRUE(plot.x_bytes);
  ASSERT_EQ(plot.series.size(), 2u);
  using Points = std::vector<std::pair<double, double>>;
  EXPECT_EQ(plot.series[0].points, (Points{{64 * kMiB, 100}, {128 * kMiB, 100}}));
  ASSERT_EQ(plot.series[1].points.size(), 2u);
  EXPECT_NEAR(plot.series[1].points[0].second, 110, 1e-9);
  EXPECT_NEAR(plot.series[1].points[1].second, 90, 1e-9);
}

// The published table's special words: "multi" nodes is simulated at kMultiNodes, "large" bytes
// at kLargeBytes (8 GiB); busbw 100 GB/s is 1e11 bytes per second; "any" forces no algorithm.
TEST(ReadReference, ReadsThePublishedTablesSpecialWords) {
  const std::string path = ::testing::TempDir() + "published.csv";
  std::ofstream(path) << "gpu,nodes,gpus_per_node,collective,algorithm,bytes,busbw_GBps,source\n"
                         "H100,multi,8,allreduce,any,large,100,https://example.org\n"
                         "H100,2,8,allgather,ring,1073741824,350.5,https://example.org\n";
  auto points = read_reference(path);
  ASSERT_TRUE(points) << points.error().message;
  ASSERT_EQ(points->size(), 2u);
  EXPECT_EQ((*points)[0].point.nodes, kMultiNodes);
  EXPECT_DOUBLE_EQ((*points)[0].point.size_bytes, kLargeBytes);
  EXPECT_DOUBLE_EQ((*points)[0].busbw_bytes_per_s, 100e9);
  EXPECT_FALSE((*points)[0].point.algorithm);
  EXPECT_EQ((*points)[1].point.algorithm, network::Algorithm::ring);
  EXPECT_EQ((*points)[1].line, 3);
}

// The optional nccl_net column: "Libfabric" (an EFA run), empty or absent is IB; anything else is
// refused naming the file, line and value. The optional nccl_version column is kept as written.
TEST(ReadReference, ReadsTheTransportColumn) {
  const std::string path = ::testing::TempDir() + "transport.csv";
  std::ofstream(path) << "gpu,nodes,gpus_per_node,collective,algorithm,bytes,busbw_GBps,source,nccl_net,nccl_version\n"
                         "H100,8,8,allgather,default,33554432,46.29,aws,Libfabric,2.27.7\n"
                         "H100,8,8,allgather,default,33554432,80,ib,,\n";
  auto points = read_reference(path);
  ASSERT_TRUE(points) << points.error().message;
  ASSERT_EQ(points->size(), 2u);
  EXPECT_EQ((*points)[0].nccl_net, network::NcclNet::libfabric);
  EXPECT_EQ((*points)[1].nccl_net, network::NcclNet::ib);
  EXPECT_EQ((*points)[0].nccl_version, "2.27.7");
  EXPECT_EQ((*points)[1].nccl_version, "");
  std::ofstream(path) << "gpu,nodes,gpus_per_node,collective,algorithm,bytes,busbw_GBps,source,nccl_net\n"
                         "H100,8,8,allgather,default,33554432,46.29,aws,EFA\n";
  auto bad = read_reference(path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, path + ":2: nccl_net = \"EFA\": expected IB or Libfabric");
}

// The optional node_gpus column: a run on 1 of each node's 8 GPUs is a point of 8-GPU nodes,
// simulated on the first GPU of each (SweepPoint::gpus_per_node 1); fewer than the run's GPUs per
// node is refused.
TEST(ReadReference, ReadsTheNodesGpusColumn) {
  const std::string path = ::testing::TempDir() + "node_gpus.csv";
  std::ofstream(path) << "gpu,nodes,gpus_per_node,collective,algorithm,bytes,busbw_GBps,source,nccl_net,node_gpus\n"
                         "H100,10,1,allgather,default,1073741760,46.89,log,,8\n"
                         "H100,10,8,allgather,default,1073741760,300,log,,\n";
  auto points = read_reference(path);
  ASSERT_TRUE(points) << points.error().message;
  ASSERT_EQ(points->size(), 2u);
  EXPECT_EQ((*points)[0].gpus_per_node, 1);
  EXPECT_EQ((*points)[0].node_gpus, 8);
  EXPECT_EQ((*points)[0].point.gpus_per_node, 1);
  EXPECT_EQ((*points)[1].node_gpus, 0);
  EXPECT_EQ((*points)[1].point.gpus_per_node, 0);
  Scenario sc;
  sc.cluster.node.gpu = "H100-SXM5-80GB";
  sc.cluster.node.gpus = 8;
  EXPECT_EQ(points_on(*points, sc)->size(), 2u);
  std::ofstream(path) << "gpu,nodes,gpus_per_node,collective,algorithm,bytes,busbw_GBps,source,nccl_net,node_gpus\n"
                         "H100,10,4,allgather,default,1073741760,46.89,log,,2\n";
  auto bad = read_reference(path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, path + ":2: node_gpus = 2: expected gpus_per_node (4) to 1024");
}

// Across nodes a point checks only a scenario whose link NCCL runs over the same transport: an EFA
// run is not an InfiniBand fabric's measurement. Inside one node the network plays no part, so a
// one-node point checks either.
TEST(PointsOn, KeepMultiNodePointsOfTheLinksTransportOnly) {
  Scenario ib;
  ib.cluster.node.gpu = "H100-SXM5-80GB";
  ib.cluster.node.gpus = 8;
  Scenario efa = ib;
  efa.cluster.fabric.link.nccl_net = network::NcclNet::libfabric;
  PublishedPoint one_node, ib_run, efa_run;
  for (PublishedPoint* p : {&one_node, &ib_run, &efa_run}) {
    p->gpu = "H100";
    p->gpus_per_node = 8;
    p->point.nodes = 8;
  }
  one_node.point.nodes = 1;
  one_node.nccl_net = network::NcclNet::libfabric;
  efa_run.nccl_net = network::NcclNet::libfabric;
  auto count = [](const Expected<std::vector<PublishedPoint>>& kept) { return kept ? kept->size() : 0u; };
  EXPECT_EQ(count(points_on({one_node, ib_run, efa_run}, ib)), 2u);   // one_node, ib_run
  EXPECT_EQ(count(points_on({one_node, ib_run, efa_run}, efa)), 2u);  // one_node, efa_run
  EXPECT_FALSE(points_on({ib_run}, efa));
}

// Reference points as logs for fit-fabric. An AllGather on 2 nodes x 8 GPUs (16 ranks) of 32 MiB at
// busbw 131.30 GB/s: algbw = busbw x 16/15 = 140.0533 GB/s (nccl-tests' factor (n-1)/n undone), time
// = 33554432 B / 140.0533 GB/s = 239.58 us. Two sizes of one series make one log of two rows; a
// multi-node point of another transport than the fit's, or one without its GPUs per node, is refused.
TEST(LogsFromPoints, UndoTheBusFactorOneLogPerSeries) {
  PublishedPoint a;
  a.gpu = "H100";
  a.gpus_per_node = 8;
  a.point = {network::CollectiveOp::all_gather, 2, 32 * kMiB, std::nullopt, std::nullopt};
  a.busbw_bytes_per_s = 131.30 * kGB;
  a.series = "aws 2 nodes";
  a.nccl_net = network::NcclNet::libfabric;
  a.file = "efa.csv";
  a.line = 7;
  a.nccl_version = "2.27.7";
  PublishedPoint b = a;
  b.point.size_bytes = 64 * kMiB;
  auto logs = logs_from_points({a, b}, network::NcclNet::libfabric);
  ASSERT_TRUE(logs) << logs.error().message;
  ASSERT_EQ(logs->size(), 1u);
  const network::NcclTestsLog& log = logs->front();
  EXPECT_EQ(log.ranks, 16);
  EXPECT_EQ(log.nodes, 2);
  EXPECT_EQ(log.op, network::CollectiveOp::all_gather);
  EXPECT_EQ(log.nccl_version, "2.27.7");
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_NEAR(log.rows[0].out_of_place.alg_bw_bytes_per_s, 140.0533e9, 1e5);
  EXPECT_NEAR(log.rows[0].out_of_place.time_s, 239.58e-6, 0.01e-6);
  EXPECT_EQ(log.rows[0].line, 7);

  auto other = logs_from_points({a}, network::NcclNet::ib);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().message,
            "efa.csv:7: nccl_net = \"Libfabric\": measured over another transport than the scenario's link (IB)");
  a.gpus_per_node = 0;
  ASSERT_FALSE(logs_from_points({a}, network::NcclNet::libfabric));
}

// Only points on the scenario's GPU (by prefix: "H100" matches "H100-SXM5-80GB") and node shape
// are simulated; none is an error naming both. The largest node count sizes the cluster.
TEST(PointsOn, KeepThePointsOfTheScenariosGpuOrSayNone) {
  Scenario sc;
  sc.cluster.node.gpu = "H100-SXM5-80GB";
  sc.cluster.node.gpus = 8;
  PublishedPoint h100, a100, four_gpus;
  h100.gpu = "H100";
  h100.gpus_per_node = 8;
  h100.point.nodes = 16;
  a100.gpu = "A100";
  four_gpus.gpu = "H100";
  four_gpus.gpus_per_node = 4;
  auto kept = points_on({h100, a100, four_gpus}, sc);
  ASSERT_TRUE(kept) << kept.error().message;
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ(largest_node_count(*kept), 16);
  auto none = points_on({a100, four_gpus}, sc);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "no measured point on GPU H100-SXM5-80GB with 8 GPUs per node");
}

}  // namespace
}  // namespace commbound::sim
