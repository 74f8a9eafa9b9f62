#include "model/llama_recipe.hpp"

#include "model/framework_recipe.hpp"
#include "model/memory_bound_op.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace commbound::model {
namespace {

// A kernel size from the layout's arithmetic: exact when the parallel degrees divide the model's
// dimensions, else rounded up.
std::int64_t dim(double v) { return static_cast<std::int64_t>(std::ceil(v - 1e-9)); }

RecipeKernel memory_bound(std::string name, MemoryBoundOp op, double tokens, double width) {
  return {std::move(name), MemoryBoundShape{to_string(op), dim(tokens), dim(width)}, 1, ""};
}

// The products of linear layer `name` mapping `in` features to `out` on `tokens` tokens: forward
// Y = X W^T; backward dX = dY W, then dW = dY^T X (same FLOPs, other shapes).
void linear(std::vector<RecipeKernel>& into, const std::string& name, double tokens, double out, double in,
            Direction direction, const std::string& tp_reduction = "") {
  if (direction == Direction::forward) {
    into.push_back({name, GemmShape{dim(tokens), dim(out), dim(in), GemmLayout::forward}, 1, tp_reduction});
    return;
  }
  into.push_back({name + ".dgrad", GemmShape{dim(tokens), dim(in), dim(out), GemmLayout::dgrad}, 1, ""});
  into.push_back({name + ".wgrad", GemmShape{dim(out), dim(in), dim(tokens), GemmLayout::wgrad}, 1, tp_reduction});
}

// The fused list as `framework` issues it: untouched for `fused` (no host model), one host op a
// kernel for the frameworks that launch the same fused kernels.
std::vector<RecipeKernel> as_issued(Framework framework, std::vector<RecipeKernel> kernels) {
  return traits(framework).host_model ? recipe::issued_one_op_each(std::move(kernels)) : kernels;
}

}  // namespace

namespace {

// The layer's kernels with FP8 matrix products (LlamaRecipe's constructor says how).
std::vector<RecipeKernel> in_fp8(const std::vector<RecipeKernel>& kernels) {
  std::vector<RecipeKernel> out;
  for (const RecipeKernel& k : kernels) {
    const auto* g = std::get_if<GemmShape>(&k.shape);
    if (g == nullptr) {
      out.push_back(k);
      continue;
    }
    if (g->layout != GemmLayout::wgrad) {
      // X [T x in] or dY [T x out]; a grouped product's experts in one multi-tensor cast (Transformer
      // Engine's fused_multi_cast_transpose).
      const double elements = static_cast<double>(g->token_rows()) * static_cast<double>(g->k);
      // One cast per run of the product (each overlapped chunk's input).
      out.push_back({k.name + ".fp8_cast", ElementwiseShape{"fp8_cast_transpose", g->token_rows() * g->k, 4 * elements,
                                                            ElementwiseKind::streaming},
                     k.runs, "", k.host_ops});
      out.back().joins_exchange = k.joins_exchange;  // the cast reads what the exchange brought
    }
    RecipeKernel fp8 = k;
    if (g->layout != GemmLayout::wgrad) fp8.joins_exchange = false;
    std::get<GemmShape>(fp8.shape).precision = Precision::fp8;
    out.push_back(fp8);
  }
  return out;
}

// The activation of an MLP of the model's kind `width` wide on `tokens` tokens, named `prefix` +
// its name: SwiGLU's silu(gate) * up (our fused kernel), or GELU's or squared ReLU's elementwise
// kernel over the outputs (forward reads and writes them, backward also reads the gradient).
RecipeKernel activation(const ModelSpec& m, const std::string& prefix, double tokens, double width, Direction direction) {
  if (m.mlp == Mlp::swiglu) {
    const MemoryBoundOp op = direction == Direction::forward ? MemoryBoundOp::swiglu_forward : MemoryBoundOp::swiglu_backward;
    return memory_bound(prefix + "swiglu", op, tokens, width);
  }
  const double elements = tokens * width;
  const std::string name = to_string(m.mlp);
  return {prefix + name,
          ElementwiseShape{name, dim(elements), (direction == Direction::forward ? 4 : 6) * elements, ElementwiseKind::streaming},
          1, ""};
}

// The kernels of an MLP `width` wide on `tokens` tokens, named `prefix` + "gate_up" (SwiGLU's gate
// and up) or "up", the activation, "down"; backward in reverse with dgrad and wgrad; the last
// product reduced over tensor parallelism as `reduction` ("" for none).
void mlp(std::vector<RecipeKernel>& k, const ModelSpec& m, const std::string& prefix, double tokens, double width,
         Direction direction, const std::string& reduction) {
  const std::string mlp_in = prefix + (m.mlp == Mlp::swiglu ? "gate_up" : "up");
  if (direction == Direction::forward) {
    linear(k, mlp_in, tokens, m.mlp_in_width(width), m.hidden, direction);
    k.push_back(activation(m, prefix, tokens, width, direction));
    linear(k, prefix + "down", tokens, m.hidden, width, direction, reduction);
  } else {
    linear(k, prefix + "down", tokens, m.hidden, width, direction);
    k.push_back(activation(m, prefix, tokens, width, direction));
    linear(k, mlp_in, tokens, m.mlp_in_width(width), m.hidden, direction, reduction);
  }
}

}  // namespace

