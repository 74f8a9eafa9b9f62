// Layout search speed: wall time of `commbound search` on its acceptance case (Llama-2 7B, global
// batch 512, seq 4096, 256 H100: 32 DGX H100, IB NDR, rail-optimized, the fitted fabric), through
// the same library call as the CLI: how many layouts were enumerated, invalid, out of memory,
// simulated and pruned, the best one, the wall time (target: under 60 s on 2 cores) and the peak
// memory (each layout is simulated in a child process: the largest child's).
// Prints figures, asserts nothing.
//
//   build/bin/bench_search [SCENARIO] [JOBS]   (default scenarios/studies/search_7b_256gpu.toml and
//                                               the cores; relative to the repository root)
#include "core/number_text.hpp"
#include "sim/search/layout_search.hpp"
#include "sim/scenario/presets.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

#include <sys/resource.h>

using namespace commbound;

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "scenarios/studies/search_7b_256gpu.toml";
  const auto jobs_arg = argc > 2 ? parse_number<int>(argv[2])
                                 : Expected<int>(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  if (!jobs_arg || *jobs_arg < 1) {
    std::fprintf(stderr, "bench_search: jobs %s: must be a positive integer\n", argv[2]);
    return 2;
  }
  const int jobs = *jobs_arg;
  const auto t0 = std::chrono::steady_clock::now();
  auto file = sim::ScenarioFile::load(scenario, {}, sim::Presets(sim::default_calibration_dir()));
  if (!file) {
    std::printf("%s\n", file.error().message.c_str());
    return 1;
  }
  sim::SearchOptions options;
  options.jobs = jobs;
  double bounded_s = 0;
  options.bounded = [&](const std::vector<sim::Candidate>&) {
    bounded_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto result = sim::search_layouts(*file, options);
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!result) {
    std::printf("%s\n", result.error().message.c_str());
    return 1;
  }
  std::map<sim::Verdict, int> count;
  for (const sim::Candidate& c : result->candidates) ++count[c.verdict];
  const sim::Candidate& best = result->candidates.front();
  std::printf("bench_search: %s, -j %d\n", scenario.c_str(), jobs);
  std::printf("%zu layouts: %d invalid, %d out of memory, %d simulated, %d pruned by bound\n", result->candidates.size(),
              count[sim::Verdict::invalid], count[sim::Verdict::out_of_memory], count[sim::Verdict::simulated],
              count[sim::Verdict::pruned]);
  if (best.metrics) {
    std::printf("best: %s, %.1f tokens/s/GPU, MFU %.1f%%\n", best.layout.name().c_str(), best.metrics->tokens_per_s_per_gpu,
                100 * best.metrics->mfu);
  }
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  std::printf("wall: validate + bound %.1f s, total %.1f s; peak RSS %ld MiB here, %ld MiB in the largest layout's process\n",
              bounded_s, total_s, self.ru_maxrss / 1024, children.ru_maxrss / 1024);
  return 0;
}
