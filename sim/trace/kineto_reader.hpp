// The Kineto trace reader: a KinetoTrace, one training step of one rank, read from a PyTorch
// profiler (Kineto) Chrome trace (.json, or .json.gz): the GPU activities with their CUDA stream
// and measured times, the waits of one stream for another, and the NCCL collectives with their
// sizes and process groups. What sim/trace/trace_program.hpp turns into a Program to replay;
// docs/traces.md says how to capture a trace that has all of it. (The trace commbound writes, of a
// simulated iteration, is sim/report/perfetto_writer.hpp.)
//
// The step is the CPU-side ProfilerStep#N annotation that torch.profiler.profile(schedule=...)
// writes; its GPU activities are those launched (CUDA runtime call, matched by correlation id)
// while it ran. A trace without steps is one step: every GPU activity in it.
//
// Waits between streams: traces captured with CUDA sync events (PyTorch >= 2.3,
// experimental_config=_ExperimentalConfig(enable_cuda_sync_events=True)) say which stream waited
// for which cudaEventRecord: the activity launched on the waiting stream after the wait depends on
// the last one launched on the recorded stream before the record. Older traces only show the
// runtime calls: after a cudaStreamWaitEvent the next activity launched by the same CPU thread
// depends on the last one launched (by any thread) on another stream before the wait: PyTorch records
// an event right after launching its producer (ProcessGroupNCCL's syncStream before a collective,
// the work's end event after it). A dependency the measured times contradict (the consumer started
// before its producer ended) is not real and is dropped (counted in contradicted_dependencies).
#pragma once

#include "core/expected.hpp"

#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

// An NCCL kernel's collective, from its name (ncclDevKernel_AllGather_RING_LL, ncclKernel_AllReduce_...)
// and the arguments PyTorch's ProcessGroupNCCL records on it.
struct TraceCollective {
  std::string op;          // as the kernel names it: "AllReduce", "AllGather", "ReduceScatter", "SendRecv", "Broadcast", ...
  double size_bytes = 0;   // nccl-tests whole buffer (AllGather: the gathered output); 0 when the trace does not say
  double element_bytes = 0;  // of "dtype"; 0 when absent or unknown
  std::string dtype;       // "dtype" as written ("Float", "BFloat16"); "" when absent
  std::string group_name;  // "Process Group Name" ("0"); "" when absent
  std::string group_description;  // "Process Group Description" ("default_pg"); "" when absent
  std::string group_ranks;        // "Process Group Ranks" as written ("[0, 1]")
  int group_size = 0;             // "Group size"; 0 when absent
};

enum class GpuActivity { kernel, memcpy, memset };

struct TraceOp {
  std::string name;  // as traced
  GpuActivity activity = GpuActivity::kernel;
  long stream = 0;        // the CUDA stream id
  double start_s = 0;     // from the step's start
  double duration_s = 0;  // measured
  std::optional<TraceCollective> collective;  // NCCL kernels
  std::vector<int> deps;  // ops of this step it waited for through a CUDA event (indices into KinetoTrace::ops)
};

struct KinetoTrace {
  std::string path;
  std::string step;                // "ProfilerStep#5", or "" for a trace without steps
  std::vector<std::string> steps;  // every ProfilerStep#N of the trace, in time order
  // The measured iteration: from the step's start to its CPU end or its last GPU activity's end,
  // whichever is later (without steps: the first GPU activity's start to the last one's end).
  double iteration_s = 0;
  double cpu_step_s = 0;           // the ProfilerStep annotation's own duration (0 without steps)
  std::vector<TraceOp> ops;        // in order of start
  int rank = -1;                   // distributedInfo; -1 when absent
  int world_size = 0;              // distributedInfo; 0 when absent
  bool sync_events = false;        // waits from CUDA sync events (exact) rather than from runtime calls
  int contradicted_dependencies = 0;
};

// Reads the step ProfilerStep#`step` of the trace at `path` (gzip or plain JSON); without `step`,
// the first. Errors are one line naming the file and what is wrong: unreadable, truncated or not
// JSON (with the byte), not a Chrome trace, an activity whose fields have the wrong type, no GPU
// activity, no such step (naming those there are).
Expected<KinetoTrace> read_kineto_trace(const std::string& path, std::optional<long> step = std::nullopt);

}  // namespace commbound::sim
