// Simulator speed for training: wall time and peak memory of `commbound run` on Llama-2 7B FSDP
// (ZeRO-2, local batch 2, seq 4096) on DGX H100 + IB NDR at 2048 and 16384 GPUs, through the same
// library calls as the CLI, stage by stage:
//   load      read and validate the scenario (and its kernel table) in this process
//   simulate  build the platform and simulate the iteration (warm-ups included) in a child
//   total     load + simulate: what `commbound run ... -j1` spends, less process start-up
// Peak memory is the child's maximum resident set (getrusage). Each scale runs `repeats` times;
// the median is printed. Prints figures, asserts nothing (make bench).
//
//   build/bin/bench_training [SCENARIO] [REPEATS]   (default scenarios/paper/weak_scaling_7b.toml, 3;
//                                                    relative to the repository root)
#include "calibration/base/number_text.hpp"
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
  for (int nodes : {256, 2048}) {
    std::vector<double> load_s, simulate_s, total_s;
    long peak_kib = 0;
    double iteration_s = 0;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      auto file = sim::ScenarioFile::load(scenario, {"sweep.values=[" + std::to_string(nodes) + "]"}, presets);
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
    std::printf("Llama-2 7B FSDP, %6d GPUs: load %.2f s, simulate %.2f s, total %.2f s wall; peak RSS %ld MiB "
                "(simulated iteration %.3f s)\n",
                nodes * 8, median(load_s), median(simulate_s), median(total_s), peak_kib / 1024, iteration_s);
    std::fflush(stdout);
  }
  return 0;
}
