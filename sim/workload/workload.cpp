#include "sim/workload/workload.hpp"

#include "sim/workload/internal/data_parallel.hpp"
#include "sim/workload/internal/pipeline_schedule.hpp"
#include "sim/workload/internal/program_writer.hpp"
#include "sim/scenario/size_limits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>

namespace commbound::sim {
namespace {

using internal::kBf16Bytes;

// One pipeline stage's program: its forward and backward passes in the schedule's order, the
// data-parallel pass's collectives around them, the pipeline's sends and receives between them,
// then the optimizer step.
class StageBuilder {
public:
  StageBuilder(const TrainingSpec& t, int stage)
      : t_(t),
        m_(t.model),
        stage_(stage),
        virtual_stages_(t.pp * t.virtual_stages),
        // FSDP units: the root (the first virtual stage's input embedding and positions; the
        // last's final norm and LM head, tied to the embedding only where both are on one stage)
        // and one per layer. Tensor parallelism splits the parameters first; FSDP
        // shards the rest.
        root_params_((stage == 0 ? m_.input_params() : 0) + (stage == t.pp - 1 ? m_.head_params(stage == 0) : 0)),
        root_bytes_(root_params_ / t.tp * kBf16Bytes),
        w_(t),
        // Activations (and their gradients) between stages: one micro-batch's hidden states.
        boundary_bytes_(w_.tokens() * m_.hidden * kBf16Bytes / (t.sequence_parallel ? t.tp : 1)),
        dp_(internal::make_data_parallel_pass(t)) {}

  Program build() {
    dp_->plan(stage_, chunk_units());
    // ZB-H1: stage s defers each micro-batch's weight gradients by s input-gradient passes, so
    // that every stage holds P micro-batches in flight (1F1B's first stage's P - s + s): the later
    // stages return their input gradients sooner and the first stages' waits shrink.
    const std::size_t defer = zero_bubble_ ? static_cast<std::size_t>(stage_) : 0;
    std::deque<internal::ScheduleUnit> deferred;
    for (const internal::ScheduleUnit& u :
         internal::one_forward_one_backward(t_.pp, stage_, t_.virtual_stages, t_.micro_batches, t_.microbatch_group())) {
      if (!u.backward) {
        forward(u.chunk, u.micro_batch);
        continue;
      }
      backward(u.chunk, u.micro_batch);
      if (!zero_bubble_) continue;
      deferred.push_back(u);
      if (deferred.size() > defer) {
        weight_gradients(deferred.front().chunk, deferred.front().micro_batch);
        deferred.pop_front();
      }
    }
    for (const internal::ScheduleUnit& u : deferred) weight_gradients(u.chunk, u.micro_batch);
    // The root unit's gradients (embedding, LM head) are reduced after the stage's last backward.
    if (root_bytes_ > 0) dp_->reduce_root(w_, root_bytes_, last_compute_);
    optimizer();
    Program p = w_.take();
    p.outer_step_begin = outer_step_begin_;
    return p;
  }

private:
  // Virtual stage of model chunk `chunk`: chunk c of stage s is virtual stage c * P + s; virtual
  // stage k holds layers first_layer(k) .. last_layer(k) (TrainingSpec: even, or uneven first and
  // last stages). Without interleaving v = 1.
  int virtual_stage(int chunk) const { return chunk * t_.pp + stage_; }
  int last_layer(int vs) const { return t_.first_layer(vs) + t_.chunk_layers(vs) - 1; }
  // Layer `l`'s bf16 parameter bytes on this rank: all but an MoE layer's routed experts, split by
  // tensor parallelism; and the routed experts, split by ep and expert_tp (none in a dense layer).
  // Past the model's layers, l = layers + k is multi-token prediction module k (its layer, its
  // projection and norms).
  double dense_bytes(int l) const {
    const double routed = m_.is_moe_layer(l) ? m_.routed_expert_params() : 0;
    const double params = l > m_.layers ? m_.mtp_module_params(l - m_.layers) : m_.layer_params(l);
    return (params - routed) / t_.tp * kBf16Bytes;
  }
  double expert_bytes(int l) const {
    return m_.is_moe_layer(l) ? m_.routed_expert_params() / (t_.ep * t_.expert_tp) * kBf16Bytes : 0;
  }
  // The dense units of each of this stage's model chunks in forward order, the multi-token
  // prediction modules after the last virtual stage's layers.
  std::vector<std::vector<internal::ChunkUnit>> chunk_units() const {
    std::vector<std::vector<internal::ChunkUnit>> chunks;
    for (int c = 0; c < t_.virtual_stages; ++c) {
      auto& units = chunks.emplace_back();
      const int vs = virtual_stage(c);
      for (int l = t_.first_layer(vs); l <= last_layer(vs); ++l) units.push_back({"layer" + std::to_string(l), dense_bytes(l)});
      for (int k = 1; vs == virtual_stages_ - 1 && k <= m_.mtp_layers; ++k) {
        units.push_back({"layer" + std::to_string(m_.layers + k), dense_bytes(m_.layers + k)});
      }
    }
    return chunks;
  }
  std::vector<int> after_last_compute() const {
    return last_compute_ < 0 ? std::vector<int>{} : std::vector<int>{last_compute_};
  }

