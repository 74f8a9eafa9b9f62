// Calibration tables and the cost model: exact lookups cost their p50, each fallback its
// hand-computed time, bad tables fail naming file:line: key = value, the scenario selects the
// table as documented, derived tables scale every row by the datasheet ratio, the workload gives
// its ops the kernel shapes of docs/calibration.md, and a one-GPU iteration priced by a table
// lasts exactly the sum of its ops' table times.
#include "network/platform.hpp"
#include "sim/engine/cost_model.hpp"
#include "sim/run/training_run.hpp"
#include "sim/engine/engine.hpp"
#include "calibration/table/kernel_table.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/shape_set.hpp"
#include "sim/workload/workload.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace commbound::sim {
namespace {

using model::AttentionShape;
using model::Direction;
using model::GemmLayout;
using model::GemmShape;
using calibration::Match;
using model::MemoryBoundShape;
using calibration::Priced;

const Presets kPresets("calibration");
const char* kTiny = "tests/sim/data/tiny-gpu.toml";
constexpr double kMs = 1e-3;
// The tiny table's [device]: 1000 GB/s copy, 100 TFLOP/s GEMM.
constexpr double kCopy = 1e12;
constexpr double kGemm = 1e14;

calibration::KernelTable tiny() {
  auto t = calibration::KernelTable::load(kTiny, kTiny);
  EXPECT_TRUE(t) << t.error().message;
  return *t;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// --- lookups ------------------------------------------------------------------------------------

TEST(KernelTablePricing, ExactShapesCostTheirP50) {
  const calibration::KernelTable t = tiny();
  Priced p = t.price(GemmShape{1024, 1024, 1024, GemmLayout::forward});
  EXPECT_EQ(p.match, Match::exact);
  EXPECT_DOUBLE_EQ(p.seconds, 0.04 * kMs);
  EXPECT_DOUBLE_EQ(t.price(GemmShape{1024, 1024, 1024, GemmLayout::dgrad}).seconds, 0.05 * kMs);  // layout is part of the key
  const AttentionShape a{Direction::forward, 1, 8, 8, 1024, 128, true};
  EXPECT_DOUBLE_EQ(t.price(a, "commbound").seconds, 0.1 * kMs);
  EXPECT_DOUBLE_EQ(t.price(a, "cudnn").seconds, 0.08 * kMs);
  p = t.price(MemoryBoundShape{"rmsnorm_forward", 8192, 1024});
  EXPECT_EQ(p.match, Match::exact);
  EXPECT_DOUBLE_EQ(p.seconds, 0.05 * kMs);
}

TEST(KernelTablePricing, MissingGemmTakesTheNearestRowsFlopRate) {
  const calibration::KernelTable t = tiny();
  // 2048 x 1024 x 1024: log-distance ln(2)^2 to 1024^3, 2 ln(4)^2 + ln(2)^2 to 4096^3. Same FLOP/s
  // as the 1024^3 row, twice the FLOPs: twice its time.
  const Priced p = t.price(GemmShape{2048, 1024, 1024, GemmLayout::forward});
  EXPECT_EQ(p.match, Match::nearest);
  EXPECT_DOUBLE_EQ(p.seconds, 2 * 0.04 * kMs);
  // 3500^3 is nearer 4096^3: (3500/4096)^3 of its 2 ms.
  EXPECT_NEAR(t.price(GemmShape{3500, 3500, 3500, GemmLayout::forward}).seconds, 2.0 * kMs * std::pow(3500.0 / 4096, 3), 1e-15);
}

TEST(KernelTablePricing, GemmWithoutRowsOfItsLayoutIsTheDeviceRoofline) {
  const calibration::KernelTable t = tiny();
  // No wgrad row: max(2 * 1024^3 / 1e14, 2 * 3 * 1024^2 / 1e12) = 2.147483648e-5 s (compute-bound).
  const Priced p = t.price(GemmShape{1024, 1024, 1024, GemmLayout::wgrad});
  EXPECT_EQ(p.match, Match::roofline);
  EXPECT_DOUBLE_EQ(p.seconds, 2.0 * 1024 * 1024 * 1024 / kGemm);
  // A skinny GEMM is bandwidth-bound: 8 x 8 x 1e6 moves 2 (8e6 + 8e6 + 64) bytes.
  EXPECT_DOUBLE_EQ(t.price(GemmShape{8, 8, 1000000, GemmLayout::wgrad}).seconds, 2.0 * (8e6 + 8e6 + 64) / kCopy);
}

TEST(KernelTablePricing, MissingAttentionScalesTheNearestByFlops) {
  const calibration::KernelTable t = tiny();
  // seq 2048: 4x the FLOPs of the seq 1024 row.
  Priced p = t.price(AttentionShape{Direction::forward, 1, 8, 8, 2048, 128, true}, "commbound");
  EXPECT_EQ(p.match, Match::nearest);
  EXPECT_DOUBLE_EQ(p.seconds, 4 * 0.1 * kMs);
  // Batch 2, 16 heads, GQA kv 4: 4x the FLOPs (kv_heads do not change attention's FLOPs).
  EXPECT_DOUBLE_EQ(t.price(AttentionShape{Direction::forward, 2, 16, 4, 1024, 128, true}, "commbound").seconds, 4 * 0.1 * kMs);
  // Not causal: twice the FLOPs of the causal row.
  EXPECT_DOUBLE_EQ(t.price(AttentionShape{Direction::forward, 1, 8, 8, 1024, 128, false}, "commbound").seconds, 2 * 0.1 * kMs);
  // No backward row: roofline, 2.5 x (4 b s^2 H d / 2) / 1e14.
  p = t.price(AttentionShape{Direction::backward, 1, 8, 8, 1024, 128, true}, "commbound");
  EXPECT_EQ(p.match, Match::roofline);
  EXPECT_DOUBLE_EQ(p.seconds, 2.5 * 2.0 * 1024 * 1024 * 8 * 128 / kGemm);
  // Another head_dim: the rate of the nearest measured one (128), on half the FLOPs.
  p = t.price(AttentionShape{Direction::forward, 1, 8, 8, 1024, 64, true}, "commbound");
  EXPECT_EQ(p.match, Match::nearest);
  EXPECT_DOUBLE_EQ(p.seconds, 0.1 * kMs / 2);
}

TEST(KernelTablePricing, MissingMemoryBoundTakesTheNearestRowsByteRate) {
  const calibration::KernelTable t = tiny();
  // tokens 2048 is nearer 1024 (ln 2) than 8192 (ln 4). rmsnorm_forward moves 4Tw + 2w bytes.
  const Priced p = t.price(MemoryBoundShape{"rmsnorm_forward", 2048, 1024});
  EXPECT_EQ(p.match, Match::nearest);
  EXPECT_DOUBLE_EQ(p.seconds, 0.01 * kMs * (4.0 * 2048 * 1024 + 2 * 1024) / (4.0 * 1024 * 1024 + 2 * 1024));
  // No swiglu row: roofline on its 6Tw bytes.
  const Priced q = t.price(MemoryBoundShape{"swiglu_forward", 1000, 500});
  EXPECT_EQ(q.match, Match::roofline);
  EXPECT_DOUBLE_EQ(q.seconds, 6.0 * 1000 * 500 / kCopy);
}

TEST(CostModel, ContentionAndPowerFromTheTable) {
  GpuSpec gpu = *load_gpu(kPresets, "h100-sxm5");
  const CostModel cost(gpu, std::make_shared<const calibration::KernelTable>(tiny()), "commbound");
  Op gemm, attention, norm;
  gemm.kernel = GemmShape{1024, 1024, 1024, GemmLayout::forward};
  attention.kernel = AttentionShape{Direction::forward, 1, 8, 8, 1024, 128, true};
  norm.kernel = MemoryBoundShape{"rmsnorm_forward", 1024, 1024};
  // The tiny table's [contention] has no comm_sms: its factors apply flat while anything runs,
  // memory-bound kernels taking the GEMM's; nothing running, nothing slows.
  const CommLoad running = cost.contention().sm_load(16);
  EXPECT_DOUBLE_EQ(cost.slowdown(gemm, running), 1.2);
  EXPECT_DOUBLE_EQ(cost.slowdown(attention, running), 1.1);
  EXPECT_DOUBLE_EQ(cost.slowdown(norm, running), 1.2);
  EXPECT_DOUBLE_EQ(cost.slowdown(gemm, CommLoad{}), 1.0);
  // idle 100 + (500 - 100) x 0.5 + (300 - 100) x 0.25.
  EXPECT_DOUBLE_EQ(cost.power_w(0.5, 0.25), 350);
  EXPECT_EQ(cost.source(), "measured");
  EXPECT_EQ(cost.describe(), std::string("measured: ") + kTiny + " (Test GPU, 2026-01-02, commit abc1234)");
  // Without a table: the datasheet model, idle + (TDP - idle) x busy.
  const CostModel roofline(gpu);
  EXPECT_DOUBLE_EQ(roofline.power_w(0.5, 0.25), gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * 0.75);
  EXPECT_EQ(roofline.source(), "roofline");
}

// Both [contention] points, as commbound-calibrate measures them, on the tiny GPU (100 SMs, copy
// 1000 GB/s of traffic): a copy on 20 SMs paced to 50 GB/s of payload (100 GB/s of traffic, HBM
// share 0.1) slows a GEMM x1.3, unpaced at 250 GB/s (share 0.5) x1.5. Same SM share (0.2), so
// HBM costs (1.5 - 1.3) / (0.5 - 0.1) = 0.5 per unit of share and SMs (0.3 - 0.5 x 0.1) / 0.2 =
// 1.25. NCCL on 10 channels moving 50 GB/s of bus traffic (3 x 50 = 150 GB/s through HBM): SM
// share 0.1, HBM share 0.15, GEMM x(1 + 0.125 + 0.075) = 1.2. Attention (x1.1 paced, x1.1
// unpaced): HBM costs nothing, SMs 0.5. A memory-bound kernel keeps 1 - 0.15 of HBM: x1/0.85.
TEST(Contention, SmAndHbmSharesFromTheTwoMeasuredPoints) {
  std::string text = read_all(kTiny);
  text.replace(text.find("[contention]\n"), 13,
               "[contention]\ncomm_sms = 20\ncomm_GBps = 50\nunpaced_comm_GBps = 250\nunpaced_gemm_factor = 1.5\n"
               "unpaced_attention_factor = 1.1\n");
  std::string gemm_factor = "gemm_factor = 1.2";
  text.replace(text.find(gemm_factor), gemm_factor.size(), "gemm_factor = 1.3");
  const std::string both = temp_file("tiny_contention_both.toml", text);
  auto table = calibration::KernelTable::load(both, both);
  ASSERT_TRUE(table) << table.error().message;
  const Contention c(*table, 1.0);
  CommLoad load = c.sm_load(10);
  load += c.hbm_load(50e9);
  EXPECT_DOUBLE_EQ(load.sm_share, 0.1);
  EXPECT_DOUBLE_EQ(load.hbm_share, 0.15);
  EXPECT_NEAR(c.slowdown(GemmShape{1024, 1024, 1024, GemmLayout::forward}, load), 1.2, 1e-12);
  EXPECT_NEAR(c.slowdown(AttentionShape{Direction::forward, 1, 8, 8, 1024, 128, true}, load), 1.05, 1e-12);
  EXPECT_NEAR(c.slowdown(MemoryBoundShape{"rmsnorm_forward", 1024, 1024}, load), 1 / 0.85, 1e-12);
  // The measured points themselves come back: 20 SMs and 100 / 1000 of HBM traffic.
  EXPECT_NEAR(c.slowdown(GemmShape{1024, 1024, 1024, GemmLayout::forward}, CommLoad{0.2, 0.1}), 1.3, 1e-12);
  EXPECT_NEAR(c.slowdown(GemmShape{1024, 1024, 1024, GemmLayout::forward}, CommLoad{0.2, 0.5}), 1.5, 1e-12);
  // Without a table: gpus.toml's flat factor whenever a collective runs, memory-bound kernels too.
  const Contention flat(1.25);
  EXPECT_DOUBLE_EQ(flat.slowdown(MemoryBoundShape{"rmsnorm_forward", 1024, 1024}, flat.sm_load(16)), 1.25);
  EXPECT_DOUBLE_EQ(flat.slowdown(MemoryBoundShape{"rmsnorm_forward", 1024, 1024}, CommLoad{}), 1.0);
}

// While only communication runs, NCCL's kernels hold comm_sms of the GPU's SMs, each drawing what
// an SM draws in a memory-bound kernel: the tiny table (idle 100 W, memory-bound 300 W, 100 SMs)
// with comm_sms = 25 gives 100 + 200 x 25 / 100 = 150 W; a fifth of the iteration so adds 10 W.
// Without comm_sms the phase is idle, as before.
TEST(CostModel, CommunicationPhasesDrawTheirShareOfTheSms) {
  const GpuSpec gpu = *load_gpu(kPresets, "h100-sxm5");
  std::string text = read_all(kTiny);
  text.replace(text.find("[contention]\n"), 13, "[contention]\ncomm_sms = 25\n");
  const std::string path = temp_file("tiny_comm_sms.toml", text);
  auto table = calibration::KernelTable::load(path, path);
  ASSERT_TRUE(table) << table.error().message;
  const CostModel cost(gpu, std::make_shared<const calibration::KernelTable>(*table), "commbound");
  EXPECT_DOUBLE_EQ(cost.comm_w(), 150);
  EXPECT_DOUBLE_EQ(cost.power_w(0.5, 0.25, 0.2) - cost.power_w(0.5, 0.25), 10);
  const CostModel without(gpu, std::make_shared<const calibration::KernelTable>(tiny()), "commbound");
  EXPECT_DOUBLE_EQ(without.comm_w(), 100);
}

// At the power limit: the tiny table's [power] with a curve (share, slowdown) = (0.5, 1.1), (1.0,
// 1.2). A program of a GEMM (0.04 ms), an attention kernel (0.1 ms) and two RMSNorms (0.01 and
// 0.05 ms) spends 0.14 of its 0.2 ms of compute in compute-bound kernels: share 0.7, slowdown
// 1.1 + (1.2 - 1.1) x (0.7 - 0.5) / (1.0 - 0.5) = 1.14 on the GEMM and the attention kernel, none
// on the memory-bound ones, none on a measured op (fixed_s). Before the call, or without a
// curve, the table's prices.
TEST(CostModel, ComputeBoundKernelsSlowDownAtThePowerLimitByTheirShare) {
  std::string text = read_all(kTiny);
  text.replace(text.find("memory_bound_W = 300.0\n"), 23,
               "memory_bound_W = 300.0\nlimit_gemm_share = [0.5, 1.0]\nlimit_gemm_slowdown = [1.1, 1.2]\n");
  const std::string path = temp_file("power_limit.toml", text);
  auto table = calibration::KernelTable::load(path, path);
  ASSERT_TRUE(table) << table.error().message;
  const GpuSpec gpu = *load_gpu(kPresets, "h100-sxm5");
  CostModel cost(gpu, std::make_shared<const calibration::KernelTable>(*table), "commbound");
  Op gemm, attention, norm, norm8k, sync, measured;
  gemm.kernel = GemmShape{1024, 1024, 1024, GemmLayout::forward};
  attention.kernel = AttentionShape{Direction::forward, 1, 8, 8, 1024, 128, true};
  norm.kernel = MemoryBoundShape{"rmsnorm_forward", 1024, 1024};
  norm8k.kernel = MemoryBoundShape{"rmsnorm_forward", 8192, 1024};
  measured.kernel = GemmShape{4096, 4096, 4096, GemmLayout::forward};
  measured.fixed_s = 1.0;
  Program p;
  p.ops = {gemm, attention, norm, sync, norm8k, measured};
  EXPECT_DOUBLE_EQ(cost.seconds(gemm), 0.04 * kMs);
  cost.hold_at_power_limit({p});
  EXPECT_DOUBLE_EQ(cost.compute_bound_share(), 0.7);
  EXPECT_DOUBLE_EQ(cost.power_limit_slowdown(), 1.14);
  EXPECT_DOUBLE_EQ(cost.seconds(gemm), 0.04 * kMs * 1.14);
  EXPECT_DOUBLE_EQ(cost.seconds(attention), 0.1 * kMs * 1.14);
  EXPECT_DOUBLE_EQ(cost.seconds(norm), 0.01 * kMs);
  EXPECT_DOUBLE_EQ(cost.seconds(measured), 1.0);
  CostModel plain(gpu, std::make_shared<const calibration::KernelTable>(tiny()), "commbound");
  plain.hold_at_power_limit({p});
  EXPECT_DOUBLE_EQ(plain.power_limit_slowdown(), 1.0);
  EXPECT_DOUBLE_EQ(plain.seconds(gemm), 0.04 * kMs);
}

// An FP8 matrix product costs its bf16 row's time times the datasheet's bf16 / fp8 peak ratio
// (989.4 / 1978.9 on H100), and is counted as derived; without a table, the fp8 peak's roofline.
TEST(CostModel, Fp8GemmsAreTheBf16RowScaledByThePeakRatio) {
  const GpuSpec gpu = *load_gpu(kPresets, "h100-sxm5");
  ASSERT_GT(gpu.peak_fp8_flops_per_s, 0);
  const CostModel cost(gpu, std::make_shared<const calibration::KernelTable>(tiny()), "commbound");
  Op bf16, fp8;
  bf16.kernel = GemmShape{1024, 1024, 1024, GemmLayout::forward};
  fp8.kernel = GemmShape{1024, 1024, 1024, GemmLayout::forward, model::Precision::fp8};
  EXPECT_DOUBLE_EQ(cost.seconds(fp8), 0.04 * kMs * 989.4 / 1978.9);
  EXPECT_DOUBLE_EQ(cost.seconds(bf16), 0.04 * kMs);
  Program p;
  p.ops = {bf16, fp8};
  const CostSummary s = cost.summarize({p});
  EXPECT_EQ(s.exact_ops, 1);
  EXPECT_EQ(s.fallbacks.at("gemm_fp8_derived"), 1);
  fp8.flops = model::flops(fp8.kernel);
  EXPECT_DOUBLE_EQ(CostModel(gpu).seconds(fp8), fp8.flops / 1978.9e12);
}

// With [[gemm_fp8]] rows an FP8 product is its bf16 row x the measured FP8 / bf16 ratio of the
// nearest measured shape of its scaling (tensorwise): rows at 1024^3 (0.06 / 0.1 = 0.6) and 8192^3
// (1 / 2 = 0.5), and a rowwise one at 1024^3 (0.08 / 0.1) that tensorwise pricing ignores. 1024^3
// costs 0.04 ms x 0.6; 4096^3 is nearer 8192^3 (3 x ln(2)^2 against 3 x ln(4)^2): 2.0 ms x 0.5.
// Both counted as gemm_fp8_ratio.
TEST(CostModel, Fp8GemmsTakeTheMeasuredRatioOfTheNearestShape) {
  std::string text = read_all(kTiny);
  for (const char* row : {"m = 1024\nn = 1024\nk = 1024\nscaling = \"tensorwise\"\nbf16_ms = 0.1\nfp8_ms = 0.06\n",
                          "m = 8192\nn = 8192\nk = 8192\nscaling = \"tensorwise\"\nbf16_ms = 2.0\nfp8_ms = 1.0\n",
                          "m = 1024\nn = 1024\nk = 1024\nscaling = \"rowwise\"\nbf16_ms = 0.1\nfp8_ms = 0.08\n"}) {
    text += std::string("\n[[gemm_fp8]]\n") + row;
  }
  const std::string path = temp_file("fp8_rows.toml", text);
  auto table = calibration::KernelTable::load(path, path);
  ASSERT_TRUE(table) << table.error().message;
  ASSERT_EQ(table->fp8_gemms().size(), 3u);
  EXPECT_DOUBLE_EQ(*table->fp8_ratio(GemmShape{1024, 1024, 1024, GemmLayout::forward}, "rowwise"), 0.8);
  const CostModel cost(*load_gpu(kPresets, "h100-sxm5"), std::make_shared<const calibration::KernelTable>(*table), "commbound");
  Op small, large;
  small.kernel = GemmShape{1024, 1024, 1024, GemmLayout::forward, model::Precision::fp8};
  large.kernel = GemmShape{4096, 4096, 4096, GemmLayout::forward, model::Precision::fp8};
  EXPECT_DOUBLE_EQ(cost.seconds(small), 0.04 * kMs * 0.6);
  EXPECT_DOUBLE_EQ(cost.seconds(large), 2.0 * kMs * 0.5);
  Program p;
  p.ops = {small, large};
  EXPECT_EQ(cost.summarize({p}).fallbacks.at("gemm_fp8_ratio"), 2);
}

// The example of docs/calibration.md's format section, every key of the format, reads cleanly.
TEST(KernelTablePricing, ReadsTheDocumentedExample) {
  const std::string doc = read_all("docs/calibration.md");
  const std::size_t begin = doc.find("```toml\n");
  ASSERT_NE(begin, std::string::npos);
  const std::size_t end = doc.find("```", begin + 8);
  const std::string path = temp_file("documented.toml", doc.substr(begin + 8, end - begin - 8));
  auto t = calibration::KernelTable::load(path, "calibration/h100-sxm5.toml");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->describe(), "measured: calibration/h100-sxm5.toml (NVIDIA H100 80GB HBM3, 2026-11-22, commit abc1234)");
  EXPECT_DOUBLE_EQ(t->price(GemmShape{8192, 12288, 4096, GemmLayout::forward}).seconds, 1.1 * kMs);
  EXPECT_DOUBLE_EQ(*t->provenance().memory_bytes, 79.2e9);
  EXPECT_DOUBLE_EQ(*t->contention()->comm_bytes_per_s, 400e9);
  EXPECT_DOUBLE_EQ(*t->power()->sample_period_s, 0.020);
  // The example's bytes follow the fewest-bytes formula the simulator scales by.
  EXPECT_DOUBLE_EQ(t->memory_bounds()[0].bytes, t->memory_bounds()[0].shape.bytes());
}

// --- bad tables ---------------------------------------------------------------------------------

struct BadTable {
  const char* name;
  const char* replace;  // a line of the tiny table ...
  const char* with;     // ... replaced by this
  const char* expected; // the error, after "<file>:"
};
class BadTables : public ::testing::TestWithParam<BadTable> {};
TEST_P(BadTables, NameFileLineKeyAndValue) {
  std::string text = read_all(kTiny);
  const std::size_t at = text.find(GetParam().replace);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string(GetParam().replace).size(), GetParam().with);
  const std::string path = temp_file(std::string("bad_") + GetParam().name + ".toml", text);
  auto t = calibration::KernelTable::load(path, path);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message.rfind(path + ":", 0), 0u) << t.error().message;
  EXPECT_NE(t.error().message.find(GetParam().expected), std::string::npos) << t.error().message;
}
INSTANTIATE_TEST_SUITE_P(
    Tables, BadTables,
    ::testing::Values(
        BadTable{"unknown_key", "layout = \"dgrad\"", "layout = \"dgrad\"\nlayuot = 1", ":39: gemm.layuot = 1: unknown key in [gemm]"},
        BadTable{"bad_layout", "layout = \"dgrad\"", "layout = \"backward\"", ":38: gemm.layout = \"backward\": must be one of"},
        BadTable{"negative", "m = 4096", "m = -4096", ":26: gemm.m = -4096: must be between 1 and"},
        BadTable{"float_dim", "m = 4096", "m = 4096.0", ":26: gemm.m = 4096.0: expected an integer"},
        BadTable{"order", "p10_ms = 2.0", "p10_ms = 2.5", ":31: gemm.p50_ms = 2.0: must lie between p10_ms and p90_ms"},
        BadTable{"op", "op = \"rmsnorm_forward\"\ntokens = 8192", "op = \"rmsnorm_fwd\"\ntokens = 8192",
                 "memory_bound.op = \"rmsnorm_fwd\": must be one of"},
        BadTable{"duplicate", "m = 4096\nn = 4096\nk = 4096", "m = 1024\nn = 1024\nk = 1024",
                 ":25: [[gemm]]: the same shape as the row at"},
        BadTable{"provenance_key", "derived = false", "derived = false\nhost = \"x\"", "provenance.host = \"x\": unknown key"},
        BadTable{"section", "[contention]", "[contentions]", "contentions = (a table): unknown key"},
        BadTable{"factor", "gemm_factor = 1.2", "gemm_factor = 0.5", "contention.gemm_factor = 0.5: must be between 1 and 10"},
        BadTable{"date", "date = \"2026-01-02\"", "date = 2026-01-02", "provenance.date = 2026-01-02: expected a string"},
        BadTable{"fp8_scaling", "memory_bound_W = 300.0", "memory_bound_W = 300.0\n\n[[gemm_fp8]]\nm = 8\nn = 8\nk = 8\nscaling = \"blockwise\"\nbf16_ms = 1.0\nfp8_ms = 0.5",
                 "gemm_fp8.scaling = \"blockwise\": must be one of"},
        BadTable{"fp8_duplicate", "memory_bound_W = 300.0",
                 "memory_bound_W = 300.0\n\n[[gemm_fp8]]\nm = 8\nn = 8\nk = 8\nscaling = \"rowwise\"\nbf16_ms = 1.0\nfp8_ms = 0.5"
                 "\n\n[[gemm_fp8]]\nm = 8\nn = 8\nk = 8\nscaling = \"rowwise\"\nbf16_ms = 1.0\nfp8_ms = 0.6",
                 ": [[gemm_fp8]]: the same shape as the row at"},
        BadTable{"limit_order", "memory_bound_W = 300.0", "memory_bound_W = 300.0\nlimit_gemm_share = [0.5, 0.25]\nlimit_gemm_slowdown = [1.5, 2.0]",
                 ":91: power.limit_gemm_share = [ 0.5, 0.25 ]: must increase, element by element (element 1 is 0.25 after 0.5)"},
        BadTable{"limit_length", "memory_bound_W = 300.0", "memory_bound_W = 300.0\nlimit_gemm_share = [0.5, 1.0]\nlimit_gemm_slowdown = [1.5]",
                 ":92: power.limit_gemm_slowdown = [ 1.5 ]: expected an array of 2 numbers"},
        BadTable{"limit_speedup", "memory_bound_W = 300.0", "memory_bound_W = 300.0\nlimit_gemm_share = [1.0]\nlimit_gemm_slowdown = [0.5]",
                 ":92: power.limit_gemm_slowdown = [ 0.5 ]: element 0 must be a number between 1 and 10"}));

