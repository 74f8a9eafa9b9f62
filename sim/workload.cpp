#include "sim/workload.hpp"

#include <algorithm>

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
  int gemm(const std::string& name, double m, double n, double k, std::vector<int> deps) {
    Op op = compute_op(name, OpKind::gemm, 2 * m * n * k, kBf16Bytes * (m * k + k * n + m * n));
    op.deps = std::move(deps);
    return add(op);
  }
  int elementwise(const std::string& name, double bytes, std::vector<int> deps) {
    Op op = compute_op(name, OpKind::elementwise, 0, bytes);
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

  // One transformer layer, forward (backward = false) or backward; returns the last op.
  int layer(int l, bool backward, int after) {
    const ModelSpec& m = t_.model;
    const double T = tokens();
    const double h = m.hidden;
    const double tp = t_.tp;
    const double qkv = (h + 2 * m.kv_dim()) / tp;
    const double ffn = m.ffn / tp;
    const double act = T * h * kBf16Bytes;  // one activation tensor
    const std::string p = "layer" + std::to_string(l) + (backward ? ".bwd." : ".fwd.");
    const double passes = backward ? 2 : 1;  // backward: input and weight gradients
    auto g = [&](const std::string& n, double mm, double nn, double kk, int dep) {
      int last = gemm(p + n + (backward ? ".dgrad" : ""), mm, nn, kk, {dep});
      if (backward) last = gemm(p + n + ".wgrad", mm, nn, kk, {last});
      return last;
    };
    const double attn_fwd_flops = 2.0 * t_.micro_batch * static_cast<double>(t_.seq_len) * t_.seq_len * h / tp;
    Op attn = compute_op(p + "attention", OpKind::attention,
                         backward ? kAttentionBackwardFlopRatio * attn_fwd_flops : attn_fwd_flops,
                         passes * T * (qkv + 2 * h / tp) * kBf16Bytes);
    int x = after;
    if (!backward) {
      x = elementwise(p + "rmsnorm", 2 * act, {x});
      x = g("qkv", T, qkv, h, x);
      x = elementwise(p + "rope", 2 * T * qkv * kBf16Bytes, {x});
      attn.deps = {x};
      x = add(attn);
      x = g("o_proj", T, h, h / tp, x);
      x = tp_sync(p + "attn", x);
      x = elementwise(p + "residual", 3 * act, {x});
      x = elementwise(p + "rmsnorm2", 2 * act, {x});
      x = g("gate_up", T, 2 * ffn, h, x);
      x = elementwise(p + "swiglu", 3 * T * ffn * kBf16Bytes, {x});
      x = g("down", T, h, ffn, x);
      x = tp_sync(p + "mlp", x);
      return elementwise(p + "residual2", 3 * act, {x});
    }
    x = elementwise(p + "residual2", 2 * act, {x});
    x = g("down", T, h, ffn, x);
    x = elementwise(p + "swiglu", 2 * 3 * T * ffn * kBf16Bytes, {x});
    x = g("gate_up", T, 2 * ffn, h, x);
    x = tp_sync(p + "mlp", x);
    x = elementwise(p + "rmsnorm2", 2 * 2 * act, {x});
    x = g("o_proj", T, h, h / tp, x);
    attn.deps = {x};
    x = add(attn);
    x = elementwise(p + "rope", 2 * 2 * T * qkv * kBf16Bytes, {x});
    x = g("qkv", T, qkv, h, x);
    x = tp_sync(p + "attn", x);
    return elementwise(p + "rmsnorm", 2 * 2 * act, {x});
  }

  int lm_head(bool backward, int after) {
    const ModelSpec& m = t_.model;
    const double T = tokens();
    const double vocab = m.vocab / static_cast<double>(t_.tp);
    const std::string p = backward ? "lm_head.bwd." : "lm_head.fwd.";
    int x = elementwise(p + "rmsnorm_final", (backward ? 2 : 1) * 2 * T * m.hidden * kBf16Bytes, {after});
    x = gemm(p + "logits" + (backward ? ".dgrad" : ""), T, vocab, m.hidden, {x});
    if (backward) x = gemm(p + "logits.wgrad", T, vocab, m.hidden, {x});
    // Cross-entropy over fp32 logits: read and write them once forward, once backward.
    return elementwise(p + "cross_entropy", 2 * T * vocab * kFp32Bytes, {x});
  }

  double tokens() const { return static_cast<double>(t_.micro_batch) * t_.seq_len; }

  // HSDP: the shard each rank holds after the reduce-scatter is all-reduced across replicas.
  int replica_allreduce(const std::string& unit, double unit_bytes, int after) {
    if (t_.dp / t_.hsdp_shard < 2) return after;
    return collective(unit + ".replica_allreduce", StreamId::reduce_scatter, network::CollectiveOp::all_reduce,
                      GroupKind::replica, unit_bytes / t_.hsdp_shard, {after});
  }

  Program build();

private:
  const TrainingSpec& t_;
  Program program_;
};

