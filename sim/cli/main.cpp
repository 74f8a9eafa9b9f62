// commbound: the command-line front end. Parses arguments, loads the scenario, runs, reports.
// Exit codes: 0 success, 2 bad input (scenario, flags, refusing to overwrite), 1 internal failure.
#include "network/nccl_tests.hpp"
#include "network/platform.hpp"
#include "sim/collective_report.hpp"
#include "sim/output.hpp"
#include "sim/presets.hpp"
#include "sim/scenario.hpp"
#include "sim/shape_set.hpp"
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
#include <chrono>
#include <ctime>
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
  commbound shapes SCENARIO... [--out FILE] [--force] [options]
  commbound derive-table --from TABLE --gpu GPU [--out FILE] [--force]
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
  shapes       list the kernel shapes (GEMM, attention, memory-bound) that the scenarios'
               training iterations run: the input of commbound-calibrate --shapes.
  derive-table write a calibration table for another GPU, scaled from a measured one by
               datasheet ratios (marked derived everywhere it is used).

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
  commbound shapes scenarios/paper/*.toml --out shapes.toml
  commbound derive-table --from calibration/h100-sxm5.toml --gpu a100-sxm4-80gb --out calibration/a100-sxm4-80gb.toml

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

Compute times come from a calibration table when one is in use ([cluster] kernel_table:
"auto" (default) uses calibration/<gpu>.toml when that file exists, "roofline" never does, or
name a file): each op costs the table's measured time for its kernel shape; a shape the table
lacks takes the achieved rate of the nearest measured shape, or the table's [device] roofline
when it has no comparable row. Without a table, compute is the datasheet roofline (a lower
bound: MFU is then an upper bound). [training] attention_kernel = "commbound" | "cudnn" picks
the table's attention rows. Power: the table's [power] (NVML) when it has one, else a derived
model. Every report states its sources and counts the ops priced by fallback
(docs/metrics.md: cost_model_source, cost_model_exact_ops, cost_model_fallback_ops).

With a [sweep] table (key = "cluster.nodes", values = [1, 2, 4]) each value is one row; several
keys at once: key = ["parallel.tp", "parallel.pp"], values = [[1, 1], [2, 4]].

Options:
  --format F         table (default) | csv | json
  --trace FILE       Chrome/Perfetto trace: one process per simulated rank (one per pipeline
                     stage), one track per stream (no [sweep]; never overwrites
                     without --force)
  --out FILE, --force, --set, --calibration   as for collective
)";

const char* kShapesHelp = R"(commbound shapes SCENARIO... [--out FILE] [--force] [options]

Lists the kernel shapes that one training iteration of each scenario runs (every [sweep] point,
every pipeline stage; points that do not fit in GPU memory are skipped, since they are never
simulated), deduplicated, in the calibration table format without timings:

  [[gemm]]          m, n, k, layout ("forward", "dgrad", "wgrad")
  [[attention]]     direction, batch, heads, kv_heads, seq, head_dim, causal
  [[memory_bound]]  op, tokens, width

This is the input of `commbound-calibrate --shapes FILE`, which times each shape on a real GPU
and writes calibration/<gpu>.toml (docs/calibration.md). Shapes follow the parallel layout:
tensor parallelism divides heads, FFN and vocabulary; context parallelism the sequence.

Options:
  --out FILE         write there instead of standard output (never overwrites without --force)
  --force            allow --out to replace an existing file
  --set KEY=VALUE    applied to every scenario (e.g. --set parallel.tp=2); repeatable
  --calibration DIR  as for every command
)";

const char* kDeriveTableHelp = R"(commbound derive-table --from TABLE --gpu GPU [--out FILE] [--force]

Writes a calibration table for GPU (a table of calibration/gpus.toml: a100-sxm4-80gb, v100-sxm2,
...) from a MEASURED table of another GPU, by datasheet ratios (calibration/gpus.toml):
  GEMM and attention times   x source dense peak / target dense peak (bf16; V100: fp16 tensor)
  memory-bound times         x source HBM bandwidth / target HBM bandwidth
  [device]                   copy_GBps and gemm_TFLOPs scaled the same way
  [power]                    watts x target TDP / source TDP (crude: power does not scale so)
  [contention]               copied
The result says derived = true, derived_from and derivation in its [provenance], and every
report that uses it says "derived". It is an estimate: a kernel's efficiency differs between
GPU generations; measure on the real GPU (commbound-calibrate) when one is available.

Options:
  --from TABLE       the measured table (e.g. calibration/h100-sxm5.toml)
  --from-gpu NAME    its GPU in calibration/gpus.toml (default: the file's name, e.g. h100-sxm5)
  --gpu NAME         the target GPU in calibration/gpus.toml
  --out FILE         write there instead of standard output (never overwrites without --force)
  --force            allow --out to replace an existing file
  --calibration DIR  where gpus.toml is (default: the calibration/ shipped with commbound)
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
      const sim::CostModel cost = sim::cost_model(*sc);
      sim::describe_cost_model(m, cost, stages);
      if (!m.oom) {
        sim::EngineOptions options;
        options.algorithm = sc->nccl_options.algorithm;
        options.protocol = sc->nccl_options.protocol;
        auto simulated = sim::simulate(sc->cluster, sc->nccl, t, stages, cost, options);
        if (!simulated) {
          out = {{"error", sc->path + ": " + simulated.error().message}};
        } else {
          const sim::IterationTimeline& timeline = *simulated;
          const sim::Layout layout(t.dp, t.tp, t.pp, t.cp);
          std::vector<int> stage_of;
          for (int r = 0; r < layout.world(); ++r) stage_of.push_back(layout.coords(r).pp);
          m = sim::compute_metrics(t, stages, stage_of, timeline, memory, cost);
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
  m.cost_model_source = j["cost_model_source"];
  m.cost_model_table = j["cost_model_table"];
  m.cost_model_description = j["cost_model_description"];
  m.cost_summary.exact_ops = j["cost_model_exact_ops"];
  m.cost_summary.fallback_ops = j["cost_model_fallback_ops"];
  for (const auto& [how, n] : j["cost_model_fallbacks"].items()) m.cost_summary.fallbacks[how] = n;
  m.power_model_description = j["power_model"];
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

// The scenario and every [sweep] point of it, as (row name, settings) pairs.
std::vector<std::pair<std::string, Common>> points_of(const Common& c, const sim::Scenario& base) {
  std::vector<std::pair<std::string, Common>> points;
  if (!base.sweep) {
    points.emplace_back(std::filesystem::path(base.path).stem().string(), c);
    return points;
  }
  for (const auto& point : base.sweep->values) {
    Common p = c;
    std::string name;
    for (std::size_t k = 0; k < point.size(); ++k) {
      p.sets.push_back(base.sweep->keys[k] + "=" + point[k]);
      name += (name.empty() ? "" : " ") + base.sweep->keys[k] + "=" + point[k];
    }
    points.emplace_back(name, p);
  }
  return points;
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
  if (base->sweep && !trace.empty() && base->sweep->values.size() > 1) {
    return fail("--trace needs one point: the [sweep] has " + std::to_string(base->sweep->values.size()) +
                "; pick one with --set 'sweep.values=[...]'");
  }
  const std::vector<std::pair<std::string, Common>> points = points_of(c, *base);
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
        << ", tp " << t.tp;
  // Sources, once each (a [sweep] over GPUs can use several).
  std::vector<std::string> computes, powers;
  for (const auto& [name, m] : rows) {
    if (std::find(computes.begin(), computes.end(), m.cost_model_description) == computes.end()) {
      computes.push_back(m.cost_model_description);
    }
    if (std::find(powers.begin(), powers.end(), m.power_model_description) == powers.end()) {
      powers.push_back(m.power_model_description);
    }
  }
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : " | ") + x;
    return s;
  };
  title << "; compute " << joined(computes) << "; power " << joined(powers);
  Status written = sim::write_output(out, force, [&](std::ostream& o) { sim::write_metrics(o, rows, format, title.str()); });
  if (!written) return fail(written.error().message);
  return 0;
}

int cmd_shapes(const std::vector<std::string>& args) {
  std::vector<std::string> scenarios, sets;
  std::string calibration, out;
  bool force = false;
  po::options_description desc;
  desc.add_options()("scenario", po::value(&scenarios)->composing())("set", po::value(&sets)->composing())(
      "calibration", po::value(&calibration))("out", po::value(&out))("force", po::bool_switch(&force));
  po::positional_options_description pos;
  pos.add("scenario", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return fail(std::string(e.what()) + " (see commbound help shapes)");
  }
  if (scenarios.empty()) return fail("shapes needs at least one SCENARIO (see commbound help shapes)");
  if (Status ok = sim::check_writable(out, force); !ok) return fail(ok.error().message);
  sim::ShapeSet shapes;
  int simulated = 0, skipped = 0;
  for (const std::string& path : scenarios) {
    const Common c{path, sets, calibration};
    auto base = load(c);
    if (!base) return fail(base.error().message);
    if (!base->training) return fail(base->path + ": shapes needs a [model] section (a training iteration)");
    for (const auto& [name, point] : points_of(c, *base)) {
      auto sc = load(point);
      if (!sc) return fail(sc.error().message);
      const sim::TrainingSpec& t = *sc->training;
      if (!sim::memory_per_gpu(t, sc->cluster.node.nccl_channels).fits()) {
        ++skipped;
        continue;
      }
      ++simulated;
      for (const sim::Program& p : sim::build_programs(t)) shapes.add(p);
    }
  }
  std::vector<std::string> comments = {
      "Kernel shapes of one training iteration (every [sweep] point, every pipeline stage), written by",
      "`commbound shapes`: the input of `commbound-calibrate --shapes` (docs/calibration.md).",
      "Scenarios:"};
  for (const auto& path : scenarios) comments.push_back("  " + path);
  for (const auto& set : sets) comments.push_back("  --set " + set);
  comments.push_back(std::to_string(simulated) + " point(s); " + std::to_string(skipped) +
                     " skipped (out of GPU memory: never simulated). " + std::to_string(shapes.gemms().size()) +
                     " GEMM, " + std::to_string(shapes.attentions().size()) + " attention, " +
                     std::to_string(shapes.memory_bounds().size()) + " memory-bound shapes.");
  Status written = sim::write_output(out, force, [&](std::ostream& o) { shapes.write(o, comments); });
  if (!written) return fail(written.error().message);
  if (!out.empty() && out != "-") {
    std::cerr << "commbound: wrote " << shapes.size() << " shapes to " << out << "\n";
  }
  return 0;
}

// Today's date (UTC), YYYY-MM-DD.
std::string today() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &utc);
  return buf;
}

int cmd_derive_table(const std::vector<std::string>& args) {
  std::string from, from_gpu, gpu, out, calibration;
  bool force = false;
  po::options_description desc;
  desc.add_options()("from", po::value(&from))("from-gpu", po::value(&from_gpu))("gpu", po::value(&gpu))(
      "out", po::value(&out))("force", po::bool_switch(&force))("calibration", po::value(&calibration));
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return fail(std::string(e.what()) + " (see commbound help derive-table)");
  }
  if (from.empty() || gpu.empty()) return fail("derive-table needs --from TABLE and --gpu GPU (see commbound help derive-table)");
  if (Status ok = sim::check_writable(out, force); !ok) return fail(ok.error().message);
  const sim::Presets presets(calibration.empty() ? sim::default_calibration_dir() : std::filesystem::path(calibration));
  auto source = sim::GpuTable::load(from, from);
  if (!source) return fail(source.error().message);
  if (source->provenance().derived) {
    return fail(from + ": a derived table (provenance.derived = true); derive from a measured one");
  }
  if (from_gpu.empty()) from_gpu = std::filesystem::path(from).stem().string();
  auto from_spec = sim::load_gpu(presets, from_gpu);
  if (!from_spec) {
    return fail("--from " + from + ": its GPU \"" + from_gpu + "\" (the file's name) is not in calibration/gpus.toml; name it with --from-gpu (" +
                from_spec.error().message + ")");
  }
  auto to_spec = sim::load_gpu(presets, gpu);
  if (!to_spec) return fail("--gpu " + gpu + ": " + to_spec.error().message);
  auto datasheet = [](const sim::GpuSpec& g) {
    return sim::GpuTable::Datasheet{g.name, g.description, g.peak_dtype, g.peak_flops_per_s, g.hbm_bytes_per_s,
                                    g.memory_bytes, g.tdp_w};
  };
  const sim::GpuTable derived = source->derive(datasheet(*from_spec), datasheet(*to_spec), from, today());
  Status written = sim::write_output(out, force, [&](std::ostream& o) {
    o << "# DERIVED, NOT MEASURED: " << to_spec->description << " kernel times scaled from " << from
      << " by `commbound derive-table`\n# (see [provenance] derivation). Replace it with a measurement "
      << "(commbound-calibrate on a real " << gpu << ") when one can be had.\n";
    derived.write(o);
  });
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
  // Each command once: its name, its help text and what runs it (help topics and dispatch alike).
  struct Command {
    const char* name;
    const char* help;
    int (*run)(const std::vector<std::string>&);
  };
  static const Command kCommands[] = {
      {"collective", kCollectiveHelp, cmd_collective}, {"platform", kPlatformHelp, cmd_platform},
      {"validate", kValidateHelp, cmd_validate},       {"run", kRunHelp, cmd_run},
      {"shapes", kShapesHelp, cmd_shapes},             {"derive-table", kDeriveTableHelp, cmd_derive_table},
  };
  auto find = [](const std::string& name) -> const Command* {
    for (const Command& c : kCommands) {
      if (name == c.name) return &c;
    }
    return nullptr;
  };
  if (cmd == "help") {
    const Command* c = find(rest.empty() ? "" : rest[0]);
    std::cout << (c != nullptr ? c->help : kUsage);
    return 0;
  }
  if (const Command* c = find(cmd); c != nullptr) {
    if (wants_help) return std::cout << c->help, 0;
    return c->run(rest);
  }
  return fail("unknown command \"" + cmd + "\" (commands: run, collective, platform, validate, shapes, derive-table, help)");
}
