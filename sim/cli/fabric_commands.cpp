// commbound collective | platform | validate: the emulated fabric and NCCL's collectives on it.
#include "network/nccl_tests.hpp"
#include "network/platform.hpp"
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "sim/report/collective_explain.hpp"
#include "sim/report/collective_report.hpp"
#include "sim/report/output.hpp"
#include "sim/report/platform_report.hpp"
#include "sim/report/validation.hpp"
#include "sim/scenario/size_limits.hpp"
#include "sim/validate/validation_run.hpp"

#include <fmt/format.h>


#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>

namespace commbound::cli {
namespace {

// --export writes an N^2 route table; beyond this many hosts the file would reach gigabytes.
constexpr int kExportMaxHosts = 1200;

struct CollectiveArgs {
  ScenarioArgs scenario;
  std::string op, nodes, bytes, algo, proto, fidelity, dispatcher, out;
  sim::Format format = sim::Format::table;
  int gpus_per_node = 0;  // 0: every GPU of each node
  bool explain = false;
  bool force = false;
};

int run_collective(const CollectiveArgs& a) {
  network::CollectiveSweep sweep;
  sweep.op = *network::parse_collective_op(a.op);
  auto node_list = sim::parse_list("--nodes", a.nodes, sim::ListKind::node_counts);
  if (!node_list) return fail(node_list.error().message);
  for (double n : *node_list) sweep.nodes.push_back(static_cast<int>(n));
  auto size_list = sim::parse_list("--bytes", a.bytes, sim::ListKind::sizes_bytes);
  if (!size_list) return fail(size_list.error().message);
  sweep.sizes_bytes = *size_list;
  if (a.explain && a.format != sim::Format::table) {
    return fail(std::string("--explain writes its own text; it takes no --format ") + sim::to_string(a.format));
  }
  const sim::Format format = a.format;
  // The file as written must be valid, even where --nodes will resize the cluster.
  auto as_written = load(a.scenario);
  if (!as_written) return fail(as_written.error().message);
  const int max_nodes = *std::max_element(sweep.nodes.begin(), sweep.nodes.end());
  if (const int gpus = as_written->scenario().cluster.node.gpus; std::int64_t{max_nodes} * gpus > sim::kMaxGpus) {
    return fail(fmt::format("--nodes {}: {} nodes of {} GPUs are more than {} GPUs (docs/limits.md)", a.nodes, max_nodes,
                            gpus, sim::kMaxGpus));
  }
  auto file = load(a.scenario, {"cluster.nodes=" + std::to_string(max_nodes)});
  if (!file) return fail(file.error().message);
  const sim::Scenario& sc = file->scenario();
  if (a.gpus_per_node > sc.cluster.node.gpus) {
    return fail("--gpus-per-node " + std::to_string(a.gpus_per_node) + ": node type " + sc.cluster.node.name +
                " has " + std::to_string(sc.cluster.node.gpus) + " GPUs");
  }
  const int gpus_per_node = a.gpus_per_node > 0 ? a.gpus_per_node : sc.cluster.node.gpus;
  if (gpus_per_node == 1 && *std::min_element(sweep.nodes.begin(), sweep.nodes.end()) == 1) {
    return fail(std::string(a.gpus_per_node > 0 ? "--gpus-per-node 1" : "node type " + sc.cluster.node.name + " (1 GPU)") +
                " on 1 node is a single GPU: " + network::to_string(sweep.op) + " needs at least 2 ranks");
  }
  sweep.gpus_per_node = a.gpus_per_node;
  sweep.algorithm = a.algo.empty() ? sc.nccl_options.algorithm : network::parse_algorithm(a.algo);
  sweep.protocol = a.proto.empty() ? sc.nccl_options.protocol : network::parse_protocol(a.proto);
  sweep.fidelity = a.fidelity.empty() ? sc.nccl_options.fidelity : *network::parse_fidelity(a.fidelity);
  if (!a.dispatcher.empty()) {
    if (sweep.op != network::CollectiveOp::all_to_all) return fail("--dispatcher " + a.dispatcher + ": for --op alltoall only");
    sweep.all_to_all_method = *network::parse_all_to_all_method(a.dispatcher);
  }
  if (Status ok = sim::check_outputs({{"--out", a.out}}, {{"scenario", a.scenario.scenario}}, a.force); !ok) {
    return fail(ok.error().message);
  }
  auto platform = network::Platform::create(sc.cluster);
  if (!platform) return fail(sc.path + ": " + platform.error().message);
  ProgressLine progress;
  auto rows = network::run_sweep(**platform, sc.nccl, sweep, [&](int done, int total) {
    progress.show_count(static_cast<std::size_t>(done), static_cast<std::size_t>(total), "collectives simulated");
  });
  progress.finish();
  if (!rows) return fail(rows.error().message);
  const std::string title = sim::collective_title(sweep, sc.cluster, sc.nccl.release);
  Status written = sim::write_output(a.out, a.force, [&](std::ostream& o) {
    if (a.explain) {
      const network::NcclTuner tuner(sc.cluster.node, sc.cluster.fabric, sc.nccl);
      const std::string fit = sc.cluster.fabric.fit ? ", fabric fit " + sc.cluster.fabric.fit->name : ", no fabric fit";
      sim::write_collective_explanation(o, *rows, tuner,
                                        "commbound collective --explain: " + title.substr(title.find(": ") + 2) + fit);
    } else {
      sim::write_collective_report(o, *rows, format, title);
    }
  });
  return written ? 0 : fail(written.error().message);
}

struct PlatformArgs {
  ScenarioArgs scenario;
  std::string export_path;
  bool force = false;
};

int run_platform(const PlatformArgs& a) {
  auto file = load(a.scenario);
  if (!file) return fail(file.error().message);
  const sim::Scenario& sc = file->scenario();
  if (Status ok = sim::check_outputs({{"--export", a.export_path}}, {{"scenario", a.scenario.scenario}}, a.force); !ok) {
    return fail(ok.error().message);
  }
  auto platform = network::Platform::create(sc.cluster);
  if (!platform) return fail(sc.path + ": " + platform.error().message);
  const network::Platform& p = **platform;
  sim::write_platform_summary(std::cout, sc, p);
  if (a.export_path.empty()) return 0;
  std::ostringstream xml;
  if (Status s = p.export_xml(xml, kExportMaxHosts); !s) return fail(s.error().message);
  Status written = sim::write_output(a.export_path, a.force, [&](std::ostream& o) { o << xml.str(); });
  if (!written) return fail(written.error().message);
  std::cout << "  wrote   " << a.export_path << "\n";
  return 0;
}

struct ValidateArgs {
  ScenarioArgs scenario;
  std::vector<std::string> references, logs;
  LogFactArgs facts;
  std::string out, plots;
  sim::Format format = sim::Format::table;
  bool force = false;
};

std::string command_line(const ValidateArgs& a) {
  std::string c = "commbound validate " + a.scenario.scenario;
  for (const auto& s : a.scenario.sets) c += " --set " + s;
  for (const auto& r : a.references) c += " --reference " + r;
  for (const auto& l : a.logs) c += " --nccl-tests " + l;
  if (!a.plots.empty()) c += " --plots " + a.plots;
  c += std::string(" --format ") + sim::to_string(a.format);
  if (!a.out.empty()) c += " --out " + a.out;
  return c + " --force";
}

int run_validate(const ValidateArgs& a) {
  const sim::MeasuredSources sources{a.references, a.logs, log_facts(a.facts)};
  auto measured = sim::read_measured_points(sources, presets(a.scenario.calibration).dir());
  if (!measured) return fail(measured.error().message);
  auto base = load(a.scenario);
  if (!base) return fail(base.error().message);
  auto points = sim::points_on(*measured, base->scenario());
  if (!points) return fail(points.error().message);
  auto file = load(a.scenario, {"cluster.nodes=" + std::to_string(sim::largest_node_count(*points))});
  if (!file) return fail(file.error().message);
  const sim::Scenario& sc = file->scenario();
  std::vector<sim::NamedPath> inputs = {{"scenario", a.scenario.scenario}};
  for (const std::string& r : a.references) inputs.push_back({"--reference", r});
  for (const std::string& l : a.logs) inputs.push_back({"--nccl-tests", l});
  if (Status ok = sim::check_outputs({{"--out", a.out}}, inputs, a.force); !ok) return fail(ok.error().message);
  const auto figures = sim::series_figures(*points, a.plots);
  if (Status ok = sim::check_series_figures(a.plots, figures, a.force); !ok) return fail(ok.error().message);
  ProgressLine progress;
  auto rows = sim::simulate_measured_points(sc, *points, [&](int done, int total) {
    progress.show_count(static_cast<std::size_t>(done), static_cast<std::size_t>(total), "measured points simulated");
  });
  progress.finish();
  if (!rows) return fail(rows.error().message);
  auto linked = sim::draw_series_figures(*rows, figures, a.out, a.force);
  if (!linked) return fail(linked.error().message);
  Status written = sim::write_output(a.out, a.force, [&](std::ostream& o) {
    sim::write_validation_report(o, *rows, sc, a.format, command_line(a), *linked);
  });
  return written ? 0 : fail(written.error().message);
}

void add_output_args(CLI::App& cmd, std::string& out, bool& force) {
  cmd.add_option("--out", out, "write there instead of standard output (never overwrites without --force)")->type_name("FILE");
  cmd.add_flag("--force", force, "allow --out to replace an existing file");
}

}  // namespace

void add_collective_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<CollectiveArgs>();
  CLI::App* cmd = app.add_subcommand("collective", "nccl-tests-style table of one collective over node counts and sizes");
  cmd->footer(R"(Simulates one NCCL collective, as nccl-tests would run it, for every (node count, size) pair, on
the first NODES nodes of the scenario's cluster (which is sized for the largest count given), with
NCCL's algorithms, protocols and tuner. Prints time, algbw = size/time and busbw = algbw * factor,
with nccl-tests' factors: (n-1)/n for allgather, reducescatter and alltoall, 2(n-1)/n for allreduce,
1 for sendrecv. Size is the whole buffer as in nccl-tests (allgather: the gathered output; alltoall:
each rank's send buffer, size/n to every peer). alltoall runs as NCCL does, a grouped send/recv to
every peer with PXN across nodes, always as fluid flows (--fidelity and --algo do not apply), or with
--dispatcher hierarchical as DeepEP's normal kernels do (one RDMA transfer per node pair and rail,
then NVLink inside the destination node).

--gpus-per-node K runs the collective on the first K GPUs of each node only, as its own
communicator (nccl-tests -g K on one node, or K processes per node): the group a tensor-, context-
or expert-parallel layout of degree K runs in. NCCL searches its graphs for those K GPUs, so its
choice changes with K: on a DGX H100, AllReduce runs as Ring below 6 GPUs and as NVLS from 6
(NVLS pulls from each GPU once per channel, one channel per GPU: too few channels on 2 or 4). E.g.
  commbound collective scenarios/examples/dgx-h100-ib-ndr.toml --op allreduce --nodes 1 \
      --gpus-per-node 2 --bytes 1M:1G
)");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--op", a->op, "allgather | reducescatter | allreduce | sendrecv | alltoall")
      ->type_name("OP")->required()
      ->check(op_choice({network::CollectiveOp::all_gather, network::CollectiveOp::reduce_scatter,
                         network::CollectiveOp::all_reduce, network::CollectiveOp::send_recv,
                         network::CollectiveOp::all_to_all}));
  cmd->add_option("--nodes", a->nodes, "node counts: \"1,2,4\" or \"1:512\" (doubling)")->type_name("LIST")->required();
  cmd->add_option("--bytes", a->bytes, "sizes with binary suffixes K M G: \"1G\", \"8M,64M\", \"1K:1G\" (doubling)")
      ->type_name("LIST")->required();
  cmd->add_option("--gpus-per-node", a->gpus_per_node,
                  "run on the first K GPUs of each node, as their own communicator (default: all of the node's)")
      ->type_name("K")->check(CLI::Range(1, 1024));
  cmd->add_option("--algo", a->algo,
                  "force " + algorithm_names() + " (NCCL_ALGO); default: NCCL's tuner, or [nccl].algorithm")
      ->type_name("ALGO")
      ->check(algorithm_choice());
  cmd->add_option("--proto", a->proto, "force LL | LL128 | Simple (NCCL_PROTO); default: tuner, or [nccl].protocol")
      ->type_name("PROTO")->check(CLI::IsMember({"LL", "LL128", "Simple"}));
  cmd->add_option("--fidelity", a->fidelity,
                  "fluid (default; one flow per edge and channel) or step (every ring step / tree chunk a SimGrid "
                  "communication; slower, for validation)")
      ->type_name("F")->check(CLI::IsMember({"fluid", "step"}));
  cmd->add_option("--dispatcher", a->dispatcher, "alltoall: nccl (default) | hierarchical (DeepEP's normal kernels)")
      ->type_name("D")->check(CLI::IsMember({"nccl", "hierarchical"}));
  add_format_option(*cmd, a->format, report_formats({sim::Format::nccl_tests}),
                    " (nccl-tests' own columns and footer, one run per node count)");
  cmd->add_flag("--explain", a->explain,
                "per point: NCCL's tuner estimate for every algorithm and protocol, then the simulated time term by "
                "term (launch, latency chain, messages, bytes) and the term that limits it; an alltoall also lists its "
                "busiest NVLink and NIC, each at its rate alone (which phase bounds it)");
  add_output_args(*cmd, a->out, a->force);
  cmd->callback([a, &exit_code] { exit_code = run_collective(*a); });
}

