// NcclBench: real NCCL collectives on this machine's GPUs, sized, timed and printed the way
// NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf, reduce_scatter_perf, sendrecv_perf) does
// it, so that what it prints is read back by the one nccl-tests reader (network/nccl_tests_log.hpp)
// and fitted by `commbound fit-fabric` like any other nccl-tests log.
//
// Why our own and not nccl-tests: the GPU box builds commbound's kernels/ anyway, and a log written
// by a tool in the tree carries its provenance (tool commit, date, NCCL / CUDA / driver versions,
// GPUs) in its header. What it measures is nccl-tests' measurement, on one node: one process
// drives the first N visible GPUs as one communicator (ncclCommInitAll) from one thread.
//
// Conventions (NVIDIA/nccl-tests, src/common.cu and the per-op files named below):
//  - size: the whole buffer in bytes (allgather: the gathered output; reducescatter: the input);
//    count: the elements each rank passes to NCCL (allgather / reducescatter: per rank, rounded
//    down to a multiple of 16 bytes, so size = count x ranks x element size).
//  - time: the mean of `iters` back-to-back launches, host-timed from before the first launch to
//    after every stream finished (src/common.cu, BenchTime), out-of-place then in-place.
//  - algbw = size / time; busbw = algbw x bus_bw_factor (core/nccl_tests_op.hpp, with
//    the nccl-tests source of each op's factor).
//  - #wrong: elements of one extra, untimed launch that differ from the exact result; -1 ("N/A")
//    when the check is off, and always for in-place sendrecv (nccl-tests does not check it).
// Where we differ: warm-up runs `warmup_iters` launches before each timing (nccl-tests warms every
// size up once before the sweep, then runs one launch before each timing); buffers come from
// cudaMalloc (nccl-tests >= 2.19 uses ncclMemAlloc, which matters only with -R registration); the
// communicators from ncclCommInitAll with NCCL's default config (nccl-tests 2.19 built on NCCL >=
// 2.28 sets config.nvlinkCentricSched = 1, src/common.cu initComms); the data pattern is ours
// (kernels/host/internal/nccl_bench_check.hpp: small integers, exact in float, half and bf16).
#pragma once

#include "core/expected.hpp"
#include "core/nccl_tests_op.hpp"
#include "core/nccl_tests_text.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace commbound::kernels {

// The nccl-tests ops this bench runs (alltoall is not one of them).
enum class NcclBenchOp { all_reduce, all_gather, reduce_scatter, send_recv };
enum class NcclBenchType { float32, float16, bfloat16 };

// "allreduce" | "allgather" | "reducescatter" | "sendrecv" (commbound's names, as in
// `commbound collective --op`); an error naming the text otherwise.
Expected<NcclBenchOp> parse_nccl_bench_op(const std::string& text);
// "float" | "half" | "bfloat16" (nccl-tests' -d names).
Expected<NcclBenchType> parse_nccl_bench_type(const std::string& text);
// A byte count as nccl-tests' -b / -e take it: "8", "64K", "1.5M", "1G" (binary multiples: K =
// 1024; "1GB", "1GiB" too). Errors: not a number, an unknown suffix, or not a whole number >= 1.
Expected<std::size_t> parse_size_bytes(const std::string& text);

// The nccl-tests op `op` is: its binary name (nccl_tests_binary, the name the log carries) and
// its busbw factor (bus_bw_factor) are core/nccl_tests_op.hpp's.
NcclTestsOp nccl_tests_op(NcclBenchOp op);
std::size_t element_bytes(NcclBenchType type);

// What to run; the fields mirror nccl-tests' flags.
struct NcclBenchOptions {
  NcclBenchOp op = NcclBenchOp::all_reduce;
  NcclBenchType type = NcclBenchType::float32;  // -d
  int gpus = 0;                                 // the first `gpus` visible devices; 0: all of them
  std::size_t min_bytes = std::size_t{32} << 20;  // -b (nccl-tests' default 32M)
  std::size_t max_bytes = std::size_t{32} << 20;  // -e
  std::size_t step_factor = 2;                    // -f: each size is the previous x this
  int warmup_iters = 5;                           // -w: untimed launches before each timing
  int iters = 20;                                 // -n: timed launches per timing
  bool check = true;                              // -c: count wrong elements
};