// --- selection ----------------------------------------------------------------------------------

const char* kTrainingScenario = R"([cluster]
node_type = "dgx-h100"
nodes = 1
[model]
name = "llama2-7b"
)";

TEST(Selection, AutoWithoutATableIsTheRoofline) {
  // A calibration directory holding no table for the scenario's GPU (h100-sxm5).
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "calibration_without_table";
  fs::remove_all(dir);
  fs::copy("calibration", dir, fs::copy_options::recursive);
  fs::remove(dir / "h100-sxm5.toml");
  auto sc = load_scenario(temp_file("auto.toml", kTrainingScenario), {}, Presets(dir));
  ASSERT_TRUE(sc) << sc.error().message;
  EXPECT_EQ(sc->kernel_table, nullptr);
  EXPECT_EQ(cost_model(*sc).source(), "roofline");
  EXPECT_NE(cost_model(*sc).describe().find("no " + (dir / "h100-sxm5.toml").string() + " for GPU h100-sxm5"),
            std::string::npos);
}

TEST(Selection, AutoFindsTheGpusTableInTheCalibrationDirectory) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "calibration_with_table";
  fs::remove_all(dir);
  fs::copy("calibration", dir, fs::copy_options::recursive);
  fs::copy_file(kTiny, dir / "h100-sxm5.toml", fs::copy_options::overwrite_existing);
  auto sc = load_scenario(temp_file("auto2.toml", kTrainingScenario), {}, Presets(dir));
  ASSERT_TRUE(sc) << sc.error().message;
  ASSERT_NE(sc->kernel_table, nullptr);
  EXPECT_EQ(cost_model(*sc).source(), "measured");
  // "roofline" ignores the table.
  auto off = load_scenario(temp_file("auto3.toml", kTrainingScenario), {"cluster.kernel_table=roofline"}, Presets(dir));
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_EQ(off->kernel_table, nullptr);
}

