// The memory-bound kernels against their CPU references, on fresh random inputs, outputs poisoned
// (NaN) before the launch so that an element never written shows (in-place kernels: see RoPE).
// Skips itself without a GPU.
#include "kernels/device/cuda_support.hpp"
#include "kernels/device/elementwise.hpp"
#include "kernels/device/gemm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

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

// bf16 outputs: one rounding each side, so within 1 bf16 ulp (2^-7 relative) plus `abs_tol`.
void expect_bf16_close(const std::vector<bf16_bits>& got, const std::vector<bf16_bits>& want, float abs_tol = 1e-3f) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float g = from_bf16(got[i]);
    const float w = from_bf16(want[i]);
    ASSERT_FALSE(std::isnan(g)) << "output " << i << " still poisoned";
    ASSERT_NEAR(g, w, std::fabs(w) * 0.0079f + abs_tol) << "at " << i;
  }
}

template <class T>
Expected<DeviceBuffer<T>> to_device(const std::vector<T>& host) {
  auto b = DeviceBuffer<T>::create(host.size());
  if (!b) return b.error();
  if (Status s = b->upload(host.data()); !s) return s.error();
  return b;
}

// A device buffer of `count` elements, every byte 0xff (NaN in bf16 and fp32).
template <class T>
Expected<DeviceBuffer<T>> poisoned(std::size_t count) {
  auto b = DeviceBuffer<T>::create(count);
  if (!b) return b.error();
  if (Status s = b->fill_bytes(kPoisonByte); !s) return s.error();
  return b;
}

template <class T>
Expected<std::vector<T>> to_host(const DeviceBuffer<T>& b) {
  std::vector<T> host(b.count());
  if (Status s = b.download(host.data()); !s) return s.error();
  return host;
}

struct RowCase {
  std::size_t rows, hidden;
};

// Every vectors-a-thread variant (hidden 64 and 1024: 1; 4096: 2; 5120 and 8192: 4; 16384: 8), a
// row count above one resident wave (1200), and rows shorter than a warp's vectors (64).
const RowCase kRowCases[] = {{1200, 1024}, {64, 4096}, {40, 5120}, {16, 8192}, {4, 16384}, {3, 64}};

TEST_F(GpuTest, RmsNormForwardMatchesReference) {
  std::mt19937 rng(1);
  for (const RowCase& c : kRowCases) {
    SCOPED_TRACE("rows " + std::to_string(c.rows) + " hidden " + std::to_string(c.hidden));
    const auto x = random_bf16(c.rows * c.hidden, rng, 1.0f);
    const auto w = random_bf16(c.hidden, rng, 0.5f);
    std::vector<bf16_bits> want;
    rmsnorm_forward_reference(x, w, c.rows, c.hidden, 1e-5f, want);
    auto dx = to_device(x);
    auto dw = to_device(w);
    auto dy = poisoned<bf16_bits>(want.size());
    ASSERT_TRUE(dx && dw && dy);
    const Status s = rmsnorm_forward(dx->get(), dw->get(), c.rows, c.hidden, 1e-5f, dy->get());
    ASSERT_TRUE(s) << s.error().message;
    auto got = to_host(*dy);
    ASSERT_TRUE(got);
    expect_bf16_close(*got, want);
  }
}

