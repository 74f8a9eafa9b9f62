#include "sim/workload/internal/program_writer.hpp"

#include "model/framework_recipe.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace commbound::sim::internal {
namespace {

using model::Direction;
using model::RecipeKernel;

Op compute_op(std::string name, OpKind kind, double flops, double bytes) {
  Op op;
  op.name = std::move(name);
  op.kind = kind;
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

OpKind kind_of(const model::KernelShape& shape) {
  if (std::holds_alternative<model::GemmShape>(shape)) return OpKind::gemm;
  if (std::holds_alternative<model::AttentionShape>(shape)) return OpKind::attention;
  return OpKind::elementwise;
}

// Context parallelism's attention as Megatron-LM and Transformer Engine run it, load-balanced: the
// sequence is cut into 2 cp chunks and CP rank r holds chunks r and 2 cp - 1 - r
// (megatron/core/utils.py, get_batch_on_this_cp_rank), so that every rank does the same causal
// work. Of the cp blocks of keys a rank attends to (`k`: the recipe's causal attention over the
// rank's seq / cp tokens, cp runs), its own is causal over its two chunks; every other one leaves
// half of the rank's query-key pairs visible and none partly masked: its two query chunks against
// an earlier rank's first key chunk, or its second query chunk against both key chunks of a later
// rank (transformer_engine/pytorch/attention.py, AttnFuncWithCPAndKVP2P). That block of seq / cp
// queries by seq / (2 cp) keys runs without a mask; it is priced as two non-causal blocks of
// seq / (2 cp) tokens (batch x 2): the same FLOPs as the causal block it replaces, the same tiles.
struct RingBlocks {
  RecipeKernel diagonal, off_diagonal;
};
RingBlocks load_balanced_blocks(const RecipeKernel& k) {
  RingBlocks b{k, k};
  b.diagonal.runs = b.off_diagonal.runs = 1;
  auto& a = std::get<model::AttentionShape>(b.off_diagonal.shape);
  a.batch *= 2;
  a.seq = (a.seq + 1) / 2;
  a.causal = false;
  return b;
}

model::StepLayout layout_of(const TrainingSpec& t) {
  model::StepLayout l;
  l.micro_batch = t.micro_batch;
  l.seq = t.seq_len;
  l.tp = t.tp;
  l.cp = t.cp;
  l.expert_tp = t.expert_tp;
  l.sequence_parallel = t.sequence_parallel && t.tp > 1;
  l.tp_overlap = t.tp_overlap && l.sequence_parallel;
  l.shared_expert_overlap = t.shared_expert_overlap && t.ep > 1;
  l.cp_heads = t.cp_comm == CpComm::a2a && t.cp > 1;
  return l;
}

// One MoE layer's routing (moe_routing.hpp) as the rank the step waits for runs it: each rank of
// the expert-parallel group routes tokens() / tp tokens (sequence parallelism splits them) to
// top_k experts; the busiest rank's local experts in launch order, each with its expected tokens
// (the rank's expected maximum over the group spread over its experts as their means, rounded to
// whole tokens); under expert tensor parallelism each of the etp ranks computes every token its
// group received.
std::vector<std::int64_t> busiest_rank_expert_tokens(const TrainingSpec& t, const moe::LayerRouting& routing) {
  const int local = t.model.experts / t.ep;
  const int r = routing.busiest_rank;
  const double mean = routing.rank_tokens_mean[static_cast<std::size_t>(r)];
  const double scale = mean > 0 ? routing.busiest_rank_tokens / mean * t.expert_tp : 0;
  std::vector<std::int64_t> tokens;
  for (int e = r * local; e < (r + 1) * local; ++e) {
    tokens.push_back(std::llround(routing.expert_tokens_mean[static_cast<std::size_t>(e)] * scale));
  }
  return tokens;
}

// nccl-tests' n x n bytes of the all-to-all that moves `routing`'s tokens (a bf16 row of `hidden`
// each) to the experts' ranks (dispatch) or back (combine), in group order; null where every
// rank sends every rank the same (uniform routing: the call's size spreads evenly).
std::shared_ptr<const std::vector<double>> peer_bytes(const moe::LayerRouting& routing, double row_bytes,
                                                      bool to_experts) {
  const auto& to_rank = routing.tokens_to_rank;
  if (std::adjacent_find(to_rank.begin(), to_rank.end(), std::not_equal_to<>()) == to_rank.end()) return nullptr;
  const std::size_t n = to_rank.size();
  auto bytes = std::make_shared<std::vector<double>>(n * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) (*bytes)[i * n + j] = (to_experts ? to_rank[j] : to_rank[i]) * row_bytes;
  }
  return bytes;
}

// `kernels` with `suffix` appended to their names ("embedding" -> "embedding.fwd.mb0").
std::vector<RecipeKernel> renamed(std::vector<RecipeKernel> kernels, const std::string& suffix) {
  for (RecipeKernel& k : kernels) k.name += suffix;
  return kernels;
}

// A dense layer's kernels with the model's sliding window on its attention; none without one (no
// layer asks for them).
std::vector<RecipeKernel> windowed(const std::vector<RecipeKernel>& layer, int window) {
  return window > 0 ? model::with_attention_window(layer, window) : std::vector<RecipeKernel>{};
}

}  // namespace

