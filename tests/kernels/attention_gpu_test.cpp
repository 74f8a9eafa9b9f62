// The flash-attention kernels against the fp64 reference (kernels/host/attention_reference.hpp) on fresh
// random inputs (normal, scale 1), every output poisoned with 0xff bytes (bf16 and fp32 NaN) before
// its launch and checked fully written. The backward is fed the kernel's own O and lse, as in
// training. Skips itself without a GPU.
//
// Tolerances: bf16 outputs and bf16 operands of the tensor-core products (P and dS rounded to bf16,
// fp32 accumulation) leave relative errors of a few 2^-9 per element that average out in a norm,
// so ||out - ref|| / ||ref|| < 1e-2 for O, dQ, dK, dV; lse is computed in fp32 from exact bf16
// products, so within 1e-3 (1 + |lse|).
#include "kernels/device/attention.hpp"
#include "kernels/host/bf16.hpp"
#include "kernels/device/cuda_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace commbound::kernels {
namespace {

constexpr int kPoisonByte = 0xff;  // 0xffff is a bf16 NaN, 0xffffffff an fp32 NaN

class AttentionGpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  }
};

std::string describe(const AttentionShape& s) {
  std::ostringstream out;
  out << "batch " << s.batch << " heads " << s.heads << " kv_heads " << s.kv_heads << " seq " << s.seq << " head_dim "
      << s.head_dim << (s.causal ? " causal" : " full");
  return out.str();
}

std::vector<bf16_bits> random_bf16(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<bf16_bits> out(n);
  for (auto& x : out) x = to_bf16(d(rng));
  return out;
}

std::vector<double> widen(const std::vector<bf16_bits>& x) {
  std::vector<double> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = from_bf16(x[i]);
  return out;
}

// No NaN (never written) element in `got`, and ||got - want|| / ||want|| < 1e-2; where the
// reference is exactly zero (seq 1: dS = P (dP - D) = 0, so dQ = dK = 0), an RMS error below 1e-3.
template <class T, class ToDouble>
void expect_close_in_norm(const std::vector<T>& got, const std::vector<double>& want, ToDouble to_double,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t nan_count = 0;
  std::size_t first_nan = 0;
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = to_double(got[i]);
    if (std::isnan(g)) {
      if (nan_count++ == 0) first_nan = i;
      continue;
    }
    err2 += (g - want[i]) * (g - want[i]);
    ref2 += want[i] * want[i];
  }
  EXPECT_EQ(nan_count, 0u) << what << ": " << nan_count << " elements still poisoned, first at " << first_nan;
  if (ref2 == 0.0) {
    EXPECT_LT(std::sqrt(err2 / static_cast<double>(got.size())), 1e-3) << what << " (reference zero)";
  } else {
    EXPECT_LT(std::sqrt(err2 / ref2), 1e-2) << what;
  }
}

// A fresh device buffer holding `host`.
template <class T>
Expected<DeviceBuffer<T>> device_copy(const std::vector<T>& host) {
  auto buffer = DeviceBuffer<T>::create(host.size());
  if (!buffer) return buffer.error();
  if (Status s = buffer->upload(host.data()); !s) return s.error();
  return buffer;
}

// A fresh device buffer of `count` elements, every byte 0xff.
template <class T>
Expected<DeviceBuffer<T>> device_poisoned(std::size_t count) {
  auto buffer = DeviceBuffer<T>::create(count);
  if (!buffer) return buffer.error();
  if (Status s = buffer->fill_bytes(kPoisonByte); !s) return s.error();
  return buffer;
}

// The error message of a failed Expected, "" on success (for assertion messages).
template <class T>
std::string message(const Expected<T>& e) {
  return e ? std::string() : e.error().message;
}

