// The communication-like copy kernel and the with/without timing of a victim kernel beside it.
#include "kernels/device/contention.hpp"
#include "kernels/device/cuda_support.hpp"
#include "kernels/device/timing.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

namespace commbound::kernels {
namespace {

constexpr std::size_t kVectorBytes = sizeof(uint4);  // one 16-byte load or store
constexpr int kUnroll = 4;                            // 16-byte loads in flight per thread
constexpr int kProbeIterations = 2;                   // copy iterations timed to size the copy
constexpr double kSlowdownAllowance = 3.0;            // the copy is sized for victims this much slower
constexpr double kCopyHeadroom_s = 2e-3;              // plus this, for launch and start-up latency
constexpr int kLengthening = 4;                       // iterations multiplier when the copy ended too early

// The GPU's global nanosecond timer (PTX %globaltimer).
__device__ std::uint64_t globaltimer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Grid-stride copy, `iterations` times over the buffer; every thread keeps kUnroll loads in flight.
// src and dst are not __restrict__, so the compiler must redo every iteration's loads and stores.
__global__ void __launch_bounds__(kCommCopyThreadsPerBlock)
    comm_copy_kernel(const uint4* src, uint4* dst, std::size_t count, int iterations, double ns_per_vector,
                     unsigned int* block_sm_ids) {
  if (block_sm_ids != nullptr && threadIdx.x == 0) {
    unsigned int sm_id = 0;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm_id));
    block_sm_ids[blockIdx.x] = sm_id;
  }
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Pacing: this thread's vectors so far, and the nanoseconds they may take at the target rate.
  const std::uint64_t start_ns = globaltimer_ns();
  std::uint64_t vectors = 0;
  for (int it = 0; it < iterations; ++it) {
    std::size_t i = first;
    for (; i + (kUnroll - 1) * stride < count; i += kUnroll * stride) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = src[i + u * stride];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) dst[i + u * stride] = v[u];
      if (ns_per_vector > 0) {
        vectors += kUnroll;
        const auto due_ns = static_cast<std::uint64_t>(static_cast<double>(vectors) * ns_per_vector);
        while (globaltimer_ns() - start_ns < due_ns) {
        }
      }
    }
    for (; i < count; i += stride) dst[i] = src[i];
  }
}

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kVectorBytes == 0; }

Status validate(const ContentionOptions& o) {
  int sm_count = 0;
  if (Status s = cuda_check(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, o.device),
                            "cudaDeviceGetAttribute(multiProcessorCount)");
      !s) {
    return s;
  }
  if (o.comm_sms < 1 || o.comm_sms > sm_count) {
    return Error{"measure_contention: comm_sms = " + std::to_string(o.comm_sms) + " outside [1, " +
                 std::to_string(sm_count) + "] (the device's SMs)"};
  }
  if (o.comm_buffer_bytes == 0 || o.comm_buffer_bytes % kVectorBytes != 0) {
    return Error{"measure_contention: comm_buffer_bytes = " + std::to_string(o.comm_buffer_bytes) +
                 " must be a positive multiple of 16"};
  }
  if (!(o.comm_target_GBps >= 0)) {
    return Error{"measure_contention: comm_target_GBps = " + std::to_string(o.comm_target_GBps) + " must be >= 0"};
  }
  if (o.victim_runs < 1 || o.victim_warmup_runs < 0 || o.max_attempts < 1) {
    return Error{"measure_contention: need victim_runs >= 1, victim_warmup_runs >= 0, max_attempts >= 1"};
  }
  return Ok{};
}

// Victim runs on one stream, two in flight (run r uses event pair r % 2), so the GPU does not wait
// for the host between runs and each pair of events brackets one run.
class VictimRuns {
public:
  static Expected<VictimRuns> create(const std::function<Status(cudaStream_t)>& victim) {
    auto stream = Stream::create(StreamOrdering::non_blocking);
    if (!stream) return stream.error();
    VictimRuns runs(victim, std::move(*stream));
    for (int slot = 0; slot < 2; ++slot) {
      auto start = Event::create();
      auto stop = Event::create();
      if (!start) return start.error();
      if (!stop) return stop.error();
      runs.starts_.push_back(std::move(*start));
      runs.stops_.push_back(std::move(*stop));
    }
    return Expected<VictimRuns>(std::move(runs));
  }

