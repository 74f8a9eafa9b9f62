// commbound: the command-line front end. Parses arguments, loads the scenario, runs, reports.
// Exit codes: 0 success, 2 bad input (scenario, flags, refusing to overwrite), 1 internal failure.
#include "network/nccl_tests.hpp"
#include "network/platform.hpp"
#include "sim/collective_report.hpp"
#include "sim/output.hpp"
#include "sim/presets.hpp"
#include "sim/scenario.hpp"
#include "sim/engine.hpp"
#include "sim/layout.hpp"
#include "sim/metrics.hpp"
#include "sim/validation.hpp"
#include "sim/workload.hpp"

#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <boost/program_options.hpp>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace po = boost::program_options;
using namespace commbound;

namespace {

constexpr int kExitBadInput = 2;
// --export writes an N^2 route table; beyond this many hosts the file would reach gigabytes.
constexpr int kExportMaxHosts = 1200;

const char* kUsage = R"(commbound: emulate NCCL collectives and LLM training on GPU clusters (SimGrid).

Usage:
  commbound run SCENARIO [--format table|csv|json] [--trace FILE] [options]
  commbound collective SCENARIO --op OP --nodes LIST --bytes LIST [options]
  commbound platform SCENARIO [--export FILE] [options]
  commbound validate SCENARIO [--reference CSV] [options]
  commbound help [COMMAND]

Commands:
  run          one training iteration of the scenario's [model] with its [training] and
               [parallel] settings on its cluster: throughput, MFU, exposed communication,
               power, memory (a [sweep] repeats it for each value of one or more keys).
  collective   nccl-tests-style table: one collective over node counts and sizes, on the
               scenario's cluster and fabric, with NCCL's algorithms, protocols and tuner.
  platform     describe the emulated platform (nodes, GPUs, links, fabric levels) and
               optionally export it as SimGrid XML.
  validate     simulate every published nccl-tests point measured on the scenario's GPU
               and print published vs simulated busbw (nothing is fitted to them).

Every command takes:
  --set KEY=VALUE        override a scenario key, same dotted names as the file
                         (e.g. --set cluster.nodes=64 --set fabric.link=roce-400g); repeatable
  --calibration DIR      preset data (default: the calibration/ shipped with commbound)

Examples:
  commbound run scenarios/paper/weak_scaling_7b.toml
  commbound run scenarios/paper/model_parallel_7b_256gpu.toml --set 'sweep.values=[[2, 4]]' --trace tp2pp4.json
  commbound collective scenarios/examples/dgx-h100-ib-ndr.toml --op allreduce --nodes 1:512 --bytes 1G
  commbound collective scenarios/examples/dgx-h100-roce.toml --op allgather --nodes 4 --bytes 1M:1G --format csv
  commbound platform scenarios/examples/dgx-h100-ib-ndr.toml --set cluster.nodes=2 --export dgx2.xml
  commbound validate scenarios/examples/dgx-a100-ib-hdr.toml

Scenario format, presets and models: README.md and docs/.
)";

const char* kCollectiveHelp = R"(commbound collective SCENARIO --op OP --nodes LIST --bytes LIST [options]

Simulates one NCCL collective, as nccl-tests would run it, for every (node count, size) pair, on
the first NODES nodes of the scenario's cluster (which is sized for the largest count given).
Prints time, algbw = size/time and busbw = algbw * factor, with nccl-tests' factors:
(n-1)/n for allgather and reducescatter, 2(n-1)/n for allreduce, 1 for sendrecv. Size is the
whole buffer as in nccl-tests (allgather: the gathered output).

Options:
  --op OP            allgather | reducescatter | allreduce | sendrecv
  --nodes LIST       node counts: "1,2,4" or "1:512" (doubling)
  --bytes LIST       sizes with binary suffixes K M G: "1G", "8M,64M", "1K:1G" (doubling)
  --algo ALGO        force ring | tree | nvls (NCCL_ALGO); default: NCCL's tuner, or [nccl].algorithm
  --proto PROTO      force LL | LL128 | Simple (NCCL_PROTO); default: tuner, or [nccl].protocol
  --fidelity F       fluid (default; one flow per edge and channel) or step (every ring step /
                     tree chunk a SimGrid communication; slower, for validation)
  --format F         table (default) | csv | json
  --out FILE         write there instead of standard output (never overwrites without --force)
  --force            allow --out to replace an existing file
  --set, --calibration   as for every command
)";

