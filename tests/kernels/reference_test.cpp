// CPU references of the elementwise kernels against values worked out by hand.
#include "kernels/host/reference.hpp"
#include "kernels/device/timing.hpp"

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

// Rows of ones (r = 1) and twos (r = 1/2), w = 1, eps = 0, dy = e_0. With g = dy w:
// dx = r g - x r^3 mean(g x), mean(g x) = x_0 / 4. Ones: (1, 0, 0, 0) - 1/4 = (3/4, -1/4, -1/4, -1/4).
// Twos: (1/2, 0, 0, 0) - 2 (1/8)(1/2) = (3/8, -1/8, -1/8, -1/8). dw = sum of dy x r = (1 + 1, 0, 0, 0),
// added to the 0.5 already accumulated.
TEST(RmsNormReference, BackwardByHand) {
  const std::size_t hidden = 4;
  std::vector<bf16_bits> x(2 * hidden), w(hidden, to_bf16(1.0f)), dy(2 * hidden, to_bf16(0.0f)), dx;
  for (std::size_t i = 0; i < hidden; ++i) {
    x[i] = to_bf16(1.0f);
    x[hidden + i] = to_bf16(2.0f);
  }
  dy[0] = dy[hidden] = to_bf16(1.0f);
  std::vector<float> dw(hidden, 0.5f);
  rmsnorm_backward_reference(dy, x, w, 2, hidden, 0.0f, dx, dw);
  const float want_dx[] = {0.75f, -0.25f, -0.25f, -0.25f, 0.375f, -0.125f, -0.125f, -0.125f};
  for (std::size_t i = 0; i < 2 * hidden; ++i) EXPECT_EQ(from_bf16(dx[i]), want_dx[i]) << i;
  EXPECT_EQ(dw[0], 2.5f);
  for (std::size_t i = 1; i < hidden; ++i) EXPECT_EQ(dw[i], 0.5f);
}

// head_dim 16 (the smallest the kernels take), theta 10000: pair i = (x_i, x_{i+8}) turns by
// pos * 10000^(-2i/16) rad, so pair 0 by pos and pair 4 by pos / 100. Position 0 keeps x; at
// position 1, x_0 = 1, x_4 = 2 -> x_0 = cos 1, x_8 = sin 1, x_4 = 2 cos 0.01, x_12 = 2 sin 0.01, and
// x_8 = 1 alone -> x_0 = -sin 1, x_8 = cos 1. The backward turns them back.
TEST(RopeReference, RotatesHalvesByPositionAndBack) {
  const RopeShape s{2, 2, 1, 1, 16};
  const auto table = rope_table(2, 16);
  ASSERT_EQ(table.size(), 2u * 8 * 2);
  EXPECT_EQ(table[0], 1.0f);                                      // cos 0
  EXPECT_EQ(table[1], 0.0f);                                      // sin 0
  EXPECT_FLOAT_EQ(table[8 * 2 + 0], std::cos(1.0f));              // pos 1, pair 0
  EXPECT_FLOAT_EQ(table[8 * 2 + 2 * 4 + 1], std::sin(0.01f));     // pos 1, pair 4: 10000^(-8/16)
  std::vector<bf16_bits> q(2 * 16, to_bf16(0.0f)), k(2 * 16, to_bf16(0.0f));
  for (std::size_t t = 0; t < 2; ++t) {
    q[t * 16 + 0] = to_bf16(1.0f);
    q[t * 16 + 4] = to_bf16(2.0f);
    k[t * 16 + 8] = to_bf16(1.0f);  // the second half of pair 0
  }
  const auto q0 = q, k0 = k;
  rope_forward_reference(q, k, table, s);
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(q[i], q0[i]) << "position 0 unchanged at " << i;
  EXPECT_EQ(from_bf16(q[16 + 0]), from_bf16(to_bf16(std::cos(1.0f))));
  EXPECT_EQ(from_bf16(q[16 + 8]), from_bf16(to_bf16(std::sin(1.0f))));
  EXPECT_EQ(from_bf16(q[16 + 4]), from_bf16(to_bf16(2 * std::cos(0.01f))));
  EXPECT_EQ(from_bf16(q[16 + 12]), from_bf16(to_bf16(2 * std::sin(0.01f))));
  EXPECT_EQ(from_bf16(k[16 + 0]), from_bf16(to_bf16(-std::sin(1.0f))));  // (0, 1) -> (-sin, cos)
  EXPECT_EQ(from_bf16(k[16 + 8]), from_bf16(to_bf16(std::cos(1.0f))));
  rope_backward_reference(q, k, table, s);
  for (std::size_t i = 0; i < q.size(); ++i) {
    EXPECT_NEAR(from_bf16(q[i]), from_bf16(q0[i]), 0.02f) << i;
    EXPECT_NEAR(from_bf16(k[i]), from_bf16(k0[i]), 0.02f) << i;
  }
}