  // Queues run `run` (its slot must be free: run - 2 finished).
  Status enqueue(int run) {
    const int slot = run % 2;
    if (Status s = starts_[slot].record(stream_.get()); !s) return s;
    if (Status s = victim_(stream_.get()); !s) return s;
    return stops_[slot].record(stream_.get());
  }
  // Waits for run `run` and returns its GPU time, ms.
  Expected<double> finish(int run) {
    const int slot = run % 2;
    if (Status s = stops_[slot].synchronize(); !s) return s.error();
    return Event::elapsed_ms(starts_[slot], stops_[slot]);
  }
  Status synchronize() const { return stream_.synchronize(); }

private:
  VictimRuns(const std::function<Status(cudaStream_t)>& victim, Stream stream)
      : victim_(victim), stream_(std::move(stream)) {}
  const std::function<Status(cudaStream_t)>& victim_;
  Stream stream_;
  std::vector<Event> starts_;
  std::vector<Event> stops_;
};

// `warmup + timed` runs back to back; the timed runs' GPU times (ms).
Expected<std::vector<double>> run_alone(VictimRuns& runs, int warmup, int timed) {
  std::vector<double> kept_ms;
  const int total = warmup + timed;
  if (Status s = runs.enqueue(0); !s) return s.error();
  for (int r = 0; r < total; ++r) {
    if (r + 1 < total) {
      if (Status s = runs.enqueue(r + 1); !s) return s.error();
    }
    auto ms = runs.finish(r);
    if (!ms) return ms.error();
    if (r >= warmup) kept_ms.push_back(*ms);
  }
  return kept_ms;
}

// Runs back to back until `copy_end` has completed; the GPU times (ms) of the runs after the
// warm-ups that ended while the copy was still running. Leaves no victim run in flight.
Expected<std::vector<double>> run_beside(VictimRuns& runs, int warmup, const Event& copy_end) {
  std::vector<double> kept_ms;
  if (Status s = runs.enqueue(0); !s) return s.error();
  for (int r = 0;; ++r) {
    if (Status s = runs.enqueue(r + 1); !s) return s.error();
    auto ms = runs.finish(r);
    if (!ms) return ms.error();
    auto copy_done = copy_end.completed();  // queried after run r ended: false means r ended first
    if (!copy_done) return copy_done.error();
    if (*copy_done) break;
    if (r >= warmup) kept_ms.push_back(*ms);
  }
  if (Status s = runs.synchronize(); !s) return s.error();
  return kept_ms;
}

// Times one copy of `params` on `stream` (events around it), ms.
Expected<double> time_copy(const CommCopyParams& params, const Stream& stream, const Event& start, const Event& stop) {
  if (Status s = start.record(stream.get()); !s) return s.error();
  if (Status s = launch_comm_copy(params, stream.get()); !s) return s.error();
  if (Status s = stop.record(stream.get()); !s) return s.error();
  if (Status s = stop.synchronize(); !s) return s.error();
  return Event::elapsed_ms(start, stop);
}

double gb_per_s(std::size_t bytes, int iterations, double ms) {
  return static_cast<double>(bytes) * iterations / (ms * 1e-3) / 1e9;
}

}  // namespace

Status launch_comm_copy(const CommCopyParams& p, cudaStream_t stream) {
  if (p.bytes % kVectorBytes != 0 || !aligned(p.src) || !aligned(p.dst)) {
    return Error{"launch_comm_copy: bytes = " + std::to_string(p.bytes) +
                 " and both pointers must be multiples of 16"};
  }
  if (p.blocks < 1 || p.iterations < 1) return Error{"launch_comm_copy: blocks and iterations must be at least 1"};
  if (p.target_bytes_per_s < 0) return Error{"launch_comm_copy: target_bytes_per_s must be >= 0"};
  // Each of the blocks x threads threads holds an equal share of the target rate.
  const double threads = static_cast<double>(p.blocks) * kCommCopyThreadsPerBlock;
  const double ns_per_vector =
      p.target_bytes_per_s > 0 ? kVectorBytes * threads / p.target_bytes_per_s * 1e9 : 0.0;
  comm_copy_kernel<<<p.blocks, kCommCopyThreadsPerBlock, 0, stream>>>(
      static_cast<const uint4*>(p.src), static_cast<uint4*>(p.dst), p.bytes / kVectorBytes, p.iterations,
      ns_per_vector, p.block_sm_ids);
  return cuda_check(cudaGetLastError(), "comm_copy_kernel launch");
}

