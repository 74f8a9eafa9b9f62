// Metrics of one simulated training iteration (keys documented in docs/metrics.md):
// throughput, model FLOP rate and MFU, compute / communication / exposed communication time,
// power (derived model), energy per token, memory per GPU.
#pragma once

#include "sim/engine.hpp"
#include "sim/memory_model.hpp"
#include "sim/training.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

struct Metrics {
  int gpus = 0;
  double iteration_s = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double compute_s = 0;         // time the compute stream was busy (mean over simulated ranks)
  double comm_s = 0;            // time any communication stream was busy (mean)
  double exposed_comm_s = 0;    // communication busy while compute idle (mean)
  double exposed_comm_fraction = 0;
  double power_w_per_gpu = 0;   // derived model, see power_model_source
  double tokens_per_joule = 0;
  double memory_bytes_per_gpu = 0;
  bool oom = false;
  MemoryUse memory;
};

// Power model (derived until NVML measurements exist): idle power plus (board limit - idle) times
// the fraction of the iteration the compute stream is busy.
inline constexpr const char* kPowerModelSource =
    "derived: idle + (TDP - idle) x compute-busy fraction (calibration/gpus.toml), not measured";

// Busy and exposed times are averaged over the simulated ranks (one per pipeline stage). `stages`
// are the programs by pipeline stage; `stage_of` maps a rank to its stage.
Metrics compute_metrics(const TrainingSpec& t, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                        const IterationTimeline& timeline, const MemoryUse& memory);

// One row per scenario (a sweep gives several): table, CSV or JSON with the keys of Metrics.
void write_metrics(std::ostream& out, const std::vector<std::pair<std::string, Metrics>>& rows, const std::string& format,
                   const std::string& title);

// Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev): a process per simulated rank (one per
// pipeline stage), a track per stream. `stages` are the programs by pipeline stage, `stage_of`
// maps a rank to its stage.
void write_trace(std::ostream& out, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                 const IterationTimeline& timeline);

}  // namespace commbound::sim
