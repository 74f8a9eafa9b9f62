// commbound collective | platform | validate: the emulated fabric and NCCL's collectives on it.
#include "network/nccl_tests.hpp"
#include "network/platform.hpp"
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "sim/report/collective_report.hpp"
#include "sim/report/output.hpp"
#include "sim/report/validation.hpp"

#include <unistd.h>

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
  std::string op, nodes, bytes, algo, proto, fidelity, format = "table", out;
  bool force = false;
};

int run_collective(const CollectiveArgs& a) {
  network::CollectiveSweep sweep;
  sweep.op = *network::parse_collective_op(a.op);
  auto node_list = sim::parse_list("--nodes", a.nodes, false);
  if (!node_list) return fail(node_list.error().message);
  for (double n : *node_list) sweep.nodes.push_back(static_cast<int>(n));
  auto size_list = sim::parse_list("--bytes", a.bytes, true);
  if (!size_list) return fail(size_list.error().message);
  sweep.sizes_bytes = *size_list;
  const sim::Format format = a.format == "csv" ? sim::Format::csv : a.format == "json" ? sim::Format::json : sim::Format::table;
  // The file as written must be valid, even where --nodes will resize the cluster.
  if (auto as_written = load(a.scenario); !as_written) return fail(as_written.error().message);
  const int max_nodes = *std::max_element(sweep.nodes.begin(), sweep.nodes.end());
  auto file = load(a.scenario, {"cluster.nodes=" + std::to_string(max_nodes)});
  if (!file) return fail(file.error().message);
  const sim::Scenario& sc = file->scenario();
  sweep.algorithm = a.algo.empty() ? sc.nccl_options.algorithm : network::parse_algorithm(a.algo);
  sweep.protocol = a.proto.empty() ? sc.nccl_options.protocol : network::parse_protocol(a.proto);
  sweep.fidelity = a.fidelity.empty() ? sc.nccl_options.fidelity : *network::parse_fidelity(a.fidelity);
  if (Status ok = sim::check_writable(a.out, a.force); !ok) return fail(ok.error().message);
  auto platform = network::Platform::create(sc.cluster);
  if (!platform) return fail(sc.path + ": " + platform.error().message);
  const bool show_progress = isatty(STDERR_FILENO) != 0;
  auto rows = network::run_sweep(**platform, sc.nccl, sweep, [&](int done, int total) {
    if (show_progress) std::cerr << "\r[" << done << "/" << total << "] simulated" << (done == total ? "\n" : "") << std::flush;
  });
  if (!rows) return fail(rows.error().message);
  std::ostringstream title;
  title << "commbound collective: " << network::to_string(sweep.op) << " on " << sc.cluster.node.name << " x up to "
        << max_nodes << " nodes, " << network::to_string(sc.cluster.fabric.topology) << " "
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
  std::string reference, format = "table", out;
  bool force = false;
};

int run_validate(const ValidateArgs& a) {
  const std::string reference = a.reference.empty()
                                    ? (presets(a.scenario.calibration).dir() / "reference" / "nccl-tests-published.csv").string()
                                    : a.reference;
  auto published = sim::read_published(reference);
  if (!published) return fail(published.error().message);
  auto base = load(a.scenario);
  if (!base) return fail(base.error().message);
  const auto points = sim::matching(*published, base->scenario());
  if (points.empty()) return fail(reference + ": no published point for GPU " + base->scenario().cluster.node.gpu);
  int max_nodes = 1;
  for (const auto& p : points) max_nodes = std::max(max_nodes, p.point.nodes);
  auto file = load(a.scenario, {"cluster.nodes=" + std::to_string(max_nodes)});
  if (!file) return fail(file.error().message);
  const sim::Scenario& sc = file->scenario();
  if (Status ok = sim::check_writable(a.out, a.force); !ok) return fail(ok.error().message);
  auto platform = network::Platform::create(sc.cluster);
  if (!platform) return fail(sc.path + ": " + platform.error().message);
  std::vector<network::SweepPoint> sweep;
  for (const auto& p : points) sweep.push_back(p.point);
  auto rows = network::run_points(**platform, sc.nccl, sweep, sc.nccl_options.fidelity, {});
  if (!rows) return fail(rows.error().message);
  std::vector<sim::ValidationRow> table;
  for (std::size_t i = 0; i < points.size(); ++i) table.push_back({points[i], (*rows)[i]});
  Status written = sim::write_output(a.out, a.force, [&](std::ostream& o) {
    if (a.format == "table") o << "# commbound validate: " << sc.path << " vs " << reference << "\n";
    sim::write_validation(o, table, a.format == "csv");
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
with nccl-tests' factors: (n-1)/n for allgather and reducescatter, 2(n-1)/n for allreduce, 1 for
sendrecv. Size is the whole buffer as in nccl-tests (allgather: the gathered output).
)");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--op", a->op, "allgather | reducescatter | allreduce | sendrecv")
      ->type_name("OP")->required()->check(CLI::IsMember({"allgather", "reducescatter", "allreduce", "sendrecv"}));
  cmd->add_option("--nodes", a->nodes, "node counts: \"1,2,4\" or \"1:512\" (doubling)")->type_name("LIST")->required();
  cmd->add_option("--bytes", a->bytes, "sizes with binary suffixes K M G: \"1G\", \"8M,64M\", \"1K:1G\" (doubling)")
      ->type_name("LIST")->required();
  cmd->add_option("--algo", a->algo, "force ring | tree | nvls | nvlstree (NCCL_ALGO); default: NCCL's tuner, or [nccl].algorithm")
      ->type_name("ALGO")->check(CLI::IsMember({"ring", "tree", "nvls", "nvlstree"}));
  cmd->add_option("--proto", a->proto, "force LL | LL128 | Simple (NCCL_PROTO); default: tuner, or [nccl].protocol")
      ->type_name("PROTO")->check(CLI::IsMember({"LL", "LL128", "Simple"}));
  cmd->add_option("--fidelity", a->fidelity,
                  "fluid (default; one flow per edge and channel) or step (every ring step / tree chunk a SimGrid "
                  "communication; slower, for validation)")
      ->type_name("F")->check(CLI::IsMember({"fluid", "step"}));
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
  CLI::App* cmd = app.add_subcommand("validate", "published nccl-tests results vs simulated, on the scenario's GPU");
  cmd->footer(R"(Reads the published nccl-tests results (default: calibration/reference/nccl-tests-published.csv),
keeps the rows measured on the scenario's GPU, simulates each on the scenario's cluster (the row's
node count; a named algorithm is forced, "any" lets NCCL's tuner choose; "large" = 8 GiB,
"multi" = 8 nodes) and prints published busbw, simulated busbw and their ratio with the source.
Nothing is fitted to them. The published fabrics are not always the scenario's: read the source column.
)");
  add_scenario_args(*cmd, a->scenario);
  cmd->add_option("--reference", a->reference,
                  "the published table (columns: gpu,nodes,gpus_per_node,collective,algorithm,bytes,busbw_GBps,source)")
      ->type_name("CSV");
  cmd->add_option("--format", a->format, "table (default) | csv")->check(format_choice({"table", "csv"}));
  add_output_args(*cmd, a->out, a->force);
  cmd->callback([a, &exit_code] { exit_code = run_validate(*a); });
}

}  // namespace commbound::cli
