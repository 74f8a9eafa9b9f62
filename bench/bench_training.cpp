// Simulator speed for training: wall time and peak memory to simulate Llama-2 7B FSDP (ZeRO-2,
// local batch 2, seq 4096) iterations on DGX H100 + IB NDR at 2048 and 16384 GPUs. Each case runs
// in its own process; the engine simulates one warm-up and one measured iteration, and the wall
// time is divided by two. Prints figures, asserts nothing.
//
//   build/bin/bench_training [SCENARIO]   (make bench; default scenarios/paper/weak_scaling_7b.toml,
//                                          relative to the repository root)
#include "network/platform.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/scenario.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

using namespace commbound;

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "scenarios/paper/weak_scaling_7b.toml";
  for (int nodes : {256, 2048}) {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      const sim::Presets presets(sim::default_calibration_dir());
      auto sc = sim::load_scenario(scenario, {"cluster.nodes=" + std::to_string(nodes)}, presets);
      if (!sc) {
        std::printf("%s\n", sc.error().message.c_str());
        _exit(1);
      }
      const auto t0 = std::chrono::steady_clock::now();
      const auto t1 = std::chrono::steady_clock::now();
      const sim::TrainingSpec& t = *sc->training;
      const std::vector<sim::Program> stages = sim::build_programs(t);
      const sim::Program& program = stages.front();
      const sim::IterationTimeline tl = sim::simulate(sc->cluster, sc->nccl, t, stages, sim::CostModel(t.gpu), {}).value();
      const auto t2 = std::chrono::steady_clock::now();
      rusage usage{};
      getrusage(RUSAGE_SELF, &usage);
      const double iterations = t.warmup_iterations + 1;
      std::printf("Llama-2 7B FSDP, %6d GPUs: platform %.2f s, %.2f s wall per simulated iteration "
                  "(%d ops/iteration, simulated iteration %.3f s), peak RSS %ld MiB\n",
                  nodes * 8, std::chrono::duration<double>(t1 - t0).count(),
                  std::chrono::duration<double>(t2 - t1).count() / iterations, static_cast<int>(program.ops.size()),
                  tl.iteration_s(), usage.ru_maxrss / 1024);
      std::fflush(stdout);
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
  }
  return 0;
}