void check_against_reference(const AttentionShape& s, unsigned seed) {
  SCOPED_TRACE(describe(s));
  std::mt19937 rng(seed);
  const std::size_t q_count = static_cast<std::size_t>(s.batch) * s.seq * s.heads * s.head_dim;
  const std::size_t kv_count = static_cast<std::size_t>(s.batch) * s.seq * s.kv_heads * s.head_dim;
  const std::size_t lse_count = static_cast<std::size_t>(s.batch) * s.heads * s.seq;
  const auto q = random_bf16(q_count, rng);
  const auto k = random_bf16(kv_count, rng);
  const auto v = random_bf16(kv_count, rng);
  const auto dout = random_bf16(q_count, rng);

  std::vector<double> o_ref, lse_ref, dq_ref, dk_ref, dv_ref;
  attention_forward_reference(s, widen(q), widen(k), widen(v), o_ref, lse_ref);
  attention_backward_reference(s, widen(q), widen(k), widen(v), widen(dout), dq_ref, dk_ref, dv_ref);

  auto d_q = device_copy(q);
  auto d_k = device_copy(k);
  auto d_v = device_copy(v);
  auto d_dout = device_copy(dout);
  auto d_o = device_poisoned<bf16_bits>(q_count);
  auto d_lse = device_poisoned<float>(lse_count);
  auto d_dq = device_poisoned<bf16_bits>(q_count);
  auto d_dk = device_poisoned<bf16_bits>(kv_count);
  auto d_dv = device_poisoned<bf16_bits>(kv_count);
  const std::size_t workspace_bytes = attention_backward_workspace_bytes(s);
  ASSERT_GT(workspace_bytes, 0u);
  auto workspace = device_poisoned<unsigned char>(workspace_bytes);  // uninitialised: the backward zeroes it
  for (const Status& st : {d_q.status(), d_k.status(), d_v.status(), d_dout.status(), d_o.status(), d_lse.status(),
                           d_dq.status(), d_dk.status(), d_dv.status(), workspace.status()}) {
    ASSERT_TRUE(st) << message(st);
  }

  const Status fwd = attention_forward(s, d_q->get(), d_k->get(), d_v->get(), d_o->get(), d_lse->get());
  ASSERT_TRUE(fwd) << message(fwd);
  const Status bwd = attention_backward(s, d_q->get(), d_k->get(), d_v->get(), d_o->get(), d_dout->get(), d_lse->get(),
                                        d_dq->get(), d_dk->get(), d_dv->get(), workspace->get());
  ASSERT_TRUE(bwd) << message(bwd);
  const Status sync = cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  ASSERT_TRUE(sync) << message(sync);

  std::vector<bf16_bits> o(q_count), dq(q_count), dk(kv_count), dv(kv_count);
  std::vector<float> lse(lse_count);
  for (const Status& st : {d_o->download(o.data()), d_lse->download(lse.data()), d_dq->download(dq.data()),
                           d_dk->download(dk.data()), d_dv->download(dv.data())}) {
    ASSERT_TRUE(st) << message(st);
  }

  auto bf = [](bf16_bits b) { return static_cast<double>(from_bf16(b)); };
  expect_close_in_norm(o, o_ref, bf, "O");
  expect_close_in_norm(dq, dq_ref, bf, "dQ");
  expect_close_in_norm(dk, dk_ref, bf, "dK");
  expect_close_in_norm(dv, dv_ref, bf, "dV");
  std::size_t lse_bad = 0;
  for (std::size_t i = 0; i < lse_count; ++i) {
    const double err = std::fabs(static_cast<double>(lse[i]) - lse_ref[i]);
    if (!(err <= 1e-3 * (1 + std::fabs(lse_ref[i])))) {  // NaN fails too
      if (lse_bad++ < 5) ADD_FAILURE() << "lse[" << i << "] = " << lse[i] << ", reference " << lse_ref[i];
    }
  }
  EXPECT_EQ(lse_bad, 0u);
}

// Sequence lengths that are multiples of the tiles (64 and 128) and that are not (200, 77, 1);
// MHA and GQA; both head dims; causal and full. Sizes keep the fp64 reference to a few seconds.
struct Case {
  int heads;
  int kv_heads;
  int seq;
  int head_dim;
  bool causal;
};
constexpr Case kCases[] = {
    {8, 8, 128, 128, true}, {8, 2, 200, 128, true}, {4, 1, 512, 128, true}, {8, 8, 200, 64, true},
    {8, 2, 512, 64, true},  {2, 2, 77, 128, true},  {2, 1, 1, 64, true},    {4, 4, 200, 128, false},
    {8, 2, 128, 64, false}, {2, 2, 77, 64, false},
};

TEST_F(AttentionGpuTest, MatchesReference) {
  unsigned seed = 100;
  for (const Case& c : kCases) check_against_reference({Direction::forward, 2, c.heads, c.kv_heads, c.seq, c.head_dim, c.causal}, seed++);
}

TEST_F(AttentionGpuTest, RefusesBadShapesAndPointers) {
  auto buffer = DeviceBuffer<bf16_bits>::create(1 << 16);
  ASSERT_TRUE(buffer);
  auto lse = DeviceBuffer<float>::create(1 << 12);
  ASSERT_TRUE(lse);
  bf16_bits* p = buffer->get();
  EXPECT_FALSE(attention_forward({Direction::forward, 1, 2, 2, 16, 96, true}, p, p, p, p, lse->get()));  // head_dim 96
  EXPECT_FALSE(attention_forward({Direction::forward, 1, 4, 3, 16, 64, true}, p, p, p, p, lse->get()));  // 3 does not divide 4
  EXPECT_FALSE(attention_forward({Direction::forward, 1, 2, 2, 16, 64, true}, p + 1, p, p, p, lse->get()));  // misaligned q
  EXPECT_FALSE(attention_forward({Direction::forward, 1, 2, 2, 16, 64, true}, nullptr, p, p, p, lse->get()));
  EXPECT_EQ(attention_backward_workspace_bytes({Direction::backward, 1, 2, 2, 16, 96, true}), 0u);
  // dQ accumulator 1 x 16 x 2 x 64 fp32 and D 1 x 2 x 16 fp32.
  EXPECT_EQ(attention_backward_workspace_bytes({Direction::backward, 1, 2, 2, 16, 64, true}), (16u * 2 * 64 + 2 * 16) * 4);
}

}  // namespace
}  // namespace commbound::kernels
