// commbound-calibrate: measures the compute side of a training step on this machine's GPU and
// writes a calibration table (docs/calibration.md) that the simulator prices ops from; or, with
// --replay, runs a whole layer (or a small model's step) back to back and compares it with the
// sum of its ops timed one by one. CUDA only; never links SimGrid.
#include "core/atomic_write.hpp"
#include "core/file_type.hpp"
#include "core/strprintf.hpp"
#include "core/units.hpp"
#include "calibration/table/kernel_table.hpp"
#include "model/model_zoo.hpp"
#include "kernels/device/calibrator.hpp"
#include "kernels/device/contention.hpp"
#include "kernels/device/cuda_support.hpp"
#include "kernels/device/attention.hpp"
#include "kernels/device/gemm.hpp"
#include "kernels/host/model_grid.hpp"
#include "kernels/device/power_phases.hpp"
#include "kernels/host/power_sampler.hpp"
#include "kernels/device/random_fill.hpp"
#include "kernels/device/replay.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>
#include <variant>
#include <vector>

#ifndef COMMBOUND_GIT_COMMIT
#define COMMBOUND_GIT_COMMIT "unknown"
#endif

using namespace commbound;
using namespace commbound::kernels;
using calibration::AttentionRow;
using calibration::GemmRow;
using calibration::KernelTable;
using calibration::KernelTiming;
using calibration::MemoryBoundRow;
using model::ModelSpec;
using calibration::TableContent;

namespace {

constexpr const char* kHelp = R"(commbound-calibrate: time the kernels of a Llama training step on this GPU

Usage:
  commbound-calibrate [--out FILE] [--force] [--shapes FILE]... [--no-grid] [--quick]
  commbound-calibrate --replay MODEL [--micro-batch N] [--seq N] [--tp N] [--layers N] [--full-model]

Calibration (the default): measures every op shape of the default grid - Llama-2 1B, 7B, 13B and
70B; seq 2048, 4096, 8192; micro-batch 1-4; tp 1, 2, 4, 8, 16 - plus the rows of any shapes files
(`commbound shapes SCENARIO.toml --out shapes.toml` lists what a scenario needs): bf16 GEMMs
(cuBLASLt) in the three layouts of a linear layer, our causal flash attention forward and
backward, and the memory-bound kernels; then the power phases (NVML) and the slowdown of a GEMM
and an attention kernel beside a communication-like copy. Each shape: random inputs rotated over
enough buffers to defeat the L2 cache, 2 warm-ups, then at least 5 timed runs (up to 50, about
20 ms of GPU time), p10/p50/p90 kept. Writes the table with its provenance (GPU, clocks, driver,
CUDA and cuBLASLt versions, date, tool commit). Progress goes to stderr.

  --out FILE          table to write (default: calibration/<gpu>.toml beside the model zoo, <gpu>
                      the calibration/gpus.toml preset whose device_name is this GPU's, e.g.
                      h100-sxm5, else the device's name); never overwritten without --force
  --force             overwrite FILE
  --shapes FILE       also measure the rows of FILE ([[gemm]], [[attention]] of our kernel,
                      [[memory_bound]]; times in it are ignored); repeatable
  --add-rows FILE     copy already-measured rows (with times) from FILE into the table, e.g. the
                      cuDNN attention rows that bench/attention_vs_sdpa.py writes; repeatable
  --no-grid           measure only the --shapes rows
  --quick             a small grid (Llama-2 1B and 7B, tp 1 and 8, seq 2048 and 4096, micro-batch
                      1 and 2): a smoke test in well under a minute
  --models FILE       model zoo for the grid and the replay (default: calibration/models.toml)
  --skip-power        leave out the [power] phases (4 x 3 s)
  --skip-contention   leave out the [contention] measurement
  --gemm-duty D       the share of the GPU's time GEMMs and attention take while they are measured
                      (0 < D <= 1, default 1: back to back). Below 1, each such shape is followed by memory
                      copies for (1 - D) / D of its time, so that the board stays under its power
                      limit as in a training step; back to back, a long grid holds it at the limit
                      and its clock down (docs/calibration.md)
  --list-shapes       print the rows that would be measured (shapes-file format) and exit

Replay (--replay MODEL, e.g. llama2-7b): builds the kernel sequence of --layers transformer layers
(default 1; with --full-model all the model's), forward then backward, at --micro-batch (2) x --seq (4096) tokens and tensor
parallelism --tp (1); with --full-model the embedding, all the model's layers (or --layers), the
final norm, LM head and loss, the gradient norm and AdamW over every parameter of the layers replayed. Runs it back to
back on the GPU (median of --runs, default 10), times every op alone the calibration's way, and
prints both: the error of pricing a step op by op. With --table FILE (a calibration table, e.g.
calibration/h100-sxm5.toml) it also prices the sequence from that table as the simulator does (the
exact row, else the nearest row's rate, else the table's roofline).

Exit status: 0 on success, 1 on a CUDA or measurement failure, 2 on bad arguments or input files.
)";

struct Args {
  std::filesystem::path out;
  bool force = false;
  std::vector<std::filesystem::path> shapes;
  std::vector<std::filesystem::path> add_rows;
  bool grid = true;
  bool quick = false;
  std::filesystem::path models;
  bool power = true;
  bool contention = true;
  bool list_shapes = false;
  double gemm_duty = 1;
  std::string replay_model;
  ReplayOptions replay;
  std::filesystem::path replay_table;
};

// Where the binary's data lives: build/bin/../share/commbound (the same layout as an install).
std::filesystem::path data_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto dir = exe.parent_path().parent_path() / "share" / "commbound";
    if (std::filesystem::exists(dir / "calibration", ec)) return dir;
  }
  return std::filesystem::current_path(ec);  // empty without a working directory: paths stay relative
}