// gate 0: s = 1/2, silu = 0, silu' = 1/2: dgate = dout up / 2, dup = 0. gate 2: s = 1/(1 + e^-2) =
// 0.8808, silu' = s (1 + 2 (1 - s)) = 1.0908; dout 1, up 3: dgate = 3.2724, dup = silu(2) = 1.7616.
TEST(SwiGluReference, BackwardMatchesTheDerivative) {
  std::vector<bf16_bits> dout = {to_bf16(4.0f), to_bf16(1.0f)}, gate = {to_bf16(0.0f), to_bf16(2.0f)},
                         up = {to_bf16(3.0f), to_bf16(3.0f)}, dgate, dup;
  swiglu_backward_reference(dout, gate, up, dgate, dup);
  EXPECT_EQ(from_bf16(dgate[0]), 6.0f);
  EXPECT_EQ(from_bf16(dup[0]), 0.0f);
  const float s = 1.0f / (1.0f + std::exp(-2.0f));
  EXPECT_NEAR(from_bf16(dgate[1]), 3.0f * s * (1.0f + 2.0f * (1.0f - s)), 0.02f);
  EXPECT_NEAR(from_bf16(dup[1]), 2.0f * s, 0.01f);
  // silu' against a central difference of silu at g = 2.
  auto silu = [](double g) { return g / (1.0 + std::exp(-g)); };
  EXPECT_NEAR(s * (1.0f + 2.0f * (1.0f - s)), (silu(2.001) - silu(1.999)) / 0.002, 1e-5);
}

// 1 + 2 = 3 exactly; 1 + 2^-8 lies halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even, 1.
TEST(ResidualAddReference, AddsAndRoundsOnce) {
  std::vector<bf16_bits> a = {to_bf16(1.0f), to_bf16(1.0f)}, b = {to_bf16(2.0f), to_bf16(1.0f / 256)}, out;
  residual_add_reference(a, b, out);
  EXPECT_EQ(from_bf16(out[0]), 3.0f);
  EXPECT_EQ(from_bf16(out[1]), 1.0f);
}

// A 3-row table [[0, 1], [10, 11], [20, 21]]: ids (2, 0, 2) gather rows 2, 0, 2; the backward adds
// token 0's and token 2's gradients into row 2 and token 1's into row 0, row 1 untouched.
TEST(EmbeddingReference, GathersAndScatterAdds) {
  const std::vector<bf16_bits> table = {to_bf16(0), to_bf16(1), to_bf16(10), to_bf16(11), to_bf16(20), to_bf16(21)};
  const std::vector<std::int32_t> ids = {2, 0, 2};
  std::vector<bf16_bits> out;
  embedding_forward_reference(ids, table, 2, out);
  const float want[] = {20, 21, 0, 1, 20, 21};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(from_bf16(out[i]), want[i]) << i;
  const std::vector<bf16_bits> dout = {to_bf16(1), to_bf16(2), to_bf16(3), to_bf16(4), to_bf16(5), to_bf16(6)};
  std::vector<float> dtable(6, 0.0f);
  embedding_backward_reference(dout, ids, 2, dtable);
  const float want_d[] = {3, 4, 0, 0, 1 + 5, 2 + 6};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(dtable[i], want_d[i]) << i;
}