// dw sums one fp32 term a row in any order (per block, then atomics): within 3e-5 of the sum of
// the terms' magnitudes (fp32 rounding is 6e-8 a step; 1200 rows at most).
TEST_F(GpuTest, RmsNormBackwardMatchesReference) {
  std::mt19937 rng(11);
  for (const RowCase& c : kRowCases) {
    SCOPED_TRACE("rows " + std::to_string(c.rows) + " hidden " + std::to_string(c.hidden));
    const auto x = random_bf16(c.rows * c.hidden, rng, 1.0f);
    const auto w = random_bf16(c.hidden, rng, 0.5f);
    const auto dy = random_bf16(c.rows * c.hidden, rng, 1.0f);
    std::vector<bf16_bits> want_dx;
    std::vector<float> want_dw(c.hidden, 0.0f), magnitude(c.hidden, 0.0f);
    rmsnorm_backward_reference(dy, x, w, c.rows, c.hidden, 1e-5f, want_dx, want_dw);
    for (std::size_t r = 0; r < c.rows; ++r) {
      float sum_sq = 0;
      for (std::size_t i = 0; i < c.hidden; ++i) sum_sq += from_bf16(x[r * c.hidden + i]) * from_bf16(x[r * c.hidden + i]);
      const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(c.hidden) + 1e-5f);
      for (std::size_t i = 0; i < c.hidden; ++i) {
        magnitude[i] += std::fabs(from_bf16(dy[r * c.hidden + i]) * from_bf16(x[r * c.hidden + i])) * inv;
      }
    }
    auto d_dy = to_device(dy);
    auto d_x = to_device(x);
    auto d_w = to_device(w);
    auto d_dx = poisoned<bf16_bits>(want_dx.size());
    auto d_dw = DeviceBuffer<float>::create(c.hidden);
    ASSERT_TRUE(d_dy && d_x && d_w && d_dx && d_dw);
    ASSERT_TRUE(d_dw->fill_bytes(0));
    const Status s = rmsnorm_backward(d_dy->get(), d_x->get(), d_w->get(), c.rows, c.hidden, 1e-5f, d_dx->get(),
                                      d_dw->get());
    ASSERT_TRUE(s) << s.error().message;
    auto got_dx = to_host(*d_dx);
    auto got_dw = to_host(*d_dw);
    ASSERT_TRUE(got_dx && got_dw);
    expect_bf16_close(*got_dx, want_dx);
    for (std::size_t i = 0; i < c.hidden; ++i) {
      ASSERT_NEAR((*got_dw)[i], want_dw[i], 3e-5f * magnitude[i] + 1e-6f) << "dw at " << i;
    }
  }
}

// q and k rotated in place (so not poisoned) against the reference, forward then backward, with
// Llama's table: tokens 2 x 256, positions up to 255.
TEST_F(GpuTest, RopeMatchesReference) {
  std::mt19937 rng(5);
  const RopeShape s{512, 256, 4, 2, 128};
  const auto table = rope_table(s.seq, s.head_dim);
  auto d_table = to_device(table);
  ASSERT_TRUE(d_table);
  for (const bool forward : {true, false}) {
    SCOPED_TRACE(forward ? "forward" : "backward");
    auto q = random_bf16(s.tokens * s.heads * s.head_dim, rng, 1.0f);
    auto k = random_bf16(s.tokens * s.kv_heads * s.head_dim, rng, 1.0f);
    auto dq = to_device(q);
    auto dk = to_device(k);
    ASSERT_TRUE(dq && dk);
    const Status st = forward ? rope_forward(dq->get(), dk->get(), d_table->get(), s)
                              : rope_backward(dq->get(), dk->get(), d_table->get(), s);
    ASSERT_TRUE(st) << st.error().message;
    if (forward) {
      rope_forward_reference(q, k, table, s);
    } else {
      rope_backward_reference(q, k, table, s);
    }
    auto got_q = to_host(*dq);
    auto got_k = to_host(*dk);
    ASSERT_TRUE(got_q && got_k);
    expect_bf16_close(*got_q, q);
    expect_bf16_close(*got_k, k);
  }
}

// Every element is rotated: with a table of quarter turns (cos 0, sin 1) each pair (lo, hi) becomes
// (-hi, lo) exactly, so an element the kernel missed shows. Odd shape: 3 + 1 heads of 64, 15 tokens
// of sequences of 5.
TEST_F(GpuTest, RopeRotatesEveryElement) {
  std::mt19937 rng(6);
  const RopeShape s{15, 5, 3, 1, 64};
  std::vector<float> quarter(s.seq * s.head_dim);
  for (std::size_t i = 0; i < quarter.size(); i += 2) {
    quarter[i] = 0.0f;
    quarter[i + 1] = 1.0f;
  }
  const auto q = random_bf16(s.tokens * s.heads * s.head_dim, rng, 1.0f);
  const auto k = random_bf16(s.tokens * s.kv_heads * s.head_dim, rng, 1.0f);
  auto d_table = to_device(quarter);
  auto dq = to_device(q);
  auto dk = to_device(k);
  ASSERT_TRUE(d_table && dq && dk);
  ASSERT_TRUE(rope_forward(dq->get(), dk->get(), d_table->get(), s));
  auto got_q = to_host(*dq);
  auto got_k = to_host(*dk);
  ASSERT_TRUE(got_q && got_k);
  const std::size_t half = s.head_dim / 2;
  auto check = [&](const std::vector<bf16_bits>& in, const std::vector<bf16_bits>& out) {
    for (std::size_t base = 0; base < in.size(); base += s.head_dim) {
      for (std::size_t i = 0; i < half; ++i) {
        ASSERT_EQ(from_bf16(out[base + i]), -from_bf16(in[base + i + half])) << base + i;
        ASSERT_EQ(from_bf16(out[base + i + half]), from_bf16(in[base + i])) << base + i + half;
      }
    }
  };
  check(q, *got_q);
  check(k, *got_k);
}

