// ModelSpec: a decoder-only transformer's dimensions, parameter count and FLOPs: the model of the
// simulator's scenarios and of the calibration tool's grid and replay. The Llama architecture by
// default (RMSNorm, rotary positions, SwiGLU MLP, no biases, untied LM head); the GPT family's
// variants are fields: GELU or squared-ReLU MLPs (two matrices, GPT-3 and Nemotron-4), LayerNorm
// (weight and bias), learned absolute positions, linear biases, tied input and output embeddings.
//
// Parameters: per layer q/o projections h*h each, k/v projections h*kv each (kv = kv_heads *
// head_dim), the MLP (SwiGLU 3*h*ffn, GELU or squared ReLU 2*h*ffn), two norms (RMSNorm h each,
// LayerNorm 2h each), with biases every projection's outputs; plus the input embedding V*h (and
// max_positions*h learned positions), the final norm and the LM head V*h unless tied.
//
// Model FLOPs per token (PaLM, Chowdhery et al. 2022, appendix B): 6 * N_matmul + 12 * L * h * s,
// where N_matmul counts every weight used in a matrix product (all but the input embedding, a
// lookup, and the norm vectors) and the second term is attention's QK^T and AV products forward and
// backward over the full sequence s (not halved for the causal mask, as PaLM and the study count).
//
// Host-only and C++17 (kernels/ includes it); the zoo's reader is model_zoo.hpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace commbound::calibration {

enum class Mlp { swiglu, gelu, relu2 };
enum class Norm { rmsnorm, layernorm };
enum class Position { rope, learned };
// "swiglu", "gelu", "relu2"; "rmsnorm", "layernorm"; "rope", "learned".
const char* to_string(Mlp m);
const char* to_string(Norm n);
const char* to_string(Position p);
std::optional<Mlp> parse_mlp(std::string_view s);
std::optional<Norm> parse_norm(std::string_view s);
std::optional<Position> parse_position(std::string_view s);

struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int ffn = 0;
  int vocab = 0;
  Mlp mlp = Mlp::swiglu;
  Norm norm = Norm::rmsnorm;
  Position position = Position::rope;
  int max_positions = 0;         // learned positions: rows of the position table
  bool bias = false;             // biases on every linear layer
  bool tied_embeddings = false;  // the LM head is the input embedding

  int head_dim() const { return hidden / heads; }
  double kv_dim() const { return static_cast<double>(kv_heads) * head_dim(); }
  // The MLP's first matrix's outputs: 2 ffn for SwiGLU (gate and up), ffn otherwise.
  double mlp_in_width() const { return mlp == Mlp::swiglu ? 2.0 * ffn : ffn; }
  // Weights of one norm: h (RMSNorm) or 2h (LayerNorm's weight and bias).
  double norm_params() const { return norm == Norm::layernorm ? 2.0 * hidden : hidden; }
  // Weights of one transformer layer (attention, MLP, two norms, biases).
  double layer_params() const;
  double embedding_params() const { return static_cast<double>(vocab) * hidden; }
  // The input side: the token embedding and the learned positions.
  double input_params() const { return embedding_params() + (position == Position::learned ? 1.0 * max_positions * hidden : 0); }
  // The output side: the final norm and the LM head (none of its own when tied and held with the
  // embedding, `with_embedding`; a pipeline's last stage keeps its own copy of a tied head).
  double head_params(bool with_embedding) const {
    return norm_params() + (tied_embeddings && with_embedding ? 0 : embedding_params());
  }
  // All weights: layers, input embedding and positions, final norm, LM head.
  double params() const;
  // Weights used in matrix products (layers less norms, plus the LM head).
  double matmul_params() const;
  double flops_per_token(int seq) const;
};

}  // namespace commbound::calibration
