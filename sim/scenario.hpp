// Scenario: one validated scenario file (plus --set overrides), in SI units.
//
// Sections: [cluster], [fabric], [nccl] (the hardware and NCCL); [model], [training], [parallel]
// (a training iteration, optional: present together); [sweep] (one key over a list of values).
// Every problem is reported as "file:line: key = value: reason" (or "--set key=value: ...").
#pragma once

#include "network/cluster_spec.hpp"
#include "network/collective.hpp"
#include "calibration/base/expected.hpp"
#include "network/nccl_constants.hpp"
#include "sim/cost_model.hpp"
#include "sim/gpu_table.hpp"
#include "sim/presets.hpp"
#include "sim/training.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

struct NcclOptions {
  std::optional<network::Algorithm> algorithm;  // NCCL_ALGO; unset: NCCL's tuner decides
  std::optional<network::Protocol> protocol;    // NCCL_PROTO; unset: NCCL's tuner decides
  network::Fidelity fidelity = network::Fidelity::fluid;
};

// [sweep]: `commbound run` repeats the scenario with `key` set to each value (as --set would).
// `key` may list several keys; each value is then an array with one entry per key.
struct Sweep {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;  // per point, per key: TOML renderings for --set
};

struct Scenario {
  std::string path;
  std::string description;
  network::ClusterSpec cluster;
  network::NcclConstants nccl;
  NcclOptions nccl_options;
  std::optional<TrainingSpec> training;
  // [cluster] kernel_table: the calibration table that prices compute, or null for the datasheet
  // roofline, with the reason in `roofline_reason` ("kernel_table = \"roofline\"", or the
  // missing calibration/<gpu>.toml of "auto").
  std::shared_ptr<const GpuTable> kernel_table;
  std::string roofline_reason;
  std::optional<Sweep> sweep;
};

// Loads `path`, applies `overrides` ("a.b=value", value in TOML syntax or a bare string), resolves
// presets from `presets`, and validates everything.
Expected<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& overrides,
                                 const Presets& presets);

// The cost model of `sc`'s training iteration (sc.training must be set): its kernel table with the
// chosen attention kernel, or the datasheet roofline with the reason.
CostModel cost_model(const Scenario& sc);

}  // namespace commbound::sim