ProgramWriter::ProgramWriter(const TrainingSpec& t)
    : t_(t),
      recipe_(t.model, layout_of(t), t.framework, t.precision),
      layer_fwd_(recipe_.layer(Direction::forward)),
      layer_bwd_(recipe_.layer(Direction::backward)),
      windowed_fwd_(windowed(layer_fwd_, t.model.sliding_window)),
      windowed_bwd_(windowed(layer_bwd_, t.model.sliding_window)),
      head_fwd_(recipe_.lm_head(Direction::forward)),
      head_bwd_(recipe_.lm_head(Direction::backward)),
      embedding_fwd_(recipe_.embedding(Direction::forward)),
      embedding_bwd_(recipe_.embedding(Direction::backward)),
      mtp_fwd_(recipe_.mtp_entry(Direction::forward)),
      mtp_bwd_(recipe_.mtp_entry(Direction::backward)) {}

const ProgramWriter::MoeLayer& ProgramWriter::moe_layer(int l) {
  auto [it, fresh] = moe_layers_.try_emplace(l);
  if (!fresh) return it->second;
  const moe::LayerRouting routing = moe::route_layer(t_.routing, t_.moe_layer_shape(), l);
  const std::vector<std::int64_t> tokens = busiest_rank_expert_tokens(t_, routing);
  MoeLayer& layer = it->second;
  layer.forward = model::with_attention_window(recipe_.moe_layer(Direction::forward, tokens), t_.model.attention_window(l));
  layer.backward = model::with_attention_window(recipe_.moe_layer(Direction::backward, tokens), t_.model.attention_window(l));
  const double row_bytes = t_.model.hidden * kBf16Bytes;
  layer.to_experts = peer_bytes(routing, row_bytes, true);
  layer.from_experts = peer_bytes(routing, row_bytes, false);
  layer.received_bytes = routing.busiest_rank_tokens * row_bytes;
  return layer;
}

int ProgramWriter::add(Op op) {
  program_.ops.push_back(std::move(op));
  return size() - 1;
}

int ProgramWriter::kernel(const std::string& name, const RecipeKernel& k, std::vector<int> deps, bool backward) {
  Op op = compute_op(name, kind_of(k.shape), k.runs * model::flops(k.shape), k.runs * model::bytes(k.shape));
  op.kernel = k.shape;
  op.runs = k.runs;
  op.deps = std::move(deps);
  const int i = add(op);
  issue(i, k.host_ops, backward);
  return i;
}

void ProgramWriter::issue(int i, int host_ops, bool backward) {
  host_clock_s_ += host_ops * (backward ? t_.host.backward_op_s : t_.host.forward_op_s);
  op(i).issue_s = host_clock_s_;
}

int ProgramWriter::sync(const std::string& name, std::vector<int> deps) {
  Op op = compute_op(name, OpKind::elementwise, 0, 0);
  op.deps = std::move(deps);
  return add(op);
}

