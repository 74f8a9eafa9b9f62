// `commbound collective --format nccl-tests` (sim/report/collective_report.hpp): what it prints is
// nccl-tests' own text, so network/'s reader of real nccl-tests logs reads it back unchanged.
#include "network/nccl_tests_log.hpp"
#include "sim/report/collective_report.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace commbound::sim {
namespace {

// An AllReduce on 2 nodes x 8 GPUs: 1 MiB in 20 us and 1 GiB in 4 ms. From first principles:
// algbw = size / time, busbw = algbw x 2(n-1)/n = algbw x 30/16 (nccl-tests' AllReduce factor).
network::SweepRow row(double size_bytes, double time_s) {
  network::SweepRow r{network::CollectiveOp::all_reduce, 2, 16, size_bytes, {}, 0, 0};
  r.result.time_s = time_s;
  r.alg_bw_bytes_per_s = size_bytes / time_s;
  r.bus_bw_bytes_per_s = r.alg_bw_bytes_per_s * 30 / 16;
  return r;
}

TEST(CollectiveReport, NcclTestsFormatReadsBackAsALog) {
  std::ostringstream out;
  write_collective_report(out, {row(1 << 20, 20e-6), row(1 << 30, 4e-3)}, Format::nccl_tests, "a title");
  auto logs = network::parse_nccl_tests_log("simulated.txt", out.str(), {.nodes = 2, .gpus_per_node = 8});
  ASSERT_TRUE(logs) << logs.error().message << "\n" << out.str();
  ASSERT_EQ(logs->size(), 1u);
  const network::NcclTestsLog& log = logs->front();
  EXPECT_EQ(log.op, network::CollectiveOp::all_reduce);
  EXPECT_EQ(log.op_name, "all_reduce_perf");
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_EQ(log.rows[0].size_bytes, 1 << 20);
  EXPECT_EQ(log.rows[0].count, (1 << 20) / 4);  // floats, the whole buffer for an AllReduce
  EXPECT_EQ(log.rows[0].type, "float");
  EXPECT_NEAR(log.rows[0].out_of_place.time_s, 20e-6, 0.005e-6);  // printed to 0.01 us
  // 1 GiB / 4 ms = 268.44 GB/s algbw, 503.32 GB/s busbw, printed to 0.01 GB/s.
  EXPECT_NEAR(log.rows[1].out_of_place.alg_bw_bytes_per_s, 268.44e9, 0.005e9);
  EXPECT_NEAR(log.rows[1].out_of_place.bus_bw_bytes_per_s, 503.32e9, 0.005e9);
  ASSERT_TRUE(log.rows[1].in_place);
  EXPECT_EQ(log.rows[1].in_place->wrong, -1);  // simulated: nothing checked, N/A
  // The footer's mean busbw: (98.30 + 503.32) / 2 GB/s over both timings of both rows, as nccl-tests averages.
  EXPECT_NE(out.str().find("# Avg bus bandwidth    : 300.8"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace commbound::sim