// Nothing at `out` yet (it may be written without --force); an error says what is there, or why the
// system cannot tell (a symlink loop, a name too long).
Status absent(const std::filesystem::path& out) {
  auto type = file_type_at(out);
  if (!type) return type.error();
  if (*type != std::filesystem::file_type::not_found) return Error{out.string() + " exists; pass --force to overwrite it"};
  return Ok{};
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "commbound-calibrate: %s\n(see commbound-calibrate --help)\n", message.c_str());
  return 2;
}

Expected<int> parse_int(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < 1 || v > 1 << 24) {
    return Error{option + " " + text + ": must be a positive integer"};
  }
  return static_cast<int>(v);
}

// Parses argv; `help` is set when --help was asked for.
Expected<Args> parse_args(int argc, char** argv, bool& help) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string opt = argv[i];
    auto value = [&]() -> Expected<std::string> {
      if (i + 1 >= argc) return Error{opt + ": needs a value"};
      return std::string(argv[++i]);
    };
    auto integer = [&](int& into) -> Status {
      auto v = value();
      if (!v) return v.error();
      auto n = parse_int(opt, *v);
      if (!n) return n.error();
      into = *n;
      return Ok{};
    };
    Status s = Ok{};
    if (opt == "--help" || opt == "-h") {
      help = true;
      return a;
    } else if (opt == "--out") {
      auto v = value();
      if (!v) return v.error();
      a.out = *v;
    } else if (opt == "--force") {
      a.force = true;
    } else if (opt == "--shapes" || opt == "--add-rows" || opt == "--models" || opt == "--table") {
      auto v = value();
      if (!v) return v.error();
      auto type = file_type_at(*v);  // a symlink loop or a name too long: an error, not an exception
      if (!type) return Error{opt + " " + type.error().message};
      if (*type == std::filesystem::file_type::not_found) return Error{opt + " " + *v + ": no such file"};
      if (opt == "--shapes") a.shapes.emplace_back(*v);
      else if (opt == "--add-rows") a.add_rows.emplace_back(*v);
      else if (opt == "--table") a.replay_table = *v;
      else a.models = *v;
    } else if (opt == "--no-grid") {
      a.grid = false;
    } else if (opt == "--quick") {
      a.quick = true;
    } else if (opt == "--skip-power") {
      a.power = false;
    } else if (opt == "--skip-contention") {
      a.contention = false;
    } else if (opt == "--list-shapes") {
      a.list_shapes = true;
    } else if (opt == "--gemm-duty") {
      auto v = value();
      if (!v) return v.error();
      char* end = nullptr;
      const double d = std::strtod(v->c_str(), &end);
      if (end == v->c_str() || *end != '\0' || !(d > 0 && d <= 1)) {
        return Error{"--gemm-duty " + *v + ": need a share of time in (0, 1]"};
      }
      a.gemm_duty = d;
    } else if (opt == "--replay") {
      auto v = value();
      if (!v) return v.error();
      a.replay_model = *v;
    } else if (opt == "--micro-batch") {
      s = integer(a.replay.step.micro_batch);
    } else if (opt == "--seq") {
      s = integer(a.replay.step.seq);
    } else if (opt == "--tp") {
      s = integer(a.replay.step.tp);
    } else if (opt == "--layers") {
      s = integer(a.replay.layers);
    } else if (opt == "--runs") {
      s = integer(a.replay.runs);
    } else if (opt == "--full-model") {
      a.replay.full_model = true;
    } else {
      return Error{"unknown option " + opt};
    }
    if (!s) return s.error();
  }
  return a;
}

