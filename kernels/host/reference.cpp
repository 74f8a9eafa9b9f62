#include "kernels/host/reference.hpp"

#include "core/check.hpp"

#include <algorithm>
#include <cmath>

namespace commbound::kernels {

void rmsnorm_forward_reference(const std::vector<bf16_bits>& x, const std::vector<bf16_bits>& w, std::size_t rows,
                               std::size_t hidden, float eps, std::vector<bf16_bits>& y) {
  COMMBOUND_CHECK(x.size() == rows * hidden && w.size() == hidden, "reference kernel shapes agree");
  y.resize(rows * hidden);
  for (std::size_t r = 0; r < rows; ++r) {
    float sum_sq = 0;
    for (std::size_t i = 0; i < hidden; ++i) {
      const float v = from_bf16(x[r * hidden + i]);
      sum_sq += v * v;
    }
    const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(hidden) + eps);
    for (std::size_t i = 0; i < hidden; ++i) {
      y[r * hidden + i] = to_bf16(from_bf16(x[r * hidden + i]) * inv * from_bf16(w[i]));
    }
  }
}

void rmsnorm_backward_reference(const std::vector<bf16_bits>& dy, const std::vector<bf16_bits>& x,
                                const std::vector<bf16_bits>& w, std::size_t rows, std::size_t hidden, float eps,
                                std::vector<bf16_bits>& dx, std::vector<float>& dw_accum) {
  COMMBOUND_CHECK(dy.size() == rows * hidden && x.size() == rows * hidden && w.size() == hidden &&
                      dw_accum.size() == hidden,
                  "reference kernel shapes agree");
  dx.resize(rows * hidden);
  std::vector<double> dw(hidden, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t row = r * hidden;
    double sum_sq = 0, sum_gx = 0;
    for (std::size_t i = 0; i < hidden; ++i) {
      const double xv = from_bf16(x[row + i]);
      sum_sq += xv * xv;
      sum_gx += static_cast<double>(from_bf16(dy[row + i])) * from_bf16(w[i]) * xv;
    }
    const float inv = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(hidden) + eps));
    const float mean_gx = static_cast<float>(sum_gx / static_cast<double>(hidden));
    for (std::size_t i = 0; i < hidden; ++i) {
      const float xv = from_bf16(x[row + i]);
      const float dyv = from_bf16(dy[row + i]);
      dx[row + i] = to_bf16(inv * (dyv * from_bf16(w[i])) - xv * (inv * inv * inv * mean_gx));
      dw[i] += static_cast<double>(dyv) * xv * inv;
    }
  }
  for (std::size_t i = 0; i < hidden; ++i) dw_accum[i] += static_cast<float>(dw[i]);
}

std::vector<float> rope_table(std::size_t seq, std::size_t head_dim, double theta) {
  const std::size_t half = head_dim / 2;
  std::vector<float> table(seq * half * 2);
  for (std::size_t pos = 0; pos < seq; ++pos) {
    for (std::size_t i = 0; i < half; ++i) {
      const double angle =
          static_cast<double>(pos) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
      table[(pos * half + i) * 2] = static_cast<float>(std::cos(angle));
      table[(pos * half + i) * 2 + 1] = static_cast<float>(std::sin(angle));
    }
  }
  return table;
}

namespace {

// Rotates every head of `x` [tokens, heads, head_dim] by +a (sign 1) or -a (sign -1).
void rope_rotate(std::vector<bf16_bits>& x, std::size_t heads, const std::vector<float>& table, const RopeShape& s,
                 float sign) {
  const std::size_t d = s.head_dim, half = d / 2;
  COMMBOUND_CHECK(d % 16 == 0 && x.size() == s.tokens * heads * d && table.size() == s.seq * d,
                  "reference kernel shapes agree");
  for (std::size_t t = 0; t < s.tokens; ++t) {
    const float* cs = &table[(t % s.seq) * half * 2];
    for (std::size_t h = 0; h < heads; ++h) {
      bf16_bits* v = &x[(t * heads + h) * d];
      for (std::size_t i = 0; i < half; ++i) {
        const float c = cs[2 * i], sn = sign * cs[2 * i + 1];
        const float lo = from_bf16(v[i]), hi = from_bf16(v[i + half]);
        v[i] = to_bf16(lo * c - hi * sn);
        v[i + half] = to_bf16(hi * c + lo * sn);
      }
    }
  }
}

}  // namespace

