// The calibration table: its reader and writer round-trip every section and row (the shipped H100
// table included), price() follows docs/calibration.md's rule on hand-worked numbers (exact row,
// nearest row's rate, [device] roofline, ties to the earlier row), bad files fail naming
// file:line: key = value, and rows files (shapes without times) read and write too.
#include "calibration/table/kernel_table.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

namespace commbound::calibration {
namespace {

using namespace commbound::model;

constexpr double kMs = 1e-3;

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

KernelTiming ms(double p10, double p50, double p90) { return {p10 * kMs, p50 * kMs, p90 * kMs}; }

// [device] 1000 GB/s copy and 100 TFLOP/s GEMM; rows with round times for hand-worked prices.
KernelTable small_table() {
  KernelTable t;
  TableProvenance p;
  p.gpu = "Test GPU";
  p.date = "2026-01-02";
  p.tool_commit = "abc1234";
  t.set_provenance(p);
  t.set_device({1e12, 1e14});
  t.add(GemmRow{{1024, 1024, 1024, GemmLayout::forward}, ms(0.039, 0.04, 0.045)});
  t.add(GemmRow{{4096, 4096, 4096, GemmLayout::forward}, ms(2.0, 2.0, 2.1)});
  t.add(AttentionRow{"commbound", {Direction::forward, 1, 8, 8, 512, 128, true}, ms(0.02, 0.02, 0.02)});
  t.add(AttentionRow{"commbound", {Direction::forward, 1, 8, 8, 2048, 128, true}, ms(0.5, 0.5, 0.5)});
  t.add(MemoryBoundRow{{"rmsnorm_forward", 1024, 1024}, 4196352, ms(0.01, 0.01, 0.01)});
  return t;
}

// --- shapes -------------------------------------------------------------------------------------

TEST(KernelShape, FlopsBytesAndNames) {
  const GemmShape g{8192, 12288, 4096, GemmLayout::forward};
  EXPECT_DOUBLE_EQ(g.flops(), 2.0 * 8192 * 12288 * 4096);
  EXPECT_DOUBLE_EQ(g.bytes(), 2.0 * (8192.0 * 4096 + 4096.0 * 12288 + 8192.0 * 12288));
  // Causal: half of 4 b s^2 h d; backward 2.5 x. Bytes: q, k, v read and o written (bf16).
  const AttentionShape a{Direction::forward, 2, 32, 8, 4096, 128, true};
  EXPECT_DOUBLE_EQ(a.flops(), 4.0 * 2 * 4096.0 * 4096 * 32 * 128 / 2);
  EXPECT_DOUBLE_EQ(a.bytes(), 2.0 * 2 * 4096 * 128 * (2 * 32 + 2 * 8));
  AttentionShape b = a;
  b.direction = Direction::backward;
  EXPECT_DOUBLE_EQ(b.flops(), 2.5 * a.flops());
  EXPECT_DOUBLE_EQ(b.bytes(), 2 * a.bytes());
  // One cross-entropy byte count: bf16 logits read, targets, loss and lse 4 B a token.
  EXPECT_DOUBLE_EQ((MemoryBoundShape{"cross_entropy_forward", 8192, 16000}).bytes(), 2.0 * 8192 * 16000 + 12 * 8192);
  EXPECT_EQ(describe(g), "gemm forward 8192x12288x4096");
  EXPECT_EQ(describe(b), "attention backward b2 h32/8 s4096 d128");
  EXPECT_EQ(describe(MemoryBoundShape{"rmsnorm_forward", 8192, 4096}), "rmsnorm_forward 8192x4096");
  EXPECT_EQ(describe(std::monostate{}), "");
}

// --- price() ------------------------------------------------------------------------------------

TEST(Price, ExactShapesCostTheirP50) {
  const KernelTable t = small_table();
  const Priced p = t.price(GemmShape{1024, 1024, 1024, GemmLayout::forward});
  EXPECT_EQ(p.match, Match::exact);
  EXPECT_DOUBLE_EQ(p.seconds, 0.04 * kMs);
  EXPECT_DOUBLE_EQ(t.price(MemoryBoundShape{"rmsnorm_forward", 1024, 1024}).seconds, 0.01 * kMs);
  EXPECT_EQ(t.price(std::monostate{}).seconds, 0);
}

TEST(Price, NearestRowLendsItsRate) {
  const KernelTable t = small_table();
  // 2048 x 1024 x 1024: log-distance (ln 2)^2 to 1024^3, (ln 2)^2 + 2 (ln 4)^2 to 4096^3. The 1024^3
  // row's FLOP/s on twice the FLOPs: twice its 0.04 ms.
  Priced p = t.price(GemmShape{2048, 1024, 1024, GemmLayout::forward});
  EXPECT_EQ(p.match, Match::nearest);
  EXPECT_DOUBLE_EQ(p.seconds, 0.08 * kMs);
  // rmsnorm_forward at 2048 tokens: the row's bytes/s on (4 x 2048 x 1024 + 2 x 1024) bytes where
  // the row moves 4 x 1024 x 1024 + 2 x 1024 = 4196352.
  p = t.price(MemoryBoundShape{"rmsnorm_forward", 2048, 1024});
  EXPECT_EQ(p.match, Match::nearest);
  EXPECT_DOUBLE_EQ(p.seconds, 0.01 * kMs * 8390656.0 / 4196352.0);
  // seq 1024 lies ln 2 from both attention rows: the earlier (seq 512) wins, with 4x its FLOPs.
  p = t.price(AttentionShape{Direction::forward, 1, 8, 8, 1024, 128, true});
  EXPECT_EQ(p.match, Match::nearest);
  EXPECT_DOUBLE_EQ(p.seconds, 4 * 0.02 * kMs);
  // Non-causal attention falls back on the causal rows (none of its own): the nearest, twice the
  // FLOPs of a causal one.
  EXPECT_DOUBLE_EQ(t.price(AttentionShape{Direction::forward, 1, 8, 8, 512, 128, false}).seconds, 2 * 0.02 * kMs);
}

TEST(Price, NoComparableRowIsTheDeviceRoofline) {
  const KernelTable t = small_table();
  // No wgrad row: max(2 x 1024^3 / 1e14, 2 x 3 x 1024^2 / 1e12) = 2.147483648e-5 s, compute-bound.
  Priced p = t.price(GemmShape{1024, 1024, 1024, GemmLayout::wgrad});
  EXPECT_EQ(p.match, Match::roofline);
  EXPECT_DOUBLE_EQ(p.seconds, 2.147483648e-5);
  // No swiglu row: its 6 x 1000 x 500 bytes at 1e12 B/s.
  p = t.price(MemoryBoundShape{"swiglu_forward", 1000, 500});
  EXPECT_EQ(p.match, Match::roofline);
  EXPECT_DOUBLE_EQ(p.seconds, 3e-6);
  // Another implementation or direction is not comparable.
  EXPECT_EQ(t.price(AttentionShape{Direction::forward, 1, 8, 8, 512, 128, true}, "cudnn").match, Match::roofline);
  EXPECT_EQ(t.price(AttentionShape{Direction::backward, 1, 8, 8, 512, 128, true}).match, Match::roofline);
}

// An attention of a head_dim no row has takes the FLOP rate of the nearest measured head_dim. The
// table's forward rows are all of head_dim 128: at head_dim 192 the seq-512 row (the same sizes
// otherwise) lends its rate to 192 / 128 times its FLOPs; at head_dim 64, half of them.
TEST(Price, AnUnmeasuredHeadDimTakesTheNearestMeasuredOnesRate) {
  const KernelTable t = small_table();
  Priced p = t.price(AttentionShape{Direction::forward, 1, 8, 8, 512, 192, true});
  EXPECT_EQ(p.match, Match::nearest);
  EXPECT_DOUBLE_EQ(p.seconds, 0.02 * kMs * 192 / 128);
  EXPECT_DOUBLE_EQ(t.price(AttentionShape{Direction::forward, 1, 8, 8, 512, 64, true}).seconds, 0.02 * kMs / 2);
  // With a head_dim-64 row too, head_dim 80 is nearer 64 (ln 1.25) than 128 (ln 1.6): that row's
  // rate on 80 / 64 of its FLOPs; head_dim 128 keeps its own rows.
  KernelTable both = small_table();
  both.add(AttentionRow{"commbound", {Direction::forward, 1, 8, 8, 512, 64, true}, ms(0.016, 0.016, 0.016)});
  EXPECT_DOUBLE_EQ(both.price(AttentionShape{Direction::forward, 1, 8, 8, 512, 80, true}).seconds, 0.016 * kMs * 80 / 64);
  EXPECT_DOUBLE_EQ(both.price(AttentionShape{Direction::forward, 1, 8, 8, 512, 128, true}).seconds, 0.02 * kMs);
}

// --- reading and writing ------------------------------------------------------------------------

void expect_same_timing(const std::optional<KernelTiming>& a, const std::optional<KernelTiming>& b) {
  ASSERT_EQ(a.has_value(), b.has_value());
  if (!a) return;
  // ms in the file, seconds inside: x 1e-3 and / 1e-3 may each round once.
  EXPECT_DOUBLE_EQ(a->p10_s, b->p10_s);
  EXPECT_DOUBLE_EQ(a->p50_s, b->p50_s);
  EXPECT_DOUBLE_EQ(a->p90_s, b->p90_s);
}

void expect_same_table(const KernelTable& a, const KernelTable& b) {
  ASSERT_EQ(a.gemms().size(), b.gemms().size());
  ASSERT_EQ(a.attentions().size(), b.attentions().size());
  ASSERT_EQ(a.memory_bounds().size(), b.memory_bounds().size());
  for (std::size_t i = 0; i < a.gemms().size(); ++i) {
    EXPECT_EQ(a.gemms()[i].shape, b.gemms()[i].shape) << i;
    expect_same_timing(a.gemms()[i].time, b.gemms()[i].time);
  }
  for (std::size_t i = 0; i < a.attentions().size(); ++i) {
    EXPECT_EQ(a.attentions()[i].implementation, b.attentions()[i].implementation);
    EXPECT_EQ(a.attentions()[i].shape, b.attentions()[i].shape) << i;
    expect_same_timing(a.attentions()[i].time, b.attentions()[i].time);
  }
  for (std::size_t i = 0; i < a.memory_bounds().size(); ++i) {
    EXPECT_EQ(a.memory_bounds()[i].shape, b.memory_bounds()[i].shape) << i;
    EXPECT_EQ(a.memory_bounds()[i].bytes, b.memory_bounds()[i].bytes);
    expect_same_timing(a.memory_bounds()[i].time, b.memory_bounds()[i].time);
  }
  ASSERT_EQ(a.has_provenance(), b.has_provenance());
  if (a.has_provenance()) {
    const TableProvenance &p = a.provenance(), &q = b.provenance();
    EXPECT_EQ(p.gpu, q.gpu);
    EXPECT_EQ(p.sm_count, q.sm_count);
    EXPECT_EQ(p.sm_clock_max_hz, q.sm_clock_max_hz);
    EXPECT_EQ(p.memory_clock_hz, q.memory_clock_hz);
    EXPECT_EQ(p.memory_bytes, q.memory_bytes);
    EXPECT_EQ(p.measurement_s, q.measurement_s);
    EXPECT_EQ(p.driver, q.driver);
    EXPECT_EQ(p.cuda_runtime, q.cuda_runtime);
    EXPECT_EQ(p.cublaslt, q.cublaslt);
    EXPECT_EQ(p.date, q.date);
    EXPECT_EQ(p.tool_commit, q.tool_commit);
    EXPECT_EQ(p.timed_runs, q.timed_runs);
    EXPECT_EQ(p.input_rotation, q.input_rotation);
    EXPECT_EQ(p.derived, q.derived);
    EXPECT_EQ(p.derived_from, q.derived_from);
    EXPECT_EQ(p.derivation, q.derivation);
  }
  ASSERT_EQ(a.has_device(), b.has_device());
  if (a.has_device()) {
    EXPECT_EQ(a.device().copy_bytes_per_s, b.device().copy_bytes_per_s);
    EXPECT_EQ(a.device().gemm_flops_per_s, b.device().gemm_flops_per_s);
  }
  ASSERT_EQ(a.power().has_value(), b.power().has_value());
  if (a.power()) {
    const TablePower &p = *a.power(), &q = *b.power();
    EXPECT_EQ(p.idle_w, q.idle_w);
    EXPECT_EQ(p.gemm_w, q.gemm_w);
    EXPECT_EQ(p.memory_bound_w, q.memory_bound_w);
    EXPECT_EQ(p.gemm_sm_clock_hz, q.gemm_sm_clock_hz);
    EXPECT_EQ(p.mixed_w, q.mixed_w);
    EXPECT_EQ(p.mixed_compute_fraction, q.mixed_compute_fraction);
    EXPECT_EQ(p.power_limit_w, q.power_limit_w);
    ASSERT_EQ(p.sample_period_s.has_value(), q.sample_period_s.has_value());
    if (p.sample_period_s) {
      EXPECT_DOUBLE_EQ(*p.sample_period_s, *q.sample_period_s);
    }
    EXPECT_EQ(p.phase_s, q.phase_s);
    EXPECT_EQ(p.limit_gemm_share, q.limit_gemm_share);
    EXPECT_EQ(p.limit_gemm_slowdown, q.limit_gemm_slowdown);
  }
  ASSERT_EQ(a.fp8_gemms().size(), b.fp8_gemms().size());
  for (std::size_t i = 0; i < a.fp8_gemms().size(); ++i) {
    const Fp8GemmRow &x = a.fp8_gemms()[i], &y = b.fp8_gemms()[i];
    EXPECT_EQ(std::tie(x.m, x.n, x.k, x.scaling), std::tie(y.m, y.n, y.k, y.scaling));
    EXPECT_DOUBLE_EQ(x.bf16_s, y.bf16_s);
    EXPECT_DOUBLE_EQ(x.fp8_s, y.fp8_s);
  }
  ASSERT_EQ(a.elementwise_rows().size(), b.elementwise_rows().size());
  for (std::size_t i = 0; i < a.elementwise_rows().size(); ++i) {
    const ElementwiseRow &x = a.elementwise_rows()[i], &y = b.elementwise_rows()[i];
    EXPECT_EQ(std::tie(x.path, x.op, x.elements), std::tie(y.path, y.op, y.elements));
    EXPECT_DOUBLE_EQ(x.bytes, y.bytes);
    EXPECT_DOUBLE_EQ(x.queued_s, y.queued_s);
  }
  ASSERT_EQ(a.contention().has_value(), b.contention().has_value());
  if (a.contention()) {
    EXPECT_EQ(a.contention()->comm_sms, b.contention()->comm_sms);
    EXPECT_EQ(a.contention()->comm_bytes_per_s, b.contention()->comm_bytes_per_s);
    EXPECT_EQ(a.contention()->gemm_factor, b.contention()->gemm_factor);
    EXPECT_EQ(a.contention()->attention_factor, b.contention()->attention_factor);
  }
}

TEST(KernelTableFile, EverySectionRoundTrips) {
  KernelTable t = small_table();
  TableProvenance p = t.provenance();
  p.sm_count = 132;
  p.sm_clock_max_hz = 1980e6;
  p.memory_clock_hz = 2619e6;
  p.memory_bytes = 85.0175e9;
  p.measurement_s = 85.5556;
  p.driver = "580.159.04";
  p.cuda_runtime = "13.0";
  p.cublaslt = "13.1.0";
  p.timed_runs = "adaptive \"quoted\" \\ text";
  p.input_rotation = "3 x L2";
  t.set_provenance(p);
  t.add(AttentionRow{"cudnn", {Direction::backward, 2, 32, 8, 4096, 128, false}, ms(1.0 / 3, 0.4, 0.5)});
  TablePower w;
  w.idle_w = 135.254;
  w.gemm_w = 699.209;
  w.memory_bound_w = 405.226;
  w.gemm_sm_clock_hz = 1352.48e6;
  w.mixed_w = 674.771;
  w.mixed_compute_fraction = 0.496485;
  w.power_limit_w = 700;
  w.sample_period_s = 0.02;
  w.phase_s = 3;
  w.limit_gemm_share = {0.255, 0.581, 1.0};
  w.limit_gemm_slowdown = {1.0097, 1.0641, 1.1475};
  t.set_power(w);
  t.set_contention({24, 100.06e9, 1.23638, 1.01287});
  t.add(Fp8GemmRow{8192, 1280, 8192, "tensorwise", 0.2633e-3, 0.1736e-3});
  t.add(Fp8GemmRow{8192, 1280, 8192, "rowwise", 0.2633e-3, 0.183e-3});
  EXPECT_TRUE(t.add(ElementwiseRow{"vectorized", "add_bf16", 4096, 24576, 2.118e-6}));
  EXPECT_TRUE(t.add(ElementwiseRow{"unrolled", "cast_bf16_to_fp32", 4096, 24576, 3.31e-6}));
  EXPECT_FALSE(t.add(ElementwiseRow{"vectorized", "add_bf16", 4096, 1, 1e-6}));  // held already
  std::ostringstream text;
  t.write(text, {"a comment", "another"});
  EXPECT_EQ(text.str().rfind("# a comment\n# another\n\n[provenance]\n", 0), 0u) << text.str();
  const std::string path = temp_file("round_trip.toml", text.str());
  auto back = KernelTable::load(path, path);
  ASSERT_TRUE(back) << back.error().message << "\n" << text.str();
  expect_same_table(t, *back);
}

// The power limit's slowdown, between the measured points of a curve (share, slowdown) = (0.2,
// 1.0), (0.6, 1.1), (1.0, 1.2): linear from (0, 1) to the first point, between points, and flat
// at the last: at 0.4, halfway from 1.0 to 1.1; at 0.8, halfway from 1.1 to 1.2; at 0.1 and below
// the first point, 1; without a curve, 1 everywhere.
TEST(KernelTablePower, LimitSlowdownInterpolatesTheMeasuredCurve) {
  TablePower p;
  EXPECT_EQ(p.limit_slowdown(0.9), 1.0);
  p.limit_gemm_share = {0.2, 0.6, 1.0};
  p.limit_gemm_slowdown = {1.0, 1.1, 1.2};
  EXPECT_DOUBLE_EQ(p.limit_slowdown(0.0), 1.0);
  EXPECT_DOUBLE_EQ(p.limit_slowdown(0.1), 1.0);
  EXPECT_DOUBLE_EQ(p.limit_slowdown(0.4), 1.05);
  EXPECT_DOUBLE_EQ(p.limit_slowdown(0.8), 1.15);
  EXPECT_DOUBLE_EQ(p.limit_slowdown(1.0), 1.2);
  p.limit_gemm_slowdown = {1.02, 1.1, 1.2};  // a first point above 1: from (0, 1) up to it
  EXPECT_DOUBLE_EQ(p.limit_slowdown(0.1), 1.01);
}

TEST(KernelTableFile, TheShippedH100TableRoundTrips) {
  auto shipped = KernelTable::load("calibration/h100-sxm5.toml", "calibration/h100-sxm5.toml");
  ASSERT_TRUE(shipped) << shipped.error().message;
  EXPECT_GT(shipped->gemms().size(), 100u);
  std::ostringstream text;
  shipped->write(text);
  const std::string path = temp_file("h100_again.toml", text.str());
  auto back = KernelTable::load(path, path);
  ASSERT_TRUE(back) << back.error().message;
  expect_same_table(*shipped, *back);
}

TEST(KernelTableFile, RowsWithoutTimesAreAShapesFile) {
  KernelTable shapes;
  shapes.add(GemmRow{{8192, 12288, 4096, GemmLayout::forward}, {}});
  shapes.add(AttentionRow{"commbound", {Direction::backward, 2, 32, 32, 4096, 128, true}, {}});
  shapes.add(MemoryBoundRow{{"adamw", 1, 1 << 30}, 0, {}});
  EXPECT_FALSE(shapes.add(GemmRow{{8192, 12288, 4096, GemmLayout::forward}, ms(1, 1, 1)}));  // held already
  std::ostringstream text;
  shapes.write(text);
  // Only the shape keys: no implementation, bytes or times.
  EXPECT_EQ(text.str().find("implementation"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("bytes"), std::string::npos);
  EXPECT_EQ(text.str().find("p50_ms"), std::string::npos);
  const std::string path = temp_file("shapes.toml", text.str());
  auto back = KernelTable::load(path, path, TableContent::rows);
  ASSERT_TRUE(back) << back.error().message;
  expect_same_table(shapes, *back);
  // Not a table to price from: no [provenance], no times.
  auto strict = KernelTable::load(path, path);
  ASSERT_FALSE(strict);
  EXPECT_NE(strict.error().message.find("missing table [provenance]"), std::string::npos) << strict.error().message;
}

struct BadFile {
  const char* name;
  const char* text;
  TableContent content;
  const char* expected;  // after "<file>:"
};
class BadFiles : public ::testing::TestWithParam<BadFile> {};
TEST_P(BadFiles, NameFileLineKeyAndValue) {
  const std::string path = temp_file(std::string("bad_") + GetParam().name + ".toml", GetParam().text);
  auto t = KernelTable::load(path, path, GetParam().content);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message.rfind(path + ":", 0), 0u) << t.error().message;
  EXPECT_NE(t.error().message.find(GetParam().expected), std::string::npos) << t.error().message;
}
INSTANTIATE_TEST_SUITE_P(
    Files, BadFiles,
    ::testing::Values(
        BadFile{"unknown_key", "[[gemm]]\nm = 1\nn = 2\nk = 3\nlayout = \"forward\"\nmm = 7\n", TableContent::rows,
                ":6: gemm.mm = 7: unknown key in [gemm]"},
        BadFile{"layout", "[[gemm]]\nm = 1\nn = 2\nk = 3\nlayout = \"sideways\"\n", TableContent::rows,
                ":5: gemm.layout = \"sideways\": must be one of: forward, dgrad, wgrad"},
        BadFile{"kv_heads",
                "[[attention]]\ndirection = \"forward\"\nbatch = 1\nheads = 32\nkv_heads = 5\nseq = 128\n"
                "head_dim = 128\ncausal = true\n",
                TableContent::rows, ":5: attention.kv_heads = 5: must divide heads"},
        BadFile{"one_time", "[[gemm]]\nm = 1\nn = 2\nk = 3\nlayout = \"forward\"\np50_ms = 1.0\n", TableContent::rows,
                ":1: [gemm] gemm.p10_ms: missing (required)"},
        BadFile{"timed_bytes",
                "[[memory_bound]]\nop = \"adamw\"\ntokens = 1\nwidth = 8\np10_ms = 1.0\np50_ms = 1.0\np90_ms = 1.0\n",
                TableContent::rows, "memory_bound.bytes: missing (required)"},
        BadFile{"duplicate", "[[gemm]]\nm = 1\nn = 2\nk = 3\nlayout = \"forward\"\n[[gemm]]\nm = 1\nn = 2\nk = 3\nlayout = \"forward\"\n",
                TableContent::rows, ":6: [[gemm]]: the same shape as the row at"},
        BadFile{"section", "[devices]\ncopy_GBps = 1.0\n", TableContent::rows, "devices = (a table): unknown key"},
        BadFile{"elementwise_path",
                "[[pytorch_elementwise]]\npath = \"vector\"\nop = \"add\"\nelements = 4\nbytes = 24\nqueued_us = 2.0\n",
                TableContent::rows,
                ":2: pytorch_elementwise.path = \"vector\": must be one of: vectorized, unrolled, indexed, reduction"},
        BadFile{"elementwise_time",
                "[[pytorch_elementwise]]\npath = \"indexed\"\nop = \"mul\"\nelements = 4\nbytes = 24\nqueued_us = -2.0\n",
                TableContent::rows, ":6: pytorch_elementwise.queued_us = -2.0"},
        BadFile{"elementwise_duplicate",
                "[[pytorch_elementwise]]\npath = \"indexed\"\nop = \"mul\"\nelements = 4\nbytes = 24\nqueued_us = 2.0\n"
                "[[pytorch_elementwise]]\npath = \"indexed\"\nop = \"mul\"\nelements = 4\nbytes = 24\nqueued_us = 3.0\n",
                TableContent::rows, ":7: [[pytorch_elementwise]]: the same shape as the row at"}));

TEST(TableName, ShippedPresetNamesTheTableElseTheDeviceName) {
  // calibration/gpus.toml: h100-sxm5 has device_name "NVIDIA H100 80GB HBM3".
  EXPECT_EQ(table_name_for_device("calibration/gpus.toml", "NVIDIA H100 80GB HBM3"), "h100-sxm5");
  EXPECT_EQ(table_name_for_device("calibration/gpus.toml", "NVIDIA GeForce RTX 4090"), "nvidia-geforce-rtx-4090");
  EXPECT_EQ(table_name_for_device("no/such/gpus.toml", "NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
}

}  // namespace
}  // namespace commbound::calibration

namespace commbound::calibration {
namespace {

using namespace commbound::model;

// small_table() with three residual_add rows exactly on t = 4 us + bytes / (3000 GB/s).
KernelTable table_on_the_streaming_line() {
  KernelTable t = small_table();
  const double fixed_ms = 0.004, ms_per_byte = 1.0 / 3e9;
  for (std::int64_t width : {1024, 4096, 16384}) {
    const MemoryBoundShape s{"residual_add", 1024, width};
    const double p50 = fixed_ms + s.bytes() * ms_per_byte;
    t.add(MemoryBoundRow{s, s.bytes(), ms(p50, p50, p50)});
  }
  return t;
}

// A framework's elementwise kernel is priced on the line t = fixed + bytes / rate through the
// measured residual_add rows. Rows placed exactly on t = 4 us + bytes / (3000 GB/s) give that
// line back: 6 MB cost 4 + 2 = 6 us; a 4-byte kernel costs the 4 us fixed time.
TEST(Price, ElementwiseKernelsFollowTheMeasuredStreamingLine) {
  KernelTable t = table_on_the_streaming_line();
  const Priced six_mb = t.price(ElementwiseShape{"mul", 1000000, 6e6, ElementwiseKind::streaming});
  EXPECT_EQ(six_mb.match, Match::nearest);
  EXPECT_NEAR(six_mb.seconds, 6e-6, 1e-12);
  EXPECT_NEAR(t.price(ElementwiseShape{"rsqrt", 1, 4, ElementwiseKind::streaming}).seconds, 4e-6, 1e-11);
  // One rmsnorm_forward row is no line: a reduction falls back to the [device] roofline (1000 GB/s).
  const Priced reduction = t.price(ElementwiseShape{"mean", 1000000, 4e6, ElementwiseKind::reduction});
  EXPECT_EQ(reduction.match, Match::roofline);
  EXPECT_DOUBLE_EQ(reduction.seconds, 4e6 / 1e12);
  EXPECT_EQ(describe(ElementwiseShape{"mean", 1000000, 4e6, ElementwiseKind::reduction}),
            "reduction mean 1000000 elements 4.0 MB");
}

// The line is fitted to each row's relative error. Five rows on t = 4 us + bytes / (3000 GB/s)
// from 25 to 400 MB and one 1.6 GB row 15% above that line (as the largest H100 residual_add
// row is): a framework's 25 MB kernel should still cost about what its neighbours say, 4 + 8.33 =
// 12.33 us. Least squares on absolute errors lets the big row pull the intercept below zero and
// prices it at 9.7 us (-22%); weighted by 1 / t^2 the fit gives t0 = 3.41 us and 2.87 TB/s, so
// 12.10 us (-1.9%), and the tiny kernel still pays a fixed cost of about 3.4 us.
TEST(Price, ElementwiseLineFollowsTheSmallRowsDespiteASlowLargeOne) {
  KernelTable t = small_table();
  const double fixed_ms = 0.004, ms_per_byte = 1.0 / 3e9;
  for (std::int64_t width : {1024, 2048, 4096, 8192, 16384, 65536}) {
    const MemoryBoundShape s{"residual_add", 4096, width};
    const double line = fixed_ms + s.bytes() * ms_per_byte;
    const double p50 = width == 65536 ? 1.15 * line : line;
    t.add(MemoryBoundRow{s, s.bytes(), ms(p50, p50, p50)});
  }
  const double bytes = MemoryBoundShape{"residual_add", 4096, 1024}.bytes();  // 25.2 MB
  const double line_s = 4e-6 + bytes / 3e12;
  const auto elements = static_cast<std::int64_t>(bytes / 6);  // residual_add: 3 bf16 operands
  const double priced_s = t.price(ElementwiseShape{"add", elements, bytes, ElementwiseKind::streaming}).seconds;
  EXPECT_NEAR(priced_s / line_s, 1, 0.025);
  EXPECT_LT(priced_s / line_s, 1);  // the slow row still pulls a little
  const double tiny_s = t.price(ElementwiseShape{"rsqrt", 1, 4, ElementwiseKind::streaming}).seconds;
  EXPECT_GT(tiny_s, 3e-6);
  EXPECT_LT(tiny_s, 4e-6);
}

// An indexed kernel (an operand strided or broadcast: PyTorch's per-element offset path) costs at
// least its elements at the SMs' issue rate: 10,485,760 elements in 35.5 us over H200's 132 SMs at
// 1980 MHz (kernel_table.cpp's source), i.e. 1.128 elements per SM per cycle. On a table that
// names 132 SMs at 1980 MHz, 33,554,432 elements (one [8192 x 4096] product) take 33,554,432 /
// 10,485,760 x 35.5 us = 113.6 us, where the streaming line (4 us + 201 MB / 3000 GB/s) says
// 71.1 us; a 1000-element kernel stays on the line (4 us); the same kernel marked streaming, or
// on a table that does not name its SMs, stays on the line too.
TEST(Price, IndexedElementwiseKernelsRunAtTheSmIssueRate) {
  KernelTable t = table_on_the_streaming_line();
  const std::int64_t elements = 8192L * 4096;
  const double bytes = 6.0 * elements;  // an fp32 operand, a broadcast one and a bf16 output: 201 MB
  const ElementwiseShape indexed{"mul", elements, bytes, ElementwiseKind::indexed};
  const ElementwiseShape streaming{"mul", elements, bytes, ElementwiseKind::streaming};
  const double line_s = 4e-6 + bytes / 3e12;
  EXPECT_NEAR(t.price(indexed).seconds, line_s, 1e-11);  // small_table names no SMs
  TableProvenance p = t.provenance();
  p.sm_count = 132;
  p.sm_clock_max_hz = 1980e6;
  t.set_provenance(p);
  EXPECT_NEAR(t.price(indexed).seconds, 35.5e-6 * elements / 10485760.0, 1e-10);
  EXPECT_NEAR(t.price(streaming).seconds, line_s, 1e-11);
  EXPECT_NEAR(t.price(ElementwiseShape{"mul", 1000, 6000, ElementwiseKind::indexed}).seconds, 4e-6 + 6000 / 3e12, 1e-11);
  EXPECT_EQ(describe(indexed), "indexed mul 33554432 elements 201.3 MB");
}


// PyTorch's measured elementwise kernels price a framework's: rows (elements, bytes, us) of
//   vectorized add_bf16 (6 B an element): (1000, 6000, 2), (1e6, 6e6, 4)
//   vectorized mul_fp32 (12 B an element): (1000, 12000, 2.5), (1e6, 12e6, 6)
//   indexed mul_weight (4 B an element): (1000, 4000, 3), (1e6, 4e6, 9)
//   indexed mul_rsqrt (8 B an element): (1000, 8000, 3), (1e6, 8e6, 12)
//   unrolled cast (6 B an element): (1000, 6000, 4), (1e6, 6e6, 10)
// A streaming kernel of 3e6 bytes at 6 B an element: add_bf16's rows, by bytes, a third of the
// way from 6000 to 6e6 bytes plus a little: 2 + 2 (3e6 - 6000) / (6e6 - 6000) us. At 12e6 bytes,
// beyond its largest row: that row's rate, 4 us x 2 = 8 us. A kernel of 2 elements and 10 bytes (5 B an
// element, nearer 6 than 12): add_bf16's smallest row, 2 us.
// An indexed kernel of 5e5 elements at 8 B an element takes mul_rsqrt's rows by elements:
// 3 + 9 (5e5 - 1000) / (1e6 - 1000) us; at 4 B, mul_weight's: 3 + 6 (...). At 6 B an element,
// between the two (log-distance ln 1.5 from 4, ln 4/3 from 8): mul_rsqrt's. A cast of 5e5
// elements: 4 + 6 (5e5 - 1000) / (1e6 - 1000) us. A reduction has no rows: the table's line.
TEST(Price, FrameworkElementwiseKernelsArePricedByPyTorchsKernelOnTheirPath) {
  KernelTable t = small_table();
  const auto row = [&](const char* path, const char* op, double elements, double bytes_per_element, double us) {
    t.add(ElementwiseRow{path, op, static_cast<std::int64_t>(elements), elements * bytes_per_element, us * 1e-6});
  };
  row("vectorized", "add_bf16", 1e6, 6, 4);  // rows kept sorted whatever the order they come in
  row("vectorized", "add_bf16", 1000, 6, 2);
  row("vectorized", "mul_fp32", 1000, 12, 2.5);
  row("vectorized", "mul_fp32", 1e6, 12, 6);
  row("indexed", "mul_weight", 1000, 4, 3);
  row("indexed", "mul_weight", 1e6, 4, 9);
  row("indexed", "mul_rsqrt", 1000, 8, 3);
  row("indexed", "mul_rsqrt", 1e6, 8, 12);
  row("unrolled", "cast", 1000, 6, 4);
  row("unrolled", "cast", 1e6, 6, 10);
  const auto us = [&](ElementwiseKind kind, double elements, double bytes) {
    return t.price(ElementwiseShape{"k", static_cast<std::int64_t>(elements), bytes, kind}).seconds * 1e6;
  };
  EXPECT_NEAR(us(ElementwiseKind::streaming, 5e5, 3e6), 2 + 2 * (3e6 - 6000) / (6e6 - 6000), 1e-9);
  EXPECT_NEAR(us(ElementwiseKind::streaming, 2e6, 12e6), 8, 1e-9);
  EXPECT_NEAR(us(ElementwiseKind::streaming, 1e6, 12e6), 6, 1e-9);  // 12 B an element: mul_fp32's row
  EXPECT_NEAR(us(ElementwiseKind::streaming, 2, 10), 2, 1e-9);
  EXPECT_NEAR(us(ElementwiseKind::indexed, 5e5, 4e6), 3 + 9 * (5e5 - 1000) / (1e6 - 1000), 1e-9);
  EXPECT_NEAR(us(ElementwiseKind::indexed, 5e5, 2e6), 3 + 6 * (5e5 - 1000) / (1e6 - 1000), 1e-9);
  EXPECT_NEAR(us(ElementwiseKind::indexed, 5e5, 3e6), 3 + 9 * (5e5 - 1000) / (1e6 - 1000), 1e-9);
  EXPECT_NEAR(us(ElementwiseKind::cast, 5e5, 3e6), 4 + 6 * (5e5 - 1000) / (1e6 - 1000), 1e-9);
  EXPECT_EQ(t.price(ElementwiseShape{"k", 1000, 6000, ElementwiseKind::cast}).match, Match::nearest);
  // No reduction rows: the rmsnorm_forward line's roofline fallback (one row: the roofline).
  EXPECT_NEAR(us(ElementwiseKind::reduction, 1e6, 4e6), 4e6 / 1e12 * 1e6, 1e-9);
}

// Two ops at the same bytes per element are both the nearest: their prices are averaged.
TEST(Price, TiedPyTorchElementwiseOpsAreAveraged) {
  KernelTable t = small_table();
  t.add(ElementwiseRow{"indexed", "silu_chunk", 1000, 4000, 2e-6});
  t.add(ElementwiseRow{"indexed", "transpose_copy", 1000, 4000, 4e-6});
  EXPECT_NEAR(t.price(ElementwiseShape{"k", 10, 40, ElementwiseKind::indexed}).seconds, 3e-6, 1e-15);
}

// Reductions by width: mean rows at widths 2048 and 8192 (4 B an element), cold (1000 rows: 2 us;
// 1e6: 10 us at 2048 wide; 3 and 30 us at 8192) and a width-less mean (5 and 50 us). A mean over
// rows of 4096 is nearer neither width by log-distance (ln 2 from both): the two averaged, at 5e5
// elements halfway between their rows' interpolations. Rows of 5000 take the 8192-wide op (ln 1.64
// against ln 2.44). A reduction of unknown width takes the width-less rows. A column reduction,
// with no rows of its own, takes the row reductions'.
TEST(Price, AReductionTakesTheRowsOfItsWidth) {
  KernelTable t = small_table();
  const auto row = [&](const char* path, const char* op, double elements, long width, double us) {
    ElementwiseRow r{path, op, static_cast<std::int64_t>(elements), 4 * elements, us * 1e-6};
    r.width = width;
    t.add(r);
  };
  row("reduction", "mean_w2048", 1000, 2048, 2);
  row("reduction", "mean_w2048", 1e6, 2048, 10);
  row("reduction", "mean_w8192", 1000, 8192, 3);
  row("reduction", "mean_w8192", 1e6, 8192, 30);
  row("reduction", "mean", 1000, 0, 5);
  row("reduction", "mean", 1e6, 0, 50);
  const auto us = [&](long width, ElementwiseKind kind = ElementwiseKind::reduction) {
    ElementwiseShape s{"mean", 500000, 2e6, kind};
    s.width = width;
    return t.price(s).seconds * 1e6;
  };
  const double f = (5e5 - 1000) / (1e6 - 1000);
  EXPECT_NEAR(us(4096), ((2 + 8 * f) + (3 + 27 * f)) / 2, 1e-9);
  EXPECT_NEAR(us(5000), 3 + 27 * f, 1e-9);
  EXPECT_NEAR(us(2048), 2 + 8 * f, 1e-9);
  EXPECT_NEAR(us(0), 5 + 45 * f, 1e-9);
  EXPECT_NEAR(us(2048, ElementwiseKind::column_reduction), 2 + 8 * f, 1e-9);
  row("column_reduction", "sum_w2048", 1000, 2048, 1);
  row("column_reduction", "sum_w2048", 1e6, 2048, 4);
  EXPECT_NEAR(us(2048, ElementwiseKind::column_reduction), 1 + 3 * f, 1e-9);
}

// L2-warm rows: add_bf16 cold (1000 elements: 2 us, 1e6: 4 us, 1e7: 40 us) and warm (1000: 2 us,
// 1e6: 3 us), 6 B an element. A kernel of 5e5 elements: cold 2 + 2 (3e6 - 6000) / (6e6 - 6000) us,
// warm 2 + (3e6 - 6000) / (6e6 - 6000); reading 1e6 of its 3e6 bytes just written, a third of the
// way from cold to warm. One of 2e6 elements is past the largest warm row (its operands outgrow
// L2): cold, 4 + 36 (12e6 - 6e6) / (60e6 - 6e6) us, whatever it reads fresh.
TEST(Price, WhatAKernelReadsJustWrittenComesFromL2WhileItFits) {
  KernelTable t = small_table();
  const auto row = [&](double elements, double us, bool warm) {
    ElementwiseRow r{"vectorized", "add_bf16", static_cast<std::int64_t>(elements), 6 * elements, us * 1e-6};
    r.warm = warm;
    t.add(r);
  };
  row(1000, 2, false);
  row(1e6, 4, false);
  row(1e7, 40, false);
  row(1000, 2, true);
  row(1e6, 3, true);
  const auto us = [&](double elements, double fresh_bytes) {
    ElementwiseShape s{"add", static_cast<std::int64_t>(elements), 6 * elements, ElementwiseKind::streaming};
    s.fresh_bytes = fresh_bytes;
    return t.price(s).seconds * 1e6;
  };
  const double f = (3e6 - 6000) / (6e6 - 6000);
  EXPECT_NEAR(us(5e5, 0), 2 + 2 * f, 1e-9);
  EXPECT_NEAR(us(5e5, 3e6), 2 + f, 1e-9);
  EXPECT_NEAR(us(5e5, 1e6), (2 + 2 * f) + ((2 + f) - (2 + 2 * f)) / 3, 1e-9);
  EXPECT_NEAR(us(2e6, 12e6), 4 + 36 * (12e6 - 6e6) / (60e6 - 6e6), 1e-9);
}

}  // namespace
}  // namespace commbound::calibration