std::vector<RecipeKernel> LlamaRecipe::latent_attention_block(Direction direction) const {
  const ModelSpec& m = model_;
  const double T = layout_.tokens();
  const double h = m.hidden;
  const double tp = layout_.tp;
  const double heads = m.heads / tp;
  const double local = layout_.sequence_parallel ? T / tp : T;  // the down-projections' tokens
  const bool q_latent = m.q_lora_rank > 0;
  const double rope_width = (heads + 1) * m.rope_head_dim;  // every query head's rotary part, and the shared key's
  const RecipeKernel attention =
      core_attention(layout_, direction, dim(heads), dim(heads), dim(m.attention_core_head_dim()));
  std::vector<RecipeKernel> k;
  auto norm = [&](const std::string& name, double tokens, double width) {
    const MemoryBoundOp op = direction == Direction::forward ? MemoryBoundOp::rmsnorm_forward : MemoryBoundOp::rmsnorm_backward;
    k.push_back(memory_bound(name, op, tokens, width));
  };
  auto queries = [&] {
    if (!q_latent) return linear(k, "q", T, heads * m.qk_head_dim(), h, direction);
    if (direction == Direction::forward) {
      linear(k, "q_down", local, m.q_lora_rank, h, direction);
      norm("q_norm", local, m.q_lora_rank);
      linear(k, "q_up", T, heads * m.qk_head_dim(), m.q_lora_rank, direction);
    } else {
      linear(k, "q_up", T, heads * m.qk_head_dim(), m.q_lora_rank, direction);
      norm("q_norm", local, m.q_lora_rank);
      linear(k, "q_down", local, m.q_lora_rank, h, direction);
    }
  };
  auto keys_values = [&] {
    const double kv_down = static_cast<double>(m.kv_lora_rank) + m.rope_head_dim;
    const double kv_up = heads * (m.head_dim() + m.value_head_dim());
    if (direction == Direction::forward) {
      linear(k, "kv_down", local, kv_down, h, direction);
      norm("kv_norm", T, m.kv_lora_rank);
      linear(k, "kv_up", T, kv_up, m.kv_lora_rank, direction);
    } else {
      linear(k, "kv_up", T, kv_up, m.kv_lora_rank, direction);
      norm("kv_norm", T, m.kv_lora_rank);
      linear(k, "kv_down", local, kv_down, h, direction);
    }
  };
  if (direction == Direction::forward) {
    norm("rmsnorm", T, h);
    queries();
    keys_values();
    k.push_back(memory_bound("rope", MemoryBoundOp::rope_forward, T, rope_width));
    k.push_back(attention);
    linear(k, "o_proj", T, h, heads * m.value_head_dim(), direction, "attn");
    k.push_back(memory_bound("residual", MemoryBoundOp::residual_add, T, h));
    return k;
  }
  linear(k, "o_proj", T, h, heads * m.value_head_dim(), direction);
  k.push_back(attention);
  k.push_back(memory_bound("rope", MemoryBoundOp::rope_backward, T, rope_width));
  keys_values();
  queries();
  k.back().tp_reduction = "attn";
  norm("rmsnorm", T, h);
  k.push_back(memory_bound("residual", MemoryBoundOp::residual_add, T, h));
  return k;
}

