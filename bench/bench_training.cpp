// Simulator speed for training: wall time and peak memory of `commbound run` on Llama-2 7B FSDP
// (ZeRO-2, local batch 2, seq 4096) on DGX H100 + IB NDR at 2048 and 16384 GPUs, and on Llama 3.1
// 405B at 16384 GPUs (2048 DGX H100; TP 8, PP 16 uneven 7 + 14 x 8 + 7 layers, CP 1, DP 128, seq
// 8192, global batch 2048, micro-batch 1, full recompute, sequence parallel, ZeRO-1: the DGX Cloud
// recipe's scenario with these keys set) on rail-optimized InfiniBand and on a RoCE fat-tree with
// ECMP, and on a DeepSeek-V3-shaped mixture of experts with expert
// parallelism 64 on 2048 GPUs (bench/scenarios/deepseek_v3_ep64_2048gpu.toml) and NVIDIA's
// DeepSeek-V3 recipe on its published 1024 GPUs (scenarios/published/deepseek_v3_dgxc_bf16.toml), through the same
// library calls as the CLI, stage by stage:
//   load      read and validate the scenario (and its kernel table) in this process
//   simulate  build the platform and simulate the iteration (warm-ups included) in a child
//   total     load + simulate: what `commbound run ... -j1` spends, less process start-up
// Peak memory is the child's maximum resident set (getrusage). Each scale runs `repeats` times;
// the median is printed. Prints figures, asserts nothing (make bench).
//
//   build/bin/bench_training [SCENARIO] [REPEATS]   (default scenarios/paper/weak_scaling_7b.toml, 3;
//                                                    relative to the repository root; the 405B and
//                                                    DeepSeek-V3 cases run when SCENARIO is not given)
#include "core/number_text.hpp"
#include "sim/scenario/presets.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/sweep/sweep_runner.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace commbound;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "scenarios/paper/weak_scaling_7b.toml";
  const auto repeats_arg = argc > 2 ? parse_number<int>(argv[2]) : Expected<int>(3);
  if (!repeats_arg || *repeats_arg < 1) {
    std::fprintf(stderr, "bench_training: repeats %s: must be a positive integer\n", argv[2]);
    return 2;
  }
  const int repeats = *repeats_arg;
  const sim::Presets presets(sim::default_calibration_dir());
  std::printf("bench_training: %s, median of %d\n", scenario.c_str(), repeats);
  struct Case {
    std::string label;
    std::string scenario;
    std::vector<std::string> overrides;
  };
  std::vector<Case> cases;
  for (int nodes : {256, 2048}) {
    cases.push_back({"Llama-2 7B FSDP, " + std::to_string(nodes * 8) + " GPUs", scenario,
                     {"sweep.values=[" + std::to_string(nodes) + "]"}});
  }
  if (argc <= 1) {
    cases.push_back({"Llama 3.1 405B TP8 PP16 DP128, 16384 GPUs", "scenarios/published/llama3.1_405b_dgxc_bf16.toml",
                     {"cluster.nodes=2048", "training.global_batch=2048", "sweep.values=[[2048, 2048]]",
                      "parallel.pp=16", "parallel.virtual_stages=1", "parallel.cp=1",
                      "parallel.pp_first_stage_layers=7", "parallel.pp_last_stage_layers=7",
                      "training.activation_checkpointing=full"}});
    // The same layout on a fat-tree with RoCE and ECMP: its data-parallel rings share spine ports.
    // The InfiniBand fit is not this fabric's, so it runs on NCCL's tuner latencies.
    cases.push_back({"Llama 3.1 405B TP8 PP16 DP128, 16384 GPUs, fat-tree RoCE ECMP",
                     "scenarios/published/llama3.1_405b_dgxc_bf16.toml",
                     {"cluster.nodes=2048", "training.global_batch=2048", "sweep.values=[[2048, 2048]]",
                      "parallel.pp=16", "parallel.virtual_stages=1", "parallel.cp=1",
                      "parallel.pp_first_stage_layers=7", "parallel.pp_last_stage_layers=7",
                      "training.activation_checkpointing=full", "fabric.topology=fat-tree",
                      "fabric.link=roce-400g", "fabric.routing=ecmp", "nccl.fit="}});
    cases.push_back({"Llama 3.1 405B TP8 PP16 DP1024, 131072 GPUs", "scenarios/published/llama3.1_405b_dgxc_bf16.toml",
                     {"cluster.nodes=16384", "fabric.switch_radix=128", "training.global_batch=2048",
                      "sweep.values=[[16384, 2048]]", "parallel.pp=16", "parallel.virtual_stages=1", "parallel.cp=1",
                      "parallel.pp_first_stage_layers=7", "parallel.pp_last_stage_layers=7",
                      "training.activation_checkpointing=full"}});
    // Meta's own layout (the Llama 3 paper): interleaved, one layer fewer on the first and last
    // stage (pp_layout), no recompute, a RoCE fat-tree.
    cases.push_back({"Llama 3 405B as Meta ran it, 16384 GPUs", "scenarios/published/llama3_405b_meta.toml",
                     {"sweep.values=[2048]"}});
    cases.push_back({"DeepSeek-V3-shaped TP2 PP8 EP64, 2048 GPUs", "bench/scenarios/deepseek_v3_ep64_2048gpu.toml", {}});
    // NVIDIA's DGX Cloud DeepSeek-V3 recipe at its published 1024 GPUs (TP2 PP16 EP64, MTP).
    cases.push_back({"DeepSeek-V3 DGX Cloud recipe, 1024 GPUs", "scenarios/published/deepseek_v3_dgxc_bf16.toml",
                     {"sweep.values=[[128, 8192, 16, 3, 2]]"}});
  }
  for (const Case& c : cases) {
    std::vector<double> load_s, simulate_s, total_s;
    long peak_kib = 0;
    double iteration_s = 0;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      auto file = sim::ScenarioFile::load(c.scenario, c.overrides, presets);
      if (!file) {
        std::printf("%s\n", file.error().message.c_str());
        return 1;
      }
      load_s.push_back(seconds_since(t0));
      const auto t1 = std::chrono::steady_clock::now();
      auto rows = sim::run_sweep(*file, {});
      if (!rows) {
        std::printf("%s\n", rows.error().message.c_str());
        return 1;
      }
      simulate_s.push_back(seconds_since(t1));
      total_s.push_back(seconds_since(t0));
      iteration_s = rows->front().metrics.iteration_s;
      rusage children{};
      getrusage(RUSAGE_CHILDREN, &children);
      peak_kib = std::max(peak_kib, children.ru_maxrss);
    }
    std::printf("%-42s: load %.2f s, simulate %.2f s, total %.2f s wall; peak RSS %ld MiB "
                "(simulated iteration %.3f s)\n",
                c.label.c_str(), median(load_s), median(simulate_s), median(total_s), peak_kib / 1024, iteration_s);
    std::fflush(stdout);
  }
  return 0;
}
