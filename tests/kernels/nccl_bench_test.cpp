// commbound-nccl-bench's host side, without a GPU: the sizes and counts it runs against those
// nccl-tests printed in real logs (calibration/fabric/logs/), its rows against real rows character
// for character, and everything it prints read back by the one nccl-tests reader
// (network/nccl_tests_log.hpp) with nothing given beside the text.
#include "kernels/host/nccl_bench.hpp"
#include "network/nccl_tests_log.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace commbound::kernels {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

NcclBenchOptions sweep(NcclBenchOp op, std::size_t min_bytes, std::size_t max_bytes,
                       NcclBenchType type = NcclBenchType::float32) {
  NcclBenchOptions o;
  o.op = op;
  o.type = type;
  o.min_bytes = min_bytes;
  o.max_bytes = max_bytes;
  return o;
}

std::string line_of(const std::string& path, int line) {
  std::ifstream in(path);
  std::string text;
  for (int i = 0; i < line && std::getline(in, text); ++i) {
  }
  return text;
}

TEST(NcclBenchSizes, AllReduceCountsEveryElementOfTheBuffer) {
  // float: count = size / 4 (src/all_reduce.cu); 1M .. 16M doubling is five rows.
  const auto sizes = plan_sizes(sweep(NcclBenchOp::all_reduce, kMiB, 16 * kMiB), 8);
  ASSERT_EQ(sizes.size(), 5u);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(sizes[i].size_bytes, kMiB << i);
    EXPECT_EQ(sizes[i].count, (kMiB << i) / 4);
  }
}

TEST(NcclBenchSizes, AllGatherMatchesTheRealLogOf32Ranks) {
  // s4_vp_4node_ag.txt: all_gather_perf on 4 nodes x 8 GPUs, 1 MiB .. 8 GiB; its count column is
  // each rank's share (size / 4 bytes / 32 ranks).
  auto logs = network::read_nccl_tests_log("calibration/fabric/logs/s4_vp_4node_ag.txt", {.nodes = 4, .gpus_per_node = 8});
  ASSERT_TRUE(logs) << logs.error().message;
  const auto& rows = logs->front().rows;
  const auto sizes = plan_sizes(sweep(NcclBenchOp::all_gather, kMiB, std::size_t{8} << 30), 32);
  ASSERT_EQ(sizes.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(static_cast<double>(sizes[i].size_bytes), rows[i].size_bytes) << "row " << i;
    EXPECT_EQ(static_cast<long>(sizes[i].count), rows[i].count) << "row " << i;
  }
}

TEST(NcclBenchSizes, GatherAndScatterRoundEachRanksShareDownTo16Bytes) {
  // 8 ranks, float, 8 B .. 1 KiB: a rank's share is under 16 B (4 floats) up to 64 B, so those
  // sizes are left out; then 128 B = 4 floats a rank, 256, 512, 1024.
  const auto small = plan_sizes(sweep(NcclBenchOp::all_gather, 8, 1024), 8);
  ASSERT_EQ(small.size(), 4u);
  EXPECT_EQ(small[0].size_bytes, 128u);
  EXPECT_EQ(small[0].count, 4u);
  EXPECT_EQ(small[3].size_bytes, 1024u);
  EXPECT_EQ(small[3].count, 32u);
  // 3 ranks, 1 MiB of float: 262144 / 3 = 87381.3 elements a rank, down to a multiple of 4:
  // 87380, so the size printed is 87380 x 3 x 4 = 1048560 bytes.
  const auto odd = plan_sizes(sweep(NcclBenchOp::reduce_scatter, kMiB, kMiB), 3);
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(odd[0].count, 87380u);
  EXPECT_EQ(odd[0].size_bytes, 1048560u);
  // bf16 rounds to 8 elements (16 B): 1 MiB / 2 B / 8 ranks = 65536, already a multiple.
  const auto bf16 = plan_sizes(sweep(NcclBenchOp::reduce_scatter, kMiB, kMiB, NcclBenchType::bfloat16), 8);
  ASSERT_EQ(bf16.size(), 1u);
  EXPECT_EQ(bf16[0].count, 65536u);
  EXPECT_EQ(bf16[0].size_bytes, kMiB);
}

