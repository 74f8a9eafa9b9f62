// Platform report: what `commbound platform` prints about a scenario's emulated platform: nodes and
// GPUs, each link with its effective rate (the preset's rate times its efficiency), the fabric's
// levels, switches and routing, and NCCL's model. GB/s are 1e9 bytes per second.
#pragma once

#include "network/platform.hpp"
#include "sim/scenario/scenario.hpp"

#include <ostream>

namespace commbound::sim {

// Writes the description of `platform`, built from `scenario`'s cluster, one part per line.
void write_platform_summary(std::ostream& out, const Scenario& scenario, const network::Platform& platform);

}  // namespace commbound::sim
