// The calibration tool's default grid: the kernel shapes of Llama training steps (model/'s
// recipe, model/llama_recipe.hpp) over a range of models and layouts, as rows
// without times (what commbound-calibrate measures by default). Host-only.
#pragma once

#include "core/expected.hpp"
#include "calibration/table/kernel_table.hpp"
#include "model/llama_recipe.hpp"
#include "model/model_spec.hpp"

#include <string>
#include <vector>

namespace commbound::kernels {

// The distinct shapes one step at `layout` runs, in the order the step first runs them (embedding,
// a layer, LM head and loss forward; their backward; not the optimizer), as untimed rows.
calibration::KernelTable step_shapes(const model::ModelSpec& model, const model::StepLayout& layout);

// The default grid of the kernels issue: Llama-2 1B, 7B, 13B, 70B; seq 2048, 4096, 8192;
// micro-batch 1-4; tp 1, 2, 4, 8, 16 (layouts that fail model::check_exact are skipped); plus
// the optimizer's kernels over shards of 2^20 .. 2^30 parameters.
struct GridOptions {
  std::vector<std::string> models = {"llama2-1b", "llama2-7b", "llama2-13b", "llama2-70b"};
  std::vector<int> seqs = {2048, 4096, 8192};
  std::vector<int> micro_batches = {1, 2, 3, 4};
  std::vector<int> tps = {1, 2, 4, 8, 16};
};
Expected<calibration::KernelTable> default_grid(const std::vector<model::ModelSpec>& zoo,
                                                const GridOptions& options);

}  // namespace commbound::kernels
