// commbound-nccl-bench's command line: help, bad arguments (exit 2, one line naming the problem),
// nothing the user gave overwritten without --force, and a run that either works (with a GPU) or
// says in one line that there is none (exit 1), never a crash.
#include "kernels/device/cuda_support.hpp"

#include "tests/support/run_command.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using Result = commbound::testing::CommandRun;

Result run(const std::string& args) { return commbound::testing::run_command(std::string(COMMBOUND_NCCL_BENCH_BIN) + " " + args); }

long lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TEST(NcclBenchCli, HelpTeachesConventionsAndTheFit) {
  const Result r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* taught : {"--op OP", "-b,--min-bytes", "busbw", "2(n-1)/n", "commbound fit-fabric", "commbound validate"}) {
    EXPECT_NE(r.out.find(taught), std::string::npos) << taught;
  }
}

TEST(NcclBenchCli, BadInputIsOneLineAndExit2) {
  struct Case {
    const char* args;
    const char* says;
  };
  const Case cases[] = {
      {"--op alltoall", "--op alltoall: not allreduce, allgather, reducescatter or sendrecv"},
      {"-b 2G -e 1G", "-b/--min-bytes 2147483648 is larger than -e/--max-bytes 1073741824"},
      {"-b 1X", "-b/--min-bytes 1X: not a size in bytes"},
      {"--dtype double", "--dtype double: not float, half or bfloat16"},
      {"-n 0", "--iters"},
      {"-f 1", "--step-factor"},
      {"--frobnicate", "--frobnicate"},
  };
  for (const Case& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.out;
    EXPECT_EQ(lines(r.out), 1) << c.args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("commbound-nccl-bench: ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << ": " << r.out;
  }
}

TEST(NcclBenchCli, ExistingOutputIsNotOverwrittenWithoutForce) {
  const auto out = std::filesystem::temp_directory_path() / "commbound_nccl_bench_existing.txt";
  std::ofstream(out) << "# mine\n";
  const Result r = run("--gpus 1 -b 1M -e 1M --out " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(out.string() + " exists; pass --force"), std::string::npos) << r.out;
  EXPECT_EQ(commbound::testing::file_text(out), "# mine\n");
  std::filesystem::remove(out);
}

TEST(NcclBenchCli, RunsWithAGpuOrSaysThereIsNone) {
  const auto out = std::filesystem::temp_directory_path() / "commbound_nccl_bench_one_row.txt";
  std::filesystem::remove(out);
  const Result r = run("--gpus 1 -b 1M -e 1M -w 1 -n 2 --out " + out.string());
  if (commbound::kernels::cuda_device_count() == 0) {
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_EQ(lines(r.out), 1) << r.out;
    EXPECT_EQ(r.out.rfind("commbound-nccl-bench: no CUDA device", 0), 0u) << r.out;
    EXPECT_FALSE(std::filesystem::exists(out));  // nothing half-written
  } else {
    EXPECT_EQ(r.exit_code, 0) << r.out;
    const std::string text = commbound::testing::file_text(out);
    EXPECT_NE(text.find("# Collective test starting: all_reduce_perf"), std::string::npos) << text;
    EXPECT_NE(text.find("     1048576        262144     float     sum      -1"), std::string::npos) << text;
    EXPECT_NE(text.find("# Out of bounds values : 0 OK"), std::string::npos) << text;
    std::filesystem::remove(out);
  }
}

}  // namespace
