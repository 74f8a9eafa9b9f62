// The fp64 attention reference against values worked out by hand, and its backward against central
// finite differences of a scalar loss of its forward.
#include "kernels/host/attention_reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>

namespace commbound::kernels {
namespace {

std::size_t token_count(const AttentionShape& s, int heads) {
  return static_cast<std::size_t>(s.batch) * s.seq * heads * s.head_dim;
}

std::vector<double> random_values(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<double> d(0.0, 1.0);
  std::vector<double> out(n);
  for (double& x : out) x = d(rng);
  return out;
}

TEST(AttentionShape, AcceptsTheKernelShapesOnly) {
  EXPECT_TRUE(check_attention_shape({Direction::forward, 2, 32, 8, 4096, 128, true}));
  EXPECT_TRUE(check_attention_shape({Direction::forward, 1, 1, 1, 1, 64, false}));
  EXPECT_FALSE(check_attention_shape({Direction::forward, 2, 32, 8, 4096, 96, true}));   // head_dim not 64 or 128
  EXPECT_FALSE(check_attention_shape({Direction::forward, 2, 32, 6, 4096, 128, true}));  // 6 does not divide 32
  EXPECT_FALSE(check_attention_shape({Direction::forward, 0, 32, 8, 4096, 128, true}));
  EXPECT_FALSE(check_attention_shape({Direction::forward, 2, 32, 8, 0, 128, true}));
  const Status s = check_attention_shape({Direction::forward, 2, 32, 8, 4096, 96, true});
  EXPECT_NE(s.error().message.find("head_dim = 96"), std::string::npos);
}

// One key: the softmax is 1, so O = V and lse = scale * q.k (+ log 1). q = (1, 2, 3, 4),
// k = (1, 0, -1, 2): q.k = 1 - 3 + 8 = 6, scale 1/2: lse = 3.
TEST(AttentionReference, SingleKeyGivesV) {
  const AttentionShape s{Direction::forward, 1, 1, 1, 1, 4, true};
  const std::vector<double> q = {1, 2, 3, 4}, k = {1, 0, -1, 2}, v = {0.5, -1, 2, 7};
  std::vector<double> o, lse;
  attention_forward_reference(s, q, k, v, o, lse);
  for (int d = 0; d < 4; ++d) EXPECT_DOUBLE_EQ(o[d], v[d]);
  EXPECT_DOUBLE_EQ(lse[0], 3.0);
}

// Q = 0 makes every score 0: causal row i averages V over keys 0..i, and lse = log(i + 1);
// without the mask every row averages all seq keys, lse = log(seq). Two heads share one KV head.
TEST(AttentionReference, UniformScoresAverageTheVisiblePrefix) {
  for (const bool causal : {true, false}) {
    const AttentionShape s{Direction::forward, 2, 2, 1, 5, 3, causal};
    std::mt19937 rng(7);
    const std::vector<double> q(token_count(s, s.heads), 0.0);
    const auto k = random_values(token_count(s, s.kv_heads), rng);
    const auto v = random_values(token_count(s, s.kv_heads), rng);
    std::vector<double> o, lse;
    attention_forward_reference(s, q, k, v, o, lse);
    for (int b = 0; b < s.batch; ++b) {
      for (int h = 0; h < s.heads; ++h) {
        for (int i = 0; i < s.seq; ++i) {
          const int keys = causal ? i + 1 : s.seq;
          EXPECT_NEAR(lse[(b * s.heads + h) * s.seq + i], std::log(static_cast<double>(keys)), 1e-12);
          for (int d = 0; d < s.head_dim; ++d) {
            double mean = 0;
            for (int j = 0; j < keys; ++j) mean += v[(b * s.seq + j) * s.head_dim + d] / keys;
            EXPECT_NEAR(o[((b * s.seq + i) * s.heads + h) * s.head_dim + d], mean, 1e-12);
          }
        }
      }
    }
  }
}

// GQA: 4 query heads on 2 KV heads, so heads 0 and 1 read KV head 0 and heads 2 and 3 KV head 1.
// With Q = 0 and one key, O of head h is V of KV head h / 2: V = 10 * kv_head + d.
TEST(AttentionReference, GroupedHeadsReadTheirKvHead) {
  const AttentionShape s{Direction::forward, 1, 4, 2, 1, 2, true};
  const std::vector<double> q(8, 0.0), k(4, 1.0), v = {0, 1, 10, 11};
  std::vector<double> o, lse;
  attention_forward_reference(s, q, k, v, o, lse);
  const std::vector<double> want = {0, 1, 0, 1, 10, 11, 10, 11};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_DOUBLE_EQ(o[i], want[i]) << i;
}

// Two keys with scores 0 and log 3 (q.k = 2 log 3 at scale 1/2): softmax (1/4, 3/4), so the second
// row's output is V0/4 + 3 V1/4 and its lse is log(1 + 3) = log 4.
TEST(AttentionReference, TwoKeysWeighByTheirScores) {
  const double a = 2 * std::log(3.0);
  const AttentionShape s{Direction::forward, 1, 1, 1, 2, 4, true};
  const std::vector<double> q = {0, 0, 0, 0, 1, 0, 0, 0}, k = {0, 0, 0, 0, a, 0, 0, 0};
  const std::vector<double> v = {4, 8, 0, -4, 0, 4, 8, 12};
  std::vector<double> o, lse;
  attention_forward_reference(s, q, k, v, o, lse);
  EXPECT_DOUBLE_EQ(lse[0], 0.0);
  EXPECT_NEAR(lse[1], std::log(4.0), 1e-12);
  const std::vector<double> row1 = {1, 5, 6, 8};
  for (int d = 0; d < 4; ++d) EXPECT_NEAR(o[4 + d], row1[d], 1e-12);
}

// The loss L = sum(O o W) has dL/dO = W, so the backward with dout = W must match
// (L(x + e) - L(x - e)) / 2e for every element of Q, K and V (error O(e^2) ~ 1e-10 at e = 1e-5).
TEST(AttentionReference, BackwardMatchesFiniteDifferences) {
  for (const bool causal : {true, false}) {
    const AttentionShape s{Direction::forward, 2, 4, 2, 5, 3, causal};
    std::mt19937 rng(11);
    auto q = random_values(token_count(s, s.heads), rng);
    auto k = random_values(token_count(s, s.kv_heads), rng);
    auto v = random_values(token_count(s, s.kv_heads), rng);
    const auto w = random_values(token_count(s, s.heads), rng);
    std::vector<double> dq, dk, dv;
    attention_backward_reference(s, q, k, v, w, dq, dk, dv);
    auto loss = [&] {
      std::vector<double> o, lse;
      attention_forward_reference(s, q, k, v, o, lse);
      double l = 0;
      for (std::size_t i = 0; i < o.size(); ++i) l += o[i] * w[i];
      return l;
    };
    const double eps = 1e-5;
    auto check = [&](std::vector<double>& x, const std::vector<double>& grad, const char* name) {
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double x0 = x[i];
        x[i] = x0 + eps;
        const double up = loss();
        x[i] = x0 - eps;
        const double down = loss();
        x[i] = x0;
        EXPECT_NEAR(grad[i], (up - down) / (2 * eps), 1e-7) << name << "[" << i << "] causal=" << causal;
      }
    };
    check(q, dq, "dq");
    check(k, dk, "dk");
    check(v, dv, "dv");
  }
}

}  // namespace
}  // namespace commbound::kernels
