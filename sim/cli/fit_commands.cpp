// commbound fit-fabric: real nccl-tests logs in, calibration/fabric/<name>.toml out.
#include "sim/cli/command.hpp"

#include "core/units.hpp"
#include "sim/cli/common.hpp"
#include "sim/fit/fabric_fitter.hpp"
#include "sim/report/output.hpp"
#include "sim/report/validation.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

namespace commbound::cli {
namespace {

struct FitArgs {
  ScenarioArgs scenario;
  std::vector<std::string> logs;
  LogFactArgs facts;
  std::string name, min_bytes = "32M", max_bytes = "16G", out;
  bool force = false;
};

// The hardware of the shipped fit when --scenario is not given, found in the data directory as the
// calibration data is (so fit-fabric runs from any working directory).
constexpr const char* kDefaultScenario = "scenarios/examples/dgx-h100-ib-ndr.toml";

// The measurements to fit: nccl-tests logs and manifests as read_nccl_tests_logs reads them, and
// reference tables (*.csv, the layout validate reads), whose points must have run over `nccl_net`.
Expected<std::vector<network::NcclTestsLog>> read_fit_inputs(const std::vector<std::string>& paths,
                                                             const network::LogFacts& facts, network::NcclNet nccl_net) {
  std::vector<std::string> log_paths;
  std::vector<network::NcclTestsLog> logs;
  for (const std::string& path : paths) {
    if (std::filesystem::path(path).extension() != ".csv") {
      log_paths.push_back(path);
      continue;
    }
    auto points = sim::read_reference(path);
    if (!points) return points.error();
    auto from_points = sim::logs_from_points(*points, nccl_net);
    if (!from_points) return from_points.error();
    logs.insert(logs.end(), from_points->begin(), from_points->end());
  }
  if (!log_paths.empty()) {
    auto read = network::read_nccl_tests_logs(log_paths, facts);
    if (!read) return read.error();
    logs.insert(logs.begin(), read->begin(), read->end());
  }
  if (logs.empty()) return Error{"no measurement given"};
  return logs;
}

int run_fit_fabric(FitArgs a) {
  if (a.scenario.scenario.empty()) a.scenario.scenario = (sim::default_data_dir() / kDefaultScenario).string();
  auto file = load(a.scenario);
  if (!file) return fail(file.error().message);
  const sim::Scenario& sc = file->scenario();
  auto logs = read_fit_inputs(a.logs, log_facts(a.facts), sc.cluster.fabric.link.nccl_net);
  if (!logs) return fail(logs.error().message);
  sim::FitOptions options;
  auto min = sim::parse_list("--min-bytes", a.min_bytes, sim::ListKind::sizes_bytes);
  if (!min) return fail(min.error().message);
  auto max = sim::parse_list("--max-bytes", a.max_bytes, sim::ListKind::sizes_bytes);
  if (!max) return fail(max.error().message);
  options.min_bytes = min->front();
  options.max_bytes = max->front();
  if (Status ok = sim::check_plain_name("--name", a.name); !ok) return fail(ok.error().message);
  const std::string out = a.out.empty() ? (presets(a.scenario.calibration).dir() / "fabric" / (a.name + ".toml")).string() : a.out;
  std::vector<sim::NamedPath> inputs = {{"--scenario", a.scenario.scenario}};
  for (const std::string& log : a.logs) inputs.push_back({"log", log});
  if (Status ok = sim::check_outputs({{"--out", out}}, inputs, a.force); !ok) return fail(ok.error().message);
  ProgressLine progress;
  auto report = sim::fit_fabric(sc, *logs, options, a.name, [&](int evaluations) {
    progress.show(fmt::format("fit-fabric: {} model evaluations  elapsed {:.0f} s", evaluations, progress.elapsed_s()));
  });
  progress.finish();
  if (!report) return fail(report.error().message);
  fmt::print("fit {}: {} points from {} log(s), {} evaluations; median |error| {:.1f}%, max {:.1f}%\n", a.name,
             report->points.size(), logs->size(), report->evaluations, 100 * report->median_abs_error,
             100 * report->max_abs_error);
  for (const network::FitParameter& p : network::fit_parameters()) {
    fmt::print("  {:<16} {:>9.3f}   bounds [{}, {}]\n", p.key, report->fit.*p.field / p.si_per_unit, p.lower, p.upper);
  }
  fmt::print("{:<44} {:>5} {:>11} {:>10} {:>10} {:>7}  {}\n", "log", "nodes", "bytes", "real GB/s", "sim GB/s", "error",
             "simulated");
  for (const sim::LogPoint& p : report->points) {
    fmt::print("{:<44} {:>5} {:>11.0f} {:>10.1f} {:>10.1f} {:>+6.1f}%  {}/{}\n", p.path.substr(p.path.rfind('/') + 1),
               p.nodes, p.size_bytes, p.measured_bus_bw_bytes_per_s() / kBytesPerGB, p.simulated_bus_bw_bytes_per_s() / kBytesPerGB,
               100 * p.error(), p.algorithm, p.protocol);
  }
  Status written = sim::write_output(out, a.force, [&](std::ostream& o) {
    sim::write_fabric_fit(o, *report, sc, *logs, "commbound fit-fabric " COMMBOUND_VERSION);
  });
  if (!written) return fail(written.error().message);
  fmt::print("wrote {} (use it with [nccl] fit = \"{}\")\n", out, a.name);
  return 0;
}

}  // namespace

void add_fit_fabric_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<FitArgs>();
  CLI::App* cmd = app.add_subcommand("fit-fabric", "fit NCCL-as-implemented parameters of a fabric to real nccl-tests logs");
  cmd->footer(R"(Reads nccl-tests output as printed (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
sendrecv_perf; old and new column layouts; header lines optional) and fits the few physical
parameters of NCCL as it runs on that fabric: launch, NVLink and network hop latencies, the serialized
cost per network message, the NIC's achieved line rate, NVLS latency (network/fabric_fit.hpp). The
logs' hardware is the scenario's node type and link. Least squares on ln(time) over the rows between
--min-bytes and --max-bytes. A log no healthy fabric can produce is refused with the reason.
Writes calibration/fabric/NAME.toml with the logs, NCCL versions and residuals; use it with
[nccl] fit = "NAME" (or --set nccl.fit=NAME).

A log without '#  Rank' header lines needs --nodes and --gpus-per-node; one whose file name does not
say the op (all_reduce, _ar, ...) needs --op. A manifest (*.toml with [[log]] tables, as
calibration/fabric/logs/logs.toml) gives these per log. Measurements published only as numbers
come as a reference table (*.csv, the layout `validate --reference` reads: gpu, nodes,
gpus_per_node, collective, algorithm, bytes, busbw_GBps, source, and optionally nccl_net and
nccl_version); its multi-node points must have run over the scenario's transport (its link's
nccl_net: IB, or Libfabric for AWS EFA).

