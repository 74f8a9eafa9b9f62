#include "kernels/host/model_grid.hpp"

#include <algorithm>
#include <cstdint>
#include <variant>

namespace commbound::kernels {
namespace {

using model::Direction;
using calibration::KernelTable;
using model::LlamaRecipe;
using model::RecipeKernel;

void add_shapes(KernelTable& table, const std::vector<RecipeKernel>& kernels) {
  for (const RecipeKernel& k : kernels) {
    if (const auto* g = std::get_if<model::GemmShape>(&k.shape)) table.add(calibration::GemmRow{*g, {}});
    if (const auto* a = std::get_if<model::AttentionShape>(&k.shape)) {
      table.add(calibration::AttentionRow{"commbound", *a, {}});
    }
    if (const auto* m = std::get_if<model::MemoryBoundShape>(&k.shape)) {
      table.add(calibration::MemoryBoundRow{*m, 0, {}});
    }
  }
}

}  // namespace

KernelTable step_shapes(const model::ModelSpec& model, const model::StepLayout& layout) {
  const LlamaRecipe recipe(model, layout);
  KernelTable t;
  add_shapes(t, recipe.embedding(Direction::forward));
  add_shapes(t, recipe.layer(Direction::forward));
  add_shapes(t, recipe.lm_head(Direction::forward));
  add_shapes(t, recipe.lm_head(Direction::backward));
  add_shapes(t, recipe.layer(Direction::backward));
  add_shapes(t, recipe.embedding(Direction::backward));
  return t;
}

Expected<KernelTable> default_grid(const std::vector<model::ModelSpec>& zoo, const GridOptions& o) {
  KernelTable grid;
  for (const std::string& name : o.models) {
    const auto it =
        std::find_if(zoo.begin(), zoo.end(), [&](const model::ModelSpec& m) { return m.name == name; });
    if (it == zoo.end()) return Error{"default grid: model " + name + " is not in the model zoo"};
    for (int tp : o.tps) {
      for (int seq : o.seqs) {
        for (int mb : o.micro_batches) {
          model::StepLayout layout;
          layout.micro_batch = mb;
          layout.seq = seq;
          layout.tp = tp;
          if (!model::check_exact(*it, layout)) continue;
          grid.add_rows(step_shapes(*it, layout));
        }
      }
    }
  }
  for (int log2 = 20; log2 <= 30; ++log2) {
    add_shapes(grid, LlamaRecipe::optimizer(static_cast<double>(std::int64_t{1} << log2)));
  }
  return grid;
}

}  // namespace commbound::kernels