int ProgramWriter::collective(const std::string& name, StreamId stream, network::CollectiveOp c, GroupKind g,
                              double size_bytes, std::vector<int> deps) {
  Op op = compute_op(name, OpKind::collective, 0, 0);
  op.stream = stream;
  op.collective = c;
  op.group = g;
  op.size_bytes = size_bytes;
  op.deps = std::move(deps);
  op.issue_s = host_clock_s_;  // issued in program order; its launch cost is not modelled
  return add(op);
}

int ProgramWriter::run(const std::string& prefix, const std::vector<RecipeKernel>& kernels, std::vector<int> deps,
                       bool backward) {
  int x = -1;
  for (const RecipeKernel& k : kernels) {
    std::vector<int> after = x < 0 ? std::move(deps) : std::vector<int>{x};
    if (k.joins_exchange && ep_exchange_in_flight_ >= 0) {
      after.push_back(ep_exchange_in_flight_);
      ep_exchange_in_flight_ = -1;
    }
    x = std::holds_alternative<model::AttentionShape>(k.shape) ? attention(prefix, k, after, backward)
                                                                     : kernel(prefix + k.name, k, after, backward);
    if (tp_gather_in_flight_ >= 0 && std::holds_alternative<model::GemmShape>(k.shape)) {
      x = sync(prefix + k.name + ".tp_overlap_join", {x, tp_gather_in_flight_});
      tp_gather_in_flight_ = -1;
    }
    if (!k.tp_reduction.empty()) x = tp_sync(prefix, k.tp_reduction, backward, x);
    if (!k.ep_exchange.empty()) {
      const int exchange = ep_exchange(prefix + k.ep_exchange, k.ep_exchange == "to_experts", x);
      if (k.exchange_in_flight && exchange != x) {
        ep_exchange_in_flight_ = exchange;  // the kernels up to the one joining it run beside it
      } else {
        x = exchange;
      }
    }
  }
  return x;
}

int ProgramWriter::run_on(StreamId stream, const std::string& prefix, const std::vector<RecipeKernel>& kernels,
                          std::vector<int> deps, bool backward) {
  int x = -1;
  for (const RecipeKernel& k : kernels) {
    x = kernel(prefix + k.name, k, x < 0 ? std::move(deps) : std::vector<int>{x}, backward);
    op(x).stream = stream;
  }
  return x;
}

int ProgramWriter::optimizer(const std::string& prefix, double parameters, std::vector<int> deps) {
  const int first = size();
  const auto kernels = model::LlamaRecipe::optimizer(parameters, t_.framework, t_.foreach_adamw());
  const int last = run(prefix, kernels, std::move(deps), false);
  for (int i = first; i < size(); ++i) op(i).kind = OpKind::optimizer;
  return last;
}

const std::vector<RecipeKernel>& ProgramWriter::kernels_of_layer(int l, bool backward) {
  if (!t_.model.is_moe_layer(l)) {
    if (t_.model.attention_window(l) > 0) return backward ? windowed_bwd_ : windowed_fwd_;
    return backward ? layer_bwd_ : layer_fwd_;
  }
  const MoeLayer& moe = moe_layer(l);
  return backward ? moe.backward : moe.forward;
}

int ProgramWriter::layer(int l, const std::string& tag, bool backward, int after, BackwardPass pass) {
  current_layer_ = l;
  if (pass == BackwardPass::whole) {
    return run("layer" + std::to_string(l) + tag + (backward ? ".bwd." : ".fwd."), kernels_of_layer(l, backward),
               {after}, backward);
  }
  // A linear layer's backward is its dgrad then its wgrad, the tensor-parallel reduction of the
  // input gradient marked on the wgrad (it follows both in the fused order): B keeps it after the
  // kernel before (the dgrad).
  auto is_wgrad = [](const RecipeKernel& k) { return k.name.size() > 6 && k.name.ends_with(".wgrad"); };
  std::vector<RecipeKernel> part;
  for (RecipeKernel k : kernels_of_layer(l, true)) {
    if (pass == BackwardPass::weight_grad) {
      if (!is_wgrad(k)) continue;
      k.tp_reduction.clear();
      part.push_back(std::move(k));
    } else if (!is_wgrad(k)) {
      part.push_back(std::move(k));
    } else if (!k.tp_reduction.empty() && !part.empty()) {
      part.back().tp_reduction = k.tp_reduction;
    }
  }
  const std::string prefix = "layer" + std::to_string(l) + tag + (pass == BackwardPass::weight_grad ? ".bwd_w." : ".bwd.");
  return run(prefix, part, {after}, true);
}

