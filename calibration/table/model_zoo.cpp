#include "calibration/table/model_zoo.hpp"

#include "calibration/table/table_reader.hpp"

namespace commbound::calibration {

Expected<ModelSpec> read_model(const toml::table& table, const std::string& name, const std::string& prefix,
                               const std::map<std::string, std::string>* overrides) {
  TableReader r(table, prefix, overrides);
  ModelSpec m;
  m.name = r.string("name", name);
  r.string("description", "");
  m.layers = static_cast<int>(r.required_number("layers", 1, 100000));
  m.hidden = static_cast<int>(r.required_number("hidden", 1, 1 << 20));
  m.heads = static_cast<int>(r.required_number("heads", 1, 1 << 16));
  m.kv_heads = static_cast<int>(r.required_number("kv_heads", 1, 1 << 16));
  m.ffn = static_cast<int>(r.required_number("ffn", 1, 1 << 22));
  m.vocab = static_cast<int>(r.required_number("vocab", 1, 1 << 24));
  // The architecture's variants; absent keys are the Llama architecture.
  m.mlp = *parse_mlp(r.choice("mlp", "swiglu", {"swiglu", "gelu", "relu2"}));
  m.norm = *parse_norm(r.choice("norm", "rmsnorm", {"rmsnorm", "layernorm"}));
  m.position = *parse_position(r.choice("position", "rope", {"rope", "learned"}));
  m.max_positions = static_cast<int>(r.number("max_positions", 0, 0, 1 << 24));
  m.bias = r.boolean("bias", false);
  m.tied_embeddings = r.boolean("tied_embeddings", false);
  if (!r.failed() && m.position == Position::learned && m.max_positions < 1) {
    r.fail("max_positions", "learned positions need the position table's rows (>= 1)");
  }
  for (const char* key : {"layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "max_positions"}) {
    const toml::node* n = table.get(key);
    if (!r.failed() && n != nullptr && !n->is_integer()) r.fail(key, "expected an integer");
  }
  if (!r.failed() && m.hidden % m.heads != 0) r.fail("heads", "must divide hidden (" + std::to_string(m.hidden) + ")");
  if (!r.failed() && m.heads % m.kv_heads != 0) r.fail("kv_heads", "must divide heads (" + std::to_string(m.heads) + ")");
  if (Status s = r.finish(); !s) return s.error();
  return m;
}

Expected<std::vector<ModelSpec>> read_model_zoo(const std::filesystem::path& path) {
  auto file = parse_toml_file(path);
  if (!file) return file.error();
  std::vector<ModelSpec> zoo;
  for (const auto& [key, node] : *file) {
    const std::string name(key.str());
    if (!node.is_table()) return Error{where(node, path.string()) + ": " + name + ": expected a model table [" + name + "]"};
    auto m = read_model(*node.as_table(), name, name, nullptr);
    if (!m) return m.error();
    zoo.push_back(*m);
  }
  return zoo;
}

Expected<ModelSpec> load_model(const std::filesystem::path& path, const std::string& name) {
  auto file = parse_toml_file(path);
  if (!file) return file.error();
  const toml::node* node = file->get(name);
  if (node == nullptr || !node->is_table()) {
    std::string names;
    for (const auto& [key, value] : *file) names += (names.empty() ? "" : ", ") + std::string(key.str());
    return Error{path.string() + ": no model named \"" + name + "\" (known: " + names + ")"};
  }
  return read_model(*node->as_table(), name, name, nullptr);
}

}  // namespace commbound::calibration
