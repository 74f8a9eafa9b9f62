// Results figures (sim/report/results_figures.hpp): which figures `commbound plot` draws from a
// results CSV, checked as data without gnuplot. Every expected number is worked out by hand from the
// few rows each test writes: the ideal line from the smallest run's per-GPU rate, the breakdown's
// four parts from compute, communication and exposed time.
#include "sim/report/csv_table.hpp"
#include "sim/report/plot.hpp"
#include "sim/report/results_figures.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

namespace commbound::sim {
namespace {

namespace fs = std::filesystem;

// The columns plot reads, in the order `commbound run --format csv` writes a subset of them.
const std::string kHeader =
    "scenario,gpus,iteration_s,tokens_per_s,tokens_per_s_per_gpu,mfu,compute_s,comm_s,exposed_comm_s,"
    "power_w_per_gpu,tokens_per_joule,oom\n";

CsvTable table_of(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  auto table = read_csv_table(path);
  EXPECT_TRUE(table) << table.error().message;
  return *table;
}

std::vector<std::string> names_of(const std::vector<Figure>& figures) {
  std::vector<std::string> names;
  for (const Figure& f : figures) names.push_back(f.name);
  return names;
}

const Figure& figure(const std::vector<Figure>& figures, const std::string& name) {
  for (const Figure& f : figures) {
    if (f.name == name) return f;
  }
  ADD_FAILURE() << "no figure " << name;
  return figures.front();
}

// An out-of-memory row has empty timing fields (it was not simulated): it is counted, not read,
// and the points keep the file's order.
TEST(RunPoints, SkipAndCountAnOutOfMemoryRow) {
  const CsvTable t = table_of("oom.csv", kHeader +
                                             "parallel.tp=1,8,1.0,80000,10000,0.45,0.9,0.2,0.05,600,16.7,0\n"
                                             "parallel.tp=8,8,,,,,,,,,,1\n"
                                             "parallel.tp=2,8,0.8,100000,12500,0.5,0.7,0.3,0.1,650,19.2,0\n");
  auto run = read_run_points(t);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->oom_rows, 1);
  ASSERT_EQ(run->points.size(), 2u);
  EXPECT_EQ(run->points[0].name, "parallel.tp=1");
  EXPECT_EQ(run->points[1].name, "parallel.tp=2");
  EXPECT_DOUBLE_EQ(run->points[1].tokens_per_s_per_gpu, 12500);
  EXPECT_DOUBLE_EQ(run->points[1].exposed_s, 0.1);
  EXPECT_DOUBLE_EQ(run->points[1].power_w, 650);
}

// A number that is not one is an error naming the file, its line and the column.
TEST(RunPoints, NameTheFileLineAndColumnOfABadNumber) {
  const CsvTable t = table_of("bad.csv", kHeader + "a,eight,1.0,80000,10000,0.45,0.9,0.2,0.05,600,16.7,0\n");
  auto run = read_run_points(t);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().message.rfind(t.path + ":2: gpus = \"eight\"", 0), 0u) << run.error().message;
}

// One point per GPU count (8, 16, 32 GPUs, written out of order): a scaling sweep. Its figures are
// throughput, per_gpu, mfu, power, energy and the breakdown; the lines run in GPU order and the
// ideal line is the smallest run's 10000 tokens/s per GPU times the GPUs: 80000, 160000, 320000.
TEST(ResultsFigures, AScalingSweepGetsThroughputBesideTheIdealLine) {
  const CsvTable t = table_of("weak.csv", kHeader +
                                              "cluster.nodes=4,32,1.1,288000,9000,0.40,0.9,0.3,0.2,620,14.5,0\n"
                                              "cluster.nodes=1,8,1.0,80000,10000,0.45,0.9,0.2,0.1,600,16.7,0\n"
                                              "cluster.nodes=2,16,1.05,152000,9500,0.42,0.9,0.25,0.15,610,15.6,0\n");
  auto figures = results_figures(t, "weak");
  ASSERT_TRUE(figures) << figures.error().message;
  EXPECT_EQ(figures->oom_rows, 0);
  EXPECT_EQ(names_of(figures->figures),
            (std::vector<std::string>{"throughput", "per_gpu", "mfu", "power", "energy", "breakdown"}));
  const auto& throughput = std::get<LinePlot>(figure(figures->figures, "throughput").plot);
  EXPECT_TRUE(throughput.log_x);
  EXPECT_TRUE(throughput.log_y);
  ASSERT_EQ(throughput.series.size(), 2u);
  using Points = std::vector<std::pair<double, double>>;
  EXPECT_EQ(throughput.series[0].points, (Points{{8, 80000}, {16, 152000}, {32, 288000}}));
  EXPECT_EQ(throughput.series[1].points, (Points{{8, 80000}, {16, 160000}, {32, 320000}}));
  // MFU is drawn in percent: 0.45 -> 45.
  const auto& mfu = std::get<LinePlot>(figure(figures->figures, "mfu").plot);
  EXPECT_DOUBLE_EQ(mfu.series[0].points[0].second, 45);
}

