// NVML readings, the power sampler, the communication-like copy kernel and the contention and power
// measurements, on the GPU. Sanity bounds, not fits: the numbers themselves go to calibration data.
// Skips itself without a GPU; the NVML tests also skip when NVML cannot be opened.
#include "kernels/device/contention.hpp"
#include "kernels/device/cuda_support.hpp"
#include "kernels/device/power_phases.hpp"
#include "kernels/host/power_sampler.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace commbound::kernels {
namespace {

constexpr int kDevice = 0;

// NVML on the board behind CUDA device kDevice.
Expected<Nvml> open_nvml() {
  if (Status s = cuda_check(cudaSetDevice(kDevice), "cudaSetDevice"); !s) return s.error();
  char pci_bus_id[64] = {};
  if (Status s = cuda_check(cudaDeviceGetPCIBusId(pci_bus_id, sizeof pci_bus_id, kDevice), "cudaDeviceGetPCIBusId"); !s) {
    return s.error();
  }
  return Nvml::open_pci_bus_id(pci_bus_id);
}

class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

class NvmlGpuTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    auto nvml = open_nvml();
    if (!nvml) GTEST_SKIP() << "NVML unavailable: " << nvml.error().message;
  }
};

// Any datacenter GPU with its context open draws more than 10 W and, averaged over NVML's window,
// no more than the limit it enforces.
TEST_F(NvmlGpuTest, ReadsPowerBetweenTenWattsAndTheLimit) {
  auto nvml = open_nvml();
  ASSERT_TRUE(nvml) << nvml.error().message;
  auto limit_w = nvml->power_limit_w();
  auto power_w = nvml->power_w();
  auto clock_mhz = nvml->sm_clock_mhz();
  ASSERT_TRUE(limit_w) << limit_w.error().message;
  ASSERT_TRUE(power_w) << power_w.error().message;
  ASSERT_TRUE(clock_mhz) << clock_mhz.error().message;
  EXPECT_GE(*power_w, 10.0);
  EXPECT_LE(*power_w, *limit_w);
  EXPECT_GT(*clock_mhz, 0.0);
  EXPECT_FALSE(nvml->driver_version().empty());
}

// Sampling at t = 0, 20, 40, ... ms for 0.5 s gives 26 samples; allow for a slow NVML call or a
// late wake-up skipping ticks, never more than one per period.
TEST_F(NvmlGpuTest, SamplerTakesOneSamplePerPeriod) {
  auto nvml = open_nvml();
  ASSERT_TRUE(nvml) << nvml.error().message;
  const double period_s = 0.02, duration_s = 0.5;
  PowerSampler sampler(*nvml, period_s);
  ASSERT_TRUE(sampler.start());
  std::this_thread::sleep_for(std::chrono::duration<double>(duration_s));
  const Status stopped = sampler.stop();
  ASSERT_TRUE(stopped) << stopped.error().message;
  const std::vector<PowerSample> samples = sampler.samples();
  const double expected = duration_s / period_s + 1;
  EXPECT_GE(static_cast<double>(samples.size()), 0.6 * expected);
  EXPECT_LE(static_cast<double>(samples.size()), expected + 1);
  for (std::size_t i = 1; i < samples.size(); ++i) {
    EXPECT_GE(samples[i].time_s - samples[i - 1].time_s, 0.5 * period_s) << "sample " << i;
  }
  const PowerSummary summary = sampler.summary();
  EXPECT_EQ(summary.samples, static_cast<int>(samples.size()));
  EXPECT_GE(summary.min_power_w, 10.0);
}

// Fresh random data copied twice over a destination poisoned first, with a tail that is not a
// multiple of the unrolled stride; every one of the 24 blocks reports a distinct SM (the block
// scheduler spreads blocks over idle SMs before doubling up).
TEST_F(GpuTest, CommCopyCopiesExactlyOnCommSmsBlocks) {
  const int blocks = 24;
  const std::size_t words = (4u << 20) / sizeof(std::uint32_t) + 4 * 37;  // 4 MiB + 37 vectors of 16 B
  std::mt19937 rng(7);
  std::vector<std::uint32_t> src_host(words), got(words);
  for (auto& w : src_host) w = rng();
  auto src = DeviceBuffer<std::uint32_t>::create(words);
  auto dst = DeviceBuffer<std::uint32_t>::create(words);
  auto sm_ids = DeviceBuffer<unsigned int>::create(blocks);
  ASSERT_TRUE(src && dst && sm_ids);
  ASSERT_TRUE(src->upload(src_host.data()) && dst->fill_bytes(0xff) && sm_ids->fill_bytes(0xff));

  CommCopyParams params;
  params.src = src->get();
  params.dst = dst->get();
  params.bytes = src->bytes();
  params.blocks = blocks;
  params.iterations = 2;
  params.block_sm_ids = sm_ids->get();
  // The legacy default stream: ordered after the memsets above.
  const Status launched = launch_comm_copy(params, nullptr);
  ASSERT_TRUE(launched) << launched.error().message;
  ASSERT_TRUE(cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
  ASSERT_TRUE(dst->download(got.data()));
  for (std::size_t i = 0; i < words; ++i) ASSERT_EQ(got[i], src_host[i]) << "word " << i;

  int sm_count = 0;
  ASSERT_TRUE(cuda_check(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, kDevice), "sm count"));
  std::vector<unsigned int> ids(blocks);
  ASSERT_TRUE(sm_ids->download(ids.data()));
  for (unsigned int id : ids) ASSERT_LT(id, static_cast<unsigned int>(sm_count)) << "a block did not report";
  EXPECT_EQ(std::set<unsigned int>(ids.begin(), ids.end()).size(), static_cast<std::size_t>(blocks));
}

