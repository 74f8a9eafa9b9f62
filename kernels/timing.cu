#include "kernels/cuda_support.hpp"
#include "kernels/timing.hpp"

namespace commbound::kernels {

Expected<Percentiles> time_kernel(const std::function<Status(int)>& launch, const TimingOptions& options) {
  auto timer = EventTimer::create();
  if (!timer) return timer.error();
  std::vector<double> samples_ms;
  const int rotations = std::max(1, options.rotations);
  for (int i = 0; i < options.warmup_runs + options.timed_runs; ++i) {
    if (Status s = timer->start(); !s) return s.error();
    if (Status s = launch(i % rotations); !s) return s.error();
    auto ms = timer->elapsed_millis();
    if (!ms) return ms.error();
    if (i >= options.warmup_runs) samples_ms.push_back(*ms);
  }
  if (samples_ms.empty()) return Error{"time_kernel: no timed runs requested"};
  return percentiles(samples_ms);
}

}  // namespace commbound::kernels