// Points of one scale (three layouts at 64 GPUs) get per-GPU bars and the breakdown, whose four
// parts add up to the iteration. For iteration 0.8 s, compute 0.6 s, communication 0.3 s of which
// 0.1 s exposed: 0.2 s overlapped, so compute alone 0.6 - 0.2 = 0.4 s, exposed 0.1 s and idle
// 0.8 - 0.6 - 0.1 = 0.1 s.
TEST(ResultsFigures, PointsOfOneScaleGetBarsAndTheBreakdown) {
  const CsvTable t = table_of("layouts.csv", kHeader +
                                                 "parallel.tp=1,64,0.8,640000,10000,0.45,0.6,0.3,0.1,600,16.7,0\n"
                                                 "parallel.tp=2,64,0.9,576000,9000,0.40,0.6,0.4,0.2,600,15.0,0\n"
                                                 "parallel.tp=4,64,1.0,512000,8000,0.36,0.6,0.5,0.3,600,13.3,0\n");
  auto figures = results_figures(t, "tp");
  ASSERT_TRUE(figures) << figures.error().message;
  EXPECT_EQ(names_of(figures->figures), (std::vector<std::string>{"per_gpu", "breakdown"}));
  const auto& per_gpu = std::get<BarPlot>(figure(figures->figures, "per_gpu").plot);
  EXPECT_EQ(per_gpu.title, "tp: throughput per GPU (64 GPUs)");
  EXPECT_EQ(per_gpu.categories, (std::vector<std::string>{"tp=1", "tp=2", "tp=4"}));
  const auto& breakdown = std::get<BarPlot>(figure(figures->figures, "breakdown").plot);
  ASSERT_EQ(breakdown.stacks.size(), 4u);
  EXPECT_NEAR(breakdown.stacks[0].values[0], 0.4, 1e-12);  // compute alone
  EXPECT_NEAR(breakdown.stacks[1].values[0], 0.2, 1e-12);  // communication overlapped with compute
  EXPECT_NEAR(breakdown.stacks[2].values[0], 0.1, 1e-12);  // communication exposed
  EXPECT_NEAR(breakdown.stacks[3].values[0], 0.1, 1e-12);  // idle
  double total = 0;
  for (const BarStack& s : breakdown.stacks) total += s.values[0];
  EXPECT_NEAR(total, 0.8, 1e-12);
}

// A sweep over cluster.nodes beside fabric.link is two scaling series: a line each, named by the
// link alone, and the breakdown of the two at their largest scale (4 nodes of 8: 32 GPUs).
TEST(ResultsFigures, ASweepOverNodesAndAnotherKeyGetsALinePerSeries) {
  std::string csv = kHeader;
  for (const char* link : {"ib-ndr", "roce-400g"}) {
    for (int nodes : {2, 4}) {
      csv += "fabric.link=" + std::string(link) + " cluster.nodes=" + std::to_string(nodes) + "," +
             std::to_string(8 * nodes) + ",0.7,96000,12000,0.55,0.66,0.2,0.02,670,18,0\n";
    }
  }
  auto figures = results_figures(table_of("series.csv", csv), "fabrics");
  ASSERT_TRUE(figures) << figures.error().message;
  EXPECT_EQ(names_of(figures->figures), (std::vector<std::string>{"per_gpu", "mfu", "exposed", "breakdown"}));
  const auto& per_gpu = std::get<LinePlot>(figure(figures->figures, "per_gpu").plot);
  ASSERT_EQ(per_gpu.series.size(), 2u);
  EXPECT_EQ(per_gpu.series[0].title, "link=ib-ndr");
  EXPECT_EQ(per_gpu.series[1].title, "link=roce-400g");
  const auto& breakdown = std::get<BarPlot>(figure(figures->figures, "breakdown").plot);
  EXPECT_EQ(breakdown.title, "fabrics: where the iteration goes");
  EXPECT_EQ(breakdown.y_label, "seconds per iteration, at 32 GPUs");
  EXPECT_EQ(breakdown.categories, (std::vector<std::string>{"link=ib-ndr", "link=roce-400g"}));
}