TEST(Selection, ExplicitTableAndAttentionKernel) {
  const std::string path = temp_file("explicit.toml", kTrainingScenario);
  auto sc = load_scenario(path, {std::string("cluster.kernel_table=") + kTiny, "training.attention_kernel=cudnn"}, kPresets);
  ASSERT_TRUE(sc) << sc.error().message;
  ASSERT_NE(sc->kernel_table, nullptr);
  EXPECT_EQ(sc->training->attention_kernel, "cudnn");
  EXPECT_NE(cost_model(*sc).describe().find("attention cudnn"), std::string::npos);
  // A missing file names the key.
  auto missing = load_scenario(path, {"cluster.kernel_table=nowhere.toml"}, kPresets);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message.rfind("--set cluster.kernel_table=nowhere.toml: cluster.kernel_table = \"nowhere.toml\": no such file", 0), 0u)
      << missing.error().message;
  // A table without rows of the chosen attention kernel.
  std::string text = read_all(kTiny);
  const std::size_t cudnn_row = text.find("[[attention]]", text.find("[[attention]]") + 1);
  text = text.substr(0, cudnn_row) + text.substr(text.find("[[memory_bound]]"));
  const std::string no_cudnn = temp_file("no_cudnn.toml", text);
  auto bad = load_scenario(path, {"cluster.kernel_table=" + no_cudnn, "training.attention_kernel=cudnn"}, kPresets);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("training.attention_kernel = \"cudnn\": " + no_cudnn +
                                     " has no [[attention]] rows of implementation \"cudnn\""),
            std::string::npos)
      << bad.error().message;
}

