// The largest sizes a scenario may imply, in one table. Each is worked out from the scenario's
// keys in checked 64-bit arithmetic before anything of that size is allocated, and a scenario over
// one is refused with one line naming the keys and the limit, rather than crashing, wrapping an
// int or taking all of the machine's memory later. docs/limits.md is generated from the table (a
// test checks that it is current), so every limit is listed once, with why it is there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

// GPUs of a cluster (cluster.nodes x the node's GPUs): 2^18, twice the largest cluster described
// in public (131,072 GPUs). SimGrid's platform takes about 62 KB of memory per 8-GPU node
// (measured: `commbound platform` of 16,384 DGX H100 nodes on one switch, 1.0 GB), so the limit
// keeps it near 2 GB.
inline constexpr std::int64_t kMaxGpus = std::int64_t{1} << 18;
// Micro-batches per data-parallel replica: 2^16. Each is at least a forward and a backward per
// layer in every rank's program, so more would pass the ops limit below anyway; this one is
// checked first, where the batch keys are read, so that the count fits an int.
inline constexpr std::int64_t kMaxMicroBatches = std::int64_t{1} << 16;
// Ops in one GPU's program: 2^20. An op takes about 300 bytes with its name and dependencies
// (measured: 200 KB per micro-batch of Llama-2 1B, about 650 ops), so 2^20 ops are about 300 MB.
inline constexpr std::int64_t kMaxOpsPerGpu = std::int64_t{1} << 20;
// Ops of every pipeline stage's program together (a run builds one program per stage): 2^22,
// about 1.2 GB.
inline constexpr std::int64_t kMaxOpsAllStages = std::int64_t{1} << 22;
// Points of a [sweep] grid (cartesian products multiply): 10^4 without --force-large. Each point is
// a resolved scenario held in memory and a simulation of its own (0.1-10 s).
inline constexpr std::int64_t kMaxSweepPoints = 10000;
// The most points a [sweep] may hold even with --force-large: 10^6 (its grid alone, a few hundred
// bytes a point, then takes hundreds of MB).
inline constexpr std::int64_t kMaxSweepPointsForced = 1000000;

// One row of the table: what is counted, the keys or flags that set it, the largest value taken,
// and why.
struct SizeLimit {
  const char* what;
  const char* keys;
  std::int64_t max;
  const char* why;
};

// Every limit, in the order docs/limits.md lists them.
const std::vector<SizeLimit>& size_limits();

// docs/limits.md's table, generated from size_limits().
std::string size_limits_markdown();

// a x b, or nullopt where the product of two non-negative counts overflows 64 bits.
std::optional<std::int64_t> checked_product(std::int64_t a, std::int64_t b);

}  // namespace commbound::sim