void rope_forward_reference(std::vector<bf16_bits>& q, std::vector<bf16_bits>& k, const std::vector<float>& table,
                            const RopeShape& s) {
  rope_rotate(q, s.heads, table, s, 1.0f);
  rope_rotate(k, s.kv_heads, table, s, 1.0f);
}

void rope_backward_reference(std::vector<bf16_bits>& dq, std::vector<bf16_bits>& dk, const std::vector<float>& table,
                             const RopeShape& s) {
  rope_rotate(dq, s.heads, table, s, -1.0f);
  rope_rotate(dk, s.kv_heads, table, s, -1.0f);
}

void swiglu_forward_reference(const std::vector<bf16_bits>& gate, const std::vector<bf16_bits>& up,
                              std::vector<bf16_bits>& out) {
  COMMBOUND_CHECK(gate.size() == up.size(), "reference kernel shapes agree");
  out.resize(gate.size());
  for (std::size_t i = 0; i < gate.size(); ++i) {
    const float g = from_bf16(gate[i]);
    out[i] = to_bf16(g / (1.0f + std::exp(-g)) * from_bf16(up[i]));
  }
}

void swiglu_backward_reference(const std::vector<bf16_bits>& dout, const std::vector<bf16_bits>& gate,
                               const std::vector<bf16_bits>& up, std::vector<bf16_bits>& dgate,
                               std::vector<bf16_bits>& dup) {
  COMMBOUND_CHECK(dout.size() == gate.size() && up.size() == gate.size(), "reference kernel shapes agree");
  dgate.resize(gate.size());
  dup.resize(gate.size());
  for (std::size_t i = 0; i < gate.size(); ++i) {
    const float g = from_bf16(gate[i]), u = from_bf16(up[i]), d = from_bf16(dout[i]);
    const float sig = 1.0f / (1.0f + std::exp(-g));
    dgate[i] = to_bf16(d * u * (sig * (1.0f + g * (1.0f - sig))));
    dup[i] = to_bf16(d * (g * sig));
  }
}

void residual_add_reference(const std::vector<bf16_bits>& a, const std::vector<bf16_bits>& b,
                            std::vector<bf16_bits>& out) {
  COMMBOUND_CHECK(a.size() == b.size(), "reference kernel shapes agree");
  out.resize(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = to_bf16(from_bf16(a[i]) + from_bf16(b[i]));
}

void embedding_forward_reference(const std::vector<std::int32_t>& ids, const std::vector<bf16_bits>& table,
                                 std::size_t hidden, std::vector<bf16_bits>& out) {
  out.resize(ids.size() * hidden);
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const auto row = static_cast<std::size_t>(ids[t]);
    COMMBOUND_CHECK(ids[t] >= 0 && (row + 1) * hidden <= table.size(), "reference kernel shapes agree");
    for (std::size_t i = 0; i < hidden; ++i) out[t * hidden + i] = table[row * hidden + i];
  }
}

void embedding_backward_reference(const std::vector<bf16_bits>& dout, const std::vector<std::int32_t>& ids,
                                  std::size_t hidden, std::vector<float>& dtable_accum) {
  COMMBOUND_CHECK(dout.size() == ids.size() * hidden, "reference kernel shapes agree");
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const auto row = static_cast<std::size_t>(ids[t]);
    COMMBOUND_CHECK(ids[t] >= 0 && (row + 1) * hidden <= dtable_accum.size(), "reference kernel shapes agree");
    for (std::size_t i = 0; i < hidden; ++i) dtable_accum[row * hidden + i] += from_bf16(dout[t * hidden + i]);
  }
}

namespace {

bool is_target(std::int32_t target, std::size_t vocab) {
  return target >= 0 && static_cast<std::size_t>(target) < vocab;
}

}  // namespace