std::string version_text(long v, long major_div) {
  return std::to_string(v / major_div) + '.' + std::to_string(v % major_div / (major_div / 100));
}

Expected<calibration::TableProvenance> read_provenance() {
  calibration::TableProvenance p;
  int device = 0;
  cudaDeviceProp prop{};
  if (Status s = cuda_check(cudaGetDevice(&device), "cudaGetDevice"); !s) return s.error();
  if (Status s = cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties"); !s) return s.error();
  p.gpu = prop.name;
  p.sm_count = prop.multiProcessorCount;
  p.memory_bytes = static_cast<double>(prop.totalGlobalMem);
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) == cudaSuccess) p.sm_clock_max_hz = khz * 1e3;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess) p.memory_clock_hz = khz * 1e3;
  int runtime = 0;
  if (Status s = cuda_check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion"); !s) return s.error();
  p.cuda_runtime = version_text(runtime, 1000);
  const auto lt = static_cast<long>(cublasLtGetVersion());  // major * 10000 + minor * 100 + patch
  p.cublaslt = std::to_string(lt / 10000) + '.' + std::to_string(lt / 100 % 100) + '.' + std::to_string(lt % 100);
  if (auto nvml = Nvml::open(static_cast<unsigned>(device)); nvml) {
    p.driver = nvml->driver_version();
  } else {
    int driver = 0;
    cudaDriverGetVersion(&driver);
    p.driver = "CUDA driver API " + version_text(driver, 1000) + " (NVML unavailable: " + nvml.error().message + ")";
  }
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  p.date = date;
  p.tool_commit = COMMBOUND_GIT_COMMIT;
  p.derived = false;
  return p;
}

// A GEMM of the issue's size class for the power phases and the contention victim.
struct BigGemm {
  GemmPlan plan;
  DeviceBuffer<std::uint16_t> a, b, c;
  Status run(cudaStream_t stream) const { return plan.run(a.get(), b.get(), c.get(), stream); }
};

Expected<BigGemm> big_gemm() {
  const GemmShape shape{8192, 8192, 8192, GemmLayout::forward};
  auto plan = GemmPlan::create(shape, std::size_t{32} << 20);
  if (!plan) return plan.error();
  auto a = DeviceBuffer<std::uint16_t>::create(static_cast<std::size_t>(shape.m * shape.k));
  auto b = DeviceBuffer<std::uint16_t>::create(static_cast<std::size_t>(shape.n * shape.k));
  auto c = DeviceBuffer<std::uint16_t>::create(static_cast<std::size_t>(shape.m * shape.n));
  for (const Status& s : {a.status(), b.status(), c.status()}) {
    if (!s) return s.error();
  }
  if (Status s = fill_random_bf16(a->get(), a->count(), 11, 1.0f); !s) return s.error();
  if (Status s = fill_random_bf16(b->get(), b->count(), 12, 1.0f); !s) return s.error();
  return BigGemm{std::move(*plan), std::move(*a), std::move(*b), std::move(*c)};
}

// A number for progress lines and comments: 6 significant digits, a decimal point kept.
std::string fmt(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}


KernelTiming seconds_of(const Percentiles& p) {
  return {p.p10_ms * kSecondsPerMs, p.p50_ms * kSecondsPerMs, p.p90_ms * kSecondsPerMs};
}

