// NcclBench's data check without a GPU: the expected outputs against each collective computed here
// by its definition (a CPU reference of allreduce, allgather, reducescatter and sendrecv over the
// ranks' inputs), and the comparison catching a wrong element and a misplaced block.
#include "kernels/host/internal/nccl_bench_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace commbound::kernels::internal {
namespace {

TEST(NcclBenchCheck, IntegersAreEncodedExactly) {
  // Hand-encoded: 1 = 0x3f800000 (float), 0x3c00 (half), 0x3f80 (bf16); 12 = 1.5 x 2^3; 252 =
  // 1.96875 x 2^7: half exponent 7 + 15 = 22, mantissa 0x3e0.
  EXPECT_EQ(bits_of_integer(NcclBenchType::float32, 1), 0x3f800000u);
  EXPECT_EQ(bits_of_integer(NcclBenchType::float16, 0), 0x0000u);
  EXPECT_EQ(bits_of_integer(NcclBenchType::float16, 1), 0x3c00u);
  EXPECT_EQ(bits_of_integer(NcclBenchType::float16, 12), 0x4a00u);
  EXPECT_EQ(bits_of_integer(NcclBenchType::float16, 252), 0x5be0u);
  EXPECT_EQ(bits_of_integer(NcclBenchType::bfloat16, 1), 0x3f80u);
  EXPECT_EQ(bits_of_integer(NcclBenchType::bfloat16, 252), 0x437cu);
  // The largest sum the check allows: 21 ranks of at most 12.
  EXPECT_EQ(kMaxCheckedRanks * (kPatternPeriod - 1), 252);
}

// Rank r's output of `op` by the collective's definition, over inputs v(q, i), as integers.
std::vector<int> reference_output(NcclBenchOp op, int ranks, int r, std::size_t count) {
  std::vector<int> out;
  switch (op) {
    case NcclBenchOp::all_reduce:  // out[i] = sum over q of in_q[i]
      for (std::size_t i = 0; i < count; ++i) {
        int sum = 0;
        for (int q = 0; q < ranks; ++q) sum += pattern_value(q, i);
        out.push_back(sum);
      }
      break;
    case NcclBenchOp::all_gather:  // out = in_0[0, count) ++ in_1[0, count) ++ ...
      for (int q = 0; q < ranks; ++q) {
        for (std::size_t i = 0; i < count; ++i) out.push_back(pattern_value(q, i));
      }
      break;
    case NcclBenchOp::reduce_scatter:  // out[i] = sum over q of in_q[r count + i]
      for (std::size_t i = 0; i < count; ++i) {
        int sum = 0;
        for (int q = 0; q < ranks; ++q) sum += pattern_value(q, static_cast<std::size_t>(r) * count + i);
        out.push_back(sum);
      }
      break;
    case NcclBenchOp::send_recv:  // out = in_{r-1}
      for (std::size_t i = 0; i < count; ++i) out.push_back(pattern_value((r - 1 + ranks) % ranks, i));
      break;
  }
  return out;
}

std::vector<std::byte> encoded(const std::vector<int>& values, NcclBenchType type) {
  const std::size_t elt = element_bytes(type);
  std::vector<std::byte> bytes(values.size() * elt);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint32_t bits = bits_of_integer(type, values[i]);
    const auto half = static_cast<std::uint16_t>(bits);
    std::memcpy(bytes.data() + i * elt, elt == 4 ? static_cast<const void*>(&bits) : &half, elt);
  }
  return bytes;
}

// Wrong elements of `out` (rank r's output) by the check, in chunks of 5 elements.
long wrong(const std::vector<std::byte>& out, NcclBenchOp op, NcclBenchType type, int ranks, int r, std::size_t count) {
  const std::size_t elt = element_bytes(type);
  long total = 0;
  std::size_t covered = 0;
  for (const Segment& s : expected_segments(op, ranks, r, count)) {
    const Period period = expected_period(s, type, ranks);
    std::size_t phase = s.offset % kPatternPeriod;
    for (std::size_t done = 0; done < s.length; done += 5) {
      const std::size_t n = std::min<std::size_t>(5, s.length - done);
      total += count_mismatches(out.data() + (s.first + done) * elt, n, type, period, phase);
    }
    covered += s.length;
  }
  EXPECT_EQ(covered * elt, out.size()) << "segments must cover the whole output";
  return total;
}

TEST(NcclBenchCheck, ExpectedOutputsAreTheCollectives) {
  const NcclBenchOp ops[] = {NcclBenchOp::all_reduce, NcclBenchOp::all_gather, NcclBenchOp::reduce_scatter,
                             NcclBenchOp::send_recv};
  const NcclBenchType types[] = {NcclBenchType::float32, NcclBenchType::float16, NcclBenchType::bfloat16};
  const std::size_t count = 29;  // not a multiple of the period
  for (NcclBenchOp op : ops) {
    for (NcclBenchType type : types) {
      for (int ranks : {1, 2, 3, 8, kMaxCheckedRanks}) {
        for (int r = 0; r < ranks; ++r) {
          SCOPED_TRACE(std::string(nccl_tests_binary(nccl_tests_op(op))) + " type " + std::to_string(static_cast<int>(type)) + " rank " +
                       std::to_string(r) + " of " + std::to_string(ranks));
          std::vector<std::byte> out = encoded(reference_output(op, ranks, r, count), type);
          EXPECT_EQ(wrong(out, op, type, ranks, r, count), 0);
          out[out.size() / 2] ^= std::byte{0x40};  // one element off
          EXPECT_EQ(wrong(out, op, type, ranks, r, count), 1);
        }
      }
    }
  }
}

TEST(NcclBenchCheck, MisplacedOrStaleDataIsWrong) {
  const std::size_t count = 16;  // 16-byte granules of float: one block = 4 granules
  // allgather with rank 0's and rank 1's blocks swapped: v(0, i) != v(1, i) everywhere.
  std::vector<int> gathered = reference_output(NcclBenchOp::all_gather, 4, 0, count);
  std::swap_ranges(gathered.begin(), gathered.begin() + count, gathered.begin() + count);
  EXPECT_EQ(wrong(encoded(gathered, NcclBenchType::float32), NcclBenchOp::all_gather, NcclBenchType::float32, 4, 0, count),
            2 * static_cast<long>(count));
  // reducescatter that left rank 2's own input in place of the sum over 4 ranks: every element is
  // wrong, as the other ranks' v(q, i) = (i + 7q) mod 13, q = 0, 1, 3, are never all 0 together.
  std::vector<int> own(count);
  for (std::size_t i = 0; i < count; ++i) own[i] = pattern_value(2, 2 * count + i);
  EXPECT_EQ(wrong(encoded(own, NcclBenchType::bfloat16), NcclBenchOp::reduce_scatter, NcclBenchType::bfloat16, 4, 2, count),
            static_cast<long>(count));
  // sendrecv that received from itself instead of rank r - 1: (i + 7) mod 13 != i mod 13.
  std::vector<int> self(count);
  for (std::size_t i = 0; i < count; ++i) self[i] = pattern_value(1, i);
  EXPECT_EQ(wrong(encoded(self, NcclBenchType::float16), NcclBenchOp::send_recv, NcclBenchType::float16, 4, 1, count),
            static_cast<long>(count));
}

}  // namespace
}  // namespace commbound::kernels::internal