const char* kPlatformHelp = R"(commbound platform SCENARIO [--export FILE] [options]

Builds the scenario's platform and prints what it holds: nodes, GPUs, NICs, links with their
effective rates, fabric levels and routing. --export FILE writes it as SimGrid XML (platform
DTD 4.1, Full routing with every host pair's route, so limited to small platforms).

Options:
  --export FILE      SimGrid XML output (never overwrites without --force)
  --force            allow --export to replace an existing file
  --set, --calibration   as for every command
)";

const char* kValidateHelp = R"(commbound validate SCENARIO [--reference CSV] [options]

Reads the published nccl-tests results (default: calibration/reference/nccl-tests-published.csv),
keeps the rows measured on the scenario's GPU, simulates each on the scenario's cluster (the row's
node count; a named algorithm is forced, "any" lets NCCL's tuner choose; "large" = 8 GiB,
"multi" = 8 nodes) and prints published busbw, simulated busbw and their ratio with the source.
The published fabrics are not always the scenario's: read the source column.

Options:
  --reference CSV    the published table (columns: gpu,nodes,gpus_per_node,collective,algorithm,
                     bytes,busbw_GBps,source)
  --format F         table (default) | csv
  --out FILE, --force, --set, --calibration   as for collective
)";

const char* kRunHelp = R"(commbound run SCENARIO [--format table|csv|json] [--trace FILE] [options]

Simulates training iterations (warm-up, then one measured) of the scenario's model on its cluster:
per-GPU program (FSDP ZeRO-2/3 or DDP, optional Megatron tensor parallelism) on a compute stream
and communication streams, collectives through NCCL's algorithms on the emulated fabric. Prints
iteration time, tokens/s (global, per GPU), model TFLOP/s per GPU and MFU (PaLM FLOPs, see
docs/metrics.md), compute, communication and exposed communication time, power per GPU, tokens
per joule and memory per GPU. A layout that does not fit in GPU memory is reported with its
breakdown instead of being simulated.

Compute times come from a DERIVED datasheet roofline until a measured calibration table exists;
power from a DERIVED model. Both are marked in every report.

With a [sweep] table (key = "cluster.nodes", values = [1, 2, 4]) each value is one row; several
keys at once: key = ["parallel.tp", "parallel.pp"], values = [[1, 1], [2, 4]].

Options:
  --format F         table (default) | csv | json
  --trace FILE       Chrome/Perfetto trace: one process per simulated rank (one per pipeline
                     stage), one track per stream (no [sweep]; never overwrites
                     without --force)
  --out FILE, --force, --set, --calibration   as for collective
)";

struct Common {
  std::string scenario;
  std::vector<std::string> sets;
  std::string calibration;
};

void add_common(po::options_description& d, Common& c) {
  d.add_options()("scenario", po::value(&c.scenario))("set", po::value(&c.sets)->composing())(
      "calibration", po::value(&c.calibration));
}

int fail(const std::string& message) {
  std::cerr << "commbound: " << message << "\n";
  return kExitBadInput;
}

// Parses `args` with `desc`; the first positional argument is the scenario.
Status parse(const std::vector<std::string>& args, const po::options_description& desc, po::variables_map& vm) {
  po::positional_options_description pos;
  pos.add("scenario", 1);
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return Error{e.what()};
  }
  return Ok{};
}

Expected<sim::Scenario> load(const Common& c) {
  if (c.scenario.empty()) return Error{"missing SCENARIO (a .toml file); see commbound help"};
  const sim::Presets presets(c.calibration.empty() ? sim::default_calibration_dir() : std::filesystem::path(c.calibration));
  return sim::load_scenario(c.scenario, c.sets, presets);
}

