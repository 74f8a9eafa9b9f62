// TraceProgram: a PyTorch profiler trace (kineto_reader.hpp) as the Program one rank replays, for a
// scenario with [workload] trace = "FILE" (docs/traces.md).
//
//   * every GPU kernel, memcpy and memset is an op with its MEASURED duration (Op::fixed_s) on
//     its CUDA stream: the stream with the most non-NCCL time is StreamId::compute, the others take
//     the remaining StreamIds in order of first use (tracks named "stream N" in Perfetto);
//   * a wait of one stream for another (a CUDA event) is an Op::deps entry;
//   * when a stream sat idle after everything its next op waited for had finished, it waited for
//     the CPU to launch that op: the gap is a host op (OpKind::host, fixed duration) before it,
//     after the same predecessors (so a slower collective delays it too: host time is taken as
//     serial with the GPU work it followed, not overlapped);
//   * the step's CPU time after its last GPU op is a host op at the end;
//   * an NCCL kernel is a collective: with collectives = "simulate" it runs through NCCL's
//     algorithms on the scenario's fabric over the layout's group its process group maps to
//     ([workload.groups]), sized by the nccl-tests whole buffer the trace records; with "measured"
//     (or when the trace lacks its size, or NCCL's op is one the engine does not model:
//     Broadcast, AllToAll, Reduce) it keeps its traced duration.
// Replayed with measured collectives at any scale the program reproduces the trace's measured
// iteration (every start is its predecessors' end plus the kept gap).
#pragma once

#include "core/expected.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/trace/kineto_reader.hpp"
#include "sim/workload/workload.hpp"

#include <string>

namespace commbound::sim {

struct TraceProgram {
  Program program;
  double measured_iteration_s = 0;  // the trace's own (KinetoTrace::iteration_s)
  // One line for reports: the trace and step, ops, streams, collectives simulated and kept
  // measured, host time, waits (and how they were found).
  std::string description;
};

// The program of `trace` as `workload` says to replay it. Fails (one line naming the scenario's
// [workload] key or the trace) when a process group to simulate has no group kind, a mapping names
// an unknown kind, or the trace uses more CUDA streams than the engine has (kStreams).
Expected<TraceProgram> build_trace_program(const KinetoTrace& trace, const TraceWorkload& workload);

// read_kineto_trace(workload.path, workload.step), then build_trace_program.
Expected<TraceProgram> load_trace_program(const TraceWorkload& workload);

}  // namespace commbound::sim