  // Point-to-point between virtual stages, named after the sending virtual stage so that sender
  // and receiver meet.
  int p2p(const std::string& what, int from_vstage, int mb, StreamId stream, GroupKind kind, std::vector<int> deps) {
    const int i = w_.collective("p2p." + what + ".mb" + std::to_string(mb) + ".vs" + std::to_string(from_vstage),
                                stream, network::CollectiveOp::send_recv, kind, boundary_bytes_, std::move(deps));
    w_.op(i).toward_lower_rank = what == "gradient";
    return i;
  }

  void forward(int chunk, int mb) {
    const int vs = virtual_stage(chunk);
    const int lo = t_.first_layer(vs);
    const int hi = last_layer(vs);
    const std::string tag = ".mb" + std::to_string(mb);
    std::vector<int> start = after_last_compute();
    if (vs > 0) {
      start.push_back(p2p("activation", vs - 1, mb, StreamId::pipeline_recv_activation, GroupKind::pipeline_prev, {}));
    }
    if (vs == 0 && root_bytes_ > 0) {
      const int root = dp_->gather_forward(w_, "root", tag, mb, root_bytes_, after_last_compute());
      if (root >= 0) start.push_back(root);
    }
    int x = vs == 0 ? w_.embedding(tag, false, start) : w_.sync("vs" + std::to_string(vs) + ".fwd_start" + tag, start);
    // Layer l's parameters are gathered once layer l - inflight is done (the prefetch limit).
    std::vector<int> done(static_cast<std::size_t>(hi + 1), -1);
    done[static_cast<std::size_t>(lo - 1)] = x;
    const int inflight = t_.max_inflight_allgathers;
    for (int l = lo; l <= hi; ++l) {
      std::vector<int> deps;
      if (l - inflight >= lo - 1) deps.push_back(done[static_cast<std::size_t>(l - inflight)]);
      const std::string unit = "layer" + std::to_string(l);
      const int params = dp_->gather_forward(w_, unit, tag, mb, dense_bytes(l), deps, false, x);
      const int experts = m_.is_moe_layer(l) ? dp_->gather_forward(w_, unit + ".experts", tag, mb, expert_bytes(l), deps, true) : -1;
      const int first_op = w_.size();
      x = w_.layer(l, tag, false, x);
      for (int p : {params, experts}) {
        if (p >= 0) w_.op(first_op).deps.push_back(p);
      }
      done[static_cast<std::size_t>(l)] = x;
    }
    if (vs == virtual_stages_ - 1) {
      x = w_.lm_head(tag, false, x);
      for (int k = 1; k <= m_.mtp_layers; ++k) x = mtp_forward(k, mb, tag, x);
    } else {
      p2p("activation", vs, mb, StreamId::pipeline_send_activation, GroupKind::pipeline_next, {x});
    }
    last_compute_ = x;
  }