int cmd_collective(const std::vector<std::string>& args) {
  Common c;
  std::string op, nodes, bytes, algo, proto, fidelity, format = "table", out;
  bool force = false;
  po::options_description desc;
  add_common(desc, c);
  desc.add_options()("op", po::value(&op))("nodes", po::value(&nodes))("bytes", po::value(&bytes))(
      "algo", po::value(&algo))("proto", po::value(&proto))("fidelity", po::value(&fidelity))(
      "format", po::value(&format))("out", po::value(&out))("force", po::bool_switch(&force));
  po::variables_map vm;
  if (Status s = parse(args, desc, vm); !s) return fail(s.error().message + " (see commbound help collective)");
  if (op.empty() || nodes.empty() || bytes.empty()) return fail("collective needs --op, --nodes and --bytes (see commbound help collective)");

  network::CollectiveSweep sweep;
  auto parsed_op = network::parse_collective_op(op);
  if (!parsed_op) return fail("--op " + op + ": expected allgather, reducescatter, allreduce or sendrecv");
  sweep.op = *parsed_op;
  auto node_list = sim::parse_list("--nodes", nodes, false);
  if (!node_list) return fail(node_list.error().message);
  for (double n : *node_list) sweep.nodes.push_back(static_cast<int>(n));
  auto size_list = sim::parse_list("--bytes", bytes, true);
  if (!size_list) return fail(size_list.error().message);
  sweep.sizes_bytes = *size_list;
  sim::Format fmt = sim::Format::table;
  if (format == "csv") fmt = sim::Format::csv;
  else if (format == "json") fmt = sim::Format::json;
  else if (format != "table") return fail("--format " + format + ": expected table, csv or json");

  // The file as written must be valid, even where --nodes will resize the cluster.
  if (auto as_written = load(c); !as_written) return fail(as_written.error().message);
  const int max_nodes = *std::max_element(sweep.nodes.begin(), sweep.nodes.end());
  std::vector<std::string> sets = c.sets;
  sets.push_back("cluster.nodes=" + std::to_string(max_nodes));
  Common sized = c;
  sized.sets = sets;
  auto sc = load(sized);
  if (!sc) return fail(sc.error().message);
  sweep.algorithm = sc->nccl_options.algorithm;
  sweep.protocol = sc->nccl_options.protocol;
  sweep.fidelity = sc->nccl_options.fidelity;
  if (!algo.empty()) {
    auto a = network::parse_algorithm(algo);
    if (!a) return fail("--algo " + algo + ": expected ring, tree or nvls");
    sweep.algorithm = a;
  }
  if (!proto.empty()) {
    auto p = network::parse_protocol(proto);
    if (!p) return fail("--proto " + proto + ": expected LL, LL128 or Simple");
    sweep.protocol = p;
  }
  if (!fidelity.empty()) {
    auto f = network::parse_fidelity(fidelity);
    if (!f) return fail("--fidelity " + fidelity + ": expected fluid or step");
    sweep.fidelity = *f;
  }
  if (Status ok = sim::check_writable(out, force); !ok) return fail(ok.error().message);

  auto platform = network::Platform::create(sc->cluster);
  if (!platform) return fail(sc->path + ": " + platform.error().message);
  const bool show_progress = isatty(STDERR_FILENO) != 0;
  auto rows = network::run_sweep(**platform, sc->nccl, sweep, [&](int done, int total) {
    if (show_progress) std::cerr << "\r[" << done << "/" << total << "] simulated" << (done == total ? "\n" : "") << std::flush;
  });
  if (!rows) return fail(rows.error().message);
  std::ostringstream title;
  title << "commbound collective: " << network::to_string(sweep.op) << " on " << sc->cluster.node.name << " x up to "
        << max_nodes << " nodes, " << network::to_string(sc->cluster.fabric.topology) << " "
        << sc->cluster.fabric.link.name << " (" << network::to_string(sc->cluster.fabric.routing) << ", "
        << sc->cluster.fabric.oversubscription << ":1), NCCL " << sc->nccl.release << " model";
  Status written = sim::write_output(out, force, [&](std::ostream& o) {
    sim::write_collective_report(o, *rows, fmt, title.str());
  });
  if (!written) return fail(written.error().message);
  return 0;
}