RecipeKernel core_attention(const StepLayout& layout, Direction direction, std::int64_t heads, std::int64_t kv_heads,
                            std::int64_t head_dim) {
  const double seq = layout.tokens() / layout.micro_batch;  // the rank's share of a sequence
  if (layout.cp_heads) {
    return {"attention",
            AttentionShape{direction, layout.micro_batch, heads / layout.cp, kv_heads / layout.cp,
                           dim(seq * layout.cp), head_dim, true},
            1, ""};
  }
  return {"attention", AttentionShape{direction, layout.micro_batch, heads, kv_heads, dim(seq), head_dim, true},
          layout.cp, ""};
}

std::vector<RecipeKernel> LlamaRecipe::attention_block(Direction direction) const {
  const ModelSpec& m = model_;
  if (m.mla()) return latent_attention_block(direction);
  const double T = layout_.tokens();
  const double h = m.hidden;
  const double tp = layout_.tp;
  const double qkv = m.qkv_dim() / tp;
  const double rope_width = (m.heads + m.kv_heads) / tp * m.head_dim();  // q and k are rotated
  const RecipeKernel attention = core_attention(layout_, direction, dim(m.heads / tp), dim(m.kv_heads / tp), m.head_dim());
  // Rotary positions rotate q and k after the QKV projection; learned positions are added to the
  // embedding instead (embedding()). LayerNorm is priced as the measured RMSNorm kernel: the same
  // bytes but for its bias vector.
  const bool rope = m.position == Position::rope;
  std::vector<RecipeKernel> k;
  if (direction == Direction::forward) {
    k.push_back(memory_bound("rmsnorm", MemoryBoundOp::rmsnorm_forward, T, h));
    linear(k, "qkv", T, qkv, h, direction);
    if (rope) k.push_back(memory_bound("rope", MemoryBoundOp::rope_forward, T, rope_width));
    k.push_back(attention);
    linear(k, "o_proj", T, h, m.q_dim() / tp, direction, "attn");
    k.push_back(memory_bound("residual", MemoryBoundOp::residual_add, T, h));
    return k;
  }
  linear(k, "o_proj", T, h, m.q_dim() / tp, direction);
  k.push_back(attention);
  if (rope) k.push_back(memory_bound("rope", MemoryBoundOp::rope_backward, T, rope_width));
  linear(k, "qkv", T, qkv, h, direction, "attn");
  k.push_back(memory_bound("rmsnorm", MemoryBoundOp::rmsnorm_backward, T, h));
  k.push_back(memory_bound("residual", MemoryBoundOp::residual_add, T, h));
  return k;
}

namespace {

// Transformer Engine's comm-GEMM overlap (its userbuffers configurations, e.g. NeMo's
// userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192): the forward qkv, o_proj, gate_up and down GEMMs
// and the o_proj and down input-gradient GEMMs exchange their sequence-parallel pieces as they
// compute (ring exchange or pipelined splits), so each runs as tp GEMMs of tokens / tp rows; the
// weight-gradient and the other input-gradient GEMMs overlap in bulk, whole. One chunk per rank
// is an approximation: the pipelined reduce-scatters use 4 splits whatever tp is.
std::vector<RecipeKernel> split_for_tp_overlap(std::vector<RecipeKernel> kernels, int tp) {
  static const std::string split[] = {"qkv", "o_proj", "gate_up", "down", "o_proj.dgrad", "down.dgrad"};
  for (RecipeKernel& k : kernels) {
    auto* g = std::get_if<GemmShape>(&k.shape);
    if (g == nullptr || std::find(std::begin(split), std::end(split), k.name) == std::end(split)) continue;
    g->m = dim(static_cast<double>(g->m) / tp);
    k.runs *= tp;
  }
  return kernels;
}

}  // namespace

