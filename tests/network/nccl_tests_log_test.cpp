// The nccl-tests log reader: every shipped real log, the header layouts nccl-tests prints, and the
// ways a log can be broken. Rows in the synthetic logs are written from first principles: algbw =
// size / time, busbw = algbw x (n-1)/n (AllGather) or 2(n-1)/n (AllReduce), as nccl-tests defines.
#include "network/nccl_tests_log.hpp"

#include "core/nccl_tests_text.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace commbound::network {
namespace {

// One printed row: time in us, bandwidths in GB/s with two decimals, as nccl-tests prints them.
std::string printed_row(double size_bytes, double time_us, double bus_factor, bool redop_root, bool in_place) {
  const double alg = size_bytes / (time_us * 1e-6) / 1e9;
  std::string row = fmt::format("{:>12.0f} {:>12.0f} {:>8}", size_bytes, size_bytes / 4, "float");
  if (redop_root) row += fmt::format(" {:>6} {:>6}", "sum", -1);
  row += fmt::format(" {:>8.2f} {:>7.2f} {:>7.2f} {:>6}", time_us, alg, alg * bus_factor, 0);
  if (in_place) row += fmt::format(" {:>8.2f} {:>7.2f} {:>7.2f} {:>6}", time_us, alg, alg * bus_factor, 0);
  return row + "\n";
}

const std::string kNewHeader =
    "# nccl-tests version 2.14.1 nccl-headers=22602 nccl-library=22602\n"
    "# Collective test starting: all_gather_perf\n"
    "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  41873 on    node-a device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  41874 on    node-a device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    "#  Rank  2 Group  0 Pid  51873 on    node-b device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  3 Group  0 Pid  51874 on    node-b device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    "#\n"
    "#                                                              out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";

TEST(NcclTestsLog, ReadsTheNewLayoutWithItsHeader) {
  // AllGather on 4 ranks: busbw = algbw x 3/4.
  std::string text = kNewHeader;
  text += "node-a:41873:41873 [0] NCCL INFO comm 0x55 rank 0 nranks 4 - Init COMPLETE\n";  // NCCL_DEBUG noise
  text += printed_row(1 << 20, 50.0, 0.75, true, true);
  text += printed_row(4 << 20, 100.0, 0.75, true, true);
  text += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 30.1\n";
  auto logs = parse_nccl_tests_log("new.log", text, {});
  ASSERT_TRUE(logs) << logs.error().message;
  ASSERT_EQ(logs->size(), 1u);
  const NcclTestsLog& log = logs->front();
  EXPECT_EQ(log.op, CollectiveOp::all_gather);
  EXPECT_EQ(log.ranks, 4);
  EXPECT_EQ(log.nodes, 2);
  EXPECT_EQ(log.gpus_per_node(), 2);
  EXPECT_EQ(log.nccl_version, "2.26.2");
  EXPECT_EQ(log.gpu_name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(log.rows[1].size_bytes, 4 << 20);
  EXPECT_DOUBLE_EQ(log.rows[1].out_of_place.time_s, 100e-6);
  ASSERT_TRUE(log.rows[1].in_place);
  EXPECT_NEAR(log.rows[1].in_place->bus_bw_bytes_per_s, (4 << 20) / 100e-6 * 0.75, 0.006e9);
}

TEST(NcclTestsLog, ReadsTheOldLayoutWithoutRedopAndRoot) {
  // nccl-tests before 2.10 printed AllGather rows without redop/root and an 'error' value.
  const std::string text =
      "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
      "#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "     1048576         32768     float    40.00   26.21   22.94  0e+00    40.00   26.21   22.94  0e+00\n";
  auto logs = parse_nccl_tests_log("old_all_gather_perf.log", text, {.nodes = 1, .gpus_per_node = 8});
  ASSERT_TRUE(logs) << logs.error().message;
  EXPECT_EQ(logs->front().op, CollectiveOp::all_gather);  // from the file name
  EXPECT_EQ(logs->front().ranks, 8);
  EXPECT_EQ(logs->front().rows.front().out_of_place.wrong, 0);
}

TEST(NcclTestsLog, ReadsOneTimingGroupAndNotAvailableWrong) {
  // -c 0 prints N/A for #wrong; AllReduce on 8 ranks: busbw = algbw x 14/8.
  std::string row = printed_row(1 << 20, 20.0, 14.0 / 8.0, true, false);
  row.replace(row.rfind('0'), 1, "N/A");
  auto logs = parse_nccl_tests_log("x.log", row, {.op = CollectiveOp::all_reduce, .nodes = 1, .gpus_per_node = 8});
  ASSERT_TRUE(logs) << logs.error().message;
  EXPECT_FALSE(logs->front().rows.front().in_place);
  EXPECT_EQ(logs->front().rows.front().out_of_place.wrong, -1);
}

TEST(NcclTestsLog, ReadsEveryShippedRealLog) {
  // The shipped logs print rows >= 1 MiB up to 8 GiB: 14 sizes, each with in-place columns.
  for (const char* name : {"s1_dgxc_1node_ar.txt", "s2a_309_2node_qoofyk.txt", "s2e_309_4node_gjaion.txt",
                           "s4_vp_4node_ag.txt", "s4_vp_4node_ar.txt"}) {
    const std::string path = std::string("calibration/fabric/logs/") + name;
    const int nodes = name[1] - '0' == 1 ? 1 : std::string(name).find("4node") != std::string::npos ? 4 : 2;
    const auto op = std::string(name).find("_ag") != std::string::npos ? CollectiveOp::all_gather : CollectiveOp::all_reduce;
    auto logs = read_nccl_tests_log(path, {.op = op, .nodes = nodes, .gpus_per_node = 8});
    ASSERT_TRUE(logs) << logs.error().message;
    EXPECT_EQ(logs->front().rows.size(), 14u) << path;
    EXPECT_DOUBLE_EQ(logs->front().rows.front().size_bytes, 1 << 20) << path;
    EXPECT_DOUBLE_EQ(logs->front().rows.back().size_bytes, 8589934592.0) << path;
  }
  auto ag = read_nccl_tests_log("calibration/fabric/logs/s4_vp_4node_ag.txt", {.nodes = 4, .gpus_per_node = 8});
  ASSERT_TRUE(ag);
  EXPECT_EQ(ag->front().op, CollectiveOp::all_gather);
  EXPECT_DOUBLE_EQ(ag->front().rows[5].out_of_place.time_s, 308.95e-6);  // 32 MiB, as printed
}

TEST(NcclTestsLog, NumbersInExponentFormAgreeWithinTheirPrintedDigits) {
  // One rank's in-place AllReduce of 1 GiB moves nothing: 0.61 us, 1.76e6 GB/s, which nccl-tests
  // (getFloatStr) and commbound-nccl-bench print in 6 characters as "2e+06", half a unit of which is
  // 5e5 GB/s. size / time from the printed time is 1073741824 / 0.61e-6 = 1.760e6 GB/s: within
  // that rounding, so the row is read; busbw on one rank is 0.
  ::commbound::NcclTestsRow printed{.size_bytes = 1u << 30, .count = (1u << 30) / 4};
  const double alg = (1u << 30) / 0.61e-6;
  printed.out_of_place = {
      .time_s = 504.19e-6, .alg_bw_bytes_per_s = (1u << 30) / 504.19e-6, .bus_bw_bytes_per_s = 0, .wrong = 0};
  printed.in_place = {.time_s = 0.61e-6, .alg_bw_bytes_per_s = alg, .bus_bw_bytes_per_s = 0, .wrong = 0};
  const std::string row = ::commbound::nccl_tests_row(printed);
  ASSERT_NE(row.find("2e+06"), std::string::npos) << row;
  auto logs = parse_nccl_tests_log("x.log", row, {.op = CollectiveOp::all_reduce, .nodes = 1, .gpus_per_node = 1});
  ASSERT_TRUE(logs) << logs.error().message;
  EXPECT_DOUBLE_EQ(logs->front().rows.front().in_place->alg_bw_bytes_per_s, 2e15);
  // The same exponent form off by more than its half unit is still an edited row: 5e+06 against 1.76e6.
  std::string edited = row;
  edited.replace(edited.find("2e+06"), 5, "5e+06");
  auto bad = parse_nccl_tests_log("x.log", edited, {.op = CollectiveOp::all_reduce, .nodes = 1, .gpus_per_node = 1});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("algbw"), std::string::npos) << bad.error().message;
}

struct Broken {
  const char* what;
  std::string text;
  const char* says;
};

TEST(NcclTestsLog, RejectsABrokenLogWithItsLine) {
  const LogFacts ar8{.op = CollectiveOp::all_reduce, .nodes = 1, .gpus_per_node = 8};
  const std::string good = printed_row(1 << 20, 20.0, 14.0 / 8.0, true, true);
  const std::vector<Broken> cases = {
      {"truncated row", "# header\n" + good.substr(0, 60) + "\n", "x.log:2: not an nccl-tests row"},
      {"edited busbw", "\n" + printed_row(1 << 20, 20.0, 1.0, true, true), "x.log:2: busbw"},
      {"edited time", good.substr(0, good.find("20.00")) + "40.00" + good.substr(good.find("20.00") + 5),
       "x.log:1: algbw"},
      {"not a number", "     1048576        262144     float     sum      -1     nan   52.43   91.75      0\n",
       "x.log:1: not an nccl-tests row"},
      {"negative time", "     1048576        262144     float     sum      -1   -20.00   52.43   91.75      0\n",
       "x.log:1: not an nccl-tests row"},
      {"no rows", "# nothing here\n", "x.log: no nccl-tests rows"},
      {"binary", std::string("\x7f" "ELF\0\0", 6), "x.log: binary data"},
  };
  for (const Broken& c : cases) {
    auto logs = parse_nccl_tests_log("x.log", c.text, ar8);
    ASSERT_FALSE(logs) << c.what;
    EXPECT_EQ(logs.error().message.rfind(c.says, 0), 0u) << c.what << ": " << logs.error().message;
  }
}

// Numbers in header lines past what their type holds: an error naming the line and the number, not
// an exception (a '#  Rank' line past int, an nccl-library code past long).
TEST(NcclTestsLog, HeaderNumbersPastTheirTypeAreErrorsNamingTheLine) {
  const std::string row = printed_row(1 << 20, 50.0, 0.75, true, true);
  std::string rank_line = kNewHeader;
  rank_line.replace(rank_line.find("Rank  2 "), 8, "Rank 99999999999 ");
  auto rank = parse_nccl_tests_log("new.log", rank_line + row, {});
  ASSERT_FALSE(rank);
  EXPECT_EQ(rank.error().message,
            "new.log:8: '#  Rank 99999999999': the rank is out of range (from -2147483648 to 2147483647)");
  std::string library = kNewHeader;
  library.replace(library.find("nccl-library=22602"), 18, "nccl-library=99999999999999999999");
  auto version = parse_nccl_tests_log("new.log", library + row, {});
  ASSERT_FALSE(version);
  EXPECT_EQ(version.error().message.rfind("new.log:1: nccl-library=99999999999999999999: out of range (from ", 0), 0u)
      << version.error().message;
}

// Found by fuzzing: a '#wrong' past a long (1e30) was converted to long, which is undefined
// behaviour; it reads as a count of wrong elements, as large as a long holds.
TEST(NcclTestsLog, WrongCountPastALongIsStillWrong) {
  std::string row = printed_row(1 << 20, 20.0, 14.0 / 8.0, true, false);
  row.replace(row.rfind('0'), 1, "1e30");
  auto logs = parse_nccl_tests_log("x.log", row, {.op = CollectiveOp::all_reduce, .nodes = 1, .gpus_per_node = 8});
  ASSERT_TRUE(logs) << logs.error().message;
  EXPECT_GE(logs->front().rows.front().out_of_place.wrong, 1'000'000'000'000'000'000L);
}

// A line of millions of characters (a '#  Rank' line's GPU name, a word before '_perf', the digits
// of an NCCL version) overflowed the stack in std::regex, which recurses per character it matches:
// the reader matches only the first characters of a line, and reads the log around them.
TEST(NcclTestsLog, MillionCharacterLinesAreRead) {
  const std::string run(1 << 20, 'a');
  std::string text = kNewHeader;
  text.replace(text.find("NVIDIA H100 80GB HBM3"), 21, "NVIDIA H100 " + run);
  text += "# " + run + "_perf\n";
  text += "node-a:1:1 [0] NCCL INFO NCCL version " + std::string(1 << 20, '2') + "\n";
  text += printed_row(1 << 20, 50.0, 0.75, true, true);
  auto logs = parse_nccl_tests_log("long.log", text, {});
  ASSERT_TRUE(logs) << logs.error().message;
  EXPECT_EQ(logs->front().op, CollectiveOp::all_gather);
  EXPECT_EQ(logs->front().ranks, 4);
  EXPECT_EQ(logs->front().rows.size(), 1u);
}

TEST(NcclTestsLog, AsksForWhatTheLogDoesNotSay) {
  const std::string row = printed_row(1 << 20, 20.0, 14.0 / 8.0, true, true);
  auto no_op = parse_nccl_tests_log("run.log", row, {.nodes = 1, .gpus_per_node = 8});
  ASSERT_FALSE(no_op);
  EXPECT_NE(no_op.error().message.find("which collective"), std::string::npos);
  auto no_nodes = parse_nccl_tests_log("run.log", row, {.op = CollectiveOp::all_reduce});
  ASSERT_FALSE(no_nodes);
  EXPECT_NE(no_nodes.error().message.find("how many nodes"), std::string::npos);
  // The header's 2 hosts contradict a given 4.
  auto wrong = parse_nccl_tests_log("new.log", kNewHeader + printed_row(1 << 20, 50.0, 0.75, true, true), {.nodes = 4});
  ASSERT_FALSE(wrong);
}

// The names themselves are core/nccl_tests_op's (tested there); here, that each lands
// on its own CollectiveOp.
TEST(NcclTestsLog, NamesTheOpFromBinaryOrFileName) {
  for (CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter, CollectiveOp::all_reduce,
                          CollectiveOp::send_recv, CollectiveOp::all_to_all}) {
    EXPECT_EQ(op_from_name(nccl_tests_binary(nccl_tests_op(op))), op) << to_string(op);
    EXPECT_EQ(op_from_name(to_string(op)), op) << to_string(op);
  }
  EXPECT_EQ(op_from_name("logs/s4_vp_4node_ag.txt"), CollectiveOp::all_gather);
  EXPECT_EQ(op_from_name("h100_a2a_2node.txt"), CollectiveOp::all_to_all);
  EXPECT_EQ(op_from_name("s2a_309_2node_qoofyk.txt"), std::nullopt);
}

