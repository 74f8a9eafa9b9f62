// Calibrator: times one op shape with its real kernel on the local GPU the way a calibration
// table wants it (docs/calibration.md): random inputs, rotated over enough buffer sets that L2
// (50 MB on an H100) never holds the next run's inputs, warm-up runs, then an adaptive number of
// timed runs (kernels/device/timing.hpp) whose p10 / p50 / p90 are kept.
#pragma once

#include "model/kernel_shape.hpp"
#include "kernels/device/cuda_support.hpp"
#include "kernels/device/timing.hpp"

#include <cstddef>
#include <memory>

namespace commbound::kernels {

struct CalibratorOptions {
  int warmup_runs = 2;
  int min_timed_runs = 5;
  int max_timed_runs = 50;
  double min_total_ms = 20;                           // timed GPU time aimed at per shape
  std::size_t gemm_workspace_bytes = std::size_t{32} << 20;  // cuBLASLt workspace (NVIDIA recommends 32 MiB on Hopper)
  double l2_multiple = 3;                             // rotated inputs span at least this many L2 sizes
  // Share of the GPU's time that compute-bound shapes (GEMMs and attention) take while they are
  // measured: after each such shape the GPU copies memory for (1 - gemm_duty) / gemm_duty of that
  // shape's time, so that the board stays under its power limit as it does in a training step,
  // where memory-bound kernels and communication sit between the matrix products. 1: back to back
  // (the board at its limit).
  double gemm_duty = 1;
};

class Calibrator {
public:
  ~Calibrator();
  Calibrator(Calibrator&&) noexcept;
  Calibrator& operator=(Calibrator&&) noexcept;

  // Opens the current CUDA device. Fails without a GPU.
  static Expected<Calibrator> create(const CalibratorOptions& options);

  // Percentiles of the shape's kernel (milliseconds, kernels/device/timing.hpp).
  Expected<Percentiles> measure(const model::GemmShape& shape);
  // Our kernel (implementation "commbound", kernels/device/attention.hpp); a backward shape runs the
  // forward once per input set first, untimed, for its output and log-sum-exp.
  Expected<Percentiles> measure(const model::AttentionShape& shape);
  Expected<Percentiles> measure(const model::MemoryBoundShape& shape);
  // Keeps the GPU busy with device-to-device copies (memory-bound, well under the power limit) for
  // about `ms`, then waits for them.
  Status copy_for(double ms);
  // Follows a compute-bound shape's runs (warm-ups and timed: Percentiles::spent_ms) with copies
  // for (1 - gemm_duty) / gemm_duty of their time (nothing at gemm_duty 1).
  Status rest_after(const Percentiles& t);
  // Device-to-device copy of `bytes`, in bytes read + written per second.
  Expected<double> copy_bytes_per_s(std::size_t bytes);

  // Input sets to rotate over for a run reading `bytes`: enough to span l2_multiple x L2.
  int rotations_for(double bytes) const;
  TimingOptions timing_options(int rotations) const;
  std::size_t l2_bytes() const;

private:
  struct State;
  explicit Calibrator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace commbound::kernels
