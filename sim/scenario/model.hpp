// Model: the simulator's access to the model zoo. A model's dimensions, parameter count and FLOPs
// are model/'s ModelSpec (model/model_spec.hpp); its one reader of model
// tables is model/model_zoo.hpp.
#pragma once

#include "core/expected.hpp"
#include "model/model_spec.hpp"
#include "model/model_zoo.hpp"
#include "sim/scenario/presets.hpp"

#include <string>

namespace commbound::sim {

// Reads the model named `name` from the zoo of `presets` (calibration/models.toml).
Expected<model::ModelSpec> load_model(const Presets& presets, const std::string& name);

}  // namespace commbound::sim