void add_platform_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<PlatformArgs>();
  CLI::App* cmd = app.add_subcommand("platform", "describe the emulated platform; optionally export it as SimGrid XML");
  cmd->footer(R"(Builds the scenario's platform and prints what it holds: nodes, GPUs, NICs, links with their
effective rates, fabric levels and routing. --export FILE writes it as SimGrid XML (platform DTD
4.1, Full routing with every host pair's route, so limited to small platforms).
)");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--export", a->export_path, "SimGrid XML output (never overwrites without --force)")->type_name("FILE");
  cmd->add_flag("--force", a->force, "allow --export to replace an existing file");
  cmd->callback([a, &exit_code] { exit_code = run_platform(*a); });
}

void add_validate_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand("validate", "real nccl-tests measurements vs simulated, on the scenario's GPU");
  cmd->footer(R"(Simulates every measured point on the scenario's GPU and node shape on the scenario's cluster
(the point's node count; a named algorithm is forced, "any"/"default" lets NCCL's tuner choose) and
prints measured busbw, simulated busbw, their ratio and the source, then the error by band (node
count x collective x size): median and max |error|, error = simulated / measured - 1 (positive:
the model is optimistic). Nothing is fitted to these points.

Measured points come from reference tables (--reference; default: calibration/reference/
nccl-tests-published.csv, points-1to4-nodes.csv, nccl-tests-at-scale.csv (the public runs at 8 to
248 nodes that no fit reads) and aws-p5-efa-2to4-nodes.csv) and from nccl-tests logs as printed
(--nccl-tests, e.g. the output of commbound-nccl-bench or of your own cluster; --op, --nodes,
--gpus-per-node fill what a log does not print, as for fit-fabric). A multi-node point is
compared only on a scenario whose link NCCL runs over the same transport (the table's nccl_net
column, IB when absent, against the link's nccl_net): the AWS EFA runs check
scenarios/examples/aws-p5-efa.toml, the InfiniBand and RoCE runs the others. The measured fabrics
are not always the scenario's otherwise: read the source column.

--format markdown with --plots DIR writes the accuracy document with one figure per measured
sweep (measured and simulated busbw against size). docs/accuracy_nccl_tests.md is made so:
  commbound validate scenarios/examples/dgx-h100-ib-ndr.toml --plots docs/figures/accuracy \
      --format markdown --out docs/accuracy_nccl_tests.md --force
)");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--reference", a->references,
                  "a reference table (repeatable): gpu,nodes,gpus_per_node,collective,algorithm,bytes,busbw_GBps,source "
                  "or source_url,platform,nccl_version,nodes,gpus_per_node,op,bytes,busbw_GBps,algo_if_known,notes; "
                  "either with an optional nccl_net column (IB | Libfabric)")
      ->type_name("CSV");
  cmd->add_option("--nccl-tests", a->logs, "an nccl-tests log or a manifest of logs (*.toml; repeatable)")
      ->type_name("LOG");
  add_log_fact_args(*cmd, a->facts);
  cmd->add_option("--plots", a->plots, "write one PNG per measured sweep of >= 3 points into DIR")->type_name("DIR");
  add_format_option(*cmd, a->format, report_formats({sim::Format::markdown}));
  add_output_args(*cmd, a->out, a->force);
  cmd->callback([a, &exit_code] { exit_code = run_validate(*a); });
}

}  // namespace commbound::cli
