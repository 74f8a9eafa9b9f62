#include "model/model_zoo.hpp"

#include "core/table_reader.hpp"

// Key tables are written with designated initializers that leave the fields a key does not use
// at their defaults; GCC warns about each omitted field all the same.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace commbound::model {

const std::vector<KeySpec<ModelSpec>>& model_keys() {
  // Dimensions: integers, each read as a number and then checked integral (read_model).
  auto dimension = [](const char* key, double upper, const char* doc, auto field) {
    return KeySpec<ModelSpec>{.key = key, .type = KeyType::integer, .lower = 1, .upper = upper, .required = true,
                              .doc = doc, .set = field.set, .get = field.get};
  };
  static const std::vector<KeySpec<ModelSpec>> keys = {
      {.key = "name", .derived = "`custom` with explicit dimensions",
       .doc = "a `calibration/models.toml` model (`llama2-7b`, ...) or, beside explicit dimensions, the model's name",
       .get = KeyField<&ModelSpec::name>::get},
      {.key = "description", .fallback = KeyValue{std::string()}, .doc = "free text"},
      dimension("layers", 100000, "transformer layers", KeyField<&ModelSpec::layers>{}),
      dimension("hidden", 1 << 20, "hidden size", KeyField<&ModelSpec::hidden>{}),
      dimension("heads", 1 << 16, "attention heads (divide hidden)", KeyField<&ModelSpec::heads>{}),
      dimension("kv_heads", 1 << 16, "key/value heads (divide heads)", KeyField<&ModelSpec::kv_heads>{}),
      dimension("ffn", 1 << 22, "MLP inner size", KeyField<&ModelSpec::ffn>{}),
      dimension("vocab", 1 << 24, "vocabulary size", KeyField<&ModelSpec::vocab>{}),
      // The architecture's variants; absent keys are the Llama architecture.
      {.key = "mlp", .type = KeyType::choice, .fallback = KeyValue{std::string("swiglu")},
       .names = names_of({Mlp::swiglu, Mlp::gelu, Mlp::relu2}),
       .doc = "`swiglu` (three matrices), `gelu` or `relu2` (squared ReLU; two matrices)",
       .set = KeyEnum<parse_mlp, &ModelSpec::mlp>::set, .get = KeyEnum<parse_mlp, &ModelSpec::mlp>::get},
      {.key = "norm", .type = KeyType::choice, .fallback = KeyValue{std::string("rmsnorm")},
       .names = names_of({Norm::rmsnorm, Norm::layernorm}), .doc = "`rmsnorm` or `layernorm` (weight and bias)",
       .set = KeyEnum<parse_norm, &ModelSpec::norm>::set, .get = KeyEnum<parse_norm, &ModelSpec::norm>::get},
      {.key = "position", .type = KeyType::choice, .fallback = KeyValue{std::string("rope")},
       .names = names_of({Position::rope, Position::learned}),
       .doc = "`rope` (rotary) or `learned` (absolute positions, a table of `max_positions` rows)",
       .set = KeyEnum<parse_position, &ModelSpec::position>::set,
       .get = KeyEnum<parse_position, &ModelSpec::position>::get},
      {.key = "max_positions", .type = KeyType::integer, .lower = 0, .upper = 1 << 24, .fallback = KeyValue{0L},
       .doc = "learned positions: rows of the position table (>= 1 with `position = \"learned\"`)",
       .set = KeyField<&ModelSpec::max_positions>::set, .get = KeyField<&ModelSpec::max_positions>::get},
      {.key = "bias", .type = KeyType::boolean, .fallback = KeyValue{false}, .doc = "biases on every linear layer",
       .set = KeyField<&ModelSpec::bias>::set, .get = KeyField<&ModelSpec::bias>::get},
      {.key = "tied_embeddings", .type = KeyType::boolean, .fallback = KeyValue{false},
       .doc = "the LM head is the input embedding",
       .set = KeyField<&ModelSpec::tied_embeddings>::set, .get = KeyField<&ModelSpec::tied_embeddings>::get},
      {.key = "head_dim", .type = KeyType::integer, .lower = 0, .upper = 1 << 16, .fallback = KeyValue{0L},
       .doc = "a head's width where it is not hidden / heads (Qwen3, GPT-OSS); 0: hidden / heads",
       .set = KeyField<&ModelSpec::attention_head_dim>::set, .get = KeyField<&ModelSpec::attention_head_dim>::get},
      // Multi-head latent attention: absent keys are standard attention.
      {.key = "kv_lora_rank", .type = KeyType::integer, .lower = 0, .upper = 1 << 20, .fallback = KeyValue{0L},
       .doc = "multi-head latent attention (DeepSeek-V3): the keys' and values' latent width; 0: standard attention",
       .set = KeyField<&ModelSpec::kv_lora_rank>::set, .get = KeyField<&ModelSpec::kv_lora_rank>::get},
      {.key = "q_lora_rank", .type = KeyType::integer, .lower = 0, .upper = 1 << 20, .fallback = KeyValue{0L},
       .doc = "MLA: the queries' latent width; 0: queries projected from the hidden state directly",
       .set = KeyField<&ModelSpec::q_lora_rank>::set, .get = KeyField<&ModelSpec::q_lora_rank>::get},
      {.key = "rope_head_dim", .type = KeyType::integer, .lower = 0, .upper = 1 << 16, .fallback = KeyValue{0L},
       .doc = "MLA: the rotary part of a query/key head, beside `head_dim` (the part without rotary)",
       .set = KeyField<&ModelSpec::rope_head_dim>::set, .get = KeyField<&ModelSpec::rope_head_dim>::get},
      {.key = "v_head_dim", .type = KeyType::integer, .lower = 0, .upper = 1 << 16, .fallback = KeyValue{0L},
       .doc = "MLA: a value head's width",
       .set = KeyField<&ModelSpec::v_head_dim>::set, .get = KeyField<&ModelSpec::v_head_dim>::get},
      // Mixture of experts: absent keys are a dense model.
      {.key = "experts", .type = KeyType::integer, .lower = 0, .upper = 1 << 16, .fallback = KeyValue{0L},
       .doc = "routed experts of an MoE layer; 0: a dense model",
       .set = KeyField<&ModelSpec::experts>::set, .get = KeyField<&ModelSpec::experts>::get},
      {.key = "top_k", .type = KeyType::integer, .lower = 0, .upper = 1 << 16, .fallback = KeyValue{0L},
       .doc = "MoE: routed experts each token goes to (1 .. experts)",
       .set = KeyField<&ModelSpec::top_k>::set, .get = KeyField<&ModelSpec::top_k>::get},
      {.key = "shared_experts", .type = KeyType::integer, .lower = 0, .upper = 1 << 16, .fallback = KeyValue{0L},
       .doc = "MoE: experts every token goes through, each `expert_ffn` wide",
       .set = KeyField<&ModelSpec::shared_experts>::set, .get = KeyField<&ModelSpec::shared_experts>::get},
      {.key = "expert_ffn", .type = KeyType::integer, .lower = 0, .upper = 1 << 22, .fallback = KeyValue{0L},
       .doc = "MoE: one expert's MLP inner size",
       .set = KeyField<&ModelSpec::expert_ffn>::set, .get = KeyField<&ModelSpec::expert_ffn>::get},
      {.key = "first_dense_layers", .type = KeyType::integer, .lower = 0, .upper = 100000, .fallback = KeyValue{0L},
       .doc = "MoE: the first layers keep the dense MLP (`ffn` wide)",
       .set = KeyField<&ModelSpec::first_dense_layers>::set, .get = KeyField<&ModelSpec::first_dense_layers>::get},
      {.key = "mtp_layers", .type = KeyType::integer, .lower = 0, .upper = 16, .fallback = KeyValue{0L},
       .doc = "multi-token prediction modules (DeepSeek-V3's: norms, a 2h -> h projection, one layer, the shared "
              "head and loss) on the last pipeline stage; 0: none",
       .set = KeyField<&ModelSpec::mtp_layers>::set, .get = KeyField<&ModelSpec::mtp_layers>::get},
      {.key = "moe_layer_every", .type = KeyType::integer, .lower = 1, .upper = 100000, .fallback = KeyValue{1L},
       .doc = "MoE: after the dense layers every k-th layer is MoE (1: all)",
       .set = KeyField<&ModelSpec::moe_layer_every>::set, .get = KeyField<&ModelSpec::moe_layer_every>::get},
      // Sliding-window attention: absent keys are full causal attention in every layer.
      {.key = "sliding_window", .type = KeyType::integer, .lower = 0, .upper = 1 << 24, .fallback = KeyValue{0L},
       .doc = "sliding-window attention: the keys a windowed layer's queries see, their own included "
              "(GPT-OSS 128); 0: every layer attends to the whole causal prefix",
       .set = KeyField<&ModelSpec::sliding_window>::set, .get = KeyField<&ModelSpec::sliding_window>::get},
      {.key = "full_attention_every", .type = KeyType::integer, .lower = 0, .upper = 100000, .fallback = KeyValue{0L},
       .doc = "sliding windows: every k-th layer keeps full causal attention (GPT-OSS 2: they alternate, the first "
              "windowed); 0: every layer windowed",
       .set = KeyField<&ModelSpec::full_attention_every>::set,
       .get = KeyField<&ModelSpec::full_attention_every>::get},
  };
  return keys;
}

