// commbound run: training iterations of a scenario (every [sweep] point) -> metrics table.
#include "core/child_process.hpp"
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "sim/metrics/metrics.hpp"
#include "sim/report/explain_report.hpp"
#include "sim/report/metrics_report.hpp"
#include "sim/report/output.hpp"
#include "sim/report/perfetto_writer.hpp"
#include "sim/run/cluster_run.hpp"
#include "sim/run/group_calls_alone.hpp"
#include "sim/sweep/sweep_runner.hpp"


#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

namespace commbound::cli {
namespace {

const char* kRunDescription = R"(Simulates one training iteration of the scenario's model on its cluster (after [training]
warmup_iterations, default 0: iterations are independent, a warm-up changes nothing):
per-GPU program (FSDP ZeRO-2/3, HSDP or DDP, Megatron tensor parallelism, pipeline and context
parallelism) on a compute stream and communication streams, collectives through NCCL's algorithms
on the emulated fabric. Prints iteration time, tokens/s (global, per GPU), model TFLOP/s per GPU
and MFU (PaLM FLOPs, see docs/metrics.md), compute, communication and exposed communication time,
power per GPU, tokens per joule and memory per GPU. A layout that does not fit in GPU memory is
reported with its breakdown instead of being simulated.

Compute times come from a calibration table when one is in use ([cluster] kernel_table: "auto"
(default) uses calibration/<gpu>.toml when that file exists, "roofline" never does, or name a
file): each op costs the table's measured time for its kernel shape; a shape the table lacks takes
the achieved rate of the nearest measured shape, or the table's [device] roofline. Without a table,
compute is the datasheet roofline (a lower bound: MFU is then an upper bound). [training]
attention_kernel = "commbound" | "cudnn" | "flash2" picks the table's attention rows. A table with a
[power] limit_gemm_* curve slows GEMM and attention kernels as a board held at its power limit
does, by the curve at the step's share of them in its compute (the title says by how much). Every
report states its sources and counts the ops priced by fallback (docs/metrics.md).

With [workload] trace = "FILE" the iteration is a PyTorch profiler trace's step replayed instead
of the model's program: kernels at their measured durations, collectives re-simulated on this
fabric (collectives = "simulate") or kept as traced ("measured"); see docs/traces.md.

With [[job]] tables instead of [model], several jobs share the cluster, each on its own nodes
(nodes = N; placement = "packed" | "spread", or node_ranges = [[first, last], ...]) with its own
[job.model], [job.training] and [job.parallel]: they run together on one fabric, their collectives
sharing the links they meet on, and each alone on the same nodes; one row per job, then each job's
iteration alone and its slowdown (docs/jobs.md). --trace then shows a process per job, --explain
one table per job.

[[degraded]] tables slow one part for the whole iteration: component = "gpu" | "nic", node, index
(the GPU or NIC of that node) and speed_fraction (of its full speed). A pipeline stage's ranks meet
at its collectives, so the stage computes at its slowest GPU's pace; a NIC's links run at the
fraction of their rate. A part's window (from_hour, hours) matters to a whole run (commbound
train); one iteration runs with every part slow.

With a [sweep] table (key = "cluster.nodes", values = [1, 2, 4]) each value is one row; several
keys at once: key = ["parallel.tp", "parallel.pp"], values = [[1, 1], [2, 4]]. Points run in
parallel child processes (-j).
)";

