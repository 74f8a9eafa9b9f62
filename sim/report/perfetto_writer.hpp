// The Perfetto writer: one simulated iteration as a Chrome trace (JSON Trace Event Format), which
// ui.perfetto.dev and chrome://tracing open. `commbound run --trace FILE` writes it. A process per
// simulated rank (one per pipeline stage), a track per stream the rank uses, a complete event
// ("ph": "X") per op with its time in microseconds from the iteration's start, and a flow arrow
// ("ph": "s" then "f") from each pipeline send to the receive on the next (or previous) stage; jobs
// that shared a cluster, a process per job. What sim/trace/ reads is the other direction: a
// PyTorch profiler trace in, a program out.
#pragma once

#include "sim/engine/engine.hpp"
#include "sim/workload/workload.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

// Writes `timeline` as a Chrome/Perfetto trace on one line. `stages` are the programs by pipeline
// stage, `stage_of` maps a rank to its stage (every rank of the timeline must have one). A stream
// is named by its program's stream label when it has one ("stream 7" for a replayed trace), else
// by its StreamId. Compute ops carry their FLOPs and bytes, collectives their size and NCCL's
// algorithm and protocol, ops at a measured duration "measured": true.
void write_perfetto_trace(std::ostream& out, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                          const IterationTimeline& timeline);

// One job of several that ran together on a cluster: its name, its stages' programs, the stage of
// each of its ranks and its reported iteration (none owned).
struct JobTrace {
  std::string name;
  const std::vector<Program>* stages = nullptr;
  const std::vector<int>* stage_of = nullptr;
  const IterationTimeline* timeline = nullptr;
};

// Writes jobs that ran together as one trace on one clock (from the earliest job's iteration
// start): a process per job, a track per (rank, stream) it used, named "rank r (stage s) stream".
void write_perfetto_trace(std::ostream& out, const std::vector<JobTrace>& jobs);

}  // namespace commbound::sim