// Measures every row of `shapes` (their times, if any, ignored), printing progress; the table of
// the measured rows, in the same order.
Expected<KernelTable> measure_rows(Calibrator& cal, const KernelTable& shapes) {
  const std::size_t total = shapes.size();
  std::size_t done = 0;
  const auto start = std::chrono::steady_clock::now();
  auto progress = [&](const model::KernelShape& what, const Percentiles& t, const std::string& rate) {
    ++done;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double eta = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
    std::fprintf(stderr, "[%5zu/%zu] %-58s %9.4f ms  %s  (eta %.0f s)\n", done, total,
                 model::describe(what).c_str(), t.p50_ms, rate.c_str(), eta);
  };
  KernelTable measured;
  for (const GemmRow& r : shapes.gemms()) {
    auto t = cal.measure(r.shape);
    if (!t) return Error{model::describe(r.shape) + ": " + t.error().message};
    measured.add(GemmRow{r.shape, seconds_of(*t)});
    progress(r.shape, *t, fmt(r.shape.flops() / (t->p50_ms * 1e-3) / 1e12) + " TFLOP/s");
  }
  for (const AttentionRow& r : shapes.attentions()) {
    auto t = cal.measure(r.shape);
    if (!t) return Error{model::describe(r.shape) + ": " + t.error().message};
    measured.add(AttentionRow{"commbound", r.shape, seconds_of(*t)});
    progress(r.shape, *t, fmt(r.shape.flops() / (t->p50_ms * 1e-3) / 1e12) + " TFLOP/s");
  }
  for (const MemoryBoundRow& r : shapes.memory_bounds()) {
    auto t = cal.measure(r.shape);
    if (!t) return Error{model::describe(r.shape) + ": " + t.error().message};
    measured.add(MemoryBoundRow{r.shape, r.shape.bytes(), seconds_of(*t)});
    progress(r.shape, *t, fmt(r.shape.bytes() / (t->p50_ms * 1e-3) / 1e9) + " GB/s");
  }
  return measured;
}

int run_replay(const Args& args, const std::vector<ModelSpec>& zoo) {
  ReplayOptions o = args.replay;
  const auto it = std::find_if(zoo.begin(), zoo.end(), [&](const ModelSpec& m) { return m.name == args.replay_model; });
  if (it == zoo.end()) return usage_error("--replay " + args.replay_model + ": not in the model zoo");
  o.model = *it;
  if (Status s = model::check_exact(o.model, o.step); !s) return usage_error(s.error().message);
  std::optional<KernelTable> table;
  if (!args.replay_table.empty()) {
    auto t = KernelTable::load(args.replay_table, args.replay_table.string());
    if (!t) return usage_error(t.error().message);
    table = std::move(*t);
  }
  auto cal = Calibrator::create(CalibratorOptions{});
  if (!cal) {
    std::fprintf(stderr, "commbound-calibrate: %s\n", cal.error().message.c_str());
    return 1;
  }
  auto result = replay(*cal, o);
  if (!result) {
    std::fprintf(stderr, "commbound-calibrate: replay: %s\n", result.error().message.c_str());
    return 1;
  }
  std::printf("%s", format_replay(o, *result).c_str());
  if (table) {
    const TablePricing p = price_with_table(*result, *table);
    std::printf("sum of %s's times: %.3f ms (%d ops exact, %d from the nearest row, %d by the table's roofline): "
                "off by %+.1f%% (table sum / replay - 1)\n",
                args.replay_table.c_str(), p.sum_ms, p.exact, p.nearest, p.roofline,
                100 * (p.sum_ms / result->replay.p50_ms - 1));
  }
  return 0;
}

// The shapes of `rows` without their times: what --shapes asks to measure. Attention rows of
// another implementation than ours cannot be measured here.
Expected<KernelTable> shapes_of(const KernelTable& rows, const std::string& path) {
  KernelTable shapes;
  for (const GemmRow& r : rows.gemms()) shapes.add(GemmRow{r.shape, {}});
  for (const AttentionRow& r : rows.attentions()) {
    if (r.implementation != "commbound") {
      return Error{path + ": [[attention]] implementation = \"" + r.implementation +
                   "\": only our kernel (\"commbound\") is measured here; add measured rows with --add-rows"};
    }
    shapes.add(AttentionRow{r.implementation, r.shape, {}});
  }
  for (const MemoryBoundRow& r : rows.memory_bounds()) shapes.add(MemoryBoundRow{r.shape, 0, {}});
  return shapes;
}