TEST_F(GpuTest, CommCopyRejectsBytesNotMultipleOf16) {
  auto buf = DeviceBuffer<std::uint8_t>::create(64);
  ASSERT_TRUE(buf);
  CommCopyParams params;
  params.src = buf->get();
  params.dst = buf->get() + 32;
  params.bytes = 24;
  EXPECT_FALSE(launch_comm_copy(params, nullptr));
}

// A memset victim beside a copy on 24 SMs: both stream HBM, so the victim cannot get faster (a
// factor below ~0.9 would mean the two timings are not comparable).
TEST_F(GpuTest, ContentionFactorOfMemsetVictimIsAtLeastOne) {
  auto victim_buf = DeviceBuffer<std::uint8_t>::create(16u << 20);
  ASSERT_TRUE(victim_buf);
  auto victim = [&](cudaStream_t stream) {
    return cuda_check(cudaMemsetAsync(victim_buf->get(), 0, victim_buf->bytes(), stream), "cudaMemsetAsync");
  };
  ContentionOptions options;
  options.device = kDevice;
  options.comm_sms = 24;
  options.comm_buffer_bytes = 64u << 20;
  options.victim_warmup_runs = 2;
  options.victim_runs = 10;
  auto r = measure_contention(options, victim);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_GT(r->alone_ms, 0.0);
  EXPECT_GE(r->overlapped_runs, options.victim_runs);
  EXPECT_GE(r->factor, 0.9);
  EXPECT_EQ(r->comm_sms, 24);
  EXPECT_GT(r->comm_GBps_alone, 0.0);
  EXPECT_GT(r->comm_GBps_overlapped, 0.0);
}

// A paced copy holds its target: it cannot run ahead of the schedule (each thread waits for its
// share of the rate), and 24 SMs copy far faster than 100 GB/s unpaced (hundreds of GB/s), so it
// should not fall behind by more than the last group's wait and the launch.
TEST_F(GpuTest, PacedCopyHoldsItsTargetRate) {
  ContentionOptions options;
  options.device = kDevice;
  options.comm_sms = 24;
  options.comm_target_GBps = 100;
  options.comm_buffer_bytes = 64u << 20;
  options.victim_runs = 5;
  auto victim_buf = DeviceBuffer<std::uint8_t>::create(16u << 20);
  ASSERT_TRUE(victim_buf);
  auto r = measure_contention(options, [&](cudaStream_t stream) {
    return cuda_check(cudaMemsetAsync(victim_buf->get(), 0, victim_buf->bytes(), stream), "cudaMemsetAsync");
  });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_LE(r->comm_GBps_alone, 100 * 1.02);
  EXPECT_GE(r->comm_GBps_alone, 100 * 0.9);
}

TEST_F(GpuTest, ContentionRejectsMoreCommSmsThanTheDeviceHas) {
  ContentionOptions options;
  options.comm_sms = 100000;
  auto r = measure_contention(options, [](cudaStream_t) -> Status { return Ok{}; });
  EXPECT_FALSE(r);
}

// The four phases, short, with two memsets of different sizes standing in for the compute and the
// memory-bound launch: every phase sampled after its ramp-up, powers within the board limit, and
// the mixed phase's stretches balanced near half and half by construction.
TEST_F(NvmlGpuTest, PowerPhasesSampleEveryPhase) {
  auto big = DeviceBuffer<std::uint8_t>::create(256u << 20);
  auto small = DeviceBuffer<std::uint8_t>::create(64u << 20);
  ASSERT_TRUE(big && small);
  PowerOptions options;
  options.device = kDevice;
  options.phase_s = 0.6;
  options.ramp_discard_s = 0.2;
  options.sample_period_s = 0.02;
  options.compute_launch = [&](cudaStream_t stream) {
    return cuda_check(cudaMemsetAsync(big->get(), 1, big->bytes(), stream), "cudaMemsetAsync");
  };
  options.memory_launch = [&](cudaStream_t stream) {
    return cuda_check(cudaMemsetAsync(small->get(), 2, small->bytes(), stream), "cudaMemsetAsync");
  };
  auto table = measure_power(options);
  ASSERT_TRUE(table) << table.error().message;
  for (const PowerPhaseResult* phase : {&table->idle, &table->gemm, &table->memory_bound, &table->mixed}) {
    EXPECT_GT(phase->samples, 0);
    EXPECT_GT(phase->mean_power_w, 10.0);
    EXPECT_LE(phase->mean_power_w, table->power_limit_W);
    EXPECT_GE(phase->seconds, options.phase_s);
    EXPECT_LT(phase->seconds, options.phase_s + 0.5);
  }
  EXPECT_GT(table->mixed_compute_fraction, 0.25);
  EXPECT_LT(table->mixed_compute_fraction, 0.75);
  EXPECT_DOUBLE_EQ(table->sample_period_ms, 20.0);
  EXPECT_DOUBLE_EQ(table->idle_W(), table->idle.mean_power_w);
}

// Bad options come back as errors before anything runs.
TEST_F(GpuTest, PowerRejectsPhaseShorterThanRampUp) {
  PowerOptions options;
  options.phase_s = 0.5;
  options.ramp_discard_s = 1.0;
  options.compute_launch = [](cudaStream_t) -> Status { return Ok{}; };
  options.memory_launch = [](cudaStream_t) -> Status { return Ok{}; };
  EXPECT_FALSE(measure_power(options));
}

}  // namespace
}  // namespace commbound::kernels