// A layer: the attention block, then the MLP side `mlp_side` (rmsnorm2 and residual2 included);
// backward the other way round.
std::vector<RecipeKernel> LlamaRecipe::with_attention(Direction direction, std::vector<RecipeKernel> mlp_side) const {
  std::vector<RecipeKernel> attention = attention_block(direction);
  std::vector<RecipeKernel>& first = direction == Direction::forward ? attention : mlp_side;
  std::vector<RecipeKernel>& second = direction == Direction::forward ? mlp_side : attention;
  first.insert(first.end(), second.begin(), second.end());
  if (layout_.tp_overlap) first = split_for_tp_overlap(std::move(first), layout_.tp);
  return as_issued(framework_, std::move(first));
}

std::vector<RecipeKernel> with_attention_window(std::vector<RecipeKernel> kernels, std::int64_t window) {
  for (RecipeKernel& k : kernels) {
    if (auto* a = std::get_if<AttentionShape>(&k.shape)) a->window = window;
  }
  return kernels;
}

std::vector<RecipeKernel> LlamaRecipe::layer(Direction direction) const {
  if (precision_ == Precision::fp8) return in_fp8(LlamaRecipe(model_, layout_, framework_).layer(direction));
  if (traits(framework_).eager_layers) return recipe::eager_layer(model_, layout_, direction);
  const double T = layout_.tokens();
  const double h = model_.hidden;
  const double ffn = model_.ffn / static_cast<double>(layout_.tp);
  // Each residual's backward: the branch's input gradient (after its norm's backward) plus the
  // gradient that came down the skip path.
  std::vector<RecipeKernel> k;
  if (direction == Direction::forward) {
    k.push_back(memory_bound("rmsnorm2", MemoryBoundOp::rmsnorm_forward, T, h));
    mlp(k, model_, "", T, ffn, direction, "mlp");
    k.push_back(memory_bound("residual2", MemoryBoundOp::residual_add, T, h));
  } else {
    mlp(k, model_, "", T, ffn, direction, "mlp");
    k.push_back(memory_bound("rmsnorm2", MemoryBoundOp::rmsnorm_backward, T, h));
    k.push_back(memory_bound("residual2", MemoryBoundOp::residual_add, T, h));
  }
  return with_attention(direction, std::move(k));
}

