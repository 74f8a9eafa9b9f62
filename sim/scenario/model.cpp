#include "sim/scenario/model.hpp"

namespace commbound::sim {

Expected<model::ModelSpec> load_model(const Presets& presets, const std::string& name) {
  return model::load_model(presets.dir() / "models.toml", name);
}

}  // namespace commbound::sim
