// The [power] calibration table (docs/calibration.md): mean NVML board power and SM clock over
// sustained phases of idle, compute-bound work, memory-bound work and the two alternating. The
// power model interpolates between memory_bound_W and gemm_W by compute intensity; the mixed phase
// checks that interpolation. The kernels come in as launch callbacks, so this file depends on
// neither the GEMM nor the memory-bound kernels.
#pragma once

#include "core/expected.hpp"

#include <cuda_runtime.h>

#include <functional>
#include <string>

namespace commbound::kernels {

// One launch of a kernel (or a few) on `stream`. It must enqueue on that stream only (the phases
// pace and time the work with events on it) and must not synchronize.
using StreamLaunch = std::function<Status(cudaStream_t)>;

// One sustained phase: means over the samples kept after the ramp-up was discarded.
struct PowerPhaseResult {
  double mean_power_w = 0;
  double mean_sm_clock_mhz = 0;
  double seconds = 0;  // wall time of the whole phase, ramp-up included
  int samples = 0;     // samples averaged (after the ramp-up)
};

struct PowerOptions {
  int device = 0;                 // CUDA device
  double phase_s = 3.0;           // length of each of the four phases
  double sample_period_s = 0.02;  // NVML sampling period
  // Samples in the first ramp_discard_s of each phase are dropped: clocks and power settle in
  // ~0.5 s, and Hopper's NVML power is a 1 s trailing mean that still holds the previous phase.
  double ramp_discard_s = 1.0;
  int launches_per_sync = 20;     // the host waits for a batch of this many launches, one batch ahead
  double mixed_cycle_s = 0.004;   // mixed phase: one compute stretch + one memory stretch, about this long
  StreamLaunch compute_launch;    // e.g. one large bf16 GEMM
  StreamLaunch memory_launch;     // e.g. one large device-to-device copy
};

// The measured [power] table. The *_W / *_MHz accessors are the docs/calibration.md keys.
struct PowerTable {
  PowerPhaseResult idle;          // CUDA context open, nothing running
  PowerPhaseResult gemm;          // compute_launch back to back
  PowerPhaseResult memory_bound;  // memory_launch back to back
  PowerPhaseResult mixed;         // compute and memory stretches alternating
  double mixed_compute_fraction = 0;  // GPU time share of the compute stretches in the mixed phase (events)
  double sample_period_ms = 0;
  double phase_s = 0;
  double power_limit_W = 0;  // the enforced board power limit
  std::string driver;        // NVML's driver version

  double idle_W() const { return idle.mean_power_w; }
  double gemm_W() const { return gemm.mean_power_w; }
  double gemm_sm_clock_MHz() const { return gemm.mean_sm_clock_mhz; }
  double memory_bound_W() const { return memory_bound.mean_power_w; }
  double mixed_W() const { return mixed.mean_power_w; }
};

// Runs the four phases in order (idle, gemm, memory_bound, mixed), each options.phase_s long, on
// CUDA device options.device with NVML opened on the same board (matched by PCI bus id). In the
// mixed phase the stretch lengths come from each launch's median duration measured first, so that
// each takes about half the time; the achieved share is measured with events and reported.
// Errors: invalid options (missing launches, phase_s <= ramp_discard_s, non-positive periods),
// NVML unavailable, a CUDA failure, or a launch's own error.
Expected<PowerTable> measure_power(const PowerOptions& options);

}  // namespace commbound::kernels