TEST_F(GpuTest, SwiGluMatchesReference) {
  std::mt19937 rng(2);
  const std::size_t n = 1 << 20;
  const auto gate = random_bf16(n, rng, 2.0f);
  const auto up = random_bf16(n, rng, 1.0f);
  std::vector<bf16_bits> want;
  swiglu_forward_reference(gate, up, want);
  auto dg = to_device(gate);
  auto du = to_device(up);
  auto dout = poisoned<bf16_bits>(n);
  ASSERT_TRUE(dg && du && dout);
  ASSERT_TRUE(swiglu_forward(dg->get(), du->get(), n, dout->get()));
  auto got = to_host(*dout);
  ASSERT_TRUE(got);
  expect_bf16_close(*got, want);
}

TEST_F(GpuTest, SwiGluBackwardMatchesReference) {
  std::mt19937 rng(12);
  const std::size_t n = (1 << 20) + 8;
  const auto dout = random_bf16(n, rng, 1.0f);
  const auto gate = random_bf16(n, rng, 2.0f);
  const auto up = random_bf16(n, rng, 1.0f);
  std::vector<bf16_bits> want_dgate, want_dup;
  swiglu_backward_reference(dout, gate, up, want_dgate, want_dup);
  auto d_dout = to_device(dout);
  auto d_gate = to_device(gate);
  auto d_up = to_device(up);
  auto d_dgate = poisoned<bf16_bits>(n);
  auto d_dup = poisoned<bf16_bits>(n);
  ASSERT_TRUE(d_dout && d_gate && d_up && d_dgate && d_dup);
  ASSERT_TRUE(swiglu_backward(d_dout->get(), d_gate->get(), d_up->get(), n, d_dgate->get(), d_dup->get()));
  auto got_dgate = to_host(*d_dgate);
  auto got_dup = to_host(*d_dup);
  ASSERT_TRUE(got_dgate && got_dup);
  expect_bf16_close(*got_dgate, want_dgate);
  expect_bf16_close(*got_dup, want_dup);
}

TEST_F(GpuTest, ResidualAddMatchesReference) {
  std::mt19937 rng(13);
  const std::size_t n = (1 << 20) + 8;
  const auto a = random_bf16(n, rng, 1.0f);
  const auto b = random_bf16(n, rng, 0.1f);
  std::vector<bf16_bits> want;
  residual_add_reference(a, b, want);
  auto da = to_device(a);
  auto db = to_device(b);
  auto dout = poisoned<bf16_bits>(n);
  ASSERT_TRUE(da && db && dout);
  ASSERT_TRUE(residual_add(da->get(), db->get(), n, dout->get()));
  auto got = to_host(*dout);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, want);  // one round-to-nearest-even of the same fp32 sum: bit-identical
}