namespace {

// Fails on the first of `keys` set (non-zero) without the key they belong to, saying `why`.
void refuse_orphans(TableReader& r, std::initializer_list<std::pair<const char*, int>> keys, const std::string& why) {
  for (const auto& [key, value] : keys) {
    if (value != 0) return r.fail(key, why);
  }
}

// An MoE model's keys agree: a top_k of 1 .. experts and an expert width; a dense model sets none
// of them; some layer is MoE.
void check_experts(TableReader& r, const ModelSpec& m) {
  const std::string experts = std::to_string(m.experts);
  if (!m.moe()) {
    return refuse_orphans(r, {{"top_k", m.top_k}, {"shared_experts", m.shared_experts}, {"expert_ffn", m.expert_ffn}},
                          "an MoE key without `experts` (the routed experts; 0 or absent: a dense model)");
  }
  if (m.top_k < 1 || m.top_k > m.experts) return r.fail("top_k", "must be 1 .. experts (" + experts + ")");
  if (m.expert_ffn < 1) return r.fail("expert_ffn", "MoE layers need the experts' inner size (>= 1)");
  if (m.first_dense_layers >= m.layers) {
    return r.fail("first_dense_layers", "leaves no MoE layer of the " + std::to_string(m.layers));
  }
}

// MLA's keys agree: a value head width, every head its own key and value (kv_heads = heads); the
// other MLA keys only beside kv_lora_rank.
void check_latent_attention(TableReader& r, const ModelSpec& m) {
  if (!m.mla()) {
    return refuse_orphans(r, {{"q_lora_rank", m.q_lora_rank}, {"rope_head_dim", m.rope_head_dim},
                              {"v_head_dim", m.v_head_dim}},
                          "an MLA key without `kv_lora_rank` (0 or absent: standard attention)");
  }
  if (m.v_head_dim < 1) return r.fail("v_head_dim", "multi-head latent attention needs the value heads' width (>= 1)");
  if (m.kv_heads != m.heads) {
    return r.fail("kv_heads", "must equal heads (" + std::to_string(m.heads) +
                                  ") under multi-head latent attention: every head has its own key and value");
  }
}

}  // namespace