std::vector<RecipeKernel> LlamaRecipe::moe_layer(Direction direction, const std::vector<std::int64_t>& expert_tokens) const {
  if (precision_ == Precision::fp8) {
    return in_fp8(LlamaRecipe(model_, layout_, framework_).moe_layer(direction, expert_tokens));
  }
  const ModelSpec& m = model_;
  const double T = layout_.tokens();
  const double h = m.hidden;
  const double expert_width = static_cast<double>(m.expert_ffn) / layout_.expert_tp;
  const double routed = T / layout_.tp;  // sequence parallelism: each tensor-parallel rank routes its share
  const double k_routed = routed * m.top_k;  // token copies, one per chosen expert
  double tokens_sum = 0;
  for (std::int64_t t : expert_tokens) tokens_sum += static_cast<double>(t);
  // The router's scores (bf16, tokens x experts) read, each token's top_k weights (fp32) and
  // expert indices (int64) written; a reduction over each token's row.
  const double topk_bytes = 2 * routed * m.experts + 12 * k_routed;
  // Permute: a token's row read once per chosen expert and written to its slot; unpermute: the k
  // slots read with their weights, the token's row written; backward the other way round.
  const double permute_bytes = 4 * k_routed * h;
  const double unpermute_bytes = 2 * k_routed * h + 2 * routed * h;
  // The local experts: their first matrix (gate_up or up; backward: down) as one grouped product,
  // one activation kernel over all their tokens, their second matrix grouped; the last product's
  // results go back. A grouped product's m (wgrad: k) is the experts' mean, its group their rows.
  auto experts = [&](std::vector<RecipeKernel>& k) {
    const bool forward = direction == Direction::forward;
    const std::string mlp_in = m.mlp == Mlp::swiglu ? "gate_up" : "up";
    const double mean = expert_tokens.empty() ? 0 : tokens_sum / static_cast<double>(expert_tokens.size());
    auto matrix = [&](bool in_matrix) {
      const std::size_t first = k.size();
      if (in_matrix) {
        linear(k, "experts." + mlp_in, mean, m.mlp_in_width(expert_width), h, direction);
      } else {
        linear(k, "experts.down", mean, h, expert_width, direction);
      }
      for (std::size_t j = first; j < k.size(); ++j) std::get<GemmShape>(k[j].shape).group = expert_tokens;
    };
    matrix(forward);
    k.push_back(activation(m, "experts.", tokens_sum, expert_width, direction));
    matrix(!forward);
    k.back().ep_exchange = "from_experts";
  };
  auto elementwise = [](const std::string& name, double elements, double bytes, ElementwiseKind kind) {
    return RecipeKernel{name, ElementwiseShape{name, dim(elements), bytes, kind}, 1, ""};
  };
  std::vector<RecipeKernel> k;
  const double shared_width = static_cast<double>(m.shared_experts) * m.expert_ffn / layout_.tp;
  // The shared experts: after the routed experts' results are back (forward; backward before the
  // gradients go out), or, overlapped (Megatron-Core's moe_shared_expert_overlap), right after the
  // dispatch starts, the routed experts waiting for both.
  const bool overlap = layout_.shared_expert_overlap && m.shared_experts > 0;
  auto shared = [&] {
    if (m.shared_experts > 0) mlp(k, m, "shared.", T, shared_width, direction, "mlp");
  };
  auto dispatched = [&] {
    k.back().ep_exchange = "to_experts";
    if (!overlap) return;
    k.back().exchange_in_flight = true;
    shared();
  };
  auto routed_experts = [&] {
    const std::size_t first = k.size();
    experts(k);
    k[first].joins_exchange = overlap;
  };
  if (direction == Direction::forward) {
    k.push_back(memory_bound("rmsnorm2", MemoryBoundOp::rmsnorm_forward, T, h));
    linear(k, "router", routed, m.experts, h, direction);
    k.push_back(elementwise("router_topk", routed * m.experts, topk_bytes, ElementwiseKind::reduction));
    k.push_back(elementwise("permute", k_routed * h, permute_bytes, ElementwiseKind::streaming));
    dispatched();
    routed_experts();
    k.push_back(elementwise("unpermute", k_routed * h, unpermute_bytes, ElementwiseKind::streaming));
    if (!overlap) shared();
    k.push_back(memory_bound("residual2", MemoryBoundOp::residual_add, T, h));
  } else {
    if (!overlap) shared();
    k.push_back(elementwise("unpermute", k_routed * h, unpermute_bytes, ElementwiseKind::streaming));
    dispatched();
    routed_experts();
    k.push_back(elementwise("permute", k_routed * h, permute_bytes, ElementwiseKind::streaming));
    k.push_back(elementwise("router_topk", routed * m.experts, topk_bytes, ElementwiseKind::reduction));
    linear(k, "router", routed, m.experts, h, direction);
    k.push_back(memory_bound("rmsnorm2", MemoryBoundOp::rmsnorm_backward, T, h));
    k.push_back(memory_bound("residual2", MemoryBoundOp::residual_add, T, h));
  }
  return with_attention(direction, std::move(k));
}

