// The data check of NcclBench (kernels/host/nccl_bench.hpp), host-only: the input each rank's send
// buffer holds, the output each rank must then hold, and the count of elements that differ. The
// inputs are small integers, whose sums are exact in float, half and bf16 whatever order NCCL adds
// them in, so a right result is right bit for bit and the comparison is exact.
#pragma once

#include "kernels/host/nccl_bench.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace commbound::kernels::internal {

// Element i of rank r's input is v(r, i) = (i + 7 r) mod 13. The rank term makes each rank's data
// differ (a block gathered from the wrong rank is caught); 13 is prime to the 16-byte granule of
// allgather / reducescatter counts, so a block shifted by whole granules is caught too.
inline constexpr int kPatternPeriod = 13;
int pattern_value(int rank, std::size_t i);
// Sums of v over up to this many ranks (<= 12 x 21 = 252) stay within the integers bf16 holds
// exactly (up to 256): more ranks cannot be checked.
inline constexpr int kMaxCheckedRanks = 256 / (kPatternPeriod - 1);

// The bits of the integer n (0 <= n <= 256) in `type`, exactly (float, half: 16 bits, bf16: 16).
std::uint32_t bits_of_integer(NcclBenchType type, int n);

// Where part of a rank's expected output comes from: output elements [first, first + length)
// hold, at first + k, v(source, offset + k), or the sum over all ranks of v(q, offset + k) when
// source < 0.
struct Segment {
  std::size_t first = 0, length = 0;
  int source = -1;
  std::size_t offset = 0;
};

// The expected output of `rank` of `ranks` after `op` over `count` elements per rank (nccl-tests'
// 'count'), as segments covering it: allreduce and sendrecv `count` elements, allgather `ranks`
// x `count`, reducescatter `count` (the rank's block of the input).
std::vector<Segment> expected_segments(NcclBenchOp op, int ranks, int rank, std::size_t count);

// One period of a segment's expected bits: element first + k holds period[(offset + k) % 13].
using Period = std::array<std::uint32_t, kPatternPeriod>;
Period expected_period(const Segment& segment, NcclBenchType type, int ranks);

// Elements of `got` (n elements of element_bytes(type) bytes each) that differ from `period`,
// starting at phase `phase` (offset mod 13), which is advanced past them so that a segment can be
// compared chunk by chunk.
long count_mismatches(const std::byte* got, std::size_t n, NcclBenchType type, const Period& period, std::size_t& phase);

}  // namespace commbound::kernels::internal