int ProgramWriter::recompute(int l, const std::string& tag, int after) {
  if (t_.recompute == Recompute::none) return after;
  if (t_.recompute == Recompute::full) return layer(l, tag + ".recompute", false, after);
  const std::string prefix = "layer" + std::to_string(l) + tag + ".recompute.fwd.";
  std::vector<RecipeKernel> replay;
  for (RecipeKernel k : kernels_of_layer(l, false)) {
    const bool is_attention = std::holds_alternative<model::AttentionShape>(k.shape);
    if (t_.recompute == Recompute::selective) {
      if (is_attention) replay.push_back(k);
      continue;
    }
    if (t_.recompute == Recompute::mla_up_proj) {
      if (k.name == "q_up" || k.name == "q" || k.name == "kv_up" || k.name == "rope") replay.push_back(k);
      continue;
    }
    if (is_attention || k.name == "down") continue;
    if (auto* g = std::get_if<model::GemmShape>(&k.shape)) {
      // qkv's output columns are q (hidden / tp), k and v (kv_dim / tp each); gate_up's gate and up (ffn / tp each).
      if (k.name == "qkv") g->n = static_cast<std::int64_t>(t_.model.kv_dim()) / t_.tp;
      if (k.name == "gate_up") g->n /= 2;
    }
    k.tp_reduction.clear();
    k.ep_exchange.clear();  // the all-to-all's outputs are kept, as torchtitan's op list saves them
    replay.push_back(k);
  }
  return run(prefix, replay, {after}, false);
}

int ProgramWriter::lm_head(const std::string& tag, bool backward, int after) {
  const std::string prefix = "lm_head" + tag + (backward ? ".bwd." : ".fwd.");
  return run(prefix, backward ? head_bwd_ : head_fwd_, {after}, backward);
}

int ProgramWriter::embedding(const std::string& tag, bool backward, std::vector<int> deps) {
  return run("", renamed(backward ? embedding_bwd_ : embedding_fwd_, (backward ? ".bwd" : ".fwd") + tag),
             std::move(deps), backward);
}

int ProgramWriter::mtp_entry(int k, const std::string& tag, bool backward, int after) {
  const std::string module = "mtp" + std::to_string(k);
  const std::string prefix = module + tag + (backward ? ".bwd." : ".fwd.");
  if (!backward) return run(prefix, mtp_fwd_, {embedding(tag + "." + module, false, {after})}, false);
  return embedding(tag + "." + module, true, {run(prefix, mtp_bwd_, {after}, true)});
}

double ProgramWriter::tokens() const { return static_cast<double>(t_.micro_batch) * t_.seq_len / t_.cp; }

