// Model: the simulator's access to the model zoo. A model's dimensions, parameter count and FLOPs
// are the calibration room's ModelSpec (calibration/table/model_spec.hpp); its one reader of model
// tables is calibration/table/model_zoo.hpp.
#pragma once

#include "calibration/base/expected.hpp"
#include "calibration/table/model_spec.hpp"
#include "calibration/table/model_zoo.hpp"
#include "sim/scenario/presets.hpp"

#include <string>

namespace commbound::sim {

// Reads the model named `name` from the zoo of `presets` (calibration/models.toml).
Expected<calibration::ModelSpec> load_model(const Presets& presets, const std::string& name);

}  // namespace commbound::sim
