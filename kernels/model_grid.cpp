#include "kernels/model_grid.hpp"

#include <toml++/toml.h>

#include <algorithm>

namespace commbound::kernels {

double ModelDims::params() const {
  const double h = hidden;
  const double kv_dim = static_cast<double>(kv_heads) * head_dim();
  const double layer = h * h * 2 + 2 * h * kv_dim + 3 * h * ffn + 2 * h;
  return layers * layer + 2 * static_cast<double>(vocab) * h + h;
}

Expected<std::vector<ModelDims>> read_models(const std::filesystem::path& path) {
  toml::table doc;
  try {
    doc = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    return Error{path.string() + ':' + std::to_string(e.source().begin.line) + ": " + std::string(e.description())};
  }
  std::vector<ModelDims> zoo;
  for (const auto& [name, node] : doc) {
    const toml::table* t = node.as_table();
    if (t == nullptr) continue;
    ModelDims m;
    m.name = std::string(name.str());
    for (auto [key, field] : {std::pair{"layers", &m.layers}, std::pair{"hidden", &m.hidden},
                              std::pair{"heads", &m.heads}, std::pair{"kv_heads", &m.kv_heads},
                              std::pair{"ffn", &m.ffn}, std::pair{"vocab", &m.vocab}}) {
      const auto v = (*t)[key].value<std::int64_t>();
      if (!v || *v < 1) {
        return Error{path.string() + ':' + std::to_string(t->source().begin.line) + ": " + m.name + '.' + key +
                     ": must be a positive integer"};
      }
      *field = static_cast<int>(*v);
    }
    zoo.push_back(m);
  }
  return zoo;
}

Status check_step(const ModelDims& m, const StepShape& s) {
  const std::string where = m.name + " at tp " + std::to_string(s.tp) + ": ";
  if (s.tp < 1 || s.micro_batch < 1 || s.seq < 1) return Error{where + "tp, micro-batch and seq must be positive"};
  if (m.heads % s.tp != 0) return Error{where + "tp must divide the " + std::to_string(m.heads) + " heads"};
  if (m.kv_heads % s.tp != 0) return Error{where + "tp must divide the " + std::to_string(m.kv_heads) + " KV heads"};
  if (m.ffn % s.tp != 0) return Error{where + "tp must divide the FFN size " + std::to_string(m.ffn)};
  if (m.vocab % s.tp != 0) return Error{where + "tp must divide the vocabulary " + std::to_string(m.vocab)};
  return Ok{};
}

OpTable step_shapes(const ModelDims& m, const StepShape& s) {
  OpTable t;
  const std::int64_t T = s.tokens();
  const std::int64_t h = m.hidden;
  const std::int64_t qkv = (static_cast<std::int64_t>(m.heads) + 2 * m.kv_heads) * m.head_dim() / s.tp;
  const std::int64_t ffn = m.ffn / s.tp;
  const std::int64_t vocab = m.vocab / s.tp;
  // The linear layers (out, in): qkv, o_proj, gate_up (fused gate and up), down, LM head.
  const std::pair<std::int64_t, std::int64_t> linears[] = {{qkv, h}, {h, h / s.tp}, {2 * ffn, h}, {h, ffn}, {vocab, h}};
  for (auto [out, in] : linears) {
    t.gemm.push_back({T, out, in, GemmLayout::forward, {}});
    t.gemm.push_back({T, in, out, GemmLayout::dgrad, {}});
    t.gemm.push_back({out, in, T, GemmLayout::wgrad, {}});
  }
  for (bool backward : {false, true}) {
    AttentionRow a;
    a.backward = backward;
    a.batch = s.micro_batch;
    a.heads = m.heads / s.tp;
    a.kv_heads = m.kv_heads / s.tp;
    a.seq = s.seq;
    a.head_dim = m.head_dim();
    t.attention.push_back(a);
  }
  const std::int64_t rope_width = (static_cast<std::int64_t>(m.heads) + m.kv_heads) / s.tp * m.head_dim();
  const std::pair<const char*, std::int64_t> mb[] = {
      {"rmsnorm_forward", h},         {"rmsnorm_backward", h},        {"rope_forward", rope_width},
      {"rope_backward", rope_width},  {"swiglu_forward", ffn},        {"swiglu_backward", ffn},
      {"residual_add", h},            {"embedding_forward", h},       {"embedding_backward", h},
      {"cross_entropy_forward", vocab}, {"cross_entropy_backward", vocab}};
  for (auto [op, width] : mb) t.memory_bound.push_back({op, T, width, 0, {}});
  return t;
}

Expected<OpTable> default_grid(const std::vector<ModelDims>& zoo, const GridOptions& o) {
  OpTable grid;
  for (const std::string& name : o.models) {
    const auto it = std::find_if(zoo.begin(), zoo.end(), [&](const ModelDims& m) { return m.name == name; });
    if (it == zoo.end()) return Error{"default grid: model " + name + " is not in the model zoo"};
    for (int tp : o.tps) {
      for (int seq : o.seqs) {
        for (int mb : o.micro_batches) {
          const StepShape step{mb, seq, tp};
          if (!check_step(*it, step)) continue;
          grid.merge(step_shapes(*it, step));
        }
      }
    }
  }
  OpTable optimizer;
  for (int log2 = 20; log2 <= 30; ++log2) {
    optimizer.memory_bound.push_back({"adamw", 1, std::int64_t{1} << log2, 0, {}});
    optimizer.memory_bound.push_back({"grad_norm", 1, std::int64_t{1} << log2, 0, {}});
  }
  grid.merge(optimizer);
  return grid;
}

}  // namespace commbound::kernels
