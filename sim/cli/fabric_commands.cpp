// commbound collective | platform | validate: the emulated fabric and NCCL's collectives on it.
#include "calibration/base/file_type.hpp"
#include "network/nccl_tests.hpp"
#include "network/platform.hpp"
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "sim/fit/fabric_fitter.hpp"
#include "sim/report/collective_report.hpp"
#include "sim/report/output.hpp"
#include "sim/report/plot.hpp"
#include "sim/report/validation.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

namespace commbound::cli {
namespace {

// --export writes an N^2 route table; beyond this many hosts the file would reach gigabytes.
constexpr int kExportMaxHosts = 1200;

struct CollectiveArgs {
  ScenarioArgs scenario;
  std::string op, nodes, bytes, algo, proto, fidelity, dispatcher, format = "table", out;
  int gpus_per_node = 0;  // 0: every GPU of each node
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
  const sim::Format format = a.format == "csv" ? sim::Format::csv : a.format == "json" ? sim::Format::json : sim::Format::table;
  // The file as written must be valid, even where --nodes will resize the cluster.
  if (auto as_written = load(a.scenario); !as_written) return fail(as_written.error().message);
  const int max_nodes = *std::max_element(sweep.nodes.begin(), sweep.nodes.end());
  auto file = load(a.scenario, {"cluster.nodes=" + std::to_string(max_nodes)});
  if (!file) return fail(file.error().message);
  const sim::Scenario& sc = file->scenario();
  if (a.gpus_per_node > sc.cluster.node.gpus) {
    return fail("--gpus-per-node " + std::to_string(a.gpus_per_node) + ": node type " + sc.cluster.node.name +
                " has " + std::to_string(sc.cluster.node.gpus) + " GPUs");
  }
  if (a.gpus_per_node == 1 && sweep.op != network::CollectiveOp::send_recv &&
      *std::min_element(sweep.nodes.begin(), sweep.nodes.end()) == 1) {
    return fail("--gpus-per-node 1 on 1 node is a single GPU: a collective needs at least 2");
  }
  sweep.gpus_per_node = a.gpus_per_node;
  sweep.algorithm = a.algo.empty() ? sc.nccl_options.algorithm : network::parse_algorithm(a.algo);
  sweep.protocol = a.proto.empty() ? sc.nccl_options.protocol : network::parse_protocol(a.proto);
  sweep.fidelity = a.fidelity.empty() ? sc.nccl_options.fidelity : *network::parse_fidelity(a.fidelity);
  if (!a.dispatcher.empty()) {
    if (sweep.op != network::CollectiveOp::all_to_all) return fail("--dispatcher " + a.dispatcher + ": for --op alltoall only");
    sweep.all_to_all_method = *network::parse_all_to_all_method(a.dispatcher);
  }
  if (Status ok = sim::check_writable(a.out, a.force); !ok) return fail(ok.error().message);
  auto platform = network::Platform::create(sc.cluster);
  if (!platform) return fail(sc.path + ": " + platform.error().message);
  const bool show_progress = isatty(STDERR_FILENO) != 0;
  auto rows = network::run_sweep(**platform, sc.nccl, sweep, [&](int done, int total) {
    if (show_progress) std::cerr << "\r[" << done << "/" << total << "] simulated" << (done == total ? "\n" : "") << std::flush;
  });
  if (!rows) return fail(rows.error().message);
  std::ostringstream title;
  title << "commbound collective: " << network::to_string(sweep.op) << " on "
        << (a.gpus_per_node > 0 && sweep.op != network::CollectiveOp::send_recv
                ? fmt::format("{} of the {} GPUs of ", a.gpus_per_node, sc.cluster.node.gpus)
                : std::string())
        << sc.cluster.node.name << " x up to " << max_nodes << " nodes, " << network::to_string(sc.cluster.fabric.topology) << " "
        << sc.cluster.fabric.link.name << " (" << network::to_string(sc.cluster.fabric.routing) << ", "
        << sc.cluster.fabric.oversubscription << ":1), NCCL " << sc.nccl.release << " model";
  Status written = sim::write_output(a.out, a.force, [&](std::ostream& o) {
    sim::write_collective_report(o, *rows, format, title.str());
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
  if (Status ok = sim::check_writable(a.export_path, a.force); !ok) return fail(ok.error().message);
  auto platform = network::Platform::create(sc.cluster);
  if (!platform) return fail(sc.path + ": " + platform.error().message);
  const auto& cl = sc.cluster;
  const auto& nd = cl.node;
  const network::Platform& p = **platform;
  std::cout << "platform: " << cl.nodes << " x " << nd.name << " = " << cl.gpus() << " GPUs (" << nd.gpu << ")\n"
            << "  NVLink  " << nd.nvlink.name << ": " << nd.nvlink.effective_bw_bytes_per_s() / 1e9
            << " GB/s per GPU per direction (" << nd.nvlink.bw_bytes_per_s / 1e9 << " x " << nd.nvlink.efficiency << ")"
            << (nd.nvlink_topology == network::NvlinkTopology::mesh
                    ? fmt::format(", direct mesh (no NVSwitch): {:g} GB/s per GPU pair", nd.nvlink_link_bw_bytes_per_s() / 1e9)
                    : std::string(", NVSwitch"))
            << (nd.nvls ? ", NVLS" : "") << "\n"
            << "  PCIe    " << nd.pcie.name << ": " << nd.pcie.effective_bw_bytes_per_s() / 1e9 << " GB/s\n"
            << "  NICs    " << nd.nics << " per node, " << cl.fabric.link.name << ": "
            << cl.fabric.link.effective_bw_bytes_per_s() / 1e9 << " GB/s per direction\n"
            << "  fabric  " << network::to_string(cl.fabric.topology) << ", " << p.fabric_levels() << " level(s), "
            << p.leaf_switches() << " leaf switch(es) of radix " << cl.fabric.switch_radix << " (" << p.leaf_down_ports()
            << " down / " << p.leaf_up_ports() << " up ports), " << network::to_string(cl.fabric.routing)
            << " routing, " << cl.fabric.switch_latency_s * 1e9 << " ns per switch\n"
            << "  NCCL    " << sc.nccl.release << " model, " << nd.nccl_channels << " channels\n";
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
  std::string format = "table", out, plots;
  bool force = false;
};

// The measured points the arguments name: reference tables and nccl-tests logs (default: both
// shipped reference tables).
Expected<std::vector<sim::PublishedPoint>> measured_points(const ValidateArgs& a) {
  std::vector<std::string> references = a.references;
  if (references.empty() && a.logs.empty()) {
    const auto dir = presets(a.scenario.calibration).dir() / "reference";
    references = {(dir / "nccl-tests-published.csv").string(), (dir / "points-1to4-nodes.csv").string()};
  }
  std::vector<sim::PublishedPoint> points;
  for (const std::string& path : references) {
    auto read = sim::read_reference(path);
    if (!read) return read.error();
    points.insert(points.end(), read->begin(), read->end());
  }
  if (!a.logs.empty()) {
    auto logs = sim::read_logs(a.logs, log_facts(a.facts));
    if (!logs) return logs.error();
    const auto from_logs = sim::points_from_logs(*logs);
    points.insert(points.end(), from_logs.begin(), from_logs.end());
  }
  return points;
}

// One figure per measured sweep of three points or more: DIR/NN-op-Nn.png, in the order read.
std::vector<sim::SeriesFigure> figure_paths(const std::vector<sim::PublishedPoint>& points, const std::string& dir) {
  std::vector<sim::SeriesFigure> figures;
  if (dir.empty()) return figures;
  std::vector<std::string> order;
  std::map<std::string, int> count;
  for (const auto& p : points) {
    if (count[p.series]++ == 0) order.push_back(p.series);
  }
  for (const std::string& series : order) {
    if (count[series] < 3) continue;
    const auto& first = *std::find_if(points.begin(), points.end(), [&](const auto& p) { return p.series == series; });
    const std::string name = fmt::format("{:02d}-{}-{}n.png", figures.size() + 1, network::to_string(first.point.op),
                                         first.point.nodes);
    figures.push_back({series, (std::filesystem::path(dir) / name).string()});
  }
  return figures;
}

sim::LinePlot series_plot(const std::vector<sim::ValidationRow>& rows, const std::string& series) {
  sim::LinePlot plot;
  plot.title = series.size() > 110 ? series.substr(0, 107) + "..." : series;
  plot.x_label = "size (bytes, as nccl-tests)";
  plot.y_label = "busbw (GB/s)";
  plot.x_bytes = true;
  sim::PlotSeries measured{"measured", {}, "linespoints"}, simulated{"simulated (commbound)", {}, "linespoints"};
  for (const auto& r : rows) {
    if (r.published.series != series) continue;
    measured.points.emplace_back(r.published.point.size_bytes, r.published.busbw_bytes_per_s / 1e9);
    simulated.points.emplace_back(r.published.point.size_bytes, r.simulated.bus_bw_bytes_per_s / 1e9);
  }
  plot.series = {measured, simulated};
  return plot;
}

std::string command_line(const ValidateArgs& a) {
  std::string c = "commbound validate " + a.scenario.scenario;
  for (const auto& s : a.scenario.sets) c += " --set " + s;
  for (const auto& r : a.references) c += " --reference " + r;
  for (const auto& l : a.logs) c += " --nccl-tests " + l;
  if (!a.plots.empty()) c += " --plots " + a.plots;
  c += " --format " + a.format;
  if (!a.out.empty()) c += " --out " + a.out;
  return c + " --force";
}

int run_validate(const ValidateArgs& a) {
  auto measured = measured_points(a);
  if (!measured) return fail(measured.error().message);
  auto base = load(a.scenario);
  if (!base) return fail(base.error().message);
  const auto points = sim::matching(*measured, base->scenario());
  if (points.empty()) {
    return fail("no measured point on GPU " + base->scenario().cluster.node.gpu + " with " +
                std::to_string(base->scenario().cluster.node.gpus) + " GPUs per node");
  }
  int max_nodes = 1;
  for (const auto& p : points) max_nodes = std::max(max_nodes, p.point.nodes);
  auto file = load(a.scenario, {"cluster.nodes=" + std::to_string(max_nodes)});
  if (!file) return fail(file.error().message);
  const sim::Scenario& sc = file->scenario();
  if (Status ok = sim::check_writable(a.out, a.force); !ok) return fail(ok.error().message);
  auto figures = figure_paths(points, a.plots);
  if (!a.plots.empty()) {
    auto type = file_type_at(a.plots);
    if (!type) return fail(type.error().message);
    if (*type != std::filesystem::file_type::directory) return fail(a.plots + ": not a directory");
  }
  for (const auto& f : figures) {
    if (Status ok = sim::check_writable(f.path, a.force); !ok) return fail(ok.error().message);
  }
  auto platform = network::Platform::create(sc.cluster);
  if (!platform) return fail(sc.path + ": " + platform.error().message);
  std::vector<network::SweepPoint> sweep;
  for (const auto& p : points) sweep.push_back(p.point);
  const bool show_progress = isatty(STDERR_FILENO) != 0;
  auto rows = network::run_points(**platform, sc.nccl, sweep, sc.nccl_options.fidelity, [&](int done, int total) {
    if (show_progress) std::cerr << "\r[" << done << "/" << total << "] simulated" << (done == total ? "\n" : "") << std::flush;
  });
  if (!rows) return fail(rows.error().message);
  std::vector<sim::ValidationRow> table;
  for (std::size_t i = 0; i < points.size(); ++i) table.push_back({points[i], (*rows)[i], ""});
  sim::exclude_unhealthy(table, sc.cluster);
  for (auto& f : figures) {
    if (Status drawn = sim::render_plot(series_plot(table, f.series), f.path, a.force); !drawn) {
      return fail(drawn.error().message);
    }
    if (!a.out.empty()) {  // the document links its figures relative to itself
      // absolute() fails only without a working directory: then the link stays as given.
      std::error_code doc_ec, figure_ec;
      const auto doc_dir = std::filesystem::absolute(a.out, doc_ec).parent_path();
      const auto figure = std::filesystem::absolute(f.path, figure_ec);
      if (!doc_ec && !figure_ec) f.path = figure.lexically_relative(doc_dir).string();
    }
  }
  Status written = sim::write_output(a.out, a.force, [&](std::ostream& o) {
    if (a.format == "markdown") {
      sim::write_accuracy_markdown(o, table, sc, command_line(a), figures);
      return;
    }
    if (a.format == "table") o << "# commbound validate: " << sc.path << ", " << table.size() << " measured points\n";
    sim::write_validation(o, table, a.format == "csv");
    if (a.format == "table") {
      o << "\n# error = simulated busbw / measured - 1 (positive: optimistic), by band\n";
      sim::write_summary(o, sim::summarise(table));
    }
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
      ->check(CLI::IsMember({"allgather", "reducescatter", "allreduce", "sendrecv", "alltoall"}));
  cmd->add_option("--nodes", a->nodes, "node counts: \"1,2,4\" or \"1:512\" (doubling)")->type_name("LIST")->required();
  cmd->add_option("--bytes", a->bytes, "sizes with binary suffixes K M G: \"1G\", \"8M,64M\", \"1K:1G\" (doubling)")
      ->type_name("LIST")->required();
  cmd->add_option("--gpus-per-node", a->gpus_per_node,
                  "run on the first K GPUs of each node, as their own communicator (default: all of the node's)")
      ->type_name("K")->check(CLI::Range(1, 1024));
  cmd->add_option("--algo", a->algo, "force ring | tree | nvls | nvlstree | pat (NCCL_ALGO); default: NCCL's tuner, or [nccl].algorithm")
      ->type_name("ALGO")->check(CLI::IsMember({"ring", "tree", "nvls", "nvlstree", "pat"}));
  cmd->add_option("--proto", a->proto, "force LL | LL128 | Simple (NCCL_PROTO); default: tuner, or [nccl].protocol")
      ->type_name("PROTO")->check(CLI::IsMember({"LL", "LL128", "Simple"}));
  cmd->add_option("--fidelity", a->fidelity,
                  "fluid (default; one flow per edge and channel) or step (every ring step / tree chunk a SimGrid "
                  "communication; slower, for validation)")
      ->type_name("F")->check(CLI::IsMember({"fluid", "step"}));
  cmd->add_option("--dispatcher", a->dispatcher, "alltoall: nccl (default) | hierarchical (DeepEP's normal kernels)")
      ->type_name("D")->check(CLI::IsMember({"nccl", "hierarchical"}));
  cmd->add_option("--format", a->format, "table (default) | csv | json")->check(format_choice({"table", "csv", "json"}));
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
nccl-tests-published.csv and points-1to4-nodes.csv) and from nccl-tests logs as printed
(--nccl-tests, e.g. the output of commbound-nccl-bench or of your own cluster; --op, --nodes,
--gpus-per-node fill what a log does not print, as for fit-fabric). The measured fabrics are not
always the scenario's: read the source column.

--format markdown with --plots DIR writes the accuracy document with one figure per measured
sweep (measured and simulated busbw against size). docs/accuracy.md is made so:
  commbound validate scenarios/examples/dgx-h100-ib-ndr.toml --plots docs/figures/accuracy \
      --format markdown --out docs/accuracy.md --force
)");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--reference", a->references,
                  "a reference table (repeatable): gpu,nodes,gpus_per_node,collective,algorithm,bytes,busbw_GBps,source "
                  "or source_url,platform,nccl_version,nodes,gpus_per_node,op,bytes,busbw_GBps,algo_if_known,notes")
      ->type_name("CSV");
  cmd->add_option("--nccl-tests", a->logs, "an nccl-tests log or a manifest of logs (*.toml; repeatable)")
      ->type_name("LOG");
  add_log_fact_args(*cmd, a->facts);
  cmd->add_option("--plots", a->plots, "write one PNG per measured sweep of >= 3 points into DIR")->type_name("DIR");
  cmd->add_option("--format", a->format, "table (default) | csv | markdown")
      ->check(format_choice({"table", "csv", "markdown"}));
  add_output_args(*cmd, a->out, a->force);
  cmd->callback([a, &exit_code] { exit_code = run_validate(*a); });
}

}  // namespace commbound::cli