  void backward(int chunk, int mb) {
    const int vs = virtual_stage(chunk);
    const int lo = t_.first_layer(vs);
    const int hi = last_layer(vs);
    const std::string tag = ".mb" + std::to_string(mb);
    int x = last_compute_;
    if (vs == virtual_stages_ - 1) {
      x = w_.lm_head(tag, true, x);
      for (int k = m_.mtp_layers; k >= 1; --k) x = mtp_backward(k, mb, tag, x);
    } else {
      const int grad = p2p("gradient", vs + 1, mb, StreamId::pipeline_recv_gradient, GroupKind::pipeline_next, {});
      x = w_.sync("vs" + std::to_string(vs) + ".bwd_start" + tag, {x, grad});
    }
    std::vector<int> done(static_cast<std::size_t>(hi + 2), -1);
    const int inflight = t_.max_inflight_allgathers;
    for (int l = hi; l >= lo; --l) {
      int start = x;
      std::vector<int> deps;
      if (l + inflight <= hi) deps.push_back(done[static_cast<std::size_t>(l + inflight)]);
      const std::string unit = "layer" + std::to_string(l);
      const bool moe = m_.is_moe_layer(l);
      const int params = dp_->gather_backward(w_, unit, tag, dense_bytes(l), deps);
      const int experts = moe ? dp_->gather_backward(w_, unit + ".experts", tag, expert_bytes(l), deps, true) : -1;
      if (params >= 0 || experts >= 0) {
        std::vector<int> wait = {x};
        for (int p : {params, experts}) {
          if (p >= 0) wait.push_back(p);
        }
        start = w_.sync(unit + ".bwd.wait_params" + tag, std::move(wait));
      }
      // Activation recomputation: replay what the layer did not keep of its forward first.
      start = w_.recompute(l, tag, start);
      x = w_.layer(l, tag, true, start,
                   zero_bubble_ ? internal::ProgramWriter::BackwardPass::input_grad
                                : internal::ProgramWriter::BackwardPass::whole);
      done[static_cast<std::size_t>(l)] = x;
      if (zero_bubble_) input_grads_[{mb, l}] = x;
      if (!zero_bubble_ && mb == t_.micro_batches - 1) {
        if (moe) dp_->reduce_layer(w_, l, false, expert_bytes(l), x, true);
        dp_->reduce_layer(w_, l, l == lo, dense_bytes(l), x);
      }
    }
    if (vs == 0) {
      x = w_.embedding(tag, true, {x});
    } else {
      p2p("gradient", vs, mb, StreamId::pipeline_send_gradient, GroupKind::pipeline_prev, {x});
    }
    last_compute_ = x;
  }

  // Multi-token prediction module k (ModelSpec::mtp_layers) on the last stage, after the model's
  // LM head: its entry (embedding, norms, projection), its layer (layer layers + k, its
  // parameters gathered and reduced as a layer's are), the shared head and loss; backward in
  // reverse, before the model's last layer's backward.
  int mtp_forward(int k, int mb, const std::string& tag, int after) {
    const int l = m_.layers + k;
    const std::string unit = "layer" + std::to_string(l);
    const int params = dp_->gather_forward(w_, unit, tag, mb, dense_bytes(l), {}, false, after);
    const int experts = m_.is_moe_layer(l) ? dp_->gather_forward(w_, unit + ".experts", tag, mb, expert_bytes(l), {}, true) : -1;
    std::vector<int> start = {w_.mtp_entry(k, tag, false, after)};
    for (int p : {params, experts}) {
      if (p >= 0) start.push_back(p);
    }
    const int x = w_.layer(l, tag, false, w_.sync(unit + ".fwd.wait_params" + tag, std::move(start)));
    return w_.lm_head(tag + ".mtp" + std::to_string(k), false, x);
  }
  int mtp_backward(int k, int mb, const std::string& tag, int after) {
    const int l = m_.layers + k;
    const std::string unit = "layer" + std::to_string(l);
    const bool moe = m_.is_moe_layer(l);
    std::vector<int> start = {w_.lm_head(tag + ".mtp" + std::to_string(k), true, after)};
    const int params = dp_->gather_backward(w_, unit, tag, dense_bytes(l), {});
    const int experts = moe ? dp_->gather_backward(w_, unit + ".experts", tag, expert_bytes(l), {}, true) : -1;
    for (int p : {params, experts}) {
      if (p >= 0) start.push_back(p);
    }
    int x = w_.recompute(l, tag, w_.sync(unit + ".bwd.wait_params" + tag, std::move(start)));
    x = w_.layer(l, tag, true, x);
    if (mb == t_.micro_batches - 1) {
      if (moe) dp_->reduce_layer(w_, l, false, expert_bytes(l), x, true);
      dp_->reduce_layer(w_, l, false, dense_bytes(l), x);
    }
    return w_.mtp_entry(k, tag, true, x);
  }

  // ZB-H1's W pass of model chunk `chunk` on micro-batch `mb`: each layer's weight-gradient GEMMs
  // after its input gradients (B), last layer first; after the last micro-batch's, the layer's
  // gradients are reduced.
  void weight_gradients(int chunk, int mb) {
    const int vs = virtual_stage(chunk);
    const std::string tag = ".mb" + std::to_string(mb);
    int x = last_compute_;
    for (int l = last_layer(vs); l >= t_.first_layer(vs); --l) {
      x = w_.layer(l, tag, true, input_grads_.at({mb, l}), internal::ProgramWriter::BackwardPass::weight_grad);
      if (mb == t_.micro_batches - 1) dp_->reduce_layer(w_, l, l == t_.first_layer(vs), dense_bytes(l), x);
    }
    last_compute_ = x;
  }

