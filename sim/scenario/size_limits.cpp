#include "sim/scenario/size_limits.hpp"

#include "network/cluster_spec.hpp"

#include <fmt/format.h>

#include <limits>

namespace commbound::sim {

const std::vector<SizeLimit>& size_limits() {
  static const std::vector<SizeLimit> limits = {
      {"nodes of a cluster", "`cluster.nodes`, `collective --nodes`", network::kMaxNodes,
       "every rank count (at most 1024 GPUs a node) then fits an int; the GPU limit below binds first"},
      {"GPUs of a cluster", "`cluster.nodes` x the node's `gpus`", kMaxGpus,
       "twice the largest cluster described in public (131,072 GPUs); SimGrid's platform takes about 62 KB per 8-GPU "
       "node (1.0 GB for 16,384 DGX H100 nodes on one switch, measured), so about 2 GB at the limit"},
      {"micro-batches per data-parallel replica", "`training.global_batch` (or `local_batch`) / `micro_batch`",
       kMaxMicroBatches,
       "each adds a forward and a backward of every layer to every rank's program, so more would pass the ops limit "
       "anyway; checked where the batch is read, so the count fits an int"},
      {"ops in one GPU's program", "`model.layers` / `parallel.pp` x micro-batches x the recipe's ops per layer",
       kMaxOpsPerGpu,
       "an op takes about 300 bytes with its name and dependencies (200 KB per micro-batch of Llama-2 1B, about 650 "
       "ops, measured), so about 300 MB; counted from one layer's ops before any program is built"},
      {"ops of every pipeline stage's program together", "the same, x `parallel.pp`", kMaxOpsAllStages,
       "a run builds one program per pipeline stage: about 1.2 GB at the limit"},
      {"points of a `[sweep]`", "`sweep.values` (a cartesian grid multiplies its keys' counts)", kMaxSweepPoints,
       "each point is a scenario resolved in memory and a simulation of 0.1-10 s; `--force-large` lifts it"},
      {"points of a `[sweep]` with `--force-large`", "the same", kMaxSweepPointsForced,
       "the grid alone, a few hundred bytes a point, then takes hundreds of MB"},
  };
  return limits;
}

std::string size_limits_markdown() {
  std::string out = "| what | set by | largest | why |\n|---|---|---:|---|\n";
  for (const SizeLimit& l : size_limits()) out += fmt::format("| {} | {} | {} | {} |\n", l.what, l.keys, l.max, l.why);
  return out;
}

std::optional<std::int64_t> checked_product(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

}  // namespace commbound::sim
