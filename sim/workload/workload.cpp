#include "sim/workload/workload.hpp"

#include "calibration/table/llama_recipe.hpp"

#include <algorithm>
#include <cmath>

namespace commbound::sim {
namespace {

using calibration::Direction;
using calibration::RecipeKernel;

constexpr double kBf16Bytes = 2;

Op compute_op(std::string name, OpKind kind, double flops, double bytes) {
  Op op;
  op.name = std::move(name);
  op.kind = kind;
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

OpKind kind_of(const calibration::KernelShape& shape) {
  if (std::holds_alternative<calibration::GemmShape>(shape)) return OpKind::gemm;
  if (std::holds_alternative<calibration::AttentionShape>(shape)) return OpKind::attention;
  return OpKind::elementwise;
}

class Builder {
public:
  explicit Builder(const TrainingSpec& t)
      : t_(t),
        recipe_(t.model, layout_of(t)),
        layer_fwd_(recipe_.layer(Direction::forward)),
        layer_bwd_(recipe_.layer(Direction::backward)),
        head_fwd_(recipe_.lm_head(Direction::forward)),
        head_bwd_(recipe_.lm_head(Direction::backward)),
        embedding_fwd_(recipe_.embedding(Direction::forward)),
        embedding_bwd_(recipe_.embedding(Direction::backward)) {}

  int add(Op op) {
    program_.ops.push_back(std::move(op));
    return static_cast<int>(program_.ops.size()) - 1;
  }
  // An op running the recipe's kernel `k`: its FLOPs and fewest bytes are the kernel shape's
  // (what the datasheet roofline prices when no table is in use).
  int kernel(const std::string& name, const RecipeKernel& k, std::vector<int> deps) {
    Op op = compute_op(name, kind_of(k.shape), calibration::flops(k.shape), calibration::bytes(k.shape));
    op.kernel = k.shape;
    op.deps = std::move(deps);
    return add(op);
  }
  // A synchronisation point: no kernel, no cost.
  int sync(const std::string& name, std::vector<int> deps) {
    Op op = compute_op(name, OpKind::elementwise, 0, 0);
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

  // The recipe's `kernels` one after another, the first after `deps`, each named `prefix` + its
  // name, with the tensor-parallel reductions the recipe marks; returns the last op.
  int run(const std::string& prefix, const std::vector<RecipeKernel>& kernels, std::vector<int> deps, bool backward) {
    int x = -1;
    for (const RecipeKernel& k : kernels) {
      std::vector<int> after = x < 0 ? std::move(deps) : std::vector<int>{x};
      x = std::holds_alternative<calibration::AttentionShape>(k.shape) ? attention(prefix, k, after, backward)
                                                                       : kernel(prefix + k.name, k, after);
      if (!k.tp_reduction.empty()) x = tp_sync(prefix + k.tp_reduction, x);
    }
    return x;
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

  // Attention after ops `after`. With context parallelism, ring attention: the recipe's kernel
  // runs once per KV block (cp); the rank's KV block travels around the CP ring in cp - 1 steps
  // (backward: with its gradient, twice the bytes) while attention runs block by block; block k
  // waits for the step that brought it.
  int attention(const std::string& p, const RecipeKernel& k, const std::vector<int>& after, bool backward) {
    if (k.runs == 1) return kernel(p + k.name, k, after);
    const double kv_block = 2 * tokens() * t_.model.kv_dim() / t_.tp * kBf16Bytes * (backward ? 2 : 1);
    std::vector<int> chunk = after;
    int step = -1;
    for (int b = 0; b < k.runs; ++b) {
      std::vector<int> deps = chunk;
      if (step >= 0) deps.push_back(step);
      if (b + 1 < k.runs) {
        step = collective(p + "cp_kv.step" + std::to_string(b), StreamId::context_parallel,
                          network::CollectiveOp::send_recv, GroupKind::context_next, kv_block,
                          step >= 0 ? std::vector<int>{step} : after);
      }
      chunk = {kernel(p + k.name + ".block" + std::to_string(b), k, deps)};
    }
    return chunk.front();
  }

  // One transformer layer, forward (backward = false) or backward; returns the last op.
  int layer(int l, bool backward, int after) {
    const std::string p = "layer" + std::to_string(l) + tag_ + (backward ? ".bwd." : ".fwd.");
    return run(p, backward ? layer_bwd_ : layer_fwd_, {after}, backward);
  }

  // The final norm, the LM head and the loss (backward: the loss's gradient first).
  int lm_head(bool backward, int after) {
    const std::string p = "lm_head" + tag_ + (backward ? ".bwd." : ".fwd.");
    return run(p, backward ? head_bwd_ : head_fwd_, {after}, backward);
  }

  // `kernels` with `suffix` appended to their names ("embedding" -> "embedding.fwd.mb0").
  static std::vector<RecipeKernel> renamed(std::vector<RecipeKernel> kernels, const std::string& suffix) {
    for (RecipeKernel& k : kernels) k.name += suffix;
    return kernels;
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
  static calibration::StepLayout layout_of(const TrainingSpec& t) {
    calibration::StepLayout l;
    l.micro_batch = t.micro_batch;
    l.seq = t.seq_len;
    l.tp = t.tp;
    l.cp = t.cp;
    return l;
  }

  const TrainingSpec& t_;
  const calibration::LlamaRecipe recipe_;
  const std::vector<RecipeKernel> layer_fwd_, layer_bwd_, head_fwd_, head_bwd_, embedding_fwd_, embedding_bwd_;
  Program program_;
  std::string tag_;  // ".mb<k>": the micro-batch being built (op names are unique in a program)
};

Program Builder::build(int stage) {
  const calibration::ModelSpec& m = t_.model;
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
    int x = vs == 0 ? run("", renamed(embedding_fwd_, ".fwd" + tag), start, false)
                    : sync("vs" + std::to_string(vs) + ".fwd_start" + tag, start);
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
      x = sync("vs" + std::to_string(vs) + ".bwd_start" + tag, {x, grad});
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
        start = sync("layer" + std::to_string(l) + ".bwd.wait_params" + tag, {x, ag});
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
      x = run("", renamed(embedding_bwd_, ".bwd" + tag), {x}, true);
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
  // The recipe's optimizer over the local shard's parameters as one flat buffer.
  const std::size_t first = program_.ops.size();
  run("optimizer.", calibration::LlamaRecipe::optimizer(local_params), deps, false);
  for (std::size_t i = first; i < program_.ops.size(); ++i) program_.ops[i].kind = OpKind::optimizer;
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
