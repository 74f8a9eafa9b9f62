// Reads a JSON document from a file that may be gzip-compressed (zlib reads plain files as they
// are): what a PyTorch profiler trace (.json or .json.gz) is stored as.
#pragma once

#include "core/expected.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <string>

namespace commbound::sim::internal {

// Decides, as each object is parsed, whether to keep it (true) or leave it out of the document
// (false): `depth` is its nesting (the root is 0). A profiler trace's events are mostly CPU ops
// the replay does not read; leaving them out keeps a large trace's document small.
using KeepObject = std::function<bool(int depth, const nlohmann::json& object)>;

// What reading one document may cost. A gzip file decompresses up to about 1000 times its size
// (deflate's limit), so the file's size bounds neither the text nor the memory: a 1 MB file of
// "[0,0,0,..." holds a billion-value array. Both are bounded as they are read, and reading stops at
// the first bound crossed.
// Nesting is bounded too: nlohmann's dump and copy recurse once per level, so a value nested a
// hundred thousand deep (a few hundred kilobytes of "[[[[") would overflow the stack wherever the
// document is copied or a value of it printed.
struct JsonLimits {
  std::size_t max_text_bytes;   // the text after decompression
  std::size_t max_kept_values;  // values held in the document (objects left out by `keep` not counted)
  int max_depth = 64;           // arrays and objects inside one another (the root is depth 0)
};

// A profiler trace's bounds, far above what one rank's trace of a few steps needs: the public DDP
// trace (scenarios/traces/public/hta_ddp_2rank_nccl_data.json.gz, 3 steps) is 9.8 MB of text of
// which the reader keeps 12,517 events (GPU activities, runtime calls) in 198,061 values. Text:
// 8 GiB. Values: 16 million, a million such events (80 times that trace), about 1.5 GB in memory
// at some 100 bytes per value of an event. A trace that needs more holds many steps (profile
// fewer: docs/traces.md). Depth: a trace nests 4 deep (the root, traceEvents, an event, its args);
// 64 leaves room for any argument PyTorch records.
inline constexpr JsonLimits kTraceLimits{8ull << 30, 16'000'000, 64};

// The document at `path` (every object kept unless `keep` says otherwise). Errors name the file:
// cannot be read, truncated or corrupt gzip, not JSON (with the byte offset where parsing stopped),
// larger or deeper than `limits` (which bound, and what it is).
Expected<nlohmann::json> read_json_file(const std::string& path, const KeepObject& keep = {},
                                        const JsonLimits& limits = kTraceLimits);

}  // namespace commbound::sim::internal
