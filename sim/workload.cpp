#include "sim/workload.hpp"

#include <algorithm>
#include <cmath>

namespace commbound::sim {
namespace {

constexpr double kBf16Bytes = 2;
constexpr double kFp32Bytes = 4;
// AdamW on an fp32 shard: read param, grad, m, v (16 B), write param, m, v (12 B), write the bf16
// copy (2 B): 30 bytes per parameter; the gradient-norm pass reads the fp32 gradient (4 B).
constexpr double kAdamBytesPerParam = 30;
constexpr double kGradNormBytesPerParam = 4;
// FlashAttention-2 backward does 5 matrix products to the forward's 2 (Dao 2023): 2.5x the FLOPs.
constexpr double kAttentionBackwardFlopRatio = 2.5;

// A kernel dimension from the layout's arithmetic: exact when the parallel degrees divide the
// model's dimensions, else rounded up (the padding frameworks add, e.g. Megatron's vocabulary).
std::int64_t dim(double v) { return static_cast<std::int64_t>(std::ceil(v - 1e-9)); }

Op compute_op(std::string name, OpKind kind, double flops, double bytes) {
  Op op;
  op.name = std::move(name);
  op.kind = kind;
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

class Builder {
public:
  explicit Builder(const TrainingSpec& t) : t_(t) {}

  int add(Op op) {
    program_.ops.push_back(std::move(op));
    return static_cast<int>(program_.ops.size()) - 1;
  }
  // C[m x n] = op(A) op(B) in `layout` (kernel_shape.hpp).
  int gemm(const std::string& name, double m, double n, double k, GemmLayout layout, std::vector<int> deps) {
    Op op = compute_op(name, OpKind::gemm, 2 * m * n * k, kBf16Bytes * (m * k + k * n + m * n));
    op.kernel = GemmShape{dim(m), dim(n), dim(k), layout};
    op.deps = std::move(deps);
    return add(op);
  }
  // Linear layer Y = X W^T with X [tokens x in], W [out x in]: its forward GEMM, or in backward
  // its input gradient dX = dY W then its weight gradient dW = dY^T X (same FLOPs, other shapes).
  int linear(const std::string& name, double tokens, double out, double in, bool backward, int dep) {
    if (!backward) return gemm(name, tokens, out, in, GemmLayout::forward, {dep});
    const int dgrad = gemm(name + ".dgrad", tokens, in, out, GemmLayout::dgrad, {dep});
    return gemm(name + ".wgrad", out, in, tokens, GemmLayout::wgrad, {dgrad});
  }
  // A memory-bound kernel `kernel` (docs/calibration.md's names) over [tokens x width]; `bytes`
  // is what the datasheet roofline prices. No kernel name: a synchronisation point (no kernel).
  int elementwise(const std::string& name, double bytes, std::vector<int> deps, const std::string& kernel = "",
                  double tokens = 0, double width = 0) {
    Op op = compute_op(name, OpKind::elementwise, 0, bytes);
    if (!kernel.empty()) op.kernel = MemoryBoundShape{kernel, dim(tokens), dim(width)};
    op.deps = std::move(deps);
    return add(op);
  }
  int collective(const std::string& name, StreamId stream, network::CollectiveOp c, GroupKind g, double size,
                 std::vector<int> deps) {
    Op op = compute_op(name, OpKind::collective, 0, 0);
    op.stream = stream;
    op.collective = c;
    op.group = g;
    op.size_bytes = size;
    op.deps = std::move(deps);
    return add(op);
  }

  // Megatron tensor parallelism: after the attention and MLP output projections the partial sums
  // are all-reduced (forward and, for the input gradients, backward); with sequence parallelism a
  // reduce-scatter / all-gather pair replaces each all-reduce.
  int tp_sync(const std::string& name, int after) {
    if (t_.tp == 1) return after;
    const double bytes = tokens() * t_.model.hidden * kBf16Bytes;
    if (!t_.sequence_parallel) {
      return collective(name + ".tp_allreduce", StreamId::tensor_parallel, network::CollectiveOp::all_reduce,
                        GroupKind::tensor_parallel, bytes, {after});
    }
    const int rs = collective(name + ".tp_reducescatter", StreamId::tensor_parallel,
                              network::CollectiveOp::reduce_scatter, GroupKind::tensor_parallel, bytes, {after});
    return collective(name + ".tp_allgather", StreamId::tensor_parallel, network::CollectiveOp::all_gather,
                      GroupKind::tensor_parallel, bytes, {rs});
  }

  // Attention after op `after`. With context parallelism, ring attention: the rank's KV block
  // travels around the CP ring in cp - 1 steps (backward: with its gradient, twice the bytes)
  // while attention runs block by block; block k waits for the step that brought it.
  int attention(const std::string& p, Op attn, int after, bool backward) {
    const int cp = t_.cp;
    if (cp == 1) {
      attn.deps = {after};
      return add(attn);
    }
    const double kv_block = 2 * tokens() * t_.model.kv_dim() / t_.tp * kBf16Bytes * (backward ? 2 : 1);
    attn.flops /= cp;
    attn.bytes /= cp;
    const std::string name = attn.name;
    int chunk = after;
    int step = -1;
    for (int k = 0; k < cp; ++k) {
      Op part = attn;
      part.name = name + ".block" + std::to_string(k);
      part.deps = {chunk};
      if (step >= 0) part.deps.push_back(step);
      if (k + 1 < cp) {
        step = collective(p + "cp_kv.step" + std::to_string(k), StreamId::context_parallel,
                          network::CollectiveOp::send_recv, GroupKind::context_next, kv_block,
                          step >= 0 ? std::vector<int>{step} : std::vector<int>{after});
      }
      chunk = add(part);
    }
    return chunk;
  }

  // One transformer layer, forward (backward = false) or backward; returns the last op.
  int layer(int l, bool backward, int after) {
    const ModelSpec& m = t_.model;
    const double T = tokens();
    const double h = m.hidden;
    const double tp = t_.tp;
    const double qkv = (h + 2 * m.kv_dim()) / tp;
    const double ffn = m.ffn / tp;
    const double act = T * h * kBf16Bytes;  // one activation tensor
    const std::string p = "layer" + std::to_string(l) + tag_ + (backward ? ".bwd." : ".fwd.");
    const double passes = backward ? 2 : 1;  // backward: input and weight gradients
    // Linear layer `n` mapping `in` features to `out` on this rank's tokens.
    auto g = [&](const std::string& n, double out, double in, int dep) { return linear(p + n, T, out, in, backward, dep); };
    const double rope_width = (m.heads + m.kv_heads) / tp * m.head_dim();  // q and k are rotated
    // Causal attention of this rank's queries: the unmasked half of the full s x s product, spread
    // evenly over the context-parallel ranks (load-balanced chunks, as TransformerEngine does).
    const double attn_fwd_flops =
        2.0 * t_.micro_batch * static_cast<double>(t_.seq_len) * t_.seq_len * h / tp / t_.cp;
    Op attn = compute_op(p + "attention", OpKind::attention,
                         backward ? kAttentionBackwardFlopRatio * attn_fwd_flops : attn_fwd_flops,
                         passes * T * (qkv + 2 * h / tp) * kBf16Bytes);
    // The kernel: causal flash attention of the rank's heads over its tokens. With context
    // parallelism ring attention runs cp blocks per layer; each block is priced as a causal
    // attention over seq / cp tokens, whose FLOPs equal the block's share (see attention()).
    attn.kernel = AttentionShape{backward ? Direction::backward : Direction::forward, t_.micro_batch,
                                 dim(m.heads / tp), dim(m.kv_heads / tp), dim(tokens() / t_.micro_batch),
                                 m.head_dim(), true};
    int x = after;
    if (!backward) {
      x = elementwise(p + "rmsnorm", 2 * act, {x}, "rmsnorm_forward", T, h);
      x = g("qkv", qkv, h, x);
      x = elementwise(p + "rope", 2 * T * qkv * kBf16Bytes, {x}, "rope_forward", T, rope_width);
      x = attention(p, attn, x, false);
      x = g("o_proj", h, h / tp, x);
      x = tp_sync(p + "attn", x);
      x = elementwise(p + "residual", 3 * act, {x}, "residual_add", T, h);
      x = elementwise(p + "rmsnorm2", 2 * act, {x}, "rmsnorm_forward", T, h);
      x = g("gate_up", 2 * ffn, h, x);
      x = elementwise(p + "swiglu", 3 * T * ffn * kBf16Bytes, {x}, "swiglu_forward", T, ffn);
      x = g("down", h, ffn, x);
      x = tp_sync(p + "mlp", x);
      return elementwise(p + "residual2", 3 * act, {x}, "residual_add", T, h);
    }
    // The residual's backward adds the branch's input gradient to the skip path's.
    x = elementwise(p + "residual2", 2 * act, {x}, "residual_add", T, h);
    x = g("down", h, ffn, x);
    x = elementwise(p + "swiglu", 2 * 3 * T * ffn * kBf16Bytes, {x}, "swiglu_backward", T, ffn);
    x = g("gate_up", 2 * ffn, h, x);
    x = tp_sync(p + "mlp", x);
    x = elementwise(p + "rmsnorm2", 2 * 2 * act, {x}, "rmsnorm_backward", T, h);
    x = g("o_proj", h, h / tp, x);
    x = attention(p, attn, x, true);
    x = elementwise(p + "rope", 2 * 2 * T * qkv * kBf16Bytes, {x}, "rope_backward", T, rope_width);
    x = g("qkv", qkv, h, x);
    x = tp_sync(p + "attn", x);
    return elementwise(p + "rmsnorm", 2 * 2 * act, {x}, "rmsnorm_backward", T, h);
  }

  int lm_head(bool backward, int after) {
    const ModelSpec& m = t_.model;
    const double T = tokens();
    const double vocab = m.vocab / static_cast<double>(t_.tp);
    const std::string p = "lm_head" + tag_ + (backward ? ".bwd." : ".fwd.");
    // Backward runs the cross-entropy gradient, the LM head's GEMMs, then the final norm's.
    auto norm = [&](int dep) {
      return elementwise(p + "rmsnorm_final", (backward ? 2 : 1) * 2 * T * m.hidden * kBf16Bytes, {dep},
                         backward ? "rmsnorm_backward" : "rmsnorm_forward", T, m.hidden);
    };
    // Cross-entropy: the roofline counts fp32 logits read and written once forward, once backward.
    auto cross_entropy = [&](int dep) {
      return elementwise(p + "cross_entropy", 2 * T * vocab * kFp32Bytes, {dep},
                         backward ? "cross_entropy_backward" : "cross_entropy_forward", T, vocab);
    };
    if (!backward) return cross_entropy(linear(p + "logits", T, vocab, m.hidden, false, norm(after)));
    return norm(linear(p + "logits", T, vocab, m.hidden, true, cross_entropy(after)));
  }

  // Tokens of one micro-batch on this rank: context parallelism splits the sequence.
  double tokens() const { return static_cast<double>(t_.micro_batch) * t_.seq_len / t_.cp; }

  // HSDP: the shard each rank holds after the reduce-scatter is all-reduced across replicas.
  int replica_allreduce(const std::string& unit, double unit_bytes, int after) {
    if (t_.replicas() / t_.hsdp_shard < 2) return after;
    return collective(unit + ".replica_allreduce", StreamId::reduce_scatter, network::CollectiveOp::all_reduce,
                      GroupKind::replica, unit_bytes / t_.hsdp_shard, {after});
  }

  Program build(int stage);

private:
  const TrainingSpec& t_;
  Program program_;
  std::string tag_;  // ".mb<k>": the micro-batch being built (op names are unique in a program)
};

Program Builder::build(int stage) {
  const ModelSpec& m = t_.model;
  const double tp = t_.tp;
  const int stages = t_.pp;
  // Interleaving: stage s holds v model chunks; chunk c is virtual stage c * P + s, and virtual
  // stage k holds layers k * per + 1 .. (k + 1) * per. Without interleaving v = 1.
  const int v = t_.virtual_stages;
  const int virtual_stages = stages * v;
  const int per_chunk = m.layers / virtual_stages;
  auto vstage = [&](int chunk) { return chunk * stages + stage; };
  // FSDP units: the root (the first virtual stage's input embedding; the last's final norm and LM
  // head) and one per layer. Tensor parallelism splits the parameters first; FSDP shards the rest.
  const bool has_embedding = stage == 0;
  const bool has_head = stage == stages - 1;
  const double root_params = (has_embedding ? m.embedding_params() : 0) + (has_head ? m.embedding_params() + m.hidden : 0);
  const double root_bytes = root_params / tp * kBf16Bytes;
  const double layer_bytes = m.layer_params() / tp * kBf16Bytes;
  const bool fsdp = t_.sharded();
  const bool hsdp = t_.strategy == Strategy::hsdp;
  const bool dp = t_.replicas() > 1;
  // Parameters are gathered and gradients reduce-scattered over the sharding group; HSDP then
  // all-reduces each reduced shard across the replicas.
  const GroupKind shard_kind = hsdp ? GroupKind::shard : GroupKind::data_parallel;
  const int inflight = t_.max_inflight_allgathers;
  // Activations (and their gradients) between stages: one micro-batch's hidden states.
  const double boundary_bytes = tokens() * m.hidden * kBf16Bytes / (t_.sequence_parallel ? tp : 1);
  const int M = t_.micro_batches;

  std::vector<int> gathered(static_cast<std::size_t>(m.layers + 1), -1);
  std::vector<int> grad_sync;  // ops the optimizer waits for
  int last_compute = -1;
  auto after = [](int dep) { return dep < 0 ? std::vector<int>{} : std::vector<int>{dep}; };
  // Point-to-point between virtual stages, named after the sending virtual stage so that sender
  // and receiver meet.
  auto p2p = [&](const std::string& what, int from_vstage, int mb, StreamId stream, GroupKind kind,
                 std::vector<int> deps) {
    const int i = collective("p2p." + what + ".mb" + std::to_string(mb) + ".vs" + std::to_string(from_vstage), stream,
                             network::CollectiveOp::send_recv, kind, boundary_bytes, std::move(deps));
    program_.ops[static_cast<std::size_t>(i)].toward_lower_rank = what == "gradient";
    return i;
  };

  auto forward = [&](int chunk, int mb) {
    const int vs = vstage(chunk);
    const int lo = vs * per_chunk + 1;
    const int hi = lo + per_chunk - 1;
    const std::string tag = ".mb" + std::to_string(mb);
    tag_ = tag;
    const bool gather = fsdp && dp && (mb == 0 || t_.zero_stage == 3);
    std::vector<int> start = after(last_compute);
    if (vs > 0) {
      start.push_back(p2p("activation", vs - 1, mb, StreamId::pipeline_recv_activation, GroupKind::pipeline_prev, {}));
    }
    if (gather && vs == 0 && root_bytes > 0) {
      start.push_back(collective("root.allgather" + tag, StreamId::all_gather, network::CollectiveOp::all_gather,
                                 shard_kind, root_bytes, after(last_compute)));
    }
    int x = vs == 0 ? elementwise("embedding.fwd" + tag, 2 * tokens() * m.hidden * kBf16Bytes, start,
                                            "embedding_forward", tokens(), m.hidden)
                    : elementwise("vs" + std::to_string(vs) + ".fwd_start" + tag, 0, start);
    std::vector<int> done(static_cast<std::size_t>(hi + 1), -1);
    done[static_cast<std::size_t>(lo - 1)] = x;
    for (int l = lo; l <= hi; ++l) {
      if (gather) {
        std::vector<int> deps;
        if (l - inflight >= lo - 1) deps.push_back(done[static_cast<std::size_t>(l - inflight)]);
        gathered[static_cast<std::size_t>(l)] =
            collective("layer" + std::to_string(l) + ".allgather" + tag, StreamId::all_gather,
                       network::CollectiveOp::all_gather, shard_kind, layer_bytes, deps);
      }
      const std::size_t first_op = program_.ops.size();
      x = layer(l, false, x);
      if (gather) program_.ops[first_op].deps.push_back(gathered[static_cast<std::size_t>(l)]);  // its parameters
      done[static_cast<std::size_t>(l)] = x;
    }
    if (vs == virtual_stages - 1) {
      x = lm_head(false, x);
    } else {
      p2p("activation", vs, mb, StreamId::pipeline_send_activation, GroupKind::pipeline_next, {x});
    }
    last_compute = x;
  };

  auto backward = [&](int chunk, int mb) {
    const int vs = vstage(chunk);
    const int lo = vs * per_chunk + 1;
    const int hi = lo + per_chunk - 1;
    const std::string tag = ".mb" + std::to_string(mb);
    tag_ = tag;
    const bool last_mb = mb == M - 1;
    int x = last_compute;
    if (vs == virtual_stages - 1) {
      x = lm_head(true, x);
    } else {
      const int grad = p2p("gradient", vs + 1, mb, StreamId::pipeline_recv_gradient, GroupKind::pipeline_next, {});
      x = elementwise("vs" + std::to_string(vs) + ".bwd_start" + tag, 0, {x, grad});
    }
    std::vector<int> done(static_cast<std::size_t>(hi + 2), -1);
    double bucket = 0;
    for (int l = hi; l >= lo; --l) {
      int start = x;
      if (fsdp && dp && t_.zero_stage == 3) {
        std::vector<int> deps;
        if (l + inflight <= hi) deps.push_back(done[static_cast<std::size_t>(l + inflight)]);
        const int ag = collective("layer" + std::to_string(l) + ".allgather_bwd" + tag, StreamId::all_gather,
                                  network::CollectiveOp::all_gather, shard_kind, layer_bytes, deps);
        start = elementwise("layer" + std::to_string(l) + ".bwd.wait_params" + tag, 0, {x, ag});
      }
      // Full activation checkpointing: only the layer's input was kept; replay its forward first.
      if (t_.activation_checkpointing) {
        tag_ = tag + ".recompute";
        start = layer(l, false, start);
        tag_ = tag;
      }
      x = layer(l, true, start);
      done[static_cast<std::size_t>(l)] = x;
      if (!dp || !last_mb) continue;
      if (fsdp) {
        const int rs = collective("layer" + std::to_string(l) + ".reducescatter", StreamId::reduce_scatter,
                                  network::CollectiveOp::reduce_scatter, shard_kind, layer_bytes, {x});
        grad_sync.push_back(hsdp ? replica_allreduce("layer" + std::to_string(l), layer_bytes, rs) : rs);
      } else {
        bucket += layer_bytes;
        if (bucket >= t_.ddp_bucket_bytes || l == lo) {
          grad_sync.push_back(collective("bucket.layer" + std::to_string(l) + ".allreduce", StreamId::reduce_scatter,
                                         network::CollectiveOp::all_reduce, GroupKind::data_parallel, bucket, {x}));
          bucket = 0;
        }
      }
    }
    if (vs == 0) {
      x = elementwise("embedding.bwd" + tag, 2 * tokens() * m.hidden * kBf16Bytes, {x}, "embedding_backward", tokens(),
                      m.hidden);
    } else {
      p2p("gradient", vs, mb, StreamId::pipeline_send_gradient, GroupKind::pipeline_prev, {x});
    }
    last_compute = x;
  };

  // 1F1B (PipeDream-Flush, as Megatron): stage s runs some warm-up forwards, then alternates one
  // forward and one backward, then drains the remaining backwards. Without interleaving the
  // warm-up is P - s - 1 micro-batches; interleaved (Megatron's schedule), the units are (chunk,
  // micro-batch) pairs taken in groups of P micro-batches chunk by chunk (backward: last chunk
  // first), with 2 (P - s - 1) + (v - 1) P warm-up units.
  const int units = M * v;
  auto unit = [&](int k, bool backward_order) {
    const int in_group = k % (stages * v);
    const int chunk = in_group / stages;
    const int mb = (k / (stages * v)) * stages + k % stages;
    return std::pair<int, int>{backward_order ? v - 1 - chunk : chunk, v == 1 ? k : mb};
  };
  const int warmup = std::min(v == 1 ? stages - stage - 1 : 2 * (stages - stage - 1) + (v - 1) * stages, units);
  for (int k = 0; k < warmup; ++k) forward(unit(k, false).first, unit(k, false).second);
  for (int k = 0; k < units - warmup; ++k) {
    forward(unit(warmup + k, false).first, unit(warmup + k, false).second);
    backward(unit(k, true).first, unit(k, true).second);
  }
  for (int k = units - warmup; k < units; ++k) backward(unit(k, true).first, unit(k, true).second);
  // The root unit's gradients (embedding, LM head) are reduced after the stage's last backward.
  if (dp && root_bytes > 0) {
    const int root = collective(fsdp ? "root.reducescatter" : "root.allreduce", StreamId::reduce_scatter,
                                fsdp ? network::CollectiveOp::reduce_scatter : network::CollectiveOp::all_reduce,
                                shard_kind, root_bytes, {last_compute});
    grad_sync.push_back(hsdp ? replica_allreduce("root", root_bytes, root) : root);
  }

  // --- optimizer on the local shard (FSDP) or the local replica (DDP): this stage's parameters.
  const double stage_params = v * per_chunk * m.layer_params() + root_params;
  const double local_params = stage_params / tp / t_.shard_ranks();
  std::vector<int> deps = grad_sync;
  deps.push_back(last_compute);
  // Both run over the local shard's parameters as one flat buffer: tokens = 1, width = parameters.
  int x = elementwise("optimizer.grad_norm", kGradNormBytesPerParam * local_params, deps, "grad_norm", 1, local_params);
  program_.ops[static_cast<std::size_t>(x)].kind = OpKind::optimizer;
  x = elementwise("optimizer.adamw", kAdamBytesPerParam * local_params, {x}, "adamw", 1, local_params);
  program_.ops[static_cast<std::size_t>(x)].kind = OpKind::optimizer;
  return std::move(program_);
}

}  // namespace

const char* to_string(StreamId s) {
  switch (s) {
    case StreamId::compute: return "compute";
    case StreamId::all_gather: return "allgather";
    case StreamId::reduce_scatter: return "reducescatter";
    case StreamId::tensor_parallel: return "tensor_parallel";
    case StreamId::pipeline_recv_activation: return "pipeline_recv_activation";
    case StreamId::pipeline_send_activation: return "pipeline_send_activation";
    case StreamId::pipeline_recv_gradient: return "pipeline_recv_gradient";
    case StreamId::pipeline_send_gradient: return "pipeline_send_gradient";
    case StreamId::context_parallel: return "context_parallel";
  }
  return "?";
}

Program build_program(const TrainingSpec& t, int stage) { return Builder(t).build(stage); }

std::vector<Program> build_programs(const TrainingSpec& t) {
  std::vector<Program> out;
  for (int s = 0; s < t.pp; ++s) out.push_back(build_program(t, s));
  return out;
}

}  // namespace commbound::sim
