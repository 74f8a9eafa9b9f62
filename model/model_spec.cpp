#include "model/model_spec.hpp"

#include "core/enum_names.hpp"

#include <algorithm>

namespace commbound::model {

const char* to_string(Mlp m) { return m == Mlp::swiglu ? "swiglu" : m == Mlp::gelu ? "gelu" : "relu2"; }
const char* to_string(Norm n) { return n == Norm::rmsnorm ? "rmsnorm" : "layernorm"; }
const char* to_string(Position p) { return p == Position::rope ? "rope" : "learned"; }

std::optional<Mlp> parse_mlp(std::string_view s) { return parse_named(s, {Mlp::swiglu, Mlp::gelu, Mlp::relu2}); }
std::optional<Norm> parse_norm(std::string_view s) { return parse_named(s, {Norm::rmsnorm, Norm::layernorm}); }
std::optional<Position> parse_position(std::string_view s) {
  return parse_named(s, {Position::rope, Position::learned});
}

namespace {

// The biases of a layer's projections (qkv's and o's outputs, the MLP's two matrices' outputs).
double bias_params(const ModelSpec& m, double mlp_width) {
  return m.bias ? m.qkv_dim() + m.hidden + m.mlp_in_width(mlp_width) + m.hidden : 0;
}

// The matmul weights of an MoE layer's MLP side that `routed` of its routed experts use: the
// router, those experts and the shared ones.
double moe_matmul_params(const ModelSpec& m, double routed) {
  return static_cast<double>(m.hidden) * m.experts + (routed + m.shared_experts) * m.expert_params();
}

}  // namespace

// Attention's matrices of one layer: q and o (h x q each), k and v (h x kv each); under MLA the
// down-projections (h x q_lora_rank, h x (kv_lora_rank + rope_head_dim)), the up-projections
// (q_lora_rank x heads x qk_head_dim, kv_lora_rank x heads x (head_dim + v_head_dim)) and o.
double ModelSpec::attention_matmul_params() const {
  const double h = hidden;
  if (!mla()) return 2.0 * h * q_dim() + 2.0 * h * kv_dim();
  const double queries = static_cast<double>(heads) * qk_head_dim();
  const double q = q_lora_rank > 0 ? h * q_lora_rank + static_cast<double>(q_lora_rank) * queries : h * queries;
  const double kv = h * (kv_lora_rank + rope_head_dim) +
                    static_cast<double>(kv_lora_rank) * heads * (head_dim() + value_head_dim());
  return q + kv + attention_out_dim() * h;
}

int ModelSpec::moe_layers() const {
  int n = 0;
  for (int l = 1; l <= layers; ++l) n += is_moe_layer(l) ? 1 : 0;
  return n;
}

double ModelSpec::layer_params() const {
  return attention_matmul_params() + attention_norm_params() + mlp_params(ffn) + 2 * norm_params() +
         bias_params(*this, ffn);
}

double ModelSpec::layer_params(int l) const {
  if (!is_moe_layer(l)) return layer_params();
  return attention_matmul_params() + attention_norm_params() + moe_matmul_params(*this, experts) + 2 * norm_params();
}

double ModelSpec::params() const {
  double p = input_params() + head_params(true);
  for (int l = 1; l <= layers; ++l) p += layer_params(l);
  return p;
}

double ModelSpec::matmul_params() const {
  double p = embedding_params();
  for (int l = 1; l <= layers; ++l) {
    p += attention_matmul_params() + (is_moe_layer(l) ? moe_matmul_params(*this, experts) : mlp_params(ffn));
  }
  return p;
}

double ModelSpec::active_matmul_params() const {
  double p = embedding_params();
  for (int l = 1; l <= layers; ++l) {
    p += attention_matmul_params() + (is_moe_layer(l) ? moe_matmul_params(*this, top_k) : mlp_params(ffn));
  }
  return p;
}

double ModelSpec::flops_per_token(int seq) const {
  double keys = 0;  // the keys a token's queries see, summed over the layers
  for (int l = 1; l <= layers; ++l) {
    const int window = attention_window(l);
    keys += window > 0 ? std::min(window, seq) : seq;
  }
  return 6 * active_matmul_params() + 12.0 * heads * attention_core_head_dim() * keys;
}

}  // namespace commbound::model