  // The recipe's optimizer over this stage's parameters on the local shard (FSDP) or replica
  // (DDP), as one flat buffer, after every gradient reduction.
  // The rank's parameters: the dense ones split by tp and sharded over shard_ranks(); an MoE
  // layer's routed experts split by ep and sharded over their own replicas.
  void optimizer() {
    double local_params = root_params_ / t_.tp / t_.shard_ranks();
    auto add_layer = [&](int l) {
      local_params += dense_bytes(l) / kBf16Bytes / t_.shard_ranks() +
                      expert_bytes(l) / kBf16Bytes / (m_.is_moe_layer(l) ? t_.expert_shard_ranks() : 1);
    };
    for (int c = 0; c < t_.virtual_stages; ++c) {
      const int vs = virtual_stage(c);
      for (int l = t_.first_layer(vs); l <= last_layer(vs); ++l) add_layer(l);
    }
    // The last stage also steps the multi-token prediction modules.
    for (int l = m_.layers + 1; stage_ == t_.pp - 1 && l <= m_.layers + m_.mtp_layers; ++l) add_layer(l);
    dp_->finish_gradients(w_, last_compute_);
    std::vector<int> deps = dp_->gradient_syncs();
    deps.push_back(last_compute_);
    const int last = w_.optimizer("optimizer.", local_params, std::move(deps));
    const int outer = w_.size();
    dp_->outer_step(w_, local_params, last);
    if (w_.size() > outer) outer_step_begin_ = outer;
  }

  const TrainingSpec& t_;
  const model::ModelSpec& m_;
  const int stage_;
  const int virtual_stages_;
  const double root_params_;
  const double root_bytes_;
  internal::ProgramWriter w_;
  const double boundary_bytes_;
  std::unique_ptr<internal::DataParallelPass> dp_;
  int last_compute_ = -1;
  int outer_step_begin_ = -1;
  const bool zero_bubble_ = t_.pp_schedule == PipelineSchedule::zb_h1;
  std::map<std::pair<int, int>, int> input_grads_;  // ZB-H1: (micro-batch, layer) -> the end of its B pass
};

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
    case StreamId::expert_parallel: return "expert_parallel";
  }
  return "?";
}

const char* to_string(GroupKind g) {
  switch (g) {
    case GroupKind::data_parallel: return "data_parallel";
    case GroupKind::shard: return "shard";
    case GroupKind::replica: return "replica";
    case GroupKind::tensor_parallel: return "tensor_parallel";
    case GroupKind::pipeline_next: return "pipeline_next";
    case GroupKind::pipeline_prev: return "pipeline_prev";
    case GroupKind::context_next: return "context_next";
    case GroupKind::context_parallel: return "context_parallel";
    case GroupKind::expert_parallel: return "expert_parallel";
    case GroupKind::expert_tensor_parallel: return "expert_tensor_parallel";
    case GroupKind::expert_data_parallel: return "expert_data_parallel";
  }
  return "?";
}

std::optional<GroupKind> parse_group_kind(const std::string& name) {
  for (GroupKind g : kGroupKinds) {
    if (name == to_string(g)) return g;
  }
  return std::nullopt;
}

Program build_program(const TrainingSpec& t, int stage) { return StageBuilder(t, stage).build(); }

const char* to_string(ProgramPart p) {
  switch (p) {
    case ProgramPart::layer_forward: return "layer.forward";
    case ProgramPart::layer_backward: return "layer.backward";
    case ProgramPart::layer_forward_backward: return "layer.forward+backward";
    case ProgramPart::layer_recompute: return "layer.recompute";
    case ProgramPart::moe_layer_forward: return "moe_layer.forward";
    case ProgramPart::moe_layer_backward: return "moe_layer.backward";
    case ProgramPart::moe_layer_forward_backward: return "moe_layer.forward+backward";
    case ProgramPart::moe_layer_recompute: return "moe_layer.recompute";
    case ProgramPart::embedding_forward: return "embedding.forward";
    case ProgramPart::embedding_backward: return "embedding.backward";
    case ProgramPart::lm_head_forward: return "lm_head.forward";
    case ProgramPart::lm_head_backward: return "lm_head.backward";
    case ProgramPart::optimizer: return "optimizer";
    case ProgramPart::micro_batch: return "step.micro_batch";
  }
  return "?";
}

