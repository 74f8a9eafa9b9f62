// nccl-tests' text, written once: its column heads, a row of sizes and timings, and its footer,
// laid out as NVIDIA/nccl-tests prints them (src/util.cu, writeResultHeader,
// writeBenchmarkLinePreamble, writeBenchmarkLineBody; src/common.cu, the footer). The GPU bench
// (kernels/host/nccl_bench) prints real timings in it, `commbound collective --format nccl-tests`
// simulated ones, and network/'s nccl-tests reader reads both back. Host-only, C++17 (kernels/
// includes it).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace commbound {

// One timing of a row, out-of-place or in-place.
struct NcclTestsTiming {
  double time_s = 0;              // per launch
  double alg_bw_bytes_per_s = 0;  // size / time
  double bus_bw_bytes_per_s = 0;  // alg_bw x bus_bw_factor(op, ranks)
  long wrong = -1;                // wrong elements; -1: not checked ("N/A")
};

struct NcclTestsRow {
  std::size_t size_bytes = 0;  // 'size'
  std::size_t count = 0;       // 'count': elements each rank passes to NCCL
  const char* type = "float";  // 'type': float, half, bfloat16
  const char* redop = "sum";   // 'redop': sum, or none (allgather)
  NcclTestsTiming out_of_place;
  NcclTestsTiming in_place;
};

// `value` in exactly `width` characters, with as many decimals (2, 1, 0) as fit, else in exponent
// form (src/util.cu, getFloatStr).
std::string nccl_tests_fixed_width(double value, int width);

// The three '#' lines that head the columns ("out-of-place ... in-place", the names, the units).
std::string nccl_tests_column_heads();

// One row: size, count, type, redop, root (-1: none), then time, algbw, busbw and #wrong of each
// timing.
std::string nccl_tests_row(const NcclTestsRow& row);

// 'Out of bounds values' (the timings with a wrong element) and 'Avg bus bandwidth' (the mean
// busbw of every timing printed, out-of-place and in-place, in GB/s), then "#".
std::string nccl_tests_footer(const std::vector<NcclTestsRow>& rows);

}  // namespace commbound