// The attention a framework runs prices its attention ops. PyTorch's SDPA (eager and compiled)
// tries cuDNN's attention first on compute capability 9.0 (H100) and FlashAttention-2 first on
// 8.0 (A100), priced from rows of that kernel where the table has them; Transformer Engine runs
// cuDNN's; our fused step our kernel. A table with neither prices PyTorch's attention by our
// kernel of the same algorithm. Below compute capability 8.0 (V100: 7.0) SDPA has no flash
// backend: a V100 node runs our kernel, though its derived table has FlashAttention-2 rows.
TEST(Selection, EachFrameworkPricesTheAttentionItRuns) {
  const std::string path = temp_file("frameworks.toml", kTrainingScenario);
  auto kernel_of = [&](const std::string& framework, const std::string& table, const std::string& node = "dgx-h100") {
    auto sc = load_scenario(
        path, {"training.framework=" + framework, "cluster.kernel_table=" + table, "cluster.node_type=" + node}, kPresets);
    EXPECT_TRUE(sc) << sc.error().message;
    return sc ? sc->training->attention_kernel : std::string();
  };
  const std::string h100 = "calibration/h100-sxm5.toml", a100 = "calibration/a100-sxm4-80gb.toml";
  EXPECT_EQ(kernel_of("pytorch-eager", h100), "cudnn");
  EXPECT_EQ(kernel_of("pytorch-compile", h100), "cudnn");
  EXPECT_EQ(kernel_of("pytorch-eager", a100, "dgx-a100"), "flash2");
  const std::string v100_node = "[cluster]\nnodes = 1\n[cluster.node]\ngpu = \"v100-sxm2\"\ngpus = 8\nnics = 4\n"
                                "nvlink = \"nvlink4\"\npcie = \"pcie-gen5-x16\"\nnic = \"ib-ndr\"\n[model]\nname = \"llama2-7b\"\n";
  auto on_v100 = load_scenario(temp_file("v100.toml", v100_node),
                               {"training.framework=pytorch-eager", "cluster.kernel_table=calibration/v100-sxm2.toml",
                                "cluster.node.nvls=false"},
                               kPresets);
  ASSERT_TRUE(on_v100) << on_v100.error().message;
  ASSERT_TRUE(on_v100->kernel_table->has_attention("flash2"));
  EXPECT_EQ(on_v100->training->attention_kernel, "commbound");
  EXPECT_EQ(kernel_of("megatron-te", h100), "cudnn");
  EXPECT_EQ(kernel_of("fused", h100), "commbound");
  // The tiny table has our kernel's rows and one cuDNN row, no FlashAttention-2: an H100 picks
  // cuDNN, an A100 finds no FlashAttention-2 and falls back to our kernel.
  EXPECT_EQ(kernel_of("pytorch-eager", kTiny), "cudnn");
  EXPECT_EQ(kernel_of("pytorch-eager", kTiny, "dgx-a100"), "commbound");
  auto asked = load_scenario(path, {std::string("cluster.kernel_table=") + kTiny, "training.attention_kernel=flash2"}, kPresets);
  ASSERT_FALSE(asked);
  EXPECT_NE(asked.error().message.find("has no [[attention]] rows of implementation \"flash2\""), std::string::npos)
      << asked.error().message;
}