Program build_part(const TrainingSpec& t, ProgramPart part) {
  internal::ProgramWriter w(t);
  const std::string tag = ".mb0";
  auto layer_backward = [&](int l, int after) { return w.layer(l, tag, true, w.recompute(l, tag, after)); };
  // The first MoE layer (ModelSpec::is_moe_layer's first) where the first layer is dense; 0: no
  // such layer (its parts stay empty).
  const int first_moe = t.model.first_dense_layers + t.model.moe_layer_every;
  const int moe = t.model.moe() && first_moe > 1 && first_moe <= t.model.layers ? first_moe : 0;
  switch (part) {
    case ProgramPart::layer_forward: w.layer(1, tag, false, -1); break;
    case ProgramPart::layer_backward: layer_backward(1, -1); break;
    case ProgramPart::layer_forward_backward: layer_backward(1, w.layer(1, tag, false, -1)); break;
    case ProgramPart::layer_recompute: w.recompute(1, tag, -1); break;
    case ProgramPart::moe_layer_forward:
      if (moe > 0) w.layer(moe, tag, false, -1);
      break;
    case ProgramPart::moe_layer_backward:
      if (moe > 0) layer_backward(moe, -1);
      break;
    case ProgramPart::moe_layer_forward_backward:
      if (moe > 0) layer_backward(moe, w.layer(moe, tag, false, -1));
      break;
    case ProgramPart::moe_layer_recompute:
      if (moe > 0) w.recompute(moe, tag, -1);
      break;
    case ProgramPart::embedding_forward: w.embedding(tag, false, {}); break;
    case ProgramPart::embedding_backward: w.embedding(tag, true, {}); break;
    case ProgramPart::lm_head_forward: w.lm_head(tag, false, -1); break;
    case ProgramPart::lm_head_backward: w.lm_head(tag, true, -1); break;
    case ProgramPart::optimizer:
      w.optimizer("optimizer.", t.model.params() / t.tp / t.pp / t.shard_ranks(), {});
      break;
    case ProgramPart::micro_batch: {
      int x = w.embedding(tag, false, {});
      for (int l = 1; l <= t.model.layers; ++l) x = w.layer(l, tag, false, x);
      x = w.lm_head(tag, true, w.lm_head(tag, false, x));
      for (int l = t.model.layers; l >= 1; --l) x = layer_backward(l, x);
      w.embedding(tag, true, {x});
      break;
    }
  }
  return w.take();
}

Status check_program_size(const TrainingSpec& t) {
  const auto per_layer = static_cast<std::int64_t>(std::max(build_part(t, ProgramPart::layer_forward_backward).ops.size(),
                                                              build_part(t, ProgramPart::moe_layer_forward_backward).ops.size()));
  // A stage's count is capped just past the larger limit, so that the sum over stages (fewer
  // than 2^18) cannot overflow either.
  constexpr std::int64_t kCap = kMaxOpsAllStages + 1;
  std::int64_t busiest = 0, busiest_layers = 0, all = 0;
  for (int s = 0; s < t.pp; ++s) {
    std::int64_t layers = s == t.pp - 1 ? t.model.mtp_layers : 0;
    for (int c = 0; c < t.virtual_stages; ++c) layers += t.chunk_layers(c * t.pp + s);
    const auto passes = checked_product(t.micro_batches, layers);
    const auto ops = passes ? checked_product(*passes, per_layer) : std::nullopt;
    const std::int64_t stage_ops = std::min(ops.value_or(kCap), kCap);
    if (stage_ops > busiest) busiest_layers = layers;
    busiest = std::max(busiest, stage_ops);
    all += stage_ops;
  }
  const std::string what = fmt::format("{} micro-batches x {} layers on the busiest pipeline stage x {} ops a layer "
                                       "(forward and backward)",
                                       t.micro_batches, busiest_layers, per_layer);
  if (busiest > kMaxOpsPerGpu) {
    return Error{fmt::format("{} are {} ops per GPU, more than {} (docs/limits.md): fewer micro-batches "
                             "(training.global_batch, training.micro_batch) or layers (model.layers), or more "
                             "pipeline stages (parallel.pp)",
                             what, busiest >= kCap ? "more than " + std::to_string(kMaxOpsAllStages) : "at least " + std::to_string(busiest),
                             kMaxOpsPerGpu)};
  }
  if (all > kMaxOpsAllStages) {
    return Error{fmt::format("{}: the {} pipeline stages' programs together are more than {} ops (docs/limits.md): "
                             "fewer micro-batches (training.global_batch, training.micro_batch) or layers (model.layers)",
                             what, t.pp, kMaxOpsAllStages)};
  }
  return Ok{};
}

std::vector<Program> build_programs(const TrainingSpec& t) {
  std::vector<Program> out;
  for (int s = 0; s < t.pp; ++s) out.push_back(build_program(t, s));
  return out;
}

}  // namespace commbound::sim
