// The fully resolved scenario: a validated Scenario written back as a scenario document in which
// every key is set to the value it took effect with (defaults, derived defaults, [sweep] values and
// --set applied), so one point of a sweep can be read by other tools and re-run on its own.
//
// The node type, the fabric link and the model are written out in full ([cluster.node],
// [fabric.link], [model] with every dimension), each keeping its preset name in `name`. What stays
// a name is versioned preset data too large to inline: the GPU datasheet (calibration/gpus.toml),
// the node's NVLink and PCIe links (calibration/links.toml), the NCCL release's constants, a fabric
// fit and the kernel table (`kernel_table` as the scenario gave it: "auto", "roofline" or a file).
// [sweep] is left out: a resolved scenario is one point. [[degraded]] parts are written as given,
// [[job]] tables with their nodes as node_ranges and their own sections resolved.
//
// Contract: ScenarioFile::load of the written document (with the same calibration directory)
// gives a Scenario that simulates to the same metrics (tests/sim/cli/sweep_cli_test.cpp).
#pragma once

#include "sim/scenario/scenario.hpp"

#include <toml++/toml.h>

#include <string>

namespace commbound::sim {

// The resolved document of `scenario`, in the units and key names a scenario file uses.
toml::table resolved_scenario(const Scenario& scenario);

// The same document as TOML text (toml++'s formatter), with a first comment line naming where it
// was resolved from, and as JSON text (toml++'s JSON formatter) for tools that read JSON.
std::string resolved_scenario_toml(const Scenario& scenario, const std::string& comment);
std::string resolved_scenario_json(const Scenario& scenario);

}  // namespace commbound::sim
