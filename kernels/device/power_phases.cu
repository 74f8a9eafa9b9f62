// The four [power] phases. Sustained phases keep the GPU fed without letting the host queue seconds
// of work: launches go in batches, and the host waits for batch k-1 once batch k is queued, so the
// GPU never idles between batches and the phase ends within about one batch of its deadline.
#include "kernels/device/cuda_support.hpp"
#include "kernels/device/power_phases.hpp"
#include "kernels/host/power_sampler.hpp"
#include "kernels/device/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

namespace commbound::kernels {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kDurationWarmupRuns = 2;  // median_launch_s: untimed runs first
constexpr int kDurationTimedRuns = 7;   // median_launch_s: runs the median is taken over
constexpr int kPciBusIdChars = 64;      // cudaDeviceGetPCIBusId needs 13 ("0000:00:00.0")

Status validate(const PowerOptions& o) {
  if (!o.compute_launch || !o.memory_launch) return Error{"measure_power: compute_launch and memory_launch are required"};
  if (!(o.sample_period_s > 0)) return Error{"measure_power: sample_period_s must be positive"};
  if (!(o.ramp_discard_s >= 0) || !(o.phase_s > o.ramp_discard_s)) {
    return Error{"measure_power: phase_s = " + std::to_string(o.phase_s) + " must exceed ramp_discard_s = " +
                 std::to_string(o.ramp_discard_s) + " >= 0"};
  }
  if (o.launches_per_sync < 1) return Error{"measure_power: launches_per_sync must be at least 1"};
  if (!(o.mixed_cycle_s > 0)) return Error{"measure_power: mixed_cycle_s must be positive"};
  return Ok{};
}

// Queues batches on `stream` until `deadline`, one batch ahead: `enqueue(slot)` queues a batch
// (slot alternates 0, 1), then the previous batch is waited for and handed to `finished(slot)`.
// A slot's resources are free again when enqueue(slot) is called.
Status run_batches(const Stream& stream, Clock::time_point deadline, const std::function<Status(int)>& enqueue,
                   const std::function<Status(int)>& finished) {
  std::vector<Event> batch_ends;
  for (int slot = 0; slot < 2; ++slot) {
    auto e = Event::create();
    if (!e) return e.error();
    batch_ends.push_back(std::move(*e));
  }
  int batches = 0;
  for (; Clock::now() < deadline; ++batches) {
    const int slot = batches % 2;
    if (Status s = enqueue(slot); !s) return s;
    if (Status s = batch_ends[slot].record(stream.get()); !s) return s;
    if (batches == 0) continue;
    if (Status s = batch_ends[1 - slot].synchronize(); !s) return s;
    if (Status s = finished(1 - slot); !s) return s;
  }
  if (batches == 0) return Ok{};
  const int last = (batches - 1) % 2;
  if (Status s = batch_ends[last].synchronize(); !s) return s;
  return finished(last);
}

// Samples power while `body(deadline)` runs for options.phase_s; averages the samples taken after
// the ramp-up.
Expected<PowerPhaseResult> run_phase(const Nvml& nvml, const PowerOptions& o,
                                     const std::function<Status(Clock::time_point)>& body) {
  PowerSampler sampler(nvml, o.sample_period_s);
  if (Status s = sampler.start(); !s) return s.error();
  const Clock::time_point t0 = Clock::now();
  const Status body_status = body(t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.phase_s)));
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const Status stop_status = sampler.stop();
  if (!body_status) return body_status.error();
  if (!stop_status) return stop_status.error();
  std::vector<PowerSample> kept;
  for (const PowerSample& x : sampler.samples()) {
    if (x.time_s >= o.ramp_discard_s) kept.push_back(x);
  }
  if (kept.empty()) return Error{"measure_power: no power sample after the ramp-up (phase too short?)"};
  const PowerSummary summary = summarize(kept);
  PowerPhaseResult r;
  r.mean_power_w = summary.mean_power_w;
  r.mean_sm_clock_mhz = summary.mean_sm_clock_mhz;
  r.seconds = seconds;
  r.samples = summary.samples;
  return r;
}

// `launch` back to back until the deadline, launches_per_sync per batch.
std::function<Status(Clock::time_point)> sustained(const StreamLaunch& launch, const Stream& stream, int per_batch) {
  return [&launch, &stream, per_batch](Clock::time_point deadline) {
    auto enqueue = [&](int) -> Status {
      for (int i = 0; i < per_batch; ++i) {
        if (Status s = launch(stream.get()); !s) return s;
      }
      return Ok{};
    };
    return run_batches(stream, deadline, enqueue, [](int) -> Status { return Ok{}; });
  };
}

// Median GPU time of one `launch`, seconds (events around each of a few runs).
Expected<double> median_launch_s(const StreamLaunch& launch, const Stream& stream) {
  auto start = Event::create();
  auto stop = Event::create();
  if (!start) return start.error();
  if (!stop) return stop.error();
  std::vector<double> samples_ms;
  for (int i = 0; i < kDurationWarmupRuns + kDurationTimedRuns; ++i) {
    if (Status s = start->record(stream.get()); !s) return s.error();
    if (Status s = launch(stream.get()); !s) return s.error();
    if (Status s = stop->record(stream.get()); !s) return s.error();
    if (Status s = stop->synchronize(); !s) return s.error();
    auto ms = Event::elapsed_ms(*start, *stop);
    if (!ms) return ms.error();
    if (i >= kDurationWarmupRuns) samples_ms.push_back(*ms);
  }
  return percentiles(samples_ms).p50_ms * 1e-3;
}