int cmd_platform(const std::vector<std::string>& args) {
  Common c;
  std::string export_path;
  bool force = false;
  po::options_description desc;
  add_common(desc, c);
  desc.add_options()("export", po::value(&export_path))("force", po::bool_switch(&force));
  po::variables_map vm;
  if (Status s = parse(args, desc, vm); !s) return fail(s.error().message + " (see commbound help platform)");
  auto sc = load(c);
  if (!sc) return fail(sc.error().message);
  if (Status ok = sim::check_writable(export_path, force); !ok) return fail(ok.error().message);
  auto platform = network::Platform::create(sc->cluster);
  if (!platform) return fail(sc->path + ": " + platform.error().message);
  const auto& cl = sc->cluster;
  const auto& nd = cl.node;
  std::cout << "platform: " << cl.nodes << " x " << nd.name << " = " << cl.gpus() << " GPUs (" << nd.gpu << ")\n"
            << "  NVLink  " << nd.nvlink.name << ": " << nd.nvlink.effective_bw_bytes_per_s() / 1e9
            << " GB/s per GPU per direction (" << nd.nvlink.bw_bytes_per_s / 1e9 << " x " << nd.nvlink.efficiency << ")"
            << (nd.nvls ? ", NVLS" : "") << "\n"
            << "  PCIe    " << nd.pcie.name << ": " << nd.pcie.effective_bw_bytes_per_s() / 1e9 << " GB/s\n"
            << "  NICs    " << nd.nics << " per node, " << cl.fabric.link.name << ": "
            << cl.fabric.link.effective_bw_bytes_per_s() / 1e9 << " GB/s per direction\n"
            << "  fabric  " << network::to_string(cl.fabric.topology) << ", " << (*platform)->fabric_levels()
            << " level(s), " << (*platform)->leaf_switches() << " leaf switch(es) of radix " << cl.fabric.switch_radix
            << " (" << (*platform)->leaf_down_ports() << " down / " << (*platform)->leaf_up_ports()
            << " up ports), " << network::to_string(cl.fabric.routing) << " routing, "
            << cl.fabric.switch_latency_s * 1e9 << " ns per switch\n"
            << "  NCCL    " << sc->nccl.release << " model, " << nd.nccl_channels << " channels\n";
  if (!export_path.empty()) {
    std::ostringstream xml;
    if (Status s = (*platform)->export_xml(xml, kExportMaxHosts); !s) return fail(s.error().message);
    Status written = sim::write_output(export_path, force, [&](std::ostream& o) { o << xml.str(); });
    if (!written) return fail(written.error().message);
    std::cout << "  wrote   " << export_path << "\n";
  }
  return 0;
}

int cmd_validate(const std::vector<std::string>& args) {
  Common c;
  std::string reference, format = "table", out;
  bool force = false;
  po::options_description desc;
  add_common(desc, c);
  desc.add_options()("reference", po::value(&reference))("format", po::value(&format))("out", po::value(&out))(
      "force", po::bool_switch(&force));
  po::variables_map vm;
  if (Status s = parse(args, desc, vm); !s) return fail(s.error().message + " (see commbound help validate)");
  if (format != "table" && format != "csv") return fail("--format " + format + ": expected table or csv");
  const std::filesystem::path calibration =
      c.calibration.empty() ? sim::default_calibration_dir() : std::filesystem::path(c.calibration);
  if (reference.empty()) reference = (calibration / "reference" / "nccl-tests-published.csv").string();
  auto published = sim::read_published(reference);
  if (!published) return fail(published.error().message);
  auto base = load(c);
  if (!base) return fail(base.error().message);
  const auto points = sim::matching(*published, *base);
  if (points.empty()) return fail(reference + ": no published point for GPU " + base->cluster.node.gpu);
  int max_nodes = 1;
  for (const auto& p : points) max_nodes = std::max(max_nodes, p.point.nodes);
  Common sized = c;
  sized.sets.push_back("cluster.nodes=" + std::to_string(max_nodes));
  auto sc = load(sized);
  if (!sc) return fail(sc.error().message);
  if (Status ok = sim::check_writable(out, force); !ok) return fail(ok.error().message);
  auto platform = network::Platform::create(sc->cluster);
  if (!platform) return fail(sc->path + ": " + platform.error().message);
  std::vector<network::SweepPoint> sweep;
  for (const auto& p : points) sweep.push_back(p.point);
  auto rows = network::run_points(**platform, sc->nccl, sweep, sc->nccl_options.fidelity, {});
  if (!rows) return fail(rows.error().message);
  std::vector<sim::ValidationRow> table;
  for (std::size_t i = 0; i < points.size(); ++i) table.push_back({points[i], (*rows)[i]});
  Status written = sim::write_output(out, force, [&](std::ostream& o) {
    if (format == "table") o << "# commbound validate: " << sc->path << " vs " << reference << "\n";
    sim::write_validation(o, table, format == "csv");
  });
  if (!written) return fail(written.error().message);
  return 0;
}