// 512 tokens over a 1000-row table (repeated ids), rows of 2056 (257 vectors: a partial batch), and
// two ids outside [0, vocab): the forward writes them NaN rows, the backward skips them.
TEST_F(GpuTest, EmbeddingMatchesReference) {
  std::mt19937 rng(14);
  const std::size_t tokens = 512, vocab = 1000, hidden = 2056;
  const auto table = random_bf16(vocab * hidden, rng, 1.0f);
  const auto dout = random_bf16(tokens * hidden, rng, 1.0f);
  std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(vocab) - 1);
  std::vector<std::int32_t> ids(tokens);
  for (auto& id : ids) id = pick(rng);
  ids[7] = -1;
  ids[300] = static_cast<std::int32_t>(vocab);
  std::vector<std::int32_t> valid_ids;
  std::vector<bf16_bits> valid_dout;
  for (std::size_t t = 0; t < tokens; ++t) {
    if (t == 7 || t == 300) continue;
    valid_ids.push_back(ids[t]);
    valid_dout.insert(valid_dout.end(), dout.begin() + static_cast<std::ptrdiff_t>(t * hidden),
                      dout.begin() + static_cast<std::ptrdiff_t>((t + 1) * hidden));
  }
  std::vector<bf16_bits> want_rows;
  embedding_forward_reference(valid_ids, table, hidden, want_rows);
  std::vector<float> want_dtable(vocab * hidden, 0.0f);
  embedding_backward_reference(valid_dout, valid_ids, hidden, want_dtable);

  auto d_ids = to_device(ids);
  auto d_table = to_device(table);
  auto d_dout = to_device(dout);
  auto d_out = DeviceBuffer<bf16_bits>::create(tokens * hidden);
  auto d_dtable = DeviceBuffer<float>::create(vocab * hidden);
  ASSERT_TRUE(d_ids && d_table && d_dout && d_out && d_dtable);
  // Poisoned with zeros, not NaN: the invalid ids' rows must come out NaN, the others the table's
  // values (random, never exactly 0).
  ASSERT_TRUE(d_out->fill_bytes(0));
  ASSERT_TRUE(d_dtable->fill_bytes(0));
  ASSERT_TRUE(embedding_forward(d_ids->get(), d_table->get(), tokens, vocab, hidden, d_out->get()));
  ASSERT_TRUE(embedding_backward(d_dout->get(), d_ids->get(), tokens, vocab, hidden, d_dtable->get()));
  auto got = to_host(*d_out);
  auto got_dtable = to_host(*d_dtable);
  ASSERT_TRUE(got && got_dtable);
  std::size_t valid = 0;
  for (std::size_t t = 0; t < tokens; ++t) {
    const bool invalid = t == 7 || t == 300;
    for (std::size_t i = 0; i < hidden; ++i) {
      const bf16_bits g = (*got)[t * hidden + i];
      if (invalid) {
        ASSERT_EQ(g, 0xffff) << "token " << t << " at " << i;
      } else {
        ASSERT_EQ(g, want_rows[valid * hidden + i]) << "token " << t << " at " << i;
      }
    }
    valid += invalid ? 0 : 1;
  }
  // A row's sum of a few bf16 values: exact in fp32 up to ordering, so 1e-6 relative.
  for (std::size_t i = 0; i < want_dtable.size(); ++i) {
    ASSERT_NEAR((*got_dtable)[i], want_dtable[i], 1e-6f * (1 + std::fabs(want_dtable[i]))) << i;
  }
}

struct VocabCase {
  std::size_t tokens, vocab;
};

