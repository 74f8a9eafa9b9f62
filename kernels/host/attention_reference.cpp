#include "kernels/host/attention_reference.hpp"

#include "core/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>

namespace commbound::kernels {
namespace {

// Element offsets of the [batch, seq, heads, head_dim] and [batch, heads, seq] layouts.
std::size_t token_offset(const AttentionShape& s, int heads, int b, int i, int h) {
  return ((static_cast<std::size_t>(b) * s.seq + i) * heads + h) * s.head_dim;
}
std::size_t row_offset(const AttentionShape& s, int b, int h, int i) {
  return (static_cast<std::size_t>(b) * s.heads + h) * s.seq + i;
}

void check_sizes(const AttentionShape& s, const std::vector<double>& q, const std::vector<double>& k,
                 const std::vector<double>& v) {
  COMMBOUND_CHECK(s.batch > 0 && s.heads > 0 && s.kv_heads > 0 && s.seq > 0 && s.head_dim > 0 &&
                      s.heads % s.kv_heads == 0,
                  "reference kernel shapes agree");
  const std::size_t tokens = static_cast<std::size_t>(s.batch) * s.seq;
  COMMBOUND_CHECK(q.size() == tokens * s.heads * s.head_dim, "reference kernel shapes agree");
  COMMBOUND_CHECK(k.size() == tokens * s.kv_heads * s.head_dim && v.size() == k.size(),
                  "reference kernel shapes agree");
  (void)tokens, (void)q, (void)k, (void)v;
}

// Scaled scores of query row (b, i, h) against keys 0..last (last = i when causal, seq - 1 otherwise),
// and the softmax probabilities written over them; returns the log-sum-exp.
double softmax_row(const AttentionShape& s, const std::vector<double>& q, const std::vector<double>& k, int b, int i,
                   int h, std::vector<double>& p) {
  const int kvh = h / (s.heads / s.kv_heads);
  const int keys = s.causal ? i + 1 : s.seq;
  const double scale = attention_softmax_scale(s);
  const double* qi = &q[token_offset(s, s.heads, b, i, h)];
  p.assign(keys, 0.0);
  double max_score = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < keys; ++j) {
    const double* kj = &k[token_offset(s, s.kv_heads, b, j, kvh)];
    double dot = 0;
    for (int d = 0; d < s.head_dim; ++d) dot += qi[d] * kj[d];
    p[j] = dot * scale;
    max_score = std::max(max_score, p[j]);
  }
  double sum = 0;
  for (double& x : p) {
    x = std::exp(x - max_score);
    sum += x;
  }
  for (double& x : p) x /= sum;
  return max_score + std::log(sum);
}

}  // namespace

Status check_attention_shape(const AttentionShape& s) {
  auto bad = [](const char* field, std::int64_t value, const char* why) {
    return Error{std::string("attention shape: ") + field + " = " + std::to_string(value) + ": " + why};
  };
  constexpr std::int64_t kMaxSize = std::numeric_limits<int>::max();  // the kernels' parameters are int
  for (const auto& [field, value] : {std::pair{"batch", s.batch}, std::pair{"heads", s.heads},
                                     std::pair{"kv_heads", s.kv_heads}, std::pair{"seq", s.seq}}) {
    if (value > kMaxSize) return bad(field, value, "must be below 2^31");
  }
  if (s.batch <= 0) return bad("batch", s.batch, "must be positive");
  if (s.heads <= 0) return bad("heads", s.heads, "must be positive");
  if (s.kv_heads <= 0) return bad("kv_heads", s.kv_heads, "must be positive");
  if (s.seq <= 0) return bad("seq", s.seq, "must be positive");
  if (s.head_dim != 64 && s.head_dim != 128) return bad("head_dim", s.head_dim, "must be 64 or 128");
  if (s.heads % s.kv_heads != 0) return bad("kv_heads", s.kv_heads, "must divide heads");
  if (s.window != 0) return bad("window", s.window, "these kernels run full attention only");
  return Ok{};
}

double attention_softmax_scale(const AttentionShape& s) { return 1.0 / std::sqrt(static_cast<double>(s.head_dim)); }

void attention_forward_reference(const AttentionShape& s, const std::vector<double>& q, const std::vector<double>& k,
                                 const std::vector<double>& v, std::vector<double>& o, std::vector<double>& lse) {
  check_sizes(s, q, k, v);
  o.assign(q.size(), 0.0);
  lse.assign(static_cast<std::size_t>(s.batch) * s.heads * s.seq, 0.0);
  std::vector<double> p;
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < s.heads; ++h) {
      const int kvh = h / (s.heads / s.kv_heads);
      for (int i = 0; i < s.seq; ++i) {
        lse[row_offset(s, b, h, i)] = softmax_row(s, q, k, b, i, h, p);
        double* oi = &o[token_offset(s, s.heads, b, i, h)];
        for (std::size_t j = 0; j < p.size(); ++j) {
          const double* vj = &v[token_offset(s, s.kv_heads, b, static_cast<int>(j), kvh)];
          for (int d = 0; d < s.head_dim; ++d) oi[d] += p[j] * vj[d];
        }
      }
    }
  }
}

void attention_backward_reference(const AttentionShape& s, const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, const std::vector<double>& dout, std::vector<double>& dq,
                                  std::vector<double>& dk, std::vector<double>& dv) {
  check_sizes(s, q, k, v);
  COMMBOUND_CHECK(dout.size() == q.size(), "reference kernel shapes agree");
  dq.assign(q.size(), 0.0);
  dk.assign(k.size(), 0.0);
  dv.assign(v.size(), 0.0);
  const double scale = attention_softmax_scale(s);
  std::vector<double> p, dp;
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < s.heads; ++h) {
      const int kvh = h / (s.heads / s.kv_heads);
      for (int i = 0; i < s.seq; ++i) {
        softmax_row(s, q, k, b, i, h, p);
        const std::size_t qoff = token_offset(s, s.heads, b, i, h);
        const double* doi = &dout[qoff];
        // dP_ij = dO_i . V_j, and D_i = sum_j P_ij dP_ij (= dO_i . O_i).
        dp.assign(p.size(), 0.0);
        double delta = 0;
        for (std::size_t j = 0; j < p.size(); ++j) {
          const double* vj = &v[token_offset(s, s.kv_heads, b, static_cast<int>(j), kvh)];
          for (int d = 0; d < s.head_dim; ++d) dp[j] += doi[d] * vj[d];
          delta += p[j] * dp[j];
        }
        for (std::size_t j = 0; j < p.size(); ++j) {
          const std::size_t koff = token_offset(s, s.kv_heads, b, static_cast<int>(j), kvh);
          const double ds = p[j] * (dp[j] - delta);
          for (int d = 0; d < s.head_dim; ++d) {
            dq[qoff + d] += scale * ds * k[koff + d];
            dk[koff + d] += scale * ds * q[qoff + d];
            dv[koff + d] += p[j] * doi[d];
          }
        }
      }
    }
  }
}

}  // namespace commbound::kernels