Expected<ContentionResult> measure_contention(const ContentionOptions& options,
                                              const std::function<Status(cudaStream_t)>& victim) {
  if (Status s = cuda_check(cudaSetDevice(options.device), "cudaSetDevice"); !s) return s.error();
  if (Status s = validate(options); !s) return s.error();
  // What the copy moves does not matter to its timing: the buffers stay uninitialised.
  auto src = DeviceBuffer<std::uint8_t>::create(options.comm_buffer_bytes);
  if (!src) return src.error();
  auto dst = DeviceBuffer<std::uint8_t>::create(options.comm_buffer_bytes);
  if (!dst) return dst.error();
  auto comm = Stream::create(StreamOrdering::non_blocking);
  if (!comm) return comm.error();
  auto copy_start = Event::create();
  auto copy_end = Event::create();
  if (!copy_start) return copy_start.error();
  if (!copy_end) return copy_end.error();
  auto runs = VictimRuns::create(victim);
  if (!runs) return runs.error();

  // The victim alone; its wall time per run (GPU time or launch latency, whichever is longer)
  // sizes the copy.
  const auto alone_begin = std::chrono::steady_clock::now();
  auto alone_ms = run_alone(*runs, options.victim_warmup_runs, options.victim_runs);
  if (!alone_ms) return alone_ms.error();
  const int total_runs = options.victim_warmup_runs + options.victim_runs;
  const double wall_per_run_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - alone_begin).count() / total_runs;

  CommCopyParams copy;
  copy.src = src->get();
  copy.dst = dst->get();
  copy.bytes = options.comm_buffer_bytes;
  copy.blocks = options.comm_sms;
  copy.target_bytes_per_s = options.comm_target_GBps * 1e9;
  copy.iterations = 1;
  if (auto warm = time_copy(copy, *comm, *copy_start, *copy_end); !warm) return warm.error();
  copy.iterations = kProbeIterations;
  auto probe_ms = time_copy(copy, *comm, *copy_start, *copy_end);
  if (!probe_ms) return probe_ms.error();
  const double iteration_s = *probe_ms * 1e-3 / kProbeIterations;
  const double needed_s = total_runs * wall_per_run_s * kSlowdownAllowance + kCopyHeadroom_s;
  copy.iterations = std::max(1, static_cast<int>(std::ceil(needed_s / iteration_s)));

  for (int attempt = 0; attempt < options.max_attempts; ++attempt) {
    auto copy_alone_ms = time_copy(copy, *comm, *copy_start, *copy_end);
    if (!copy_alone_ms) return copy_alone_ms.error();

    if (Status s = copy_start->record(comm->get()); !s) return s.error();
    if (Status s = launch_comm_copy(copy, comm->get()); !s) return s.error();
    if (Status s = copy_end->record(comm->get()); !s) return s.error();
    auto beside_ms = run_beside(*runs, options.victim_warmup_runs, *copy_end);
    // The copy must not outlive its buffers, whatever the victims did.
    if (Status s = comm->synchronize(); !s) return s.error();
    if (!beside_ms) return beside_ms.error();
    auto copy_beside_ms = Event::elapsed_ms(*copy_start, *copy_end);
    if (!copy_beside_ms) return copy_beside_ms.error();

    if (static_cast<int>(beside_ms->size()) >= options.victim_runs) {
      ContentionResult r;
      r.alone_ms = percentiles(*alone_ms).p50_ms;
      r.with_comm_ms = percentiles(*beside_ms).p50_ms;
      r.factor = r.with_comm_ms / r.alone_ms;
      r.comm_sms = options.comm_sms;
      r.overlapped_runs = static_cast<int>(beside_ms->size());
      r.comm_GBps_alone = gb_per_s(copy.bytes, copy.iterations, *copy_alone_ms);
      r.comm_GBps_overlapped = gb_per_s(copy.bytes, copy.iterations, *copy_beside_ms);
      return r;
    }
    copy.iterations *= kLengthening;
  }
  return Error{"measure_contention: the copy kernel still ended before " + std::to_string(options.victim_runs) +
               " victim runs after " + std::to_string(options.max_attempts) + " lengthenings"};
}

}  // namespace commbound::kernels
