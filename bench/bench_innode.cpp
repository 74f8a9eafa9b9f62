// Accuracy inside one node: real nccl-tests runs on 2, 4, 6 and 8 GPUs of an 8-GPU H100 NVSwitch
// node (calibration/reference/in-node/logs.toml, each log with its source) against the same
// collectives simulated on the first K GPUs of one node of a scenario's cluster, each group its own
// communicator as in the measurement. A tensor-, context- or expert-parallel group of a training run
// is such a group; its collectives are priced by this model.
//
// For every measured row of >= 1 MiB it prints the measured busbw, the simulated busbw with the
// algorithm and protocol NCCL's tuner picked in the model (or the one the run forced), and the error
// (simulated / measured - 1: positive is optimistic); then the median and largest |error| per
// (GPUs, collective, algorithm as run, size band). --markdown prints the same as the tables of
// docs/accuracy.md's in-node section. Asserts nothing.
//
//   build/bin/bench_innode [--markdown] [SCENARIO.toml] [LOGS.toml]
//     (defaults: scenarios/examples/dgx-h100-ib-ndr.toml and the shipped manifest)
#include "network/nccl_tests.hpp"
#include "network/nccl_tests_log.hpp"
#include "sim/scenario/presets.hpp"
#include "sim/scenario/scenario.hpp"

#include <fmt/format.h>
#include <gsl/gsl_statistics_double.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

using namespace commbound;

namespace {

constexpr double kMinBytes = 1 << 20;  // below 1 MiB a run measures launch latency, not the fabric
constexpr double kMiB = 1 << 20;
constexpr double kGiB = 1 << 30;

struct Row {
  std::string log;        // the log's file name
  int gpus = 0;
  network::CollectiveOp op{};
  std::string as_run;     // "NCCL's choice" or the forced algorithm
  double size_bytes = 0;
  double measured_bus_bw_bytes_per_s = 0;
  double simulated_bus_bw_bytes_per_s = 0;
  network::CollectiveChoice simulated_choice;
  double error() const { return simulated_bus_bw_bytes_per_s / measured_bus_bw_bytes_per_s - 1; }
};

std::string size_text(double bytes) {
  return bytes >= kGiB ? fmt::format("{:g} GiB", bytes / kGiB) : fmt::format("{:g} MiB", bytes / kMiB);
}

std::string size_band(double bytes) {
  return bytes < 32 * kMiB ? "< 32 MiB" : (bytes <= kGiB ? "32 MiB - 1 GiB" : "> 1 GiB");
}

std::string choice_text(network::CollectiveOp op, const network::CollectiveChoice& c) {
  return fmt::format("{}/{}", network::algorithm_label(op, c.algorithm), network::to_string(c.protocol));
}

}  // namespace

