#include "kernels/device/cuda_support.hpp"
#include "kernels/device/timing.hpp"

#include <cmath>

namespace commbound::kernels {
namespace {

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

Status spin_gpu(double microseconds) {
  static const double clock_hz = [] {
    int device = 0, khz = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) != cudaSuccess || khz <= 0) {
      return 2.0e9;  // unknown: assume 2 GHz (H100 SXM boost is 1.98 GHz); only the spin's length changes
    }
    return khz * 1e3;
  }();
  spin_kernel<<<1, 1>>>(static_cast<long long>(microseconds * 1e-6 * clock_hz));
  return cuda_check(cudaGetLastError(), "spin kernel launch");
}

Expected<Percentiles> time_kernel(const std::function<Status(int)>& launch, const TimingOptions& options) {
  auto timer = EventTimer::create();
  if (!timer) return timer.error();
  const int rotations = std::max(1, options.rotations);
  constexpr double kSpinUs = 50;  // longer than the host needs to queue event, launch, event
  auto timed_run = [&](int i) -> Expected<float> {
    if (Status s = spin_gpu(kSpinUs); !s) return s.error();
    if (Status s = timer->start(); !s) return s.error();
    if (Status s = launch(i % rotations); !s) return s.error();
    return timer->elapsed_millis();
  };
  double last_ms = 0, spent_ms = 0;
  int i = 0;
  for (; i < options.warmup_runs; ++i) {
    auto ms = timed_run(i);
    if (!ms) return ms.error();
    last_ms = *ms;
    spent_ms += *ms;
  }
  int runs = options.timed_runs;
  if (options.min_total_ms > 0 && last_ms > 0) {
    const int wanted = static_cast<int>(std::ceil(options.min_total_ms / last_ms));
    runs = std::clamp(wanted, options.timed_runs, std::max(options.timed_runs, options.max_timed_runs));
  }
  std::vector<double> samples_ms;
  for (int r = 0; r < runs; ++r, ++i) {
    auto ms = timed_run(i);
    if (!ms) return ms.error();
    samples_ms.push_back(*ms);
    spent_ms += *ms;
  }
  if (samples_ms.empty()) return Error{"time_kernel: no timed runs requested"};
  Percentiles p = percentiles(samples_ms);
  p.spent_ms = spent_ms;
  return p;
}

}  // namespace commbound::kernels
