// The [contention] calibration data (docs/calibration.md): how much slower a compute kernel runs
// while a communication kernel shares the GPU. NCCL runs a collective as one CUDA block per channel
// (NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS bound the channel count, NCCL_NTHREADS the threads per
// block, 512 by default; https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html), and
// on an H100 NVLink system it typically picks 16 to 32 channels. The stand-in here is a
// persistent copy kernel on exactly `comm_sms` blocks of 512 threads, streaming device memory with
// 16-byte loads and stores on its own non-blocking stream: it takes SM slots and HBM bandwidth the
// way NCCL's kernels do, without needing a second GPU.
#pragma once

#include "core/expected.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

namespace commbound::kernels {

// Threads per block of the communication-like copy kernel (NCCL_NTHREADS' default).
inline constexpr int kCommCopyThreadsPerBlock = 512;

// One launch of the communication-like copy kernel.
struct CommCopyParams {
  const void* src = nullptr;  // device memory, 16-byte aligned
  void* dst = nullptr;        // device memory, 16-byte aligned, not overlapping src
  std::size_t bytes = 0;      // a multiple of 16
  int blocks = 24;            // grid size: the SMs it occupies (one block each on an idle GPU)
  int iterations = 1;         // times the whole buffer is copied
  // Payload rate to hold (bytes copied per second): every thread waits, after each group of
  // loads and stores, until its share of this rate has caught up (%globaltimer); 0: as fast as
  // the SMs go. NCCL's kernels move bytes at the network's rate while they occupy their SMs.
  double target_bytes_per_s = 0;
  // When not null, device memory for `blocks` values: block b writes the id of the SM it ran on.
  unsigned int* block_sm_ids = nullptr;
};

// Queues the copy (dst = src, `iterations` times) on `stream`. Error: bad parameters (bytes not a
// multiple of 16, misaligned pointers, blocks or iterations < 1) or a launch failure.
Status launch_comm_copy(const CommCopyParams& params, cudaStream_t stream);

struct ContentionOptions {
  int device = 0;
  int comm_sms = 24;                          // blocks (hence SMs) of the copy kernel
  double comm_target_GBps = 0;                // payload rate the copy holds (0: unpaced)
  std::size_t comm_buffer_bytes = 256u << 20; // bytes copied per iteration
  int victim_warmup_runs = 3;                 // untimed victim runs before each measurement
  int victim_runs = 20;                       // at least this many timed runs (median taken)
  int max_attempts = 4;                       // copy lengthenings allowed when it ends too early
};

struct ContentionResult {
  double alone_ms = 0;      // victim median, GPU to itself
  double with_comm_ms = 0;  // victim median, every run inside the copy's lifetime
  double factor = 0;        // with_comm_ms / alone_ms
  int comm_sms = 0;
  int overlapped_runs = 0;  // timed victim runs the median with_comm_ms is over
  // The copy's rate in payload bytes per second / 1e9 (each byte copied counts once; the memory
  // traffic is twice that), alone and while the victim runs.
  double comm_GBps_alone = 0;
  double comm_GBps_overlapped = 0;
};

// Times `victim` (one launch on the stream it is given, which it must use and not synchronize)
// alone, then while the copy kernel runs on `comm_sms` SMs on another stream. The copy is started
// first and sized to outlast all the victim runs; victim runs continue back to back until the copy
// ends, and only the runs that ended while it was still running (checked by querying its end event)
// are kept. When fewer than victim_runs were kept, the copy is lengthened and the measurement
// repeated. Errors: bad options (comm_sms outside [1, SM count], buffer not a multiple of 16 bytes,
// victim_runs < 1), a CUDA failure, a victim's error, or the copy still too short after
// max_attempts.
Expected<ContentionResult> measure_contention(const ContentionOptions& options,
                                              const std::function<Status(cudaStream_t)>& victim);

}  // namespace commbound::kernels