TEST(NcclBenchSizes, StepFactorAndTheLastSize) {
  // 1K x 4 until 1M: 1K, 4K, 16K, 64K, 256K, 1M (the last equal to -e is kept).
  NcclBenchOptions o = sweep(NcclBenchOp::send_recv, 1024, kMiB);
  o.step_factor = 4;
  const auto sizes = plan_sizes(o, 2);
  ASSERT_EQ(sizes.size(), 6u);
  EXPECT_EQ(sizes.back().size_bytes, kMiB);
  // A -e far above -b never overflows the doubling.
  EXPECT_EQ(plan_sizes(sweep(NcclBenchOp::all_reduce, std::size_t{1} << 62, ~std::size_t{0}), 1).size(), 2u);
}

TEST(NcclBenchOptions, SizesParseAsNcclTestsTakesThem) {
  const std::pair<const char*, std::size_t> good[] = {
      {"8", 8}, {"64K", 65536}, {"1.5M", 1572864}, {"1G", std::size_t{1} << 30}, {"2g", std::size_t{2} << 30},
      {"1GiB", std::size_t{1} << 30}, {"16MB", 16 * kMiB}};
  for (const auto& [text, bytes] : good) {
    auto parsed = parse_size_bytes(text);
    ASSERT_TRUE(parsed) << text << ": " << parsed.error().message;
    EXPECT_EQ(*parsed, bytes) << text;
  }
  for (const char* bad : {"", "K", "1X", "1.5", "0", "-1", "1 G", "1GB2"}) {
    EXPECT_FALSE(parse_size_bytes(bad)) << bad;
  }
}

TEST(NcclBenchOptions, BadOptionsNameTheirFlag) {
  NcclBenchOptions o = sweep(NcclBenchOp::all_reduce, std::size_t{2} << 30, std::size_t{1} << 30);
  auto s = check_options(o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "-b/--min-bytes 2147483648 is larger than -e/--max-bytes 1073741824");
  o = sweep(NcclBenchOp::all_reduce, 8, 8);
  o.step_factor = 1;
  EXPECT_NE(check_options(o).error().message.find("-f/--step-factor"), std::string::npos);
  o.step_factor = 2;
  o.iters = 0;
  EXPECT_NE(check_options(o).error().message.find("-n/--iters"), std::string::npos);
  EXPECT_FALSE(parse_nccl_bench_op("alltoall"));
  EXPECT_FALSE(parse_nccl_bench_type("double"));
}

TEST(NcclBenchText, RowsAreNcclTestsRowsCharacterForCharacter) {
  // Lines 1 and 14 of s4_vp_4node_ag.txt (all_gather_perf): their printed numbers, printed again.
  const std::string path = "calibration/fabric/logs/s4_vp_4node_ag.txt";
  const NcclBenchOptions o = sweep(NcclBenchOp::all_gather, kMiB, std::size_t{8} << 30);
  NcclBenchRow first{{1048576, 8192}, {109.53e-6, 9.57e9, 9.27e9, 0}, {109.01e-6, 9.62e9, 9.32e9, 0}};
  EXPECT_EQ(format_row(o, first), line_of(path, 1) + "\n");
  NcclBenchRow last{{8589934592, 67108864}, {25720.7e-6, 333.97e9, 323.53e9, 0}, {25438.7e-6, 337.67e9, 327.12e9, 0}};
  EXPECT_EQ(format_row(o, last), line_of(path, 14) + "\n");
}

// A run's whole text as the tool prints it: `ranks` GPUs on one host, rows from first principles
// (algbw = size / time, busbw = algbw x factor).
std::string whole_log(const NcclBenchOptions& o, int ranks, const std::vector<double>& times_s, long in_place_wrong) {
  NcclBenchSetup setup;
  setup.hostname = "gpu-node-7";
  setup.pid = 4242;
  for (int d = 0; d < ranks; ++d) setup.devices.push_back({d, 0, 0x18 + d, 0, "NVIDIA H100 80GB HBM3"});
  setup.nccl_headers_code = setup.nccl_library_code = 22809;
  setup.cuda_runtime_version = setup.cuda_driver_version = 13000;
  setup.tool_commit = "205eeb8";
  setup.date_utc = "2025-06-01T12:00:00Z";
  std::string text = format_header(o, setup);
  std::vector<NcclBenchRow> rows;
  const auto sizes = plan_sizes(o, ranks);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double t = times_s[i];
    const double alg = static_cast<double>(sizes[i].size_bytes) / t;
    const double bus = alg * bus_bw_factor(nccl_tests_op(o.op), ranks);
    rows.push_back({sizes[i], {t, alg, bus, 0}, {t * 1.01, alg / 1.01, bus / 1.01, in_place_wrong}});
    text += format_row(o, rows.back());
  }
  return text + format_footer(o, rows);
}

