// Timing harness for GPU kernels: warm-up runs, then many timed runs (CUDA events), each run
// told which of several input buffers to use so that L2 does not keep the inputs warm, and the
// spread kept as p10 / p50 / p90 (the spread feeds the jitter model).
#pragma once

#include "core/expected.hpp"

#include <algorithm>
#include <functional>
#include <vector>

namespace commbound::kernels {

struct Percentiles {
  double p10_ms = 0;
  double p50_ms = 0;
  double p90_ms = 0;
  double spent_ms = 0;  // time_kernel: every run's time, warm-ups included (0 from percentiles())
};

// Nearest-rank percentiles of `samples_ms` (must not be empty).
inline Percentiles percentiles(std::vector<double> samples_ms) {
  std::sort(samples_ms.begin(), samples_ms.end());
  auto at = [&](double q) {
    const auto n = samples_ms.size();
    const auto rank = static_cast<std::size_t>(q * static_cast<double>(n - 1) + 0.5);
    return samples_ms[std::min(rank, n - 1)];
  };
  return {at(0.1), at(0.5), at(0.9)};
}

struct TimingOptions {
  int warmup_runs = 3;
  int timed_runs = 20;  // at least this many
  int rotations = 1;    // distinct input buffer sets; run i uses set i % rotations
  // Adaptive length: more runs (up to max_timed_runs) until the timed runs add up to this much
  // GPU time, estimated from the last warm-up run; 0 keeps exactly timed_runs.
  double min_total_ms = 0;
  int max_timed_runs = 50;
};

// Times `launch(set)` (kernel launches on the default stream using input set `set`). Before each
// timed run a short spin kernel keeps the GPU busy while the host queues the start event, the
// launch and the stop event, so that the events bracket the kernel and not the host's launch
// latency (what nvbench's blocking kernel does).
Expected<Percentiles> time_kernel(const std::function<Status(int)>& launch, const TimingOptions& options);

// Occupies the GPU for about `microseconds` on the default stream (a one-thread clock spin).
Status spin_gpu(double microseconds);

}  // namespace commbound::kernels