// A file of `text` in the test's temporary folder; its path.
std::string temp_file(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(NcclTestsLogs, ReadsEveryLogOfTheShippedManifest) {
  // calibration/fabric/logs/logs.toml: eight logs without their headers, 14 rows each (1 MiB .. 8
  // GiB), what the header would say written in the manifest; then two one-node logs with their
  // headers, 10 rows each (32 MiB .. 16 GiB).
  auto logs = read_nccl_tests_logs({"calibration/fabric/logs/logs.toml"}, {});
  ASSERT_TRUE(logs) << logs.error().message;
  ASSERT_EQ(logs->size(), 10u);
  for (std::size_t i = 0; i < logs->size(); ++i) {
    EXPECT_EQ((*logs)[i].rows.size(), i < 8 ? 14u : 10u) << (*logs)[i].path;
    EXPECT_EQ((*logs)[i].gpus_per_node(), 8) << (*logs)[i].path;
  }
  EXPECT_EQ((*logs)[9].op, CollectiveOp::reduce_scatter);
  EXPECT_EQ((*logs)[9].nccl_version, "2.29.2");
  const NcclTestsLog& first = logs->front();
  EXPECT_EQ(first.path, "calibration/fabric/logs/s1_dgxc_1node_ar.txt");  // relative to the manifest
  EXPECT_EQ(first.op, CollectiveOp::all_reduce);
  EXPECT_EQ(first.nodes, 1);
  EXPECT_EQ(first.nccl_version, "");
  EXPECT_EQ(first.algorithm, std::nullopt);
  EXPECT_EQ((*logs)[1].nccl_version, "2.26.2");
  EXPECT_EQ((*logs)[5].path, "calibration/fabric/logs/s2g_309_2node_gjaion_ring_ctas24.txt");
  EXPECT_EQ((*logs)[5].algorithm, Algorithm::ring);  // algorithm = "ring": NCCL_ALGO=Ring
  EXPECT_EQ((*logs)[6].op, CollectiveOp::all_gather);
  EXPECT_EQ((*logs)[6].ranks, 32);
}

TEST(NcclTestsLogs, ReadsLogsAndManifestsInTheirOrder) {
  // A plain log (the facts given apply to it) after a manifest naming another (its own facts).
  const std::string ag = temp_file("logs_ag_2node.txt", printed_row(1 << 20, 50.0, 15.0 / 16.0, true, true));
  const std::string manifest = temp_file("logs_manifest.toml", "[[log]]\nfile = \"logs_ag_2node.txt\"\n"
                                                               "op = \"all_gather\"\nnodes = 2\ngpus_per_node = 8\n");
  const std::string ar = temp_file("logs_plain.log", printed_row(1 << 20, 20.0, 14.0 / 8.0, true, true));
  auto logs = read_nccl_tests_logs({manifest, ar}, {.op = CollectiveOp::all_reduce, .nodes = 1, .gpus_per_node = 8});
  ASSERT_TRUE(logs) << logs.error().message;
  ASSERT_EQ(logs->size(), 2u);
  EXPECT_EQ((*logs)[0].path, ag);
  EXPECT_EQ((*logs)[0].op, CollectiveOp::all_gather);
  EXPECT_EQ((*logs)[0].ranks, 16);
  EXPECT_EQ((*logs)[1].path, ar);
  EXPECT_EQ((*logs)[1].op, CollectiveOp::all_reduce);
  EXPECT_EQ((*logs)[1].ranks, 8);
}

struct BadManifest {
  const char* what;
  std::string text;
  std::vector<const char*> says;  // each somewhere in the error
};

TEST(NcclTestsLogs, ManifestErrorsNameTheFileTheTableAndTheKey) {
  temp_file("bad_manifest_log.txt", printed_row(1 << 20, 20.0, 14.0 / 8.0, true, true));
  const std::string entry = "[[log]]\nfile = \"bad_manifest_log.txt\"\nnodes = 1\ngpus_per_node = 8\n";
  const std::vector<BadManifest> cases = {
      {"no [[log]]", "title = \"logs\"\n", {"bad_manifest.toml:1:", "log: missing"}},
      {"an op we do not model", entry + "op = \"broadcast\"\n", {"bad_manifest.toml:", "log[0].op", "broadcast"}},
      {"a typo", entry + "op = \"all_reduce\"\nsorce = \"x\"\n", {"bad_manifest.toml:", "log[0].sorce", "unknown key"}},
      {"no such algorithm", entry + "op = \"all_reduce\"\nalgorithm = \"butterfly\"\n",
       {"bad_manifest.toml:", "log[0].algorithm", "butterfly"}},
      {"a missing file", "[[log]]\nfile = \"absent.txt\"\nop = \"all_reduce\"\nnodes = 1\ngpus_per_node = 8\n",
       {"absent.txt: cannot be read"}},
  };
  for (const BadManifest& c : cases) {
    auto logs = read_nccl_tests_logs({temp_file("bad_manifest.toml", c.text)}, {});
    ASSERT_FALSE(logs) << c.what;
    for (const char* part : c.says) {
      EXPECT_NE(logs.error().message.find(part), std::string::npos) << c.what << ": " << logs.error().message;
    }
    // One line that names the file once.
    const std::string& m = logs.error().message;
    EXPECT_EQ(m.find("bad_manifest.toml"), m.rfind("bad_manifest.toml")) << c.what << ": " << m;
  }
  auto none = read_nccl_tests_logs({}, {});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "no nccl-tests log given");
}

}  // namespace
}  // namespace commbound::network
