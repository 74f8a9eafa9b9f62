// commbound-nccl-bench on real GPUs: allreduce and allgather over 1 MiB .. 16 MiB on one GPU and,
// where there are several, on all of them; the output file read back by the nccl-tests reader with
// nothing given beside it must say which op, how many ranks on one node, and hold every size
// asked for, with right data, positive times and busbw = algbw x nccl-tests' factor.
// Skips itself without a GPU.
#include "kernels/device/cuda_support.hpp"
#include "network/nccl_tests_log.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>

namespace commbound::kernels {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

class NcclBenchGpu : public ::testing::Test {
protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

// Runs the tool; its exit code, with stdout and stderr in `out`.
int run(const std::string& args, std::string& out) {
  const std::string cmd = std::string(COMMBOUND_NCCL_BENCH_BIN) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Case {
  const char* op;
  network::CollectiveOp expected;
  bool gathered;  // allgather: the printed size is the gathered output, count each rank's share
};

void bench_and_read_back(const Case& c, int gpus) {
  SCOPED_TRACE(std::string(c.op) + " on " + std::to_string(gpus) + " GPUs");
  const auto path = std::filesystem::temp_directory_path() / ("commbound_nccl_bench_" + std::string(c.op) + ".txt");
  std::string out;
  const int code = run(std::string("--op ") + c.op + " --gpus " + std::to_string(gpus) +
                           " -b 1M -e 16M -w 2 -n 5 --force --out " + path.string(), out);
  ASSERT_EQ(code, 0) << out;
  auto logs = network::read_nccl_tests_log(path.string(), {});
  ASSERT_TRUE(logs) << logs.error().message;
  ASSERT_EQ(logs->size(), 1u);
  const network::NcclTestsLog& log = logs->front();
  EXPECT_EQ(log.op, c.expected);
  EXPECT_EQ(log.ranks, gpus);
  EXPECT_EQ(log.nodes, 1);
  EXPECT_FALSE(log.nccl_version.empty());
  EXPECT_FALSE(log.gpu_name.empty());

  // nccl-tests' busbw factors: allreduce 2(n-1)/n, allgather (n-1)/n.
  const double n = gpus;
  const double factor = c.gathered ? (n - 1) / n : 2 * (n - 1) / n;
  ASSERT_EQ(log.rows.size(), 5u);  // 1, 2, 4, 8, 16 MiB
  for (std::size_t i = 0; i < log.rows.size(); ++i) {
    const network::NcclTestsRow& r = log.rows[i];
    const std::size_t asked = kMiB << i;
    // allgather: each rank's share of floats rounded down to a multiple of 4 (16 bytes).
    const std::size_t count = c.gathered ? asked / 4 / static_cast<std::size_t>(gpus) / 4 * 4 : asked / 4;
    const std::size_t size = c.gathered ? count * 4 * static_cast<std::size_t>(gpus) : asked;
    EXPECT_EQ(r.size_bytes, static_cast<double>(size)) << "row " << i;
    EXPECT_EQ(r.count, static_cast<long>(count)) << "row " << i;
    EXPECT_EQ(r.type, "float");
    ASSERT_TRUE(r.in_place);
    for (const network::NcclTestsRow::Timing* t : {&r.out_of_place, &*r.in_place}) {
      EXPECT_EQ(t->wrong, 0) << "row " << i;
      EXPECT_GT(t->time_s, 0);
      // Each bandwidth is printed to 0.01 GB/s: busbw within 0.005 x (1 + factor) GB/s of algbw x factor.
      EXPECT_NEAR(t->bus_bw_bytes_per_s, t->alg_bw_bytes_per_s * factor, 0.005e9 * (1 + factor) + 1e-3)
          << "row " << i;
    }
  }
  std::filesystem::remove(path);
}

const Case kCases[] = {{"allreduce", network::CollectiveOp::all_reduce, false},
                       {"allgather", network::CollectiveOp::all_gather, true}};

TEST_F(NcclBenchGpu, OneGpuIsAOneRankCommunicator) {
  for (const Case& c : kCases) bench_and_read_back(c, 1);
}

TEST_F(NcclBenchGpu, AllGpusOfTheNode) {
  const int gpus = cuda_device_count();
  if (gpus < 2) GTEST_SKIP() << "one GPU: covered by OneGpuIsAOneRankCommunicator";
  for (const Case& c : kCases) bench_and_read_back(c, gpus);
}

}  // namespace
}  // namespace commbound::kernels
