// Reads a JSON document from a file that may be gzip-compressed (zlib reads plain files as they
// are): what a PyTorch profiler trace (.json or .json.gz) is stored as.
#pragma once

#include "calibration/base/expected.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace commbound::sim::internal {

// Decides, as each object is parsed, whether to keep it (true) or leave it out of the document
// (false): `depth` is its nesting (the root is 0). A profiler trace's events are mostly CPU ops
// the replay does not read; leaving them out keeps a large trace's document small.
using KeepObject = std::function<bool(int depth, const nlohmann::json& object)>;

// The document at `path` (every object kept unless `keep` says otherwise). Errors name the file:
// cannot be read, truncated or corrupt gzip, not JSON (with the byte offset where parsing stopped).
Expected<nlohmann::json> read_json_file(const std::string& path, const KeepObject& keep = {});

}  // namespace commbound::sim::internal
