// commbound shapes | derive-table: the kernel tables that price compute.
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "calibration/table/kernel_table.hpp"
#include "core/table_reader.hpp"
#include "core/units.hpp"
#include "sim/workload/memory_model.hpp"
#include "sim/report/output.hpp"
#include "sim/workload/shape_set.hpp"
#include "sim/run/training_run.hpp"
#include "sim/workload/workload.hpp"

#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>

namespace commbound::cli {
namespace {

struct ShapesArgs {
  std::vector<std::string> scenarios, sets;
  std::string calibration, out;
  bool force = false;
};

int run_shapes(const ShapesArgs& a) {
  std::vector<sim::NamedPath> inputs;
  for (const std::string& path : a.scenarios) inputs.push_back({"scenario", path});
  if (Status ok = sim::check_outputs({{"--out", a.out}}, inputs, a.force); !ok) return fail(ok.error().message);
  sim::ShapeSet shapes;
  int simulated = 0, skipped = 0;
  for (const std::string& path : a.scenarios) {
    auto file = load(ScenarioArgs{path, a.sets, a.calibration});
    if (!file) return fail(file.error().message);
    if (!file->scenario().training) return fail(path + ": shapes needs a [model] section (a training iteration)");
    for (std::size_t i = 0; i < file->points(); ++i) {
      auto sc = file->point(i);
      if (!sc) return fail(sc.error().message);
      const sim::TrainingSpec& t = *sc->training;
      if (!sim::memory_per_gpu(t, sc->cluster.node.nccl_channels).fits()) {
        ++skipped;
        continue;
      }
      if (Status size = sim::check_training_size(*sc); !size) return fail(size.error().message);
      ++simulated;
      for (const sim::Program& p : sim::build_programs(t)) shapes.add(p);
    }
  }
  std::vector<std::string> comments = {
      "Kernel shapes of one training iteration (every [sweep] point, every pipeline stage), written by",
      "`commbound shapes`: the input of `commbound-calibrate --shapes` (docs/calibration.md).", "Scenarios:"};
  for (const auto& path : a.scenarios) comments.push_back("  " + path);
  for (const auto& set : a.sets) comments.push_back("  --set " + set);
  comments.push_back(std::to_string(simulated) + " point(s); " + std::to_string(skipped) +
                     " skipped (out of GPU memory: never simulated). " + std::to_string(shapes.gemms().size()) +
                     " GEMM, " + std::to_string(shapes.attentions().size()) + " attention, " +
                     std::to_string(shapes.memory_bounds().size()) + " memory-bound shapes.");
  Status written = sim::write_output(a.out, a.force, [&](std::ostream& o) { shapes.write(o, comments); });
  if (!written) return fail(written.error().message);
  if (!a.out.empty() && a.out != "-") std::cerr << "commbound: wrote " << shapes.size() << " shapes to " << a.out << "\n";
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

struct DeriveArgs {
  std::string from, from_gpu, gpu, out, calibration, achievable;
  bool force = false;
};

// The target GPU's published achievable rates (calibration/reference/<gpu>-achievable.toml):
// [gemm] achievable_TFLOPs and [memory] copy_GBps, each table with its `source`.
Status read_achievable(const std::string& path, calibration::KernelTable::Datasheet& to) {
  auto doc = parse_toml_file(path);
  if (!doc) return doc.error();
  TableReader top(*doc, "");
  const toml::table* gemm = top.table("gemm");
  const toml::table* memory = top.table("memory");
  top.string("description", "");
  if (Status s = top.finish(); !s) return Error{path + ": " + s.error().message};
  const toml::table empty;
  TableReader g(gemm != nullptr ? *gemm : empty, "gemm");
  to.achievable_gemm_flops_per_s = g.number("achievable_TFLOPs", 0, 1, 1e6) * kFlopsPerTFLOP;
  g.string("source", "");
  if (Status s = g.finish(); !s) return Error{path + ": " + s.error().message};
  TableReader m(memory != nullptr ? *memory : empty, "memory");
  to.achievable_copy_bytes_per_s = m.number("copy_GBps", 0, 1, 1e7) * kBytesPerGB;
  m.string("source", "");
  if (Status s = m.finish(); !s) return Error{path + ": " + s.error().message};
  to.achievable_source = path;
  return Ok{};
}

int run_derive_table(DeriveArgs a) {
  if (Status ok = sim::check_outputs({{"--out", a.out}}, {{"--from", a.from}}, a.force); !ok) return fail(ok.error().message);
  const sim::Presets presets = cli::presets(a.calibration);
  auto source = calibration::KernelTable::load(a.from, a.from);
  if (!source) return fail(source.error().message);
  if (source->provenance().derived) {
    return fail(a.from + ": a derived table (provenance.derived = true); derive from a measured one");
  }
  if (a.from_gpu.empty()) a.from_gpu = std::filesystem::path(a.from).stem().string();
  auto from_spec = sim::load_gpu(presets, a.from_gpu);
  if (!from_spec) {
    return fail("--from " + a.from + ": its GPU \"" + a.from_gpu +
                "\" (the file's name) is not in calibration/gpus.toml; name it with --from-gpu (" +
                from_spec.error().message + ")");
  }
  auto to_spec = sim::load_gpu(presets, a.gpu);
  if (!to_spec) return fail("--gpu " + a.gpu + ": " + to_spec.error().message);
  auto datasheet = [](const sim::GpuSpec& g) {
    return calibration::KernelTable::Datasheet{.name = g.name,
                                               .description = g.description,
                                               .peak_dtype = g.peak_dtype,
                                               .peak_flops_per_s = g.peak_flops_per_s,
                                               .hbm_bytes_per_s = g.hbm_bytes_per_s,
                                               .memory_bytes = g.memory_bytes,
                                               .tdp_w = g.tdp_w,
                                               // unknown unless --achievable gives them (read_achievable)
                                               .achievable_gemm_flops_per_s = 0,
                                               .achievable_copy_bytes_per_s = 0,
                                               .achievable_source = {},
                                               .sm_count = g.sm_count,
                                               .sm_clock_max_hz = g.sm_clock_max_hz};
  };
  calibration::KernelTable::Datasheet to = datasheet(*to_spec);
  if (!a.achievable.empty()) {
    if (Status ok = read_achievable(a.achievable, to); !ok) return fail(ok.error().message);
  }
  const calibration::KernelTable derived = source->derive(datasheet(*from_spec), to, a.from, today());
  Status written = sim::write_output(a.out, a.force, [&](std::ostream& o) {
    o << "# DERIVED, NOT MEASURED: " << to_spec->description << " kernel times scaled from " << a.from
      << " by `commbound derive-table`\n# (see [provenance] derivation). Replace it with a measurement "
      << "(commbound-calibrate on a real " << a.gpu << ") when one can be had.\n";
    derived.write(o);
  });
  return written ? 0 : fail(written.error().message);
}

}  // namespace

void add_shapes_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ShapesArgs>();
  CLI::App* cmd = app.add_subcommand("shapes", "the kernel shapes the scenarios' training iterations run "
                                               "(input of commbound-calibrate --shapes)");
  cmd->footer(R"(Lists the kernel shapes that one training iteration of each scenario runs (every [sweep] point,
every pipeline stage; points that do not fit in GPU memory are skipped, since they are never
simulated), deduplicated, in the calibration table format without timings:

  [[gemm]]          m, n, k, layout ("forward", "dgrad", "wgrad")
  [[attention]]     direction, batch, heads, kv_heads, seq, head_dim, causal
  [[memory_bound]]  op, tokens, width

This is the input of `commbound-calibrate --shapes FILE`, which times each shape on a real GPU and
writes calibration/<gpu>.toml (docs/calibration.md). Shapes follow the parallel layout: tensor
parallelism divides heads, FFN and vocabulary; context parallelism the sequence.
)");
  cmd->add_option("scenarios", a->scenarios, "scenario files (.toml)")->type_name("SCENARIO...")->required();
  add_preset_args(*cmd, a->sets, a->calibration);
  cmd->add_option("--out", a->out, "write there instead of standard output (never overwrites without --force)")->type_name("FILE");
  cmd->add_flag("--force", a->force, "allow --out to replace an existing file");
  cmd->callback([a, &exit_code] { exit_code = run_shapes(*a); });
}

void add_derive_table_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<DeriveArgs>();
  CLI::App* cmd = app.add_subcommand("derive-table", "a kernel table for another GPU, scaled from a measured one "
                                                     "by datasheet ratios or the target's published rates (marked derived)");
  cmd->footer(R"(Writes a calibration table for GPU (a table of calibration/gpus.toml: a100-sxm4-80gb, v100-sxm2,
...) from a MEASURED table of another GPU, by datasheet ratios (calibration/gpus.toml):
  GEMM and attention times   x source dense peak / target dense peak (bf16; V100: fp16 tensor)
  memory-bound times         x source HBM bandwidth / target HBM bandwidth
With --achievable FILE (the target's published sustained GEMM and copy rates, sources beside
them), GEMM and attention times x the source table's measured GEMM rate ([device] gemm_TFLOPs) /
the target's achievable one, memory-bound times x measured copy / achievable copy instead.
  [device]                   copy_GBps and gemm_TFLOPs scaled the same way
  [power]                    watts x target TDP / source TDP (crude: power does not scale so)
  [contention]               copied
The result says derived = true, derived_from and derivation in its [provenance], and every report
that uses it says "derived". It is an estimate: a kernel's efficiency differs between GPU
generations; measure on the real GPU (commbound-calibrate) when one is available.
)");
  cmd->add_option("--from", a->from, "the measured table (e.g. calibration/h100-sxm5.toml)")->type_name("TABLE")->required();
  cmd->add_option("--from-gpu", a->from_gpu, "its GPU in calibration/gpus.toml (default: the file's name, e.g. h100-sxm5)")
      ->type_name("NAME");
  cmd->add_option("--gpu", a->gpu, "the target GPU in calibration/gpus.toml")->type_name("NAME")->required();
  cmd->add_option("--achievable", a->achievable,
                  "the target's published achievable GEMM and copy rates, with sources "
                  "(e.g. calibration/reference/a100-achievable.toml): scale by them instead of datasheet peaks")
      ->type_name("FILE");
  cmd->add_option("--out", a->out, "write there instead of standard output (never overwrites without --force)")->type_name("FILE");
  cmd->add_flag("--force", a->force, "allow --out to replace an existing file");
  cmd->add_option("--calibration", a->calibration, "where gpus.toml is (default: the calibration/ shipped with commbound)")
      ->type_name("DIR");
  cmd->callback([a, &exit_code] { exit_code = run_derive_table(*a); });
}

}  // namespace commbound::cli
