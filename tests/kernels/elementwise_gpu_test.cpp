// The elementwise kernels against their CPU references, on fresh random inputs, outputs poisoned
// (NaN) before the launch. Skips itself without a GPU.
#include "kernels/cuda_support.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace commbound::kernels {
namespace {

constexpr int kPoisonByte = 0xff;  // 0xffff is a bf16 NaN, 0xffffffff an fp32 NaN

std::vector<bf16_bits> random_bf16(std::size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<bf16_bits> out(n);
  for (auto& x : out) x = to_bf16(d(rng));
  return out;
}

class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

// bf16 outputs: one rounding each side, so within 2 ulps (2^-7 relative) plus a small absolute term.
void expect_bf16_close(const std::vector<bf16_bits>& got, const std::vector<bf16_bits>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float g = from_bf16(got[i]);
    const float w = from_bf16(want[i]);
    ASSERT_FALSE(std::isnan(g)) << "output " << i << " still poisoned";
    ASSERT_NEAR(g, w, std::fabs(w) * 0.0079f + 1e-3f) << "at " << i;
  }
}

TEST_F(GpuTest, RmsNormMatchesReference) {
  std::mt19937 rng(1);
  const std::size_t rows = 64, hidden = 4096;
  const auto x = random_bf16(rows * hidden, rng, 1.0f);
  const auto w = random_bf16(hidden, rng, 0.5f);
  std::vector<bf16_bits> want, got(rows * hidden);
  rmsnorm_forward_reference(x, w, rows, hidden, 1e-5f, want);
  auto dx = DeviceBuffer<bf16_bits>::create(x.size());
  auto dw = DeviceBuffer<bf16_bits>::create(w.size());
  auto dy = DeviceBuffer<bf16_bits>::create(got.size());
  ASSERT_TRUE(dx && dw && dy);
  ASSERT_TRUE(dx->upload(x.data()) && dw->upload(w.data()) && dy->fill_bytes(kPoisonByte));
  ASSERT_TRUE(rmsnorm_forward(dx->get(), dw->get(), rows, hidden, 1e-5f, dy->get()));
  ASSERT_TRUE(dy->download(got.data()));
  expect_bf16_close(got, want);
}

TEST_F(GpuTest, SwiGluMatchesReference) {
  std::mt19937 rng(2);
  const std::size_t n = 1 << 20;
  const auto gate = random_bf16(n, rng, 2.0f);
  const auto up = random_bf16(n, rng, 1.0f);
  std::vector<bf16_bits> want, got(n);
  swiglu_forward_reference(gate, up, want);
  auto dg = DeviceBuffer<bf16_bits>::create(n);
  auto du = DeviceBuffer<bf16_bits>::create(n);
  auto dout = DeviceBuffer<bf16_bits>::create(n);
  ASSERT_TRUE(dg && du && dout);
  ASSERT_TRUE(dg->upload(gate.data()) && du->upload(up.data()) && dout->fill_bytes(kPoisonByte));
  ASSERT_TRUE(swiglu_forward(dg->get(), du->get(), n, dout->get()));
  ASSERT_TRUE(dout->download(got.data()));
  expect_bf16_close(got, want);
}

TEST_F(GpuTest, AdamWMatchesReference) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 1.0f);
  const std::size_t n = 1 << 20;
  std::vector<float> p(n), g(n), m(n), v(n);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = d(rng);
    g[i] = d(rng);
    m[i] = 0.1f * d(rng);
    v[i] = std::fabs(d(rng));
  }
  AdamWParams params;
  params.step = 10;
  std::vector<float> rp = p, rm = m, rv = v;
  std::vector<bf16_bits> want, got(n);
  adamw_reference(rp, g, rm, rv, params, want);
  auto dp = DeviceBuffer<float>::create(n);
  auto dg = DeviceBuffer<float>::create(n);
  auto dm = DeviceBuffer<float>::create(n);
  auto dv = DeviceBuffer<float>::create(n);
  auto db = DeviceBuffer<bf16_bits>::create(n);
  ASSERT_TRUE(dp && dg && dm && dv && db);
  ASSERT_TRUE(dp->upload(p.data()) && dg->upload(g.data()) && dm->upload(m.data()) && dv->upload(v.data()) &&
              db->fill_bytes(kPoisonByte));
  ASSERT_TRUE(adamw_step(dp->get(), dg->get(), dm->get(), dv->get(), db->get(), n, params));
  ASSERT_TRUE(dp->download(p.data()) && db->download(got.data()));
  for (std::size_t i = 0; i < n; ++i) ASSERT_NEAR(p[i], rp[i], 1e-5f * (1 + std::fabs(rp[i]))) << i;
  expect_bf16_close(got, want);
}

// The three layouts of a linear layer (forward, input gradient, weight gradient) through cuBLASLt,
// against the CPU reference. Inner products of 192 terms: fp32 accumulation in both, so the
// difference is the order of summation plus one bf16 rounding.
TEST_F(GpuTest, GemmLayoutsMatchReference) {
  std::mt19937 rng(4);
  const std::size_t tokens = 256, in = 192, out = 320;
  const GemmShape shapes[] = {{tokens, out, in, false, true}, {tokens, in, out, false, false}, {out, in, tokens, true, false}};
  for (const GemmShape& s : shapes) {
    const auto a = random_bf16(s.m * s.k, rng, 1.0f);
    const auto b = random_bf16(s.k * s.n, rng, 1.0f);
    std::vector<bf16_bits> want, got(s.m * s.n);
    gemm_reference(s, a, b, want);
    auto da = DeviceBuffer<bf16_bits>::create(a.size());
    auto db = DeviceBuffer<bf16_bits>::create(b.size());
    auto dc = DeviceBuffer<bf16_bits>::create(got.size());
    ASSERT_TRUE(da && db && dc);
    ASSERT_TRUE(da->upload(a.data()) && db->upload(b.data()) && dc->fill_bytes(kPoisonByte));
    auto plan = GemmPlan::create(s, std::size_t{32} << 20);
    ASSERT_TRUE(plan) << plan.error().message;
    ASSERT_TRUE(plan->run(da->get(), db->get(), dc->get()));
    ASSERT_TRUE(dc->download(got.data()));
    for (std::size_t i = 0; i < got.size(); ++i) {
      const float g = from_bf16(got[i]);
      const float w = from_bf16(want[i]);
      ASSERT_NEAR(g, w, std::fabs(w) * 0.0079f + 0.05f) << "m=" << s.m << " n=" << s.n << " k=" << s.k << " at " << i;
    }
  }
}

}  // namespace
}  // namespace commbound::kernels