Examples (the shipped fits):
  commbound fit-fabric calibration/fabric/logs/logs.toml --name h100-ib-1to4 \
      --scenario scenarios/examples/dgx-h100-ib-ndr.toml
  commbound fit-fabric calibration/fabric/logs/one-node.toml \
      calibration/reference/aws-p5-efa-2to4-nodes.csv --name h100-efa-1to4 \
      --scenario scenarios/examples/aws-p5-efa.toml
)");
  cmd->add_option("logs", a->logs, "nccl-tests logs, manifests (*.toml) or reference tables (*.csv)")
      ->required()
      ->type_name("LOG...");
  cmd->add_option("--name", a->name, "the fit's name: calibration/fabric/NAME.toml")->required();
  cmd->add_option("--scenario", a->scenario.scenario,
                  std::string("the logs' hardware (node type, link); default: the shipped ") + kDefaultScenario)
      ->type_name("SCENARIO");
  add_preset_args(*cmd, a->scenario.sets, a->scenario.calibration);
  add_log_fact_args(*cmd, a->facts);
  cmd->add_option("--min-bytes", a->min_bytes, "smallest size fitted (K M G suffixes; default 32M)");
  cmd->add_option("--max-bytes", a->max_bytes, "largest size fitted (default 16G)");
  cmd->add_option("--out", a->out, "write there instead of calibration/fabric/NAME.toml")->type_name("FILE");
  cmd->add_flag("--force", a->force, "allow replacing an existing file");
  cmd->callback([a, &exit_code] { exit_code = run_fit_fabric(*a); });
}

}  // namespace commbound::cli