// --- derived tables -----------------------------------------------------------------------------

// A GPU's datasheet figures (calibration/gpus.toml) as derive() takes them.
calibration::KernelTable::Datasheet datasheet_of(const std::string& name) {
  const GpuSpec g = *load_gpu(kPresets, name);
  return calibration::KernelTable::Datasheet{g.name, g.description, g.peak_dtype, g.peak_flops_per_s, g.hbm_bytes_per_s,
                                             g.memory_bytes, g.tdp_w};
}

TEST(DerivedTable, EveryRowScaledByTheDatasheetRatio) {
  const calibration::KernelTable source = tiny();
  const calibration::KernelTable d = source.derive(datasheet_of("h100-sxm5"), datasheet_of("a100-sxm4-80gb"), kTiny, "2026-02-03");
  // calibration/gpus.toml: H100 989.4 TFLOP/s, 3350 GB/s, 700 W; A100 312 TFLOP/s, 2039 GB/s, 400 W.
  const double compute = 989.4 / 312.0, memory = 3350.0 / 2039.0, watts = 400.0 / 700.0;
  // Through the file format and back, as `commbound derive-table` writes it.
  std::ostringstream text;
  d.write(text);
  const std::string path = temp_file("derived.toml", text.str());
  auto back = calibration::KernelTable::load(path, path);
  ASSERT_TRUE(back) << back.error().message << "\n" << text.str();
  for (const calibration::KernelTable* t : {&d, static_cast<const calibration::KernelTable*>(&*back)}) {
    ASSERT_EQ(t->gemms().size(), 3u);
    EXPECT_NEAR(t->gemms()[0].time->p50_s, 0.04 * kMs * compute, 1e-9 * kMs);
    EXPECT_NEAR(t->gemms()[0].time->p10_s, 0.039 * kMs * compute, 1e-9 * kMs);
    EXPECT_NEAR(t->gemms()[1].time->p90_s, 2.1 * kMs * compute, 1e-9 * kMs);
    EXPECT_NEAR(t->gemms()[2].time->p50_s, 0.05 * kMs * compute, 1e-9 * kMs);
    EXPECT_NEAR(t->attentions()[0].time->p50_s, 0.1 * kMs * compute, 1e-9 * kMs);
    EXPECT_NEAR(t->attentions()[1].time->p50_s, 0.08 * kMs * compute, 1e-9 * kMs);
    EXPECT_NEAR(t->memory_bounds()[0].time->p50_s, 0.01 * kMs * memory, 1e-9 * kMs);
    EXPECT_NEAR(t->memory_bounds()[1].time->p50_s, 0.05 * kMs * memory, 1e-9 * kMs);
    EXPECT_DOUBLE_EQ(t->memory_bounds()[0].bytes, 4196352);  // bytes are the shape's: unchanged
    EXPECT_NEAR(t->device().copy_bytes_per_s, kCopy / memory, 1e-6 * kCopy);
    EXPECT_NEAR(t->device().gemm_flops_per_s, kGemm / compute, 1e-6 * kGemm);
    EXPECT_NEAR(t->power()->idle_w, 100 * watts, 1e-6);
    EXPECT_NEAR(t->power()->gemm_w, 500 * watts, 1e-6);
    EXPECT_NEAR(t->power()->memory_bound_w, 300 * watts, 1e-6);
    EXPECT_DOUBLE_EQ(t->contention()->gemm_factor, 1.2);
    EXPECT_DOUBLE_EQ(t->contention()->attention_factor, 1.1);
    EXPECT_TRUE(t->provenance().derived);
    EXPECT_EQ(t->provenance().gpu, "NVIDIA A100 SXM4 80GB");
    EXPECT_EQ(t->provenance().derived_from, std::string(kTiny) + " (Test GPU, 2026-01-02)");
    EXPECT_NE(t->provenance().derivation.find("crude"), std::string::npos);
  }
  EXPECT_EQ(back->describe().rfind("derived: ", 0), 0u);
  EXPECT_EQ(CostModel(*load_gpu(kPresets, "a100-sxm4-80gb"), std::make_shared<const calibration::KernelTable>(*back), "commbound").source(),
            "derived");
}

