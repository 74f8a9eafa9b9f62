#include "kernels/reference.hpp"

#include <cassert>
#include <cmath>

namespace commbound::kernels {

void rmsnorm_forward_reference(const std::vector<bf16_bits>& x, const std::vector<bf16_bits>& w, std::size_t rows,
                               std::size_t hidden, float eps, std::vector<bf16_bits>& y) {
  assert(x.size() == rows * hidden && w.size() == hidden);
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

void swiglu_forward_reference(const std::vector<bf16_bits>& gate, const std::vector<bf16_bits>& up,
                              std::vector<bf16_bits>& out) {
  assert(gate.size() == up.size());
  out.resize(gate.size());
  for (std::size_t i = 0; i < gate.size(); ++i) {
    const float g = from_bf16(gate[i]);
    out[i] = to_bf16(g / (1.0f + std::exp(-g)) * from_bf16(up[i]));
  }
}

void adamw_reference(std::vector<float>& param, const std::vector<float>& grad, std::vector<float>& m,
                     std::vector<float>& v, const AdamWParams& p, std::vector<bf16_bits>& param_bf16) {
  assert(param.size() == grad.size() && m.size() == grad.size() && v.size() == grad.size());
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
  assert(a.size() == s.m * s.k && b.size() == s.k * s.n);
  c.resize(s.m * s.n);
  for (std::size_t i = 0; i < s.m; ++i) {
    for (std::size_t j = 0; j < s.n; ++j) {
      float acc = 0;
      for (std::size_t p = 0; p < s.k; ++p) {
        const float av = from_bf16(s.trans_a ? a[p * s.m + i] : a[i * s.k + p]);
        const float bv = from_bf16(s.trans_b ? b[j * s.k + p] : b[p * s.n + j]);
        acc += av * bv;
      }
      c[i * s.n + j] = to_bf16(acc);
    }
  }
}

}  // namespace commbound::kernels
