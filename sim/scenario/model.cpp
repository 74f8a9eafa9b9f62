#include "sim/scenario/model.hpp"

namespace commbound::sim {

Expected<calibration::ModelSpec> load_model(const Presets& presets, const std::string& name) {
  return calibration::load_model(presets.dir() / "models.toml", name);
}

}  // namespace commbound::sim
