// Reads a JSON document from a file that may be gzip-compressed (zlib reads plain files as they
// are): what a PyTorch profiler trace (.json or .json.gz) is stored as.
#pragma once

#include "calibration/base/expected.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace commbound::sim::internal {

// The document at `path`. Errors name the file: cannot be read, truncated or corrupt gzip, not
// JSON (with the byte offset where parsing stopped).
Expected<nlohmann::json> read_json_file(const std::string& path);

}  // namespace commbound::sim::internal
