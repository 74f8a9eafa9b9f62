// Simulator speed for a cluster rather than one iteration.
// Several jobs on one cluster: wall time of what `commbound run` does for
// scenarios/studies/two_jobs.toml (two Llama-2 7B FSDP jobs of 2048 GPUs on one 4096-GPU
// cluster): load the scenario, then the three simulations (the jobs together, each alone) in child
// processes, two at once as on a 2-core machine. On the study's fat-tree at 2:1 with IB adaptive
// routing, packed and spread, and on a non-blocking rail-optimized fabric. The median of `repeats`;
// prints figures, asserts nothing (make bench).
// The time to train: wall time of `commbound train` (the commbound beside this binary) projecting
// Llama 3.1 405B on 16,384 H100s (the DGX Cloud recipe with Meta's TP 8, PP 16 layout, as
// bench_training runs it): one iteration simulated, then the failure model and its Monte Carlo.
//
//   build/bin/bench_cluster [REPEATS]   (default 3; run from the repository root)
#include "core/number_text.hpp"
#include "sim/run/cluster_run.hpp"
#include "sim/scenario/presets.hpp"
#include "sim/scenario/scenario.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <string>
#include <vector>

using namespace commbound;

int main(int argc, char** argv) {
  const auto repeats = argc > 1 ? parse_number<int>(argv[1]) : Expected<int>(3);
  if (!repeats || *repeats < 1) {
    std::fprintf(stderr, "bench_cluster: repeats %s: must be a positive integer\n", argv[1]);
    return 2;
  }
  const sim::Presets presets(sim::default_calibration_dir());
  const std::string scenario = "scenarios/studies/two_jobs.toml";
  struct Case {
    std::string label;
    std::vector<std::string> overrides;
  };
  const std::vector<Case> cases = {
      {"fat-tree 2:1, IB adaptive, packed", {}},
      {"fat-tree 2:1, IB adaptive, spread", {"job[0].placement=spread", "job[1].placement=spread"}},
      {"rail-optimized 1:1, IB adaptive, packed", {"fabric.topology=rail-optimized", "fabric.oversubscription=1"}},
  };
  std::printf("bench_cluster: %s, two 2048-GPU jobs on 4096 GPUs, 2 processes, median of %d\n", scenario.c_str(), *repeats);
  for (const Case& c : cases) {
    std::vector<double> times_s;
    for (int r = 0; r < *repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      auto sc = sim::load_scenario(scenario, c.overrides, presets);
      if (!sc) {
        std::fprintf(stderr, "bench_cluster: %s\n", sc.error().message.c_str());
        return 1;
      }
      sim::ClusterRunOptions options;
      options.processes = 2;
      auto results = sim::simulate_cluster(*sc, options);
      if (!results) {
        std::fprintf(stderr, "bench_cluster: %s\n", results.error().message.c_str());
        return 1;
      }
      times_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times_s.begin(), times_s.end());
    std::printf("  %-42s %6.2f s per run (target <= 2 s)\n", c.label.c_str(), times_s[times_s.size() / 2]);
  }
  const std::string commbound = (std::filesystem::path(argv[0]).parent_path() / "commbound").string();
  const std::string train =
      commbound + " train scenarios/published/llama3.1_405b_dgxc_bf16.toml --tokens 15.6e12 --set cluster.nodes=2048"
                  " --set training.global_batch=2048 --set 'sweep.values=[[2048, 2048]]' --set parallel.pp=16"
                  " --set parallel.virtual_stages=1 --set parallel.cp=1 --set parallel.pp_first_stage_layers=7"
                  " --set parallel.pp_last_stage_layers=7 --set training.activation_checkpointing=full > /dev/null";
  std::vector<double> train_s;
  for (int r = 0; r < *repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::system(train.c_str()) != 0) {
      std::fprintf(stderr, "bench_cluster: %s failed\n", train.c_str());
      return 1;
    }
    train_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(train_s.begin(), train_s.end());
  std::printf("  %-42s %6.2f s per run (target <= 30 s)\n", "train: Llama 3.1 405B, 16384 GPUs", train_s[train_s.size() / 2]);
  return 0;
}