// One training point, simulated in a child process (one SimGrid platform per process); the child
// sends back its metrics, or an error, as JSON through a pipe.
nlohmann::json simulate_point(const Common& c, const std::string& trace_path, bool force) {
  int fds[2];
  if (pipe(fds) != 0) return {{"error", "pipe failed"}};
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    nlohmann::json out;
    auto sc = load(c);
    if (!sc) {
      out = {{"error", sc.error().message}};
    } else if (!sc->training) {
      out = {{"error", sc->path + ": run needs a [model] section (and optionally [training], [parallel])"}};
    } else {
      const sim::TrainingSpec& t = *sc->training;
      const std::vector<sim::Program> stages = sim::build_programs(t);
      const sim::MemoryUse memory = sim::memory_per_gpu(t, sc->cluster.node.nccl_channels);
      sim::Metrics m;
      m.gpus = t.world();
      m.memory = memory;
      m.memory_bytes_per_gpu = memory.total_bytes;
      m.oom = !memory.fits();
      if (!m.oom) {
        auto platform = network::Platform::create(sc->cluster);
        if (!platform) {
          out = {{"error", sc->path + ": " + platform.error().message}};
        } else {
          const sim::CostModel cost(t.gpu);
          sim::EngineOptions options;
          options.algorithm = sc->nccl_options.algorithm;
          options.protocol = sc->nccl_options.protocol;
          const sim::IterationTimeline timeline = sim::simulate(**platform, sc->nccl, t, stages, cost, options);
          const sim::Layout layout(t.dp, t.tp, t.pp, t.cp);
          std::vector<int> stage_of;
          for (int r = 0; r < layout.world(); ++r) stage_of.push_back(layout.coords(r).pp);
          m = sim::compute_metrics(t, stages, stage_of, timeline, memory);
          if (!trace_path.empty()) {
            Status w = sim::write_output(trace_path, force,
                                         [&](std::ostream& o) { sim::write_trace(o, stages, stage_of, timeline); });
            if (!w) out = {{"error", w.error().message}};
          }
        }
      }
      if (out.is_null()) {
        std::ostringstream text;
        sim::write_metrics(text, {{"x", m}}, "json", "");
        out = nlohmann::json::parse(text.str())["rows"][0];
        out["memory_capacity_bytes"] = memory.capacity_bytes;
      }
    }
    const std::string text = out.dump();
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = write(fds[1], text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (text.empty()) return {{"error", "simulation process failed (status " + std::to_string(status) + ")"}};
  return nlohmann::json::parse(text);
}

sim::Metrics metrics_from_json(const nlohmann::json& j) {
  sim::Metrics m;
  m.gpus = j["gpus"];
  m.oom = j["oom"];
  m.memory_bytes_per_gpu = j["memory_bytes_per_gpu"];
  for (const auto& [what, bytes] : j["memory_breakdown_bytes"].items()) m.memory.bytes.emplace_back(what, bytes);
  m.memory.total_bytes = m.memory_bytes_per_gpu;
  m.memory.capacity_bytes = j["memory_capacity_bytes"];
  if (m.oom) return m;
  m.iteration_s = j["iteration_s"];
  m.tokens_per_s = j["tokens_per_s"];
  m.tokens_per_s_per_gpu = j["tokens_per_s_per_gpu"];
  m.model_tflops_per_gpu = j["model_tflops_per_gpu"];
  m.mfu = j["mfu"];
  m.compute_s = j["compute_s"];
  m.comm_s = j["comm_s"];
  m.exposed_comm_s = j["exposed_comm_s"];
  m.exposed_comm_fraction = j["exposed_comm_fraction"];
  m.power_w_per_gpu = j["power_w_per_gpu"];
  m.tokens_per_joule = j["tokens_per_joule"];
  return m;
}

int cmd_run(const std::vector<std::string>& args) {
  Common c;
  std::string format = "table", out, trace;
  bool force = false;
  po::options_description desc;
  add_common(desc, c);
  desc.add_options()("format", po::value(&format))("out", po::value(&out))("trace", po::value(&trace))(
      "force", po::bool_switch(&force));
  po::variables_map vm;
  if (Status s = parse(args, desc, vm); !s) return fail(s.error().message + " (see commbound help run)");
  if (format != "table" && format != "csv" && format != "json") return fail("--format " + format + ": expected table, csv or json");
  auto base = load(c);
  if (!base) return fail(base.error().message);
  if (!base->training) return fail(base->path + ": run needs a [model] section (and optionally [training], [parallel])");
  for (const std::string& path : {out, trace}) {
    if (Status ok = sim::check_writable(path, force); !ok) return fail(ok.error().message);
  }
  std::vector<std::pair<std::string, Common>> points;
  if (base->sweep) {
    if (!trace.empty() && base->sweep->values.size() > 1) {
      return fail("--trace needs one point: the [sweep] has " + std::to_string(base->sweep->values.size()) +
                  "; pick one with --set 'sweep.values=[...]'");
    }
    for (const auto& point : base->sweep->values) {
      Common p = c;
      std::string name;
      for (std::size_t k = 0; k < point.size(); ++k) {
        p.sets.push_back(base->sweep->keys[k] + "=" + point[k]);
        name += (name.empty() ? "" : " ") + base->sweep->keys[k] + "=" + point[k];
      }
      points.emplace_back(name, p);
    }
  } else {
    points.emplace_back(std::filesystem::path(base->path).stem().string(), c);
  }
  const bool show_progress = isatty(STDERR_FILENO) != 0 && points.size() > 1;
  std::vector<std::pair<std::string, sim::Metrics>> rows;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (show_progress) std::cerr << "\r[" << i + 1 << "/" << points.size() << "] " << points[i].first << "   " << std::flush;
    const nlohmann::json r = simulate_point(points[i].second, trace, force);
    if (r.contains("error")) {
      if (show_progress) std::cerr << "\n";
      return fail(r["error"].get<std::string>());
    }
    rows.emplace_back(points[i].first, metrics_from_json(r));
  }
  if (show_progress) std::cerr << "\n";
  const sim::TrainingSpec& t = *base->training;
  std::ostringstream title;
  title << "commbound run: " << base->path << ": " << t.model.name << ", seq " << t.seq_len << ", "
        << (t.strategy == sim::Strategy::ddp ? std::string("DDP")
                                             : std::string(t.strategy == sim::Strategy::hsdp ? "HSDP" : "FSDP") +
                                                   " ZeRO-" + std::to_string(t.zero_stage))
        << ", tp " << t.tp << "; compute " << sim::CostModel::kSource << "; power " << sim::kPowerModelSource;
  Status written = sim::write_output(out, force, [&](std::ostream& o) { sim::write_metrics(o, rows, format, title.str()); });
  if (!written) return fail(written.error().message);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || (args[0] == "help" && args.size() == 1)) {
    std::cout << kUsage;
    return args.empty() ? kExitBadInput : 0;
  }
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  const bool wants_help = std::find(rest.begin(), rest.end(), "--help") != rest.end() ||
                          std::find(rest.begin(), rest.end(), "-h") != rest.end();
  if (cmd == "help") {
    const std::string topic = rest.empty() ? "" : rest[0];
    if (topic == "collective") std::cout << kCollectiveHelp;
    else if (topic == "platform") std::cout << kPlatformHelp;
    else if (topic == "validate") std::cout << kValidateHelp;
    else if (topic == "run") std::cout << kRunHelp;
    else std::cout << kUsage;
    return 0;
  }
  if (cmd == "collective") {
    if (wants_help) return std::cout << kCollectiveHelp, 0;
    return cmd_collective(rest);
  }
  if (cmd == "platform") {
    if (wants_help) return std::cout << kPlatformHelp, 0;
    return cmd_platform(rest);
  }
  if (cmd == "run") {
    if (wants_help) return std::cout << kRunHelp, 0;
    return cmd_run(rest);
  }
  if (cmd == "validate") {
    if (wants_help) return std::cout << kValidateHelp, 0;
    return cmd_validate(rest);
  }
  return fail("unknown command \"" + cmd + "\" (commands: run, collective, platform, validate, help)");
}
