// IterationBound: how fast a training iteration could possibly be, without simulating it: the
// iteration on a network that runs every collective at its floor (network/collective_floor.hpp:
// the bytes that must cross a GPU's links or a node's NICs, at their full rate, with nothing else
// on them). A layout search skips a layout whose bound already loses to layouts it has simulated,
// so the bound must never be above what the engine gives.
//
// Why it is a bound: the engine (engine.hpp) runs each stream's ops in order, each after its
// dependencies and not before its host has issued it; a compute op lasts its cost-model price
// times a contention factor >= 1 (plus, with jitter, waits that only add time); a collective
// starts when its last simulated member arrives and lasts at least its floor (a measured one: its
// measured time), and a collective of one simulated member at least the time the NICs of that
// rank's node take to carry its own and its sibling copies' bytes (the engine starts the copies
// with it and ends it when they have ended). Replaying the same programs with the same rules, compute at its bare price and
// every collective at its floor, finishes every op no later than the engine does (by induction
// over the ops in the order the engine finishes them). What the replay keeps is the compute of
// every stage, the waits between pipeline stages (the bubble) and the communication no schedule
// hides at the fabric's full rate; what it drops is latency, contention, the links' sharing and
// jitter. tests/sim/search/layout_search_test.cpp checks it below simulated iterations.
#pragma once

#include "network/cluster_spec.hpp"
#include "sim/engine/cost_model.hpp"
#include "sim/scenario/training.hpp"
#include "sim/workload/workload.hpp"

#include <vector>

namespace commbound::sim {

struct IterationBound {
  // No simulated iteration of these programs is shorter (Metrics::iteration_s >= this).
  double iteration_s = 0;
  // The busiest pipeline stage's compute at its bare price: iteration_s minus this is what the
  // schedule cannot avoid waiting for, its pipeline bubble and the communication it cannot hide.
  double busiest_compute_s = 0;
  // The compute stream's busy time at bare prices, mean over the stages (Metrics::compute_s >= this),
  // and its parts in compute-bound (GEMM, attention) and memory-bound kernels.
  double compute_s = 0;
  double compute_bound_s = 0;
  double memory_bound_s = 0;
  // Whether every priced op runs on the compute stream (then a rank's compute never overlaps
  // itself, which the tighter energy bound needs).
  bool compute_serial = true;
  // Energy one GPU spends in an iteration, at least (Metrics: power_w_per_gpu x iteration_s >= this).
  double energy_j_per_gpu = 0;
  double waits_s() const { return iteration_s - busiest_compute_s; }
};

// The bound of `t`'s iteration whose stages run `stages` (build_programs(t)) on `cluster`, priced by
// `cost`. Simulated ranks are those the engine simulates by default (one per pipeline stage).
IterationBound iteration_lower_bound(const TrainingSpec& t, const std::vector<Program>& stages, const CostModel& cost,
                                     const network::ClusterSpec& cluster);

// A weaker bound, cheap for any number of micro-batches: the busiest stage's compute alone, no
// bubble (iteration_s = busiest_compute_s). Every micro-batch of a stage runs the same kernels and
// the optimizer runs once, whatever the schedule (interleaving splits a stage's layers into
// chunks; it does not change them), so a stage's compute is micro_batches x that of one
// micro-batch plus its optimizer: worked out from the programs of one micro-batch without
// interleaving. Never above iteration_lower_bound of the same layout (equal busiest_compute_s:
// tests/sim/search/layout_search_test.cpp).
IterationBound compute_only_bound(const TrainingSpec& t, const CostModel& cost);

}  // namespace commbound::sim