// With the target's achievable rates the ratios are the source table's measured [device] rates
// over them: the tiny table measured 100 TFLOP/s and 1000 GB/s (kGemm, kCopy); a target that
// sustains 50 TFLOP/s and 400 GB/s takes 2x the GEMM and attention times and 2.5x the
// memory-bound ones, whatever the datasheet peaks (which would give 989.4 / 312 = 3.17).
TEST(DerivedTable, AchievableRatesReplaceThePeakRatios) {
  const calibration::KernelTable source = tiny();
  calibration::KernelTable::Datasheet to = datasheet_of("a100-sxm4-80gb");
  to.achievable_gemm_flops_per_s = 50e12;
  to.achievable_copy_bytes_per_s = 400e9;
  to.achievable_source = "rates.toml";
  const calibration::KernelTable d = source.derive(datasheet_of("h100-sxm5"), to, kTiny, "2026-02-03");
  EXPECT_NEAR(d.gemms()[0].time->p50_s, 0.04 * kMs * 2.0, 1e-9 * kMs);
  EXPECT_NEAR(d.attentions()[0].time->p50_s, 0.1 * kMs * 2.0, 1e-9 * kMs);
  EXPECT_NEAR(d.memory_bounds()[0].time->p50_s, 0.01 * kMs * 2.5, 1e-9 * kMs);
  EXPECT_NEAR(d.device().gemm_flops_per_s, 50e12, 1e-6 * kGemm);
  EXPECT_NEAR(d.device().copy_bytes_per_s, 400e9, 1e-6 * kCopy);
  EXPECT_NE(d.provenance().derivation.find("achievable rates from rates.toml"), std::string::npos)
      << d.provenance().derivation;
}

