// Fuzzes what `commbound run SCENARIO --set key=value ...` does with its overrides, on the shipped
// scenarios: the input's first byte picks a scenario, each further line is one --set (at most 8).
// The pipeline then runs as the CLI runs it, up to what a bad value can break: the scenario and
// its first [sweep] points are read, the size limits are checked (docs/limits.md), memory is
// worked out, the programs are built, and a small cluster's iteration is simulated in a child.
// Contract: an error is one line naming the scenario file or the --set; memory is finite and
// non-negative; every op's FLOPs, bytes and collective size are finite and non-negative (programs
// are built up to kMaxBuiltLayerPasses); a simulated iteration has
// a finite positive time and finite non-negative figures; no child aborts, crashes or passes the
// memory cap (kChildRssCapKib).
#include "core/child_process.hpp"
#include "sim/run/training_run.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/size_limits.hpp"
#include "sim/workload/memory_model.hpp"
#include "sim/workload/workload.hpp"
#include "tests/fuzz/fuzz_input.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace commbound::fuzz {
namespace {

// The shipped scenarios the first byte picks from (relative to the source root).
const std::vector<std::string> kScenarios = {
    "scenarios/examples/workstation-1gpu.toml",   "scenarios/examples/dgx-h100-ib-ndr.toml",
    "scenarios/examples/dgx-h100-roce.toml",      "scenarios/examples/dgx-a100-ib-hdr.toml",
    "scenarios/paper/weak_scaling_7b.toml",       "scenarios/paper/model_parallel_7b_256gpu.toml",
    "scenarios/paper/cp_vs_tp.toml",              "scenarios/paper/context_length.toml",
    "scenarios/paper/model_sizes.toml",           "scenarios/studies/moe_ep_fabric.toml",
    "scenarios/studies/search_7b_256gpu.toml",    "scenarios/studies/diloco.toml",
    "scenarios/studies/hsdp_vs_fsdp.toml",        "scenarios/published/llama3.1_405b_dgxc_bf16.toml",
};
constexpr std::size_t kMaxSets = 8;
constexpr std::size_t kMaxPoints = 2;      // points read per input (the rest read the same way)
// Larger clusters and programs are checked up to their programs: a simulation of one stays well
// inside libFuzzer's 10 s per input under the sanitizers.
constexpr int kMaxSimulatedGpus = 64;
constexpr std::size_t kMaxSimulatedOps = 20000;
constexpr std::int64_t kMaxSimulatedLayerPasses = 256;
// Programs are built only up to this many layer passes (micro-batches x layers, about 100 ops
// each): the size limits allow 2^22 ops (1.2 GB), more than the sanitizers' doubling leaves under
// libFuzzer's 2 GB cap, and building is slow there (Llama-2 7B tp 4 pp 2 on one node, 256
// micro-batches x 32 layers, passed libFuzzer's 10 s in a campaign). Past it, the limits
// themselves are what is checked (unit tests build programs at the limit).
constexpr std::int64_t kMaxBuiltLayerPasses = 4096;
constexpr long kChildRssCapKib = 2L << 20;  // 2 GiB: a child under ASan takes about twice the plain build

const sim::Presets& presets() {
  static const sim::Presets p(COMMBOUND_FUZZ_CALIBRATION_DIR);
  return p;
}

bool finite_non_negative(double v) { return std::isfinite(v) && v >= 0; }

void check_memory(const sim::MemoryUse& m) {
  require(finite_non_negative(m.total_bytes) && finite_non_negative(m.capacity_bytes), "memory total not finite or < 0");
  for (const auto& [what, bytes] : m.bytes) require(finite_non_negative(bytes), "memory " + what + " not finite or < 0");
}

void check_programs(const std::vector<sim::Program>& stages) {
  for (const sim::Program& p : stages) {
    for (const sim::Op& op : p.ops) {
      require(finite_non_negative(op.flops) && finite_non_negative(op.bytes) && finite_non_negative(op.size_bytes),
              "op " + op.name + " with a negative or non-finite size");
    }
  }
}

// In a child: the iteration simulated, its figures checked there ("" when they hold).
Expected<std::string> simulate_and_check(const sim::Scenario& sc) {
  auto run = sim::simulate_training(sc);
  if (!run) return run.error();
  const sim::Metrics& m = run->metrics;
  if (m.oom) return std::string();
  for (double v : {m.tokens_per_s, m.tokens_per_s_per_gpu, m.model_tflops_per_gpu, m.mfu, m.compute_s, m.comm_s,
                   m.exposed_comm_s, m.power_w_per_gpu, m.tokens_per_joule, m.memory_bytes_per_gpu}) {
    if (!finite_non_negative(v)) return std::string("a figure negative or not finite");
  }
  if (!(std::isfinite(m.iteration_s) && m.iteration_s > 0)) return std::string("an iteration of no positive time");
  return std::string();
}

void check_point(const sim::Scenario& sc, const std::string& path) {
  if (!sc.training) return;
  if (Status size = sim::check_training_size(sc); !size) {
    require_error_names(size.error(), {path + ":"});
    return;
  }
  const sim::TrainingSpec& t = *sc.training;
  const sim::MemoryUse memory = sim::memory_per_gpu(t, sc.cluster.node.nccl_channels);
  check_memory(memory);
  if (sc.workload || !memory.fits()) return;
  if (std::int64_t{t.micro_batches} * (t.model.layers + t.model.mtp_layers) > kMaxBuiltLayerPasses) return;  // see above
  const std::vector<sim::Program> stages = sim::build_programs(t);
  check_programs(stages);
  std::size_t ops = 0;
  for (const sim::Program& p : stages) ops += p.ops.size();
  const std::int64_t passes = std::int64_t{t.micro_batches} * (t.model.layers + t.model.mtp_layers);
  if (sc.cluster.gpus() > kMaxSimulatedGpus || ops > kMaxSimulatedOps || passes > kMaxSimulatedLayerPasses) return;
  auto outcome = run_in_child([&sc] { return simulate_and_check(sc); });
  rusage children{};
  getrusage(RUSAGE_CHILDREN, &children);
  require(children.ru_maxrss <= kChildRssCapKib, "a simulation took " + std::to_string(children.ru_maxrss) + " KiB");
  if (!outcome) {
    require(outcome.error().message.find("killed by signal") == std::string::npos, outcome.error().message);
    return;  // a refusal (a platform that cannot be built) is an answer
  }
  require(outcome->empty(), *outcome);
}

}  // namespace
}  // namespace commbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace commbound;
  using namespace commbound::fuzz;
  if (size == 0) return 0;
  const std::string path = std::string(COMMBOUND_SOURCE_DIR) + "/" + kScenarios[data[0] % kScenarios.size()];
  std::vector<std::string> sets;
  std::istringstream lines(text_of(data + 1, size - 1));
  for (std::string line; sets.size() < kMaxSets && std::getline(lines, line);) {
    if (!line.empty()) sets.push_back(line);
  }
  auto file = sim::ScenarioFile::load(path, sets, presets());
  if (!file) {
    require_error_names(file.error(), {path + ":", "--set "});
    return 0;
  }
  if (file->points() > static_cast<std::size_t>(sim::kMaxSweepPoints)) return 0;  // refused without --force-large
  for (std::size_t i = 0; i < std::min(file->points(), kMaxPoints); ++i) {
    auto point = file->point(i, sets);
    if (!point) {
      require_error_names(point.error(), {path + ":", "--set "});
      continue;
    }
    check_point(*point, path);
  }
  return 0;
}