Program Builder::build() {
  const ModelSpec& m = t_.model;
  const int L = m.layers;
  const double tp = t_.tp;
  // FSDP units: the root (input embedding, final norm, LM head) and one per layer. Parameters are
  // first split by tensor parallelism; FSDP shards the rest over the data-parallel group.
  const double root_bytes = (2 * m.embedding_params() + m.hidden) / tp * kBf16Bytes;
  const double layer_bytes = m.layer_params() / tp * kBf16Bytes;
  const bool fsdp = t_.sharded();
  const bool hsdp = t_.strategy == Strategy::hsdp;
  const bool dp = t_.dp > 1;
  // Parameters are gathered and gradients reduce-scattered over the sharding group; HSDP then
  // all-reduces each reduced shard across the replicas.
  const GroupKind shard_kind = hsdp ? GroupKind::shard : GroupKind::data_parallel;
  const int inflight = t_.max_inflight_allgathers;

  int last_compute = -1;
  std::vector<int> grad_sync;  // ops the optimizer waits for
  for (int mb = 0; mb < t_.micro_batches; ++mb) {
    const bool first = mb == 0;
    const bool last = mb == t_.micro_batches - 1;
    // --- forward: all-gather each unit (prefetching up to `inflight` ahead), then compute.
    std::vector<int> fwd_done(L + 1, -1);
    std::vector<int> gathered(L + 1, -1);
    const bool gather_fwd = fsdp && dp && (first || t_.zero_stage == 3);
    auto after = [](int dep) { return dep < 0 ? std::vector<int>{} : std::vector<int>{dep}; };
    if (gather_fwd) {
      gathered[0] = collective("root.allgather", StreamId::all_gather, network::CollectiveOp::all_gather, shard_kind,
                               root_bytes, after(last_compute));
    }
    std::vector<int> start = after(last_compute);
    if (gathered[0] >= 0) start.push_back(gathered[0]);
    int x = elementwise("embedding.fwd", 2 * tokens() * m.hidden * kBf16Bytes, start);
    fwd_done[0] = x;
    for (int l = 1; l <= L; ++l) {
      if (gather_fwd) {
        std::vector<int> deps;
        if (l - inflight >= 0) deps.push_back(fwd_done[l - inflight]);
        gathered[l] = collective("layer" + std::to_string(l) + ".allgather", StreamId::all_gather,
                                 network::CollectiveOp::all_gather, shard_kind, layer_bytes, deps);
      }
      const std::size_t first_op = program_.ops.size();
      x = layer(l, false, x);
      if (gathered[l] >= 0) program_.ops[first_op].deps.push_back(gathered[l]);  // needs its parameters
      fwd_done[l] = x;
    }
    x = lm_head(false, x);
    x = lm_head(true, x);
    // --- backward, last layer first; gradients reduced per unit on the reduce-scatter stream.
    std::vector<int> bwd_done(L + 1, -1);
    double bucket = 0;
    for (int l = L; l >= 1; --l) {
      int start = x;
      if (fsdp && dp && t_.zero_stage == 3) {
        std::vector<int> deps;
        if (l + inflight <= L) deps.push_back(bwd_done[l + inflight]);
        const int ag = collective("layer" + std::to_string(l) + ".allgather_bwd", StreamId::all_gather,
                                  network::CollectiveOp::all_gather, shard_kind, layer_bytes, deps);
        start = elementwise("layer" + std::to_string(l) + ".bwd.wait_params", 0, {x, ag});
      }
      // Full activation checkpointing: only the layer's input was kept; replay its forward first.
      if (t_.activation_checkpointing) start = layer(l, false, start);
      x = layer(l, true, start);
      bwd_done[l] = x;
      if (!dp || !last) continue;
      if (fsdp) {
        const int rs = collective("layer" + std::to_string(l) + ".reducescatter", StreamId::reduce_scatter,
                                  network::CollectiveOp::reduce_scatter, shard_kind, layer_bytes, {x});
        grad_sync.push_back(hsdp ? replica_allreduce("layer" + std::to_string(l), layer_bytes, rs) : rs);
      } else {
        bucket += layer_bytes;
        if (bucket >= t_.ddp_bucket_bytes || l == 1) {
          grad_sync.push_back(collective("bucket.layer" + std::to_string(l) + ".allreduce", StreamId::reduce_scatter,
                                         network::CollectiveOp::all_reduce, GroupKind::data_parallel, bucket, {x}));
          bucket = 0;
        }
      }
    }
    x = elementwise("embedding.bwd", 2 * tokens() * m.hidden * kBf16Bytes, {x});
    if (dp && last) {
      const int root = collective(fsdp ? "root.reducescatter" : "root.allreduce", StreamId::reduce_scatter,
                                  fsdp ? network::CollectiveOp::reduce_scatter : network::CollectiveOp::all_reduce,
                                  shard_kind, root_bytes, {x});
      grad_sync.push_back(hsdp ? replica_allreduce("root", root_bytes, root) : root);
    }
    last_compute = x;
  }
  // --- optimizer on the local shard (FSDP) or the local replica (DDP).
  const double local_params = m.params() / tp / t_.shard_ranks();
  std::vector<int> deps = grad_sync;
  deps.push_back(last_compute);
  int x = elementwise("optimizer.grad_norm", kGradNormBytesPerParam * local_params, deps);
  program_.ops[static_cast<std::size_t>(x)].kind = OpKind::optimizer;
  x = elementwise("optimizer.adamw", kAdamBytesPerParam * local_params, {x});
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
  }
  return "?";
}

Program build_program(const TrainingSpec& t) { return Builder(t).build(); }

}  // namespace commbound::sim
