// CPU references of the elementwise kernels against values worked out by hand.
#include "kernels/reference.hpp"
#include "kernels/timing.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace commbound::kernels {
namespace {

// bf16 keeps 8 bits of mantissa: 1 + 2^-8 rounds to even (1.0), 1 + 3 x 2^-8 up to 1 + 2^-6... and
// every value that fits in 8 bits survives exactly.
TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  EXPECT_EQ(from_bf16(to_bf16(-2.5f)), -2.5f);
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(NAN))));
}

// A row of a constant c: mean square c^2, so y = c / |c| * w = sign(c) * w (eps negligible).
TEST(RmsNormReference, ConstantRowGivesTheWeights) {
  const std::size_t hidden = 64;
  std::vector<bf16_bits> x(2 * hidden), w(hidden), y;
  for (std::size_t i = 0; i < hidden; ++i) {
    x[i] = to_bf16(3.0f);
    x[hidden + i] = to_bf16(-0.5f);
    w[i] = to_bf16(static_cast<float>(i) / 8);
  }
  rmsnorm_forward_reference(x, w, 2, hidden, 1e-12f, y);
  for (std::size_t i = 0; i < hidden; ++i) {
    EXPECT_FLOAT_EQ(from_bf16(y[i]), from_bf16(w[i]));
    EXPECT_FLOAT_EQ(from_bf16(y[hidden + i]), -from_bf16(w[i]));
  }
}

// silu(0) = 0; silu(2) = 2 / (1 + e^-2) = 1.7616; times up = 2: 3.523 (bf16: 3.515625 or 3.53125).
TEST(SwiGluReference, MatchesTheFormula) {
  std::vector<bf16_bits> gate = {to_bf16(0.0f), to_bf16(2.0f)}, up = {to_bf16(5.0f), to_bf16(2.0f)}, out;
  swiglu_forward_reference(gate, up, out);
  EXPECT_EQ(from_bf16(out[0]), 0.0f);
  EXPECT_NEAR(from_bf16(out[1]), 2.0f / (1.0f + std::exp(-2.0f)) * 2.0f, 0.02f);
}

// First AdamW step: m = (1 - b1) g, v = (1 - b2) g^2, bias-corrected m / sqrt(v) = sign(g), so
// p' = p (1 - lr wd) - lr sign(g) (up to eps).
TEST(AdamWReference, FirstStepMovesByTheLearningRate) {
  std::vector<float> p = {1.0f, -2.0f}, g = {0.5f, -4.0f}, m = {0, 0}, v = {0, 0};
  std::vector<bf16_bits> out;
  AdamWParams params;
  adamw_reference(p, g, m, v, params, out);
  EXPECT_NEAR(p[0], 1.0f * (1 - params.lr * params.weight_decay) - params.lr, 1e-6f);
  EXPECT_NEAR(p[1], -2.0f * (1 - params.lr * params.weight_decay) + params.lr, 1e-6f);
  EXPECT_NEAR(m[0], 0.05f, 1e-7f);
  EXPECT_NEAR(v[1], 0.05f * 16, 1e-6f);
  EXPECT_EQ(out[0], to_bf16(p[0]));
}

// A 2x3 times 3x2 product by hand, in each storage layout: [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]]
// = [[58, 64], [139, 154]].
TEST(GemmReference, AllLayoutsGiveTheSameProduct) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, at = {1, 4, 2, 5, 3, 6};       // [2x3] and its transpose
  const std::vector<float> b = {7, 8, 9, 10, 11, 12}, bt = {7, 9, 11, 8, 10, 12};  // [3x2] and its transpose
  auto bf = [](const std::vector<float>& v) {
    std::vector<bf16_bits> out;
    for (float f : v) out.push_back(to_bf16(f));
    return out;
  };
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      std::vector<bf16_bits> c;
      gemm_reference({2, 2, 3, ta, tb}, bf(ta ? at : a), bf(tb ? bt : b), c);
      ASSERT_EQ(c.size(), 4u);
      EXPECT_EQ(from_bf16(c[0]), 58);
      EXPECT_EQ(from_bf16(c[1]), 64);
      EXPECT_EQ(from_bf16(c[2]), 139);
      EXPECT_EQ(from_bf16(c[3]), 154);
    }
  }
}

// Nearest-rank percentiles of 1..11 ms: p10 = 2, p50 = 6, p90 = 10, whatever the input order.
TEST(Timing, PercentilesByNearestRank) {
  const Percentiles p = percentiles({11, 3, 7, 1, 9, 5, 2, 8, 4, 10, 6});
  EXPECT_EQ(p.p10_ms, 2);
  EXPECT_EQ(p.p50_ms, 6);
  EXPECT_EQ(p.p90_ms, 10);
  EXPECT_EQ(percentiles({4.5}).p90_ms, 4.5);
}

}  // namespace
}  // namespace commbound::kernels