// PyTorch's elementwise rows and the power-limit curve carry over. The tiny table with SMs at
// 100 x 1000 MHz, a curve, and two ops of two rows each: vectorized add 2 us at 4096 elements and
// 10 us at 2^20, indexed copy 3 us and 30 us. A target of 50 SMs at 1000 MHz: each op keeps its
// smallest row (launch and drain); the rest of the vectorized row scales by the HBM ratio
// 3350 / 2039, of the indexed one by the SMs x clock ratio 100 / 50 = 2. A warm reduction row
// (l2 = "warm", width 4096) is read, and not carried: another GPU's L2 follows no HBM ratio.
TEST(DerivedTable, ElementwiseRowsKeepTheirLaunchAndScaleTheirStreaming) {
  std::string text = read_all(kTiny);
  auto replace = [&text](const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  replace("sm_count = 100\n", "sm_count = 100\nsm_clock_max_MHz = 1000.0\n");
  replace("memory_bound_W = 300.0\n", "memory_bound_W = 300.0\nlimit_gemm_share = [0.5, 1.0]\nlimit_gemm_slowdown = [1.05, 1.1]\n");
  for (const char* row : {"path = \"vectorized\"\nop = \"add_bf16\"\nelements = 4096\nbytes = 24576.0\nqueued_us = 2.0\n",
                          "path = \"vectorized\"\nop = \"add_bf16\"\nelements = 1048576\nbytes = 6291456.0\nqueued_us = 10.0\n",
                          "path = \"indexed\"\nop = \"copy_bf16_strided\"\nelements = 4096\nbytes = 16384.0\nqueued_us = 3.0\n",
                          "path = \"indexed\"\nop = \"copy_bf16_strided\"\nelements = 1048576\nbytes = 4194304.0\nqueued_us = 30.0\n",
                          "path = \"reduction\"\nop = \"mean_fp32_w4096\"\nl2 = \"warm\"\nelements = 1048576\nwidth = 4096\n"
                          "bytes = 4194304.0\nqueued_us = 9.0\n"}) {
    text += std::string("\n[[pytorch_elementwise]]\n") + row;
  }
  const std::string path = temp_file("tiny-elementwise.toml", text);
  auto source = calibration::KernelTable::load(path, path);
  ASSERT_TRUE(source) << source.error().message;
  ASSERT_EQ(source->elementwise_rows().size(), 5u);
  EXPECT_TRUE(source->elementwise_rows()[2].warm);  // sorted: indexed, reduction, vectorized
  EXPECT_EQ(source->elementwise_rows()[2].width, 4096);
  calibration::KernelTable::Datasheet to = datasheet_of("a100-sxm4-80gb");
  to.sm_count = 50;
  to.sm_clock_max_hz = 1e9;
  const calibration::KernelTable d = source->derive(datasheet_of("h100-sxm5"), to, path, "2026-02-03");
  const double memory = 3350.0 / 2039.0;
  const double us = 1e-6;
  ASSERT_EQ(d.elementwise_rows().size(), 4u);  // sorted: indexed, then vectorized
  EXPECT_NEAR(d.elementwise_rows()[0].queued_s, 3 * us, 1e-12);
  EXPECT_NEAR(d.elementwise_rows()[1].queued_s, 3 * us + 27 * us * 2, 1e-12);
  EXPECT_NEAR(d.elementwise_rows()[2].queued_s, 2 * us, 1e-12);
  EXPECT_NEAR(d.elementwise_rows()[3].queued_s, 2 * us + 8 * us * memory, 1e-12);
  EXPECT_DOUBLE_EQ(d.elementwise_rows()[3].bytes, 6291456.0);
  ASSERT_TRUE(d.power());
  EXPECT_EQ(d.power()->limit_gemm_share, (std::vector<double>{0.5, 1.0}));
  EXPECT_EQ(d.power()->limit_gemm_slowdown, (std::vector<double>{1.05, 1.1}));
  EXPECT_NE(d.provenance().derivation.find("power-limit curve copied"), std::string::npos) << d.provenance().derivation;
  EXPECT_NE(d.provenance().derivation.find("SMs x clock"), std::string::npos) << d.provenance().derivation;
  EXPECT_NE(d.provenance().derivation.find("L2-warm rows not carried"), std::string::npos) << d.provenance().derivation;
}

TEST(DerivedTable, V100IsDerivedWithItsFp16TensorPeak) {
  const GpuSpec v100 = *load_gpu(kPresets, "v100-sxm2");
  EXPECT_EQ(v100.peak_dtype, "fp16");
  EXPECT_DOUBLE_EQ(v100.peak_flops_per_s, 125e12);
  EXPECT_DOUBLE_EQ(v100.hbm_bytes_per_s, 900e9);
  EXPECT_DOUBLE_EQ(v100.memory_bytes, 32e9);
  EXPECT_DOUBLE_EQ(v100.tdp_w, 300);
}

// --- kernel shapes of the workload --------------------------------------------------------------

TrainingSpec llama7b(int tp, int cp) {
  TrainingSpec t;
  t.model = *load_model(kPresets, "llama2-7b");
  t.gpu = *load_gpu(kPresets, "h100-sxm5");
  t.seq_len = 4096;
  t.micro_batch = 2;
  t.tp = tp;
  t.cp = cp;
  t.dp = 8 / tp / cp;
  t.global_batch = 2 * t.dp;
  return t;
}

const Op& op_named(const Program& p, const std::string& name) {
  for (const Op& op : p.ops) {
    if (op.name == name) return op;
  }
  static const Op none;
  ADD_FAILURE() << "no op " << name;
  return none;
}

TEST(Workload, LinearLayersHaveForwardDgradAndWgradShapes) {
  const Program p = build_program(llama7b(1, 1));
  // qkv: X [8192 x 4096] W^T, W [12288 x 4096].
  const auto fwd = std::get<GemmShape>(op_named(p, "layer1.mb0.fwd.qkv").kernel);
  const auto dgrad = std::get<GemmShape>(op_named(p, "layer1.mb0.bwd.qkv.dgrad").kernel);
  const auto wgrad = std::get<GemmShape>(op_named(p, "layer1.mb0.bwd.qkv.wgrad").kernel);
  EXPECT_EQ(fwd, (GemmShape{8192, 12288, 4096, GemmLayout::forward}));
  EXPECT_EQ(dgrad, (GemmShape{8192, 4096, 12288, GemmLayout::dgrad}));
  EXPECT_EQ(wgrad, (GemmShape{12288, 4096, 8192, GemmLayout::wgrad}));
  EXPECT_DOUBLE_EQ(fwd.flops(), dgrad.flops());
  EXPECT_DOUBLE_EQ(fwd.flops(), wgrad.flops());
  EXPECT_DOUBLE_EQ(op_named(p, "layer1.mb0.bwd.qkv.wgrad").flops, wgrad.flops());
  // LM head: vocab 32000 outputs.
  EXPECT_EQ(std::get<GemmShape>(op_named(p, "lm_head.mb0.bwd.logits.wgrad").kernel),
            (GemmShape{32000, 4096, 8192, GemmLayout::wgrad}));
}

TEST(Workload, OpsCarryTheCalibrationNamesAndWidths) {
  const TrainingSpec t = llama7b(2, 1);
  const Program p = build_program(t);
  auto mb = [&](const std::string& name) { return std::get<MemoryBoundShape>(op_named(p, name).kernel); };
  EXPECT_EQ(mb("layer1.mb0.fwd.rmsnorm"), (MemoryBoundShape{"rmsnorm_forward", 8192, 4096}));
  EXPECT_EQ(mb("layer1.mb0.bwd.rmsnorm2"), (MemoryBoundShape{"rmsnorm_backward", 8192, 4096}));
  EXPECT_EQ(mb("layer1.mb0.fwd.rope"), (MemoryBoundShape{"rope_forward", 8192, (32 + 32) / 2 * 128}));
  EXPECT_EQ(mb("layer1.mb0.fwd.swiglu"), (MemoryBoundShape{"swiglu_forward", 8192, 11008 / 2}));
  EXPECT_EQ(mb("layer1.mb0.bwd.swiglu"), (MemoryBoundShape{"swiglu_backward", 8192, 11008 / 2}));
  EXPECT_EQ(mb("layer1.mb0.fwd.residual"), (MemoryBoundShape{"residual_add", 8192, 4096}));
  EXPECT_EQ(mb("lm_head.mb0.fwd.cross_entropy"), (MemoryBoundShape{"cross_entropy_forward", 8192, 32000 / 2}));
  EXPECT_EQ(mb("lm_head.mb0.bwd.cross_entropy"), (MemoryBoundShape{"cross_entropy_backward", 8192, 32000 / 2}));
  EXPECT_EQ(mb("embedding.fwd.mb0"), (MemoryBoundShape{"embedding_forward", 8192, 4096}));
  EXPECT_EQ(mb("embedding.bwd.mb0"), (MemoryBoundShape{"embedding_backward", 8192, 4096}));
  // Optimizer: one flat buffer of the local shard, parameters / tp / (dp x cp).
  const auto local = static_cast<std::int64_t>(std::ceil(t.model.params() / 2 / 4));
  EXPECT_EQ(mb("optimizer.adamw"), (MemoryBoundShape{"adamw", 1, local}));
  EXPECT_EQ(mb("optimizer.grad_norm"), (MemoryBoundShape{"grad_norm", 1, local}));
  EXPECT_EQ(std::get<AttentionShape>(op_named(p, "layer1.mb0.bwd.attention").kernel),
            (AttentionShape{Direction::backward, 2, 16, 16, 4096, 128, true}));
  // Synchronisation points run no kernel.
  for (const Op& op : p.ops) {
    if (op.kind == OpKind::collective || op.bytes == 0) {
      EXPECT_TRUE(std::holds_alternative<std::monostate>(op.kernel)) << op.name;
    }
  }
}

// A window of 1024 keys on every layer but each second (full_attention_every = 2): layer 1's
// attention, forward and backward, and its recomputation's, carry the window; layer 2's the full
// causal mask. A windowed layer's FLOPs: 4 b h d (s w - w^2 / 2) = 4 x 2 x 32 x 128 x (4096 x 1024 -
// 1024^2 / 2) forward, of the full layer's 4 b h d s^2 / 2.
TEST(Workload, SlidingWindowLayersCarryTheirWindow) {
  TrainingSpec t = llama7b(1, 1);
  t.model.sliding_window = 1024;
  t.model.full_attention_every = 2;
  t.recompute = Recompute::full;
  const Program p = build_program(t);
  AttentionShape windowed{Direction::forward, 2, 32, 32, 4096, 128, true};
  windowed.window = 1024;
  EXPECT_EQ(std::get<AttentionShape>(op_named(p, "layer1.mb0.fwd.attention").kernel), windowed);
  EXPECT_EQ(std::get<AttentionShape>(op_named(p, "layer2.mb0.fwd.attention").kernel),
            (AttentionShape{Direction::forward, 2, 32, 32, 4096, 128, true}));
  EXPECT_DOUBLE_EQ(op_named(p, "layer1.mb0.fwd.attention").flops, 4.0 * 2 * 32 * 128 * (4096.0 * 1024 - 1024.0 * 1024 / 2));
  EXPECT_DOUBLE_EQ(op_named(p, "layer2.mb0.fwd.attention").flops, 4.0 * 2 * 32 * 128 * 4096.0 * 4096 / 2);
  int windowed_ops = 0;
  for (const Op& op : p.ops) {
    const auto* a = std::get_if<AttentionShape>(&op.kernel);
    if (a == nullptr) continue;
    ASSERT_EQ(op.name.rfind("layer", 0), 0u) << op.name;
    const int layer = std::stoi(op.name.substr(5));
    EXPECT_EQ(a->window, layer % 2 == 1 ? 1024 : 0) << op.name;
    windowed_ops += a->window > 0;
  }
  EXPECT_GE(windowed_ops, 3 * 16);  // forward, recomputed forward, backward of the 16 odd layers
}

// cp = 4 over seq 4096, micro-batch 2: the rank's 1024 tokens are two load-balanced chunks of 512.
// Its own KV block is causal attention over its 1024 tokens; each of the three others sees half of
// the rank's query-key pairs unmasked, priced as two non-causal 512-token blocks (batch 4). Each
// block has a quarter of the rank's causal share of 4 b h s^2 d / 2 / cp over s = 4096:
// 4 x 2 x 32 x 4096^2 x 128 / 2 / 16 = 4 x 4 x 32 x 512^2 x 128 FLOPs.
TEST(Workload, RingAttentionRunsOneCausalBlockAndLoadBalancedOthers) {
  const Program p = build_program(llama7b(1, 4));
  const Op& own = op_named(p, "layer1.mb0.fwd.attention.block0");
  const Op& other = op_named(p, "layer1.mb0.fwd.attention.block2");
  EXPECT_EQ(std::get<AttentionShape>(own.kernel), (AttentionShape{Direction::forward, 2, 32, 32, 1024, 128, true}));
  EXPECT_EQ(std::get<AttentionShape>(other.kernel), (AttentionShape{Direction::forward, 4, 32, 32, 512, 128, false}));
  const double share = 4.0 * 2 * 32 * 4096.0 * 4096 * 128 / 2 / 4 / 4;
  EXPECT_DOUBLE_EQ(own.flops, share);
  EXPECT_DOUBLE_EQ(other.flops, share);
  EXPECT_DOUBLE_EQ(other.flops, 4.0 * 4 * 32 * 512.0 * 512 * 128);
}

TEST(ShapeSet, WritesDeduplicatedRowsWithTheCalibrationToolsKeys) {
  ShapeSet shapes;
  for (const Program& p : build_programs(llama7b(1, 1))) shapes.add(p);
  // Forward, dgrad and wgrad of qkv, o_proj, gate_up, down, logits.
  EXPECT_EQ(shapes.gemms().size(), 15u);
  EXPECT_EQ(shapes.attentions().size(), 2u);
  std::ostringstream text;
  shapes.write(text, {"test"});
  const toml::table doc = toml::parse(text.str());
  const std::map<std::string, std::set<std::string>> keys = {
      {"gemm", {"m", "n", "k", "layout"}},
      {"attention", {"direction", "batch", "heads", "kv_heads", "seq", "head_dim", "causal"}},
      {"memory_bound", {"op", "tokens", "width"}}};
  std::size_t rows = 0;
  for (const auto& [kind, expected] : keys) {
    for (const auto& row : *doc[kind].as_array()) {
      std::set<std::string> got;
      for (const auto& [k, v] : *row.as_table()) got.insert(std::string(k.str()));
      EXPECT_EQ(got, expected) << kind;
      ++rows;
    }
  }
  EXPECT_EQ(rows, shapes.size());
}

TEST(ShapeSet, AnFp8GemmAsksForItsBf16TwinsRow) {
  // A table holds bf16 GEMM rows only (FP8 is priced from them by a ratio): the same m, n, k and
  // layout in FP8 and in bf16 is one row, else commbound-calibrate refuses the file as a duplicate.
  ShapeSet shapes;
  model::GemmShape g{.m = 4096, .n = 4096, .k = 4096, .layout = model::GemmLayout::dgrad};
  shapes.add(g);
  g.precision = model::Precision::fp8;
  shapes.add(g);
  ASSERT_EQ(shapes.gemms().size(), 1u);
  EXPECT_EQ(shapes.gemms().begin()->precision, model::Precision::bf16);
}

// --- first principles: one GPU, every shape in the table ----------------------------------------

// A table that has every shape of `program` with a distinct invented time; `times` gets the same
// times by shape, for the oracle.
std::string table_for(const Program& program, std::map<std::string, double>& times) {
  ShapeSet shapes;
  shapes.add(program);
  std::ostringstream rows;
  rows << "[provenance]\ngpu = \"Oracle GPU\"\ndate = \"2026-01-01\"\ntool_commit = \"0\"\n"
       << "[device]\ncopy_GBps = 1.0\ngemm_TFLOPs = 1.0\n";
  double ms = 0.1;
  auto timing = [&](const std::string& key) {
    ms += 0.013;
    times[key] = ms * kMs;
    rows << "p10_ms = " << ms << "\np50_ms = " << ms << "\np90_ms = " << ms << "\n";
  };
  for (const auto& g : shapes.gemms()) {
    rows << "[[gemm]]\nm = " << g.m << "\nn = " << g.n << "\nk = " << g.k << "\nlayout = \"" << to_string(g.layout) << "\"\n";
    timing("g" + std::to_string(g.m) + "," + std::to_string(g.n) + "," + std::to_string(g.k) + to_string(g.layout));
  }
  for (const auto& a : shapes.attentions()) {
    rows << "[[attention]]\nimplementation = \"commbound\"\ndirection = \"" << to_string(a.direction)
         << "\"\nbatch = " << a.batch << "\nheads = " << a.heads << "\nkv_heads = " << a.kv_heads << "\nseq = " << a.seq
         << "\nhead_dim = " << a.head_dim << "\ncausal = true\n";
    timing(std::string("a") + to_string(a.direction));
  }
  for (const auto& m : shapes.memory_bounds()) {
    rows << "[[memory_bound]]\nop = \"" << m.op << "\"\ntokens = " << m.tokens << "\nwidth = " << m.width
         << "\nbytes = 1\n";
    timing("m" + m.op + std::to_string(m.tokens) + "," + std::to_string(m.width));
  }
  return rows.str();
}

TEST(Engine, OneGpuIterationWithATableIsTheSumOfItsTableTimes) {
  network::ClusterSpec spec = testing::dgx_h100(1);
  spec.node.gpus = 1;
  spec.node.nics = 1;
  TrainingSpec t = llama7b(1, 1);
  t.model.layers = 2;
  t.dp = 1;
  t.global_batch = 2;
  t.micro_batch = 1;
  t.micro_batches = 2;
  t.warmup_iterations = 0;
  const Program program = build_program(t);
  std::map<std::string, double> times;
  const std::string path = temp_file("oracle.toml", table_for(program, times));
  auto table = calibration::KernelTable::load(path, path);
  ASSERT_TRUE(table) << table.error().message;
  double expected = 0;
  int kernels = 0;
  for (const Op& op : program.ops) {
    if (const auto* g = std::get_if<GemmShape>(&op.kernel)) {
      expected += times.at("g" + std::to_string(g->m) + "," + std::to_string(g->n) + "," + std::to_string(g->k) +
                           to_string(g->layout));
    } else if (const auto* a = std::get_if<AttentionShape>(&op.kernel)) {
      expected += times.at(std::string("a") + to_string(a->direction));
    } else if (const auto* m = std::get_if<MemoryBoundShape>(&op.kernel)) {
      expected += times.at("m" + m->op + std::to_string(m->tokens) + "," + std::to_string(m->width));
    } else {
      continue;
    }
    ++kernels;
  }
  const CostModel cost(t.gpu, std::make_shared<const calibration::KernelTable>(*table), "commbound");
  const CostSummary summary = cost.summarize({program});
  EXPECT_EQ(summary.exact_ops, kernels);
  EXPECT_EQ(summary.fallback_ops, 0);
  const IterationTimeline tl = simulate(spec, testing::nccl_2_30_7(), t, {program}, cost, {}).value();
  EXPECT_NEAR(tl.iteration_s(), expected, 1e-9);
}

}  // namespace
}  // namespace commbound::sim