// The mixed phase: cycles of `compute_launches` compute launches then `memory_launches` memory
// launches, with events around each stretch adding up the GPU time of each kind.
struct MixedPhase {
  const PowerOptions& options;
  const Stream& stream;
  int compute_launches = 1;
  int memory_launches = 1;
  int cycles_per_batch = 1;
  double compute_ms = 0;
  double memory_ms = 0;

  Status run(Clock::time_point deadline) {
    std::vector<Event> marks[2];  // per slot: 3 per cycle (start, compute done, memory done)
    for (auto& slot_marks : marks) {
      for (int i = 0; i < 3 * cycles_per_batch; ++i) {
        auto e = Event::create();
        if (!e) return e.error();
        slot_marks.push_back(std::move(*e));
      }
    }
    auto enqueue = [&](int slot) -> Status {
      for (int c = 0; c < cycles_per_batch; ++c) {
        if (Status s = marks[slot][3 * c].record(stream.get()); !s) return s;
        for (int i = 0; i < compute_launches; ++i) {
          if (Status s = options.compute_launch(stream.get()); !s) return s;
        }
        if (Status s = marks[slot][3 * c + 1].record(stream.get()); !s) return s;
        for (int i = 0; i < memory_launches; ++i) {
          if (Status s = options.memory_launch(stream.get()); !s) return s;
        }
        if (Status s = marks[slot][3 * c + 2].record(stream.get()); !s) return s;
      }
      return Ok{};
    };
    auto finished = [&](int slot) -> Status {
      for (int c = 0; c < cycles_per_batch; ++c) {
        auto compute = Event::elapsed_ms(marks[slot][3 * c], marks[slot][3 * c + 1]);
        auto memory = Event::elapsed_ms(marks[slot][3 * c + 1], marks[slot][3 * c + 2]);
        if (!compute) return compute.error();
        if (!memory) return memory.error();
        compute_ms += *compute;
        memory_ms += *memory;
      }
      return Ok{};
    };
    return run_batches(stream, deadline, enqueue, finished);
  }
};

}  // namespace

Expected<PowerTable> measure_power(const PowerOptions& options) {
  if (Status s = validate(options); !s) return s.error();
  if (Status s = cuda_check(cudaSetDevice(options.device), "cudaSetDevice"); !s) return s.error();
  if (Status s = cuda_check(cudaFree(nullptr), "cudaFree (opening the CUDA context)"); !s) return s.error();
  char pci_bus_id[kPciBusIdChars] = {};
  if (Status s = cuda_check(cudaDeviceGetPCIBusId(pci_bus_id, kPciBusIdChars, options.device), "cudaDeviceGetPCIBusId");
      !s) {
    return s.error();
  }
  auto nvml = Nvml::open_pci_bus_id(pci_bus_id);
  if (!nvml) return nvml.error();
  auto limit_w = nvml->power_limit_w();
  if (!limit_w) return limit_w.error();
  auto stream = Stream::create(StreamOrdering::non_blocking);
  if (!stream) return stream.error();

  PowerTable table;
  table.sample_period_ms = options.sample_period_s * 1e3;
  table.phase_s = options.phase_s;
  table.power_limit_W = *limit_w;
  table.driver = nvml->driver_version();

  auto idle = run_phase(*nvml, options, [](Clock::time_point deadline) -> Status {
    std::this_thread::sleep_until(deadline);
    return Ok{};
  });
  if (!idle) return idle.error();
  table.idle = *idle;

  // Also the warm-up: first launches pay for library initialisation and lazy module loading.
  auto compute_s = median_launch_s(options.compute_launch, *stream);
  if (!compute_s) return compute_s.error();
  auto memory_s = median_launch_s(options.memory_launch, *stream);
  if (!memory_s) return memory_s.error();

  auto gemm = run_phase(*nvml, options, sustained(options.compute_launch, *stream, options.launches_per_sync));
  if (!gemm) return gemm.error();
  table.gemm = *gemm;

  auto memory_bound = run_phase(*nvml, options, sustained(options.memory_launch, *stream, options.launches_per_sync));
  if (!memory_bound) return memory_bound.error();
  table.memory_bound = *memory_bound;

  // Half a cycle of compute, then as many memory launches as take the same time.
  MixedPhase mixed{options, *stream};
  const double half_cycle_s = options.mixed_cycle_s / 2;
  mixed.compute_launches = std::max(1, static_cast<int>(std::lround(half_cycle_s / *compute_s)));
  mixed.memory_launches = std::max(1, static_cast<int>(std::lround(mixed.compute_launches * *compute_s / *memory_s)));
  mixed.cycles_per_batch = std::max(1, options.launches_per_sync / (mixed.compute_launches + mixed.memory_launches));
  auto mixed_phase = run_phase(*nvml, options, [&mixed](Clock::time_point deadline) { return mixed.run(deadline); });
  if (!mixed_phase) return mixed_phase.error();
  table.mixed = *mixed_phase;
  const double mixed_total_ms = mixed.compute_ms + mixed.memory_ms;
  if (!(mixed_total_ms > 0)) return Error{"measure_power: the mixed phase recorded no GPU time"};
  table.mixed_compute_fraction = mixed.compute_ms / mixed_total_ms;
  return table;
}

}  // namespace commbound::kernels
