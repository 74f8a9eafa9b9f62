// The op shapes of a Llama training step, enumerated from model dimensions and a parallel layout
// (micro-batch, sequence length, tensor parallelism): what commbound-calibrate measures by default
// and what its replay runs. Host-only; reads the model zoo (calibration/models.toml).
#pragma once

#include "kernels/op_table.hpp"
#include "calibration/base/expected.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace commbound::kernels {

struct ModelDims {
  std::string name;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0;
  int head_dim() const { return hidden / heads; }
  // Parameters: per layer 4 projections (q, k, v, o), 3 MLP matrices, 2 norms; untied embedding
  // and LM head; the final norm.
  double params() const;
};

// Every model of a zoo file (calibration/models.toml format; `description` ignored).
Expected<std::vector<ModelDims>> read_models(const std::filesystem::path& path);

struct StepShape {
  int micro_batch = 1;
  int seq = 2048;
  int tp = 1;
  std::int64_t tokens() const { return static_cast<std::int64_t>(micro_batch) * seq; }
};

// Why `model` cannot run at `step` (tp must divide heads, KV heads, FFN and vocabulary), or Ok.
Status check_step(const ModelDims& model, const StepShape& step);

// The rows one layer (forward and backward), the embedding and the LM head with its loss need.
OpTable step_shapes(const ModelDims& model, const StepShape& step);

// The default grid of the kernels issue: Llama-2 1B, 7B, 13B, 70B; seq 2048, 4096, 8192;
// micro-batch 1-4; tp 1, 2, 4, 8, 16 (combinations that fail check_step are skipped); plus AdamW
// and gradient-norm shards of 2^20 .. 2^30 parameters.
struct GridOptions {
  std::vector<std::string> models = {"llama2-1b", "llama2-7b", "llama2-13b", "llama2-70b"};
  std::vector<int> seqs = {2048, 4096, 8192};
  std::vector<int> micro_batches = {1, 2, 3, 4};
  std::vector<int> tps = {1, 2, 4, 8, 16};
};
Expected<OpTable> default_grid(const std::vector<ModelDims>& zoo, const GridOptions& options);

}  // namespace commbound::kernels