Expected<ModelSpec> read_model(const toml::table& table, const std::string& name, const std::string& prefix,
                               const std::map<std::string, std::string>* overrides) {
  TableReader r(table, prefix, overrides);
  ModelSpec m;
  m.name = r.string("name", name);
  r.string("description", "");
  // Integers read as numbers, so that 4096.0 says "expected an integer" rather than its type.
  for (const KeySpec<ModelSpec>& k : model_keys()) {
    if (k.set == nullptr) continue;  // name and description, read above
    if (k.type == KeyType::integer) {
      const double v = k.required ? r.required_number(k.key, k.lower, k.upper)
                                  : r.number(k.key, static_cast<double>(std::get<long>(*k.fallback)), k.lower, k.upper);
      k.set(m, KeyValue{static_cast<long>(v)}, 1);
    } else if (std::optional<KeyValue> v = read_key(r, k)) {
      k.set(m, *v, 1);
    }
  }
  if (!r.failed() && m.position == Position::learned && m.max_positions < 1) {
    r.fail("max_positions", "learned positions need the position table's rows (>= 1)");
  }
  for (const KeySpec<ModelSpec>& k : model_keys()) {
    const toml::node* n = table.get(k.key);
    if (k.type == KeyType::integer && !r.failed() && n != nullptr && !n->is_integer()) r.fail(k.key, "expected an integer");
  }
  if (!r.failed() && m.attention_head_dim == 0 && m.hidden % m.heads != 0) {
    r.fail("heads", "must divide hidden (" + std::to_string(m.hidden) + ") unless head_dim is given");
  }
  if (!r.failed()) check_experts(r, m);
  if (!r.failed()) check_latent_attention(r, m);
  if (!r.failed() && m.sliding_window == 0 && m.full_attention_every != 0) {
    r.fail("full_attention_every", "without `sliding_window` (0 or absent: every layer full)");
  }
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

}  // namespace commbound::model
