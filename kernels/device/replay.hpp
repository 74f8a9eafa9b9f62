// Replay: a transformer layer's (or a small model's whole step's) real kernel sequence, forward
// then backward, run back to back on the GPU, beside the sum of the same ops timed one by one the
// calibration's way (kernels/device/calibrator.hpp). Their ratio is the error of pricing a training step
// op by op from a calibration table: what L2 reuse between neighbouring kernels, launch gaps and
// tail effects add or take away. The sequence is model/'s Llama recipe
// (model/llama_recipe.hpp), the one the simulator prices.
//
// Single GPU, compute only (a tensor-parallel layout's shapes, without its all-reduces). Each
// kernel runs on buffers of the right shapes and the activations a layer saves for its backward
// are kept per layer; data flows between kernels as in training, except where a fused layout
// differs (the QKV GEMM's output and the q, k, v the attention reads are separate buffers).
#pragma once

#include "calibration/table/kernel_table.hpp"
#include "model/llama_recipe.hpp"
#include "model/model_spec.hpp"
#include "kernels/device/calibrator.hpp"

#include <string>
#include <vector>

namespace commbound::kernels {

struct ReplayOptions {
  model::ModelSpec model;
  model::StepLayout step{2, 4096, 1, 1};  // micro-batch, seq, tp (context parallelism: 1)
  int layers = 0;           // transformer layers replayed; 0: one, or all the model's with full_model
  bool full_model = false;  // add embedding, final norm, LM head, loss, gradient norm and AdamW
  int runs = 10;            // timed replays (median), after one warm-up

  int replayed_layers() const { return layers > 0 ? layers : (full_model ? model.layers : 1); }
};

struct ReplayOpTime {
  std::string name;                 // e.g. "layer0.fwd.qkv"
  model::KernelShape kernel;  // the calibration row's shape
  double isolated_ms = 0;           // p50 of the op alone, the calibration's way
};

struct ReplayResult {
  Percentiles replay;        // the whole sequence back to back
  double sum_isolated_ms = 0;
  std::vector<ReplayOpTime> ops;
  double parameters = 0;     // with full_model: the parameters AdamW updates
};

// Builds, replays and prices the sequence. Errors: CUDA failures, out of memory.
Expected<ReplayResult> replay(Calibrator& calibrator, const ReplayOptions& options);

// The replay's ops priced from a calibration table as the simulator prices them
// (calibration::KernelTable::price, our attention's rows), counted by how.
struct TablePricing {
  double sum_ms = 0;
  int exact = 0;
  int nearest = 0;
  int roofline = 0;
};
TablePricing price_with_table(const ReplayResult& result, const calibration::KernelTable& table);

// A readable report: per kernel kind the summed isolated times, then replay vs sum and the error.
std::string format_replay(const ReplayOptions& options, const ReplayResult& result);

}  // namespace commbound::kernels