// Every row out of memory, or a run file without a column plot needs: nothing to draw, one line
// naming the file.
TEST(ResultsFigures, RefuseAFileWithNothingToDraw) {
  const CsvTable oom = table_of("all_oom.csv", kHeader + "a,8,,,,,,,,,,1\nb,16,,,,,,,,,,1\n");
  auto none = results_figures(oom, "t");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, oom.path + ": no simulated point to plot (every row is out of memory)");
  const CsvTable narrow = table_of("narrow.csv", "scenario,gpus\na,8\n");
  auto missing = results_figures(narrow, "t");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            narrow.path + ": no column oom (plot reads what `commbound run --format csv` writes)");
}

// A collective CSV at two node counts and one size draws busbw against nodes only, a line per size
// titled with the algorithm NCCL ran ("1 MiB (ring)"), at the file's busbw in GB/s; one node count
// and one size draw nothing and say so.
TEST(ResultsFigures, ACollectiveCsvGetsTheFiguresItsAxesVaryIn) {
  const std::string header = "op,nodes,ranks,bytes,time_us,algbw_GBps,busbw_GBps,algorithm,protocol,fidelity\n";
  const CsvTable t = table_of("ag_nodes.csv", header + "allgather,2,16,1048576,40.0,26.2,24.6,ring,LL,fluid\n"
                                                       "allgather,1,8,1048576,20.0,52.4,45.9,ring,LL,fluid\n");
  auto figures = results_figures(t, "ag");
  ASSERT_TRUE(figures) << figures.error().message;
  EXPECT_EQ(names_of(figures->figures), (std::vector<std::string>{"busbw_vs_nodes"}));
  const auto& nodes = std::get<LinePlot>(figures->figures[0].plot);
  EXPECT_EQ(nodes.x_label, "nodes (8 GPUs each)");
  ASSERT_EQ(nodes.series.size(), 1u);
  EXPECT_EQ(nodes.series[0].title, "1 MiB (ring)");
  using Points = std::vector<std::pair<double, double>>;
  const Points expected{{1, 45.9}, {2, 24.6}};  // sorted by node count
  ASSERT_EQ(nodes.series[0].points.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(nodes.series[0].points[i].first, expected[i].first);
    EXPECT_NEAR(nodes.series[0].points[i].second, expected[i].second, 1e-9);
  }
  const CsvTable single = table_of("ag_one.csv", header + "allgather,1,8,1048576,20.0,52.4,45.9,ring,LL,fluid\n");
  auto one = results_figures(single, "ag");
  ASSERT_FALSE(one);
  EXPECT_EQ(one.error().message, single.path + ": one node count and one size: nothing to draw a line through "
                                               "(give --nodes or --bytes several values)");
}

// draw_figures checks every target before drawing the first: an existing second figure refuses
// the whole set, and the first is not drawn (so no gnuplot is needed to see it).
TEST(DrawFigures, RefuseEveryFigureWhenOneTargetExists) {
  const fs::path dir = fs::path(::testing::TempDir()) / "draw_refused";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "breakdown.svg") << "kept\n";
  const std::vector<Figure> figures = {{"per_gpu", BarPlot{"t", "y", {"a"}, {{"s", {1.0}}}}},
                                       {"breakdown", BarPlot{"t", "y", {"a"}, {{"s", {1.0}}}}}};
  int drawn = 0;
  const Status s = draw_figures(figures, dir.string(), "svg", false, [&](const std::string&) { ++drawn; });
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("breakdown.svg"), std::string::npos) << s.error().message;
  EXPECT_EQ(drawn, 0);
  EXPECT_FALSE(fs::exists(dir / "per_gpu.svg"));
}

}  // namespace
}  // namespace commbound::sim
