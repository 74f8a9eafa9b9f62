// Replay: a transformer layer's (or a small model's whole step's) real kernel sequence, forward
// then backward, run back to back on the GPU, beside the sum of the same ops timed one by one the
// calibration's way (kernels/calibrator.hpp). Their ratio is the error of pricing a training step
// op by op from a calibration table: what L2 reuse between neighbouring kernels, launch gaps and
// tail effects add or take away.
//
// Single GPU, compute only (a tensor-parallel layout's shapes, without its all-reduces). Each
// kernel runs on buffers of the right shapes and the activations a layer saves for its backward
// are kept per layer; data flows between kernels as in training, except where a fused layout
// differs (the QKV GEMM's output and the q, k, v the attention reads are separate buffers).
#pragma once

#include "kernels/calibrator.hpp"
#include "kernels/model_grid.hpp"

#include <optional>
#include <string>
#include <vector>

namespace commbound::kernels {

struct ReplayOptions {
  ModelDims model;
  StepShape step{2, 4096, 1};
  int layers = 0;           // transformer layers replayed; 0: one, or all the model's with full_model
  bool full_model = false;  // add embedding, final norm, LM head, loss, gradient norm and AdamW
  int runs = 10;            // timed replays (median), after one warm-up

  int replayed_layers() const { return layers > 0 ? layers : (full_model ? model.layers : 1); }
};

struct ReplayOpTime {
  std::string name;    // e.g. "layer0.fwd.qkv"
  std::string kernel;  // the calibration row, e.g. "gemm forward 8192x12288x4096"
  double isolated_ms = 0;  // p50 of the op alone, the calibration's way
  std::optional<MemoryBoundRow> memory_bound;  // the row, for memory-bound ops (table pricing)
};

struct ReplayResult {
  Timing replay;             // the whole sequence back to back
  double sum_isolated_ms = 0;
  std::vector<ReplayOpTime> ops;
  double parameters = 0;     // with full_model: the parameters AdamW updates
};

// Builds, replays and prices the sequence. Errors: CUDA failures, out of memory.
Expected<ReplayResult> replay(Calibrator& calibrator, const ReplayOptions& options);

// The replay's ops priced from a calibration table as the simulator prices them: the exact shape's
// p50 (our attention's rows), or for a memory-bound op without its exact row the nearest row of
// the same op scaled by the fewest bytes each moves (kernels/memory_bound_op.hpp); ops with
// neither are counted missing and left out of the sum.
struct TablePricing {
  double sum_ms = 0;
  int exact = 0;
  int scaled = 0;
  int missing = 0;
};
TablePricing price_with_table(const ReplayResult& result, const OpTable& table);

// A readable report: per kernel kind the summed isolated times, then replay vs sum and the error.
std::string format_replay(const ReplayOptions& options, const ReplayResult& result);

}  // namespace commbound::kernels
