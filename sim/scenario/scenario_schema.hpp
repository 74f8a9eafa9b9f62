// The scenario schema: every key of a scenario file, section by section, described once as data
// (core/key_table.hpp): type, unit (in the name), bounds, default, one doc line, the
// names of an enum, and where the value lands in a Scenario.
//
// The table drives the reader (scenario.cpp reads each section's keys from it, then applies the
// cross-key rules: world size, divisibility, batches, derived defaults), the resolved-scenario
// writer (resolved_scenario.cpp), --set (a string key takes the text as given) and the key tables
// of docs/scenarios.md (scenario_keys_markdown; a test fails when the file is not current). The
// inline [cluster.node], [fabric.link] and [model] tables have their own key tables (presets.hpp,
// model/model_zoo.hpp), shared with the preset files. [sweep] and [workload] are read
// by code: their keys are not values that land in a Scenario.
#pragma once

#include "core/key_table.hpp"
#include "sim/scenario/scenario.hpp"

#include <string>
#include <vector>

namespace commbound::sim {

struct ScenarioSection {
  const char* name;        // "cluster"; "" for the top level
  bool training;           // [model], [training], [parallel]: only with a [model]
  std::vector<KeySpec<Scenario>> keys;
};

// Every section, in the order the reader reads them (the first error of a file is reported).
const std::vector<ScenarioSection>& scenario_sections();
const ScenarioSection& scenario_section(const std::string& name);

// The key spec of dotted `key` ("parallel.tp"), or null when the schema has none (a sub-table's
// key, a [sweep] or [workload] key, or a typo).
const KeySpec<Scenario>* find_scenario_key(const std::string& key);

// The key tables of docs/scenarios.md, one per section, generated from the schema.
std::string scenario_keys_markdown();

}  // namespace commbound::sim
