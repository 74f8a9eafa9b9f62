#include "sim/cli/common.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/cli/command.hpp"
#include "sim/scenario/size_limits.hpp"

#include <unistd.h>

#include <algorithm>
#include <iostream>

namespace commbound::cli {

void add_preset_args(CLI::App& cmd, std::vector<std::string>& sets, std::string& calibration) {
  cmd.add_option("--set", sets,
                 "override a scenario key, same dotted names as the file (e.g. --set cluster.nodes=64 "
                 "--set fabric.link=roce-400g); repeatable")
      ->type_name("KEY=VALUE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd.add_option("--calibration", calibration, "preset data (default: the calibration/ shipped with commbound)")
      ->type_name("DIR");
}

void add_scenario_args(CLI::App& cmd, ScenarioArgs& args) {
  cmd.add_option("scenario", args.scenario, "the scenario file (.toml)")->type_name("SCENARIO")->required();
  add_preset_args(cmd, args.sets, args.calibration);
}

sim::Presets presets(const std::string& calibration) {
  return sim::Presets(calibration.empty() ? sim::default_calibration_dir() : std::filesystem::path(calibration));
}

Expected<sim::ScenarioFile> load(const ScenarioArgs& args, const std::vector<std::string>& extra_sets) {
  std::vector<std::string> sets = args.sets;
  sets.insert(sets.end(), extra_sets.begin(), extra_sets.end());
  return sim::ScenarioFile::load(args.scenario, sets, presets(args.calibration));
}

void add_force_large_flag(CLI::App& cmd, bool& force_large) {
  cmd.add_flag("--force-large", force_large,
               "run a [sweep] of more than " + std::to_string(sim::kMaxSweepPoints) + " points (docs/limits.md)");
}

Status check_points(const sim::ScenarioFile& file, bool force_large) {
  const auto points = static_cast<std::int64_t>(file.points());
  if (force_large || points <= sim::kMaxSweepPoints) return Ok{};
  return Error{file.scenario().path + ": sweep.values: " + std::to_string(points) + " points, more than " +
               std::to_string(sim::kMaxSweepPoints) + " (docs/limits.md); pass --force-large to run them all"};
}

int fail(const std::string& message) {
  std::cerr << "commbound: " << message << "\n";
  return kExitBadInput;
}

CLI::Validator op_choice(std::vector<network::CollectiveOp> ops) {
  std::string names;
  for (network::CollectiveOp op : ops) names += (names.empty() ? "" : " | ") + std::string(network::to_string(op));
  return CLI::Validator(
      [ops, names](std::string& value) -> std::string {
        const auto op = network::parse_collective_op(value);
        if (!op || std::find(ops.begin(), ops.end(), *op) == ops.end()) {
          return value + " is not a collective here: " + names + " (or nccl-tests' all_reduce, ...)";
        }
        value = network::to_string(*op);
        return "";
      },
      names);
}

std::vector<sim::Format> report_formats(const std::vector<sim::Format>& extra) {
  std::vector<sim::Format> formats = {sim::Format::table};
  formats.insert(formats.end(), sim::sheet_formats().begin(), sim::sheet_formats().end());
  formats.insert(formats.end(), extra.begin(), extra.end());
  return formats;
}

CLI::Option* add_format_option(CLI::App& cmd, sim::Format& into, const std::vector<sim::Format>& choices,
                               const std::string& note) {
  std::vector<std::string> names;
  for (sim::Format f : choices) names.emplace_back(sim::to_string(f));
  into = choices.front();
  const std::string help = names.front() + " (default)" + (names.size() > 1 ? " | " : "") +
                           fmt::format("{}", fmt::join(names.begin() + 1, names.end(), " | ")) + note;
  return cmd
      .add_option_function<std::string>(
          "--format", [&into](const std::string& name) { into = *sim::parse_format(name); }, help)
      ->check(CLI::IsMember(std::move(names)));
}

std::string algorithm_names() { return fmt::format("{}", fmt::join(network::algorithm_names(), " | ")); }

CLI::Validator algorithm_choice() {
  const std::string names = algorithm_names();
  return CLI::Validator(
      [names](std::string& value) -> std::string {
        const auto a = network::parse_algorithm(value);
        if (!a) return value + " is not one of NCCL's algorithms here: " + names;
        value = network::to_string(*a);
        return "";
      },
      names);
}

void add_log_fact_args(CLI::App& cmd, LogFactArgs& args) {
  cmd.add_option("--op", args.op, "the logs' collective when they do not say")
      ->check(op_choice({network::CollectiveOp::all_reduce, network::CollectiveOp::all_gather,
                         network::CollectiveOp::reduce_scatter, network::CollectiveOp::send_recv}));
  cmd.add_option("--nodes", args.nodes, "the logs' node count when they do not say")->check(CLI::Range(1, network::kMaxNodes));
  cmd.add_option("--gpus-per-node", args.gpus_per_node, "the logs' GPUs per node when they do not say")
      ->check(CLI::Range(1, 1024));
  cmd.add_option("--algo", args.algo, "NCCL_ALGO the logs forced (" + algorithm_names() + ")")->check(algorithm_choice());
}

network::LogFacts log_facts(const LogFactArgs& args) {
  network::LogFacts facts;
  if (!args.op.empty()) facts.op = network::op_from_name(args.op);
  if (args.nodes > 0) facts.nodes = args.nodes;
  if (args.gpus_per_node > 0) facts.gpus_per_node = args.gpus_per_node;
  if (!args.algo.empty()) facts.algorithm = network::parse_algorithm(args.algo);
  return facts;
}

ProgressLine::ProgressLine() : tty_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}

double ProgressLine::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressLine::show(const std::string& line) {
  constexpr double kQuietFor_s = 1;  // work that ends sooner shows no progress at all
  if (!tty_ || elapsed_s() < kQuietFor_s) return;
  std::cerr << "\r\033[K" << line << std::flush;
  open_ = true;
}

void ProgressLine::show_count(std::size_t done, std::size_t total, const std::string& what) {
  const double elapsed = elapsed_s();
  const double rate_per_s = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  std::string line = fmt::format("[{}/{}] {}  elapsed {:.0f} s", done, total, what, elapsed);
  if (done > 0 && done < total) {
    line += fmt::format(", {:.2g} per s, about {:.0f} s left", rate_per_s, static_cast<double>(total - done) / rate_per_s);
  }
  show(line);
}

void ProgressLine::finish() {
  if (open_) std::cerr << "\n" << std::flush;
  open_ = false;
}

}  // namespace commbound::cli
