// The one reader of model dimensions: a model zoo file (calibration/models.toml, one table per
// model named by its key) and a scenario's inline [model] table. The simulator's scenarios and the
// calibration tool's grid and replay read their models here. Errors name file:line: key = value.
#pragma once

#include "core/expected.hpp"
#include "core/key_table.hpp"
#include "model/model_spec.hpp"

#include <toml++/toml.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace commbound::model {

// The keys of a model table, as data (key_table.hpp): the zoo and a scenario's [model] are read,
// written back and documented from these.
const std::vector<KeySpec<ModelSpec>>& model_keys();

// Reads explicit dimensions (layers, hidden, heads, kv_heads, ffn, vocab: integers; optional name,
// defaulting to `name`, and description) from `table`, whose dotted path is `prefix`; `overrides`
// (may be null) names the --set behind a value (TableReader). hidden must be a multiple of heads,
// heads of kv_heads.
Expected<ModelSpec> read_model(const toml::table& table, const std::string& name, const std::string& prefix,
                               const std::map<std::string, std::string>* overrides);

// Every model of the zoo file `path`, in key order (toml++ keeps a table's keys sorted). Every
// top-level entry must be a model table.
Expected<std::vector<ModelSpec>> read_model_zoo(const std::filesystem::path& path);

// The model named `name` of the zoo file `path`; the error lists the names the zoo has.
Expected<ModelSpec> load_model(const std::filesystem::path& path, const std::string& name);

}  // namespace commbound::model