std::vector<RecipeKernel> LlamaRecipe::embedding(Direction direction) const {
  if (traits(framework_).eager_layers) return recipe::eager_embedding(model_, layout_, direction);
  const MemoryBoundOp op =
      direction == Direction::forward ? MemoryBoundOp::embedding_forward : MemoryBoundOp::embedding_backward;
  std::vector<RecipeKernel> k = {memory_bound("embedding", op, layout_.tokens(), model_.hidden)};
  // Learned positions: forward adds the position rows to the token rows (two reads, one write);
  // backward sums the gradient into the position table (a read and an accumulation).
  if (model_.position == Position::learned) {
    const double elements = layout_.tokens() * model_.hidden;
    const double bytes = (direction == Direction::forward ? 6 : 8) * elements;
    k.push_back({"position", ElementwiseShape{"position", dim(elements), bytes, ElementwiseKind::streaming}, 1, ""});
  }
  return as_issued(framework_, std::move(k));
}

std::vector<RecipeKernel> LlamaRecipe::lm_head(Direction direction) const {
  if (traits(framework_).eager_layers) return recipe::eager_lm_head(model_, layout_, direction);
  const double T = layout_.tokens();
  const double h = model_.hidden;
  const double vocab = model_.vocab / static_cast<double>(layout_.tp);
  std::vector<RecipeKernel> k;
  if (direction == Direction::forward) {
    k.push_back(memory_bound("rmsnorm_final", MemoryBoundOp::rmsnorm_forward, T, h));
    linear(k, "logits", T, vocab, h, direction);
    k.push_back(memory_bound("cross_entropy", MemoryBoundOp::cross_entropy_forward, T, vocab));
    return as_issued(framework_, std::move(k));
  }
  k.push_back(memory_bound("cross_entropy", MemoryBoundOp::cross_entropy_backward, T, vocab));
  linear(k, "logits", T, vocab, h, direction);
  k.push_back(memory_bound("rmsnorm_final", MemoryBoundOp::rmsnorm_backward, T, h));
  return as_issued(framework_, std::move(k));
}

std::vector<RecipeKernel> LlamaRecipe::mtp_entry(Direction direction) const {
  const double T = layout_.tokens();
  const double h = model_.hidden;
  const MemoryBoundOp norm = direction == Direction::forward ? MemoryBoundOp::rmsnorm_forward : MemoryBoundOp::rmsnorm_backward;
  std::vector<RecipeKernel> k;
  if (direction == Direction::backward) linear(k, "mtp_proj", T, h / layout_.tp, 2 * h, direction);
  k.push_back(memory_bound("mtp_norm_hidden", norm, T, h));
  k.push_back(memory_bound("mtp_norm_embedding", norm, T, h));
  if (direction == Direction::forward) linear(k, "mtp_proj", T, h / layout_.tp, 2 * h, direction);
  return as_issued(framework_, std::move(k));
}

std::vector<RecipeKernel> LlamaRecipe::optimizer(double parameters, Framework framework, bool foreach) {
  if (foreach) return recipe::eager_optimizer(parameters);  // each kernel with the host ops eager issues it by
  return as_issued(framework, {memory_bound("grad_norm", MemoryBoundOp::grad_norm, 1, parameters),
                               memory_bound("adamw", MemoryBoundOp::adamw, 1, parameters)});
}

Status check_exact(const ModelSpec& m, const StepLayout& s) {
  const std::string where = m.name + " at tp " + std::to_string(s.tp) + ", cp " + std::to_string(s.cp) + ": ";
  if (s.tp < 1 || s.cp < 1 || s.micro_batch < 1 || s.seq < 1) {
    return Error{where + "tp, cp, micro-batch and seq must be positive"};
  }
  if (m.heads % s.tp != 0) return Error{where + "tp must divide the " + std::to_string(m.heads) + " heads"};
  if (m.kv_heads % s.tp != 0) return Error{where + "tp must divide the " + std::to_string(m.kv_heads) + " KV heads"};
  if (m.ffn % s.tp != 0) return Error{where + "tp must divide the FFN size " + std::to_string(m.ffn)};
  if (m.vocab % s.tp != 0) return Error{where + "tp must divide the vocabulary " + std::to_string(m.vocab)};
  if (s.seq % s.cp != 0) return Error{where + "cp must divide the sequence length " + std::to_string(s.seq)};
  return Ok{};
}

}  // namespace commbound::model