// Llama's 32000 (4000 vectors: partial batches) and 136 (17 vectors, mostly idle threads); token 3
// ignored (-100) and token 5's target out of range (= vocab), both loss 0 and a zero gradient row.
TEST_F(GpuTest, CrossEntropyMatchesReference) {
  std::mt19937 rng(15);
  for (const VocabCase& c : {VocabCase{16, 32000}, VocabCase{9, 136}}) {
    SCOPED_TRACE("vocab " + std::to_string(c.vocab));
    const auto logits = random_bf16(c.tokens * c.vocab, rng, 3.0f);
    std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(c.vocab) - 1);
    std::vector<std::int32_t> targets(c.tokens);
    for (auto& t : targets) t = pick(rng);
    targets[3] = -100;
    targets[5] = static_cast<std::int32_t>(c.vocab);
    std::vector<float> want_loss, want_lse;
    cross_entropy_forward_reference(logits, targets, c.vocab, want_loss, want_lse);
    const float scale = 1.0f / static_cast<float>(c.tokens - 2);
    std::vector<bf16_bits> want_dlogits;
    cross_entropy_backward_reference(logits, targets, want_lse, c.vocab, scale, want_dlogits);

    auto d_logits = to_device(logits);
    auto d_targets = to_device(targets);
    auto d_loss = poisoned<float>(c.tokens);
    auto d_lse = poisoned<float>(c.tokens);
    auto d_ref_lse = to_device(want_lse);
    auto d_dlogits = poisoned<bf16_bits>(logits.size());
    ASSERT_TRUE(d_logits && d_targets && d_loss && d_lse && d_ref_lse && d_dlogits);
    Status s = cross_entropy_forward(d_logits->get(), d_targets->get(), c.tokens, c.vocab, d_loss->get(), d_lse->get());
    ASSERT_TRUE(s) << s.error().message;
    // The backward on the reference lse, out of place and then in place (over the logits).
    s = cross_entropy_backward(d_logits->get(), d_targets->get(), d_ref_lse->get(), c.tokens, c.vocab, scale,
                               d_dlogits->get());
    ASSERT_TRUE(s) << s.error().message;
    auto got_loss = to_host(*d_loss);
    auto got_lse = to_host(*d_lse);
    auto got_dlogits = to_host(*d_dlogits);
    ASSERT_TRUE(got_loss && got_lse && got_dlogits);
    // fp32 sums of exp2 approximations (2 ulp): lse within a few 1e-6 relative.
    for (std::size_t t = 0; t < c.tokens; ++t) {
      ASSERT_NEAR((*got_lse)[t], want_lse[t], 2e-5f * (1 + std::fabs(want_lse[t]))) << t;
      ASSERT_NEAR((*got_loss)[t], want_loss[t], 2e-5f * (1 + std::fabs(want_lse[t]))) << t;
    }
    EXPECT_EQ((*got_loss)[3], 0.0f);
    EXPECT_EQ((*got_loss)[5], 0.0f);
    // Probabilities down to e^-30: relative tolerance only (a bf16 ulp), no absolute slack.
    expect_bf16_close(*got_dlogits, want_dlogits, 1e-12f);
    s = cross_entropy_backward(d_logits->get(), d_targets->get(), d_ref_lse->get(), c.tokens, c.vocab, scale,
                               d_logits->get());
    ASSERT_TRUE(s) << s.error().message;
    auto in_place = to_host(*d_logits);
    ASSERT_TRUE(in_place);
    expect_bf16_close(*in_place, want_dlogits, 1e-12f);
  }
}

// Squares are exact in double and summed in double over short per-thread runs and trees: within
// 1e-12 relative of the long-double reference (4M terms), and the same bits on a second run.
TEST_F(GpuTest, GradNormMatchesReference) {
  std::mt19937 rng(16);
  std::normal_distribution<float> d(0.0f, 1e-2f);
  const std::size_t n = (std::size_t{1} << 22) + 4;
  std::vector<float> grad(n);
  for (auto& g : grad) g = d(rng);
  const double want = grad_norm_squared_reference(grad);
  auto d_grad = to_device(grad);
  auto partials = DeviceBuffer<double>::create(kGradNormPartials);
  auto sum_sq = poisoned<double>(1);
  ASSERT_TRUE(d_grad && partials && sum_sq);
  ASSERT_TRUE(grad_norm_squared(d_grad->get(), n, partials->get(), sum_sq->get()));
  auto first = to_host(*sum_sq);
  ASSERT_TRUE(first);
  EXPECT_NEAR((*first)[0], want, 1e-12 * want);
  auto norm = grad_norm(d_grad->get(), n, partials->get(), sum_sq->get());
  ASSERT_TRUE(norm) << norm.error().message;
  auto second = to_host(*sum_sq);
  ASSERT_TRUE(second);
  EXPECT_EQ(std::memcmp(first->data(), second->data(), sizeof(double)), 0) << "not deterministic";
  EXPECT_EQ(*norm, std::sqrt((*second)[0]));
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
  const std::int64_t tokens = 256, in = 192, out = 320;
  const GemmShape shapes[] = {{tokens, out, in, GemmLayout::forward}, {tokens, in, out, GemmLayout::dgrad},
                              {out, in, tokens, GemmLayout::wgrad}};
  for (const GemmShape& s : shapes) {
    const auto a = random_bf16(static_cast<std::size_t>(s.m * s.k), rng, 1.0f);
    const auto b = random_bf16(static_cast<std::size_t>(s.k * s.n), rng, 1.0f);
    std::vector<bf16_bits> want, got(static_cast<std::size_t>(s.m * s.n));
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
