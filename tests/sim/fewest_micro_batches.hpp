// A training point cut to the fewest micro-batches every pipeline schedule takes (pp per replica),
// for tests that need each of a large point's keys to reach the simulated program but not its full
// batch: a simulation's time grows with the micro-batches, its code paths do not.
#pragma once

#include "sim/scenario/training.hpp"

namespace commbound::sim::testing {

// Points of more than this many GPUs are cut by the tests that use it; smaller ones run whole.
constexpr int kFullBatchMaxGpus = 32;

// Cuts `t` to pp micro-batches per replica (global batch dp x micro_batch x pp); returns whether it
// had more.
inline bool cut_to_fewest_micro_batches(TrainingSpec& t) {
  if (t.micro_batches <= t.pp) return false;
  t.micro_batches = t.pp;
  t.global_batch = t.dp * t.micro_batch * t.micro_batches;
  return true;
}

}  // namespace commbound::sim::testing