TEST(NcclBenchText, TheReaderRecoversOpRanksVersionAndEveryRow) {
  // AllReduce on 8 GPUs of one node: busbw = algbw x 2 x 7/8.
  const NcclBenchOptions o = sweep(NcclBenchOp::all_reduce, 32 * kMiB, 256 * kMiB);
  const std::vector<double> times_s = {199.3e-6, 324.7e-6, 586.4e-6, 1112.5e-6};
  const std::string text = whole_log(o, 8, times_s, 0);
  auto logs = network::parse_nccl_tests_log("bench.txt", text, {});
  ASSERT_TRUE(logs) << logs.error().message << "\n" << text;
  ASSERT_EQ(logs->size(), 1u);
  const network::NcclTestsLog& log = logs->front();
  EXPECT_EQ(log.op, network::CollectiveOp::all_reduce);
  EXPECT_EQ(log.op_name, "all_reduce_perf");
  EXPECT_EQ(log.ranks, 8);
  EXPECT_EQ(log.nodes, 1);
  EXPECT_EQ(log.nccl_version, "2.28.9");
  EXPECT_EQ(log.gpu_name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(log.rows.size(), 4u);
  for (std::size_t i = 0; i < log.rows.size(); ++i) {
    const network::NcclTestsRow& r = log.rows[i];
    EXPECT_EQ(r.size_bytes, static_cast<double>((32 * kMiB) << i));
    EXPECT_EQ(r.count, static_cast<long>(((32 * kMiB) << i) / 4));
    EXPECT_EQ(r.type, "float");
    EXPECT_NEAR(r.out_of_place.time_s, times_s[i], 0.05e-6);  // printed to 0.1 us at most
    EXPECT_NEAR(r.out_of_place.bus_bw_bytes_per_s, r.size_bytes / times_s[i] * 1.75, 0.006e9);
    EXPECT_EQ(r.out_of_place.wrong, 0);
    ASSERT_TRUE(r.in_place);
    EXPECT_EQ(r.in_place->wrong, 0);
  }
  EXPECT_NE(text.find("# Out of bounds values : 0 OK\n"), std::string::npos);
  EXPECT_NE(text.find("# Avg bus bandwidth    : "), std::string::npos);
}

TEST(NcclBenchText, OneRankAndUncheckedTimingsReadBack) {
  // One rank: allgather moves nothing across a link, busbw = algbw x 0.
  const NcclBenchOptions ag = sweep(NcclBenchOp::all_gather, kMiB, 2 * kMiB);
  auto logs = network::parse_nccl_tests_log("ag.txt", whole_log(ag, 1, {20e-6, 30e-6}, 0), {});
  ASSERT_TRUE(logs) << logs.error().message;
  EXPECT_EQ(logs->front().op, network::CollectiveOp::all_gather);
  EXPECT_EQ(logs->front().ranks, 1);
  EXPECT_EQ(logs->front().rows[1].out_of_place.bus_bw_bytes_per_s, 0);
  // sendrecv in place is not checked: "N/A", read as -1.
  const NcclBenchOptions sr = sweep(NcclBenchOp::send_recv, kMiB, kMiB);
  const std::string text = whole_log(sr, 2, {40e-6}, -1);
  EXPECT_NE(text.find("    N/A\n"), std::string::npos);
  logs = network::parse_nccl_tests_log("sr.txt", text, {});
  ASSERT_TRUE(logs) << logs.error().message;
  EXPECT_EQ(logs->front().op, network::CollectiveOp::send_recv);
  EXPECT_EQ(logs->front().rows[0].in_place->wrong, -1);
}

TEST(NcclBenchText, WrongElementsFailTheFooter) {
  const NcclBenchOptions o = sweep(NcclBenchOp::all_reduce, kMiB, 2 * kMiB);
  const std::string text = whole_log(o, 2, {20e-6, 30e-6}, 3);
  EXPECT_NE(text.find("# Out of bounds values : 2 FAILED\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace commbound::kernels