// Megatron tensor parallelism: after the attention and MLP output projections the partial sums
// are all-reduced (forward and, for the input gradients, backward); with sequence parallelism a
// reduce-scatter / all-gather pair replaces each all-reduce, the all-gather being the next
// sublayer's input (forward) or output gradient (backward). Rows are h wide, except what the
// attention block's first products read (ModelSpec::attention_input_width: MLA's latents): the
// all-gather after the MLP (forward) and the reduction of the attention's input gradient
// (backward). A layer without an MLP-side reduction (an MoE layer without shared experts) gathers
// its next attention's input at "attn": h wide there.
int ProgramWriter::tp_sync(const std::string& prefix, const std::string& tag, bool backward, int after) {
  if (t_.tp == 1) return after;
  const std::string name = prefix + tag;
  const double row_bytes = tokens() * kBf16Bytes;
  const double attention_input = t_.model.attention_input_width();
  const double reduced = row_bytes * (backward && tag == "attn" ? attention_input : t_.model.hidden);
  if (!t_.sequence_parallel) {
    return collective(name + ".tp_allreduce", StreamId::tensor_parallel, network::CollectiveOp::all_reduce,
                      GroupKind::tensor_parallel, reduced, {after});
  }
  const double gathered = row_bytes * (!backward && tag == "mlp" ? attention_input : t_.model.hidden);
  if (t_.tp_overlap) {
    // Transformer Engine's comm-GEMM overlap: the reduce-scatter runs beside the GEMM whose output
    // it reduces (started with it, joined after it), the all-gather beside the kernels up to the
    // next GEMM, which reads what it gathers (run() joins it there, in this call or the next).
    const int rs = collective(name + ".tp_reducescatter", StreamId::tensor_parallel,
                              network::CollectiveOp::reduce_scatter, GroupKind::tensor_parallel, reduced, op(after).deps);
    const int joined = sync(name + ".tp_overlap_join", {after, rs});
    tp_gather_in_flight_ = collective(name + ".tp_allgather", StreamId::tensor_parallel, network::CollectiveOp::all_gather,
                                      GroupKind::tensor_parallel, gathered, {joined});
    return joined;
  }
  // PyTorch's DTensor shards the sequence on dim 1: a cat before each reduce-scatter and after
  // each all-gather (recipe::dtensor_cat), on the compute stream, which waits for both.
  const bool dtensor = model::traits(t_.framework).pytorch_wrappers;
  if (dtensor) after = kernel(name + ".dtensor_rs_cat", model::recipe::dtensor_cat(reduced), {after}, backward);
  const int rs = collective(name + ".tp_reducescatter", StreamId::tensor_parallel,
                            network::CollectiveOp::reduce_scatter, GroupKind::tensor_parallel, reduced, {after});
  const int ag = collective(name + ".tp_allgather", StreamId::tensor_parallel, network::CollectiveOp::all_gather,
                            GroupKind::tensor_parallel, gathered, {rs});
  return dtensor ? kernel(name + ".dtensor_ag_cat", model::recipe::dtensor_cat(gathered), {ag}, backward) : ag;
}

// Expert parallelism's all-to-all after op `after` (MoE layers, ep > 1): each of the rank's routed
// tokens (tokens() / tp under sequence parallelism) goes, once per chosen expert, to the rank
// holding that expert, a bf16 row of hidden each; nccl-tests' size is the rank's whole send
// buffer, spread over the group's ranks as the layer's routing sends it (evenly when uniform). With
// expert tensor parallelism the tokens a rank received are gathered over its expert-tensor group
// after the dispatch, and the experts' outputs reduce-scattered before the combine.
int ProgramWriter::ep_exchange(const std::string& name, bool to_experts, int after) {
  const MoeLayer& layer = moe_layer(current_layer_);
  auto all_to_all = [&](int x) {
    if (t_.ep == 1) return x;
    const double bytes = t_.routed_tokens() * t_.model.top_k * t_.model.hidden * kBf16Bytes;
    const int i = collective(name + ".ep_alltoall", StreamId::expert_parallel, network::CollectiveOp::all_to_all,
                             GroupKind::expert_parallel, bytes, {x});
    op(i).peer_bytes = to_experts ? layer.to_experts : layer.from_experts;
    return i;
  };
  // Expert tensor parallelism: the ranks splitting the experts gather what each received (and
  // reduce-scatter the experts' partial outputs back) over their group, etp x the busiest rank's
  // tokens in all.
  auto etp = [&](int x, network::CollectiveOp c, const char* what) {
    if (t_.expert_tp == 1) return x;
    return collective(name + what, StreamId::expert_parallel, c, GroupKind::expert_tensor_parallel,
                      layer.received_bytes * t_.expert_tp, {x});
  };
  if (to_experts) return etp(all_to_all(after), network::CollectiveOp::all_gather, ".etp_allgather");
  return all_to_all(etp(after, network::CollectiveOp::reduce_scatter, ".etp_reducescatter"));
}

