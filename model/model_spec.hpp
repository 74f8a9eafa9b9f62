// ModelSpec: a decoder-only transformer's dimensions, parameter count and FLOPs: the model of the
// simulator's scenarios and of the calibration tool's grid and replay. The Llama architecture by
// default (RMSNorm, rotary positions, SwiGLU MLP, no biases, untied LM head); the GPT family's
// variants are fields: GELU or squared-ReLU MLPs (two matrices, GPT-3 and Nemotron-4), LayerNorm
// (weight and bias), learned absolute positions, linear biases, tied input and output embeddings.
//
// Mixtures of experts (experts > 0): after `first_dense_layers` dense layers, every
// `moe_layer_every`-th layer replaces its MLP by a router (a linear layer h -> experts) that sends
// each token to `top_k` of `experts` routed experts, plus `shared_experts` experts every token
// passes through; each expert is an MLP of the model's kind `expert_ffn` wide (Mixtral, DeepSeek-V3,
// Qwen3-MoE, GPT-OSS; docs/reference/moe_models.md).
//
// Multi-head latent attention (DeepSeek-V2/V3, arXiv 2405.04434 section 2.1; kv_lora_rank > 0):
// queries through a low-rank latent (h -> q_lora_rank, RMSNorm, -> heads x (head_dim +
// rope_head_dim); q_lora_rank 0: h -> queries directly), keys and values from one latent
// (h -> kv_lora_rank + rope_head_dim; RMSNorm on the kv_lora_rank part, -> heads x (head_dim +
// v_head_dim)), the rotary part of the key (rope_head_dim) shared by every head; attention with
// query/key heads head_dim + rope_head_dim wide and value heads v_head_dim wide; o: heads x
// v_head_dim -> h. kv_heads is heads (the up-projection gives every head its own key and value).
//
// Parameters: per layer q/o projections h*q each (q = heads * head_dim, h unless head_dim is
// given), k/v projections h*kv each (kv = kv_heads * head_dim), the MLP (SwiGLU 3*h*ffn, GELU or
// squared ReLU 2*h*ffn; an MoE layer: every routed and shared expert's, and the router's h*experts),
// two norms (RMSNorm h each, LayerNorm 2h each), with biases every projection's outputs; plus the
// input embedding V*h (and max_positions*h learned positions), the final norm and the LM head V*h
// unless tied.
//
// Model FLOPs per token (PaLM, Chowdhery et al. 2022, appendix B): 6 * N_matmul + 12 * L * q * s,
// (MLA: 6 * L * heads * (qk_head_dim + value_head_dim) * s, the same two products' widths) where N_matmul counts every weight a token is multiplied by (all but the input embedding, a
// lookup, and the norm vectors; of an MoE layer's experts only the top_k routed and the shared
// ones: the active parameters) and the second term is attention's QK^T and AV products forward and
// backward over the full sequence s (not halved for the causal mask, as PaLM and the study count);
// a sliding-window layer's over the keys its queries see, min(window, s), counted the same way.
//
// Host-only and C++17 (kernels/ includes it); the zoo's reader is model_zoo.hpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace commbound::model {

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
  int attention_head_dim = 0;    // a head's width where it is not hidden / heads (Qwen3, GPT-OSS); 0: hidden / heads
  // Multi-head latent attention (the file header); kv_lora_rank = 0: standard attention.
  int q_lora_rank = 0;          // the queries' latent width; 0: queries projected from h directly
  int kv_lora_rank = 0;         // the keys' and values' latent width
  int rope_head_dim = 0;        // the rotary part of a query/key head, beside head_dim (no rotary)
  int v_head_dim = 0;           // a value head's width
  // Mixture of experts (the file header); experts = 0: a dense model.
  int experts = 0;              // routed experts of an MoE layer
  int top_k = 0;                // routed experts each token goes to
  int shared_experts = 0;       // experts every token goes through
  int expert_ffn = 0;           // one expert's MLP inner size
  int first_dense_layers = 0;   // the first layers keep the dense MLP (DeepSeek-V3: 3)
  int moe_layer_every = 1;      // after them, every k-th layer is MoE (1: all; Llama 4 Maverick: 2)
  // Multi-token prediction (DeepSeek-V3, arXiv 2412.19437 sec. 2.2): module k predicts token
  // i + 1 + k from the hidden state the model (or module k - 1) gives token i and the embedding of
  // token i + k: both RMSNorm'd, concatenated, projected 2h -> h, one transformer layer (the
  // model's last layer's kind, counted as layer layers + k), then the shared final norm, LM head
  // and loss. Trained beside the model, not counted in params() (DeepSeek-V3's 671 B exclude it).
  int mtp_layers = 0;
  // Sliding-window attention (Mistral 7B, Gemma 2 and 3, GPT-OSS): a windowed layer's queries see
  // the `sliding_window` keys up to their own; every `full_attention_every`-th layer keeps the full
  // causal mask (GPT-OSS 2: windowed and full layers alternate, the first windowed; Gemma 3: 6),
  // 0: none does. sliding_window 0: every layer full.
  int sliding_window = 0;
  int full_attention_every = 0;

  // Layer `l`'s window (1-based; the keys a query sees), 0: full causal attention.
  int attention_window(int l) const {
    const bool full = full_attention_every > 0 && l % full_attention_every == 0;
    return sliding_window > 0 && !full ? sliding_window : 0;
  }
  int head_dim() const { return attention_head_dim > 0 ? attention_head_dim : hidden / heads; }
  bool mla() const { return kv_lora_rank > 0; }
  // A query/key head's width (MLA: head_dim + rope_head_dim) and a value head's.
  int qk_head_dim() const { return head_dim() + (mla() ? rope_head_dim : 0); }
  int value_head_dim() const { return mla() ? v_head_dim : head_dim(); }
  // Attention's query width (heads x head_dim) and key/value width (kv_heads x head_dim); MLA
  // models use the widths below.
  double q_dim() const { return static_cast<double>(heads) * head_dim(); }
  double kv_dim() const { return static_cast<double>(kv_heads) * head_dim(); }
  // Queries, keys and values per token: heads x qk_head_dim + kv_heads x (qk_head_dim +
  // value_head_dim) (q + 2 kv for standard attention; MLA's up-projected heads).
  double qkv_dim() const {
    return static_cast<double>(heads) * qk_head_dim() + static_cast<double>(kv_heads) * (qk_head_dim() + value_head_dim());
  }
  // The head width attention's two products average, (qk_head_dim + value_head_dim) / 2: the
  // head_dim of a standard head with the same FLOPs (head_dim() for standard attention).
  double attention_core_head_dim() const { return (qk_head_dim() + value_head_dim()) / 2.0; }
  // Attention's output, the o projection's input: heads x the value head's width.
  double attention_out_dim() const { return static_cast<double>(heads) * value_head_dim(); }
  // What the attention block's first products read from the hidden state, per token: h, or under
  // MLA the latents the up-projections read (q_lora_rank, or h without one, and kv_lora_rank +
  // rope_head_dim): what tensor parallelism gathers before them under sequence parallelism.
  double attention_input_width() const {
    return mla() ? (q_lora_rank > 0 ? q_lora_rank : hidden) + kv_lora_rank + rope_head_dim : hidden;
  }
  // The MLP's first matrix's outputs for an inner size `width`: 2 x width for SwiGLU (gate and
  // up), width otherwise.
  double mlp_in_width(double width) const { return mlp == Mlp::swiglu ? 2.0 * width : width; }
  double mlp_in_width() const { return mlp_in_width(ffn); }
  // Weights of an MLP `width` wide: SwiGLU's three matrices, GELU's or squared ReLU's two.
  double mlp_params(double width) const { return (mlp == Mlp::swiglu ? 3.0 : 2.0) * hidden * width; }
  // Weights of one norm: h (RMSNorm) or 2h (LayerNorm's weight and bias).
  double norm_params() const { return norm == Norm::layernorm ? 2.0 * hidden : hidden; }
  bool moe() const { return experts > 0; }
  // Whether layer `l` (1-based) is an MoE layer: past the first dense layers, every
  // moe_layer_every-th (l - first_dense_layers a multiple of it).
  bool is_moe_layer(int l) const {
    return moe() && l > first_dense_layers && (l - first_dense_layers) % moe_layer_every == 0;
  }
  int moe_layers() const;
  // One routed expert's weights, and all routed experts' of an MoE layer (what expert parallelism
  // shards).
  double expert_params() const { return mlp_params(expert_ffn); }
  double routed_expert_params() const { return experts * expert_params(); }
  // Weights of one dense transformer layer (attention, MLP, two norms, biases).
  double layer_params() const;
  // Weights of layer `l` (1-based): a dense layer's, or an MoE layer's (attention, router, routed
  // and shared experts, norms).
  double layer_params(int l) const;
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
  // Multi-token prediction module k's own weights (1-based): its layer's, the 2h -> h projection
  // and its two norms; the embedding and the head are the model's.
  double mtp_module_params(int k) const { return layer_params(layers + k) + 2.0 * hidden * hidden + 2 * norm_params(); }
  // Weights used in matrix products (layers less norms, plus the LM head).
  double matmul_params() const;
  // The matmul weights one token is multiplied by: matmul_params() with only the top_k routed
  // experts of each MoE layer (all of them for a dense model).
  double active_matmul_params() const;
  // Weights of one layer's attention used in matrix products, and its norm vectors beyond the
  // layer's two (MLA's latent norms).
  double attention_matmul_params() const;
  double attention_norm_params() const { return mla() ? static_cast<double>(q_lora_rank) + kv_lora_rank : 0; }
  double flops_per_token(int seq) const;
};

}  // namespace commbound::model
