#include "kernels/host/internal/nccl_bench_check.hpp"

#include "kernels/host/bf16.hpp"

#include <bit>
#include <cstring>

namespace commbound::kernels::internal {
namespace {

constexpr int kPatternRankStride = 7;

template <class Bits>
long mismatches(const std::byte* got, std::size_t n, const Period& period, std::size_t& phase) {
  long wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Bits bits;
    std::memcpy(&bits, got + i * sizeof(Bits), sizeof(Bits));
    wrong += bits != static_cast<Bits>(period[phase]) ? 1 : 0;
    if (++phase == kPatternPeriod) phase = 0;
  }
  return wrong;
}

}  // namespace

int pattern_value(int rank, std::size_t i) {
  return static_cast<int>((i + static_cast<std::size_t>(kPatternRankStride * rank)) % kPatternPeriod);
}

std::uint32_t bits_of_integer(NcclBenchType type, int n) {
  const auto f = std::bit_cast<std::uint32_t>(static_cast<float>(n));
  switch (type) {
    case NcclBenchType::float32: return f;
    case NcclBenchType::bfloat16: return to_bf16(static_cast<float>(n));  // exact up to 256
    case NcclBenchType::float16: {
      if (n == 0) return 0;
      const std::uint32_t exponent = ((f >> 23) & 0xffu) - 127u + 15u;  // float's bias 127, half's 15
      return (exponent << 10) | ((f >> 13) & 0x3ffu);                  // exact up to 2048
    }
  }
  return 0;
}

// Each op's expected output as nccl-tests' InitData states it (src/all_reduce.cu, all_gather.cu,
// reduce_scatter.cu, sendrecv.cu).
std::vector<Segment> expected_segments(NcclBenchOp op, int ranks, int rank, std::size_t count) {
  switch (op) {
    case NcclBenchOp::all_reduce: return {{0, count, -1, 0}};
    case NcclBenchOp::reduce_scatter: return {{0, count, -1, static_cast<std::size_t>(rank) * count}};
    case NcclBenchOp::send_recv: return {{0, count, (rank - 1 + ranks) % ranks, 0}};
    case NcclBenchOp::all_gather: {
      std::vector<Segment> blocks;
      for (int q = 0; q < ranks; ++q) blocks.push_back({static_cast<std::size_t>(q) * count, count, q, 0});
      return blocks;
    }
  }
  return {};
}

Period expected_period(const Segment& segment, NcclBenchType type, int ranks) {
  Period period{};
  for (int m = 0; m < kPatternPeriod; ++m) {
    int value = 0;
    if (segment.source >= 0) {
      value = pattern_value(segment.source, static_cast<std::size_t>(m));
    } else {
      for (int q = 0; q < ranks; ++q) value += pattern_value(q, static_cast<std::size_t>(m));
    }
    period[static_cast<std::size_t>(m)] = bits_of_integer(type, value);
  }
  return period;
}

long count_mismatches(const std::byte* got, std::size_t n, NcclBenchType type, const Period& period, std::size_t& phase) {
  return element_bytes(type) == 4 ? mismatches<std::uint32_t>(got, n, period, phase)
                                  : mismatches<std::uint16_t>(got, n, period, phase);
}

}  // namespace commbound::kernels::internal
