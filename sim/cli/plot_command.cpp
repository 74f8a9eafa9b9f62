// commbound plot: a `run` results file (CSV) in, its figures (PNG or SVG, through gnuplot) out.
// Which figures a file gets is sim/report/results_figures.hpp; drawing them, sim/report/plot.hpp.
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "sim/report/csv_table.hpp"
#include "sim/report/plot.hpp"
#include "sim/report/results_figures.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <memory>

namespace commbound::cli {
namespace {

struct PlotArgs {
  std::string results, out_dir, format = "png", title;
  bool force = false;
};

int run_plot(const PlotArgs& a) {
  auto table = sim::read_csv_table(a.results);
  if (!table) return fail(table.error().message);
  // Default title: the results file's name, or for a sweep folder's results.csv, the folder's.
  const std::filesystem::path results = std::filesystem::absolute(a.results).lexically_normal();
  const std::string stem = results.stem().string();
  const std::string title = !a.title.empty() ? a.title
                            : stem == "results" && results.has_parent_path() && !results.parent_path().filename().empty()
                                ? results.parent_path().filename().string()
                                : stem;
  auto chosen = sim::results_figures(*table, title);
  if (!chosen) return fail(chosen.error().message);
  const Status drawn = sim::draw_figures(chosen->figures, a.out_dir, a.format, a.force,
                                         [](const std::string& path) { fmt::print("wrote {}\n", path); });
  if (!drawn) return fail(drawn.error().message);
  if (chosen->oom_rows > 0) fmt::print("{} out-of-memory row(s) not plotted\n", chosen->oom_rows);
  return 0;
}

}  // namespace

void add_plot_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<PlotArgs>();
  CLI::App* cmd = app.add_subcommand("plot", "figures of a run's or a collective's results (PNG or SVG through gnuplot)");
  cmd->footer(R"(Reads what `commbound run SCENARIO --format csv --out RESULTS.csv` wrote and draws, into --out-dir:
  a scaling sweep (one point per GPU count): throughput (global tokens/s against GPUs, beside the
    ideal line linear from the smallest run), per_gpu (tokens/s per GPU), mfu, power (W per GPU),
    energy (tokens per joule), all against GPUs on a log2 axis;
  several scaling sweeps (cluster.nodes beside other keys, e.g. a fabric per series): per_gpu, mfu
    and exposed (exposed communication per iteration), one line per series against GPUs, and the
    breakdown at each series' largest scale;
  points of one scale (layouts, models, sequence lengths): per_gpu, one bar per point;
  otherwise breakdown, stacked bars of each point's iteration: compute alone, communication
    overlapped with compute, communication exposed, idle (pipeline bubble, waits).
Out-of-memory rows are left out and counted.
A collective CSV (`commbound collective ... --format csv`, recognised by its header) gets nccl-tests'
bus bandwidth (GB/s): busbw_vs_nodes, one line per op and size, against nodes on a log2 axis (when it
holds several node counts); busbw_vs_size, one line per op and node count, against the size on a
log2 axis (when it holds several sizes). Rows of several runs may be concatenated under one header.
Existing figures are not replaced without --force.

Example:
  commbound run scenarios/paper/weak_scaling_7b.toml --format csv --out weak.csv
  commbound plot weak.csv --out-dir figures/weak --format svg
  commbound collective scenarios/examples/dgx-h100-ib-ndr.toml --op allgather --nodes 1:64 --bytes 1M:1G \
    --format csv --out ag.csv && commbound plot ag.csv --out-dir figures/ag
docs/figures/ holds every paper and study scenario's figures (docs/figures/update.sh).
)");
  cmd->add_option("results", a->results, "a results CSV of `commbound run --format csv` or `commbound collective --format csv`")->required()->type_name("CSV");
  cmd->add_option("--out-dir", a->out_dir, "the folder for the figures (created when missing)")->required()->type_name("DIR");
  cmd->add_option("--format", a->format, "png (default) | svg")->check(CLI::IsMember({"png", "svg"}));
  cmd->add_option("--title", a->title, "the figures' title (default: the results file's name; a sweep folder's for its results.csv)");
  cmd->add_flag("--force", a->force, "allow replacing existing figures");
  cmd->callback([a, &exit_code] { exit_code = run_plot(*a); });
}

}  // namespace commbound::cli