int main(int argc, char** argv) {
  bool markdown = false;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--markdown") {
      markdown = true;
    } else {
      paths.push_back(arg);
    }
  }
  const sim::Presets presets(sim::default_calibration_dir());
  const std::string scenario_path =
      paths.size() > 0 ? paths[0] : (sim::default_data_dir() / "scenarios/examples/dgx-h100-ib-ndr.toml").string();
  const std::string manifest = paths.size() > 1 ? paths[1] : (presets.dir() / "reference/in-node/logs.toml").string();
  auto scenario = sim::load_scenario(scenario_path, {"cluster.nodes=1"}, presets);
  if (!scenario) {
    std::fprintf(stderr, "bench_innode: %s\n", scenario.error().message.c_str());
    return 1;
  }
  auto logs = network::read_nccl_tests_logs({manifest}, {});
  if (!logs) {
    std::fprintf(stderr, "bench_innode: %s\n", logs.error().message.c_str());
    return 1;
  }
  std::vector<network::SweepPoint> points;
  std::vector<Row> rows;
  for (const network::NcclTestsLog& log : *logs) {
    if (!log.op || log.nodes != 1) continue;
    for (const network::NcclTestsRow& r : log.rows) {
      if (r.size_bytes < kMinBytes) continue;
      points.push_back({*log.op, 1, r.size_bytes, log.algorithm, std::nullopt, log.ranks});
      rows.push_back({std::filesystem::path(log.path).filename().string(), log.ranks, *log.op,
                      log.algorithm ? std::string(network::to_string(*log.algorithm)) + " (forced)" : "NCCL's choice",
                      r.size_bytes, r.out_of_place.bus_bw_bytes_per_s, 0, {}});
    }
  }
  auto platform = network::Platform::create(scenario->cluster);
  if (!platform) {
    std::fprintf(stderr, "bench_innode: %s\n", platform.error().message.c_str());
    return 1;
  }
  auto simulated = network::run_points(**platform, scenario->nccl, points, network::Fidelity::fluid, {});
  if (!simulated) {
    std::fprintf(stderr, "bench_innode: %s\n", simulated.error().message.c_str());
    return 1;
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].simulated_bus_bw_bytes_per_s = (*simulated)[i].bus_bw_bytes_per_s;
    rows[i].simulated_choice = (*simulated)[i].result.choice;
  }

  const std::string header = fmt::format(
      "{} inside one {} node ({}), NCCL {} model{}; measured: out-of-place busbw of {}",
      "Collectives of K GPUs", scenario->cluster.node.name, scenario->cluster.node.gpu, scenario->nccl.release,
      scenario->cluster.fabric.fit ? ", fabric fit " + scenario->cluster.fabric.fit->name : "", manifest);
  if (markdown) {
    std::printf("| GPUs | collective | as run | size | measured busbw (GB/s) | simulated busbw (GB/s) | simulated as | error | log |\n");
    std::printf("|---:|---|---|---:|---:|---:|---|---:|---|\n");
  } else {
    std::printf("# %s\n", header.c_str());
    std::printf("%4s %-14s %-14s %9s %10s %10s %-14s %8s  %s\n", "GPUs", "collective", "as run", "size", "measured",
                "simulated", "simulated as", "error", "log");
  }
  for (const Row& r : rows) {
    const std::string line =
        markdown ? fmt::format("| {} | {} | {} | {} | {:.1f} | {:.1f} | {} | {:+.1f}% | {} |", r.gpus,
                               network::to_string(r.op), r.as_run, size_text(r.size_bytes),
                               r.measured_bus_bw_bytes_per_s / 1e9, r.simulated_bus_bw_bytes_per_s / 1e9,
                               choice_text(r.op, r.simulated_choice), 100 * r.error(), r.log)
                 : fmt::format("{:4d} {:<14} {:<14} {:>9} {:10.1f} {:10.1f} {:<14} {:+7.1f}%  {}", r.gpus,
                               network::to_string(r.op), r.as_run, size_text(r.size_bytes),
                               r.measured_bus_bw_bytes_per_s / 1e9, r.simulated_bus_bw_bytes_per_s / 1e9,
                               choice_text(r.op, r.simulated_choice), 100 * r.error(), r.log);
    std::printf("%s\n", line.c_str());
  }

  // Per (GPUs, collective, as run, size band): median and largest |error|, median signed error.
  std::map<std::tuple<int, std::string, std::string, int, std::string>, std::vector<double>> bands;
  for (const Row& r : rows) {
    const int band_order = r.size_bytes < 32 * kMiB ? 0 : (r.size_bytes <= kGiB ? 1 : 2);
    bands[{r.gpus, network::to_string(r.op), r.as_run, band_order, size_band(r.size_bytes)}].push_back(r.error());
  }
  std::printf(markdown ? "\n| GPUs | collective | as run | size | points | median \\|err\\| | max \\|err\\| | median error |\n"
                         "|---:|---|---|---|---:|---:|---:|---:|\n"
                       : "\n# by band: median |error|, max |error|, median error\n");
  for (auto& [key, errors] : bands) {
    const auto& [gpus, op, as_run, order, band] = key;
    std::vector<double> abs_errors;
    for (double e : errors) abs_errors.push_back(std::abs(e));
    std::sort(errors.begin(), errors.end());
    std::sort(abs_errors.begin(), abs_errors.end());
    const double median_abs = gsl_stats_median_from_sorted_data(abs_errors.data(), 1, abs_errors.size());
    const double median = gsl_stats_median_from_sorted_data(errors.data(), 1, errors.size());
    const std::string line =
        markdown ? fmt::format("| {} | {} | {} | {} | {} | {:.1f}% | {:.1f}% | {:+.1f}% |", gpus, op, as_run, band,
                               errors.size(), 100 * median_abs, 100 * abs_errors.back(), 100 * median)
                 : fmt::format("{:4d} {:<14} {:<14} {:<15} {:3d} points  {:5.1f}% {:5.1f}% {:+6.1f}%", gpus, op,
                               as_run, band, errors.size(), 100 * median_abs, 100 * abs_errors.back(), 100 * median);
    std::printf("%s\n", line.c_str());
  }
  return 0;
}
