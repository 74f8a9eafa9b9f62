// commbound train: the time to train a whole run, with failures, checkpoints and restarts.
#include "core/child_process.hpp"
#include "core/units.hpp"
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "sim/report/output.hpp"
#include "sim/sweep/sweep_runner.hpp"
#include "sim/train/degraded_windows.hpp"
#include "sim/train/time_to_train.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

namespace commbound::cli {
namespace {

// The most phases of [[degraded]] windows one point may have: each distinct set of slow parts is
// an iteration simulated.
constexpr std::size_t kMostPhases = 16;

const char* kTrainDescription = R"(Projects a whole training run from one simulated iteration: the iterations the tokens need, the
ideal time, and the time it takes when the job fails at random, checkpoints and restarts.

  iterations = tokens / (global batch x sequence)        ideal = iterations x iteration
  M (mean time between failures) = 1 / (GPUs x [train] gpu_failures_per_gpu_hour
                                        + nodes x [train] node_failures_per_node_hour)
  checkpoint = parameters x checkpoint_bytes_per_parameter / storage_TBps
  restart = restart_s + reading the checkpoint back
  interval = [train] checkpoint_interval_s, or Daly's optimum (Young's sqrt(2 checkpoint M) beside it)
  expected = M e^(restart/M) (e^((interval + checkpoint)/M) - 1) per interval of work (Daly's model:
             a failure loses the interval in progress, a restart may fail too)
  goodput = ideal / expected; GPU-hours and energy over the expected time

A seeded Monte Carlo of the same failures ([train] seed, trials) is printed beside the closed form,
its mean with its standard error. Default failure rates are the Llama 3 405B run's (arXiv
2407.21783, Table 5: 466 interruptions in 54 days on 16,384 H100s); with them, that run's
interruption count is an input, not a check. The restart's 600 s default is a guess (no public
figure at scale); a report that uses it says so. See docs/train.md.