// Whether `options` make sense on any machine (sizes ordered, factor >= 2, iters >= 1, ...). An
// error is bad input, named by the flag.
Status check_options(const NcclBenchOptions& options);

// One row's size, as nccl-tests prints it.
struct NcclBenchSize {
  std::size_t size_bytes = 0;  // 'size'
  std::size_t count = 0;       // 'count': elements each rank passes to NCCL
};

// The rows nccl-tests prints for `options` on `ranks` ranks: sizes from min_bytes to max_bytes by
// step_factor, each rounded down as above; sizes that round to 0 elements are left out (nccl-tests
// prints them as rows of size 0, which no reader can use).
std::vector<NcclBenchSize> plan_sizes(const NcclBenchOptions& options, int ranks);

// One timing of a row.
// A timing as nccl-tests prints it (core/nccl_tests_text.hpp): mean time per launch, size / time,
// alg_bw x bus_bw_factor(nccl_tests_op(op), ranks), wrong elements (-1: not checked, "N/A").
using NcclBenchTiming = NcclTestsTiming;

struct NcclBenchRow {
  NcclBenchSize size;
  NcclBenchTiming out_of_place;
  NcclBenchTiming in_place;
};

// A GPU of the communicator: rank i is CUDA device i.
struct NcclBenchDevice {
  int cuda_device = 0;
  int pci_domain = 0, pci_bus = 0, pci_device = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
};

// Where and with what the rows were measured: the log's provenance.
struct NcclBenchSetup {
  std::string hostname;
  long pid = 0;
  std::vector<NcclBenchDevice> devices;  // one per rank
  int nccl_headers_code = 0;             // NCCL_VERSION_CODE we were built with (22809 = 2.28.9)
  int nccl_library_code = 0;             // ncclGetVersion() of the library loaded
  int cuda_runtime_version = 0;          // 13000 = 13.0
  int cuda_driver_version = 0;
  std::string tool_commit;               // the commbound commit of the tool (set by the tool)
  std::string date_utc;                  // "2025-06-01T12:00:00Z" (set by the tool)
};

// nccl-tests' text: the '#' header (tool and versions, "Collective test starting: <op>_perf", the
// run's parameters, one '#  Rank' line per GPU, the column heads), one row per size, and the
// footer ('Out of bounds values', 'Avg bus bandwidth'). Each ends with a newline.
std::string format_header(const NcclBenchOptions& options, const NcclBenchSetup& setup);
std::string format_row(const NcclBenchOptions& options, const NcclBenchRow& row);
std::string format_footer(const NcclBenchOptions& options, const std::vector<NcclBenchRow>& rows);

class NcclBench {
public:
  ~NcclBench();
  NcclBench(NcclBench&&) noexcept;
  NcclBench& operator=(NcclBench&&) noexcept;

  // Opens the first options.gpus visible GPUs (all when 0) as one NCCL communicator, with a
  // stream and send / receive buffers for the largest size on each, the send buffers holding the
  // check's input pattern. Errors: `options` rejected by check_options; no CUDA device, fewer
  // than options.gpus, no size left for this many ranks; a CUDA or NCCL failure (out of memory
  // for max_bytes included).
  static Expected<NcclBench> create(const NcclBenchOptions& options);

  const NcclBenchSetup& setup() const;
  int ranks() const;
  // plan_sizes(options, ranks()).
  const std::vector<NcclBenchSize>& sizes() const;

  // Times one of sizes(), out-of-place then in-place, and checks each when options.check.
  // Errors: a CUDA or NCCL failure.
  Expected<NcclBenchRow> measure(const NcclBenchSize& size);

private:
  struct Impl;
  explicit NcclBench(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace commbound::kernels