struct RunArgs {
  ScenarioArgs scenario;
  sim::Format format = sim::Format::table;
  std::string out;
  std::string trace;
  bool force = false;
  bool explain = false;
  bool force_large = false;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

// The scenario's [[degraded]] parts for a title: "; degraded: GPU 5 of node 3 at 0.8, NIC 0 of node
// 1 at 0.5" ("" without any).
std::string degraded_text(const sim::Scenario& sc) {
  std::string text;
  for (const sim::DegradedPart& part : sc.degraded) {
    text += (text.empty() ? "; degraded: " : ", ") +
            std::string(part.kind == sim::DegradedPart::Kind::nic ? "NIC " : "GPU ") + std::to_string(part.index) +
            " of node " + std::to_string(part.node) + " at " + fmt::format("{:g}", part.speed_fraction);
    if (part.from_hour > 0 || part.hours > 0) {
      text += fmt::format(" (in a run: from hour {:g}", part.from_hour) +
              (part.hours > 0 ? fmt::format(" for {:g} h)", part.hours) : std::string(" on)"));
    }
  }
  return text;
}

// The report's title: the command, the scenario and its training setting (the degrees of
// parallelism above 1, or "per row" where the [sweep] sets them). The compute and power sources
// follow on the report's second line (write_metrics).
std::string title_of(const std::string& command, const sim::Scenario& base) {
  const sim::TrainingSpec& t = *base.training;
  // A [sweep] over the model names it in every row; the file's own [model] would mislead here.
  auto swept = [&base](const std::string& prefix) {
    return base.sweep && std::any_of(base.sweep->keys.begin(), base.sweep->keys.end(),
                                     [&prefix](const std::string& k) { return k.rfind(prefix, 0) == 0; });
  };
  std::ostringstream title;
  title << command << ": " << base.path << ": " << (swept("model.") ? std::string("model per row") : t.model.name)
        << ", seq " << t.seq_len << ", " << sim::display_name(t.strategy)
        << (t.strategy == sim::Strategy::ddp ? std::string() : " ZeRO-" + std::to_string(t.zero_stage))
        << ", tp " << (swept("parallel.tp") ? std::string("per row") : std::to_string(t.tp));
  for (const auto& [key, degree] : {std::pair{"pp", t.pp}, std::pair{"cp", t.cp}, std::pair{"ep", t.ep}}) {
    if (swept(std::string("parallel.") + key)) {
      title << ", " << key << " per row";
    } else if (degree > 1) {
      title << ", " << key << " " << degree;
    }
  }
  if (t.sequence_parallel) title << ", sequence parallel";
  title << degraded_text(base);
  return title.str();
}

// A scenario of [[job]] tables: its jobs together and each alone (sim/run/cluster_run.hpp).
int run_jobs(const RunArgs& args, const sim::Scenario& base) {
  sim::ClusterRunOptions options;
  options.processes = args.jobs;
  options.breakdown = args.explain;
  if (!args.trace.empty()) {
    options.after_run = [&args](const std::vector<sim::JobTimeline>& jobs) -> Status {
      std::vector<sim::JobTrace> traced;
      for (const sim::JobTimeline& j : jobs) traced.push_back({j.name, &j.stages, &j.stage_of, &j.timeline});
      return sim::write_output(args.trace, args.force, [&](std::ostream& o) { sim::write_perfetto_trace(o, traced); });
    };
  }
  ProgressLine progress;
  options.progress = [&progress](std::size_t done, std::size_t total) {
    progress.show_count(done, total, "simulations (the jobs together, then each alone)");
  };
  auto results = sim::simulate_cluster(base, options);
  progress.finish();
  if (!results && interrupted()) {
    std::cerr << "commbound: interrupted; nothing written\n";
    return kExitInterrupted;
  }
  if (!results) return fail(results.error().message);
  const std::string title = "commbound run" + std::string(args.explain ? " --explain" : "") + ": " + base.path + ": " +
                            std::to_string(results->size()) + " jobs on " + std::to_string(base.cluster.nodes) + " " +
                            base.cluster.node.name + " nodes, " + network::to_string(base.cluster.fabric.topology) +
                            degraded_text(base);
  if (args.explain) {
    // Each job's groups, as the job ran beside the others; a group's call alone on an idle copy of
    // the job's own nodes.
    std::vector<sim::ExplainedPoint> points;
    for (std::size_t j = 0; j < results->size(); ++j) {
      sim::JobResult& r = (*results)[j];
      std::vector<sim::GroupCallAlone> alone;
      if (r.breakdown && args.format != sim::Format::csv) {
        auto priced = sim::price_group_calls_alone(sim::job_scenario(base, j), *r.breakdown);
        if (!priced) return fail(priced.error().message);
        alone = std::move(*priced);
      }
      points.push_back({r.name + " (nodes " + sim::node_ranges_text(r.nodes) + ")", std::move(r.breakdown),
                        r.metrics.memory, std::move(alone)});
    }
    Status written = sim::write_output(args.out, args.force, [&](std::ostream& o) {
      sim::write_explain_report(o, points, args.format, title);
    });
    if (!written) return fail(written.error().message);
    return 0;
  }
  std::vector<sim::JobRow> rows;
  for (const sim::JobResult& r : *results) {
    rows.push_back({r.name, sim::node_ranges_text(r.nodes), r.metrics, r.alone_iteration_s});
  }
  Status written = sim::write_output(args.out, args.force, [&](std::ostream& o) {
    sim::write_job_metrics(o, rows, args.format, title);
  });
  if (!written) return fail(written.error().message);
  return 0;
}

int run(const RunArgs& args) {
  auto file = load(args.scenario);
  if (!file) return fail(file.error().message);
  const sim::Scenario& base = file->scenario();
  if (!base.jobs.empty()) {
    if (Status ok = sim::check_outputs({{"--out", args.out}, {"--trace", args.trace}},
                                       {{"scenario", args.scenario.scenario}}, args.force);
        !ok) {
      return fail(ok.error().message);
    }
    return run_jobs(args, base);
  }
  if (!base.training) return fail(base.path + ": run needs a [model] section (and optionally [training], [parallel])");
  if (Status ok = sim::check_outputs({{"--out", args.out}, {"--trace", args.trace}}, {{"scenario", args.scenario.scenario}},
                                     args.force);
      !ok) {
    return fail(ok.error().message);
  }
  if (Status ok = check_points(*file, args.force_large); !ok) return fail(ok.error().message);
  if (!args.trace.empty() && file->points() > 1) {
    return fail("--trace needs one point: the [sweep] has " + std::to_string(file->points()) +
                "; pick one with --set 'sweep.values=[...]'");
  }
  sim::SweepOptions options;
  options.jobs = args.jobs;
  options.breakdown = args.explain;
  if (!args.trace.empty()) {
    options.after_run = [&args](const sim::TrainingRun& run) -> Status {
      if (!run.timeline) return Ok{};  // out of memory: nothing was simulated
      return sim::write_output(args.trace, args.force, [&](std::ostream& o) {
        sim::write_perfetto_trace(o, run.stages, run.stage_of, *run.timeline);
      });
    };
  }
  ProgressLine progress;
  options.progress = [&progress](std::size_t done, std::size_t total, const std::string& name) {
    progress.show_count(done, total, "points simulated, last " + name);
  };
  auto rows = sim::run_sweep(*file, options);
  progress.finish();
  if (!rows && interrupted()) {
    std::cerr << "commbound: interrupted; nothing written (`commbound sweep --out-dir DIR` keeps each point as it "
                 "finishes, and resumes)\n";
    return kExitInterrupted;
  }
  if (!rows) return fail(rows.error().message);
  if (args.explain) {
    const sim::Format format = args.format;
    std::vector<sim::ExplainedPoint> points;
    for (auto& row : *rows) {
      std::vector<sim::GroupCallAlone> alone;
      if (row.breakdown && format != sim::Format::csv) {
        auto priced = sim::price_group_calls_alone(row.scenario, *row.breakdown);
        if (!priced) return fail(priced.error().message);
        alone = std::move(*priced);
      }
      points.push_back({row.name, std::move(row.breakdown), row.metrics.memory, std::move(alone)});
    }
    Status written = sim::write_output(args.out, args.force, [&](std::ostream& o) {
      sim::write_explain_report(o, points, format, title_of("commbound run --explain", base));
    });
    if (!written) return fail(written.error().message);
    return 0;
  }
  std::vector<std::pair<std::string, sim::Metrics>> table;
  for (auto& row : *rows) table.emplace_back(row.name, row.metrics);
  Status written = sim::write_output(args.out, args.force, [&](std::ostream& o) {
    sim::write_metrics(o, table, args.format, title_of("commbound run", base));
  });
  if (!written) return fail(written.error().message);
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "one training iteration of the scenario's [model] on its cluster: "
                                            "throughput, MFU, exposed communication, power, memory");
  add_scenario_args(*cmd, args->scenario);
  add_format_option(*cmd, args->format, report_formats());
  cmd->add_option("--out", args->out, "write there instead of standard output (never overwrites without --force)")
      ->type_name("FILE");
  cmd->add_option("--trace", args->trace,
                  "Chrome/Perfetto trace: one process per simulated rank (one per pipeline stage), one track "
                  "per stream it uses, an arrow from each pipeline send to its receive (one point only; never "
                  "overwrites without --force)")
      ->type_name("FILE");
  cmd->add_flag("--explain", args->explain,
                "instead of the metrics: where the iteration's time went, per communication group and "
                "collective kind (calls, bytes, NCCL algorithm, time, exposed time, wait) and the pipeline "
                "bubble; one table per point (see below)");
  cmd->add_flag("--force", args->force, "allow --out and --trace to replace existing files");
  add_force_large_flag(*cmd, args->force_large);
  cmd->add_option("-j,--jobs", args->jobs, "points simulated at once, each in its own process (default: the cores)")
      ->check(CLI::Range(1, 1024));
  cmd->footer(std::string(kRunDescription) + "\n" + sim::explain_columns_help() + R"(

Examples:
  commbound run scenarios/paper/weak_scaling_7b.toml
  commbound run scenarios/paper/weak_scaling_7b.toml --set 'sweep.values=[32]' --set parallel.zero_stage=3 --format json
  commbound run scenarios/paper/model_parallel_7b_256gpu.toml --set 'sweep.values=[[2, 4]]' --trace tp2pp4.json
  commbound run scenarios/paper/model_parallel_7b_256gpu.toml --set cluster.nodes=1 --set 'sweep.values=[[2, 1]]' --explain)");
  cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace commbound::cli
