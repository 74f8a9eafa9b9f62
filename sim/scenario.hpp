// Scenario: one validated scenario file (plus --set overrides), in SI units.
//
// Sections read today: [cluster], [fabric], [nccl]. [model], [training], [parallel] and [sweep]
// arrive with the training emulation; until then they are rejected as unknown, never ignored.
// Every problem is reported as "file:line: key = value: reason" (or "--set key=value: ...").
#pragma once

#include "network/cluster_spec.hpp"
#include "network/collective.hpp"
#include "network/expected.hpp"
#include "network/nccl_constants.hpp"
#include "sim/presets.hpp"

#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

struct NcclOptions {
  std::optional<network::Algorithm> algorithm;  // NCCL_ALGO; unset: NCCL's tuner decides
  std::optional<network::Protocol> protocol;    // NCCL_PROTO; unset: NCCL's tuner decides
  network::Fidelity fidelity = network::Fidelity::fluid;
};

struct Scenario {
  std::string path;
  std::string description;
  network::ClusterSpec cluster;
  network::NcclConstants nccl;
  NcclOptions nccl_options;
};

// Loads `path`, applies `overrides` ("a.b=value", value in TOML syntax or a bare string), resolves
// presets from `presets`, and validates everything.
Expected<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& overrides,
                                 const Presets& presets);

}  // namespace commbound::sim
