// ModelSpec: a Llama-architecture transformer's dimensions, parameter count and FLOPs: the model of
// the simulator's scenarios and of the calibration tool's grid and replay.
//
// Parameters: per layer q/o projections h*h each, k/v projections h*kv each (kv = kv_heads *
// head_dim), SwiGLU MLP 3*h*ffn, two RMSNorm vectors of h; plus the input embedding V*h, the final
// norm h and the untied LM head V*h. No biases.
//
// Model FLOPs per token (PaLM, Chowdhery et al. 2022, appendix B): 6 * N_matmul + 12 * L * h * s,
// where N_matmul counts every weight used in a matrix product (all but the input embedding, a
// lookup, and the norm vectors) and the second term is attention's QK^T and AV products forward and
// backward over the full sequence s (not halved for the causal mask, as PaLM and the study count).
//
// Host-only and C++17 (kernels/ includes it); the zoo's reader is model_zoo.hpp.
#pragma once

#include <string>

namespace commbound::calibration {

struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int ffn = 0;
  int vocab = 0;

  int head_dim() const { return hidden / heads; }
  double kv_dim() const { return static_cast<double>(kv_heads) * head_dim(); }
  // Weights of one transformer layer (attention, MLP, two norms).
  double layer_params() const;
  double embedding_params() const { return static_cast<double>(vocab) * hidden; }
  // All weights: layers, input embedding, final norm, LM head.
  double params() const;
  // Weights used in matrix products (layers less norms, plus the LM head).
  double matmul_params() const;
  double flops_per_token(int seq) const;
};

}  // namespace commbound::calibration