// Vocab 4. Row 0 all zeros: lse = ln 4, loss = ln 4, softmax 1/4 each, so dlogits = (1/4 - [j = t])
// * scale = (1/8, -3/8, 1/8, 1/8) at scale 1/2, target 1. Row 1 (2, 0, 0, 0), target 0: lse =
// ln(e^2 + 3), loss = lse - 2. Row 2 ignored (target -100): loss 0, gradient 0.
TEST(CrossEntropyReference, LogSumExpAndSoftmaxByHand) {
  std::vector<bf16_bits> logits(12, to_bf16(0.0f)), dlogits;
  logits[4] = to_bf16(2.0f);
  const std::vector<std::int32_t> targets = {1, 0, -100};
  std::vector<float> loss, lse;
  cross_entropy_forward_reference(logits, targets, 4, loss, lse);
  EXPECT_FLOAT_EQ(lse[0], std::log(4.0f));
  EXPECT_FLOAT_EQ(loss[0], std::log(4.0f));
  EXPECT_FLOAT_EQ(lse[1], std::log(std::exp(2.0f) + 3));
  EXPECT_FLOAT_EQ(loss[1], std::log(std::exp(2.0f) + 3) - 2);
  EXPECT_EQ(loss[2], 0.0f);
  cross_entropy_backward_reference(logits, targets, lse, 4, 0.5f, dlogits);
  const float want_row0[] = {0.125f, -0.375f, 0.125f, 0.125f};
  for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(from_bf16(dlogits[j]), want_row0[j]) << j;
  const float p0 = std::exp(2.0f) / (std::exp(2.0f) + 3);
  EXPECT_NEAR(from_bf16(dlogits[4]), (p0 - 1) * 0.5f, 0.002f);
  for (std::size_t j = 8; j < 12; ++j) EXPECT_EQ(from_bf16(dlogits[j]), 0.0f) << j;
}

// (3, 4, 0, 12): 9 + 16 + 144 = 169 = 13^2.
TEST(GradNormReference, SumOfSquares) { EXPECT_EQ(grad_norm_squared_reference({3, 4, 0, 12}), 169.0); }

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

// A 2x3 times 3x2 product by hand, in each layout's storage: [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]]
// = [[58, 64], [139, 154]]. forward stores B transposed, dgrad neither, wgrad A transposed.
TEST(GemmReference, AllLayoutsGiveTheSameProduct) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, at = {1, 4, 2, 5, 3, 6};       // [2x3] and its transpose
  const std::vector<float> b = {7, 8, 9, 10, 11, 12}, bt = {7, 9, 11, 8, 10, 12};  // [3x2] and its transpose
  auto bf = [](const std::vector<float>& v) {
    std::vector<bf16_bits> out;
    for (float f : v) out.push_back(to_bf16(f));
    return out;
  };
  for (GemmLayout layout : {GemmLayout::forward, GemmLayout::dgrad, GemmLayout::wgrad}) {
    const bool ta = a_transposed(layout), tb = b_transposed(layout);
    std::vector<bf16_bits> c;
    gemm_reference({2, 2, 3, layout}, bf(ta ? at : a), bf(tb ? bt : b), c);
    ASSERT_EQ(c.size(), 4u);
    EXPECT_EQ(from_bf16(c[0]), 58) << model::to_string(layout);
    EXPECT_EQ(from_bf16(c[1]), 64);
    EXPECT_EQ(from_bf16(c[2]), 139);
    EXPECT_EQ(from_bf16(c[3]), 154);
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
