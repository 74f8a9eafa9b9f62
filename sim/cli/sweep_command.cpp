// commbound sweep: every [sweep] point of a scenario, in parallel, resumable, into a results folder.
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "sim/report/metrics_report.hpp"
#include "sim/report/output.hpp"
#include "sim/sweep_runner.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

namespace commbound::cli {
namespace {

namespace fs = std::filesystem;

struct SweepArgs {
  ScenarioArgs scenario;
  std::string out_dir;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool force = false;
};

// What a finished point was computed from: the scenario file's text, every --set and the point's
// name. A point file whose fingerprint differs belongs to another version of the sweep.
std::string fingerprint(const std::string& scenario_text, const std::vector<std::string>& sets, const std::string& name) {
  std::string key = scenario_text;
  for (const auto& s : sets) key += "\n--set " + s;
  key += "\n" + name;
  return fmt::format("{:016x}", std::hash<std::string>{}(key));
}

fs::path point_path(const std::string& dir, std::size_t index) {
  return fs::path(dir) / "points" / fmt::format("{:05d}.json", index);
}

int run_sweep_command(const SweepArgs& a) {
  auto file = load(a.scenario);
  if (!file) return fail(file.error().message);
  const sim::Scenario& base = file->scenario();
  if (!base.training) return fail(base.path + ": sweep needs a [model] section (and optionally [training], [parallel])");
  std::ifstream in(a.scenario.scenario);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The folder: new, or one this command made (it holds points/); anything else only with --force.
  const fs::path dir(a.out_dir);
  if (fs::exists(dir) && !fs::is_directory(dir / "points") && !fs::is_empty(dir) && !a.force) {
    return fail(a.out_dir + ": exists and is not a sweep folder; not written into (pass --force, or another --out-dir)");
  }
  std::error_code ec;
  fs::create_directories(dir / "points", ec);
  if (ec) return fail(a.out_dir + ": cannot create: " + ec.message());

  const std::size_t total = file->points();
  std::size_t resumed = 0, stale = 0;
  sim::SweepOptions options;
  options.jobs = a.jobs;
  options.finished = [&](std::size_t i) -> std::optional<sim::Metrics> {
    std::ifstream point(point_path(a.out_dir, i));
    if (!point) return std::nullopt;
    const auto j = nlohmann::json::parse(point, nullptr, false);
    if (j.is_discarded() || j.value("fingerprint", "") != fingerprint(text, a.scenario.sets, file->point_name(i))) {
      ++stale;  // another version of the sweep (or a damaged file): simulated again
      return std::nullopt;
    }
    ++resumed;
    return j.at("metrics").get<sim::Metrics>();
  };
  options.on_point = [&](std::size_t i, const sim::PointResult& p) -> Status {
    nlohmann::json j = {{"name", p.name},
                        {"scenario", a.scenario.scenario},
                        {"set", a.scenario.sets},
                        {"fingerprint", fingerprint(text, a.scenario.sets, p.name)},
                        {"metrics", p.metrics}};
    return sim::write_output(point_path(a.out_dir, i).string(), true, [&](std::ostream& o) { o << j.dump(1) << "\n"; });
  };
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  std::size_t first_done = 0;  // points already finished when the run began
  options.progress = [&](std::size_t done, std::size_t all, const std::string& name) {
    if (first_done == 0) first_done = resumed;
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::size_t simulated = done - first_done;
    const double eta_s = simulated > 0 ? elapsed_s / simulated * (all - done) : 0;
    const std::string line = fmt::format("[{}/{}] {}  elapsed {:.0f} s, ETA {:.0f} s", done, all, name, elapsed_s, eta_s);
    if (tty) {
      std::cerr << "\r\033[K" << line << (done == all ? "\n" : "") << std::flush;
    } else {
      std::cerr << line << "\n";
    }
  };
  auto rows = sim::run_sweep(*file, options);
  if (!rows) return fail(rows.error().message);
  std::vector<std::pair<std::string, sim::Metrics>> table;
  for (auto& row : *rows) table.emplace_back(row.name, row.metrics);
  const std::string title = "commbound sweep: " + base.path;
  for (const char* format : {"csv", "json"}) {
    const std::string path = (dir / (std::string("results.") + format)).string();
    if (Status s = sim::write_output(path, true, [&](std::ostream& o) { sim::write_metrics(o, table, format, title); }); !s) {
      return fail(s.error().message);
    }
  }
  fmt::print("{} points: {} simulated, {} kept from an earlier run{}; wrote {}/results.csv and results.json\n", total,
             total - resumed, resumed, stale > 0 ? fmt::format(" ({} stale, simulated again)", stale) : "", a.out_dir);
  return 0;
}

}  // namespace

void add_sweep_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "every [sweep] point of a scenario in parallel, resumable, into a folder");
  cmd->footer(R"(Simulates every point of the scenario's [sweep] (as `commbound run` does) in -j child processes and
keeps each finished point at once in DIR/points/NNNNN.json (its metrics, the --set it ran with and
a fingerprint of the scenario file). Interrupted (Ctrl-C, a killed job) and run again with the same
scenario and --set, it simulates only the points not yet finished; points of an edited scenario
are simulated again. At the end it writes DIR/results.csv and DIR/results.json (every metric of
every point; `commbound plot DIR/results.csv --out-dir DIR/figures` draws them). Progress goes to
stderr: one updating line with the ETA on a terminal, a line per point otherwise.

Example:
  commbound sweep scenarios/paper/weak_scaling_7b.toml --out-dir runs/weak -j 2
)");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--out-dir", a->out_dir, "the sweep's folder (created; an earlier sweep's is resumed)")
      ->required()->type_name("DIR");
  cmd->add_option("-j,--jobs", a->jobs, "points simulated at once, each in its own process (default: the cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--force", a->force, "write into a folder that is not a sweep folder");
  cmd->callback([a, &exit_code] { exit_code = run_sweep_command(*a); });
}

}  // namespace commbound::cli
