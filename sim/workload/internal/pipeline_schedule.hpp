// The order in which one pipeline stage runs its forward and backward passes: 1F1B
// (PipeDream-Flush, as Megatron), plain or interleaved.
#pragma once

#include <vector>

namespace commbound::sim::internal {

// One forward or backward pass of model chunk `chunk` (0 .. v - 1) on micro-batch `micro_batch`.
struct ScheduleUnit {
  bool backward = false;
  int chunk = 0;
  int micro_batch = 0;
};

// Stage `stage` of `stages` holding `chunks` model chunks (v; 1 without interleaving) runs
// `micro_batches` micro-batches (M): some warm-up forwards, then one forward and one backward in
// turn, then the remaining backwards. Without interleaving the warm-up is P - s - 1 micro-batches.
// Interleaved, as Megatron-Core's schedule (pipeline_parallel/schedules.py: get_schedule_table,
// get_pp_rank_microbatches), the units are (chunk, micro-batch) pairs taken `group` (N)
// micro-batches at a time chunk by chunk, the last group whatever is left (backward: last chunk
// first), with 2 (P - s - 1) + (v - 1) N warm-up units, at most all of them.
std::vector<ScheduleUnit> one_forward_one_backward(int stages, int stage, int chunks, int micro_batches, int group);

// Its warm-up: the forward units stage `stage` runs before its first backward.
long warmup_units(int stages, int stage, int chunks, int micro_batches, int group);

}  // namespace commbound::sim::internal