[[degraded]] parts with a window (from_hour, hours: on the run's failure-free timeline) slow the
run only then: each phase of the windows trains at the pace of its own simulated iteration, and
iter(s) is the mean over the run (docs/train.md).

--nodes projects several cluster sizes (the scenario's other keys as written), one row each;
without it, every [sweep] point. Each point's iteration is simulated in a child process (-j).
)";

struct TrainArgs {
  ScenarioArgs scenario;
  double tokens = 0;
  std::string nodes;
  sim::Format format = sim::Format::table;
  std::string out;
  bool force = false;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

sim::Sheet train_sheet(const std::vector<std::pair<std::string, sim::TimeToTrain>>& rows, const std::string& title) {
  sim::Sheet sheet;
  sheet.title = title;
  sheet.columns = {"scenario", "gpus", "nodes", "iteration_s", "iterations", "ideal_s", "mtbf_s", "checkpoint_s",
                   "restart_s", "young_interval_s", "daly_interval_s", "interval_s", "expected_s",
                   "monte_carlo_s", "monte_carlo_standard_error_s", "expected_failures", "lost_s", "checkpoints_s",
                   "goodput", "gpu_hours", "energy_j"};
  for (const auto& [name, r] : rows) {
    std::vector<double> values = {r.iteration_s, r.iterations, r.ideal_s, r.failures.mtbf_s, r.failures.checkpoint_s,
                                  r.failures.restart_s, r.young_interval_s, r.daly_interval_s, r.interval_s,
                                  r.expected_s, r.monte_carlo.mean_wall_s, r.monte_carlo.standard_error_s,
                                  r.expected_failures, r.lost_s, r.checkpoints_s, r.goodput, r.gpu_hours, r.energy_j};
    std::vector<std::string> line = {name, std::to_string(r.gpus), std::to_string(r.nodes)};
    nlohmann::json row{{"scenario", name}, {"gpus", r.gpus}, {"nodes", r.nodes}};
    for (std::size_t k = 0; k < values.size(); ++k) {
      line.push_back(fmt::format("{:.6g}", values[k]));
      row[sheet.columns[k + 3]] = values[k];
    }
    sheet.lines.push_back(std::move(line));
    sheet.rows.push_back(std::move(row));
  }
  return sheet;
}

void write_train_table(std::ostream& o, const std::vector<std::pair<std::string, sim::TimeToTrain>>& rows,
                       const std::string& title, const sim::TrainPlan& plan) {
  constexpr double kJPerMWh = 3.6e9;
  o << "# " << title << "\n";
  o << fmt::format("# {:.4g} tokens; failures: {:.3g} per GPU-hour + {:.3g} per node-hour{}; storage {:g} TB/s, "
                   "{:g} bytes per parameter; restart {:g} s{}\n",
                   plan.tokens, plan.gpu_failures_per_gpu_hour, plan.node_failures_per_node_hour,
                   plan.gpu_failures_per_gpu_hour == sim::kLlama3GpuFailuresPerGpuHour &&
                           plan.node_failures_per_node_hour == sim::kLlama3NodeFailuresPerNodeHour
                       ? " (the Llama 3 run's)"
                       : "",
                   plan.storage_bytes_per_s / 1e12, plan.checkpoint_bytes_per_parameter, plan.restart_s,
                   plan.restart_s == sim::kRestartGuessS ? " (a GUESS: no public figure)" : "");
  int width = 20;
  for (const auto& row : rows) width = std::max(width, static_cast<int>(row.first.size()));
  o << fmt::format("{:<{}} {:>6} {:>8} {:>8} {:>7} {:>7} {:>7} {:>13} {:>8} {:>8} {:>15} {:>8} {:>9} {:>7}\n", "scenario",
                   width, "gpus", "iter(s)", "ideal d", "MTBF h", "ckpt s", "restart", "interval Y/D", "failures",
                   "days", "days (MC)", "goodput", "GPU-h(M)", "MWh");
  for (const auto& [name, r] : rows) {
    o << fmt::format("{:<{}} {:>6} {:>8.3f} {:>8.1f} {:>7.2f} {:>7.2f} {:>7.0f} {:>6.0f}/{:<6.0f} {:>8.0f} {:>8.1f} "
                     "{:>8.1f}+-{:<4.1f} {:>7.1f}% {:>9.2f} {:>7.0f}\n",
                     name, width, r.gpus, r.iteration_s, r.ideal_s / kSecondsPerDay, r.failures.mtbf_s / kSecondsPerHour,
                     r.failures.checkpoint_s, r.failures.restart_s, r.young_interval_s / 60, r.daly_interval_s / 60,
                     r.expected_failures, r.expected_s / kSecondsPerDay, r.monte_carlo.mean_wall_s / kSecondsPerDay,
                     r.monte_carlo.standard_error_s / kSecondsPerDay, 100 * r.goodput, r.gpu_hours / 1e6, r.energy_j / kJPerMWh);
  }
  o << "# interval Y/D: Young's and Daly's optimum in minutes"
    << (plan.checkpoint_interval_s > 0 ? fmt::format("; every row checkpoints every {:g} s ([train])", plan.checkpoint_interval_s)
                                       : std::string("; every row checkpoints at Daly's"))
    << "; days (MC): the Monte Carlo's mean +- its standard error\n";
}

int train(const TrainArgs& args) {
  std::vector<std::string> tokens;
  if (args.tokens > 0) tokens.push_back("train.tokens=" + fmt::format("{:.17g}", args.tokens));
  auto file = load(args.scenario, tokens);
  if (!file) return fail(file.error().message);
  const sim::Scenario& base = file->scenario();
  if (!base.training) return fail(base.path + ": train needs a [model] section (and optionally [training], [parallel])");
  if (base.train.tokens <= 0) return fail(base.path + ": train needs the tokens to train: --tokens N or [train] tokens");
  if (Status ok = sim::check_outputs({{"--out", args.out}}, {{"scenario", args.scenario.scenario}}, args.force); !ok) {
    return fail(ok.error().message);
  }
  std::vector<sim::PointToRun> points;
  if (!args.nodes.empty()) {
    auto nodes = sim::parse_list("--nodes", args.nodes, sim::ListKind::node_counts);
    if (!nodes) return fail(nodes.error().message);
    for (double n : *nodes) {
      auto sc = file->point(0, {"cluster.nodes=" + std::to_string(static_cast<long>(n))});
      if (!sc) return fail(sc.error().message);
      points.push_back({"cluster.nodes=" + std::to_string(static_cast<long>(n)), std::move(*sc)});
    }
  } else {
    for (std::size_t i = 0; i < file->points(); ++i) {
      auto sc = file->point(i);
      if (!sc) return fail(sc.error().message);
      points.push_back({file->point_name(i), std::move(*sc)});
    }
  }
  for (const sim::PointToRun& p : points) {
    if (Status size = sim::check_training_size(p.scenario); !size) return fail(size.error().message);
  }
  // Each point's [[degraded]] windows: its phases, each simulated with the parts slow in it (one
  // iteration per distinct set of parts, shared by the phases that have it).
  std::vector<sim::PointToRun> simulated;
  std::vector<std::vector<std::pair<double, std::size_t>>> phases_of(points.size());  // (from_s, simulated index)
  for (std::size_t i = 0; i < points.size(); ++i) {
    const sim::Scenario& sc = points[i].scenario;
    const std::vector<sim::DegradedPhase> phases = sim::degraded_phases(sc.degraded);
    if (phases.size() > kMostPhases) {
      return fail(sc.degraded.front().origin + ": degraded: the windows make " + std::to_string(phases.size()) +
                  " phases with different parts slow; at most " + std::to_string(kMostPhases) +
                  " are simulated (one iteration each)");
    }
    std::map<std::vector<std::size_t>, std::size_t> index;
    for (const sim::DegradedPhase& phase : phases) {
      auto [it, fresh] = index.try_emplace(phase.parts, simulated.size());
      if (fresh) {
        std::vector<sim::DegradedPart> parts;
        std::string name = points[i].name;
        for (std::size_t k : phase.parts) parts.push_back(sc.degraded[k]);
        if (phases.size() > 1) name += phase.parts.empty() ? " (no part slow)" : " (" + std::to_string(parts.size()) + " slow)";
        simulated.push_back({std::move(name), sc});
        if (phases.size() > 1) sim::set_degraded(simulated.back().scenario, std::move(parts));
      }
      phases_of[i].emplace_back(phase.from_s, it->second);
    }
  }
  sim::SweepOptions options;
  options.jobs = args.jobs;
  ProgressLine progress;
  options.progress = [&progress](std::size_t done, std::size_t total, const std::string& name) {
    progress.show_count(done, total, "iterations simulated, last " + name);
  };
  auto metrics = sim::run_points(simulated, options);
  progress.finish();
  if (!metrics && interrupted()) {
    std::cerr << "commbound: interrupted; nothing written\n";
    return kExitInterrupted;
  }
  if (!metrics) return fail(metrics.error().message);
  std::vector<std::pair<std::string, sim::TimeToTrain>> rows;
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::vector<sim::PhasePace> paces;
    for (const auto& [from_s, k] : phases_of[i]) {
      const sim::Metrics& m = *(*metrics)[k];
      if (m.oom) return fail(simulated[k].name + ": the layout does not fit in GPU memory (`commbound run` shows why)");
      paces.push_back({from_s, m.iteration_s, m.power_w_per_gpu});
    }
    rows.emplace_back(points[i].name, sim::time_to_train(points[i].scenario, paces, points[i].scenario.train));
  }
  const std::string title = "commbound train: " + base.path + ": " + base.training->model.name;
  Status written = sim::write_output(args.out, args.force, [&](std::ostream& o) {
    if (sim::is_sheet_format(args.format)) return sim::write_sheet(o, train_sheet(rows, title), args.format);
    write_train_table(o, rows, title, base.train);
  });
  if (!written) return fail(written.error().message);
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "the time to train a whole run: failures, checkpoints, restarts, goodput, "
                                              "GPU-hours, energy");
  add_scenario_args(*cmd, args->scenario);
  cmd->add_option("--tokens", args->tokens, "tokens to train, e.g. 15e12 (sets [train] tokens)")->check(CLI::Range(1.0, 1e18));
  cmd->add_option("--nodes", args->nodes, "cluster sizes to project: \"256,1024,2048\" or \"256:16384\" (doubling)")
      ->type_name("LIST");
  add_format_option(*cmd, args->format, report_formats());
  cmd->add_option("--out", args->out, "write there instead of standard output (never overwrites without --force)")
      ->type_name("FILE");
  cmd->add_flag("--force", args->force, "allow --out to replace an existing file");
  cmd->add_option("-j,--jobs", args->jobs, "points simulated at once, each in its own process (default: the cores)")
      ->check(CLI::Range(1, 1024));
  cmd->footer(std::string(kTrainDescription) + R"(
Examples:
  commbound train scenarios/published/llama3.1_405b_dgxc_bf16.toml --tokens 15.6e12
  commbound train scenarios/paper/weak_scaling_7b.toml --tokens 2e12 --nodes 64:2048 --format csv
  commbound train scenarios/paper/weak_scaling_7b.toml --tokens 2e12 --nodes 2048 --set train.storage_TBps=20)");
  cmd->callback([args, &exit_code] { exit_code = train(*args); });
}

}  // namespace commbound::cli