// Whether every row of `rows` has its times (what --add-rows copies into the table).
Status all_timed(const KernelTable& rows, const std::string& path) {
  const bool timed = std::all_of(rows.gemms().begin(), rows.gemms().end(), [](const GemmRow& r) { return r.time; }) &&
                     std::all_of(rows.attentions().begin(), rows.attentions().end(),
                                 [](const AttentionRow& r) { return r.time; }) &&
                     std::all_of(rows.memory_bounds().begin(), rows.memory_bounds().end(),
                                 [](const MemoryBoundRow& r) { return r.time; });
  if (timed) return Ok{};
  return Error{path + ": --add-rows copies measured rows: every row needs p10_ms, p50_ms and p90_ms"};
}

}  // namespace

int main(int argc, char** argv) {
  bool help = false;
  auto args = parse_args(argc, argv, help);
  if (!args) return usage_error(args.error().message);
  if (help) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const std::filesystem::path data = data_dir();
  if (args->models.empty()) args->models = data / "calibration" / "models.toml";
  auto zoo = model::read_model_zoo(args->models);
  if (!zoo) return usage_error(zoo.error().message);
  if (!args->replay_model.empty()) return run_replay(*args, *zoo);

  // Everything the user gave is read and checked before the first measurement.
  KernelTable table;  // the shapes to measure
  if (args->grid) {
    GridOptions g;
    if (args->quick) {
      g.models = {"llama2-1b", "llama2-7b"};
      g.seqs = {2048, 4096};
      g.micro_batches = {1, 2};
      g.tps = {1, 8};
    }
    auto grid = default_grid(*zoo, g);
    if (!grid) return usage_error(grid.error().message);
    table.add_rows(*grid);
  }
  for (const auto& path : args->shapes) {
    auto rows = KernelTable::load(path, path.string(), TableContent::rows);
    if (!rows) return usage_error(rows.error().message);
    auto shapes = shapes_of(*rows, path.string());
    if (!shapes) return usage_error(shapes.error().message);
    table.add_rows(*shapes);
  }
  KernelTable added;
  for (const auto& path : args->add_rows) {
    auto rows = KernelTable::load(path, path.string(), TableContent::rows);
    if (!rows) return usage_error(rows.error().message);
    if (Status s = all_timed(*rows, path.string()); !s) return usage_error(s.error().message);
    added.add_rows(*rows);
  }
  if (table.size() == 0) return usage_error("nothing to measure (--no-grid and no --shapes rows)");
  if (!args->out.empty() && !args->list_shapes && !args->force) {
    if (Status s = absent(args->out); !s) return usage_error(s.error().message);
  }
  if (args->list_shapes) {
    table.write(std::cout, {std::to_string(table.size()) + " op shapes (commbound-calibrate --list-shapes)"});
    return 0;
  }
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "commbound-calibrate: no CUDA device: calibration needs a GPU\n");
    return 1;
  }
  auto prov = read_provenance();
  if (!prov) {
    std::fprintf(stderr, "commbound-calibrate: %s\n", prov.error().message.c_str());
    return 1;
  }
  if (args->out.empty()) {
    args->out = args->models.parent_path() / (calibration::table_name_for_device(args->models.parent_path() / "gpus.toml", prov->gpu) + ".toml");
  }
  if (!args->force) {
    if (Status s = absent(args->out); !s) return usage_error(s.error().message);
  }
  std::fprintf(stderr, "commbound-calibrate: %s, %d SMs; %zu shapes to measure -> %s\n", prov->gpu.c_str(),
               static_cast<int>(prov->sm_count.value_or(0)), table.size(), args->out.string().c_str());

  CalibratorOptions options;
  options.gemm_duty = args->gemm_duty;
  auto cal = Calibrator::create(options);
  if (!cal) {
    std::fprintf(stderr, "commbound-calibrate: %s\n", cal.error().message.c_str());
    return 1;
  }
  const auto started = std::chrono::steady_clock::now();
  auto copy = cal->copy_bytes_per_s(std::size_t{1} << 30);
  if (!copy) {
    std::fprintf(stderr, "commbound-calibrate: copy: %s\n", copy.error().message.c_str());
    return 1;
  }
  const GemmShape peak{8192, 8192, 8192, GemmLayout::forward};
  auto peak_t = cal->measure(peak);
  if (!peak_t) {
    std::fprintf(stderr, "commbound-calibrate: gemm: %s\n", peak_t.error().message.c_str());
    return 1;
  }
  std::fprintf(stderr, "device-to-device copy %.0f GB/s; GEMM 8192^3 %.0f TFLOP/s\n", *copy / 1e9,
               peak.flops() / (peak_t->p50_ms * 1e-3) / 1e12);
  auto measured = measure_rows(*cal, table);
  if (!measured) {
    std::fprintf(stderr, "commbound-calibrate: %s\n", measured.error().message.c_str());
    return 1;
  }
  measured->add_rows(added);
  std::vector<std::string> comments = {
      "Kernel calibration table written by commbound-calibrate (docs/calibration.md). Measured, not",
      "edited: regenerate with `commbound-calibrate --out FILE --force` on the GPU it describes.",
      "[device]: copy_GBps a device-to-device copy (bytes read + written), gemm_TFLOPs a bf16 8192^3",
      "GEMM (cuBLASLt)."};
  if (args->power || args->contention) {
    auto gemm = big_gemm();
    if (!gemm) {
      std::fprintf(stderr, "commbound-calibrate: %s\n", gemm.error().message.c_str());
      return 1;
    }
    if (args->power) {
      std::fprintf(stderr, "power phases (NVML): idle, GEMM, memory-bound, mixed ...\n");
      const std::size_t copy_bytes = std::size_t{1} << 30;
      auto src = DeviceBuffer<char>::create(copy_bytes);
      auto dst = DeviceBuffer<char>::create(copy_bytes);
      if (!src || !dst) return 1;
      PowerOptions po;
      po.compute_launch = [&](cudaStream_t s) { return gemm->run(s); };
      po.memory_launch = [&](cudaStream_t s) {
        return cuda_check(cudaMemcpyAsync(dst->get(), src->get(), copy_bytes, cudaMemcpyDeviceToDevice, s),
                          "cudaMemcpyAsync");
      };
      auto power = measure_power(po);
      if (!power) {
        std::fprintf(stderr, "commbound-calibrate: power: %s\n", power.error().message.c_str());
        return 1;
      }
      calibration::TablePower w;
      w.idle_w = power->idle_W();
      w.gemm_w = power->gemm_W();
      w.gemm_sm_clock_hz = power->gemm_sm_clock_MHz() * 1e6;
      w.memory_bound_w = power->memory_bound_W();
      w.mixed_w = power->mixed_W();
      w.mixed_compute_fraction = power->mixed_compute_fraction;
      w.power_limit_w = power->power_limit_W;
      w.sample_period_s = power->sample_period_ms * kSecondsPerMs;
      w.phase_s = power->phase_s;
      measured->set_power(w);
      comments.push_back("[power]: NVML board power and SM clock, mean of each sustained phase.");
      std::fprintf(stderr, "power: idle %.0f W, GEMM %.0f W at %.0f MHz, memory-bound %.0f W, mixed %.0f W\n",
                   power->idle_W(), power->gemm_W(), power->gemm_sm_clock_MHz(), power->memory_bound_W(),
                   power->mixed_W());
    }
    if (args->contention) {
      // NCCL's kernels occupy their SMs for a whole collective and move bytes at the network's
      // rate: 24 channels (one block each) is NCCL's usual count for 8 NICs on an H100 node, and a
      // ring step over IB NDR receives and sends at one 400 Gb/s NIC's ~48 GB/s each
      // (calibration/links.toml), so ~100 GB/s of payload goes through the GPU's memory.
      constexpr double kNcclPayloadGBps = 100;
      std::fprintf(stderr, "contention: GEMM and attention beside a copy kernel on 24 SMs ...\n");
      // Attention victim: the issue's shape, forward (b 2, 32 heads, seq 4096, d 128, causal).
      const AttentionShape as{Direction::forward, 2, 32, 32, 4096, 128, true};
      const std::size_t n = std::size_t{2} * 4096 * 32 * 128;
      auto q = DeviceBuffer<std::uint16_t>::create(n), k = DeviceBuffer<std::uint16_t>::create(n),
           v = DeviceBuffer<std::uint16_t>::create(n), o = DeviceBuffer<std::uint16_t>::create(n);
      auto lse = DeviceBuffer<float>::create(std::size_t{2} * 32 * 4096);
      for (const Status& s : {q.status(), k.status(), v.status(), o.status(), lse.status()}) {
        if (!s) return 1;
      }
      for (auto* b : {&*q, &*k, &*v}) {
        if (!fill_random_bf16(b->get(), n, 21, 1.0f)) return 1;
      }
      auto gemm_victim = [&](cudaStream_t s) { return gemm->run(s); };
      auto attention_victim = [&](cudaStream_t s) {
        return attention_forward(as, q->get(), k->get(), v->get(), o->get(), lse->get(), s);
      };
      ContentionOptions paced;
      paced.comm_target_GBps = kNcclPayloadGBps;
      ContentionOptions unpaced;  // the copy as fast as its 24 SMs go: SMs and HBM both contended
      auto g = measure_contention(paced, gemm_victim);
      auto a = g ? measure_contention(paced, attention_victim) : Expected<ContentionResult>(g.error());
      auto gu = a ? measure_contention(unpaced, gemm_victim) : Expected<ContentionResult>(a.error());
      auto au = gu ? measure_contention(unpaced, attention_victim) : Expected<ContentionResult>(gu.error());
      if (!au) {
        std::fprintf(stderr, "commbound-calibrate: contention: %s\n", au.error().message.c_str());
        return 1;
      }
      // A copy beside the victim takes SMs and bandwidth from it and cannot speed it up: a ratio
      // below 1 is the spread of the two timings (an H200 measured 0.982 for attention beside the
      // unpaced copy), written as 1, no slowdown; the ratio as measured stays in the comment.
      auto slowdown = [](const ContentionResult& r) { return std::max(1.0, r.factor); };
      calibration::TableContention c;
      c.comm_sms = g->comm_sms;
      c.comm_bytes_per_s = g->comm_GBps_overlapped * 1e9;
      c.gemm_factor = slowdown(*g);
      c.attention_factor = slowdown(*a);
      c.unpaced_comm_bytes_per_s = gu->comm_GBps_overlapped * 1e9;
      c.unpaced_gemm_factor = slowdown(*gu);
      c.unpaced_attention_factor = slowdown(*au);
      measured->set_contention(c);
      comments.push_back("[contention]: victim time beside a copy kernel holding comm_GBps on comm_sms SMs / alone");
      comments.push_back("(medians, at least 1); unpaced_*: the same with the copy unpaced (unpaced_comm_GBps).");
      comments.push_back(strprintf("measured ratios: GEMM %.3f, attention %.3f; unpaced: GEMM %.3f, attention %.3f",
                                   g->factor, a->factor, gu->factor, au->factor));
      for (const auto* r : {&*g, &*a, &*gu, &*au}) {
        std::fprintf(stderr, "contention: %s, copy %.0f GB/s: x%.3f (%.3f -> %.3f ms)\n",
                     r == &*g || r == &*gu ? "GEMM" : "attention", r->comm_GBps_overlapped, r->factor, r->alone_ms,
                     r->with_comm_ms);
      }
    }
  }

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  calibration::TableProvenance& p = *prov;
  p.timed_runs = "adaptive: >= " + std::to_string(options.min_timed_runs) + " and about " + fmt(options.min_total_ms) +
                 " ms of timed work, <= " + std::to_string(options.max_timed_runs) + " runs, after " +
                 std::to_string(options.warmup_runs) + " warm-ups";
  if (options.gemm_duty < 1) {
    p.timed_runs += "; each GEMM and attention shape followed by memory copies for " + fmt((1 - options.gemm_duty) / options.gemm_duty) +
                    "x its time (" + fmt(100 * options.gemm_duty) + "% of the GPU's time, under the power limit)";
  }
  p.input_rotation = "inputs rotated over enough buffer sets to span " + fmt(options.l2_multiple) + " x L2 (" +
                     std::to_string(cal->l2_bytes() >> 20) + " MiB)";
  p.measurement_s = seconds;
  measured->set_provenance(p);
  measured->set_device({*copy, peak.flops() / (peak_t->p50_ms * 1e-3)});
  std::ostringstream out;
  measured->write(out, comments);
  if (Status s = write_file_atomically(args->out, out.str()); !s) {
    std::fprintf(stderr, "commbound-calibrate: %s\n", s.error().message.c_str());
    return 1;
  }
  std::fprintf(stderr, "wrote %s: %zu rows in %.0f s\n", args->out.string().c_str(), measured->size(), seconds);
  return 0;
}
