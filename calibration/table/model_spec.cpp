#include "calibration/table/model_spec.hpp"

namespace commbound::calibration {

double ModelSpec::layer_params() const {
  const double h = hidden;
  return 2 * h * h + 2 * h * kv_dim() + 3 * h * ffn + 2 * h;
}

double ModelSpec::params() const { return layers * layer_params() + 2 * embedding_params() + hidden; }

double ModelSpec::matmul_params() const { return layers * (layer_params() - 2.0 * hidden) + embedding_params(); }

double ModelSpec::flops_per_token(int seq) const {
  return 6 * matmul_params() + 12.0 * layers * hidden * seq;
}

}  // namespace commbound::calibration
