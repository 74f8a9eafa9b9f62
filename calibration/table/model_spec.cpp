#include "calibration/table/model_spec.hpp"

#include "calibration/base/enum_names.hpp"

namespace commbound::calibration {

const char* to_string(Mlp m) { return m == Mlp::swiglu ? "swiglu" : m == Mlp::gelu ? "gelu" : "relu2"; }
const char* to_string(Norm n) { return n == Norm::rmsnorm ? "rmsnorm" : "layernorm"; }
const char* to_string(Position p) { return p == Position::rope ? "rope" : "learned"; }

std::optional<Mlp> parse_mlp(std::string_view s) { return parse_named(s, {Mlp::swiglu, Mlp::gelu, Mlp::relu2}); }
std::optional<Norm> parse_norm(std::string_view s) { return parse_named(s, {Norm::rmsnorm, Norm::layernorm}); }
std::optional<Position> parse_position(std::string_view s) {
  return parse_named(s, {Position::rope, Position::learned});
}

double ModelSpec::layer_params() const {
  const double h = hidden;
  const double mlp_matrices = mlp == Mlp::swiglu ? 3 : 2;
  const double biases = bias ? (h + 2 * kv_dim()) + h + mlp_in_width() + h : 0;
  return 2 * h * h + 2 * h * kv_dim() + mlp_matrices * h * ffn + 2 * norm_params() + biases;
}

double ModelSpec::params() const { return layers * layer_params() + input_params() + head_params(true); }

double ModelSpec::matmul_params() const {
  const double h = hidden;
  const double mlp_matrices = mlp == Mlp::swiglu ? 3 : 2;
  return layers * (2 * h * h + 2 * h * kv_dim() + mlp_matrices * h * ffn) + embedding_params();
}

double ModelSpec::flops_per_token(int seq) const {
  return 6 * matmul_params() + 12.0 * layers * hidden * seq;
}

}  // namespace commbound::calibration
