// MemoryModel: bytes per GPU by category for a training layout, and whether it fits.
//
// Parameters and optimizer state follow the strategy (FSDP shards over the data-parallel group,
// ZeRO-2 keeping the gathered bf16 parameters through backward, ZeRO-3 only the units in flight;
// DDP replicates fp32 weights, gradients and Adam moments). Activations per layer follow
// Korthikanti et al. 2022 ("Reducing activation recomputation in large transformer models"),
// eq. 1-4, without the 5as/h attention-score term (FlashAttention keeps no score matrix):
// 34 s b h bytes; with tensor parallelism 10 s b h + 24 s b h / t; with sequence parallelism
// 34 s b h / t; with full recompute 2 s b h (the layer input) plus one layer's full activations.
#pragma once

#include "sim/scenario/training.hpp"

#include <string>
#include <utility>
#include <vector>

namespace commbound::sim {

struct MemoryUse {
  std::vector<std::pair<std::string, double>> bytes;  // category -> bytes per GPU
  double total_bytes = 0;
  double capacity_bytes = 0;
  bool fits() const { return total_bytes <= capacity_bytes; }
};

MemoryUse memory_per_gpu(const TrainingSpec& t, int nccl_channels);

}  // namespace commbound::sim
