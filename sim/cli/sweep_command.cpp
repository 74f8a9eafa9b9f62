// commbound sweep: every [sweep] point of a scenario, in parallel, resumable, into a results folder
// (sim/sweep/sweep_folder.hpp); or written out as a Slurm job array whose tasks fill the same folder, and
// the finished points of such a folder collected into its results.
#include "core/child_process.hpp"
#include "core/file_type.hpp"
#include "core/number_text.hpp"
#include "core/one_line.hpp"
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "sim/report/output.hpp"
#include "sim/sweep/sweep_folder.hpp"
#include "sim/sweep/sweep_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

namespace commbound::cli {
namespace {

namespace fs = std::filesystem;

// Array tasks --emit writes at most: Slurm's default MaxArraySize is 1001 (indices 0-1000; slurm.conf(5)),
// and a larger --array is refused at submission.
constexpr std::size_t kMaxArrayTasks = 1000;

struct SweepArgs {
  ScenarioArgs scenario;
  std::string out_dir;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool force = false;
  bool force_large = false;
  std::vector<std::string> emit;  // {"slurm", DIR}
  int tasks = 0;                  // --emit: array tasks (0: one per point, at most kMaxArrayTasks)
  std::string collect;            // --collect DIR
  std::string slice;              // hidden: "K/N", the points i with i % N == K (an array task's share)
};

// The scenario with every point validated (a bad [sweep] value fails before any file is written),
// and the manifest of its sweep.
struct LoadedSweep {
  sim::ScenarioFile file;
  sim::SweepManifest manifest;
};

Expected<LoadedSweep> load_sweep(const SweepArgs& a) {
  auto file = load(a.scenario);
  if (!file) return file.error();
  if (!file->scenario().training) {
    return Error{file->scenario().path + ": sweep needs a [model] section (and optionally [training], [parallel])"};
  }
  if (Status ok = check_points(*file, a.force_large); !ok) return ok.error();
  std::ifstream in(a.scenario.scenario);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  sim::SweepManifest manifest{a.scenario.scenario, a.scenario.sets, a.scenario.calibration, {}};
  for (std::size_t i = 0; i < file->points(); ++i) {
    auto p = file->point(i);
    if (!p) return p.error();
    if (Status size = sim::check_training_size(*p); !size) return size.error();
    const std::string name = file->point_name(i);
    manifest.points.push_back({name, sim::sweep_fingerprint(text, a.scenario.sets, name)});
  }
  return LoadedSweep{std::move(*file), std::move(manifest)};
}

// "K/N" with 0 <= K < N.
Expected<std::array<std::size_t, 2>> parse_slice(const std::string& text) {
  const auto slash = text.find('/');
  const Error bad{"--slice " + text + ": expected K/N with 0 <= K < N"};
  if (slash == std::string::npos) return bad;
  auto k = parse_number<std::size_t>(std::string_view(text).substr(0, slash));
  auto n = parse_number<std::size_t>(std::string_view(text).substr(slash + 1));
  if (!k || !n || *n == 0 || *k >= *n) return bad;
  return std::array<std::size_t, 2>{*k, *n};
}

// Prints which points a collect found missing, and returns 1 when there are any.
int report_collected(const std::string& dir, const sim::SweepManifest& manifest, const sim::Collected& c) {
  if (c.missing.empty()) {
    fmt::print("{} points; wrote {}/results.csv and results.json\n", c.points, dir);
    return 0;
  }
  std::cerr << fmt::format("commbound: {}: {} of {} points missing (results hold the other {}):\n", dir,
                           c.missing.size(), c.points, c.points - c.missing.size());
  for (std::size_t i : c.missing) std::cerr << fmt::format("  points/{:05d}.json  {}\n", i, manifest.points[i].name);
  return 1;
}

int run_sweep_command(const SweepArgs& a) {
  std::optional<std::array<std::size_t, 2>> slice;
  if (!a.slice.empty()) {
    auto s = parse_slice(a.slice);
    if (!s) return fail(s.error().message);
    slice = *s;
  }
  auto sweep = load_sweep(a);
  if (!sweep) return fail(sweep.error().message);
  const sim::SweepManifest& manifest = sweep->manifest;
  const sim::SweepFolder folder(a.out_dir);
  if (Status s = folder.prepare(manifest, a.force); !s) return fail(s.error().message);
  // A slice is one of many tasks writing this folder: the manifest and results are the whole sweep's.
  if (!slice) {
    if (Status s = folder.write_manifest(manifest); !s) return fail(s.error().message);
  }

  std::size_t resumed = 0, stale = 0;
  sim::SweepOptions options;
  options.jobs = a.jobs;
  if (slice) options.include = [&](std::size_t i) { return i % (*slice)[1] == (*slice)[0]; };
  options.finished = [&](std::size_t i) -> std::optional<sim::Metrics> {
    auto kept = folder.finished(i, manifest.points[i].fingerprint);
    if (kept) {
      ++resumed;
    } else if (std::error_code ec; fs::exists(folder.point_file(i), ec)) {
      ++stale;  // another version of the sweep (or a damaged file): simulated again
    }
    return kept;
  };
  std::size_t kept_now = 0;  // points finished and kept by this run
  options.on_point = [&](std::size_t i, const sim::PointResult& p) {
    Status s = folder.keep(i, manifest, p);
    if (s) ++kept_now;
    return s;
  };
  ProgressLine progress;
  std::size_t first_done = 0;  // points already finished when the run began
  options.progress = [&](std::size_t done, std::size_t all, const std::string& name) {
    if (first_done == 0) first_done = resumed;
    const double elapsed_s = progress.elapsed_s();
    const std::size_t simulated = done - first_done;
    const double eta_s = simulated > 0 ? elapsed_s / simulated * (all - done) : 0;
    progress.show(fmt::format("[{}/{}] {}  elapsed {:.0f} s, ETA {:.0f} s", done, all, name, elapsed_s, eta_s));
  };
  auto rows = sim::run_sweep(sweep->file, options);
  progress.finish();
  if (!rows && interrupted()) {
    std::cerr << fmt::format("commbound: interrupted; {} points are kept in {}/points: run the same command again "
                             "to resume\n",
                             resumed + kept_now, a.out_dir);
    return kExitInterrupted;
  }
  if (!rows) return fail(rows.error().message);
  const std::string counts = fmt::format("{} simulated, {} kept from an earlier run{}", rows->size() - resumed, resumed,
                                         stale > 0 ? fmt::format(" ({} stale, simulated again)", stale) : "");
  if (slice) {
    fmt::print("slice {}/{}: {} of {} points: {}; in {}/points\n", (*slice)[0], (*slice)[1], rows->size(),
               manifest.points.size(), counts, a.out_dir);
    return 0;
  }
  auto collected = folder.collect(manifest);
  if (!collected) return fail(collected.error().message);
  fmt::print("{} points: {}; wrote {}/results.csv and results.json\n", manifest.points.size(), counts, a.out_dir);
  return collected->missing.empty() ? 0 : report_collected(a.out_dir, manifest, *collected);
}

// A word for a POSIX shell: single-quoted.
std::string shell_quoted(const std::string& word) {
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// --emit slurm DIR: the sweep folder, its manifest, a job-array script and a README.
int emit_slurm(const SweepArgs& a) {
  if (a.emit.size() != 2 || a.emit[0] != "slurm") return fail("--emit: expected `--emit slurm DIR`");
  std::error_code ec;
  const fs::path dir = fs::absolute(a.emit[1], ec).lexically_normal();
  if (ec) return fail(a.emit[1] + ": " + ec.message());
  if (Status ok = sim::check_folder_writable(dir.string()); !ok) return fail(ok.error().message);
  auto type = file_type_at(dir);
  if (!type) return fail(type.error().message);
  const bool empty = *type == fs::file_type::not_found || fs::is_empty(dir, ec);
  if (ec) return fail(a.emit[1] + ": " + ec.message());
  if (!empty && !a.force) {
    return fail(a.emit[1] + ": exists and is not empty; not written into (pass --force to rewrite its job script; "
                            "finished points of the same sweep are kept)");
  }
  // The tasks run this binary on the absolute paths (the job may start anywhere).
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fail("/proc/self/exe: " + ec.message());
  const fs::path cwd = fs::current_path(ec);
  if (ec) return fail("the working directory: " + ec.message());
  // The paths go into a shell script's comments and #SBATCH lines, where quoting does not reach: a
  // newline there would start a command of its own.
  for (const std::string& path : {exe.string(), cwd.string(), a.scenario.scenario, a.scenario.calibration}) {
    if (has_control_character(path)) {
      return fail(one_line(Error{path + ": a path with a control character cannot go into a job script"}).message);
    }
  }
  auto sweep = load_sweep(a);
  if (!sweep) return fail(sweep.error().message);
  const std::size_t points = sweep->manifest.points.size();  // each validated: none fails in a task hours later
  const std::size_t tasks = std::min<std::size_t>(a.tasks > 0 ? a.tasks : kMaxArrayTasks, points);
  const sim::SweepFolder folder(dir);
  if (Status s = folder.prepare(sweep->manifest, true); !s) return fail(s.error().message);
  fs::create_directories(dir / "logs", ec);
  if (ec) return fail((dir / "logs").string() + ": cannot create: " + ec.message());
  if (Status s = folder.write_manifest(sweep->manifest); !s) return fail(s.error().message);

  std::string command = shell_quoted(exe.string()) + " sweep " + shell_quoted((cwd / a.scenario.scenario).string());
  for (const auto& s : a.scenario.sets) command += " --set " + shell_quoted(s);
  if (!a.scenario.calibration.empty()) {
    command += " --calibration " + shell_quoted((cwd / a.scenario.calibration).string());
  }
  command += " --out-dir " + shell_quoted(dir.string()) + " -j 1 --slice \"${SLURM_ARRAY_TASK_ID}/" +
             std::to_string(tasks) + "\"";
  const std::string script = fmt::format(
      R"(#!/bin/bash
# Written by `commbound sweep {scenario} --emit slurm`: its {points} [sweep] points as a Slurm job
# array of {tasks} tasks. Task K simulates the points i with i % {tasks} == K into
# {dir}/points/ (finished points are kept: resubmitting runs only the others).
# Submit: sbatch {dir}/sweep.sbatch    Then: commbound sweep --collect {dir}
# Add #SBATCH lines for your site (--partition, --time, --account) below.
#SBATCH --job-name=commbound-sweep
#SBATCH --array=0-{last}
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --chdir={cwd}
#SBATCH --output={dir}/logs/%A_%a.out
exec {command}
)",
      fmt::arg("scenario", a.scenario.scenario), fmt::arg("points", points), fmt::arg("tasks", tasks),
      fmt::arg("dir", dir.string()), fmt::arg("last", tasks - 1), fmt::arg("cwd", cwd.string()),
      fmt::arg("command", command));
  const std::string readme = fmt::format(
      "A commbound sweep of {} ({} points) as a Slurm job array of {} tasks.\n"
      "Submit:   sbatch {}/sweep.sbatch\n"
      "Collect:  commbound sweep --collect {}   (results.csv and results.json; lists missing points)\n"
      "Resubmit the same script to finish missing points: finished ones are kept.\n",
      a.scenario.scenario, points, tasks, dir.string(), dir.string());
  for (const auto& [name, text] : {std::pair{"sweep.sbatch", script}, std::pair{"README", readme}}) {
    // A lambda may not capture a structured binding before clang 16: capture a reference by name.
    if (Status s = sim::write_output((dir / name).string(), true, [&body = text](std::ostream& o) { o << body; }); !s) {
      return fail(s.error().message);
    }
  }
  fs::permissions(dir / "sweep.sbatch", fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add, ec);
  fmt::print("wrote {0}/sweep.sbatch: {1} points in {2} array tasks\nsubmit: sbatch {0}/sweep.sbatch\n"
             "then:   commbound sweep --collect {0}\n",
             dir.string(), points, tasks);
  return 0;
}

int collect_command(const SweepArgs& a) {
  const sim::SweepFolder folder(a.collect);
  auto manifest = folder.read_manifest();
  if (!manifest) return fail(manifest.error().message);
  auto collected = folder.collect(*manifest);
  if (!collected) return fail(collected.error().message);
  return report_collected(a.collect, *manifest, *collected);
}

int sweep_command(const SweepArgs& a) {
  if (!a.collect.empty()) {
    if (!a.scenario.scenario.empty()) return fail("--collect DIR takes no SCENARIO (the folder's sweep.json names it)");
    return collect_command(a);
  }
  if (a.scenario.scenario.empty()) return fail("sweep: SCENARIO is required (or --collect DIR)");
  if (!a.emit.empty()) return emit_slurm(a);
  if (a.out_dir.empty()) return fail("sweep: --out-dir DIR is required (or --emit slurm DIR, or --collect DIR)");
  return run_sweep_command(a);
}

}  // namespace

void add_sweep_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "every [sweep] point of a scenario in parallel, resumable, into a folder");
  cmd->footer(R"(Simulates every point of the scenario's [sweep] (as `commbound run` does) in -j child processes and
keeps each finished point at once in DIR/points/NNNNN.json (its metrics, the --set it ran with, a
fingerprint of the scenario file, and the point's fully resolved scenario: every key with the value
it took effect with) beside DIR/points/NNNNN.toml (the same resolved scenario, which `commbound run`
reruns alone). Interrupted (Ctrl-C, a killed job) and run again with the same scenario and --set, it
simulates only the points not yet finished; points of an edited scenario are simulated again. A
folder of another sweep (another scenario file, --set or --calibration) is refused without --force. At the
end it writes DIR/results.csv and DIR/results.json (every metric of every point, and in JSON each
point's resolved scenario; `commbound plot DIR/results.csv --out-dir DIR/figures` draws them).
Progress goes to stderr: one updating line with the ETA on a terminal, a line per point otherwise.

--emit slurm DIR writes DIR/sweep.sbatch, a Slurm job array whose tasks run this binary on a share of
the points each into DIR/points/, and a README; `commbound sweep --collect DIR` then merges the
finished points into DIR/results.csv and results.json (the same files every time) and lists the
missing ones (exit code 1 while any is missing). See docs/sweeps.md.

Examples:
  commbound sweep scenarios/paper/weak_scaling_7b.toml --out-dir runs/weak -j 2
  commbound sweep scenarios/paper/weak_scaling_7b.toml --emit slurm runs/weak-slurm --tasks 4
  sbatch runs/weak-slurm/sweep.sbatch; commbound sweep --collect runs/weak-slurm
)");
  add_scenario_args(*cmd, a->scenario);
  cmd->get_option("scenario")->required(false);
  CLI::Option* out =
      cmd->add_option("--out-dir", a->out_dir, "the sweep's folder (created; an earlier sweep's is resumed)")
          ->type_name("DIR");
  cmd->add_option("-j,--jobs", a->jobs, "points simulated at once, each in its own process (default: the cores)")
      ->check(CLI::Range(1, 1024));
  CLI::Option* emit =
      cmd->add_option("--emit", a->emit, "write a Slurm job array for the sweep into DIR instead of running it")
          ->expected(2)->type_name("slurm DIR")->excludes(out);
  cmd->add_option("--tasks", a->tasks,
                  "--emit: array tasks, each simulating every N-th point (default: one per point, at most 1000)")
      ->check(CLI::Range(1, 1 << 20))->needs(emit);
  cmd->add_option("--collect", a->collect,
                  "merge the finished points of a sweep folder into its results; list the missing")
      ->type_name("DIR")->excludes(out)->excludes(emit);
  cmd->add_option("--slice", a->slice, "simulate only the points i with i % N == K (what an array task runs)")
      ->type_name("K/N")->needs(out)->group("");
  cmd->add_flag("--force", a->force,
                "write into a folder that is not this sweep's (another sweep's points and results are removed "
                "first), or rewrite an emitted job");
  add_force_large_flag(*cmd, a->force_large);
  cmd->callback([a, &exit_code] { exit_code = sweep_command(*a); });
}

}  // namespace commbound::cli