// Attention after ops `after`, with context parallelism's exchange of the sequence (CpComm):
//   p2p         ring attention: one attention per KV block (cp; the first causal, the others not:
//               load_balanced_blocks); the rank's KV block travels around the CP ring in cp - 1
//               steps (backward: with its gradient, twice the bytes) while attention runs block by
//               block; block k waits for the step that brought it;
//   all_gather  K and V of the whole sequence gathered over the CP group, then the blocks; backward
//               gathers them again and reduce-scatters their gradients after (Transformer Engine
//               keeps only the rank's own chunk between forward and backward);
//   a2a         q, k and v all-to-all'd from the rank's tokens to its heads / cp over the whole
//               sequence, the one kernel, the output all-to-all'd back; backward moves the output's
//               gradient before and q, k and v's gradients after.
int ProgramWriter::attention(const std::string& prefix, const RecipeKernel& k, const std::vector<int>& after,
                             bool backward) {
  if (t_.cp == 1) return kernel(prefix + k.name, k, after, backward);
  // The rank's keys and values: kv_heads x (key + value head widths), 2 kv_dim for standard heads.
  const double kv_width = t_.model.qkv_dim() - static_cast<double>(t_.model.heads) * t_.model.qk_head_dim();
  const double kv_bytes = tokens() * kv_width / t_.tp * kBf16Bytes;
  auto over_cp = [&](const std::string& what, network::CollectiveOp c, double bytes, std::vector<int> deps) {
    return collective(prefix + what, StreamId::context_parallel, c, GroupKind::context_parallel, bytes, std::move(deps));
  };
  switch (t_.cp_comm) {
    case CpComm::all_gather: {
      const int gathered = over_cp("cp_kv.allgather", network::CollectiveOp::all_gather, kv_bytes * t_.cp, after);
      RingBlocks b = load_balanced_blocks(k);
      b.off_diagonal.runs = k.runs - 1;
      const int diagonal = kernel(prefix + k.name, b.diagonal, {gathered}, backward);
      const int blocks = kernel(prefix + k.name + ".off_diagonal", b.off_diagonal, {diagonal}, backward);
      if (!backward) return blocks;
      return over_cp("cp_dkv.reducescatter", network::CollectiveOp::reduce_scatter, kv_bytes * t_.cp, {blocks});
    }
    case CpComm::a2a: {
      const double qkv_bytes = tokens() * t_.model.qkv_dim() / t_.tp * kBf16Bytes;
      const double out_bytes = tokens() * t_.model.attention_out_dim() / t_.tp * kBf16Bytes;
      const auto [in_bytes, back_bytes] = backward ? std::pair{out_bytes, qkv_bytes} : std::pair{qkv_bytes, out_bytes};
      const int heads = over_cp(backward ? "cp_dout.alltoall" : "cp_qkv.alltoall", network::CollectiveOp::all_to_all,
                                in_bytes, after);
      const int core = kernel(prefix + k.name, k, {heads}, backward);
      return over_cp(backward ? "cp_dqkv.alltoall" : "cp_out.alltoall", network::CollectiveOp::all_to_all, back_bytes,
                     {core});
    }
    case CpComm::p2p: break;
  }
  const RingBlocks blocks = load_balanced_blocks(k);  // each an op of its own, not k.runs back to back
  const double kv_block_bytes = kv_bytes * (backward ? 2 : 1);
  std::vector<int> chunk = after;
  int step = -1;
  for (int b = 0; b < k.runs; ++b) {
    std::vector<int> deps = chunk;
    if (step >= 0) deps.push_back(step);
    if (b + 1 < k.runs) {
      step = collective(prefix + "cp_kv.step" + std::to_string(b), StreamId::context_parallel,
                        network::CollectiveOp::send_recv, GroupKind::context_next, kv_block_bytes,
                        step >= 0 ? std::vector<int>{step} : after);
    }
    chunk = {kernel(prefix + k.name + ".block" + std::to_string(b), b == 0 ? blocks.diagonal : blocks.off_diagonal,
                    deps, backward)};
  }
  return chunk.front();
}

}  // namespace commbound::sim::internal
