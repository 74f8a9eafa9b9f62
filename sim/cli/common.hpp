// What every scenario command shares: the SCENARIO argument, --set and --calibration, loading the
// scenario, and reporting a failure as one line on stderr.
#pragma once

#include "core/expected.hpp"
#include "network/nccl_tests_log.hpp"
#include "sim/report/format.hpp"
#include "sim/scenario/presets.hpp"
#include "sim/scenario/scenario.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace commbound::cli {

struct ScenarioArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string calibration;
};

// Adds SCENARIO (positional, required), --set and --calibration to `cmd`.
void add_scenario_args(CLI::App& cmd, ScenarioArgs& args);
// Adds --set and --calibration only (for commands that take several scenarios or none).
void add_preset_args(CLI::App& cmd, std::vector<std::string>& sets, std::string& calibration);

sim::Presets presets(const std::string& calibration);
Expected<sim::ScenarioFile> load(const ScenarioArgs& args, const std::vector<std::string>& extra_sets = {});

// What an nccl-tests log may not print about itself (--op, --nodes, --gpus-per-node, --algo), as
// fit-fabric and validate take it.
struct LogFactArgs {
  std::string op, algo;
  int nodes = 0, gpus_per_node = 0;
};
void add_log_fact_args(CLI::App& cmd, LogFactArgs& args);
network::LogFacts log_facts(const LogFactArgs& args);

// --force-large on `cmd`: lifts the limit on a [sweep]'s points (sim/scenario/size_limits.hpp).
void add_force_large_flag(CLI::App& cmd, bool& force_large);
// Fails when `file`'s [sweep] has more than kMaxSweepPoints points and `force_large` is not set.
Status check_points(const sim::ScenarioFile& file, bool force_large);

// Prints "commbound: <message>" on stderr and returns kExitBadInput.
int fail(const std::string& message);

// --op's values: each of `ops` by its name or nccl-tests' ("allreduce" or "all_reduce"); the value
// is rewritten to commbound's name.
CLI::Validator op_choice(std::vector<network::CollectiveOp> ops);
// NCCL's algorithms by their NCCL_ALGO names, from the algorithm registry: "ring | tree | ...",
// and the validator of an --algo option (any case, written back as the registry spells it).
std::string algorithm_names();
CLI::Validator algorithm_choice();

// A report's formats: table (its default), every sheet format, then the report's own `extra`.
std::vector<sim::Format> report_formats(const std::vector<sim::Format>& extra = {});
// --format, one of `choices` (the first is the default and `into`'s value until it is given), read
// into `into`; the help lists them, "table (default) | csv | json", then `note`.
CLI::Option* add_format_option(CLI::App& cmd, sim::Format& into, const std::vector<sim::Format>& choices,
                               const std::string& note = "");

// Progress of long work on stderr, on a terminal only (a log or a pipe gets none): one line
// rewritten in place, shown once the work has taken a second (quick work stays silent). Its clock
// starts when it is made.
class ProgressLine {
public:
  ProgressLine();
  double elapsed_s() const;
  // Shows `line` in place of the previous one.
  void show(const std::string& line);
  // "[3/12] what  elapsed 4 s, 0.7 per s, about 13 s left".
  void show_count(std::size_t done, std::size_t total, const std::string& what);
  // Ends the line on a terminal (later output starts on its own line); nothing otherwise.
  void finish();

private:
  bool tty_;
  bool open_ = false;  // a terminal line is shown and not yet ended
  std::chrono::steady_clock::time_point start_;
};

}  // namespace commbound::cli