void cross_entropy_forward_reference(const std::vector<bf16_bits>& logits, const std::vector<std::int32_t>& targets,
                                     std::size_t vocab, std::vector<float>& loss, std::vector<float>& lse) {
  const std::size_t tokens = targets.size();
  COMMBOUND_CHECK(logits.size() == tokens * vocab, "reference kernel shapes agree");
  loss.resize(tokens);
  lse.resize(tokens);
  for (std::size_t t = 0; t < tokens; ++t) {
    const bf16_bits* row = &logits[t * vocab];
    double max = -INFINITY;
    for (std::size_t j = 0; j < vocab; ++j) max = std::max(max, static_cast<double>(from_bf16(row[j])));
    double sum = 0;
    for (std::size_t j = 0; j < vocab; ++j) sum += std::exp(from_bf16(row[j]) - max);
    const double l = max + std::log(sum);
    lse[t] = static_cast<float>(l);
    loss[t] = is_target(targets[t], vocab) ? static_cast<float>(l - from_bf16(row[targets[t]])) : 0.0f;
  }
}

void cross_entropy_backward_reference(const std::vector<bf16_bits>& logits, const std::vector<std::int32_t>& targets,
                                      const std::vector<float>& lse, std::size_t vocab, float grad_scale,
                                      std::vector<bf16_bits>& dlogits) {
  const std::size_t tokens = targets.size();
  COMMBOUND_CHECK(logits.size() == tokens * vocab && lse.size() == tokens, "reference kernel shapes agree");
  dlogits.resize(tokens * vocab);
  for (std::size_t t = 0; t < tokens; ++t) {
    const bool counted = is_target(targets[t], vocab);
    for (std::size_t j = 0; j < vocab; ++j) {
      const double p = std::exp(static_cast<double>(from_bf16(logits[t * vocab + j])) - lse[t]);
      const double onehot = static_cast<std::int32_t>(j) == targets[t] ? 1.0 : 0.0;
      dlogits[t * vocab + j] = to_bf16(counted ? static_cast<float>((p - onehot) * grad_scale) : 0.0f);
    }
  }
}

double grad_norm_squared_reference(const std::vector<float>& grad) {
  long double sum = 0;
  for (float g : grad) sum += static_cast<long double>(g) * g;
  return static_cast<double>(sum);
}

void adamw_reference(std::vector<float>& param, const std::vector<float>& grad, std::vector<float>& m,
                     std::vector<float>& v, const AdamWParams& p, std::vector<bf16_bits>& param_bf16) {
  COMMBOUND_CHECK(param.size() == grad.size() && m.size() == grad.size() && v.size() == grad.size(),
                  "reference kernel shapes agree");
  param_bf16.resize(param.size());
  const float c1 = 1.0f - std::pow(p.beta1, static_cast<float>(p.step));
  const float c2 = 1.0f - std::pow(p.beta2, static_cast<float>(p.step));
  for (std::size_t i = 0; i < param.size(); ++i) {
    m[i] = p.beta1 * m[i] + (1 - p.beta1) * grad[i];
    v[i] = p.beta2 * v[i] + (1 - p.beta2) * grad[i] * grad[i];
    const float update = (m[i] / c1) / (std::sqrt(v[i] / c2) + p.eps);
    param[i] = param[i] * (1 - p.lr * p.weight_decay) - p.lr * update;
    param_bf16[i] = to_bf16(param[i]);
  }
}

void gemm_reference(const GemmShape& s, const std::vector<bf16_bits>& a, const std::vector<bf16_bits>& b,
                    std::vector<bf16_bits>& c) {
  const auto m = static_cast<std::size_t>(s.m), n = static_cast<std::size_t>(s.n), k = static_cast<std::size_t>(s.k);
  const bool ta = a_transposed(s.layout), tb = b_transposed(s.layout);
  COMMBOUND_CHECK(a.size() == m * k && b.size() == k * n, "reference kernel shapes agree");
  c.resize(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      float acc = 0;
      for (std::size_t p = 0; p < k; ++p) {
        const float av = from_bf16(ta ? a[p * m + i] : a[i * k + p]);
        const float bv = from_bf16(tb ? b[j * k + p] : b[p * n + j]);
        acc += av * bv;
      }
      c[i * n + j] = to_bf16(acc);
    }
  }
}

}  // namespace commbound::kernels
